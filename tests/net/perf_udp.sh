#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# perf_udp.sh - end-to-end test of libmroce and mroce_perf over the UDP
# backend: server and client processes on loopback, in a private network
# namespace (the script re-runs itself under `unshare -n`, so nothing it
# binds can clash with another run or with the host).
#
#   tests/net/perf_udp.sh           run
#   tests/net/perf_udp.sh --probe   exit 77 with a one-line reason when the
#                                   test cannot run here, else exit 0
#
# For both transports (metaroce, rocev2): write_bw, read_bw, send_bw and
# write_lat with --verify and a small -n. Each client must exit 0 with
# "Verify : OK", and the result row must have perftest's columns, checked
# by position (#bytes, #iterations, then numbers). Also: a client with no
# server fails with a named error (not a hang), bad arguments exit 2, and
# --json output parses.
set -u

B=${MROCE_BUILD:-build}
PERF=$B/bin/mroce_perf
export PATH="$PATH:/usr/sbin:/sbin"

probe() {
	[ -x "$PERF" ] || { echo "$PERF not built"; return 77; }
	command -v unshare >/dev/null 2>&1 ||
		{ echo "'unshare' is not installed"; return 77; }
	command -v ip >/dev/null 2>&1 ||
		{ echo "'ip' is not installed"; return 77; }
	unshare -n true 2>/dev/null ||
		{ echo "cannot create a network namespace (needs root)";
		  return 77; }
	return 0
}

if [ "${1:-}" = "--probe" ]; then
	probe
	exit $?
fi
if [ -z "${MROCE_PERF_IN_NS:-}" ]; then
	probe >/dev/null || { echo "cannot run: $(probe)"; exit 1; }
	MROCE_PERF_IN_NS=1 exec unshare -n "$0" "$@"
fi

ip link set lo up || exit 1
TMP=$(mktemp -d /tmp/mroce-perf.XXXXXX)
SRV_PID=
cleanup() {
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
FAILS=0
PORT=18600

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

# Wait until the server listens on TCP $1 (a probe connection would be
# taken as a client, so ask the kernel instead).
wait_listen() {
	for _ in $(seq 100); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# run TEST TRANSPORT SIZE ITERS
run() {
	local t=$1 tr=$2 size=$3 n=$4 rc
	local out=$TMP/$t-$tr.out srv=$TMP/$t-$tr.srv
	PORT=$((PORT + 1))
	timeout 60 "$PERF" "$t" -p $PORT -s "$size" --transport "$tr" \
		--local 127.0.0.1 >"$srv" 2>&1 &
	SRV_PID=$!
	wait_listen $PORT || { fail "$t $tr: server did not listen"; return; }
	timeout 60 "$PERF" "$t" -p $PORT -s "$size" -n "$n" --verify \
		--transport "$tr" --local 127.0.0.2 127.0.0.1 >"$out" 2>&1
	rc=$?
	wait "$SRV_PID"
	local src=$?
	SRV_PID=
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		fail "$t $tr: client exit $rc, server exit $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$srv"
		return
	fi
	grep -q "Verify *: OK" "$out" || fail "$t $tr: no 'Verify : OK'"
	grep -q "Transport type : $( [ "$tr" = rocev2 ] && echo RoCEv2 || echo MetaRoCE)" "$out" ||
		fail "$t $tr: header lacks the transport"
	# The row after the column header, checked by position.
	local head row
	head=$(grep -m1 '#bytes' "$out")
	row=$(grep -A1 -m1 '#bytes' "$out" | tail -1)
	case $t in
	*_bw)
		[ "$(echo "$head" | awk '{print $1, $2, $3, $4, $5, $6, $7}')" = \
		  "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]" ] ||
			fail "$t $tr: bandwidth header '$head'"
		echo "$row" | awk -v s="$size" -v n="$n" '
			NF != 5 || $1 != s || $2 != n { exit 1 }
			$3 !~ /^[0-9.]+$/ || $4 !~ /^[0-9.]+$/ || $4 <= 0 { exit 1 }
			$5 !~ /^[0-9.]+$/ { exit 1 }' ||
			fail "$t $tr: bandwidth row '$row'" ;;
	*_lat)
		echo "$head" | grep -q 't_min\[usec\] *t_max\[usec\] *t_typical\[usec\] *t_avg\[usec\] *t_stdev\[usec\] *99% percentile\[usec\] *99.9% percentile\[usec\]' ||
			fail "$t $tr: latency header '$head'"
		echo "$row" | awk -v s="$size" -v n="$n" '
			NF != 9 || $1 != s || $2 != n { exit 1 }
			{ for (i = 3; i <= 9; i++) if ($i !~ /^[0-9.]+$/) exit 1 }
			$3 > $4 || $3 > $5 || $5 > $4 { exit 1 }' ||
			fail "$t $tr: latency row '$row'" ;;
	esac
	grep -q "Spraying" "$out" || fail "$t $tr: no spraying block"
	echo "ok: $t $tr: $row"
}

for tr in metaroce rocev2; do
	run write_bw $tr 12000 200
	run read_bw $tr 12000 200
	run send_bw $tr 12000 200
	run write_lat $tr 64 100
done

# --json: one object with results (needs python3 to parse; else skip it).
PORT=$((PORT + 1))
"$PERF" send_bw -p $PORT -s 4096 --local 127.0.0.1 >/dev/null 2>&1 &
SRV_PID=$!
if wait_listen $PORT; then
	"$PERF" send_bw -p $PORT -s 4096 -n 50 --json --local 127.0.0.2 \
		127.0.0.1 >"$TMP/json" 2>&1 || fail "json run failed"
	if command -v python3 >/dev/null; then
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
assert d["results"][0]["iterations"] == 50, d
assert d["spray"]["paths"] >= 1, d' "$TMP/json" ||
			{ fail "json output"; cat "$TMP/json"; }
	fi
fi
wait "$SRV_PID" 2>/dev/null
SRV_PID=

# Nobody listening: a named error and exit 1, quickly.
out=$(timeout 20 "$PERF" write_bw -p 1 --local 127.0.0.2 127.0.0.1 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -qi "refused" ||
	fail "no-server case: exit $rc, '$out'"

# Bad arguments: exit 2 with a message.
for args in "write_bw -s 0" "nosuch_bw" "write_bw --transport ib" \
	    "write_lat -q 2" "write_bw -n 5 -D 1"; do
	# shellcheck disable=SC2086
	out=$("$PERF" $args 2>&1)
	rc=$?
	[ $rc -eq 2 ] && [ -n "$out" ] || fail "'$args': exit $rc"
done
"$PERF" --help | grep -q "^SYNOPSIS" || fail "--help"

[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "perf_udp: all passed"
