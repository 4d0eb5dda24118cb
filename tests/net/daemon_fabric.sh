#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# daemon_fabric.sh - mroced over AF_XDP across the 4-path namespace fabric
# (scripts/fabric.sh, docs/fabric.md): one daemon per host namespace with
# `--backend afxdp --ifname eth0 --attach`, mroce_perf --daemon as the
# applications.
#
#   tests/net/daemon_fabric.sh           run (root, netns, XDP, AF_XDP, tc,
#                                        nft, bpftool, ethtool)
#   tests/net/daemon_fabric.sh --probe   exit 77 with a one-line reason
#                                        when it cannot run here
#
# The hosts' links have 2 queues each way (fabric.sh --queues 2), so each
# daemon binds one AF_XDP socket per queue (the afxdp default, --queue
# all). write_bw and send_bw with --verify from A to B must pass for both
# transports; for MetaRoCE the run must be sprayed: the leaves' per-path
# counters show packets on at least two of the four paths, and mroce_perf's
# spraying block lists 8 paths, more than one with packets. Then 1% random
# loss on every path: MetaRoCE write_bw and send_bw must still pass, the
# fabric must have dropped packets. SIGTERM ends both daemons with exit 0
# and the XDP program detached, and both queues of each daemon received
# packets (its exit log).
set -u
FAB_TAG=xd
probe() {
	fab_probe && need_built "$PERF" "$CTL" "$MROCED" && need_afxdp &&
		need_cmds ss
}
FAB_PROBE=probe
# shellcheck source=tests/net/fabric_lib.sh
. tests/net/fabric_lib.sh

SA=$TMP/a.sock SB=$TMP/b.sock
PORT=$((23000 + $$ % 20000))
run() { # TEST TRANSPORT
	local t=$1 tr=$2 out=$TMP/$1.$2
	PORT=$((PORT + 1))
	fab_mark
	perf_pair "$t $tr" "$out" "$FABRIC_B_NS" $PORT \
		ip netns exec "$FABRIC_B_NS" timeout 90 "$PERF" $t --daemon="$SB" \
		-p $PORT -s 65536 --transport $tr -- \
		ip netns exec "$FABRIC_A_NS" timeout 90 "$PERF" $t --daemon="$SA" \
		-p $PORT -s 65536 -n 150 --verify --transport $tr \
		"$FABRIC_B_IP" || return
	fab_spread
	if [ $tr = metaroce ]; then
		perf_spray "$out"
		if [ $FAB_USED -lt 2 ] || [ $SPRAY_PATHS -ne 8 ] ||
		   [ $SPRAY_BUSY -lt 2 ]; then
			flunk "$t $tr: not sprayed (fabric:$FAB_SHARES;" \
				"perf: $SPRAY_BUSY of $SPRAY_PATHS paths busy)"
			return
		fi
	fi
	echo "ok: $t $tr via mroced: $ROW"
	echo "    fabric packets per path:$FAB_SHARES"
}

fab_up --paths 4 --mtu 1500 --queues 2
for h in A B; do
	ns=FABRIC_${h}_NS ip=FABRIC_${h}_IP sock=S$h
	mroced_start DP$h "${!ns}" "${!sock}" --backend afxdp --ifname eth0 \
		--attach --local "${!ip}" --rto-min 1000 ||
		fail "mroced in ${!ns} did not start"
done
for h in a b; do
	grep -q "afxdp eth0, 2 queues" "$TMP/mroced-$h.log" ||
		{ cat "$TMP/mroced-$h.log"; fail "$h: the daemon does not use 2 queues"; }
done
for tr in metaroce rocev2; do
	run write_bw $tr
	run send_bw $tr
done
for j in $(seq "$FABRIC_PATHS"); do
	bash $FABRIC impair --prefix "$PREFIX" --path "$j" --loss 0.01 ||
		fail "impair path $j"
done
d0=$(fab_drops)
echo "1% loss on every path:"
run write_bw metaroce
run send_bw metaroce
d=$(($(fab_drops) - d0))
echo "    dropped by the fabric: $d packets"
[ $d -gt 0 ] || flunk "1% loss: the fabric dropped nothing"
mroced_stop DPA DPB
xdp_gone "$FABRIC_A_NS" eth0
xdp_gone "$FABRIC_B_NS" eth0
# Both sockets of each daemon received packets (B: data, A: ACKs).
for h in a b; do
	for q in 0 1; do
		pk=$(sed -n "s/.*queue $q: rx \([0-9]*\) pkts.*/\1/p" "$TMP/mroced-$h.log")
		echo "    daemon $h, queue $q: rx ${pk:-?} packets"
		[ -n "$pk" ] && [ "$pk" -gt 0 ] || flunk "$h: queue $q received no packets"
	done
done

ns_summary daemon_fabric "$TMP"/mroced-*.log
