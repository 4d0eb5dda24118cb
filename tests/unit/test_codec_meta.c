// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of user/codec/codec_meta.c: MetaRoCE v0 parse and build. */
#include "test_codec_util.h"

#include <stdio.h>
#include <stdlib.h>

/* The 16 opcodes, in table order (index = loop variable of the tests). */
static const uint8_t mr_opcodes[] = {
#define X_OP(name, code, ext, payload) code,
	MROCE_MR_OPS(X_OP)
#undef X_OP
};
#define N_MR_OPS ((int)(sizeof(mr_opcodes) / sizeof(mr_opcodes[0])))

static uint8_t payload[MROCE_MAX_PAYLOAD + 64];
static uint8_t pkt[MROCE_MAX_PAYLOAD + 256];
static uint8_t frame[MROCE_MAX_PAYLOAD + 512];

static bool is_connect(uint8_t op)
{
	return op >= MROCE_OP_CONNECT_REQ && op <= MROCE_OP_CONNECT_ACCEPT;
}

/* A packet of opcode op with every field distinct and non-zero, so that a
 * field decoded from the wrong offset cannot go unnoticed. */
static void fill(struct mroce_meta_pkt *p, uint8_t op, uint32_t plen)
{
	memset(p, 0, sizeof(*p));
	p->opcode = op;
	p->flags = MROCE_F_ACK_REQ | MROCE_F_LAST;
	p->conn_id = 0x11223344;
	p->path = 63;
	p->path_gen = 0xa7;
	p->psn = 0xfffffffe;
	p->tsval = 0x01020304;
	p->stream = 0x0badcafe;
	p->msn = 0x7fff0001;
	p->offset = 0x00100000;
	p->msg_len = 0x00100000 + plen + 17;
	p->va = 0x7f00123456789abcull;
	p->rkey = 0xdeadbeef;
	p->sink_va = 0x00007ffe00001000ull;
	p->sink_key = 0x5151a5a5;
	p->ssn = 0x00c0ffee;
	p->imm = 0x12345678;
	p->ack.cum_psn = 0x80000001;
	p->ack.tsecr = 0x0a0b0c0d;
	p->ack.rate_mbps = 25000;
	p->ack.ce_count = 0xfffe;
	p->ack.flags = MROCE_ACKF_DUP | MROCE_ACKF_ECE;
	for (int i = 0; i < MROCE_SACK_BYTES; i++)
		p->ack.sack[i] = (uint8_t)(i * 37 + 1);
	p->nak.code = MROCE_NAK_STALE_PATH;
	p->nak.rnr_timer = 200;
	p->nak.stream = 0x31313131;
	p->nak.msn = 0x32323232;
	p->nak.psn = 0x33333333;
	p->next_psn = 0x44444444;
	p->reroll.old_gen = 3;
	p->reroll.new_gen = 4;
	p->reroll.reason = MROCE_REROLL_ECN;
	p->reroll.new_sport = 0xfedc;
	p->conn.src_conn_id = 0x55667788;
	p->conn.isn = 0x99aabbcc;
	p->conn.nonce = 0x0123456789abcdefull;
	p->conn.cookie = 0xfedcba9876543210ull;
	p->conn.cookie_time = 0x66778899;
	p->conn.mtu = 4096;
	p->conn.max_paths = is_connect(op) ? MROCE_MAX_PATHS : 0;
	p->conn.caps = 0x00;
	p->conn.reason = op == MROCE_OP_CLOSE ? MROCE_CLOSE_TIMEOUT : 0;
	for (uint32_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i * 7 + op);
	p->payload = plen ? payload : NULL;
	p->payload_len = plen;
}

static void assert_same(const struct mroce_meta_pkt *a,
			const struct mroce_meta_pkt *b, const char *ctx)
{
	uint16_t ext = mroce_op_ext(a->opcode);

#define SAME(fld) ck_assert_msg(a->fld == b->fld, "%s: " #fld, ctx)
	SAME(opcode);
	SAME(flags);
	SAME(conn_id);
	SAME(path);
	SAME(path_gen);
	SAME(payload_len);
	if (ext & MROCE_EXT_SEQ) {
		SAME(psn);
		SAME(tsval);
	}
	if (ext & MROCE_EXT_MSG) {
		SAME(stream);
		SAME(msn);
		SAME(offset);
		SAME(msg_len);
	}
	if (ext & MROCE_EXT_RADDR) {
		SAME(va);
		SAME(rkey);
	}
	if (ext & MROCE_EXT_SINK) {
		SAME(sink_va);
		SAME(sink_key);
	}
	if (ext & MROCE_EXT_SEND)
		SAME(ssn);
	if (ext & MROCE_EXT_IMM)
		SAME(imm);
	if (ext & MROCE_EXT_ACK) {
		SAME(ack.cum_psn);
		SAME(ack.tsecr);
		SAME(ack.rate_mbps);
		SAME(ack.ce_count);
		SAME(ack.flags);
		ck_assert_mem_eq(a->ack.sack, b->ack.sack, MROCE_SACK_BYTES);
	}
	if (ext & MROCE_EXT_NAK) {
		SAME(nak.code);
		SAME(nak.rnr_timer);
		SAME(nak.stream);
		SAME(nak.msn);
		SAME(nak.psn);
	}
	if (ext & MROCE_EXT_PROBE) {
		SAME(next_psn);
		SAME(tsval);
	}
	if (ext & MROCE_EXT_REROLL) {
		SAME(reroll.old_gen);
		SAME(reroll.new_gen);
		SAME(reroll.reason);
		SAME(reroll.new_sport);
	}
	if (ext & MROCE_EXT_CONN) {
		SAME(conn.src_conn_id);
		SAME(conn.isn);
		SAME(conn.nonce);
		SAME(conn.cookie);
		SAME(conn.cookie_time);
		SAME(conn.mtu);
		SAME(conn.max_paths);
		SAME(conn.caps);
		SAME(conn.reason);
	}
#undef SAME
	if (a->payload_len)
		ck_assert_mem_eq(a->payload, b->payload, a->payload_len);
}

/* Build op into pkt; returns its length (asserting success). */
static int build_op(uint8_t op, uint32_t plen, struct mroce_meta_pkt *p)
{
	int n;

	fill(p, op, mroce_op_has_payload(op) ? plen : 0);
	n = mroce_meta_build(p, pkt, sizeof(pkt));
	ck_assert_msg(n > 0, "build %02x: %s", op, mroce_err_name(n));
	return n;
}

/* Every opcode, 3 payload sizes, 4 encapsulations: build the packet, wrap
 * it in a frame, parse the frame and the packet, compare every field. */
START_TEST(mroce_meta_build__round_trip_every_opcode_every_encap)
{
	static const uint32_t sizes[] = { 0, 1, 1027, MROCE_MAX_PAYLOAD };
	uint8_t op = mr_opcodes[_i];

	for (int e = 0; e < TC_N_ENCAP; e++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			struct mroce_frame_spec s;
			struct mroce_meta_pkt in, out;
			struct mroce_frame f;
			char ctx[64];
			size_t h;
			int n, fl;

			fill(&in, op, mroce_op_has_payload(op) ? sizes[k] : 0);
			tc_spec(&s, e, MROCE_UDP_PORT);
			h = mroce_frame_hdr_len(&s);
			n = mroce_meta_build(&in, frame + h, sizeof(frame) - h);
			ck_assert_int_eq(n, mroce_meta_hdr_len(op) +
						    (int)in.payload_len + 4);
			fl = mroce_frame_build(&s, n, frame, sizeof(frame));
			ck_assert_int_eq(fl, (int)h + n);
			ck_assert_int_eq(mroce_frame_parse(frame, fl, &f), 0);
			ck_assert_uint_eq(f.dport, MROCE_UDP_PORT);
			memset(&out, 0xa5, sizeof(out));
			ck_assert_int_eq(mroce_meta_parse(f.l4, f.l4_len, &out),
					 0);
			snprintf(ctx, sizeof(ctx), "%s/%s/%u",
				 mroce_meta_opdesc(op)->name, tc_encap_name[e],
				 in.payload_len);
			assert_same(&in, &out, ctx);
			ck_assert_ptr_eq(out.desc, mroce_meta_opdesc(op));
			ck_assert_ptr_eq(out.payload,
					 f.l4 + mroce_meta_hdr_len(op));
		}
}
END_TEST

START_TEST(mroce_meta_build__wire_layout)
{
	struct mroce_meta_pkt p;
	int n = build_op(MROCE_OP_WRITE, 5, &p);
	uint32_t crc = mroce_crc32(0, pkt, n - 4);

	ck_assert_int_eq(n, 48 + 5 + 4);
	ck_assert_uint_eq(pkt[0], MROCE_WIRE_VERSION);
	ck_assert_uint_eq(pkt[1], MROCE_OP_WRITE);
	ck_assert_uint_eq(pkt[2], MROCE_F_ACK_REQ | MROCE_F_LAST);
	ck_assert_uint_eq(pkt[3], 48 / 4);	/* hdr_words */
	ck_assert_uint_eq(tc_be16(pkt + 10), 5);	/* payload_len */
	ck_assert_uint_eq(pkt[12], 0xff);		/* psn, big-endian */
	ck_assert_uint_eq(pkt[15], 0xfe);
	/* ICRC = CRC-32 of everything before it, big-endian */
	ck_assert_uint_eq(pkt[n - 4], crc >> 24);
	ck_assert_uint_eq(pkt[n - 1], crc & 0xff);
	ck_assert_uint_eq(mroce_meta_icrc(pkt, n - 4), crc);
}
END_TEST

/* The payload may already sit in buf (zero-copy TX): payload = NULL. */
START_TEST(mroce_meta_build__payload_in_place)
{
	struct mroce_meta_pkt p, q;
	int h = mroce_meta_hdr_len(MROCE_OP_SEND), n;

	fill(&p, MROCE_OP_SEND, 100);
	memcpy(pkt + h, payload, 100);
	p.payload = NULL;
	n = mroce_meta_build(&p, pkt, sizeof(pkt));
	ck_assert_int_eq(n, h + 100 + 4);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &q), 0);
	ck_assert_mem_eq(q.payload, payload, 100);
	/* and payload pointing exactly there is not copied onto itself */
	p.payload = pkt + h;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), n);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &q), 0);
}
END_TEST

/* 32-bit sequence numbers at the wrap survive the round trip. */
START_TEST(mroce_meta_build__psn_wrap_values)
{
	static const uint32_t v[] = { 0, 1, 0x7fffffff, 0x80000000,
				      0xfffffffe, 0xffffffff };
	struct mroce_meta_pkt p, q;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int n;

		fill(&p, MROCE_OP_ACK, 0);
		p.ack.cum_psn = v[i];
		p.ack.tsecr = v[i];
		n = mroce_meta_build(&p, pkt, sizeof(pkt));
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &q), 0);
		ck_assert_uint_eq(q.ack.cum_psn, v[i]);
		fill(&p, MROCE_OP_READ_RESP, 3);
		p.psn = v[i];
		p.msn = v[i];
		n = mroce_meta_build(&p, pkt, sizeof(pkt));
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &q), 0);
		ck_assert_uint_eq(q.psn, v[i]);
		ck_assert_uint_eq(q.msn, v[i]);
		ck_assert(mroce_psn_before(q.psn, q.psn + 1));
	}
}
END_TEST

START_TEST(mroce_meta_build__rejects_invalid_input)
{
	struct mroce_meta_pkt p;
	int n;

	fill(&p, 0x07, 0);	/* unknown opcode */
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	fill(&p, MROCE_OP_SEND, 10);
	p.flags |= 0x01;	/* reserved flag */
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	fill(&p, MROCE_OP_ACK, 0);
	p.payload_len = 4;	/* payload on ACK */
	p.payload = payload;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	fill(&p, MROCE_OP_SEND, MROCE_MAX_PAYLOAD);
	p.payload_len++;
	p.msg_len += 1;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	fill(&p, MROCE_OP_WRITE, 10);
	p.offset = 0xfffffffa;	/* offset + len wraps */
	p.msg_len = 0xffffffff;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	fill(&p, MROCE_OP_NAK, 0);
	p.nak.code = 0;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	fill(&p, MROCE_OP_PROBE, 0);
	p.path = MROCE_MAX_PATHS;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	fill(&p, MROCE_OP_CONNECT_REQ, 0);
	p.conn.max_paths = MROCE_MAX_PATHS + 1;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, sizeof(pkt)), -MROCE_E_INVAL);
	ck_assert_int_eq(mroce_meta_build(NULL, pkt, sizeof(pkt)),
			 -MROCE_E_INVAL);
	fill(&p, MROCE_OP_SEND, 10);
	ck_assert_int_eq(mroce_meta_build(&p, NULL, sizeof(pkt)), -MROCE_E_INVAL);
	n = mroce_meta_hdr_len(MROCE_OP_SEND) + 10 + 4;
	ck_assert_int_eq(mroce_meta_build(&p, pkt, n - 1), -MROCE_E_NOSPACE);
	ck_assert_int_eq(mroce_meta_build(&p, pkt, n), n);
}
END_TEST

/* Cut at every byte of every opcode: the first check that fails names
 * the part that is missing. */
START_TEST(mroce_meta_parse__truncated_at_every_byte)
{
	uint8_t op = mr_opcodes[_i];
	struct mroce_meta_pkt p;
	int n = build_op(op, 9, &p), h = mroce_meta_hdr_len(op);

	for (int len = 0; len < n; len++) {
		int want = len < 12  ? -MROCE_E_TRUNC_HDR :
			   len < h   ? -MROCE_E_TRUNC_EXT :
				       -MROCE_E_BAD_LEN;
		int got = mroce_meta_parse(pkt, len, &p);

		ck_assert_msg(got == want, "%02x len %d: %s, want %s", op, len,
			      mroce_err_name(got), mroce_err_name(want));
	}
	/* and one byte too many */
	pkt[n] = 0;
	ck_assert_int_eq(mroce_meta_parse(pkt, n + 1, &p), -MROCE_E_BAD_LEN);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), 0);
}
END_TEST

START_TEST(mroce_meta_parse__bad_version)
{
	struct mroce_meta_pkt p;
	int n = build_op(MROCE_OP_SEND, 8, &p);

	for (int v = 1; v < 256; v++) {
		pkt[0] = (uint8_t)v;
		tc_mr_reseal(pkt, n);
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &p),
				 -MROCE_E_BAD_VERSION);
	}
}
END_TEST

/* Unknown opcodes stop the parser before it computes any length: a bare
 * 12-byte common header with absurd hdr_words/payload_len is enough, and
 * ASan would see any read past it. */
START_TEST(mroce_meta_parse__every_unknown_opcode)
{
	struct mroce_meta_pkt p;
	int unknown = 0;

	for (int op = 0; op < 256; op++) {
		uint8_t *h = malloc(12);

		if (mroce_meta_opdesc((uint8_t)op)) {
			free(h);
			continue;
		}
		memset(h, 0xff, 12);
		h[0] = MROCE_WIRE_VERSION;
		h[1] = (uint8_t)op;
		ck_assert_int_eq(mroce_meta_parse(h, 12, &p),
				 -MROCE_E_BAD_OPCODE);
		unknown++;
		free(h);
	}
	ck_assert_int_eq(unknown, 256 - N_MR_OPS);
}
END_TEST

START_TEST(mroce_meta_parse__bad_hdr_words)
{
	uint8_t op = mr_opcodes[_i];
	struct mroce_meta_pkt p;
	int n = build_op(op, 4, &p);
	uint8_t good = pkt[3];

	for (int w = 0; w < 256; w++) {
		if (w == good)
			continue;
		pkt[3] = (uint8_t)w;
		tc_mr_reseal(pkt, n);
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &p),
				 -MROCE_E_BAD_HDR_LEN);
	}
}
END_TEST

START_TEST(mroce_meta_parse__bad_payload_len)
{
	static const uint16_t deltas[] = { 1, 4, 0xffff };
	struct mroce_meta_pkt p;
	int n = build_op(MROCE_OP_READ_RESP, 64, &p);

	for (size_t i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++) {
		tc_put_be16(pkt + 10, (uint16_t)(64 + deltas[i]));
		tc_mr_reseal(pkt, n);
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), -MROCE_E_BAD_LEN);
		tc_put_be16(pkt + 10, (uint16_t)(64 - deltas[i]));
		tc_mr_reseal(pkt, n);
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), -MROCE_E_BAD_LEN);
	}
}
END_TEST

START_TEST(mroce_meta_parse__payload_on_no_payload_opcode)
{
	uint8_t op = mr_opcodes[_i];
	struct mroce_meta_pkt p;
	int n, h;

	if (mroce_op_has_payload(op))
		return;
	n = build_op(op, 0, &p);
	h = mroce_meta_hdr_len(op);
	/* grow by 4 payload bytes and say so */
	memset(pkt + h, 0x5a, 4);
	tc_put_be16(pkt + 10, 4);
	n += 4;
	tc_mr_reseal(pkt, n);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p),
			 -MROCE_E_UNEXPECTED_PAYLOAD);
}
END_TEST

/* Flip every byte once: each corruption is caught. Bytes the earlier
 * checks look at (version, opcode, hdr_words, payload_len) give their own
 * error; every other byte, ICRC included, gives BAD_ICRC. */
START_TEST(mroce_meta_parse__bad_icrc_each_byte)
{
	uint8_t op = mr_opcodes[_i];
	struct mroce_meta_pkt p;
	int n = build_op(op, 13, &p);

	for (int i = 0; i < n; i++) {
		int got;

		pkt[i] ^= 0xff;
		got = mroce_meta_parse(pkt, n, &p);
		if (i == 0 || i == 1 || i == 3 || i == 10 || i == 11)
			ck_assert_msg(got < 0, "%02x byte %d accepted", op, i);
		else
			ck_assert_msg(got == -MROCE_E_BAD_ICRC,
				      "%02x byte %d: %s", op, i,
				      mroce_err_name(got));
		pkt[i] ^= 0xff;
	}
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), 0);
}
END_TEST

/* Rewrite one 32-bit field of a built packet and fix its ICRC. */
static void patch32(int n, int off, uint32_t v)
{
	pkt[off] = v >> 24;
	pkt[off + 1] = v >> 16;
	pkt[off + 2] = v >> 8;
	pkt[off + 3] = (uint8_t)v;
	tc_mr_reseal(pkt, n);
}

START_TEST(mroce_meta_parse__bad_offset)
{
	struct mroce_meta_pkt p;
	/* MSG follows the 12-byte common header and the 8-byte SEQ */
	int n = build_op(MROCE_OP_SEND, 100, &p), off = 12 + 8 + 8;

	patch32(n, off + 4, 99);		/* msg_len < payload */
	patch32(n, off, 0);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), -MROCE_E_BAD_OFFSET);
	patch32(n, off + 4, 100);		/* exactly fits: fine */
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), 0);
	patch32(n, off, 1);			/* one past the end */
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), -MROCE_E_BAD_OFFSET);
	patch32(n, off, 0xffffffc0);		/* would wrap in 32 bits */
	patch32(n, off + 4, 0xffffffff);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), -MROCE_E_BAD_OFFSET);
}
END_TEST

START_TEST(mroce_meta_parse__bad_fields)
{
	struct mroce_meta_pkt p;
	int n;

	/* path slot out of range, any opcode */
	n = build_op(MROCE_OP_ACK, 0, &p);
	pkt[8] = MROCE_MAX_PATHS;
	tc_mr_reseal(pkt, n);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), -MROCE_E_BAD_FIELD);

	/* NAK codes: 1..MAX valid, 0 and above MAX reserved */
	n = build_op(MROCE_OP_NAK, 0, &p);
	for (int c = 0; c < 256; c++) {
		pkt[12] = (uint8_t)c;
		tc_mr_reseal(pkt, n);
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &p),
				 (c >= 1 && c <= MROCE_NAK_MAX) ?
					 0 :
					 -MROCE_E_BAD_FIELD);
	}

	/* payload above the v0 maximum (a jumbo UDP datagram) */
	n = build_op(MROCE_OP_WRITE, MROCE_MAX_PAYLOAD, &p);
	patch32(n, 12 + 8 + 12, 0x00200000);	/* msg_len: big enough */
	{
		int h = mroce_meta_hdr_len(MROCE_OP_WRITE);

		memset(pkt + h + MROCE_MAX_PAYLOAD, 0, 5);
		tc_put_be16(pkt + 10, MROCE_MAX_PAYLOAD + 1);
		n += 1;
		tc_mr_reseal(pkt, n);
		ck_assert_int_eq(mroce_meta_parse(pkt, n, &p),
				 -MROCE_E_BAD_FIELD);
	}
}
END_TEST

START_TEST(mroce_meta_parse__max_paths_in_connect)
{
	uint8_t op = mr_opcodes[_i];
	struct mroce_meta_pkt p;
	int n;

	if (!(mroce_op_ext(op) & MROCE_EXT_CONN))
		return;
	n = build_op(op, 0, &p);
	for (int m = 0; m < 256; m++) {
		int want = 0;

		if (is_connect(op) && (m == 0 || m > MROCE_MAX_PATHS))
			want = -MROCE_E_BAD_FIELD;
		pkt[12 + 30] = (uint8_t)m;
		tc_mr_reseal(pkt, n);
		ck_assert_msg(mroce_meta_parse(pkt, n, &p) == want, "%02x max %d",
			      op, m);
	}
}
END_TEST

/* Reserved bits are zero on send and ignored on receive (wire.h). */
START_TEST(mroce_meta_parse__reserved_bits_ignored)
{
	struct mroce_meta_pkt p;
	int n = build_op(MROCE_OP_ACK, 0, &p);

	pkt[2] |= MROCE_F_RESERVED;
	pkt[12 + 15] = 0xff;	/* ackh.resv */
	tc_mr_reseal(pkt, n);
	ck_assert_int_eq(mroce_meta_parse(pkt, n, &p), 0);
	ck_assert_uint_eq(p.flags, MROCE_F_ACK_REQ | MROCE_F_LAST);
}
END_TEST

START_TEST(mroce_meta_parse__null_arguments)
{
	struct mroce_meta_pkt p;

	ck_assert_int_eq(mroce_meta_parse(NULL, 100, &p), -MROCE_E_INVAL);
	ck_assert_int_eq(mroce_meta_parse(pkt, 100, NULL), -MROCE_E_INVAL);
}
END_TEST

MROCE_SUITE(codec_mr_suite)
Suite *codec_mr_suite(void)
{
	Suite *s = suite_create("codec_meta");
	TCase *tc = tcase_create("metaroce");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(
		tc, mroce_meta_build__round_trip_every_opcode_every_encap, 0,
		N_MR_OPS);
	tcase_add_test(tc, mroce_meta_build__wire_layout);
	tcase_add_test(tc, mroce_meta_build__payload_in_place);
	tcase_add_test(tc, mroce_meta_build__psn_wrap_values);
	tcase_add_test(tc, mroce_meta_build__rejects_invalid_input);
	tcase_add_loop_test(tc, mroce_meta_parse__truncated_at_every_byte, 0,
			    N_MR_OPS);
	tcase_add_test(tc, mroce_meta_parse__bad_version);
	tcase_add_test(tc, mroce_meta_parse__every_unknown_opcode);
	tcase_add_loop_test(tc, mroce_meta_parse__bad_hdr_words, 0, N_MR_OPS);
	tcase_add_test(tc, mroce_meta_parse__bad_payload_len);
	tcase_add_loop_test(tc, mroce_meta_parse__payload_on_no_payload_opcode, 0,
			    N_MR_OPS);
	tcase_add_loop_test(tc, mroce_meta_parse__bad_icrc_each_byte, 0,
			    N_MR_OPS);
	tcase_add_test(tc, mroce_meta_parse__bad_offset);
	tcase_add_test(tc, mroce_meta_parse__bad_fields);
	tcase_add_loop_test(tc, mroce_meta_parse__max_paths_in_connect, 0,
			    N_MR_OPS);
	tcase_add_test(tc, mroce_meta_parse__reserved_bits_ignored);
	tcase_add_test(tc, mroce_meta_parse__null_arguments);
	suite_add_tcase(s, tc);
	return s;
}
