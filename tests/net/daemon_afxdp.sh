#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# daemon_afxdp.sh - mroced over AF_XDP: two namespaces joined by a veth
# pair (one queue each end, static neighbours, names unique to this run,
# removed by a trap); in each, mroced --backend afxdp --attach owns the
# interface (it attaches the XDP program itself and detaches it on exit);
# mroce_perf --daemon runs in the namespaces as the applications.
#
#   tests/net/daemon_afxdp.sh           run (root, veth, XDP, AF_XDP)
#   tests/net/daemon_afxdp.sh --probe   exit 77 with a one-line reason when
#                                       the test cannot run here
#
# For both transports at MTU 1500 and 9000 (multi-buffer AF_XDP):
# write_bw --verify and send_bw --verify; the payload MTU follows the
# interface (1024 / 8192 B). Then SIGTERM: both daemons exit 0, their
# sockets are gone and the XDP program is detached from both interfaces.
set -u

B=${MROCE_BUILD:-build}
CTL=$B/bin/mrocectl
PERF=$B/bin/mroce_perf
MROCED=$B/bin/mroced
export PATH="$PATH:/usr/sbin:/sbin"

probe() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (netns, XDP, AF_XDP)"; return 77; }
	command -v ip >/dev/null 2>&1 || { echo "'ip' is not installed"; return 77; }
	for f in "$CTL" "$PERF" "$MROCED"; do
		[ -x "$f" ] || { echo "$f not built"; return 77; }
	done
	local n=mdp$$
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

ID=mdx$$
NSA=${ID}a NSB=${ID}b
IFA=${ID}0 IFB=${ID}1
IPA=10.252.0.1 IPB=10.252.0.2
DPA= DPB=
cleanup() {
	[ -n "$DPA" ] && kill $DPA 2>/dev/null
	[ -n "$DPB" ] && kill $DPB 2>/dev/null
	wait 2>/dev/null
	ip netns del $NSA 2>/dev/null
	ip netns del $NSB 2>/dev/null
	rm -rf "${TMP:-/nonexistent}"
	true
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
TMP=$(mktemp -d /tmp/mroce-dafx.XXXXXX)
SA=$TMP/a.sock SB=$TMP/b.sock

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

# start_daemon VAR NS IFNAME ADDR SOCK: mroced in NS (own bpffs mount,
# since `ip netns exec` remounts /sys); its pid in VAR.
start_daemon() {
	ip netns exec $2 bash -c 'mount -t bpf bpf /sys/fs/bpf 2>/dev/null
		exec "$@"' sd "$MROCED" --backend afxdp --ifname $3 --attach \
		--local $4 --sock $5 --rto-min 20000 \
		>>"$TMP/mroced-$2.log" 2>&1 &
	printf -v "$1" '%s' $!
}

wait_sock() {
	for _ in $(seq 200); do
		"$CTL" daemon --sock "$1" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

wait_listen() {
	for _ in $(seq 200); do
		ip netns exec $NSB ss -Hltn "sport = :$1" 2>/dev/null |
			grep -q . && return 0
		sleep 0.05
	done
	return 1
}

daemons_up() {
	start_daemon DPA $NSA $IFA $IPA $SA
	start_daemon DPB $NSB $IFB $IPB $SB
	wait_sock $SA || { cat "$TMP"/mroced-*.log; fail "mroced A did not start"; }
	wait_sock $SB || { cat "$TMP"/mroced-*.log; fail "mroced B did not start"; }
}

# daemons_down: SIGTERM, exit 0, socket gone, XDP detached.
daemons_down() {
	local rc
	kill -TERM $DPA $DPB
	wait $DPA; rc=$?
	[ $rc -eq 0 ] || { FAILS=$((FAILS + 1)); echo "FAIL: mroced A exit $rc"; }
	wait $DPB; rc=$?
	[ $rc -eq 0 ] || { FAILS=$((FAILS + 1)); echo "FAIL: mroced B exit $rc"; }
	DPA= DPB=
	[ -e $SA ] || [ -e $SB ] && { FAILS=$((FAILS + 1)); echo "FAIL: socket left"; }
	if ip -n $NSA link show $IFA | grep -q "xdp" ||
	   ip -n $NSB link show $IFB | grep -q "xdp"; then
		FAILS=$((FAILS + 1))
		echo "FAIL: XDP program still attached after SIGTERM"
	fi
}

PORT=18900
FAILS=0
run() {
	local t=$1 tr=$2 mtu=$3 rc src out=$TMP/$1.$2.$3
	local want=1024
	[ $mtu = 9000 ] && want=8192
	PORT=$((PORT + 1))
	ip netns exec $NSB timeout 60 "$PERF" $t --daemon=$SB -p $PORT \
		-s 20000 --transport $tr >"$out.srv" 2>&1 &
	local spid=$!
	wait_listen $PORT || { cat "$out.srv"; fail "$t $tr: no server"; }
	ip netns exec $NSA timeout 60 "$PERF" $t --daemon=$SA -p $PORT \
		-s 20000 -n 200 --verify --transport $tr $IPB >"$out" 2>&1
	rc=$?
	wait $spid
	src=$?
	if [ $rc -ne 0 ] || [ $src -ne 0 ] || ! grep -q "Verify *: OK" "$out"; then
		echo "FAIL: $t $tr mtu $mtu: client $rc, server $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$out.srv"
		FAILS=$((FAILS + 1))
		return
	fi
	grep -q "Mtu *: $want\[B\]" "$out" ||
		{ echo "FAIL: $t $tr mtu $mtu: not $want B"; FAILS=$((FAILS + 1)); }
	echo "ok: $t $tr mtu $mtu: $(grep -A1 -m1 '#bytes' "$out" | tail -1)"
}

for mtu in 1500 9000; do
	ip -n $NSA link set $IFA mtu $mtu && ip -n $NSB link set $IFB mtu $mtu ||
		fail "mtu $mtu"
	daemons_up
	for tr in rocev2 metaroce; do
		run write_bw $tr $mtu
		run send_bw $tr $mtu
	done
	"$CTL" daemon --sock $SA >"$TMP/st"
	grep -q "afxdp $IFA" "$TMP/st" ||
		{ echo "FAIL: status does not show afxdp $IFA"; cat "$TMP/st";
		  FAILS=$((FAILS + 1)); }
	daemons_down
done

[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; cat "$TMP"/mroced-*.log; exit 1; }
echo "daemon_afxdp: all passed"
