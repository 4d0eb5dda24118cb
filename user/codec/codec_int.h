/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Private helpers of the codec: byte-order accessors that work on any
 * alignment (packets arrive at arbitrary offsets inside frames, so every
 * load and store goes through these) and the Internet checksum.
 */
#ifndef MROCE_CODEC_INT_H
#define MROCE_CODEC_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, (uint32_t)v);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/* One's complement sum of len bytes (RFC 1071), as if the data started at
 * an even offset; not folded, not inverted. Callers chain partial sums of
 * even-length pieces. On little-endian hosts it adds 32-bit words in host
 * order and swaps the folded result once (the sum is byte-order
 * independent up to that swap), 8 bytes per step: the IPv6 UDP checksum
 * runs over every payload byte. */
static inline uint64_t csum_add(uint64_t sum, const uint8_t *p, size_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t s = 0;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		s += (v & 0xffffffffu) + (v >> 32);
		p += 8;
		len -= 8;
	}
	while (len >= 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		s += v;
		p += 2;
		len -= 2;
	}
	if (len)
		s += p[0];	/* high byte of a word, in network order */
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return sum + (uint16_t)(s << 8 | s >> 8);
#else
	while (len >= 2) {
		sum += get_be16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
#endif
}

static inline uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Frame parsing shared by the RoCEv2 ICRC filler. */
#define ETH_HLEN_	14
#define VLAN_HLEN_	4
#define ETHTYPE_IPV4	0x0800
#define ETHTYPE_IPV6	0x86dd
#define ETHTYPE_VLAN	0x8100
#define IPV4_HLEN	20
#define IPV6_HLEN	40
#define UDP_HLEN	8
#define IPPROTO_UDP_	17

/* Patch the UDP checksum at udp + 6 after the 4 bytes at udp + off changed
 * from old to new_ (codec_frame.c). */
void mroce_udp_csum_patch4(uint8_t *udp, size_t off, const uint8_t old[4],
			   const uint8_t new_[4]);

#endif /* MROCE_CODEC_INT_H */
