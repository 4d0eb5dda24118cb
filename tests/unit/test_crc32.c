// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of user/codec/crc32.c against published check values and a
 * bit-at-a-time reference written from the polynomial's definition. */
#include "../harness.h"
#include "mroce/codec.h"

#include <string.h>

/* The textbook definition: reflected 0x04C11DB7 (= 0xEDB88320), initial
 * value and final XOR all ones, one bit per step. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

START_TEST(mroce_crc32__check_value_123456789)
{
	/* The catalogue "check" value of CRC-32/ISO-HDLC (the zlib CRC). */
	ck_assert_uint_eq(mroce_crc32(0, "123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(mroce_crc32_generic(0, "123456789", 9), 0xcbf43926u);
}
END_TEST

START_TEST(mroce_crc32__published_vectors)
{
	static const char fox[] = "The quick brown fox jumps over the lazy dog";

	ck_assert_uint_eq(mroce_crc32(0, "", 0), 0);
	ck_assert_uint_eq(mroce_crc32(0, "a", 1), 0xe8b7be43u);
	ck_assert_uint_eq(mroce_crc32(0, fox, strlen(fox)), 0x414fa339u);
}
END_TEST

START_TEST(mroce_crc32__matches_bitwise_reference_at_any_alignment)
{
	uint8_t buf[300];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n + off <= sizeof(buf); n += 1 + n / 16)
			ck_assert_msg(mroce_crc32(0, buf + off, n) ==
					      crc32_bitwise(buf + off, n),
				      "off %zu len %zu", off, n);
}
END_TEST

/* Long buffers take the folding path on CPUs with PCLMULQDQ: every
 * length around the 16- and 64-byte steps, unaligned starts, a non-zero
 * starting CRC; the table-only function must agree too. */
START_TEST(mroce_crc32__long_buffers_match_reference)
{
	static const size_t lens[] = { 63, 64, 65, 79, 80, 81, 95, 96, 112,
				       127, 128, 129, 143, 191, 192, 200, 255,
				       256, 1000, 1024, 4096, 4099, 9000 };
	static uint8_t buf[9000 + 16];
	uint32_t x = 0x12345678;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;	/* fixed pseudo-noise */
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
		for (size_t off = 0; off < 16; off += 5) {
			const uint8_t *p = buf + off;
			size_t n = lens[k];
			uint32_t want = crc32_bitwise(p, n);

			ck_assert_msg(mroce_crc32(0, p, n) == want,
				      "len %zu off %zu", n, off);
			ck_assert_uint_eq(mroce_crc32_generic(0, p, n), want);
			/* a starting CRC: the first 7 bytes, then the rest */
			ck_assert_uint_eq(mroce_crc32(mroce_crc32(0, p, 7),
						      p + 7, n - 7),
					  want);
		}
}
END_TEST

START_TEST(mroce_crc32__chains_at_every_split)
{
	uint8_t buf[100];
	uint32_t whole;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(0xa5 ^ (i * 17));
	whole = mroce_crc32(0, buf, sizeof(buf));
	for (size_t k = 0; k <= sizeof(buf); k++)
		ck_assert_uint_eq(mroce_crc32(mroce_crc32(0, buf, k), buf + k,
					      sizeof(buf) - k),
				  whole);
}
END_TEST

MROCE_SUITE(crc32_suite)
Suite *crc32_suite(void)
{
	Suite *s = suite_create("crc32");
	TCase *tc = tcase_create("crc32");

	tcase_add_test(tc, mroce_crc32__check_value_123456789);
	tcase_add_test(tc, mroce_crc32__published_vectors);
	tcase_add_test(tc,
		       mroce_crc32__matches_bitwise_reference_at_any_alignment);
	tcase_add_test(tc, mroce_crc32__long_buffers_match_reference);
	tcase_add_test(tc, mroce_crc32__chains_at_every_split);
	suite_add_tcase(s, tc);
	return s;
}
