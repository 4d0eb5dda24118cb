// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit PRF, used to
 * MAC the stateless handshake cookies. Two compression rounds per 8-byte
 * word and four finalisation rounds, words read little-endian as the
 * paper specifies (independent of the host's byte order).
 */
#include "mroce/codec.h"

static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

struct sip_state {
	uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip_state *s)
{
	s->v0 += s->v1;
	s->v1 = rotl64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl64(s->v2, 32);
}

static inline void sip_absorb(struct sip_state *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

uint64_t mroce_siphash24(const uint8_t key[16], const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	/* The initialisation constants spell "somepseudorandomlygeneratedbytes"
	 * in ASCII, as the paper defines them. */
	struct sip_state s = {
		.v0 = k0 ^ 0x736f6d6570736575ull,
		.v1 = k1 ^ 0x646f72616e646f6dull,
		.v2 = k0 ^ 0x6c7967656e657261ull,
		.v3 = k1 ^ 0x7465646279746573ull,
	};
	size_t left = len;
	uint64_t last;

	for (; left >= 8; left -= 8, p += 8)
		sip_absorb(&s, load_le64(p));

	/* Final word: the remaining 0..7 bytes, length mod 256 in the top
	 * byte, so messages differing only in trailing zeros differ. */
	last = (uint64_t)(len & 0xff) << 56;
	for (size_t i = 0; i < left; i++)
		last |= (uint64_t)p[i] << (8 * i);
	sip_absorb(&s, last);

	s.v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
