#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# NAME
#     bench_incast.sh - K senders into one receiver on the namespace fabric
#
# SYNOPSIS
#     scripts/bench_incast.sh [--senders K] [--rate R] [--ecn-rate R]
#                             [--ecn-thresh B] [--seconds S] [--rounds N]
#                             [--help]
#
# DESCRIPTION
#     Brings up a scripts/fabric.sh fabric of K+1 hosts (K senders on leaf
#     1, the receiver on leaf 2; 4 paths, MTU 9000), every path limited to
#     --rate by tbf and marked by the fabric's ECN marker (a phantom queue
#     draining at --ecn-rate), so that the paths, not the CPUs, are the
#     bottleneck: the receiver can take 4 x --rate. The receiver runs one
#     mroced (AF_XDP, --link-gbps 4 x --rate: the rate its fair-share
#     hint divides) serving K mroce_perf write_bw servers; each sender
#     one mroce_perf write_bw (embedded, AF_XDP), all started together,
#     for --seconds. Per round and transport: each sender's goodput,
#     Jain's index over them, their sum as a share of 4 x --rate, and what
#     the fabric counted (CE marks, drops) and the senders heard (CE
#     echoed; drops by the tbf queues and nftables). Targets for MetaRoCE
#     (issue #13): Jain >= 0.95, goodput >= 0.9 of 4 x --rate; RoCEv2 is
#     the reference.
#
# OPTIONS
#     --senders K    senders (3)
#     --rate R       tbf rate of every path (300mbit)
#     --ecn-rate R   the markers' drain rate (default --rate: the phantom
#                    queue is the tbf queue, marking once it holds
#                    --ecn-thresh)
#     --ecn-thresh B the markers' phantom queue length that starts marking,
#                    bytes (300000: a software sender's pacing burst is 32
#                    packets, 288 KiB at MTU 9000)
#     --seconds S    length of each run (5)
#     --rounds N     rounds, each both transports (2)
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
MROCED=$B/bin/mroced
FABRIC=scripts/fabric.sh

K=3 RATE=300mbit ERATE= ETH=300000 SECS=5 ROUNDS=2
usage() { echo "bench_incast.sh: $*" >&2; echo "Try 'scripts/bench_incast.sh --help'." >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--senders) K=${2:-}; shift 2 || usage "--senders needs a value" ;;
	--rate) RATE=${2:-}; shift 2 || usage "--rate needs a value" ;;
	--ecn-rate) ERATE=${2:-}; shift 2 || usage "--ecn-rate needs a value" ;;
	--ecn-thresh) ETH=${2:-}; shift 2 || usage "--ecn-thresh needs a value" ;;
	--seconds) SECS=${2:-}; shift 2 || usage "--seconds needs a value" ;;
	--rounds) ROUNDS=${2:-}; shift 2 || usage "--rounds needs a value" ;;
	-h|--help) sed -n '4,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) usage "unknown argument '$1'" ;;
	esac
done
[[ $K =~ ^[0-9]+$ ]] && [ "$K" -ge 2 ] && [ "$K" -le 8 ] || usage "--senders: 2 to 8"
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 2 ] && [ "$SECS" -le 600 ] || usage "--seconds: 2 to 600"
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || usage "--rounds: 1 to 20"
[[ $ETH =~ ^[0-9]+$ ]] && [ "$ETH" -ge 1 ] || usage "--ecn-thresh: bytes"
ERATE=${ERATE:-$RATE}
for r in "$RATE" "$ERATE"; do
	[[ $r =~ ^[0-9]+[kmg]?bit$ ]] || usage "--rate / --ecn-rate: e.g. 300mbit"
done
[ "$(id -u)" -eq 0 ] || { echo "bench_incast.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for f in "$PERF" "$CTL" "$MROCED"; do
	[ -x "$f" ] || { echo "bench_incast.sh: $f missing: run make" >&2; exit 1; }
done
# bits per second of a tc rate
bps() { awk -v r="$1" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1, 1)
	printf "%.0f", n * (u == "k" ? 1e3 : u == "m" ? 1e6 : u == "g" ? 1e9 : 1) }'; }
CAP=$(awk -v r="$(bps "$RATE")" 'BEGIN { printf "%.3f", 4 * r / 1e9 }')

# shellcheck source=scripts/session.sh
. scripts/session.sh
session_start bi$$ incast
bash $FABRIC up --prefix "$PREFIX" --hosts $((K + 1)) --paths 4 --mtu 9000 \
	--rate "$RATE" --ecn-rate "$ERATE" --ecn-thresh "$ETH" >/dev/null ||
	{ echo "bench_incast.sh: fabric up failed" >&2; exit 1; }
eval "$(bash $FABRIC status --prefix "$PREFIX" --env)"
RNS=$FABRIC_B_NS RIP=$FABRIC_B_IP
FAILED=0

SOCK=$TMP/mroced.sock
# The receiver's line rate is what it can take through the paths (a veth
# reports none, and tbf is not the interface's): its fair-share hint
# divides that among the senders.
session_xdp "$RNS" --keep "$MROCED" --sock "$SOCK" --backend afxdp --ifname eth0 \
	--attach --local "$RIP" --rto-min 2000 --link-gbps "$CAP" \
	>"$TMP/mroced.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
	ip netns exec "$RNS" "$CTL" daemon --sock "$SOCK" >/dev/null 2>&1 && break
	sleep 0.1
done
ip netns exec "$RNS" "$CTL" daemon --sock "$SOCK" >/dev/null 2>&1 ||
	{ cat "$TMP/mroced.log" >&2; echo "bench_incast.sh: mroced did not start" >&2; exit 1; }

# counters: "CE ECT DROPS" summed over the paths, leaf 1 -> leaf 2; drops
# are the nftables rules' and the tbf queues' (the paths' ports on leaf 1)
counters() {
	eval "$(bash $FABRIC counters --prefix "$PREFIX")"
	local j c=0 e=0 d=0 v
	for j in 1 2 3 4; do
		v=FABRIC_P${j}_CE12 c=$((c + ${!v}))
		v=FABRIC_P${j}_ECT12 e=$((e + ${!v}))
		v=FABRIC_P${j}_DROP12 d=$((d + ${!v}))
		v=FABRIC_P${j}_IF
		d=$((d + $(ip netns exec "$FABRIC_LEAF1_NS" tc -s qdisc show dev "${!v}" |
			sed -n 's/.*dropped \([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')))
	done
	echo "$c $e $d"
}

PORT=$((24000 + $$ % 20000))
# incast TRANSPORT: K servers on the receiver (through its mroced), K
# clients started together; sets G (per-sender goodputs), ECHO (CE the
# senders heard), CE / ECT / DROPS (the fabric's, during the run)
incast() {
	local tr=$1 i ns ip port spids=() cpids=() c0 e0 d0 c1 e1 d1 rc
	G=() ECHO=0
	read -r c0 e0 d0 <<<"$(counters)"
	for i in $(seq "$K"); do
		port=$((PORT + i))
		ip netns exec "$RNS" timeout $((SECS + 60)) "$PERF" write_bw -p $port \
			--daemon="$SOCK" --transport "$tr" >"$TMP/srv.$tr.$i" 2>&1 &
		spids+=($!)
		PIDS+=($!)
	done
	for i in $(seq "$K"); do
		session_listening "$RNS" $((PORT + i)) "${spids[$((i - 1))]}" ||
			echo "bench_incast.sh: $tr server $i did not start" >&2
	done
	for i in $(seq "$K"); do
		ns=FABRIC_H${i}_NS ip=FABRIC_H${i}_IP
		session_xdp "${!ns}" timeout $((SECS + 60)) "$PERF" write_bw -p $((PORT + i)) \
			-D "$SECS" --transport "$tr" --backend afxdp --ifname eth0 \
			--local "${!ip}" --rto-min 2000 --report_gbits "$RIP" \
			>"$TMP/cli.$tr.$i" 2>&1 &
		cpids+=($!)
		PIDS+=($!)
	done
	for i in $(seq "$K"); do
		wait "${cpids[$((i - 1))]}"
		rc=$?
		wait "${spids[$((i - 1))]}" 2>/dev/null
		g=$(grep -A1 -m1 '^ #bytes' "$TMP/cli.$tr.$i" | tail -1 | awk '$1 ~ /^[0-9]+$/ { print $4 }')
		if [ $rc -ne 0 ] || [ -z "$g" ]; then
			[ "$tr" = metaroce ] && FAILED=1
			echo "bench_incast.sh: $tr sender $i: exit $rc: $(grep -m1 mroce_perf: "$TMP/cli.$tr.$i")" >&2
			g=-
		fi
		G+=("$g")
		e=$(sed -n 's/^ *Data packets *: .*timeouts, \([0-9]*\) CE-marked.*/\1/p' "$TMP/cli.$tr.$i")
		ECHO=$((ECHO + ${e:-0}))
	done
	read -r c1 e1 d1 <<<"$(counters)"
	CE=$((c1 - c0)) ECT=$((e1 - e0)) DROPS=$((d1 - d0))
	PORT=$((PORT + K))
}

# jain / sum of the goodputs ("-" when a sender failed)
jain() { case " $* " in *" - "*) echo -; return ;; esac
	printf '%s\n' "$@" | awk '{ s += $1; q += $1 * $1 } END { if (q > 0) printf "%.4f", s * s / (NR * q); else print "-" }'; }
total() { case " $* " in *" - "*) echo -; return ;; esac
	printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.3f", s }'; }

echo "## $K:1 incast on the namespace fabric: 4 paths x $RATE (tbf), ECN marker at $ERATE above $ETH bytes"
echo
echo "Receiver: one mroced (AF_XDP, --link-gbps $CAP) serving $K mroce_perf servers; senders:"
echo "mroce_perf write_bw, embedded AF_XDP, ${SECS} s, started together. The"
echo "receiver can take 4 x $RATE = $CAP Gbit/s."
echo
echo "| round | transport | per-sender Gbit/s | Jain | total, share of $CAP Gbit/s | CE marked / ECN-capable (fabric) | CE echoed to the senders | drops | targets |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $(seq "$ROUNDS"); do for tr in metaroce rocev2; do
	incast "$tr"
	j=$(jain "${G[@]}") t=$(total "${G[@]}")
	sh=$(awk -v t="$t" -v c="$CAP" 'BEGIN { if (t != "-") printf "%.3f", t / c; else print "-" }')
	miss=""
	awk -v j="$j" 'BEGIN { exit !(j != "-" && j + 0 >= 0.95) }' || miss+=" Jain"
	awk -v s="$sh" 'BEGIN { exit !(s != "-" && s + 0 >= 0.9) }' || miss+=" goodput"
	if [ "$tr" = metaroce ]; then tgt="${miss:+missed:}${miss:-yes}"; else tgt="(reference)"; fi
	echo "| $r | $tr | ${G[*]} | $j | $t ($sh) | $CE / $ECT | $ECHO | $DROPS | $tgt |"
done; done
exit $FAILED
