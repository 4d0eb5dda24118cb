// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Table-driven tests of bpf/mroce_xdp.bpf.c through bpf_prog_test_run.
 *
 * Each row: a description, an input frame (built with the codec, then
 * optionally mutated), the expected verdict, the counters that must move
 * by exactly one (every other counter must not move), the ACK the program
 * must write for XDP_TX rows (built independently with the codec and
 * compared byte for byte, then parsed back: its ICRC must verify), and an
 * optional check of the maps afterwards. Frames that are not XDP_TX must
 * come out untouched.
 *
 * Every row runs in its own forked child with a fresh program and maps, in
 * a private network namespace where an AF_XDP socket bound to lo queue 0
 * fills the XSKMAP (so redirects are real verdicts, not "no socket").
 */
#include "../harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/xsk.h>

#include "mroce/abi.h"
#include "mroce/codec.h"
#include "mroce/counters.h"
#include "mroce/spray.h"
#include "mroce/xdp.h"
#include "mroce_xdp.skel.h"

/* ------------------------------------------------------------------ */
/* Fixture: the connections and state the daemon would have published  */
/* ------------------------------------------------------------------ */
#define CONN_A 0x00001001u /* ACK offload, slot 5, 4 sprayed paths */
#define PEER_A 0x00002002u
#define SLOT_A 5
#define CONN_A6 0x00001005u /* as CONN_A (its slot), peer over IPv6 */
#define CONN_B 0x00001003u /* no ACK offload */
#define SLOT_B 7
#define CONN_C 0x00001004u /* ACK offload, no paths in the scoreboard */
#define PEER_C 0x00002004u
#define SLOT_C 9
#define QPN_A 0x000123u
#define UNKNOWN_CONN 0x00004242u

#define RX_PATH 3
#define RX_GEN 2
#define RX_CUM 1000u
#define RX_RATE 25000u
#define RX_CE_TOTAL 3u /* CE marks seen on CONN_A's path before */
#define SB_PATH 1 /* scoreboard path fed by ACK rows */
#define SB_GEN 0

struct env {
	struct mroce_xdp *skel;
	struct mroce_xdp_maps m;
	int prog_fd;
	struct xsk_socket *xsk;
	struct xsk_umem *umem;
	void *umem_area;
};

struct frame {
	uint8_t b[12288];
	size_t len;
};

/* The peers' addresses: base_spec()'s sources. */
static const uint8_t PEER_V4[4] = {10, 9, 0, 1};
static const uint8_t PEER_V6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0,
				    0,    0, 0, 0, 0, 0, 0, 1};

static struct mroce_conn_val conn_v4(uint32_t slot, uint32_t peer,
				     uint32_t flags)
{
	struct mroce_conn_val v = {.slot = slot, .peer_conn_id = peer,
				   .flags = flags,
				   .peer_family = MROCE_PEER_IPV4};

	memcpy(v.peer_addr, PEER_V4, 4);
	return v;
}

/* ack_limit's knobs (mrocectl attach writes the defaults). */
static void set_limit(struct env *e, uint32_t per_ms, uint32_t gap_us)
{
	struct mroce_ack_limit l = {.per_ms = per_ms, .path_gap_us = gap_us};
	uint32_t zero = 0;

	ck_assert_int_eq(bpf_map_update_elem(bpf_map__fd(e->skel->maps.ack_limit),
					     &zero, &l, BPF_ANY),
			 0);
}

static struct mroce_ack_limit get_limit(struct env *e)
{
	struct mroce_ack_limit l;
	uint32_t zero = 0;

	ck_assert_int_eq(bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.ack_limit),
					     &zero, &l),
			 0);
	return l;
}

/* bpf_ktime_get_ns()'s clock, in the program's units. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fixture_fill(struct env *e)
{
	struct mroce_conn_val a = conn_v4(SLOT_A, PEER_A,
					  MROCE_CONN_F_ACK_OFFLOAD);
	struct mroce_conn_val a6 = a;
	struct mroce_conn_val b = conn_v4(SLOT_B, 0x2003, 0);
	struct mroce_conn_val c = conn_v4(SLOT_C, PEER_C,
					  MROCE_CONN_F_ACK_OFFLOAD);
	struct mroce_conn_val q = {.slot = 11};
	uint8_t sack[MROCE_SACK_BYTES] = {0x21}; /* 1001 and 1006 */
	struct mroce_sb_conn *sb;

	a6.peer_family = MROCE_PEER_IPV6;
	memcpy(a6.peer_addr, PEER_V6, 16);
	ck_assert_int_eq(
		mroce_xdp_conn_add(&e->m, MROCE_CONN_METAROCE, CONN_A, &a), 0);
	ck_assert_int_eq(
		mroce_xdp_conn_add(&e->m, MROCE_CONN_METAROCE, CONN_A6, &a6), 0);
	ck_assert_int_eq(
		mroce_xdp_conn_add(&e->m, MROCE_CONN_METAROCE, CONN_B, &b), 0);
	ck_assert_int_eq(
		mroce_xdp_conn_add(&e->m, MROCE_CONN_METAROCE, CONN_C, &c), 0);
	ck_assert_int_eq(
		mroce_xdp_conn_add(&e->m, MROCE_CONN_ROCEV2, QPN_A, &q), 0);
	for (uint32_t slot = SLOT_A; slot <= SLOT_C; slot += SLOT_C - SLOT_A) {
		struct mroce_rx_path *rp =
			mroce_xdp_rx_path(&e->m, slot, RX_PATH);

		mroce_rx_publish(rp, RX_GEN, MROCE_RXP_F_VALID, RX_CUM, RX_CUM,
				 RX_RATE, sack);
		if (slot == SLOT_A)
			rp->ce_total = RX_CE_TOTAL;
	}
	mroce_rx_publish(mroce_xdp_rx_path(&e->m, SLOT_B, RX_PATH), RX_GEN,
			 MROCE_RXP_F_VALID, RX_CUM, RX_CUM, RX_RATE, sack);
	sb = &e->m.scoreboard[SLOT_A];
	sb->n_paths = 4;
	for (int i = 0; i < 4; i++) {
		sb->path[i].sport = (uint16_t)(0xc001 + i);
		sb->path[i].gen = SB_GEN;
	}
	sb->active_mask = 0xf;
	set_limit(e, MROCE_ACK_LIMIT_PER_MS, MROCE_ACK_LIMIT_PATH_GAP_US);
}

/* An AF_XDP socket on lo queue 0 of a private namespace, in xsks[0]. */
static void xsk_bind_lo(struct env *e)
{
	struct xsk_socket_config cfg = {
		.rx_size = 64,
		.tx_size = 64,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = XDP_FLAGS_SKB_MODE,
		.bind_flags = XDP_COPY,
	};
	static struct xsk_ring_prod fq, tx;
	static struct xsk_ring_cons cq, rx;
	size_t sz = 64 * 4096;
	struct ifreq ifr = {.ifr_name = "lo"};
	int s, err;

	ck_assert_msg(unshare(CLONE_NEWNET) == 0, "unshare: %s",
		      strerror(errno));
	s = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	ck_assert_int_eq(ioctl(s, SIOCSIFFLAGS, &ifr), 0);
	close(s);
	e->umem_area = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(e->umem_area != MAP_FAILED);
	err = xsk_umem__create(&e->umem, e->umem_area, sz, &fq, &cq, NULL);
	ck_assert_msg(err == 0, "xsk_umem__create: %s", strerror(-err));
	err = xsk_socket__create(&e->xsk, "lo", 0, e->umem, &rx, &tx, &cfg);
	ck_assert_msg(err == 0, "xsk_socket__create: %s", strerror(-err));
	ck_assert_int_eq(mroce_xdp_xsk_set(&e->m, 0, xsk_socket__fd(e->xsk)),
			 0);
}

static void env_init(struct env *e, bool with_xsk)
{
	int err;

	memset(e, 0, sizeof(*e));
	e->skel = mroce_xdp__open_and_load();
	ck_assert_msg(e->skel, "mroce_xdp__open_and_load: %s", strerror(errno));
	e->prog_fd = bpf_program__fd(e->skel->progs.mroce_xdp);
	err = mroce_xdp_maps_from_fds(&e->m, bpf_map__fd(e->skel->maps.conns),
				      bpf_map__fd(e->skel->maps.xsks),
				      bpf_map__fd(e->skel->maps.rx_state),
				      bpf_map__fd(e->skel->maps.scoreboard),
				      bpf_map__fd(e->skel->maps.counters));
	ck_assert_msg(err == 0, "maps: %s", mroce_xdp_err_name(err));
	fixture_fill(e);
	if (with_xsk)
		xsk_bind_lo(e);
}

static void env_fini(struct env *e)
{
	if (e->xsk)
		xsk_socket__delete(e->xsk);
	if (e->umem)
		xsk_umem__delete(e->umem);
	if (e->umem_area)
		munmap(e->umem_area, 64 * 4096);
	mroce_xdp_maps_close(&e->m);
	mroce_xdp__destroy(e->skel);
}

/* ------------------------------------------------------------------ */
/* Input frames                                                        */
/* ------------------------------------------------------------------ */
enum kind { K_MR, K_RV2, K_RAW };

struct in_spec {
	enum kind kind;
	uint8_t op;
	uint32_t conn; /* MetaRoCE conn_id / RoCEv2 QPN */
	uint8_t path, gen;
	uint32_t psn;  /* data: psn; PROBE: next_psn */
	uint8_t flags; /* MROCE_F_* */
	bool ipv6;
	bool not_peer; /* from another address than the connection's peer */
	int vlan; /* TCI + 1, 0 = untagged */
	uint8_t tos;
	uint16_t payload; /* 0: 64 B of data, a PROBE's MROCE_PROBE_PAD */
	bool unpadded;	  /* a PROBE without padding */
	uint16_t l4_len; /* data: payload that makes the MetaRoCE packet
			  * (headers, payload, ICRC) this long */
	/* ACK: */
	uint16_t ce_count;
	bool sack_hole;
	/* NAK: */
	uint8_t nak_code; /* 0: OUT_OF_WINDOW */
};

static const uint8_t MAC_US[6] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t MAC_PEER[6] = {0x02, 0, 0, 0, 0, 0x01};
#define PEER_SPORT 0xc123
#define TSVAL 0x11223344u

static struct mroce_frame_spec base_spec(const struct in_spec *in)
{
	struct mroce_frame_spec s = {.vlan = in->vlan - 1};

	memcpy(s.dmac, MAC_US, 6);
	memcpy(s.smac, MAC_PEER, 6);
	s.l3.tos = in->tos;
	s.l3.ttl = 61;
	s.sport = PEER_SPORT;
	s.dport = in->kind == K_RV2 ? ROCEV2_UDP_PORT : MROCE_UDP_PORT;
	s.ip_id = 7;
	if (in->ipv6) {
		s.l3.family = AF_INET6;
		memcpy(s.l3.src, PEER_V6, 16);
		memcpy(s.l3.dst, PEER_V6, 16);
		s.l3.dst[15] = 2;
		if (in->not_peer)
			s.l3.src[15] = 3;
		s.l3.flow_label = 0x12345;
	} else {
		s.l3.family = AF_INET;
		memcpy(s.l3.src, PEER_V4, 4);
		memcpy(s.l3.dst, PEER_V4, 4);
		s.l3.dst[3] = 2;
		if (in->not_peer)
			s.l3.src[3] = 3;
	}
	return s;
}

static uint8_t payload_bytes[MROCE_MAX_PAYLOAD];

static size_t build_mr(const struct in_spec *in, struct frame *f)
{
	struct mroce_frame_spec s = base_spec(in);
	struct mroce_meta_pkt p = {0};
	size_t hl = mroce_frame_hdr_len(&s);
	int l4, n;

	p.opcode = in->op;
	p.flags = in->flags;
	p.conn_id = in->conn;
	p.path = in->path;
	p.path_gen = in->gen;
	p.psn = in->psn;
	p.tsval = TSVAL;
	p.stream = 17;
	p.msn = 3;
	p.msg_len = 65536;
	p.va = 0x7f0000001000ull;
	p.rkey = 0xabcd;
	p.sink_va = 0x7f0000002000ull;
	p.sink_key = 0xbcde;
	p.next_psn = in->psn;
	p.ack.cum_psn = 77;
	p.ack.tsecr = mroce_now_us() - 150;
	p.ack.ce_count = in->ce_count;
	if (in->sack_hole)
		p.ack.sack[2] = 0x10;
	p.nak.code = in->nak_code ? in->nak_code : MROCE_NAK_OUT_OF_WINDOW;
	p.reroll.old_gen = 1;
	p.reroll.new_gen = 2;
	p.reroll.reason = MROCE_REROLL_LOSS;
	p.conn.nonce = 99;
	p.conn.mtu = 4096;
	p.conn.max_paths = 8;
	p.payload_len = in->payload;
	if (in->l4_len)
		p.payload_len = (uint16_t)(in->l4_len -
					   mroce_ext_len(mroce_op_ext(in->op)) -
					   MROCE_ICRC_LEN);
	if (!p.payload_len && mroce_op_has_payload(in->op) && !in->unpadded)
		p.payload_len =
			in->op == MROCE_OP_PROBE ? MROCE_PROBE_PAD : 64;
	if (p.payload_len) {
		for (uint32_t i = 0; i < p.payload_len; i++)
			payload_bytes[i] = (uint8_t)(i * 7);
		p.payload = payload_bytes;
	}
	l4 = mroce_meta_build(&p, f->b + hl, sizeof(f->b) - hl);
	ck_assert_msg(l4 > 0, "mroce_meta_build: %s", mroce_err_name(l4));
	n = mroce_frame_build(&s, (size_t)l4, f->b, sizeof(f->b));
	ck_assert_msg(n > 0, "mroce_frame_build: %s", mroce_err_name(n));
	return (size_t)n;
}

static size_t build_rv2(const struct in_spec *in, struct frame *f)
{
	struct mroce_frame_spec s = base_spec(in);
	struct mroce_rv2_pkt p = {0};
	size_t hl = mroce_frame_hdr_len(&s);
	int l4, n;

	p.opcode = in->op;
	p.pkey = ROCEV2_DEFAULT_PKEY;
	p.dqpn = in->conn;
	p.psn = in->psn;
	p.va = 0x1000;
	p.rkey = 0x55;
	p.dma_len = in->payload;
	p.payload = payload_bytes;
	p.payload_len = in->payload;
	l4 = mroce_rv2_build(&p, f->b + hl, sizeof(f->b) - hl);
	ck_assert_msg(l4 > 0, "mroce_rv2_build: %s", mroce_err_name(l4));
	n = mroce_frame_build(&s, (size_t)l4, f->b, sizeof(f->b));
	ck_assert_msg(n > 0, "mroce_frame_build: %s", mroce_err_name(n));
	ck_assert_int_eq(mroce_rv2_icrc_fill(f->b, (size_t)n), 0);
	return (size_t)n;
}

/* Offsets in an untagged IPv4 frame. */
#define IP4 14
#define UDP4 34
#define L4_4 42

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t ip4_csum(const uint8_t *ip, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* After a mutation of an untagged IPv4 frame: IP/UDP lengths from the
 * frame length (when lengths), IPv4 header checksum always. */
static void refresh4(struct frame *f, bool lengths)
{
	size_t ihl = (f->b[IP4] & 0xf) * 4u;

	if (lengths) {
		put16(f->b + IP4 + 2, (uint16_t)(f->len - IP4));
		put16(f->b + IP4 + ihl + 4, (uint16_t)(f->len - IP4 - ihl));
	}
	put16(f->b + IP4 + 10, 0);
	put16(f->b + IP4 + 10, ip4_csum(f->b + IP4, ihl));
}

/* --- mutations, each documented by its row --- */
static void mut_arp(struct frame *f)
{
	static const uint8_t arp[] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0,
		1,    0x08, 0x06, 0,	1,    0x08, 0,	  6, 4, 0, 1,
		0x02, 0,    0,	  0,	0,    1,    10,	  9, 0, 1, 0,
		0,    0,    0,	  0,	0,    10,   9,	  0, 2};

	memcpy(f->b, arp, sizeof(arp));
	f->len = sizeof(arp);
}

static void mut_proto(struct frame *f, uint8_t proto)
{
	f->b[IP4 + 9] = proto;
	refresh4(f, false);
}

static void mut_icmp(struct frame *f)
{
	mut_proto(f, 1);
}
static void mut_tcp(struct frame *f)
{
	mut_proto(f, 6);
}
static void mut_icmp6(struct frame *f)
{
	f->b[14 + 6] = 58;
}

static void mut_dport53(struct frame *f)
{
	put16(f->b + UDP4 + 2, 53);
}

static void mut_dport53_v6(struct frame *f)
{
	put16(f->b + 14 + 40 + 2, 53);
}

/* test_run refuses frames under 14 bytes: the shortest are headers only */
static void mut_eth_only(struct frame *f)
{
	f->len = 14;
}

static void mut_vlan_cut(struct frame *f)
{
	f->b[12] = 0x81;
	f->b[13] = 0x00;
	f->len = 16;
}

static void mut_ihl4(struct frame *f)
{
	f->b[IP4] = 0x44;
}

static void mut_frag_later(struct frame *f)
{
	put16(f->b + IP4 + 6, 0x0010); /* offset 128 bytes */
	refresh4(f, false);
}

static void mut_frag_first(struct frame *f)
{
	put16(f->b + IP4 + 6, 0x2000); /* MF */
	refresh4(f, false);
}

static void mut_version1(struct frame *f)
{
	f->b[L4_4] = 1;
}
static void mut_opcode7f(struct frame *f)
{
	f->b[L4_4 + 1] = 0x7f;
}
static void mut_hdr_words(struct frame *f)
{
	f->b[L4_4 + 3]++;
}

static void mut_trunc8(struct frame *f)
{
	f->len = L4_4 + 8;
	refresh4(f, true);
}

static void mut_plen_plus1(struct frame *f)
{
	put16(f->b + L4_4 + 10,
	      (uint16_t)((f->b[L4_4 + 10] << 8 | f->b[L4_4 + 11]) + 1));
}

/* A PROBE that claims 4 bytes of payload, lengths consistent. */
static void mut_probe_payload(struct frame *f)
{
	uint32_t crc;

	put16(f->b + L4_4 + 10, 4);
	memset(f->b + L4_4 + 20, 0xaa, 4);
	f->len = L4_4 + 20 + 4 + 4;
	crc = mroce_meta_icrc(f->b + L4_4, 24);
	f->b[L4_4 + 24] = (uint8_t)(crc >> 24);
	f->b[L4_4 + 25] = (uint8_t)(crc >> 16);
	f->b[L4_4 + 26] = (uint8_t)(crc >> 8);
	f->b[L4_4 + 27] = (uint8_t)crc;
	refresh4(f, true);
}

static void mut_bad_icrc(struct frame *f)
{
	f->b[f->len - 1] ^= 1;
}

/* The last payload byte, just before the ICRC. */
static void mut_bad_payload(struct frame *f)
{
	f->b[f->len - MROCE_ICRC_LEN - 1] ^= 0x10;
}

static void mut_ip_csum(struct frame *f)
{
	f->b[IP4 + 10] ^= 0x40;
}

static void mut_ip_len_big(struct frame *f)
{
	put16(f->b + IP4 + 2, (uint16_t)(f->len - IP4 + 4));
	refresh4(f, false);
}

static void mut_udp_len(struct frame *f)
{
	put16(f->b + UDP4 + 4, (uint16_t)(f->len - UDP4 - 4));
}

static void mut_ip6_len_big(struct frame *f)
{
	put16(f->b + 14 + 4, (uint16_t)(f->len - 14 - 40 + 8));
}

static void mut_tver1(struct frame *f)
{
	f->b[L4_4 + 1] |= 1;
}
static void mut_rv2_op15(struct frame *f)
{
	f->b[L4_4] = 0x15;
}

/* An RC ACK with 4 bytes of payload and consistent lengths. */
static void mut_rv2_ack_payload(struct frame *f)
{
	memmove(f->b + f->len, f->b + f->len - 4, 4); /* ICRC moves on */
	memset(f->b + f->len - 4, 0, 4);
	f->len += 4;
	refresh4(f, true);
}

/* Insert 4 bytes of IPv4 options (3 NOPs + EOL): ihl 6. */
static void mut_ip_options(struct frame *f)
{
	memmove(f->b + UDP4 + 4, f->b + UDP4, f->len - UDP4);
	memcpy(f->b + UDP4, "\x01\x01\x01\x00", 4);
	f->b[IP4] = 0x46;
	f->len += 4;
	refresh4(f, true);
}

static void mut_ip_options_bad_icrc(struct frame *f)
{
	mut_ip_options(f);
	mut_bad_icrc(f);
}

/* ------------------------------------------------------------------ */
/* Rows                                                                */
/* ------------------------------------------------------------------ */
enum setup {
	SETUP_NONE,
	SETUP_NO_XSK,  /* no AF_XDP socket on the queue */
	SETUP_SEQ_ODD, /* rx_state of (A, RX_PATH) being written */
	SETUP_GATE_SHUT, /* an unknown conn's packet just went to the daemon */
	SETUP_PATH_ACKED, /* (A, RX_PATH) had an XDP ACK now, gap 1 s */
	SETUP_LIMIT_OFF,  /* ack_limit.per_ms 0 */
	SETUP_DATA_QUEUED, /* (A, RX_PATH): data up to RX_CUM passed to the
			    * daemon, which has taken in only what is
			    * below RX_CUM */
	SETUP_ACK_LOST,	  /* (A, RX_PATH): the daemon's last ACK covered
			   * RX_CUM and left long enough ago for a PROBE
			   * to show it lost */
};

enum checks {
	CHECK_NONE,
	CHECK_RTT,	    /* ACK telemetry: sample, srtt, acks */
	CHECK_LOSS_ECE,	    /* ... plus loss and ECN marks */
	CHECK_XDP_ACKED,    /* xdp_acks 1, ce_total unchanged */
	CHECK_NOT_ACKED,    /* xdp_acks 0, nothing counted in ack_limit */
	CHECK_CE_ADDED,	    /* ce_total + 1, xdp_acks 0 */
	CHECK_SB_UNTOUCHED, /* stale ACK: no telemetry written */
	CHECK_REDIRECT_NOTED, /* redirect_psn RX_CUM + 1, redirect_gen */
};

struct row {
	const char *desc;
	struct in_spec in;
	void (*mutate)(struct frame *f);
	int verdict;
	const char *ctrs;  /* space-separated, each +1 */
	uint8_t ack_flags; /* XDP_TX: expected ack_flags */
	uint16_t ack_ce;   /* XDP_TX: expected ce_count */
	enum setup setup;
	enum checks check;
	uint32_t linear; /* bytes in the linear part, the rest in a fragment;
			  * 0: as many as fit (3.5 KiB) */
};

#define ROW(d, i, m, v, c, ...)                                                \
	{                                                                      \
		.desc = (d), .in = i, .mutate = (m), .verdict = (v),           \
		.ctrs = (c), __VA_ARGS__                                       \
	}
#define MR(o, c, p, g, s, ...)                                                 \
	{                                                                      \
		.kind = K_MR, .op = MROCE_OP_##o, .conn = (c), .path = (p),    \
		.gen = (g), .psn = (s), __VA_ARGS__                            \
	}
/* data on (CONN_A, RX_PATH, RX_GEN); 64 bytes of payload unless given */
#define DATA(o, s, ...) MR(o, CONN_A, RX_PATH, RX_GEN, s, __VA_ARGS__)
/* the same over IPv6, from CONN_A6's peer */
#define DATA6(o, s, ...)                                                       \
	MR(o, CONN_A6, RX_PATH, RX_GEN, s, .ipv6 = true, __VA_ARGS__)
#define RV2(o, q, ...)                                                         \
	{                                                                      \
		.kind = K_RV2, .op = ROCEV2_OP_##o, .conn = (q), .psn = 5,     \
		__VA_ARGS__                                                    \
	}
#define UDP_ANY MR(SEND, CONN_A, RX_PATH, RX_GEN, RX_CUM, .payload = 16)
/* an XDP ACK reports only its trigger's CE mark (none unless .tos = 3) */
#define ACKF_DX (MROCE_ACKF_DUP | MROCE_ACKF_XDP)

static const struct row rows[] = {
	/* ---- not ours: XDP_PASS, untouched ---- */
	ROW("arp request", UDP_ANY, mut_arp, XDP_PASS, "pass_not_ip"),
	ROW("ethernet header only", UDP_ANY, mut_eth_only, XDP_PASS,
	    "pass_malformed_ip"),
	ROW("802.1Q tag cut short", UDP_ANY, mut_vlan_cut, XDP_PASS,
	    "pass_not_ip"),
	ROW("ipv4 icmp (ping)", UDP_ANY, mut_icmp, XDP_PASS, "pass_not_udp"),
	ROW("ipv4 tcp (ssh)", UDP_ANY, mut_tcp, XDP_PASS, "pass_not_udp"),
	ROW("ipv4 udp to port 53", UDP_ANY, mut_dport53, XDP_PASS,
	    "pass_other_port"),
	ROW("ipv6 icmpv6", DATA(SEND, RX_CUM, .ipv6 = true), mut_icmp6,
	    XDP_PASS, "pass_not_udp"),
	ROW("ipv6 udp to port 53", DATA(SEND, RX_CUM, .ipv6 = true),
	    mut_dport53_v6, XDP_PASS, "pass_other_port"),
	ROW("ipv4 ihl < 5", UDP_ANY, mut_ihl4, XDP_PASS, "pass_malformed_ip"),
	ROW("ipv4 non-first fragment", UDP_ANY, mut_frag_later, XDP_PASS,
	    "pass_not_udp"),

	/* ---- new data of each opcode: to the daemon ---- */
	ROW("SEND new psn", DATA(SEND, RX_CUM), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data", .check = CHECK_REDIRECT_NOTED),
	ROW("SEND_IMM new psn", DATA(SEND_IMM, RX_CUM), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data"),
	ROW("WRITE new psn", DATA(WRITE, RX_CUM), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data"),
	ROW("WRITE_IMM new psn", DATA(WRITE_IMM, RX_CUM), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data"),
	ROW("READ_REQ new psn", MR(READ_REQ, CONN_A, RX_PATH, RX_GEN, RX_CUM),
	    NULL, XDP_REDIRECT, "rx_metaroce redirect_data"),
	ROW("READ_RESP new psn", DATA(READ_RESP, RX_CUM), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data"),
	ROW("SEND in window, SACK bit clear", DATA(SEND, RX_CUM + 2), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_data"),
	ROW("SEND beyond the SACK window", DATA(SEND, RX_CUM + 300), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_data"),
	ROW("SEND new psn with CE", DATA(SEND, RX_CUM, .tos = 3), NULL,
	    XDP_REDIRECT, "rx_metaroce rx_ce redirect_data",
	    .check = CHECK_CE_ADDED),
	ROW("SEND on ipv4 with options", DATA(SEND, RX_CUM), mut_ip_options,
	    XDP_REDIRECT, "rx_metaroce redirect_data"),
	ROW("SEND on vlan", DATA(SEND, RX_CUM, .vlan = 1 + 100), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_data"),
	ROW("SEND on ipv6", DATA6(SEND, RX_CUM), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_data"),
	ROW("CONNECT_REQ (conn 0)", MR(CONNECT_REQ, 0, 0, 0, 0), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ctrl"),
	ROW("CLOSE of an unknown conn", MR(CLOSE, UNKNOWN_CONN, 0, 0, 0), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ctrl"),
	ROW("PATH_REROLL", MR(PATH_REROLL, CONN_A, 2, 1, 0), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_ctrl"),
	ROW("NAK", MR(NAK, CONN_A, 2, 0, 0), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_ack"),
	ROW("ACK: rtt sample", MR(ACK, CONN_A, SB_PATH, SB_GEN, 0), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ack ack_rtt_samples",
	    .check = CHECK_RTT),
	ROW("ACK: sack hole and ECN echo",
	    MR(ACK, CONN_A, SB_PATH, SB_GEN, 0, .ce_count = 2,
	       .sack_hole = true),
	    NULL, XDP_REDIRECT, "rx_metaroce redirect_ack ack_rtt_samples",
	    .check = CHECK_LOSS_ECE),
	ROW("ACK: other path generation", MR(ACK, CONN_A, SB_PATH, 9, 0), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ack ack_stale_gen",
	    .check = CHECK_SB_UNTOUCHED),
	ROW("ACK: path not active", MR(ACK, CONN_A, 7, 0, 0), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ack ack_stale_gen"),
	ROW("rocev2 SEND_ONLY", RV2(SEND_ONLY, QPN_A, .payload = 64), NULL,
	    XDP_REDIRECT, "rx_rocev2 redirect_rocev2"),
	ROW("rocev2 WRITE_FIRST", RV2(WRITE_FIRST, QPN_A, .payload = 256), NULL,
	    XDP_REDIRECT, "rx_rocev2 redirect_rocev2"),
	ROW("rocev2 ACK", RV2(ACK, QPN_A), NULL, XDP_REDIRECT,
	    "rx_rocev2 redirect_rocev2"),
	ROW("rocev2 on ipv6", RV2(SEND_ONLY, QPN_A, .payload = 8, .ipv6 = true),
	    NULL, XDP_REDIRECT, "rx_rocev2 redirect_rocev2"),

	/* ---- ours but unusable: XDP_DROP with the reason ---- */
	ROW("no AF_XDP socket on the queue", DATA(SEND, RX_CUM), NULL, XDP_DROP,
	    "rx_metaroce drop_no_xsk", .setup = SETUP_NO_XSK),
	/* unknown conn_id: one data packet or PROBE per 100 us reaches the
	 * daemon (its engine answers NAK NO_CONN), the rest is dropped; a
	 * NAK NO_CONN always goes up (the engine checks it), other NAKs not */
	ROW("unknown conn_id", MR(SEND, UNKNOWN_CONN, 0, 0, 1, .payload = 8),
	    NULL, XDP_DROP, "rx_metaroce drop_no_conn",
	    .setup = SETUP_GATE_SHUT),
	ROW("PROBE of an unknown conn", MR(PROBE, UNKNOWN_CONN, 0, 0, 1), NULL,
	    XDP_DROP, "rx_metaroce drop_no_conn", .setup = SETUP_GATE_SHUT),
	ROW("unknown conn_id, gate open", MR(SEND, UNKNOWN_CONN, 0, 0, 1,
					     .payload = 8),
	    NULL, XDP_REDIRECT, "rx_metaroce redirect_ctrl"),
	ROW("PROBE of an unknown conn, gate open",
	    MR(PROBE, UNKNOWN_CONN, 0, 0, 1), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_ctrl"),
	ROW("ACK of an unknown conn, gate open", MR(ACK, UNKNOWN_CONN, 0, 0, 0),
	    NULL, XDP_DROP, "rx_metaroce drop_no_conn"),
	ROW("NAK NO_CONN naming a peer's id",
	    MR(NAK, UNKNOWN_CONN, 2, 0, 5, .nak_code = MROCE_NAK_NO_CONN), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ctrl", .setup = SETUP_GATE_SHUT),
	ROW("other NAK of an unknown conn", MR(NAK, UNKNOWN_CONN, 2, 0, 5), NULL,
	    XDP_DROP, "rx_metaroce drop_no_conn"),
	ROW("version 1", DATA(SEND, RX_CUM), mut_version1, XDP_DROP,
	    "rx_metaroce drop_bad_version"),
	ROW("opcode 0x7f", DATA(SEND, RX_CUM), mut_opcode7f, XDP_DROP,
	    "rx_metaroce drop_bad_opcode"),
	ROW("hdr_words off by one", DATA(SEND, RX_CUM), mut_hdr_words, XDP_DROP,
	    "rx_metaroce drop_bad_hdr_len"),
	ROW("8-byte udp payload", DATA(SEND, RX_CUM), mut_trunc8, XDP_DROP,
	    "rx_metaroce drop_trunc_hdr"),
	ROW("payload_len off by one", DATA(SEND, RX_CUM), mut_plen_plus1,
	    XDP_DROP, "rx_metaroce drop_bad_len"),
	ROW("PROBE with 4 bytes of padding (its ACK is longer)",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, 1), mut_probe_payload,
	    XDP_REDIRECT, "rx_metaroce redirect_ctrl ack_offload_larger"),
	ROW("PROBE with a bad ICRC", MR(PROBE, CONN_A, RX_PATH, RX_GEN, 1),
	    mut_bad_icrc, XDP_DROP, "rx_metaroce drop_bad_icrc"),
	ROW("ACK with a bad ICRC: no telemetry",
	    MR(ACK, CONN_A, SB_PATH, SB_GEN, 0, .ce_count = 2,
	       .sack_hole = true),
	    mut_bad_icrc, XDP_DROP, "rx_metaroce drop_bad_icrc",
	    .check = CHECK_SB_UNTOUCHED),
	ROW("ipv4 header checksum", DATA(SEND, RX_CUM), mut_ip_csum, XDP_DROP,
	    "drop_bad_ip_csum"),
	ROW("ipv4 first fragment", DATA(SEND, RX_CUM), mut_frag_first, XDP_DROP,
	    "drop_ip_frag"),
	ROW("ipv4 length beyond the frame", DATA(SEND, RX_CUM), mut_ip_len_big,
	    XDP_DROP, "drop_bad_ip_len"),
	ROW("udp length short of ip", DATA(SEND, RX_CUM), mut_udp_len, XDP_DROP,
	    "drop_bad_udp_len"),
	ROW("ipv6 length beyond the frame", DATA(SEND, RX_CUM, .ipv6 = true),
	    mut_ip6_len_big, XDP_DROP, "drop_bad_ip_len"),
	ROW("rocev2 unknown qpn", RV2(SEND_ONLY, 0x999, .payload = 8), NULL,
	    XDP_DROP, "rx_rocev2 drop_no_conn"),
	ROW("rocev2 tver 1", RV2(SEND_ONLY, QPN_A, .payload = 8), mut_tver1,
	    XDP_DROP, "rx_rocev2 drop_bad_version"),
	ROW("rocev2 opcode 0x15", RV2(SEND_ONLY, QPN_A, .payload = 8),
	    mut_rv2_op15, XDP_DROP, "rx_rocev2 drop_bad_opcode"),
	ROW("rocev2 ACK with payload", RV2(ACK, QPN_A), mut_rv2_ack_payload,
	    XDP_DROP, "rx_rocev2 drop_bad_payload"),

	/* ---- answered here: XDP_TX of an ACK from published state ---- */
	ROW("duplicate before cum_psn", DATA(SEND, RX_CUM - 10), NULL, XDP_TX,
	    "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX, .check = CHECK_XDP_ACKED),
	ROW("duplicate via SACK bit", DATA(WRITE, RX_CUM + 6), NULL, XDP_TX,
	    "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	ROW("duplicate with ACK_REQ",
	    DATA(SEND, RX_CUM - 1, .flags = MROCE_F_ACK_REQ), NULL, XDP_TX,
	    "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	ROW("duplicate carrying CE", DATA(SEND, RX_CUM - 1, .tos = 0x2b), NULL,
	    XDP_TX, "rx_metaroce rx_ce tx_ack_dup",
	    .ack_flags = ACKF_DX | MROCE_ACKF_ECE, .ack_ce = 1),
	ROW("duplicate on vlan", DATA(SEND, RX_CUM - 1, .vlan = 1 + 0x2064),
	    NULL, XDP_TX, "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	ROW("duplicate on ipv6",
	    DATA6(SEND, RX_CUM - 1, .tos = 0xb8), NULL, XDP_TX,
	    "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	ROW("duplicate on ipv6 + vlan",
	    DATA6(SEND, RX_CUM - 1, .vlan = 1 + 5), NULL, XDP_TX,
	    "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	ROW("duplicate on ipv4 with options", DATA(SEND, RX_CUM - 1),
	    mut_ip_options, XDP_TX, "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	/* the ICRC is verified first (bpf_xdp_load_bytes: fragments too) */
	ROW("duplicate at the verify bound",
	    DATA(SEND, RX_CUM - 1, .l4_len = MROCE_XDP_VERIFY_MAX), NULL,
	    XDP_TX, "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	ROW("duplicate at the verify bound, ipv6 + vlan",
	    DATA6(WRITE, RX_CUM - 1, .vlan = 1 + 5,
		  .l4_len = MROCE_XDP_VERIFY_MAX),
	    NULL, XDP_TX, "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	ROW("duplicate across the linear part and a fragment",
	    DATA(WRITE, RX_CUM - 1, .l4_len = MROCE_XDP_VERIFY_MAX), NULL,
	    XDP_TX, "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX,
	    .linear = 128),
	/* a PROBE padded as mroce sends it (spec 5.10) is as long as its
	 * ACK: answered here, ICRC first */
	ROW("PROBE padded to its ACK's length",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, 1234), NULL, XDP_TX,
	    "rx_metaroce tx_ack_probe",
	    .ack_flags = MROCE_ACKF_PROBE | MROCE_ACKF_XDP),
	ROW("PROBE, no paths: reply on its port",
	    MR(PROBE, CONN_C, RX_PATH, RX_GEN, 5), NULL, XDP_TX,
	    "rx_metaroce tx_ack_probe",
	    .ack_flags = MROCE_ACKF_PROBE | MROCE_ACKF_XDP),
	/* the daemon's last ACK covered it long ago, but it is a port check
	 * (nothing outstanding): no sign of lost ACKs */
	ROW("port-check PROBE covered by an ACK long gone",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, RX_CUM, .flags = MROCE_F_CHECK),
	    NULL, XDP_TX, "rx_metaroce tx_ack_probe",
	    .ack_flags = MROCE_ACKF_PROBE | MROCE_ACKF_XDP,
	    .setup = SETUP_ACK_LOST),
	/* ... and one the ACK does not cover asks about data sent since */
	ROW("PROBE beyond the daemon's last ACK",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, RX_CUM + 1), NULL, XDP_TX,
	    "rx_metaroce tx_ack_probe",
	    .ack_flags = MROCE_ACKF_PROBE | MROCE_ACKF_XDP,
	    .setup = SETUP_ACK_LOST),
	ROW("duplicate, no paths: reply on its port",
	    MR(SEND, CONN_C, RX_PATH, RX_GEN, RX_CUM - 1), NULL, XDP_TX,
	    "rx_metaroce tx_ack_dup",
	    .ack_flags = MROCE_ACKF_DUP | MROCE_ACKF_XDP),
	ROW("duplicate with CE on a path that saw none before",
	    MR(SEND, CONN_C, RX_PATH, RX_GEN, RX_CUM - 1, .tos = 3), NULL,
	    XDP_TX, "rx_metaroce rx_ce tx_ack_dup",
	    .ack_flags = ACKF_DX | MROCE_ACKF_ECE, .ack_ce = 1),

	/* ---- triggers the kernel must NOT answer ---- */
	/* the ACK would be longer than its trigger (amplification): an
	 * unpadded PROBE's, a short duplicate's; the daemon answers */
	ROW("unpadded PROBE (its ACK is longer)",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, 1234, .unpadded = true), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ctrl ack_offload_larger"),
	ROW("unpadded PROBE, no paths (its ACK is longer)",
	    MR(PROBE, CONN_C, RX_PATH, RX_GEN, 5, .unpadded = true), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ctrl ack_offload_larger"),
	/* a PROBE that shows the daemon's ACKs lost is the daemon's (it
	 * answers from two ports and checks its own, spec 8.2) */
	/* data that arrived before it still waits for the daemon (a path is
	 * FIFO): answered here, it would be reported missing and resent */
	ROW("PROBE behind data still queued for the daemon",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, RX_CUM + 1), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_ctrl ack_probe_queued",
	    .setup = SETUP_DATA_QUEUED),
	ROW("PROBE covered by an ACK long gone",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, RX_CUM), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_ctrl ack_probe_acks_lost",
	    .setup = SETUP_ACK_LOST),
	ROW("duplicate shorter than its ACK",
	    DATA(SEND, RX_CUM - 1, .payload = 8), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_offload_larger"),
	ROW("duplicate as long as its ACK", DATA(SEND, RX_CUM - 1, .payload = 20),
	    NULL, XDP_TX, "rx_metaroce tx_ack_dup", .ack_flags = ACKF_DX),
	/* too long to verify here: the daemon checks the ICRC, answers */
	ROW("duplicate one byte over the verify bound",
	    DATA(SEND, RX_CUM - 1, .l4_len = MROCE_XDP_VERIFY_MAX + 1),
	    NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_offload_unverified"),
	ROW("duplicate over the verify bound with a bad ICRC",
	    DATA(SEND, RX_CUM - 1, .l4_len = MROCE_XDP_VERIFY_MAX + 1),
	    mut_bad_icrc, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_offload_unverified"),
	ROW("jumbo duplicate (frags)", DATA(WRITE, RX_CUM - 1, .payload = 8000),
	    NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_offload_unverified"),
	/* damaged: its tsval must not become an RTT sample */
	ROW("duplicate with a bad ICRC", DATA(SEND, RX_CUM - 1), mut_bad_icrc,
	    XDP_DROP, "rx_metaroce drop_bad_icrc", .check = CHECK_NOT_ACKED),
	ROW("duplicate with a damaged payload byte", DATA(SEND, RX_CUM - 1),
	    mut_bad_payload, XDP_DROP, "rx_metaroce drop_bad_icrc",
	    .check = CHECK_NOT_ACKED),
	ROW("duplicate at the verify bound with a bad ICRC",
	    DATA(SEND, RX_CUM - 1, .l4_len = MROCE_XDP_VERIFY_MAX),
	    mut_bad_icrc, XDP_DROP, "rx_metaroce drop_bad_icrc",
	    .check = CHECK_NOT_ACKED),
	ROW("duplicate on ipv6 + vlan with a damaged payload byte",
	    DATA6(SEND, RX_CUM - 1, .vlan = 1 + 5), mut_bad_payload, XDP_DROP,
	    "rx_metaroce drop_bad_icrc"),
	ROW("duplicate on ipv4 with options and a bad ICRC",
	    DATA(SEND, RX_CUM - 1), mut_ip_options_bad_icrc, XDP_DROP,
	    "rx_metaroce drop_bad_icrc"),
	ROW("duplicate with a damaged byte in its fragment",
	    DATA(WRITE, RX_CUM - 1, .l4_len = MROCE_XDP_VERIFY_MAX),
	    mut_bad_payload, XDP_DROP, "rx_metaroce drop_bad_icrc",
	    .check = CHECK_NOT_ACKED, .linear = 128),
	ROW("duplicate, conn without offload",
	    MR(SEND, CONN_B, RX_PATH, RX_GEN, RX_CUM - 1, .payload = 8), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_data"),
	ROW("duplicate of another generation",
	    MR(SEND, CONN_A, RX_PATH, 1, RX_CUM - 1), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data"),
	ROW("duplicate while state is published", DATA(SEND, RX_CUM - 1), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_data ack_offload_busy",
	    .setup = SETUP_SEQ_ODD),
	ROW("PROBE of a path without state",
	    MR(PROBE, CONN_A, RX_PATH + 1, 0, 1), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_ctrl"),
	/* ack_limit: one answer per path per gap, the budget, the off knob */
	ROW("duplicate right after an XDP ACK on its path",
	    DATA(SEND, RX_CUM - 1), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_offload_limited",
	    .setup = SETUP_PATH_ACKED),
	ROW("duplicate with ack_limit.per_ms 0", DATA(SEND, RX_CUM - 1), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_data ack_offload_limited",
	    .setup = SETUP_LIMIT_OFF),
	/* over the limit it goes to the daemon anyway: no CRC here */
	ROW("duplicate with a bad ICRC over ack_limit", DATA(SEND, RX_CUM - 1),
	    mut_bad_icrc, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_offload_limited",
	    .setup = SETUP_LIMIT_OFF),
	/* not from the connection's peer: whoever saw a conn_id must not
	 * get ACKs sent to an address of their choice, nor move the
	 * scoreboard; the daemon sees the frame (and drops it) */
	ROW("duplicate from another address",
	    DATA(SEND, RX_CUM - 1, .not_peer = true), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_not_peer"),
	ROW("duplicate from another address, ipv6",
	    DATA6(SEND, RX_CUM - 1, .not_peer = true), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_not_peer"),
	ROW("duplicate over ipv6 for a peer over ipv4",
	    DATA(SEND, RX_CUM - 1, .ipv6 = true), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_not_peer"),
	ROW("duplicate over ipv4 for a peer over ipv6",
	    MR(SEND, CONN_A6, RX_PATH, RX_GEN, RX_CUM - 1), NULL, XDP_REDIRECT,
	    "rx_metaroce redirect_data ack_not_peer"),
	ROW("PROBE from another address",
	    MR(PROBE, CONN_A, RX_PATH, RX_GEN, 1234, .not_peer = true), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ctrl ack_not_peer"),
	ROW("ACK from another address: no telemetry",
	    MR(ACK, CONN_A, SB_PATH, SB_GEN, 0, .not_peer = true), NULL,
	    XDP_REDIRECT, "rx_metaroce redirect_ack ack_not_peer",
	    .check = CHECK_SB_UNTOUCHED),
};

#define N_ROWS ((int)(sizeof(rows) / sizeof(rows[0])))

/* ------------------------------------------------------------------ */
/* Expected output and checks                                          */
/* ------------------------------------------------------------------ */

/* The ACK the program must write for input frame in: built with the
 * codec from the fixture (what the daemon published) and the input. */
static void expect_ack(struct env *e, const struct frame *in,
		       const struct row *r, struct frame *want)
{
	struct mroce_frame f;
	struct mroce_meta_pkt p, a = {0};
	struct mroce_conn_key k = {0};
	struct mroce_conn_val v;
	struct mroce_frame_spec s = {0};
	struct mroce_rx_path *rp;
	uint32_t psn, hash;
	size_t hl;
	int idx, l4, n;
	uint16_t sport;

	ck_assert_int_eq(mroce_frame_parse(in->b, in->len, &f), 0);
	ck_assert_int_eq(mroce_meta_parse(f.l4, f.l4_len, &p), 0);
	k.id = p.conn_id;
	k.proto = MROCE_CONN_METAROCE;
	ck_assert_int_eq(bpf_map_lookup_elem(e->m.conns_fd, &k, &v), 0);
	rp = mroce_xdp_rx_path(&e->m, v.slot, p.path);
	psn = p.opcode == MROCE_OP_PROBE ? p.next_psn : p.psn;
	hash = mroce_spray_hash(v.peer_conn_id,
				p.path | (uint32_t)p.path_gen << 8, psn);
	idx = mroce_spray_pick(&e->m.scoreboard[v.slot], hash, mroce_now_us());
	sport = idx >= 0 ? e->m.scoreboard[v.slot].path[idx].sport : 0;
	if (!sport)
		sport = f.sport;

	memcpy(s.dmac, f.smac, 6);
	memcpy(s.smac, f.dmac, 6);
	s.vlan = f.has_vlan ? f.vlan_tci : -1;
	s.l3.family = f.l3.family;
	memcpy(s.l3.src, f.l3.dst, 16);
	memcpy(s.l3.dst, f.l3.src, 16);
	s.l3.tos = f.l3.tos & 0xfc;
	s.l3.ttl = 64;
	s.sport = sport;
	s.dport = MROCE_UDP_PORT;
	s.ip_id = 0;

	a.opcode = MROCE_OP_ACK;
	a.conn_id = v.peer_conn_id;
	a.path = p.path;
	a.path_gen = p.path_gen;
	a.ack.cum_psn = rp->cum_psn;
	a.ack.tsecr = p.tsval;
	a.ack.rate_mbps = rp->rate_mbps;
	a.ack.ce_count = r->ack_ce;
	a.ack.flags = r->ack_flags;
	memcpy(a.ack.sack, rp->sack, MROCE_SACK_BYTES);
	hl = mroce_frame_hdr_len(&s);
	l4 = mroce_meta_build(&a, want->b + hl, sizeof(want->b) - hl);
	ck_assert_int_gt(l4, 0);
	n = mroce_frame_build(&s, (size_t)l4, want->b, sizeof(want->b));
	ck_assert_int_gt(n, 0);
	want->len = (size_t)n;
}

static void check_maps(struct env *e, const struct row *r,
		       const struct mroce_sb_path *sb_before)
{
	const struct mroce_sb_path *sp = &e->m.scoreboard[SLOT_A].path[SB_PATH];
	struct mroce_rx_path *rp = mroce_xdp_rx_path(&e->m, SLOT_A, RX_PATH);

	switch (r->check) {
	case CHECK_NONE:
		break;
	case CHECK_REDIRECT_NOTED:
		ck_assert_uint_eq(rp->redirect_psn, RX_CUM + 1);
		ck_assert_uint_eq(rp->redirect_gen, RX_GEN);
		break;
	case CHECK_LOSS_ECE:
		ck_assert_uint_eq(sp->loss_marks, 1);
		ck_assert_uint_eq(sp->ece_marks, 2);
		ck_assert_uint_ne(sp->last_loss_us, 0);
		ck_assert_uint_ne(sp->last_ece_us, 0);
		/* fall through */
	case CHECK_RTT:
		/* tsecr was now - 150 us when the frame was built */
		ck_assert_uint_ge(sp->last_rtt_us, 150);
		ck_assert_uint_lt(sp->last_rtt_us, 150 + 5000000);
		ck_assert_uint_eq(sp->srtt_us, sp->last_rtt_us);
		ck_assert_uint_eq(sp->rttvar_us, sp->last_rtt_us / 2);
		ck_assert_uint_eq(sp->acks, 1);
		ck_assert_uint_eq(sp->cum_psn, 77);
		ck_assert_uint_ne(sp->last_ack_us, 0);
		if (r->check == CHECK_RTT) {
			ck_assert_uint_eq(sp->loss_marks, 0);
			ck_assert_uint_eq(sp->last_ece_us, 0);
		}
		break;
	case CHECK_SB_UNTOUCHED:
		ck_assert_mem_eq(sp, sb_before, sizeof(*sp));
		break;
	case CHECK_XDP_ACKED:
		ck_assert_uint_eq(rp->ce_total, RX_CE_TOTAL);
		ck_assert_uint_eq(rp->xdp_acks, 1);
		break;
	case CHECK_NOT_ACKED:
		ck_assert_uint_eq(rp->xdp_acks, 0);
		ck_assert_uint_eq(rp->xdp_ack_us, 0);
		ck_assert_uint_eq(get_limit(e).used, 0);
		break;
	case CHECK_CE_ADDED:
		ck_assert_uint_eq(rp->ce_total, RX_CE_TOTAL + 1);
		ck_assert_uint_eq(rp->xdp_acks, 0);
		break;
	}
}

/* The counters the row names moved by one each (the byte counters of an
 * answer by the bytes of the answer and of its trigger), no other. */
static void check_counters(const struct row *r,
			   const struct mroce_xdp_counters *before,
			   const struct mroce_xdp_counters *after,
			   size_t in_len, size_t out_len, bool answered)
{
	uint64_t want[MROCE_XC__COUNT] = {[MROCE_XC_rx_packets] = 1};
	char names[256], *save = NULL, *tok;
	int bad = 0;

	snprintf(names, sizeof(names), "%s", r->ctrs);
	for (tok = strtok_r(names, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		int i = mroce_xdp_counter_find(tok);

		ck_assert_msg(i >= 0, "row '%s': no counter '%s'", r->desc,
			      tok);
		want[i]++;
	}
	if (answered) {
		want[MROCE_XC_tx_ack_bytes] = out_len;
		want[MROCE_XC_tx_ack_trigger_bytes] = in_len;
	}
	for (unsigned int i = 0; i < MROCE_XC__COUNT; i++) {
		uint64_t d = mroce_xdp_counter_get(after, i) -
			     mroce_xdp_counter_get(before, i);

		if (d != want[i]) {
			fprintf(stderr,
				"row '%s': counter %s moved by %llu, "
				"want %llu\n",
				r->desc, mroce_xdp_counter_name(i),
				(unsigned long long)d,
				(unsigned long long)want[i]);
			bad = 1;
		}
	}
	ck_assert_msg(!bad, "row '%s': counters (see stderr)", r->desc);
}

static const char *verdict_name(int v)
{
	static const char *const n[] = {"ABORTED", "DROP", "PASS", "TX",
					"REDIRECT"};

	return v >= 0 && v <= 4 ? n[v] : "?";
}

START_TEST(mroce_xdp__table)
{
	const struct row *r = &rows[_i];
	static struct frame in, out, want;
	struct mroce_xdp_counters before, after;
	struct mroce_sb_path sb_before;
	struct xdp_md md = {0};
	struct env e;
	int err;

	env_init(&e, r->setup != SETUP_NO_XSK);
	if (r->setup == SETUP_SEQ_ODD)
		mroce_xdp_rx_path(&e.m, SLOT_A, RX_PATH)->seq |= 1;
	if (r->setup == SETUP_PATH_ACKED) {
		set_limit(&e, MROCE_ACK_LIMIT_PER_MS, 1000000);
		mroce_xdp_rx_path(&e.m, SLOT_A, RX_PATH)->xdp_ack_us =
			(uint32_t)(mono_ns() / 1000);
	}
	if (r->setup == SETUP_DATA_QUEUED) {
		struct mroce_rx_path *q =
			mroce_xdp_rx_path(&e.m, SLOT_A, RX_PATH);

		q->redirect_psn = RX_CUM + 1;
		q->redirect_gen = RX_GEN;
	}
	if (r->setup == SETUP_ACK_LOST)
		mroce_rx_publish_ack(mroce_xdp_rx_path(&e.m, SLOT_A, RX_PATH),
				     RX_CUM, (uint32_t)(mono_ns() / 1000) - 1000);
	if (r->setup == SETUP_LIMIT_OFF)
		set_limit(&e, 0, MROCE_ACK_LIMIT_PATH_GAP_US);
	if (r->setup == SETUP_GATE_SHUT) {
		uint32_t zero = 0;
		uint64_t shut = (uint64_t)INT64_MAX;

		ck_assert_int_eq(bpf_map_update_elem(bpf_map__fd(
							     e.skel->maps.no_conn_gate),
						     &zero, &shut, BPF_ANY),
				 0);
	}
	in.len = r->in.kind == K_RV2 ? build_rv2(&r->in, &in)
				     : build_mr(&r->in, &in);
	if (r->mutate)
		r->mutate(&in);
	if (r->verdict == XDP_TX)
		expect_ack(&e, &in, r, &want);
	sb_before = e.m.scoreboard[SLOT_A].path[SB_PATH];

	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in.b,
		    .data_size_in = (uint32_t)in.len, .data_out = out.b,
		    .data_size_out = sizeof(out.b), .repeat = 1);
	/* The kernel puts what is past data_end into a fragment. */
	if (r->linear) {
		ck_assert_uint_lt(r->linear, in.len);
		md.data_end = r->linear;
		o.ctx_in = &md;
		o.ctx_size_in = sizeof(md);
		o.ctx_out = &md;
		o.ctx_size_out = sizeof(md);
	}
	ck_assert_int_eq(mroce_xdp_counters_read(e.m.counters_fd, &before), 0);
	err = bpf_prog_test_run_opts(e.prog_fd, &o);
	ck_assert_msg(err == 0, "row '%s': test_run: %s", r->desc,
		      strerror(-err));
	ck_assert_int_eq(mroce_xdp_counters_read(e.m.counters_fd, &after), 0);
	out.len = o.data_size_out;

	ck_assert_msg((int)o.retval == r->verdict,
		      "row '%s': verdict %s, want %s", r->desc,
		      verdict_name((int)o.retval), verdict_name(r->verdict));
	/* Invariants of every row: an ACK or NAK is never answered, and
	 * nothing leaves longer than it came in (no amplification). */
	ck_assert_msg(!(r->in.kind == K_MR &&
			(r->in.op == MROCE_OP_ACK || r->in.op == MROCE_OP_NAK) &&
			(int)o.retval == XDP_TX),
		      "row '%s': an ACK/NAK answered", r->desc);
	ck_assert_msg((int)o.retval != XDP_TX || out.len <= in.len,
		      "row '%s': %zu bytes out for %zu in", r->desc,
		      (size_t)out.len, (size_t)in.len);
	if (r->verdict == XDP_TX) {
		struct mroce_frame f;
		struct mroce_meta_pkt p;

		if (out.len != want.len || memcmp(out.b, want.b, want.len))
			mroce_hexdiff(r->desc, out.b, out.len, want.b,
				      want.len);
		ck_assert_msg(
			out.len == want.len && !memcmp(out.b, want.b, want.len),
			"row '%s': ACK differs (hex dump above)", r->desc);
		ck_assert_int_eq(mroce_frame_parse(out.b, out.len, &f), 0);
		ck_assert_int_eq(mroce_meta_parse(f.l4, f.l4_len, &p), 0);
		ck_assert(p.ack.flags & MROCE_ACKF_XDP);
	} else {
		if (out.len != in.len || memcmp(out.b, in.b, in.len))
			mroce_hexdiff(r->desc, out.b, out.len, in.b, in.len);
		ck_assert_msg(out.len == in.len && !memcmp(out.b, in.b, in.len),
			      "row '%s': frame modified", r->desc);
		/* the frame had the linear part the row asked for */
		ck_assert_msg(!r->linear || md.data_end == r->linear,
			      "row '%s': linear part %u bytes, want %u",
			      r->desc, md.data_end, r->linear);
	}
	check_counters(r, &before, &after, in.len, out.len,
		       (int)o.retval == XDP_TX);
	check_maps(&e, r, &sb_before);
	env_fini(&e);
}
END_TEST

/* The daemon's view: publish, and the published state is what
 * the next XDP ACK says (a second publish replaces the first). */
START_TEST(mroce_rx_publish__next_ack_uses_new_state)
{
	static struct frame in, out;
	struct in_spec is = DATA(SEND, 1500, .payload = 64);
	struct mroce_rx_path *rp;
	struct mroce_frame f;
	struct mroce_meta_pkt p;
	uint8_t sack[MROCE_SACK_BYTES] = {0};
	struct env e;

	env_init(&e, true);
	rp = mroce_xdp_rx_path(&e.m, SLOT_A, RX_PATH);
	sack[1] = 0x80;
	mroce_rx_publish(rp, RX_GEN, MROCE_RXP_F_VALID, 2000, 2000, 7, sack);
	ck_assert_uint_eq(rp->seq % 2, 0);
	in.len = build_mr(&is, &in);
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in.b,
		    .data_size_in = (uint32_t)in.len, .data_out = out.b,
		    .data_size_out = sizeof(out.b));
	ck_assert_int_eq(bpf_prog_test_run_opts(e.prog_fd, &o), 0);
	ck_assert_int_eq(o.retval, XDP_TX);
	ck_assert_int_eq(mroce_frame_parse(out.b, o.data_size_out, &f), 0);
	ck_assert_int_eq(mroce_meta_parse(f.l4, f.l4_len, &p), 0);
	ck_assert_uint_eq(p.ack.cum_psn, 2000);
	ck_assert_uint_eq(p.ack.rate_mbps, 7);
	ck_assert_uint_eq(p.ack.ce_count, 0);
	ck_assert_uint_eq(p.ack.sack[1], 0x80);
	ck_assert_uint_eq(p.ack.tsecr, TSVAL);
	env_fini(&e);
}
END_TEST

/* Runs one frame, returns the verdict. */
static int run_one(struct env *e, const struct in_spec *is)
{
	static struct frame in, out;

	in.len = build_mr(is, &in);
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in.b,
		    .data_size_in = (uint32_t)in.len, .data_out = out.b,
		    .data_size_out = sizeof(out.b));
	ck_assert_int_eq(bpf_prog_test_run_opts(e->prog_fd, &o), 0);
	return (int)o.retval;
}

/* A burst of duplicates: one XDP ACK per path per path_gap_us, at most
 * per_ms a millisecond over all paths; the rest go to the daemon. */
START_TEST(ack_limit__a_burst_gets_one_answer_per_gap_and_per_budget)
{
	struct in_spec dup = DATA(SEND, RX_CUM - 1);
	struct mroce_xdp_counters c;
	struct env e;
	int tx = 0;

	env_init(&e, true);
	set_limit(&e, 1000, 1000000); /* a 1 s gap: one answer */
	for (int i = 0; i < 4; i++)
		tx += run_one(&e, &dup) == XDP_TX;
	ck_assert_int_eq(tx, 1);
	ck_assert_int_eq(mroce_xdp_counters_read(e.m.counters_fd, &c), 0);
	ck_assert_uint_eq(c.ack_offload_limited, 3);
	ck_assert_uint_eq(c.tx_ack_dup, 1);
	/* no gap, 2 a millisecond: 2 of 3 (again if the burst straddled
	 * two milliseconds) */
	for (int attempt = 0; attempt < 5; attempt++) {
		uint64_t ms = mono_ns() / 1000000;

		set_limit(&e, 2, 0);
		tx = 0;
		for (int i = 0; i < 3; i++)
			tx += run_one(&e, &dup) == XDP_TX;
		if (mono_ns() / 1000000 == ms)
			break;
	}
	ck_assert_int_eq(tx, 2);
	ck_assert_uint_eq(get_limit(&e).used, 2);
	env_fini(&e);
}
END_TEST

/* A connection slot reset (conn down, slot reuse): nothing of what was
 * published answers or is fed any more. */
START_TEST(mroce_xdp_slot_reset__nothing_answered_or_fed_after)
{
	struct in_spec dup = DATA(SEND, RX_CUM - 1);
	struct in_spec ack = MR(ACK, CONN_A, SB_PATH, SB_GEN, 0);
	struct mroce_xdp_counters c;
	struct env e;

	env_init(&e, true);
	set_limit(&e, 1000, 0);
	ck_assert_int_eq(run_one(&e, &dup), XDP_TX);
	ck_assert_int_eq(run_one(&e, &ack), XDP_REDIRECT);
	mroce_xdp_slot_reset(&e.m, SLOT_A);
	ck_assert_uint_eq(e.m.scoreboard[SLOT_A].active_mask, 0);
	ck_assert_uint_eq(mroce_xdp_rx_path(&e.m, SLOT_A, RX_PATH)->flags, 0);
	ck_assert_int_eq(run_one(&e, &dup), XDP_REDIRECT);
	ck_assert_int_eq(run_one(&e, &ack), XDP_REDIRECT);
	ck_assert_int_eq(mroce_xdp_counters_read(e.m.counters_fd, &c), 0);
	ck_assert_uint_eq(c.tx_ack_dup, 1);
	ck_assert_uint_eq(c.redirect_data, 1);
	ck_assert_uint_eq(c.ack_rtt_samples, 1);
	ck_assert_uint_eq(c.ack_stale_gen, 1);
	/* the other slots keep theirs */
	ck_assert_uint_eq(mroce_xdp_rx_path(&e.m, SLOT_C, RX_PATH)->flags,
			  MROCE_RXP_F_VALID);
	env_fini(&e);
}
END_TEST

/* Rodata knobs: with ACK offload off, a duplicate goes to the daemon. */
START_TEST(mroce_xdp__knob_ack_offload_off)
{
	static struct frame in, out;
	struct in_spec is = DATA(SEND, RX_CUM - 1);
	struct mroce_xdp *skel = mroce_xdp__open();
	struct mroce_xdp_maps m;
	int err;

	ck_assert_ptr_nonnull(skel);
	skel->rodata->cfg_ack_offload = 0;
	ck_assert_int_eq(mroce_xdp__load(skel), 0);
	err = mroce_xdp_maps_from_fds(&m, bpf_map__fd(skel->maps.conns),
				      bpf_map__fd(skel->maps.xsks),
				      bpf_map__fd(skel->maps.rx_state),
				      bpf_map__fd(skel->maps.scoreboard),
				      bpf_map__fd(skel->maps.counters));
	ck_assert_int_eq(err, 0);
	{
		struct env e = {.skel = skel, .m = m};

		fixture_fill(&e);
	}
	in.len = build_mr(&is, &in);
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in.b,
		    .data_size_in = (uint32_t)in.len, .data_out = out.b,
		    .data_size_out = sizeof(out.b));
	ck_assert_int_eq(bpf_prog_test_run_opts(
				 bpf_program__fd(skel->progs.mroce_xdp), &o),
			 0);
	/* no socket bound in this test: the daemon path ends in no_xsk */
	ck_assert_int_eq(o.retval, XDP_DROP);
	mroce_xdp_maps_close(&m);
	mroce_xdp__destroy(skel);
}
END_TEST

MROCE_SUITE(xdp_prog_suite)
Suite *xdp_prog_suite(void)
{
	Suite *s = suite_create("xdp_prog");
	const char *why = mroce_need_bpf();
	TCase *tc;

	if (why) {
		mroce_skip("xdp_prog", why);
		return s;
	}
	tc = tcase_create("table");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, mroce_xdp__table, 0, N_ROWS);
	tcase_add_test(tc, mroce_rx_publish__next_ack_uses_new_state);
	tcase_add_test(tc, mroce_xdp__knob_ack_offload_off);
	tcase_add_test(tc, ack_limit__a_burst_gets_one_answer_per_gap_and_per_budget);
	tcase_add_test(tc, mroce_xdp_slot_reset__nothing_answered_or_fed_after);
	suite_add_tcase(s, tc);
	return s;
}
