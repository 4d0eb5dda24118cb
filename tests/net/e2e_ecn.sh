#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# e2e_ecn.sh - a MetaRoCE sender reacts to real CE marks: mroce_perf
# write_bw (AF_XDP, 3 s, --verify) over a 4-path fabric, first with no
# marker, then with the fabric's ECN marker on every path (a phantom
# queue draining at 300 Mbit/s: it marks CE, never drops). The marked run
# must show marks at the fabric (CE counters), CE reported back to the
# sender (its engine's echoed count), and a sender that slowed towards
# the marked rate: at most 2.4 Gbit/s (twice the markers' 1.2) and at
# most half its own unmarked rate, which must be at least 3 Gbit/s for
# the comparison to mean anything (a sender that ignored CE kept 5.2-6.2
# Gbit/s through the markers; one whose paths could only shrink their
# windows to a packet, 5.7-6.2). Both runs verify every byte.
#
#   tests/net/e2e_ecn.sh [--probe]
set -u
FAB_TAG=en
# shellcheck source=tests/net/e2e_lib.sh
. tests/net/e2e_lib.sh "$@"

fab_up --mtu 9000 --paths 4
ce_ect() { # "CE ECT": marks and ECN-capable packets A->B so far
	fab_counters
	local j c=0 e=0 v
	for j in $(seq "$FABRIC_PATHS"); do
		v=FABRIC_P${j}_CE12 c=$((c + ${!v}))
		v=FABRIC_P${j}_ECT12 e=$((e + ${!v}))
	done
	echo "$c $e"
}
goodput() { grep -A1 -m1 '#bytes' "$1" | tail -1 | awk '{ print $4 }'; }

run() { # label: one 3 s MetaRoCE write_bw over AF_XDP; sets G, CE, ECT
	read -r c0 e0 <<<"$(ce_ect)"
	e2e_run afxdp metaroce write_bw -s 65536 -D 3 --report_gbits
	read -r c1 e1 <<<"$(ce_ect)"
	G=$(goodput "$E2E_OUT") CE=$((c1 - c0)) ECT=$((e1 - e0))
	echo "   $1: ${G:-?} Gbit/s, $CE of $ECT ECN-capable packets marked CE"
}

run "no marker"
G0=$G
for j in $(seq "$FABRIC_PATHS"); do
	bash $FABRIC impair --prefix "$PREFIX" --path "$j" --ecn-rate 300mbit \
		--ecn-thresh 30000 || fail "marker on path $j"
done
run "4 x 300 Mbit/s markers"
G1=$G
# the receiver's ACKs told the sender (mroce_perf's spraying block)
fb=$(sed -n 's/^ *Data packets *: .*timeouts, \([0-9]*\) CE-marked.*/\1/p' "$E2E_OUT")
echo "   the sender's engine heard of ${fb:-?} CE-marked packets"

awk -v g="${G0:-0}" 'BEGIN { exit !(g >= 3) }' ||
	{ echo "FAIL: unmarked run at ${G0:-?} Gbit/s: too slow to judge a reaction"; E2E_FAILS=$((E2E_FAILS + 1)); }
[ "$CE" -gt 0 ] || { echo "FAIL: the markers marked nothing"; E2E_FAILS=$((E2E_FAILS + 1)); }
[ "${fb:-0}" -gt 0 ] || { echo "FAIL: no CE echoed back to the sender"; E2E_FAILS=$((E2E_FAILS + 1)); }
awk -v g="${G1:-99}" -v g0="${G0:-0}" 'BEGIN { exit !(g <= 2.4 && g <= g0 / 2) }' ||
	{ echo "FAIL: through 1.2 Gbit/s of markers the sender kept ${G1:-?} Gbit/s (${G0:-?} unmarked): no reaction to CE"; E2E_FAILS=$((E2E_FAILS + 1)); }
e2e_summary
