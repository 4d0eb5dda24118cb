// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: path exploration (explore.c): finding an idle
 * plane, also under loss and on a software endpoint, and staying put on a clean
 * fabric. Two (or more) engines through the in-test pump (metaroce_pair.h).
 */
#include "metaroce_pair.h"

/* A fabric of four planes of a quarter of the line rate each, ECMP by
 * source port: the connection's first eight ports all hash onto planes
 * 0-2 (plane 3 gets none); any later port hashes onto one of the four.
 * Each plane is a FIFO queue (marking CE above 2 us) that the filter
 * models itself: it queues the packet at its departure time and tells
 * the pump to drop the original. */
struct planes {
	uint16_t sport0[8];
	uint64_t free_at[4];
	uint64_t pkts[4];
	uint64_t bps;
	bool no_ecn;	/* plain queues (tbf): delay only, no CE */
};

static int plane_of(const struct planes *pl, uint16_t sport)
{
	for (int i = 0; i < 8; i++)
		if (pl->sport0[i] == sport)
			return i % 3;
	return (int)(((sport * 2654435761u) >> 16) % 4);
}

static enum pump_verdict plane_queue(struct pump *p, int src, int dst,
				     const struct mroce_tx_pkt *t,
				     const struct mroce_meta_pkt *pk)
{
	struct planes *pl = p->ctx;
	uint64_t start;
	int k;

	if (src != 0)
		return PUMP_PASS;
	k = plane_of(pl, t->sport);
	start = pl->free_at[k] > p->now ? pl->free_at[k] : p->now;
	pl->free_at[k] = start + (uint64_t)(t->len + 64) * 8000000000ull /
					 pl->bps;
	pl->pkts[k]++;
	pump_enqueue(p, src, dst, t, pl->free_at[k] + p->delay,
		     !pl->no_ecn && start - p->now > 2000 && t->ect);
	return PUMP_DROP;
}

/* Side 0 (configured by cfg) writes 8 MiB through filter fn (ctx) over
 * the planes pl, whose first eight ports are side 0's: at least one path
 * moves, and plane 3 carries more than 1 / div of the packets; with
 * keep_gen no path was retired either (moves keep the generation). */
static void write_onto_plane3(const struct mroce_engine_cfg *cfg,
			      struct planes *pl, pump_filter_fn fn, void *ctx,
			      uint64_t div, bool keep_gen)
{
	struct pair s;
	size_t len = 8 << 20;
	uint64_t total = 0;

	pair_setup_cfg(&s, cfg, 2 * len, true);
	establish(&s);
	ports_of(&s, pl->sport0);
	set_filter(&s, fn, ctx);
	write_half(&s, len, 2000000000ull);
	for (int k = 0; k < 4; k++)
		total += pl->pkts[k];
	ck_assert_uint_ge(stats(&s, 0).path_rerolls, 1);
	ck_assert_uint_gt(pl->pkts[3] * div, total);
	if (keep_gen)
		no_path_retired(&s);
	pair_fini(&s);
}

/* Exploration: with one plane empty the connection, window-limited and
 * well below its line rate, rerolls paths until one lands on the empty
 * plane, which then carries a fair part of the data. Without it no
 * packet ever crosses plane 3. */
START_TEST(path_explore__finds_the_empty_plane)
{
	struct planes pl = { .bps = 25000000000ull };
	struct mroce_engine_cfg cfg = base_cfg();

	write_onto_plane3(&cfg, &pl, plane_queue, &pl, 10, false);
}
END_TEST

struct lossy_planes {
	struct planes pl;
	struct rand_loss l;
};

static enum pump_verdict lossy_plane_queue(struct pump *p, int src, int dst,
					   const struct mroce_tx_pkt *t,
					   const struct mroce_meta_pkt *pk)
{
	struct lossy_planes *lp = p->ctx;
	enum pump_verdict v;

	p->ctx = &lp->l;
	v = rand_loss_filter(p, src, dst, t, pk);
	p->ctx = &lp->pl;
	if (v == PUMP_PASS)
		v = plane_queue(p, src, dst, t, pk);
	p->ctx = lp;
	return v;
}

/* Exploration under 3% random loss (it used to judge no interval with
 * more than 2% loss, so a connection on 3 of 4 planes stayed there): the
 * empty plane is found, and moves keep the generation (a path moves once
 * drained: nothing is resent or dropped as stale). */
START_TEST(path_explore__finds_the_empty_plane_under_loss)
{
	struct lossy_planes lp = { .pl = { .bps = 25000000000ull },
				   .l = { .x = 5, .permille = 30 } };
	struct mroce_engine_cfg cfg = base_cfg();

	write_onto_plane3(&cfg, &lp.pl, lossy_plane_queue, &lp, 10, true);
}
END_TEST

/* Software endpoints (cfg.jitter_us): their RTT jitters by the hosts'
 * scheduling and their rate is usually the host's, so they judge the
 * planes by a queue that stays on every path. Here the planes limit:
 * four plain queues (no ECN, like tbf) of 1 Gbit/s, the first eight
 * ports on planes 0-2. Every path then sits on a queue near the CC's
 * target (base + jitter_us); a moved port's PROBE answers in the base
 * RTT over plane 3 and behind a queue elsewhere, and the connection
 * ends up using plane 3. */
START_TEST(path_explore__software_endpoint_finds_the_idle_plane)
{
	struct planes pl = { .bps = 1000000000ull, .no_ecn = true };
	struct mroce_engine_cfg cfg = base_cfg();

	cfg.jitter_us = 100;
	write_onto_plane3(&cfg, &pl, plane_queue, &pl, 8, false);
}
END_TEST

/* Host stalls: the planes run at the line rate (nothing queues), but in
 * three of four periods the sender's host stalls for the first 2/3 of
 * the period: the ACKs that reach it then are taken in at the stall's
 * end (FIFO kept). */
struct stalls {
	struct planes pl;
	uint64_t x, period, stall, stalled;
};

static enum pump_verdict stall_filter(struct pump *p, int src, int dst,
				      const struct mroce_tx_pkt *t,
				      const struct mroce_meta_pkt *pk)
{
	struct stalls *st = p->ctx;
	uint64_t k = p->now / st->period, x = st->x ^ (k * 0x9e3779b97f4a7c15ull);

	if (src == 0) {
		st->pl.pkts[plane_of(&st->pl, t->sport)]++;
		return PUMP_PASS;
	}
	if (lcg(&x) % 4 == 0 || p->now - k * st->period >= st->stall)
		return PUMP_PASS;
	st->stalled++;
	pump_enqueue(p, src, dst, t, k * st->period + st->stall + p->delay,
		     false);
	return PUMP_DROP;
}

/* A software endpoint (jitter_us 1 ms, 10 Gbit/s) on a clean fabric with
 * an empty plane, whose host stalls for 0.8 ms at a time: the stalls
 * fill its windows (window-limited) and keep its rate well below the
 * line, so the rate rule of hardware endpoints moves a port here
 * (checked by hand); but no queue lasts through an interval, and no
 * path moves. */
START_TEST(path_explore__software_endpoint_still_on_a_clean_fabric)
{
	struct pair s;
	struct stalls st = { .pl = { .bps = 10000000000ull }, .x = 11 };
	struct mroce_engine_cfg cfg = base_cfg();
	size_t len = 16 << 20;

	cfg.jitter_us = 1000;
	cfg.link_bps = 10000000000ull;
	st.period = 1200000;
	st.stall = 800000;
	pair_setup_cfg(&s, &cfg, 2 * len, true);
	establish(&s);
	ports_of(&s, st.pl.sport0);
	set_filter(&s, stall_filter, &st);
	write_half(&s, len, 2000000000ull);
	ck_assert_uint_gt(st.stalled, 100);
	ck_assert_uint_eq(stats(&s, 0).path_rerolls, 0);
	ck_assert_uint_eq(st.pl.pkts[3], 0);
	no_path_retired(&s);
	pair_fini(&s);
}
END_TEST

MROCE_SUITE(metaroce_explore_suite)
Suite *metaroce_explore_suite(void)
{
	Suite *s = suite_create("metaroce_explore");
	TCase *tc = tcase_create("explore");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, path_explore__finds_the_empty_plane);
	tcase_add_test(tc, path_explore__finds_the_empty_plane_under_loss);
	tcase_add_test(tc, path_explore__software_endpoint_finds_the_idle_plane);
	tcase_add_test(tc, path_explore__software_endpoint_still_on_a_clean_fabric);
	suite_add_tcase(s, tc);
	return s;
}
