#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# fabric_ecmp.sh - the leaves spread UDP flows over the paths by port:
# 64 source ports use more than one path (per-path interface counters),
# while one 5-tuple sent from 8 fresh connected sockets (each with its own
# random socket hash) stays on one path: the leaf hashes the ports, not the
# socket's hash (which the tc program on its host port cleared).
#   tests/net/fabric_ecmp.sh [--probe]
set -u
FAB_TAG=e
# shellcheck source=tests/net/fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"

fab_up --paths 4

read -ra before <<<"$(fab_paths 12)"
recv_start --port 5001 --count 640 --seconds 5
send_a --port 5001 --sport 41000 --flows 64 --count 640
recv_wait
expect_received 640
read -ra after <<<"$(fab_paths 12)"
used=0 total=0
for j in 0 1 2 3; do
	d=$((after[j] - before[j]))
	echo "  path $((j + 1)): $d packets"
	total=$((total + d))
	[ $d -gt 0 ] && used=$((used + 1))
done
kd=$(($(kdrops) - KDROPS0))
[ $total -le 640 ] && [ $((total + kd)) -ge 640 ] ||
	fail "paths carried $total packets of 640 (kernel drops $kd)"
[ $used -gt 1 ] || fail "64 flows used $used path(s)"

before=("${after[@]}")
recv_start --port 5001 --count 80 --seconds 5
send_a --port 5001 --sport 42000 --flows 1 --count 10 --rounds 8 --connect
recv_wait
read -ra after <<<"$(fab_paths 12)"
used=0
for j in 0 1 2 3; do
	d=$((after[j] - before[j]))
	[ $d -gt 0 ] && used=$((used + 1))
	[ $d -eq 0 ] || [ $d -eq 80 ] || fail "one 5-tuple split: $d on path $((j + 1))"
done
[ $used -eq 1 ] || fail "one 5-tuple on $used paths"
echo "PASS fabric_ecmp"
