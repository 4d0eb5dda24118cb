#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# bench_scripts.sh - the benchmark scripts and the demo refuse bad
# arguments (exit 2,
# a line naming the argument) and scripts/bench_sim.sh --seeds sums its
# per-seed table correctly (median and "seeds meeting" rows, checked
# against the rows it printed); shortened bench_sim.sh --long, --loaded
# and --incast meet their targets; failed simulator runs are never counted as met. No namespaces: the fabric benchmark's
# runs are not repeated here (tests/net/e2e_*.sh cover those paths).
#   tests/net/bench_scripts.sh [--probe]
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${MROCE_BUILD:-build}
if [ "${1:-}" = --probe ]; then
	[ -x "$B/bin/mroce_sim" ] || { echo "$B/bin/mroce_sim not built"; exit 77; }
	exit 0
fi
fail() { echo "FAIL: $*"; exit 1; }

# bad NAME ARGS...: exit 2 with a message on stderr naming the problem
bad() {
	local want=$1 err
	shift
	err=$("$@" 2>&1 >/dev/null)
	[ $? -eq 2 ] || fail "$* : exit status not 2"
	echo "$err" | grep -q -- "$want" || fail "$* : message '$err' lacks '$want'"
}
E2E=scripts/bench_e2e.sh
bad "--rounds: 1 to 20" bash $E2E --rounds 0
bad "--rounds: 1 to 20" bash $E2E --rounds x
bad "--rounds needs a value" bash $E2E --rounds
bad "--seconds: 2 or more" bash $E2E --seconds 1
bad "--rate: e.g. 300mbit" bash $E2E --rate fast
bad "--backend afxdp|udp" bash $E2E --backend dpdk
bad "--modes: embedded, daemon or embedded,daemon" bash $E2E --modes fast
bad "--modes needs a value" bash $E2E --modes
bad "unknown argument '--bogus'" bash $E2E --bogus
bad "unknown argument '--bogus'" bash scripts/bench_sim.sh --bogus
bash $E2E --help | grep -q -- "--rounds K" || fail "bench_e2e --help lacks --rounds"
O=scripts/bench_offload.sh
bad "--rounds: 1 to 20" bash $O --rounds 0
bad "--seconds: 1 or more" bash $O --seconds x
bad "--size: a byte count" bash $O --size big
bad "--loss: a fraction, e.g. 0.01" bash $O --loss 5
bad "unknown argument '--bogus'" bash $O --bogus
bash $O --help | grep -q -- "--loss F" || fail "bench_offload --help lacks --loss"
D=scripts/demo.sh
bad "--seconds: 3 to 30" bash $D --seconds 2
bad "--seconds: 3 to 30" bash $D --seconds x
bad "--backend afxdp|udp" bash $D --backend dpdk
bad "--out needs a value" bash $D --out
bad "unknown argument '--bogus'" bash $D --bogus
L=scripts/bench_loaded.sh
bad "--rounds: 1 to 20" bash $L --rounds 0
bad "--seconds: 1 to 600" bash $L --seconds x
bad "--queue-us: microseconds, 1 or more" bash $L --queue-us 0
bad "unknown argument '--bogus'" bash $L --bogus
I=scripts/bench_incast.sh
bad "--senders: 2 to 8" bash $I --senders 1
bad "--seconds: 2 to 600" bash $I --seconds 1
bad "--rounds: 1 to 20" bash $I --rounds 21
bad "--rate / --ecn-rate: e.g. 300mbit" bash $I --rate fast
bad "--ecn-thresh: bytes" bash $I --ecn-thresh x
bad "unknown argument '--bogus'" bash $I --bogus
bash $D --help | grep -q -- "--out DIR" || fail "demo.sh --help lacks --out"
bash scripts/bench_sim.sh --help | grep -q -- "--seeds" || fail "bench_sim --help"

# --seeds on three small seeds: the summary rows must agree with the rows
out=$(MROCE_BUILD=$B SEEDS="1 2 3" BYTES=4M bash scripts/bench_sim.sh --seeds)
rc=$?
[ $rc -le 1 ] || fail "bench_sim --seeds exit $rc: $out"
rows=$(echo "$out" | awk -F'|' '$2 ~ /^ [0-9]+ $/')
[ "$(echo "$rows" | wc -l)" -eq 3 ] || fail "expected 3 seed rows: $out"
# every run of the real simulator completed: every cell is a number
echo "$rows" | awk -F'|' '{ for (c = 3; c <= 6; c++)
	if ($c !~ /^ -?[0-9]+(\.[0-9]+)? $/) exit 1 }' ||
	fail "a cell that is not a number (a failed run): $out"
# exit status 1 exactly when a seed missed a target
misses=$(echo "$rows" | grep -c missed)
[ $((misses > 0)) -eq $rc ] || fail "exit $rc with $misses missed rows"
got=$(echo "$out" | awk -F'|' '$2 ~ /seeds meeting/ { print $7 }' | tr -d ' ')
[ "$got" = "$((3 - misses))of3" ] || fail "'all targets' count '$got', $misses missed rows"
for col in 3 4 5; do
	med=$(echo "$rows" | awk -F'|' -v c=$col '{ print $c + 0 }' | sort -g | sed -n 2p)
	got=$(echo "$out" | awk -F'|' -v c=$col '$2 ~ /median/ { gsub(/ /, "", $c); print $c }')
	[[ $got =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "column $col: median '$got' is not a number"
	awk -v a="$med" -v b="$got" 'BEGIN { exit !(a - b < 0.05 && b - a < 0.05) }' ||
		fail "column $col: median $got, rows say $med"
done

# --long, shortened (issue #13's regression test): 4 planes of 10 and of
# 25 Gbit/s, one seed, 20,000 base RTTs a run at 1% and 5% loss: every
# target met, no decay (before the CC's delay target covered one packet
# per path, 25 Gbit/s at 5% fell to 0.37 of loss-free, 10 Gbit/s decayed
# to 0.79 of its second quarter).
out=$(MROCE_BUILD=$B RATES="10 25" DELAYS=2 SIZES=64K SEEDS=1 LOSSES="0.01 0.05" \
	RTTS=20000 bash scripts/bench_sim.sh --long 2>/dev/null)
rc=$?
rows=$(echo "$out" | grep -c '^| 4 x ')
[ $rc -eq 0 ] && [ "$rows" -eq 2 ] && ! echo "$out" | grep -q missed ||
	fail "bench_sim --long (exit $rc): $out"
echo "$out" | awk -F'|' '/^\| 4 x / { if ($8 !~ /^ [0-9.]+ $/ || $8 + 0 < 0.95) exit 1 }' ||
	fail "bench_sim --long: decay column: $out"

# --loaded and --incast, shortened: the 100 Gbit/s cell meets the loaded-
# latency targets (p99 ratio a number <= 3, the bulk >= 0.9 of alone), and
# a 16:1 incast meets Jain and the RTO bound.
out=$(MROCE_BUILD=$B RATES=100 DELAYS=2 SEEDS=1 LOADED_MS=2 bash scripts/bench_sim.sh --loaded 2>/dev/null)
rc=$?
[ $rc -eq 0 ] && [ "$(echo "$out" | grep -c '^| 4 x 100 | 2 | metaroce | [0-9.]* / [0-9.]* | [0-9.]* / [0-9.]* | [0-9.]* | [0-9.]* | yes |$')" -eq 1 ] ||
	fail "bench_sim --loaded (exit $rc): $out"
out=$(MROCE_BUILD=$B INCAST=16 SEEDS=1 bash scripts/bench_sim.sh --incast 2>/dev/null)
rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q '^| 1 | metaroce | [0-9.]* (0\.[0-9]*) | [0-9.]* | [0-9]* | .* | ok | yes |$' ||
	fail "bench_sim --incast (exit $rc): $out"

# A simulator whose every run fails: every cell is "-", every seed misses
# every target, the medians are "-" (never 0, never "yes"), exit 1.
FAKE=$(mktemp -d /tmp/mroce-bench-scripts.XXXXXX)
trap 'rm -rf "$FAKE"' EXIT
mkdir -p "$FAKE/bin"
printf '#!/bin/sh\necho "mroce_sim: setup failed" >&2\nexit 3\n' >"$FAKE/bin/mroce_sim"
chmod +x "$FAKE/bin/mroce_sim"
out=$(MROCE_BUILD=$FAKE SEEDS="1 2" BYTES=4M bash scripts/bench_sim.sh --seeds 2>/dev/null)
rc=$?
[ $rc -eq 1 ] || fail "bench_sim --seeds with failing runs: exit $rc: $out"
rows=$(echo "$out" | awk -F'|' '$2 ~ /^ [0-9]+ $/')
[ "$(echo "$rows" | wc -l)" -eq 2 ] || fail "failing runs: expected 2 seed rows: $out"
echo "$rows" | awk -F'|' '{ for (c = 3; c <= 6; c++) if ($c != " - ") exit 1
	if ($7 !~ /missed: loss-free 1% 5% blackhole/) exit 1 }' ||
	fail "failing runs must give '-' cells and miss every target: $out"
echo "$out" | grep -q '^| median | - | - | - | never | |$' ||
	fail "failing runs: the medians must be '-': $out"
echo "$out" | grep -q '^| seeds meeting the target | 0 of 2 | 0 of 2 | 0 of 2 | 0 of 2 | 0 of 2 |$' ||
	fail "failing runs: no seed may meet a target: $out"
for mode in loaded incast; do
	mo=$(MROCE_BUILD=$FAKE RATES=10 DELAYS=2 SEEDS=1 INCAST=4 bash scripts/bench_sim.sh --$mode 2>/dev/null)
	rc=$?
	[ $rc -eq 1 ] || fail "bench_sim --$mode with failing runs: exit $rc: $mo"
	echo "$mo" | grep '| metaroce |' | grep -q 'missed' &&
		! echo "$mo" | grep '| metaroce |' | grep -q '| yes |$' ||
		fail "bench_sim --$mode with failing runs must miss: $mo"
done
out=$(MROCE_BUILD=$FAKE BYTES=4M bash scripts/bench_sim.sh 2>/dev/null)
rc=$?
[ $rc -eq 1 ] || fail "bench_sim with failing runs: exit $rc"
echo "$out" | grep -q "not run: the clean run failed" ||
	fail "bench_sim with failing runs: the blackhole row must say it was not run: $out"
echo "ok"
