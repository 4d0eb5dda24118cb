#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# fabric_updown.sh - `fabric.sh up` then `down` leaves nothing behind, both
# run twice safely, and the prefixes of two fabrics keep them apart.
#   tests/net/fabric_updown.sh [--probe]
set -u
FAB_TAG=u
# shellcheck source=tests/net/fabric_lib.sh
. "$(dirname "$0")/fabric_lib.sh"

ours() { ip netns list | awk '{print $1}' | grep -c "^$1" ; }

fab_up --hosts 3 --paths 3
[ "$(ours "$PREFIX")" -eq 5 ] || fail "expected 5 namespaces, got $(ours "$PREFIX")"
[ "$FABRIC_PATHS" = 3 ] && [ "$FABRIC_HOSTS" = 3 ] || fail "status --env"
[ -n "$FABRIC_A_MAC" ] && [ -n "$FABRIC_B_GW_MAC" ] || fail "no MACs in --env"
# a second fabric next to it, brought up twice: both fabrics survive
P2=${PREFIX}x
at_exit 'bash $FABRIC down --prefix "$P2" >/dev/null 2>&1'
bash $FABRIC up --prefix "$P2" --paths 1 >/dev/null || fail "second fabric"
bash $FABRIC up --prefix "$P2" --paths 1 >/dev/null || fail "up twice"
[ "$(ours "$PREFIX")" -eq 9 ] || fail "namespaces after up twice: $(ours "$PREFIX")"
[ "$(ours "$P2")" -eq 4 ] || fail "second fabric: $(ours "$P2") namespaces"
eval "$(bash $FABRIC status --prefix "$P2" --env | sed 's/^FABRIC_/F2_/')"
out=$(ip netns exec "$F2_A_NS" $UDP ping --dst "$F2_B_IP" --count 1) ||
	fail "second fabric after up twice: $out"
# nothing at all in the calling namespace
ip -br link | grep -q "$PREFIX" && fail "links in the calling namespace"

bash $FABRIC down --prefix "$PREFIX" || fail "down"
[ "$(ours "${PREFIX}h")" -eq 0 ] && [ "$(ours "${PREFIX}l")" -eq 0 ] ||
	fail "namespaces left: $(ip netns list | grep "$PREFIX")"
[ "$(ours "$P2")" -eq 4 ] || fail "down removed the other fabric"
[ -e "/run/mroce-fabric/$PREFIX" ] && fail "state left behind"
bash $FABRIC down --prefix "$PREFIX" || fail "down twice"
bash $FABRIC status --prefix "$PREFIX" >/dev/null 2>&1 && fail "status of nothing"
bash $FABRIC down --prefix "$P2" || fail "down of the second"
[ "$(ours "$P2")" -eq 0 ] || fail "second fabric left"
bash $FABRIC up --prefix 'bad/prefix' >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad prefix accepted"
bash $FABRIC --help | grep -q SYNOPSIS || fail "--help"
echo "PASS fabric_updown"
