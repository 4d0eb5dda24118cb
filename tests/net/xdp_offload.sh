#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xdp_offload.sh - the XDP half live: two mroced over AF_XDP on the 4-path
# namespace fabric with 1% random loss on every path, both ways
# (scripts/fabric.sh --loss 0.01), their engines publishing each path's
# state into the XDP maps (docs/xdp.md). MetaRoCE write_bw --verify of
# small messages from A to B, then, from `bpftool map dump` of each host's
# maps (found through the program attached to its eth0: the daemons' pins
# live in their own mount namespaces):
#   - conns: each host's MetaRoCE entry has ACK offload on, the peer's id
#     and address (the endpoint set them once it knew the peer);
#   - rx_state of B: the 8 paths published, valid (the engine publishes
#     what it placed);
#   - scoreboard of A: 8 paths with their ports and RTT samples (the
#     engine published its ports, the ACKs fed their telemetry), and
#     ack_stale_gen <= 1% of the ACKs the programs saw;
#   - never more bytes out than in: tx_ack_bytes <= tx_ack_trigger_bytes;
#   - the XDP programs answered PROBEs or duplicates themselves
#     (tx_ack_dup + tx_ack_probe > 0), and none ahead of data still
#     queued for the daemon: the receiver sees under 0.2% duplicates;
# and the same run again with `mroced --no-ack-offload`: offload off in
# conns, the programs answer nothing, --verify still passes.
#
#   tests/net/xdp_offload.sh           run (root, netns, XDP, AF_XDP, tc,
#                                      nft, bpftool, ethtool)
#   tests/net/xdp_offload.sh --probe   exit 77 with a one-line reason when
#                                      it cannot run here
set -u
FAB_TAG=xo
probe() {
	fab_probe && need_built "$PERF" "$CTL" "$MROCED" && need_afxdp &&
		need_cmds ss python3
}
FAB_PROBE=probe
# shellcheck source=tests/net/fabric_lib.sh
. tests/net/fabric_lib.sh

SA=$TMP/a.sock SB=$TMP/b.sock
PORT=$((23000 + $$ % 20000))

daemons_up() { # extra mroced options...
	local h ns ip sock
	for h in A B; do
		ns=FABRIC_${h}_NS ip=FABRIC_${h}_IP sock=S$h
		mroced_start DP$h "${!ns}" "${!sock}" --backend afxdp \
			--ifname eth0 --attach --local "${!ip}" --rto-min 1000 \
			"$@" || fail "mroced in ${!ns} did not start"
	done
}

# map_id NS NAME: id of map NAME of the XDP program on NS's eth0
map_id() {
	local prog m
	prog=$(ip -n "$1" link show eth0 |
	       sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
	for m in $(bpftool prog show id "${prog:-0}" 2>/dev/null |
		   sed -n 's/.*map_ids \([0-9,]*\).*/\1/p' | tr , ' '); do
		bpftool map show id "$m" | grep -q " name $2 " && echo "$m"
	done
}

# dump NS NAME FILE: bpftool -j map dump of that map into FILE
dump() {
	local id
	id=$(map_id "$1" "$2")
	[ -n "$id" ] || { flunk "no $2 map behind the XDP program in $1"; return 1; }
	bpftool -j map dump id "$id" >"$3" 2>&1 ||
		{ flunk "bpftool map dump $2 in $1: $(cat "$3")"; return 1; }
}

# run WHAT: MetaRoCE write_bw --verify A -> B, 512 B messages
run() {
	local out=$TMP/$1
	PORT=$((PORT + 1))
	perf_pair "$1" "$out" "$FABRIC_B_NS" $PORT \
		ip netns exec "$FABRIC_B_NS" timeout 60 "$PERF" write_bw \
		--daemon="$SB" -p $PORT -s 512 --transport metaroce -- \
		ip netns exec "$FABRIC_A_NS" timeout 60 "$PERF" write_bw \
		--daemon="$SA" -p $PORT -s 512 -n 40000 --verify \
		--transport metaroce "$FABRIC_B_IP" || return 1
	echo "ok: $1: write_bw 512 B --verify at 1% loss: $ROW"
}

# check OFFLOAD(1|0) OUT: the maps of both hosts after the run
check() {
	local h ns f=()
	for h in A B; do
		ns=FABRIC_${h}_NS
		dump "${!ns}" counters "$TMP/ctr$h.json" || return
		dump "${!ns}" conns "$TMP/conns$h.json" || return
		f+=("$TMP/ctr$h.json" "$TMP/conns$h.json")
	done
	dump "$FABRIC_A_NS" scoreboard "$TMP/sbA.json" || return
	dump "$FABRIC_B_NS" rx_state "$TMP/rxB.json" || return
	for h in A B; do
		sock=S$h
		"$CTL" daemon --sock "${!sock}" --json >"$TMP/d$h.json" ||
			{ flunk "mrocectl daemon $h"; return; }
	done
	if ! python3 - "$1" "$2" "${f[@]}" "$TMP/sbA.json" "$TMP/rxB.json" \
		"$TMP/dA.json" "$TMP/dB.json" <<'PY'
import json, re, sys

offload = sys.argv[1] == "1"
out = open(sys.argv[2]).read()
ctr_a, conns_a, ctr_b, conns_b, sb_a, rx_b, d_a, d_b = sys.argv[3:11]
# the engines that received the XDP programs' ACKs (flag XDP)
rx_xdp = sum(json.load(open(d))["metaroce"]["rx_acks_xdp"] for d in (d_a, d_b))

def entries(path):
    return [e.get("formatted", e) for e in json.load(open(path))]

def counters(path):
    tot = {}
    for e in entries(path):
        for v in e["values"]:
            for k, n in v["value"].items():
                tot[k] = tot.get(k, 0) + n
    return tot

c = [counters(ctr_a), counters(ctr_b)]
s = {k: c[0][k] + c[1][k] for k in c[0]}
answered = s["tx_ack_dup"] + s["tx_ack_probe"]
acks = s["redirect_ack"]
dups = re.search(r"Receiver *: .*duplicates (\d+)", out)
print("    XDP, both hosts: answered %d (dup %d, probe %d; %d taken in by the"
      " peers' engines) while the receiving"
      " engine saw %s duplicates; ACKs seen %d, ack_stale_gen %d, RTT"
      " samples %d; ACK bytes out %d / trigger bytes in %d; left to the"
      " daemon: larger %d, limited %d, busy %d, unverified %d, PROBEs"
      " behind queued data %d, PROBEs showing ACKs lost %d" %
      (answered, s["tx_ack_dup"], s["tx_ack_probe"], rx_xdp,
       dups.group(1) if dups else "?", acks, s["ack_stale_gen"],
       s["ack_rtt_samples"], s["tx_ack_bytes"], s["tx_ack_trigger_bytes"],
       s["ack_offload_larger"], s["ack_offload_limited"],
       s["ack_offload_busy"], s["ack_offload_unverified"],
       s["ack_probe_queued"], s["ack_probe_acks_lost"]))
bad = []
# the endpoint turned offload on (or, with --no-ack-offload, off) once
# it knew the peer's id and address
for name, path in (("A", conns_a), ("B", conns_b)):
    mr = [e["value"] for e in entries(path) if e["key"]["proto"] == 1]
    if len(mr) != 1 or mr[0]["flags"] != (1 if offload else 0) or \
       not mr[0]["peer_conn_id"] or mr[0]["peer_family"] != 4:
        bad.append("conns of %s: %s" % (name, mr))
if offload and answered == 0:
    bad.append("the XDP programs answered nothing")
if not offload and answered:
    bad.append("--no-ack-offload, yet XDP answered %d" % answered)
# what the programs sent reached the peers' engines as ACKs (1% is lost)
if rx_xdp > answered or rx_xdp * 100 < answered * 90:
    bad.append("the engines took in %d XDP ACKs of %d sent" %
               (rx_xdp, answered))
# an answer that ran ahead of data still queued for the daemon would call
# it missing: the sender resends it, the receiver sees a duplicate
if not dups or int(dups.group(1)) * 500 > 40000:
    bad.append("duplicates at the receiver: %s of 40000 (over 0.2%%)" %
               (dups.group(1) if dups else "?"))
if acks == 0 or s["ack_stale_gen"] * 100 > acks:
    bad.append("ack_stale_gen %d of %d ACKs" % (s["ack_stale_gen"], acks))
if s["tx_ack_bytes"] > s["tx_ack_trigger_bytes"]:
    bad.append("more bytes out than in")
if s["ack_rtt_samples"] == 0:
    bad.append("no RTT sample in the scoreboard's telemetry")
# the sender's engine published its 8 ports; ACKs fed their telemetry
live = [e["value"] for e in entries(sb_a) if e["value"]["n_paths"]]
if len(live) != 1 or live[0]["n_paths"] != 8 or \
   live[0]["active_mask"] == 0 or \
   any(live[0]["path"][i]["sport"] == 0 for i in range(8)) or \
   not any(live[0]["path"][i]["srtt_us"] for i in range(8)):
    bad.append("scoreboard of A: %s" % [
        (v["n_paths"], v["active_mask"], [p["sport"] for p in v["path"][:8]])
        for v in live])
# the receiver's engine published what it placed on each of the 8 paths
rx = [e["value"] for e in entries(rx_b)
      if e["value"]["flags"] & 1 and e["value"]["seq"]]
if len(rx) != 8 or any(v["seq"] & 1 for v in rx):
    bad.append("rx_state of B: %d valid paths" % len(rx))
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
	then
		flunk "XDP maps after the run (offload $1)"
	else
		echo "ok: XDP maps after the run (offload $1)"
	fi
}

fab_up --paths 4 --mtu 1500 --loss 0.01
daemons_up
run offload && check 1 "$TMP/offload"
mroced_stop DPA DPB
daemons_up --no-ack-offload
run no-offload && check 0 "$TMP/no-offload"
mroced_stop DPA DPB
xdp_gone "$FABRIC_A_NS" eth0
xdp_gone "$FABRIC_B_NS" eth0

ns_summary xdp_offload "$TMP"/mroced-*.log
