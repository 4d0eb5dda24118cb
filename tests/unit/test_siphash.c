// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of user/codec/siphash.c against the SipHash-2-4 reference vectors
 * (Aumasson & Bernstein, "SipHash: a fast short-input PRF", 2012, Appendix
 * A, and the vectors published with the reference implementation): key
 * 00 01 .. 0f, message i = 00 01 .. (i-1). The 64-bit outputs below are
 * the published little-endian output bytes read as a little-endian word. */
#include "../harness.h"
#include "mroce/codec.h"

static const uint64_t sip24_vectors[16] = {
	0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull,
	0x85676696d7fb7e2dull, 0xcf2794e0277187b7ull, 0x18765564cd99a68dull,
	0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull, 0x93f5f5799a932462ull,
	0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
	0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull,
	0xa129ca6149be45e5ull,
};

static void ref_key_msg(uint8_t key[16], uint8_t msg[16])
{
	for (int i = 0; i < 16; i++)
		key[i] = msg[i] = (uint8_t)i;
}

START_TEST(mroce_siphash24__paper_vector_15_bytes)
{
	uint8_t key[16], msg[16];

	ref_key_msg(key, msg);
	/* The worked example of the paper's Appendix A. */
	ck_assert_uint_eq(mroce_siphash24(key, msg, 15), 0xa129ca6149be45e5ull);
}
END_TEST

START_TEST(mroce_siphash24__reference_vectors_0_to_15_bytes)
{
	uint8_t key[16], msg[16];

	ref_key_msg(key, msg);
	for (size_t n = 0; n < 16; n++)
		ck_assert_msg(mroce_siphash24(key, msg, n) == sip24_vectors[n],
			      "length %zu: got %016llx", n,
			      (unsigned long long)mroce_siphash24(key, msg, n));
}
END_TEST

START_TEST(mroce_siphash24__every_key_bit_matters)
{
	uint8_t key[16], msg[16];
	uint64_t base;

	ref_key_msg(key, msg);
	base = mroce_siphash24(key, msg, 15);
	for (int bit = 0; bit < 128; bit++) {
		key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ck_assert_uint_ne(mroce_siphash24(key, msg, 15), base);
		key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}
END_TEST

MROCE_SUITE(siphash_suite)
Suite *siphash_suite(void)
{
	Suite *s = suite_create("siphash");
	TCase *tc = tcase_create("siphash");

	tcase_add_test(tc, mroce_siphash24__paper_vector_15_bytes);
	tcase_add_test(tc, mroce_siphash24__reference_vectors_0_to_15_bytes);
	tcase_add_test(tc, mroce_siphash24__every_key_bit_matters);
	suite_add_tcase(s, tc);
	return s;
}
