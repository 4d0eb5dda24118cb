/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mroce wire formats: MetaRoCE v0 and the RoCEv2 RC subset.
 *
 * Who may include this: BPF programs AND userspace. Keep it free of libc:
 * only <linux/types.h>, packed structs, constants and static inline helpers
 * that the BPF verifier accepts (no loops over variable bounds, no division
 * by variables).
 *
 * docs/spec.md is the normative description; every struct here mirrors a
 * field table there. All multi-byte fields are big-endian on the wire.
 */
#ifndef MROCE_WIRE_H
#define MROCE_WIRE_H

#include <linux/types.h>

/* ------------------------------------------------------------------ */
/* Encapsulation                                                       */
/* ------------------------------------------------------------------ */

/* UDP destination port of MetaRoCE. Not 4791: standard RoCEv2 NICs own that
 * port and would try to parse (and drop) our packets. */
#define MROCE_UDP_PORT		4792
#define ROCEV2_UDP_PORT		4791

/* Source ports used for path entropy (both protocols): 0xC000-0xFFFF. */
#define MROCE_SPORT_MIN		0xC000
#define MROCE_SPORT_MAX		0xFFFF

#define MROCE_WIRE_VERSION	0	/* wire version carried in every header */
#define MROCE_ICRC_LEN		4	/* CRC-32 trailer, both protocols */

#define MROCE_MAX_PATHS		64	/* path slots per connection (direction) */
#define MROCE_SACK_BITS		256	/* SACK bitvector width per path */
#define MROCE_SACK_BYTES	(MROCE_SACK_BITS / 8)
/* A receiver accepts PSNs in [cum_psn, cum_psn + MROCE_PATH_WINDOW]. */
#define MROCE_PATH_WINDOW	(MROCE_SACK_BITS + 1)
#define MROCE_MAX_PAYLOAD	8192	/* largest payload_len in v0 (jumbo) */

/* ------------------------------------------------------------------ */
/* MetaRoCE v0 common header (12 bytes, every packet)                  */
/* ------------------------------------------------------------------ */

struct mroce_hdr {
	__u8 version;		/* MROCE_WIRE_VERSION; anything else is rejected */
	__u8 opcode;		/* enum mroce_op */
	__u8 flags;		/* MROCE_F_* */
	__u8 hdr_words;		/* common + extension headers, in 4-byte words */
	__be32 conn_id;		/* receiver's connection id (0: handshake) */
	__u8 path;		/* path slot of the sender (ACK/NAK: acked slot) */
	__u8 path_gen;		/* generation of that slot, bumped on re-roll */
	__be16 payload_len;	/* bytes between the headers and the ICRC */
} __attribute__((packed));

/* mroce_hdr.flags */
#define MROCE_F_ACK_REQ		0x80	/* receiver must ACK this packet now */
#define MROCE_F_SOLICITED	0x40	/* solicited event (like BTH SE) */
#define MROCE_F_RETX		0x20	/* retransmission (informational) */
#define MROCE_F_LAST		0x10	/* last packet of the message */
#define MROCE_F_CHECK		0x08	/* PROBE: a port check, nothing is
					 * outstanding on the path (no ACK
					 * is missing) */
#define MROCE_F_RESERVED	0x07	/* must be zero on send, ignored on receive */

/* ------------------------------------------------------------------ */
/* MetaRoCE v0 extension headers, in wire order                        */
/* ------------------------------------------------------------------ */

/* SEQ: per-path sequencing of data packets (8 bytes). */
struct mroce_seqh {
	__be32 psn;		/* packet sequence number on (path, path_gen) */
	__be32 tsval;		/* sender timestamp (us, wraps), echoed in ACK */
} __attribute__((packed));

/* MSG: which message and where in it (16 bytes). */
struct mroce_msgh {
	__be32 stream;		/* receiver's stream (QP number) */
	__be32 msn;		/* message sequence number within the stream */
	__be32 offset;		/* byte offset of this payload in the message */
	__be32 msg_len;		/* total length of the message */
} __attribute__((packed));

/* RADDR: remote memory of message byte 0 (12 bytes).
 * WRITE*: target at the responder. READ_REQ: source at the responder.
 * READ_RESP: sink at the requester (copied from the READ_REQ SINK). */
struct mroce_raddrh {
	__be64 va;		/* virtual address of message byte 0 */
	__be32 rkey;		/* memory key */
} __attribute__((packed));

/* SINK: READ_REQ only: where the response lands at the requester (12). */
struct mroce_sinkh {
	__be64 va;
	__be32 key;
} __attribute__((packed));

/* SEND: which posted receive this SEND consumes (4 bytes). */
struct mroce_sendh {
	__be32 ssn;		/* index of this message among the stream's
				 * receive-consuming messages (SEND*, WRITE_IMM) */
} __attribute__((packed));

/* IMM: immediate data of SEND_IMM / WRITE_IMM (4 bytes). */
struct mroce_immh {
	__be32 imm;
} __attribute__((packed));

/* ACK body (48 bytes). hdr.path/path_gen name the acknowledged path. */
struct mroce_ackh {
	__be32 cum_psn;		/* next PSN expected: every earlier one placed */
	__be32 tsecr;		/* tsval of the packet that triggered this ACK */
	__be32 rate_mbps;	/* receiver fair-share hint, Mbit/s, 0 = none */
	__be16 ce_count;	/* CE marks on this path since last ACK (sat.) */
	__u8 ack_flags;		/* MROCE_ACKF_* */
	__u8 resv;		/* zero */
	__u8 sack[MROCE_SACK_BYTES]; /* bit i (byte i/8, LSB first):
				      * PSN cum_psn + 1 + i was placed */
} __attribute__((packed));

#define MROCE_ACKF_DUP		0x01	/* answers a duplicate */
#define MROCE_ACKF_PROBE	0x02	/* answers a PROBE */
#define MROCE_ACKF_XDP		0x04	/* generated by the kernel fast path */
#define MROCE_ACKF_ECE		0x08	/* CE seen on this path since last ACK */

/* NAK body (16 bytes). hdr.path/path_gen: path of the offending packet. */
struct mroce_nakh {
	__u8 code;		/* enum mroce_nak_code */
	__u8 rnr_timer;		/* RNR: retry after rnr_timer * 10 us */
	__be16 resv;		/* zero */
	__be32 stream;		/* message errors: the stream, else 0 */
	__be32 msn;		/* message errors: the message, else 0 */
	__be32 psn;		/* PSN of the offending packet */
} __attribute__((packed));

enum mroce_nak_code {
	MROCE_NAK_OUT_OF_WINDOW = 1,	/* PSN beyond cum_psn + window */
	MROCE_NAK_BAD_RKEY = 2,		/* no such key / key of another PD */
	MROCE_NAK_OUT_OF_BOUNDS = 3,	/* va/len outside the region */
	MROCE_NAK_ACCESS = 4,		/* region lacks the access right */
	MROCE_NAK_RNR = 5,		/* receiver not ready (no receive) */
	MROCE_NAK_INVALID_REQ = 6,	/* malformed or inconsistent request */
	MROCE_NAK_NO_CONN = 7,		/* unknown conn_id / stream */
	MROCE_NAK_REMOTE_OP = 8,	/* responder-side failure */
	MROCE_NAK_STALE_PATH = 9,	/* path_gen older than current */
};
#define MROCE_NAK_MAX	MROCE_NAK_STALE_PATH

/* PROBE body (8 bytes): ACK request on hdr.path; carries no data, only
 * padding (payload_len bytes of zeros, ignored by the receiver). */
struct mroce_probeh {
	__be32 next_psn;	/* next PSN the sender will use on this path */
	__be32 tsval;		/* echoed in the ACK's tsecr */
} __attribute__((packed));

/* PATH_REROLL body (8 bytes): slot hdr.path moves to a new generation
 * (new source port). Advisory: the new generation's first PSN is derived
 * with mroce_path_isn(), so a lost REROLL loses nothing. */
struct mroce_rerollh {
	__u8 old_gen;
	__u8 new_gen;
	__be16 new_sport;	/* informational: the new UDP source port */
	__u8 reason;		/* enum mroce_reroll_reason */
	__u8 resv[3];		/* zero */
} __attribute__((packed));

enum mroce_reroll_reason {
	MROCE_REROLL_LOSS = 1,
	MROCE_REROLL_TIMEOUT = 2,	/* silent path / blackhole */
	MROCE_REROLL_ECN = 3,		/* reserved: v0 does not re-roll on
					 * marks (spec section 11) */
	MROCE_REROLL_ADMIN = 4,
};

/* CONN body (40 bytes): CONNECT_REQ / _CHALLENGE / _CONFIRM / _ACCEPT,
 * CLOSE and CLOSE_ACK. See docs/spec.md "Connection handshake". */
struct mroce_connh {
	__be32 src_conn_id;	/* sender's own conn id (peer puts it in
				 * hdr.conn_id); 0 in CHALLENGE. CONFIRM
				 * repeats the initiator's id: the cookie
				 * covers it and the responder kept no state */
	__be32 isn;		/* sender's initial sequence seed */
	__be64 nonce;		/* initiator's random nonce, echoed throughout */
	__be64 cookie;		/* CHALLENGE: responder MAC; CONFIRM: echo */
	__be32 cookie_time;	/* responder's coarse clock inside the cookie */
	__be16 mtu;		/* largest payload_len the sender accepts */
	__u8 max_paths;		/* paths the sender will use (1..MAX_PATHS) */
	__u8 caps;		/* capability bits, 0 in v0 */
	__be32 reason;		/* CLOSE: enum mroce_close_reason, else 0 */
	__be32 resv;		/* zero */
} __attribute__((packed));

enum mroce_close_reason {
	MROCE_CLOSE_NORMAL = 0,
	MROCE_CLOSE_ERROR = 1,
	MROCE_CLOSE_TIMEOUT = 2,
};

/* Extension-header bits, listed in wire order. */
#define MROCE_EXT_SEQ		0x0001
#define MROCE_EXT_MSG		0x0002
#define MROCE_EXT_RADDR		0x0004
#define MROCE_EXT_SINK		0x0008
#define MROCE_EXT_SEND		0x0010
#define MROCE_EXT_IMM		0x0020
#define MROCE_EXT_ACK		0x0040
#define MROCE_EXT_NAK		0x0080
#define MROCE_EXT_PROBE		0x0100
#define MROCE_EXT_REROLL	0x0200
#define MROCE_EXT_CONN		0x0400

#define MROCE_DATA_EXT		(MROCE_EXT_SEQ | MROCE_EXT_MSG)

/*
 * The MetaRoCE opcode table: X(name, code, extension headers, payload).
 * payload: 1 = carries data, 0 = payload_len must be 0.
 * Every opcode not listed here is rejected before any length arithmetic.
 */
#define MROCE_MR_OPS(X)                                                        \
	X(SEND, 0x01, MROCE_DATA_EXT | MROCE_EXT_SEND, 1)                      \
	X(SEND_IMM, 0x02, MROCE_DATA_EXT | MROCE_EXT_SEND | MROCE_EXT_IMM, 1)  \
	X(WRITE, 0x03, MROCE_DATA_EXT | MROCE_EXT_RADDR, 1)                    \
	X(WRITE_IMM, 0x04, MROCE_DATA_EXT | MROCE_EXT_RADDR | MROCE_EXT_IMM, 1) \
	X(READ_REQ, 0x05, MROCE_DATA_EXT | MROCE_EXT_RADDR | MROCE_EXT_SINK, 0) \
	X(READ_RESP, 0x06, MROCE_DATA_EXT | MROCE_EXT_RADDR, 1)                \
	X(ACK, 0x10, MROCE_EXT_ACK, 0)                                         \
	X(NAK, 0x11, MROCE_EXT_NAK, 0)                                         \
	X(PROBE, 0x12, MROCE_EXT_PROBE, 1)                                     \
	X(PATH_REROLL, 0x13, MROCE_EXT_REROLL, 0)                              \
	X(CONNECT_REQ, 0x20, MROCE_EXT_CONN, 0)                                \
	X(CONNECT_CHALLENGE, 0x21, MROCE_EXT_CONN, 0)                          \
	X(CONNECT_CONFIRM, 0x22, MROCE_EXT_CONN, 0)                            \
	X(CONNECT_ACCEPT, 0x23, MROCE_EXT_CONN, 0)                             \
	X(CLOSE, 0x24, MROCE_EXT_CONN, 0)                                      \
	X(CLOSE_ACK, 0x25, MROCE_EXT_CONN, 0)

enum mroce_op {
#define MROCE_X_ENUM(name, code, ext, payload) MROCE_OP_##name = code,
	MROCE_MR_OPS(MROCE_X_ENUM)
#undef MROCE_X_ENUM
};

/* Extension mask of a MetaRoCE opcode; 0 = unknown opcode. */
static inline __u16 mroce_op_ext(__u8 op)
{
	switch (op) {
#define MROCE_X_CASE(name, code, ext, payload)                                 \
	case code:                                                             \
		return (ext);
		MROCE_MR_OPS(MROCE_X_CASE)
#undef MROCE_X_CASE
	default:
		return 0;
	}
}

/* 1 if the opcode carries payload. Only meaningful for known opcodes. */
static inline int mroce_op_has_payload(__u8 op)
{
	switch (op) {
#define MROCE_X_CASE(name, code, ext, payload)                                 \
	case code:                                                             \
		return (payload);
		MROCE_MR_OPS(MROCE_X_CASE)
#undef MROCE_X_CASE
	default:
		return 0;
	}
}

/* Bytes of the common header plus the extension headers in @ext. */
static inline __u32 mroce_ext_len(__u16 ext)
{
	__u32 n = sizeof(struct mroce_hdr);

	if (ext & MROCE_EXT_SEQ)
		n += sizeof(struct mroce_seqh);
	if (ext & MROCE_EXT_MSG)
		n += sizeof(struct mroce_msgh);
	if (ext & MROCE_EXT_RADDR)
		n += sizeof(struct mroce_raddrh);
	if (ext & MROCE_EXT_SINK)
		n += sizeof(struct mroce_sinkh);
	if (ext & MROCE_EXT_SEND)
		n += sizeof(struct mroce_sendh);
	if (ext & MROCE_EXT_IMM)
		n += sizeof(struct mroce_immh);
	if (ext & MROCE_EXT_ACK)
		n += sizeof(struct mroce_ackh);
	if (ext & MROCE_EXT_NAK)
		n += sizeof(struct mroce_nakh);
	if (ext & MROCE_EXT_PROBE)
		n += sizeof(struct mroce_probeh);
	if (ext & MROCE_EXT_REROLL)
		n += sizeof(struct mroce_rerollh);
	if (ext & MROCE_EXT_CONN)
		n += sizeof(struct mroce_connh);
	return n;
}

/* ------------------------------------------------------------------ */
/* Sequence numbers                                                    */
/* ------------------------------------------------------------------ */

/* MetaRoCE PSNs are 32 bits and wrap; a is "before" b when the signed
 * distance is negative (valid while the two are < 2^31 apart). */
static inline __s32 mroce_psn_diff(__u32 a, __u32 b)
{
	return (__s32)(a - b);
}

static inline int mroce_psn_before(__u32 a, __u32 b)
{
	return mroce_psn_diff(a, b) < 0;
}

/* First PSN of generation @gen of path slot @slot, for a direction whose
 * handshake ISN is @isn. Both ends compute it, so a new path needs no
 * extra round trip and a blind attacker (who lacks the ISN) cannot guess
 * it. The multipliers are odd, so distinct (slot, gen) spread widely. */
static inline __u32 mroce_path_isn(__u32 isn, __u8 slot, __u8 gen)
{
	return isn + (__u32)slot * 0x9E3779B1u + (__u32)gen * 0x85EBCA77u;
}

/* RoCEv2 PSNs are 24 bits. Signed distance a - b in [-2^23, 2^23). */
#define ROCEV2_PSN_MASK		0x00ffffffu
static inline __s32 rocev2_psn_diff(__u32 a, __u32 b)
{
	return ((__s32)((a - b) << 8)) >> 8;
}

static inline __u32 rocev2_psn_add(__u32 a, __u32 n)
{
	return (a + n) & ROCEV2_PSN_MASK;
}

/* ------------------------------------------------------------------ */
/* RoCEv2 (IBTA Annex A17) RC subset                                    */
/* ------------------------------------------------------------------ */

struct rocev2_bth {
	__u8 opcode;		/* enum rocev2_op */
	__u8 flags;		/* SE 0x80, MigReq 0x40, PadCount 0x30, TVer 0x0f */
	__be16 pkey;		/* 0xffff (default partition) */
	__be32 dqpn;		/* FECN 0x80000000, BECN 0x40000000, QPN 24 bits */
	__be32 apsn;		/* AckReq 0x80000000, PSN 24 bits */
} __attribute__((packed));

#define ROCEV2_BTH_SE		0x80
#define ROCEV2_BTH_MIG		0x40
#define ROCEV2_BTH_PAD_MASK	0x30
#define ROCEV2_BTH_PAD_SHIFT	4
#define ROCEV2_BTH_TVER_MASK	0x0f
#define ROCEV2_FECN		0x80000000u
#define ROCEV2_BECN		0x40000000u
#define ROCEV2_QPN_MASK		0x00ffffffu
#define ROCEV2_ACKREQ		0x80000000u
#define ROCEV2_DEFAULT_PKEY	0xffff

struct rocev2_reth {
	__be64 va;
	__be32 rkey;
	__be32 dma_len;
} __attribute__((packed));

struct rocev2_aeth {
	__be32 syn_msn;		/* syndrome (8 bits) | MSN (24 bits) */
} __attribute__((packed));

struct rocev2_immdt {
	__be32 imm;
} __attribute__((packed));

/* AETH syndrome */
#define ROCEV2_AETH_TYPE_MASK	0xe0
#define ROCEV2_AETH_ACK		0x00	/* low 5 bits: credit count */
#define ROCEV2_AETH_RNR_NAK	0x20	/* low 5 bits: RNR timer code */
#define ROCEV2_AETH_NAK		0x60	/* low 5 bits: NAK code */
#define ROCEV2_AETH_CREDIT_INVALID 0x1f
enum rocev2_nak_code {
	ROCEV2_NAK_PSN_SEQ = 0,
	ROCEV2_NAK_INVALID_REQ = 1,
	ROCEV2_NAK_REMOTE_ACCESS = 2,
	ROCEV2_NAK_REMOTE_OP = 3,
	ROCEV2_NAK_INVALID_RD = 4,
};

#define ROCEV2_EXT_RETH		0x01
#define ROCEV2_EXT_AETH		0x02
#define ROCEV2_EXT_IMM		0x04

/* X(name, code, extension headers, payload) - RC opcodes we speak. */
#define ROCEV2_OPS(X)                                                          \
	X(SEND_FIRST, 0x00, 0, 1)                                              \
	X(SEND_MIDDLE, 0x01, 0, 1)                                             \
	X(SEND_LAST, 0x02, 0, 1)                                               \
	X(SEND_LAST_IMM, 0x03, ROCEV2_EXT_IMM, 1)                              \
	X(SEND_ONLY, 0x04, 0, 1)                                               \
	X(SEND_ONLY_IMM, 0x05, ROCEV2_EXT_IMM, 1)                              \
	X(WRITE_FIRST, 0x06, ROCEV2_EXT_RETH, 1)                               \
	X(WRITE_MIDDLE, 0x07, 0, 1)                                            \
	X(WRITE_LAST, 0x08, 0, 1)                                              \
	X(WRITE_LAST_IMM, 0x09, ROCEV2_EXT_IMM, 1)                             \
	X(WRITE_ONLY, 0x0a, ROCEV2_EXT_RETH, 1)                                \
	X(WRITE_ONLY_IMM, 0x0b, ROCEV2_EXT_RETH | ROCEV2_EXT_IMM, 1)           \
	X(READ_REQ, 0x0c, ROCEV2_EXT_RETH, 0)                                  \
	X(READ_RESP_FIRST, 0x0d, ROCEV2_EXT_AETH, 1)                           \
	X(READ_RESP_MIDDLE, 0x0e, 0, 1)                                        \
	X(READ_RESP_LAST, 0x0f, ROCEV2_EXT_AETH, 1)                            \
	X(READ_RESP_ONLY, 0x10, ROCEV2_EXT_AETH, 1)                            \
	X(ACK, 0x11, ROCEV2_EXT_AETH, 0)

enum rocev2_op {
#define ROCEV2_X_ENUM(name, code, ext, payload) ROCEV2_OP_##name = code,
	ROCEV2_OPS(ROCEV2_X_ENUM)
#undef ROCEV2_X_ENUM
};

/* ------------------------------------------------------------------ */
/* Size checks: every wire struct is exactly its documented size.      */
/* ------------------------------------------------------------------ */
_Static_assert(sizeof(struct mroce_hdr) == 12, "mroce_hdr");
_Static_assert(sizeof(struct mroce_seqh) == 8, "mroce_seqh");
_Static_assert(sizeof(struct mroce_msgh) == 16, "mroce_msgh");
_Static_assert(sizeof(struct mroce_raddrh) == 12, "mroce_raddrh");
_Static_assert(sizeof(struct mroce_sinkh) == 12, "mroce_sinkh");
_Static_assert(sizeof(struct mroce_sendh) == 4, "mroce_sendh");
_Static_assert(sizeof(struct mroce_immh) == 4, "mroce_immh");
_Static_assert(sizeof(struct mroce_ackh) == 48, "mroce_ackh");
_Static_assert(sizeof(struct mroce_nakh) == 16, "mroce_nakh");
_Static_assert(sizeof(struct mroce_probeh) == 8, "mroce_probeh");

/* Padding a PROBE carries so that it is as long as the ACK that answers
 * it: whoever answers (the kernel fast path in particular) never sends
 * more bytes than it received (spec 5.10). */
#define MROCE_PROBE_PAD (sizeof(struct mroce_ackh) - sizeof(struct mroce_probeh))
_Static_assert(sizeof(struct mroce_rerollh) == 8, "mroce_rerollh");
_Static_assert(sizeof(struct mroce_connh) == 40, "mroce_connh");
_Static_assert(sizeof(struct rocev2_bth) == 12, "rocev2_bth");
_Static_assert(sizeof(struct rocev2_reth) == 16, "rocev2_reth");
_Static_assert(sizeof(struct rocev2_aeth) == 4, "rocev2_aeth");
_Static_assert(sizeof(struct rocev2_immdt) == 4, "rocev2_immdt");

#endif /* MROCE_WIRE_H */
