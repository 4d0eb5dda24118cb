#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# perf_afxdp.sh - mroce_perf over the AF_XDP backend: two namespaces joined
# by a veth pair (one queue each end, MTU 1500, static neighbours, names
# unique to this run, removed by a trap), `mrocectl attach` on both ends,
# libmroce registering its QPs with the XDP program.
#
#   tests/net/perf_afxdp.sh           run (needs root, veth, XDP, AF_XDP)
#   tests/net/perf_afxdp.sh --probe   exit 77 with a one-line reason when
#                                     the test cannot run here, else exit 0
#
# RoCEv2 write_bw, read_bw, send_bw and write_lat with --verify must pass
# (the backend fills and checks the ICRC, so this is real RoCEv2 on the
# wire) and the MTU must follow the interface (1500 -> 1024 B payloads).
# MetaRoCE over AF_XDP is refused with a named error, not run half-way.
set -u

B=${MROCE_BUILD:-build}
CTL=$B/bin/mrocectl
PERF=$B/bin/mroce_perf
export PATH="$PATH:/usr/sbin:/sbin"

probe() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (netns, XDP, AF_XDP)"; return 77; }
	command -v ip >/dev/null 2>&1 || { echo "'ip' is not installed"; return 77; }
	[ -x "$CTL" ] && [ -x "$PERF" ] || { echo "$CTL or $PERF not built"; return 77; }
	local n=mpp$$
	ip netns add $n 2>/dev/null ||
		{ echo "cannot create network namespaces"; return 77; }
	if ! ip -n $n link add ${n}0 type veth peer name ${n}1 2>/dev/null; then
		ip netns del $n
		echo "no veth support"
		return 77
	fi
	ip netns del $n
	if ! perl -e 'use Socket; socket(my $s, 44, 3, 0) or exit 1' 2>/dev/null; then
		echo "no AF_XDP sockets in this kernel"
		return 77
	fi
	return 0
}

case "${1:-}" in
--probe) probe; exit $? ;;
esac
probe >/dev/null || { echo "cannot run: $(probe)"; exit 77; }

ID=mpf$$
NSA=${ID}a NSB=${ID}b
IFA=${ID}0 IFB=${ID}1
IPA=10.253.0.1 IPB=10.253.0.2
SPID=
cleanup() {
	[ -n "$SPID" ] && kill $SPID 2>/dev/null
	ip netns del $NSA 2>/dev/null
	ip netns del $NSB 2>/dev/null
	rm -rf "${TMP:-/nonexistent}"
	true
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
TMP=$(mktemp -d /tmp/mroce-pafx.XXXXXX)

ip netns add $NSA && ip netns add $NSB || fail "netns add"
ip link add $IFA numtxqueues 1 numrxqueues 1 type veth \
	peer name $IFB numtxqueues 1 numrxqueues 1 || fail "veth"
ip link set $IFA netns $NSA && ip link set $IFB netns $NSB || fail "move"
ip -n $NSA addr add $IPA/24 dev $IFA
ip -n $NSB addr add $IPB/24 dev $IFB
ip -n $NSA link set $IFA up && ip -n $NSB link set $IFB up || fail "up"
MAC_A=$(ip -n $NSA -br link show dev $IFA | awk '{print $3}')
MAC_B=$(ip -n $NSB -br link show dev $IFB | awk '{print $3}')
# AF_XDP answers no ARP: static neighbours both ways.
ip -n $NSA neigh replace $IPB lladdr $MAC_B dev $IFA nud permanent
ip -n $NSB neigh replace $IPA lladdr $MAC_A dev $IFB nud permanent

# in_ns NS IFNAME CMD...: CMD in a session of NS with bpffs mounted (ip
# netns exec remounts /sys) and mroce attached to IFNAME (re-attached, so
# each run starts from empty maps).
in_ns() {
	local ns=$1 ifn=$2
	shift 2
	ip netns exec $ns bash -c '
		mount -t bpf bpf /sys/fs/bpf || exit 2
		'"$CTL"' detach '"$ifn"' >/dev/null 2>&1
		'"$CTL"' attach '"$ifn"' >/dev/null || { echo "attach failed"; exit 2; }
		exec "$@"' in_ns "$@"
}

wait_listen() {
	for _ in $(seq 100); do
		ip netns exec $NSB ss -Hltn "sport = :$1" 2>/dev/null |
			grep -q . && return 0
		sleep 0.05
	done
	return 1
}

PORT=18800
FAILS=0
# run TEST SIZE ITERS
run() {
	local t=$1 size=$2 n=$3 rc src out=$TMP/$1
	PORT=$((PORT + 1))
	in_ns $NSB $IFB timeout 60 "$PERF" $t -p $PORT -s $size \
		--backend afxdp --ifname $IFB --local $IPB --transport rocev2 \
		>"$out.srv" 2>&1 &
	SPID=$!
	wait_listen $PORT || { cat "$out.srv"; fail "$t: server did not listen"; }
	in_ns $NSA $IFA timeout 60 "$PERF" $t -p $PORT -s $size -n $n \
		--verify --backend afxdp --ifname $IFA --local $IPA \
		--transport rocev2 $IPB >"$out" 2>&1
	rc=$?
	wait $SPID
	src=$?
	SPID=
	if [ $rc -ne 0 ] || [ $src -ne 0 ] || ! grep -q "Verify *: OK" "$out"; then
		echo "FAIL: $t: client $rc, server $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$out.srv"
		FAILS=$((FAILS + 1))
		return
	fi
	grep -q "Device *: mroce (embedded, afxdp)" "$out" ||
		{ echo "FAIL: $t: header does not name afxdp"; FAILS=$((FAILS + 1)); }
	grep -q "Mtu *: 1024\[B\]" "$out" ||
		{ echo "FAIL: $t: MTU not derived from the interface"; FAILS=$((FAILS + 1)); }
	echo "ok: $t rocev2 afxdp: $(grep -A1 -m1 '#bytes' "$out" | tail -1)"
}

run write_bw 4096 500
run read_bw 4096 300
run send_bw 4096 300
run write_lat 64 200

# MetaRoCE over AF_XDP: refused by name (the engine does not expose the
# connection ids the XDP program needs yet).
out=$(in_ns $NSA $IFA "$PERF" write_bw --backend afxdp --ifname $IFA \
	--local $IPA $IPB 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -qi "not supported" <<<"$out" ||
	{ echo "FAIL: metaroce over afxdp: exit $rc, '$out'"; FAILS=$((FAILS + 1)); }

[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "perf_afxdp: all passed"
