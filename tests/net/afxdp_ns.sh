#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# afxdp_ns.sh - namespace test of the AF_XDP backend (user/io/afxdp.c).
#
#   tests/net/afxdp_ns.sh           run (needs root, veth, XDP, AF_XDP)
#   tests/net/afxdp_ns.sh --probe   exit 77 with a one-line reason when the
#                                   test cannot run here, else exit 0
#   tests/net/afxdp_ns.sh --bench   also measure the send rate: the backend
#                                   against kernel UDP sendmmsg(), same veth
#
# Two namespaces joined by a veth pair (1 queue each end, names unique to
# this run, removed by a trap), static neighbours, `mrocectl attach` on both
# ends. Each end runs build/tests/mroce_afxdp_peer inside a session of its
# namespace that mounts bpffs first (`ip netns exec` remounts /sys, so the
# pins exist only inside that session): B serves (registers its conn and
# QPN, checks every payload, echoes), A pings (registers its conn, sends,
# checks the echoes byte for byte, then sends the RoCEv2, CE and bad-ICRC
# frames). Run at MTU 1500 (payloads up to 1400 B) and at MTU 9000 with
# multi-buffer AF_XDP (payloads up to 8 KiB: three descriptors each way),
# over IPv4 and (at MTU 9000) IPv6.
# Ping must still work through the attached program.
set -u
# shellcheck source=tests/net/ns_lib.sh
. "$(dirname "$0")/ns_lib.sh"
PEER=$B/tests/mroce_afxdp_peer
PING=$B/tests/mroce_xdp_send	# its --ping: iputils may be missing

probe() {
	need_root "netns, XDP, AF_XDP" && need_cmds ip &&
		need_built "$CTL" "$PEER" "$PING" && need_netns max && need_afxdp
}
ns_probe 77 probe "$@"
BENCH=0
[ "${1:-}" = --bench ] && BENCH=1

IPA=10.251.0.1 IPB=10.251.0.2
IP6A=fd00:251::1 IP6B=fd00:251::2
ns_tmp afx
ns_pair ax$$ $IPA $IPB
ip -n $NSA addr add $IP6A/64 dev $IFA nodad
ip -n $NSB addr add $IP6B/64 dev $IFB nodad
# static neighbours (ns_neigh): the backend reads these
ns_neigh $IPA $IPB
ns_neigh $IP6A $IP6B

# exchange MTU A_ADDR B_ADDR ARGS...: one serve/ping round at this MTU
exchange() {
	local mtu=$1 a=$2 b=$3
	shift 3
	ns_mtu $mtu
	OUT=$TMP/out
	xdp_run $NSB $IFB $PEER serve $IFB $b $a --timeout 20000 "$@" \
		>$OUT 2>&1 &
	SPID=$!
	for _ in $(seq 100); do grep -q ready $OUT && break; sleep 0.1; done
	grep -q ready $OUT || { cat $OUT; fail "server did not start (MTU $mtu)"; }
	xdp_run $NSA $IFA $PEER ping $IFA $a $b --peer-mac $MAC_B \
		--timeout 15000 "$@" || { kill $SPID; cat $OUT; fail "ping (MTU $mtu)"; }
	wait $SPID || { cat $OUT; fail "serve (MTU $mtu)"; }
	SPID=
	cat $OUT
	LAST=$(cat $OUT)
}

# ---- MTU 1500: one frame per packet. B's kernel does not know A's MAC:
# B's backend must answer through the MAC it learnt from A's frames.
ip -n $NSB neigh del $IPA dev $IFB || fail "neigh del"
exchange 1500 $IPA $IPB --count 400 --max-len 1400
grep -q "serve:.*tx_pkts=400 .*tx_no_neigh=0" <<<"$LAST" ||
	fail "B did not answer through the learnt MAC"
ip -n $NSB neigh replace $IPA lladdr $MAC_A dev $IFB nud permanent
# ---- MTU 9000: 8 KiB payloads, three descriptors per frame each way
exchange 9000 $IPA $IPB --count 200 --max-len 8192 --mb
grep -q "rx_chains=[1-9]" <<<"$LAST" || fail "no multi-buffer chains at MTU 9000"
grep -q "tx_chains=[1-9]" <<<"$LAST" || fail "no multi-buffer transmit at MTU 9000"

# ---- IPv6 (UDP checksum computed by the codec), jumbo frames too
exchange 9000 $IP6A $IP6B --count 100 --max-len 8192 --mb

# ---- zero-copy transmit (mroce_io_tx_bufs): every packet either end sends
# is written in a UMEM slot and framed in place, IPv4 and IPv6 MetaRoCE and
# a 6000-byte RoCEv2 SEND (ICRC over the headers, in place); every byte is
# checked at the other end, and after the run every slot is free again
zc_check() {
	grep -q "serve:.*tx_zc_pkts=$1 .*tx_slots_free=64/64" <<<"$LAST" ||
		fail "zero-copy ($2): B sent $1 from slots, all free again?"
}
exchange 9000 $IPA $IPB --count 200 --max-len 8192 --mb --zc
zc_check 200 IPv4
grep -q "serve: .*rocev2=1 bad=0" <<<"$LAST" || fail "zero-copy RoCEv2"
exchange 9000 $IP6A $IP6B --count 100 --max-len 8192 --mb --zc
zc_check 100 IPv6
exchange 1500 $IPA $IPB --count 100 --max-len 1400 --zc
zc_check 100 "one frame"

# ---- zero-copy with a 32-descriptor ring: a batch of 24 slots does not
# fit, the refused packets go again from their slots; B checks each byte,
# A that every slot came back and the counters add up
ns_mtu 9000
xdp_run $NSB $IFB $PEER sink $IFB $IPB $IPA --count 240 --max-len 8192 \
	--mb --timeout 20000 >$TMP/sink 2>&1 &
SPID=$!
for _ in $(seq 100); do grep -q ready $TMP/sink && break; sleep 0.1; done
out=$(xdp_run $NSA $IFA $PEER burst $IFA $IPA $IPB --count 240 \
	--max-len 8192 --mb --nframes 64 --slots 24 --timeout 15000) ||
	{ kill $SPID; cat $TMP/sink; fail "burst: $out"; }
echo "$out"
wait $SPID || { cat $TMP/sink; fail "sink"; }
SPID=
cat $TMP/sink
grep -q "tx_full=[1-9]" <<<"$out" || fail "burst: the ring never filled"
# the same at MTU 1500: the kernel drops the larger frames (EBUSY from the
# kick, frames left in the ring): still no stall and every slot comes back
ns_mtu 1500
out=$(xdp_run $NSA $IFA $PEER burst $IFA $IPA $IPB --count 240 \
	--max-len 8192 --mb --nframes 64 --slots 24 --timeout 15000) ||
	fail "burst over the MTU: $out"
echo "$out"

# ---- next hop: an off-link address is sent to its gateway's MAC; an
# on-link address without a neighbour entry is dropped and counted
ip -n $NSA route add 10.252.0.0/24 via $IPB dev $IFA || fail "route"
out=$(xdp_run $NSA $IFA $PEER tx $IFA $IPA 10.252.0.7 --count 3) || fail "tx: $out"
grep -q "tx_pkts=3 .*tx_no_neigh=0" <<<"$out" || fail "via gateway: $out"
out=$(xdp_run $NSA $IFA $PEER tx $IFA $IPA 10.251.0.99 --count 3) || fail "tx: $out"
grep -q "tx_pkts=0 .*tx_errors=3 .*tx_no_neigh=3" <<<"$out" ||
	fail "no neighbour: $out"

# ---- not ours: ping still works through the attached programs
ip netns exec $NSA $PING --ping $IPB >/dev/null || fail "ping A->B"
ip netns exec $NSB $PING --ping $IPA >/dev/null || fail "ping B->A"

if [ $BENCH = 1 ]; then
	ns_mtu 1500
	for len in 64 1024; do
		xdp_run $NSA $IFA $PEER bench-xdp $IFA $IPA $IPB --len $len --seconds 3
		ip netns exec $NSA $PEER bench-udp $IFA $IPA $IPB --len $len --seconds 3
	done
	ns_mtu 9000
	xdp_run $NSA $IFA $PEER bench-xdp $IFA $IPA $IPB --len 8192 --seconds 3 --mb
	ip netns exec $NSA $PEER bench-udp $IFA $IPA $IPB --len 8192 --seconds 3
fi
echo "afxdp_ns: all checks passed"
exit 0
