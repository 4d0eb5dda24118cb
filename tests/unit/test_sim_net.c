// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of the simulated network (user/sim/net.c): RNG, ECMP hash, event
 * order, link timing, queueing, impairments and determinism. No engine. */
#include "../harness.h"
#include "mroce/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define G100 100000000000ull

struct arrival {
	uint64_t t, id;
	uint32_t src, dst, len;
	uint16_t path;
	bool ce, corrupted, duplicate;
	int diff_bytes;		/* payload bytes that differ from the pattern */
};

struct rec {
	struct arrival *a;
	uint32_t n, cap;
	uint32_t ev_kind[64];
	uint64_t ev_arg[64], ev_t[64];
	uint32_t nev;
};

static uint8_t payload_byte(uint64_t id, uint32_t i)
{
	return (uint8_t)(id * 131 + i * 7);
}

static void rec_deliver(void *ctx, struct mroce_sim_pkt *p, uint64_t now)
{
	struct rec *r = ctx;
	struct arrival *a;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->a = realloc(r->a, r->cap * sizeof(*r->a));
		ck_assert_ptr_nonnull(r->a);
	}
	a = &r->a[r->n++];
	memset(a, 0, sizeof(*a));
	a->t = now;
	a->id = (uint64_t)p->sport << 32 | (uint32_t)p->data[0] << 24 |
		(uint32_t)p->data[1] << 16 | (uint32_t)p->data[2] << 8 |
		p->data[3];
	a->src = p->src;
	a->dst = p->dst;
	a->len = p->len;
	a->path = p->path;
	a->ce = p->ce;
	a->corrupted = p->corrupted;
	a->duplicate = p->duplicate;
	for (uint32_t i = 4; i < p->len; i++)
		if (p->data[i] != payload_byte(p->data[3], i))
			a->diff_bytes++;
}

static void rec_event(void *ctx, uint32_t kind, uint64_t arg, uint64_t now)
{
	struct rec *r = ctx;

	if (r->nev < 64) {
		r->ev_kind[r->nev] = kind;
		r->ev_arg[r->nev] = arg;
		r->ev_t[r->nev] = now;
		r->nev++;
	}
}

/* Two hosts on two leaves, `np` planes of 100G / 2 us, hosts 400G. */
static void base_cfg(struct mroce_sim_net_cfg *c, uint32_t np)
{
	memset(c, 0, sizeof(*c));
	c->nhosts = 2;
	c->nleaves = 2;
	c->npaths = np;
	for (uint32_t i = 0; i < MROCE_SIM_MAX_PATHS; i++) {
		c->path[i].rate_bps = G100;
		c->path[i].delay_ns = 2000;
		c->path[i].blackhole_at = MROCE_SIM_NEVER;
	}
	c->host.rate_bps = 4 * G100;
	c->host.delay_ns = 500;
	c->host.blackhole_at = MROCE_SIM_NEVER;
	c->max_frame = 4096 + 256;
	c->seed = 42;
}

static struct mroce_sim_pkt *mkpkt(struct mroce_sim_net *n, uint32_t src,
				   uint32_t dst, uint16_t sport, uint32_t seq,
				   uint32_t len)
{
	struct mroce_sim_pkt *p = mroce_sim_net_alloc(n);

	ck_assert_ptr_nonnull(p);
	p->src = src;
	p->dst = dst;
	p->sport = sport;
	p->dport = 4792;
	p->len = len;
	p->data[0] = (uint8_t)(seq >> 24);
	p->data[1] = (uint8_t)(seq >> 16);
	p->data[2] = (uint8_t)(seq >> 8);
	p->data[3] = (uint8_t)seq;
	for (uint32_t i = 4; i < len; i++)
		p->data[i] = payload_byte(p->data[3], i);
	return p;
}

/* Send `cnt` packets from host 0 to host 1 back to back at NIC speed,
 * all on one source port, then run everything. */
static uint64_t blast(struct mroce_sim_net *n, uint32_t cnt, uint32_t len,
		      uint16_t sport, bool ect)
{
	uint64_t t = mroce_sim_net_now(n);

	for (uint32_t i = 0; i < cnt; i++) {
		struct mroce_sim_pkt *p = mkpkt(n, 0, 1, sport, i, len);

		p->ect = ect;
		mroce_sim_net_run(n, t);
		t = mroce_sim_net_send(n, p, t);
	}
	mroce_sim_net_run(n, MROCE_SIM_NEVER);
	return t;
}

static uint64_t ser(uint64_t len, uint64_t bps)
{
	return ((len + MROCE_SIM_WIRE_OVERHEAD) * 8000000000ull + bps - 1) /
	       bps;
}

/* ------------------------------------------------------------------ */
START_TEST(mroce_sim_rng_next__same_seed_same_stream)
{
	struct mroce_sim_rng a, b, c;
	int differ = 0;

	mroce_sim_rng_seed(&a, 7);
	mroce_sim_rng_seed(&b, 7);
	mroce_sim_rng_seed(&c, 8);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = mroce_sim_rng_next(&a);

		ck_assert_uint_eq(x, mroce_sim_rng_next(&b));
		differ += x != mroce_sim_rng_next(&c);
	}
	ck_assert_int_gt(differ, 990);
}
END_TEST

START_TEST(mroce_sim_rng_double__uniform_in_unit_interval)
{
	struct mroce_sim_rng r;
	int hist[10] = { 0 };

	mroce_sim_rng_seed(&r, 1);
	for (int i = 0; i < 100000; i++) {
		double d = mroce_sim_rng_double(&r);

		ck_assert(d >= 0 && d < 1);
		hist[(int)(d * 10)]++;
	}
	/* expected 10000 each, sigma ~95: 6 sigma bounds */
	for (int i = 0; i < 10; i++)
		ck_assert_msg(abs(hist[i] - 10000) < 600, "decile %d: %d", i,
			      hist[i]);
}
END_TEST

START_TEST(mroce_sim_rng_below__stays_below_bound)
{
	struct mroce_sim_rng r;
	int seen[7] = { 0 };

	mroce_sim_rng_seed(&r, 3);
	ck_assert_uint_eq(mroce_sim_rng_below(&r, 0), 0);
	ck_assert_uint_eq(mroce_sim_rng_below(&r, 1), 0);
	for (int i = 0; i < 7000; i++) {
		uint64_t v = mroce_sim_rng_below(&r, 7);

		ck_assert_uint_lt(v, 7);
		seen[v]++;
	}
	for (int i = 0; i < 7; i++)
		ck_assert_int_gt(seen[i], 800);
}
END_TEST

START_TEST(mroce_sim_ecmp_hash__stable_and_spread)
{
	int per_path[4] = { 0 };
	uint32_t h = mroce_sim_ecmp_hash(1, 0, 0xc000, 4792);

	/* a fixed function: same tuple, same answer, in every run */
	ck_assert_uint_eq(h, mroce_sim_ecmp_hash(1, 0, 0xc000, 4792));
	ck_assert_uint_eq(h, 0x5738ec7au);
	ck_assert_uint_ne(h, mroce_sim_ecmp_hash(0, 1, 0xc000, 4792));
	ck_assert_uint_ne(h, mroce_sim_ecmp_hash(1, 0, 0xc001, 4792));
	ck_assert_uint_ne(h, mroce_sim_ecmp_hash(1, 0, 0xc000, 4791));
	for (uint32_t sp = 0xc000; sp <= 0xffff; sp++)
		per_path[mroce_sim_ecmp_hash(1, 0, (uint16_t)sp, 4792) % 4]++;
	/* 16384 ports, 4096 expected per path, sigma ~55 */
	for (int i = 0; i < 4; i++)
		ck_assert_msg(abs(per_path[i] - 4096) < 350, "path %d: %d", i,
			      per_path[i]);
}
END_TEST

START_TEST(mroce_sim_net_create__rejects_bad_config)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n = NULL;
	struct rec r = { 0 };

	base_cfg(&c, 0);
	ck_assert_int_lt(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	base_cfg(&c, MROCE_SIM_MAX_PATHS + 1);
	ck_assert_int_lt(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	base_cfg(&c, 2);
	c.path[1].rate_bps = 0;
	ck_assert_int_lt(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	base_cfg(&c, 2);
	c.path[0].loss = 1.5;
	ck_assert_int_lt(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	base_cfg(&c, 2);
	ck_assert_int_eq(mroce_sim_net_create(&c, NULL, NULL, &r, &n),
			 -22);
	ck_assert_ptr_null(n);
}
END_TEST

START_TEST(mroce_sim_net_at__same_time_runs_in_order)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };

	base_cfg(&c, 1);
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, rec_event, &r,
					      &n), 0);
	ck_assert_int_eq(mroce_sim_net_at(n, 500, 1, 10), 0);
	ck_assert_int_eq(mroce_sim_net_at(n, 100, 1, 11), 0);
	ck_assert_int_eq(mroce_sim_net_at(n, 500, 1, 12), 0);
	ck_assert_int_eq(mroce_sim_net_at(n, 500, 2, 13), 0);
	ck_assert_uint_eq(mroce_sim_net_next(n), 100);
	ck_assert_uint_eq(mroce_sim_net_run(n, 499), 1);
	ck_assert_uint_eq(mroce_sim_net_now(n), 499);
	ck_assert_uint_eq(mroce_sim_net_run(n, MROCE_SIM_NEVER), 3);
	ck_assert_uint_eq(r.nev, 4);
	ck_assert_uint_eq(r.ev_arg[0], 11);
	ck_assert_uint_eq(r.ev_arg[1], 10);
	ck_assert_uint_eq(r.ev_arg[2], 12);
	ck_assert_uint_eq(r.ev_arg[3], 13);
	ck_assert_uint_eq(r.ev_t[3], 500);
	ck_assert_int_eq(mroce_sim_net_step(n), 0);
	mroce_sim_net_destroy(n);
}
END_TEST

START_TEST(mroce_sim_net_send__latency_is_wire_plus_propagation)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	uint64_t free_at, want;

	base_cfg(&c, 2);
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	free_at = mroce_sim_net_send(n, mkpkt(n, 0, 1, 0xc000, 0, 1000), 0);
	ck_assert_uint_eq(free_at, ser(1000, 4 * G100));
	mroce_sim_net_run(n, MROCE_SIM_NEVER);
	ck_assert_uint_eq(r.n, 1);
	/* uplink wire + 0.5 us, plane wire + 2 us, downlink wire + 0.5 us */
	want = ser(1000, 4 * G100) + 500 + ser(1000, G100) + 2000 +
	       ser(1000, 4 * G100) + 500;
	ck_assert_uint_eq(r.a[0].t, want);
	ck_assert_uint_eq(r.a[0].len, 1000);
	ck_assert_uint_eq(r.a[0].diff_bytes, 0);
	ck_assert_uint_lt(r.a[0].path, 2);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(mroce_sim_net_send__same_leaf_skips_the_planes)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	uint32_t leaf[2] = { 0, 0 };

	base_cfg(&c, 2);
	c.host_leaf = leaf;
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	mroce_sim_net_send(n, mkpkt(n, 0, 1, 0xc000, 0, 1000), 0);
	mroce_sim_net_run(n, MROCE_SIM_NEVER);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.a[0].path, 0xffff);
	ck_assert_uint_eq(r.a[0].t, 2 * (ser(1000, 4 * G100) + 500));
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__rate_limits_a_burst_to_the_plane_rate)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;

	base_cfg(&c, 1);
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	blast(n, 1000, 4000, 0xc000, false);
	ck_assert_uint_eq(r.n, 1000);
	/* the 100G plane is the bottleneck: arrivals are spaced by its
	 * serialisation time, in order */
	for (uint32_t i = 1; i < r.n; i++) {
		ck_assert_uint_eq(r.a[i].id & 0xffffffff, i);
		ck_assert_uint_eq(r.a[i].t - r.a[i - 1].t, ser(4000, G100));
	}
	ck_assert_int_eq(mroce_sim_net_path_stats(n, 0, 1, 0, &st), 0);
	ck_assert_uint_eq(st.tx_pkts, 1000);
	ck_assert_uint_eq(st.tx_bytes, 4000000);
	/* it built up a backlog of 3/4 of what was sent */
	ck_assert_uint_gt(st.max_backlog, 2900000);
	ck_assert_int_eq(mroce_sim_net_path_stats(n, 1, 0, 0, &st), 0);
	ck_assert_uint_eq(st.tx_pkts, 0);
	ck_assert_int_lt(mroce_sim_net_path_stats(n, 0, 1, 1, &st), 0);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__tail_drop_above_queue_limit)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;
	uint64_t alloc, inflight;

	base_cfg(&c, 1);
	c.path[0].queue_bytes = 10 * (4000 + MROCE_SIM_WIRE_OVERHEAD);
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	blast(n, 200, 4000, 0xc000, false);
	mroce_sim_net_path_stats(n, 0, 1, 0, &st);
	ck_assert_uint_gt(st.drop_tail, 100);
	ck_assert_uint_eq(st.drop_tail + r.n, 200);
	ck_assert_uint_eq(st.tx_pkts, r.n);
	ck_assert_uint_le(st.max_backlog, c.path[0].queue_bytes);
	ck_assert_uint_eq(st.drop_loss + st.drop_blackhole, 0);
	/* every dropped packet went back to the pool */
	mroce_sim_net_pool(n, &alloc, &inflight);
	ck_assert_uint_eq(inflight, 0);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__random_loss_within_bounds)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;

	base_cfg(&c, 1);
	c.path[0].loss = 0.1;
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	blast(n, 20000, 64, 0xc000, false);
	mroce_sim_net_path_stats(n, 0, 1, 0, &st);
	/* 2000 expected, sigma ~42 */
	ck_assert_msg(st.drop_loss > 1790 && st.drop_loss < 2210, "%llu",
		      (unsigned long long)st.drop_loss);
	ck_assert_uint_eq(st.drop_loss + r.n, 20000);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__duplicates_follow_the_original)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;
	uint32_t dups = 0;

	base_cfg(&c, 1);
	c.path[0].dup = 0.05;
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	blast(n, 10000, 64, 0xc000, false);
	mroce_sim_net_path_stats(n, 0, 1, 0, &st);
	ck_assert_msg(st.dups > 400 && st.dups < 600, "%llu",
		      (unsigned long long)st.dups);
	ck_assert_uint_eq(r.n, 10000 + st.dups);
	for (uint32_t i = 0; i < r.n; i++) {
		if (!r.a[i].duplicate)
			continue;
		dups++;
		/* right behind its original, same content */
		ck_assert_uint_gt(i, 0);
		ck_assert_uint_eq(r.a[i].id, r.a[i - 1].id);
		ck_assert_int_eq(r.a[i].diff_bytes, 0);
	}
	ck_assert_uint_eq(dups, st.dups);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__corruption_flips_exactly_one_byte)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;
	uint32_t bad = 0;

	base_cfg(&c, 1);
	c.path[0].corrupt = 0.05;
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	/* flips in the first 4 bytes (our sequence tag) are not visible
	 * to diff_bytes; count them through the flag only */
	blast(n, 10000, 1024, 0xc000, false);
	mroce_sim_net_path_stats(n, 0, 1, 0, &st);
	ck_assert_msg(st.corrupts > 400 && st.corrupts < 600, "%llu",
		      (unsigned long long)st.corrupts);
	for (uint32_t i = 0; i < r.n; i++) {
		if (r.a[i].corrupted) {
			bad++;
			ck_assert_int_le(r.a[i].diff_bytes, 1);
		} else {
			ck_assert_int_eq(r.a[i].diff_bytes, 0);
		}
	}
	ck_assert_uint_eq(bad, st.corrupts);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__ecn_marks_only_ect_above_threshold)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;
	uint32_t marked = 0, first_mark = UINT32_MAX;

	base_cfg(&c, 1);
	c.path[0].ecn_bytes = 20 * (4000 + MROCE_SIM_WIRE_OVERHEAD);
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	/* not ECN-capable: never marked however long the queue */
	blast(n, 200, 4000, 0xc000, false);
	mroce_sim_net_path_stats(n, 0, 1, 0, &st);
	ck_assert_uint_eq(st.ce_marks, 0);
	r.n = 0;
	blast(n, 200, 4000, 0xc000, true);
	mroce_sim_net_path_stats(n, 0, 1, 0, &st);
	for (uint32_t i = 0; i < r.n; i++)
		if (r.a[i].ce) {
			marked++;
			if (first_mark == UINT32_MAX)
				first_mark = i;
		}
	ck_assert_uint_eq(marked, st.ce_marks);
	/* the queue grows by 3/4 packet per packet sent (400G into 100G):
	 * the first ~27 see less than 20 packets of backlog */
	ck_assert_uint_gt(first_mark, 20);
	ck_assert_uint_lt(first_mark, 35);
	ck_assert_uint_eq(marked, 200 - first_mark);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__blackhole_drops_from_its_start)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;
	uint64_t t = 0;
	uint32_t per_path[2] = { 0 };
	uint16_t sp[2] = { 0, 0 };

	base_cfg(&c, 2);
	c.path[1].blackhole_at = 100000;	/* 100 us */
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	/* one source port per plane */
	for (uint16_t p = 0xc000; !sp[0] || !sp[1]; p++)
		if (!sp[mroce_sim_ecmp_hash(0, 1, p, 4792) % 2])
			sp[mroce_sim_ecmp_hash(0, 1, p, 4792) % 2] = p;
	/* one packet per port per microsecond for 200 us */
	for (uint32_t i = 0; i < 200; i++) {
		for (int k = 0; k < 2; k++) {
			mroce_sim_net_run(n, t);
			mroce_sim_net_send(n, mkpkt(n, 0, 1, sp[k], i, 500),
					   t);
		}
		t += 1000;
	}
	mroce_sim_net_run(n, MROCE_SIM_NEVER);
	for (uint32_t i = 0; i < r.n; i++)
		per_path[r.a[i].path]++;
	ck_assert_uint_eq(per_path[0], 200);
	mroce_sim_net_path_stats(n, 0, 1, 1, &st);
	/* packets reach the plane ~0.5 us after they are sent */
	ck_assert_uint_eq(per_path[1], 100);
	ck_assert_uint_eq(st.drop_blackhole, 100);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

START_TEST(link__incast_congests_the_receiver_downlink)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_link_stats st;
	uint64_t t[4] = { 0 };

	base_cfg(&c, 4);
	c.nhosts = 5;
	c.nleaves = 5;		/* one leaf each: only the downlink is shared */
	c.host.queue_bytes = 64 * 4066;
	ck_assert_int_eq(mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n),
			 0);
	for (uint32_t i = 0; i < 100; i++)
		for (uint32_t k = 0; k < 4; k++) {
			struct mroce_sim_pkt *p =
				mkpkt(n, k + 1, 0, 0xc000 + i, i, 4000);

			mroce_sim_net_run(n, t[k]);
			t[k] = mroce_sim_net_send(n, p, t[k]);
		}
	mroce_sim_net_run(n, MROCE_SIM_NEVER);
	mroce_sim_net_host_stats(n, 0, &st);
	ck_assert_uint_gt(st.drop_tail, 0);
	ck_assert_uint_le(st.max_backlog, c.host.queue_bytes);
	ck_assert_uint_eq(st.drop_tail + r.n, 400);
	ck_assert_int_lt(mroce_sim_net_host_stats(n, 9, &st), 0);
	mroce_sim_net_destroy(n);
	free(r.a);
}
END_TEST

static uint64_t random_run(uint64_t seed, uint64_t *allocated)
{
	struct mroce_sim_net_cfg c;
	struct mroce_sim_net *n;
	struct rec r = { 0 };
	struct mroce_sim_rng rng;
	uint64_t t = 0, d, inflight;

	base_cfg(&c, 4);
	c.seed = seed;
	for (int i = 0; i < 4; i++) {
		c.path[i].loss = 0.02;
		c.path[i].dup = 0.02;
		c.path[i].corrupt = 0.02;
		c.path[i].queue_bytes = 100000;
		c.path[i].ecn_bytes = 20000;
		c.path[i].rate_bps = G100 / (i + 1);
	}
	mroce_sim_net_create(&c, rec_deliver, NULL, &r, &n);
	mroce_sim_rng_seed(&rng, 99);
	for (uint32_t i = 0; i < 5000; i++) {
		struct mroce_sim_pkt *p =
			mkpkt(n, i & 1, !(i & 1),
			      (uint16_t)(0xc000 + mroce_sim_rng_below(&rng, 64)), i,
			      64 + (uint32_t)mroce_sim_rng_below(&rng, 4000));

		p->ect = true;
		mroce_sim_net_run(n, t);
		t = mroce_sim_net_send(n, p, t);
	}
	mroce_sim_net_run(n, MROCE_SIM_NEVER);
	d = mroce_sim_net_digest(n);
	for (uint32_t i = 0; i < r.n; i++)
		d ^= r.a[i].t * (i + 1) ^ r.a[i].id << 7 ^ r.a[i].ce;
	mroce_sim_net_pool(n, allocated, &inflight);
	ck_assert_uint_eq(inflight, 0);
	mroce_sim_net_destroy(n);
	free(r.a);
	return d;
}

START_TEST(mroce_sim_net_digest__same_seed_same_run)
{
	uint64_t a1, a2, a3;
	uint64_t d1 = random_run(5, &a1);
	uint64_t d2 = random_run(5, &a2);
	uint64_t d3 = random_run(6, &a3);

	ck_assert_uint_eq(d1, d2);
	ck_assert_uint_ne(d1, d3);
	/* the pool stays small: packets are recycled, not reallocated */
	ck_assert_uint_le(a1, 1024);
}
END_TEST

MROCE_SUITE(sim_net_suite)
Suite *sim_net_suite(void)
{
	Suite *s = suite_create("sim_net");
	TCase *tc = tcase_create("net");

	tcase_add_test(tc, mroce_sim_rng_next__same_seed_same_stream);
	tcase_add_test(tc, mroce_sim_rng_double__uniform_in_unit_interval);
	tcase_add_test(tc, mroce_sim_rng_below__stays_below_bound);
	tcase_add_test(tc, mroce_sim_ecmp_hash__stable_and_spread);
	tcase_add_test(tc, mroce_sim_net_create__rejects_bad_config);
	tcase_add_test(tc, mroce_sim_net_at__same_time_runs_in_order);
	tcase_add_test(tc, mroce_sim_net_send__latency_is_wire_plus_propagation);
	tcase_add_test(tc, mroce_sim_net_send__same_leaf_skips_the_planes);
	tcase_add_test(tc, link__rate_limits_a_burst_to_the_plane_rate);
	tcase_add_test(tc, link__tail_drop_above_queue_limit);
	tcase_add_test(tc, link__random_loss_within_bounds);
	tcase_add_test(tc, link__duplicates_follow_the_original);
	tcase_add_test(tc, link__corruption_flips_exactly_one_byte);
	tcase_add_test(tc, link__ecn_marks_only_ect_above_threshold);
	tcase_add_test(tc, link__blackhole_drops_from_its_start);
	tcase_add_test(tc, link__incast_congests_the_receiver_downlink);
	tcase_add_test(tc, mroce_sim_net_digest__same_seed_same_run);
	suite_add_tcase(s, tc);
	return s;
}
