/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The spraying policy of the XDP program: which of our ports an ACK it
 * generates leaves from.
 *
 * Who may include this: BPF programs AND userspace. The engine chooses
 * the paths of its own packets itself (fewest in flight, with its own
 * RTT, loss and ECN state from every ACK, all of which reach it:
 * docs/engine.md), and publishes its ports, generations and probation
 * into the scoreboard (user/engine/metaroce/pub.c); this policy sprays
 * the XDP program's ACKs over the active ones. Userspace compiles it
 * only for the test: tests/bpf/test_spray.c runs both
 * over the same table of scoreboards and requires identical choices. So:
 * integer arithmetic only, no division, loops bounded by MROCE_MAX_PATHS,
 * no state besides the arguments.
 *
 * Policy ("power of two choices" over the scoreboard):
 *  1. Two candidate slots are drawn from the packet's hash (low and high
 *     16 bits, scaled to n_paths by multiply-shift). A candidate that is
 *     not in active_mask moves to the next active slot (wrapping).
 *  2. The candidate with the lower cost wins (ties: the first). Cost is the
 *     smoothed RTT plus a penalty while a loss or an ECN echo is recent,
 *     "recent" meaning within 4 smoothed RTTs (at least
 *     MROCE_SPRAY_MEMORY_MIN_US). A path with no RTT sample yet costs
 *     MROCE_SPRAY_RTT_UNKNOWN_US, so new paths get traffic and samples.
 * Spraying stays spread over all healthy paths (each packet sees two
 * random ones), while a path that is losing or marked loses nearly every
 * comparison until it recovers; the daemon retires paths that stay bad.
 */
#ifndef MROCE_SPRAY_H
#define MROCE_SPRAY_H

#include <linux/types.h>

#include "mroce/abi.h"

#define MROCE_SPRAY_RTT_UNKNOWN_US 50u
#define MROCE_SPRAY_RTT_MAX_US (1u << 24) /* clamp (16 s) */
#define MROCE_SPRAY_MEMORY_MIN_US 500u
#define MROCE_SPRAY_LOSS_PENALTY_US 10000u
#define MROCE_SPRAY_ECN_PENALTY_US 1000u

/* Per-packet entropy from values both sides know (murmur3 finalizer). */
static inline __u32 mroce_spray_hash(__u32 a, __u32 b, __u32 c)
{
	__u32 h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu ^ c;

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* Cost of one path at time now_us (lower is better). */
static inline __u32 mroce_spray_cost(const struct mroce_sb_path *p,
				     __u32 now_us)
{
	__u32 srtt = p->srtt_us;
	__u32 cost, memory;

	if (srtt == 0)
		srtt = MROCE_SPRAY_RTT_UNKNOWN_US;
	if (srtt > MROCE_SPRAY_RTT_MAX_US)
		srtt = MROCE_SPRAY_RTT_MAX_US;
	cost = srtt;
	memory = 4 * srtt;
	if (memory < MROCE_SPRAY_MEMORY_MIN_US)
		memory = MROCE_SPRAY_MEMORY_MIN_US;
	/* time 0 means "never"; differences wrap like every time here */
	if (p->last_loss_us && now_us - p->last_loss_us < memory)
		cost += MROCE_SPRAY_LOSS_PENALTY_US;
	if (p->last_ece_us && now_us - p->last_ece_us < memory)
		cost += MROCE_SPRAY_ECN_PENALTY_US;
	return cost;
}

/* Bit i set: path i may be picked (i < n). */
static inline __u64 mroce_spray_active_mask(const struct mroce_sb_conn *sb,
					    __u32 n)
{
	__u64 mask = sb->active_mask;

	if (n < MROCE_MAX_PATHS)
		mask &= ((__u64)1 << n) - 1;
	return mask;
}

/* Index of the lowest set bit of m (m != 0), branch-free (a de Bruijn
 * multiply and a table): branches here would multiply the paths the BPF
 * verifier walks. */
static const __u8 mroce_spray_debruijn[64] = {
	0,  1,	48, 2,	57, 49, 28, 3,	61, 58, 50, 42, 38, 29, 17, 4,
	62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
	63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
	46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,	13, 8,	7,  6,
};

static inline int mroce_spray_lowest_bit(__u64 m)
{
	return mroce_spray_debruijn[((m & -m) * 0x03f79d71b4cb0a89ull) >> 58];
}

/* First active slot at or after start (start < 64), wrapping, or -1. */
static inline int mroce_spray_next_active(__u64 mask, __u32 start)
{
	__u64 hi = mask & (~0ull << (start & (MROCE_MAX_PATHS - 1)));

	if (hi)
		return mroce_spray_lowest_bit(hi);
	if (mask)
		return mroce_spray_lowest_bit(mask);
	return -1;
}

/* The path for a packet with entropy @hash: an index in [0, n_paths) of
 * an active path, or -1 when the connection has none. */
static inline int mroce_spray_pick(const struct mroce_sb_conn *sb, __u32 hash,
				   __u32 now_us)
{
	__u32 n = sb->n_paths;
	__u32 ca, cb;
	__u64 mask;
	int a, b;

	if (n == 0)
		return -1;
	if (n > MROCE_MAX_PATHS)
		n = MROCE_MAX_PATHS;
	mask = mroce_spray_active_mask(sb, n);
	a = mroce_spray_next_active(mask, ((hash & 0xffff) * n) >> 16);
	if (a < 0)
		return -1;
	b = mroce_spray_next_active(mask, ((hash >> 16) * n) >> 16);
	if (b == a)
		return a;
	ca = mroce_spray_cost(&sb->path[a & (MROCE_MAX_PATHS - 1)], now_us);
	cb = mroce_spray_cost(&sb->path[b & (MROCE_MAX_PATHS - 1)], now_us);
	return cb < ca ? b : a;
}

#endif /* MROCE_SPRAY_H */
