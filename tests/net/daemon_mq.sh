#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# daemon_mq.sh - mroced over AF_XDP with one socket per receive queue: two
# namespaces joined by a veth pair with 2 tx and 2 rx queues on both ends
# (native XDP on veth needs equal counts), names unique to this run,
# removed by a trap. Both daemons run with --queue all (the default of
# --backend afxdp) and must report 2 queues.
#
#   tests/net/daemon_mq.sh           run (root, veth, XDP, AF_XDP)
#   tests/net/daemon_mq.sh --probe   exit 77 with a one-line reason when
#                                    the test cannot run here
#
# mroce_perf --daemon write_bw --verify over MetaRoCE (16 paths = 16 UDP
# source ports) and over RoCEv2, then SIGTERM; each daemon logs one line
# per queue on exit. Why both queues carry traffic, deterministically: a
# copy-mode AF_XDP socket transmits on its own queue, a veth delivers a
# frame on the peer's queue of the same number, and the endpoint sends a
# packet on queue (source port % 2). The sprayed MetaRoCE source ports
# (fixed --seed) hit both parities, so both sockets of the receiving
# daemon must have received packets; the test fails if one queue got
# none. The XDP program's redirect counts per queue from veth's ethtool
# statistics are printed too, when available.
set -u
# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "$0")/ns_lib.sh"

probe() {
	need_root "netns, XDP, AF_XDP" && need_cmds ip &&
		need_built "$CTL" "$PERF" "$MROCED" && need_netns mdq 2 &&
		need_afxdp
}
ns_probe 77 probe "$@"

IPA=10.251.0.1 IPB=10.251.0.2
ns_tmp dmq
SA=$TMP/a.sock SB=$TMP/b.sock
ns_pair mdq$$ $IPA $IPB 2
ns_neigh $IPA $IPB

# No --queue: all queues is the afxdp default.
mroced_start DPA $NSA $SA --backend afxdp --ifname $IFA --attach \
	--local $IPA --rto-min 20000 --paths 16 --seed 11 ||
	fail "mroced A did not start"
mroced_start DPB $NSB $SB --backend afxdp --ifname $IFB --attach \
	--local $IPB --rto-min 20000 --paths 16 --seed 22 ||
	fail "mroced B did not start"
for n in a b; do
	grep -q "afxdp mdq$$[01], 2 queues" "$TMP/mroced-$n.log" ||
		{ cat "$TMP/mroced-$n.log"; fail "$n: daemon does not use 2 queues"; }
done

PORT=18950
run() {
	local tr=$1 out=$TMP/$1
	PORT=$((PORT + 1))
	perf_pair "write_bw $tr" "$out" $NSB $PORT \
		ip netns exec $NSB timeout 60 "$PERF" write_bw --daemon=$SB \
		-p $PORT -s 16384 --transport $tr -- \
		ip netns exec $NSA timeout 60 "$PERF" write_bw --daemon=$SA \
		-p $PORT -s 16384 -n 400 --verify --transport $tr $IPB || return
	echo "ok: write_bw $tr: $ROW"
}

run metaroce
run rocev2
"$CTL" daemon --sock $SB >"$TMP/st" 2>&1
grep -q "afxdp $IFB" "$TMP/st" ||
	{ flunk "status does not show afxdp $IFB"; cat "$TMP/st"; }
xdp_redirects() { # NS IFNAME
	echo "xdp redirects per queue in $1:"
	ip netns exec "$1" ethtool -S "$2" 2>/dev/null |
		grep -E 'rx_queue_[0-9]+_xdp_redirect' | sed 's/^/  /'
}
xdp_redirects $NSA $IFA
xdp_redirects $NSB $IFB

mroced_stop DPA DPB

# Both sockets of each daemon received packets (B: the data, A: the
# acknowledgements and read/handshake replies).
for n in a b; do
	for q in 0 1; do
		line=$(grep "queue $q: rx" "$TMP/mroced-$n.log")
		echo "$n $line"
		pk=$(sed -n 's/.*queue [0-9]*: rx \([0-9]*\) pkts.*/\1/p' <<<"$line")
		[ -n "$pk" ] && [ "$pk" -gt 0 ] ||
			flunk "$n: queue $q received no packets"
	done
done

ns_summary daemon_mq "$TMP"/mroced-*.log
