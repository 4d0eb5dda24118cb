#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# e2e_loss.sh - mroce_perf --verify over a 4-path fabric that drops packets
# at random on every path (nftables, both directions): 1% (split flip 1 of
# tests/net/e2e_lib.sh), then 5% (flip 0). Both transports, both backends.
# Every run must complete with every byte verified, and the fabric must
# really have dropped packets in each phase (else the test proves nothing).
#
#   tests/net/e2e_loss.sh [--probe]
set -u
FAB_TAG=el
# shellcheck source=tests/net/e2e_lib.sh
. tests/net/e2e_lib.sh "$@"

fab_up --mtu 9000 --paths 4
for phase in "0.01 1" "0.05 0"; do
	set -- $phase
	for j in $(seq "$FABRIC_PATHS"); do
		bash $FABRIC impair --prefix "$PREFIX" --path "$j" --loss "$1" ||
			fail "impair path $j"
	done
	d0=$(fab_drops)
	echo "== loss $1 on every path"
	e2e_matrix "$2"
	d=$(($(fab_drops) - d0))
	echo "dropped by the fabric at loss $1: $d packets"
	[ $d -gt 0 ] || { echo "FAIL: nothing was dropped at loss $1"; E2E_FAILS=$((E2E_FAILS + 1)); }
done
e2e_summary
