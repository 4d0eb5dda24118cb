#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# bench_sim.sh - measure the simulator targets of issue #3 and print them as
# a markdown table. Every ratio is computed from runs made by this script,
# in this invocation (never against numbers from another run).
#
# Usage: scripts/bench_sim.sh [--quick] [--seeds] [--long] [--loaded]
#                             [--incast] [--help]
#   --quick       smaller transfers (a smoke run, less precise)
#   --seeds       only the MetaRoCE seed table: for each seed of SEEDS, the
#                 loss-free goodput as a share of the 400 Gbit/s aggregate,
#                 1% and 5% loss as a share of that seed's loss-free run,
#                 and the recovery (RTTs) from plane 1 blackholed half-way,
#                 then the median of each column and how many seeds meet
#                 each target
#   --long        only the long-run family (issue #13): 4 planes of each
#                 rate of RATES, one-way delay of DELAYS, messages of
#                 SIZES; per seed a loss-free run and one per loss of
#                 LOSSES, each RTTS base round trips long (the bytes come
#                 from a short calibration run of the cell). Per cell:
#                 the loss-free goodput (median seed), each loss's goodput
#                 as a share of the same seed's loss-free run (median and
#                 worst seed), and the decay: the smallest ratio, over all
#                 runs, of the goodput in a run's last quarter to its
#                 second quarter. Targets: 1% >= 0.95 median / 0.85
#                 worst, 5% >= 0.85 / 0.75, decay >= 0.95. The defaults
#                 are the whole family (hours on one core).
#   --loaded      only the loaded-latency table (issue #13): 4 planes of
#                 each rate of RATES and one-way delay of DELAYS, per seed
#                 of SEEDS (default 1 to 5): the bulk WRITE flow alone,
#                 then with an 8-byte WRITE probe on its own QP between
#                 the same hosts (mroce_sim --probe-us: alone first, then
#                 beside the bulk). Per cell and transport: the probe's
#                 idle and loaded p50 / p99 (median seed), the worst
#                 seed's loaded p99 / idle p99, and the worst seed's bulk
#                 goodput with the probe / alone. MetaRoCE's targets:
#                 p99 ratio <= 3, goodput ratio >= 0.9
#   --incast      only the incast table (issue #13): INCAST senders (64)
#                 with one QP each to one receiver, 4 x 100 Gbit/s planes,
#                 per seed of SEEDS (default 1 to 5): goodput as a share
#                 of the receiver's link, Jain's index, RTOs. MetaRoCE's
#                 targets: Jain >= 0.95 and at most one RTO per sender
# Environment:
#   MROCE_BUILD   build directory holding bin/mroce_sim (default: build)
#   BYTES         bytes per connection of the throughput runs (default 64M)
#   SCALE_CONNS   connections of the scale run (default 4000)
#   SEED          seed of every run (default 1)
#   SEEDS         seeds of the --seeds table (default: 1 to 10) and of
#                 --long (default: 1 to 20)
#   RATES DELAYS SIZES LOSSES RTTS   --long's family (defaults: "10 25
#                 100", "2 10", "64K 1M", "0.001 0.01 0.05", 20000)
#   INCAST        senders of --incast (default 64)
#   LOADED_MS     --loaded: milliseconds of bulk at full rate (default 5)
# Exit status: 0 when every run completed (RoCEv2 with its own plane
# blackholed is expected to end in an error completion), 1 when any other
# run failed (its row says why), 2 on bad arguments. With --seeds, 1 also
# when a seed misses a target (the row says which).
set -uo pipefail

usage() {
	sed -n '4,46p' "$0" | sed 's/^# \{0,1\}//'
}

QUICK=0
SEEDTAB=0
LONG=0
LOADED=0
INCASTTAB=0
for a in "$@"; do
	case "$a" in
	--quick) QUICK=1 ;;
	--seeds) SEEDTAB=1 ;;
	--long) LONG=1 ;;
	--loaded) LOADED=1 ;;
	--incast) INCASTTAB=1 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "bench_sim.sh: unknown argument '$a'" >&2; usage >&2; exit 2 ;;
	esac
done

cd "$(dirname "$0")/.."
BUILD=${MROCE_BUILD:-build}
SIM="$BUILD/bin/mroce_sim"
if [ ! -x "$SIM" ]; then
	echo "bench_sim.sh: $SIM not found; run 'make BUILD=$BUILD' first" >&2
	exit 1
fi
BYTES=${BYTES:-64M}
SCALE_CONNS=${SCALE_CONNS:-4000}
SEED=${SEED:-1}
if [ "$QUICK" = 1 ]; then
	BYTES=8M
	SCALE_CONNS=400
fi
FAILED=0

# jf FIELD: one field of the single-line JSON object on stdin
jf() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,}\"]*\).*/\1/p"; }
# ratio A B: A / B in %; "n/a" when either is missing (a failed run)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {
	if (a != "" && a != "-" && b != "" && b != "-" && b + 0 > 0) printf "%.1f%%", 100 * a / b; else print "n/a" }'; }

# run NAME ARGS...: runs mroce_sim --json, keeps the output in OUT_<NAME>
run() {
	local name=$1 out rc
	shift
	out=$("$SIM" --json --seed "$SEED" "$@" 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		# RoCEv2 cannot leave its QP's plane: an error completion when
		# that plane is blackholed is the expected result, not a failure
		# (the table reports it); so is one in an incast without PFC
		if { [ "$name" = rocev2_bh ] || [ "$name" = rocev2_inc ]; } &&
		   [ $rc -eq 1 ] &&
		   [ "$(echo "$out" | jf integrity_ok)" = true ]; then
			echo "run $name: error completion, as expected for RoCEv2" >&2
		else
			FAILED=1
			echo "run $name failed (exit $rc): $(echo "$out" | jf why)" >&2
		fi
	fi
	# a failed run that printed no result still has a verdict to show
	if [ $rc -ne 0 ]; then
		case $out in *'"verdict"'*) ;; *) out="{\"verdict\":\"failed (exit $rc)\"}" ;; esac
	fi
	printf -v "OUT_$name" '%s' "$out"
}
# get RUN FIELD: one field of a run's result; "-" when it has none
get() { local v="OUT_$1" r; r=$(echo "${!v}" | jf "$2"); echo "${r:--}"; }

COMMON=(--paths 4 --rate-gbps 100 --delay-us 2 --msg-size 64K --bytes "$BYTES")

# ok RUN: the run completed without a violation
ok() { [ "$(get "$1" verdict)" = ok ]; }
# worst MODE VALUES...: the largest (MODE max) or smallest (min) value; "-"
# when any is "-" (a failed run is the worst case)
worst() { local m=$1; shift
	printf '%s\n' "$@" | awk -v m="$m" '$1 == "-" { bad = 1 }
		$1 != "-" { if (n++ == 0 || (m == "max" ? $1 > w : $1 < w)) w = $1 }
		END { if (bad || !n) print "-"; else print w }'; }
# median VALUES...: "-" when any is "-"
median() { printf '%s\n' "$@" | awk '$1 == "-" { bad = 1 } { print }
		END { if (bad) print "BAD" }' | grep -q BAD && { echo -; return; }
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { printf "%.2f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# div A B [DECIMALS]: A / B, "-" when either is missing
div() { awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN {
	if (a != "-" && b != "-" && a != "" && b != "" && b + 0 > 0) printf "%.*f\n", d, a / b; else print "-" }'; }
# le A B / ge A B: A <= B / A >= B, false when either is "-"
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "-" && b != "-" && a + 0 <= b + 0) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "-" && b != "-" && a + 0 >= b + 0) }'; }

# The long-run family (issue #13): no decay over 20,000 base RTTs, and the
# loss ratios of every plane rate, across seeds.
if [ "$LONG" = 1 ]; then
	RATES=${RATES:-10 25 100} DELAYS=${DELAYS:-2 10} SIZES=${SIZES:-64K 1M}
	LOSSES=${LOSSES:-0.001 0.01 0.05} RTTS=${RTTS:-20000}
	LSEEDS=${SEEDS:-$(seq -s ' ' 1 20)}
	# decay RUN: last quarter / second quarter of the run's goodput
	# series (its last bin, the transfer's tail, left out); "-" without
	# a series of at least 8 bins
	decay() { local v="OUT_$1"
		echo "${!v}" | sed -n 's/.*"series_gbps":\[\([^]]*\)\].*/\1/p' |
		awk -F, '{ m = NF - 1; if (m < 8) { print "-"; exit }
			for (i = int(m / 4) + 1; i <= int(m / 2); i++) { a += $i; na++ }
			for (i = int(3 * m / 4) + 1; i <= m; i++) { b += $i; nb++ }
			if (a > 0) printf "%.3f\n", (b / nb) / (a / na); else print "-" }'; }
	# medw VALUES...: "median / worst" ("-" counts as the worst)
	medw() { printf '%s\n' "$@" | awk '{ print ($1 == "-") ? -1 : $1 }' | sort -g |
		awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s / %s", (m < 0 ? "-" : sprintf("%.3f", m)), (v[1] < 0 ? "-" : v[1]) }'; }
	need() { # TARGET-MEDIAN TARGET-WORST "median / worst" -> 0 when met
		awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN { split(s, x, " / ")
			exit !(x[1] != "-" && x[2] != "-" && x[1] + 0 >= a && x[2] + 0 >= b) }'; }
	echo "## MetaRoCE long runs: $RTTS base RTTs a run, seeds $LSEEDS"
	echo
	printf '| planes | delay us | msg | loss-free Gbit/s (median) |'
	for l in $LOSSES; do printf ' %s%% loss: median / worst of loss-free |' "$(awk -v l="$l" 'BEGIN { print l * 100 }')"; done
	echo " decay: worst last / second quarter | targets |"
	printf '|---|---|---|---|'
	for l in $LOSSES; do printf -- '---|'; done
	echo "---|---|"
	for R in $RATES; do for D in $DELAYS; do for M in $SIZES; do
		CELL=(--transport metaroce --paths 4 --rate-gbps "$R" --delay-us "$D" --msg-size "$M")
		run cal "${CELL[@]}" --bytes 256M
		if ! ok cal; then
			echo "| 4 x $R | $D | $M | calibration failed: $(get cal why) | |"
			FAILED=1
			continue
		fi
		# bytes for RTTS base RTTs at the loss-free goodput, and 40
		# goodput bins over the run
		BYTES_L=$(awk -v r="$(get cal base_rtt_us)" -v g="$(get cal goodput_gbps)" -v n="$RTTS" \
			'BEGIN { printf "%.0f", n * r * 1e-6 * g * 1e9 / 8 }')
		BIN=$(awk -v r="$(get cal base_rtt_us)" -v n="$RTTS" 'BEGIN { printf "%.0f", n * r / 40 }')
		CLEAN=() DECAY=() MISS=""
		declare -A LR=()
		for SEED in $LSEEDS; do
			run c "${CELL[@]}" --bytes "$BYTES_L" --series --bin-us "$BIN"
			g0=$(get c goodput_gbps)
			ok c || g0=-
			CLEAN+=("$g0") DECAY+=("$(decay c)")
			for l in $LOSSES; do
				run l "${CELL[@]}" --bytes "$BYTES_L" --series --bin-us "$BIN" --loss "$l"
				r=-
				ok l && [ "$g0" != - ] &&
					r=$(awk -v a="$(get l goodput_gbps)" -v b="$g0" 'BEGIN { printf "%.3f", a / b }')
				LR[$l]+=" $r"
				DECAY+=("$(decay l)")
			done
		done
		row="| 4 x $R | $D | $M | $(medw "${CLEAN[@]}" | sed 's| / .*||') |"
		for l in $LOSSES; do
			# shellcheck disable=SC2086
			mw=$(medw ${LR[$l]})
			row+=" $mw |"
			case $l in
			0.01) need 0.95 0.85 "$mw" || MISS+=" 1%" ;;
			0.05) need 0.85 0.75 "$mw" || MISS+=" 5%" ;;
			esac
		done
		dw=$(medw "${DECAY[@]}" | sed 's|.* / ||')
		awk -v d="$dw" 'BEGIN { exit !(d != "-" && d + 0 >= 0.95) }' || MISS+=" decay"
		[ -z "$MISS" ] || FAILED=1
		echo "$row $dw | ${MISS:+missed:}${MISS:-yes} |"
	done; done; done
	exit $FAILED
fi

# Loaded latency (issue #13): how much queue the bulk flow builds, seen by
# an 8-byte WRITE between the same hosts.
if [ "$LOADED" = 1 ]; then
	RATES=${RATES:-10 25 100} DELAYS=${DELAYS:-2 10}
	LSEEDS=${SEEDS:-1 2 3 4 5} LOADED_MS=${LOADED_MS:-5}
	echo "## Loaded latency: an 8-byte WRITE probe beside a bulk WRITE flow, seeds $LSEEDS"
	echo
	echo "One bulk QP (64 KiB WRITEs, 64 in flight) and the probe's QP (one 8-byte"
	echo "WRITE at a time, post to completion) from host 1 to host 0, 4 planes;"
	echo "the probe runs 1 ms alone, then beside the bulk for about $LOADED_MS ms."
	echo
	echo "| planes | delay us | transport | probe idle p50 / p99 us | loaded p50 / p99 us | loaded p99 / idle p99 (worst seed) | bulk with probe / alone (worst seed) | targets |"
	echo "|---|---|---|---|---|---|---|---|"
	for R in $RATES; do for D in $DELAYS; do for t in metaroce rocev2; do
		B=$(awk -v r="$R" -v ms="$LOADED_MS" 'BEGIN { printf "%.0f", 4 * r * 1e9 * ms * 1e-3 / 8 }')
		CELL=(--transport "$t" --paths 4 --rate-gbps "$R" --delay-us "$D" --msg-size 64K --outstanding 64 --bytes "$B")
		I50=() I99=() L50=() L99=() PR=() GR=()
		for SEED in $LSEEDS; do
			run alone "${CELL[@]}"
			run probe "${CELL[@]}" --probe-us 1000
			ok probe && ok alone || { FAILED=1; OUT_probe='{"verdict":"failed"}'; }
			I50+=("$(get probe probe_idle_p50_us)") I99+=("$(get probe probe_idle_p99_us)")
			L50+=("$(get probe probe_loaded_p50_us)") L99+=("$(get probe probe_loaded_p99_us)")
			PR+=("$(div "$(get probe probe_loaded_p99_us)" "$(get probe probe_idle_p99_us)")")
			GR+=("$(div "$(get probe goodput_gbps)" "$(get alone goodput_gbps)" 3)")
		done
		pr=$(worst max "${PR[@]}") gr=$(worst min "${GR[@]}") miss=""
		if [ "$t" = metaroce ]; then
			le "$pr" 3 || miss+=" p99"
			ge "$gr" 0.9 || miss+=" goodput"
			[ -z "$miss" ] || FAILED=1
			tgt="${miss:+missed:}${miss:-yes}"
		else
			tgt="(reference)"
		fi
		echo "| 4 x $R | $D | $t | $(median "${I50[@]}") / $(median "${I99[@]}") | $(median "${L50[@]}") / $(median "${L99[@]}") | $pr | $gr | $tgt |"
	done; done; done
	exit $FAILED
fi

# Incast (issue #13): INCAST senders into one receiver link.
if [ "$INCASTTAB" = 1 ]; then
	LSEEDS=${SEEDS:-1 2 3 4 5} INCAST=${INCAST:-64}
	echo "## $INCAST:1 incast, seeds $LSEEDS"
	echo
	echo "$INCAST senders (one leaf each), one QP each, 4 MiB in 64 KiB WRITEs, into"
	echo "one receiver: its 400 Gbit/s link is the bottleneck (4 x 100 Gbit/s planes)."
	echo
	echo "| seed | transport | goodput, share of the receiver link | Jain | RTOs | retransmits | tail drops | result | targets |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for SEED in $LSEEDS; do for t in metaroce rocev2; do
		run "${t}_inc" --transport "$t" "${COMMON[@]}" --senders "$INCAST" --bytes 4M
		OUT_inc=$(v="OUT_${t}_inc"; echo "${!v}")
		g=$(get inc goodput_gbps) j=$(get inc jain_fairness_ratio) rto=$(get inc rto_fires)
		ok inc || j=-
		miss=""
		if [ "$t" = metaroce ]; then
			ge "$j" 0.95 || miss+=" Jain"
			le "$rto" "$INCAST" || miss+=" RTOs"
			[ -z "$miss" ] || FAILED=1
			tgt="${miss:+missed:}${miss:-yes}"
		else
			tgt="(reference)"
			# RoCEv2 on a lossy fabric may end in an error completion:
			# the row shows it, it is not this script's failure
		fi
		echo "| $SEED | $t | $g ($(div "$g" "$(get inc capacity_gbps)")) | $j | $rto | $(get inc retransmits) | $(get inc drops_tail) | $(get inc verdict) | $tgt |"
	done; done
	exit $FAILED
fi

# The issue #3 targets across seeds (MetaRoCE only): loss-free >= 90% of
# the aggregate, 1% loss >= 95% and 5% loss >= 85% of the same seed's
# loss-free goodput, a plane blackholed half-way: no error completion and
# back to 90% of the surviving capacity within 10 RTTs.
if [ "$SEEDTAB" = 1 ]; then
	# a failed run's cell is "-", which meets no target
	pct() { awk -v a="$1" -v b="$2" 'BEGIN {
		if (a != "" && a != "-" && b != "" && b != "-" && b + 0 > 0) printf "%.1f", 100 * a / b; else print "-" }'; }
	echo "## MetaRoCE across seeds ($BYTES, 4 x 100 Gbit/s planes)"
	echo
	echo "| seed | loss-free % of 400 Gbit/s | 1% loss, % of loss-free | 5% loss, % of loss-free | plane blackholed: recovery RTTs | all targets |"
	echo "|---|---|---|---|---|---|"
	ALL_C=() ALL_L1=() ALL_L5=() ALL_REC=()
	N=0 NOK=0 OK_C=0 OK_L1=0 OK_L5=0 OK_BH=0
	for SEED in ${SEEDS:-1 2 3 4 5 6 7 8 9 10}; do
		run clean --transport metaroce "${COMMON[@]}"
		run loss1 --transport metaroce "${COMMON[@]}" --loss 0.01
		run loss5 --transport metaroce "${COMMON[@]}" --loss 0.05
		# the blackhole goes half-way through the clean run: without
		# one there is no half-way, and the seed misses that target
		vt=$(get clean virtual_time_us)
		[ "$(get clean verdict)" = ok ] || vt=-
		if [ "$vt" != - ]; then
			at=$(awk -v v="$vt" 'BEGIN { printf "%.3f", v / 2000 }')
			run bh --transport metaroce "${COMMON[@]}" --blackhole "1@$at"
		else
			OUT_bh='{"verdict":"not run: the clean run failed"}'
		fi
		g=$(get clean goodput_gbps)
		[ "$(get clean verdict)" = ok ] || g=-
		for k in loss1 loss5; do
			[ "$(get $k verdict)" = ok ] || printf -v "OUT_$k" '%s' '{"verdict":"failed"}'
		done
		c=$(pct "$g" 400)
		l1=$(pct "$(get loss1 goodput_gbps)" "$g")
		l5=$(pct "$(get loss5 goodput_gbps)" "$g")
		rec=$(get bh recovery_rtts)
		miss=""
		ge "$c" 90 || miss="$miss loss-free"
		ge "$l1" 95 || miss="$miss 1%"
		ge "$l5" 85 || miss="$miss 5%"
		if [ "$(get bh error_completions)" != 0 ] ||
		   [ "$(get bh verdict)" != ok ] || ! ge "$rec" 0 ||
		   ! ge 10 "$rec"; then
			miss="$miss blackhole"
		fi
		[ -n "$miss" ] && FAILED=1
		echo "| $SEED | $c | $l1 | $l5 | $rec | ${miss:+missed:}${miss:-yes} |"
		ALL_C+=("$c") ALL_L1+=("$l1") ALL_L5+=("$l5") ALL_REC+=("$rec")
		N=$((N + 1))
		[ -n "$miss" ] || NOK=$((NOK + 1))
		case $miss in *loss-free*) ;; *) OK_C=$((OK_C + 1)) ;; esac
		case $miss in *1%*) ;; *) OK_L1=$((OK_L1 + 1)) ;; esac
		case $miss in *5%*) ;; *) OK_L5=$((OK_L5 + 1)) ;; esac
		case $miss in *blackhole*) ;; *) OK_BH=$((OK_BH + 1)) ;; esac
	done
	# med CELLS...: the median of a share column; a failed run ("-")
	# sorts below every share, and a median that lands on one is "-".
	# medrec CELLS...: of the recovery column, where a failed recovery
	# (-1 RTTs, or "-": no run) sorts as "never", above any count.
	med() { printf '%s\n' "$@" | awk '{ print ($1 == "-") ? -1e9 : $1 }' | sort -g |
		awk '{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      if (m < 0) print "-"; else printf "%.1f\n", m }'; }
	medrec() { printf '%s\n' "$@" | awk '{ print ($1 == "-" || $1 < 0) ? 1e9 : $1 }' | sort -g |
		awk '{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      if (m >= 1e9) print "never"; else printf "%.1f\n", m }'; }
	echo "| median | $(med "${ALL_C[@]}") | $(med "${ALL_L1[@]}") | $(med "${ALL_L5[@]}") | $(medrec "${ALL_REC[@]}") | |"
	echo "| seeds meeting the target | $OK_C of $N | $OK_L1 of $N | $OK_L5 of $N | $OK_BH of $N | $NOK of $N |"
	exit $FAILED
fi

for t in metaroce rocev2; do
	run "${t}_clean" --transport $t "${COMMON[@]}"
	run "${t}_loss1" --transport $t "${COMMON[@]}" --loss 0.01
	run "${t}_loss5" --transport $t "${COMMON[@]}" --loss 0.05
done

# blackhole one of 4 planes half-way through the clean transfer
for t in metaroce rocev2; do
	vt=$(get "${t}_clean" virtual_time_us)
	if [ "$(get "${t}_clean" verdict)" != ok ] || [ "$vt" = - ]; then
		# no clean run, no half-way point: the blackhole run is not made
		FAILED=1
		printf -v "OUT_${t}_bh" '%s' '{"verdict":"not run: the clean run failed"}'
		eval "BH_${t}=- BHAT_${t}=-"
		continue
	fi
	at=$(awk -v v="$vt" 'BEGIN { printf "%.3f", v / 2000 }')
	# RoCEv2: the QP's one plane is the interesting one to lose; MetaRoCE
	# sprays, so plane 1 is as good as any
	bh=1
	if [ $t = rocev2 ]; then
		bh=$(echo "$OUT_rocev2_clean" | sed -n 's/.*"path_share_ratio":\[\([^]]*\)\].*/\1/p' |
			tr ',' '\n' | awk '$1 > 0.5 { print NR - 1; exit }')
		bh=${bh:-1}
	fi
	run "${t}_bh" --transport $t "${COMMON[@]}" --blackhole "$bh@$at"
	eval "BH_${t}=$bh BHAT_${t}=$at"
done
# RoCEv2 in MetaRoCE's run too: plane 1 at the same time (harmless to a
# QP that hashed elsewhere)
if [ "$BHAT_metaroce" != - ]; then
	run rocev2_bh1 --transport rocev2 "${COMMON[@]}" --blackhole "1@$BHAT_metaroce"
else
	OUT_rocev2_bh1='{"verdict":"not run: the MetaRoCE clean run failed"}'
fi

for t in metaroce rocev2; do
	run "${t}_incast" --transport $t "${COMMON[@]}" --senders 8 --bytes 8M
	run "${t}_asym" --transport $t --rates 100,50,25,10 --delay-us 2 \
		--msg-size 64K --bytes "$BYTES"
	run "${t}_dupcor" --transport $t "${COMMON[@]}" --dup 0.01 --corrupt 0.01
done

run scale --transport metaroce --paths 8 --rate-gbps 100 --senders "$SCALE_CONNS" \
	--shared-leaf --bytes 64K --msg-size 16K --outstanding 4 \
	--time-limit-ms 60000 --stall-ms 2000
run bench_mr --bench-engine --transport metaroce --msg-size 64K --bytes 256M
run bench_rv2 --bench-engine --transport rocev2 --msg-size 64K --bytes 256M

echo "## mroce_sim measurements (seed $SEED, $BYTES per connection)"
echo
echo "Fabric: 4 planes x 100 Gbit/s, 2 us one-way, host links 400 Gbit/s,"
echo "one QP, 64 KiB WRITEs, 16 in flight. Goodput ratios are against the"
echo "loss-free run of the same transport in this invocation."
echo
echo "| scenario | transport | goodput Gbit/s | vs loss-free | retransmits | p99 WR latency us | result |"
echo "|---|---|---|---|---|---|---|"
for t in metaroce rocev2; do
	base=$(get "${t}_clean" goodput_gbps)
	for s in clean loss1 loss5 bh; do
		n="${t}_$s"
		case $s in
		clean) label="no loss" ;;
		loss1) label="1% loss every plane" ;;
		loss5) label="5% loss every plane" ;;
		bh) eval "label=\"plane \$BH_${t} blackholed at \$BHAT_${t} ms\"" ;;
		esac
		g=$(get "$n" goodput_gbps)
		echo "| $label | $t | $g | $(ratio "$g" "$base") | $(get "$n" retransmits) | $(get "$n" fct_p99_us) | $(get "$n" verdict) |"
	done
done
echo
echo "### Multipath: one connection over 4 equal planes"
echo
echo "| transport | goodput Gbit/s | of 400 Gbit/s aggregate | per-plane share |"
echo "|---|---|---|---|"
for t in metaroce rocev2; do
	n="${t}_clean"
	g=$(get "$n" goodput_gbps)
	v="OUT_$n"
	share=$(echo "${!v}" | sed -n 's/.*"path_share_ratio":\[\([^]]*\)\].*/\1/p')
	echo "| $t | $g | $(ratio "$g" 400) | $share |"
done
echo
echo "### Blackhole of one plane mid-transfer"
echo
echo "| transport | plane lost | pre-failure Gbit/s | post-failure Gbit/s | post/pre (ideal 75%) | longest stall us | recovery us | recovery RTTs | error completions | result |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in metaroce_bh rocev2_bh rocev2_bh1; do
	t=${n%%_*}
	case $n in
	rocev2_bh) plane="$BH_rocev2 (its QP's plane) at $BHAT_rocev2 ms" ;;
	*) plane="1 at $BHAT_metaroce ms" ;;
	esac
	pre=$(get "$n" pre_fail_gbps)
	post=$(get "$n" post_fail_gbps)
	echo "| $t | $plane | $pre | $post | $(ratio "$post" "$pre") | $(get "$n" fail_stall_us) | $(get "$n" recovery_us) | $(get "$n" recovery_rtts) | $(get "$n" error_completions) | $(get "$n" verdict) $(get "$n" why | sed "s/^-$//") |"
done
echo
echo "(recovery: from the failure to the start of the first window of"
echo "max(10 RTTs, 8 messages) whose goodput, and the average from there to"
echo "the end, reach 90% of the pre-failure goodput scaled to the surviving"
echo "capacity (3 of 4 planes); -1: not recovered or the run failed. Base RTT"
echo "$(get metaroce_bh base_rtt_us) us. Stall: longest time without any"
echo "completion across the failure.)"
echo
echo "### Other networks"
echo
echo "| scenario | transport | goodput Gbit/s | of capacity | retransmits | Jain | result |"
echo "|---|---|---|---|---|---|---|"
for t in metaroce rocev2; do
	for s in incast asym dupcor; do
		n="${t}_$s"
		case $s in
		incast) label="8:1 incast, 8 MiB each, one leaf per sender" ;;
		asym) label="planes 100/50/25/10 Gbit/s (reordering)" ;;
		dupcor) label="1% duplication + 1% corruption" ;;
		esac
		g=$(get "$n" goodput_gbps)
		echo "| $label | $t | $g | $(ratio "$g" "$(get "$n" capacity_gbps)") | $(get "$n" retransmits) | $(get "$n" jain_fairness_ratio) | $(get "$n" verdict) |"
	done
done
echo
echo "### Scale: $SCALE_CONNS connections x 8 planes into one engine"
echo
echo "All senders behind one leaf, 8 x 100 Gbit/s planes, receiver link 800"
echo "Gbit/s; 64 KiB per connection in 16 KiB WRITEs, 4 in flight."
echo
echo "| connections | engine memory per connection (bytes) | Jain (per-QP throughput) | Jain (bytes at first finish) | goodput Gbit/s | drops | result |"
echo "|---|---|---|---|---|---|---|"
echo "| $(get scale conns) | $(get scale mem_per_conn_bytes) | $(get scale jain_fairness_ratio) | $(get scale jain_first_finish_ratio) | $(get scale goodput_gbps) | $(get scale drops_tail) | $(get scale verdict) $(get scale why | sed "s/^-$//") |"
echo
echo "### Engine CPU cost (wall clock, this machine, 64 KiB WRITEs)"
echo
echo "| transport | ns per data packet (rx+placement+ACK) | ns per ACK processed | ns per data packet sent |"
echo "|---|---|---|---|"
echo "| metaroce | $(get bench_mr rx_data_ns) | $(get bench_mr rx_ack_ns) | $(get bench_mr tx_data_ns) |"
echo "| rocev2 | $(get bench_rv2 rx_data_ns) | $(get bench_rv2 rx_ack_ns) | $(get bench_rv2 tx_data_ns) |"
exit $FAILED
