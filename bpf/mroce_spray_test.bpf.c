// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test-only program: runs the spraying policy (include/mroce/spray.h) in
 * the kernel, so tests/bpf/test_spray.c can require the BPF build of the
 * function to choose exactly what the userspace build chooses. Not attached
 * to anything: tests run it with bpf_prog_test_run over a table of cases
 * written into the one-entry array `spray_case`.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "mroce/abi.h"
#include "mroce/spray.h"
#include "spray_test.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spray_case);
} spray_case SEC(".maps");

SEC("xdp")
int spray_run(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct spray_case *c = bpf_map_lookup_elem(&spray_case, &zero);

	if (!c)
		return XDP_ABORTED;
	c->pick = mroce_spray_pick(&c->sb, c->hash, c->now_us);
	c->cost[0] = mroce_spray_cost(&c->sb.path[0], c->now_us);
	c->cost[1] = mroce_spray_cost(&c->sb.path[1], c->now_us);
	c->hash_out = mroce_spray_hash(c->hash, c->now_us, 7);
	return XDP_PASS;
}
