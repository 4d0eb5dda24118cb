// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * CRC-32 (IEEE 802.3 polynomial, reflected, pre- and post-inverted: the
 * same function as zlib's crc32()), used by the ICRC of both protocols.
 *
 * It runs over every byte of every packet, so it uses slicing-by-8: eight
 * 256-entry tables let one step consume 8 bytes with 8 independent table
 * loads instead of a serial chain of 8 dependent ones. The tables (8 KiB)
 * are computed once, before main(), by a constructor: that keeps the
 * function itself free of any "initialised yet?" branch and of locking.
 *
 * On x86-64 CPUs with PCLMULQDQ, buffers of 64 bytes and more are folded
 * with carry-less multiplies instead (several times faster: a 4 KiB
 * payload is the common case). The method: in the bit-reflected domain a
 * 16-byte chunk X that sits D bits ahead of chunk Y can be replaced by
 * X * x^D mod P, computed as two 64x32-bit carry-less products (of each
 * half of X with x^(D+63) and x^(D-1) mod P; the "-1" undoes the one-bit
 * shift of a reflected product), and XORed into Y. That keeps the value
 * of the message modulo P, hence its CRC. Four lanes fold 64 bytes per
 * step, then fold into one; the last 16-byte remainder and the tail go
 * through the table. The initial CRC is absorbed by XORing it into the
 * first 4 bytes, the usual equivalence for a reflected CRC.
 *
 * CPUs with AVX-512 (F, VL) and VPCLMULQDQ fold four 512-bit lanes, 256
 * bytes per step (D = 2048), with the same two products per 128-bit
 * piece; then the four lanes fold into one (D = 512), which takes in the
 * remaining 64-byte blocks, and the four 128-bit pieces of that lane fold
 * onto the last one (D = 384, 256, 128) in one multiply; the 128-bit end
 * is shared with the path above. About 4x faster than PCLMULQDQ on an
 * 8 KiB payload. mroce_crc32_copy() stores each 64 bytes it loads, so a
 * copy costs next to nothing on top of the CRC.
 *
 * The fold constants: x^n mod P for the n noted beside each, computed by
 * starting from 1 and n times shifting left by one bit and XORing P
 * (0x104c11db7) in whenever bit 32 gets set, then reversing the 32 bits
 * (the reflected domain). The unit tests check every path against a
 * bitwise CRC, so a wrong constant cannot go unnoticed.
 *
 * The path is chosen once by the constructor (crc_best); the shorter
 * lengths a path cannot fold go to the next simpler one.
 * crc32_int.h exposes every path for the tests and the benchmark.
 */
#include "crc32_int.h"
#include "mroce/codec.h"

#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32_HAVE_CLMUL 1
#include <immintrin.h>
#endif

#define CRC32_POLY_REFLECTED 0xedb88320u

static uint32_t crc_tab[8][256];
static enum crc32_impl crc_best;	/* set once, before main() */

__attribute__((constructor(101))) static void crc32_init_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? CRC32_POLY_REFLECTED : 0);
		crc_tab[0][i] = c;
	}
	/* crc_tab[k][i]: the CRC contribution of byte i followed by k zero
	 * bytes, i.e. one more byte step applied to crc_tab[k - 1][i]. */
	for (int k = 1; k < 8; k++)
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = crc_tab[k - 1][i];

			crc_tab[k][i] = (c >> 8) ^ crc_tab[0][c & 0xff];
		}
#ifdef CRC32_HAVE_CLMUL
	__builtin_cpu_init();
	if (__builtin_cpu_supports("pclmul"))
		crc_best = CRC32_IMPL_CLMUL;
	/* (the "avx512" checks include the OS saving the 512-bit state) */
	if (crc_best == CRC32_IMPL_CLMUL && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("vpclmulqdq"))
		crc_best = CRC32_IMPL_AVX512;
#endif
}

static inline uint32_t crc32_byte(uint32_t c, uint8_t b)
{
	return (c >> 8) ^ crc_tab[0][(c ^ b) & 0xff];
}

/* Register in, register out: no pre/post inversion here. */
static uint32_t crc32_slice8(uint32_t c, const uint8_t *p, size_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (len >= 8) {
		uint32_t lo, hi;

		/* memcpy: p has no alignment guarantee; compiles to a load */
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= c;
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
#endif
	while (len--)
		c = crc32_byte(c, *p++);
	return c;
}

#ifdef CRC32_HAVE_CLMUL
/* Each pair: the reflected (x^(D+63) mod P, x^(D-1) mod P) for a fold over
 * D bits, as 64-bit lanes (the 32-bit remainder lands in the high half). */
#define K_FOLD2048_LO 0x7cc8e1e700000000ull	/* x^2111 */
#define K_FOLD2048_HI 0x03f9f86300000000ull	/* x^2047 */
#define K_FOLD512_LO 0x653d982200000000ull	/* x^575 */
#define K_FOLD512_HI 0xcad38e8f00000000ull	/* x^511 */
#define K_FOLD384_LO 0x69ccfc0d00000000ull	/* x^447 */
#define K_FOLD384_HI 0x2a28386200000000ull	/* x^383 */
#define K_FOLD256_LO 0x9570d49500000000ull	/* x^319 */
#define K_FOLD256_HI 0x01b5fd1d00000000ull	/* x^255 */
#define K_FOLD128_LO 0x65673b4600000000ull	/* x^191 */
#define K_FOLD128_HI 0x9ba54c6f00000000ull	/* x^127 */

__attribute__((target("pclmul,sse2"))) static inline __m128i
fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

/* The end shared by both folding paths: a0 holds everything before p
 * (folded, still to be reduced), len < 64 bytes remain. Inlined, so that
 * the AVX-512 path gets it in VEX encoding: legacy SSE code run while
 * the upper halves of the vector registers are dirty is slow on some
 * CPUs. */
__attribute__((always_inline, target("pclmul,sse2"))) static inline uint32_t
crc32_fold_tail(__m128i a0, const uint8_t *p, size_t len)
{
	const __m128i k128 = _mm_set_epi64x((long long)K_FOLD128_HI,
					    (long long)K_FOLD128_LO);
	uint8_t last[16];

	while (len >= 16) {
		a0 = _mm_xor_si128(fold(a0, k128),
				   _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	_mm_storeu_si128((__m128i *)last, a0);
	return crc32_slice8(crc32_slice8(0, last, 16), p, len);
}

/* len >= 64. c: the register (already inverted), returned likewise. */
__attribute__((target("pclmul,sse2"))) static uint32_t
crc32_clmul(uint32_t c, const uint8_t *p, size_t len)
{
	const __m128i k512 = _mm_set_epi64x((long long)K_FOLD512_HI,
					    (long long)K_FOLD512_LO);
	const __m128i k128 = _mm_set_epi64x((long long)K_FOLD128_HI,
					    (long long)K_FOLD128_LO);
	__m128i a0, a1, a2, a3;

	a0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
			   _mm_cvtsi32_si128((int)c));
	a1 = _mm_loadu_si128((const __m128i *)(p + 16));
	a2 = _mm_loadu_si128((const __m128i *)(p + 32));
	a3 = _mm_loadu_si128((const __m128i *)(p + 48));
	p += 64;
	len -= 64;
	while (len >= 64) {
		a0 = _mm_xor_si128(fold(a0, k512),
				   _mm_loadu_si128((const __m128i *)p));
		a1 = _mm_xor_si128(fold(a1, k512),
				   _mm_loadu_si128((const __m128i *)(p + 16)));
		a2 = _mm_xor_si128(fold(a2, k512),
				   _mm_loadu_si128((const __m128i *)(p + 32)));
		a3 = _mm_xor_si128(fold(a3, k512),
				   _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}
	a1 = _mm_xor_si128(fold(a0, k128), a1);
	a2 = _mm_xor_si128(fold(a1, k128), a2);
	a0 = _mm_xor_si128(fold(a2, k128), a3);
	return crc32_fold_tail(a0, p, len);
}

#define AVX512_TARGET "avx512f,avx512vl,avx2,vpclmulqdq,pclmul,sse2"

/* z * x^D (per 128-bit lane, k from the K_FOLD<D> pair) XOR d. */
__attribute__((always_inline, target(AVX512_TARGET))) static inline __m512i
fold512(__m512i z, __m512i k, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
					 _mm512_clmulepi64_epi128(z, k, 0x11),
					 d, 0x96);	/* a ^ b ^ c */
}

/* The 64 bytes at p + i, also stored at dst + i when copying. */
__attribute__((always_inline, target(AVX512_TARGET))) static inline __m512i
load64(const uint8_t *p, uint8_t *dst, size_t i, bool copy)
{
	__m512i v = _mm512_loadu_si512(p + i);

	if (copy)
		_mm512_storeu_si512(dst + i, v);
	return v;
}

/* len >= 256. c: the register (already inverted), returned likewise.
 * With copy, dst receives the len bytes of p as they are read (dst is
 * not touched otherwise and may be NULL). Inlined into the two callers
 * below so that `copy` is a constant there. */
__attribute__((always_inline, target(AVX512_TARGET))) static inline uint32_t
crc32_avx512_body(uint32_t c, uint8_t *dst, const uint8_t *p, size_t len,
		  bool copy)
{
	const __m512i k2048 = _mm512_broadcast_i32x4(
		_mm_set_epi64x((long long)K_FOLD2048_HI,
			       (long long)K_FOLD2048_LO));
	const __m512i k512 = _mm512_broadcast_i32x4(
		_mm_set_epi64x((long long)K_FOLD512_HI,
			       (long long)K_FOLD512_LO));
	/* lane j of the last 64 bytes sits (3 - j) * 128 bits before the
	 * end: lanes 0-2 are folded onto lane 3, which is kept as is */
	const __m512i kend = _mm512_set_epi64(
		0, 0, (long long)K_FOLD128_HI, (long long)K_FOLD128_LO,
		(long long)K_FOLD256_HI, (long long)K_FOLD256_LO,
		(long long)K_FOLD384_HI, (long long)K_FOLD384_LO);
	__m512i z0, z1, z2, z3;
	__m256i y;
	__m128i a0;
	size_t i;

	z0 = _mm512_xor_si512(load64(p, dst, 0, copy),
			      _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
	z1 = load64(p, dst, 64, copy);
	z2 = load64(p, dst, 128, copy);
	z3 = load64(p, dst, 192, copy);
	for (i = 256; len - i >= 256; i += 256) {
		z0 = fold512(z0, k2048, load64(p, dst, i, copy));
		z1 = fold512(z1, k2048, load64(p, dst, i + 64, copy));
		z2 = fold512(z2, k2048, load64(p, dst, i + 128, copy));
		z3 = fold512(z3, k2048, load64(p, dst, i + 192, copy));
	}
	z1 = fold512(z0, k512, z1);
	z2 = fold512(z1, k512, z2);
	z0 = fold512(z2, k512, z3);
	for (; len - i >= 64; i += 64)
		z0 = fold512(z0, k512, load64(p, dst, i, copy));
	z0 = fold512(z0, kend, _mm512_maskz_mov_epi64(0xc0, z0));
	y = _mm256_xor_si256(_mm512_castsi512_si256(z0),
			     _mm512_extracti64x4_epi64(z0, 1));
	a0 = _mm_xor_si128(_mm256_castsi256_si128(y),
			   _mm256_extracti128_si256(y, 1));
	/* leave the upper halves clean for the SSE code of the caller (GCC
	 * does not insert this in functions with a target attribute) */
	_mm256_zeroupper();
	if (copy)
		memcpy(dst + i, p + i, len - i);
	return crc32_fold_tail(a0, p + i, len - i);
}

__attribute__((target(AVX512_TARGET))) static uint32_t
crc32_avx512(uint32_t c, const uint8_t *p, size_t len)
{
	return crc32_avx512_body(c, NULL, p, len, false);
}

__attribute__((target(AVX512_TARGET))) static uint32_t
crc32_avx512_copy(uint32_t c, uint8_t *dst, const uint8_t *p, size_t len)
{
	return crc32_avx512_body(c, dst, p, len, true);
}
#endif

const char *crc32_impl_name(enum crc32_impl impl)
{
	static const char *const names[CRC32_IMPL_COUNT] = {
		[CRC32_IMPL_TABLE] = "table",
		[CRC32_IMPL_CLMUL] = "clmul",
		[CRC32_IMPL_AVX512] = "avx512",
	};

	return (unsigned)impl < CRC32_IMPL_COUNT ? names[impl] : "?";
}

bool crc32_impl_available(enum crc32_impl impl)
{
	return impl <= crc_best;
}

enum crc32_impl crc32_impl_selected(void)
{
	return crc_best;
}

uint32_t crc32_impl_crc(enum crc32_impl impl, uint32_t crc, const void *buf,
			size_t len)
{
	switch (impl) {
#ifdef CRC32_HAVE_CLMUL
	case CRC32_IMPL_AVX512:
		if (len >= 256)
			return ~crc32_avx512(~crc, buf, len);
		__attribute__((fallthrough));
	case CRC32_IMPL_CLMUL:
		if (len >= 64)
			return ~crc32_clmul(~crc, buf, len);
		break;
#endif
	default:
		break;
	}
	return ~crc32_slice8(~crc, buf, len);
}

uint32_t crc32_impl_copy(enum crc32_impl impl, uint32_t crc, void *dst,
			 const void *src, size_t len)
{
#ifdef CRC32_HAVE_CLMUL
	if (impl == CRC32_IMPL_AVX512 && len >= 256)
		return ~crc32_avx512_copy(~crc, dst, src, len);
#endif
	memcpy(dst, src, len);
	return crc32_impl_crc(impl, crc, src, len);
}

uint32_t mroce_crc32(uint32_t crc, const void *buf, size_t len)
{
	return crc32_impl_crc(crc_best, crc, buf, len);
}

uint32_t mroce_crc32_copy(uint32_t crc, void *dst, const void *src,
			  size_t len)
{
	return crc32_impl_copy(crc_best, crc, dst, src, len);
}

uint32_t mroce_crc32_generic(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32_slice8(~crc, buf, len);
}
