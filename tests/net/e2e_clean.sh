#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# e2e_clean.sh - mroce_perf --verify over a clean 4-path fabric (MTU 9000):
# both transports, both backends, each operation (the split of
# tests/net/e2e_lib.sh, flip 0). Every run must complete with every byte
# verified, and MetaRoCE must have sprayed over more than one fabric path.
# Also the latency baseline of scripts/bench_e2e.sh: mroce_blast's kernel
# UDP ping-pong between the same hosts answers every ping, and refuses
# --pingpong without --udp; its process hand-off measure runs (and fails
# cleanly on a CPU that does not exist).
#
#   tests/net/e2e_clean.sh [--probe]
set -u
FAB_TAG=ec
# shellcheck source=tests/net/e2e_lib.sh
. tests/net/e2e_lib.sh "$@"

fab_up --mtu 9000 --paths 4
e2e_matrix 0

# Spraying: the MetaRoCE runs put packets on several of the fabric paths.
fab_counters
used=0
for j in $(seq "$FABRIC_PATHS"); do
	v=FABRIC_P${j}_TX12
	[ "${!v}" -gt 100 ] && used=$((used + 1))
done
echo "fabric paths that carried traffic A->B: $used of $FABRIC_PATHS"
[ $used -ge 2 ] || { echo "FAIL: traffic used $used path(s)"; E2E_FAILS=$((E2E_FAILS + 1)); }
[ "$(fab_drops)" -eq 0 ] || { echo "FAIL: the clean fabric dropped packets"; E2E_FAILS=$((E2E_FAILS + 1)); }
# The kernel UDP ping-pong baseline.
rm -f "$TMP/ppready"
ip netns exec "$FABRIC_B_NS" "$BLAST" --udp --pingpong --rx --dport 5001 \
	--count 200 --seconds 30 --ready "$TMP/ppready" >"$TMP/pprx" 2>&1 &
pprx=$!
E2E_PIDS+=("$pprx")
for _ in $(seq 100); do [ -e "$TMP/ppready" ] && break; sleep 0.05; done
pp=$(ip netns exec "$FABRIC_A_NS" "$BLAST" --udp --pingpong --tx --dst "$FABRIC_B_IP" \
	--dport 5001 --sport 5002 --size 8 --count 200 --json 2>&1)
rc=$?
sleep 0.2
kill "$pprx" 2>/dev/null	# it reports what it echoed and exits
wait "$pprx"
echo "ping-pong: $pp"
# Every ping is answered or counted lost (a reply later than 100 ms, which
# a busy 2-core machine can produce now and then: at most 2 of 200 here).
jv() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$pp"; }
if [ $rc -ne 0 ] || [ "$(jv pings)" != 200 ] ||
   [ $(($(jv replies) + $(jv lost))) -ne 200 ] || [ "$(jv replies)" -lt 198 ] ||
   ! awk -v v="$(jv half_rtt_p50_us)" 'BEGIN { exit !(v > 0) }'; then
	echo "FAIL: ping-pong (exit $rc)"
	E2E_FAILS=$((E2E_FAILS + 1))
fi
grep -Eq "udp-pingpong-rx: (19[89]|200) packets" "$TMP/pprx" ||
	{ echo "FAIL: ping-pong echo side: $(cat "$TMP/pprx")"; E2E_FAILS=$((E2E_FAILS + 1)); }
"$BLAST" --pingpong --tx --dst 10.0.0.1 >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --pingpong without --udp is not a usage error"; E2E_FAILS=$((E2E_FAILS + 1)); }
# The hand-off reference: 200 passes measured; a CPU that does not exist
# fails the run (exit 1, not a hang); options of other modes are refused.
ho=$("$BLAST" --handoff --cpus 0,0 --count 200 --json 2>&1)
rc=$?
echo "hand-off: $ho"
hv() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$ho"; }
if [ $rc -ne 0 ] || [ "$(hv handoffs)" != 200 ] ||
   ! awk -v v="$(hv handoff_p50_us)" 'BEGIN { exit !(v > 0) }'; then
	echo "FAIL: --handoff (exit $rc)"
	E2E_FAILS=$((E2E_FAILS + 1))
fi
ho=$(timeout 20 "$BLAST" --handoff --cpus "0,$(nproc)" --count 10 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "could not run on CPU $(nproc)" <<<"$ho" ||
	{ echo "FAIL: --handoff on a missing CPU: exit $rc: $ho"; E2E_FAILS=$((E2E_FAILS + 1)); }
"$BLAST" --handoff --udp >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --handoff --udp is not a usage error"; E2E_FAILS=$((E2E_FAILS + 1)); }
e2e_summary
