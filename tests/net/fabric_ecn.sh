#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# fabric_ecn.sh - the phantom-queue ECN marker (bpf/fabric_ecn.bpf.c) on
# the paths, threshold 20 Mbit/s, 60000 bytes:
#  - ECT(0) traffic well below the rate (300 x 1000 B at 400/s = 3.2 Mbit/s)
#    arrives unmarked;
#  - ECT(0) traffic far above it (unpaced) arrives with CE on many packets,
#    and the marker's own counter agrees with the receiver (IP_RECVTOS);
#  - traffic that is not ECN-capable is never marked, however fast.
#   tests/net/fabric_ecn.sh [--probe]
set -u
FAB_TAG=n
# shellcheck source=tests/net/fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"

fab_up --paths 2 --ecn-rate 20mbit --ecn-thresh 60000
ce_sum() { fab_counters; echo $((FABRIC_P1_CE12 + FABRIC_P2_CE12)); }

recv_start --port 5003 --count 300 --seconds 5
send_a --port 5003 --flows 4 --count 300 --size 1000 --tos 2 --pps 400
recv_wait
expect_received 300 "slow ECT traffic: "
[ "$ect0" -eq "$received" ] && [ "$ce" -eq 0 ] ||
	fail "slow ECT traffic: received $received, ect0 $ect0, ce $ce"

c0=$(ce_sum)
recv_start --port 5003 --count 3000 --seconds 10
send_a --port 5003 --flows 4 --count 3000 --size 1000 --tos 2
recv_wait
c1=$(ce_sum)
echo "  marker counted $((c1 - c0)) CE marks"
[ "$ce" -ge 300 ] || fail "fast ECT traffic: only $ce of $received marked CE"
[ $((ce + ect0)) -eq "$received" ] || fail "ECN field lost: $ect0 + $ce != $received"
[ $((c1 - c0)) -eq "$ce" ] || fail "marker counted $((c1 - c0)), receiver saw $ce"

recv_start --port 5003 --count 3000 --seconds 10
send_a --port 5003 --flows 4 --count 3000 --size 1000 --tos 0
recv_wait
[ "$ce" -eq 0 ] && [ "$not_ect" -eq "$received" ] ||
	fail "not-ECT traffic marked: ce $ce"
echo "PASS fabric_ecn"
