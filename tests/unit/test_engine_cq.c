// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/cq.c: completion queues, overrun, status names.
 */
#include "../harness.h"
#include "engine_fixture.h"

START_TEST(mroce_create_cq__destroy_busy_and_reuse)
{
	struct mroce_engine *e = mk(3);
	int cq = mroce_create_cq(e, 4), cq2;
	uint32_t qpn;

	ck_assert_int_ge(cq, 0);
	ck_assert_int_eq(mroce_create_cq(e, 0), -EINVAL);
	qpn = mk_qp(e, cq, 4, 4);
	ck_assert_int_eq(mroce_destroy_cq(e, cq), -EBUSY);
	ck_assert_int_eq(mroce_destroy_qp(e, qpn), 0);
	ck_assert_int_eq(mroce_destroy_cq(e, cq), 0);
	ck_assert_int_eq(mroce_destroy_cq(e, cq), -ENOENT);
	cq2 = mroce_create_cq(e, 4);
	ck_assert_int_eq(cq2, cq);
	ck_assert_int_eq(mroce_poll_cq(e, 99, NULL, 0), -ENOENT);
	ck_assert_int_eq(mroce_poll_cq(e, cq2, NULL, -1), -EINVAL);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_cq_push__overflow_moves_qps_to_err)
{
	struct mroce_engine *e = mk(4);
	int cq = mroce_create_cq(e, 2), other = mroce_create_cq(e, 8);
	uint32_t a = mk_qp(e, cq, 4, 4), b = mk_qp(e, other, 4, 4);
	struct mroce_wc wc = { .wr_id = 1 }, out[4];

	ck_assert_int_eq(to_state(e, a, MROCE_QPS_INIT, 0), 0);
	ck_assert_int_eq(to_state(e, b, MROCE_QPS_INIT, 0), 0);
	ck_assert_int_eq(mroce_cq_push(e, cq, &wc), 0);
	ck_assert_int_eq(mroce_cq_push(e, cq, &wc), 0);
	ck_assert_int_eq(mroce_cq_push(e, cq, &wc), -ENOSPC);
	ck_assert_int_eq(state_of(e, a), MROCE_QPS_ERR);
	ck_assert_int_eq(state_of(e, b), MROCE_QPS_INIT);
	ck_assert(e->cqs[cq].overflowed);
	ck_assert_int_eq(mroce_poll_cq(e, cq, out, 4), 2);
	ck_assert_int_eq(mroce_poll_cq(e, cq, out, 4), 0);
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_wc_status_str__names)
{
	ck_assert_str_eq(mroce_wc_status_str(MROCE_WC_SUCCESS), "success");
	ck_assert_str_eq(mroce_wc_status_str(MROCE_WC_WR_FLUSH_ERR),
			 "Work Request Flushed Error");
	ck_assert_str_eq(mroce_wc_status_str(99), "unknown");
	ck_assert_str_eq(mroce_qp_state_name(MROCE_QPS_RTS), "RTS");
	ck_assert_str_eq(mroce_qp_state_name(42), "UNKNOWN");
}
END_TEST

MROCE_SUITE(engine_cq_suite)
Suite *engine_cq_suite(void)
{
	Suite *s = suite_create("engine_cq");
	TCase *tc = tcase_create("cq");

	tcase_add_test(tc, mroce_create_cq__destroy_busy_and_reuse);
	tcase_add_test(tc, mroce_cq_push__overflow_moves_qps_to_err);
	tcase_add_test(tc, mroce_wc_status_str__names);
	suite_add_tcase(s, tc);
	return s;
}
