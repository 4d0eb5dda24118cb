#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# xdp_ns.sh - namespace test of the XDP fast path and mrocectl.
#
#   tests/net/xdp_ns.sh           run (needs root, veth, native XDP)
#   tests/net/xdp_ns.sh --probe   exit 77 with a one-line reason when the
#                                 test cannot run here, else exit 0
#
# Two namespaces joined by a veth pair (names unique to this run, removed
# by a trap). On A: mrocectl attach, a connection and published receive
# state written with bpftool. From B: real frames sent by a small C helper
# (valid, duplicate, PROBE, malformed, unknown connection, ARP, UDP 53)
# and a ping. Checks: the named counters moved exactly as expected (read
# with `mrocectl stats --json` and with `bpftool map dump`, which must
# print the field names), the ACK the kernel generated for the duplicate
# arrives at B and parses (ICRC) as an XDP ACK, the PROBE goes to the
# daemon instead (its ACK would be longer than it), ping works, the refusals are named, and
# detach leaves no program and no pins.
#
# B runs mroce too (on other ports): veth delivers XDP_TX frames only to a
# peer that has an XDP program (docs/xdp.md).
set -u
# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "$0")/ns_lib.sh"
SEND=$B/tests/mroce_xdp_send

probe() {
	need_root "netns, XDP" && need_cmds ip bpftool setpriv &&
		need_built "$CTL" "$SEND" && need_netns mxp
}
ns_probe 77 probe "$@"

ns_pair mx$$ 10.250.0.1 10.250.0.2
QA=mx$$q QB=mx$$r

# B: an XDP program so that A's XDP_TX frames are delivered; its ports
# differ so that the ACKs (to 4792) are not its own and reach its stack.
ip netns exec $NSB $CTL attach $IFB --port 4793 --rocev2-port 4794 \
	>/dev/null 2>&1 || fail "attach on B"

# Everything that needs A's pins runs in one session (xdp_run: bpffs
# lasts as long as it does).
export CTL SEND NSB IFA IFB MAC_A QA QB
xdp_run --no-attach $NSA "" bash -s <<'EOF'
set -u
fail() { echo "FAIL: $*"; exit 1; }
PIN=/sys/fs/bpf/mroce/$IFA

# ---- refusals, each named, exit status 1
out=$($CTL attach ${IFA}nope 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q NO_IFACE <<<"$out" || fail "missing iface: $rc $out"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups $CTL attach $IFA 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q NO_PRIV <<<"$out" || fail "no privileges: $rc $out"
ip link add $QA numtxqueues 1 numrxqueues 1 type veth \
	peer name $QB numtxqueues 2 numrxqueues 2 || fail "queue veth"
out=$($CTL attach $QA 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q NATIVE_REFUSED <<<"$out" &&
	grep -q numtxqueues <<<"$out" || fail "queue mismatch: $rc $out"
[ ! -e /sys/fs/bpf/mroce/$QA ] || fail "pins left by a failed attach"
ip link del $QA

# ---- attach, and a second attach is refused
$CTL attach $IFA >/dev/null || fail "attach"
out=$($CTL attach $IFA 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q ALREADY_ATTACHED <<<"$out" || fail "2nd attach: $out"
$CTL status | grep -q "^$IFA " || fail "status does not list $IFA"
for m in conns xsks rx_state scoreboard counters; do
	[ -e $PIN/$m ] || fail "no pin $PIN/$m"
done

# ---- what the daemon would publish: conn 0x1001 -> slot 5, peer 0x2002,
# ACK offload, peer address 10.250.0.2 (IPv4); path 3 gen 2 has cum_psn
# 1000 (index 5 * 64 + 3 = 323)
bpftool map update pinned $PIN/conns key hex 01 10 00 00 01 00 00 00 \
	value hex 05 00 00 00 02 20 00 00 01 00 00 00 04 00 00 00 \
	0a fa 00 02 00 00 00 00 00 00 00 00 00 00 00 00 ||
	fail "conns update"
bpftool map update pinned $PIN/rx_state key hex 43 01 00 00 value hex \
	00 00 00 00 e8 03 00 00 02 01 00 00 10 27 00 00 \
	21 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
	00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
	00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 || fail "rx_state"

# ---- B listens for the ACK A's XDP program will send
ackout=$(mktemp)
ip netns exec $NSB $SEND --recv-acks 1 --timeout 5000 >$ackout 2>&1 &
rpid=$!
for i in $(seq 50); do grep -q listening $ackout && break; sleep 0.1; done

ip netns exec $NSB $SEND --dmac $MAC_A --src 10.250.0.2 --dst 10.250.0.1 \
	$IFB data dup probe badver badop noconn noconn arp udp53 || fail "send"
ip netns exec $NSB $SEND --ping 10.250.0.1 || fail "ping through XDP"
wait $rpid || { cat $ackout; fail "XDP ACKs did not arrive at B"; }
grep -c "flags 0x05" $ackout | grep -q 1 || fail "no DUP ACK: $(cat $ackout)"
rm -f $ackout

# ---- counters: exact for our traffic, at least one for the rest
json=$($CTL stats $IFA --json) || fail "stats"
get() { grep -o "\"$1\":[0-9]*" <<<"$json" | cut -d: -f2; }
# the duplicate (300 bytes of MetaRoCE, under MROCE_XDP_VERIFY_MAX)
# had its ICRC verified before its ACK
for want in rx_metaroce=7 tx_ack_dup=1 tx_ack_probe=0 ack_offload_larger=1 \
	    drop_bad_version=1 drop_bad_opcode=1 drop_bad_icrc=0 \
	    ack_offload_unverified=0 redirect_data=0 drop_bad_ip_csum=0; do
	n=${want%=*} v=${want#*=}
	[ "$(get $n)" = "$v" ] || fail "$n = $(get $n), want $v"
done
# data and the PROBE -> daemon: no AF_XDP socket here (drop_no_xsk). Of the two packets
# for an unknown connection the first goes to the daemon too (its engine
# would answer NAK NO_CONN), the second, within 100 us, is dropped
# (drop_no_conn) - unless the sender was descheduled in between.
nx=$(get drop_no_xsk) nc=$(get drop_no_conn)
[ "$nx" -ge 3 ] && [ $((nx + nc)) -eq 4 ] ||
	fail "drop_no_xsk = $nx, drop_no_conn = $nc, want 3 and 1 (or 4 and 0)"
for n in pass_not_ip pass_not_udp pass_other_port; do
	[ "$(get $n)" -ge 1 ] || fail "$n = $(get $n), want >= 1"
done
dump=$(bpftool map dump pinned $PIN/counters) || fail "bpftool dump"
for n in rx_packets drop_bad_version ack_offload_larger pass_not_ip; do
	grep -q "\"$n\"" <<<"$dump" || fail "bpftool does not name $n"
done

# ---- detach leaves nothing behind
$CTL detach $IFA >/dev/null || fail "detach"
ip link show dev $IFA | grep -q "prog/xdp" && fail "program left on $IFA"
[ -e $PIN ] && fail "pins left in $PIN"
[ -e /sys/fs/bpf/mroce ] && fail "pin root left"
out=$($CTL detach $IFA 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q NOT_ATTACHED <<<"$out" || fail "2nd detach: $out"
ip netns exec $NSB $SEND --ping 10.250.0.1 || fail "ping after detach"
exit 0
EOF
rc=$?
[ $rc -eq 0 ] || exit $rc
ip netns exec $NSB $CTL detach $IFB >/dev/null || fail "detach on B"
echo "xdp_ns: all checks passed"
exit 0
