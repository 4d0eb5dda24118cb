// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test fabric (scripts/fabric.sh): ECN marking on one path, tc egress.
 *
 * This kernel has no RED or netem, so a switch's "mark CE when the queue
 * builds" is modelled by a phantom queue: a byte counter that every packet
 * leaving the port adds its length to and that drains at cfg.rate_bps.
 * While it is longer than cfg.thresh_bytes, ECN-capable IP packets leave
 * with CE set. So a path marks exactly when the offered rate exceeds the
 * configured rate for longer than the threshold's worth of burst, without
 * delaying or dropping anything (tbf on the same port does that).
 *
 * One instance per port: tc loads a fresh copy of the maps for every
 * filter, and fabric.sh writes fabric_ecn_conf with bpftool by map id.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "fabric.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define NSEC_PER_SEC 1000000000ULL

struct fabric_ecn_queue {
	struct bpf_spin_lock lock;
	__u64 qlen;    /* phantom queue length, bytes */
	__u64 last_ns; /* when qlen was last drained */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fabric_ecn_cfg);
} fabric_ecn_conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fabric_ecn_queue);
} fabric_ecn_q SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fabric_ecn_counters);
} fabric_ecn_cnt SEC(".maps");

/* Add len to the phantom queue; true when it is over the threshold. */
static __always_inline int phantom_over(const struct fabric_ecn_cfg *cfg,
					__u32 len)
{
	struct fabric_ecn_queue *q;
	__u64 now, dt, drained;
	__u32 zero = 0;
	int over;

	q = bpf_map_lookup_elem(&fabric_ecn_q, &zero);
	if (!q)
		return 0;
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&q->lock);
	dt = now - q->last_ns;
	/* Cap dt at 1 s so dt * rate cannot overflow (rate < 18 Tbit/s). */
	if (dt > NSEC_PER_SEC)
		dt = NSEC_PER_SEC;
	drained = dt * (cfg->rate_bps / 8) / NSEC_PER_SEC;
	q->qlen = q->qlen > drained ? q->qlen - drained : 0;
	q->last_ns = now;
	q->qlen += len;
	over = q->qlen > cfg->thresh_bytes;
	/* A real queue would drop beyond its buffer: bound the phantom one
	 * too, so that marking stops soon after the overload does. */
	if (q->qlen > 2 * cfg->thresh_bytes + len)
		q->qlen = 2 * cfg->thresh_bytes + len;
	bpf_spin_unlock(&q->lock);
	return over;
}

SEC("tc")
int fabric_ecn(struct __sk_buff *skb)
{
	struct fabric_ecn_counters *c;
	struct fabric_ecn_cfg *cfg;
	__u32 zero = 0;
	__u8 b[2];
	int l3 = ETH_HLEN, over;

	c = bpf_map_lookup_elem(&fabric_ecn_cnt, &zero);
	cfg = bpf_map_lookup_elem(&fabric_ecn_conf, &zero);
	if (!c || !cfg)
		return TC_ACT_OK;
	c->packets++;
	c->bytes += skb->len;
	if (!cfg->rate_bps)
		return TC_ACT_OK;
	over = phantom_over(cfg, skb->len);

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		/* Bytes 0-1 of the IPv4 header: version/IHL, TOS. */
		if (bpf_skb_load_bytes(skb, l3, b, 2))
			return TC_ACT_OK;
		switch (b[1] & 3) {
		case 0:
			c->not_ect++;
			return TC_ACT_OK;
		case 3:
			c->ce_already++;
			return TC_ACT_OK;
		}
		c->ect++;
		if (!over)
			return TC_ACT_OK;
		__be16 old = *(__be16 *)b, new;

		b[1] |= 3;
		new = *(__be16 *)b;
		if (bpf_l3_csum_replace(skb, l3 + offsetof(struct iphdr, check),
					old, new, 2) ||
		    bpf_skb_store_bytes(skb, l3, b, 2, 0))
			return TC_ACT_OK;
		c->ce_marked++;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		/* The ECN field is bits 4-5 of the second byte (no checksum).
		 */
		if (bpf_skb_load_bytes(skb, l3, b, 2))
			return TC_ACT_OK;
		switch (b[1] & 0x30) {
		case 0:
			c->not_ect++;
			return TC_ACT_OK;
		case 0x30:
			c->ce_already++;
			return TC_ACT_OK;
		}
		c->ect++;
		if (!over)
			return TC_ACT_OK;
		b[1] |= 0x30;
		if (bpf_skb_store_bytes(skb, l3, b, 2, 0))
			return TC_ACT_OK;
		c->ce_marked++;
	}
	return TC_ACT_OK;
}
