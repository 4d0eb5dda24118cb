// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * gen_corpus - write the seed corpus of the codec fuzz targets.
 *
 *   build/tests/mroce_corpus_gen DIR
 *
 * writes DIR/frame/, DIR/meta_parse/ and DIR/rv2_parse/: a valid packet of
 * every opcode of both protocols over IPv4, IPv6 and 802.1Q (RoCEv2 also
 * as a bare UDP payload, for mroce_rv2_parse_l4()), plus a few
 * malformed ones (truncated, bad version, unknown opcode, bad ICRC, bad
 * pad, IPv4 options, fragment). Files are named by a hash of their
 * content, so running it again over tests/fuzz/corpus adds nothing new.
 * It was run once to create the committed corpus; it is built with the
 * tests so that it keeps compiling against the codec API.
 */
#include "mroce/codec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

static const char *outdir;
static int written;

static void save(const char *target, const uint8_t *buf, size_t len)
{
	static const uint8_t key[16];	/* naming only, not secret */
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%016llx", outdir, target,
		 (unsigned long long)mroce_siphash24(key, buf, len));
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	written++;
}

static void spec(struct mroce_frame_spec *s, int v6, int vlan, uint16_t dport)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->dmac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(s->smac, "\x02\x00\x00\x00\x00\x01", 6);
	s->vlan = vlan ? 100 : -1;
	s->l3.family = v6 ? AF_INET6 : AF_INET;
	s->l3.src[0] = v6 ? 0xfd : 10;
	s->l3.src[3] = 1;
	s->l3.dst[0] = v6 ? 0xfd : 10;
	s->l3.dst[3] = 2;
	s->l3.ttl = 64;
	s->l3.tos = 2;
	s->sport = 0xc001;
	s->dport = dport;
}

static void mr_fill(struct mroce_meta_pkt *p, uint8_t op)
{
	static const uint8_t data[13] = "seed payload";

	memset(p, 0, sizeof(*p));
	p->opcode = op;
	p->flags = MROCE_F_LAST;
	p->conn_id = 7;
	p->path = 3;
	p->psn = 1000;
	p->stream = 5;
	p->msg_len = 100;
	p->va = 0x10000;
	p->rkey = 0x1234;
	p->nak.code = MROCE_NAK_RNR;
	p->conn.max_paths = (op >= MROCE_OP_CONNECT_REQ &&
			     op <= MROCE_OP_CONNECT_ACCEPT) ? 8 : 0;
	p->conn.mtu = 4096;
	p->ack.sack[0] = 0x05;
	if (mroce_op_has_payload(op)) {
		p->payload = data;
		p->payload_len = sizeof(data);
	}
}

static void rv2_fill(struct mroce_rv2_pkt *p, uint8_t op)
{
	static const uint8_t data[13] = "seed payload";
	const struct mroce_opdesc *d = mroce_rv2_opdesc(op);

	memset(p, 0, sizeof(*p));
	p->opcode = op;
	p->pkey = ROCEV2_DEFAULT_PKEY;
	p->dqpn = 0x11;
	p->psn = 0xfffffe;
	p->ackreq = true;
	p->becn = op == ROCEV2_OP_CNP;
	p->va = 0x10000;
	p->rkey = 0x1234;
	p->dma_len = 13;
	p->msn = 9;
	p->syndrome = ROCEV2_AETH_CREDIT_INVALID;
	if (d->payload) {
		p->payload = data;
		p->payload_len = sizeof(data);
	}
}

static void ip4_csum(uint8_t *ip, int ihl)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < ihl; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* A frame around an already built UDP payload at buf + hdr_len. */
static int frame(const struct mroce_frame_spec *s, size_t l4, uint8_t *buf,
		 size_t cap)
{
	int n = mroce_frame_build(s, l4, buf, cap);

	if (n < 0) {
		fprintf(stderr, "frame: %s\n", mroce_err_name(n));
		exit(1);
	}
	return n;
}

static void metaroce(void)
{
	static const uint8_t ops[] = {
#define X(name, code, ext, payload) code,
		MROCE_MR_OPS(X)
#undef X
	};
	uint8_t buf[2048], fb[2048];
	struct mroce_frame_spec s;
	struct mroce_meta_pkt p;
	int n = 0;

	for (size_t i = 0; i < sizeof(ops); i++) {
		mr_fill(&p, ops[i]);
		n = mroce_meta_build(&p, buf, sizeof(buf));
		if (n < 0) {
			fprintf(stderr, "mr %02x: %s\n", ops[i],
				mroce_err_name(n));
			exit(1);
		}
		save("meta_parse", buf, n);
	}
	/* frames: a data packet and an ACK in each encapsulation */
	for (int e = 0; e < 4; e++) {
		uint8_t op = e & 1 ? MROCE_OP_ACK : MROCE_OP_WRITE;
		size_t h;

		spec(&s, e & 1, e & 2, MROCE_UDP_PORT);
		h = mroce_frame_hdr_len(&s);
		mr_fill(&p, op);
		n = mroce_meta_build(&p, fb + h, sizeof(fb) - h);
		save("frame", fb, frame(&s, n, fb, sizeof(fb)));
	}

	/* malformed MetaRoCE */
	mr_fill(&p, MROCE_OP_SEND);
	n = mroce_meta_build(&p, buf, sizeof(buf));
	save("meta_parse", buf, 20);		/* truncated in SEQ */
	save("meta_parse", buf, n - 1);		/* ICRC cut */
	buf[0] = 1;				/* version 1 */
	save("meta_parse", buf, n);
	buf[0] = 0;
	buf[1] = 0x30;				/* unknown opcode */
	save("meta_parse", buf, 12);
	buf[1] = MROCE_OP_SEND;
	buf[3] = 3;				/* hdr_words */
	save("meta_parse", buf, n);
	buf[3] = 10;
	buf[n - 1] ^= 1;			/* ICRC */
	save("meta_parse", buf, n);
}

static void rocev2(void)
{
	static const uint8_t ops[] = {
#define X(name, code, ext, payload) code,
		ROCEV2_OPS(X) ROCEV2_EXTRA_OPS(X)
#undef X
	};
	uint8_t fb[2048];
	struct mroce_frame_spec s;
	struct mroce_rv2_pkt p;
	size_t h = 0;
	int n = 0, fl = 0;

	for (size_t i = 0; i < sizeof(ops); i++)
		for (int e = 0; e < 4; e++) {
			/* every opcode over IPv4, a few over the others */
			if (e && i % 4 != (size_t)e)
				continue;
			spec(&s, e & 1, e & 2, ROCEV2_UDP_PORT);
			h = mroce_frame_hdr_len(&s);
			rv2_fill(&p, ops[i]);
			n = mroce_rv2_build(&p, fb + h, sizeof(fb) - h);
			fl = frame(&s, n, fb, sizeof(fb));
			mroce_rv2_icrc_fill(fb, fl);
			save("rv2_parse", fb, fl);
			/* the UDP payload alone, for mroce_rv2_parse_l4() */
			if (!e)
				save("rv2_parse", fb + h, n);
		}

	/* malformed RoCEv2 (IPv4, SEND_ONLY with 13 bytes + 3 pad) */
	spec(&s, 0, 0, ROCEV2_UDP_PORT);
	h = mroce_frame_hdr_len(&s);
	rv2_fill(&p, ROCEV2_OP_SEND_ONLY);
	n = mroce_rv2_build(&p, fb + h, sizeof(fb) - h);
	fl = frame(&s, n, fb, sizeof(fb));
	fb[h + 12 + 13] = 0x55;			/* nonzero pad byte */
	mroce_rv2_icrc_fill(fb, fl);
	save("rv2_parse", fb, fl);
	fb[h + 12 + 13] = 0;
	fb[h + 1] |= 0x01;			/* TVer 1 */
	mroce_rv2_icrc_fill(fb, fl);
	save("rv2_parse", fb, fl);
	fb[h + 1] &= 0xf0;
	fb[h] = 0x24;				/* UC SEND_ONLY */
	mroce_rv2_icrc_fill(fb, fl);
	save("rv2_parse", fb, fl);
	fb[h] = ROCEV2_OP_SEND_ONLY;
	mroce_rv2_icrc_fill(fb, fl);
	fb[fl - 2] ^= 0x80;			/* ICRC */
	save("rv2_parse", fb, fl);
	save("frame", fb, fl);
	save("frame", fb, 30);			/* truncated in IPv4 */

	/* IPv4 with 8 bytes of options (NOP NOP NOP EOL ...) */
	memmove(fb + 34 + 8, fb + 34, fl - 34);
	memset(fb + 34, 0, 8);
	memset(fb + 34, 1, 3);
	fb[14] = 0x47;
	fb[17] += 8;			/* total length (< 256 here) */
	ip4_csum(fb + 14, 28);
	mroce_rv2_icrc_fill(fb, fl + 8);
	save("frame", fb, fl + 8);
	save("rv2_parse", fb, fl + 8);
	fb[20] |= 0x20;				/* MF: a fragment */
	ip4_csum(fb + 14, 28);
	save("frame", fb, fl + 8);
}

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr,
			"usage: mroce_corpus_gen DIR\n"
			"Write the seed corpus of the codec fuzz targets into\n"
			"DIR/frame, DIR/meta_parse and DIR/rv2_parse (files\n"
			"named by a hash of their content).\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	outdir = argv[1];
	metaroce();
	rocev2();
	printf("%d files written under %s\n", written, outdir);
	return 0;
}
