#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xdp_offload.sh - the XDP half live: two mroced over AF_XDP on the 4-path
# namespace fabric with 1% random loss on every path, both ways
# (scripts/fabric.sh --loss 0.01), their engines publishing each path's
# state into the XDP maps (docs/xdp.md). MetaRoCE write_bw --verify of
# small messages from A to B, then, from `bpftool map dump` of each host's
# counters (found through the program attached to its eth0: the daemons'
# pins live in their own mount namespaces):
#   - the XDP programs answered duplicates themselves (tx_ack_dup +
#     tx_ack_probe > 0 over both hosts);
#   - telemetry found the sender's current path generation: ack_stale_gen
#     <= 1% of the ACKs the program saw;
#   - never more bytes out than in: tx_ack_bytes <= tx_ack_trigger_bytes;
#   - the scoreboard of A's connection names 8 paths, all with a port, and
#     holds RTT samples (the engine published its ports, the ACKs fed it);
# and the same run again with `mroced --no-ack-offload`: the programs
# answer nothing (tx_ack_dup = tx_ack_probe = 0), --verify still passes.
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

# check OFFLOAD(1|0): the counters of both hosts and A's scoreboard
check() {
	local h ns f=()
	for h in A B; do
		ns=FABRIC_${h}_NS
		dump "${!ns}" counters "$TMP/ctr$h.json" || return
		f+=("$TMP/ctr$h.json")
	done
	dump "$FABRIC_A_NS" scoreboard "$TMP/sbA.json" || return
	if ! python3 - "$1" "${f[@]}" "$TMP/sbA.json" <<'PY'
import json, sys

offload = sys.argv[1] == "1"

def counters(path):
    tot = {}
    for e in json.load(open(path)):
        e = e.get("formatted", e)
        for v in e["values"]:
            for k, n in v["value"].items():
                tot[k] = tot.get(k, 0) + n
    return tot

c = [counters(p) for p in sys.argv[2:4]]
s = {k: c[0][k] + c[1][k] for k in c[0]}
answered = s["tx_ack_dup"] + s["tx_ack_probe"]
acks = s["redirect_ack"]
print("    XDP, both hosts: tx_ack_dup %d tx_ack_probe %d, ACKs seen %d,"
      " ack_stale_gen %d, rtt samples %d, bytes out %d / in %d,"
      " unverified %d, limited %d" %
      (s["tx_ack_dup"], s["tx_ack_probe"], acks, s["ack_stale_gen"],
       s["ack_rtt_samples"], s["tx_ack_bytes"], s["tx_ack_trigger_bytes"],
       s.get("ack_offload_unverified", 0), s["ack_offload_limited"]))
bad = []
if offload and answered == 0:
    bad.append("the XDP programs answered no duplicate")
if not offload and answered:
    bad.append("--no-ack-offload, yet XDP answered %d" % answered)
if acks == 0 or s["ack_stale_gen"] * 100 > acks:
    bad.append("ack_stale_gen %d of %d ACKs" % (s["ack_stale_gen"], acks))
if s["tx_ack_bytes"] > s["tx_ack_trigger_bytes"]:
    bad.append("more bytes out than in")
if s["ack_rtt_samples"] == 0:
    bad.append("no RTT sample in the scoreboard's telemetry")
conns = [e.get("formatted", e)["value"] for e in json.load(open(sys.argv[4]))]
live = [v for v in conns if v["n_paths"]]
if len(live) != 1 or live[0]["n_paths"] != 8 or \
   any(live[0]["path"][i]["sport"] == 0 for i in range(8)) or \
   not any(live[0]["path"][i]["srtt_us"] for i in range(8)):
    bad.append("scoreboard of A: %s" % [
        (v["n_paths"], [p["sport"] for p in v["path"][:8]]) for v in live])
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
	then
		flunk "XDP counters or scoreboard (offload $1)"
	else
		echo "ok: XDP counters and scoreboard (offload $1)"
	fi
}

fab_up --paths 4 --mtu 1500 --loss 0.01
daemons_up
run offload && check 1
mroced_stop DPA DPB
daemons_up --no-ack-offload
run no-offload && check 0
mroced_stop DPA DPB
xdp_gone "$FABRIC_A_NS" eth0
xdp_gone "$FABRIC_B_NS" eth0

ns_summary xdp_offload "$TMP"/mroced-*.log
