# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# e2e_lib.sh - sourced by tests/net/e2e_*.sh (not a test itself).
#
# End to end over the lossy fabric: mroce_perf --verify between hosts A and
# B of a 4-path scripts/fabric.sh fabric, in embedded mode, over the UDP
# backend (kernel sockets) or the AF_XDP backend (mrocectl attach on the
# host's eth0, libmroce's AF_XDP socket). Gives each test: the --probe
# answer (exit 77 + a reason), a fabric with a prefix unique to the run
# (removed at exit, with every server and client this file started: see
# fabric_lib.sh and ns_lib.sh), and
#
#   e2e_start  BACKEND TRANSPORT OP ARGS...   server + client in background
#   e2e_finish                                wait for both, judge the run
#   e2e_run    BACKEND TRANSPORT OP ARGS...   both of the above
#   e2e_summary                               exit 0/1 on what was judged
#
# Set FAB_TAG (unique two letters) before sourcing.

e2e_probe() {
	fab_probe && need_built "$PERF" "$CTL" && need_cmds ss && need_afxdp
}
FAB_PROBE=e2e_probe
# shellcheck source=tests/net/fabric_lib.sh
. tests/net/fabric_lib.sh

E2E_PIDS=()
kill_at_exit E2E_PIDS

E2E_FAILS=0
E2E_OK=0
E2E_PORT=$((20000 + $$ % 20000))
# A minimum RTO of two milliseconds: client, server and the forwarding chain
# share two busy cores, and a shorter one only adds spurious timeouts.
E2E_RTO=${E2E_RTO:-2000}

# e2e_host NS BACKEND CMD...: CMD in a session of host namespace NS with
# mroce's XDP program attached afresh to eth0 for afxdp, none for udp (it
# would take the packets for AF_XDP). Started with &: the pid the caller
# keeps (and kills) is the program's own (xdp_run).
e2e_host() {
	local ns=$1 be=$2 opt=()
	shift 2
	[ "$be" = afxdp ] || opt=(--no-attach)
	xdp_run "${opt[@]}" "$ns" eth0 "$@"
}

# Wait (up to 5 s) until nothing on A or B holds the transports' UDP ports
# any more: a killed run's processes may take a moment to go, and the next
# run's device would find its port in use.
e2e_wait_free() {
	local ns
	for _ in $(seq 100); do
		for ns in "$FABRIC_A_NS" "$FABRIC_B_NS"; do
			ip netns exec "$ns" ss -Hlun 'sport = :4791 or sport = :4792' \
				2>/dev/null | grep -q . && break
			ns=
		done
		[ -z "$ns" ] && return 0
		sleep 0.05
	done
	echo "   (UDP ports 4791/4792 still in use in $ns)"
}

# e2e_start BACKEND TRANSPORT OP ARGS...: server on B, client on A with
# --verify, both in the background; E2E_OUT is the client's output file
# (server: $E2E_OUT.srv).
e2e_start() {
	local be=$1 tr=$2 op=$3
	shift 3
	E2E_PORT=$((E2E_PORT + 1))
	E2E_NAME="$op $tr $be"
	E2E_OUT=$TMP/$op-$tr-$be-$E2E_PORT
	local dev=(--backend "$be" --transport "$tr" --rto-min "$E2E_RTO")
	[ "$be" = afxdp ] && dev+=(--ifname eth0)
	e2e_host "$FABRIC_B_NS" "$be" timeout 120 "$PERF" "$op" \
		-p $E2E_PORT "${dev[@]}" --local "$FABRIC_B_IP" "$@" \
		>"$E2E_OUT.srv" 2>&1 &
	E2E_SPID=$!
	E2E_PIDS+=($!)
	E2E_CPID=
	E2E_T0=$(date +%s.%N)
	if ! wait_listen "$FABRIC_B_NS" $E2E_PORT $E2E_SPID; then
		E2E_START_ERR="server did not listen"
		return 1
	fi
	E2E_START_ERR=
	e2e_host "$FABRIC_A_NS" "$be" timeout 120 "$PERF" "$op" \
		-p $E2E_PORT "${dev[@]}" --local "$FABRIC_A_IP" --verify "$@" \
		"$FABRIC_B_IP" >"$E2E_OUT" 2>&1 &
	E2E_CPID=$!
	E2E_PIDS+=($!)
	return 0
}

e2e_dump() {
	sed 's/^/  client| /' "$E2E_OUT"
	sed 's/^/  server| /' "$E2E_OUT.srv"
}

# e2e_finish [tolerate]: wait for client and server; the run passes when
# both exit 0 and the client says "Verify : OK". With "tolerate" a failed
# run is recorded (E2E_RESULT) and not counted as a failure, but a verify
# mismatch always is. Sets E2E_RESULT (ok | error: ...) and E2E_ROW.
e2e_finish() {
	local tol=${1:-} rc src
	E2E_ROW=
	if [ -n "$E2E_START_ERR" ]; then
		kill "$E2E_SPID" 2>/dev/null
		wait "$E2E_SPID" 2>/dev/null
		E2E_RESULT="error: $E2E_START_ERR"
		touch "$E2E_OUT"
		echo "FAIL: $E2E_NAME: $E2E_START_ERR"
		e2e_dump
		E2E_FAILS=$((E2E_FAILS + 1))
		return 1
	fi
	wait "$E2E_CPID"
	rc=$?
	# a client that failed leaves the server waiting for it: stop it
	[ $rc -eq 0 ] || { sleep 1; kill "$E2E_SPID" 2>/dev/null; }
	wait "$E2E_SPID"
	src=$?
	e2e_wait_free
	E2E_ROW=$(grep -A1 -m1 '#bytes' "$E2E_OUT" | tail -1 | tr -s ' ')
	if grep -qi "verify.*fail\|bad bytes seen: [1-9]\|[1-9][0-9]* bad bytes" \
		"$E2E_OUT" "$E2E_OUT.srv"; then
		E2E_RESULT="error: verify mismatch"
		echo "FAIL: $E2E_NAME: data corrupted"
		e2e_dump
		E2E_FAILS=$((E2E_FAILS + 1))
		return 1
	fi
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "Verify *: OK" "$E2E_OUT"; then
		E2E_RESULT=ok
		E2E_OK=$((E2E_OK + 1))
		echo "ok: $E2E_NAME ($(e2e_elapsed) s): $E2E_ROW | $(sed -n 's/^ *Data packets *: //p' "$E2E_OUT")"
		return 0
	fi
	E2E_RESULT="error: client exit $rc, server exit $src: $(grep -m1 -i 'mroce_perf:' "$E2E_OUT" | cut -c1-120)"
	if [ "$tol" = tolerate ]; then
		echo "recorded (allowed to fail): $E2E_NAME: $E2E_RESULT"
		return 1
	fi
	echo "FAIL: $E2E_NAME: client exit $rc, server exit $src"
	e2e_dump
	E2E_FAILS=$((E2E_FAILS + 1))
	return 1
}

e2e_elapsed() {
	awk -v a="$E2E_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}

e2e_run() {
	e2e_start "$@"
	e2e_finish
}

# Message sizes and counts: small enough for CI, big enough that every
# bandwidth message spans several packets (64 KiB) and the latency tests
# carry an odd size over more than one packet.
e2e_args() { # OP -> perf arguments
	case $1 in
	*_bw) echo "-s 65536 -n ${E2E_BW_N:-100} -t 16" ;;
	*_lat) echo "-s 12000 -n ${E2E_LAT_N:-100}" ;;
	esac
}

# The matrix (docs/fabric.md "End-to-end tests"): under each condition,
# each transport runs three operations on one backend and the other three
# on the other, and the split flips between conditions, so that every
# (operation, transport, backend) and every pair of them with every
# condition is covered.
E2E_SET_X="write_bw read_lat send_bw"
E2E_SET_Y="read_bw write_lat send_lat"
e2e_ops() { # FLIP(0|1) TRANSPORT BACKEND -> operations
	local f=$1
	[ "$2" = rocev2 ] && f=$((1 - f))
	[ "$3" = afxdp ] && f=$((1 - f))
	if [ $f -eq 0 ]; then echo "$E2E_SET_X"; else echo "$E2E_SET_Y"; fi
}

# e2e_matrix FLIP [tolerate]: every transport x backend with its operations.
e2e_matrix() {
	local tr be op
	for tr in metaroce rocev2; do
		for be in udp afxdp; do
			for op in $(e2e_ops "$1" $tr $be); do
				# shellcheck disable=SC2046
				e2e_start $be $tr $op $(e2e_args $op)
				e2e_finish "${2:-}"
			done
		done
	done
}

e2e_summary() {
	echo "$E2E_OK passed, $E2E_FAILS failed"
	[ $E2E_FAILS -eq 0 ] || exit 1
	[ $E2E_OK -gt 0 ] || { echo "FAIL: nothing ran"; exit 1; }
	exit 0
}
