/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mroce kernel/daemon ABI: the BPF maps that the XDP fast path (bpf/) and
 * the daemon share, and the layout of their keys and values.
 *
 * Who may include this: BPF programs AND userspace. Only <linux/types.h>.
 *
 * Every struct carries, per field, WHO WRITES IT:
 *   [D]  the daemon (or mrocectl) writes, BPF only reads;
 *   [B]  BPF writes, the daemon only reads;
 *   [DB] both, with atomic read-modify-write only (see the field).
 * A field marked [D] is never written by BPF and vice versa: this is what
 * makes the lock-free sharing below correct.
 *
 * Maps (pinned by mrocectl under MROCE_PIN_ROOT/<ifname>/<name>):
 *   conns       hash   conn key -> struct mroce_conn_val          [D]
 *   xsks        xskmap rx queue index -> AF_XDP socket             [D]
 *   rx_state    array  slot * MROCE_MAX_PATHS + path
 *                      -> struct mroce_rx_path (BPF_F_MMAPABLE)    [D]+[DB]
 *   scoreboard  array  slot -> struct mroce_sb_conn (BPF_F_MMAPABLE) [D]+[B]
 *   counters    percpu array, one entry: struct mroce_xdp_counters [B]
 *
 * Clock: every time in these maps (and tsval/tsecr on the wire) is
 * CLOCK_MONOTONIC in microseconds truncated to 32 bits, i.e. in BPF
 * (__u32)(bpf_ktime_get_ns() / 1000) and in the daemon
 * (uint32_t)(ts.tv_sec * 1000000 + ts.tv_nsec / 1000) of
 * clock_gettime(CLOCK_MONOTONIC). The daemon MUST stamp tsval with this
 * clock: the XDP program computes RTT = now - tsecr. Compare times only by
 * 32-bit wrapping differences.
 */
#ifndef MROCE_ABI_H
#define MROCE_ABI_H

#include <linux/types.h>

#include "mroce/wire.h"

/* bpffs directory that holds one subdirectory of pinned maps per
 * interface: MROCE_PIN_ROOT "/eth0/counters". */
#define MROCE_PIN_ROOT "/sys/fs/bpf/mroce"

/* Map names (also the pin file names and the skeleton member names). */
#define MROCE_MAP_CONNS "conns"
#define MROCE_MAP_XSKS "xsks"
#define MROCE_MAP_RX_STATE "rx_state"
#define MROCE_MAP_SCOREBOARD "scoreboard"
#define MROCE_MAP_COUNTERS "counters"
#define MROCE_MAP_ACK_LIMIT "ack_limit"

/* Connection slots per interface: the index space of rx_state and
 * scoreboard. 4096 covers the "4,000 concurrent connections" target. */
#define MROCE_MAX_CONNS 4096
/* AF_XDP sockets: one per receive queue. */
#define MROCE_MAX_QUEUES 64

_Static_assert((MROCE_MAX_CONNS & (MROCE_MAX_CONNS - 1)) == 0,
	       "MROCE_MAX_CONNS must be a power of two (BPF masks with it)");
_Static_assert((MROCE_MAX_PATHS & (MROCE_MAX_PATHS - 1)) == 0,
	       "MROCE_MAX_PATHS must be a power of two (BPF masks with it)");

/* ------------------------------------------------------------------ */
/* conns: which packets belong to a connection of this host            */
/* ------------------------------------------------------------------ */

enum mroce_conn_proto {
	MROCE_CONN_METAROCE = 1, /* id = our conn_id (hdr.conn_id) */
	MROCE_CONN_ROCEV2 = 2,	 /* id = destination QPN (24 bits) */
};

struct mroce_conn_key {
	__u32 id;     /* [D] conn_id or QPN, host byte order */
	__u8 proto;   /* [D] enum mroce_conn_proto */
	__u8 resv[3]; /* [D] zero (part of the hash key!) */
};

struct mroce_conn_val {
	__u32 slot;	    /* [D] index into rx_state / scoreboard,
			     * < MROCE_MAX_CONNS */
	__u32 peer_conn_id; /* [D] conn_id the peer expects in the
			     * packets we send it (goes into XDP ACKs) */
	__u32 flags;	    /* [D] MROCE_CONN_F_* */
	__u8 peer_family;   /* [D] MROCE_PEER_IPV4 / _IPV6; 0: unknown */
	__u8 resv[3];	    /* [D] zero */
	__be32 peer_addr[4]; /* [D] the peer's address, network order;
			      * IPv4 in [0], the rest zero */
};

/* The XDP program may answer duplicates and PROBEs of this connection
 * from rx_state, and take telemetry from its ACKs, but only for packets
 * whose source address is peer_addr (family peer_family): whoever has
 * seen a connection id must not be able to make us send ACKs to an
 * address of their choice, nor feed the scoreboard. Without the flag
 * every packet goes to the daemon. */
#define MROCE_CONN_F_ACK_OFFLOAD 0x1

/* mroce_conn_val.peer_family */
#define MROCE_PEER_IPV4 4
#define MROCE_PEER_IPV6 6

/* ------------------------------------------------------------------ */
/* rx_state: the receiver's per-path state, published by the daemon    */
/* ------------------------------------------------------------------ */
/*
 * One entry per (slot, path): index slot * MROCE_MAX_PATHS + path.
 * The daemon publishes here ONLY what it has already placed in memory;
 * the XDP program echoes it in the ACKs it generates and never adds to it,
 * so the kernel never acknowledges data the daemon has not placed.
 *
 * Memory ordering (a sequence lock, daemon = single writer):
 *   writer: seq += 1 (odd); release fence; write the [D] fields;
 *           release fence; seq += 1 (even).
 *   reader (BPF): s1 = seq; if odd give up; copy the [D] fields;
 *           compiler barrier; s2 = seq; use the copy only if s1 == s2.
 * BPF has no read barrier instruction in clang 14: on x86 (TSO) loads are
 * not reordered with loads, so the compiler barrier suffices; weakly
 * ordered architectures need load-acquire (see docs/xdp.md). When the
 * reader gives up, the packet goes to the daemon instead: never a wrong
 * ACK, at worst a slower one.
 *
 * CE marks: each is reported once, by whoever consumes its packet. The
 * daemon's engine counts the marks of the frames it receives and reports
 * them in its ACKs; an ACK the XDP program sends reports only its own
 * trigger's mark (the duplicate it consumed). ce_total counts every
 * CE-marked data packet of the path the program saw (informational).
 */
struct mroce_rx_path {
	__u32 seq;	 /* [D] sequence lock, odd = being written */
	__u32 cum_psn;	 /* [D] next PSN expected on this path */
	__u8 gen;	 /* [D] path generation this state is for */
	__u8 flags;	 /* [D] MROCE_RXP_F_* */
	__u16 resv0;	 /* [D] zero */
	__u32 rate_mbps; /* [D] fair-share hint echoed in ACKs */
	__u8 sack[MROCE_SACK_BYTES]; /* [D] as mroce_ackh.sack */
	__u32 ack_cum;	  /* [D] cum_psn of the daemon's last ACK */
	__u32 ack_lost_us; /* [D] a PROBE (without CHECK) arriving from then
			    * on whose next_psn ack_cum covers shows that
			    * ACK lost: only the daemon answers it (it also
			    * probes its own ports, spec 8.2); 0: no ACK
			    * sent yet */
	__u32 ce_total;	  /* [B] CE marks ever seen (atomic add) */
	__u32 xdp_acks;	  /* [B] ACKs the XDP program sent */
	__u32 xdp_ack_us; /* [B] when it sent the last (bpf_ktime, us) */
	__u32 rx_high;	  /* [D] PSN after the newest data packet the daemon
			   * has taken in (placed, refused or a duplicate) */
	__u32 redirect_psn; /* [B] PSN after the newest data packet the
			     * program passed to the daemon ... */
	__u8 redirect_gen;  /* [B] ... and its generation: while the daemon
			     * has not taken it in (redirect_psn after
			     * rx_high), a PROBE is the daemon's to answer,
			     * or the answer would call it missing */
	__u8 resv3[3];	    /* zero */
};

/* The entry holds valid published state for (slot, path, gen). */
#define MROCE_RXP_F_VALID 0x1

/* ------------------------------------------------------------------ */
/* scoreboard: the sender's per-path telemetry                         */
/* ------------------------------------------------------------------ */
/*
 * One entry per slot holding all its paths, so the spraying policy
 * (include/mroce/spray.h) reads one connection with one lookup.
 * The daemon owns the set of paths ([D]: n_paths, active_mask, each
 * path's sport and gen) and the XDP program fills the telemetry ([B])
 * from every ACK that arrives for an active (path, gen). To re-roll a
 * path the daemon clears its active_mask bit, zeroes the [B] fields, sets
 * the new sport/gen, then sets the bit again (release): an ACK racing
 * with that at worst writes one stale sample into a path that is not yet
 * active. active_mask is one word so that the policy needs no loop over
 * the paths to find the usable ones.
 */
struct mroce_sb_path {
	__u16 sport;	    /* [D] UDP source port of this path */
	__u8 gen;	    /* [D] current generation */
	__u8 flags;	    /* [D] zero (reserved for path states) */
	__u32 timeouts;	    /* [D] retransmission timeouts seen */
	__u32 last_rtt_us;  /* [B] last RTT sample: now - tsecr */
	__u32 srtt_us;	    /* [B] smoothed RTT (gain 1/8), 0 = none */
	__u32 rttvar_us;    /* [B] RTT mean deviation (gain 1/4) */
	__u32 last_ack_us;  /* [B] time the last ACK arrived */
	__u32 last_ece_us;  /* [B] time of the last ACK echoing CE */
	__u32 last_loss_us; /* [B] time of the last ACK with a SACK hole */
	__u32 acks;	    /* [B] ACKs seen (wraps) */
	__u32 ece_marks;    /* [B] sum of echoed ce_count (wraps) */
	__u32 loss_marks;   /* [B] ACKs that showed a hole (wraps) */
	__u32 cum_psn;	    /* [B] cum_psn of the last ACK */
};

struct mroce_sb_conn {
	__u32 n_paths;	   /* [D] slots in use: path[0 .. n_paths) */
	__u32 resv;	   /* zero */
	__u64 active_mask; /* [D] bit i: path i may carry traffic (and
			    * its ACKs feed telemetry) */
	struct mroce_sb_path path[MROCE_MAX_PATHS];
};

/* ------------------------------------------------------------------ */
/* ack_limit: how many ACKs the XDP program may send                   */
/* ------------------------------------------------------------------ */
/*
 * One entry. The knobs ([D]) are written by `mrocectl attach` (the
 * defaults below) and may be changed at any time with bpftool, without a
 * reload; per_ms 0 stops every XDP ACK. The program keeps the count ([B]):
 * a racy count across CPUs (each may overshoot by the ACKs in flight on
 * the others), still a limit. Whatever is over either limit goes to the
 * daemon (counter ack_offload_limited), which answers under its own
 * coalescing. Never more bytes out than in holds anyway: this bounds
 * the packets and the CPU.
 */
struct mroce_ack_limit {
	__u32 per_ms;	   /* [D] XDP ACKs per millisecond, all paths */
	__u32 path_gap_us; /* [D] at least this long between two XDP ACKs
			    * of one path (a burst of duplicates needs
			    * one answer, not one each) */
	__u64 window_ms;   /* [B] the millisecond being counted */
	__u32 used;	   /* [B] XDP ACKs sent in window_ms */
	__u32 resv;	   /* zero */
};

/* Defaults of mrocectl attach: far above what loss recovery needs (1% of
 * 1.5 Mpps is 15 duplicates per ms), far below what a flood could ask. */
#define MROCE_ACK_LIMIT_PER_MS 1000
#define MROCE_ACK_LIMIT_PATH_GAP_US 10

/* The longest duplicate (bytes of its MetaRoCE packet: headers, payload
 * and ICRC) the XDP program answers. It verifies the ICRC first (the
 * trigger's tsval becomes the sender's RTT sample), in BPF at ~1.1 ns a
 * byte (mrocectl bench, docs/xdp.md): at 1024 the check costs ~1 us and
 * the whole XDP answer ~1.8 us; each further KiB would add ~1.1 us. A
 * longer duplicate goes to the daemon (counter ack_offload_unverified),
 * whose engine verifies it with PCLMUL (8 KiB in well under 1 us), drops
 * it when damaged, and answers it at the end of its receive batch. */
#define MROCE_XDP_VERIFY_MAX 1024

/* ------------------------------------------------------------------ */
/* Size checks: BPF and the daemon must agree byte for byte.           */
/* ------------------------------------------------------------------ */
_Static_assert(sizeof(struct mroce_conn_key) == 8, "mroce_conn_key");
_Static_assert(sizeof(struct mroce_conn_val) == 32, "mroce_conn_val");
_Static_assert(sizeof(struct mroce_rx_path) == 80, "mroce_rx_path");
_Static_assert(sizeof(struct mroce_sb_path) == 48, "mroce_sb_path");
_Static_assert(sizeof(struct mroce_ack_limit) == 24, "mroce_ack_limit");
_Static_assert(sizeof(struct mroce_sb_conn) == 16 + 48 * MROCE_MAX_PATHS,
	       "mroce_sb_conn");

#endif /* MROCE_ABI_H */
