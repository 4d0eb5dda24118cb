// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Receive side of mroce_blast (user/blast/): UDP frames to cfg_udp_port
 * (0: any UDP port) go to the AF_XDP socket bound to the frame's receive
 * queue; everything else (ARP, ICMP, other UDP) passes to the stack so the
 * host stays pingable. Counters say how many frames matched, so a missing
 * socket (redirect fails -> XDP_PASS) is visible in `bpftool map dump`.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "fabric.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u16 cfg_udp_port; /* host order; 0 = every UDP port */

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} fabric_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fabric_xsk_counters);
} fabric_xsk_cnt SEC(".maps");

SEC("xdp.frags")
int fabric_xsk_rx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct fabric_xsk_counters *c;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	struct iphdr *ip;
	__u32 zero = 0;
	long act;

	c = bpf_map_lookup_elem(&fabric_xsk_cnt, &zero);
	if (!c)
		return XDP_PASS;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		goto pass;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP ||
	    ip->ihl != 5)
		goto pass;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		goto pass;
	if (cfg_udp_port && udp->dest != bpf_htons(cfg_udp_port))
		goto pass;
	c->matched++;
	act = bpf_redirect_map(&fabric_xsks, ctx->rx_queue_index, XDP_PASS);
	if (act == XDP_REDIRECT)
		c->redirected++;
	return act;
pass:
	c->passed++;
	return XDP_PASS;
}
