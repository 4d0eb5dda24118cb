#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# demo.sh - MetaRoCE vs RoCEv2 over a lossy 4-path fabric (the README's
# main demo, run by `make demo`).
#
# Usage: scripts/demo.sh [--bytes B] [--seed S] [--help]
#
# Runs the real transport engines of both modes in the deterministic
# network simulator (mroce_sim) over 4 parallel 25 Gbit/s paths, 2 us one
# way, with every byte checked: clean, 1% random loss on every path, and
# the RoCEv2 QP's path blackholed 1 ms into the transfer. Prints one comparison table.
# The namespace/AF_XDP version of this demo arrives with the daemon.
#
# Environment: MROCE_BUILD (build directory, default build).
# Exit status: 0 if every run delivered every byte intact (a RoCEv2 error
# completion on the blackholed path is an expected result, reported in the
# table), 1 otherwise, 2 on bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${MROCE_BUILD:-build}
SIM=$BUILD/bin/mroce_sim
BYTES=32M
SEED=1
while [ $# -gt 0 ]; do
	case "$1" in
	--bytes) BYTES=${2:?--bytes needs a size}; shift 2 ;;
	--seed) SEED=${2:?--seed needs a number}; shift 2 ;;
	-h|--help) sed -n '4,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
[ -x "$SIM" ] || { echo "demo.sh: $SIM missing: run make first" >&2; exit 1; }

jf() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,}\"]*\).*/\1/p"; }
FAIL=0
# The path the RoCEv2 QP hashes to (its one and only path): blackhole that
# one, the case that hurts RoCEv2 most, for both transports.
share=$("$SIM" --json --transport rocev2 --paths 4 --rate-gbps 25 --bytes 64K \
	--seed "$SEED" | sed -n 's/.*"path_share":\[\([^]]*\)\].*/\1/p')
BH=$(echo "$share" | tr ',' '\n' | awk '$1 > max { max = $1; i = NR - 1 } END { print i + 0 }')
declare -A GP

printf '\nmroce demo: 1 connection, %s of 64 KiB RDMA WRITEs, 4 paths x 25 Gbit/s, seed %s\n\n' "$BYTES" "$SEED"
printf '| %-9s | %-22s | %13s | %8s | %11s | %12s | %-9s |\n' \
	transport scenario "goodput Gb/s" "vs clean" retransmits "WR p99 (us)" result
printf '|%s|%s|%s|%s|%s|%s|%s|\n' -----------  ------------------------ \
	--------------- ---------- ------------- -------------- -----------
for t in metaroce rocev2; do
	for sc in clean loss1 blackhole; do
		case $sc in
		clean) args=(); name="clean" ;;
		loss1) args=(--loss 0.01); name="1% loss on every path" ;;
		blackhole) args=(--blackhole "$BH@1"); name="path $BH blackholed @1ms" ;;
		esac
		out=$("$SIM" --json --transport "$t" --paths 4 --rate-gbps 25 \
			--bytes "$BYTES" --seed "$SEED" "${args[@]}" 2>&1)
		rc=$?
		gp=$(echo "$out" | jf goodput_gbps)
		integ=$(echo "$out" | jf integrity_ok)
		verdict=$(echo "$out" | jf verdict)
		[ -n "$gp" ] || gp=0
		GP[$t.$sc]=$gp
		rel=$(awk -v a="$gp" -v b="${GP[$t.clean]}" \
			'BEGIN { if (b > 0) printf "%.0f%%", 100 * a / b; else print "-" }')
		res=$verdict
		if [ "$integ" != "true" ]; then
			res="CORRUPT"; FAIL=1
		elif [ $rc -ne 0 ]; then
			# an error completion is a legitimate RoCEv2 outcome when
			# its only path is blackholed; anything else is a failure
			if [ "$t.$sc" = "rocev2.blackhole" ]; then
				res="error WC (expected)"
			else
				FAIL=1
			fi
		fi
		printf '| %-9s | %-22s | %13s | %8s | %11s | %12s | %-9s |\n' \
			"$t" "$name" "$gp" "$rel" "$(echo "$out" | jf retransmits)" \
			"$(echo "$out" | jf fct_p99_us)" "$res"
	done
done
echo
echo "Every run checked every received byte (integrity). MetaRoCE sprays over"
echo "all 4 paths and repairs losses selectively; RoCEv2 rides the one path its"
echo "QP hashes to and goes back N on a loss."
exit $FAIL
