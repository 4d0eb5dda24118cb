#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# perf_loss.sh - mroce_perf --verify over a lossy loopback: nftables drops
# 2% of the UDP packets to the MetaRoCE and RoCEv2 ports, in a private
# network namespace (the script re-runs itself under `unshare -n`).
#
#   tests/net/perf_loss.sh           run
#   tests/net/perf_loss.sh --probe   exit 77 with a reason when it cannot
#                                    run here, else exit 0
#
# Both transports must finish write_bw, read_bw and send_bw with every
# byte verified, and the drop rule must really have dropped packets (else
# the test proves nothing and fails).
set -u

B=${MROCE_BUILD:-build}
PERF=$B/bin/mroce_perf
export PATH="$PATH:/usr/sbin:/sbin"

probe() {
	[ -x "$PERF" ] || { echo "$PERF not built"; return 77; }
	for c in unshare ip nft ss; do
		command -v $c >/dev/null 2>&1 ||
			{ echo "'$c' is not installed"; return 77; }
	done
	unshare -n true 2>/dev/null ||
		{ echo "cannot create a network namespace (needs root)";
		  return 77; }
	return 0
}

if [ "${1:-}" = "--probe" ]; then
	probe
	exit $?
fi
if [ -z "${MROCE_PERF_IN_NS:-}" ]; then
	probe >/dev/null || { echo "cannot run: $(probe)"; exit 1; }
	MROCE_PERF_IN_NS=1 exec unshare -n "$0" "$@"
fi

ip link set lo up || exit 1
nft add table inet mroce_loss &&
nft add chain inet mroce_loss out \
	'{ type filter hook output priority 0; }' &&
nft add rule inet mroce_loss out udp dport '{ 4791, 4792 }' \
	numgen random mod 100 '<' 2 counter drop || exit 1

TMP=$(mktemp -d /tmp/mroce-loss.XXXXXX)
SRV_PID=
cleanup() {
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
FAILS=0
PORT=18700

wait_listen() {
	for _ in $(seq 100); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

for tr in metaroce rocev2; do
	for t in write_bw read_bw send_bw; do
		PORT=$((PORT + 1))
		out=$TMP/$t-$tr
		# A larger minimum RTO keeps spurious timeouts on busy shared
		# cores from drowning the real losses.
		timeout 90 "$PERF" $t -p $PORT -s 16384 --transport $tr \
			--rto-min 2000 --local 127.0.0.1 >"$out.srv" 2>&1 &
		SRV_PID=$!
		wait_listen $PORT || { echo "FAIL: $t $tr: no server";
				      FAILS=$((FAILS + 1)); continue; }
		timeout 90 "$PERF" $t -p $PORT -s 16384 -n 300 --verify \
			--transport $tr --rto-min 2000 --local 127.0.0.2 \
			127.0.0.1 >"$out" 2>&1
		rc=$?
		wait $SRV_PID
		src=$?
		SRV_PID=
		if [ $rc -ne 0 ] || [ $src -ne 0 ] ||
		   ! grep -q "Verify *: OK" "$out"; then
			echo "FAIL: $t $tr: client $rc, server $src"
			sed 's/^/  client| /' "$out"
			sed 's/^/  server| /' "$out.srv"
			FAILS=$((FAILS + 1))
			continue
		fi
		echo "ok: $t $tr: $(grep -A1 -m1 '#bytes' "$out" | tail -1)" \
		     "| $(grep 'Data packets' "$out" | sed 's/ *Data packets *: //')"
	done
done

dropped=$(nft list ruleset | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
echo "dropped by the fabric: ${dropped:-0} packets"
[ "${dropped:-0}" -gt 0 ] || { echo "FAIL: nothing was dropped"; exit 1; }
[ $FAILS -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "perf_loss: all passed"
