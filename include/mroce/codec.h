/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet codecs for MetaRoCE v0 and the RoCEv2 RC subset (userspace only).
 *
 * Error convention of this layer: functions return a value >= 0 on success
 * (a length where one is meaningful) and a NEGATIVE enum mroce_err on
 * failure. The codec never prints, never allocates and keeps no state;
 * parsed structs point into the caller's buffer (no copies of payload).
 *
 * Error ranges: the codec's errors live in [MROCE_E_BASE, MROCE_E__COUNT),
 * above every errno (Linux keeps errno below 4096, its MAX_ERRNO), so a
 * caller that passes on either kind (mroce_engine_rx returns -MROCE_E_* or
 * -errno) hands out numbers that never collide: -4096 and below is a codec
 * error, -4095..-1 an errno. mroce_is_codec_err() tells them apart.
 */
#ifndef MROCE_CODEC_H
#define MROCE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mroce/wire.h"

/* Named parse/build errors. Returned negated. The list's order is not part
 * of any ABI (nothing outside the codec indexes by it): append or insert
 * freely. */
#define MROCE_ERRORS(X)                                                        \
	X(TRUNC_ETH, "frame shorter than the Ethernet header")                 \
	X(TRUNC_VLAN, "frame truncated inside the 802.1Q tag")                 \
	X(BAD_ETHERTYPE, "EtherType is neither IPv4 nor IPv6")                 \
	X(TRUNC_IP, "frame truncated inside the IP header")                    \
	X(BAD_IP_VERSION, "IP version field does not match the EtherType")     \
	X(BAD_IP_HDR_LEN, "IPv4 header length is below 20 bytes")              \
	X(BAD_IP_LEN, "IP length field disagrees with the frame")              \
	X(BAD_IP_CSUM, "IPv4 header checksum is wrong")                        \
	X(IP_FRAGMENT, "IP fragment (not supported)")                          \
	X(NOT_UDP, "IP payload is not UDP")                                    \
	X(TRUNC_UDP, "frame truncated inside the UDP header")                  \
	X(BAD_UDP_LEN, "UDP length field disagrees with the IP length")        \
	X(NOT_OURS, "UDP destination port is not ours")                        \
	X(TRUNC_HDR, "packet shorter than the transport's base header")        \
	X(BAD_VERSION, "unknown MetaRoCE version or RoCEv2 TVer")              \
	X(BAD_OPCODE, "unknown or unsupported opcode")                         \
	X(BAD_HDR_LEN, "hdr_words disagrees with the opcode")                  \
	X(TRUNC_EXT, "packet truncated inside an extension header")            \
	X(BAD_LEN, "payload length disagrees with the packet length")          \
	X(UNEXPECTED_PAYLOAD, "opcode must not carry payload")                 \
	X(BAD_PAD, "pad count or pad bytes invalid")                           \
	X(BAD_ICRC, "ICRC mismatch")                                           \
	X(BAD_OFFSET, "offset + length exceeds the message length")            \
	X(BAD_FIELD, "a field holds a value the spec forbids")                 \
	X(NOSPACE, "output buffer too small")                                  \
	X(INVAL, "invalid argument")

/* First codec error: above every errno value (MAX_ERRNO is 4095). */
#define MROCE_E_BASE	4096

enum mroce_err {
	MROCE_OK = 0,
	MROCE_E__BEFORE = MROCE_E_BASE - 1,	/* next one is MROCE_E_BASE */
#define MROCE_X_ERR(name, text) MROCE_E_##name,
	MROCE_ERRORS(MROCE_X_ERR)
#undef MROCE_X_ERR
	MROCE_E__COUNT		/* one past the last error value */
};

/* Number of named errors (MROCE_E_BASE .. MROCE_E__COUNT - 1). */
#define MROCE_E_NUM	(MROCE_E__COUNT - MROCE_E_BASE)

/* true if err (either sign) is one of the codec's errors, not an errno. */
static inline bool mroce_is_codec_err(int err)
{
	return (err >= MROCE_E_BASE && err < MROCE_E__COUNT) ||
	       (err <= -MROCE_E_BASE && err > -MROCE_E__COUNT);
}

/* "TRUNC_ETH", ... for err or -err; "OK" for 0; "UNKNOWN" otherwise
 * (errno values included). */
const char *mroce_err_name(int err);
/* One-line description; never NULL. */
const char *mroce_err_text(int err);

/* ------------------------------------------------------------------ */
/* Opcode descriptor tables                                            */
/* ------------------------------------------------------------------ */
enum mroce_proto {
	MROCE_PROTO_METAROCE = 1,
	MROCE_PROTO_ROCEV2 = 2,
};

/* Where a packet sits in its message (IBTA's FIRST/MIDDLE/LAST/ONLY), as
 * two bits: a packet that starts a message has MROCE_POS_FIRST, one that
 * ends it MROCE_POS_LAST. Opcodes that are no part of a multi-packet
 * message (READ_REQ, ACK, CNP, and every MetaRoCE opcode: its packets
 * carry their own offset) are ONLY. */
enum mroce_pkt_pos {
	MROCE_POS_MIDDLE = 0,
	MROCE_POS_FIRST = 1,
	MROCE_POS_LAST = 2,
	MROCE_POS_ONLY = MROCE_POS_FIRST | MROCE_POS_LAST,
};

struct mroce_opdesc {
	const char *name;	/* "SEND", "WRITE_ONLY_IMM", ... */
	uint8_t proto;		/* enum mroce_proto */
	uint8_t opcode;
	uint16_t ext;		/* MROCE_EXT_* or ROCEV2_EXT_* */
	uint16_t hdr_len;	/* base + extension headers, bytes */
	bool payload;		/* may carry payload */
	uint8_t pos;		/* enum mroce_pkt_pos */
};

/* NULL for an unknown opcode. */
const struct mroce_opdesc *mroce_meta_opdesc(uint8_t opcode);
const struct mroce_opdesc *mroce_rv2_opdesc(uint8_t opcode);

/* ------------------------------------------------------------------ */
/* L2-L4                                                               */
/* ------------------------------------------------------------------ */
struct mroce_l3 {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t src[16];	/* IPv4 uses the first 4 bytes */
	uint8_t dst[16];
	uint8_t tos;		/* IPv4 TOS / IPv6 traffic class (ECN: low 2) */
	uint8_t ttl;		/* TTL / hop limit */
	uint32_t flow_label;	/* IPv6 only */
};

struct mroce_frame {
	uint8_t dmac[6], smac[6];
	bool has_vlan;
	uint16_t vlan_tci;
	struct mroce_l3 l3;
	uint16_t sport, dport;
	const uint8_t *l3_hdr;	/* start of the IP header in the frame */
	size_t l3_hdr_len;	/* IPv4 20..60 (options kept), IPv6 40 */
	const uint8_t *udp;	/* start of the UDP header */
	const uint8_t *l4;	/* UDP payload */
	size_t l4_len;		/* UDP payload length (from the UDP header) */
};

/* Parse Ethernet (+ one 802.1Q tag) / IPv4 or IPv6 / UDP. Does not look at
 * the UDP port. Returns 0 or -MROCE_E_*.
 * IPv4 options are skipped, the header checksum is verified, fragments are
 * refused; IPv6 must carry UDP directly (no extension headers). The UDP
 * length must equal the IP payload length; bytes after the IP datagram
 * (Ethernet padding) are ignored. UDP checksums are not verified (the ICRC
 * of either protocol covers the payload). */
int mroce_frame_parse(const void *buf, size_t len, struct mroce_frame *f);

/* What mroce_frame_build() writes in front of a UDP payload. */
struct mroce_frame_spec {
	uint8_t dmac[6], smac[6];
	int vlan;		/* 802.1Q TCI, or -1 for no tag */
	struct mroce_l3 l3;	/* family, addresses, tos, ttl, flow label */
	uint16_t sport, dport;
	uint16_t ip_id;		/* IPv4 identification */
};

/* Bytes of Ethernet + IP + UDP headers for this spec; 0 for an unknown
 * family. */
size_t mroce_frame_hdr_len(const struct mroce_frame_spec *s);

/* Write Ethernet/IP/UDP headers at buf for a UDP payload of l4_len bytes
 * that the caller has placed (or will place) at buf + hdr_len. IPv4 header
 * checksum is computed; UDP checksum is 0 on IPv4 and computed over the
 * payload on IPv6 (so the payload must already be in place for IPv6).
 * Returns the total frame length or -MROCE_E_*. */
int mroce_frame_build(const struct mroce_frame_spec *s, size_t l4_len,
		      void *buf, size_t cap);

/* ------------------------------------------------------------------ */
/* MetaRoCE v0                                                         */
/* ------------------------------------------------------------------ */

/* Parsed MetaRoCE packet in host byte order. Only the members of the
 * extension headers present (desc->ext) are meaningful. */
struct mroce_meta_pkt {
	const struct mroce_opdesc *desc;	/* set by parse; ignored by build */
	uint8_t opcode;
	uint8_t flags;		/* MROCE_F_* */
	uint32_t conn_id;
	uint8_t path, path_gen;
	/* SEQ */
	uint32_t psn, tsval;
	/* MSG */
	uint32_t stream, msn, offset, msg_len;
	/* RADDR */
	uint64_t va;
	uint32_t rkey;
	/* SINK */
	uint64_t sink_va;
	uint32_t sink_key;
	/* SEND */
	uint32_t ssn;
	/* IMM */
	uint32_t imm;
	/* ACK */
	struct {
		uint32_t cum_psn, tsecr, rate_mbps;
		uint16_t ce_count;
		uint8_t flags;
		uint8_t sack[MROCE_SACK_BYTES];
	} ack;
	/* NAK */
	struct {
		uint8_t code, rnr_timer;
		uint32_t stream, msn, psn;
	} nak;
	/* PROBE (tsval above carries its tsval) */
	uint32_t next_psn;
	/* PATH_REROLL */
	struct {
		uint8_t old_gen, new_gen, reason;
		uint16_t new_sport;
	} reroll;
	/* CONN */
	struct {
		uint32_t src_conn_id, isn;
		uint64_t nonce, cookie;
		uint32_t cookie_time;
		uint16_t mtu;
		uint8_t max_paths, caps;
		uint32_t reason;
	} conn;
	/* payload (points into the parsed buffer / copied by build) */
	const uint8_t *payload;
	uint32_t payload_len;
};

/* Parse a UDP payload as MetaRoCE v0. Order of checks: length of the
 * common header, version, opcode (unknown -> BAD_OPCODE before any length
 * arithmetic), hdr_words, extension lengths, payload_len, ICRC, field
 * consistency (offset + payload_len <= msg_len, reserved NAK codes, ...).
 * len includes the 4-byte ICRC trailer and must match exactly.
 * Field rules (BAD_OFFSET / BAD_FIELD): offset + payload_len > msg_len;
 * payload_len > MROCE_MAX_PAYLOAD; NAK code 0 or > MROCE_NAK_MAX;
 * max_paths 0 or > MROCE_MAX_PATHS in CONNECT_REQ/_CHALLENGE/_CONFIRM/
 * _ACCEPT (not CLOSE/CLOSE_ACK); path >= MROCE_MAX_PATHS.
 * Reserved bits and bytes are ignored: p->flags never has
 * MROCE_F_RESERVED bits set. Allocates nothing, copies no payload.
 * Returns 0 or -MROCE_E_*. */
int mroce_meta_parse(const void *l4, size_t len, struct mroce_meta_pkt *p);

/* Header bytes (common + extensions) of a MetaRoCE opcode, or -BAD_OPCODE. */
int mroce_meta_hdr_len(uint8_t opcode);

/* Build p (headers, copy of p->payload, ICRC) into buf. Returns the UDP
 * payload length or -MROCE_E_*. p->payload may be NULL when the caller has
 * already put payload_len bytes at buf + mroce_meta_hdr_len(opcode).
 * -INVAL for anything mroce_meta_parse() would refuse (unknown opcode,
 * reserved flags, payload on a no-payload opcode, the field rules above);
 * -NOSPACE if cap is too small. Reserved fields are written as zero. */
int mroce_meta_build(const struct mroce_meta_pkt *p, void *buf, size_t cap);

/* MetaRoCE ICRC: CRC-32 over everything from the common header to the end
 * of the payload, stored big-endian after it. */
uint32_t mroce_meta_icrc(const void *l4, size_t len_without_icrc);

/* ------------------------------------------------------------------ */
/* RoCEv2                                                              */
/* ------------------------------------------------------------------ */

/* Besides the RC opcodes of ROCEV2_OPS (wire.h) the codec knows the RoCEv2
 * Congestion Notification Packet (Annex A17.9): BTH (dqpn = QP to slow
 * down, BECN set) + 16 reserved bytes, no payload. A receiver must be able
 * to parse the CNPs that ECN-marking fabrics make NICs send. */
#define ROCEV2_OP_CNP		0x81
#define ROCEV2_EXT_CNP		0x80	/* the 16 reserved bytes of a CNP */
#define ROCEV2_CNP_RESV_LEN	16
#define ROCEV2_EXTRA_OPS(X) X(CNP, ROCEV2_OP_CNP, ROCEV2_EXT_CNP, 0)

struct mroce_rv2_pkt {
	const struct mroce_opdesc *desc;
	uint8_t opcode;
	bool se, migreq, fecn, becn, ackreq;
	uint8_t pad;		/* pad count 0..3 (set by build) */
	uint16_t pkey;
	uint32_t dqpn;		/* 24 bits */
	uint32_t psn;		/* 24 bits */
	/* RETH */
	uint64_t va;
	uint32_t rkey, dma_len;
	/* AETH */
	uint8_t syndrome;
	uint32_t msn;		/* 24 bits */
	/* ImmDt */
	uint32_t imm;
	const uint8_t *payload;
	uint32_t payload_len;	/* without pad */
};

/* Parse the UDP payload of a RoCEv2 frame; f supplies the IP/UDP headers
 * that the ICRC covers (f->l4 must be the l4 passed). Checks: BTH length,
 * TVer, opcode, extension lengths, pad count and pad bytes (zero), ICRC.
 * Returns 0 or -MROCE_E_*. */
int mroce_rv2_parse(const struct mroce_frame *f, struct mroce_rv2_pkt *p);

/* Parse a RoCEv2 UDP payload WITHOUT verifying the ICRC, for callers that
 * verified it on the whole frame already or that cannot see the IP header
 * (the engine, the UDP-socket backend). Same checks otherwise. */
int mroce_rv2_parse_l4(const void *l4, size_t len, struct mroce_rv2_pkt *p);

/* Build BTH + extensions + payload + pad into buf with a zero ICRC
 * placeholder. Returns the UDP payload length or -MROCE_E_*.
 * The pad count is computed from payload_len (p->pad is ignored);
 * p->payload may be NULL when the payload is already at buf + hdr_len.
 * -INVAL: unknown opcode, payload on READ_REQ/ACK/CNP, dqpn/psn (or the
 * AETH msn) wider than 24 bits; -NOSPACE if cap is too small. */
int mroce_rv2_build(const struct mroce_rv2_pkt *p, void *buf, size_t cap);

/* Compute the RoCEv2 ICRC of a complete frame (Ethernet..ICRC) whose
 * headers are already written, using the IPv4/IPv6 masking rules, and
 * store it (little-endian, as the wire requires) in the last 4 bytes
 * (of the UDP payload, should the frame carry Ethernet padding). The ICRC
 * does not cover the UDP checksum, but the checksum covers the ICRC: a
 * UDP checksum that is present (always on IPv6) is updated to match, so
 * call this after mroce_frame_build(). Returns 0 or -MROCE_E_*. */
int mroce_rv2_icrc_fill(void *frame, size_t len);

/* ICRC over a parsed frame (value as stored on the wire, host order of the
 * little-endian field). IPv4 options, if any, are covered as part of the
 * IP header. 0 if f->l4_len < 16 (no room for BTH + ICRC). */
uint32_t mroce_rv2_icrc(const struct mroce_frame *f);

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */
/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32). crc = 0 to start.
 * Chains: mroce_crc32(mroce_crc32(0, a, n), b, m) is the CRC of a || b.
 * Uses AVX-512 VPCLMULQDQ or PCLMULQDQ folding on x86-64 CPUs that have
 * them (chosen once, at start-up), tables otherwise. */
uint32_t mroce_crc32(uint32_t crc, const void *buf, size_t len);
/* memcpy(dst, src, len) and mroce_crc32(crc, src, len) in one pass over
 * the bytes (with AVX-512; a copy then a CRC elsewhere). Same chaining as
 * mroce_crc32; dst and src must not overlap. */
uint32_t mroce_crc32_copy(uint32_t crc, void *dst, const void *src,
			  size_t len);
/* The same CRC by tables only (slicing-by-8), on every CPU: for tests and
 * for comparing speeds. */
uint32_t mroce_crc32_generic(uint32_t crc, const void *buf, size_t len);

/* SipHash-2-4 (64-bit output) with a 128-bit key, for handshake cookies. */
uint64_t mroce_siphash24(const uint8_t key[16], const void *buf, size_t len);

#endif /* MROCE_CODEC_H */
