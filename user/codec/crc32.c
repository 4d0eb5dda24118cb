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
 */
#include "mroce/codec.h"

#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32_HAVE_CLMUL 1
#include <immintrin.h>
#endif

#define CRC32_POLY_REFLECTED 0xedb88320u

static uint32_t crc_tab[8][256];
#ifdef CRC32_HAVE_CLMUL
static bool have_clmul;	/* set once, before main() */
#endif

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
	have_clmul = __builtin_cpu_supports("pclmul");
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
#define K_FOLD512_LO 0x653d982200000000ull	/* x^575 */
#define K_FOLD512_HI 0xcad38e8f00000000ull	/* x^511 */
#define K_FOLD128_LO 0x65673b4600000000ull	/* x^191 */
#define K_FOLD128_HI 0x9ba54c6f00000000ull	/* x^127 */

__attribute__((target("pclmul,sse2"))) static inline __m128i
fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
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
	uint8_t last[16];

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
	while (len >= 16) {
		a0 = _mm_xor_si128(fold(a0, k128),
				   _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	_mm_storeu_si128((__m128i *)last, a0);
	return crc32_slice8(crc32_slice8(0, last, 16), p, len);
}
#endif

uint32_t mroce_crc32(uint32_t crc, const void *buf, size_t len)
{
#ifdef CRC32_HAVE_CLMUL
	if (have_clmul && len >= 64)
		return ~crc32_clmul(~crc, buf, len);
#endif
	return ~crc32_slice8(~crc, buf, len);
}

uint32_t mroce_crc32_generic(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32_slice8(~crc, buf, len);
}
