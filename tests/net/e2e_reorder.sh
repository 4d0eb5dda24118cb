#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# e2e_reorder.sh - mroce_perf --verify over a 4-path fabric whose paths run
# at different rates (tbf 1gbit / 500mbit / 200mbit / 120mbit): packets
# sprayed over all four arrive out of order, and the slow paths' queues
# overflow under load. Both transports, both backends (split flip 1 of
# tests/net/e2e_lib.sh). Every run must complete with every byte verified,
# and MetaRoCE's packets must have crossed at least two paths of different
# rates (the receiver's out-of-order share counts per-path order, which
# spraying keeps, so the fabric's counters are the evidence instead).
#
#   tests/net/e2e_reorder.sh [--probe]
set -u
FAB_TAG=er
# shellcheck source=tests/net/e2e_lib.sh
. tests/net/e2e_lib.sh "$@"

fab_up --mtu 9000 --paths 4
j=0
for r in 1gbit 500mbit 200mbit 120mbit; do
	j=$((j + 1))
	bash $FABRIC impair --prefix "$PREFIX" --path $j --rate $r ||
		fail "impair path $j"
done
declare -A mr_pkts
for tr in metaroce rocev2; do
	for be in udp afxdp; do
		for op in $(e2e_ops 1 $tr $be); do
			read -ra before <<<"$(fab_paths 12)"
			# RoCEv2's go-back-N resends its whole window; a window
			# larger than a slow path's tbf queue (16 x 64 KiB vs
			# 336 KB at 120 Mbit/s) makes it lose the same tail
			# round after round until the retry counter runs out.
			# 4 in flight fit; MetaRoCE keeps the default 16.
			more=
			[ $tr = rocev2 ] && [ "${op%_bw}" != "$op" ] && more="-t 4"
			# shellcheck disable=SC2046,SC2086
			e2e_start $be $tr $op $(e2e_args $op) $more
			e2e_finish || continue
			[ $tr = metaroce ] || continue
			read -ra after <<<"$(fab_paths 12)"
			for j in $(seq "$FABRIC_PATHS"); do
				mr_pkts[$j]=$((${mr_pkts[$j]:-0} + ${after[j - 1]} - ${before[j - 1]}))
			done
		done
	done
done
used=0
for j in $(seq "$FABRIC_PATHS"); do
	echo "path $j: $((${mr_pkts[$j]:-0})) MetaRoCE packets A->B"
	[ "${mr_pkts[$j]:-0}" -ge 20 ] && used=$((used + 1))
done
[ $used -ge 2 ] || { echo "FAIL: MetaRoCE used $used path(s): no reordering possible"; E2E_FAILS=$((E2E_FAILS + 1)); }
e2e_summary
