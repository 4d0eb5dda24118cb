# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# fabric_lib.sh - sourced by the tests over the scripts/fabric.sh fabric
# (tests/net/fabric_*.sh, afxdp_fabric.sh, daemon_fabric.sh, e2e_lib.sh;
# not a test itself). It sources tests/net/ns_lib.sh.
#
# Gives each test: the --probe answer (exit 77 + one line of reason when it
# cannot run here; FAB_PROBE names the test's own probe, which calls
# fab_probe, when it needs more), a fabric with a prefix unique to the run
# (removed at exit), and helpers to send/receive through it and read its
# counters. Set FAB_TAG (one or two letters, unique per test) before
# sourcing.

# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ns_lib.sh"
FABRIC=scripts/fabric.sh
UDP=$B/tests/mroce_fabric_udp

fab_probe() {
	need_root "netns, tc, XDP" && need_cmds ip tc nft bpftool ethtool &&
		need_built "$B/bpf/fabric_hash.bpf.o" "$B/bpf/fabric_ecn.bpf.o" \
			"$UDP" "$BLAST" || return
	[ -e /proc/sys/net/ipv4/fib_multipath_hash_seed ] ||
		{ echo "kernel has no fib_multipath_hash_seed"; return 77; }
	need_netns fbp
}

ns_probe 77 "${FAB_PROBE:-fab_probe}" "$@"

PREFIX=f${FAB_TAG}$$
ns_tmp "fab$FAB_TAG"
at_exit 'bash $FABRIC down --prefix "$PREFIX" >/dev/null 2>&1'

fab_up() { # fabric.sh up options...
	bash $FABRIC up --prefix "$PREFIX" "$@" >/dev/null || fail "fabric up $*"
	eval "$(bash $FABRIC status --prefix "$PREFIX" --env)" ||
		fail "fabric status --env"
}

fab_counters() { eval "$(bash $FABRIC counters --prefix "$PREFIX")"; }

# Packets the fabric's nftables rules dropped so far (loss and
# blackholes, every path, both directions).
fab_drops() {
	local j n=0 v
	fab_counters
	for j in $(seq "$FABRIC_PATHS"); do
		v=FABRIC_P${j}_DROP12 n=$((n + ${!v}))
		v=FABRIC_P${j}_DROP21 n=$((n + ${!v}))
	done
	echo $n
}

# fab_paths [DIR...]: packets on each path so far, path 1 first, on one
# line, in these directions (12: A -> B, 21: B -> A; default both)
# shellcheck disable=SC2120 # the scripts pass DIR
fab_paths() {
	local j d n v out='' dirs=("$@")
	[ $# -gt 0 ] || dirs=(12 21)
	fab_counters
	for j in $(seq "$FABRIC_PATHS"); do
		n=0
		for d in "${dirs[@]}"; do
			v=FABRIC_P${j}_TX$d n=$((n + ${!v:-0}))
		done
		out+="$n "
	done
	echo "$out"
}

# fab_mark, then fab_spread: for the traffic in between, FAB_SHARES
# (" p1=N p2=N ...", packets per path both ways) and FAB_USED (paths that
# carried at least 5% of them)
fab_mark() { read -ra FAB_MARK <<<"$(fab_paths)"; }
fab_spread() {
	local now d tot=0 j
	read -ra now <<<"$(fab_paths)"
	FAB_USED=0 FAB_SHARES=
	for j in "${!now[@]}"; do tot=$((tot + now[j] - FAB_MARK[j])); done
	for j in "${!now[@]}"; do
		d=$((now[j] - FAB_MARK[j]))
		[ $tot -gt 0 ] && [ $((d * 20)) -ge $tot ] &&
			FAB_USED=$((FAB_USED + 1))
		FAB_SHARES+=" p$((j + 1))=$d"
	done
}

# Packets the kernel dropped in the fabric's namespaces so far: every
# interface's rx_dropped + tx_dropped in A, both leaves and B, and B's UDP
# receive errors (a full socket buffer). recv_start marks the count;
# expect_received allows exactly those drops, so a loaded 2-core host
# that drops a datagram fails no count (and one that drops many does).
kdrops() {
	local ns n=0 v
	for ns in "$FABRIC_A_NS" "$FABRIC_LEAF1_NS" "$FABRIC_LEAF2_NS" "$FABRIC_B_NS"; do
		v=$(ip netns exec "$ns" sh -c 'cat /sys/class/net/*/statistics/rx_dropped \
			/sys/class/net/*/statistics/tx_dropped' 2>/dev/null |
			awk '{ n += $1 } END { print n + 0 }')
		n=$((n + v))
	done
	v=$(ip netns exec "$FABRIC_B_NS" awk '$1 == "Udp:" {
		if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1; next }
		for (i = 2; i <= NF; i++) if (k[i] == "InErrors") n += $i }
		END { print n + 0 }' /proc/net/snmp)
	echo $((n + v))
}

# expect_received WANT [WHAT]: the last receiver got WANT datagrams, less
# at most what the kernel counted as dropped since recv_start (at most 1%
# of WANT, plus one).
expect_received() {
	local kd=$(($(kdrops) - KDROPS0))
	[ "$received" -le "$1" ] && [ $((received + kd)) -ge "$1" ] &&
		[ "$kd" -le $(($1 / 100 + 1)) ] ||
		fail "${2:-}received $received of $1 (kernel drops $kd)"
	[ "$kd" -eq 0 ] || echo "  ($kd datagrams dropped by the kernel, allowed)"
}

# Start a receiver on B (args for `mroce_fabric_udp recv`), wait until bound.
recv_start() {
	KDROPS0=$(kdrops)
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
