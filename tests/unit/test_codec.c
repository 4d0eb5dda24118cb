// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of user/codec/codec.c: error names and the opcode tables. */
#include "../harness.h"
#include "mroce/codec.h"

#include <limits.h>
#include <string.h>

START_TEST(mroce_err_name__every_error_named_both_signs)
{
	ck_assert_str_eq(mroce_err_name(0), "OK");
	ck_assert_str_eq(mroce_err_name(-MROCE_E_BAD_ICRC), "BAD_ICRC");
	ck_assert_str_eq(mroce_err_name(MROCE_E_BAD_ICRC), "BAD_ICRC");
	ck_assert_str_eq(mroce_err_name(-MROCE_E_TRUNC_ETH), "TRUNC_ETH");
	ck_assert_str_eq(mroce_err_name(-MROCE_E_INVAL), "INVAL");
	for (int e = MROCE_E_BASE; e < MROCE_E__COUNT; e++) {
		ck_assert_str_ne(mroce_err_name(-e), "UNKNOWN");
		ck_assert_str_eq(mroce_err_name(-e), mroce_err_name(e));
		ck_assert_str_ne(mroce_err_text(-e), "unknown error");
		ck_assert_uint_gt(strlen(mroce_err_text(-e)), 5);
	}
}
END_TEST

START_TEST(mroce_err_name__out_of_range_is_unknown)
{
	ck_assert_str_eq(mroce_err_name(MROCE_E__COUNT), "UNKNOWN");
	ck_assert_str_eq(mroce_err_name(-MROCE_E__COUNT), "UNKNOWN");
	ck_assert_str_eq(mroce_err_name(INT_MIN), "UNKNOWN");
	ck_assert_str_eq(mroce_err_name(INT_MAX), "UNKNOWN");
	ck_assert_str_eq(mroce_err_text(INT_MIN), "unknown error");
	ck_assert_str_eq(mroce_err_text(0), "success");
	ck_assert_str_eq(mroce_err_text(-MROCE_E_BAD_ICRC), "ICRC mismatch");
}
END_TEST

START_TEST(mroce_err_name__errno_range_is_not_a_codec_error)
{
	/* -errno and -MROCE_E_* share mroce_engine_rx()'s return value:
	 * no errno (1..4095) may name a codec error. */
	for (int e = 1; e < MROCE_E_BASE; e++) {
		ck_assert(!mroce_is_codec_err(-e));
		ck_assert_str_eq(mroce_err_name(-e), "UNKNOWN");
	}
	ck_assert(mroce_is_codec_err(-MROCE_E_BAD_ICRC));
	ck_assert(mroce_is_codec_err(MROCE_E_INVAL));
	ck_assert(!mroce_is_codec_err(0));
	ck_assert(!mroce_is_codec_err(-MROCE_E__COUNT));
	ck_assert(!mroce_is_codec_err(INT_MIN));
	ck_assert_int_ge(MROCE_E_TRUNC_ETH, 4096);
}
END_TEST

START_TEST(mroce_meta_opdesc__agrees_with_wire_h_for_every_opcode)
{
	int known = 0;

	for (int op = 0; op < 256; op++) {
		const struct mroce_opdesc *d = mroce_meta_opdesc((uint8_t)op);
		uint16_t ext = mroce_op_ext((uint8_t)op);

		if (!ext) {
			ck_assert_ptr_null(d);
			ck_assert_int_eq(mroce_meta_hdr_len((uint8_t)op),
					 -MROCE_E_BAD_OPCODE);
			continue;
		}
		known++;
		ck_assert_ptr_nonnull(d);
		ck_assert_int_eq(d->opcode, op);
		ck_assert_int_eq(d->proto, MROCE_PROTO_METAROCE);
		ck_assert_uint_eq(d->ext, ext);
		ck_assert_uint_eq(d->hdr_len, mroce_ext_len(ext));
		ck_assert_int_eq(d->hdr_len % 4, 0);
		ck_assert_int_eq(d->payload, mroce_op_has_payload((uint8_t)op));
		ck_assert_int_eq(mroce_meta_hdr_len((uint8_t)op), d->hdr_len);
	}
	ck_assert_int_eq(known, 16);
	ck_assert_str_eq(mroce_meta_opdesc(MROCE_OP_READ_REQ)->name, "READ_REQ");
	ck_assert_str_eq(mroce_meta_opdesc(MROCE_OP_CLOSE_ACK)->name,
			 "CLOSE_ACK");
}
END_TEST

START_TEST(mroce_rv2_opdesc__rc_subset_and_cnp)
{
	static const struct {
		uint8_t op;
		uint16_t hdr_len;
		bool payload;
		const char *name;
	} want[] = {
		{ 0x00, 12, true, "SEND_FIRST" },
		{ 0x03, 16, true, "SEND_LAST_IMM" },
		{ 0x05, 16, true, "SEND_ONLY_IMM" },
		{ 0x06, 28, true, "WRITE_FIRST" },
		{ 0x07, 12, true, "WRITE_MIDDLE" },
		{ 0x09, 16, true, "WRITE_LAST_IMM" },
		{ 0x0a, 28, true, "WRITE_ONLY" },
		{ 0x0b, 32, true, "WRITE_ONLY_IMM" },
		{ 0x0c, 28, false, "READ_REQ" },
		{ 0x0d, 16, true, "READ_RESP_FIRST" },
		{ 0x0e, 12, true, "READ_RESP_MIDDLE" },
		{ 0x10, 16, true, "READ_RESP_ONLY" },
		{ 0x11, 16, false, "ACK" },
		{ 0x81, 28, false, "CNP" },
	};
	int known = 0;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct mroce_opdesc *d = mroce_rv2_opdesc(want[i].op);

		ck_assert_ptr_nonnull(d);
		ck_assert_int_eq(d->proto, MROCE_PROTO_ROCEV2);
		ck_assert_uint_eq(d->hdr_len, want[i].hdr_len);
		ck_assert_int_eq(d->payload, want[i].payload);
		ck_assert_str_eq(d->name, want[i].name);
	}
	for (int op = 0; op < 256; op++)
		if (mroce_rv2_opdesc((uint8_t)op))
			known++;
	/* 18 RC opcodes 0x00-0x11 + CNP; atomics (0x12-0x14) not spoken */
	ck_assert_int_eq(known, 19);
	ck_assert_ptr_null(mroce_rv2_opdesc(0x12));
	ck_assert_ptr_null(mroce_rv2_opdesc(0x24));	/* UC */
	ck_assert_ptr_null(mroce_rv2_opdesc(0x64));	/* UD */
}
END_TEST

/* The position column agrees with the opcode's name: _FIRST, _MIDDLE,
 * _LAST (also _LAST_IMM); everything else is a message of one packet. */
START_TEST(mroce_rv2_opdesc__position_matches_the_name)
{
	int n = 0;

	for (int op = 0; op < 256; op++) {
		const struct mroce_opdesc *d = mroce_rv2_opdesc((uint8_t)op);
		uint8_t want = MROCE_POS_ONLY;

		if (!d)
			continue;
		n++;
		if (strstr(d->name, "_FIRST"))
			want = MROCE_POS_FIRST;
		else if (strstr(d->name, "_MIDDLE"))
			want = MROCE_POS_MIDDLE;
		else if (strstr(d->name, "_LAST"))
			want = MROCE_POS_LAST;
		ck_assert_msg(d->pos == want, "%s: pos %u, want %u", d->name,
			      d->pos, want);
	}
	ck_assert_int_eq(n, 19);
	for (int op = 0; op < 256; op++) {
		const struct mroce_opdesc *d = mroce_meta_opdesc((uint8_t)op);

		if (d)
			ck_assert_int_eq(d->pos, MROCE_POS_ONLY);
	}
}
END_TEST

MROCE_SUITE(codec_suite)
Suite *codec_suite(void)
{
	Suite *s = suite_create("codec");
	TCase *tc = tcase_create("tables");

	tcase_add_test(tc, mroce_err_name__every_error_named_both_signs);
	tcase_add_test(tc, mroce_err_name__out_of_range_is_unknown);
	tcase_add_test(tc, mroce_err_name__errno_range_is_not_a_codec_error);
	tcase_add_test(tc,
		       mroce_meta_opdesc__agrees_with_wire_h_for_every_opcode);
	tcase_add_test(tc, mroce_rv2_opdesc__rc_subset_and_cnp);
	tcase_add_test(tc, mroce_rv2_opdesc__position_matches_the_name);
	suite_add_tcase(s, tc);
	return s;
}
