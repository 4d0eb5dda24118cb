#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# daemon_fabric.sh - mroced over AF_XDP across the 4-path namespace fabric
# (scripts/fabric.sh, docs/fabric.md): one daemon per host namespace with
# `--backend afxdp --ifname eth0 --attach`, mroce_perf --daemon as the
# applications.
#
#   tests/net/daemon_fabric.sh           run (root, netns, XDP, AF_XDP, tc,
#                                        nft, bpftool, ethtool)
#   tests/net/daemon_fabric.sh --probe   exit 77 with a one-line reason
#                                        when it cannot run here
#
# write_bw and send_bw with --verify from A to B must pass for both
# transports; for MetaRoCE the run must be sprayed: the leaves' per-path
# counters show packets on at least two of the four paths, and mroce_perf's
# spraying block lists 8 paths, more than one with packets. SIGTERM ends
# both daemons with exit 0 and the XDP program detached.
set -u
FAB_TAG=xd
# shellcheck source=tests/net/fabric_lib.sh
. tests/net/fabric_lib.sh

PERF=$B/bin/mroce_perf
CTL=$B/bin/mrocectl
MROCED=$B/bin/mroced
for f in "$PERF" "$CTL" "$MROCED"; do
	[ -x "$f" ] || { echo "cannot run: $f not built"; exit 77; }
done
perl -e 'use Socket; socket(my $s, 44, 3, 0) or exit 1' 2>/dev/null ||
	{ echo "cannot run: no AF_XDP sockets in this kernel"; exit 77; }
command -v ss >/dev/null 2>&1 || { echo "cannot run: 'ss' is not installed"; exit 77; }

DPA= DPB= SPID=
SA=$TMP/a.sock SB=$TMP/b.sock
cleanup_all() {
	for p in $SPID $DPA $DPB; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	fab_cleanup
}
trap cleanup_all EXIT

# start_daemon VAR NS ADDR SOCK
start_daemon() {
	ip netns exec "$2" bash -c 'mount -t bpf bpf /sys/fs/bpf 2>/dev/null
		exec "$@"' sd "$MROCED" --backend afxdp --ifname eth0 --attach \
		--local "$3" --sock "$4" --rto-min 1000 \
		>>"$TMP/mroced-$2.log" 2>&1 &
	printf -v "$1" '%s' $!
	for _ in $(seq 200); do
		"$CTL" daemon --sock "$4" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	cat "$TMP/mroced-$2.log"
	fail "mroced in $2 did not start"
}

wait_listen() { # port pid
	for _ in $(seq 200); do
		kill -0 "$2" 2>/dev/null || return 1
		ip netns exec "$FABRIC_B_NS" ss -Hltn "sport = :$1" 2>/dev/null |
			grep -q . && return 0
		sleep 0.05
	done
	return 1
}

path_pkts() { # j: packets on path j both ways so far
	local a b
	a=FABRIC_P${1}_TX12 b=FABRIC_P${1}_TX21
	echo $((${!a:-0} + ${!b:-0}))
}

FAILS=0
PORT=$((23000 + $$ % 20000))
run() { # TEST TRANSPORT
	local t=$1 tr=$2 out=$TMP/$1.$2 rc src before=() d=() j
	PORT=$((PORT + 1))
	fab_counters
	for j in 1 2 3 4; do before[j]=$(path_pkts $j); done
	ip netns exec "$FABRIC_B_NS" timeout 90 "$PERF" $t --daemon="$SB" \
		-p $PORT -s 65536 --transport $tr >"$out.srv" 2>&1 &
	SPID=$!
	wait_listen $PORT $SPID || { cat "$out.srv"; fail "$t $tr: no server"; }
	ip netns exec "$FABRIC_A_NS" timeout 90 "$PERF" $t --daemon="$SA" \
		-p $PORT -s 65536 -n 150 --verify --transport $tr \
		"$FABRIC_B_IP" >"$out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || { sleep 1; kill $SPID 2>/dev/null; }
	wait $SPID
	src=$?
	SPID=
	if [ $rc -ne 0 ] || [ $src -ne 0 ] || ! grep -q "Verify *: OK" "$out"; then
		echo "FAIL: $t $tr: client $rc, server $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$out.srv"
		FAILS=$((FAILS + 1))
		return
	fi
	local tot=0 used=0 shares=""
	fab_counters
	for j in 1 2 3 4; do
		d[j]=$(($(path_pkts $j) - before[j]))
		tot=$((tot + d[j]))
	done
	for j in 1 2 3 4; do
		[ $tot -gt 0 ] && [ $((d[j] * 20)) -ge $tot ] && used=$((used + 1))
		shares="$shares p$j=${d[j]}"
	done
	if [ $tr = metaroce ]; then
		local np busy
		np=$(sed -n 's/^ *Spraying *: MetaRoCE, \([0-9]*\) paths.*/\1/p' "$out")
		busy=$(awk '/^ path  sport/ { on = 1; next }
			on && NF >= 4 && $4 > 0 { n++ }
			/^---/ { on = 0 } END { print n + 0 }' "$out")
		if [ $used -lt 2 ] || [ "${np:-0}" -ne 8 ] || [ "$busy" -lt 2 ]; then
			echo "FAIL: $t $tr: not sprayed (fabric:$shares;" \
				"perf: $busy of ${np:-?} paths busy)"
			FAILS=$((FAILS + 1))
			return
		fi
	fi
	echo "ok: $t $tr via mroced: $(grep -A1 -m1 '#bytes' "$out" | tail -1 | tr -s ' ')"
	echo "    fabric packets per path:$shares"
}

fab_up --paths 4 --mtu 1500
start_daemon DPA "$FABRIC_A_NS" "$FABRIC_A_IP" "$SA"
start_daemon DPB "$FABRIC_B_NS" "$FABRIC_B_IP" "$SB"
for tr in metaroce rocev2; do
	run write_bw $tr
	run send_bw $tr
done
kill -TERM $DPA $DPB
wait $DPA; ra=$?
wait $DPB; rb=$?
DPA= DPB=
[ $ra -eq 0 ] && [ $rb -eq 0 ] || { echo "FAIL: mroced exit $ra/$rb"; FAILS=$((FAILS + 1)); }
for ns in "$FABRIC_A_NS" "$FABRIC_B_NS"; do
	ip -n "$ns" link show eth0 | grep -q xdp &&
		{ echo "FAIL: XDP still on eth0 in $ns"; FAILS=$((FAILS + 1)); }
done

[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; cat "$TMP"/mroced-*.log; exit 1; }
echo "daemon_fabric: all passed"
