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
probe() { fab_probe && need_built "$PERF" "$CTL" && need_afxdp && need_cmds ss; }
FAB_PROBE=probe
# shellcheck source=tests/net/fabric_lib.sh
. tests/net/fabric_lib.sh

PORT=$((21000 + $$ % 20000))
# run TEST SIZE ITERS
run() {
	local t=$1 size=$2 n=$3 out want_mtu=1024
	[ "$FABRIC_MTU" = 9000 ] && want_mtu=8192
	PORT=$((PORT + 1))
	out=$TMP/$t.$FABRIC_MTU
	local dev=(--backend afxdp --ifname eth0 --transport metaroce
		--rto-min 1000)
	local what="$t metaroce afxdp fabric mtu $FABRIC_MTU"
	fab_mark
	perf_pair "$what" "$out" "$FABRIC_B_NS" $PORT \
		xdp_run --stats "$out.srvstats" "$FABRIC_B_NS" eth0 \
		timeout 90 "$PERF" $t -p $PORT -s $size "${dev[@]}" \
		--local "$FABRIC_B_IP" -- \
		xdp_run --stats "$out.stats" "$FABRIC_A_NS" eth0 \
		timeout 90 "$PERF" $t -p $PORT -s $size -n $n --verify "${dev[@]}" \
		--local "$FABRIC_A_IP" "$FABRIC_B_IP" || return
	grep -q "Mtu *: $want_mtu\[B\]" "$out" ||
		flunk "$what: payload MTU is not $want_mtu"
	# spraying seen by the fabric
	fab_spread
	[ $FAB_USED -ge 2 ] ||
		flunk "$what: no spraying on the fabric (packets per path:$FAB_SHARES)"
	# spraying as mroce_perf reports it: 8 paths, > 1 with packets
	perf_spray "$out"
	if [ $SPRAY_PATHS -ne 8 ] || [ $SPRAY_BUSY -lt 2 ]; then
		flunk "$what: spraying block: $SPRAY_PATHS paths, $SPRAY_BUSY with packets"
		sed -n '/Spraying/,$p' "$out" | sed 's/^/  client| /'
	fi
	# XDP: steered, nothing dropped for an unknown connection
	local cs cn ss sn
	cs=$(xdp_counter "$out.stats" redirect_data redirect_ack redirect_ctrl)
	ss=$(xdp_counter "$out.srvstats" redirect_data redirect_ack redirect_ctrl)
	cn=$(xdp_counter "$out.stats" drop_no_conn)
	sn=$(xdp_counter "$out.srvstats" drop_no_conn)
	if [ "$cs" -le 0 ] || [ "$ss" -le 0 ] || [ "$cn" -ne 0 ] || [ "$sn" -ne 0 ]; then
		flunk "$what: XDP steered client=$cs server=$ss," \
			"drop_no_conn client=$cn server=$sn"
		return
	fi
	echo "ok: $what: $ROW"
	echo "    fabric packets per path:$FAB_SHARES; perf: $SPRAY_BUSY of" \
		"$SPRAY_PATHS paths busy; xdp steered $cs/$ss, drop_no_conn 0/0;" \
		"$(sed -n 's/^ *Data packets *: //p' "$out")"
}

for mtu in 1500 9000; do
	bash $FABRIC down --prefix "$PREFIX" >/dev/null 2>&1
	fab_up --paths 4 --mtu $mtu
	run write_bw 65536 200
	run read_bw 65536 150
	run send_bw 65536 150
done

ns_summary afxdp_fabric
