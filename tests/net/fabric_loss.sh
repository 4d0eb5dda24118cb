#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# fabric_loss.sh - run-time impairments of one path (fabric.sh impair):
#  1. --loss 0.1 on path 1: about 10% of path 1's packets are dropped
#     (loose bounds: 5%..15% of ~1000 packets is beyond 5 sigma), the
#     receiver misses exactly the dropped ones, other paths lose nothing;
#  2. --blackhole on path 2 (loss back to 0): path 2 carries nothing and
#     drops exactly what the receiver misses; the other paths deliver;
#  3. --blackhole off: everything arrives again;
#  4. --rate 1mbit on every path holds back most of a burst, --rate off
#     removes tbf and everything arrives again.
#   tests/net/fabric_loss.sh [--probe]
set -u
FAB_TAG=l
# shellcheck source=tests/net/fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"

fab_up --paths 4
N=4000
snap() { # name: copy the counters of paths 1..4 into <name>_{TX,DROP}<j>
	local j
	fab_counters
	for j in 1 2 3 4; do
		eval "$1_TX$j=\$FABRIC_P${j}_TX12 $1_DROP$j=\$FABRIC_P${j}_DROP12"
	done
}
run() { # send N packets over 64 flows, A -> B
	recv_start --port 5002 --count $N --seconds 10 --idle-ms 700
	send_a --port 5002 --sport 43000 --flows 64 --count $N --pps 40000
	recv_wait
}

# 1. random loss on path 1
bash $FABRIC impair --prefix "$PREFIX" --path 1 --loss 0.1 || fail "impair loss"
snap a; run; snap b
tx1=$((b_TX1 - a_TX1)) drop1=$((b_DROP1 - a_DROP1))
echo "  path 1: $tx1 forwarded, $drop1 dropped"
[ $((tx1 + drop1)) -ge 400 ] || fail "too few packets on path 1 ($((tx1 + drop1)))"
awk -v d=$drop1 -v t=$((tx1 + drop1)) 'BEGIN { exit !(d >= 0.05 * t && d <= 0.15 * t) }' ||
	fail "path 1 dropped $drop1 of $((tx1 + drop1)), asked 10%"
expect_received $((N - drop1))
for j in 2 3 4; do
	eval "[ \$((b_DROP$j - a_DROP$j)) -eq 0 ]" || fail "path $j dropped packets"
done

# 2. blackhole on path 2 only
bash $FABRIC impair --prefix "$PREFIX" --path 1 --loss 0 || fail "impair loss 0"
bash $FABRIC impair --prefix "$PREFIX" --path 2 --blackhole on || fail "blackhole on"
snap a; run; snap b
tx2=$((b_TX2 - a_TX2)) drop2=$((b_DROP2 - a_DROP2))
echo "  path 2: $tx2 forwarded, $drop2 dropped"
[ $tx2 -eq 0 ] || fail "blackholed path 2 forwarded $tx2"
[ $drop2 -gt 0 ] || fail "no flow hashed to path 2"
expect_received $((N - drop2))
other=$((b_TX1 - a_TX1 + b_TX3 - a_TX3 + b_TX4 - a_TX4))
[ $other -eq $((N - drop2)) ] || fail "other paths carried $other, expected $((N - drop2))"

# 3. blackhole off
bash $FABRIC impair --prefix "$PREFIX" --path 2 --blackhole off || fail "blackhole off"
run
expect_received $N "after blackhole off: "

# 4. --rate: tbf on both ends of every path; at 1 Mbit/s a burst of 500
#    unpaced 1000-byte datagrams cannot get through (tbf holds ~20 ms);
#    --rate off removes the qdisc again
for j in 1 2 3 4; do
	bash $FABRIC impair --prefix "$PREFIX" --path $j --rate 1mbit ||
		fail "impair rate"
done
tc -n "$FABRIC_LEAF2_NS" qdisc show dev p3 | grep -q 'tbf.*rate 1Mbit' ||
	fail "no tbf on leaf 2 p3: $(tc -n "$FABRIC_LEAF2_NS" qdisc show dev p3)"
recv_start --port 5002 --count 500 --seconds 5 --idle-ms 700
send_a --port 5002 --sport 44000 --flows 4 --count 500 --size 1000
recv_wait
[ "$received" -lt 250 ] || fail "1 Mbit/s paths delivered $received of 500 at once"
for j in 1 2 3 4; do
	bash $FABRIC impair --prefix "$PREFIX" --path $j --rate off ||
		fail "impair rate off"
done
tc -n "$FABRIC_LEAF1_NS" qdisc show dev p1 | grep -q tbf && fail "tbf left on p1"
run
expect_received $N "after rate off: "

bash $FABRIC impair --prefix "$PREFIX" --path 9 --loss 0.1 >/dev/null 2>&1 &&
	fail "impair of a path that does not exist"
echo "PASS fabric_loss"
