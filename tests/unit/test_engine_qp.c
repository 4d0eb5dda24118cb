// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/qp.c: QP numbers and limits, the state machine
 * (every transition, the attributes each takes), ERR and RESET.
 */
#include "../harness.h"
#include "engine_fixture.h"

START_TEST(mroce_create_qp__numbers_and_limits)
{
	struct mroce_engine_cfg cfg = { .max_qps = 40 };
	struct mroce_engine *e;
	struct mroce_qp_init_attr bad = { .send_cq = 0, .recv_cq = 5,
					  .max_send_wr = 1 };
	uint32_t q[40];
	int cq;

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	cq = mroce_create_cq(e, 8);
	ck_assert_int_eq(mroce_create_qp(e, &bad), -ENOENT);
	bad.recv_cq = cq;
	bad.max_send_wr = 0;
	ck_assert_int_eq(mroce_create_qp(e, &bad), -EINVAL);
	for (int i = 0; i < 40; i++) {
		q[i] = mk_qp(e, cq, 1, 0);
		ck_assert_uint_le(q[i], 0xffffff);
	}
	bad.max_send_wr = 1;
	ck_assert_int_eq(mroce_create_qp(e, &bad), -ENOMEM);
	/* delete every other one: the rest must still be found */
	for (int i = 0; i < 40; i += 2)
		ck_assert_int_eq(mroce_destroy_qp(e, q[i]), 0);
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(mroce_qp_find(e, q[i]) != NULL, i % 2);
	ck_assert_int_eq(mroce_destroy_qp(e, q[0]), -ENOENT);
	mroce_engine_destroy(e);
}
END_TEST

/* Every (from, to) pair of the state machine. */
START_TEST(mroce_modify_qp__every_transition)
{
	static const bool ok[5][5] = {
		/*            RESET  INIT   RTR    RTS    ERR */
		[MROCE_QPS_RESET] = { 1, 1, 0, 0, 1 },
		[MROCE_QPS_INIT] = { 1, 1, 1, 0, 1 },
		[MROCE_QPS_RTR] = { 1, 0, 0, 1, 1 },
		[MROCE_QPS_RTS] = { 1, 0, 0, 1, 1 },
		[MROCE_QPS_ERR] = { 1, 0, 0, 0, 1 },
	};
	struct mroce_engine *e = mk(5);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);

	for (int from = 0; from < 5; from++) {
		for (int to = 0; to < 5; to++) {
			uint32_t qpn = mk_qp(e, cq, 4, 4);
			struct mroce_qp_attr a = { .state = to, .peer = peer,
						   .dest_qpn = 77 };
			uint32_t mask = MROCE_QP_STATE;
			int err;

			ck_assert_int_eq(to_state(e, qpn, from, peer), 0);
			ck_assert_int_eq(state_of(e, qpn), from);
			if (from == MROCE_QPS_INIT && to == MROCE_QPS_RTR)
				mask |= MROCE_QP_DEST;
			err = mroce_modify_qp(e, qpn, &a, mask, 0);
			if (ok[from][to]) {
				ck_assert_msg(err == 0, "%s->%s: %d",
					      mroce_qp_state_name(from),
					      mroce_qp_state_name(to), err);
				ck_assert_int_eq(state_of(e, qpn), to);
			} else {
				ck_assert_msg(err == -EPERM, "%s->%s: %d",
					      mroce_qp_state_name(from),
					      mroce_qp_state_name(to), err);
				ck_assert_int_eq(state_of(e, qpn), from);
			}
			ck_assert_int_eq(mroce_destroy_qp(e, qpn), 0);
		}
	}
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_modify_qp__attribute_rules)
{
	struct mroce_engine *e = mk(6);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	uint32_t qpn = mk_qp(e, cq, 4, 4);
	struct mroce_qp_attr a = { .state = MROCE_QPS_INIT, .access = 0x80 };

	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS,
					 0),
			 -EINVAL);	/* unknown access bit */
	a.access = MROCE_ACCESS_REMOTE_WRITE;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_SQ_PSN, 0),
			 -EINVAL);	/* SQ PSN belongs to RTR->RTS */
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS,
					 0),
			 0);
	a.state = MROCE_QPS_RTR;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, 0),
			 -EINVAL);	/* RTR needs DEST */
	a.peer = 42;
	a.dest_qpn = 5;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_DEST, 0),
			 -EINVAL);	/* no such peer */
	a.peer = peer;
	a.dest_qpn = 0x1000000;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_DEST, 0),
			 -EINVAL);	/* 24-bit QPN */
	a.dest_qpn = 5;
	a.rq_psn = 99;
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_DEST |
						 MROCE_QP_RQ_PSN,
					 0),
			 0);
	ck_assert_int_eq(mroce_query_qp(e, qpn, &a), 0);
	ck_assert_int_eq(a.state, MROCE_QPS_RTR);
	ck_assert_int_eq(a.peer, peer);
	ck_assert_uint_eq(a.dest_qpn, 5);
	ck_assert_uint_eq(a.rq_psn, 99);
	ck_assert_uint_eq(a.access, MROCE_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(mroce_modify_qp(e, 0x999999, &a, MROCE_QP_STATE, 0),
			 -ENOENT);
	ck_assert_int_eq(mroce_query_qp(e, 0x999999, &a), -ENOENT);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_qp_to_err__flushes_everything_in_order)
{
	struct mroce_engine *e = mk(9);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	static uint8_t buf[4096];
	struct mroce_mr mr;
	struct mroce_send_wr wr = { .opcode = MROCE_WR_RDMA_WRITE };
	struct mroce_recv_wr rwr = { 0 };
	struct mroce_wc wc[8];
	uint32_t qpn = mk_qp(e, cq, 4, 4);

	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, ACC_ALL, &mr), 0);
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_RTS, peer), 0);
	wr.sge.addr = (uint64_t)(uintptr_t)buf;
	wr.sge.length = 10;
	wr.sge.lkey = mr.lkey;
	for (int i = 0; i < 2; i++) {
		wr.wr_id = 10 + i;	/* unsignaled: flushes still report */
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0), 0);
		rwr.wr_id = 20 + i;
		ck_assert_int_eq(mroce_post_recv(e, qpn, &rwr), 0);
	}
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_ERR, peer), 0);
	ck_assert_int_eq(mroce_poll_cq(e, cq, wc, 8), 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(wc[i].status, MROCE_WC_WR_FLUSH_ERR);
		ck_assert_uint_eq(wc[i].qpn, qpn);
	}
	ck_assert_uint_eq(wc[0].wr_id, 10);
	ck_assert_uint_eq(wc[1].wr_id, 11);
	ck_assert_int_eq(wc[0].opcode, MROCE_WC_RDMA_WRITE);
	ck_assert_uint_eq(wc[2].wr_id, 20);
	ck_assert_int_eq(wc[2].opcode, MROCE_WC_RECV);
	/* again: nothing more (idempotent) */
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_ERR, peer), 0);
	ck_assert_int_eq(mroce_poll_cq(e, cq, wc, 8), 0);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_modify_qp__reset_drops_queues_silently)
{
	struct mroce_engine *e = mk(10);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	struct mroce_recv_wr rwr = { .wr_id = 1 };
	struct mroce_qp_attr a = { .state = MROCE_QPS_RESET };
	struct mroce_wc wc[4];
	uint32_t qpn = mk_qp(e, cq, 4, 4);

	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_INIT, peer), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &rwr), 0);
	ck_assert_int_eq(mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, 0), 0);
	ck_assert_int_eq(mroce_poll_cq(e, cq, wc, 4), 0);
	ck_assert_int_eq(mroce_query_qp(e, qpn, &a), 0);
	ck_assert_int_eq(a.peer, -1);
	ck_assert_uint_eq(mroce_qp_find(e, qpn)->rq_tail -
				  mroce_qp_find(e, qpn)->rq_head,
			  0);
	mroce_engine_destroy(e);
}
END_TEST

MROCE_SUITE(engine_qp_suite)
Suite *engine_qp_suite(void)
{
	Suite *s = suite_create("engine_qp");
	TCase *tc = tcase_create("qp");

	tcase_add_test(tc, mroce_create_qp__numbers_and_limits);
	tcase_add_test(tc, mroce_modify_qp__every_transition);
	tcase_add_test(tc, mroce_modify_qp__attribute_rules);
	tcase_add_test(tc, mroce_qp_to_err__flushes_everything_in_order);
	tcase_add_test(tc, mroce_modify_qp__reset_drops_queues_silently);
	suite_add_tcase(s, tc);
	return s;
}
