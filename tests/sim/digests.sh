#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# digests.sh - the simulator's behaviour fingerprint. Runs mroce_sim --json
# over a matrix of scenarios (both transports; clean, random loss, high
# loss, blackholes, incast with several senders and QPs, SEND, asymmetric
# plane rates, duplication with corruption, ECN, small MTU; several seeds)
# and compares each run's "digest" (a hash of every event that decided the
# run) with the one recorded in tests/sim/digests.txt.
#
#   tests/sim/digests.sh            compare; exit 1 listing every mismatch
#   tests/sim/digests.sh --record   rewrite digests.txt from this build
#   tests/sim/digests.sh --probe    exit 77 (skip) when mroce_sim is not built
#
# A refactoring must leave every digest unchanged. A change of behaviour
# re-records them on purpose, in a commit of its own that says why.
set -uo pipefail
cd "$(dirname "$0")/../.."
SIM=${MROCE_BUILD:-build}/bin/mroce_sim
DB=tests/sim/digests.txt

case "${1:-}" in
--probe) [ -x "$SIM" ] || { echo "mroce_sim not built ($SIM)"; exit 77; }; exit 0 ;;
--record|"") ;;
-h|--help) sed -n '3,16p' "$0"; exit 0 ;;
*) echo "digests.sh: unknown option '$1'" >&2; exit 2 ;;
esac

# One scenario a line: the mroce_sim arguments (without --seed/--json).
SCENARIOS=(
  "--bytes 4M"
  "--bytes 4M --loss 0.01"
  "--bytes 16M --loss 0.05"
  "--bytes 16M --blackhole 1@0.2"
  "--bytes 16M --loss 0.01 --blackhole 2@0.3 --blackhole 3@0.6"
  "--bytes 2M --senders 8 --conns 2"
  "--bytes 1M --senders 4 --conns 4 --engine-paths 8 --shared-leaf"
  "--bytes 4M --op send --msg-size 16K"
  "--bytes 4M --op send --loss 0.02"
  "--bytes 8M --rates 100,50,25,10"
  "--bytes 4M --dup 0.01 --corrupt 0.01"
  "--bytes 4M --ecn-kb 20 --host-ecn-kb 40 --senders 4"
  "--bytes 2M --mtu 1024 --loss 0.01 --outstanding 4"
  "--bytes 4M --rate-gbps 10 --paths 2 --loss 0.005"
)
SEEDS=(1 2 7)

out=$(mktemp); trap 'rm -f "$out"' EXIT
fail=0 n=0
for t in metaroce rocev2; do
	for s in "${SCENARIOS[@]}"; do
		for seed in "${SEEDS[@]}"; do
			args="--transport $t $s --seed $seed"
			# shellcheck disable=SC2086
			d=$("$SIM" --json $args 2>/dev/null | grep -o '"digest":"[0-9a-f]*"' | cut -d'"' -f4)
			[ -n "$d" ] || d=none
			printf '%s %s\n' "$d" "$args" >>"$out"
			n=$((n + 1))
		done
	done
done

if [ "${1:-}" = "--record" ]; then
	{ echo "# digest mroce_sim-arguments (tests/sim/digests.sh --record)"; cat "$out"; } >"$DB"
	echo "recorded $n digests in $DB"
	exit 0
fi
while read -r d args; do
	want=$(grep -F -- " $args" "$DB" | awk -v a=" $args" '{l=$0; sub(/^[^ ]* /,"",l); if (" " l == a) print $1}')
	if [ "$want" != "$d" ]; then
		echo "digest mismatch: mroce_sim $args: got $d, recorded ${want:-nothing}"
		fail=$((fail + 1))
	fi
done <"$out"
if [ $fail -ne 0 ]; then
	echo "$fail of $n digests changed (behaviour changed; re-record on purpose with --record)"
	exit 1
fi
echo "all $n simulator digests identical"
