#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# strict.sh - the test runner's strict mode: MROCE_MUST_RUN names the
# skips that are failures (a list of suite or test names, or "all");
# .ci/run sets it to "all", so a CI run that silently lost its root-only
# suites fails. Runs the runner's xdp_prog suite as user nobody (it skips
# there: no BPF without root), from a copy of the runner in a temporary
# directory nobody can read:
#   unset                    exit 0, the skip listed
#   MROCE_MUST_RUN=xdp_prog  exit 1, "STRICT: xdp_prog was skipped"
#   MROCE_MUST_RUN=xdp       exit 0 (whole names only)
#   MROCE_MUST_RUN=all       exit 1
#
#   tests/house/strict.sh           run (root: to become nobody)
#   tests/house/strict.sh --probe   exit 77 with the reason when it cannot
set -u
B=${MROCE_BUILD:-build}
if [ "${1:-}" = --probe ]; then
	[ "$(id -u)" = 0 ] || { echo "needs root (to run the suite as nobody)"; exit 77; }
	command -v setpriv >/dev/null || { echo "needs setpriv (util-linux)"; exit 77; }
	[ -x "$B/tests/mroce_check" ] || { echo "$B/tests/mroce_check not built"; exit 77; }
	exit 0
fi
TMP=$(mktemp -d /tmp/mroce-strict.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
chmod 755 "$TMP"
cp "$B/tests/mroce_check" "$TMP/"
fails=0
flunk() { echo "FAIL: $*"; fails=$((fails + 1)); }
# as_nobody [MUST_RUN]: the runner's xdp_prog suite; output in $TMP/out.
# (Leak checking off: Check leaks the suites CK_RUN_SUITE leaves out.)
as_nobody() {
	(cd "$TMP" && env -u MROCE_MUST_RUN ${1:+MROCE_MUST_RUN="$1"} \
		CK_RUN_SUITE=xdp_prog ASAN_OPTIONS=detect_leaks=0 timeout 120 \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		./mroce_check) >"$TMP/out" 2>&1
}
as_nobody; rc=$?
[ $rc -eq 0 ] && grep -q "^SKIP: xdp_prog: " "$TMP/out" && ! grep -q STRICT "$TMP/out" ||
	{ flunk "unset: exit $rc"; cat "$TMP/out"; }
as_nobody xdp_prog; rc=$?
[ $rc -eq 1 ] && grep -q "^STRICT: xdp_prog was skipped" "$TMP/out" ||
	{ flunk "xdp_prog: exit $rc"; cat "$TMP/out"; }
as_nobody xdp; rc=$?
[ $rc -eq 0 ] && ! grep -q STRICT "$TMP/out" ||
	{ flunk "xdp (not a whole name): exit $rc"; cat "$TMP/out"; }
as_nobody "house, xdp_prog"; rc=$?
[ $rc -eq 1 ] || { flunk "a list: exit $rc"; cat "$TMP/out"; }
as_nobody all; rc=$?
[ $rc -eq 1 ] && grep -q "^STRICT: xdp_prog" "$TMP/out" ||
	{ flunk "all: exit $rc"; cat "$TMP/out"; }
[ $fails -eq 0 ] && echo "strict: ok" || exit 1
