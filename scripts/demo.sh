#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# demo.sh - why MetaRoCE exists: MetaRoCE against RoCEv2 over a lossy
# 4-path fabric (the README's main demo, run by `make demo` after it
# installed and built everything).
#
# Usage: scripts/demo.sh [--embedded] [--backend afxdp|udp] [--seconds S]
#                        [--out DIR] [--help]
#
# Brings up scripts/fabric.sh's 4-path fabric (two hosts in network
# namespaces, MTU 9000), starts mroced on both hosts (AF_XDP on eth0 by
# default; --embedded: no daemons, the engines run inside mroce_perf) and
# runs mroce_perf write_bw --verify (64 KiB RDMA WRITEs, perftest's tx
# depth of 128, S seconds, default 4; the receiver checks every byte of
# the last message written into each of its slots at the end of the run)
# for MetaRoCE and RoCEv2:
#
#   two apps   two applications on host A, each with its own QP to its own
#              server on host B, at the same time, through the same
#              daemons: both QPs ride one MetaRoCE connection (the row
#              runs first and shows the daemons' handshake counters)
#   clean      the fabric as it is; MetaRoCE also without --verify, to
#              show what the check costs
#   1% loss    1% random loss on every path, both directions
#   blackhole  the path that carries most of the traffic drops everything
#              from about 1 s into the run until the data phase is over
#
# Prints one table, the targets and whether each was met, and writes a
# PNG of goodput over time (mroce_perf --interval 0.1) through the loss
# and blackhole scenarios for both transports (gnuplot), plus the data
# behind it, to DIR (default BUILD/demo). Removes the daemons, namespaces
# and everything else at the end (also on Ctrl-C).
#
# Targets (each checked in this run; a miss fails the demo and says why
# on its row):
#   - verification costs little: verified clean goodput >= 0.8 x unverified
#   - 1% loss: MetaRoCE >= 3 x RoCEv2 and >= 0.9 x its own clean goodput
#   - blackhole: MetaRoCE completes, verified, at >= 0.7 x clean
#   - two apps: both verified, one MetaRoCE handshake on each daemon
#   - every run of either transport has every byte right, and the whole
#     demo takes at most 60 s (with the default --seconds 4)
# RoCEv2 ending in an error completion when its QP's only path is
# blackholed is expected and shown; any other failed RoCEv2 run fails the
# demo (a failed measurement is not a result to compare with).
#
# Needs root, python3 and gnuplot (make demo installs them). Environment:
# MROCE_BUILD (build directory, default build).
# Exit status: 0 when every target is met; 1 otherwise; 2 on bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="$PATH:/usr/sbin:/sbin"
B=${MROCE_BUILD:-build}
export MROCE_BUILD=$B
PERF=$B/bin/mroce_perf CTL=$B/bin/mrocectl MROCED=$B/bin/mroced
FABRIC=scripts/fabric.sh
DAEMON=1 BACKEND=afxdp SECS=4 OUTDIR=
while [ $# -gt 0 ]; do
	case "$1" in
	--embedded) DAEMON=0; shift ;;
	--backend) BACKEND=${2:-}; shift 2 || { echo "demo.sh: --backend needs a value" >&2; exit 2; } ;;
	--seconds) SECS=${2:-}; shift 2 || { echo "demo.sh: --seconds needs a value" >&2; exit 2; } ;;
	--out) OUTDIR=${2:-}; shift 2 || { echo "demo.sh: --out needs a value" >&2; exit 2; } ;;
	-h|--help) sed -n '4,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $BACKEND in afxdp|udp) ;; *) echo "demo.sh: --backend afxdp|udp" >&2; exit 2 ;; esac
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 3 ] && [ "$SECS" -le 30 ] ||
	{ echo "demo.sh: --seconds: 3 to 30" >&2; exit 2; }
[ -n "$OUTDIR" ] || OUTDIR=$B/demo
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: needs root (network namespaces, XDP)" >&2; exit 1; }
for f in "$PERF" "$CTL"; do
	[ -x "$f" ] || { echo "demo.sh: $f missing: run make first" >&2; exit 1; }
done
[ $DAEMON -eq 0 ] || [ -x "$MROCED" ] || { echo "demo.sh: $MROCED missing: run make first" >&2; exit 1; }
for c in python3 gnuplot; do
	command -v $c >/dev/null || { echo "demo.sh: $c missing: run 'make deps'" >&2; exit 1; }
done
mkdir -p "$OUTDIR" || exit 1
OUTDIR=$(cd "$OUTDIR" && pwd)
T_START=$(date +%s.%N)

# shellcheck source=scripts/session.sh
. scripts/session.sh
session_start dm$$ demo

echo "mroce demo: bringing up a 4-path fabric ($PREFIX*) ..."
bash $FABRIC up --prefix "$PREFIX" --paths 4 --mtu 9000 >/dev/null ||
	{ echo "demo.sh: fabric.sh up failed" >&2; exit 1; }
eval "$(bash $FABRIC status --prefix "$PREFIX" --env)"

# host NS ATTACH CMD...: CMD in namespace NS with bpffs mounted (ip netns
# exec remounts /sys). ATTACH 1: mroce's XDP program attached afresh; 0:
# no XDP program on eth0; keep: leave eth0 as it is (the daemon's).
host() {
	local ns=$1 att=$2
	shift 2
	# Always started with &: exec, so that the pid the caller keeps (and
	# kills) is the program's own, not a subshell's that would leave the
	# program running.
	exec ip netns exec "$ns" bash -c '
		mount -t bpf bpf /sys/fs/bpf || exit 2
		[ '"$att"' = keep ] && exec "$@"
		'"$CTL"' detach eth0 >/dev/null 2>&1
		ip link set dev eth0 xdp off 2>/dev/null
		if [ '"$att"' = 1 ]; then
			'"$CTL"' attach eth0 >/dev/null ||
				{ echo "mrocectl attach eth0 failed"; exit 2; }
		fi
		exec "$@"' host "$@"
}

ATT=0
[ "$BACKEND" = afxdp ] && ATT=1
[ $DAEMON -eq 1 ] && ATT=keep
if [ $DAEMON -eq 1 ]; then
	echo "mroce demo: starting mroced ($BACKEND) on both hosts ..."
	for h in A B; do
		ns=FABRIC_${h}_NS ip=FABRIC_${h}_IP
		args=(--local "${!ip}" --sock "$TMP/mroced-$h.sock" --rto-min 1000)
		[ "$BACKEND" = afxdp ] && args+=(--backend afxdp --ifname eth0 --attach)
		host "${!ns}" 0 "$MROCED" "${args[@]}" >"$TMP/mroced-$h.log" 2>&1 &
		PIDS+=($!)
	done
	for h in A B; do
		for _ in $(seq 100); do [ -S "$TMP/mroced-$h.sock" ] && break; sleep 0.05; done
		[ -S "$TMP/mroced-$h.sock" ] || {
			echo "demo.sh: mroced on host $h did not start:" >&2
			cat "$TMP/mroced-$h.log" >&2
			exit 1
		}
	done
fi

PORT=$((22000 + $$ % 20000))
wait_listen() { # port pid
	for _ in $(seq 200); do
		kill -0 "$2" 2>/dev/null || return 1
		ip netns exec "$FABRIC_B_NS" ss -Hltn "sport = :$1" 2>/dev/null |
			grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# start TRANSPORT TAG [ARGS...]: write_bw server (B) and client (A) in the
# background, the client with --json --interval 0.1 and ARGS (--verify).
# Client output: $TMP/TAG.json; SPIDS/CPIDS collect the pids.
SPIDS=() CPIDS=()
start() {
	local tr=$1 tag=$2 sdev cdev
	shift 2
	PORT=$((PORT + 1))
	if [ $DAEMON -eq 1 ]; then
		sdev=(--daemon="$TMP/mroced-B.sock") cdev=(--daemon="$TMP/mroced-A.sock")
	else
		sdev=(--backend "$BACKEND" --rto-min 1000 --local "$FABRIC_B_IP")
		cdev=(--backend "$BACKEND" --rto-min 1000 --local "$FABRIC_A_IP")
		[ "$BACKEND" = afxdp ] && sdev+=(--ifname eth0) cdev+=(--ifname eth0)
	fi
	host "$FABRIC_B_NS" $ATT timeout 90 "$PERF" write_bw -p $PORT -s 65536 \
		--transport "$tr" "${sdev[@]}" >"$TMP/$tag.srv" 2>&1 &
	SPIDS+=($!)
	PIDS+=($!)
	wait_listen $PORT $! || return 1
	host "$FABRIC_A_NS" $ATT timeout 90 "$PERF" write_bw -p $PORT -s 65536 \
		-D "$SECS" --interval 0.1 --json --transport "$tr" "$@" \
		"${cdev[@]}" "$FABRIC_B_IP" >"$TMP/$tag.json" 2>"$TMP/$tag.err" &
	CPIDS+=($!)
	PIDS+=($!)
}

# finish: wait for the clients and servers started since the last
# finish; RC = the first failed client's exit status (0: all passed).
finish() {
	local p rc
	RC=0
	for p in "${CPIDS[@]}"; do
		wait "$p"
		rc=$?
		[ $RC -ne 0 ] || RC=$rc
	done
	[ $RC -eq 0 ] || { sleep 1; for p in "${SPIDS[@]}"; do kill "$p" 2>/dev/null; done; }
	for p in "${SPIDS[@]}"; do wait "$p" 2>/dev/null; done
	SPIDS=() CPIDS=()
}

# result TAG: GP (Gbit/s, 0 when the run failed), RETX, OK (1: completed
# and verified), ERR (the failure), START (the timed phase's
# wall clock); writes TAG.dat (interval midpoint, Gbit/s) for the plot.
result() {
	eval "$(python3 - "$TMP/$1.json" "$TMP/$1.err" "$TMP/$1.srv" "$OUTDIR/$1.dat" <<'PY'
import json, shlex, sys
js, errf, srvf, dat = sys.argv[1:5]
out = {"GP": "0", "RETX": "-", "OK": "0", "ERR": "", "START": "0", "END": "0"}
try:
    d = json.load(open(js))
except Exception:
    d = {}
    tail = (open(errf).read().strip().splitlines() or ["no output"])[-1]
    out["ERR"] = tail.replace("mroce_perf: ", "")
rows = d.get("results") or []
r = rows[0] if rows else d.get("partial", {})
ivs = r.get("intervals", [])
if rows:
    out["GP"] = "%.2f" % rows[0]["bw_average_gbps"]
out["START"] = "%.6f" % r.get("start_unix_s", 0)
if "spray" in d:
    out["RETX"] = str(d["spray"]["retransmits"])
if "error" in d:
    out["ERR"] = d["error"]["message"]
elif rows and d.get("verify"):
    out["OK"] = "1"
if not out["ERR"]:
    for line in open(srvf, errors="replace"):
        if "FAILED" in line or "mroce_perf:" in line:
            out["ERR"] = line.strip().replace("mroce_perf: ", "")
            out["OK"] = "0"
            break
# The plot leaves out a last interval shorter than half the others (the
# drain after the timed phase): a few ms make a meaningless rate.
if len(ivs) > 1 and (ivs[-1]["end_s"] - ivs[-1]["start_s"]) < 0.5 * (ivs[0]["end_s"] - ivs[0]["start_s"]):
    ivs = ivs[:-1]
end = ivs[-1]["end_s"] if ivs else 0
out["END"] = "%.3f" % end
with open(dat, "w") as f:
    for i in ivs:
        f.write("%.3f %.3f\n" % ((i["start_s"] + i["end_s"]) / 2, i["bw_gbps"]))
for k, v in out.items():
    print("%s=%s" % (k, shlex.quote(v)))
PY
)"
}

path_tx() {
	ip netns exec "$FABRIC_LEAF1_NS" sh -c 'for j in 1 2 3 4; do
		cat /sys/class/net/p$j/statistics/tx_packets; done' | tr '\n' ' '
}

# The blackhole scenario, once a client runs: wait until data flows (the
# leaf's path counters move), pick the path that carried the most over
# 0.3 s about a second in, blackhole it until the data phase is over
# (S s after data began), then restore it for mroce_perf's TCP control
# connection, which crosses the same fabric. BH_PATH, BH_T (wall clock).
blackhole_run() {
	local a b j d t0 max=-1 best=1 sum
	BH_PATH= BH_T=0
	read -ra a <<<"$(path_tx)"
	for _ in $(seq 100); do
		sleep 0.05
		read -ra b <<<"$(path_tx)"
		sum=0
		for j in 0 1 2 3; do sum=$((sum + b[j] - a[j])); done
		[ $sum -lt 200 ] || break
		a=("${b[@]}")
	done
	t0=$(date +%s.%N)
	sleep 0.6
	read -ra a <<<"$(path_tx)"
	sleep 0.3
	read -ra b <<<"$(path_tx)"
	for j in 1 2 3 4; do
		d=$((b[j - 1] - a[j - 1]))
		[ $d -le $max ] || { max=$d best=$j; }
	done
	bash $FABRIC impair --prefix "$PREFIX" --path $best --blackhole on >/dev/null
	BH_T=$(date +%s.%N) BH_PATH=$best
	sleep "$(awk -v t0="$t0" -v s="$SECS" -v now="$(date +%s.%N)" \
		'BEGIN { d = t0 + s + 0.3 - now; print (d > 0 ? d : 0) }')"
	bash $FABRIC impair --prefix "$PREFIX" --path $best --blackhole off >/dev/null
}

impair_all() {
	local j
	for j in 1 2 3 4; do
		bash $FABRIC impair --prefix "$PREFIX" --path $j "$@" >/dev/null ||
			{ echo "demo.sh: fabric.sh impair failed" >&2; exit 1; }
	done
}

# The daemons' MetaRoCE handshake counters: "A B".
handshakes() {
	local h
	for h in A B; do
		"$CTL" daemon --sock "$TMP/mroced-$h.sock" --json 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["metaroce"]["handshakes"])' 2>/dev/null ||
			echo "?"
	done | tr '\n' ' '
}

FAIL=0
declare -A GP OK ERR RETX START TEND
run_one() { # TRANSPORT TAG ARGS...
	local tr=$1 tag=$2
	shift 2
	echo "mroce demo: $tr, $tag ..."
	start "$tr" "$tag" "$@" || { ERR[$tag]="server did not start"; return; }
	[ "${tag#*.}" = blackhole ] && blackhole_run && BH[$tr]="$BH_PATH $BH_T"
	finish
	result "$tag"
	GP[$tag]=$GP OK[$tag]=$OK ERR[$tag]=$ERR RETX[$tag]=$RETX START[$tag]=$START
	TEND[$tag]=$END
}
declare -A BH

# 1. Two applications, first: the connection between the hosts is made
# by this row (ESTABLISHED connections stay), so its handshakes show how
# many connections two QPs needed.
HS0=
if [ $DAEMON -eq 1 ]; then
	HS0=$(handshakes)
	echo "mroce demo: metaroce, two applications at once ..."
	start metaroce two1 --verify && start metaroce two2 --verify
	finish
	for t in two1 two2; do
		result $t
		GP[$t]=$GP OK[$t]=$OK ERR[$t]=$ERR RETX[$t]=$RETX
	done
	HS1=$(handshakes)
fi
# 2. The scenarios.
run_one metaroce metaroce.clean --verify
run_one rocev2 rocev2.clean --verify
run_one metaroce metaroce.plain
impair_all --loss 0.01
run_one metaroce metaroce.loss1 --verify
run_one rocev2 rocev2.loss1 --verify
impair_all --loss 0
run_one metaroce metaroce.blackhole --verify
run_one rocev2 rocev2.blackhole --verify

# ------------------------------------------------------------------ report
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "-" && a >= b) }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0f%%", 100 * a / b; else print "-" }'; }
LINES=()
row() { # transport scenario gp vs-clean retx result target
	LINES+=("$(printf '| %-9s | %-36s | %6s | %8s | %6s | %s | %s |' "$@")")
}
# base TAG: "ok, verified" or the failure (sets FAIL unless allowed).
base() {
	if [ "${OK[$1]:-0}" = 1 ]; then
		echo "ok, verified"
	elif [[ ${ERR[$1]:-} == *FAILED* ]]; then
		echo "DATA CORRUPTED: ${ERR[$1]}"
	else
		echo "error: ${ERR[$1]:-no result}"
	fi
}
byte_fail() { [[ ${ERR[$1]:-} == *FAILED* ]]; }

mc=${GP[metaroce.clean]:-0} rc=${GP[rocev2.clean]:-0}
for t in metaroce.clean rocev2.clean metaroce.plain metaroce.loss1 rocev2.loss1 \
	metaroce.blackhole rocev2.blackhole two1 two2; do
	byte_fail $t && FAIL=1
done

# clean
res=$(base metaroce.clean) tgt="-"
[ "${OK[metaroce.clean]:-0}" = 1 ] || { FAIL=1 res="FAILED: $res"; }
row metaroce "clean" "$mc" "100%" "${RETX[metaroce.clean]}" "$res" "$tgt"
res=$(base rocev2.clean)
[ "${OK[rocev2.clean]:-0}" = 1 ] || { FAIL=1 res="FAILED: $res"; }
row rocev2 "clean" "$rc" "100%" "${RETX[rocev2.clean]}" "$res" "-"
# what the check costs
v=$(ratio "$mc" "${GP[metaroce.plain]:-0}")
if [ -n "${ERR[metaroce.plain]}" ]; then
	res="FAILED: error: ${ERR[metaroce.plain]}" tgt="verified >= 0.8 x this: not measured" FAIL=1
elif ge "$v" 0.8; then
	res="ok, not verified" tgt="verified >= 0.8 x this: $v, met"
else
	res="FAILED: verification costs too much" tgt="verified >= 0.8 x this: $v, MISSED" FAIL=1
fi
row metaroce "clean, without --verify" "${GP[metaroce.plain]:-0}" "-" "${RETX[metaroce.plain]}" "$res" "$tgt"
# 1% loss
m=${GP[metaroce.loss1]:-0} r=${GP[rocev2.loss1]:-0}
x=$(ratio "$m" "$r") y=$(ratio "$m" "$mc")
res=$(base metaroce.loss1)
tgt=">= 3 x RoCEv2: $x; >= 0.9 x clean: $y"
if [ "${OK[metaroce.loss1]:-0}" != 1 ]; then
	res="FAILED: $res" FAIL=1
elif [ "${OK[rocev2.loss1]:-0}" != 1 ]; then
	res="FAILED: no RoCEv2 result to compare with" FAIL=1
elif ! ge "$x" 3; then
	res="FAILED: less than 3 x RoCEv2" FAIL=1
elif ! ge "$y" 0.9; then
	res="FAILED: less than 0.9 x its clean goodput" FAIL=1
fi
[ "${res:0:6}" = FAILED ] && tgt="$tgt, MISSED" || tgt="$tgt, met"
row metaroce "1% loss on every path" "$m" "$(pct "$m" "$mc")" "${RETX[metaroce.loss1]}" "$res" "$tgt"
res=$(base rocev2.loss1)
[ "${OK[rocev2.loss1]:-0}" = 1 ] || { FAIL=1 res="FAILED: $res"; }
row rocev2 "1% loss on every path" "$r" "$(pct "$r" "$rc")" "${RETX[rocev2.loss1]}" "$res" "-"
# blackhole
read -r bhm _ <<<"${BH[metaroce]:-? 0}"
read -r bhr _ <<<"${BH[rocev2]:-? 0}"
m=${GP[metaroce.blackhole]:-0} y=$(ratio "$m" "$mc")
res=$(base metaroce.blackhole) tgt="completes, >= 0.7 x clean: $y"
if [ "${OK[metaroce.blackhole]:-0}" != 1 ]; then
	res="FAILED: $res" FAIL=1
elif ! ge "$y" 0.7; then
	res="FAILED: less than 0.7 x its clean goodput" FAIL=1
fi
[ "${res:0:6}" = FAILED ] && tgt="$tgt, MISSED" || tgt="$tgt, met"
row metaroce "busiest path (p$bhm) blackholed at 1 s" "$m" "$(pct "$m" "$mc")" "${RETX[metaroce.blackhole]}" "$res" "$tgt"
res=$(base rocev2.blackhole)
if [ "${OK[rocev2.blackhole]:-0}" != 1 ] && ! byte_fail rocev2.blackhole; then
	res="$res (expected: its QP's only path)"
fi
row rocev2 "busiest path (p$bhr) blackholed at 1 s" "${GP[rocev2.blackhole]:-0}" "$(pct "${GP[rocev2.blackhole]:-0}" "$rc")" "${RETX[rocev2.blackhole]}" "$res" "-"
# two applications
if [ $DAEMON -eq 1 ]; then
	read -r a0 b0 <<<"$HS0"
	read -r a1 b1 <<<"$HS1"
	ha=$((a1 - a0)) hb=$((b1 - b0))
	sum=$(awk -v a="${GP[two1]:-0}" -v b="${GP[two2]:-0}" 'BEGIN { printf "%.2f", a + b }')
	tgt="both verified, 1 handshake per daemon: A $ha, B $hb"
	if [ "${OK[two1]:-0}" = 1 ] && [ "${OK[two2]:-0}" = 1 ]; then
		res="ok, both verified (${GP[two1]} + ${GP[two2]})"
	else
		res="FAILED: app 1 $(base two1); app 2 $(base two2)" FAIL=1
	fi
	if [ "$ha" = 1 ] && [ "$hb" = 1 ]; then
		tgt="$tgt, met"
	else
		tgt="$tgt, MISSED" FAIL=1
		[ "${res:0:6}" = FAILED ] || res="FAILED: not one connection"
	fi
	row metaroce "two apps, a QP each, one connection" "$sum" "$(pct "$sum" "$mc")" "-" "$res" "$tgt"
fi

# ------------------------------------------------------------------ plot
PNG=$OUTDIR/goodput.png
mark() { # TAG TRANSPORT: the blackhole's time in TAG's run
	local t
	read -r _ t <<<"${BH[$2]:-? 0}"
	awk -v b="$t" -v s="${START[$1]:-0}" 'BEGIN { if (b > 0 && s > 0) printf "%.2f", b - s; else print -1 }'
}
BHM=$(mark metaroce.blackhole metaroce) BHR=$(mark rocev2.blackhole rocev2)
MODE="through mroced, $BACKEND"
[ $DAEMON -eq 1 ] || MODE="embedded, $BACKEND"
# The RoCEv2 blackhole run's error, shortened for the plot.
rerr=${ERR[rocev2.blackhole]:-}
rerr=${rerr#completion error on QP * }
gnuplot >"$TMP/gnuplot.log" 2>&1 <<EOF
set terminal pngcairo size 900,640 font "sans,10"
set output "$PNG"
set multiplot layout 2,1 title "MetaRoCE vs RoCEv2: 64 KiB RDMA WRITEs, every byte verified\n4-path fabric of network namespaces, MTU 9000 ($MODE); goodput per 0.1 s" font "sans,12"
set grid
set key top right box opaque
set offsets 0, 0, graph 0.3, 0
set ylabel "goodput [Gbit/s]"
set xrange [0:$SECS + 0.2]
set yrange [0:*]
set title "1% random loss on every path"
plot "$OUTDIR/metaroce.loss1.dat" using 1:2 with lines lw 2 lc rgb "#1f77b4" title "MetaRoCE", \
     "$OUTDIR/rocev2.loss1.dat" using 1:2 with lines lw 2 lc rgb "#d62728" title "RoCEv2"
set title "the busiest path blackholed about 1 s into each run (dashed lines)"
set xlabel "time since the start of the run [s]"
set arrow 1 from $BHM, graph 0 to $BHM, graph 1 nohead dt 2 lw 1.5 lc rgb "#1f77b4"
set arrow 2 from $BHR, graph 0 to $BHR, graph 1 nohead dt 2 lw 1.5 lc rgb "#d62728"
$([ -n "$rerr" ] && echo "set label 1 \"RoCEv2's run ends: $rerr\" at ${TEND[rocev2.blackhole]:-0}, first 0 offset 0.8,0.9 tc rgb \"#d62728\" point pt 2 ps 2 lc rgb \"#d62728\"")
plot "$OUTDIR/metaroce.blackhole.dat" using 1:2 with lines lw 2 lc rgb "#1f77b4" title "MetaRoCE", \
     "$OUTDIR/rocev2.blackhole.dat" using 1:2 with lines lw 2 lc rgb "#d62728" title "RoCEv2"
unset multiplot
EOF
[ -s "$PNG" ] || { echo "demo.sh: gnuplot failed:"; cat "$TMP/gnuplot.log"; FAIL=1; }

ELAPSED=$(awk -v a="$T_START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
echo
echo "mroce demo: 64 KiB RDMA WRITEs for $SECS s per run, perftest's tx depth 128, the receiver checks every byte of each slot's last message; 4-path fabric of network namespaces, MTU 9000 ($MODE)"
echo
printf '| %-9s | %-36s | %6s | %8s | %6s | %s | %s |\n' transport scenario "Gb/s" "vs clean" retx result target
printf '|%s|%s|%s|%s|%s|%s|%s|\n' ----------- -------------------------------------- --------: ----------: --------: -------- --------
for l in "${LINES[@]}"; do echo "$l"; done
echo
if [ "$SECS" -ne 4 ]; then
	echo "the whole demo took $ELAPSED s (the 60 s target is for the default --seconds 4)"
elif [ "$ELAPSED" -gt 60 ]; then
	echo "the whole demo took $ELAPSED s: MISSED the 60 s target"
	FAIL=1
else
	echo "the whole demo took $ELAPSED s (target: at most 60 s)"
fi
echo "goodput over time: $PNG (data: $OUTDIR/*.dat)"
echo
echo "MetaRoCE sprays each connection over many UDP source ports, so ECMP"
echo "spreads it over all four paths, repairs losses selectively and moves"
echo "off a dead path; RoCEv2 rides the one path its QP hashes to and goes"
echo "back N on every loss."
[ $FAIL -eq 0 ] && echo "mroce demo: every target met" || echo "mroce demo: FAILED (see the rows above)"
exit $FAIL
