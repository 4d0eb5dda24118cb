// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce XDP fast path (attached by `mrocectl attach`).
 *
 * For every frame: parse Ethernet (+ one 802.1Q tag) / IPv4 or IPv6 / UDP.
 * Not UDP to our ports -> XDP_PASS untouched. Ours (MetaRoCE on
 * cfg_mroce_port, RoCEv2 on cfg_rocev2_port) -> validate the transport
 * header, then:
 *  - malformed / unknown version or opcode / unknown connection: XDP_DROP
 *    with one drop_* counter per reason;
 *  - handshake and control: to the daemon (AF_XDP socket of the queue);
 *  - data and PROBE: CE marks counted per path; duplicates of data the
 *    daemon has already placed, and PROBEs, answered here with an ACK
 *    (XDP_TX) from the state the daemon published, unless the ACK would
 *    be longer than the trigger (an unpadded PROBE) or the PROBE shows
 *    the daemon's ACKs lost, only up to MROCE_XDP_VERIFY_MAX bytes and
 *    after their ICRC (a damaged one is dropped); everything else to the
 *    daemon;
 *  - ACK: per-path telemetry into the scoreboard, then to the daemon.
 * docs/xdp.md explains which ACKs the kernel sends and why.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "mroce/abi.h"
#include "mroce/counters.h"
#include "mroce/spray.h"
#include "mroce/wire.h"
#include "crc32.h"
#include "parse.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Knobs, set through skel->rodata before load. */
const volatile __u16 cfg_mroce_port = MROCE_UDP_PORT;
const volatile __u16 cfg_rocev2_port = ROCEV2_UDP_PORT;
const volatile __u8 cfg_ack_ttl = 64;	 /* TTL / hop limit of ACKs */
const volatile __u8 cfg_ack_offload = 1; /* 0: every ACK by the daemon */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * MROCE_MAX_CONNS);
	__type(key, struct mroce_conn_key);
	__type(value, struct mroce_conn_val);
} conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MROCE_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MROCE_MAX_CONNS *MROCE_MAX_PATHS);
	__type(key, __u32);
	__type(value, struct mroce_rx_path);
} rx_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MROCE_MAX_CONNS);
	__type(key, __u32);
	__type(value, struct mroce_sb_conn);
} scoreboard SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mroce_xdp_counters);
} counters SEC(".maps");

/* Time (bpf_ktime_get_ns) before which no packet of an unknown
 * connection reaches the daemon (no_conn_pass). One slot for all CPUs: a
 * racy rate limit is still a rate limit. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} no_conn_gate SEC(".maps");

#define MROCE_XDP_NO_CONN_GAP_NS 100000ull

/* The knobs and the count of XDP ACKs (include/mroce/abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mroce_ack_limit);
} ack_limit SEC(".maps");

/* One chunk of a duplicate read for its ICRC (mroce_trigger_icrc_ok): in a
 * map, because the parser's locals take 424 of the 512 bytes of stack.
 * Per CPU: the program never runs twice at once on one CPU. */
#define DUP_CHUNK 256

struct dup_chunk {
	__u8 b[DUP_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dup_chunk);
} dup_scratch SEC(".maps");

#define barrier() asm volatile("" ::: "memory")
#define READ_ONCE_U32(x) (*(const volatile __u32 *)&(x))

/* What the L2-L4 parse learned about one of our frames. */
struct pkt {
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
	__be16 vlan_tci;
	__u8 has_vlan;
	__u8 ipv6;
	__u8 tos;	 /* IPv4 TOS / IPv6 traffic class */
	__u8 ce;	 /* ECN field == CE */
	__be32 saddr[4]; /* IPv4 uses [0] */
	__be32 daddr[4];
	__be16 sport;
	__u32 l4_off; /* where the UDP payload starts in the frame */
	__u32 l4_len; /* UDP payload bytes (from the UDP header) */
};

static __always_inline __u32 now_us(void)
{
	return (__u32)(bpf_ktime_get_ns() / 1000);
}

/* Hand the frame to the AF_XDP socket of its receive queue. With no socket
 * bound there, drop and count: passing would feed our traffic to the
 * kernel stack, which answers it with ICMP port unreachable. */
static __always_inline int to_daemon(struct xdp_md *ctx,
				     struct mroce_xdp_counters *st, __u64 *ctr)
{
	__u32 q = ctx->rx_queue_index;

	if (!bpf_map_lookup_elem(&xsks, &q)) {
		st->drop_no_xsk++;
		return XDP_DROP;
	}
	(*ctr)++;
	return bpf_redirect_map(&xsks, q, XDP_DROP);
}

/* ------------------------------------------------------------------ */
/* ACK generation                                                      */
/* ------------------------------------------------------------------ */

/* The MetaRoCE part of a generated ACK, built on the stack. */
struct ack_l4 {
	struct mroce_hdr hdr;
	struct mroce_ackh ack;
	__be32 icrc;
} __attribute__((packed));

_Static_assert(sizeof(struct ack_l4) == 64, "ack_l4");

struct ipv6_pseudo {
	__be32 saddr[4];
	__be32 daddr[4];
	__be32 len;
	__be32 nexthdr;
};

/* What the ACK will say, gathered before the frame is overwritten. */
struct ack_args {
	__u32 peer_conn_id;
	__u32 slot;
	__u8 path, gen;
	__u8 ack_flags;
	__u8 from_peer : 1; /* the frame came from the connection's peer */
	__u8 check : 1;	    /* the trigger is a PROBE with MROCE_F_CHECK */
	__u32 tsecr;
	__u32 hash; /* spraying entropy */
	__u32 cum_psn;
	__u32 rate_mbps;
	__u8 sack[MROCE_SACK_BYTES];
};

/*
 * The heavier pure computations are global (non-static, noinline)
 * functions: the verifier checks each of them once, instead of once per
 * path through the parser that reaches them.
 */

/* Source port (host order) for a generated ACK: the spraying policy over
 * our own paths towards the peer; 0 when the daemon has set up none. */
__attribute__((noinline)) int mroce_ack_sport(__u32 slot, __u32 hash)
{
	struct mroce_sb_conn *sb;
	int idx;

	slot &= MROCE_MAX_CONNS - 1;
	sb = bpf_map_lookup_elem(&scoreboard, &slot);
	if (!sb)
		return 0;
	idx = mroce_spray_pick(sb, hash, now_us());
	if (idx < 0)
		return 0;
	return sb->path[idx & (MROCE_MAX_PATHS - 1)].sport;
}

/* ICRC of a built ACK, stored into m->icrc. */
__attribute__((noinline)) int mroce_ack_icrc(struct ack_l4 *m)
{
	if (!m)
		return -1;
	m->icrc = bpf_htonl(
		mroce_bpf_crc32((const __u8 *)m, sizeof(*m) - MROCE_ICRC_LEN));
	return 0;
}

/* UDP checksum of an IPv6 ACK, as stored (network order), never 0. */
__attribute__((noinline)) int
mroce_ack_csum6(struct ipv6_pseudo *ph, struct udphdr *uh, struct ack_l4 *m)
{
	__u16 c;

	if (!ph || !uh || !m)
		return 0;
	c = csum_fold(csum_words(ph, sizeof(*ph) / 2) + csum_words(uh, 4) +
		      csum_words(m, sizeof(*m) / 2));
	return c ? c : 0xffff;
}

/* Verify a received ACK's ICRC. 1 = good. */
__attribute__((noinline)) int mroce_ack_icrc_ok(struct ack_l4 *m)
{
	if (!m)
		return 0;
	return mroce_bpf_crc32((const __u8 *)m, sizeof(*m) - MROCE_ICRC_LEN) ==
	       bpf_ntohl(m->icrc);
}

/* The running CRC crc (mroce_bpf_crc32_update) advanced over the first
 * len bytes of c (at most DUP_CHUNK). */
__attribute__((noinline)) int mroce_crc32_chunk(struct dup_chunk *c, __u32 crc,
						__u32 len)
{
	if (!c)
		return 0;
	if (len > DUP_CHUNK)
		len = DUP_CHUNK;
	return (int)mroce_bpf_crc32_update(crc, c->b, len);
}

/* Verify the ICRC of a duplicate: len bytes of MetaRoCE packet (at most
 * MROCE_XDP_VERIFY_MAX) at off in the frame, the last 4 the ICRC.
 * The bytes are read DUP_CHUNK at a time with bpf_xdp_load_bytes(), which
 * also reads fragments. 1 = good. */
__attribute__((noinline)) int mroce_trigger_icrc_ok(struct xdp_md *ctx, __u32 off,
						__u32 len)
{
	struct dup_chunk *c;
	__u32 zero = 0, crc = 0xffffffffu, done = 0, rest;
	__be32 icrc;

	if (len < MROCE_ICRC_LEN || len > MROCE_XDP_VERIFY_MAX)
		return 0;
	c = bpf_map_lookup_elem(&dup_scratch, &zero);
	if (!c)
		return 0;
	len -= MROCE_ICRC_LEN;
	for (__u32 i = 0; i < MROCE_XDP_VERIFY_MAX / DUP_CHUNK; i++) {
		if (done + DUP_CHUNK > len)
			break;
		if (bpf_xdp_load_bytes(ctx, off + done, c->b, DUP_CHUNK))
			return 0;
		crc = (__u32)mroce_crc32_chunk(c, crc, DUP_CHUNK);
		done += DUP_CHUNK;
	}
	rest = len - done;
	if (rest >= DUP_CHUNK) /* cannot be (len bounded): for the verifier */
		return 0;
	if (rest) {
		if (bpf_xdp_load_bytes(ctx, off + done, c->b, rest))
			return 0;
		crc = (__u32)mroce_crc32_chunk(c, crc, rest);
	}
	if (bpf_xdp_load_bytes(ctx, off + len, &icrc, sizeof(icrc)))
		return 0;
	return (crc ^ 0xffffffffu) == bpf_ntohl(icrc);
}

/* The MetaRoCE part of the ACK described by a, and its ICRC. It reports
 * only its trigger's CE mark (ce): the marks of packets that reached the
 * daemon are its engine's to report (abi.h), each exactly once. */
static __always_inline void fill_ack_l4(struct ack_l4 *m,
					const struct ack_args *a,
					struct mroce_rx_path *rp, __u8 ce)
{
	__sync_fetch_and_add(&rp->xdp_acks, 1);

	m->hdr.version = MROCE_WIRE_VERSION;
	m->hdr.opcode = MROCE_OP_ACK;
	m->hdr.hdr_words =
		(sizeof(struct mroce_hdr) + sizeof(struct mroce_ackh)) / 4;
	m->hdr.conn_id = bpf_htonl(a->peer_conn_id);
	m->hdr.path = a->path;
	m->hdr.path_gen = a->gen;
	m->ack.cum_psn = bpf_htonl(a->cum_psn);
	m->ack.tsecr = bpf_htonl(a->tsecr);
	m->ack.rate_mbps = bpf_htonl(a->rate_mbps);
	m->ack.ce_count = bpf_htons(ce);
	m->ack.ack_flags = a->ack_flags | (ce ? MROCE_ACKF_ECE : 0);
	__builtin_memcpy(m->ack.sack, a->sack, MROCE_SACK_BYTES);
	mroce_ack_icrc(m);
}

/* Ethernet (+ VLAN tag) of the ACK: back to where it came from, same
 * VLAN. Returns where the IP header goes, NULL past the end (cannot
 * happen after the resize: a bounds check for the verifier). */
static __always_inline void *write_ack_l2(void *data, void *end,
					  const struct pkt *p)
{
	struct ethhdr *eth = data;
	void *pos;

	if ((void *)(eth + 1) > end)
		return NULL;
	__builtin_memcpy(eth->h_dest, p->smac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p->dmac, ETH_ALEN);
	pos = data + 14;
	if (p->has_vlan) {
		struct vlan_tag *vt = pos;

		if ((void *)(vt + 1) > end)
			return NULL;
		vt->tci = p->vlan_tci;
		vt->proto = bpf_htons(p->ipv6 ? ETH_P_IPV6 : ETH_P_IP);
		eth->h_proto = bpf_htons(ETH_P_8021Q);
		pos += 4;
	} else {
		eth->h_proto = bpf_htons(p->ipv6 ? ETH_P_IPV6 : ETH_P_IP);
	}
	return pos;
}

/* IPv4 header of the ACK at pos. Returns where UDP goes, or NULL (a
 * bounds check for the verifier, as above). */
static __always_inline void *write_ack_ipv4(void *pos, void *end,
					    const struct pkt *p)
{
	struct iphdr ih = {};

	ih.version = 4;
	ih.ihl = 5;
	/* keep DSCP, not ECN-capable: ACKs are never marked */
	ih.tos = p->tos & 0xfc;
	ih.tot_len = bpf_htons(20 + 8 + sizeof(struct ack_l4));
	ih.frag_off = bpf_htons(0x4000); /* DF */
	ih.ttl = cfg_ack_ttl;
	ih.protocol = IPPROTO_UDP;
	ih.saddr = p->daddr[0];
	ih.daddr = p->saddr[0];
	ih.check = csum_fold(csum_words(&ih, 10));
	if (pos + 20 + 8 + sizeof(struct ack_l4) > end)
		return NULL;
	__builtin_memcpy(pos, &ih, 20);
	return pos + 20;
}

/* IPv6 header of the ACK at pos, and the UDP checksum (mandatory on
 * IPv6) into uh. Returns where UDP goes, or NULL (verifier). */
static __always_inline void *write_ack_ipv6(void *pos, void *end,
					    const struct pkt *p,
					    struct udphdr *uh,
					    struct ack_l4 *m)
{
	struct ipv6_pseudo ph;
	__be32 vtcfl = bpf_htonl(6u << 28 | (__u32)(p->tos & 0xfc) << 20);

	if (pos + 40 + 8 + sizeof(*m) > end)
		return NULL;
	__builtin_memcpy(pos, &vtcfl, 4);
	*(__be16 *)(pos + 4) = uh->len;
	*(__u8 *)(pos + 6) = IPPROTO_UDP;
	*(__u8 *)(pos + 7) = cfg_ack_ttl;
	__builtin_memcpy(pos + 8, p->daddr, 16);
	__builtin_memcpy(pos + 24, p->saddr, 16);
	__builtin_memcpy(ph.saddr, p->daddr, 16);
	__builtin_memcpy(ph.daddr, p->saddr, 16);
	ph.len = bpf_htonl(8 + sizeof(*m));
	ph.nexthdr = bpf_htonl(IPPROTO_UDP);
	uh->check = mroce_ack_csum6(&ph, uh, m);
	return pos + 40;
}

/* Bytes of the ACK frame that would answer p (no IP options). */
static __always_inline __u32 ack_frame_len(const struct pkt *p)
{
	return (p->has_vlan ? 18 : 14) + (p->ipv6 ? 40 : 20) + 8 +
	       sizeof(struct ack_l4);
}

/* Rewrite the frame in place into the ACK described by a, addressed back
 * to where p came from. Returns XDP_TX, or -1 when the frame could not be
 * resized (nothing was changed then: the caller hands it to the daemon).
 * The XDP_DROP returns below are bounds checks for the verifier that
 * cannot fail after the checks before the resize. */
static __always_inline int write_ack(struct xdp_md *ctx, const struct pkt *p,
				     const struct ack_args *a,
				     struct mroce_rx_path *rp)
{
	__u32 want = ack_frame_len(p);
	__u32 have = bpf_xdp_get_buff_len(ctx), linear;
	struct ack_l4 m = {};
	struct udphdr uh;
	int sport;
	void *end, *pos;

	/* With fragments, the ACK must fit the linear part (XDP cannot pull
	 * bytes out of fragments; shrinking drops them). True on every
	 * driver: its linear part holds far more than the ~150 bytes of an
	 * ACK. Without fragments the resize grows or shrinks the linear
	 * part itself. */
	linear = ctx->data_end - ctx->data;
	if (have != linear && want > linear)
		return -1;
	if (bpf_xdp_adjust_tail(ctx, (int)want - (int)have))
		return -1;
	fill_ack_l4(&m, a, rp, p->ce);

	sport = mroce_ack_sport(a->slot, a->hash);
	/* no path set up: answer on the port the request came from */
	uh.source = sport ? bpf_htons(sport) : p->sport;
	uh.dest = bpf_htons(cfg_mroce_port);
	uh.len = bpf_htons(8 + sizeof(m));
	uh.check = 0;

	/* From here on the bounds checks are for the verifier: the frame
	 * is exactly `want` linear bytes now. */
	end = (void *)(long)ctx->data_end;
	pos = write_ack_l2((void *)(long)ctx->data, end, p);
	if (!pos)
		return XDP_DROP;
	if (!p->ipv6)
		pos = write_ack_ipv4(pos, end, p);
	else
		pos = write_ack_ipv6(pos, end, p, &uh, &m);
	if (!pos || pos + 8 + sizeof(m) > end)
		return XDP_DROP;
	__builtin_memcpy(pos, &uh, 8);
	__builtin_memcpy(pos + 8, &m, sizeof(m));
	return XDP_TX;
}

/* *valid of read_rx_state(): the state is valid, but the trigger, a
 * PROBE, shows the daemon's ACKs lost, or data of its path passed to the
 * daemon before it is not taken in yet. */
#define RXS_PROBE_ACKS_LOST 2
#define RXS_PROBE_QUEUED 3

/* Copy the published state of a path under its sequence lock, for a
 * trigger of generation gen asking about psn at now. 0: copied
 * (a->cum_psn/rate/sack, *valid: 1 valid, 0 not, RXS_PROBE_ACKS_LOST);
 * -1: being written. */
static __always_inline int read_rx_state(struct mroce_rx_path *rp,
					 struct ack_args *a, __u8 gen,
					 __u32 psn, __u32 now, int *valid)
{
	__u32 s1 = READ_ONCE_U32(rp->seq), s2, ack_cum, lost_us, rx_high;
	__u8 flags, sgen;

	if (s1 & 1)
		return -1;
	barrier();
	a->cum_psn = rp->cum_psn;
	a->rate_mbps = rp->rate_mbps;
	ack_cum = rp->ack_cum;
	lost_us = rp->ack_lost_us;
	rx_high = rp->rx_high;
	flags = rp->flags;
	sgen = rp->gen;
	__builtin_memcpy(a->sack, rp->sack, MROCE_SACK_BYTES);
	barrier();
	s2 = READ_ONCE_U32(rp->seq);
	if (s1 != s2)
		return -1;
	*valid = (flags & MROCE_RXP_F_VALID) && sgen == gen;
	/* A path is FIFO: data that arrived before the PROBE and still
	 * waits for the daemon would be reported missing, and resent. */
	if (*valid && a->ack_flags == MROCE_ACKF_PROBE &&
	    rp->redirect_gen == gen &&
	    mroce_psn_diff(READ_ONCE_U32(rp->redirect_psn), rx_high) > 0) {
		*valid = RXS_PROBE_QUEUED;
		return 0;
	}
	/* A PROBE (not a port check) for data the daemon's last ACK
	 * covered, arriving after that ACK's coalescing delay and the
	 * endpoints' jitter, shows that ACK lost: its answer leaves from two
	 * ports and the daemon checks its own ports (spec 8.2). */
	if (*valid && a->ack_flags == MROCE_ACKF_PROBE && !a->check &&
	    lost_us && (__s32)(now - lost_us) >= 0 &&
	    mroce_psn_diff(ack_cum, psn) >= 0)
		*valid = RXS_PROBE_ACKS_LOST;
	return 0;
}

/* 1 when psn was already placed according to a (before cum_psn, or its
 * SACK bit is set). */
static __always_inline int is_duplicate(const struct ack_args *a, __u32 psn)
{
	__s32 d = mroce_psn_diff(psn, a->cum_psn);
	__u32 bit;

	if (d < 0)
		return 1;
	if (d == 0 || d > MROCE_SACK_BITS)
		return 0;
	bit = (__u32)(d - 1) & (MROCE_SACK_BITS - 1);
	return (a->sack[bit >> 3] >> (bit & 7)) & 1;
}

/* ------------------------------------------------------------------ */
/* MetaRoCE                                                            */
/* ------------------------------------------------------------------ */

static __always_inline struct mroce_rx_path *rx_path(__u32 slot, __u8 path)
{
	__u32 idx = (slot & (MROCE_MAX_CONNS - 1)) * MROCE_MAX_PATHS +
		    (path & (MROCE_MAX_PATHS - 1));

	return bpf_map_lookup_elem(&rx_state, &idx);
}

/* Telemetry from an ACK (we are the data sender): RTT sample, smoothed
 * RTT, ECN echo, SACK holes, last-ACK time, into scoreboard[slot].
 * Returns 1 for an RTT sample, 0 for none, -1 for a stale path. */
__attribute__((noinline)) int mroce_ack_telemetry(__u32 slot, __u32 pathgen,
						  struct mroce_ackh *ack)
{
	__u32 key = slot & (MROCE_MAX_CONNS - 1);
	struct mroce_sb_conn *sb;
	struct mroce_sb_path *sp;
	__u32 now = now_us(), rtt, ce;
	__u64 holes[MROCE_SACK_BYTES / 8];
	int sample = 0;
	__s32 err;

	if (!ack)
		return 0;
	sb = bpf_map_lookup_elem(&scoreboard, &key);
	if (!sb)
		return 0;
	sp = &sb->path[pathgen & (MROCE_MAX_PATHS - 1)];
	if (!(sb->active_mask >> (pathgen & (MROCE_MAX_PATHS - 1)) & 1) ||
	    sp->gen != (pathgen >> 8))
		return -1;
	now |= !now; /* 0 means "never" in the scoreboard */
	rtt = now - bpf_ntohl(ack->tsecr);
	/* a sample over ~17 minutes is a garbage tsecr, not an RTT */
	if (rtt < (1u << 30)) {
		sp->last_rtt_us = rtt;
		if (!sp->srtt_us) {
			sp->srtt_us = rtt ? rtt : 1;
			sp->rttvar_us = rtt / 2;
		} else {
			err = (__s32)(rtt - sp->srtt_us);
			sp->srtt_us += err >> 3;
			if (!sp->srtt_us)
				sp->srtt_us = 1;
			if (err < 0)
				err = -err;
			sp->rttvar_us += (err - (__s32)sp->rttvar_us) >> 2;
		}
		sample = 1;
	}
	sp->last_ack_us = now;
	sp->cum_psn = bpf_ntohl(ack->cum_psn);
	__sync_fetch_and_add(&sp->acks, 1);
	ce = bpf_ntohs(ack->ce_count);
	if (ce || (ack->ack_flags & MROCE_ACKF_ECE)) {
		__sync_fetch_and_add(&sp->ece_marks, ce);
		sp->last_ece_us = now;
	}
	/* A SACK bit above cum_psn means cum_psn itself is missing: on a
	 * FIFO path that is a loss, not reordering. */
	__builtin_memcpy(holes, ack->sack, sizeof(holes));
	if (holes[0] | holes[1] | holes[2] | holes[3]) {
		__sync_fetch_and_add(&sp->loss_marks, 1);
		sp->last_loss_us = now;
	}
	return sample;
}

/* A packet whose conn_id is not ours. A NAK NO_CONN always names the id
 * we address the peer by, never ours: the daemon's engine checks it
 * against its connection (spec 9.5). Data and PROBEs of an unknown
 * connection come from a peer that holds a connection we lost (we
 * restarted): one per MROCE_XDP_NO_CONN_GAP_NS goes to the daemon, whose
 * engine answers NAK NO_CONN; the rest, and everything else, is dropped
 * here. */
static __always_inline int no_conn_pass(struct mroce_hdr *h, __u8 op,
					 __u16 ext, void *end)
{
	struct mroce_nakh *nak = (void *)(h + 1);
	__u32 zero = 0;
	__u64 *gate, now;

	if (op == MROCE_OP_NAK)
		return (void *)(nak + 1) <= end &&
		       nak->code == MROCE_NAK_NO_CONN;
	if (!(ext & MROCE_EXT_SEQ) && op != MROCE_OP_PROBE)
		return 0;
	gate = bpf_map_lookup_elem(&no_conn_gate, &zero);
	if (!gate)
		return 0;
	now = bpf_ktime_get_ns();
	if ((__s64)(now - *gate) < 0)
		return 0;
	*gate = now + MROCE_XDP_NO_CONN_GAP_NS;
	return 1;
}

/* The fixed header of a MetaRoCE packet, checked: known version and
 * opcode (before any length arithmetic), header and payload lengths that
 * add up to the UDP payload. NULL when dropped (counted). */
static __always_inline struct mroce_hdr *
pull_mroce_checked(struct mroce_xdp_counters *st, struct cursor *c,
		   const struct pkt *p)
{
	struct mroce_hdr *h;
	__u32 hlen, plen;
	__u16 ext;
	__u8 op;

	if (p->l4_len < sizeof(*h) + MROCE_ICRC_LEN) {
		st->drop_trunc_hdr++;
		return NULL;
	}
	h = pull_mroce(c);
	if (!h) {
		st->drop_trunc_hdr++;
		return NULL;
	}
	if (h->version != MROCE_WIRE_VERSION) {
		st->drop_bad_version++;
		return NULL;
	}
	op = h->opcode;
	ext = mroce_op_ext(op); /* before any length arithmetic */
	if (!ext) {
		st->drop_bad_opcode++;
		return NULL;
	}
	hlen = mroce_ext_len(ext);
	if ((__u32)h->hdr_words * 4 != hlen) {
		st->drop_bad_hdr_len++;
		return NULL;
	}
	if (p->l4_len < hlen + MROCE_ICRC_LEN) {
		st->drop_trunc_hdr++;
		return NULL;
	}
	plen = bpf_ntohs(h->payload_len);
	if (plen && !mroce_op_has_payload(op)) {
		st->drop_bad_payload++;
		return NULL;
	}
	if (plen > MROCE_MAX_PAYLOAD ||
	    hlen + plen + MROCE_ICRC_LEN != p->l4_len) {
		st->drop_bad_len++;
		return NULL;
	}
	return h;
}

/* The frame came from the connection's peer (mroce_conn_val.peer_*). */
static __always_inline int from_peer(const struct pkt *p,
				      const struct mroce_conn_val *conn)
{
	if (p->ipv6)
		return conn->peer_family == MROCE_PEER_IPV6 &&
		       p->saddr[0] == conn->peer_addr[0] &&
		       p->saddr[1] == conn->peer_addr[1] &&
		       p->saddr[2] == conn->peer_addr[2] &&
		       p->saddr[3] == conn->peer_addr[3];
	return conn->peer_family == MROCE_PEER_IPV4 &&
	       p->saddr[0] == conn->peer_addr[0];
}

/* An ACK of a known connection: ICRC verified (a forged or damaged ACK
 * must not move the scoreboard), from the peer, its telemetry, then to
 * the daemon. */
static __always_inline int rx_ack(struct xdp_md *ctx,
				  struct mroce_xdp_counters *st,
				  struct cursor *c, struct mroce_hdr *h,
				  const struct ack_args *a)
{
	struct ack_l4 m;
	int rc;

	if ((void *)h + sizeof(m) > c->end) {
		st->drop_trunc_hdr++;
		return XDP_DROP;
	}
	__builtin_memcpy(&m, h, sizeof(m));
	if (!mroce_ack_icrc_ok(&m)) {
		st->drop_bad_icrc++;
		return XDP_DROP;
	}
	/* Telemetry only from the peer; the daemon drops what is not. */
	if (!a->from_peer) {
		st->ack_not_peer++;
		return to_daemon(ctx, st, &st->redirect_ack);
	}
	rc = mroce_ack_telemetry(a->slot, a->path | (__u32)a->gen << 8, &m.ack);
	if (rc > 0)
		st->ack_rtt_samples++;
	else if (rc < 0)
		st->ack_stale_gen++;
	return to_daemon(ctx, st, &st->redirect_ack);
}

/* What an ACK from here would answer: a data packet (its PSN, tsval) or
 * a PROBE (ICRC verified: its tsecr becomes an RTT sample at the sender).
 * Fills *psn, a->tsecr, a->ack_flags and the counter of the redirect.
 * -1 to go on, else the verdict (a drop). */
static __always_inline int ack_trigger(struct mroce_xdp_counters *st,
				       struct cursor *c, struct mroce_hdr *h,
				       __u16 ext, struct ack_args *a,
				       __u32 *psn, __u64 **redirect_ctr)
{
	struct mroce_probeh *pr;

	if (ext & MROCE_EXT_SEQ) {
		struct mroce_seqh *sq = cur_pull(c, sizeof(*sq));

		if (!sq) {
			st->drop_trunc_hdr++;
			return XDP_DROP;
		}
		*redirect_ctr = &st->redirect_data;
		*psn = bpf_ntohl(sq->psn);
		a->tsecr = bpf_ntohl(sq->tsval);
		a->ack_flags = MROCE_ACKF_DUP;
		return -1;
	}
	pr = cur_pull(c, sizeof(*pr));
	if (!pr) {
		st->drop_trunc_hdr++;
		return XDP_DROP;
	}
	*redirect_ctr = &st->redirect_ctrl;
	*psn = bpf_ntohl(pr->next_psn);
	a->tsecr = bpf_ntohl(pr->tsval);
	a->ack_flags = MROCE_ACKF_PROBE;
	return -1;
}

/* May one more ACK leave from here at now, on path rp (ack_limit)? The
 * limit's entry when it may (ack_count() counts the ACK once it is sure
 * to leave), else NULL. */
static __always_inline struct mroce_ack_limit *
ack_allowed(struct mroce_rx_path *rp, __u32 now)
{
	struct mroce_ack_limit *l;
	__u32 zero = 0;
	__u64 ms;

	l = bpf_map_lookup_elem(&ack_limit, &zero);
	if (!l || !l->per_ms)
		return NULL;
	if (now - READ_ONCE_U32(rp->xdp_ack_us) < l->path_gap_us)
		return NULL;
	ms = bpf_ktime_get_ns() / 1000000;
	if (l->window_ms != ms) {
		l->window_ms = ms;
		l->used = 0;
	}
	if (l->used >= l->per_ms)
		return NULL;
	return l;
}

/* An ACK leaves from here on path rp at now: counted in ack_limit. */
static __always_inline void ack_count(struct mroce_ack_limit *l,
				      struct mroce_rx_path *rp, __u32 now)
{
	__sync_fetch_and_add(&l->used, 1);
	rp->xdp_ack_us = now;
}

/* Data or a PROBE of a known connection: CE marks counted on its path,
 * then answered here (XDP_TX) when it came from the connection's peer, is
 * a duplicate of placed data or a PROBE, the daemon published valid
 * state, the ACK is not longer than the trigger, a duplicate is short
 * enough to verify here and ack_limit allows it, and a duplicate's ICRC
 * is right (else it is dropped); else to the daemon. */
static __always_inline int ack_or_daemon(struct xdp_md *ctx,
					 struct mroce_xdp_counters *st,
					 const struct pkt *p,
					 const struct mroce_conn_val *conn,
					 struct ack_args *a, __u32 psn,
					 __u64 *redirect_ctr)
{
	struct mroce_ack_limit *l;
	struct mroce_rx_path *rp;
	__u32 in_len;
	int valid, rc;
	__u32 now;

	rp = rx_path(a->slot, a->path);
	if (!rp)
		return to_daemon(ctx, st, redirect_ctr);
	if (p->ce)
		__sync_fetch_and_add(&rp->ce_total, 1);
	if (!cfg_ack_offload || !(conn->flags & MROCE_CONN_F_ACK_OFFLOAD))
		return to_daemon(ctx, st, redirect_ctr);
	/* The newest data of the path on its way to the daemon (a PROBE
	 * behind it must wait for the daemon, read_rx_state). */
	if (a->ack_flags == MROCE_ACKF_DUP &&
	    (rp->redirect_gen != a->gen ||
	     mroce_psn_diff(psn + 1, rp->redirect_psn) > 0)) {
		rp->redirect_psn = psn + 1;
		rp->redirect_gen = a->gen;
	}
	/* An answer goes to the frame's source: only to the peer. */
	if (!a->from_peer) {
		st->ack_not_peer++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	now = now_us();
	if (read_rx_state(rp, a, a->gen, psn, now, &valid)) {
		st->ack_offload_busy++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	if (valid == RXS_PROBE_ACKS_LOST) {
		st->ack_probe_acks_lost++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	if (valid == RXS_PROBE_QUEUED) {
		st->ack_probe_queued++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	/* New data always goes to the daemon: only it can place it, and only
	 * what it placed may be acknowledged. */
	if (!valid || (a->ack_flags == MROCE_ACKF_DUP && !is_duplicate(a, psn)))
		return to_daemon(ctx, st, redirect_ctr);
	/* Never send more bytes than came in: an answer longer than its
	 * trigger (every PROBE's, a short duplicate's) would make this
	 * program an amplifier for whoever can send us small packets. The
	 * daemon answers those, under its own limits. */
	if (ack_frame_len(p) > bpf_xdp_get_buff_len(ctx)) {
		st->ack_offload_larger++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	/* Its tsval becomes the sender's RTT sample: a trigger is answered
	 * only after its ICRC, which costs about 1 ns a byte here, so only a
	 * short one; the daemon verifies and answers the rest. */
	if (p->l4_len > MROCE_XDP_VERIFY_MAX) {
		st->ack_offload_unverified++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	l = ack_allowed(rp, now);
	if (!l) {
		st->ack_offload_limited++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	/* Last, so that what goes to the daemon anyway costs no CRC, and a
	 * damaged trigger does not count against ack_limit. */
	if (!mroce_trigger_icrc_ok(ctx, p->l4_off, p->l4_len)) {
		st->drop_bad_icrc++;
		return XDP_DROP;
	}
	ack_count(l, rp, now);
	a->hash = mroce_spray_hash(a->peer_conn_id,
				   a->path | (__u32)a->gen << 8, psn);
	a->ack_flags |= MROCE_ACKF_XDP;
	in_len = bpf_xdp_get_buff_len(ctx);
	rc = write_ack(ctx, p, a, rp);
	if (rc < 0) {
		st->ack_offload_busy++;
		return to_daemon(ctx, st, redirect_ctr);
	}
	if (rc == XDP_TX) {
		st->tx_ack_bytes += bpf_xdp_get_buff_len(ctx);
		st->tx_ack_trigger_bytes += in_len;
		if (a->ack_flags & MROCE_ACKF_DUP)
			st->tx_ack_dup++;
		else
			st->tx_ack_probe++;
	}
	return rc;
}

static __always_inline int handle_metaroce(struct xdp_md *ctx,
					   struct mroce_xdp_counters *st,
					   struct cursor *c, struct pkt *p)
{
	struct mroce_conn_key key = {};
	struct mroce_conn_val *conn;
	struct mroce_hdr *h;
	struct ack_args a = {};
	__u64 *redirect_ctr;
	__u32 psn;
	__u16 ext;
	__u8 op;
	int rc;

	st->rx_metaroce++;
	h = pull_mroce_checked(st, c, p);
	if (!h)
		return XDP_DROP;
	op = h->opcode;
	ext = mroce_op_ext(op);

	/* Handshake, close: the daemon's business, known connection or not. */
	if (ext & MROCE_EXT_CONN)
		return to_daemon(ctx, st, &st->redirect_ctrl);

	key.id = bpf_ntohl(h->conn_id);
	key.proto = MROCE_CONN_METAROCE;
	conn = bpf_map_lookup_elem(&conns, &key);
	if (!conn) {
		if (no_conn_pass(h, op, ext, c->end))
			return to_daemon(ctx, st, &st->redirect_ctrl);
		st->drop_no_conn++;
		return XDP_DROP;
	}
	a.peer_conn_id = conn->peer_conn_id;
	a.slot = conn->slot;
	a.path = h->path & (MROCE_MAX_PATHS - 1);
	a.gen = h->path_gen;
	a.from_peer = from_peer(p, conn);
	a.check = !!(h->flags & MROCE_F_CHECK);

	if (op == MROCE_OP_ACK)
		return rx_ack(ctx, st, c, h, &a);
	if (op == MROCE_OP_NAK)
		return to_daemon(ctx, st, &st->redirect_ack);
	if (!(ext & MROCE_EXT_SEQ) && op != MROCE_OP_PROBE)
		return to_daemon(ctx, st, &st->redirect_ctrl); /* REROLL */
	rc = ack_trigger(st, c, h, ext, &a, &psn, &redirect_ctr);
	if (rc >= 0)
		return rc;
	return ack_or_daemon(ctx, st, p, conn, &a, psn, redirect_ctr);
}

/* ------------------------------------------------------------------ */
/* RoCEv2                                                              */
/* ------------------------------------------------------------------ */

/* Extension mask | 0x80 of a RoCEv2 opcode we speak, 0 if unknown. */
static __always_inline __u8 rocev2_op_ext(__u8 op)
{
	switch (op) {
#define RV2_X_CASE(name, code, ext, payload)                                   \
	case code:                                                             \
		return 0x80 | (ext) | ((payload) ? 0x40 : 0);
		ROCEV2_OPS(RV2_X_CASE)
#undef RV2_X_CASE
	default:
		return 0;
	}
}

static __always_inline int handle_rocev2(struct xdp_md *ctx,
					 struct mroce_xdp_counters *st,
					 struct cursor *c, struct pkt *p)
{
	struct mroce_conn_key key = {};
	struct rocev2_bth *bth;
	__u32 hlen = sizeof(*bth), rest;
	__u8 ext;

	st->rx_rocev2++;
	if (p->l4_len < sizeof(*bth) + MROCE_ICRC_LEN) {
		st->drop_trunc_hdr++;
		return XDP_DROP;
	}
	bth = pull_bth(c);
	if (!bth) {
		st->drop_trunc_hdr++;
		return XDP_DROP;
	}
	if (bth->flags & ROCEV2_BTH_TVER_MASK) {
		st->drop_bad_version++;
		return XDP_DROP;
	}
	ext = rocev2_op_ext(bth->opcode);
	if (!ext) {
		st->drop_bad_opcode++;
		return XDP_DROP;
	}
	if (ext & ROCEV2_EXT_RETH)
		hlen += sizeof(struct rocev2_reth);
	if (ext & ROCEV2_EXT_AETH)
		hlen += sizeof(struct rocev2_aeth);
	if (ext & ROCEV2_EXT_IMM)
		hlen += sizeof(struct rocev2_immdt);
	if (p->l4_len < hlen + MROCE_ICRC_LEN) {
		st->drop_trunc_hdr++;
		return XDP_DROP;
	}
	rest = p->l4_len - hlen - MROCE_ICRC_LEN; /* payload + pad */
	if (!(ext & 0x40) && rest) {
		st->drop_bad_payload++;
		return XDP_DROP;
	}
	/* payload + pad is a multiple of 4 bytes, and holds the pad */
	if ((rest & 3) || rest < ((bth->flags & ROCEV2_BTH_PAD_MASK) >>
				  ROCEV2_BTH_PAD_SHIFT)) {
		st->drop_bad_len++;
		return XDP_DROP;
	}
	key.id = bpf_ntohl(bth->dqpn) & ROCEV2_QPN_MASK;
	key.proto = MROCE_CONN_ROCEV2;
	if (!bpf_map_lookup_elem(&conns, &key)) {
		st->drop_no_conn++;
		return XDP_DROP;
	}
	return to_daemon(ctx, st, &st->redirect_rocev2);
}

/* ------------------------------------------------------------------ */
/* L2-L4                                                               */
/* ------------------------------------------------------------------ */

/* The UDP header after IP (NULL: truncated) goes to one of our ports:
 * 1 with *dport set, else 0 (counted: the frame is passed). */
static __always_inline int udp_is_ours(struct mroce_xdp_counters *st,
				       const struct udphdr *uh, __u16 *dport)
{
	if (!uh) {
		st->pass_malformed_ip++;
		return 0;
	}
	*dport = bpf_ntohs(uh->dest);
	if (*dport != cfg_mroce_port && *dport != cfg_rocev2_port) {
		st->pass_other_port++;
		return 0;
	}
	return 1;
}

/* IPv4 then UDP at c: fills p's addresses and TOS, *uh and *dport.
 * -1 when it is ours (UDP to one of our ports, header and lengths
 * right), else the verdict: XDP_PASS for what is not ours, XDP_DROP for
 * ours but malformed (each counted). */
static __always_inline int parse_ipv4(struct mroce_xdp_counters *st,
				      struct cursor *c, __u32 avail,
				      struct pkt *p, struct udphdr **uhp,
				      __u16 *dport)
{
	struct iphdr *ih = pull_ipv4(c);
	__u32 ihl, tot, sum = 0;
	struct udphdr *uh;
	int frag;

	if (!ih || ih->version != 4 || ih->ihl < 5) {
		st->pass_malformed_ip++;
		return XDP_PASS;
	}
	if (ih->protocol != IPPROTO_UDP || (ih->frag_off & bpf_htons(0x1fff))) {
		/* no UDP header here (or a non-first fragment) */
		st->pass_not_udp++;
		return XDP_PASS;
	}
	frag = !!(ih->frag_off & bpf_htons(0x2000));
	ihl = ih->ihl * 4;
	if (cur_skip_ipv4_opts(c, ihl - 20)) {
		st->pass_malformed_ip++;
		return XDP_PASS;
	}
	uh = pull_udp(c);
	if (!udp_is_ours(st, uh, dport))
		return XDP_PASS;
	/* Ours from here on: malformed means dropped. */
	if (frag) {
		st->drop_ip_frag++;
		return XDP_DROP;
	}
	for (__u32 i = 0; i < 30; i++) {
		__u16 *w = (void *)ih + i * 2;

		if (i * 2 >= ihl || (void *)(w + 1) > c->end)
			break;
		sum += *w;
	}
	if (csum_fold(sum)) {
		st->drop_bad_ip_csum++;
		return XDP_DROP;
	}
	tot = bpf_ntohs(ih->tot_len);
	if (tot < ihl + sizeof(*uh) || tot > avail) {
		st->drop_bad_ip_len++;
		return XDP_DROP;
	}
	if (bpf_ntohs(uh->len) != tot - ihl) {
		st->drop_bad_udp_len++;
		return XDP_DROP;
	}
	p->tos = ih->tos;
	p->saddr[0] = ih->saddr;
	p->daddr[0] = ih->daddr;
	*uhp = uh;
	return -1;
}

/* IPv6 then UDP at c, as parse_ipv4(). */
static __always_inline int parse_ipv6(struct mroce_xdp_counters *st,
				      struct cursor *c, __u32 avail,
				      struct pkt *p, struct udphdr **uhp,
				      __u16 *dport)
{
	struct ipv6hdr *ih = pull_ipv6(c);
	struct udphdr *uh;
	__u32 plen;

	if (!ih || ih->version != 6) {
		st->pass_malformed_ip++;
		return XDP_PASS;
	}
	if (ih->nexthdr != IPPROTO_UDP) {
		/* includes extension headers: not ours by design */
		st->pass_not_udp++;
		return XDP_PASS;
	}
	uh = pull_udp(c);
	if (!udp_is_ours(st, uh, dport))
		return XDP_PASS;
	plen = bpf_ntohs(ih->payload_len);
	if (plen < sizeof(*uh) || plen + 40 > avail) {
		st->drop_bad_ip_len++;
		return XDP_DROP;
	}
	if (bpf_ntohs(uh->len) != plen) {
		st->drop_bad_udp_len++;
		return XDP_DROP;
	}
	p->ipv6 = 1;
	p->tos = ih->priority << 4 | ih->flow_lbl[0] >> 4;
	__builtin_memcpy(p->saddr, &ih->saddr, 16);
	__builtin_memcpy(p->daddr, &ih->daddr, 16);
	*uhp = uh;
	return -1;
}

SEC("xdp.frags")
int mroce_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct cursor c = {.pos = data, .end = end};
	struct mroce_xdp_counters *st;
	struct pkt p = {};
	struct ethhdr *eth;
	struct udphdr *uh = NULL;
	__u32 zero = 0, avail, l3off;
	__u16 dport = 0, proto;
	int rc;

	st = bpf_map_lookup_elem(&counters, &zero);
	if (!st)
		return XDP_PASS;
	st->rx_packets++;

	eth = pull_eth(&c);
	if (!eth) {
		st->pass_not_ip++;
		return XDP_PASS;
	}
	proto = bpf_ntohs(eth->h_proto);
	__builtin_memcpy(p.dmac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(p.smac, eth->h_source, ETH_ALEN);
	if (proto == ETH_P_8021Q) {
		struct vlan_tag *vt = pull_vlan(&c);

		if (!vt) {
			st->pass_not_ip++;
			return XDP_PASS;
		}
		p.has_vlan = 1;
		p.vlan_tci = vt->tci;
		proto = bpf_ntohs(vt->proto);
	}
	l3off = c.pos - data;
	avail = bpf_xdp_get_buff_len(ctx);
	avail = avail > l3off ? avail - l3off : 0;

	if (proto == ETH_P_IP) {
		rc = parse_ipv4(st, &c, avail, &p, &uh, &dport);
	} else if (proto == ETH_P_IPV6) {
		rc = parse_ipv6(st, &c, avail, &p, &uh, &dport);
	} else {
		st->pass_not_ip++;
		return XDP_PASS;
	}
	if (rc >= 0)
		return rc;

	p.sport = uh->source;
	/* A plain number from here on (the empty asm hides where it came
	 * from): else the compiler keeps the cursor alive until the ICRC
	 * check, a packet pointer whose checked range differs from path to
	 * path, and the verifier, unable to merge those states, walks six
	 * times as many instructions. */
	p.l4_off = c.pos - data;
	asm volatile("" : "+r"(p.l4_off));
	p.l4_len = bpf_ntohs(uh->len) - sizeof(*uh);
	p.ce = (p.tos & 3) == 3;
	if (p.ce)
		st->rx_ce++;
	if (dport == cfg_mroce_port)
		return handle_metaroce(ctx, st, &c, &p);
	return handle_rocev2(ctx, st, &c, &p);
}
