# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# session.sh - sourced by the scripts that run a fabric of their own
# (demo.sh, bench_e2e.sh, bench_offload.sh; not a tool itself).
#
#   session_start PREFIX TAG   PREFIX (the fabric's, unique to the run),
#                              TMP (a fresh /tmp/mroce-TAG.XXXXXX) and
#                              PIDS (append the pid of every background
#                              process); at exit, or on INT/TERM, those
#                              processes are killed and reaped, the
#                              fabric torn down, TMP removed.
# FABRIC must name scripts/fabric.sh.

session_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	bash "$FABRIC" down --prefix "$PREFIX" >/dev/null 2>&1
	rm -rf "$TMP"
}

session_start() {
	PREFIX=$1
	TMP=$(mktemp -d "/tmp/mroce-$2.XXXXXX")
	PIDS=()
	trap session_cleanup EXIT
	trap 'exit 1' INT TERM
}
