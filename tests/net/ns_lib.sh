# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# ns_lib.sh - sourced by the tests/net/*.sh scripts (not a test itself):
# what they share to probe, set up namespaces, run mroce_perf and mroced in
# them, and clean up. Sourcing it defines the functions below, the build's
# programs ($B, $CTL, $PERF, $MROCED, $BLAST), FAILS=0 and an EXIT trap.
#
# Probing (each prints one line of reason and returns 77 when unmet):
#   need_root WHAT, need_cmds CMD..., need_built FILE..., need_afxdp,
#   need_netns TAG [QUEUES], need_unshare
#   ns_probe RC FN ARGS...   the script's --probe (answer of FN, exit), or
#                            "cannot run: <reason>" and exit RC when FN fails
# Set-up and clean-up (the EXIT trap kills and waits for the pids in the
# variables given to kill_at_exit, SPID among them, runs the at_exit
# commands, deletes ns_pair's namespaces and removes $TMP):
#   ns_tmp NAME, kill_at_exit VAR..., at_exit CMD, ns_unshare ARGS...,
#   ns_pair ID IPA IPB [QUEUES], ns_neigh IPA IPB, ns_mtu MTU
# Running:
#   xdp_run [--no-attach] [--stats FILE] NS IFNAME CMD...
#   wait_listen NS PORT [PID], mroced_start VAR NS SOCK ARGS...,
#   mroced_stop VAR..., xdp_gone NS IFNAME,
#   perf_pair WHAT OUT NS PORT SERVER... -- CLIENT...
#   xdp_counter FILE NAME..., perf_spray OUT
#   expect_exit RC PATTERN WHAT CMD..., usage_errors PROG ARGS...
# Results: fail MSG (exit 1), flunk MSG (counted), ns_summary NAME [LOG...].

# shellcheck disable=SC2034 # variables for the scripts that source this

B=${MROCE_BUILD:-build}
export MROCE_BUILD=$B
export PATH="$PATH:/usr/sbin:/sbin"
CTL=$B/bin/mrocectl
PERF=$B/bin/mroce_perf
MROCED=$B/bin/mroced
BLAST=$B/bin/mroce_blast

FAILS=0
TMP=
SPID=
NS_KILL=(SPID)
NS_AT_EXIT=()
NS_NETNS=()

fail() { echo "FAIL: $*"; exit 1; }
flunk() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# ns_summary NAME [LOG...]: exit 1 (after LOG...) if anything failed, else
# "NAME: all passed".
ns_summary() {
	local name=$1
	shift
	if [ "$FAILS" -ne 0 ]; then
		echo "$FAILS failure(s)"
		[ $# -eq 0 ] || cat "$@"
		exit 1
	fi
	echo "$name: all passed"
}

# ---- probing

need_root() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root ($1)"; return 77; }
}

need_cmds() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			{ echo "'$c' is not installed"; return 77; }
	done
}

# need_built FILE...: programs (executable) and *.o objects (present)
need_built() {
	local f
	for f in "$@"; do
		case $f in
		*.o) [ -e "$f" ] ;;
		*) [ -x "$f" ] ;;
		esac || { echo "$f not built"; return 77; }
	done
}

# AF_XDP sockets: python is not needed, the kernel answers socket()
need_afxdp() {
	perl -e 'use Socket; socket(my $s, 44, 3, 0) or exit 1' 2>/dev/null ||
		{ echo "no AF_XDP sockets in this kernel"; return 77; }
}

# need_netns TAG [QUEUES]: a network namespace and a veth pair in it (with
# QUEUES tx and rx queues at each end), tried as TAG<pid> and removed.
need_netns() {
	local n=$1$$ qs=()
	[ -n "${2:-}" ] && qs=(numtxqueues "$2" numrxqueues "$2")
	ip netns add "$n" 2>/dev/null ||
		{ echo "cannot create network namespaces"; return 77; }
	if ! ip -n "$n" link add "${n}0" "${qs[@]}" type veth \
		peer name "${n}1" "${qs[@]}" 2>/dev/null; then
		ip netns del "$n"
		echo "no ${2:+multi-queue }veth support"
		return 77
	fi
	ip netns del "$n"
}

need_unshare() {
	need_cmds unshare || return
	unshare -n true 2>/dev/null ||
		{ echo "cannot create a network namespace (needs root)";
		  return 77; }
}

# ns_probe RC FN ARGS...: with ARGS "--probe", FN's answer is the script's
# (exit 0, or 77 with a one-line reason); otherwise a failing FN ends the
# script with "cannot run: <reason>" and exit status RC.
ns_probe() {
	local rc=$1 fn=$2 why
	shift 2
	if [ "${1:-}" = --probe ]; then
		"$fn"
		exit $?
	fi
	why=$("$fn") || { echo "cannot run: $why"; exit "$rc"; }
}

# ---- set-up and clean-up

ns_exit() {
	local v p pids=()
	# only the script itself: a subshell that fails (set -u) runs it too
	[ "$BASHPID" = "$$" ] || return
	set +u
	for v in "${NS_KILL[@]}"; do
		v="${v}[@]"
		pids+=("${!v}")
	done
	for p in "${pids[@]}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
	for v in "${NS_AT_EXIT[@]}"; do eval "$v"; done
	for v in "${NS_NETNS[@]}"; do ip netns del "$v" 2>/dev/null; done
	[ -z "$TMP" ] || rm -rf "$TMP"
	true
}
trap ns_exit EXIT

# kill_at_exit VAR...: variables holding a pid, or an array of them
kill_at_exit() {
	local v
	for v in "$@"; do
		[[ " ${NS_KILL[*]} " == *" $v "* ]] || NS_KILL+=("$v")
	done
}

# at_exit CMD: evaluated at exit (after the kills), in the order given
at_exit() { NS_AT_EXIT+=("$1"); }

# ns_tmp NAME: TMP, a directory of this run removed at exit
ns_tmp() { TMP=$(mktemp -d "/tmp/mroce-$1.XXXXXX"); }

# ns_unshare ARGS...: the rest of the script runs in a private network
# namespace (the script re-runs itself under `unshare -n`), loopback up.
ns_unshare() {
	if [ -z "${MROCE_NS_UNSHARED:-}" ]; then
		MROCE_NS_UNSHARED=1 exec unshare -n "$0" "$@"
	fi
	ip link set lo up || exit 1
}

# ns_pair ID IPA IPB [QUEUES]: namespaces NSA=<ID>a and NSB=<ID>b (deleted
# at exit) joined by a veth pair IFA=<ID>0 / IFB=<ID>1 with QUEUES (default
# 1) tx and rx queues at each end (native XDP on veth wants equal counts),
# IPA/24 on A and IPB/24 on B, up; their MACs in MAC_A and MAC_B.
ns_pair() {
	local q=${4:-1}
	NSA=${1}a NSB=${1}b IFA=${1}0 IFB=${1}1
	NS_NETNS+=("$NSA" "$NSB")
	ip netns add "$NSA" && ip netns add "$NSB" || fail "netns add"
	ip link add "$IFA" numtxqueues "$q" numrxqueues "$q" type veth \
		peer name "$IFB" numtxqueues "$q" numrxqueues "$q" || fail "veth"
	ip link set "$IFA" netns "$NSA" && ip link set "$IFB" netns "$NSB" ||
		fail "move"
	ip -n "$NSA" addr add "$2/24" dev "$IFA"
	ip -n "$NSB" addr add "$3/24" dev "$IFB"
	ip -n "$NSA" link set "$IFA" up && ip -n "$NSB" link set "$IFB" up ||
		fail "up"
	MAC_A=$(ip -n "$NSA" -br link show dev "$IFA" | awk '{print $3}')
	MAC_B=$(ip -n "$NSB" -br link show dev "$IFB" | awk '{print $3}')
}

# ns_neigh IPA IPB: static neighbours both ways across the pair (AF_XDP
# answers no ARP, and its traffic never teaches the kernel a neighbour).
ns_neigh() {
	ip -n "$NSA" neigh replace "$2" lladdr "$MAC_B" dev "$IFA" nud permanent
	ip -n "$NSB" neigh replace "$1" lladdr "$MAC_A" dev "$IFB" nud permanent
}

ns_mtu() {
	ip -n "$NSA" link set "$IFA" mtu "$1" &&
		ip -n "$NSB" link set "$IFB" mtu "$1" || fail "mtu $1"
}

# ---- running

# xdp_run [--no-attach] [--stats FILE] NS IFNAME CMD...: CMD in a session
# of namespace NS with bpffs mounted (`ip netns exec` remounts /sys, so
# pins last as long as the session) and no XDP program left on IFNAME (an
# earlier session's attachment outlives its pins: detach finds it on the
# interface), then mroce's attached afresh, with empty maps, unless
# --no-attach (IFNAME "": no interface is touched). With --stats,
# `mrocectl stats IFNAME --json` goes to FILE after CMD. Exit status: CMD's,
# 2 when the session cannot be set up. In a subshell (`&`, `$(...)`) it
# execs, so that $! is the session's own pid and CMD's after its set-up.
xdp_run() {
	local attach=1 stats='' ex=''
	while :; do
		case $1 in
		--no-attach) attach=0; shift ;;
		--stats) stats=$2; shift 2 ;;
		*) break ;;
		esac
	done
	[ "$BASHPID" = "$$" ] || ex='exec'
	$ex ip netns exec "$1" bash -c '
		ctl=$1 ifn=$2 attach=$3 stats=$4
		shift 4
		mount -t bpf bpf /sys/fs/bpf || exit 2
		if [ -n "$ifn" ]; then
			"$ctl" detach "$ifn" >/dev/null 2>&1
			ip link set dev "$ifn" xdp off 2>/dev/null
		fi
		if [ "$attach" = 1 ]; then
			"$ctl" attach "$ifn" >/dev/null ||
				{ echo "mrocectl attach $ifn failed"; exit 2; }
		fi
		[ -n "$stats" ] || exec "$@"
		"$@"
		rc=$?
		"$ctl" stats "$ifn" --json >"$stats"
		exit $rc' xdp_run "$CTL" "$2" "$attach" "$stats" "${@:3}"
}

# wait_listen NS PORT [PID]: until something listens on TCP PORT in
# namespace NS ("": this one), up to 10 s (a probe connection would be
# taken as a client, so ask the kernel); 1 at once when PID has exited.
wait_listen() {
	local in=()
	[ -n "$1" ] && in=(ip netns exec "$1")
	for _ in $(seq 200); do
		[ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 1
		"${in[@]}" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . &&
			return 0
		sleep 0.05
	done
	return 1
}

# mroced_start VAR NS SOCK ARGS...: mroced --sock SOCK ARGS... in the
# background, in namespace NS (a session with bpffs mounted; "": here),
# output appended to $TMP/mroced-<SOCK's name>.log; its pid in VAR
# (killed at exit). Returns 1, after printing the log, when the socket does
# not answer `mrocectl daemon` within 10 s.
mroced_start() {
	local var=$1 ns=$2 sock=$3 log pid
	shift 3
	log=$TMP/mroced-$(basename "$sock" .sock).log
	if [ -n "$ns" ]; then
		xdp_run --no-attach "$ns" "" "$MROCED" --sock "$sock" "$@" \
			>>"$log" 2>&1 &
	else
		"$MROCED" --sock "$sock" "$@" >>"$log" 2>&1 &
	fi
	pid=$!
	printf -v "$var" '%s' "$pid"
	kill_at_exit "$var"
	for _ in $(seq 200); do
		"$CTL" daemon --sock "$sock" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	cat "$log"
	return 1
}

# mroced_stop VAR...: SIGTERM to these daemons; each must exit 0.
mroced_stop() {
	local v rc
	for v in "$@"; do kill -TERM "${!v}"; done
	for v in "$@"; do
		wait "${!v}"
		rc=$?
		[ $rc -eq 0 ] || flunk "mroced $v exit $rc"
		printf -v "$v" '%s' ""
	done
}

xdp_gone() {
	! ip -n "$1" link show "$2" | grep -q xdp ||
		flunk "XDP program still on $2 in $1"
}

# perf_pair WHAT OUT NS PORT SERVER... -- CLIENT...: the mroce_perf server
# command in the background (output OUT.srv, pid SPID) until it listens on
# PORT in NS (wait_listen), then the client command (output OUT), then the
# server (stopped a second after a failed client: it would wait for it).
# Passes, with ROW the client's result row, when both exit 0 and the
# client says "Verify : OK"; else "FAIL: WHAT: ..." and both outputs,
# counted (flunk), and returns 1.
perf_pair() {
	local what=$1 out=$2 ns=$3 port=$4 srv=() rc src
	shift 4
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	ROW=
	"${srv[@]}" >"$out.srv" 2>&1 &
	SPID=$!
	if ! wait_listen "$ns" "$port" "$SPID"; then
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		SPID=
		flunk "$what: server did not listen"
		sed 's/^/  server| /' "$out.srv"
		return 1
	fi
	"$@" >"$out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || { sleep 1; kill "$SPID" 2>/dev/null; }
	wait "$SPID"
	src=$?
	SPID=
	if [ $rc -ne 0 ] || [ $src -ne 0 ] || ! grep -q "Verify *: OK" "$out"
	then
		flunk "$what: client exit $rc, server exit $src"
		sed 's/^/  client| /' "$out"
		sed 's/^/  server| /' "$out.srv"
		return 1
	fi
	ROW=$(grep -A1 -m1 '#bytes' "$out" | tail -1 | tr -s ' ')
}

# xdp_counter FILE NAME...: the sum of these counters in a `mrocectl stats
# --json` dump, -1 when one is missing
xdp_counter() {
	local f=$1 sum=0 v c
	shift
	for c in "$@"; do
		v=$(grep -o "\"$c\": *[0-9]*" "$f" | grep -o "[0-9]*$") || v=
		[ -n "$v" ] || { echo -1; return; }
		sum=$((sum + v))
	done
	echo $sum
}

# perf_spray OUT: from mroce_perf's spraying block, SPRAY_PATHS (MetaRoCE
# paths, 0 if none) and SPRAY_BUSY (paths that carried packets)
perf_spray() {
	SPRAY_PATHS=$(sed -n 's/^ *Spraying *: MetaRoCE, \([0-9]*\) paths.*/\1/p' "$1")
	SPRAY_PATHS=${SPRAY_PATHS:-0}
	SPRAY_BUSY=$(awk '/^ path  sport/ { on = 1; next }
		on && NF >= 4 && $4 > 0 { n++ }
		/^---/ { on = 0 } END { print n + 0 }' "$1")
}

# expect_exit RC PATTERN WHAT CMD...: CMD must exit RC with PATTERN (a grep
# pattern) in its output, else "FAIL: WHAT: ..." (counted).
expect_exit() {
	local want=$1 pat=$2 what=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	[ $rc -eq "$want" ] && grep -q "$pat" <<<"$out" ||
		flunk "$what: exit $rc, '$out'"
}

# usage_errors PROG ARGS...: PROG run with each ARGS (one string of
# arguments) exits 2 with a message, and its --help is a man page.
usage_errors() {
	local prog=$1 args out rc
	shift
	for args in "$@"; do
		# shellcheck disable=SC2086
		out=$("$prog" $args 2>&1)
		rc=$?
		[ $rc -eq 2 ] && [ -n "$out" ] ||
			flunk "${prog##*/} '$args': exit $rc"
	done
	"$prog" --help | grep -q "^SYNOPSIS" || flunk "${prog##*/} --help"
}
