/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared fixtures of the codec tests: the three encapsulations every round
 * trip runs over, and small helpers to patch a packet and make its
 * checksums right again (so that a test reaches the check it aims at).
 */
#ifndef MROCE_TEST_CODEC_UTIL_H
#define MROCE_TEST_CODEC_UTIL_H

#include "../harness.h"
#include "mroce/codec.h"

#include <string.h>
#include <sys/socket.h>

enum tc_encap { TC_IPV4, TC_IPV6, TC_VLAN_IPV4, TC_VLAN_IPV6, TC_N_ENCAP };

static const char *const tc_encap_name[TC_N_ENCAP] = {
	"ipv4", "ipv6", "vlan+ipv4", "vlan+ipv6",
};

static inline void tc_spec(struct mroce_frame_spec *s, enum tc_encap e,
			   uint16_t dport)
{
	static const uint8_t v6src[16] = { 0xfd, 0x00, 0x6d, 0x72, 0, 0, 0, 0,
					   0, 0, 0, 0, 0, 0, 0, 0x01 };
	static const uint8_t v6dst[16] = { 0xfd, 0x00, 0x6d, 0x72, 0, 0, 0, 0,
					   0, 0, 0, 0, 0, 0, 0x12, 0x34 };

	memset(s, 0, sizeof(*s));
	memcpy(s->dmac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(s->smac, "\x02\x00\x00\x00\x00\x01", 6);
	s->vlan = (e == TC_VLAN_IPV4 || e == TC_VLAN_IPV6) ? 0x2abc : -1;
	if (e == TC_IPV4 || e == TC_VLAN_IPV4) {
		s->l3.family = AF_INET;
		memcpy(s->l3.src, "\x0a\x00\x00\x01", 4);
		memcpy(s->l3.dst, "\xc0\xa8\x07\xfe", 4);
	} else {
		s->l3.family = AF_INET6;
		memcpy(s->l3.src, v6src, 16);
		memcpy(s->l3.dst, v6dst, 16);
		s->l3.flow_label = 0xabcde;
	}
	s->l3.tos = 0x1a;	/* DSCP 6, ECN ECT(0) */
	s->l3.ttl = 63;
	s->sport = 0xc123;
	s->dport = dport;
	s->ip_id = 0x4242;
}

static inline uint16_t tc_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void tc_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

/* RFC 1071 sum, folded, not inverted. */
static inline uint16_t tc_sum(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += tc_be16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Recompute the IPv4 header checksum of an IPv4 header at ip. */
static inline void tc_fix_ip4_csum(uint8_t *ip)
{
	size_t ihl = (size_t)(ip[0] & 0x0f) * 4;

	tc_put_be16(ip + 10, 0);
	tc_put_be16(ip + 10, (uint16_t)~tc_sum(0, ip, ihl));
}

/* 1 if the UDP checksum of an IPv6 frame (parsed into f) verifies. */
static inline int tc_udp6_csum_ok(const struct mroce_frame *f)
{
	size_t ulen = f->l4_len + 8;
	uint32_t sum = 0;

	sum += tc_sum(0, f->l3.src, 16);
	sum += tc_sum(0, f->l3.dst, 16);
	sum += (uint32_t)ulen + 17;
	sum = tc_sum(sum, f->udp, ulen);
	return sum == 0xffff && tc_be16(f->udp + 6) != 0;
}

/* Recompute the UDP checksum of an IPv6 frame parsed into f. */
static inline void tc_fix_udp6_csum(const struct mroce_frame *f)
{
	uint8_t *udp = (uint8_t *)f->udp;
	size_t ulen = f->l4_len + 8;
	uint32_t sum = 0;
	uint16_t c;

	tc_put_be16(udp + 6, 0);
	sum += tc_sum(0, f->l3.src, 16);
	sum += tc_sum(0, f->l3.dst, 16);
	sum += (uint32_t)ulen + 17;
	c = (uint16_t)~tc_sum(sum, udp, ulen);
	tc_put_be16(udp + 6, c ? c : 0xffff);
}

/* Recompute the MetaRoCE ICRC (big-endian trailer) of l4[0..len). */
static inline void tc_mr_reseal(uint8_t *l4, size_t len)
{
	uint32_t c = mroce_crc32(0, l4, len - 4);

	l4[len - 4] = c >> 24;
	l4[len - 3] = c >> 16;
	l4[len - 2] = c >> 8;
	l4[len - 1] = (uint8_t)c;
}

#endif
