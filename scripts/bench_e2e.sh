#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# NAME
#     bench_e2e.sh - MetaRoCE vs RoCEv2 end to end over the namespace fabric
#
# SYNOPSIS
#     scripts/bench_e2e.sh [--backend afxdp|udp] [--modes LIST] [--daemon]
#                          [--pin] [--seconds S] [--rounds K] [--rate R]
#                          [--size B] [--json] [--help]
#
# DESCRIPTION
#     Brings up a 4-path scripts/fabric.sh fabric (MTU 9000), measures in
#     one run, between its two hosts:
#       ceiling   unreliable AF_XDP blast (mroce_blast, 8192-byte payloads):
#                 what one sending thread pushes through the fabric's
#                 forwarding chain (docs/fabric.md, "What the ceiling is")
#       clean     mroce_perf write_bw, both transports; MetaRoCE / ceiling
#                 (target >= 0.8)
#       loss 1%   random loss on every path; each transport / its clean
#                 goodput (target for MetaRoCE >= 0.9)
#       rate R    every path limited to R by tbf; MetaRoCE >= 0.85 x 4R,
#                 RoCEv2 <= R (one path per QP)
#       blackhole the busiest path blackholed 1 s into the run: MetaRoCE
#                 must complete, RoCEv2's outcome is recorded
#       latency   write_lat 8 B p50/p99 of both transports vs a kernel UDP
#                 ping-pong (mroce_blast --udp --pingpong) between the same
#                 namespaces (half round trips), in each of K rounds; the
#                 median round
#     in each mode of --modes (embedded: mroce_perf owns its backend;
#     daemon: an mroced per host does, mroce_perf talks to it), and
#     prints one table (or one JSON object with --json). With two modes
#     the rows come per mode, interleaved in each round (the blast, then
#     each mode's clean and 1% loss runs), followed by the mode ratios:
#       daemon / embedded clean write_bw       (target >= 0.95)
#       daemon / embedded write_lat 8 B p50    (target <= 1.3)
#       the process hand-off on one core and on two (mroce_blast
#       --handoff): daemon mode adds two per half round trip
#       efficiency: Gbit moved per CPU-second of every process of both
#       hosts (both mroce_perf, from their own getrusage, and the
#       daemons, from /proc), daemon / embedded (target >= 0.8)
#     and, in daemon mode, the CPU share of a daemon whose applications
#     are connected but quiet (mroce_perf --idle; target < 2% of a core).
#     Every number comes from this run: compare ratios, not absolute
#     numbers of runs on other machines or at other loads.
#
# OPTIONS
#     --backend B   libmroce I/O backend for mroce_perf: afxdp (default;
#                   mrocectl attach on each host's eth0) or udp
#     --modes LIST  embedded, daemon or embedded,daemon (default embedded)
#     --daemon      the same as --modes daemon
#     --pin         each host on one core: host A's processes (application,
#                   daemon) on CPU 0, host B's on CPU 1, as on two
#                   machines with one core each for mroce; the blast and
#                   the UDP ping-pong too
#     --seconds S   length of each bandwidth run and of the blast (5)
#     --rounds K    interleaved rounds of the ceiling, clean and 1% loss
#                   measurements (3): each round runs the blast, then
#                   both transports clean, then both at 1% loss, and
#                   the ratios of each round compare runs seconds apart;
#                   the table shows the median round and the spread.
#                   The rate row runs K times too (each run draws its
#                   own ports) and shows the median run; so do the
#                   latency rows (each round: the UDP ping-pong, then
#                   every mode's write_lat).
#                   The host is shared and its load swings: one
#                   blast alone varied 6.1-8.8 Gb/s within an hour
#     --rate R      per-path tbf rate of the rate-limit row (300mbit)
#     --size B      write_bw message size (65536)
#     --json        one JSON object instead of the table
#     -h, --help    this text
#
# ENVIRONMENT
#     MROCE_BUILD   build directory (default build)
#
# EXIT STATUS
#     0 every run completed (a RoCEv2 failure under the blackhole is an
#     expected result, and missed targets are reported, not fatal);
#     1 a MetaRoCE run or the blast failed, or the fabric could not be set
#     up; 2 bad arguments.
#
# EXAMPLE
#     make && scripts/bench_e2e.sh --seconds 5
#     MROCE_BUILD=build scripts/bench_e2e.sh --backend udp --json
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="$PATH:/usr/sbin:/sbin"
B=${MROCE_BUILD:-build}
export MROCE_BUILD=$B
PERF=$B/bin/mroce_perf
CTL=$B/bin/mrocectl
BLAST=$B/bin/mroce_blast
MROCED=$B/bin/mroced
FABRIC=scripts/fabric.sh

BACKEND=afxdp DAEMON=0 MODES=embedded PIN=0 SECS=5 ROUNDS=3 RATE=300mbit SIZE=65536 JSON=0
usage() { echo "bench_e2e.sh: $*" >&2; echo "Try 'scripts/bench_e2e.sh --help'." >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--backend) BACKEND=${2:-}; shift 2 || usage "--backend needs a value" ;;
	--daemon) MODES=daemon; shift ;;
	--modes) MODES=${2:-}; shift 2 || usage "--modes needs a value" ;;
	--pin) PIN=1; shift ;;
	--seconds) SECS=${2:-}; shift 2 || usage "--seconds needs a value" ;;
	--rounds) ROUNDS=${2:-}; shift 2 || usage "--rounds needs a value" ;;
	--rate) RATE=${2:-}; shift 2 || usage "--rate needs a value" ;;
	--size) SIZE=${2:-}; shift 2 || usage "--size needs a value" ;;
	--json) JSON=1; shift ;;
	-h|--help) sed -n '4,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) usage "unknown argument '$1'" ;;
	esac
done
case $BACKEND in afxdp|udp) ;; *) usage "--backend afxdp|udp" ;; esac
case $MODES in embedded|daemon|embedded,daemon|daemon,embedded) ;;
	*) usage "--modes: embedded, daemon or embedded,daemon" ;; esac
MODES=${MODES//,/ }
[ "$PIN" -eq 0 ] || command -v taskset >/dev/null ||
	{ echo "bench_e2e.sh: --pin needs taskset (util-linux)" >&2; exit 1; }
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 2 ] || usage "--seconds: 2 or more"
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] ||
	usage "--rounds: 1 to 20"
[[ $SIZE =~ ^[0-9]+$ ]] && [ "$SIZE" -ge 1 ] || usage "--size: a byte count"
[[ $RATE =~ ^[0-9]+[kmg]?bit$ ]] || usage "--rate: e.g. 300mbit"
[ "$(id -u)" -eq 0 ] || { echo "bench_e2e.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for f in "$PERF" "$CTL" "$BLAST"; do
	[ -x "$f" ] || { echo "bench_e2e.sh: $f missing: run make" >&2; exit 1; }
done
[[ " $MODES " != *" daemon "* ]] || [ -x "$MROCED" ] ||
	{ echo "bench_e2e.sh: $MROCED missing" >&2; exit 1; }

log() { [ $JSON -eq 1 ] || echo "$*" >&2; }

# shellcheck source=scripts/session.sh
. scripts/session.sh
session_start be$$ bench

bash $FABRIC up --prefix "$PREFIX" --paths 4 --mtu 9000 >/dev/null ||
	{ echo "bench_e2e.sh: fabric up failed" >&2; exit 1; }
eval "$(bash $FABRIC status --prefix "$PREFIX" --env)"
NS_A=$FABRIC_A_NS NS_B=$FABRIC_B_NS IP_A=$FABRIC_A_IP IP_B=$FABRIC_B_IP

# host NS CMD...: CMD in namespace NS with bpffs mounted; in embedded
# AF_XDP mode with mroce's XDP program attached afresh to eth0, in
# embedded UDP mode with none, in daemon mode as the daemon left it.
# (HOST_ATT overrides: the daemons themselves start from a bare eth0.)
host() {
	local ns=$1 att=0
	shift
	[ "$BACKEND" = afxdp ] && att=1
	[ $DAEMON -eq 1 ] && att=keep
	att=${HOST_ATT:-$att}
	# Always started with &: exec, so that the pid the caller keeps (and
	# kills) is the program's own, not a subshell's that would leave the
	# program running.
	exec $(pin_of "$ns") ip netns exec "$ns" bash -c '
		mount -t bpf bpf /sys/fs/bpf || exit 2
		[ '$att' = keep ] && exec "$@"
		'"$CTL"' detach eth0 >/dev/null 2>&1
		ip link set dev eth0 xdp off 2>/dev/null
		if [ '$att' = 1 ]; then
			'"$CTL"' attach eth0 >/dev/null ||
				{ echo "mrocectl attach eth0 failed"; exit 2; }
		fi
		exec "$@"' host "$@"
}

# pin_of NS: the taskset prefix of host NS under --pin (A: CPU 0, B: 1)
pin_of() {
	[ "$PIN" -eq 1 ] || return 0
	if [ "$1" = "$NS_A" ]; then echo "taskset -c 0"; else echo "taskset -c 1"; fi
}

PORT=$((21000 + $$ % 20000))
wait_listen() { # port pid
	for _ in $(seq 200); do
		kill -0 "$2" 2>/dev/null || return 1
		ip netns exec "$NS_B" ss -Hltn "sport = :$1" 2>/dev/null |
			grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# perf_start TRANSPORT OP ARGS...: server on B, client on A in
# the background; OUT is the client's output file, CPID/SPID the pids.
perf_start() {
	local tr=$1 op=$2 dev
	shift 2
	PORT=$((PORT + 1))
	OUT=$TMP/$op-$tr-$PORT
	if [ $DAEMON -eq 1 ]; then
		devs=(--transport "$tr" --daemon="$TMP/mroced-B.sock")
		devc=(--transport "$tr" --daemon="$TMP/mroced-A.sock")
	else
		dev=(--transport "$tr" --backend "$BACKEND" --rto-min 1000)
		[ "$BACKEND" = afxdp ] && dev+=(--ifname eth0)
		devs=("${dev[@]}" --local "$IP_B")
		devc=("${dev[@]}" --local "$IP_A")
	fi
	host "$NS_B" timeout 120 "$PERF" "$op" -p $PORT "${devs[@]}" "$@" \
		>"$OUT.srv" 2>&1 &
	SPID=$!
	PIDS+=($!)
	CPID=
	wait_listen $PORT $SPID || return 1
	host "$NS_A" timeout 120 "$PERF" "$op" -p $PORT "${devc[@]}" \
		"$@" "$IP_B" >"$OUT" 2>&1 &
	CPID=$!
	PIDS+=($!)
}

# perf_finish: wait; RC = client exit status, ERR = its error line.
perf_finish() {
	RC=1
	if [ -n "$CPID" ]; then
		wait "$CPID"
		RC=$?
	fi
	[ $RC -eq 0 ] || { sleep 1; kill "$SPID" 2>/dev/null; }
	wait "$SPID" 2>/dev/null
	ERR=$(grep -h -m1 'mroce_perf:' "$OUT" "$OUT.srv" 2>/dev/null | head -1 |
		sed 's/^mroce_perf: //')
	[ $RC -eq 0 ] || [ -n "$ERR" ] || ERR="client exit $RC"
}

# col N FILE: field N of the result row (the line after "#bytes").
col() {
	grep -A1 -m1 '#bytes' "$2" 2>/dev/null | tail -1 |
		awk -v n="$1" '$1 ~ /^[0-9]+$/ { print $n }'
}
retx() { sed -n 's/^ *Data packets *: [0-9]* sent, \([0-9]*\) retransmitted.*/\1/p' "$1"; }

# CPU seconds (user + system) a process used so far, from /proc
TCK=$(getconf CLK_TCK)
proc_cpu() { awk -v t="$TCK" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat" 2>/dev/null || echo 0; }
daemons_cpu() { # both daemons together (0 in embedded mode)
	local p t=0
	for p in "${DPIDS[@]}"; do t=$(awk -v a="$t" -v b="$(proc_cpu "$p")" 'BEGIN { print a + b }'); done
	echo "$t"
}
perf_cpu() { sed -n 's/^ *CPU *: \([0-9.]*\) s.*/\1/p' "$1" | head -1; }

# bw TRANSPORT ARGS... -> GBPS RETX RC ERR (goodput of write_bw -D SECS),
# CPU (CPU-seconds of both mroce_perf and both daemons during the run)
bw() {
	local tr=$1 d0 d1 pc ps
	shift
	d0=$(daemons_cpu)
	perf_start "$tr" write_bw -s "$SIZE" -D "$SECS" --report_gbits "$@"
	perf_finish
	d1=$(daemons_cpu)
	GBPS=$(col 4 "$OUT")
	RETX=$(retx "$OUT")
	pc=$(perf_cpu "$OUT") ps=$(perf_cpu "$OUT.srv")
	CPU=-
	[ -n "$pc" ] && [ -n "$ps" ] &&
		CPU=$(awk -v a="$pc" -v b="$ps" -v c="$d0" -v d="$d1" 'BEGIN { printf "%.3f", a + b + d - c }')
	# a failed or empty measurement is "-", never 0
	[ $RC -eq 0 ] && [ -n "$GBPS" ] || GBPS=-
	[ -n "$RETX" ] || RETX=-
}
# eff GBPS CPU: Gbit moved per CPU-second ("-" when unknown)
eff() { awk -v g="$1" -v c="$2" -v s="$SECS" 'BEGIN { if (g > 0 && c > 0) printf "%.3f", g * s / c; else print "-" }'; }

# ratio A B: A / B, "-" when either is missing ("-" or empty) or B <= 0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {
	if (a == "-" || a == "" || b == "-" || b == "" || b + 0 <= 0) print "-"
	else printf "%.3f", a / b }'; }
# meets R OP T: yes / NO; a missing measurement ("-") never meets a target
meets() { awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
	if (a == "-" || a == "") { print "NO"; exit }
	if (op == ">=") print (a >= b ? "yes" : "NO"); else print (a <= b ? "yes" : "NO") }'; }
# drops [PATH]: packets the fabric's nftables rules (random loss,
# blackhole) dropped so far on PATH, or on every path; both directions
drops() {
	bash $FABRIC counters --prefix "$PREFIX" | awk -F= -v j="${1:-}" '
		$1 ~ /_DROP(12|21)$/ && (j == "" || $1 ~ "^FABRIC_P" j "_") { n += $2 }
		END { print n + 0 }'
}
rate_gbps() { # 300mbit -> 0.3
	awk -v r="$1" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1, 1)
		m = (u == "k") ? 1e3 : (u == "m") ? 1e6 : (u == "g") ? 1e9 : 1
		printf "%.3f", n * m / 1e9 }'
}
impair_all() { # fabric.sh impair options for every path
	local j
	for j in $(seq "$FABRIC_PATHS"); do
		bash $FABRIC impair --prefix "$PREFIX" --path "$j" "$@" >/dev/null ||
			{ echo "bench_e2e.sh: impair failed" >&2; exit 1; }
	done
}

FAIL=0
ROWS=()   # "name|metaroce|rocev2|reference|ratio|target|met|note"
row() { ROWS+=("$1|$2|$3|$4|$5|$6|$7|$8"); }

# ---------------------------------------------------------------- ceiling
# blast_once: one unreliable AF_XDP blast of SECS seconds; CEIL = its
# goodput (received packets x 8192 B), "-" when it failed.
blast_once() {
	rm -f "$TMP/ready"
	$(pin_of "$NS_B") ip netns exec "$NS_B" "$BLAST" --rx --ifname eth0 --size 8192 \
		--seconds $((SECS + 3)) --ready "$TMP/ready" --json >"$TMP/blast-rx" 2>&1 &
	BRX=$!
	PIDS+=($!)
	for _ in $(seq 100); do [ -e "$TMP/ready" ] && break; sleep 0.05; done
	$(pin_of "$NS_A") ip netns exec "$NS_A" "$BLAST" --tx --ifname eth0 --src "$IP_A" --dst "$IP_B" \
		--dmac "$FABRIC_A_GW_MAC" --size 8192 --seconds "$SECS" --json \
		>"$TMP/blast-tx" 2>&1
	wait $BRX
	MPPS=$(sed -n 's/.*"rate_mpps":\([0-9.]*\).*/\1/p' "$TMP/blast-rx")
	CEIL=-
	[ -n "$MPPS" ] &&
		CEIL=$(awk -v p="$MPPS" 'BEGIN { printf "%.3f", p * 1e6 * 8192 * 8 / 1e9 }')
	awk -v p="${MPPS:-0}" 'BEGIN { exit !(p > 0) }' || { echo "bench_e2e.sh: blast failed: $(cat "$TMP/blast-rx" "$TMP/blast-tx")" >&2; FAIL=1; }
}

# The daemons (--daemon): one per host, for every run but the blasts
# (whose receiver needs eth0 for its own XDP program): stopped for each
# blast and started again after it.
DPIDS=()
daemons_start() {
	[ $DAEMON -eq 1 ] || return 0
	local h ns ip
	DPIDS=()
	for h in A B; do
		ns=NS_$h ip=IP_$h
		rm -f "$TMP/mroced-$h.sock"
		dargs=(--local "${!ip}" --sock "$TMP/mroced-$h.sock" --rto-min 1000)
		[ "$BACKEND" = afxdp ] && dargs+=(--backend afxdp --ifname eth0 --attach)
		HOST_ATT=0 host "${!ns}" "$MROCED" "${dargs[@]}" >"$TMP/mroced-$h.log" 2>&1 &
		PIDS+=($!)
		DPIDS+=($!)
	done
	for h in A B; do
		for _ in $(seq 100); do [ -S "$TMP/mroced-$h.sock" ] && break; sleep 0.05; done
		[ -S "$TMP/mroced-$h.sock" ] ||
			{ echo "bench_e2e.sh: mroced on $h did not start:" >&2; cat "$TMP/mroced-$h.log" >&2; exit 1; }
	done
}
daemons_stop() {
	[ $DAEMON -eq 1 ] && [ ${#DPIDS[@]} -gt 0 ] || return 0
	kill "${DPIDS[@]}" 2>/dev/null
	wait "${DPIDS[@]}" 2>/dev/null
	DPIDS=()
}

# median of the arguments ("-" when none)
median() { printf '%s\n' "$@" | grep -v '^-$' | sort -g |
	awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# spread of the arguments: "min-max"
spread() { printf '%s\n' "$@" | grep -v '^-$' | sort -g |
	awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s-%s", lo, hi }'; }

# ---------------------------------------------------------------- clean, loss 1%
# ROUNDS interleaved rounds of: blast, then in each mode both transports
# clean and both at 1% loss. Each round's ratios compare runs a few
# seconds apart, so a load swing between rounds (this is a shared 2-core
# machine) moves numerator and denominator together; the table gives the
# median round. Keys: MODE.TRANSPORT.MEASURE.
set_mode() { # embedded | daemon
	MODE=$1
	if [ "$MODE" = daemon ]; then DAEMON=1; else DAEMON=0; fi
}
NMODES=$(echo $MODES | wc -w)
tag() { [ "$NMODES" -gt 1 ] && echo " ($1)"; } # row suffix with two modes
declare -A G R E RES BHP L50 L99 GS CPUS EFFS
declare -a CEILS
declare -A RCLEAN RLOSS RLOSS2 RMODE RTR LDROPS BHDROPS
for round in $(seq "$ROUNDS"); do
	log "round $round/$ROUNDS: ceiling: AF_XDP blast, 8192-byte payloads, $SECS s"
	daemons_stop
	blast_once
	CEILS+=("$CEIL")
	for m in $MODES; do
		set_mode "$m"
		daemons_start
		for tr in metaroce rocev2; do
			log "round $round/$ROUNDS: $m: clean: $tr write_bw"
			bw $tr
			k=$m.$tr.clean
			GS[$k]+=" $GBPS" R[$k]=$RETX E[$k]=${E[$k]:-$ERR}
			EFFS[$k]+=" $(eff "$GBPS" "$CPU")" CPUS[$k]+=" $CPU"
			eval "C_${m}_$tr=$GBPS"
			[ $RC -eq 0 ] || { [ $tr = metaroce ] && FAIL=1; }
		done
		RCLEAN[$m]+=" $(ratio "$(eval echo \$C_${m}_metaroce)" "$CEIL")"
		RTR[$m]+=" $(ratio "$(eval echo \$C_${m}_metaroce)" "$(eval echo \$C_${m}_rocev2)")"
		impair_all --loss 0.01
		for tr in metaroce rocev2; do
			log "round $round/$ROUNDS: $m: 1% loss: $tr write_bw"
			d0=$(drops)
			bw $tr
			LDROPS[$m.$tr]=$(($(drops) - d0))
			k=$m.$tr.loss
			GS[$k]+=" $GBPS" R[$k]=$RETX E[$k]=${E[$k]:-$ERR}
			eval "L_${m}_$tr=$GBPS"
			[ $RC -eq 0 ] || { [ $tr = metaroce ] && FAIL=1; }
		done
		impair_all --loss 0
		RLOSS[$m]+=" $(ratio "$(eval echo \$L_${m}_metaroce)" "$(eval echo \$C_${m}_metaroce)")"
		RLOSS2[$m]+=" $(ratio "$(eval echo \$L_${m}_rocev2)" "$(eval echo \$C_${m}_rocev2)")"
		daemons_stop
	done
	if [ "$NMODES" -gt 1 ]; then
		RMODE[bw]+=" $(ratio "$C_daemon_metaroce" "$C_embedded_metaroce")"
		e1=$(eff "$C_daemon_metaroce" "${CPUS[daemon.metaroce.clean]##* }")
		e0=$(eff "$C_embedded_metaroce" "${CPUS[embedded.metaroce.clean]##* }")
		RMODE[eff]+=" $(ratio "$e1" "$e0")"
	fi
done
CEIL=$(median "${CEILS[@]}")
for m in $MODES; do
	for k in metaroce.clean rocev2.clean metaroce.loss rocev2.loss; do
		# shellcheck disable=SC2086
		G[$m.$k]=$(median ${GS[$m.$k]})
	done
	for k in metaroce.clean rocev2.clean; do
		# shellcheck disable=SC2086
		G[$m.$k.eff]=$(median ${EFFS[$m.$k]})
	done
	# shellcheck disable=SC2086
	r=$(median ${RCLEAN[$m]})
	rn=""
	# shellcheck disable=SC2086
	[ "$ROUNDS" -gt 1 ] && rn="median of $ROUNDS interleaved rounds (ratios $(spread ${RCLEAN[$m]}), blast $(spread "${CEILS[@]}") Gb/s)"
	row "clean goodput Gb/s$(tag "$m")" "${G[$m.metaroce.clean]}" "${G[$m.rocev2.clean]}" \
		"$CEIL (blast)" "$r" ">= 0.8" "$(meets "$r" ">=" 0.8)" \
		"$rn${E[$m.metaroce.clean]:+ metaroce: ${E[$m.metaroce.clean]}}${E[$m.rocev2.clean]:+ rocev2: ${E[$m.rocev2.clean]}}"
	if [ "$m" = daemon ]; then
		# shellcheck disable=SC2086
		r=$(median ${RTR[$m]})
		row "clean goodput, metaroce / rocev2$(tag "$m")" "${G[$m.metaroce.clean]}" "${G[$m.rocev2.clean]}" \
			"-" "$r" ">= 1" "$(meets "$r" ">=" 1)" \
			"median round (ratios $(spread ${RTR[$m]}))"
	fi
	# shellcheck disable=SC2086
	r=$(median ${RLOSS[$m]})
	# shellcheck disable=SC2086
	r2=$(median ${RLOSS2[$m]})
	rn=""
	# shellcheck disable=SC2086
	[ "$ROUNDS" -gt 1 ] && rn="median round (ratios $(spread ${RLOSS[$m]})); "
	# the impairment must have happened: the fabric dropped packets
	mt=$(meets "$r" ">=" 0.9)
	[ "${LDROPS[$m.metaroce]:-0}" -gt 0 ] || mt="NO (nothing dropped)"
	row "1% loss goodput Gb/s$(tag "$m")" "${G[$m.metaroce.loss]}" "${G[$m.rocev2.loss]}" \
		"own clean" "$r (rocev2 $r2)" ">= 0.9" "$mt" \
		"${rn}fabric drops ${LDROPS[$m.metaroce]:-0} / ${LDROPS[$m.rocev2]:-0}, retransmits ${R[$m.metaroce.loss]} / ${R[$m.rocev2.loss]} (last round)${E[$m.metaroce.loss]:+ metaroce: ${E[$m.metaroce.loss]}}${E[$m.rocev2.loss]:+ rocev2: ${E[$m.rocev2.loss]}}"
	row "clean efficiency Gbit per CPU-s$(tag "$m")" "${G[$m.metaroce.clean.eff]}" "${G[$m.rocev2.clean.eff]}" \
		"-" "-" "-" "-" "both hosts' mroce_perf$([ "$m" = daemon ] && echo " and mroced") (user + system); median round"
done

# ---------------------------------------------------------------- rate
# ROUNDS runs of each transport: every run draws its own source ports,
# so which planes a connection starts on is luck; the median run is
# the row (the spread is in its note).
RG=$(rate_gbps "$RATE")
for m in $MODES; do
	set_mode "$m"
	daemons_start
	impair_all --rate "$RATE"
	for round in $(seq "$ROUNDS"); do
		for tr in metaroce rocev2; do
			log "round $round/$ROUNDS: $m: 4 paths x $RATE: $tr write_bw"
			bw $tr
			k=$m.$tr.rate
			GS[$k]+=" $GBPS" E[$k]=${E[$k]:-$ERR}
			[ $RC -eq 0 ] || { [ $tr = metaroce ] && FAIL=1; }
		done
	done
	impair_all --rate off
	daemons_stop
	for tr in metaroce rocev2; do
		# shellcheck disable=SC2086
		G[$m.$tr.rate]=$(median ${GS[$m.$tr.rate]})
	done
	r=$(ratio "${G[$m.metaroce.rate]}" "$(awk -v r="$RG" 'BEGIN { print 4 * r }')")
	r2=$(ratio "${G[$m.rocev2.rate]}" "$RG")
	m1=$(meets "$r" ">=" 0.85) m2=$(meets "$r2" "<=" 1.0)
	# the impairment must have happened: no run beat the limit it had
	# (10% for the token bucket's burst and the measuring edges)
	awk -v g="${G[$m.metaroce.rate]}" -v r="$RG" 'BEGIN { exit !(g != "-" && g > 4.4 * r) }' &&
		m1="NO (above 4R: the limit did not hold)"
	rn=""
	# shellcheck disable=SC2086
	[ "$ROUNDS" -gt 1 ] && rn="median of $ROUNDS runs (metaroce $(spread ${GS[$m.metaroce.rate]}) Gb/s)"
	row "4 x $RATE goodput Gb/s$(tag "$m")" "${G[$m.metaroce.rate]}" "${G[$m.rocev2.rate]}" \
		"4R = $(awk -v r="$RG" 'BEGIN { printf "%.3f", 4 * r }')" \
		"$r of 4R (rocev2 $r2 of R)" ">= 0.85 / <= 1" "$m1 / $m2" \
		"$rn${E[$m.metaroce.rate]:+ metaroce: ${E[$m.metaroce.rate]}}${E[$m.rocev2.rate]:+ rocev2: ${E[$m.rocev2.rate]}}"
done

# ---------------------------------------------------------------- blackhole
path_tx() {
	ip netns exec "$FABRIC_LEAF1_NS" sh -c 'for j in $(seq '"$FABRIC_PATHS"'); do
		cat /sys/class/net/p$j/statistics/tx_packets; done' | tr '\n' ' '
}
for m in $MODES; do
	set_mode "$m"
	daemons_start
	for tr in metaroce rocev2; do
		log "blackhole: $m: $tr write_bw, busiest path blackholed 1 s in"
		BH="" BHD=0
		if perf_start "$tr" write_bw -s "$SIZE" -D "$SECS" --report_gbits; then
			for _ in $(seq 200); do
				grep -q 'remote address' "$OUT" 2>/dev/null && break
				kill -0 "$CPID" 2>/dev/null || break
				sleep 0.05
			done
			sleep 0.7
			read -ra a <<<"$(path_tx)"
			sleep 0.3
			read -ra b <<<"$(path_tx)"
			BH=1 max=-1
			for j in $(seq "$FABRIC_PATHS"); do
				d=$((b[j - 1] - a[j - 1]))
				[ $d -le $max ] || { max=$d BH=$j; }
			done
			bd0=$(drops "$BH")
			bash $FABRIC impair --prefix "$PREFIX" --path "$BH" --blackhole on >/dev/null
			# dead until the data phase is over; then restored for
			# the TCP control connection's closing handshake
			while kill -0 "$CPID" 2>/dev/null && [ -z "$(col 1 "$OUT")" ]; do
				sleep 0.05
			done
			BHD=$(($(drops "$BH") - bd0))
			bash $FABRIC impair --prefix "$PREFIX" --path "$BH" --blackhole off >/dev/null
		fi
		perf_finish
		GBPS=$(col 4 "$OUT")
		[ $RC -eq 0 ] && [ -n "$GBPS" ] || GBPS=-
		G[$m.$tr.bh]=$GBPS E[$m.$tr.bh]=$ERR BHDROPS[$m.$tr]=$BHD
		if [ $RC -eq 0 ]; then RES[$m.$tr]="completed"; else RES[$m.$tr]="failed: $ERR"; fi
		[ $RC -eq 0 ] || { [ $tr = metaroce ] && FAIL=1; }
		BHP[$m.$tr]=${BH:-?}
	done 2>/dev/null
	daemons_stop
	# met: MetaRoCE completed AND the blackhole dropped its packets
	mt=NO
	[ "${RES[$m.metaroce]}" = completed ] && mt=yes
	[ "${BHDROPS[$m.metaroce]}" -gt 0 ] || mt="NO (the blackhole dropped nothing)"
	row "path blackholed mid-run Gb/s$(tag "$m")" "${G[$m.metaroce.bh]}" "${G[$m.rocev2.bh]}" \
		"-" "-" "metaroce completes" "$mt" \
		"metaroce (path ${BHP[$m.metaroce]}, ${BHDROPS[$m.metaroce]} packets dropped): ${RES[$m.metaroce]}; rocev2 (path ${BHP[$m.rocev2]}, ${BHDROPS[$m.rocev2]} dropped): ${RES[$m.rocev2]}"
done

# ---------------------------------------------------------------- latency
# ROUNDS rounds of: the kernel UDP ping-pong, then in each mode both
# transports' write_lat; the table shows each measure's median round and
# the spread, the daemon/embedded ratio is the median of the rounds'.
# The quiet daemon's CPU is measured after round 1's MetaRoCE write_lat.
LAT_N=5000 LAT_WARMUP=500
IDLE_CPU=-
declare -A L50S L99S
U50S="" U99S="" RLAT=""
udp_pingpong() { # one kernel UDP ping-pong: sets U50 U99
	rm -f "$TMP/ready"
	$(pin_of "$NS_B") ip netns exec "$NS_B" "$BLAST" --udp --pingpong --rx --count $LAT_N --dport 5001 \
		--seconds 60 --ready "$TMP/ready" >/dev/null 2>&1 &
	PRX=$!
	PIDS+=($!)
	for _ in $(seq 100); do [ -e "$TMP/ready" ] && break; sleep 0.05; done
	$(pin_of "$NS_A") ip netns exec "$NS_A" "$BLAST" --udp --pingpong --tx --dst "$IP_B" --size 8 \
		--dport 5001 --sport 5002 \
		--count $LAT_N --json >"$TMP/pp" 2>&1
	kill $PRX 2>/dev/null
	wait $PRX 2>/dev/null
	U50=$(sed -n 's/.*"half_rtt_p50_us":\([0-9.]*\).*/\1/p' "$TMP/pp")
	U99=$(sed -n 's/.*"half_rtt_p99_us":\([0-9.]*\).*/\1/p' "$TMP/pp")
}
for round in $(seq "$ROUNDS"); do
	log "round $round/$ROUNDS: latency: kernel UDP ping-pong 8 B x $LAT_N"
	udp_pingpong
	U50S+=" ${U50:--}" U99S+=" ${U99:--}"
	for m in $MODES; do
		set_mode "$m"
		daemons_start
		# Each transport goes first in every other round, and each
		# run's first LAT_WARMUP pings are not counted: the first
		# round trips after a start pay for page faults and cold
		# caches, and always running one transport first gave it
		# the cold tail (p99) of the pair.
		order="metaroce rocev2"
		[ $((round % 2)) -eq 0 ] && order="rocev2 metaroce"
		for tr in $order; do
			log "round $round/$ROUNDS: latency: $m: $tr write_lat 8 B x $LAT_N"
			idle=()
			[ "$m" = daemon ] && [ $tr = metaroce ] && [ "$round" -eq 1 ] && idle=(--idle 3)
			perf_start "$tr" write_lat -s 8 -n $LAT_N --warmup $LAT_WARMUP "${idle[@]}"
			if [ ${#idle[@]} -gt 0 ] && [ -n "$CPID" ]; then
				# The daemons' CPU while both applications sit
				# idle, connected, after the test (--idle).
				for _ in $(seq 400); do
					[ -n "$(col 1 "$OUT")" ] && break
					kill -0 "$CPID" 2>/dev/null || break
					sleep 0.05
				done
				sleep 0.5
				d0=$(daemons_cpu)
				sleep 2
				d1=$(daemons_cpu)
				IDLE_CPU=$(awk -v a="$d0" -v b="$d1" 'BEGIN { printf "%.2f", (b - a) / 2 / 2 * 100 }')
			fi
			perf_finish
			l50=$(col 5 "$OUT") l99=$(col 8 "$OUT")
			[ $RC -eq 0 ] && [ -n "$l50" ] || { l50=- l99=-; [ $tr = metaroce ] && FAIL=1; }
			L50S[$m.$tr]+=" $l50" L99S[$m.$tr]+=" $l99"
		done
		daemons_stop
	done
	if [ "$NMODES" -gt 1 ]; then
		RLAT+=" $(ratio "$(echo ${L50S[daemon.metaroce]} | awk '{ print $NF }')" \
			"$(echo ${L50S[embedded.metaroce]} | awk '{ print $NF }')")"
	fi
done
# shellcheck disable=SC2086
U50=$(median $U50S) U99=$(median $U99S)
for k in "${!L50S[@]}"; do
	# shellcheck disable=SC2086
	L50[$k]=$(median ${L50S[$k]}) L99[$k]=$(median ${L99S[$k]})
done
for m in $MODES; do
	r=$(ratio "${L50[$m.metaroce]}" "${U50:-0}")
	tg="-" mt="-"
	[ "$m" = embedded ] && { tg="<= 2"; mt=$(meets "$r" "<=" 2); }
	# shellcheck disable=SC2086
	row "write_lat 8 B p50 us$(tag "$m")" "${L50[$m.metaroce]}" "${L50[$m.rocev2]}" \
		"${U50:--} (UDP)" "$r" "$tg" "$mt" "half round trips, $LAT_N a run$([ "$ROUNDS" -gt 1 ] && echo "; median of $ROUNDS rounds (metaroce $(spread ${L50S[$m.metaroce]}), UDP $(spread $U50S))")"
	r=$(ratio "${L99[$m.metaroce]}" "${U99:-0}")
	r2=$(ratio "${L99[$m.metaroce]}" "${L99[$m.rocev2]}")
	# shellcheck disable=SC2086
	row "write_lat 8 B p99 us$(tag "$m")" "${L99[$m.metaroce]}" "${L99[$m.rocev2]}" \
		"${U99:--} (UDP)" "$r (rocev2 $r2)" "<= 3 (rocev2 <= 1)" \
		"$(meets "$r" "<=" 3) / $(meets "$r2" "<=" 1)" "$([ "$ROUNDS" -gt 1 ] && echo "median of $ROUNDS rounds (metaroce $(spread ${L99S[$m.metaroce]}), rocev2 $(spread ${L99S[$m.rocev2]}), UDP $(spread $U99S))")"
done

# ---------------------------------------------------------------- modes
if [ "$NMODES" -gt 1 ]; then
	# shellcheck disable=SC2086
	r=$(median ${RMODE[bw]})
	# shellcheck disable=SC2086
	row "daemon / embedded: clean write_bw" "${G[daemon.metaroce.clean]}" "${G[embedded.metaroce.clean]}" \
		"-" "$r" ">= 0.95" "$(meets "$r" ">=" 0.95)" "metaroce: daemon, embedded Gb/s; median round (ratios $(spread ${RMODE[bw]}))"
	# shellcheck disable=SC2086
	r=$(median $RLAT)
	# shellcheck disable=SC2086
	row "daemon / embedded: write_lat p50" "${L50[daemon.metaroce]}" "${L50[embedded.metaroce]}" \
		"-" "$r" "<= 1.3" "$(meets "$r" "<=" 1.3)" "metaroce: daemon, embedded us; median round (ratios $(spread $RLAT))"
	# What daemon mode adds to each half round trip: two hand-offs
	# between an application and its daemon (the sender's post, the
	# receiver's completion). Measured here on one core and on two.
	H1=$("$BLAST" --handoff --cpus 0,0 --count 20000 --json 2>/dev/null |
		sed -n 's/.*"handoff_p50_us":\([0-9.]*\).*/\1/p')
	H2=$("$BLAST" --handoff --cpus 0,1 --count 20000 --json 2>/dev/null |
		sed -n 's/.*"handoff_p50_us":\([0-9.]*\).*/\1/p')
	row "process hand-off us, one core / two cores" "${H1:--}" "${H2:--}" "-" "-" "-" "-" \
		"mroce_blast --handoff: one pass of a token between two processes through shared memory, each waiting by sched_yield as libmroce and mroced do; daemon mode adds two per half round trip"
	# shellcheck disable=SC2086
	r=$(median ${RMODE[eff]})
	# shellcheck disable=SC2086
	row "daemon / embedded: efficiency" "${G[daemon.metaroce.clean.eff]}" "${G[embedded.metaroce.clean.eff]}" \
		"-" "$r" ">= 0.8" "$(meets "$r" ">=" 0.8)" "metaroce: Gbit per CPU-s, daemon, embedded; median round (ratios $(spread ${RMODE[eff]}))"
fi
if [[ " $MODES " == *" daemon "* ]]; then
	row "quiet daemon CPU % of a core" "$IDLE_CPU" "-" "-" "-" "< 2" \
		"$(awk -v c="$IDLE_CPU" 'BEGIN { if (c == "-") print "-"; else print (c < 2 ? "yes" : "NO") }')" \
		"each of 2 daemons, mean, 2 s with connected quiet applications (mroce_perf --idle)"
fi

# ---------------------------------------------------------------- output
if [ $JSON -eq 1 ]; then
	printf '{"backend":"%s","modes":"%s","pin":%s,"seconds":%s,"size":%s,"rate":"%s",' \
		"$BACKEND" "$MODES" "$([ "$PIN" -eq 1 ] && echo true || echo false)" "$SECS" "$SIZE" "$RATE"
	jlist() { echo $1 | sed 's/-/null/g; s/ /,/g'; } # "a b -" -> a,b,null
	printf '"rounds":%s,"ceiling_gbps":%s,' "$ROUNDS" "${CEIL/#-/null}"
	printf '"rounds_ceiling_gbps":[%s],' "$(jlist "${CEILS[*]}")"
	printf '"by_mode":{'
	first=1
	for m in $MODES; do
		[ $first -eq 1 ] || printf ','
		first=0
		printf '"%s":{' "$m"
		printf '"rounds_clean_ratio":[%s],"rounds_loss_ratio":[%s],' \
			"$(jlist "${RCLEAN[$m]}")" "$(jlist "${RLOSS[$m]}")"
		printf '"rounds_clean_gbps":{"metaroce":[%s],"rocev2":[%s]},' \
			"$(jlist "${GS[$m.metaroce.clean]}")" "$(jlist "${GS[$m.rocev2.clean]}")"
		printf '"rounds_clean_cpu_s":{"metaroce":[%s],"rocev2":[%s]},' \
			"$(jlist "${CPUS[$m.metaroce.clean]}")" "$(jlist "${CPUS[$m.rocev2.clean]}")"
		printf '"rounds_rate_gbps":[%s],' "$(jlist "${GS[$m.metaroce.rate]}")"
		printf '"goodput_gbps":{'
		f2=1
		for k in metaroce.clean rocev2.clean metaroce.loss rocev2.loss \
			metaroce.rate rocev2.rate metaroce.bh rocev2.bh; do
			[ $f2 -eq 1 ] || printf ','
			f2=0
			v=${G[$m.$k]:--}
			printf '"%s":%s' "$k" "${v/#-/null}"
		done
		printf '},"efficiency_gbit_per_cpu_s":{"metaroce":%s,"rocev2":%s},' \
			"$(v=${G[$m.metaroce.clean.eff]:--}; echo "${v/#-/null}")" \
			"$(v=${G[$m.rocev2.clean.eff]:--}; echo "${v/#-/null}")"
		printf '"blackhole":{"metaroce":"%s","rocev2":"%s"},' \
			"${RES[$m.metaroce]//\"/}" "${RES[$m.rocev2]//\"/}"
		printf '"write_lat_8B_us":{"metaroce":{"p50":"%s","p99":"%s"},"rocev2":{"p50":"%s","p99":"%s"}}}' \
			"${L50[$m.metaroce]}" "${L99[$m.metaroce]}" "${L50[$m.rocev2]}" "${L99[$m.rocev2]}"
	done
	printf '},"udp_pingpong_us":{"p50":"%s","p99":"%s"},' "${U50:-}" "${U99:-}"
	printf '"handoff_us":{"one_core":"%s","two_cores":"%s"},' "${H1:-}" "${H2:-}"
	printf '"quiet_daemon_cpu_pct":%s,' "$(v=$IDLE_CPU; echo "${v/#-/null}")"
	printf '"rows":['
	first=1
	for r in "${ROWS[@]}"; do
		IFS='|' read -r a b c d e f g h <<<"$r"
		[ $first -eq 1 ] || printf ','
		first=0
		printf '{"measure":"%s","metaroce":"%s","rocev2":"%s","reference":"%s","ratio":"%s","target":"%s","met":"%s","note":"%s"}' \
			"$a" "$b" "$c" "$d" "$e" "$f" "$g" "${h//\"/}"
	done
	printf '],"ok":%s}\n' "$([ $FAIL -eq 0 ] && echo true || echo false)"
else
	echo
	echo "mroce end to end: 4-path fabric (MTU 9000), backend $BACKEND, mode(s) ${MODES// /+}$([ "$PIN" -eq 1 ] && echo ", one core per host (--pin)"), write_bw ${SIZE} B for ${SECS} s, $ROUNDS round(s), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "| measure | metaroce | rocev2 | reference | ratio | target | met | note |"
	echo "|---|---|---|---|---|---|---|---|"
	for r in "${ROWS[@]}"; do
		echo "| ${r//|/ | } |"
	done
fi
exit $FAIL
