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

B=${MROCE_BUILD:-build}
PERF=$B/bin/mroce_perf
MROCED=$B/bin/mroced
CTL=$B/bin/mrocectl
export PATH="$PATH:/usr/sbin:/sbin"

probe() {
	for f in "$PERF" "$MROCED" "$CTL"; do
		[ -x "$f" ] || { echo "$f not built"; return 77; }
	done
	command -v unshare >/dev/null 2>&1 ||
		{ echo "'unshare' is not installed"; return 77; }
	unshare -n true 2>/dev/null ||
		{ echo "cannot create a network namespace (needs root)";
		  return 77; }
	return 0
}

if [ "${1:-}" = "--probe" ]; then
	probe
	exit $?
fi
if [ -z "${MROCE_DAEMON_IN_NS:-}" ]; then
	probe >/dev/null || { echo "cannot run: $(probe)"; exit 1; }
	MROCE_DAEMON_IN_NS=1 exec unshare -n "$0" "$@"
fi

ip link set lo up || exit 1
TMP=$(mktemp -d /tmp/mroce-daemon.XXXXXX)
SA=$TMP/a.sock
SB=$TMP/b.sock
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
FAILS=0
PORT=18800
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

wait_listen() {
	for _ in $(seq 200); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

wait_sock() {
	for _ in $(seq 200); do
		"$CTL" daemon --sock "$1" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

# start_daemon VAR ADDR SOCK: starts mroced, its pid in VAR.
start_daemon() {
	"$MROCED" --local "$2" --sock "$3" --rto-min 20000 \
		2>"$TMP/mroced-$2.log" &
	PIDS+=($!)
	printf -v "$1" '%s' $!
	wait_sock "$3" || fail "mroced on $2 did not start"
}

start_daemon DA 127.0.0.1 "$SA"
start_daemon DB 127.0.0.2 "$SB"

# run TEST TRANSPORT SIZE ITERS: server via A, client via B, --verify.
run() {
	local t=$1 tr=$2 size=$3 n=$4 rc src spid
	local out=$TMP/$t-$tr.out srv=$TMP/$t-$tr.srv
	PORT=$((PORT + 1))
	timeout 60 "$PERF" "$t" --daemon="$SA" -p $PORT -s "$size" \
		--transport "$tr" >"$srv" 2>&1 &
	spid=$!
	wait_listen $PORT || { fail "$t $tr: server did not listen"; return; }
	timeout 60 "$PERF" "$t" --daemon="$SB" -p $PORT -s "$size" -n "$n" \
		--verify --transport "$tr" 127.0.0.1 >"$out" 2>&1
	rc=$?
	wait "$spid"
	src=$?
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		fail "$t $tr: client exit $rc, server exit $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$srv"
		return
	fi
	grep -q "Verify *: OK" "$out" || fail "$t $tr: no 'Verify : OK'"
	grep -q "Device *: mroce (mroced)" "$out" ||
		fail "$t $tr: header does not name the daemon"
	echo "ok: $t $tr: $(grep -A1 -m1 '#bytes' "$out" | tail -1)"
}

for tr in metaroce rocev2; do
	run write_bw $tr 12000 200
	run read_bw $tr 12000 200
	run send_bw $tr 12000 200
	run write_lat $tr 64 100
done

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
if wait_listen $P1 && wait_listen $P2; then
	timeout 60 "$PERF" write_bw --daemon="$SB" -p $P1 -s 8192 -n 300 \
		--verify --transport rocev2 127.0.0.1 >"$TMP/two-c1" 2>&1 &
	C1=$!
	timeout 60 "$PERF" write_bw --daemon="$SB" -p $P2 -s 8192 -n 300 \
		--verify --transport metaroce 127.0.0.1 >"$TMP/two-c2" 2>&1 &
	C2=$!
	# Both are connected at the same time at some point.
	seen=0
	for _ in $(seq 100); do
		n=$("$CTL" daemon --sock "$SB" --json 2>/dev/null |
			sed -n 's/.*"apps":\([0-9]*\).*/\1/p')
		[ "${n:-0}" -ge 2 ] && { seen=1; break; }
		sleep 0.02
	done
	wait $C1; r1=$?
	wait $C2; r2=$?
	wait $S1 $S2
	[ $r1 -eq 0 ] && grep -q "Verify *: OK" "$TMP/two-c1" ||
		{ fail "two apps: rocev2 client exit $r1"; cat "$TMP/two-c1"; }
	[ $r2 -eq 0 ] && grep -q "Verify *: OK" "$TMP/two-c2" ||
		{ fail "two apps: metaroce client exit $r2"; cat "$TMP/two-c2"; }
	[ $seen -eq 1 ] || echo "note: the two clients did not overlap"
	[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && echo "ok: two applications at once"
else
	fail "two apps: servers did not listen"
fi

# A long transfer: server on A, client on B, for the kill cases.
long_start() {
	PORT=$((PORT + 1))
	timeout 60 "$PERF" write_bw --daemon="$SA" -p $PORT -s 65536 -D 20 \
		--transport "$1" >"$TMP/long-srv" 2>&1 &
	LS=$!
	wait_listen $PORT || fail "long: server did not listen"
	# no `timeout` wrapper: $LC must be mroce_perf itself (it is
	# killed below); -D 20 bounds it
	"$PERF" write_bw --daemon="$SB" -p $PORT -s 65536 -D 20 \
		--transport "$1" 127.0.0.1 >"$TMP/long-cli" 2>&1 &
	LC=$!
	PIDS+=($LC)
	# Wait until the client has its QP in the daemon.
	for _ in $(seq 100); do
		"$CTL" daemon --sock "$SB" --json 2>/dev/null |
			grep -q '"qps":1' && break
		sleep 0.05
	done
	sleep 0.5
}

# Application killed: the daemon frees its objects.
long_start rocev2
"$CTL" daemon --sock "$SB" >"$TMP/st-before"
grep -q "apps 1 .*qps 1" "$TMP/st-before" ||
	fail "kill app: daemon did not show the client: $(cat "$TMP/st-before")"
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
	{ fail "kill app: objects left"; cat "$TMP/st-after"; }
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
	if [ $rc -ne 1 ] || [ $ms -gt 10000 ]; then
		fail "SIGKILL daemon ($tr): client exit $rc after $ms ms"
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
kill -TERM "$DB"
wait "$DB"
drc=$?
wait $LC
rc=$?
[ $drc -eq 0 ] || fail "SIGTERM: mroced exit $drc"
[ -e "$SB" ] && fail "SIGTERM: socket $SB still there"
if [ $rc -ne 1 ] || ! grep -qi "flush\|not connected" "$TMP/long-cli"; then
	fail "SIGTERM: client exit $rc"
	cat "$TMP/long-cli"
else
	echo "ok: SIGTERM: mroced exit 0, client: $(grep -m1 "mroce_perf:" "$TMP/long-cli")"
fi
grep -q "shut down" "$TMP/mroced-127.0.0.2.log" ||
	fail "SIGTERM: no shutdown line in the log"
kill $LS 2>/dev/null
wait $LS 2>/dev/null

# No daemon: named errors, exit 1.
out=$(timeout 10 "$PERF" write_bw --daemon="$SB" 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "mroced is not running (socket $SB)" ||
	fail "perf without daemon: exit $rc, '$out'"
out=$("$CTL" daemon --sock "$SB" 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "mroced is not running (socket $SB)" ||
	fail "mrocectl without daemon: exit $rc, '$out'"
# A second daemon on a live socket refuses to start.
out=$("$MROCED" --local 127.0.0.3 --sock "$SA" 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "another mroced is running" ||
	fail "second daemon: exit $rc, '$out'"
for args in "" "--local nope" "--local 127.0.0.1 --backend ib" \
	    "--local 127.0.0.1 --backend afxdp" "--local 127.0.0.1 extra"; do
	# shellcheck disable=SC2086
	out=$("$MROCED" $args 2>&1)
	rc=$?
	[ $rc -eq 2 ] && [ -n "$out" ] || fail "mroced '$args': exit $rc"
done
"$MROCED" --help | grep -q "^SYNOPSIS" || fail "mroced --help"
"$CTL" daemon --help | grep -q "^SYNOPSIS" || fail "mrocectl daemon --help"

[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "daemon_udp: all passed"
