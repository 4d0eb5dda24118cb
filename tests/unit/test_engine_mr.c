// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/mr.c: memory region keys and the key checks.
 */
#include "../harness.h"
#include "engine_fixture.h"

START_TEST(mroce_reg_mr__keys_random_nonzero_and_checked)
{
	struct mroce_engine_cfg cfg = { .max_mrs = 3 };
	struct mroce_engine *e;
	struct mroce_mr m[3], x;
	static uint8_t buf[4096];

	ck_assert_int_eq(mroce_engine_create(&cfg, &e), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, MROCE_ACCESS_REMOTE_WRITE,
				      &x),
			 -EINVAL);	/* remote write needs local write */
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, 0x80, &x), -EINVAL);
	ck_assert_int_eq(mroce_reg_mr(e, NULL, 100, 0, &x), -EINVAL);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(mroce_reg_mr(e, buf + i, 100, ACC_ALL, &m[i]),
				 0);
		ck_assert_uint_ne(m[i].lkey, 0);
		ck_assert_uint_ne(m[i].rkey, 0);
		ck_assert_uint_ne(m[i].lkey, m[i].rkey);
		ck_assert_uint_eq(m[i].addr, (uint64_t)(uintptr_t)(buf + i));
	}
	ck_assert_uint_ne(m[0].rkey, m[1].rkey);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, ACC_ALL, &x), -ENOMEM);
	ck_assert_int_eq(mroce_dereg_mr(e, m[1].rkey), -ENOENT);
	ck_assert_int_eq(mroce_dereg_mr(e, m[1].lkey), 0);
	ck_assert_int_eq(mroce_dereg_mr(e, m[1].lkey), -ENOENT);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 100, ACC_ALL, &x), 0);
	ck_assert_uint_ne(x.lkey, m[1].lkey);	/* fresh key, same slot */
	mroce_engine_destroy(e);
}
END_TEST

START_TEST(mroce_rkey_check__bounds_access_and_bad_key)
{
	struct mroce_engine *e = mk(2);
	static uint8_t buf[1000];
	struct mroce_mr rw, ro;
	struct mroce_qp qp = { .access = MROCE_ACCESS_REMOTE_WRITE |
					 MROCE_ACCESS_REMOTE_READ };
	uint64_t a = (uint64_t)(uintptr_t)buf;
	const uint32_t W = MROCE_ACCESS_REMOTE_WRITE;

	ck_assert_int_eq(mroce_reg_mr(e, buf, 1000, ACC_ALL, &rw), 0);
	ck_assert_int_eq(mroce_reg_mr(e, buf, 500, MROCE_ACCESS_REMOTE_READ,
				      &ro),
			 0);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a, 1000, W),
			 MROCE_MRC_OK);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a + 999, 1, W),
			 MROCE_MRC_OK);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a + 999, 2, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a - 1, 2, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, UINT64_MAX, 2, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a, UINT64_MAX, W),
			 MROCE_MRC_BOUNDS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.lkey, a, 1, W),
			 MROCE_MRC_BAD_KEY);	/* lkey is not an rkey */
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey ^ 0x100000, a, 1, W),
			 MROCE_MRC_BAD_KEY);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, ro.rkey, a, 1, W),
			 MROCE_MRC_ACCESS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, ro.rkey, a, 1,
					  MROCE_ACCESS_REMOTE_READ),
			 MROCE_MRC_OK);
	qp.access = MROCE_ACCESS_REMOTE_READ;	/* the QP forbids writes */
	ck_assert_int_eq(mroce_rkey_check(e, &qp, rw.rkey, a, 1, W),
			 MROCE_MRC_ACCESS);
	ck_assert_int_eq(mroce_rkey_check(e, &qp, 0, a, 0, W), MROCE_MRC_OK);
	ck_assert_int_eq(mroce_lkey_check(e, rw.lkey, a, 1000,
					  MROCE_ACCESS_LOCAL_WRITE, NULL),
			 MROCE_MRC_OK);
	ck_assert_int_eq(mroce_lkey_check(e, ro.lkey, a, 10,
					  MROCE_ACCESS_LOCAL_WRITE, NULL),
			 MROCE_MRC_ACCESS);
	ck_assert_int_eq(mroce_lkey_check(e, rw.rkey, a, 1, 0, NULL),
			 MROCE_MRC_BAD_KEY);
	mroce_engine_destroy(e);
}
END_TEST

MROCE_SUITE(engine_mr_suite)
Suite *engine_mr_suite(void)
{
	Suite *s = suite_create("engine_mr");
	TCase *tc = tcase_create("mr");

	tcase_add_test(tc, mroce_reg_mr__keys_random_nonzero_and_checked);
	tcase_add_test(tc, mroce_rkey_check__bounds_access_and_bad_key);
	suite_add_tcase(s, tc);
	return s;
}
