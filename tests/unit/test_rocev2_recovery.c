// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 recovery (user/engine/rocev2/: completer and timers): sequence
 * NAKs and go-back-N, timeouts with back-off, lost ACKs, reordering,
 * duplicates, implied NAKs for READ responses, random loss. The world:
 * rocev2_world.h.
 */
#include "../harness.h"
#include "rocev2_world.h"

/* ------------------------------------------------------------------ */
/* Loss, reordering, duplicates                                         */
/* ------------------------------------------------------------------ */

/* Drop the packets of side param[0] whose send index is in param[1..]. */
static enum act f_drop_idx(struct world *w, int d, uint64_t idx,
			   const struct mroce_rv2_pkt *p)
{
	if (d != (int)w->param[0])
		return ACT_PASS;
	for (int i = 1; i < w->nparam; i++)
		if (idx == w->param[i])
			return ACT_DROP;
	return ACT_PASS;
}

/* Several multi-packet SENDs: recvs and sends complete exactly once and
 * in order, data byte-exact. */
static void sends_check(struct world *w, int nmsg, uint32_t len)
{
	fill(w->s[0].mem, (size_t)nmsg * len, 4242);
	for (int i = 0; i < nmsg; i++)
		post_recv(w, 1, 0, 500 + i, DST_OFF + (uint32_t)i * len, len);
	for (int i = 0; i < nmsg; i++)
		ck_assert_int_eq(post(w, 0, 0, i, MROCE_WR_SEND,
				      (uint32_t)i * len, len, 0, 0),
				 0);
	settle(w);
	ck_assert_int_eq(w->s[0].nwc, nmsg);
	ck_assert_int_eq(w->s[1].nwc, nmsg);
	for (int i = 0; i < nmsg; i++) {
		ck_assert_uint_eq(w->s[0].wc[i].wr_id, i);
		ck_assert_int_eq(w->s[0].wc[i].status, MROCE_WC_SUCCESS);
		ck_assert_uint_eq(w->s[1].wc[i].wr_id, 500 + i);
		ck_assert_int_eq(w->s[1].wc[i].status, MROCE_WC_SUCCESS);
		ck_assert_uint_eq(w->s[1].wc[i].byte_len, len);
	}
	check_mem(w->s[1].mem + DST_OFF, w->s[0].mem, (size_t)nmsg * len);
}

START_TEST(rv2_loss__single_drop_nak_go_back_n)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x1000, 0x2000 } };
	struct mroce_engine_stats a, b;

	world_init(&w, &c);
	FILTER(&w, f_drop_idx, 0, 70);	/* 7th packet of the 2nd message */
	sends_check(&w, 4, 64 * 1024);
	a = stats(&w, 0);
	b = stats(&w, 1);
	ck_assert_uint_eq(w.dropped[0], 1);
	ck_assert_uint_eq(w.drop_psn, 0x1000 + 70);
	/* exactly one NAK, go back to exactly the lost PSN, no timeout */
	ck_assert_uint_eq(b.tx_naks, 1);
	ck_assert_uint_eq(a.rx_naks, 1);
	ck_assert(w.first_rexmit_seen[0]);
	ck_assert_uint_eq(w.first_rexmit_psn[0], 0x1000 + 70);
	ck_assert_uint_eq(a.rto_fires, 0);
	ck_assert_uint_gt(a.retransmits, 0);
	ck_assert_uint_ge(b.rx_ooo, 1);
	world_fini(&w);
}
END_TEST

START_TEST(rv2_loss__last_packet_lost_recovers_by_timeout)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 10, 20 } };

	world_init(&w, &c);
	FILTER(&w, f_drop_idx, 0, 3);	/* last of a 4-packet message */
	sends_check(&w, 1, 4000);
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 1);
	ck_assert_uint_eq(stats(&w, 1).tx_naks, 0);
	ck_assert_uint_ge(w.now, 200000);	/* waited one RTO */
	world_fini(&w);
}
END_TEST

/* Drop request PSN param[0] the first param[1] times it is sent, and PSN
 * param[2] the first param[3] times. */
static enum act f_drop_psn_times(struct world *w, int d, uint64_t idx,
				 const struct mroce_rv2_pkt *p)
{
	if (d != 0 || !is_request(p->opcode))
		return ACT_PASS;
	for (int i = 0; i < 4; i += 2)
		if (p->psn == w->param[i] && w->param[4 + i]++ < w->param[i + 1])
			return ACT_DROP;
	return ACT_PASS;
}

START_TEST(rv2_timeout__backoff_doubles_then_resets_on_progress)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 10, 20 } };
	uint64_t t1;

	world_init(&w, &c);
	/* message 1 (one packet) twice, the last packet of message 2 once */
	FILTER(&w, f_drop_psn_times, 10, 2, 14, 1);
	xfer_check(&w, 0, MROCE_WR_SEND, 1000, 1);
	/* timeouts at 200 us and 200 + 400 us */
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 2);
	ck_assert_uint_ge(w.now, 600000);
	ck_assert_uint_lt(w.now, 700000);
	t1 = w.now;
	xfer_check(&w, 0, MROCE_WR_SEND, 4000, 2);
	/* progress reset the timeout to its base */
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 3);
	ck_assert_uint_ge(w.now - t1, 200000);
	ck_assert_uint_lt(w.now - t1, 300000);
	world_fini(&w);
}
END_TEST

START_TEST(rv2_loss__lost_acks_reacked_duplicates)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 10, 20 } };

	world_init(&w, &c);
	FILTER(&w, f_drop_idx, 1, 0, 1, 2);	/* responder's first 3 ACKs */
	sends_check(&w, 3, 2048);
	ck_assert_uint_eq(w.dropped[1], 3);
	ck_assert_uint_ge(stats(&w, 0).rto_fires, 1);
	ck_assert_uint_ge(stats(&w, 1).rx_dup, 1);
	world_fini(&w);
}
END_TEST

/* Hold back the packets of side 0 listed in param[1..]: each is delivered
 * after the next packet (a swap of neighbours). */
static enum act f_hold_idx(struct world *w, int d, uint64_t idx,
			   const struct mroce_rv2_pkt *p)
{
	if (d != (int)w->param[0])
		return ACT_PASS;
	for (int i = 1; i < w->nparam; i++)
		if (idx == w->param[i])
			return ACT_HOLD;
	return ACT_PASS;
}

START_TEST(rv2_reorder__go_back_n_still_correct)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x500, 0x900 } };

	world_init(&w, &c);
	FILTER(&w, f_hold_idx, 0, 5, 40, 77, 78);
	sends_check(&w, 5, 30000);
	ck_assert_uint_ge(stats(&w, 1).rx_ooo, 2);
	ck_assert_uint_ge(stats(&w, 1).tx_naks, 1);
	ck_assert_uint_gt(stats(&w, 0).retransmits, 0);
	world_fini(&w);
}
END_TEST

/* Reordered READ responses and ACKs (side 1's packets held back). */
START_TEST(rv2_reorder__responses_and_acks)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x500, 0x900 } };

	world_init(&w, &c);
	FILTER(&w, f_hold_idx, 1, 2, 9, 30);
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 40000, 3);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE, 40000, 4);
	ck_assert_uint_ge(stats(&w, 0).rx_ooo + stats(&w, 0).rx_dup, 1);
	world_fini(&w);
}
END_TEST

/* Duplicate every 3rd packet of side 0 and every 2nd of side 1. */
static enum act f_dup(struct world *w, int d, uint64_t idx,
		      const struct mroce_rv2_pkt *p)
{
	return idx % (d ? 2 : 3) == 0 ? ACT_DUP : ACT_PASS;
}

START_TEST(rv2_dup__reacked_and_ignored)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x500, 0x900 } };

	world_init(&w, &c);
	w.filter = f_dup;
	sends_check(&w, 4, 20000);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE_WITH_IMM, 50000, 5);
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 50000, 6);
	ck_assert_uint_ge(stats(&w, 1).rx_dup, 10);
	ck_assert_uint_ge(stats(&w, 0).rx_dup, 10);
	ck_assert_uint_eq(stats(&w, 1).tx_naks, 0);
	world_fini(&w);
}
END_TEST

/* Drop one READ response in the middle: the requester sees the next one
 * skip a PSN (implied NAK) and asks again from the missing PSN. */
static enum act f_drop_read_resp(struct world *w, int d, uint64_t idx,
				 const struct mroce_rv2_pkt *p)
{
	if (d == 1 && p->opcode == ROCEV2_OP_READ_RESP_MIDDLE &&
	    ++w->param[0] == 5)
		return ACT_DROP;
	return ACT_PASS;
}

START_TEST(rv2_loss__read_response_implied_nak)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0x300, 0x700 } };

	world_init(&w, &c);
	w.filter = f_drop_read_resp;
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 64 * 1024, 8);
	ck_assert_uint_eq(w.dropped[1], 1);
	ck_assert_uint_ge(stats(&w, 0).rx_ooo, 1);
	ck_assert_uint_eq(stats(&w, 0).rto_fires, 0);
	/* the responder answered part of the READ twice */
	ck_assert_uint_gt(stats(&w, 1).retransmits, 0);
	world_fini(&w);
}
END_TEST

/* Random loss in both directions, every kind of operation. */
static enum act f_random(struct world *w, int d, uint64_t idx,
			 const struct mroce_rv2_pkt *p)
{
	return xs(&w->rng) % 1000 < w->param[0] ? ACT_DROP : ACT_PASS;
}

START_TEST(rv2_loss__random_2pct_all_ops_byte_exact)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0xfff000, 0x10 } };

	world_init(&w, &c);
	FILTER(&w, f_random, 20);
	for (int op = MROCE_WR_SEND; op <= MROCE_WR_RDMA_READ; op++) {
		xfer_check(&w, 0, op, 1u << 20, (uint64_t)op + 1);
		xfer_check(&w, 1, op, 100000, (uint64_t)op + 21);
	}
	ck_assert_uint_gt(w.dropped[0] + w.dropped[1], 20);
	ck_assert_uint_gt(stats(&w, 0).retransmits, 0);
	world_fini(&w);
}
END_TEST

MROCE_SUITE(rocev2_recovery_suite)
Suite *rocev2_recovery_suite(void)
{
	Suite *s = suite_create("rocev2_recovery");
	TCase *tc = tcase_create("recovery");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rv2_loss__single_drop_nak_go_back_n);
	tcase_add_test(tc, rv2_loss__last_packet_lost_recovers_by_timeout);
	tcase_add_test(tc, rv2_timeout__backoff_doubles_then_resets_on_progress);
	tcase_add_test(tc, rv2_loss__lost_acks_reacked_duplicates);
	tcase_add_test(tc, rv2_reorder__go_back_n_still_correct);
	tcase_add_test(tc, rv2_reorder__responses_and_acks);
	tcase_add_test(tc, rv2_dup__reacked_and_ignored);
	tcase_add_test(tc, rv2_loss__read_response_implied_nak);
	tcase_add_test(tc, rv2_loss__random_2pct_all_ops_byte_exact);
	suite_add_tcase(s, tc);
	return s;
}
