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
# by a trap). On A: mrocectl attach. From B: real frames sent by a small C
# helper (malformed, unknown connection, ARP, UDP 53) and a ping. Checks:
# the named counters moved exactly as expected (read with `mrocectl stats
# --json` and with `bpftool map dump`, which must print the field names),
# nothing is answered, ping works, the refusals are named, and detach
# leaves no program and no pins. What the program answers from the state
# real daemons publish is tests/net/xdp_offload.sh's (two mroced at 1%
# loss); the byte-exact answers are the table of tests/bpf/test_xdp.c.
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

ip netns exec $NSB $SEND --dmac $MAC_A --src 10.250.0.2 --dst 10.250.0.1 \
	$IFB badver badop noconn noconn arp udp53 || fail "send"
ip netns exec $NSB $SEND --ping 10.250.0.1 || fail "ping through XDP"

# ---- counters: exact for our traffic, at least one for the rest
json=$($CTL stats $IFA --json) || fail "stats"
get() { grep -o "\"$1\":[0-9]*" <<<"$json" | cut -d: -f2; }
for want in rx_metaroce=4 tx_ack_dup=0 tx_ack_probe=0 \
	    drop_bad_version=1 drop_bad_opcode=1 drop_bad_icrc=0 \
	    redirect_data=0 drop_bad_ip_csum=0; do
	n=${want%=*} v=${want#*=}
	[ "$(get $n)" = "$v" ] || fail "$n = $(get $n), want $v"
done
# Of the two packets for an unknown connection the first goes to the
# daemon (its engine would answer NAK NO_CONN; no AF_XDP socket here:
# drop_no_xsk), the second, within 100 us, is dropped (drop_no_conn) -
# unless the sender was descheduled in between.
nx=$(get drop_no_xsk) nc=$(get drop_no_conn)
[ "$nx" -ge 1 ] && [ $((nx + nc)) -eq 2 ] ||
	fail "drop_no_xsk = $nx, drop_no_conn = $nc, want 1 and 1 (or 2 and 0)"
for n in pass_not_ip pass_not_udp pass_other_port; do
	[ "$(get $n)" -ge 1 ] || fail "$n = $(get $n), want >= 1"
done
dump=$(bpftool map dump pinned $PIN/counters) || fail "bpftool dump"
for n in rx_packets drop_bad_version ack_offload_larger pass_not_ip \
	 tx_ack_trigger_bytes; do
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
echo "xdp_ns: all checks passed"
exit 0
