#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# daemon_afxdp.sh - mroced over AF_XDP: two namespaces joined by a veth
# pair (one queue each end, static neighbours, names unique to this run,
# removed by a trap); in each, mroced --backend afxdp --attach owns the
# interface (it attaches the XDP program itself and detaches it on exit);
# mroce_perf --daemon runs in the namespaces as the applications.
#
#   tests/net/daemon_afxdp.sh           run (root, veth, XDP, AF_XDP)
#   tests/net/daemon_afxdp.sh --probe   exit 77 with a one-line reason when
#                                       the test cannot run here
#
# For both transports at MTU 1500 and 9000 (multi-buffer AF_XDP):
# write_bw --verify and send_bw --verify; the payload MTU follows the
# interface (1024 / 8192 B). The MetaRoCE connection's conns entry names
# the peer's address. Then SIGTERM: both daemons exit 0, their
# sockets are gone and the XDP program is detached from both interfaces.
set -u
# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "$0")/ns_lib.sh"

probe() {
	need_root "netns, XDP, AF_XDP" && need_cmds ip &&
		need_built "$CTL" "$PERF" "$MROCED" && need_netns mdp && need_afxdp
}
ns_probe 77 probe "$@"

IPA=10.252.0.1 IPB=10.252.0.2
ns_tmp dafx
SA=$TMP/a.sock SB=$TMP/b.sock
ns_pair mdx$$ $IPA $IPB
ns_neigh $IPA $IPB

# daemons_up: mroced in each namespace owns its interface (--attach)
daemons_up() {
	mroced_start DPA $NSA $SA --backend afxdp --ifname $IFA --attach \
		--local $IPA --rto-min 20000 || fail "mroced A did not start"
	mroced_start DPB $NSB $SB --backend afxdp --ifname $IFB --attach \
		--local $IPB --rto-min 20000 || fail "mroced B did not start"
}

# daemons_down: SIGTERM, exit 0, socket gone, XDP detached.
daemons_down() {
	mroced_stop DPA DPB
	[ -e $SA ] || [ -e $SB ] && flunk "socket left"
	xdp_gone $NSA $IFA
	xdp_gone $NSB $IFB
}

# conns_name_the_peer: the MetaRoCE connection's entry in A's conns map,
# written by the daemon's endpoint when the connection came up, holds
# B's address (the XDP program answers and takes telemetry only from it).
conns_name_the_peer() {
	local dump prog mid=""
	# (the daemon's pins live in its own mount namespace: find the map
	# through the program attached to the interface)
	prog=$(ip -n $NSA link show $IFA | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	for m in $(bpftool prog show id "${prog:-0}" 2>/dev/null |
		   sed -n 's/.*map_ids \([0-9,]*\).*/\1/p' | tr , ' '); do
		bpftool map show id "$m" | grep -q " name conns " && mid=$m
	done
	[ -n "$mid" ] || { flunk "no conns map behind XDP program '$prog' on $IFA"; return; }
	dump=$(bpftool -j map dump id "$mid" 2>&1) ||
		{ flunk "bpftool map dump conns: $dump"; return; }
	if python3 - "$IPB" "$dump" <<'PY'
import json, socket, struct, sys
want = struct.unpack("<I", socket.inet_aton(sys.argv[1]))[0]
ents = [e["formatted"] if "formatted" in e else e for e in json.loads(sys.argv[2])]
mr = [e["value"] for e in ents if e["key"]["proto"] == 1]
assert mr and all(v["peer_family"] == 4 and v["peer_addr"] == [want, 0, 0, 0]
                  for v in mr), mr
PY
	then
		echo "ok: conns names the peer $IPB"
	else
		flunk "conns: no MetaRoCE entry naming $IPB: $dump"
	fi
}

PORT=18900
run() {
	local t=$1 tr=$2 mtu=$3 out=$TMP/$1.$2.$3
	local want=1024
	[ $mtu = 9000 ] && want=8192
	PORT=$((PORT + 1))
	perf_pair "$t $tr mtu $mtu" "$out" $NSB $PORT \
		ip netns exec $NSB timeout 60 "$PERF" $t --daemon=$SB -p $PORT \
		-s 20000 --transport $tr -- \
		ip netns exec $NSA timeout 60 "$PERF" $t --daemon=$SA -p $PORT \
		-s 20000 -n 200 --verify --transport $tr $IPB || return
	grep -q "Mtu *: $want\[B\]" "$out" || flunk "$t $tr mtu $mtu: not $want B"
	echo "ok: $t $tr mtu $mtu: $ROW"
}

for mtu in 1500 9000; do
	ns_mtu $mtu
	daemons_up
	for tr in rocev2 metaroce; do
		run write_bw $tr $mtu
		run send_bw $tr $mtu
	done
	conns_name_the_peer
	"$CTL" daemon --sock $SA >"$TMP/st"
	grep -q "afxdp $IFA" "$TMP/st" ||
		{ flunk "status does not show afxdp $IFA"; cat "$TMP/st"; }
	daemons_down
done

ns_summary daemon_afxdp "$TMP"/mroced-*.log
