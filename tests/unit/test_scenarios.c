// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Scenario matrix: both transports x a set of hostile networks x seeds,
 * each a complete simulated transfer through real engines. Every run must
 * deliver every byte exactly (the simulator checks each byte against the
 * sent pattern and every completion's order and uniqueness) and finish
 * within a bounded virtual time. Byte counts are small so the whole matrix
 * stays well under a minute with sanitizers; throughput targets are
 * measured by scripts/bench_sim.sh, never asserted here.
 */
#include "../harness.h"
#include "mroce/engine.h"
#include "mroce/abi.h"
#include "mroce/sim.h"

#include <stdio.h>
#include <string.h>

#define G10 10000000000ull
#define NSEEDS 3

enum expect {
	EXPECT_OK,		/* complete, byte exact */
	EXPECT_FAIL_CLEANLY,	/* an error completion or a detected hang,
				 * never wrong data and never a silent stop */
};

struct scenario {
	const char *name;
	void (*setup)(struct mroce_sim_cfg *c, uint8_t transport);
	enum expect (*expect)(uint8_t transport);
};

static enum expect ok(uint8_t t)
{
	return EXPECT_OK;
}

static enum expect fails(uint8_t t)
{
	return EXPECT_FAIL_CLEANLY;
}

/* RoCEv2 pins a QP to one plane: losing a plane may kill it (with an
 * error completion) or not touch it at all, depending on the hash. */
static enum expect mr_ok_rv2_either(uint8_t t)
{
	return t == MROCE_TRANSPORT_METAROCE ? EXPECT_OK : EXPECT_FAIL_CLEANLY;
}

static void each_path(struct mroce_sim_cfg *c, double loss, double dup,
		      double corrupt)
{
	for (int i = 0; i < MROCE_SIM_MAX_PATHS; i++) {
		c->net.path[i].loss = loss;
		c->net.path[i].dup = dup;
		c->net.path[i].corrupt = corrupt;
	}
}

static void s_clean(struct mroce_sim_cfg *c, uint8_t t)
{
}

static void s_loss1(struct mroce_sim_cfg *c, uint8_t t)
{
	each_path(c, 0.01, 0, 0);
}

static void s_loss5(struct mroce_sim_cfg *c, uint8_t t)
{
	each_path(c, 0.05, 0, 0);
}

static void s_loss10(struct mroce_sim_cfg *c, uint8_t t)
{
	each_path(c, 0.10, 0, 0);
	c->bytes = 128 << 10;
}

static void s_reorder(struct mroce_sim_cfg *c, uint8_t t)
{
	/* 10/5/2.5/1 Gbit/s planes with different delays: spraying
	 * reorders heavily; RoCEv2 QPs sit on whichever plane they hash to */
	for (int i = 0; i < 4; i++) {
		c->net.path[i].rate_bps = G10 >> i;
		c->net.path[i].delay_ns = 2000 + 3000 * i;
	}
	c->conns = 2;
}

static void s_dup(struct mroce_sim_cfg *c, uint8_t t)
{
	each_path(c, 0, 0.05, 0);
}

static void s_corrupt(struct mroce_sim_cfg *c, uint8_t t)
{
	each_path(c, 0, 0, 0.03);
}

static void s_blackhole(struct mroce_sim_cfg *c, uint8_t t)
{
	c->net.path[1].blackhole_at = 20000;	/* 20 us, mid-transfer */
	c->conns = 2;
}

static void s_all_dead(struct mroce_sim_cfg *c, uint8_t t)
{
	for (int i = 0; i < 4; i++)
		c->net.path[i].blackhole_at = 10000;
	c->bytes = 1 << 20;
}

static void s_incast(struct mroce_sim_cfg *c, uint8_t t)
{
	c->senders = 8;
	c->bytes = 64 << 10;
	c->net.host.queue_bytes = 256 << 10;
}

static void s_streams(struct mroce_sim_cfg *c, uint8_t t)
{
	/* 8 QPs between the same two hosts: MetaRoCE multiplexes them as
	 * streams of one connection, RoCEv2 gives each its own port */
	c->conns = 8;
	c->bytes = 64 << 10;
	c->msg_size = 4 << 10;
	each_path(c, 0.02, 0, 0);
}

static void s_shared_incast(struct mroce_sim_cfg *c, uint8_t t)
{
	/* 4 senders behind one leaf share the planes and the downlink */
	c->senders = 4;
	c->shared_leaf = true;
	c->bytes = 128 << 10;
	each_path(c, 0.01, 0, 0);
}

static void s_psn_wrap(struct mroce_sim_cfg *c, uint8_t t)
{
	/* PSNs wrap after 16 packets, under 2% loss: RoCEv2's at 2^24 (the
	 * low 24 bits), MetaRoCE's path slot 0 at 2^32 (metaroce_wrap__*
	 * show that it crossed) */
	c->start_psn = 0xfffffff0;
	each_path(c, 0.02, 0, 0);
}

static void s_read(struct mroce_sim_cfg *c, uint8_t t)
{
	/* RDMA READ: the responses come from the other engine */
	c->op = MROCE_SIM_OP_READ;
	each_path(c, 0.02, 0.01, 0);
}

static void s_read_jumbo(struct mroce_sim_cfg *c, uint8_t t)
{
	/* READ with 8 KiB payloads (MTU 9000) under 2% loss */
	s_read(c, t);
	c->mtu = 8192;
	c->msg_size = 64 << 10;
	c->bytes = 1 << 20;
}

static void s_psn_wrap_read(struct mroce_sim_cfg *c, uint8_t t)
{
	s_psn_wrap(c, t);
	c->op = MROCE_SIM_OP_READ;
}

static void s_tiny(struct mroce_sim_cfg *c, uint8_t t)
{
	c->msg_size = 1;
	c->bytes = 300;
	c->outstanding = 16;
	each_path(c, 0.02, 0, 0);
}

static void s_huge(struct mroce_sim_cfg *c, uint8_t t)
{
	c->msg_size = 1 << 20;
	c->bytes = 2 << 20;
	c->outstanding = 2;
	each_path(c, 0.01, 0, 0);
}

static void s_send(struct mroce_sim_cfg *c, uint8_t t)
{
	c->op = MROCE_SIM_OP_SEND;
	c->conns = 2;
	each_path(c, 0.02, 0.01, 0);
}

static void s_mixed(struct mroce_sim_cfg *c, uint8_t t)
{
	each_path(c, 0.02, 0.02, 0.01);
	for (int i = 0; i < 4; i++)
		c->net.path[i].rate_bps = G10 / (i + 1);
	c->op = MROCE_SIM_OP_SEND;
}

static const struct scenario scenarios[] = {
	{ "clean", s_clean, ok },
	{ "loss1", s_loss1, ok },
	{ "loss5", s_loss5, ok },
	{ "loss10", s_loss10, ok },
	{ "reorder", s_reorder, ok },
	{ "dup", s_dup, ok },
	{ "corrupt", s_corrupt, ok },
	{ "blackhole", s_blackhole, mr_ok_rv2_either },
	{ "all_dead", s_all_dead, fails },
	{ "incast8", s_incast, ok },
	{ "shared_incast", s_shared_incast, ok },
	{ "streams", s_streams, ok },
	{ "psn_wrap", s_psn_wrap, ok },
	{ "read", s_read, ok },
	{ "read_jumbo", s_read_jumbo, ok },
	{ "psn_wrap_read", s_psn_wrap_read, ok },
	{ "tiny", s_tiny, ok },
	{ "huge", s_huge, ok },
	{ "send", s_send, ok },
	{ "mixed", s_mixed, ok },
};
#define NSCEN (int)(sizeof(scenarios) / sizeof(scenarios[0]))

static const char *tname(uint8_t t)
{
	return t == MROCE_TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
}

static void base(struct mroce_sim_cfg *c, uint8_t transport, uint64_t seed)
{
	mroce_sim_cfg_default(c);
	c->transport = transport;
	c->seed = seed;
	c->bytes = 256 << 10;
	c->msg_size = 16 << 10;
	c->outstanding = 8;
	/* bounded virtual time: a live transport finishes these in a few
	 * ms; a hang is declared after 200 ms without a completion */
	c->time_limit_ns = 3000000000ull;
	c->stall_ns = 200000000ull;
	for (int i = 0; i < MROCE_SIM_MAX_PATHS; i++)
		c->net.path[i].rate_bps = G10;
	c->net.host.rate_bps = 4 * G10;
}

START_TEST(scenario__byte_exact_and_live)
{
	int sc = _i / (2 * NSEEDS);
	uint8_t tr = (_i / NSEEDS) % 2 ? MROCE_TRANSPORT_ROCEV2
				       : MROCE_TRANSPORT_METAROCE;
	uint64_t seed = 1000 + _i % NSEEDS;
	const struct scenario *s = &scenarios[sc];
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;
	struct mroce_sim *sim;
	enum expect want;
	int err;

	base(&c, tr, seed);
	s->setup(&c, tr);
	want = s->expect(tr);
	err = mroce_sim_create(&c, &sim);
	ck_assert_msg(err == 0, "%s: create: %d", s->name, err);
	ck_assert_int_eq(mroce_sim_run(sim, &r), 0);
	mroce_sim_destroy(sim);

	/* never wrong data, never a stop that goes unnoticed */
	ck_assert_msg(r.verdict != MROCE_SIM_INTEGRITY,
		      "%s/%s/seed %llu: %s", s->name, tname(tr),
		      (unsigned long long)seed, r.why);
	ck_assert_uint_le(r.end_ns, c.time_limit_ns);
	if (r.verdict == MROCE_SIM_OK) {
		ck_assert_msg(s->expect != fails,
			      "%s/%s/seed %llu: completed on a dead fabric",
			      s->name, tname(tr), (unsigned long long)seed);
		ck_assert_uint_eq(r.completed_bytes, r.target_bytes);
		ck_assert_uint_eq(r.error_wcs, 0);
	} else {
		/* the only acceptable failure is an error completion: a
		 * hang or a time-limit stop is a liveness bug */
		ck_assert_msg(want == EXPECT_FAIL_CLEANLY &&
				      r.verdict == MROCE_SIM_ERROR_WC,
			      "%s/%s/seed %llu: %s: %s", s->name, tname(tr),
			      (unsigned long long)seed,
			      mroce_sim_verdict_str(r.verdict), r.why);
	}
}
END_TEST

struct trace_count {
	uint64_t calls, last, paths_seen;
	bool ordered;
};

static void count_trace(void *arg, struct mroce_sim *sim, uint64_t now)
{
	struct trace_count *t = arg;
	struct mroce_path_info pi;

	if (t->calls && now <= t->last)
		t->ordered = false;
	t->last = now;
	t->calls++;
	if (mroce_engine_path_info(mroce_sim_engine(sim, 1), 0, 0, &pi) == 0)
		t->paths_seen++;
}

/* The telemetry hook (mroce_sim --trace-us) is called once per interval
 * of virtual time, in order, can read the engines, and changes nothing:
 * the traced run has the untraced run's digest and result. */
START_TEST(sim_trace__periodic_and_read_only)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r0, r1;
	struct mroce_sim *sim;
	struct trace_count t = { .ordered = true };

	base(&c, MROCE_TRANSPORT_METAROCE, 7);
	s_loss1(&c, MROCE_TRANSPORT_METAROCE);
	ck_assert_int_eq(mroce_sim_create(&c, &sim), 0);
	ck_assert_int_eq(mroce_sim_run(sim, &r0), 0);
	mroce_sim_destroy(sim);
	c.trace = count_trace;
	c.trace_arg = &t;
	c.trace_ns = 10000;
	ck_assert_int_eq(mroce_sim_create(&c, &sim), 0);
	ck_assert_int_eq(mroce_sim_run(sim, &r1), 0);
	mroce_sim_destroy(sim);
	ck_assert_int_eq(r0.verdict, MROCE_SIM_OK);
	ck_assert_int_eq(r1.verdict, MROCE_SIM_OK);
	ck_assert_uint_eq(r1.digest, r0.digest);
	ck_assert_uint_eq(r1.events, r0.events);
	/* one call per 10 us up to the last event (the drain included) */
	ck_assert_uint_ge(t.calls, r0.end_ns / 10000);
	ck_assert_uint_le(t.calls, (r0.end_ns + c.drain_ns) / 10000 + 2);
	ck_assert(t.ordered);
	ck_assert_uint_gt(t.paths_seen, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Wrap-arounds: MetaRoCE's 32-bit path PSNs and 8-bit generations      */
/* ------------------------------------------------------------------ */
struct wrap_slot {
	bool seen;
	uint8_t gen;
	uint32_t psn, rx;
	uint32_t gens;			/* generations advanced */
};

struct wrap_watch {
	struct wrap_slot slot[2][MROCE_MAX_PATHS]; /* [host][path slot] */
	bool psn_crossed[2], rx_crossed[2], gen_crossed[2];
};

/* a -> b went over 2^32 forwards (by less than 2^31) */
static bool crossed(uint32_t a, uint32_t b)
{
	return b < a && b - a < 0x80000000u;
}

/* Every trace tick (10 us): each path slot of host 1's connection to
 * host 0 and of host 0's connection to host 1 (peer 0 on both). */
static void watch_wrap(void *arg, struct mroce_sim *sim, uint64_t now)
{
	struct wrap_watch *w = arg;

	for (int h = 0; h < 2; h++) {
		struct mroce_path_info pi;

		for (int i = 0;
		     mroce_engine_path_info(mroce_sim_engine(sim, (uint32_t)h),
					    0, i, &pi) == 0;
		     i++) {
			struct wrap_slot *s = &w->slot[h][i];

			if (s->seen && pi.gen == s->gen) {
				w->psn_crossed[h] |= crossed(s->psn,
							     pi.next_psn);
				w->rx_crossed[h] |= crossed(s->rx, pi.rx_psn);
			}
			if (s->seen && pi.gen != s->gen) {
				s->gens += (uint8_t)(pi.gen - s->gen);
				w->gen_crossed[h] |= pi.gen < s->gen;
			}
			s->seen = true;
			s->gen = pi.gen;
			s->psn = pi.next_psn;
			s->rx = pi.rx_psn;
		}
	}
}

static uint32_t most_gens(const struct wrap_watch *w, int h)
{
	uint32_t m = 0;

	for (int i = 0; i < MROCE_MAX_PATHS; i++)
		if (w->slot[h][i].gens > m)
			m = w->slot[h][i].gens;
	return m;
}

static void wrap_run(struct mroce_sim_cfg *c, struct wrap_watch *w,
		     struct mroce_sim_result *r)
{
	struct mroce_sim *sim;

	memset(w, 0, sizeof(*w));
	c->trace = watch_wrap;
	c->trace_arg = w;
	c->trace_ns = 10000;
	ck_assert_int_eq(mroce_sim_create(c, &sim), 0);
	ck_assert_int_eq(mroce_sim_run(sim, r), 0);
	mroce_sim_destroy(sim);
	ck_assert_msg(r->verdict == MROCE_SIM_OK, "%s", r->why);
	ck_assert_uint_eq(r->completed_bytes, r->target_bytes);
}

static const uint8_t wrap_ops[] = { MROCE_SIM_OP_WRITE, MROCE_SIM_OP_READ,
				    MROCE_SIM_OP_SEND };

/* Path slot 0 of every connection (4 paths) starts 64 PSNs below 2^32,
 * under 2% loss and 1% duplication on 4 planes, for WRITE, READ and
 * SEND: every byte arrives, and slot 0's PSNs did cross 2^32 on the
 * sending side and on the receiving side of the data (for READ the data
 * comes from host 0, whose connection wraps too). */
START_TEST(metaroce_wrap__psn_crosses_2_32_under_loss)
{
	uint8_t op = wrap_ops[_i % 3];
	int data_from = op == MROCE_SIM_OP_READ ? 0 : 1;
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;
	struct wrap_watch w;

	base(&c, MROCE_TRANSPORT_METAROCE, 2000 + (uint64_t)_i);
	each_path(&c, 0.02, 0.01, 0);
	c.op = op;
	c.engine_paths = 4;	/* 4 paths share 1024 packets: slot 0 gets */
	c.bytes = 4 << 20;	/* well over the 64 before the wrap */
	c.start_psn = 0xffffffc0;
	wrap_run(&c, &w, &r);
	ck_assert_msg(w.psn_crossed[data_from], "op %u: the sender of the "
		      "data never crossed 2^32", op);
	ck_assert_msg(w.rx_crossed[1 - data_from], "op %u: the receiver of "
		      "the data never crossed 2^32", op);
	ck_assert_uint_gt(r.retransmits, 0);
}
END_TEST

/* A path slot's generation is 8 bits (gen_newer compares mod 256). The
 * four planes flap, each down 500 us and up 500 us, out of phase (half
 * the fabric is always up): a path is retired and re-rolled about every
 * millisecond. Every slot starts at generation 250, and the run lasts
 * until some slot of each engine has advanced past 256 generations: its
 * counter went round 255 -> 0 at least once and came back to where it
 * began. WRITE and READ; every byte is checked. */
START_TEST(metaroce_wrap__generations_go_round_under_flapping_planes)
{
	uint8_t op = wrap_ops[_i % 2];
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;
	struct wrap_watch w;

	base(&c, MROCE_TRANSPORT_METAROCE, 3000 + (uint64_t)_i);
	c.op = op;
	c.engine_paths = 4;
	c.first_gen = 250;
	c.bytes = 256ull << 20;
	c.msg_size = 64 << 10;
	c.outstanding = 16;
	for (int i = 0; i < 4; i++) {
		c.net.path[i].blackhole_at = 100000 + 250000ull * i;
		c.net.path[i].flap_ns = 500000;
	}
	wrap_run(&c, &w, &r);
	ck_assert(w.gen_crossed[0] && w.gen_crossed[1]);
	ck_assert_msg(most_gens(&w, 1) > 256 && most_gens(&w, 0) > 256,
		      "op %u: most generations of one slot: %u / %u (%llu "
		      "re-rolls)", op, most_gens(&w, 1), most_gens(&w, 0),
		      (unsigned long long)r.path_rerolls);
}
END_TEST

MROCE_SUITE(scenarios_suite)
Suite *scenarios_suite(void)
{
	Suite *s = suite_create("scenarios");
	TCase *tc = tcase_create("matrix");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, scenario__byte_exact_and_live, 0,
			    NSCEN * 2 * NSEEDS);
	tcase_add_test(tc, sim_trace__periodic_and_read_only);
	suite_add_tcase(s, tc);
	tc = tcase_create("wrap");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, metaroce_wrap__psn_crosses_2_32_under_loss, 0,
			    6);
	tcase_add_loop_test(
		tc, metaroce_wrap__generations_go_round_under_flapping_planes,
		0, 2);
	suite_add_tcase(s, tc);
	return s;
}
