#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# e2e_blackhole.sh - one path of a 4-path fabric goes silent in the middle
# of a transfer. Each run (split flip 0 of tests/net/e2e_lib.sh, both
# transports and backends) is mroce_perf --verify for a fixed time (-D);
# once data flows, the path that carried most of it in 0.2 s is
# blackholed (nftables drops everything on it, both directions, and ECMP
# keeps sending there, as with a silently failing switch) for the rest of
# the data phase. It is restored once the client has printed its result
# row: mroce_perf's TCP control connection crosses the same fabric, and the
# closing handshake would otherwise wait for it if its 5-tuple hashes onto
# the dead path (the data path is what is under test, not the control).
#
# MetaRoCE must complete with every byte verified: it sprays over several
# source ports and leaves the dead one. RoCEv2 has one path per QP, the
# one that dies here, so its runs are recorded, not required (they end
# with "transport retry counter exceeded"); a verify mismatch fails either.
# The blackhole must really have dropped packets of every MetaRoCE run
# (RoCEv2 runs where it missed are marked so in the results).
#
#   tests/net/e2e_blackhole.sh [--probe]
set -u
FAB_TAG=eb
# shellcheck source=tests/net/e2e_lib.sh
. tests/net/e2e_lib.sh "$@"

E2E_DUR=${E2E_DUR:-5}
fab_up --mtu 9000 --paths 4

# "tx_packets of p1 .. pN" on leaf 1 and leaf 2, summed (fast: /sys only).
path_tx() {
	local l1 l2
	l1=$(ip netns exec "$FABRIC_LEAF1_NS" sh -c 'for j in $(seq '"$FABRIC_PATHS"'); do
		cat /sys/class/net/p$j/statistics/tx_packets; done')
	l2=$(ip netns exec "$FABRIC_LEAF2_NS" sh -c 'for j in $(seq '"$FABRIC_PATHS"'); do
		cat /sys/class/net/p$j/statistics/tx_packets; done')
	paste <(echo "$l1") <(echo "$l2") | awk '{ printf "%d ", $1 + $2 }'
}

# Wait until the client has connected and data has flowed for a moment;
# print the busiest path of the next 0.2 s.
busiest_path() {
	local a b j best=1 max=-1
	for _ in $(seq 200); do
		grep -q "remote address" "$E2E_OUT" 2>/dev/null && break
		sleep 0.05
	done
	sleep 0.2
	read -ra a <<<"$(path_tx)"
	sleep 0.2
	read -ra b <<<"$(path_tx)"
	for j in $(seq "$FABRIC_PATHS"); do
		if [ $((b[j - 1] - a[j - 1])) -gt $max ]; then
			max=$((b[j - 1] - a[j - 1])) best=$j
		fi
	done
	echo "$best"
}

# Packets the blackhole rule of path $1 dropped, both leaves (fast: nft).
bh_drops() {
	local l n=0 v
	for l in "$FABRIC_LEAF1_NS" "$FABRIC_LEAF2_NS"; do
		v=$(ip netns exec "$l" nft list chain inet fabric "path$1" |
			sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | head -1)
		n=$((n + ${v:-0}))
	done
	echo $n
}

RESULTS=
for tr in metaroce rocev2; do
	for be in udp afxdp; do
		for op in $(e2e_ops 0 $tr $be); do
			case $op in
			*_bw) args=(-s 65536 -t 16 -D "$E2E_DUR") ;;
			*) args=(-s 12000 -D "$E2E_DUR") ;;
			esac
			e2e_start $be $tr $op "${args[@]}"
			bh=
			if [ -z "$E2E_START_ERR" ]; then
				bh=$(busiest_path)
				bash $FABRIC impair --prefix "$PREFIX" --path "$bh" \
					--blackhole on || fail "blackhole path $bh"
				echo "   ($E2E_NAME: path $bh blackholed at $(e2e_elapsed) s)"
			fi
			d=0
			if [ -n "$bh" ]; then
				# until the data phase is over (result row) or the
				# client is gone
				while kill -0 "$E2E_CPID" 2>/dev/null &&
				      ! grep -A1 '#bytes' "$E2E_OUT" | grep -q '^ *[0-9]'; do
					sleep 0.05
				done
				# the blackhole rule's counter is fresh for this run
				d=$(bh_drops "$bh")
				bash $FABRIC impair --prefix "$PREFIX" --path "$bh" \
					--blackhole off || fail "restore path $bh"
			fi
			tol=
			[ $tr = rocev2 ] && tol=tolerate
			e2e_finish $tol
			ok=$?
			if [ -n "$bh" ]; then
				echo "   blackhole of path $bh dropped $d packets"
				# MetaRoCE must have survived a real failure. A RoCEv2
				# run is only recorded: on a loaded machine its one path
				# can be idle in RTO backoff while the busiest path is
				# chosen, and then the blackhole misses it.
				if [ $d -eq 0 ] && [ $tr = metaroce ]; then
					echo "FAIL: $E2E_NAME: the blackhole dropped nothing"
					E2E_FAILS=$((E2E_FAILS + 1))
				elif [ $d -eq 0 ]; then
					E2E_RESULT="$E2E_RESULT (blackhole missed its path: not a failure test)"
				fi
			fi
			RESULTS+="$E2E_NAME: $E2E_RESULT"$'\n'
		done
	done
done
echo "results:"
printf '%s' "$RESULTS" | sed 's/^/  /'
e2e_summary
