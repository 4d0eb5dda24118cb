#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# NAME
#     bench_loaded.sh - latency beside a bulk flow on the namespace fabric
#
# SYNOPSIS
#     scripts/bench_loaded.sh [--seconds S] [--rounds K] [--queue-us N]
#                             [--help]
#
# DESCRIPTION
#     Brings up a 4-path scripts/fabric.sh fabric (MTU 9000, AF_XDP,
#     embedded mode) and measures, between its two hosts, how long a small
#     message waits behind a bulk flow between the same hosts (issue #13):
#       MetaRoCE      mroce_perf write_bw alone (-q 1), then write_bw -q 2
#                     --probe: one QP of 64 KiB WRITEs and one 8-byte WRITE
#                     probe, in one process (post to completion: a round
#                     trip; alone first for the idle figures)
#       MetaRoCE, short queue
#                     the same with --queue-us N (100): each path's
#                     standing queue bounded by the round trip's smallest
#                     RTT sample
#       RoCEv2        the same as MetaRoCE
#       kernel TCP    the reference: iperf3 alone; mroce_blast --tcp
#                     --pingpong alone (idle); both together (loaded). The
#                     ping-pong's round trip is twice its half round trip
#     in each of K rounds, interleaved; the table shows the median round of
#     each figure. Per row: the idle and loaded round trip p50 / p99 (us),
#     loaded p99 / idle p99 (target <= 3), the bulk's goodput beside the
#     probe and alone (Gbit/s), and their ratio (target >= 0.9).
#     The fabric's hosts share this machine's cores with its routers:
#     every figure is from this run only, and the ratios compare runs
#     seconds apart.
#
# OPTIONS
#     --seconds S    length of each bulk run (3)
#     --rounds K     interleaved rounds (3)
#     --queue-us N   the short-queue row's mroce_perf --queue-us (100)
#     -h, --help     this text
#
# ENVIRONMENT
#     MROCE_BUILD    build directory (default build)
#
# EXIT STATUS
#     0 every run completed (missed targets are reported, not fatal);
#     1 a run failed or the fabric could not be set up; 2 bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="$PATH:/usr/sbin:/sbin"
B=${MROCE_BUILD:-build}
PERF=$B/bin/mroce_perf
CTL=$B/bin/mrocectl
BLAST=$B/bin/mroce_blast
FABRIC=scripts/fabric.sh

SECS=3 ROUNDS=3 QUS=100
usage() { echo "bench_loaded.sh: $*" >&2; echo "Try 'scripts/bench_loaded.sh --help'." >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=${2:-}; shift 2 || usage "--seconds needs a value" ;;
	--rounds) ROUNDS=${2:-}; shift 2 || usage "--rounds needs a value" ;;
	--queue-us) QUS=${2:-}; shift 2 || usage "--queue-us needs a value" ;;
	-h|--help) sed -n '4,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) usage "unknown argument '$1'" ;;
	esac
done
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 1 ] && [ "$SECS" -le 600 ] ||
	usage "--seconds: 1 to 600"
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] ||
	usage "--rounds: 1 to 20"
[[ $QUS =~ ^[0-9]+$ ]] && [ "$QUS" -ge 1 ] || usage "--queue-us: microseconds, 1 or more"
[ "$(id -u)" -eq 0 ] || { echo "bench_loaded.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for f in "$PERF" "$CTL" "$BLAST"; do
	[ -x "$f" ] || { echo "bench_loaded.sh: $f missing: run make" >&2; exit 1; }
done
command -v iperf3 >/dev/null ||
	{ echo "bench_loaded.sh: iperf3 missing: install the Debian package 'iperf3' (make deps)" >&2; exit 1; }

# shellcheck source=scripts/session.sh
. scripts/session.sh
session_start bl$$ loaded
bash $FABRIC up --prefix "$PREFIX" --paths 4 --mtu 9000 >/dev/null ||
	{ echo "bench_loaded.sh: fabric up failed" >&2; exit 1; }
eval "$(bash $FABRIC status --prefix "$PREFIX" --env)"
NS_A=$FABRIC_A_NS NS_B=$FABRIC_B_NS IP_A=$FABRIC_A_IP IP_B=$FABRIC_B_IP
FAILED=0

PORT=$((22000 + $$ % 20000))
# perf NAME ARGS...: a write_bw server on B and its client on A; the
# client's output in $TMP/NAME.$ROUND
perf() {
	local name=$1 out srv rc
	shift
	PORT=$((PORT + 1))
	out=$TMP/$name.$ROUND
	session_xdp "$NS_B" timeout 60 "$PERF" write_bw -D "$SECS" -p $PORT --backend afxdp \
		--ifname eth0 --local "$IP_B" "$@" >"$out.srv" 2>&1 &
	srv=$!
	PIDS+=($srv)
	if ! session_listening "$NS_B" $PORT $srv; then
		echo "bench_loaded.sh: $name: the server did not start: $(head -3 "$out.srv")" >&2
		FAILED=1
		return
	fi
	session_xdp "$NS_A" timeout 60 "$PERF" write_bw -D "$SECS" -p $PORT --backend afxdp \
		--ifname eth0 --local "$IP_A" --report_gbits "$@" "$IP_B" >"$out" 2>&1
	rc=$?
	wait $srv 2>/dev/null
	if [ $rc -ne 0 ]; then
		echo "bench_loaded.sh: $name failed (exit $rc): $(grep -m1 mroce_perf: "$out")" >&2
		FAILED=1
	fi
}

# tcp NAME: kernel TCP, iperf3 and/or the ping-pong (NAME: bulk, ping,
# both); output in $TMP/tcp-NAME.$ROUND(.ping)
tcp() {
	local name=$1 out=$TMP/tcp-$1.$ROUND is ic ps rc=0
	PORT=$((PORT + 1))
	if [ "$name" != ping ]; then
		ip netns exec "$NS_B" iperf3 -s -1 -p $PORT >/dev/null 2>&1 &
		is=$!
		PIDS+=($is)
		session_listening "$NS_B" $PORT $is || { FAILED=1; return; }
		ip netns exec "$NS_A" iperf3 -c "$IP_B" -p $PORT -t "$SECS" -J >"$out" 2>&1 &
		ic=$!
		PIDS+=($ic)
		sleep 0.5
	fi
	if [ "$name" != bulk ]; then
		PORT=$((PORT + 1))
		ip netns exec "$NS_B" "$BLAST" --tcp --pingpong --rx --dport $PORT \
			--seconds $((SECS + 5)) >/dev/null 2>&1 &
		ps=$!
		PIDS+=($ps)
		session_listening "$NS_B" $PORT $ps || { FAILED=1; return; }
		ip netns exec "$NS_A" "$BLAST" --tcp --pingpong --tx --dst "$IP_B" \
			--dport $PORT --size 8 --count $((SECS * 2000)) --json >"$out.ping" 2>&1 || rc=1
		wait $ps 2>/dev/null
	fi
	[ "$name" = ping ] || wait "$ic" || rc=1
	[ $rc -eq 0 ] || { echo "bench_loaded.sh: TCP $name failed" >&2; FAILED=1; }
}

# readers: one number, or "-" when the run left none
bw() { grep -A1 -m1 '^ #bytes' "$1" 2>/dev/null | tail -1 | awk '$1 ~ /^[0-9]+$/ { print $4 }'; }
probe() { # FILE idle|loaded p50|p99
	sed -n "s/.* $2 p50 \([0-9.]*\) p99 \([0-9.]*\).*/\1 \2/p" "$1" 2>/dev/null |
		awk -v w="$3" '{ print (w == "p50") ? $1 : $2 }'; }
iperf_bw() { sed -n 's/.*"bits_per_second":[[:space:]]*\([0-9.e+]*\).*/\1/p' "$1" 2>/dev/null |
	tail -1 | awk '{ printf "%.2f", $1 / 1e9 }'; }
# the ping-pong's round trip: twice its half round trip
ping_rtt() { sed -n "s/.*\"half_rtt_$2_us\":[[:space:]]*\([0-9.]*\).*/\1/p" "$1" 2>/dev/null |
	awk '{ printf "%.2f", 2 * $1 }'; }
or_dash() { local v; v=$("$@"); echo "${v:--}"; }

declare -A V
for ROUND in $(seq "$ROUNDS"); do
	echo "round $ROUND/$ROUNDS" >&2
	for row in mr mrq rv; do
		case $row in
		mr) a=(--transport metaroce) ;;
		mrq) a=(--transport metaroce --queue-us "$QUS") ;;
		rv) a=(--transport rocev2) ;;
		esac
		perf "$row-alone" "${a[@]}"
		perf "$row-probe" "${a[@]}" -q 2 --probe
		f=$TMP/$row-probe.$ROUND
		V[$row,alone]+=" $(or_dash bw "$TMP/$row-alone.$ROUND")"
		V[$row,with]+=" $(or_dash bw "$f")"
		for w in idle loaded; do for p in p50 p99; do
			V[$row,$w$p]+=" $(or_dash probe "$f" $w $p)"
		done; done
	done
	tcp bulk
	tcp ping
	tcp both
	V[tcp,alone]+=" $(or_dash iperf_bw "$TMP/tcp-bulk.$ROUND")"
	V[tcp,with]+=" $(or_dash iperf_bw "$TMP/tcp-both.$ROUND")"
	for p in p50 p99; do
		V[tcp,idle$p]+=" $(or_dash ping_rtt "$TMP/tcp-ping.$ROUND.ping" $p)"
		V[tcp,loaded$p]+=" $(or_dash ping_rtt "$TMP/tcp-both.$ROUND.ping" $p)"
	done
done

# med VALUES...: the median ("-" when any run left none)
med() { case " $* " in *" - "*|"  ") echo -; return ;; esac
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
	END { printf "%.2f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "-" && b != "-" && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

echo "## Loaded latency on the namespace fabric ($ROUNDS rounds, ${SECS} s runs, median round)"
echo
echo "| bulk flow and probe | idle round trip p50 / p99 us | loaded p50 / p99 us | loaded p99 / idle p99 | bulk beside the probe / alone Gbit/s | ratio | targets |"
echo "|---|---|---|---|---|---|---|"
for row in mr mrq rv tcp; do
	case $row in
	mr) label="MetaRoCE write_bw + 8 B WRITE probe" ;;
	mrq) label="MetaRoCE, --queue-us $QUS" ;;
	rv) label="RoCEv2 write_bw + 8 B WRITE probe" ;;
	tcp) label="kernel TCP: iperf3 + TCP ping-pong (reference)" ;;
	esac
	# shellcheck disable=SC2086
	{ i50=$(med ${V[$row,idlep50]}); i99=$(med ${V[$row,idlep99]})
	  l50=$(med ${V[$row,loadedp50]}); l99=$(med ${V[$row,loadedp99]})
	  g=$(med ${V[$row,with]}); g0=$(med ${V[$row,alone]}); }
	pr=$(div "$l99" "$i99") gr=$(div "$g" "$g0") miss=""
	awk -v r="$pr" 'BEGIN { exit !(r != "-" && r + 0 <= 3) }' || miss+=" p99"
	awk -v r="$gr" 'BEGIN { exit !(r != "-" && r + 0 >= 0.9) }' || miss+=" goodput"
	[ "$row" = tcp ] && tgt="(reference${miss:+; missed:$miss})" || tgt="${miss:+missed:}${miss:-yes}"
	echo "| $label | $i50 / $i99 | $l50 / $l99 | $pr | $g / $g0 | $gr | $tgt |"
done
echo
echo "(Round trips: mroce_perf --probe times an 8-byte WRITE from post to"
echo "completion; the TCP ping-pong's figure is twice mroce_blast's half round"
echo "trip. Goodput of the bulk QP or iperf3 only.)"
exit $FAILED
