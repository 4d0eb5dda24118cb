# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# fabric_lib.sh - sourced by tests/net/fabric_*.sh (not a test itself).
#
# Gives each test: the --probe answer (exit 77 + one line of reason when it
# cannot run here), a fabric with a prefix unique to the run (removed by an
# EXIT trap), fail(), and helpers to send/receive through it. Set FAB_TAG
# (one or two letters, unique per test) before sourcing.

B=${MROCE_BUILD:-build}
FABRIC=scripts/fabric.sh
UDP=$B/tests/mroce_fabric_udp
BLAST=$B/bin/mroce_blast
export PATH="$PATH:/usr/sbin:/sbin"
export MROCE_BUILD=$B

fab_probe() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (netns, tc, XDP)"; return 77; }
	local c
	for c in ip tc nft bpftool ethtool; do
		command -v $c >/dev/null 2>&1 ||
			{ echo "'$c' is not installed"; return 77; }
	done
	for c in "$B/bpf/fabric_hash.bpf.o" "$B/bpf/fabric_ecn.bpf.o" "$UDP" \
		"$BLAST"; do
		[ -e "$c" ] || { echo "$c not built"; return 77; }
	done
	[ -e /proc/sys/net/ipv4/fib_multipath_hash_seed ] ||
		{ echo "kernel has no fib_multipath_hash_seed"; return 77; }
	local n=fbp$$
	ip netns add $n 2>/dev/null ||
		{ echo "cannot create network namespaces"; return 77; }
	if ! ip -n $n link add p0 type veth peer name p1 2>/dev/null; then
		ip netns del $n
		echo "no veth support"
		return 77
	fi
	ip netns del $n
	return 0
}

if [ "${1:-}" = "--probe" ]; then
	fab_probe
	exit $?
fi
why=$(fab_probe) || { echo "cannot run: $why"; exit 77; }

PREFIX=f${FAB_TAG}$$
TMP=$(mktemp -d)
fab_cleanup() {
	bash $FABRIC down --prefix "$PREFIX" >/dev/null 2>&1
	rm -rf "$TMP"
	true
}
trap fab_cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }

fab_up() { # fabric.sh up options...
	bash $FABRIC up --prefix "$PREFIX" "$@" >/dev/null || fail "fabric up $*"
	eval "$(bash $FABRIC status --prefix "$PREFIX" --env)" ||
		fail "fabric status --env"
}

fab_counters() { eval "$(bash $FABRIC counters --prefix "$PREFIX")"; }

# Start a receiver on B (args for `mroce_fabric_udp recv`), wait until bound.
recv_start() {
	rm -f "$TMP/ready"
	ip netns exec "$FABRIC_B_NS" $UDP recv --ready "$TMP/ready" "$@" \
		>"$TMP/recv" 2>&1 &
	RECV_PID=$!
	for _ in $(seq 100); do
		[ -e "$TMP/ready" ] && return 0
		sleep 0.02
	done
	fail "receiver did not start: $(cat "$TMP/recv")"
}

# Wait for the receiver and eval its key=value line (received, ce, ...).
recv_wait() {
	wait "$RECV_PID" || fail "receiver: $(cat "$TMP/recv")"
	eval "$(tail -1 "$TMP/recv")"
	echo "  recv: $(tail -1 "$TMP/recv")"
}

# Send from A to B (args for `mroce_fabric_udp send`); evals sent=, errors=.
send_a() {
	local out
	out=$(ip netns exec "$FABRIC_A_NS" $UDP send --dst "$FABRIC_B_IP" "$@") ||
		fail "send: $out"
	eval "$out"
	echo "  send: $out"
}
