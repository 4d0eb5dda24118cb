// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of user/codec/crc32.c against published check values and a
 * bit-at-a-time reference written from the polynomial's definition: the
 * public functions, and each implementation (tables, PCLMULQDQ, AVX-512
 * VPCLMULQDQ) on its own where the CPU runs it. */
#include "../harness.h"
#include "../../user/codec/crc32_int.h"
#include "mroce/codec.h"
#include "mroce/wire.h"

#include <stdbool.h>
#include <stdio.h>
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

/* Fixed pseudo-noise (a 64-bit LCG's high bits), so failures replay. */
static uint32_t noise(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*x >> 33);
}

static void fill_noise(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)noise(&seed);
}

/* Loop tests over the implementations this CPU runs (a prefix of enum
 * crc32_impl, checked below); the others are reported as skipped. */
#define IMPL ((enum crc32_impl)_i)

/* Whether the first "flags" line of /proc/cpuinfo lists flag (the kernel
 * drops AVX-512 flags when it does not save the 512-bit state). */
static bool cpuinfo_has(const char *flag)
{
	static char line[8192];
	FILE *f = fopen("/proc/cpuinfo", "r");
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "flags", 5) != 0 || !colon)
			continue;
		for (char *t = strtok(colon + 1, " \n"); t;
		     t = strtok(NULL, " \n"))
			found |= strcmp(t, flag) == 0;
		break;
	}
	fclose(f);
	return found;
}

/* The dispatcher takes the best path the CPU has (by /proc/cpuinfo);
 * each path it claims available runs. */
START_TEST(crc32_impl_selected__is_the_best_this_cpu_runs)
{
	enum crc32_impl want = CRC32_IMPL_TABLE;

#if defined(__x86_64__)
	if (cpuinfo_has("pclmulqdq"))
		want = CRC32_IMPL_CLMUL;
	if (want == CRC32_IMPL_CLMUL && cpuinfo_has("avx512f") &&
	    cpuinfo_has("avx512vl") && cpuinfo_has("vpclmulqdq"))
		want = CRC32_IMPL_AVX512;
#endif
	ck_assert_str_eq(crc32_impl_name(crc32_impl_selected()),
			 crc32_impl_name(want));
	for (int i = 0; i < CRC32_IMPL_COUNT; i++)
		ck_assert_int_eq(crc32_impl_available((enum crc32_impl)i),
				 i <= (int)want);
}
END_TEST

/* The CRC of n bytes at buf + 0..63 through impl equals the reference.
 * (A plain test, ck_abort_msg on failure: this runs hundreds of
 * thousands of times and each Check assertion costs a system call.) */
static void check_every_misalignment(enum crc32_impl impl,
				     const uint8_t *buf, size_t n)
{
	for (size_t off = 0; off < 64; off++)
		if (crc32_impl_crc(impl, 0, buf + off, n) !=
		    crc32_bitwise(buf + off, n))
			ck_abort_msg("%s: off %zu len %zu",
				     crc32_impl_name(impl), off, n);
}

/* Every length 0..600 (across each path's 16-, 64- and 256-byte steps
 * and minimums) at every misalignment 0..63. */
START_TEST(crc32_impl__short_lengths_every_misalignment)
{
	static uint8_t buf[600 + 64];

	fill_noise(buf, sizeof(buf), 1);
	for (size_t n = 0; n <= 600; n++)
		check_every_misalignment(IMPL, buf, n);
}
END_TEST

/* Random lengths up to 20000 (and the 8 KiB payload) at every
 * misalignment 0..63. */
START_TEST(crc32_impl__long_lengths_every_misalignment)
{
	static uint8_t buf[20000 + 64];
	uint64_t seed = 7;

	fill_noise(buf, sizeof(buf), 2);
	for (int k = 0; k < 12; k++) {
		size_t n = k == 0 ? 8192 : k == 1 ? 20000 :
			   noise(&seed) % 20001;

		check_every_misalignment(IMPL, buf, n);
	}
}
END_TEST

/* crc(crc(0, a), b) == crc(0, a || b) for splits around every step. */
START_TEST(crc32_impl__chains_at_every_split)
{
	static uint8_t buf[1200];
	uint32_t whole;

	fill_noise(buf, sizeof(buf), 3);
	whole = crc32_bitwise(buf, sizeof(buf));
	for (size_t k = 0; k <= sizeof(buf); k++)
		if (crc32_impl_crc(IMPL, crc32_impl_crc(IMPL, 0, buf, k),
				   buf + k, sizeof(buf) - k) != whole)
			ck_abort_msg("%s: split %zu", crc32_impl_name(IMPL), k);
}
END_TEST

/* One copy+CRC: dst gets exactly src's bytes (the guard bytes on both
 * sides stay as they were) and the CRC is the plain one, chained from
 * start. (Plain tests again, for the same reason.) */
static void check_copy(enum crc32_impl impl, uint8_t *dbuf, size_t dcap,
		       size_t doff, const uint8_t *src, size_t n,
		       uint32_t start)
{
	uint32_t got;

	memset(dbuf, 0x5a, dcap);
	got = crc32_impl_copy(impl, start, dbuf + doff, src, n);
	if (got != mroce_crc32(start, src, n))
		ck_abort_msg("%s: crc, len %zu dst off %zu",
			     crc32_impl_name(impl), n, doff);
	if (memcmp(dbuf + doff, src, n) != 0)
		ck_abort_msg("%s: bytes, len %zu dst off %zu",
			     crc32_impl_name(impl), n, doff);
	for (size_t i = 0; i < dcap; i++)
		if ((i < doff || i >= doff + n) && dbuf[i] != 0x5a)
			ck_abort_msg("%s: wrote byte %zu outside, len %zu "
				     "dst off %zu",
				     crc32_impl_name(impl), i, n, doff);
}

START_TEST(crc32_impl_copy__copies_and_crcs_short)
{
	static uint8_t src[600 + 64], dst[600 + 128];

	fill_noise(src, sizeof(src), 4);
	for (size_t n = 0; n <= 600; n += 1 + n / 64)
		for (size_t off = 0; off < 64; off += 3)
			check_copy(IMPL, dst, sizeof(dst), (off * 5) % 64,
				   src + off, n, n ? 0 : 0x1234);
}
END_TEST

START_TEST(crc32_impl_copy__copies_and_crcs_long)
{
	static uint8_t src[20000 + 64], dst[20000 + 128];
	uint64_t seed = 9;

	fill_noise(src, sizeof(src), 5);
	for (int k = 0; k < 10; k++) {
		size_t n = k == 0 ? 8192 : noise(&seed) % 20001;

		for (size_t off = 0; off < 64; off += 7)
			check_copy(IMPL, dst, sizeof(dst), 63 - off, src + off,
				   n, k ? 0 : 0xdeadbeef);
	}
}
END_TEST

/* A copy in two pieces chains like the CRC itself. */
START_TEST(crc32_impl_copy__chains_at_every_split)
{
	static uint8_t src[700], dst[700];
	uint32_t whole;

	fill_noise(src, sizeof(src), 6);
	whole = crc32_bitwise(src, sizeof(src));
	for (size_t k = 0; k <= sizeof(src); k++) {
		uint32_t c = crc32_impl_copy(IMPL, 0, dst, src, k);

		memset(dst + k, 0, sizeof(dst) - k);
		if (crc32_impl_copy(IMPL, c, dst + k, src + k,
				    sizeof(src) - k) != whole ||
		    memcmp(dst, src, sizeof(src)) != 0)
			ck_abort_msg("%s: split %zu", crc32_impl_name(IMPL), k);
	}
}
END_TEST

/* The public copy+CRC is the selected path's. */
START_TEST(mroce_crc32_copy__matches_mroce_crc32)
{
	static uint8_t src[9000], dst[9000];

	fill_noise(src, sizeof(src), 8);
	for (size_t n = 0; n <= sizeof(src); n += 1 + n / 4) {
		memset(dst, 0, sizeof(dst));
		ck_assert_uint_eq(mroce_crc32_copy(0, dst, src, n),
				  crc32_bitwise(src, n));
		ck_assert_mem_eq(dst, src, n);
	}
}
END_TEST

/* mroce_meta_build copies a separate payload with mroce_crc32_copy and
 * moves one that overlaps its place in buf: every variant gives the same
 * packet, whose ICRC verifies. */
START_TEST(mroce_meta_build__payload_copy_with_or_without_overlap)
{
	enum { MAXP = MROCE_MAX_PAYLOAD };
	static uint8_t buf[3 * MAXP + 512];
	static uint8_t want[MAXP + 256];
	static uint8_t data[MAXP];
	const int h = mroce_meta_hdr_len(MROCE_OP_SEND);
	uint8_t *pkt = buf + MAXP + 128;	/* room for a payload before */
	/* where the payload starts, relative to its place (pkt + h); it may
	 * not overlap the header, which is written first */
	const long shift[] = { -h - MAXP, -h - MAXP - 3, 1, 64, MAXP - 1,
			       MAXP, MAXP + 5 };
	struct mroce_meta_pkt p = { 0 }, q;
	int n;

	fill_noise(data, sizeof(data), 10);
	p.opcode = MROCE_OP_SEND;
	p.conn_id = 0x1234;
	p.msg_len = sizeof(data);
	p.payload = data;
	p.payload_len = sizeof(data);
	n = mroce_meta_build(&p, want, sizeof(want));
	ck_assert_int_eq(n, h + (int)sizeof(data) + MROCE_ICRC_LEN);
	ck_assert_int_eq(mroce_meta_parse(want, (size_t)n, &q), 0);
	ck_assert_mem_eq(q.payload, data, sizeof(data));
	for (size_t i = 0; i < sizeof(shift) / sizeof(shift[0]); i++) {
		uint8_t *src = pkt + h + shift[i];

		memset(buf, 0, sizeof(buf));
		memcpy(src, data, sizeof(data));
		p.payload = src;
		ck_assert_int_eq(mroce_meta_build(&p, pkt, MAXP + 256), n);
		ck_assert_msg(memcmp(pkt, want, (size_t)n) == 0, "shift %ld",
			      shift[i]);
	}
}
END_TEST

MROCE_SUITE(crc32_suite)
Suite *crc32_suite(void)
{
	Suite *s = suite_create("crc32");
	TCase *tc = tcase_create("crc32");
	/* the available ones are a prefix: each path needs the one before */
	int nimpl = (int)crc32_impl_selected() + 1;
	char name[64];

	tcase_add_test(tc, mroce_crc32__check_value_123456789);
	tcase_add_test(tc, mroce_crc32__published_vectors);
	tcase_add_test(tc,
		       mroce_crc32__matches_bitwise_reference_at_any_alignment);
	tcase_add_test(tc, mroce_crc32__long_buffers_match_reference);
	tcase_add_test(tc, mroce_crc32__chains_at_every_split);
	tcase_add_test(tc, crc32_impl_selected__is_the_best_this_cpu_runs);
	tcase_add_test(tc, mroce_crc32_copy__matches_mroce_crc32);
	tcase_add_test(tc,
		       mroce_meta_build__payload_copy_with_or_without_overlap);
	suite_add_tcase(s, tc);

	/* one loop iteration per implementation this CPU runs */
	tc = tcase_create("crc32_impl");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, crc32_impl__short_lengths_every_misalignment,
			    0, nimpl);
	tcase_add_loop_test(tc, crc32_impl__long_lengths_every_misalignment,
			    0, nimpl);
	tcase_add_loop_test(tc, crc32_impl__chains_at_every_split, 0, nimpl);
	tcase_add_loop_test(tc, crc32_impl_copy__copies_and_crcs_short, 0,
			    nimpl);
	tcase_add_loop_test(tc, crc32_impl_copy__copies_and_crcs_long, 0,
			    nimpl);
	tcase_add_loop_test(tc, crc32_impl_copy__chains_at_every_split, 0,
			    nimpl);
	suite_add_tcase(s, tc);
	for (int i = nimpl; i < CRC32_IMPL_COUNT; i++) {
		snprintf(name, sizeof(name), "crc32_impl/%s",
			 crc32_impl_name((enum crc32_impl)i));
		mroce_skip(name, i == CRC32_IMPL_AVX512 ?
			   "this CPU (or build) lacks AVX-512 F+VL and "
			   "VPCLMULQDQ" :
			   "this CPU (or build) lacks PCLMULQDQ");
	}
	return s;
}
