#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# NAME
#     bench_offload.sh - what the XDP program's ACKs save the daemons
#
# SYNOPSIS
#     scripts/bench_offload.sh [--rounds K] [--seconds S] [--size B]
#                              [--loss F] [--json] [--help]
#
# DESCRIPTION
#     Brings up a 4-path scripts/fabric.sh fabric (MTU 1500) with random
#     loss F on every path, both ways, and an mroced per host over AF_XDP
#     (--attach). In each of K rounds, MetaRoCE write_bw of B-byte
#     messages for S seconds from A to B, once with the XDP ACK offload
#     (the default: the program answers PROBEs and duplicates from the
#     state the daemons' engines publish, docs/xdp.md) and once with
#     `mroced --no-ack-offload`, the order alternating between rounds.
#     For each run: goodput, the CPU-seconds of both daemons (from /proc),
#     their loop's wake-ups (mrocectl daemon: wakeups_event +
#     wakeups_timer) and rounds, the packets their endpoints received,
#     and the ACKs the XDP programs sent (bpftool map dump of the
#     counters). Prints per mode the median round and the spread, and the
#     ratios offload / no offload of each round: daemon CPU per Gbit
#     moved, packets into the daemons, goodput. Every number comes from
#     this run: compare ratios, not absolute numbers.
#
# OPTIONS
#     --rounds K    rounds (3)
#     --seconds S   length of each run (5)
#     --size B      write_bw message size (512)
#     --loss F      random loss on every path (0.01)
#     --json        one JSON object instead of the table
#     -h, --help    this text
#
# ENVIRONMENT
#     MROCE_BUILD   build directory (default build)
#
# EXIT STATUS
#     0 every run completed; 1 a run failed or the fabric could not be set
#     up; 2 bad arguments.
#
# EXAMPLE
#     make && scripts/bench_offload.sh --rounds 3 --size 512
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="$PATH:/usr/sbin:/sbin"
B=${MROCE_BUILD:-build}
PERF=$B/bin/mroce_perf
CTL=$B/bin/mrocectl
MROCED=$B/bin/mroced
FABRIC=scripts/fabric.sh

ROUNDS=3 SECS=5 SIZE=512 LOSS=0.01 JSON=0
usage() { echo "bench_offload.sh: $*" >&2; echo "Try 'scripts/bench_offload.sh --help'." >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=${2:-}; shift 2 || usage "--rounds needs a value" ;;
	--seconds) SECS=${2:-}; shift 2 || usage "--seconds needs a value" ;;
	--size) SIZE=${2:-}; shift 2 || usage "--size needs a value" ;;
	--loss) LOSS=${2:-}; shift 2 || usage "--loss needs a value" ;;
	--json) JSON=1; shift ;;
	-h|--help) sed -n '4,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) usage "unknown argument '$1'" ;;
	esac
done
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] ||
	usage "--rounds: 1 to 20"
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 1 ] || usage "--seconds: 1 or more"
[[ $SIZE =~ ^[0-9]+$ ]] && [ "$SIZE" -ge 1 ] || usage "--size: a byte count"
[[ $LOSS =~ ^0(\.[0-9]+)?$ ]] || usage "--loss: a fraction, e.g. 0.01"
[ "$(id -u)" -eq 0 ] || { echo "bench_offload.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for f in "$PERF" "$CTL" "$MROCED"; do
	[ -x "$f" ] || { echo "bench_offload.sh: $f missing: run make" >&2; exit 1; }
done
command -v bpftool >/dev/null || { echo "bench_offload.sh: needs bpftool" >&2; exit 1; }

log() { [ $JSON -eq 1 ] || echo "$*" >&2; }

# shellcheck source=scripts/session.sh
. scripts/session.sh
session_start bo$$ bench-offload

bash $FABRIC up --prefix "$PREFIX" --paths 4 --mtu 1500 --loss "$LOSS" \
	>/dev/null || { echo "bench_offload.sh: fabric up failed" >&2; exit 1; }
eval "$(bash $FABRIC status --prefix "$PREFIX" --env)"
NS=("$FABRIC_A_NS" "$FABRIC_B_NS") IP=("$FABRIC_A_IP" "$FABRIC_B_IP")

# daemons_up [mroced options]: one per host; pids in DPIDS
daemons_up() {
	local i
	DPIDS=()
	for i in 0 1; do
		ip netns exec "${NS[$i]}" bash -c '
			mount -t bpf bpf /sys/fs/bpf || exit 2
			exec "$@"' mroced "$MROCED" --sock "$TMP/d$i.sock" \
			--backend afxdp --ifname eth0 --attach \
			--local "${IP[$i]}" --rto-min 1000 "$@" \
			>>"$TMP/mroced$i.log" 2>&1 &
		DPIDS+=($!)
		PIDS+=($!)
	done
	for i in 0 1; do
		for _ in $(seq 200); do
			"$CTL" daemon --sock "$TMP/d$i.sock" >/dev/null 2>&1 && break
			sleep 0.05
		done
		"$CTL" daemon --sock "$TMP/d$i.sock" >/dev/null 2>&1 || {
			cat "$TMP/mroced$i.log" >&2
			echo "bench_offload.sh: mroced $i did not start" >&2
			exit 1
		}
	done
}

daemons_down() {
	local p
	for p in "${DPIDS[@]}"; do kill -TERM "$p"; done
	for p in "${DPIDS[@]}"; do wait "$p"; done
	DPIDS=()
}

TCK=$(getconf CLK_TCK)
# what one host's daemon and XDP program have counted so far, one line:
# cpu_s wakeups rounds rx_pkts xdp_acks
snapshot() {
	local i=$1 prog m cid
	prog=$(ip -n "${NS[$i]}" link show eth0 |
	       sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	cid=
	for m in $(bpftool prog show id "${prog:-0}" 2>/dev/null |
		   sed -n 's/.*map_ids \([0-9,]*\).*/\1/p' | tr , ' '); do
		bpftool map show id "$m" | grep -q " name counters " && cid=$m
	done
	"$CTL" daemon --sock "$TMP/d$i.sock" --json >"$TMP/dj" || return 1
	bpftool -j map dump id "${cid:-0}" >"$TMP/cj" 2>/dev/null || return 1
	python3 - "$TMP/dj" "$TMP/cj" "$(awk -v t="$TCK" \
		'{ printf "%.3f", ($14 + $15) / t }' "/proc/${DPIDS[$i]}/stat")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = 0
for e in json.load(open(sys.argv[2])):
    for v in e.get("formatted", e)["values"]:
        x += v["value"]["tx_ack_dup"] + v["value"]["tx_ack_probe"]
lp = d["loop"]
print(sys.argv[3], lp["wakeups_event"] + lp["wakeups_timer"], lp["rounds"],
      d["metaroce"]["rx_pkts"], x)
PY
}

PORT=$((24000 + $$ % 20000))
# run MODE ROUND: one write_bw; appends a line to $TMP/results:
# mode round gbps cpu_s wakeups rounds rx_pkts xdp_acks
run() {
	local mode=$1 k=$2 s0 s1 out gbps i
	PORT=$((PORT + 1))
	out=$TMP/$mode.$k
	for i in 0 1; do s0[$i]=$(snapshot $i) || return 1; done
	ip netns exec "${NS[1]}" timeout 120 "$PERF" write_bw -p $PORT \
		--daemon="$TMP/d1.sock" --transport metaroce -s "$SIZE" \
		>"$out.srv" 2>&1 &
	local spid=$!
	PIDS+=($spid)
	for _ in $(seq 200); do
		ip netns exec "${NS[1]}" ss -Hltn "sport = :$PORT" 2>/dev/null |
			grep -q . && break
		sleep 0.05
	done
	ip netns exec "${NS[0]}" timeout 120 "$PERF" write_bw -p $PORT \
		--daemon="$TMP/d0.sock" --transport metaroce -s "$SIZE" \
		-D "$SECS" --report_gbits "${IP[1]}" >"$out" 2>&1 ||
		{ cat "$out" >&2; kill $spid 2>/dev/null; return 1; }
	wait $spid
	for i in 0 1; do s1[$i]=$(snapshot $i) || return 1; done
	gbps=$(grep -A1 -m1 '#bytes' "$out" | tail -1 | awk '{ print $4 }')
	python3 - "$mode" "$k" "$gbps" "${s0[0]}" "${s0[1]}" "${s1[0]}" \
		"${s1[1]}" >>"$TMP/results" <<'PY'
import sys
mode, k, gbps = sys.argv[1], sys.argv[2], sys.argv[3]
a0, b0, a1, b1 = ([float(x) for x in s.split()] for s in sys.argv[4:8])
d = [(a1[j] - a0[j]) + (b1[j] - b0[j]) for j in range(5)]
print(mode, k, gbps, " ".join("%g" % v for v in d))
PY
	log "  round $k, $mode: $(tail -1 "$TMP/results" | cut -d' ' -f3-)"
}

: >"$TMP/results"
log "bench_offload: $ROUNDS rounds of ${SECS} s, write_bw $SIZE B, loss $LOSS"
log "  (columns: Gb/s, daemon CPU-s, wake-ups, rounds, packets in, XDP ACKs)"
for k in $(seq "$ROUNDS"); do
	if [ $((k % 2)) -eq 1 ]; then order="offload no-offload"; else order="no-offload offload"; fi
	for mode in $order; do
		if [ $mode = offload ]; then daemons_up; else daemons_up --no-ack-offload; fi
		run $mode "$k" || { daemons_down; exit 1; }
		daemons_down
	done
done

python3 - "$TMP/results" "$JSON" "$SIZE" "$LOSS" "$SECS" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
want_json = sys.argv[2] == "1"
runs = {}
for mode, k, gbps, cpu, wk, rnd, pkts, xdp in rows:
    runs.setdefault(mode, {})[int(k)] = dict(
        gbps=float(gbps), cpu_s=float(cpu), wakeups=float(wk),
        rounds=float(rnd), pkts_in=float(pkts), xdp_acks=float(xdp))
secs = float(sys.argv[5])
def per_gbit(r):
    return r["cpu_s"] / (r["gbps"] * secs) if r["gbps"] else float("nan")
ks = sorted(runs["offload"])
ratio = {
    "daemon_cpu_per_gbit": [per_gbit(runs["offload"][k]) /
                            per_gbit(runs["no-offload"][k]) for k in ks],
    "pkts_into_daemons": [runs["offload"][k]["pkts_in"] /
                          runs["no-offload"][k]["pkts_in"] for k in ks],
    "wakeups": [runs["offload"][k]["wakeups"] /
                max(runs["no-offload"][k]["wakeups"], 1) for k in ks],
    "goodput": [runs["offload"][k]["gbps"] / runs["no-offload"][k]["gbps"]
                for k in ks],
}
if want_json:
    print(json.dumps({"size": int(sys.argv[3]), "loss": float(sys.argv[4]),
                      "seconds": secs, "runs": runs, "ratios": ratio}))
    sys.exit(0)
def med(xs):
    return statistics.median(xs)
print("| measure | offload | no offload | ratio (rounds) |")
print("|---|---|---|---|")
for name, f in (("goodput Gb/s", lambda r: r["gbps"]),
                ("daemons CPU-s per Gbit", per_gbit),
                ("packets into the daemons / s", lambda r: r["pkts_in"] / secs),
                ("daemon wake-ups / s", lambda r: r["wakeups"] / secs),
                ("XDP ACKs / s", lambda r: r["xdp_acks"] / secs)):
    a = [f(runs["offload"][k]) for k in ks]
    b = [f(runs["no-offload"][k]) for k in ks]
    rs = [x / y if y else float("nan") for x, y in zip(a, b)]
    print("| %s | %.4g | %.4g | %.3f (%.3f-%.3f) |" %
          (name, med(a), med(b), med(rs), min(rs), max(rs)))
PY
