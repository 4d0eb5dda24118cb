#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# e2e_ipv6.sh - mroce over IPv6: a 4-path fabric with IPv6 addresses and
# multipath routes (scripts/fabric.sh up --ipv6, MTU 9000), every run
# between A's and B's IPv6 addresses, with --verify:
#  - embedded mode, both backends (kernel UDP sockets; AF_XDP with
#    mroce's XDP program), both transports, write_bw and read_bw; the
#    MetaRoCE runs must spray over at least two fabric paths, and the
#    packets on the paths must be IPv6 (the leaves' IPv4 counters stay
#    still while they carry them);
#  - 1% random loss on every path: MetaRoCE write_bw (AF_XDP) and
#    read_bw (UDP) complete, and the fabric did drop packets;
#  - daemon mode: an mroced per host on its IPv6 address (AF_XDP, then
#    UDP), MetaRoCE write_bw and send_bw through them.
#
#   tests/net/e2e_ipv6.sh [--probe]
set -u
FAB_TAG=e6
# shellcheck source=tests/net/e2e_lib.sh
. tests/net/e2e_lib.sh "$@"

fab_up --mtu 9000 --paths 4 --ipv6
[ -n "${FABRIC_A_IP6:-}" ] || fail "fabric.sh status has no IPv6 addresses"
FABRIC_A_IP=$FABRIC_A_IP6 FABRIC_B_IP=$FABRIC_B_IP6

# IPv4 packets forwarded by leaf 1 so far (its own SNMP counter): the
# runs below must not move it much, so their packets were IPv6.
fwd4() {
	ip netns exec "$FABRIC_LEAF1_NS" awk '$1 == "Ip:" {
		if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1; next }
		for (i = 2; i <= NF; i++) if (k[i] == "ForwDatagrams") print $i }' \
		/proc/net/snmp
}

echo "== clean, embedded mode"
for be in udp afxdp; do
	for tr in metaroce rocev2; do
		for op in write_bw read_bw; do
			f0=$(fwd4)
			fab_mark
			# shellcheck disable=SC2046
			e2e_run $be $tr $op $(e2e_args $op) || continue
			fab_spread
			f=$(($(fwd4) - f0))
			# the TCP rendezvous is IPv6 too; a few IPv4 packets of
			# nobody's would be noise, thousands would be the run
			[ $f -lt 50 ] || {
				echo "FAIL: $E2E_NAME: leaf 1 forwarded $f IPv4 packets"
				E2E_FAILS=$((E2E_FAILS + 1))
			}
			if [ $tr = metaroce ] && [ "$FAB_USED" -lt 2 ]; then
				echo "FAIL: $E2E_NAME: not sprayed ($FAB_SHARES)"
				E2E_FAILS=$((E2E_FAILS + 1))
			fi
		done
	done
done

echo "== 1% loss on every path"
for j in $(seq "$FABRIC_PATHS"); do
	bash $FABRIC impair --prefix "$PREFIX" --path "$j" --loss 0.01 ||
		fail "impair path $j"
done
d0=$(fab_drops)
# shellcheck disable=SC2046
e2e_run afxdp metaroce write_bw $(e2e_args write_bw)
# shellcheck disable=SC2046
e2e_run udp metaroce read_bw $(e2e_args read_bw)
d=$(($(fab_drops) - d0))
echo "dropped by the fabric: $d packets"
[ $d -gt 0 ] || { echo "FAIL: nothing was dropped at 1% loss"; E2E_FAILS=$((E2E_FAILS + 1)); }
for j in $(seq "$FABRIC_PATHS"); do
	bash $FABRIC impair --prefix "$PREFIX" --path "$j" --loss 0 ||
		fail "impair path $j"
done

echo "== daemon mode"
SA=$TMP/a.sock SB=$TMP/b.sock
for be in afxdp udp; do
	dargs=(--backend "$be" --rto-min "$E2E_RTO")
	[ "$be" = afxdp ] && dargs+=(--ifname eth0 --attach)
	mroced_start DPA "$FABRIC_A_NS" "$SA" "${dargs[@]}" --local "$FABRIC_A_IP" ||
		fail "mroced ($be) on $FABRIC_A_IP did not start"
	mroced_start DPB "$FABRIC_B_NS" "$SB" "${dargs[@]}" --local "$FABRIC_B_IP" ||
		fail "mroced ($be) on $FABRIC_B_IP did not start"
	for op in write_bw send_bw; do
		E2E_PORT=$((E2E_PORT + 1))
		out=$TMP/d-$op-$be
		# shellcheck disable=SC2046
		if perf_pair "$op metaroce mroced $be" "$out" "$FABRIC_B_NS" $E2E_PORT \
			ip netns exec "$FABRIC_B_NS" timeout 90 "$PERF" $op \
			--daemon="$SB" -p $E2E_PORT --transport metaroce \
			$(e2e_args $op) -- \
			ip netns exec "$FABRIC_A_NS" timeout 90 "$PERF" $op \
			--daemon="$SA" -p $E2E_PORT --transport metaroce \
			$(e2e_args $op) --verify "$FABRIC_B_IP"; then
			grep -q "Device *: mroce (mroced)" "$out" ||
				{ flunk "$op via mroced ($be): header"; continue; }
			echo "ok: $op metaroce via mroced ($be, IPv6): $ROW"
			E2E_OK=$((E2E_OK + 1))
		fi # else perf_pair counted the failure (FAILS)
	done
	mroced_stop DPA
	mroced_stop DPB
done
E2E_FAILS=$((E2E_FAILS + ${FAILS:-0}))
e2e_summary
