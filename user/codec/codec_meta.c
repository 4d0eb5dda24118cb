// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * MetaRoCE v0 codec. One table of extension headers (wire order, length,
 * decoder, encoder) drives both directions: the opcode descriptor says
 * which extensions are present, the table says how each is laid out.
 *
 * The engine calls mroce_meta_parse() for every packet it receives, so the
 * parser allocates nothing, copies no payload and touches each byte of the
 * packet once (in the CRC) plus the headers once more.
 */
#include "mroce/codec.h"
#include "codec_int.h"

#include <string.h>

typedef void (*ext_dec_fn)(const uint8_t *h, struct mroce_meta_pkt *p);
typedef void (*ext_enc_fn)(uint8_t *h, const struct mroce_meta_pkt *p);

static void dec_seq(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->psn = get_be32(h);
	p->tsval = get_be32(h + 4);
}

static void enc_seq(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be32(h, p->psn);
	put_be32(h + 4, p->tsval);
}

static void dec_msg(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->stream = get_be32(h);
	p->msn = get_be32(h + 4);
	p->offset = get_be32(h + 8);
	p->msg_len = get_be32(h + 12);
}

static void enc_msg(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be32(h, p->stream);
	put_be32(h + 4, p->msn);
	put_be32(h + 8, p->offset);
	put_be32(h + 12, p->msg_len);
}

static void dec_raddr(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->va = get_be64(h);
	p->rkey = get_be32(h + 8);
}

static void enc_raddr(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be64(h, p->va);
	put_be32(h + 8, p->rkey);
}

static void dec_sink(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->sink_va = get_be64(h);
	p->sink_key = get_be32(h + 8);
}

static void enc_sink(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be64(h, p->sink_va);
	put_be32(h + 8, p->sink_key);
}

static void dec_send(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->ssn = get_be32(h);
}

static void enc_send(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be32(h, p->ssn);
}

static void dec_imm(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->imm = get_be32(h);
}

static void enc_imm(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be32(h, p->imm);
}

static void dec_ack(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->ack.cum_psn = get_be32(h);
	p->ack.tsecr = get_be32(h + 4);
	p->ack.rate_mbps = get_be32(h + 8);
	p->ack.ce_count = get_be16(h + 12);
	p->ack.flags = h[14];
	/* h[15]: reserved, ignored */
	memcpy(p->ack.sack, h + 16, MROCE_SACK_BYTES);
}

static void enc_ack(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be32(h, p->ack.cum_psn);
	put_be32(h + 4, p->ack.tsecr);
	put_be32(h + 8, p->ack.rate_mbps);
	put_be16(h + 12, p->ack.ce_count);
	h[14] = p->ack.flags;
	h[15] = 0;
	memcpy(h + 16, p->ack.sack, MROCE_SACK_BYTES);
}

static void dec_nak(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->nak.code = h[0];
	p->nak.rnr_timer = h[1];
	/* h[2..3]: reserved, ignored */
	p->nak.stream = get_be32(h + 4);
	p->nak.msn = get_be32(h + 8);
	p->nak.psn = get_be32(h + 12);
}

static void enc_nak(uint8_t *h, const struct mroce_meta_pkt *p)
{
	h[0] = p->nak.code;
	h[1] = p->nak.rnr_timer;
	put_be16(h + 2, 0);
	put_be32(h + 4, p->nak.stream);
	put_be32(h + 8, p->nak.msn);
	put_be32(h + 12, p->nak.psn);
}

/* PROBE's tsval lands in p->tsval, like SEQ's (codec.h). */
static void dec_probe(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->next_psn = get_be32(h);
	p->tsval = get_be32(h + 4);
}

static void enc_probe(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be32(h, p->next_psn);
	put_be32(h + 4, p->tsval);
}

static void dec_reroll(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->reroll.old_gen = h[0];
	p->reroll.new_gen = h[1];
	p->reroll.new_sport = get_be16(h + 2);
	p->reroll.reason = h[4];
	/* h[5..7]: reserved, ignored */
}

static void enc_reroll(uint8_t *h, const struct mroce_meta_pkt *p)
{
	h[0] = p->reroll.old_gen;
	h[1] = p->reroll.new_gen;
	put_be16(h + 2, p->reroll.new_sport);
	h[4] = p->reroll.reason;
	h[5] = h[6] = h[7] = 0;
}

static void dec_conn(const uint8_t *h, struct mroce_meta_pkt *p)
{
	p->conn.src_conn_id = get_be32(h);
	p->conn.isn = get_be32(h + 4);
	p->conn.nonce = get_be64(h + 8);
	p->conn.cookie = get_be64(h + 16);
	p->conn.cookie_time = get_be32(h + 24);
	p->conn.mtu = get_be16(h + 28);
	p->conn.max_paths = h[30];
	p->conn.caps = h[31];
	p->conn.reason = get_be32(h + 32);
	/* h[36..39]: reserved, ignored */
}

static void enc_conn(uint8_t *h, const struct mroce_meta_pkt *p)
{
	put_be32(h, p->conn.src_conn_id);
	put_be32(h + 4, p->conn.isn);
	put_be64(h + 8, p->conn.nonce);
	put_be64(h + 16, p->conn.cookie);
	put_be32(h + 24, p->conn.cookie_time);
	put_be16(h + 28, p->conn.mtu);
	h[30] = p->conn.max_paths;
	h[31] = p->conn.caps;
	put_be32(h + 32, p->conn.reason);
	put_be32(h + 36, 0);
}

static const struct mr_ext {
	uint16_t bit;
	uint8_t len;
	ext_dec_fn dec;
	ext_enc_fn enc;
} mr_exts[] = {
	/* wire order */
	{ MROCE_EXT_SEQ, sizeof(struct mroce_seqh), dec_seq, enc_seq },
	{ MROCE_EXT_MSG, sizeof(struct mroce_msgh), dec_msg, enc_msg },
	{ MROCE_EXT_RADDR, sizeof(struct mroce_raddrh), dec_raddr, enc_raddr },
	{ MROCE_EXT_SINK, sizeof(struct mroce_sinkh), dec_sink, enc_sink },
	{ MROCE_EXT_SEND, sizeof(struct mroce_sendh), dec_send, enc_send },
	{ MROCE_EXT_IMM, sizeof(struct mroce_immh), dec_imm, enc_imm },
	{ MROCE_EXT_ACK, sizeof(struct mroce_ackh), dec_ack, enc_ack },
	{ MROCE_EXT_NAK, sizeof(struct mroce_nakh), dec_nak, enc_nak },
	{ MROCE_EXT_PROBE, sizeof(struct mroce_probeh), dec_probe, enc_probe },
	{ MROCE_EXT_REROLL, sizeof(struct mroce_rerollh), dec_reroll,
	  enc_reroll },
	{ MROCE_EXT_CONN, sizeof(struct mroce_connh), dec_conn, enc_conn },
};

static bool is_connect_op(uint8_t op)
{
	return op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_CHALLENGE ||
	       op == MROCE_OP_CONNECT_CONFIRM || op == MROCE_OP_CONNECT_ACCEPT;
}

/* The field rules shared by parse (-> BAD_OFFSET / BAD_FIELD) and build
 * (-> INVAL), so that build never emits what parse would refuse. */
static int mr_check_fields(const struct mroce_meta_pkt *p, uint16_t ext)
{
	if (p->path >= MROCE_MAX_PATHS)
		return -MROCE_E_BAD_FIELD;
	if (p->payload_len > MROCE_MAX_PAYLOAD)
		return -MROCE_E_BAD_FIELD;
	/* 64-bit sum: offset + length must not wrap past msg_len. */
	if ((ext & MROCE_EXT_MSG) &&
	    (uint64_t)p->offset + p->payload_len > p->msg_len)
		return -MROCE_E_BAD_OFFSET;
	if ((ext & MROCE_EXT_NAK) &&
	    (p->nak.code == 0 || p->nak.code > MROCE_NAK_MAX))
		return -MROCE_E_BAD_FIELD;
	if (is_connect_op(p->opcode) &&
	    (p->conn.max_paths == 0 || p->conn.max_paths > MROCE_MAX_PATHS))
		return -MROCE_E_BAD_FIELD;
	return 0;
}

int mroce_meta_parse(const void *l4, size_t len, struct mroce_meta_pkt *p)
{
	const uint8_t *b = l4;
	const struct mroce_opdesc *d;
	size_t hlen, plen;
	const uint8_t *h;

	if (!b || !p)
		return -MROCE_E_INVAL;
	if (len < sizeof(struct mroce_hdr))
		return -MROCE_E_TRUNC_HDR;
	if (b[0] != MROCE_WIRE_VERSION)
		return -MROCE_E_BAD_VERSION;
	d = mroce_meta_opdesc(b[1]);
	/* before any length arithmetic (peers.md: rxe's out-of-bounds read) */
	if (!d)
		return -MROCE_E_BAD_OPCODE;
	hlen = d->hdr_len;
	if ((size_t)b[3] * 4 != hlen)
		return -MROCE_E_BAD_HDR_LEN;
	if (len < hlen)
		return -MROCE_E_TRUNC_EXT;
	plen = get_be16(b + 10);
	if (len - hlen < MROCE_ICRC_LEN || len - hlen - MROCE_ICRC_LEN != plen)
		return -MROCE_E_BAD_LEN;
	if (plen && !d->payload)
		return -MROCE_E_UNEXPECTED_PAYLOAD;
	if (mroce_meta_icrc(b, len - MROCE_ICRC_LEN) !=
	    get_be32(b + len - MROCE_ICRC_LEN))
		return -MROCE_E_BAD_ICRC;

	p->desc = d;
	p->opcode = b[1];
	/* reserved bits are ignored on receive (wire.h): drop them here so
	 * that no consumer can start to depend on them */
	p->flags = b[2] & (uint8_t)~MROCE_F_RESERVED;
	p->conn_id = get_be32(b + 4);
	p->path = b[8];
	p->path_gen = b[9];
	p->payload_len = (uint32_t)plen;
	p->payload = b + hlen;
	h = b + sizeof(struct mroce_hdr);
	for (size_t i = 0; i < sizeof(mr_exts) / sizeof(mr_exts[0]); i++) {
		if (!(d->ext & mr_exts[i].bit))
			continue;
		mr_exts[i].dec(h, p);
		h += mr_exts[i].len;
	}
	return mr_check_fields(p, d->ext);
}

/* Places the payload after the hlen header bytes at b and returns the
 * ICRC of both. A payload apart from b is copied and checksummed in one
 * pass; one that overlaps the destination (the caller may hand us a
 * payload already inside buf, possibly shifted) is moved first. */
static uint32_t mr_payload_icrc(uint8_t *b, size_t hlen, const void *payload,
				size_t len)
{
	uint8_t *dst = b + hlen;
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)payload;

	if (!payload || !len || payload == dst)
		return mroce_meta_icrc(b, hlen + len);
	if (s < d + len && d < s + len) {
		memmove(dst, payload, len);
		return mroce_meta_icrc(b, hlen + len);
	}
	return mroce_crc32_copy(mroce_crc32(0, b, hlen), dst, payload, len);
}

int mroce_meta_build(const struct mroce_meta_pkt *p, void *buf, size_t cap)
{
	const struct mroce_opdesc *d;
	uint8_t *b = buf, *h;
	size_t hlen, total;

	if (!p || !b)
		return -MROCE_E_INVAL;
	d = mroce_meta_opdesc(p->opcode);
	if (!d)
		return -MROCE_E_INVAL;
	if (p->flags & MROCE_F_RESERVED)
		return -MROCE_E_INVAL;
	if (p->payload_len && !d->payload)
		return -MROCE_E_INVAL;
	if (mr_check_fields(p, d->ext))
		return -MROCE_E_INVAL;
	hlen = d->hdr_len;
	total = hlen + p->payload_len + MROCE_ICRC_LEN;
	if (cap < total)
		return -MROCE_E_NOSPACE;

	b[0] = MROCE_WIRE_VERSION;
	b[1] = p->opcode;
	b[2] = p->flags;
	b[3] = (uint8_t)(hlen / 4);
	put_be32(b + 4, p->conn_id);
	b[8] = p->path;
	b[9] = p->path_gen;
	put_be16(b + 10, (uint16_t)p->payload_len);
	h = b + sizeof(struct mroce_hdr);
	for (size_t i = 0; i < sizeof(mr_exts) / sizeof(mr_exts[0]); i++) {
		if (!(d->ext & mr_exts[i].bit))
			continue;
		mr_exts[i].enc(h, p);
		h += mr_exts[i].len;
	}
	put_be32(b + hlen + p->payload_len,
		 mr_payload_icrc(b, hlen, p->payload, p->payload_len));
	return (int)total;
}

uint32_t mroce_meta_icrc(const void *l4, size_t len_without_icrc)
{
	return mroce_crc32(0, l4, len_without_icrc);
}
