// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: the receive side (rx.c): SACK bookkeeping, PSN
 * wrap, and mutated packets that must never write outside the regions they
 * name. Two (or more) engines through the in-test pump (metaroce_pair.h).
 */
#include "metaroce_pair.h"

static void mark_psn(struct mr_path *p, uint32_t psn)
{
	mr_rx_mark(p, psn - p->rx_cum);
}

START_TEST(mr_rx_mark__advances_over_contiguous_sack_only)
{
	struct mr_path p;

	memset(&p, 0, sizeof(p));
	p.rx_cum = 0xfffffff0u;	/* and wraps */
	for (uint32_t i = 1; i <= 64; i++)
		mark_psn(&p, 0xfffffff0u + i);
	for (uint32_t i = 66; i <= 100; i++)
		mark_psn(&p, 0xfffffff0u + i);
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u);
	mark_psn(&p, 0xfffffff0u);	/* the cum PSN arrives */
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u + 65);	/* stops at hole */
	ck_assert(p.sack[0] & 1);	/* 66 is still SACKed */
	mark_psn(&p, 0xfffffff0u + 65);
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u + 101);
	ck_assert_uint_eq(p.sack[0] | p.sack[1] | p.sack[2] | p.sack[3], 0);
	/* the whole window at once */
	for (uint32_t i = 1; i <= 256; i++)
		mr_rx_mark(&p, i);
	mr_rx_mark(&p, 0);
	ck_assert_uint_eq(p.rx_cum, 0xfffffff0u + 101 + 257);
	ck_assert_uint_eq(p.sack[0] | p.sack[1] | p.sack[2] | p.sack[3], 0);
}
END_TEST

START_TEST(psn__wraps_at_2_32)
{
	struct pair s;
	struct mroce_engine_cfg cfg = base_cfg();
	struct mr_conn *c;
	size_t len = 300 * 1024;

	cfg.npaths = 1;
	pair_setup_cfg(&s, &cfg, 2 * len, true);
	/* Before the REQ leaves: move engine 0's ISN next to the wrap. */
	c = ((struct mr_engine *)s.p.e[0]->tp)->by_peer[s.p.peer[0][1]];
	ck_assert_ptr_nonnull(c);
	c->tx_isn = 0xffffff00u;
	c->path[0].next_psn = c->path[0].una = c->path[0].loss_scan =
		c->path[0].high_acked = mroce_path_isn(c->tx_isn, 0, 0);
	write_half(&s, len, 2000000000ull);
	ck_assert_uint_lt(c->path[0].next_psn, 0x1000);	/* it wrapped */
	pair_fini(&s);
}
END_TEST

struct capture {
	int n;
	int dst[256];
	uint32_t len[256];
	uint8_t *pkt[256];
};

static enum pump_verdict capture_all(struct pump *p, int src, int dst,
				     const struct mroce_tx_pkt *t,
				     const struct mroce_meta_pkt *pk)
{
	struct capture *c = p->ctx;

	if (c->n < 256) {
		c->pkt[c->n] = malloc(t->len);
		memcpy(c->pkt[c->n], t->buf, t->len);
		c->len[c->n] = t->len;
		c->dst[c->n] = dst;
		c->n++;
	}
	return PUMP_PASS;
}

/* Mutated copies of real packets with a valid ICRC (so they get past the
 * codec into the engine): nothing crashes (ASan), nothing outside the
 * registered regions changes. */
START_TEST(rx__mutated_packets_never_write_outside_regions)
{
	enum { GUARD = 4096, LEN = 1 << 16 };
	struct pair s;
	struct capture cap = { 0 };
	struct chaos rnd = { .x = 99 };
	uint8_t *mem[2], *pkt = malloc(PUMP_CAP);

	pair_setup(&s, 16);
	/* Replace the regions by guarded ones. */
	for (int i = 0; i < 2; i++) {
		mem[i] = malloc(LEN + 2 * GUARD);
		memset(mem[i], 0xee, LEN + 2 * GUARD);
		ck_assert_int_eq(mroce_dereg_mr(s.p.e[i], s.s[i].mr.lkey), 0);
		free(s.s[i].buf);
		s.s[i].buf = mem[i] + GUARD;
		ck_assert_int_eq(mroce_reg_mr(s.p.e[i], s.s[i].buf, LEN,
					      ACC_ALL, &s.s[i].mr),
				 0);
	}
	set_filter(&s, capture_all, &cap);
	ck_assert_int_eq(post_recv(&s, 1, 1, 0, 8192), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND_WITH_IMM, 1, 0, 5000, 0), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 9000, 100), 0);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_READ, 3, 0, 9000, 100), 0);
	ck_assert(run_until_wcs(&s, 3, 1, 1000000000ull));
	s.p.filter = NULL;
	ck_assert_int_gt(cap.n, 10);
	const char *env = getenv("MROCE_RX_FUZZ_ITERS");	/* soak */
	int iters = env ? atoi(env) : 30000;

	for (int it = 0; it < iters; it++) {
		int k = (int)(chaos_rand(&rnd) % (uint32_t)cap.n);
		uint32_t len = cap.len[k], nmut = 1 + chaos_rand(&rnd) % 4;
		struct mroce_rx_meta m = { .peer = s.p.peer[cap.dst[k]]
							   [1 - cap.dst[k]],
					   .sport = 49152 };
		uint32_t crc;

		memcpy(pkt, cap.pkt[k], len);
		for (uint32_t j = 0; j < nmut; j++) {
			uint32_t r = chaos_rand(&rnd);
			uint32_t at = (r >> 8) % (len < 64 ? len : 64);

			pkt[at] ^= (uint8_t)(1u << (r % 8));
			if (r % 7 == 0)
				pkt[at] = (uint8_t)(r >> 16);
		}
		if (len > 4) {
			crc = mroce_meta_icrc(pkt, len - 4);
			pkt[len - 4] = (uint8_t)(crc >> 24);
			pkt[len - 3] = (uint8_t)(crc >> 16);
			pkt[len - 2] = (uint8_t)(crc >> 8);
			pkt[len - 1] = (uint8_t)crc;
		}
		mroce_engine_rx(s.p.e[cap.dst[k]], &m, pkt, len, s.p.now);
		if (it % 64 == 0) {
			s.p.now += 1000;
			pump_step(&s.p);
		}
	}
	pump_run(&s.p, NULL, NULL, 50000000);
	for (int i = 0; i < 2; i++) {
		for (int g = 0; g < GUARD; g++) {
			ck_assert_uint_eq(mem[i][g], 0xee);
			ck_assert_uint_eq(mem[i][GUARD + LEN + g], 0xee);
		}
	}
	for (int i = 0; i < cap.n; i++)
		free(cap.pkt[i]);
	free(pkt);
	pump_fini(&s.p);
	free(mem[0]);
	free(mem[1]);
}
END_TEST

MROCE_SUITE(metaroce_rx_suite)
Suite *metaroce_rx_suite(void)
{
	Suite *s = suite_create("metaroce_rx");
	TCase *tc = tcase_create("rx");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mr_rx_mark__advances_over_contiguous_sack_only);
	tcase_add_test(tc, psn__wraps_at_2_32);
	tcase_add_test(tc, rx__mutated_packets_never_write_outside_regions);
	suite_add_tcase(s, tc);
	return s;
}
