/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * BPF only: a packet cursor and one pull helper per header, so every bounds
 * check has the same shape (the verifier sees `pos + len > end` each time).
 */
#ifndef MROCE_BPF_PARSE_H
#define MROCE_BPF_PARSE_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>

#include "mroce/wire.h"

struct cursor {
	void *pos;
	void *end;
};

/* 802.1Q tag after the MAC addresses (not in the uapi headers). */
struct vlan_tag {
	__be16 tci;
	__be16 proto; /* inner EtherType */
};

/* Return a pointer to the next len bytes and advance, or NULL (cursor
 * unchanged) when the linear part of the frame is shorter. */
static __always_inline void *cur_pull(struct cursor *c, __u32 len)
{
	void *p = c->pos;

	if (p + len > c->end)
		return NULL;
	c->pos = p + len;
	return p;
}

static __always_inline struct ethhdr *pull_eth(struct cursor *c)
{
	return cur_pull(c, sizeof(struct ethhdr));
}

static __always_inline struct vlan_tag *pull_vlan(struct cursor *c)
{
	return cur_pull(c, sizeof(struct vlan_tag));
}

static __always_inline struct iphdr *pull_ipv4(struct cursor *c)
{
	return cur_pull(c, sizeof(struct iphdr));
}

static __always_inline struct ipv6hdr *pull_ipv6(struct cursor *c)
{
	return cur_pull(c, sizeof(struct ipv6hdr));
}

static __always_inline struct udphdr *pull_udp(struct cursor *c)
{
	return cur_pull(c, sizeof(struct udphdr));
}

static __always_inline struct mroce_hdr *pull_mroce(struct cursor *c)
{
	return cur_pull(c, sizeof(struct mroce_hdr));
}

static __always_inline struct rocev2_bth *pull_bth(struct cursor *c)
{
	return cur_pull(c, sizeof(struct rocev2_bth));
}

/* Skip IPv4 options: olen is 0..40 (checked by the caller). */
static __always_inline int cur_skip_ipv4_opts(struct cursor *c, __u32 olen)
{
	olen &= 0x3f;
	if (c->pos + olen > c->end)
		return -1;
	c->pos += olen;
	return 0;
}

/* Ones' complement sum of n 16-bit words at p (stack memory), not folded. */
static __always_inline __u32 csum_words(const void *p, __u32 n)
{
	const __u16 *w = p;
	__u32 sum = 0;

	for (__u32 i = 0; i < n; i++)
		sum += w[i];
	return sum;
}

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

#endif /* MROCE_BPF_PARSE_H */
