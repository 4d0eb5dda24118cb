/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: the one pseudo-random generator of the project (engine and
 * simulator): splitmix64 expands a seed, xoshiro256** generates. Both are
 * deterministic for a seed, which every reproducible test relies on.
 */
#ifndef MROCE_COMMON_RNG_H
#define MROCE_COMMON_RNG_H

#include <stdint.h>

static inline uint64_t mroce_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* splitmix64 never yields four zero words, which xoshiro forbids. */
static inline void mroce_xoshiro_seed(uint64_t s[4], uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s[i] = mroce_splitmix64(&seed);
}

static inline uint64_t mroce_rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t mroce_xoshiro_next(uint64_t s[4])
{
	uint64_t r = mroce_rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = mroce_rotl64(s[3], 45);
	return r;
}

#endif
