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
#   session_xdp NS [--keep] CMD...
#                              CMD in namespace NS with bpffs mounted and,
#                              unless --keep (mroced attaches itself),
#                              mroce's XDP program attached afresh to eth0
#                              (each `ip netns exec` mounts its own bpffs)
#   session_listening NS PORT PID
#                              wait (10 s) until PID listens on TCP PORT in
#                              NS; 1 if it died or never did
# FABRIC must name scripts/fabric.sh, CTL mrocectl (for session_xdp).

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

session_xdp() {
	local ns=$1 att=1
	shift
	[ "$1" = --keep ] && { att=0; shift; }
	ip netns exec "$ns" bash -c '
		mount -t bpf bpf /sys/fs/bpf || exit 2
		[ '$att' = 1 ] || exec "$@"
		'"$CTL"' detach eth0 >/dev/null 2>&1
		ip link set dev eth0 xdp off 2>/dev/null
		'"$CTL"' attach eth0 >/dev/null || { echo "mrocectl attach eth0 failed"; exit 2; }
		exec "$@"' x "$@"
}

session_listening() {
	for _ in $(seq 200); do
		kill -0 "$3" 2>/dev/null || return 1
		ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}
