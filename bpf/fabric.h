/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * BPF and userspace: map value layouts of the test fabric's programs
 * (bpf/fabric_*.bpf.c). Fixed-size fields only, so that scripts can write
 * them with `bpftool map update ... value hex ...` and read them back from
 * `bpftool map dump` (which prints the field names from BTF).
 */
#ifndef MROCE_BPF_FABRIC_H
#define MROCE_BPF_FABRIC_H

#include <linux/types.h>

/* fabric_ecn: configuration of one path's phantom queue (array, key 0). */
struct fabric_ecn_cfg {
	__u64 rate_bps;	    /* drain rate in bit/s; 0 = marker off */
	__u64 thresh_bytes; /* mark CE while the phantom queue is longer */
};

/* fabric_ecn: per-CPU counters (array, key 0). */
struct fabric_ecn_counters {
	__u64 packets; /* every packet seen on the port */
	__u64 bytes;
	__u64 ect;	  /* IP packets with ECT(0) or ECT(1) */
	__u64 ce_marked;  /* of those, marked CE here */
	__u64 ce_already; /* arrived with CE set */
	__u64 not_ect;	  /* IP, not ECN-capable: never marked */
};

/* fabric_xsk_rx: per-CPU counters (array, key 0). */
struct fabric_xsk_counters {
	__u64 matched;	  /* UDP frames for the socket */
	__u64 redirected; /* of those, handed to the XSKMAP */
	__u64 passed;	  /* everything else, to the stack */
};

#ifndef __bpf__
_Static_assert(sizeof(struct fabric_ecn_cfg) == 16, "fabric_ecn_cfg");
_Static_assert(sizeof(struct fabric_ecn_counters) == 48, "fabric_ecn_cnt");
_Static_assert(sizeof(struct fabric_xsk_counters) == 24, "fabric_xsk_cnt");
#endif

#endif
