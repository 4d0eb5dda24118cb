// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/wq.c: posting sends and receives in every QP
 * state, and their checks.
 */
#include "../harness.h"
#include "engine_fixture.h"

START_TEST(mroce_post_send__errors_in_every_state)
{
	struct mroce_engine *e = mk(7);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	static uint8_t buf[4096];
	struct mroce_mr mr, ro;
	struct mroce_send_wr wr = { .opcode = MROCE_WR_SEND };

	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, ACC_ALL, &mr), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, MROCE_ACCESS_REMOTE_READ,
				      &ro),
			 0);
	wr.sge.addr = (uint64_t)(uintptr_t)buf;
	wr.sge.length = 100;
	wr.sge.lkey = mr.lkey;
	for (int s = 0; s < 5; s++) {
		uint32_t qpn = mk_qp(e, cq, 2, 2);

		ck_assert_int_eq(to_state(e, qpn, s, peer), 0);
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0),
				 s == MROCE_QPS_RTS ? 0 : -EPERM);
		ck_assert_int_eq(mroce_destroy_qp(e, qpn), 0);
	}
	{
		uint32_t qpn = mk_qp(e, cq, 2, 2);
		struct mroce_send_wr w = wr;

		ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_RTS, peer), 0);
		w.opcode = 17;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;
		w.sge.lkey ^= 0x1000;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;
		w.sge.length = 4097;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;
		w.send_flags = 0x100;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w = wr;	/* READ needs a locally writable sink */
		w.opcode = MROCE_WR_RDMA_READ;
		w.sge.lkey = ro.lkey;
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), -EINVAL);
		w.sge.length = 0;	/* zero length checks no key */
		ck_assert_int_eq(mroce_post_send(e, qpn, &w, 0), 0);
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0), 0);
		ck_assert_int_eq(mroce_post_send(e, qpn, &wr, 0), -EAGAIN);
		ck_assert_int_eq(mroce_post_send(e, 0x777777, &wr, 0),
				 -ENOENT);
	}
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_post_recv__states_and_checks)
{
	struct mroce_engine *e = mk(8);
	int cq = mroce_create_cq(e, 64), peer = mk_peer(e, 9);
	static uint8_t buf[4096];
	struct mroce_mr mr, ro;
	struct mroce_recv_wr wr = { .wr_id = 1 };
	uint32_t qpn = mk_qp(e, cq, 2, 2);

	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, ACC_ALL, &mr), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 4096, MROCE_ACCESS_REMOTE_READ,
				      &ro),
			 0);
	wr.sge.addr = (uint64_t)(uintptr_t)buf;
	wr.sge.length = 100;
	wr.sge.lkey = mr.lkey;
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EPERM);	/* RESET */
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_INIT, peer), 0);
	wr.sge.lkey = ro.lkey;
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EINVAL);
	wr.sge.lkey = mr.lkey;
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EAGAIN);
	ck_assert_int_eq(to_state(e, qpn, MROCE_QPS_ERR, peer), 0);
	ck_assert_int_eq(mroce_post_recv(e, qpn, &wr), -EPERM);
	mroce_engine_destroy(e);
}
END_TEST

MROCE_SUITE(engine_wq_suite)
Suite *engine_wq_suite(void)
{
	Suite *s = suite_create("engine_wq");
	TCase *tc = tcase_create("wq");

	tcase_add_test(tc, mroce_post_send__errors_in_every_state);
	tcase_add_test(tc, mroce_post_recv__states_and_checks);
	suite_add_tcase(s, tc);
	return s;
}
