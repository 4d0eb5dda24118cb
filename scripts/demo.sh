#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# demo.sh - MetaRoCE vs RoCEv2 over a lossy 4-path fabric (the README's
# main demo, run by `make demo` after it installed and built everything).
#
# Usage: scripts/demo.sh [--embedded] [--backend afxdp|udp] [--seconds S]
#                        [--help]
#
# Brings up scripts/fabric.sh's 4-path fabric (two hosts in network
# namespaces, MTU 9000), starts mroced on both hosts (AF_XDP on eth0 by
# default; --embedded: no daemons, the engines run inside mroce_perf),
# and runs mroce_perf write_bw --verify (64 KiB messages, S seconds,
# default 4) for MetaRoCE and RoCEv2: on the clean fabric, with 1% random
# loss on every path, and with the path that carries most of the traffic
# blackholed one second into the run (until the data phase is over: the
# TCP control connection of mroce_perf crosses the same fabric and must
# not share the fate of the data). Prints one comparison table, then
# removes the daemons, namespaces and everything else (also on Ctrl-C).
#
# Needs root. Environment: MROCE_BUILD (build directory, default build).
# Exit status: 0 if every MetaRoCE run completed and no run of either
# transport saw a wrong byte (a RoCEv2 error completion, e.g. when its
# QP's only path is the blackholed one, is a result shown in the table);
# 1 otherwise; 2 on bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="$PATH:/usr/sbin:/sbin"
B=${MROCE_BUILD:-build}
export MROCE_BUILD=$B
PERF=$B/bin/mroce_perf CTL=$B/bin/mrocectl MROCED=$B/bin/mroced
FABRIC=scripts/fabric.sh
DAEMON=1 BACKEND=afxdp SECS=4
while [ $# -gt 0 ]; do
	case "$1" in
	--embedded) DAEMON=0; shift ;;
	--backend) BACKEND=${2:-}; shift 2 || { echo "demo.sh: --backend needs a value" >&2; exit 2; } ;;
	--seconds) SECS=${2:-}; shift 2 || { echo "demo.sh: --seconds needs a value" >&2; exit 2; } ;;
	-h|--help) sed -n '4,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $BACKEND in afxdp|udp) ;; *) echo "demo.sh: --backend afxdp|udp" >&2; exit 2 ;; esac
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 2 ] || { echo "demo.sh: --seconds: 2 or more" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: needs root (network namespaces, XDP)" >&2; exit 1; }
for f in "$PERF" "$CTL"; do
	[ -x "$f" ] || { echo "demo.sh: $f missing: run make first" >&2; exit 1; }
done
[ $DAEMON -eq 0 ] || [ -x "$MROCED" ] || { echo "demo.sh: $MROCED missing: run make first" >&2; exit 1; }

PREFIX=dm$$
TMP=$(mktemp -d /tmp/mroce-demo.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	bash $FABRIC down --prefix "$PREFIX" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "mroce demo: bringing up a 4-path fabric ($PREFIX*) ..."
bash $FABRIC up --prefix "$PREFIX" --paths 4 --mtu 9000 >/dev/null ||
	{ echo "demo.sh: fabric.sh up failed" >&2; exit 1; }
eval "$(bash $FABRIC status --prefix "$PREFIX" --env)"

# host NS ATTACH CMD...: CMD in namespace NS with bpffs mounted (ip netns
# exec remounts /sys). ATTACH 1: mroce's XDP program attached afresh; 0:
# no XDP program on eth0; keep: leave eth0 as it is (the daemon's).
host() {
	local ns=$1 att=$2
	shift 2
	# Always started with &: exec, so that the pid the caller keeps (and
	# kills) is the program's own, not a subshell's that would leave the
	# program running.
	exec ip netns exec "$ns" bash -c '
		mount -t bpf bpf /sys/fs/bpf || exit 2
		[ '"$att"' = keep ] && exec "$@"
		'"$CTL"' detach eth0 >/dev/null 2>&1
		ip link set dev eth0 xdp off 2>/dev/null
		if [ '"$att"' = 1 ]; then
			'"$CTL"' attach eth0 >/dev/null ||
				{ echo "mrocectl attach eth0 failed"; exit 2; }
		fi
		exec "$@"' host "$@"
}

ATT=0
[ "$BACKEND" = afxdp ] && ATT=1
[ $DAEMON -eq 1 ] && ATT=keep
if [ $DAEMON -eq 1 ]; then
	echo "mroce demo: starting mroced ($BACKEND) on both hosts ..."
	for h in A B; do
		ns=FABRIC_${h}_NS ip=FABRIC_${h}_IP
		args=(--local "${!ip}" --sock "$TMP/mroced-$h.sock" --rto-min 1000)
		[ "$BACKEND" = afxdp ] && args+=(--backend afxdp --ifname eth0 --attach)
		host "${!ns}" 0 "$MROCED" "${args[@]}" >"$TMP/mroced-$h.log" 2>&1 &
		PIDS+=($!)
	done
	for h in A B; do
		for _ in $(seq 100); do [ -S "$TMP/mroced-$h.sock" ] && break; sleep 0.05; done
		[ -S "$TMP/mroced-$h.sock" ] || {
			echo "demo.sh: mroced on host $h did not start:" >&2
			cat "$TMP/mroced-$h.log" >&2
			exit 1
		}
	done
fi

PORT=$((22000 + $$ % 20000))
wait_listen() { # port pid
	for _ in $(seq 200); do
		kill -0 "$2" 2>/dev/null || return 1
		ip netns exec "$FABRIC_B_NS" ss -Hltn "sport = :$1" 2>/dev/null |
			grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# start TRANSPORT: write_bw --verify server (B) and client (A), background.
start() {
	local tr=$1 sdev cdev
	PORT=$((PORT + 1))
	OUT=$TMP/$tr-$PORT
	if [ $DAEMON -eq 1 ]; then
		sdev=(--daemon="$TMP/mroced-B.sock") cdev=(--daemon="$TMP/mroced-A.sock")
	else
		sdev=(--backend "$BACKEND" --rto-min 1000 --local "$FABRIC_B_IP")
		cdev=(--backend "$BACKEND" --rto-min 1000 --local "$FABRIC_A_IP")
		[ "$BACKEND" = afxdp ] && sdev+=(--ifname eth0) cdev+=(--ifname eth0)
	fi
	host "$FABRIC_B_NS" $ATT timeout 90 "$PERF" write_bw -p $PORT -s 65536 \
		-t 16 --transport "$tr" "${sdev[@]}" >"$OUT.srv" 2>&1 &
	SPID=$!
	PIDS+=($!)
	CPID=
	wait_listen $PORT $SPID || return 1
	host "$FABRIC_A_NS" $ATT timeout 90 "$PERF" write_bw -p $PORT -s 65536 \
		-t 16 -D "$SECS" --verify --report_gbits --transport "$tr" \
		"${cdev[@]}" "$FABRIC_B_IP" >"$OUT" 2>&1 &
	CPID=$!
	PIDS+=($!)
}

finish() { # -> RC
	RC=1
	if [ -n "$CPID" ]; then
		wait "$CPID"
		RC=$?
	fi
	[ $RC -eq 0 ] || { sleep 1; kill "$SPID" 2>/dev/null; }
	wait "$SPID" 2>/dev/null
}

path_tx() {
	ip netns exec "$FABRIC_LEAF1_NS" sh -c 'for j in 1 2 3 4; do
		cat /sys/class/net/p$j/statistics/tx_packets; done' | tr '\n' ' '
}

# Blackhole the path that carried most of the traffic over 0.3 s, once the
# run is about a second in; prints the path.
blackhole_busiest() {
	local a b j d max=-1 best=1
	for _ in $(seq 200); do
		grep -q "remote address" "$OUT" 2>/dev/null && break
		kill -0 "$CPID" 2>/dev/null || return 0
		sleep 0.05
	done
	sleep 0.7
	read -ra a <<<"$(path_tx)"
	sleep 0.3
	read -ra b <<<"$(path_tx)"
	for j in 1 2 3 4; do
		d=$((b[j - 1] - a[j - 1]))
		[ $d -le $max ] || { max=$d best=$j; }
	done
	bash $FABRIC impair --prefix "$PREFIX" --path $best --blackhole on >/dev/null
	echo $best
}

impair_all() {
	local j
	for j in 1 2 3 4; do
		bash $FABRIC impair --prefix "$PREFIX" --path $j "$@" >/dev/null ||
			{ echo "demo.sh: fabric.sh impair failed" >&2; exit 1; }
	done
}

MODE="mroced daemons, $BACKEND"
[ $DAEMON -eq 1 ] || MODE="embedded, $BACKEND"
FAIL=0
declare -A GP
LINES=()
for sc in clean loss1 blackhole; do
	case $sc in
	loss1) impair_all --loss 0.01 ;;
	blackhole) impair_all --loss 0 ;;
	esac
	for tr in metaroce rocev2; do
		echo "mroce demo: $tr, $sc ..."
		bh=
		if start $tr && [ $sc = blackhole ]; then
			bh=$(blackhole_busiest)
			# dead for the rest of the data phase; restored once the
			# result row is out, for mroce_perf's TCP control
			# connection (it crosses the same fabric)
			while kill -0 "$CPID" 2>/dev/null &&
			      ! grep -A1 '#bytes' "$OUT" | grep -q '^ *[0-9]'; do
				sleep 0.05
			done
			[ -z "$bh" ] || bash $FABRIC impair --prefix "$PREFIX" --path "$bh" --blackhole off >/dev/null
		fi
		finish
		row=$(grep -A1 -m1 '#bytes' "$OUT" 2>/dev/null | tail -1)
		gp=$(awk '$1 ~ /^[0-9]+$/ && NF == 5 { print $4 }' <<<"$row")
		[ -n "$gp" ] || gp=0
		GP[$tr.$sc]=$gp
		retx=$(sed -n 's/^ *Data packets *: [0-9]* sent, \([0-9]*\) retransmitted.*/\1/p' "$OUT" 2>/dev/null)
		err=$(grep -h -m1 'mroce_perf:' "$OUT" "$OUT.srv" 2>/dev/null | head -1 | sed 's/^mroce_perf: //')
		if grep -qi 'verify.*fail\|[1-9][0-9]* bad bytes' "$OUT" "$OUT.srv" 2>/dev/null; then
			res="DATA CORRUPTED" FAIL=1
		elif [ $RC -eq 0 ] && grep -q 'Verify *: OK' "$OUT"; then
			res="ok, verified"
		elif [ $tr = rocev2 ]; then
			res="error: ${err:-exit $RC}"
			[ $sc = blackhole ] && res="$res (expected: its only path)"
		else
			res="FAILED: ${err:-exit $RC}" FAIL=1
		fi
		case $sc in
		clean) name="clean" ;;
		loss1) name="1% loss on every path" ;;
		blackhole) name="busiest path (${bh:-?}) blackholed at 1 s" ;;
		esac
		rel=$(awk -v a="$gp" -v b="${GP[$tr.clean]}" 'BEGIN { if (b > 0) printf "%.0f%%", 100 * a / b; else print "-" }')
		LINES+=("$(printf '| %-9s | %-35s | %12s | %8s | %11s | %s |' \
			"$tr" "$name" "$gp" "$rel" "${retx:--}" "$res")")
	done
done

echo
echo "mroce demo: one connection, 64 KiB RDMA WRITEs for $SECS s each, every byte read back and checked; 4-path fabric of network namespaces, MTU 9000 ($MODE)"
echo
printf '| %-9s | %-35s | %12s | %8s | %11s | %s |\n' transport scenario \
	"goodput Gb/s" "vs clean" retransmits result
printf '|%s|%s|%s|%s|%s|%s|\n' ----------- ------------------------------------- \
	-------------- ---------- ------------- ----------------
for l in "${LINES[@]}"; do echo "$l"; done
echo
echo "MetaRoCE sprays each connection over many UDP source ports, so ECMP"
echo "spreads it over all four paths, and repairs losses selectively; RoCEv2"
echo "rides the one path its QP hashes to and goes back N on every loss."
echo "(Goodput includes reading every byte back for the check, so it is not"
echo "a benchmark: scripts/bench_e2e.sh measures without it.)"
exit $FAIL
