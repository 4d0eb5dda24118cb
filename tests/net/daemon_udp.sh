#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# daemon_udp.sh - end-to-end test of mroced with real applications
# (mroce_perf --daemon) over the UDP backend on loopback, in a private
# network namespace (the script re-runs itself under `unshare -n`).
#
#   tests/net/daemon_udp.sh           run
#   tests/net/daemon_udp.sh --probe   exit 77 with a reason when it cannot
#                                     run here, else exit 0
#
# Two daemons, A on 127.0.0.1 and B on 127.0.0.2 (one per "host"):
#   - write_bw, read_bw, send_bw, write_lat with --verify, both transports,
#     server on A, client on B;
#   - two applications on one daemon at the same time, both --verify;
#   - an application killed with SIGKILL: `mrocectl daemon` shows its
#     QPs, MRs and CQs gone;
#   - daemon B killed with SIGKILL mid-transfer: the client exits 1 with
#     an error within a bound (no hang); B restarted alone (A keeps
#     running) then serves new transfers with A, --verify;
#   - daemon B stopped with SIGTERM mid-transfer: it exits 0, its socket
#     is gone, the client sees flushed work requests and exits 1;
#   - no daemon: mroce_perf and mrocectl name the socket and exit 1;
#     mroced's bad arguments exit 2.
set -u
# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "$0")/ns_lib.sh"

probe() { need_built "$PERF" "$MROCED" "$CTL" && need_unshare; }
ns_probe 1 probe "$@"
ns_unshare "$@"
ns_tmp daemon
SA=$TMP/a.sock
SB=$TMP/b.sock
PORT=18800
LC=
kill_at_exit LC

# start_daemon VAR ADDR SOCK: starts mroced, its pid in VAR.
start_daemon() {
	mroced_start "$1" "" "$3" --local "$2" --rto-min 20000 ||
		flunk "mroced on $2 did not start"
}

start_daemon DA 127.0.0.1 "$SA"
start_daemon DB 127.0.0.2 "$SB"

# run TEST TRANSPORT SIZE ITERS: server via A, client via B, --verify.
run() {
	local t=$1 tr=$2 size=$3 n=$4 out=$TMP/$1-$2
	PORT=$((PORT + 1))
	perf_pair "$t $tr" "$out" "" $PORT \
		timeout 60 "$PERF" "$t" --daemon="$SA" -p $PORT -s "$size" \
		--transport "$tr" -- \
		timeout 60 "$PERF" "$t" --daemon="$SB" -p $PORT -s "$size" -n "$n" \
		--verify --transport "$tr" 127.0.0.1 || return
	grep -q "Device *: mroce (mroced)" "$out" ||
		flunk "$t $tr: header does not name the daemon"
	echo "ok: $t $tr: $ROW"
}

for tr in metaroce rocev2; do
	run write_bw $tr 12000 200
	run read_bw $tr 12000 200
	run send_bw $tr 12000 200
	run write_lat $tr 64 100
done

# The spraying block counts this run only: the same write_bw again, on
# daemons that carried every run above, reports about the packets of its
# first run (it showed the daemon's totals since it started).
sent() { sed -n 's/^ *Data packets *: \([0-9]*\) sent.*/\1/p' "$1"; }
s1=$(sent "$TMP/write_bw-metaroce")
run write_bw metaroce 12000 200
s2=$(sent "$TMP/write_bw-metaroce")
[ -n "$s1" ] && [ -n "$s2" ] && [ "$s1" -gt 0 ] && [ "$s2" -lt $((s1 * 3 / 2)) ] ||
	flunk "write_bw data packets not per run: first $s1, again $s2"

# Two applications on each daemon at once, both verifying.
P1=$((PORT + 1))
P2=$((PORT + 2))
PORT=$P2
"$PERF" write_bw --daemon="$SA" -p $P1 -s 8192 --transport rocev2 \
	>"$TMP/two-s1" 2>&1 &
S1=$!
"$PERF" write_bw --daemon="$SA" -p $P2 -s 8192 --transport metaroce \
	>"$TMP/two-s2" 2>&1 &
S2=$!
if wait_listen "" $P1 $S1 && wait_listen "" $P2 $S2; then
	# 3 s each (-D), so that both are connected at the same time: the
	# daemon must be seen serving the two applications together
	timeout 60 "$PERF" write_bw --daemon="$SB" -p $P1 -s 8192 -D 3 \
		--verify --transport rocev2 127.0.0.1 >"$TMP/two-c1" 2>&1 &
	C1=$!
	timeout 60 "$PERF" write_bw --daemon="$SB" -p $P2 -s 8192 -D 3 \
		--verify --transport metaroce 127.0.0.1 >"$TMP/two-c2" 2>&1 &
	C2=$!
	seen=0
	for _ in $(seq 100); do
		n=$("$CTL" daemon --sock "$SB" --json 2>/dev/null |
			sed -n 's/.*"apps":\([0-9]*\).*/\1/p')
		[ "${n:-0}" -ge 2 ] && { seen=1; break; }
		sleep 0.02
	done
	wait $C1; r1=$?
	wait $C2; r2=$?
	wait $S1; q1=$?
	wait $S2; q2=$?
	[ $r1 -eq 0 ] && [ $q1 -eq 0 ] && grep -q "Verify *: OK" "$TMP/two-c1" ||
		{ flunk "two apps: rocev2 client exit $r1, server $q1"; cat "$TMP/two-c1" "$TMP/two-s1"; }
	[ $r2 -eq 0 ] && [ $q2 -eq 0 ] && grep -q "Verify *: OK" "$TMP/two-c2" ||
		{ flunk "two apps: metaroce client exit $r2, server $q2"; cat "$TMP/two-c2" "$TMP/two-s2"; }
	[ $seen -eq 1 ] || flunk "two apps: the daemon never had both at once"
	[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $seen -eq 1 ] &&
		echo "ok: two applications at once"
else
	flunk "two apps: servers did not listen"
fi

# A long transfer: server on A, client on B, for the kill cases.
long_start() {
	PORT=$((PORT + 1))
	timeout 60 "$PERF" write_bw --daemon="$SA" -p $PORT -s 65536 -D 20 \
		--transport "$1" >"$TMP/long-srv" 2>&1 &
	LS=$!
	wait_listen "" $PORT $LS || flunk "long: server did not listen"
	# no `timeout` wrapper: $LC must be mroce_perf itself (it is
	# killed below); -D 20 bounds it
	"$PERF" write_bw --daemon="$SB" -p $PORT -s 65536 -D 20 \
		--transport "$1" 127.0.0.1 >"$TMP/long-cli" 2>&1 &
	LC=$!
	# Wait until the client has its QP in the daemon and data moves.
	local ok=0
	for _ in $(seq 100); do
		"$CTL" daemon --sock "$SB" --json 2>/dev/null |
			grep -q '"qps":1' && { ok=1; break; }
		sleep 0.05
	done
	[ $ok -eq 1 ] || flunk "long ($1): the client never had a QP in the daemon"
	sleep 0.5
}

# Application killed: the daemon frees its objects.
long_start rocev2
"$CTL" daemon --sock "$SB" >"$TMP/st-before"
grep -q "apps 1 .*qps 1" "$TMP/st-before" ||
	flunk "kill app: daemon did not show the client: $(cat "$TMP/st-before")"
kill -9 $LC
wait $LC 2>/dev/null
ok=0
for _ in $(seq 100); do
	"$CTL" daemon --sock "$SB" >"$TMP/st-after"
	grep -q "apps 0  pds 0  mrs 0  cqs 0  qps 0" "$TMP/st-after" &&
		{ ok=1; break; }
	sleep 0.05
done
[ $ok -eq 1 ] && echo "ok: killed application reclaimed" ||
	{ flunk "kill app: objects left"; cat "$TMP/st-after"; }
kill $LS 2>/dev/null
wait $LS 2>/dev/null

# Daemon killed with SIGKILL mid-transfer: error, no hang.
for tr in rocev2 metaroce; do
	long_start $tr
	t0=$(date +%s%N)
	kill -9 "$DB"
	wait $LC
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	# exit 1 for the reason under test: the daemon is gone, so the
	# library flushed the outstanding work requests
	if [ $rc -ne 1 ] || [ $ms -gt 10000 ] ||
	   ! grep -q "^mroce_perf: .*\(Flushed\|not connected\)" "$TMP/long-cli"; then
		flunk "SIGKILL daemon ($tr): client exit $rc after $ms ms"
		cat "$TMP/long-cli"
	else
		echo "ok: SIGKILL daemon ($tr): client exit 1 after $ms ms:" \
			"$(grep -m1 "mroce_perf:" "$TMP/long-cli")"
	fi
	kill $LS 2>/dev/null
	wait $LS 2>/dev/null
	rm -f "$SB"
	# Only B restarts: A still holds its connection to the old B and
	# must take the restarted B's new handshake (a new connection).
	start_daemon DB 127.0.0.2 "$SB"
	echo "restarted B ($tr):"
	run write_bw $tr 12000 200
	run read_bw $tr 12000 100
done

# SIGTERM mid-transfer: exit 0, socket gone, the app sees flush errors.
long_start metaroce
mroced_stop DB
wait $LC
rc=$?
[ -e "$SB" ] && flunk "SIGTERM: socket $SB still there"
if [ $rc -ne 1 ] || ! grep -qi "flush\|not connected" "$TMP/long-cli"; then
	flunk "SIGTERM: client exit $rc"
	cat "$TMP/long-cli"
else
	echo "ok: SIGTERM: mroced exit 0, client: $(grep -m1 "mroce_perf:" "$TMP/long-cli")"
fi
grep -q "shut down" "$TMP/mroced-b.log" ||
	flunk "SIGTERM: no shutdown line in the log"
kill $LS 2>/dev/null
wait $LS 2>/dev/null

# No daemon: named errors, exit 1.
expect_exit 1 "mroced is not running (socket $SB)" "perf without daemon" \
	timeout 10 "$PERF" write_bw --daemon="$SB"
expect_exit 1 "mroced is not running (socket $SB)" "mrocectl without daemon" \
	"$CTL" daemon --sock "$SB"
# A second daemon on a live socket refuses to start.
expect_exit 1 "another mroced is running" "second daemon" \
	"$MROCED" --local 127.0.0.3 --sock "$SA"
usage_errors "$MROCED" "" "--local nope" "--local 127.0.0.1 --backend ib" \
	"--local 127.0.0.1 --backend afxdp" "--local 127.0.0.1 extra" \
	"--local 127.0.0.1 --queue-us 0"
"$CTL" daemon --help | grep -q "^SYNOPSIS" || flunk "mrocectl daemon --help"

ns_summary daemon_udp
