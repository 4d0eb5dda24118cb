// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: the path lifecycle (path.c, timer.c):
 * blackholes, silent and lossy paths rerolled, probation of a fresh port,
 * spraying away from a congested path, a receiver paused and resumed. Two (or
 * more) engines through the in-test pump (metaroce_pair.h).
 */
#include "metaroce_pair.h"

START_TEST(path__blackhole_rerolled_and_transfer_completes)
{
	struct pair s;
	struct bh b = { .src = 0 };
	struct mroce_path_info pi;
	size_t len = 256 * 1024;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 0, 3);
	b.sport = pi.sport;
	b.dropped = 0;
	ck_assert_uint_eq(pi.gen, 0);
	set_filter(&s, blackhole_port, &b);
	write_half(&s, len, 2000000000ull);
	ck_assert_int_gt(b.dropped, 0);
	pi = path_of(&s, 0, 3);
	ck_assert_uint_ge(pi.gen, 1);
	ck_assert_uint_ne(pi.sport, b.sport);
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	ck_assert_int_eq(mroce_engine_path_info(s.p.e[0], s.p.peer[0][1], 8,
						&pi),
			 -ENOENT);
	pair_fini(&s);
}
END_TEST

struct gen_wait {
	struct pair *s;
	uint8_t gen;
};

static bool cond_path3_gen(struct pump *p, void *arg)
{
	struct gen_wait *g = arg;
	struct mroce_path_info pi;

	collect(g->s);
	return !mroce_engine_path_info(p->e[0], p->peer[0][1], 3, &pi) &&
	       pi.gen >= g->gen;
}

/* A path that falls silent mid-transfer while its siblings keep acking
 * is rerolled within a few RTTs (PTO-based, no RTO and no retry charged
 * to the messages), and a fresh port carries no data until its PROBE is
 * answered. */
START_TEST(path__silent_path_rerolled_within_few_rtts)
{
	struct pair s;
	struct bh b = { 0 };
	struct mroce_path_info pi;
	struct gen_wait g;
	size_t len = 4 << 20;
	uint64_t t0, rtt;

	pair_setup(&s, 2 * len);
	establish(&s);
	post_write_half(&s, len);
	/* let the paths measure their RTT, then kill path 3 */
	pump_run(&s.p, NULL, NULL, 100000);
	ck_assert_int_eq(s.s[0].nwc, 0);
	pi = path_of(&s, 0, 3);
	ck_assert_uint_eq(pi.gen, 0);
	ck_assert_uint_gt(pi.srtt_us, 0);
	b.sport = pi.sport;
	set_filter(&s, blackhole_port, &b);
	t0 = s.p.now;
	rtt = 2 * s.p.delay;
	g.s = &s;
	g.gen = 1;
	ck_assert(pump_run(&s.p, cond_path3_gen, &g, 100 * rtt));
	/* 10 RTTs, plus the receiver's ACK coalescing delay: a path whose
	 * packets may wait that long for their ACK is not silent before it
	 * (an earlier verdict retired healthy paths in mroce_sim) */
	ck_assert_uint_le(s.p.now - t0, 10 * rtt + MR_ACK_DELAY_NS);
	ck_assert_uint_eq(stats(&s, 0).rto_fires, 0);
	finish_write_half(&s, len, 2000000000ull);
	ck_assert_int_gt(b.dropped, 0);
	pair_fini(&s);
}
END_TEST

/* The rerolled port lands on the dead plane again (its probe is dropped
 * too): it gets no data and is rerolled again, the transfer completes
 * on the others with no RTO. */
static enum pump_verdict blackhole_path3(struct pump *p, int src, int dst,
					 const struct mroce_tx_pkt *t,
					 const struct mroce_meta_pkt *pk)
{
	struct bh *b = p->ctx;

	if (src == 0 && pk && pk->path == 3 && pk->path_gen < 2) {
		b->dropped++;
		return PUMP_DROP;
	}
	return PUMP_PASS;
}

START_TEST(path__reroll_probation_keeps_data_off_unproven_port)
{
	struct pair s;
	struct bh b = { 0 };
	struct mroce_path_info pi;
	struct gen_wait g;
	size_t len = 4 << 20;
	uint64_t tx_before;

	pair_setup(&s, 2 * len);
	establish(&s);
	post_write_half(&s, len);
	pump_run(&s.p, NULL, NULL, 100000);
	set_filter(&s, blackhole_path3, &b);
	g.s = &s;
	g.gen = 1;
	ck_assert(pump_run(&s.p, cond_path3_gen, &g, 10000000));
	pi = path_of(&s, 0, 3);
	tx_before = pi.tx_pkts;
	g.gen = 2;
	ck_assert(pump_run(&s.p, cond_path3_gen, &g, 10000000));
	pi = path_of(&s, 0, 3);
	/* generation 1 was never answered: it carried no data */
	ck_assert_uint_eq(pi.tx_pkts, tx_before);
	finish_write_half(&s, len, 2000000000ull);
	ck_assert_uint_eq(stats(&s, 0).rto_fires, 0);
	pair_fini(&s);
}
END_TEST

static enum pump_verdict congest_port(struct pump *p, int src, int dst,
				      const struct mroce_tx_pkt *t,
				      const struct mroce_meta_pkt *pk)
{
	struct bh *b = p->ctx;

	return src == 0 && t->sport == b->sport ? PUMP_CE_LATE : PUMP_PASS;
}

/* One path is slow and ECN-marked: the spraying sends it much less than
 * its share, and nothing is lost or retransmitted needlessly. */
START_TEST(spray__moves_traffic_off_congested_path)
{
	struct pair s;
	struct bh b = { 0 };
	struct mroce_path_info pi;
	uint64_t others = 0, slow;
	size_t len = 2 << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 0, 5);
	b.sport = pi.sport;
	set_filter(&s, congest_port, &b);
	post_write_half(&s, len);
	ck_assert(run_until_wcs(&s, 1, 0, 2000000000ull));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	pi = path_of(&s, 0, 5);
	slow = pi.tx_pkts;
	ck_assert_uint_gt(pi.ce_marks, 0);
	for (int i = 0; i < 8; i++) {
		pi = path_of(&s, 0, i);
		if (i != 5)
			others += pi.tx_pkts;
	}
	/* fair share would be others / 7 */
	ck_assert_uint_lt(slow * 7 * 2, others);
	ck_assert_uint_eq(stats(&s, 0).retransmits, 0);
	pair_fini(&s);
}
END_TEST

struct lossy {
	uint16_t sport;
	uint64_t x;
};

static enum pump_verdict lossy_port(struct pump *p, int src, int dst,
				    const struct mroce_tx_pkt *t,
				    const struct mroce_meta_pkt *pk)
{
	struct lossy *l = p->ctx;

	if (lcg(&l->x) % 2 && src == 0 && t->sport == l->sport)
		return PUMP_DROP;
	return PUMP_PASS;
}

/* A path that keeps losing half its packets gets a new port. */
START_TEST(path__lossy_path_rerolled)
{
	struct pair s;
	struct lossy l = { .x = 3 };
	struct mroce_path_info pi;
	size_t len = 4 << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 0, 2);
	l.sport = pi.sport;
	set_filter(&s, lossy_port, &l);
	write_half(&s, len, 2000000000ull);
	pi = path_of(&s, 0, 2);
	/* the port is gone: retired for loss (new generation) or, when
	 * exploration got there first, moved as the path that delivered
	 * least (same generation) */
	ck_assert_uint_ne(pi.sport, l.sport);
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	pair_fini(&s);
}
END_TEST

/* On one port the 40th data packet is lost, and so is every
 * retransmission sent there; everything else passes. */
struct rtx_hole {
	uint16_t sport;
	uint32_t seen;
	uint32_t dropped_rtx;
};

static enum pump_verdict rtx_hole_port(struct pump *p, int src, int dst,
				       const struct mroce_tx_pkt *t,
				       const struct mroce_meta_pkt *pk)
{
	struct rtx_hole *h = p->ctx;

	if (src != 0 || t->sport != h->sport || !pk ||
	    pk->opcode == MROCE_OP_PROBE || pk->opcode == MROCE_OP_ACK)
		return PUMP_PASS;
	if (pk->flags & MROCE_F_RETX) {
		h->dropped_rtx++;
		return PUMP_DROP;
	}
	return ++h->seen == 40 ? PUMP_DROP : PUMP_PASS;
}

/* A segment lost every time it goes on its path: with MR_RTX_ESCAPE
 * tries left the path is retired and the segment escapes to another (spec
 * 8.3), where it arrives; it used to spend its retries on the same path
 * and fail the message (RETRY_EXC_ERR). */
START_TEST(path__segment_lost_on_every_try_escapes)
{
	struct pair s;
	struct rtx_hole h = { 0 };
	size_t len = 1 << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	h.sport = path_of(&s, 0, 3).sport;
	set_filter(&s, rtx_hole_port, &h);
	write_half(&s, len, 2000000000ull);
	/* the default 7 retries: 4 retransmissions lost before it left */
	ck_assert_uint_ge(h.dropped_rtx, 7 - MR_RTX_ESCAPE);
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	ck_assert_uint_ne(path_of(&s, 0, 3).sport, h.sport);
	pair_fini(&s);
}
END_TEST

/* The first flight is lost, and so is the probe behind it. No path has
 * an RTT sample yet; the handshake's round trip is one, so the loss is
 * found a few RTTs later, not after rto_min (200 us). */
START_TEST(path__first_flight_loss_timed_by_handshake_rtt)
{
	struct pair s;
	struct nth_drop d = { .drop_writes = 1, .drop_probes = 1 };
	uint64_t t0;

	pair_setup(&s, 8192);
	establish(&s);
	set_filter(&s, nth_drop_filter, &d);
	t0 = s.p.now;
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 1000, 4096),
			 0);
	ck_assert(run_until_wcs(&s, 1, 0, 1000000));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s.s[0].buf, s.s[1].buf + 4096, 1000));
	ck_assert_int_eq(d.writes, 2);
	ck_assert_uint_lt(s.p.now - t0, 100000);
	pair_fini(&s);
}
END_TEST

/* 5% random loss of the data packets on every path: every path has it,
 * so none is retired (no new generation: neither silent nor lossy), and
 * the transfer completes with every byte. (A lost ACK of a path whose
 * window is full can still look like silence: see docs/engine.md.) */
START_TEST(path__random_loss_retires_no_path)
{
	struct pair s;
	struct rand_loss l = { .x = 11, .permille = 50 };
	size_t len = 4 << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	set_filter(&s, rand_loss_filter, &l);
	write_half(&s, len, 2000000000ull);
	ck_assert_uint_gt(l.dropped, 100);
	no_path_retired(&s);
	pair_fini(&s);
}
END_TEST

/* A receiver that is not polled for a while (a process descheduled, a
 * driver busy elsewhere) looks like a blackhole to the sender: it probes
 * and rerolls its paths one by one. When the receiver resumes it answers
 * the old probes on the rerolled paths' new generations, still echoing
 * ACKF_PROBE and the old probe's tsval. Such an echo must not be taken
 * for the answer to a probe of the new generation: the old probe's PSN
 * lies in another PSN space, and walking to it from the new una stalled
 * the sender for seconds (lib_conn hung over UDP sockets). */
struct freeze {
	bool on;
	int n;
	struct {
		uint16_t sport;
		uint32_t len;
		uint8_t buf[PUMP_CAP];
	} pkt[64];
};

static enum pump_verdict freeze_1(struct pump *p, int src, int dst,
				  const struct mroce_tx_pkt *t,
				  const struct mroce_meta_pkt *pk)
{
	struct freeze *f = p->ctx;

	if (!f->on || dst != 1)
		return PUMP_PASS;
	/* Not polled: the packets wait in its socket buffer. */
	if (f->n < 64) {
		f->pkt[f->n].sport = t->sport;
		f->pkt[f->n].len = t->len;
		memcpy(f->pkt[f->n].buf, t->buf, t->len);
		f->n++;
	}
	return PUMP_DROP;
}

START_TEST(path__receiver_paused_then_resumed_completes)
{
	static struct freeze f;
	struct pair s;
	struct mr_conn *c;

	pair_setup(&s, 4096);
	establish(&s);
	/* let the handshake's trailing ACK and hint settle */
	ck_assert(pump_run(&s.p, NULL, NULL, 1000000));
	memset(&f, 0, sizeof(f));
	f.on = true;
	set_filter(&s, freeze_1, &f);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 1, 0, 1000, 2000),
			 0);
	/* The receiver sleeps for 10 ms (dozens of PTOs). */
	pump_run(&s.p, NULL, NULL, 10000000);
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	c = ((struct mr_engine *)s.p.e[0]->tp)->by_peer[s.p.peer[0][1]];
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		/* An outstanding probe is one of this generation. */
		ck_assert_uint_le(p->probe_psn - p->una, p->next_psn - p->una);
	}
	/* It wakes up and reads everything that waited for it at once. */
	f.on = false;
	for (int k = 0; k < f.n; k++) {
		struct mroce_rx_meta m = { .peer = s.p.peer[1][0],
					   .sport = f.pkt[k].sport };

		mroce_engine_rx(s.p.e[1], &m, f.pkt[k].buf, f.pkt[k].len,
				s.p.now);
	}
	ck_assert(run_until_wcs(&s, 1, 0, 100000000));
	ck_assert_int_eq(s.s[0].wc[0].status, MROCE_WC_SUCCESS);
	ck_assert(!memcmp(s.s[0].buf, s.s[1].buf + 2000, 1000));
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		ck_assert_uint_le(p->probe_psn - p->una, p->next_psn - p->una);
	}
	pair_fini(&s);
}
END_TEST

MROCE_SUITE(metaroce_path_suite)
Suite *metaroce_path_suite(void)
{
	Suite *s = suite_create("metaroce_path");
	TCase *tc = tcase_create("path");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, path__blackhole_rerolled_and_transfer_completes);
	tcase_add_test(tc, path__silent_path_rerolled_within_few_rtts);
	tcase_add_test(tc, path__reroll_probation_keeps_data_off_unproven_port);
	tcase_add_test(tc, spray__moves_traffic_off_congested_path);
	tcase_add_test(tc, path__lossy_path_rerolled);
	tcase_add_test(tc, path__segment_lost_on_every_try_escapes);
	tcase_add_test(tc, path__first_flight_loss_timed_by_handshake_rtt);
	tcase_add_test(tc, path__random_loss_retires_no_path);
	tcase_add_test(tc, path__receiver_paused_then_resumed_completes);
	suite_add_tcase(s, tc);
	return s;
}
