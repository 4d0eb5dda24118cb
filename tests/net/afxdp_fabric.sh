#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# afxdp_fabric.sh - MetaRoCE over AF_XDP across the 4-path namespace fabric
# (scripts/fabric.sh, docs/fabric.md): libmroce in embedded mode on hosts A
# and B, `mrocectl attach eth0` on both, the endpoint registering each
# connection id with the XDP program from the engine's events.
#
#   tests/net/afxdp_fabric.sh           run (needs root, netns, XDP, AF_XDP,
#                                       tc, nft, bpftool, ethtool)
#   tests/net/afxdp_fabric.sh --probe   exit 77 with a one-line reason when
#                                       the test cannot run here, else 0
#
# At MTU 1500 and 9000: mroce_perf write_bw, read_bw and send_bw with
# --verify between A and B must pass, and
#  - spraying happened: the leaves' per-path packet counters show the
#    run's packets on at least two of the four paths (ECMP hashes the
#    source port; one path alone would mean no spraying), and mroce_perf's
#    spraying block lists 8 paths with packets on more than one source port;
#  - the XDP counters of both ends (`mrocectl stats --json`, read in the
#    session that attached) show packets steered to the socket and none
#    dropped for an unknown connection (drop_no_conn 0) in these clean runs.
set -u
FAB_TAG=xf
# shellcheck source=tests/net/fabric_lib.sh
. tests/net/fabric_lib.sh

PERF=$B/bin/mroce_perf
CTL=$B/bin/mrocectl
[ -x "$PERF" ] && [ -x "$CTL" ] || { echo "cannot run: $PERF or $CTL not built"; exit 77; }
perl -e 'use Socket; socket(my $s, 44, 3, 0) or exit 1' 2>/dev/null ||
	{ echo "cannot run: no AF_XDP sockets in this kernel"; exit 77; }
command -v ss >/dev/null 2>&1 || { echo "cannot run: 'ss' is not installed"; exit 77; }

SPID=
cleanup_all() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	fab_cleanup
}
trap cleanup_all EXIT

# host NS OUTSTATS CMD...: CMD in a session of NS with bpffs mounted and
# mroce attached afresh to eth0; after CMD the XDP counters go to OUTSTATS
# (the pins vanish with the session). Exit status: CMD's.
host() {
	local ns=$1 st=$2
	shift 2
	ip netns exec "$ns" bash -c '
		mount -t bpf bpf /sys/fs/bpf || exit 2
		'"$CTL"' detach eth0 >/dev/null 2>&1
		'"$CTL"' attach eth0 >/dev/null || { echo "attach failed"; exit 2; }
		"$@"; rc=$?
		'"$CTL"' stats eth0 --json >'"$st"'
		exit $rc' host "$@"
}

# counter FILE NAME...: sum of the named counters of a stats dump
counter() {
	local f=$1 sum=0 v
	shift
	for c in "$@"; do
		v=$(grep -o "\"$c\": *[0-9]*" "$f" | grep -o "[0-9]*$") || v=
		[ -n "$v" ] || { echo -1; return; }
		sum=$((sum + v))
	done
	echo $sum
}

wait_listen() { # port pid
	for _ in $(seq 200); do
		kill -0 "$2" 2>/dev/null || return 1
		ip netns exec "$FABRIC_B_NS" ss -Hltn "sport = :$1" 2>/dev/null |
			grep -q . && return 0
		sleep 0.05
	done
	return 1
}

path_pkts() { # j: packets on path j both ways so far
	local a b
	a=FABRIC_P${1}_TX12 b=FABRIC_P${1}_TX21
	echo $((${!a:-0} + ${!b:-0}))
}

FAILS=0
PORT=$((21000 + $$ % 20000))
# run TEST SIZE ITERS
run() {
	local t=$1 size=$2 n=$3 out rc src want_mtu=1024
	[ "$FABRIC_MTU" = 9000 ] && want_mtu=8192
	PORT=$((PORT + 1))
	out=$TMP/$t.$FABRIC_MTU
	local dev=(--backend afxdp --ifname eth0 --transport metaroce
		--rto-min 1000)
	local before=() j
	fab_counters
	for j in 1 2 3 4; do before[j]=$(path_pkts $j); done
	host "$FABRIC_B_NS" "$out.srvstats" timeout 90 "$PERF" $t -p $PORT \
		-s $size "${dev[@]}" --local "$FABRIC_B_IP" >"$out.srv" 2>&1 &
	SPID=$!
	wait_listen $PORT $SPID || { cat "$out.srv"; fail "$t: server did not listen"; }
	host "$FABRIC_A_NS" "$out.stats" timeout 90 "$PERF" $t -p $PORT \
		-s $size -n $n --verify "${dev[@]}" --local "$FABRIC_A_IP" \
		"$FABRIC_B_IP" >"$out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || { sleep 1; kill $SPID 2>/dev/null; }
	wait $SPID
	src=$?
	SPID=
	local what="$t metaroce afxdp fabric mtu $FABRIC_MTU"
	if [ $rc -ne 0 ] || [ $src -ne 0 ] || ! grep -q "Verify *: OK" "$out"; then
		echo "FAIL: $what: client $rc, server $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$out.srv"
		FAILS=$((FAILS + 1))
		return
	fi
	grep -q "Mtu *: $want_mtu\[B\]" "$out" ||
		{ echo "FAIL: $what: payload MTU is not $want_mtu"; FAILS=$((FAILS + 1)); }
	# spraying seen by the fabric
	local tot=0 used=0 shares="" d
	fab_counters
	for j in 1 2 3 4; do
		d[j]=$(($(path_pkts $j) - before[j]))
		tot=$((tot + d[j]))
	done
	for j in 1 2 3 4; do
		[ $tot -gt 0 ] && [ $((d[j] * 20)) -ge $tot ] && used=$((used + 1))
		shares="$shares p$j=${d[j]}"
	done
	if [ $used -lt 2 ]; then
		echo "FAIL: $what: no spraying on the fabric (packets per path:$shares)"
		FAILS=$((FAILS + 1))
	fi
	# spraying as mroce_perf reports it: 8 paths, > 1 with packets
	local np busy
	np=$(sed -n 's/^ *Spraying *: MetaRoCE, \([0-9]*\) paths.*/\1/p' "$out")
	busy=$(awk '/^ path  sport/ { on = 1; next } on && NF >= 4 && $4 > 0 { n++ }
		/^---/ { on = 0 } END { print n + 0 }' "$out")
	if [ "${np:-0}" -ne 8 ] || [ "$busy" -lt 2 ]; then
		echo "FAIL: $what: spraying block: ${np:-?} paths, $busy with packets"
		sed -n '/Spraying/,$p' "$out" | sed 's/^/  client| /'
		FAILS=$((FAILS + 1))
	fi
	# XDP: steered, nothing dropped for an unknown connection
	local cs cn ss sn
	cs=$(counter "$out.stats" redirect_data redirect_ack redirect_ctrl)
	ss=$(counter "$out.srvstats" redirect_data redirect_ack redirect_ctrl)
	cn=$(counter "$out.stats" drop_no_conn)
	sn=$(counter "$out.srvstats" drop_no_conn)
	if [ "$cs" -le 0 ] || [ "$ss" -le 0 ] || [ "$cn" -ne 0 ] || [ "$sn" -ne 0 ]; then
		echo "FAIL: $what: XDP steered client=$cs server=$ss," \
			"drop_no_conn client=$cn server=$sn"
		FAILS=$((FAILS + 1))
		return
	fi
	echo "ok: $what: $(grep -A1 -m1 '#bytes' "$out" | tail -1 | tr -s ' ')"
	echo "    fabric packets per path:$shares; perf: $busy of $np paths busy;" \
		"xdp steered $cs/$ss, drop_no_conn 0/0;" \
		"$(sed -n 's/^ *Data packets *: //p' "$out")"
}

for mtu in 1500 9000; do
	bash $FABRIC down --prefix "$PREFIX" >/dev/null 2>&1
	fab_up --paths 4 --mtu $mtu
	run write_bw 65536 200
	run read_bw 65536 150
	run send_bw 65536 150
done

[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "afxdp_fabric: all passed"
