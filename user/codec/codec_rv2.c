// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 (IBTA Annex A17) RC subset: BTH, RETH, AETH, ImmDt, pad, ICRC.
 *
 * The ICRC is a CRC-32 over a pseudo-packet in which every field a router
 * may legitimately rewrite is replaced by ones: 8 bytes standing for the
 * InfiniBand LRH, the IP header with IPv4 TOS/TTL/checksum (IPv6 traffic
 * class/flow label/hop limit) set to ones, the UDP header with its checksum
 * set to ones, the BTH with byte 4 (FECN/BECN/reserved) set to ones, then
 * the rest of the packet up to the ICRC. It is stored little-endian.
 * A real ConnectX-4 Lx capture in tests/unit/test_codec_rv2.c pins this.
 */
#include "mroce/codec.h"
#include "codec_int.h"

#include <string.h>
#include <sys/socket.h>

#define BTH_LEN		((size_t)sizeof(struct rocev2_bth))
#define IPV4_MAX_HLEN	60
#define ICRC_LRH_LEN	8

uint32_t mroce_rv2_icrc(const struct mroce_frame *f)
{
	/* masked copies of the mutable headers; nothing else is copied */
	uint8_t ph[ICRC_LRH_LEN + IPV4_MAX_HLEN + UDP_HLEN + BTH_LEN];
	size_t iplen, n = 0;
	uint32_t crc;

	if (!f || !f->l3_hdr || !f->udp || !f->l4 ||
	    f->l4_len < BTH_LEN + MROCE_ICRC_LEN)
		return 0;
	iplen = f->l3_hdr_len;
	if (iplen > IPV4_MAX_HLEN)
		return 0;

	memset(ph, 0xff, ICRC_LRH_LEN);
	n = ICRC_LRH_LEN;
	memcpy(ph + n, f->l3_hdr, iplen);
	if (f->l3.family == AF_INET) {
		ph[n + 1] = 0xff;		/* TOS (DSCP + ECN) */
		ph[n + 8] = 0xff;		/* TTL */
		ph[n + 10] = ph[n + 11] = 0xff;	/* header checksum */
	} else {
		ph[n] |= 0x0f;		/* traffic class, high half */
		ph[n + 1] = ph[n + 2] = ph[n + 3] = 0xff; /* TC + flow label */
		ph[n + 7] = 0xff;		/* hop limit */
	}
	n += iplen;
	memcpy(ph + n, f->udp, UDP_HLEN);
	ph[n + 6] = ph[n + 7] = 0xff;		/* UDP checksum */
	n += UDP_HLEN;
	memcpy(ph + n, f->l4, BTH_LEN);
	ph[n + 4] = 0xff;			/* FECN, BECN, reserved */
	n += BTH_LEN;

	crc = mroce_crc32(0, ph, n);
	return mroce_crc32(crc, f->l4 + BTH_LEN,
			   f->l4_len - BTH_LEN - MROCE_ICRC_LEN);
}

/* Both parsers: f != NULL also verifies the ICRC over f's headers. */
static int rv2_parse(const uint8_t *b, size_t len,
		     const struct mroce_frame *f, struct mroce_rv2_pkt *p)
{
	const struct mroce_opdesc *d;
	const uint8_t *h;
	size_t hlen, body;
	uint8_t pad;

	if (len < BTH_LEN)
		return -MROCE_E_TRUNC_HDR;
	if (b[1] & ROCEV2_BTH_TVER_MASK)
		return -MROCE_E_BAD_VERSION;
	d = mroce_rv2_opdesc(b[0]);
	if (!d)	/* before any length arithmetic */
		return -MROCE_E_BAD_OPCODE;
	hlen = d->hdr_len;
	if (len < hlen)
		return -MROCE_E_TRUNC_EXT;
	/* headers, payload + pad and ICRC are all whole 4-byte words */
	if (len - hlen < MROCE_ICRC_LEN || (len & 3))
		return -MROCE_E_BAD_LEN;
	body = len - hlen - MROCE_ICRC_LEN;
	if (body && !d->payload)
		return -MROCE_E_UNEXPECTED_PAYLOAD;
	pad = (b[1] & ROCEV2_BTH_PAD_MASK) >> ROCEV2_BTH_PAD_SHIFT;
	/* pad only completes a non-empty payload to a word */
	if (pad && body <= pad)
		return -MROCE_E_BAD_PAD;
	for (size_t i = 0; i < pad; i++)
		if (b[hlen + body - pad + i])
			return -MROCE_E_BAD_PAD;
	if (f && mroce_rv2_icrc(f) != get_le32(b + len - MROCE_ICRC_LEN))
		return -MROCE_E_BAD_ICRC;

	memset(p, 0, sizeof(*p));
	p->desc = d;
	p->opcode = b[0];
	p->se = b[1] & ROCEV2_BTH_SE;
	p->migreq = b[1] & ROCEV2_BTH_MIG;
	p->pad = pad;
	p->pkey = get_be16(b + 2);
	p->fecn = get_be32(b + 4) & ROCEV2_FECN;
	p->becn = get_be32(b + 4) & ROCEV2_BECN;
	p->dqpn = get_be32(b + 4) & ROCEV2_QPN_MASK;
	p->ackreq = get_be32(b + 8) & ROCEV2_ACKREQ;
	p->psn = get_be32(b + 8) & ROCEV2_PSN_MASK;
	h = b + BTH_LEN;
	if (d->ext & ROCEV2_EXT_RETH) {
		p->va = get_be64(h);
		p->rkey = get_be32(h + 8);
		p->dma_len = get_be32(h + 12);
		h += sizeof(struct rocev2_reth);
	}
	if (d->ext & ROCEV2_EXT_AETH) {
		p->syndrome = h[0];
		p->msn = get_be32(h) & 0x00ffffff;
		h += sizeof(struct rocev2_aeth);
	}
	if (d->ext & ROCEV2_EXT_IMM)
		p->imm = get_be32(h);
	p->payload = b + hlen;
	p->payload_len = (uint32_t)(body - pad);
	return 0;
}

int mroce_rv2_parse(const struct mroce_frame *f, struct mroce_rv2_pkt *p)
{
	if (!f || !p || !f->l4)
		return -MROCE_E_INVAL;
	return rv2_parse(f->l4, f->l4_len, f, p);
}

int mroce_rv2_parse_l4(const void *l4, size_t len, struct mroce_rv2_pkt *p)
{
	if (!l4 || !p)
		return -MROCE_E_INVAL;
	return rv2_parse(l4, len, NULL, p);
}

int mroce_rv2_build(const struct mroce_rv2_pkt *p, void *buf, size_t cap)
{
	const struct mroce_opdesc *d;
	uint8_t *b = buf, *h;
	size_t hlen, pad, total;

	if (!p || !b)
		return -MROCE_E_INVAL;
	d = mroce_rv2_opdesc(p->opcode);
	if (!d)
		return -MROCE_E_INVAL;
	if (p->payload_len && !d->payload)
		return -MROCE_E_INVAL;
	if ((p->dqpn | p->psn) & ~ROCEV2_QPN_MASK)
		return -MROCE_E_INVAL;
	if ((d->ext & ROCEV2_EXT_AETH) && (p->msn & ~ROCEV2_PSN_MASK))
		return -MROCE_E_INVAL;
	/* UDP length is 16 bits; keep well inside it */
	if (p->payload_len > 0xffff - 64)
		return -MROCE_E_INVAL;
	hlen = d->hdr_len;
	pad = (4 - (p->payload_len & 3)) & 3;
	total = hlen + p->payload_len + pad + MROCE_ICRC_LEN;
	if (cap < total)
		return -MROCE_E_NOSPACE;

	b[0] = p->opcode;
	b[1] = (p->se ? ROCEV2_BTH_SE : 0) | (p->migreq ? ROCEV2_BTH_MIG : 0) |
	       (uint8_t)(pad << ROCEV2_BTH_PAD_SHIFT);
	put_be16(b + 2, p->pkey);
	put_be32(b + 4, (p->fecn ? ROCEV2_FECN : 0) |
				(p->becn ? ROCEV2_BECN : 0) | p->dqpn);
	put_be32(b + 8, (p->ackreq ? ROCEV2_ACKREQ : 0) | p->psn);
	h = b + BTH_LEN;
	if (d->ext & ROCEV2_EXT_RETH) {
		put_be64(h, p->va);
		put_be32(h + 8, p->rkey);
		put_be32(h + 12, p->dma_len);
		h += sizeof(struct rocev2_reth);
	}
	if (d->ext & ROCEV2_EXT_AETH) {
		put_be32(h, (uint32_t)p->syndrome << 24 | p->msn);
		h += sizeof(struct rocev2_aeth);
	}
	if (d->ext & ROCEV2_EXT_IMM) {
		put_be32(h, p->imm);
		h += sizeof(struct rocev2_immdt);
	}
	if (d->ext & ROCEV2_EXT_CNP)
		memset(h, 0, ROCEV2_CNP_RESV_LEN);
	if (p->payload && p->payload_len && p->payload != b + hlen)
		memmove(b + hlen, p->payload, p->payload_len);
	memset(b + hlen + p->payload_len, 0, pad + MROCE_ICRC_LEN);
	return (int)total;
}

int mroce_rv2_icrc_fill(void *frame, size_t len)
{
	struct mroce_frame f;
	uint8_t *icrc, old[4], *udp;
	int err;

	err = mroce_frame_parse(frame, len, &f);
	if (err)
		return err;
	if (f.l4_len < BTH_LEN + MROCE_ICRC_LEN)
		return -MROCE_E_TRUNC_HDR;
	/* the ICRC ends the UDP payload (any Ethernet padding follows it) */
	udp = (uint8_t *)frame + (f.udp - (const uint8_t *)frame);
	icrc = udp + UDP_HLEN + f.l4_len - MROCE_ICRC_LEN;
	memcpy(old, icrc, 4);
	put_le32(icrc, mroce_rv2_icrc(&f));
	/* The UDP checksum (mandatory on IPv6, optional on IPv4) covers the
	 * ICRC bytes; the ICRC does not cover the checksum, so fix it up. */
	if (f.l3.family == AF_INET6 || get_be16(udp + 6))
		mroce_udp_csum_patch4(udp, (size_t)(icrc - udp), old, icrc);
	return 0;
}
