// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/metaroce/cc.c: the per-path window rules, loss
 * response, receiver fair share, and an 8-to-1 incast through the test
 * pump.
 */
#include "../harness.h"
#include "engine_pump.h"
#include "../../user/engine/metaroce/metaroce_int.h"

/* A connection whose smallest delay target adds nothing (ser_floor_us
 * 0) and with no data waiting: the path rules on their own. */
static struct mr_conn c0;

static struct mroce_engine *mk(void)
{
	struct mroce_engine_cfg cfg = { .seed = 1, .link_bps = 100000000000ull };
	struct mroce_engine *e;

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	mroce_list_init(&c0.sched);	/* no data waiting: see busy() */
	return e;
}

/* The sender keeps the path's window full (the window may grow only
 * when it is the limit: mr_cc_on_send). */
static void busy(struct mr_path *p)
{
	p->inflight = MR_PATH_WIN;
	mr_cc_on_send(p);
}

START_TEST(mr_cc_on_ack__four_quadrants)
{
	struct mroce_engine *e = mk();
	struct mr_path p = { .rtt = { .srtt_us = 10, .min_us = 10 } };
	uint32_t w0;

	mr_cc_init(e, &p);
	busy(&p);
	w0 = p.cc.cwnd;
	/* low delay, no ECN: proportional increase */
	mr_cc_on_ack(e, &c0, &p, 4, 0, 10, 1000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 2 * 256);
	/* high delay, no ECN: hold (a decrease waits for the RTT's end) */
	w0 = p.cc.cwnd;
	mr_cc_on_ack(e, &c0, &p, 18, 0, 100, 2000);
	ck_assert_uint_eq(p.cc.cwnd, w0);
	/* low delay with ECN: unchanged */
	w0 = p.cc.cwnd;
	mr_cc_on_ack(e, &c0, &p, 4, 3, 10, 3000);
	ck_assert_uint_eq(p.cc.cwnd, w0);
	/* high delay with ECN: multiplicative decrease, once per RTT */
	mr_cc_on_ack(e, &c0, &p, 4, 3, 100, 100000);
	ck_assert_uint_eq(p.cc.cwnd, w0 * 7 / 10);
	w0 = p.cc.cwnd;
	mr_cc_on_ack(e, &c0, &p, 4, 3, 100, 100000 + 5000);
	ck_assert_uint_eq(p.cc.cwnd, w0);
	mr_cc_on_ack(e, &c0, &p, 4, 3, 100, 100000 + 20000);
	ck_assert_uint_lt(p.cc.cwnd, w0);
	mroce_engine_destroy(e);
}
END_TEST

/* Queueing delay above the target (base + max(base/4, 2 us)): once per
 * RTT, a decrease in proportion to the excess of the round trip's
 * smallest sample, not a halving; a single low sample in the round trip
 * (an immediate ACK among coalesced ones) means no decrease. */
START_TEST(mr_cc_on_ack__delay_decrease_proportional_to_excess)
{
	struct mroce_engine *e = mk();
	struct mr_path p = { .rtt = { .srtt_us = 10, .min_us = 10 } };
	uint32_t w0;

	mr_cc_init(e, &p);
	busy(&p);
	p.cc.cwnd = 100 * 256;
	w0 = p.cc.cwnd;
	/* at the target (10 + 2 us): low delay, increase; a period starts */
	mr_cc_on_ack(e, &c0, &p, 2, 0, 12, 1000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 256);
	/* above it within the period: hold */
	w0 = p.cc.cwnd;
	mr_cc_on_ack(e, &c0, &p, 2, 0, 14, 2000);
	ck_assert_uint_eq(p.cc.cwnd, w0);
	/* period over, smallest sample 14 us: x(1 - 0.8 * 2 / 14) */
	mr_cc_on_ack(e, &c0, &p, 2, 0, 15, 12000);
	ck_assert_uint_eq(p.cc.cwnd,
			  (uint32_t)((uint64_t)w0 * (1000 - 1600 / 14) /
				     1000));
	ck_assert_uint_gt(p.cc.cwnd, w0 * 8 / 10);
	/* inflated samples with one low one in the period: no decrease */
	w0 = p.cc.cwnd;
	mr_cc_on_ack(e, &c0, &p, 2, 0, 30, 13000);
	mr_cc_on_ack(e, &c0, &p, 2, 0, 11, 14000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 256);
	mr_cc_on_ack(e, &c0, &p, 2, 0, 30, 30000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 256);
	mroce_engine_destroy(e);
}
END_TEST

/* cfg.jitter_us (software endpoints): RTT samples up to base + jitter
 * are scheduling noise, not queueing: the window grows on them and is not
 * cut at the end of the round trip; above it the usual decrease holds. */
START_TEST(mr_cc_on_ack__jitter_floor_is_not_queueing)
{
	struct mroce_engine_cfg cfg = { .seed = 1,
					.link_bps = 100000000000ull,
					.jitter_us = 300 };
	struct mroce_engine *e, *plain = mk();
	struct mr_path p = { .rtt = { .srtt_us = 30, .min_us = 30 } };
	struct mr_path q = { .rtt = { .srtt_us = 30, .min_us = 30 } };
	uint32_t w0;

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	mr_cc_init(e, &p);
	mr_cc_init(plain, &q);
	p.cc.cwnd = q.cc.cwnd = 100 * 256;
	busy(&p);
	busy(&q);
	/* a sample at the base opens a round trip (period) on both */
	mr_cc_on_ack(e, &c0, &p, 2, 0, 30, 1000);
	mr_cc_on_ack(plain, &c0, &q, 2, 0, 30, 1000);
	w0 = p.cc.cwnd;
	ck_assert_uint_eq(q.cc.cwnd, w0);
	/* 250 us over the base: growth with the floor, hold without */
	mr_cc_on_ack(e, &c0, &p, 2, 0, 280, 2000);
	mr_cc_on_ack(plain, &c0, &q, 2, 0, 280, 2000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 256);
	ck_assert_uint_eq(q.cc.cwnd, w0);
	/* the round trip ends with the same samples: only plain cuts */
	mr_cc_on_ack(e, &c0, &p, 2, 0, 280, 40000);
	mr_cc_on_ack(plain, &c0, &q, 2, 0, 280, 40000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 2 * 256);
	ck_assert_uint_lt(q.cc.cwnd, w0);
	/* beyond base + jitter it is queueing again */
	w0 = p.cc.cwnd;
	mr_cc_on_ack(e, &c0, &p, 2, 0, 900, 50000);
	mr_cc_on_ack(e, &c0, &p, 2, 0, 900, 90000);
	ck_assert_uint_lt(p.cc.cwnd, w0);
	mroce_engine_destroy(e);
	mroce_engine_destroy(plain);
}
END_TEST

/* ECN with low delay: once per RTT (the delay period), the window is cut
 * by half the fraction of the period's packets marked; unmarked periods
 * grow as before. */
START_TEST(mr_cc_on_ack__ecn_without_delay_cuts_by_marked_fraction)
{
	struct mroce_engine *e = mk();
	struct mr_path p = { .rtt = { .srtt_us = 10, .min_us = 10 } };
	uint64_t now = 1000000;
	uint32_t w0;

	mr_cc_init(e, &p);
	busy(&p);
	p.cc.cwnd = 100 * 256;
	mr_cc_on_ack(e, &c0, &p, 1, 0, 10, now); /* opens a period */
	w0 = p.cc.cwnd;
	/* a period with every packet marked: hold within it... */
	for (int i = 0; i < 5; i++)
		mr_cc_on_ack(e, &c0, &p, 2, 2, 10, now += 1000);
	ck_assert_uint_eq(p.cc.cwnd, w0);
	/* ...and half at its end (the ACK that ends it is marked too) */
	mr_cc_on_ack(e, &c0, &p, 2, 2, 10, now += 20000);
	ck_assert_uint_eq(p.cc.cwnd, w0 / 2);
	/* a fifth marked: x0.9 */
	w0 = p.cc.cwnd;
	for (int i = 0; i < 4; i++)
		mr_cc_on_ack(e, &c0, &p, 2, 0, 10, now += 1000);
	mr_cc_on_ack(e, &c0, &p, 2, 2, 10, now += 20000);
	ck_assert_uint_eq(p.cc.cwnd, (w0 + 4 * 256) * 9 / 10);
	mroce_engine_destroy(e);
}
END_TEST

/* The delay target is never below the queueing of one packet per path
 * (mr_cc_conn_mtu): 8 paths of 4 KiB segments at 100 Gbit/s take 2.6 us,
 * so over a 6 us base RTT an 8 us sample is no queue and the window
 * grows, where the base/4 rule alone (target 7 us) held it and cut it
 * (the decay of long lossy runs on slow planes, docs/engine.md). */
START_TEST(mr_cc_on_ack__target_covers_one_packet_per_path)
{
	struct mroce_engine *e = mk();
	struct mr_conn c = { .npaths = 8, .mtu = 4096 };
	struct mr_path p = { .rtt = { .srtt_us = 8, .min_us = 6 } };
	struct mr_path q = p;
	uint64_t now = 1000;

	mroce_list_init(&c.sched);
	mr_cc_conn_mtu(e, &c);
	ck_assert_uint_eq(c.ser_floor_us, 3);
	mr_cc_init(e, &p);
	mr_cc_init(e, &q);
	p.cc.cwnd = q.cc.cwnd = 256; /* one packet */
	busy(&p);
	busy(&q);
	for (int i = 0; i < 50; i++, now += 8000) {
		mr_cc_on_ack(e, &c, &p, 1, 0, 8, now);
		mr_cc_on_ack(e, &c0, &q, 1, 0, 8, now);
	}
	ck_assert_uint_ge(mr_cc_cwnd_pkts(&p), 20);
	ck_assert_uint_eq(mr_cc_cwnd_pkts(&q), 1);
	/* a real queue beyond it is still one */
	for (int i = 0; i < 50; i++, now += 8000)
		mr_cc_on_ack(e, &c, &p, 1, 0, 30, now);
	ck_assert_uint_lt(mr_cc_cwnd_pkts(&p), 20);
	/* the floor follows the link: 10 Gbit/s, 26.2 us */
	e->cfg.link_bps = 10000000000ull;
	mr_cc_conn_mtu(e, &c);
	ck_assert_uint_eq(c.ser_floor_us, 27);
	mroce_engine_destroy(e);
}
END_TEST

/* Random loss without ECN or delay leaves the window alone; the floor,
 * the cap, timeout and reroll resets still hold. */
START_TEST(mr_cc_on_loss__window_kept_floor_and_cap)
{
	struct mroce_engine *e = mk();
	struct mr_path p = { .rtt = { .srtt_us = 10, .min_us = 10 } };
	uint64_t now = 1000000;
	uint32_t w0;

	mr_cc_init(e, &p);
	w0 = p.cc.cwnd;
	for (int i = 0; i < 100; i++) {
		now += 20000;
		mr_cc_on_loss(e, &p, now);
	}
	ck_assert_uint_eq(p.cc.cwnd, w0);
	/* congestion (ECN and delay) drives it to the floor */
	for (int i = 0; i < 100; i++) {
		now += 20000;
		mr_cc_on_ack(e, &c0, &p, 1, 1, 100, now);
	}
	ck_assert_uint_eq(mr_cc_cwnd_pkts(&p), 1);
	p.inflight = 1;
	ck_assert_uint_eq(mr_cc_room(&p), 0);
	busy(&p);
	for (int i = 0; i < 10000; i++)
		mr_cc_on_ack(e, &c0, &p, 8, 0, 0, now);
	ck_assert_uint_eq(mr_cc_cwnd_pkts(&p), MR_PATH_WIN);
	mr_cc_on_timeout(e, &p);
	ck_assert_uint_eq(mr_cc_cwnd_pkts(&p), 8);
	mr_cc_on_reroll(e, &p);
	ck_assert_uint_eq(mr_cc_cwnd_pkts(&p), 1);
	mroce_engine_destroy(e);
}
END_TEST

/* A window the sender does not use does not grow (RFC 7661: at least
 * half of it in flight): a path that carried one small message per round
 * trip kept growing to MR_PATH_WIN and then let the next bulk transfer
 * out in one burst, the loaded-latency spike of issue #13. Once half the
 * window is in flight it grows again, until the end of a period in which
 * it never was. */
START_TEST(mr_cc_on_ack__window_grows_only_when_used)
{
	struct mroce_engine *e = mk();
	struct mr_path p = { .rtt = { .srtt_us = 10, .min_us = 10 } };
	struct mr_conn c = { 0 };	/* nothing waiting to be sent */
	struct mroce_list waiting;	/* a QP's schedule link */
	uint64_t now = 1000000;
	uint32_t w0;

	mroce_list_init(&c.sched);
	mr_cc_init(e, &p);
	w0 = p.cc.cwnd;
	for (int i = 0; i < 100; i++, now += 11000) {
		p.inflight = 1;
		mr_cc_on_send(&p);
		p.inflight = 0;
		mr_cc_on_ack(e, &c, &p, 1, 0, 10, now);
	}
	ck_assert_uint_eq(p.cc.cwnd, w0);
	/* the sender fills half of it: it grows */
	p.inflight = mr_cc_cwnd_pkts(&p) / 2;
	mr_cc_on_send(&p);
	p.inflight = 0;
	mr_cc_on_ack(e, &c, &p, 2, 0, 10, now += 1000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 256);
	/* a whole period without using it: growth stops again */
	mr_cc_on_ack(e, &c, &p, 2, 0, 10, now += 11000);
	w0 = p.cc.cwnd;
	mr_cc_on_ack(e, &c, &p, 2, 0, 10, now += 1000);
	ck_assert_uint_eq(p.cc.cwnd, w0);
	/* unless data waits for room: then the window is the limit */
	mroce_list_add_tail(&c.sched, &waiting);
	mr_cc_on_ack(e, &c, &p, 2, 0, 10, now += 1000);
	ck_assert_uint_eq(p.cc.cwnd, w0 + 256);
	mroce_engine_destroy(e);
}
END_TEST

/* cfg.queue_us (software endpoints): a round trip whose smallest sample
 * is above the connection's base RTT + queue_us is a standing queue,
 * though within the jitter allowance: the window is cut and does not
 * grow in the next round trip. The base is the connection's (its
 * smallest path's), so a path that never saw its own base is judged too.
 * Without queue_us, the same samples grow the window (the jitter rule). */
START_TEST(mr_cc_on_ack__software_queue_target_bounds_the_queue)
{
	struct mroce_engine_cfg cfg = { .seed = 1,
					.link_bps = 100000000000ull,
					.jitter_us = 10000, .queue_us = 100 };
	struct mroce_engine *e, *plain;
	/* a connection of 2 paths (path[] is its flexible tail) */
	struct mr_conn *cp = calloc(1, sizeof(*cp) + 2 * sizeof(cp->path[0]));
	uint64_t now = 1000000;
	uint32_t w0;

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	cfg.queue_us = 0;
	ck_assert_int_eq(mroce_engine_create(&cfg, &plain), 0);
	ck_assert_ptr_nonnull(cp);
	cp->npaths = 2;
	mroce_list_init(&cp->sched);
	cp->path[0].rtt.srtt_us = cp->path[0].rtt.min_us = 50;
	cp->path[1].rtt.srtt_us = 400;
	cp->path[1].rtt.min_us = 300;	/* born under load */
	for (int k = 0; k < 2; k++) {
		struct mr_path *p = &cp->path[1];
		struct mroce_engine *en = k ? plain : e;

		mr_cc_init(en, p);
		p->rtt.srtt_us = 400;
		p->rtt.min_us = 300;
		p->cc.cwnd = 100 * 256;
		busy(p);
		/* round trips of samples 400 us (the smallest 400): a
		 * queue of 350 us over the connection's 50 us base */
		mr_cc_on_ack(en, cp, p, 2, 0, 400, now);
		for (int i = 0; i < 3; i++)
			mr_cc_on_ack(en, cp, p, 2, 0, 400, now += 100000);
		w0 = p->cc.cwnd;
		mr_cc_on_ack(en, cp, p, 2, 0, 400, now += 1000);
		if (k == 0) {
			ck_assert_uint_lt(w0, 100 * 256);
			ck_assert(p->cc.queued);
			ck_assert_uint_eq(p->cc.cwnd, w0);
		} else {
			ck_assert_uint_gt(w0, 100 * 256);
			ck_assert(!p->cc.queued);
			ck_assert_uint_eq(p->cc.cwnd, w0 + 256);
		}
	}
	/* the smallest sample back within base + queue_us: growth again */
	mr_cc_on_ack(e, cp, &cp->path[1], 2, 0, 120, now += 100000);
	mr_cc_on_ack(e, cp, &cp->path[1], 2, 0, 120, now += 100000);
	ck_assert(!cp->path[1].cc.queued);
	w0 = cp->path[1].cc.cwnd;
	mr_cc_on_ack(e, cp, &cp->path[1], 2, 0, 120, now += 1000);
	ck_assert_uint_eq(cp->path[1].cc.cwnd, w0 + 256);
	free(cp);
	mroce_engine_destroy(e);
	mroce_engine_destroy(plain);
}
END_TEST

START_TEST(mr_cc_fair_share__divides_link_among_active_senders)
{
	struct mroce_engine *e = mk();
	struct mr_conn c[4];
	uint64_t now = 5000000;

	memset(c, 0, sizeof(c));
	ck_assert_uint_eq(mr_cc_fair_share(e, NULL, now), 100000000000ull);
	for (int i = 0; i < 4; i++)
		mr_cc_fair_share(e, &c[i], now + (uint64_t)i);
	ck_assert_uint_eq(mr_cc_fair_share(e, &c[0], now + 10),
			  25000000000ull);
	/* next epoch: still remembered (previous epoch counts) */
	ck_assert_uint_eq(mr_cc_fair_share(e, &c[0], now + MR_FAIR_EPOCH_NS),
			  25000000000ull);
	/* long silence: only the one sender left */
	ck_assert_uint_eq(mr_cc_fair_share(e, &c[1],
					   now + 10 * MR_FAIR_EPOCH_NS),
			  100000000000ull);
	mroce_engine_destroy(e);
}
END_TEST

/* With thousands of senders each paced at its share, one packet per
 * sender takes longer than the base epoch: the epoch grows to span two
 * such gaps, so the count (and the hint) holds. */
START_TEST(mr_cc_fair_share__epoch_spans_paced_senders)
{
	struct mroce_engine *e = mk();
	static struct mr_conn c[4000];
	uint64_t now = 5000000, share;

	memset(c, 0, sizeof(c));
	for (int i = 0; i < 4000; i++)
		mr_cc_fair_share(e, &c[i], now + (uint64_t)i);
	/* the next epoch starts: the previous one's 4000 are remembered */
	share = mr_cc_fair_share(e, &c[0], now + MR_FAIR_EPOCH_NS);
	ck_assert_uint_eq(share, 100000000000ull / 4000);
	/* two base epochs later only a few have sent again (each sends
	 * every 4000 * 4 KiB * 8 / 100 Gbit/s = 1.3 ms): still 4000 */
	for (int i = 1; i < 10; i++)
		mr_cc_fair_share(e, &c[i], now + 3 * MR_FAIR_EPOCH_NS);
	share = mr_cc_fair_share(e, &c[10], now + 3 * MR_FAIR_EPOCH_NS);
	ck_assert_uint_eq(share, 100000000000ull / 4000);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mr_cc_rate__honours_receiver_hint)
{
	struct mroce_engine *e = mk();
	struct mr_conn c;

	memset(&c, 0, sizeof(c));
	ck_assert_uint_eq(mr_cc_rate(e, &c, 0), 100000000000ull / 4);
	c.pace.hint_bps = 100000000000ull;
	ck_assert_uint_eq(mr_cc_rate(e, &c, 0), 100000000000ull);
	c.pace.hint_bps = 12500000000ull;
	ck_assert_uint_eq(mr_cc_rate(e, &c, 0), 12500000000ull);
	c.pace.hint_bps = 400000000000ull;
	ck_assert_uint_eq(mr_cc_rate(e, &c, 0), 100000000000ull);
	mroce_engine_destroy(e);
}
END_TEST

/* 8 senders WRITE 1 MiB each to one receiver. */
struct incast {
	int cq[PUMP_MAX];
	uint32_t qpn[PUMP_MAX][PUMP_MAX];
	int done;
	uint8_t *src, *dst;
	size_t len;
};

static bool cond_all_hinted(struct pump *p, void *arg)
{
	for (int i = 1; i < p->n; i++) {
		struct mr_engine *t = p->e[i]->tp;
		struct mr_conn *c = t->by_peer[p->peer[i][0]];

		if (!c || c->pace.hint_bps == 0 ||
		    c->pace.hint_bps > 100000000000ull / 8)
			return false;
	}
	return true;
}

static bool cond_all_done(struct pump *p, void *arg)
{
	struct incast *ic = arg;
	struct mroce_wc wc[8];

	for (int i = 1; i < p->n; i++) {
		int n = mroce_poll_cq(p->e[i], ic->cq[i], wc, 8);

		for (int k = 0; k < n; k++) {
			ck_assert_int_eq(wc[k].status, MROCE_WC_SUCCESS);
			ic->done++;
		}
	}
	return ic->done == p->n - 1;
}

static void incast_setup(struct pump *p, struct incast *ic)
{
	struct mroce_engine_cfg cfg = { .seed = 9, .mtu = 4096,
					.link_bps = 100000000000ull };
	struct mroce_mr mr[PUMP_MAX];

	memset(ic, 0, sizeof(*ic));
	ic->len = 1 << 20;
	ic->src = malloc(ic->len);
	ic->dst = calloc(8, ic->len);
	for (size_t i = 0; i < ic->len; i++)
		ic->src[i] = (uint8_t)(i * 13);
	ck_assert_int_eq(pump_init(p, 9, &cfg), 0);
	p->delay = 5000;
	for (int i = 0; i < 9; i++) {
		ic->cq[i] = mroce_create_cq(p->e[i], 256);
		ck_assert_int_eq(mroce_reg_mr(p->e[i], i ? ic->src : ic->dst,
					      i ? ic->len : 8 * ic->len,
					      MROCE_ACCESS_LOCAL_WRITE |
						      MROCE_ACCESS_REMOTE_WRITE,
					      &mr[i]),
				 0);
	}
	for (int i = 1; i < 9; i++) {
		struct mroce_qp_init_attr ia = { ic->cq[i], ic->cq[i], 16, 16 };
		struct mroce_qp_init_attr ra = { ic->cq[0], ic->cq[0], 16, 16 };
		struct mroce_qp_attr a = { .access = MROCE_ACCESS_REMOTE_WRITE };

		ic->qpn[i][0] = (uint32_t)mroce_create_qp(p->e[i], &ia);
		ic->qpn[0][i] = (uint32_t)mroce_create_qp(p->e[0], &ra);
		for (int side = 0; side < 2; side++) {
			struct mroce_engine *e = side ? p->e[0] : p->e[i];
			uint32_t me = side ? ic->qpn[0][i] : ic->qpn[i][0];

			a.state = MROCE_QPS_INIT;
			ck_assert_int_eq(
				mroce_modify_qp(e, me, &a,
						MROCE_QP_STATE |
							MROCE_QP_ACCESS_FLAGS,
						p->now),
				0);
			a.state = MROCE_QPS_RTR;
			a.peer = side ? p->peer[0][i] : p->peer[i][0];
			a.dest_qpn = side ? ic->qpn[i][0] : ic->qpn[0][i];
			ck_assert_int_eq(mroce_modify_qp(e, me, &a,
							 MROCE_QP_STATE |
								 MROCE_QP_DEST,
							 p->now),
					 0);
			a.state = MROCE_QPS_RTS;
			ck_assert_int_eq(mroce_modify_qp(e, me, &a,
							 MROCE_QP_STATE,
							 p->now),
					 0);
		}
	}
	for (int i = 1; i < 9; i++) {
		struct mroce_send_wr wr = {
			.wr_id = (uint64_t)i,
			.opcode = MROCE_WR_RDMA_WRITE,
			.send_flags = MROCE_SEND_SIGNALED,
			.sge = { (uint64_t)(uintptr_t)ic->src,
				 (uint32_t)ic->len, mr[i].lkey },
			.remote_addr = (uint64_t)(uintptr_t)(ic->dst +
							     (i - 1) * ic->len),
			.rkey = mr[0].rkey,
		};

		ck_assert_int_eq(mroce_post_send(p->e[i], ic->qpn[i][0], &wr,
						 p->now),
				 0);
	}
}

static void incast_fini(struct pump *p, struct incast *ic)
{
	for (int i = 0; i < 8; i++)
		ck_assert(!memcmp(ic->dst + i * ic->len, ic->src, ic->len));
	ck_assert_uint_eq(p->spins, 0);	/* next_timer() never lied */
	pump_fini(p);
	free(ic->src);
	free(ic->dst);
}

/* Within a few RTTs every sender paces at the receiver's fair share. */
START_TEST(incast__eight_senders_converge_to_fair_share)
{
	static struct pump p;
	struct incast ic;
	uint64_t t0;

	incast_setup(&p, &ic);
	t0 = p.now;
	ck_assert(pump_run(&p, cond_all_hinted, NULL, 1000000000ull));
	/* handshake (2 RTT) + first data RTT + a couple more */
	ck_assert_uint_le(p.now - t0, 6 * 2 * p.delay);
	ck_assert(pump_run(&p, cond_all_done, &ic, 5000000000ull));
	for (int i = 1; i < 9; i++) {
		struct mr_engine *t = p.e[i]->tp;
		struct mr_conn *c = t->by_peer[p.peer[i][0]];

		ck_assert_uint_le(mr_cc_rate(p.e[i], c, p.now),
				  100000000000ull / 8);
	}
	incast_fini(&p, &ic);
}
END_TEST

/* Through a real bottleneck (the receiver's 100G downlink, 100 us of
 * buffer, ECN above 5 us): no collapse. The 8 MiB take less than 1.5x
 * their serialisation time and at most 1% is dropped. */
START_TEST(incast__bottleneck_does_not_collapse)
{
	static struct pump p;
	struct incast ic;
	struct mroce_engine_stats st;
	uint64_t t0, ideal = 8ull * (1 << 20) * 8 * 1000000000ull /
			     100000000000ull;
	uint64_t data = 0;

	incast_setup(&p, &ic);
	p.link_bps = 100000000000ull;
	p.ecn_ns = 5000;
	p.limit_ns = 100000;
	t0 = p.now;
	ck_assert(pump_run(&p, cond_all_done, &ic, 5000000000ull));
	for (int i = 1; i < 9; i++) {
		mroce_engine_get_stats(p.e[i], &st);
		data += st.tx_data_pkts;
	}
	ck_assert_msg(p.now - t0 < ideal * 3 / 2 && p.qdrops * 100 <= data,
		      "incast: %llu us (ideal %llu us), %llu data pkts, %llu "
		      "dropped, %llu CE, max queue %llu us",
		      (unsigned long long)(p.now - t0) / 1000,
		      (unsigned long long)ideal / 1000,
		      (unsigned long long)data, (unsigned long long)p.qdrops,
		      (unsigned long long)p.qmarks,
		      (unsigned long long)p.max_qdelay / 1000);
	incast_fini(&p, &ic);
}
END_TEST

MROCE_SUITE(metaroce_cc_suite)
Suite *metaroce_cc_suite(void)
{
	Suite *s = suite_create("metaroce_cc");
	TCase *tc = tcase_create("cc");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mr_cc_on_ack__four_quadrants);
	tcase_add_test(tc, mr_cc_on_ack__delay_decrease_proportional_to_excess);
	tcase_add_test(tc, mr_cc_on_ack__jitter_floor_is_not_queueing);
	tcase_add_test(tc, mr_cc_on_loss__window_kept_floor_and_cap);
	tcase_add_test(tc, mr_cc_on_ack__target_covers_one_packet_per_path);
	tcase_add_test(tc, mr_cc_on_ack__ecn_without_delay_cuts_by_marked_fraction);
	tcase_add_test(tc, mr_cc_on_ack__window_grows_only_when_used);
	tcase_add_test(tc, mr_cc_on_ack__software_queue_target_bounds_the_queue);
	tcase_add_test(tc, mr_cc_fair_share__epoch_spans_paced_senders);
	tcase_add_test(tc, mr_cc_fair_share__divides_link_among_active_senders);
	tcase_add_test(tc, mr_cc_rate__honours_receiver_hint);
	tcase_add_test(tc, incast__eight_senders_converge_to_fair_share);
	tcase_add_test(tc, incast__bottleneck_does_not_collapse);
	suite_add_tcase(s, tc);
	return s;
}
