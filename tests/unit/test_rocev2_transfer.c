// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 transfers without loss (user/engine/rocev2/: requester and
 * responder): every operation byte-exact at many sizes and MTUs, pipelined
 * messages completing in order, SE/AckReq flags, the 24-bit PSN wrap, the
 * window, and the one source port per QP. The world: rocev2_world.h.
 */
#include "../harness.h"
#include "rocev2_world.h"
#include "tx_first_ops.h"

/* ------------------------------------------------------------------ */
/* Byte-exact transfers                                                 */
/* ------------------------------------------------------------------ */
START_TEST(rv2_send__sizes_byte_exact)
{
	op_sizes(MROCE_WR_SEND, 1024);
}
END_TEST

START_TEST(rv2_send_imm__sizes_byte_exact)
{
	op_sizes(MROCE_WR_SEND_WITH_IMM, 1024);
}
END_TEST

START_TEST(rv2_write__sizes_byte_exact)
{
	op_sizes(MROCE_WR_RDMA_WRITE, 1024);
}
END_TEST

START_TEST(rv2_write_imm__sizes_byte_exact)
{
	op_sizes(MROCE_WR_RDMA_WRITE_WITH_IMM, 1024);
}
END_TEST

START_TEST(rv2_read__sizes_byte_exact)
{
	op_sizes(MROCE_WR_RDMA_READ, 1024);
}
END_TEST

START_TEST(rv2_all_ops__mtu_4096_unaligned_mtu)
{
	/* jumbo MTU, and an MTU that is not a multiple of 4 (pad) */
	static const uint16_t mtus[] = { 4096, 1499 };

	for (int m = 0; m < 2; m++)
		for (int op = MROCE_WR_SEND; op <= MROCE_WR_RDMA_READ; op++) {
			struct world w;
			struct wcfg c = { .mtu = mtus[m], .psn = { 7, 9 } };
			uint32_t sz[6];

			sizes_for(mtus[m], sz);
			world_init(&w, &c);
			for (int i = 0; i < 5; i++)
				xfer_check(&w, 0, op, sz[i], (uint64_t)i + 1);
			xfer_check(&w, 0, op, 300000, 9);
			world_fini(&w);
		}
}
END_TEST

/* Many messages of every kind in flight at once complete in order. */
START_TEST(rv2_mixed__pipelined_in_order)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	const int n = 60;
	uint32_t len[60];
	uint64_t s = 99;
	int nrecv = 0;

	world_init(&w, &c);
	fill(w.s[0].mem, DST_OFF, 1);
	fill(w.s[1].mem, DST_OFF, 2);
	for (int i = 0; i < n; i++) {
		enum mroce_wr_opcode op = (enum mroce_wr_opcode)(i % 5);
		uint32_t off = (uint32_t)i * 65536;

		len[i] = (uint32_t)(xs(&s) % 65536);
		if (op != MROCE_WR_RDMA_WRITE && op != MROCE_WR_RDMA_READ)
			post_recv(&w, 1, 0, 1000 + i, DST_OFF + off, 65536);
		if (op == MROCE_WR_RDMA_READ)
			ck_assert_int_eq(post(&w, 0, 0, i, op, DST_OFF + off,
					      len[i], off, 0),
					 0);
		else
			ck_assert_int_eq(post(&w, 0, 0, i, op, off, len[i],
					      DST_OFF + off, i),
					 0);
	}
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, n);
	for (int i = 0; i < n; i++) {
		uint32_t off = (uint32_t)i * 65536;

		ck_assert_uint_eq(w.s[0].wc[i].wr_id, i);
		ck_assert_int_eq(w.s[0].wc[i].status, MROCE_WC_SUCCESS);
		if (i % 5 == MROCE_WR_RDMA_READ)
			check_mem(w.s[0].mem + DST_OFF + off, w.s[1].mem + off,
				  len[i]);
		else
			check_mem(w.s[1].mem + DST_OFF + off, w.s[0].mem + off,
				  len[i]);
		if (i % 5 != MROCE_WR_RDMA_WRITE &&
		    i % 5 != MROCE_WR_RDMA_READ) {
			ck_assert_uint_eq(w.s[1].wc[nrecv].wr_id, 1000 + i);
			ck_assert_uint_eq(w.s[1].wc[nrecv].byte_len, len[i]);
			nrecv++;
		}
	}
	ck_assert_int_eq(w.s[1].nwc, nrecv);
	world_fini(&w);
}
END_TEST

/* Count packets with SE (param[0]) and with AckReq (param[1]). */
static enum act f_count_flags(struct world *w, int d, uint64_t idx,
			      const struct mroce_rv2_pkt *p)
{
	if (d == 0) {
		w->param[0] += p->se;
		w->param[1] += p->ackreq;
		if (p->se)
			w->param[2] = p->opcode;
	}
	return ACT_PASS;
}

START_TEST(rv2_flags__solicited_and_ackreq)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	struct mroce_send_wr wr = {
		.wr_id = 1,
		.opcode = MROCE_WR_SEND,
		.send_flags = MROCE_SEND_SIGNALED | MROCE_SEND_SOLICITED,
		.sge = { .length = 100 * 1024 },
	};

	world_init(&w, &c);
	w.filter = f_count_flags;
	wr.sge.addr = (uint64_t)(uintptr_t)w.s[0].mem;
	wr.sge.lkey = w.s[0].mr.lkey;
	post_recv(&w, 1, 0, 5, DST_OFF, 100 * 1024);
	ck_assert_int_eq(mroce_post_send(w.s[0].e, w.s[0].qpn[0], &wr, 0), 0);
	/* a solicited WRITE without immediate carries no SE */
	wr.opcode = MROCE_WR_RDMA_WRITE;
	wr.remote_addr = (uint64_t)(uintptr_t)w.s[1].mem;
	wr.rkey = w.s[1].mr.rkey;
	wr.sge.length = 10;
	ck_assert_int_eq(mroce_post_send(w.s[0].e, w.s[0].qpn[0], &wr, 0), 0);
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, 2);
	ck_assert_uint_eq(w.param[0], 1);
	ck_assert_uint_eq(w.param[2], ROCEV2_OP_SEND_LAST);
	/* AckReq: packets 32, 64, 96 and the last of each message */
	ck_assert_uint_eq(w.param[1], 3 + 1 + 1);
	/* 101 packets, coalesced into a handful of ACKs */
	ck_assert_uint_le(stats(&w, 1).tx_acks, 5);
	world_fini(&w);
}
END_TEST


/* ------------------------------------------------------------------ */
/* PSN wrap, window, source port                                        */
/* ------------------------------------------------------------------ */
static enum act f_drop_psn(struct world *w, int d, uint64_t idx,
			   const struct mroce_rv2_pkt *p)
{
	if (d == 0 && is_request(p->opcode) && p->psn == w->param[0] &&
	    !w->param[1]++)
		return ACT_DROP;
	return ACT_PASS;
}

START_TEST(rv2_psn__wraps_at_2_24)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 0xffffc0, 0xfffffe } };

	world_init(&w, &c);
	FILTER(&w, f_drop_psn, 2);	/* just past the wrap */
	xfer_check(&w, 0, MROCE_WR_SEND, 200 * 1024, 1);
	ck_assert(w.saw_psn[0][0] && w.saw_psn[0][1]);
	ck_assert_uint_eq(w.dropped[0], 1);
	ck_assert_uint_eq(w.first_rexmit_psn[0], 2);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE, 100 * 1024, 2);
	xfer_check(&w, 0, MROCE_WR_RDMA_READ, 100 * 1024, 3);
	/* side 1 starts 2 below the wrap */
	/* side 1 starts 2 below the wrap: READ responses wrap */
	xfer_check(&w, 1, MROCE_WR_RDMA_READ, 10 * 1024, 4);
	xfer_check(&w, 1, MROCE_WR_SEND_WITH_IMM, 10 * 1024, 5);
	world_fini(&w);
}
END_TEST

/* The responder's first ACKs are lost: the requester fills its window,
 * stops, and resumes after a timeout. */
static enum act f_drop_first_acks(struct world *w, int d, uint64_t idx,
				  const struct mroce_rv2_pkt *p)
{
	return d == 1 && idx < w->param[0] ? ACT_DROP : ACT_PASS;
}

START_TEST(rv2_window__inflight_bounded)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 1 } };

	world_init(&w, &c);
	w.check_inflight = true;
	FILTER(&w, f_drop_first_acks, 40);
	xfer_check(&w, 0, MROCE_WR_RDMA_WRITE, 6u << 20, 1);
	/* the window filled exactly, and never overflowed */
	ck_assert_uint_eq(w.max_inflight, 1024);
	ck_assert_uint_ge(stats(&w, 0).rto_fires, 1);
	world_fini(&w);
}
END_TEST

static uint16_t sport_of(const struct world *w, int d, uint32_t dqpn)
{
	for (int i = 0; i < w->nsport[d]; i++)
		if (w->sport_qpn[d][i] == dqpn)
			return w->sport[d][i];
	return 0;
}

START_TEST(rv2_sport__fixed_per_qp)
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 5, 6 }, .nqp = MAX_QP };
	struct mroce_path_info pi;
	uint16_t sp[MAX_QP];
	int distinct = 0;

	world_init(&w, &c);
	fill(w.s[0].mem, 8 * 20000, 3);
	for (int i = 0; i < MAX_QP; i++) {
		post_recv(&w, 1, i, i, DST_OFF + i * 20000, 20000);
		ck_assert_int_eq(post(&w, 0, i, i, MROCE_WR_SEND, i * 20000,
				      20000, 0, 0),
				 0);
		ck_assert_int_eq(post(&w, 1, i, i, MROCE_WR_RDMA_READ,
				      DST_OFF + (4u << 20) + i * 20000, 20000,
				      0, 0),
				 0);
	}
	settle(&w);
	ck_assert_int_eq(w.s[0].nwc, MAX_QP);		/* SENDs */
	ck_assert_int_eq(w.s[1].nwc, 2 * MAX_QP);	/* recvs + READs */
	for (int i = 0; i < w.s[1].nwc; i++)
		ck_assert_int_eq(w.s[1].wc[i].status, MROCE_WC_SUCCESS);
	/* The pump checked every packet against the first port seen for
	 * its QP. Here: both ends of a QP pair use the same port, QPs are
	 * spread over ports, and path_info reports them. */
	ck_assert_int_eq(w.nsport[0], MAX_QP);
	ck_assert_int_eq(w.nsport[1], MAX_QP);
	for (int i = 0; i < MAX_QP; i++) {
		bool seen = false;

		sp[i] = sport_of(&w, 0, w.s[1].qpn[i]);
		ck_assert_uint_ne(sp[i], 0);
		ck_assert_uint_eq(sport_of(&w, 1, w.s[0].qpn[i]), sp[i]);
		for (int j = 0; j < i; j++)
			seen |= sp[j] == sp[i];
		distinct += !seen;
	}
	ck_assert_int_ge(distinct, MAX_QP - 1);
	for (int i = 0; i < MAX_QP; i++) {
		bool found = false;

		ck_assert_int_eq(mroce_engine_path_info(w.s[0].e, w.s[0].peer,
							i, &pi),
				 0);
		ck_assert(pi.alive);
		ck_assert_uint_gt(pi.tx_pkts, 0);
		ck_assert_uint_eq(pi.inflight, 0);
		for (int j = 0; j < MAX_QP; j++)
			found |= pi.sport == sp[j];
		ck_assert(found);
	}
	ck_assert_int_eq(mroce_engine_path_info(w.s[0].e, w.s[0].peer, MAX_QP,
						&pi),
			 -ENOENT);
	world_fini(&w);
}
END_TEST

/* A request-reply driven by hand: side 0's WRITE reaches side 1, which
 * owes it an ACK, and side 1 posts its reply. One tx() call with room
 * for `room` packets: the opcodes of what leaves, in order. */
static int reply_and_ack(int room, uint8_t op[2])
{
	struct world w;
	struct wcfg c = { .mtu = 1024, .psn = { 1, 2 } };
	static uint8_t buf[PKT_CAP];
	struct mroce_tx_pkt pk = { .buf = buf };
	int n;

	world_init(&w, &c);
	ck_assert_int_eq(post(&w, 0, 0, 1, MROCE_WR_RDMA_WRITE, 0, 8, DST_OFF,
			      0),
			 0);
	ck_assert_int_eq(mroce_engine_tx(w.s[0].e, &pk, 1, PKT_CAP, w.now), 1);
	deliver(&w, 0, pk.buf, pk.len, pk.sport);
	ck_assert_int_eq(post(&w, 1, 0, 2, MROCE_WR_RDMA_WRITE, 0, 8, DST_OFF,
			      0),
			 0);
	n = tx_first_ops(w.s[1].e, room, w.now, op);
	world_fini(&w);
	return n;
}

/* As in MetaRoCE (test_metaroce_tx.c): the reply before the ACK of its
 * request, the ACK right behind; with room for one packet, the ACK. */
START_TEST(rv2_tx__a_reply_leaves_before_the_ack_of_its_request)
{
	reply_before_ack(reply_and_ack, ROCEV2_OP_WRITE_ONLY, ROCEV2_OP_ACK);
}
END_TEST

MROCE_SUITE(rocev2_transfer_suite)
Suite *rocev2_transfer_suite(void)
{
	Suite *s = suite_create("rocev2_transfer");
	TCase *tc = tcase_create("transfers");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rv2_send__sizes_byte_exact);
	tcase_add_test(tc, rv2_tx__a_reply_leaves_before_the_ack_of_its_request);
	tcase_add_test(tc, rv2_send_imm__sizes_byte_exact);
	tcase_add_test(tc, rv2_write__sizes_byte_exact);
	tcase_add_test(tc, rv2_write_imm__sizes_byte_exact);
	tcase_add_test(tc, rv2_read__sizes_byte_exact);
	tcase_add_test(tc, rv2_all_ops__mtu_4096_unaligned_mtu);
	tcase_add_test(tc, rv2_mixed__pipelined_in_order);
	tcase_add_test(tc, rv2_flags__solicited_and_ackreq);
	tcase_add_test(tc, rv2_psn__wraps_at_2_24);
	tcase_add_test(tc, rv2_window__inflight_bounded);
	tcase_add_test(tc, rv2_sport__fixed_per_qp);
	suite_add_tcase(s, tc);
	return s;
}
