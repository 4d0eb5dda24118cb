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
# --json output parses, and so does perftest's --out_json file; a failed
# --json run still prints a whole document, with an "error" object.
# --link-gbps paces MetaRoCE at the configured rate (sender's or, through
# the fair-share hint, receiver's).
# --verify catches one wrong byte sent on purpose (--corrupt) and names
# the QP, message and offset on both sides; --interval's JSON intervals
# add up to the run's total bytes, and its text lines come before the
# table.
set -u
# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "$0")/ns_lib.sh"

probe() { need_built "$PERF" && need_cmds unshare ip && need_unshare; }
ns_probe 1 probe "$@"
ns_unshare "$@"
ns_tmp perf
PORT=18600

# run TEST TRANSPORT SIZE ITERS [CLIENT-OPTION]
run() {
	local t=$1 tr=$2 size=$3 n=$4 extra=${5:-} out=$TMP/$1-$2${5:-}
	PORT=$((PORT + 1))
	perf_pair "$t $tr" "$out" "" $PORT \
		timeout 60 "$PERF" "$t" -p $PORT -s "$size" --transport "$tr" \
		--local 127.0.0.1 -- \
		timeout 60 "$PERF" "$t" -p $PORT -s "$size" -n "$n" --verify \
		--transport "$tr" $extra --local 127.0.0.2 127.0.0.1 || return
	grep -q "Transport type : $( [ "$tr" = rocev2 ] && echo RoCEv2 || echo MetaRoCE)" "$out" ||
		flunk "$t $tr: header lacks the transport"
	# The row after the column header, checked by position.
	local head row=$ROW
	head=$(grep -m1 '#bytes' "$out")
	case $t in
	*_bw)
		[ "$(echo "$head" | awk '{print $1, $2, $3, $4, $5, $6, $7}')" = \
		  "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]" ] ||
			flunk "$t $tr: bandwidth header '$head'"
		echo "$row" | awk -v s="$size" -v n="$n" '
			NF != 5 || $1 != s || $2 != n { exit 1 }
			$3 !~ /^[0-9.]+$/ || $4 !~ /^[0-9.]+$/ || $4 <= 0 { exit 1 }
			$5 !~ /^[0-9.]+$/ { exit 1 }' ||
			flunk "$t $tr: bandwidth row '$row'" ;;
	*_lat)
		echo "$head" | grep -q 't_min\[usec\] *t_max\[usec\] *t_typical\[usec\] *t_avg\[usec\] *t_stdev\[usec\] *99% percentile\[usec\] *99.9% percentile\[usec\]' ||
			flunk "$t $tr: latency header '$head'"
		echo "$row" | awk -v s="$size" -v n="$n" '
			NF != 9 || $1 != s || $2 != n { exit 1 }
			{ for (i = 3; i <= 9; i++) if ($i !~ /^[0-9.]+$/) exit 1 }
			$3 > $4 || $3 > $5 || $5 > $4 { exit 1 }' ||
			flunk "$t $tr: latency row '$row'" ;;
	esac
	grep -q "Spraying" "$out" || flunk "$t $tr: no spraying block"
	echo "ok: $t $tr: $row"
}

for tr in metaroce rocev2; do
	run write_bw $tr 12000 200
	run read_bw $tr 12000 200
	run send_bw $tr 12000 200
	run write_lat $tr 64 100
done
# --warmup: 50 more pings, checked by the server (its END count includes
# them) but not in the row's 100 iterations.
run write_lat metaroce 64 100 --warmup=50

# --json: one object with results, parsed by python3 (a dependency of the
# test suite: .ci/run installs it); a server that never listens fails.
PORT=$((PORT + 1))
"$PERF" send_bw -p $PORT -s 4096 --local 127.0.0.1 >/dev/null 2>&1 &
SPID=$!
if ! wait_listen "" $PORT "$SPID"; then
	flunk "json: the server never listened"
elif ! command -v python3 >/dev/null; then
	flunk "json: python3 is missing (needed to parse the output)"
else
	"$PERF" send_bw -p $PORT -s 4096 -n 50 --json --local 127.0.0.2 \
		--out_json --out_json_file="$TMP/perftest.json" \
		127.0.0.1 >"$TMP/json" 2>&1 || flunk "json run failed"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
assert d["results"][0]["iterations"] == 50, d
assert d["spray"]["paths"] >= 1, d
assert d["schema_version"] == 1 and d["tool"] == "mroce_perf", d
p=json.load(open(sys.argv[2]))["results"]
assert p["n_iterations"] == 50 and p["BW_average"] > 0, p' \
		"$TMP/json" "$TMP/perftest.json" ||
		{ flunk "json output"; cat "$TMP/json"; }
fi
wait "$SPID" 2>/dev/null
SPID=

# The configured line rate reaches the MetaRoCE engine and paces it:
# --link-gbps 0.5 on the sender (its pacing), then on the receiver only
# (the fair-share hint in its ACKs): the 2 s average stays under 0.5
# Gbit/s x 1.25, and the header shows the rate (loopback reports no speed:
# 100 Gbit/s unconfigured).
for who in client server; do
	PORT=$((PORT + 1))
	sl=() cl=()
	if [ $who = server ]; then sl=(--link-gbps 0.5); else cl=(--link-gbps 0.5); fi
	"$PERF" write_bw -p $PORT -s 65536 --local 127.0.0.1 "${sl[@]}" \
		>"$TMP/link-$who.srv" 2>&1 &
	SPID=$!
	wait_listen "" $PORT "$SPID" || flunk "link $who: no server"
	timeout 60 "$PERF" write_bw -p $PORT -s 65536 -D 2 --report_gbits \
		--local 127.0.0.2 "${cl[@]}" 127.0.0.1 >"$TMP/link-$who" 2>&1
	rc=$?
	wait "$SPID"
	SPID=
	g=$(grep -A1 '#bytes' "$TMP/link-$who" | tail -1 | awk '{ print $4 }')
	lr=$(sed -n 's/^ *Link rate *: \([0-9.]*\).*/\1/p' "$TMP/link-$who")
	want=0.5
	[ $who = server ] && want=100
	if [ $rc -eq 0 ] && [ "$lr" = $want ] &&
	   awk -v g="${g:-x}" 'BEGIN { exit !(g + 0 > 0 && g + 0 <= 0.625) }'; then
		echo "ok: --link-gbps 0.5 on the $who: $g Gbit/s (link rate $lr)"
	else
		flunk "--link-gbps 0.5 on the $who: exit $rc, $g Gbit/s, link rate $lr"
		cat "$TMP/link-$who"
	fi
done

# write_bw --probe: the last of 2 QPs times 8-byte WRITEs alone, then
# beside the other's bulk, on both transports and with --queue-us; the
# line after the table has both figures, from real samples, and the
# JSON the same under "probe".
for tr in metaroce rocev2; do for q in "" "--queue-us 100"; do
	[ $tr = rocev2 ] && [ -n "$q" ] && continue
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086
	"$PERF" write_bw -p $PORT -q 2 --transport $tr --local 127.0.0.1 $q \
		>"$TMP/probe.srv" 2>&1 &
	SPID=$!
	wait_listen "" $PORT "$SPID" || flunk "probe $tr: no server"
	# shellcheck disable=SC2086
	timeout 60 "$PERF" write_bw -p $PORT -q 2 -D 1 --probe --transport $tr \
		--local 127.0.0.2 $q --json 127.0.0.1 >"$TMP/probe" 2>&1
	rc=$?
	wait "$SPID"
	SPID=
	if [ $rc -eq 0 ] && python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["results"][0]["probe"]
assert p["idle_n"] >= 100 and p["loaded_n"] >= 1, p
assert 0 < p["idle_p50_us"] <= p["idle_p99_us"], p
assert 0 < p["loaded_p50_us"] <= p["loaded_p99_us"], p' "$TMP/probe"; then
		echo "ok: write_bw --probe ($tr $q)"
	else
		flunk "write_bw --probe ($tr $q): exit $rc"
		cat "$TMP/probe"
	fi
done; done

# One wrong byte on the wire (--corrupt: the client sends message 150
# with byte 4097 changed): write_bw's and send_bw's receiver checks fail
# the run with exit 1, and both sides name the QP, message and offset.
for t in write_bw send_bw; do
	for tr in metaroce rocev2; do
		PORT=$((PORT + 1))
		"$PERF" $t -p $PORT -s 12000 --transport $tr --local 127.0.0.1 \
			>"$TMP/bad-$t-$tr.srv" 2>&1 &
		SPID=$!
		wait_listen "" $PORT "$SPID" || flunk "$t $tr corrupt: no server"
		timeout 60 "$PERF" $t -p $PORT -s 12000 -n 300 --verify \
			--corrupt 150:4097 --transport $tr --local 127.0.0.2 \
			127.0.0.1 >"$TMP/bad-$t-$tr" 2>&1
		rc=$?
		wait "$SPID"
		src=$?
		SPID=
		want="verify FAILED at size 12000: 1 bad bytes; first: QP 0 (QPN 0x[0-9a-f]*), message 150, offset 4097: expected 0x[0-9a-f]*, got 0x"
		if [ $rc -ne 1 ] || ! grep -q "$want" "$TMP/bad-$t-$tr" ||
		   ! grep -q "$want" "$TMP/bad-$t-$tr.srv" ||
		   grep -q "Verify *: OK" "$TMP/bad-$t-$tr"; then
			flunk "$t $tr --corrupt: client exit $rc, server exit $src"
			sed 's/^/  client| /' "$TMP/bad-$t-$tr"
			sed 's/^/  server| /' "$TMP/bad-$t-$tr.srv"
		else
			echo "ok: $t $tr --corrupt 150:4097 caught"
		fi
	done
done

# --interval: text lines before the table, and in --json intervals whose
# bytes add up to the row's transferred_bytes (= iterations x size).
PORT=$((PORT + 1))
perf_pair "interval text" "$TMP/ivl" "" $PORT \
	timeout 60 "$PERF" write_bw -p $PORT -s 8192 --local 127.0.0.1 -- \
	timeout 60 "$PERF" write_bw -p $PORT -s 8192 -D 1 --interval 0.25 \
	--verify --local 127.0.0.2 127.0.0.1 &&
	{ [ "$(grep -c ' sec .* Gbits/sec$' "$TMP/ivl")" -ge 4 ] &&
	  [ "$(grep -A1 '#bytes' "$TMP/ivl" | tail -1 | awk '{print $1}')" = 8192 ] ||
		{ flunk "interval text lines"; cat "$TMP/ivl"; }; }
if command -v python3 >/dev/null; then
	for tr in metaroce rocev2; do
		PORT=$((PORT + 1))
		"$PERF" write_bw -p $PORT -s 8192 --transport $tr \
			--local 127.0.0.1 >/dev/null 2>&1 &
		SPID=$!
		wait_listen "" $PORT "$SPID" || flunk "interval $tr: no server"
		timeout 60 "$PERF" write_bw -p $PORT -s 8192 -D 1 \
			--interval 0.1 --json --verify --transport $tr \
			--local 127.0.0.2 127.0.0.1 >"$TMP/ivl-$tr.json" 2>&1 ||
			flunk "interval $tr json run failed"
		wait "$SPID"
		SPID=
		python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]
iv=r["intervals"]
assert r["transferred_bytes"] == r["iterations"] * 8192 > 0, r
assert sum(i["transferred_bytes"] for i in iv) == r["transferred_bytes"], iv
assert len(iv) >= 9 and iv[0]["start_s"] == 0, iv
assert all(abs(a["end_s"] - b["start_s"]) < 1e-6 for a, b in zip(iv, iv[1:])), iv
assert abs(iv[-1]["end_s"] - r["duration_s"]) < 2e-3, (iv[-1], r["duration_s"])
print("ok: interval json %s: %d intervals, %d bytes" % (sys.argv[2], len(iv), r["transferred_bytes"]))' \
			"$TMP/ivl-$tr.json" $tr ||
			{ flunk "interval $tr json"; cat "$TMP/ivl-$tr.json"; }
	done
fi

# Nobody listening: a named error and exit 1, quickly.
expect_exit 1 "[Rr]efused" "no-server case" \
	timeout 20 "$PERF" write_bw -p 1 --local 127.0.0.2 127.0.0.1
# ... and with --json a whole document that carries the error.
if command -v python3 >/dev/null; then
	timeout 20 "$PERF" write_bw -p 1 --json --local 127.0.0.2 127.0.0.1 \
		>"$TMP/json-err" 2>/dev/null
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
assert d["results"] == [] and "efused" in d["error"]["message"], d' \
		"$TMP/json-err" || { flunk "json error document"; cat "$TMP/json-err"; }
fi

# Bad arguments: exit 2 with a message.
usage_errors "$PERF" "write_bw -s 0" "nosuch_bw" "write_bw --transport ib" \
	"write_lat -q 2" "write_bw -n 5 -D 1" "write_bw --cycle_buffer 10" \
	"write_lat --interval 1" "write_bw --interval 0" "write_bw --interval x" \
	"write_bw --corrupt 1:2 h" "write_bw --verify --corrupt 1:2" \
	"read_bw --verify --corrupt 1:2 h" "write_bw --verify --corrupt 1:65536 h" \
	"write_bw --verify --corrupt 12 h" "write_bw --warmup 5" \
	"write_lat --warmup x" "write_bw --probe h" "write_lat -q 1 --probe h" \
	"write_bw -q 2 --probe --verify h" "read_bw -q 2 --probe h" \
	"write_bw --queue-us 0" "write_bw --queue-us x"

ns_summary perf_udp
