// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of the static helpers in include/mroce/wire.h. */
#include "../harness.h"
#include "mroce/wire.h"

START_TEST(mroce_psn_diff__wraps_at_2_32)
{
	ck_assert_int_eq(mroce_psn_diff(0, 0xffffffffu), 1);
	ck_assert_int_eq(mroce_psn_diff(0xffffffffu, 0), -1);
	ck_assert(mroce_psn_before(0xfffffff0u, 0x10));
	ck_assert(!mroce_psn_before(0x10, 0xfffffff0u));
	ck_assert(!mroce_psn_before(5, 5));
}
END_TEST

START_TEST(rocev2_psn_diff__wraps_at_2_24)
{
	ck_assert_int_eq(rocev2_psn_diff(0, 0xffffff), 1);
	ck_assert_int_eq(rocev2_psn_diff(0xffffff, 0), -1);
	ck_assert_int_eq(rocev2_psn_diff(0x7fffff, 0), 0x7fffff);
	ck_assert_int_eq(rocev2_psn_diff(0x800000, 0), -0x800000);
	ck_assert_uint_eq(rocev2_psn_add(0xfffffe, 3), 1);
}
END_TEST

START_TEST(mroce_op_ext__unknown_opcodes_are_zero)
{
	int known = 0;
	for (int op = 0; op < 256; op++)
		if (mroce_op_ext(op))
			known++;
	ck_assert_int_eq(known, 16);
	ck_assert_uint_eq(mroce_op_ext(0x00), 0);
	ck_assert_uint_eq(mroce_op_ext(0xff), 0);
}
END_TEST

START_TEST(mroce_ext_len__matches_spec_table)
{
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_SEND)), 40);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_SEND_IMM)), 44);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_WRITE)), 48);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_WRITE_IMM)), 52);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_READ_REQ)), 60);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_READ_RESP)), 48);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_ACK)), 60);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_NAK)), 28);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_PROBE)), 20);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_PATH_REROLL)), 20);
	ck_assert_uint_eq(mroce_ext_len(mroce_op_ext(MROCE_OP_CONNECT_REQ)), 52);
}
END_TEST

START_TEST(mroce_path_isn__distinct_per_slot_and_gen)
{
	ck_assert_uint_eq(mroce_path_isn(1234, 0, 0), 1234);
	ck_assert_uint_ne(mroce_path_isn(1234, 1, 0), mroce_path_isn(1234, 0, 1));
	ck_assert_uint_ne(mroce_path_isn(1234, 1, 0), 1234);
}
END_TEST

MROCE_SUITE(wire_suite)
Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("helpers");
	tcase_add_test(tc, mroce_psn_diff__wraps_at_2_32);
	tcase_add_test(tc, rocev2_psn_diff__wraps_at_2_24);
	tcase_add_test(tc, mroce_op_ext__unknown_opcodes_are_zero);
	tcase_add_test(tc, mroce_ext_len__matches_spec_table);
	tcase_add_test(tc, mroce_path_isn__distinct_per_slot_and_gen);
	suite_add_tcase(s, tc);
	return s;
}
