// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_pcapgen - write one sample frame of every MetaRoCE v0 and RoCEv2 RC
 * packet type to a classic pcap file, built with the project's codec.
 *
 * The file is the ground truth of the Wireshark interop tests: --list prints
 * what each frame is supposed to contain (the values we asked the codec to
 * encode), and the tests compare that field by field with what tshark
 * decodes. --hexdump prints the same frames annotated field by field; the
 * dumps in docs/spec.md come from it, so they are real bytes of our code.
 *
 * Every value is distinctive (no zeros where a field can hold something
 * else, no two fields alike) so that a swapped or misplaced field shows.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mroce/codec.h"
#include "../common/util.h"

#define FRAME_CAP	(MROCE_MAX_PAYLOAD + 256)
#define PCAP_SNAPLEN	65535
#define PCAP_LINKTYPE_ETHERNET 1

enum net {
	NET4,		/* IPv4, no VLAN tag */
	NET6,		/* IPv6 */
	NET4_VLAN,	/* IPv4 behind one 802.1Q tag */
};

/* One sample frame. Exactly one of mr/rv is used, by proto. */
struct sample {
	uint8_t proto;		/* enum mroce_proto */
	uint8_t net;		/* enum net */
	bool reverse;		/* responder -> initiator (ACKs, responses) */
	bool bad_icrc;		/* ICRC deliberately wrong (--bad-icrc) */
	uint16_t sport;		/* UDP source port: the path entropy */
	uint16_t vlan_tci;	/* NET4_VLAN only */
	uint32_t payload_len;
	struct mroce_meta_pkt mr;
	struct mroce_rv2_pkt rv;
};

#define CONN_I		0xc0ffee01u	/* initiator's conn id */
#define CONN_R		0x1a2b3c4du	/* responder's conn id */
#define NONCE		0x0123456789abcdefull
#define COOKIE		0x8badf00ddeadc0deull
#define QPN_REQ		0x12a5c3u	/* responder's QP (requester sends to) */
#define QPN_RSP		0x0d7e11u	/* requester's QP */

#define MR(...) .proto = MROCE_PROTO_METAROCE, .mr = { __VA_ARGS__ }
#define RV(...) .proto = MROCE_PROTO_ROCEV2, .rv = { .pkey = 0xffff, __VA_ARGS__ }

static const struct sample samples[] = {
	/* ---------------- MetaRoCE v0, initiator -> responder data */
	{ MR(.opcode = MROCE_OP_SEND, .flags = MROCE_F_ACK_REQ | MROCE_F_LAST,
	     .conn_id = CONN_R, .path = 3, .path_gen = 2,
	     .psn = 0x10203040, .tsval = 0x00a1b2c3,
	     .stream = 0x51, .msn = 0x1001, .offset = 0x400, .msg_len = 0x430,
	     .ssn = 0x77),
	  .sport = 0xc3a1, .payload_len = 48 },
	{ MR(.opcode = MROCE_OP_SEND_IMM,
	     .flags = MROCE_F_SOLICITED | MROCE_F_LAST,
	     .conn_id = CONN_R, .path = 1, .path_gen = 9,
	     .psn = 0x2000aa01, .tsval = 0x00b00001,
	     .stream = 0x52, .msn = 0x2002, .offset = 0, .msg_len = 32,
	     .ssn = 0x78, .imm = 0xdeadbeef),
	  .net = NET4_VLAN, .vlan_tci = 0x6064, .sport = 0xc1b2,
	  .payload_len = 32 },
	{ MR(.opcode = MROCE_OP_WRITE, .conn_id = CONN_R, .path = 5,
	     .path_gen = 1, .psn = 0x30000003, .tsval = 0x00c00003,
	     .stream = 0x53, .msn = 0x3003, .offset = 0x1000,
	     .msg_len = 0x4000, .va = 0x00007f1234560000ull,
	     .rkey = 0x5eed1234),
	  .sport = 0xc5c3, .payload_len = 64 },
	{ MR(.opcode = MROCE_OP_WRITE_IMM,
	     .flags = MROCE_F_LAST | MROCE_F_RETX, .conn_id = CONN_R,
	     .path = 6, .path_gen = 4, .psn = 0x40000004, .tsval = 0x00c00004,
	     .stream = 0x54, .msn = 0x4004, .offset = 0x20, .msg_len = 0x40,
	     .va = 0x00007f00aabb0000ull, .rkey = 0x0badf00d,
	     .imm = 0xcafe0004),
	  .sport = 0xc6d4, .payload_len = 32 },
	{ MR(.opcode = MROCE_OP_READ_REQ, .flags = MROCE_F_ACK_REQ,
	     .conn_id = CONN_R, .path = 2, .path_gen = 7,
	     .psn = 0x50000005, .tsval = 0x00c00005,
	     .stream = 0x55, .msn = 0x5005, .offset = 0, .msg_len = 0x2000,
	     .va = 0x00007e0000001000ull, .rkey = 0x11223344,
	     .sink_va = 0x00007d0000002000ull, .sink_key = 0x55667788),
	  .sport = 0xc2e5 },
	/* ---------------- MetaRoCE v0, responder -> initiator. The READ
	 * response names the requester's stream (0x65) and repeats the
	 * READ_REQ's msn and SINK. */
	{ MR(.opcode = MROCE_OP_READ_RESP, .flags = MROCE_F_LAST,
	     .conn_id = CONN_I, .path = 4, .path_gen = 3,
	     .psn = 0x60000006, .tsval = 0x00d00006,
	     .stream = 0x65, .msn = 0x5005, .offset = 0x1fe0,
	     .msg_len = 0x2000, .va = 0x00007d0000002000ull,
	     .rkey = 0x55667788),
	  .reverse = true, .sport = 0xd4f6, .payload_len = 32 },
	{ MR(.opcode = MROCE_OP_ACK, .conn_id = CONN_I, .path = 3,
	     .path_gen = 2,
	     .ack = { .cum_psn = 0x10203041, .tsecr = 0x00a1b2c3,
		      .rate_mbps = 25000, .ce_count = 5,
		      .flags = MROCE_ACKF_ECE,
		      /* PSNs cum+1..cum+3, cum+6, cum+65, cum+256 */
		      .sack = { [0] = 0x27, [8] = 0x01, [31] = 0x80 } }),
	  .reverse = true, .sport = 0xd307 },
	{ MR(.opcode = MROCE_OP_NAK, .conn_id = CONN_I, .path = 5,
	     .path_gen = 1,
	     .nak = { .code = MROCE_NAK_BAD_RKEY, .stream = 0x53,
		      .msn = 0x3003, .psn = 0x30000003 }),
	  .reverse = true, .sport = 0xd518 },
	{ MR(.opcode = MROCE_OP_NAK, .conn_id = CONN_I, .path = 3,
	     .path_gen = 2,
	     .nak = { .code = MROCE_NAK_RNR, .rnr_timer = 12,
		      .stream = 0x51, .msn = 0x1001, .psn = 0x10203040 }),
	  .reverse = true, .sport = 0xd329 },
	{ MR(.opcode = MROCE_OP_NAK, .conn_id = CONN_I, .path = 6,
	     .path_gen = 3,
	     .nak = { .code = MROCE_NAK_STALE_PATH, .psn = 0x40000010 }),
	  .reverse = true, .sport = 0xd63a },
	/* ---------------- MetaRoCE v0, path management */
	{ MR(.opcode = MROCE_OP_PROBE, .flags = MROCE_F_ACK_REQ,
	     .conn_id = CONN_R, .path = 7, .path_gen = 1,
	     .next_psn = 0x70000007, .tsval = 0x00e00007),
	  .sport = 0xc74b },
	{ MR(.opcode = MROCE_OP_PATH_REROLL, .conn_id = CONN_R, .path = 7,
	     .path_gen = 2,
	     .reroll = { .old_gen = 1, .new_gen = 2, .new_sport = 0xe75c,
			 .reason = MROCE_REROLL_ECN }),
	  .sport = 0xe75c },
	/* ---------------- MetaRoCE v0, connection handshake and close */
	{ MR(.opcode = MROCE_OP_CONNECT_REQ, .conn_id = 0,
	     .conn = { .src_conn_id = CONN_I, .isn = 0x13579bdf,
		       .nonce = NONCE, .mtu = 4096, .max_paths = 8 }),
	  .sport = 0xc000 },
	{ MR(.opcode = MROCE_OP_CONNECT_CHALLENGE, .conn_id = CONN_I,
	     .conn = { .nonce = NONCE, .cookie = COOKIE,
		       .cookie_time = 0x00012345, .mtu = 8192,
		       .max_paths = 16 }),
	  .reverse = true, .sport = 0xc000 },
	{ MR(.opcode = MROCE_OP_CONNECT_CONFIRM, .conn_id = 0,
	     .conn = { .src_conn_id = CONN_I, .isn = 0x13579bdf,
		       .nonce = NONCE, .cookie = COOKIE,
		       .cookie_time = 0x00012345, .mtu = 4096,
		       .max_paths = 8 }),
	  .sport = 0xc000 },
	{ MR(.opcode = MROCE_OP_CONNECT_ACCEPT, .conn_id = CONN_I,
	     .conn = { .src_conn_id = CONN_R, .isn = 0x2468ace0,
		       .nonce = NONCE, .mtu = 4096, .max_paths = 8 }),
	  .reverse = true, .sport = 0xc000 },
	{ MR(.opcode = MROCE_OP_CLOSE, .conn_id = CONN_R,
	     .conn = { .src_conn_id = CONN_I, .nonce = NONCE,
		       .reason = MROCE_CLOSE_TIMEOUT }),
	  .sport = 0xc000 },
	{ MR(.opcode = MROCE_OP_CLOSE_ACK, .conn_id = CONN_I,
	     .conn = { .src_conn_id = CONN_R, .nonce = NONCE }),
	  .reverse = true, .sport = 0xc000 },
	/* ---------------- MetaRoCE v0 over IPv6 */
	{ MR(.opcode = MROCE_OP_WRITE, .flags = MROCE_F_ACK_REQ,
	     .conn_id = CONN_R, .path = 12, .path_gen = 5,
	     .psn = 0x9abcdef0, .tsval = 0x00f0000c,
	     .stream = 0x5c, .msn = 0xc00c, .offset = 0x2000,
	     .msg_len = 0x2040, .va = 0x00007f5566770000ull,
	     .rkey = 0x7ea51234),
	  .net = NET6, .sport = 0xccd0, .payload_len = 40 },
	{ MR(.opcode = MROCE_OP_ACK, .conn_id = CONN_I, .path = 12,
	     .path_gen = 5,
	     .ack = { .cum_psn = 0x9abcdef1, .tsecr = 0x00f0000c,
		      .rate_mbps = 100000, .ce_count = 0,
		      .flags = MROCE_ACKF_DUP | MROCE_ACKF_XDP,
		      .sack = { [1] = 0x81, [16] = 0xf0 } }),
	  .net = NET6, .reverse = true, .sport = 0xdce1 },

	/* ---------------- RoCEv2 RC, requester -> responder */
	{ RV(.opcode = ROCEV2_OP_SEND_FIRST, .dqpn = QPN_REQ, .psn = 0x0000ff),
	  .sport = 0xe001, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_SEND_MIDDLE, .dqpn = QPN_REQ,
	     .psn = 0x000100),
	  .sport = 0xe001, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_SEND_LAST, .dqpn = QPN_REQ, .psn = 0x000101,
	     .ackreq = true),
	  .sport = 0xe001, .payload_len = 13 },
	{ RV(.opcode = ROCEV2_OP_SEND_LAST_IMM, .dqpn = QPN_REQ,
	     .psn = 0x000102, .ackreq = true, .imm = 0x1234abcd),
	  .sport = 0xe001, .payload_len = 16 },
	{ RV(.opcode = ROCEV2_OP_SEND_ONLY, .dqpn = QPN_REQ, .psn = 0x000103,
	     .se = true, .ackreq = true),
	  .sport = 0xe001, .payload_len = 24 },
	{ RV(.opcode = ROCEV2_OP_SEND_ONLY_IMM, .dqpn = QPN_REQ,
	     .psn = 0xabcdef, .ackreq = true, .imm = 0xfeedface),
	  .sport = 0xe001, .payload_len = 8 },
	{ RV(.opcode = ROCEV2_OP_WRITE_FIRST, .dqpn = QPN_REQ, .psn = 0x000200,
	     .va = 0x00007f0011220000ull, .rkey = 0x00c0ffee,
	     .dma_len = 0x3000),
	  .sport = 0xe001, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_WRITE_MIDDLE, .dqpn = QPN_REQ,
	     .psn = 0x000201),
	  .sport = 0xe001, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_WRITE_LAST, .dqpn = QPN_REQ, .psn = 0x000202,
	     .ackreq = true),
	  .sport = 0xe001, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_WRITE_LAST_IMM, .dqpn = QPN_REQ,
	     .psn = 0x000203, .ackreq = true, .imm = 0x0a0b0c0d),
	  .sport = 0xe001, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_WRITE_ONLY, .dqpn = QPN_REQ, .psn = 0x000204,
	     .ackreq = true, .va = 0x00007f0011230000ull, .rkey = 0x00c0ffef,
	     .dma_len = 32),
	  .sport = 0xe001, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_WRITE_ONLY_IMM, .dqpn = QPN_REQ,
	     .psn = 0x000205, .ackreq = true, .se = true,
	     .va = 0x00007f0011240000ull, .rkey = 0x00c0fff0, .dma_len = 30,
	     .imm = 0x600df00d),
	  .sport = 0xe001, .payload_len = 30 },
	{ RV(.opcode = ROCEV2_OP_READ_REQ, .dqpn = QPN_REQ, .psn = 0x000300,
	     .ackreq = true, .va = 0x00007f0033440000ull, .rkey = 0x00beef01,
	     .dma_len = 0x60),
	  .sport = 0xe001 },
	/* ---------------- RoCEv2 RC, responder -> requester */
	{ RV(.opcode = ROCEV2_OP_READ_RESP_FIRST, .dqpn = QPN_RSP,
	     .psn = 0x000300, .syndrome = 0x1f, .msn = 0x000042),
	  .reverse = true, .sport = 0xf002, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_READ_RESP_MIDDLE, .dqpn = QPN_RSP,
	     .psn = 0x000301),
	  .reverse = true, .sport = 0xf002, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_READ_RESP_LAST, .dqpn = QPN_RSP,
	     .psn = 0x000302, .syndrome = 0x1f, .msn = 0x000043),
	  .reverse = true, .sport = 0xf002, .payload_len = 32 },
	{ RV(.opcode = ROCEV2_OP_READ_RESP_ONLY, .dqpn = QPN_RSP,
	     .psn = 0x000303, .syndrome = 0x1f, .msn = 0x000044),
	  .reverse = true, .sport = 0xf002, .payload_len = 20 },
	{ RV(.opcode = ROCEV2_OP_ACK, .dqpn = QPN_RSP, .psn = 0x000205,
	     .syndrome = ROCEV2_AETH_ACK | ROCEV2_AETH_CREDIT_INVALID,
	     .msn = 0x000045),
	  .reverse = true, .sport = 0xf002 },
	{ RV(.opcode = ROCEV2_OP_ACK, .dqpn = QPN_RSP, .psn = 0x000206,
	     .syndrome = ROCEV2_AETH_NAK | ROCEV2_NAK_PSN_SEQ,
	     .msn = 0x000046),
	  .reverse = true, .sport = 0xf002 },
	{ RV(.opcode = ROCEV2_OP_ACK, .dqpn = QPN_RSP, .psn = 0x000207,
	     .syndrome = ROCEV2_AETH_RNR_NAK | 0x0e, .msn = 0x000047),
	  .reverse = true, .sport = 0xf002 },
	/* ---------------- RoCEv2 over IPv6 */
	{ RV(.opcode = ROCEV2_OP_WRITE_ONLY, .dqpn = QPN_REQ, .psn = 0x000400,
	     .ackreq = true, .va = 0x00007f0099880000ull, .rkey = 0x00abcdef,
	     .dma_len = 27),
	  .net = NET6, .sport = 0xe6a1, .payload_len = 27 },
	{ RV(.opcode = ROCEV2_OP_READ_RESP_ONLY, .dqpn = QPN_RSP,
	     .psn = 0x000401, .syndrome = 0x1f, .msn = 0x000048),
	  .net = NET6, .reverse = true, .sport = 0xf6b2, .payload_len = 16 },
	/* ---------------- RoCEv2 congestion notification: the responder saw
	 * CE on the requester's traffic and asks QP 0x0d7e11 to slow down. */
	{ RV(.opcode = ROCEV2_OP_CNP, .dqpn = QPN_RSP, .psn = 0, .becn = true),
	  .reverse = true, .sport = 0xf002 },
};

/* Appended by --bad-icrc: same as a sample above but with a wrong ICRC. */
static const struct sample bad_samples[] = {
	{ MR(.opcode = MROCE_OP_WRITE, .flags = MROCE_F_ACK_REQ,
	     .conn_id = CONN_R, .path = 5, .path_gen = 1,
	     .psn = 0x30000004, .tsval = 0x00c00013,
	     .stream = 0x53, .msn = 0x3003, .offset = 0x1040,
	     .msg_len = 0x4000, .va = 0x00007f1234560000ull,
	     .rkey = 0x5eed1234),
	  .sport = 0xc5c3, .payload_len = 64, .bad_icrc = true },
	{ RV(.opcode = ROCEV2_OP_WRITE_ONLY, .dqpn = QPN_REQ, .psn = 0x000500,
	     .ackreq = true, .va = 0x00007f0011250000ull, .rkey = 0x00c0fff1,
	     .dma_len = 32),
	  .sport = 0xe001, .payload_len = 32, .bad_icrc = true },
};

#define N_SAMPLES (sizeof(samples) / sizeof(samples[0]))
#define N_BAD (sizeof(bad_samples) / sizeof(bad_samples[0]))

/* ------------------------------------------------------------------ */
/* Frame construction                                                  */
/* ------------------------------------------------------------------ */

static const uint8_t mac_i[6] = { 0x02, 0x6d, 0x72, 0x00, 0x00, 0x01 };
static const uint8_t mac_r[6] = { 0x02, 0x6d, 0x72, 0x00, 0x00, 0x02 };
static const uint8_t ip4_i[4] = { 10, 47, 92, 1 };
static const uint8_t ip4_r[4] = { 10, 47, 92, 2 };
static const uint8_t ip6_i[16] = { 0xfd, 0x6d, 0x72, 0x6f, 0x63, 0x65, 0, 0,
				   0, 0, 0, 0, 0, 0, 0, 0x01 };
static const uint8_t ip6_r[16] = { 0xfd, 0x6d, 0x72, 0x6f, 0x63, 0x65, 0, 0,
				   0, 0, 0, 0, 0, 0, 0, 0x02 };

static void frame_spec(const struct sample *s, unsigned int frame_no,
		       struct mroce_frame_spec *fs)
{
	const bool v6 = s->net == NET6;

	memset(fs, 0, sizeof(*fs));
	memcpy(fs->smac, s->reverse ? mac_r : mac_i, 6);
	memcpy(fs->dmac, s->reverse ? mac_i : mac_r, 6);
	fs->vlan = s->net == NET4_VLAN ? s->vlan_tci : -1;
	fs->l3.family = v6 ? AF_INET6 : AF_INET;
	if (v6) {
		memcpy(fs->l3.src, s->reverse ? ip6_r : ip6_i, 16);
		memcpy(fs->l3.dst, s->reverse ? ip6_i : ip6_r, 16);
		fs->l3.flow_label = 0x5a5a0 | (frame_no & 0xf);
	} else {
		memcpy(fs->l3.src, s->reverse ? ip4_r : ip4_i, 4);
		memcpy(fs->l3.dst, s->reverse ? ip4_i : ip4_r, 4);
	}
	/* ECT(0): both transports are ECN-capable. RoCEv2 conventionally
	 * rides DSCP 26. */
	fs->l3.tos = s->proto == MROCE_PROTO_ROCEV2 ? 0x6a : 0x02;
	fs->l3.ttl = 64;
	fs->sport = s->sport;
	fs->dport = s->proto == MROCE_PROTO_ROCEV2 ? ROCEV2_UDP_PORT :
						     MROCE_UDP_PORT;
	fs->ip_id = 0x4d00 + frame_no;
}

static void fill_payload(uint8_t *p, uint32_t len, unsigned int frame_no)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(0x40 + frame_no * 0x11 + i * 0x1d);
}

/* Build sample s as frame number frame_no into buf. Returns the frame
 * length or a negative MROCE error. */
static int build_frame(const struct sample *s, unsigned int frame_no,
		       uint8_t *buf, size_t cap)
{
	struct mroce_frame_spec fs;
	uint8_t payload[MROCE_MAX_PAYLOAD];
	size_t hl;
	int l4, n;

	frame_spec(s, frame_no, &fs);
	hl = mroce_frame_hdr_len(&fs);
	if (hl >= cap || s->payload_len > sizeof(payload))
		return -MROCE_E_NOSPACE;
	fill_payload(payload, s->payload_len, frame_no);

	if (s->proto == MROCE_PROTO_METAROCE) {
		struct mroce_meta_pkt p = s->mr;

		p.payload = payload;
		p.payload_len = s->payload_len;
		l4 = mroce_meta_build(&p, buf + hl, cap - hl);
		if (l4 < 0)
			return l4;
		if (s->bad_icrc)
			buf[hl + l4 - 1] ^= 0x5a;
		return mroce_frame_build(&fs, l4, buf, cap);
	}

	struct mroce_rv2_pkt p = s->rv;

	p.payload = payload;
	p.payload_len = s->payload_len;
	l4 = mroce_rv2_build(&p, buf + hl, cap - hl);
	if (l4 < 0)
		return l4;
	n = mroce_frame_build(&fs, l4, buf, cap);
	if (n < 0)
		return n;
	/* The ICRC masks the UDP checksum, so it can be computed first; the
	 * UDP checksum (IPv6) covers the ICRC, so the headers are written a
	 * second time once the ICRC is in place. */
	n = mroce_rv2_icrc_fill(buf, n);
	if (n < 0)
		return n;
	if (s->bad_icrc)
		buf[hl + l4 - 1] ^= 0x5a;
	return mroce_frame_build(&fs, l4, buf, cap);
}

/* ------------------------------------------------------------------ */
/* pcap output (classic format, microsecond timestamps)                */
/* ------------------------------------------------------------------ */

static int put32(FILE *f, uint32_t v)
{
	/* Native byte order: readers detect it from the magic number. */
	return fwrite(&v, 4, 1, f) == 1 ? 0 : -1;
}

static int put16(FILE *f, uint16_t v)
{
	return fwrite(&v, 2, 1, f) == 1 ? 0 : -1;
}

static int pcap_header(FILE *f)
{
	if (put32(f, 0xa1b2c3d4) || put16(f, 2) || put16(f, 4) ||
	    put32(f, 0) || put32(f, 0) || put32(f, PCAP_SNAPLEN) ||
	    put32(f, PCAP_LINKTYPE_ETHERNET))
		return -1;
	return 0;
}

static int pcap_record(FILE *f, unsigned int frame_no, const uint8_t *buf,
		       size_t len)
{
	/* Fixed timestamps (2026-01-01 + 1 ms per frame): the file is
	 * byte-for-byte reproducible. */
	if (put32(f, 1767225600u) || put32(f, frame_no * 1000u) ||
	    put32(f, (uint32_t)len) || put32(f, (uint32_t)len) ||
	    fwrite(buf, 1, len, f) != len)
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

static const char *net_name(const struct sample *s)
{
	switch (s->net) {
	case NET6:
		return "ipv6";
	case NET4_VLAN:
		return "ipv4+vlan";
	default:
		return "ipv4";
	}
}

static const char *op_name(const struct sample *s)
{
	const struct mroce_opdesc *d;

	if (s->proto == MROCE_PROTO_METAROCE)
		d = mroce_meta_opdesc(s->mr.opcode);
	else
		d = mroce_rv2_opdesc(s->rv.opcode);
	return d ? d->name : "?";
}

static const char *nak_name(unsigned int code)
{
	static const char *const names[] = {
		[MROCE_NAK_OUT_OF_WINDOW] = "OUT_OF_WINDOW",
		[MROCE_NAK_BAD_RKEY] = "BAD_RKEY",
		[MROCE_NAK_OUT_OF_BOUNDS] = "OUT_OF_BOUNDS",
		[MROCE_NAK_ACCESS] = "ACCESS",
		[MROCE_NAK_RNR] = "RNR",
		[MROCE_NAK_INVALID_REQ] = "INVALID_REQ",
		[MROCE_NAK_NO_CONN] = "NO_CONN",
		[MROCE_NAK_REMOTE_OP] = "REMOTE_OP",
		[MROCE_NAK_STALE_PATH] = "STALE_PATH",
	};

	if (code < sizeof(names) / sizeof(names[0]) && names[code])
		return names[code];
	return "reserved";
}

static const char *reroll_name(unsigned int r)
{
	switch (r) {
	case MROCE_REROLL_LOSS:
		return "LOSS";
	case MROCE_REROLL_TIMEOUT:
		return "TIMEOUT";
	case MROCE_REROLL_ECN:
		return "ECN";
	case MROCE_REROLL_ADMIN:
		return "ADMIN";
	default:
		return "reserved";
	}
}

static int popcount_bytes(const uint8_t *b, size_t n)
{
	int c = 0;

	for (size_t i = 0; i < n; i++)
		c += __builtin_popcount(b[i]);
	return c;
}

/* ------------------------------------------------------------------ */
/* --list: the manifest                                                */
/* ------------------------------------------------------------------ */

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void list_mr(FILE *o, const struct sample *s, const uint8_t *l4,
		    size_t l4_len)
{
	const struct mroce_meta_pkt *p = &s->mr;
	uint16_t ext = mroce_op_ext(p->opcode);
	int hl = mroce_meta_hdr_len(p->opcode);

	fprintf(o, " version=%u opcode=0x%02x flags=0x%02x hdr_words=%d"
		   " conn_id=0x%08x path=%u path_gen=%u payload_len=%u",
		MROCE_WIRE_VERSION, p->opcode, p->flags, hl / 4, p->conn_id,
		p->path, p->path_gen, s->payload_len);
	if (ext & MROCE_EXT_SEQ)
		fprintf(o, " psn=0x%08x tsval=0x%08x", p->psn, p->tsval);
	if (ext & MROCE_EXT_MSG)
		fprintf(o, " stream=0x%08x msn=0x%08x offset=0x%08x"
			   " msg_len=0x%08x",
			p->stream, p->msn, p->offset, p->msg_len);
	if (ext & MROCE_EXT_RADDR)
		fprintf(o, " va=0x%016" PRIx64 " rkey=0x%08x", p->va,
			p->rkey);
	if (ext & MROCE_EXT_SINK)
		fprintf(o, " sink_va=0x%016" PRIx64 " sink_key=0x%08x",
			p->sink_va, p->sink_key);
	if (ext & MROCE_EXT_SEND)
		fprintf(o, " ssn=0x%08x", p->ssn);
	if (ext & MROCE_EXT_IMM)
		fprintf(o, " imm=0x%08x", p->imm);
	if (ext & MROCE_EXT_ACK) {
		fprintf(o, " ack.cum_psn=0x%08x ack.tsecr=0x%08x"
			   " ack.rate_mbps=%u ack.ce_count=%u ack.flags=0x%02x"
			   " ack.sack=",
			p->ack.cum_psn, p->ack.tsecr, p->ack.rate_mbps,
			p->ack.ce_count, p->ack.flags);
		for (int i = 0; i < MROCE_SACK_BYTES; i++)
			fprintf(o, "%02x", p->ack.sack[i]);
		fprintf(o, " ack.sack_count=%d",
			popcount_bytes(p->ack.sack, MROCE_SACK_BYTES));
	}
	if (ext & MROCE_EXT_NAK)
		fprintf(o, " nak.code=%u nak.rnr_timer=%u nak.stream=0x%08x"
			   " nak.msn=0x%08x nak.psn=0x%08x",
			p->nak.code, p->nak.rnr_timer, p->nak.stream,
			p->nak.msn, p->nak.psn);
	if (ext & MROCE_EXT_PROBE)
		fprintf(o, " probe.next_psn=0x%08x probe.tsval=0x%08x",
			p->next_psn, p->tsval);
	if (ext & MROCE_EXT_REROLL)
		fprintf(o, " reroll.old_gen=%u reroll.new_gen=%u"
			   " reroll.new_sport=0x%04x reroll.reason=%u",
			p->reroll.old_gen, p->reroll.new_gen,
			p->reroll.new_sport, p->reroll.reason);
	if (ext & MROCE_EXT_CONN)
		fprintf(o, " conn.src_conn_id=0x%08x conn.isn=0x%08x"
			   " conn.nonce=0x%016" PRIx64
			   " conn.cookie=0x%016" PRIx64
			   " conn.cookie_time=0x%08x conn.mtu=%u"
			   " conn.max_paths=%u conn.caps=0x%02x"
			   " conn.reason=%u",
			p->conn.src_conn_id, p->conn.isn, p->conn.nonce,
			p->conn.cookie, p->conn.cookie_time, p->conn.mtu,
			p->conn.max_paths, p->conn.caps, p->conn.reason);
	fprintf(o, " icrc=0x%08x icrc_ok=%d",
		be32_at(l4 + l4_len - MROCE_ICRC_LEN), !s->bad_icrc);
}

static void list_rv(FILE *o, const struct sample *s, const uint8_t *l4,
		    size_t l4_len)
{
	const struct mroce_rv2_pkt *p = &s->rv;
	const struct mroce_opdesc *d = mroce_rv2_opdesc(p->opcode);
	unsigned int pad = (4 - (s->payload_len & 3)) & 3;

	fprintf(o, " opcode=0x%02x se=%d padcnt=%u pkey=0x%04x becn=%d"
		   " qpn=0x%06x ackreq=%d psn=0x%06x",
		p->opcode, p->se, pad, p->pkey, p->becn, p->dqpn, p->ackreq,
		p->psn);
	if (d && (d->ext & ROCEV2_EXT_RETH))
		fprintf(o, " va=0x%016" PRIx64 " rkey=0x%08x dmalen=0x%08x",
			p->va, p->rkey, p->dma_len);
	if (d && (d->ext & ROCEV2_EXT_AETH))
		fprintf(o, " syndrome=0x%02x msn=0x%06x", p->syndrome, p->msn);
	if (d && (d->ext & ROCEV2_EXT_IMM))
		fprintf(o, " imm=0x%08x", p->imm);
	/* The ICRC as its 4 wire bytes read big-endian (the field itself is
	 * little-endian), which is how Wireshark shows it. */
	fprintf(o, " payload_len=%u icrc_wire=0x%08x icrc_ok=%d",
		s->payload_len, be32_at(l4 + l4_len - MROCE_ICRC_LEN),
		!s->bad_icrc);
}

static void list_sample(FILE *o, unsigned int frame_no,
			const struct sample *s, const uint8_t *buf, size_t len)
{
	struct mroce_frame f;

	/* The frame was just built by us; if it does not parse, the
	 * manifest still describes what we meant to send. */
	if (mroce_frame_parse(buf, len, &f) < 0)
		memset(&f, 0, sizeof(f));
	fprintf(o, "%u %s %s name=%s sport=0x%04x dport=%u", frame_no,
		s->proto == MROCE_PROTO_METAROCE ? "metaroce" : "rocev2",
		net_name(s), op_name(s), s->sport,
		s->proto == MROCE_PROTO_METAROCE ? MROCE_UDP_PORT :
						   ROCEV2_UDP_PORT);
	if (s->net == NET4_VLAN)
		fprintf(o, " vlan=%u", s->vlan_tci & 0x0fff);
	if (f.l4) {
		if (s->proto == MROCE_PROTO_METAROCE)
			list_mr(o, s, f.l4, f.l4_len);
		else
			list_rv(o, s, f.l4, f.l4_len);
	}
	fputc('\n', o);
}

/* ------------------------------------------------------------------ */
/* --hexdump: annotated bytes                                          */
/* ------------------------------------------------------------------ */

enum kind {
	K_HEX,		/* hexadecimal number */
	K_DEC,		/* decimal number */
	K_MROP,		/* MetaRoCE opcode */
	K_MRFLAGS,	/* MetaRoCE common-header flags */
	K_ACKFLAGS,
	K_NAK,
	K_REROLL,
	K_SACK,
	K_RVOP,		/* RoCEv2 opcode */
	K_BTH1,		/* BTH byte 1: SE, M, pad, TVer */
	K_BTH4,		/* BTH byte 4: FECN, BECN */
	K_BTH8,		/* BTH byte 8: AckReq */
	K_SYND,		/* AETH syndrome */
};

struct fdesc {
	const char *name;
	uint8_t len;
	uint8_t kind;
};

#define F_END { NULL, 0, 0 }

static const struct fdesc f_mr_hdr[] = {
	{ "version", 1, K_DEC }, { "opcode", 1, K_MROP },
	{ "flags", 1, K_MRFLAGS }, { "hdr_words", 1, K_DEC },
	{ "conn_id", 4, K_HEX }, { "path", 1, K_DEC },
	{ "path_gen", 1, K_DEC }, { "payload_len", 2, K_DEC }, F_END
};
static const struct fdesc f_seq[] = {
	{ "psn", 4, K_HEX }, { "tsval", 4, K_HEX }, F_END
};
static const struct fdesc f_msg[] = {
	{ "stream", 4, K_HEX }, { "msn", 4, K_HEX }, { "offset", 4, K_HEX },
	{ "msg_len", 4, K_HEX }, F_END
};
static const struct fdesc f_raddr[] = {
	{ "va", 8, K_HEX }, { "rkey", 4, K_HEX }, F_END
};
static const struct fdesc f_sink[] = {
	{ "sink_va", 8, K_HEX }, { "sink_key", 4, K_HEX }, F_END
};
static const struct fdesc f_send[] = { { "ssn", 4, K_HEX }, F_END };
static const struct fdesc f_imm[] = { { "imm", 4, K_HEX }, F_END };
static const struct fdesc f_ack[] = {
	{ "cum_psn", 4, K_HEX }, { "tsecr", 4, K_HEX },
	{ "rate_mbps", 4, K_DEC }, { "ce_count", 2, K_DEC },
	{ "ack_flags", 1, K_ACKFLAGS }, { "resv", 1, K_HEX },
	{ "sack", MROCE_SACK_BYTES, K_SACK }, F_END
};
static const struct fdesc f_nak[] = {
	{ "code", 1, K_NAK }, { "rnr_timer", 1, K_DEC }, { "resv", 2, K_HEX },
	{ "stream", 4, K_HEX }, { "msn", 4, K_HEX }, { "psn", 4, K_HEX },
	F_END
};
static const struct fdesc f_probe[] = {
	{ "next_psn", 4, K_HEX }, { "tsval", 4, K_HEX }, F_END
};
static const struct fdesc f_reroll[] = {
	{ "old_gen", 1, K_DEC }, { "new_gen", 1, K_DEC },
	{ "new_sport", 2, K_HEX }, { "reason", 1, K_REROLL },
	{ "resv", 3, K_HEX }, F_END
};
static const struct fdesc f_conn[] = {
	{ "src_conn_id", 4, K_HEX }, { "isn", 4, K_HEX },
	{ "nonce", 8, K_HEX }, { "cookie", 8, K_HEX },
	{ "cookie_time", 4, K_HEX }, { "mtu", 2, K_DEC },
	{ "max_paths", 1, K_DEC }, { "caps", 1, K_HEX },
	{ "reason", 4, K_DEC }, { "resv", 4, K_HEX }, F_END
};

/* MetaRoCE extension headers in wire order. */
static const struct {
	uint16_t bit;
	const char *name;
	const struct fdesc *f;
} mr_exts[] = {
	{ MROCE_EXT_SEQ, "SEQ", f_seq },
	{ MROCE_EXT_MSG, "MSG", f_msg },
	{ MROCE_EXT_RADDR, "RADDR", f_raddr },
	{ MROCE_EXT_SINK, "SINK", f_sink },
	{ MROCE_EXT_SEND, "SEND", f_send },
	{ MROCE_EXT_IMM, "IMM", f_imm },
	{ MROCE_EXT_ACK, "ACK", f_ack },
	{ MROCE_EXT_NAK, "NAK", f_nak },
	{ MROCE_EXT_PROBE, "PROBE", f_probe },
	{ MROCE_EXT_REROLL, "PATH_REROLL", f_reroll },
	{ MROCE_EXT_CONN, "CONN", f_conn },
};

static const struct fdesc f_bth[] = {
	{ "opcode", 1, K_RVOP }, { "se/m/pad/tver", 1, K_BTH1 },
	{ "p_key", 2, K_HEX }, { "fecn/becn", 1, K_BTH4 },
	{ "dest_qp", 3, K_HEX }, { "ackreq", 1, K_BTH8 },
	{ "psn", 3, K_HEX }, F_END
};
static const struct fdesc f_reth[] = {
	{ "va", 8, K_HEX }, { "r_key", 4, K_HEX }, { "dma_len", 4, K_HEX },
	F_END
};
static const struct fdesc f_aeth[] = {
	{ "syndrome", 1, K_SYND }, { "msn", 3, K_HEX }, F_END
};
static const struct fdesc f_immdt[] = { { "imm", 4, K_HEX }, F_END };

static uint64_t be_at(const uint8_t *p, unsigned int len)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < len; i++)
		v = v << 8 | p[i];
	return v;
}

/* One dump line: offset, up to 16 bytes, annotation. */
static void dump_line(FILE *o, size_t off, const uint8_t *p, size_t n,
		      const char *note)
{
	char hex[16 * 3 + 1];
	size_t k = 0;

	for (size_t i = 0; i < n && i < 16; i++)
		k += (size_t)snprintf(hex + k, sizeof(hex) - k, "%02x ", p[i]);
	hex[k ? k - 1 : 0] = '\0';
	fprintf(o, "  %04zx  %-47s  %s\n", off, hex, note);
}

/* Bytes [off, off+n) wrapped at 16 per line, note on the first line. */
static void dump_block(FILE *o, const uint8_t *frame, size_t off, size_t n,
		       const char *note)
{
	for (size_t i = 0; i < n; i += 16)
		dump_line(o, off + i, frame + off + i, n - i < 16 ? n - i : 16,
			  i ? "" : note);
}

static void flag_names(char *b, size_t cap, unsigned int v,
		       const char *const names[8])
{
	size_t k = 0;

	b[0] = '\0';
	for (int bit = 7; bit >= 0; bit--)
		if ((v & (1u << bit)) && names[7 - bit] && k < cap)
			k += (size_t)snprintf(b + k, cap - k, "%s%s",
					      k ? "|" : "", names[7 - bit]);
}

/* What an AETH syndrome's low five bits are, by its type. */
static const char *synd_name(uint8_t synd)
{
	switch (synd & ROCEV2_AETH_TYPE_MASK) {
	case ROCEV2_AETH_ACK:
		return "ACK, credit";
	case ROCEV2_AETH_RNR_NAK:
		return "RNR NAK, timer";
	case ROCEV2_AETH_NAK:
		return "NAK, code";
	}
	return "reserved";
}

/* One field's value as the hex dump annotates it (v: its first up to 8
 * bytes, big endian). */
static void field_text(char *b, size_t cap, const struct fdesc *f,
		       const uint8_t *p, uint64_t v)
{
	static const char *const mrf[8] = { "ACK_REQ", "SOLICITED", "RETX",
					    "LAST" };
	static const char *const ackf[8] = { [4] = "ECE", [5] = "XDP",
					     [6] = "PROBE", [7] = "DUP" };
	const struct mroce_opdesc *d;

	b[0] = '\0';
	switch (f->kind) {
	case K_DEC:
		snprintf(b, cap, "%" PRIu64, v);
		break;
	case K_MROP:
	case K_RVOP:
		d = f->kind == K_MROP ? mroce_meta_opdesc(p[0])
				      : mroce_rv2_opdesc(p[0]);
		snprintf(b, cap, "0x%02x %s", p[0], d ? d->name : "?");
		break;
	case K_MRFLAGS:
	case K_ACKFLAGS: {
		char fl[64];

		flag_names(fl, sizeof(fl), p[0],
			   f->kind == K_MRFLAGS ? mrf : ackf);
		snprintf(b, cap, "0x%02x %s", p[0], fl[0] ? fl : "(none)");
		break;
	}
	case K_NAK:
		snprintf(b, cap, "%u %s", p[0], nak_name(p[0]));
		break;
	case K_REROLL:
		snprintf(b, cap, "%u %s", p[0], reroll_name(p[0]));
		break;
	case K_SACK:
		snprintf(b, cap, "%d bits set; bit i = PSN cum_psn+1+i",
			 popcount_bytes(p, f->len));
		break;
	case K_BTH1:
		snprintf(b, cap, "0x%02x se=%d m=%d padcnt=%d tver=%d", p[0],
			 !!(p[0] & ROCEV2_BTH_SE), !!(p[0] & ROCEV2_BTH_MIG),
			 (p[0] & ROCEV2_BTH_PAD_MASK) >> ROCEV2_BTH_PAD_SHIFT,
			 p[0] & ROCEV2_BTH_TVER_MASK);
		break;
	case K_BTH4:
		snprintf(b, cap, "0x%02x fecn=%d becn=%d", p[0],
			 !!(p[0] & 0x80), !!(p[0] & 0x40));
		break;
	case K_BTH8:
		snprintf(b, cap, "0x%02x ackreq=%d", p[0], !!(p[0] & 0x80));
		break;
	case K_SYND:
		snprintf(b, cap, "0x%02x %s %u", p[0], synd_name(p[0]),
			 p[0] & 0x1f);
		break;
	default:
		snprintf(b, cap, "0x%0*" PRIx64, f->len * 2, v);
		break;
	}
}

static void dump_fields(FILE *o, const uint8_t *frame, size_t off,
			const char *hdr, const struct fdesc *f)
{
	char note[160], extra[96];

	for (int i = 0; f[i].name; i++) {
		const uint8_t *p = frame + off;
		uint64_t v = f[i].len <= 8 ? be_at(p, f[i].len) : 0;

		field_text(extra, sizeof(extra), &f[i], p, v);
		if (i == 0)
			snprintf(note, sizeof(note), "%s: %s = %s", hdr,
				 f[i].name, extra);
		else	/* align the other fields under the first */
			snprintf(note, sizeof(note), "%*s%s = %s",
				 (int)strlen(hdr) + 2, "", f[i].name, extra);
		dump_block(o, frame, off, f[i].len, note);
		off += f[i].len;
	}
}

static void dump_l2l4(FILE *o, const uint8_t *buf, const struct mroce_frame *f)
{
	char note[160], a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	size_t l3 = (size_t)(f->l3_hdr - buf), udp = (size_t)(f->udp - buf);
	const uint8_t *u = f->udp;

	snprintf(note, sizeof(note),
		 "Ethernet: dst %02x:%02x:%02x:%02x:%02x:%02x"
		 " src %02x:%02x:%02x:%02x:%02x:%02x",
		 f->dmac[0], f->dmac[1], f->dmac[2], f->dmac[3], f->dmac[4],
		 f->dmac[5], f->smac[0], f->smac[1], f->smac[2], f->smac[3],
		 f->smac[4], f->smac[5]);
	dump_block(o, buf, 0, 12, note);
	if (f->has_vlan) {
		snprintf(note, sizeof(note),
			 "802.1Q: tpid 0x8100 pcp %u vid %u", f->vlan_tci >> 13,
			 f->vlan_tci & 0x0fff);
		dump_block(o, buf, 12, 4, note);
	}
	snprintf(note, sizeof(note), "EtherType 0x%04x",
		 (unsigned int)be_at(buf + l3 - 2, 2));
	dump_block(o, buf, l3 - 2, 2, note);
	inet_ntop(f->l3.family, f->l3.src, a, sizeof(a));
	inet_ntop(f->l3.family, f->l3.dst, b, sizeof(b));
	if (f->l3.family == AF_INET)
		snprintf(note, sizeof(note),
			 "IPv4: %s -> %s tos 0x%02x ttl %u proto 17"
			 " csum 0x%04x",
			 a, b, f->l3.tos, f->l3.ttl,
			 (unsigned int)be_at(f->l3_hdr + 10, 2));
	else
		snprintf(note, sizeof(note),
			 "IPv6: %s -> %s tclass 0x%02x flow 0x%05x hlim %u",
			 a, b, f->l3.tos, f->l3.flow_label, f->l3.ttl);
	dump_block(o, buf, l3, f->l3_hdr_len, note);
	snprintf(note, sizeof(note), "UDP: sport 0x%04x dport %u len %u"
		 " csum 0x%04x", f->sport, f->dport,
		 (unsigned int)be_at(u + 4, 2), (unsigned int)be_at(u + 6, 2));
	dump_block(o, buf, udp, 8, note);
}

static void dump_sample(FILE *o, unsigned int frame_no,
			const struct sample *s, const uint8_t *buf, size_t len)
{
	struct mroce_frame f;
	size_t off, end;
	char note[96];
	int rc = mroce_frame_parse(buf, len, &f);

	fprintf(o, "frame %u: %s %s over %s, %zu bytes%s\n", frame_no,
		s->proto == MROCE_PROTO_METAROCE ? "MetaRoCE" : "RoCEv2",
		op_name(s), net_name(s), len,
		s->bad_icrc ? " (ICRC deliberately wrong)" : "");
	if (rc < 0) {
		fprintf(o, "  (frame does not parse: %s)\n",
			mroce_err_name(rc));
		dump_block(o, buf, 0, len, "");
		return;
	}
	dump_l2l4(o, buf, &f);
	off = (size_t)(f.l4 - buf);
	end = off + f.l4_len - MROCE_ICRC_LEN;
	if (s->proto == MROCE_PROTO_METAROCE) {
		uint16_t ext = mroce_op_ext(s->mr.opcode);

		dump_fields(o, buf, off, "MetaRoCE", f_mr_hdr);
		off += sizeof(struct mroce_hdr);
		for (size_t i = 0; i < sizeof(mr_exts) / sizeof(mr_exts[0]);
		     i++) {
			if (!(ext & mr_exts[i].bit))
				continue;
			dump_fields(o, buf, off, mr_exts[i].name, mr_exts[i].f);
			for (int k = 0; mr_exts[i].f[k].name; k++)
				off += mr_exts[i].f[k].len;
		}
	} else {
		const struct mroce_opdesc *d = mroce_rv2_opdesc(s->rv.opcode);
		unsigned int pad = (buf[off + 1] & ROCEV2_BTH_PAD_MASK) >>
				   ROCEV2_BTH_PAD_SHIFT;

		dump_fields(o, buf, off, "BTH", f_bth);
		off += sizeof(struct rocev2_bth);
		if (d && (d->ext & ROCEV2_EXT_RETH)) {
			dump_fields(o, buf, off, "RETH", f_reth);
			off += sizeof(struct rocev2_reth);
		}
		if (d && (d->ext & ROCEV2_EXT_AETH)) {
			dump_fields(o, buf, off, "AETH", f_aeth);
			off += sizeof(struct rocev2_aeth);
		}
		if (d && (d->ext & ROCEV2_EXT_IMM)) {
			dump_fields(o, buf, off, "ImmDt", f_immdt);
			off += sizeof(struct rocev2_immdt);
		}
		if (d && (d->ext & ROCEV2_EXT_CNP)) {
			dump_block(o, buf, off, ROCEV2_CNP_RESV_LEN,
				   "CNP: reserved (16 bytes of zero)");
			off += ROCEV2_CNP_RESV_LEN;
		}
		if (pad && end >= off + pad) {
			snprintf(note, sizeof(note), "payload: %zu bytes",
				 end - pad - off);
			dump_block(o, buf, off, end - pad - off, note);
			off = end - pad;
			snprintf(note, sizeof(note), "pad: %u bytes", pad);
			dump_block(o, buf, off, pad, note);
			off = end;
		}
	}
	if (end > off) {
		snprintf(note, sizeof(note), "payload: %zu bytes", end - off);
		dump_block(o, buf, off, end - off, note);
	}
	if (s->proto == MROCE_PROTO_METAROCE)
		snprintf(note, sizeof(note),
			 "ICRC: CRC-32 of MetaRoCE headers+payload, big-endian"
			 " = 0x%08x", be32_at(buf + end));
	else
		snprintf(note, sizeof(note),
			 "ICRC: CRC-32 of masked pseudo-packet, little-endian"
			 " = 0x%08x", mroce_rv2_icrc(&f));
	dump_block(o, buf, end, MROCE_ICRC_LEN, note);
	fputc('\n', o);
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static void usage(FILE *o)
{
	fputs(
"NAME\n"
"    mroce_pcapgen - write sample MetaRoCE v0 and RoCEv2 frames to a pcap\n"
"\n"
"SYNOPSIS\n"
"    mroce_pcapgen -o FILE [--bad-icrc] [--list] [--hexdump]\n"
"    mroce_pcapgen --list | --hexdump [--bad-icrc]\n"
"\n"
"DESCRIPTION\n"
"    Builds one sample frame of every MetaRoCE v0 packet type (UDP port\n"
"    4792) and of every RoCEv2 RC opcode the project speaks, plus a CNP\n"
"    (UDP port 4791), with the mroce codec: mostly over IPv4, a few over\n"
"    IPv6 and one behind an 802.1Q tag. Writes them to FILE in the classic\n"
"    pcap format (link type Ethernet, fixed timestamps: the output is\n"
"    reproducible).\n"
"    Field values are distinctive so that a decoder that mixes fields up\n"
"    is caught. The frames are the input of the Wireshark interop tests\n"
"    and of the hex dumps in docs/spec.md.\n"
"\n"
"OPTIONS\n"
"    -o, --output FILE  write the pcap to FILE (\"-\" for stdout).\n"
"                       Required unless --list or --hexdump is given.\n"
"    -l, --list         print a manifest on stdout: one line per frame,\n"
"                       \"N PROTO NET key=value ...\", with every header\n"
"                       field the frame was built with. MetaRoCE keys are\n"
"                       the Lua dissector's field names without the\n"
"                       \"mroce.\" prefix; icrc_ok=0 marks a wrong ICRC.\n"
"    -x, --hexdump      print every frame as annotated hex on stdout, one\n"
"                       line per header field.\n"
"    -b, --bad-icrc     append one MetaRoCE and one RoCEv2 frame whose ICRC\n"
"                       is deliberately wrong (to test ICRC checkers).\n"
"    -V, --version      print the version and exit.\n"
"    -h, --help         print this help and exit.\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 I/O error or a frame could not be built (the codec's\n"
"    error name is printed); 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    mroce_pcapgen -o samples.pcap --list\n"
"    tshark -r samples.pcap -X lua_script:conformance/wireshark/mroce.lua\n",
	      o);
}

struct gen_opts {
	const char *out;
	bool list, hexdump, bad;
};

/* 0, or the exit status (help, version: 0 after printing; usage: 2). */
static int parse_opts(int argc, char **argv, struct gen_opts *g)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "list", no_argument, NULL, 'l' },
		{ "hexdump", no_argument, NULL, 'x' },
		{ "bad-icrc", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "o:lxbhV", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			g->out = optarg;
			break;
		case 'l':
			g->list = true;
			break;
		case 'x':
			g->hexdump = true;
			break;
		case 'b':
			g->bad = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			mroce_print_version(stdout, "mroce_pcapgen");
			exit(0);
		default:
			fprintf(stderr, "Try 'mroce_pcapgen --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mroce_pcapgen: unexpected argument '%s'\n"
				"Try 'mroce_pcapgen --help'.\n", argv[optind]);
		return 2;
	}
	if (!g->out && !g->list && !g->hexdump) {
		fprintf(stderr, "mroce_pcapgen: -o FILE is required\n"
				"Try 'mroce_pcapgen --help'.\n");
		return 2;
	}
	if (g->out && !strcmp(g->out, "-") && (g->list || g->hexdump)) {
		fprintf(stderr, "mroce_pcapgen: -o - cannot be combined with"
				" --list or --hexdump (both use stdout)\n");
		return 2;
	}
	return 0;
}

/* The pcap file: 0, or 1 after a message. */
static int write_pcap(const char *out, unsigned int n,
		      uint8_t (*frames)[FRAME_CAP], const size_t *lens)
{
	FILE *f = strcmp(out, "-") ? fopen(out, "wb") : stdout;
	int err;

	if (!f) {
		fprintf(stderr, "mroce_pcapgen: %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	err = pcap_header(f);
	for (unsigned int i = 0; !err && i < n; i++)
		err = pcap_record(f, i + 1, frames[i], lens[i]);
	if (f != stdout ? fclose(f) : fflush(f))
		err = -1;
	if (err) {
		fprintf(stderr, "mroce_pcapgen: writing %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t frames[N_SAMPLES + N_BAD][FRAME_CAP];
	size_t lens[N_SAMPLES + N_BAD];
	const struct sample *sp[N_SAMPLES + N_BAD];
	struct gen_opts g = { 0 };
	unsigned int n = 0;
	int rc = parse_opts(argc, argv, &g);

	if (rc)
		return rc;
	for (size_t i = 0; i < N_SAMPLES + (g.bad ? N_BAD : 0); i++) {
		const struct sample *s = i < N_SAMPLES ? &samples[i] :
							 &bad_samples[i - N_SAMPLES];
		int len = build_frame(s, n + 1, frames[n], FRAME_CAP);

		if (len < 0) {
			fprintf(stderr,
				"mroce_pcapgen: cannot build frame %u (%s %s):"
				" %s: %s\n", n + 1,
				s->proto == MROCE_PROTO_METAROCE ? "metaroce" :
								   "rocev2",
				op_name(s), mroce_err_name(len),
				mroce_err_text(len));
			return 1;
		}
		lens[n] = (size_t)len;
		sp[n++] = s;
	}
	if (g.out && write_pcap(g.out, n, frames, lens))
		return 1;
	for (unsigned int i = 0; g.list && i < n; i++)
		list_sample(stdout, i + 1, sp[i], frames[i], lens[i]);
	for (unsigned int i = 0; g.hexdump && i < n; i++)
		dump_sample(stdout, i + 1, sp[i], frames[i], lens[i]);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "mroce_pcapgen: stdout: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
