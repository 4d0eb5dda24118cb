/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * One case of the spraying-policy cross-check: shared by the test program
 * bpf/mroce_spray_test.bpf.c and tests/bpf/test_spray.c. BPF and userspace.
 */
#ifndef MROCE_BPF_SPRAY_TEST_H
#define MROCE_BPF_SPRAY_TEST_H

#include <linux/types.h>

#include "mroce/abi.h"

struct spray_case {
	struct mroce_sb_conn sb; /* in */
	__u32 hash;		 /* in */
	__u32 now_us;		 /* in */
	__s32 pick;		 /* out: mroce_spray_pick() */
	__u32 cost[2];		 /* out: cost of paths 0 and 1 */
	__u32 hash_out;		 /* out: mroce_spray_hash(hash, now, 7) */
};

_Static_assert(sizeof(struct spray_case) == sizeof(struct mroce_sb_conn) + 24,
	       "spray_case");

#endif /* MROCE_BPF_SPRAY_TEST_H */
