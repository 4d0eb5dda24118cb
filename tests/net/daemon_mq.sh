#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# daemon_mq.sh - mroced over AF_XDP with one socket per receive queue: two
# namespaces joined by a veth pair with 2 tx and 2 rx queues on both ends
# (native XDP on veth needs equal counts), names unique to this run,
# removed by a trap. Both daemons run with --queue all (the default of
# --backend afxdp) and must report 2 queues.
#
#   tests/net/daemon_mq.sh           run (root, veth, XDP, AF_XDP)
#   tests/net/daemon_mq.sh --probe   exit 77 with a one-line reason when
#                                    the test cannot run here
#
# mroce_perf --daemon write_bw --verify over MetaRoCE (16 paths = 16 UDP
# source ports) and over RoCEv2, then SIGTERM; each daemon logs one line
# per queue on exit. Why both queues carry traffic, deterministically: a
# copy-mode AF_XDP socket transmits on its own queue, a veth delivers a
# frame on the peer's queue of the same number, and the endpoint sends a
# packet on queue (source port % 2). The sprayed MetaRoCE source ports
# (fixed --seed) hit both parities, so both sockets of the receiving
# daemon must have received packets; the test fails if one queue got
# none. The XDP program's redirect counts per queue from veth's ethtool
# statistics are printed too, when available.
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
	local n=mdq$$
	ip netns add $n 2>/dev/null ||
		{ echo "cannot create network namespaces"; return 77; }
	if ! ip -n $n link add ${n}0 numtxqueues 2 numrxqueues 2 type veth \
		peer name ${n}1 numtxqueues 2 numrxqueues 2 2>/dev/null; then
		ip netns del $n
		echo "no multi-queue veth support"
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

ID=mdq$$
NSA=${ID}a NSB=${ID}b
IFA=${ID}0 IFB=${ID}1
IPA=10.251.0.1 IPB=10.251.0.2
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
TMP=$(mktemp -d /tmp/mroce-dmq.XXXXXX)
SA=$TMP/a.sock SB=$TMP/b.sock

ip netns add $NSA && ip netns add $NSB || fail "netns add"
ip link add $IFA numtxqueues 2 numrxqueues 2 type veth \
	peer name $IFB numtxqueues 2 numrxqueues 2 || fail "veth"
ip link set $IFA netns $NSA && ip link set $IFB netns $NSB || fail "move"
ip -n $NSA addr add $IPA/24 dev $IFA
ip -n $NSB addr add $IPB/24 dev $IFB
ip -n $NSA link set $IFA up && ip -n $NSB link set $IFB up || fail "up"
MAC_A=$(ip -n $NSA -br link show dev $IFA | awk '{print $3}')
MAC_B=$(ip -n $NSB -br link show dev $IFB | awk '{print $3}')
# AF_XDP answers no ARP: static neighbours both ways.
ip -n $NSA neigh replace $IPB lladdr $MAC_B dev $IFA nud permanent
ip -n $NSB neigh replace $IPA lladdr $MAC_A dev $IFB nud permanent

# start_daemon VAR NS IFNAME ADDR SOCK SEED: mroced in NS (own bpffs
# mount, since `ip netns exec` remounts /sys); its pid in VAR. No
# --queue: all queues is the afxdp default.
start_daemon() {
	ip netns exec $2 bash -c 'mount -t bpf bpf /sys/fs/bpf 2>/dev/null
		exec "$@"' sd "$MROCED" --backend afxdp --ifname $3 --attach \
		--local $4 --sock $5 --rto-min 20000 --paths 16 --seed $6 \
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

start_daemon DPA $NSA $IFA $IPA $SA 11
start_daemon DPB $NSB $IFB $IPB $SB 22
wait_sock $SA || { cat "$TMP"/mroced-*.log; fail "mroced A did not start"; }
wait_sock $SB || { cat "$TMP"/mroced-*.log; fail "mroced B did not start"; }
for n in $NSA $NSB; do
	grep -q "afxdp ${ID}[01], 2 queues" "$TMP/mroced-$n.log" ||
		{ cat "$TMP/mroced-$n.log"; fail "$n: daemon does not use 2 queues"; }
done

PORT=18950
FAILS=0
run() {
	local tr=$1 rc src out=$TMP/$1
	PORT=$((PORT + 1))
	ip netns exec $NSB timeout 60 "$PERF" write_bw --daemon=$SB -p $PORT \
		-s 16384 --transport $tr >"$out.srv" 2>&1 &
	local spid=$!
	wait_listen $PORT || { cat "$out.srv"; fail "$tr: no server"; }
	ip netns exec $NSA timeout 60 "$PERF" write_bw --daemon=$SA -p $PORT \
		-s 16384 -n 400 --verify --transport $tr $IPB >"$out" 2>&1
	rc=$?
	wait $spid
	src=$?
	if [ $rc -ne 0 ] || [ $src -ne 0 ] || ! grep -q "Verify *: OK" "$out"; then
		echo "FAIL: write_bw $tr: client $rc, server $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$out.srv"
		FAILS=$((FAILS + 1))
		return
	fi
	echo "ok: write_bw $tr: $(grep -A1 -m1 '#bytes' "$out" | tail -1)"
}

run metaroce
run rocev2
"$CTL" daemon --sock $SB >"$TMP/st" 2>&1
grep -q "afxdp $IFB" "$TMP/st" ||
	{ echo "FAIL: status does not show afxdp $IFB"; cat "$TMP/st";
	  FAILS=$((FAILS + 1)); }
for n in $NSA $NSB; do
	echo "xdp redirects per queue in $n:"
	ip netns exec $n ethtool -S ${ID}$([ $n = $NSA ] && echo 0 || echo 1) \
		2>/dev/null | grep -E 'rx_queue_[0-9]+_xdp_redirect' | sed 's/^/  /'
done

kill -TERM $DPA $DPB
wait $DPA; rc=$?
[ $rc -eq 0 ] || { FAILS=$((FAILS + 1)); echo "FAIL: mroced A exit $rc"; }
wait $DPB; rc=$?
[ $rc -eq 0 ] || { FAILS=$((FAILS + 1)); echo "FAIL: mroced B exit $rc"; }
DPA= DPB=

# Both sockets of each daemon received packets (B: the data, A: the
# acknowledgements and read/handshake replies).
for n in $NSA $NSB; do
	for q in 0 1; do
		line=$(grep "queue $q: rx" "$TMP/mroced-$n.log")
		echo "$n $line"
		pk=$(sed -n 's/.*queue [0-9]*: rx \([0-9]*\) pkts.*/\1/p' <<<"$line")
		[ -n "$pk" ] && [ "$pk" -gt 0 ] ||
			{ echo "FAIL: $n: queue $q received no packets";
			  FAILS=$((FAILS + 1)); }
	done
done

[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; cat "$TMP"/mroced-*.log; exit 1; }
echo "daemon_mq: all passed"
