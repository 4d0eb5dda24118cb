// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Ethernet (+ one 802.1Q tag) / IPv4 or IPv6 / UDP: parse and build.
 *
 * The parser trusts nothing: each length field is checked against the
 * bytes that are really there before anything behind it is read, and the
 * first disagreement is reported by name. Bytes after the IP datagram
 * (Ethernet padding of short frames) are ignored.
 */
#include "mroce/codec.h"
#include "codec_int.h"

#include <string.h>
#include <sys/socket.h>

static int parse_ipv4(const uint8_t *ip, size_t avail, struct mroce_frame *f,
		      size_t *ip_payload)
{
	size_t ihl, tot;
	uint16_t frag;

	if (avail < IPV4_HLEN)
		return -MROCE_E_TRUNC_IP;
	if ((ip[0] >> 4) != 4)
		return -MROCE_E_BAD_IP_VERSION;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	if (ihl < IPV4_HLEN)
		return -MROCE_E_BAD_IP_HDR_LEN;
	if (avail < ihl)
		return -MROCE_E_TRUNC_IP;
	tot = get_be16(ip + 2);
	if (tot < ihl || tot > avail)
		return -MROCE_E_BAD_IP_LEN;
	/* A correct header, checksum field included, sums to 0xffff. */
	if (csum_fold(csum_add(0, ip, ihl)) != 0xffff)
		return -MROCE_E_BAD_IP_CSUM;
	frag = get_be16(ip + 6);
	if (frag & 0x3fff)	/* MF set or a fragment offset: a fragment */
		return -MROCE_E_IP_FRAGMENT;
	if (ip[9] != IPPROTO_UDP_)
		return -MROCE_E_NOT_UDP;

	f->l3.family = AF_INET;
	memset(f->l3.src, 0, sizeof(f->l3.src));
	memset(f->l3.dst, 0, sizeof(f->l3.dst));
	memcpy(f->l3.src, ip + 12, 4);
	memcpy(f->l3.dst, ip + 16, 4);
	f->l3.tos = ip[1];
	f->l3.ttl = ip[8];
	f->l3.flow_label = 0;
	f->l3_hdr_len = ihl;
	*ip_payload = tot - ihl;
	return 0;
}

static int parse_ipv6(const uint8_t *ip, size_t avail, struct mroce_frame *f,
		      size_t *ip_payload)
{
	uint32_t w0;
	size_t plen;

	if (avail < IPV6_HLEN)
		return -MROCE_E_TRUNC_IP;
	w0 = get_be32(ip);
	if ((w0 >> 28) != 6)
		return -MROCE_E_BAD_IP_VERSION;
	plen = get_be16(ip + 4);
	if (plen > avail - IPV6_HLEN)
		return -MROCE_E_BAD_IP_LEN;
	/* No extension headers: anything but UDP right away is not ours. */
	if (ip[6] != IPPROTO_UDP_)
		return -MROCE_E_NOT_UDP;

	f->l3.family = AF_INET6;
	memcpy(f->l3.src, ip + 8, 16);
	memcpy(f->l3.dst, ip + 24, 16);
	f->l3.tos = (w0 >> 20) & 0xff;
	f->l3.ttl = ip[7];
	f->l3.flow_label = w0 & 0xfffff;
	f->l3_hdr_len = IPV6_HLEN;
	*ip_payload = plen;
	return 0;
}

int mroce_frame_parse(const void *buf, size_t len, struct mroce_frame *f)
{
	const uint8_t *p = buf;
	size_t off = ETH_HLEN_, ip_payload = 0;
	uint16_t type, ulen;
	int err;

	if (!p || !f)
		return -MROCE_E_INVAL;
	if (len < ETH_HLEN_)
		return -MROCE_E_TRUNC_ETH;
	memcpy(f->dmac, p, 6);
	memcpy(f->smac, p + 6, 6);
	type = get_be16(p + 12);
	f->has_vlan = false;
	f->vlan_tci = 0;
	if (type == ETHTYPE_VLAN) {
		if (len < ETH_HLEN_ + VLAN_HLEN_)
			return -MROCE_E_TRUNC_VLAN;
		f->has_vlan = true;
		f->vlan_tci = get_be16(p + 14);
		type = get_be16(p + 16);
		off += VLAN_HLEN_;
	}

	f->l3_hdr = p + off;
	if (type == ETHTYPE_IPV4)
		err = parse_ipv4(p + off, len - off, f, &ip_payload);
	else if (type == ETHTYPE_IPV6)
		err = parse_ipv6(p + off, len - off, f, &ip_payload);
	else
		err = -MROCE_E_BAD_ETHERTYPE;
	if (err)
		return err;

	off += f->l3_hdr_len;
	if (ip_payload < UDP_HLEN)
		return -MROCE_E_TRUNC_UDP;
	f->udp = p + off;
	ulen = get_be16(p + off + 4);
	/* Exact: a UDP datagram fills its IP payload, nothing more or less. */
	if (ulen != ip_payload)
		return -MROCE_E_BAD_UDP_LEN;
	f->sport = get_be16(p + off);
	f->dport = get_be16(p + off + 2);
	f->l4 = p + off + UDP_HLEN;
	f->l4_len = ulen - UDP_HLEN;
	return 0;
}

size_t mroce_frame_hdr_len(const struct mroce_frame_spec *s)
{
	size_t n = ETH_HLEN_ + UDP_HLEN;

	if (!s)
		return 0;
	if (s->vlan >= 0)
		n += VLAN_HLEN_;
	if (s->l3.family == AF_INET)
		n += IPV4_HLEN;
	else if (s->l3.family == AF_INET6)
		n += IPV6_HLEN;
	else
		return 0;
	return n;
}

/* UDP checksum over the IPv6 pseudo-header, UDP header and payload. */
static uint16_t udp6_csum(const uint8_t *ip6, const uint8_t *udp, size_t ulen)
{
	uint64_t sum = 0;

	sum = csum_add(sum, ip6 + 8, 32);	/* source + destination */
	sum += ulen >> 16;
	sum += ulen & 0xffff;
	sum += IPPROTO_UDP_;
	sum = csum_add(sum, udp, ulen);
	uint16_t c = (uint16_t)~csum_fold(sum);

	/* 0 means "no checksum", illegal on IPv6: send its other form. */
	return c ? c : 0xffff;
}

int mroce_frame_build(const struct mroce_frame_spec *s, size_t l4_len,
		      void *buf, size_t cap)
{
	uint8_t *p = buf, *ip, *udp;
	size_t hlen, ulen;

	if (!s || !buf)
		return -MROCE_E_INVAL;
	hlen = mroce_frame_hdr_len(s);
	if (!hlen || s->vlan > 0xffff || s->vlan < -1)
		return -MROCE_E_INVAL;
	ulen = UDP_HLEN + l4_len;
	/* The IPv4 total length / IPv6 payload length and the UDP length are
	 * 16-bit fields. */
	if (l4_len > 0xffff ||
	    ulen + (s->l3.family == AF_INET ? IPV4_HLEN : 0) > 0xffff)
		return -MROCE_E_INVAL;
	if (s->l3.family == AF_INET6 && s->l3.flow_label > 0xfffff)
		return -MROCE_E_INVAL;
	if (cap < hlen || cap - hlen < l4_len)
		return -MROCE_E_NOSPACE;

	memcpy(p, s->dmac, 6);
	memcpy(p + 6, s->smac, 6);
	p += 12;
	if (s->vlan >= 0) {
		put_be16(p, ETHTYPE_VLAN);
		put_be16(p + 2, (uint16_t)s->vlan);
		p += 4;
	}
	ip = p + 2;
	if (s->l3.family == AF_INET) {
		put_be16(p, ETHTYPE_IPV4);
		ip[0] = 0x45;
		ip[1] = s->l3.tos;
		put_be16(ip + 2, (uint16_t)(IPV4_HLEN + ulen));
		put_be16(ip + 4, s->ip_id);
		put_be16(ip + 6, 0x4000);	/* DF: we never fragment */
		ip[8] = s->l3.ttl;
		ip[9] = IPPROTO_UDP_;
		put_be16(ip + 10, 0);
		memcpy(ip + 12, s->l3.src, 4);
		memcpy(ip + 16, s->l3.dst, 4);
		put_be16(ip + 10, (uint16_t)~csum_fold(csum_add(0, ip, 20)));
		udp = ip + IPV4_HLEN;
	} else {
		put_be16(p, ETHTYPE_IPV6);
		put_be32(ip, 6u << 28 | (uint32_t)s->l3.tos << 20 |
				     s->l3.flow_label);
		put_be16(ip + 4, (uint16_t)ulen);
		ip[6] = IPPROTO_UDP_;
		ip[7] = s->l3.ttl;
		memcpy(ip + 8, s->l3.src, 16);
		memcpy(ip + 24, s->l3.dst, 16);
		udp = ip + IPV6_HLEN;
	}
	put_be16(udp, s->sport);
	put_be16(udp + 2, s->dport);
	put_be16(udp + 4, (uint16_t)ulen);
	put_be16(udp + 6, 0);	/* optional on IPv4: 0 = none */
	if (s->l3.family == AF_INET6)
		put_be16(udp + 6, udp6_csum(ip, udp, ulen));
	return (int)(hlen + l4_len);
}

/* For mroce_rv2_icrc_fill(): after 4 bytes at udp + off changed from old
 * to new, patch the UDP checksum in place (RFC 1624: HC' = ~(~HC + ~m + m'))
 * instead of summing the whole datagram again. An odd offset swaps the
 * bytes of each 16-bit word, which a byte swap of the delta accounts for. */
void mroce_udp_csum_patch4(uint8_t *udp, size_t off, const uint8_t old[4],
			   const uint8_t new_[4])
{
	uint16_t hc = get_be16(udp + 6);
	uint64_t delta = 0;
	uint16_t d, c;

	delta += (uint16_t)~get_be16(old);
	delta += (uint16_t)~get_be16(old + 2);
	delta += get_be16(new_);
	delta += get_be16(new_ + 2);
	d = csum_fold(delta);
	if (off & 1)
		d = (uint16_t)(d << 8 | d >> 8);
	c = (uint16_t)~csum_fold((uint64_t)(uint16_t)~hc + d);
	put_be16(udp + 6, c ? c : 0xffff);
}
