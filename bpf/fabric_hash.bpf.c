// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test fabric (scripts/fabric.sh): two tiny programs for the leaf switches'
 * host-facing ports.
 *
 * fabric_clear_hash (tc ingress): an skb sent by a kernel socket carries the
 * socket's random flow hash across the veth, and the leaf's multipath
 * routing reuses a hash that is already set instead of hashing the 5-tuple
 * (net.ipv4.fib_multipath_hash_policy=1). Clearing it makes ECMP depend on
 * the UDP ports only, as on a real switch, so a transport can choose its
 * path by choosing its source port.
 *
 * fabric_xdp_pass (XDP): frames that a host sends with XDP_TX or an XDP
 * redirect into its veth are dropped unless the peer end (the leaf port)
 * has an XDP program; this one lets them in. "xdp.frags" so that it also
 * attaches at MTU 9000.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int fabric_clear_hash(struct __sk_buff *skb)
{
	bpf_set_hash_invalid(skb);
	return TC_ACT_OK;
}

SEC("xdp.frags")
int fabric_xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
