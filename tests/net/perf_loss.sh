#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# perf_loss.sh - mroce_perf --verify over a lossy loopback: nftables drops
# 2% of the UDP packets to the MetaRoCE and RoCEv2 ports, in a private
# network namespace (the script re-runs itself under `unshare -n`).
#
#   tests/net/perf_loss.sh           run
#   tests/net/perf_loss.sh --probe   exit 77 with a reason when it cannot
#                                    run here, else exit 0
#
# Both transports must finish write_bw, read_bw and send_bw with every
# byte verified, and the drop rule must really have dropped packets (else
# the test proves nothing and fails).
set -u
# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "$0")/ns_lib.sh"

probe() { need_built "$PERF" && need_cmds unshare ip nft ss && need_unshare; }
ns_probe 1 probe "$@"
ns_unshare "$@"
nft add table inet mroce_loss &&
nft add chain inet mroce_loss out \
	'{ type filter hook output priority 0; }' &&
nft add rule inet mroce_loss out udp dport '{ 4791, 4792 }' \
	numgen random mod 100 '<' 2 counter drop || exit 1

ns_tmp loss
PORT=18700
for tr in metaroce rocev2; do
	for t in write_bw read_bw send_bw; do
		PORT=$((PORT + 1))
		out=$TMP/$t-$tr
		# A larger minimum RTO keeps spurious timeouts on busy shared
		# cores from drowning the real losses.
		perf_pair "$t $tr" "$out" "" $PORT \
			timeout 90 "$PERF" $t -p $PORT -s 16384 --transport $tr \
			--rto-min 2000 --local 127.0.0.1 -- \
			timeout 90 "$PERF" $t -p $PORT -s 16384 -n 300 --verify \
			--transport $tr --rto-min 2000 --local 127.0.0.2 \
			127.0.0.1 || continue
		echo "ok: $t $tr: $ROW" \
		     "| $(grep 'Data packets' "$out" | sed 's/ *Data packets *: //')"
	done
done

dropped=$(nft list ruleset | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
echo "dropped by the fabric: ${dropped:-0} packets"
[ "${dropped:-0}" -gt 0 ] || { echo "FAIL: nothing was dropped"; exit 1; }
ns_summary perf_loss
