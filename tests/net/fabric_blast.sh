#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# fabric_blast.sh - mroce_blast over an MTU 9000 fabric: AF_XDP TX from A,
# AF_XDP RX (its own XDP program) on B, 10000 frames of 1 KiB at 10000/s:
# every one arrives (clean fabric, moderate rate), the XDP program's
# counters agree, and its program is gone from B's interface afterwards.
# 2000 jumbo frames (8000-byte payload: multi-buffer AF_XDP) all arrive.
# Then the same with kernel UDP sockets (--udp): packets arrive.
#   tests/net/fabric_blast.sh [--probe]
set -u
FAB_TAG=b
# shellcheck source=tests/net/fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"

fab_up --mtu 9000 --paths 4
N=10000
# one numeric field of mroce_blast's JSON line
# start a receiver on B (mroce_blast args), wait until it can receive
rx_start() {
	rm -f "$TMP/ready"
	ip netns exec "$FABRIC_B_NS" $BLAST --ready "$TMP/ready" "$@" \
		>"$TMP/rx" 2>&1 &
	rxpid=$!
	for _ in $(seq 250); do
		[ -e "$TMP/ready" ] && return 0
		kill -0 $rxpid 2>/dev/null || break
		sleep 0.02
	done
	fail "receiver did not start: $(cat "$TMP/rx")"
}
jv() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }

rx_start --rx --ifname "$FABRIC_B_IF" --dport 4791 --count $N --seconds 5 --json
tx=$(ip netns exec "$FABRIC_A_NS" $BLAST --tx --ifname "$FABRIC_A_IF" \
	--src "$FABRIC_A_IP" --dst "$FABRIC_B_IP" --dmac "$FABRIC_A_GW_MAC" \
	--dport 4791 --size 1024 --count $N --pps 10000 --seconds 3 --json) ||
	fail "blast tx: $tx"
wait $rxpid || fail "blast rx: $(cat "$TMP/rx")"
rx=$(cat "$TMP/rx")
echo "  tx: $tx"
echo "  rx: $rx"
[ "$(jv "$tx" pkts)" -eq $N ] || fail "sent $(jv "$tx" pkts) of $N"
[ "$(jv "$tx" errors)" -eq 0 ] || fail "TX errors"
# Every frame reached B's XDP program (a clean fabric of veths drops
# nothing on the way), and every one it redirected is either received or
# counted by the kernel as dropped before the ring (a loaded 2-core host
# may fill it; at most 1%, and the counts must add up).
[ "$(jv "$rx" xdp_matched_pkts)" -eq $N ] || fail "XDP matched $(jv "$rx" xdp_matched_pkts) of $N"
[ "$(jv "$rx" xdp_redirected_pkts)" -eq $N ] || fail "XDP redirected $(jv "$rx" xdp_redirected_pkts)"
kd=$(jv "$rx" kernel_dropped_pkts)
[ -n "$kd" ] || fail "no kernel_dropped_pkts in $rx"
[ $(($(jv "$rx" pkts) + kd)) -eq $N ] ||
	fail "received $(jv "$rx" pkts) + kernel drops $kd != $N"
[ "$kd" -le $((N / 100)) ] || fail "kernel dropped $kd of $N"
ip -n "$FABRIC_B_NS" link show dev "$FABRIC_B_IF" | grep -q 'prog/xdp' &&
	fail "RX program left attached"

# jumbo frames: 8000-byte payloads span two UMEM chunks (multi-buffer)
rx_start --rx --ifname "$FABRIC_B_IF" --dport 4791 --count 2000 --seconds 5 --json
tx=$(ip netns exec "$FABRIC_A_NS" $BLAST --tx --ifname "$FABRIC_A_IF" \
	--src "$FABRIC_A_IP" --dst "$FABRIC_B_IP" --dmac "$FABRIC_A_GW_MAC" \
	--dport 4791 --size 8000 --count 2000 --pps 5000 --json) ||
	fail "jumbo blast tx: $tx"
wait $rxpid || fail "jumbo blast rx: $(cat "$TMP/rx")"
rx=$(cat "$TMP/rx")
echo "  jumbo rx: $rx"
kd=$(jv "$rx" kernel_dropped_pkts)
[ "$(jv "$rx" xdp_matched_pkts)" -eq 2000 ] || fail "jumbo: XDP matched $(jv "$rx" xdp_matched_pkts) of 2000"
[ $(($(jv "$rx" pkts) + kd)) -eq 2000 ] && [ "$kd" -le 20 ] ||
	fail "jumbo: received $(jv "$rx" pkts), kernel drops $kd, of 2000"
[ "$(jv "$rx" payload_bytes)" -eq 8000 ] || fail "jumbo: payload $(jv "$rx" payload_bytes)"

rx_start --udp --rx --dport 4792 --count 5000 --seconds 4 --json
tx=$(ip netns exec "$FABRIC_A_NS" $BLAST --udp --tx --dst "$FABRIC_B_IP" \
	--dport 4792 --count 5000 --pps 20000 --seconds 2 --json) ||
	fail "udp tx: $tx"
wait $rxpid || fail "udp rx: $(cat "$TMP/rx")"
rx=$(cat "$TMP/rx")
echo "  udp tx: $tx"
echo "  udp rx: $rx"
[ "$(jv "$tx" pkts)" -eq 5000 ] || fail "UDP sent $(jv "$tx" pkts)"
[ "$(jv "$rx" pkts)" -gt 0 ] || fail "UDP received nothing"
"$BLAST" --help | grep -q SYNOPSIS || fail "--help"
echo "PASS fabric_blast"
