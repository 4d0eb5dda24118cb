# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# scripts/: fabric.sh's BPF programs (loaded by tc / ip from build/bpf/) and
# the UDP helper of the fabric tests (tests/net/fabric_*.sh).
#   fabric_hash    leaf host ports: clear the skb hash (tc), XDP_PASS (xdp)
#   fabric_ecn     path ports, tc egress: phantom-queue ECN CE marker
#   fabric_xsk_rx  mroce_blast's receiver: UDP -> AF_XDP socket
BPF_SRCS += bpf/fabric_hash.bpf.c bpf/fabric_ecn.bpf.c bpf/fabric_xsk_rx.bpf.c

TEST_BINS += mroce_fabric_udp
mroce_fabric_udp_SRCS := tests/net/fabric_udp.c

# fabric.sh hands the objects themselves to tc and ip: keep them (make would
# otherwise delete them as intermediates of the skeletons).
.SECONDARY: $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,\
	bpf/fabric_hash.bpf.c bpf/fabric_ecn.bpf.c bpf/fabric_xsk_rx.bpf.c)
