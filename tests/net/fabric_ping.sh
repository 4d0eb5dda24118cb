#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# fabric_ping.sh - ICMP echo with 8972 bytes of data and DF set crosses an
# MTU 9000 fabric both ways (static neighbours, routes, XDP_PASS on the leaf
# ports), and 8973 bytes does not.
#   tests/net/fabric_ping.sh [--probe]
set -u
FAB_TAG=p
# shellcheck source=tests/net/fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"

fab_up --mtu 9000 --paths 4
out=$(ip netns exec "$FABRIC_A_NS" $UDP ping --dst "$FABRIC_B_IP" \
	--size 8972 --count 3) || fail "A->B ping 8972: $out"
echo "  A->B 8972: $out"
out=$(ip netns exec "$FABRIC_B_NS" $UDP ping --dst "$FABRIC_A_IP" \
	--size 8972 --count 3) || fail "B->A ping 8972: $out"
echo "  B->A 8972: $out"
out=$(ip netns exec "$FABRIC_A_NS" $UDP ping --dst "$FABRIC_B_IP" \
	--size 8973 --count 1 2>&1) && fail "8973 bytes with DF passed: $out"
ip -n "$FABRIC_LEAF1_NS" link show dev "$FABRIC_A_LEAF_IF" | grep -q 'prog/xdp' ||
	fail "no XDP program on the leaf's host port"
echo "PASS fabric_ping"
