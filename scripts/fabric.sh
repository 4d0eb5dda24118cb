#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# fabric.sh - the lossy multipath test fabric, built from network namespaces.
#
# NAME
#     fabric.sh - create, inspect, impair and remove a namespace test fabric
#
# SYNOPSIS
#     fabric.sh up      [--prefix P] [--hosts K] [--left L] [--paths N]
#                       [--mtu M] [--seed S] [--rate R] [--loss F]
#                       [--ecn-rate R] [--ecn-thresh BYTES] [--ipv6]
#                       [--queues Q]
#     fabric.sh down    [--prefix P]
#     fabric.sh status  [--prefix P] [--env]
#     fabric.sh counters [--prefix P]
#     fabric.sh impair  [--prefix P] --path J [--loss F] [--rate R|off]
#                       [--blackhole on|off] [--ecn-rate R|off]
#                       [--ecn-thresh BYTES]
#     fabric.sh --help
#
# DESCRIPTION
#     Builds hosts h1..hK, two leaf switches l1 and l2, and N parallel paths
#     between the leaves, each path a veth pair with its own addresses, so
#     that the leaves' multipath routes have N distinct next hops:
#
#         h1 ..hL --- l1 ==== p1 .. pN ==== l2 --- h(L+1) .. hK
#
#     Hosts h1..hL hang off l1, the others off l2 (default L = K-1: several
#     senders towards one receiver is the incast layout). The leaves hash
#     flows over the paths with the UDP ports (fib_multipath_hash_policy 1,
#     a fixed fib_multipath_hash_seed), after a tc program on their host
#     ports has cleared the socket's hash. Every path port runs the ECN
#     marker (bpf/fabric_ecn.bpf.c, a phantom queue), optionally tbf (rate)
#     and nftables rules (random loss, blackhole); impairments apply to both
#     directions of a path. Hosts have static neighbours and single-queue
#     veths, so AF_XDP and native XDP work on them; the leaf's host ports
#     carry an XDP_PASS program so XDP_TX'd frames arrive.
#
#     Every object lives in namespaces named <prefix>h<i>, <prefix>l1,
#     <prefix>l2; nothing is created in the calling namespace. down removes
#     the namespaces (and with them every link, route, program and rule).
#
# COMMANDS
#     up        build the fabric (a fabric with the same prefix is first
#               removed, so running it twice is safe); prints the prefix
#     down      remove everything; no error when nothing is there
#     status    human summary; with --env, shell assignments to eval:
#               FABRIC_<X>_NS/_IF/_IP/_MAC/_GW_IP/_GW_MAC for hosts H1..HK
#               and A (= h1), B (= hK); FABRIC_LEAF1_NS, FABRIC_LEAF2_NS;
#               FABRIC_P<j>_IF, _IP1, _IP2, _MAC1, _MAC2 per path
#     counters  shell assignments per path j: FABRIC_P<j>_TX12 / _TX21
#               (packets sent l1->l2 / l2->l1), _DROP12 / _DROP21 (nftables
#               loss+blackhole drops), _CE12 / _CE21 (CE marks), _ECT12 / _ECT21
#     impair    change one path at run time; unnamed settings are kept
#
# OPTIONS
#     --prefix P      name prefix (letters, digits, _; at most 10). Default:
#                     $FABRIC_PREFIX, else for `up` "fb<pid>"
#     --hosts K       number of hosts, >= 2 (default 2)
#     --left L        hosts on leaf 1 (default K-1)
#     --paths N       parallel paths, 1..64 (default 4)
#     --mtu M         MTU of every link (default 1500; 9000 for jumbo)
#     --seed S        fib_multipath_hash_seed of the leaves (default 1234)
#     --rate R        tbf rate (tc syntax: 200mbit, 1gbit, ...; off)
#     --loss F        random loss fraction 0..1 (nftables numgen random)
#     --blackhole X   on: drop every packet on the path; off: stop
#     --ecn-rate R    phantom queue drain rate: mark CE above it (off)
#     --ecn-thresh B  phantom queue length that starts marking (30000)
#     --path J        path of `impair` (1..N)
#     --env           status as shell assignments
#     --queues Q      TX and RX queues of every host link, both ends, 1..8
#                     (default 1): a host's AF_XDP user can bind one socket
#                     per queue; the leaf spreads flows over them by hash
#     --ipv6          dual stack: IPv6 addresses and multipath routes too
#                     (see ADDRESSES); without it IPv6 is off in every
#                     namespace, so that neighbour discovery and MLD put
#                     no packets on the paths the tests count
#
# ENVIRONMENT
#     FABRIC_PREFIX      default prefix
#     FABRIC_BPF_DIR     where fabric_*.bpf.o are (default $MROCE_BUILD/bpf,
#                        else build/bpf next to this script)
#     FABRIC_STATE_DIR   state files (default /run/mroce-fabric)
#
# ADDRESSES
#     Host i: 10.77.i.2/24 on eth0, gateway (its leaf port h<i>) 10.77.i.1.
#     Path j: 10.78.j.1 on l1's p<j>, 10.78.j.2 on l2's p<j>.
#     With --ipv6 also fd77:i::2/64 and gateway fd77:i::1, paths fd78:j::1
#     and fd78:j::2, the same ECMP over the paths (L4 hash), static
#     neighbours, no DAD; status --env adds FABRIC_<X>_IP6, _GW_IP6.
#
# EXIT STATUS
#     0 success, 1 failure, 2 usage error.
#
# EXAMPLES
#     P=$(scripts/fabric.sh up --mtu 9000 --paths 4)
#     eval "$(scripts/fabric.sh status --prefix $P --env)"
#     ip netns exec $FABRIC_A_NS ping -c1 $FABRIC_B_IP
#     scripts/fabric.sh impair --prefix $P --path 2 --loss 0.01
#     scripts/fabric.sh down --prefix $P
set -u
export PATH="$PATH:/usr/sbin:/sbin"

ME=fabric.sh
SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE_DIR=${FABRIC_STATE_DIR:-/run/mroce-fabric}
if [ -n "${FABRIC_BPF_DIR:-}" ]; then
	BPF_DIR=$FABRIC_BPF_DIR
elif [ -n "${MROCE_BUILD:-}" ]; then
	BPF_DIR=$MROCE_BUILD/bpf
else
	BPF_DIR=$SELF_DIR/../build/bpf
fi

die() { echo "$ME: $*" >&2; exit 1; }
usage() { echo "$ME: $*; see $ME --help" >&2; exit 2; }
help() { sed -n '5,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

# Rate in tc syntax -> bit/s (integer). Empty output on a syntax error.
parse_rate() {
	local r=${1,,} n u
	[[ $r =~ ^([0-9]+)([a-z]*)$ ]] || return 1
	n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
	case $u in
	""|bit) echo $((n)) ;;
	k|kbit) echo $((n * 1000)) ;;
	m|mbit) echo $((n * 1000000)) ;;
	g|gbit) echo $((n * 1000000000)) ;;
	t|tbit) echo $((n * 1000000000000)) ;;
	*) return 1 ;;
	esac
}

# Loss fraction -> parts per million (0..1000000).
parse_loss() {
	awk -v f="$1" 'BEGIN {
		if (f !~ /^[0-9]*\.?[0-9]+([eE]-?[0-9]+)?$/ || f + 0 > 1)
			exit 1
		printf "%d\n", f * 1000000 + 0.5 }'
}

# Eight little-endian bytes of a non-negative integer, for bpftool.
le64() {
	local v=$1 i
	for i in 0 1 2 3 4 5 6 7; do
		printf '%02x ' $(((v >> (8 * i)) & 255))
	done
}

# ------------------------------------------------------------ arguments
CMD=${1:-}
[ $# -gt 0 ] && shift
case $CMD in
-h|--help|help) help; exit 0 ;;
up|down|status|counters|impair) ;;
"") usage "no command" ;;
*) usage "unknown command '$CMD'" ;;
esac

PREFIX=${FABRIC_PREFIX:-}
HOSTS=2 LEFT='' PATHS=4 MTU=1500 SEED=1234 QUEUES=1
O_RATE='' O_LOSS='' O_BH='' O_ECN_RATE='' O_ECN_THRESH='' O_PATH='' O_ENV=0
O_V6=0 IPV6=0
while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	--env) O_ENV=1; shift; continue ;;
	--ipv6) O_V6=1; shift; continue ;;
	-h|--help) help; exit 0 ;;
	--*) [ $# -ge 2 ] || usage "$opt needs a value" ;;
	*) usage "unexpected argument '$opt'" ;;
	esac
	val=$2
	shift 2
	case $opt in
	--prefix) PREFIX=$val ;;
	--hosts) HOSTS=$val ;;
	--left) LEFT=$val ;;
	--paths) PATHS=$val ;;
	--mtu) MTU=$val ;;
	--seed) SEED=$val ;;
	--queues) QUEUES=$val ;;
	--rate) O_RATE=$val ;;
	--loss) O_LOSS=$val ;;
	--blackhole) O_BH=$val ;;
	--ecn-rate) O_ECN_RATE=$val ;;
	--ecn-thresh) O_ECN_THRESH=$val ;;
	--path) O_PATH=$val ;;
	*) usage "unknown option '$opt'" ;;
	esac
done

if [ -z "$PREFIX" ]; then
	[ "$CMD" = up ] || usage "--prefix (or \$FABRIC_PREFIX) is required"
	PREFIX=fb$$
fi
[[ $PREFIX =~ ^[A-Za-z0-9_]{1,10}$ ]] ||
	usage "prefix '$PREFIX': 1-10 letters, digits or _"
isnum() { [[ $1 =~ ^[0-9]+$ ]]; }
if [ -n "$O_RATE" ] && [ "$O_RATE" != off ]; then
	parse_rate "$O_RATE" >/dev/null || usage "bad rate '$O_RATE'"
fi
if [ -n "$O_ECN_RATE" ] && [ "$O_ECN_RATE" != off ]; then
	parse_rate "$O_ECN_RATE" >/dev/null || usage "bad rate '$O_ECN_RATE'"
fi
[ -z "$O_LOSS" ] || parse_loss "$O_LOSS" >/dev/null ||
	usage "bad loss '$O_LOSS' (a fraction 0..1)"
[ -z "$O_ECN_THRESH" ] || isnum "$O_ECN_THRESH" ||
	usage "bad --ecn-thresh '$O_ECN_THRESH'"
case $O_BH in ""|on|off) ;; *) usage "--blackhole on|off" ;; esac

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
SD=$STATE_DIR/$PREFIX

# ------------------------------------------------------------ helpers
NS_L1=${PREFIX}l1
NS_L2=${PREFIX}l2
ns_h() { echo "${PREFIX}h$1"; }

load_state() {
	[ -f "$SD/conf" ] || die "no fabric '$PREFIX' (not up?)"
	# shellcheck disable=SC1091
	. "$SD/conf"
}

# The namespaces of this prefix that exist now.
our_netns() {
	ip netns list 2>/dev/null | awk '{print $1}' |
		grep -E "^${PREFIX}(h[0-9]+|l[12])\$" || true
}

# Fixed, readable MACs (locally administered): every fabric is private,
# so they need only be unique inside one fabric.
#   host i eth0 02:00:00:01:HH:LL   leaf port h<i> 02:00:00:02:HH:LL
#   path j on l1 02:00:00:03:HH:LL  path j on l2   02:00:00:04:HH:LL
mac() { printf '02:00:00:%02x:%02x:%02x' "$1" $(($2 >> 8)) $(($2 & 255)); }

leaf_of() { # host index -> leaf namespace
	if [ "$1" -le "$LEFT" ]; then echo "$NS_L1"; else echo "$NS_L2"; fi
}

ns_sysctl() { # ns key=value...
	local ns=$1
	shift
	ip netns exec "$ns" sysctl -qw "$@" >/dev/null
}

# After up: the ids of every ECN marker's maps, from the programs tc
# attached, into $SD/ecn as "<leaf 1|2> <path> <counter map> <config map>"
# (two bpftool calls in all, not several per port).
ecn_resolve() {
	local l j pid ns ids
	declare -A prog_of
	for l in 1 2; do
		ns=${PREFIX}l$l
		for j in $(seq "$PATHS"); do
			pid=$(tc -n "$ns" filter show dev "p$j" egress |
				sed -n 's/.* id \([0-9][0-9]*\).*/\1/p' | head -1)
			[ -n "$pid" ] || die "no ECN marker on $ns p$j"
			prog_of[$l.$j]=$pid
		done
	done
	# prog id -> its map ids ("map_ids 1,2,3"); map id -> name
	ids=$(printf 'prog show id %s\n' "${prog_of[@]}" |
		bpftool batch file - | awk '
		/^[0-9]+: / { id = $1; sub(":", "", id) }
		/map_ids/ { for (i = 1; i < NF; i++) if ($i == "map_ids") {
			m = $(i + 1); gsub(",", " ", m); print id, m } }') ||
		die "bpftool prog show"
	declare -A maps_of name_of
	local line
	while read -r line; do
		maps_of[${line%% *}]=${line#* }
	done <<<"$ids"
	# shellcheck disable=SC2048,SC2086 # ids are numbers, one per word
	while read -r line; do
		name_of[${line%% *}]=${line#* }
	done < <(printf 'map show id %s\n' ${maps_of[*]} |
		bpftool batch file - | awk '/^[0-9]+: / {
			id = $1; sub(":", "", id)
			for (i = 2; i < NF; i++) if ($i == "name") print id, $(i + 1) }')
	: >"$SD/ecn"
	for l in 1 2; do
		for j in $(seq "$PATHS"); do
			local m cnt="" conf=""
			for m in ${maps_of[${prog_of[$l.$j]}]}; do
				case ${name_of[$m]} in
				fabric_ecn_cnt) cnt=$m ;;
				fabric_ecn_conf) conf=$m ;;
				esac
			done
			[ -n "$cnt" ] && [ -n "$conf" ] ||
				die "ECN marker maps of l$l p$j not found"
			echo "$l $j $cnt $conf" >>"$SD/ecn"
		done
	done
}

ecn_map() { # leaf(1|2) path column(3 counters, 4 config)
	awk -v l="$1" -v j="$2" -v c="$3" '$1 == l && $2 == j { print $c }' \
		"$SD/ecn"
}

# ------------------------------------------------------------ impairments
# Path j's settings live in $SD/path<j>: RATE LOSS BH ECN_RATE ECN_THRESH.
path_state_write() {
	printf 'RATE=%s\nLOSS=%s\nBH=%s\nECN_RATE=%s\nECN_THRESH=%s\n' \
		"$RATE" "$LOSS" "$BH" "$ECN_RATE" "$ECN_THRESH" >"$SD/path$1"
}

# Apply path j's current settings ($RATE ... from path_state) on both leaves;
# the optional second argument names the parts to apply (words rate, nft,
# ecn; default all), so that a blackhole switched mid-run lands quickly.
path_apply() {
	local j=$1 what=${2:-rate nft ecn} ns bps burst ppm rules cfg l
	for l in 1 2; do
		ns=${PREFIX}l$l
		# rate: tbf on the path port (burst: 1 ms of traffic, at least
		# four full frames so that jumbo frames pass)
		if [[ " $what " != *" rate "* ]]; then
			:
		elif [ "$RATE" = off ]; then
			tc -n "$ns" qdisc del dev "p$j" root 2>/dev/null
		else
			bps=$(parse_rate "$RATE")
			burst=$((bps / 8 / 1000))
			[ $burst -ge $((4 * MTU + 256)) ] || burst=$((4 * MTU + 256))
			tc -n "$ns" qdisc replace dev "p$j" root tbf rate "${bps}bit" \
				burst "$burst" latency 20ms ||
				die "tbf on $ns p$j"
		fi
		# loss and blackhole: nftables chain of the path
		[[ " $what " == *" nft "* ]] || continue
		rules="flush chain inet fabric path$j"$'\n'
		[ "$BH" = on ] &&
			rules+="add rule inet fabric path$j counter drop"$'\n'
		ppm=$(parse_loss "$LOSS")
		[ "$ppm" -gt 0 ] &&
			rules+="add rule inet fabric path$j numgen random mod 1000000 < $ppm counter drop"$'\n'
		ip netns exec "$ns" nft -f - <<<"$rules" || die "nft on $ns"
	done
	[[ " $what " == *" ecn "* ]] || return 0
	for l in 1 2; do
		ns=${PREFIX}l$l
		# ECN marker configuration
		cfg=$(ecn_map "$l" "$j" 4)
		[ -n "$cfg" ] || die "ECN marker of $ns p$j unknown"
		if [ "$ECN_RATE" = off ]; then bps=0; else bps=$(parse_rate "$ECN_RATE"); fi
		# shellcheck disable=SC2046 # le64 prints eight words on purpose
		bpftool map update id "$cfg" key hex 00 00 00 00 \
			value hex $(le64 "$bps") $(le64 "$ECN_THRESH") ||
			die "ECN marker config on $ns p$j"
	done
}

# ------------------------------------------------------------ commands
cmd_down() {
	local ns
	for ns in $(our_netns); do
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$SD"
	[ -z "$(our_netns)" ] || die "could not remove every namespace"
}

cmd_up() {
	isnum "$HOSTS" && [ "$HOSTS" -ge 2 ] && [ "$HOSTS" -le 200 ] ||
		usage "--hosts 2..200"
	[ -n "$LEFT" ] || LEFT=$((HOSTS - 1))
	isnum "$LEFT" && [ "$LEFT" -ge 1 ] && [ "$LEFT" -lt "$HOSTS" ] ||
		usage "--left 1..hosts-1"
	isnum "$PATHS" && [ "$PATHS" -ge 1 ] && [ "$PATHS" -le 64 ] ||
		usage "--paths 1..64"
	isnum "$MTU" && [ "$MTU" -ge 576 ] && [ "$MTU" -le 9000 ] ||
		usage "--mtu 576..9000"
	isnum "$SEED" || usage "--seed: a number"
	isnum "$QUEUES" && [ "$QUEUES" -ge 1 ] && [ "$QUEUES" -le 8 ] ||
		usage "--queues 1..8"
	local f
	for f in fabric_hash fabric_ecn; do
		[ -f "$BPF_DIR/$f.bpf.o" ] ||
			die "$BPF_DIR/$f.bpf.o missing (run make; or set FABRIC_BPF_DIR)"
	done
	for f in ip tc nft bpftool ethtool; do
		command -v $f >/dev/null || die "'$f' is not installed"
	done

	cmd_down
	mkdir -p "$SD" || die "cannot create $SD"
	IPV6=$O_V6
	printf 'HOSTS=%s\nLEFT=%s\nPATHS=%s\nMTU=%s\nSEED=%s\nIPV6=%s\nQUEUES=%s\n' \
		"$HOSTS" "$LEFT" "$PATHS" "$MTU" "$SEED" "$IPV6" "$QUEUES" \
		>"$SD/conf"
	# From here on a failure removes what was made.
	trap 'cmd_down >/dev/null 2>&1' EXIT

	local ns i j
	for ns in $NS_L1 $NS_L2 $(for i in $(seq "$HOSTS"); do ns_h "$i"; done); do
		ip netns add "$ns" || die "netns add $ns"
		# No IPv6 (unless asked): its neighbour discovery and MLD
		# would put packets on the paths that the tests count.
		if [ "$IPV6" = 1 ]; then
			ns_sysctl "$ns" net.ipv6.conf.all.accept_dad=0 \
				net.ipv6.conf.default.accept_dad=0 \
				net.ipv6.conf.all.router_solicitations=0 \
				net.ipv6.conf.default.router_solicitations=0
		else
			ns_sysctl "$ns" net.ipv6.conf.all.disable_ipv6=1 \
				net.ipv6.conf.default.disable_ipv6=1
		fi
	done
	if [ "$IPV6" = 1 ]; then
		for ns in $NS_L1 $NS_L2; do
			ns_sysctl "$ns" net.ipv6.conf.all.forwarding=1 \
				net.ipv6.fib_multipath_hash_policy=1 ||
				die "IPv6 sysctl on $ns"
		done
	fi
	for ns in $NS_L1 $NS_L2; do
		ns_sysctl "$ns" net.ipv4.ip_forward=1 \
			net.ipv4.fib_multipath_hash_policy=1 \
			net.ipv4.fib_multipath_hash_seed="$SEED" \
			net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0 ||
			die "sysctl on $ns (kernel without multipath hash seed?)"
	done

	# Links are created directly inside their namespaces (one ip -batch).
	# As many queues each way on both ends: native XDP refuses a veth
	# whose peer has more TX queues than it has RX queues.
	local q="numtxqueues 1 numrxqueues 1" cmds=""
	local hq="numtxqueues $QUEUES numrxqueues $QUEUES"
	for i in $(seq "$HOSTS"); do
		cmds+="link add name eth0 netns $(ns_h "$i") address $(mac 1 "$i") mtu $MTU $hq type veth peer name h$i netns $(leaf_of "$i") address $(mac 2 "$i") mtu $MTU $hq"$'\n'
	done
	for j in $(seq "$PATHS"); do
		cmds+="link add name p$j netns $NS_L1 address $(mac 3 "$j") mtu $MTU $q type veth peer name p$j netns $NS_L2 address $(mac 4 "$j") mtu $MTU $q"$'\n'
	done
	ip -batch - <<<"$cmds" || die "creating the veth links"

	# Addresses, static neighbours everywhere (AF_XDP does not answer ARP;
	# and no ARP on the paths), routes: one ip -batch per namespace.
	local c1="link set lo up"$'\n' c2="link set lo up"$'\n' nh1="" nh2=""
	local nh61="" nh62=""
	for j in $(seq "$PATHS"); do
		c1+="addr add 10.78.$j.1/24 dev p$j
link set p$j up
neigh replace 10.78.$j.2 dev p$j nud permanent lladdr $(mac 4 "$j")
"
		c2+="addr add 10.78.$j.2/24 dev p$j
link set p$j up
neigh replace 10.78.$j.1 dev p$j nud permanent lladdr $(mac 3 "$j")
"
		nh1+=" nexthop via 10.78.$j.2 dev p$j weight 1"
		nh2+=" nexthop via 10.78.$j.1 dev p$j weight 1"
		if [ "$IPV6" = 1 ]; then
			c1+="addr add fd78:$j::1/64 dev p$j nodad
neigh replace fd78:$j::2 dev p$j nud permanent lladdr $(mac 4 "$j")
"
			c2+="addr add fd78:$j::2/64 dev p$j nodad
neigh replace fd78:$j::1 dev p$j nud permanent lladdr $(mac 3 "$j")
"
			nh61+=" nexthop via fd78:$j::2 dev p$j weight 1"
			nh62+=" nexthop via fd78:$j::1 dev p$j weight 1"
		fi
	done
	local hc lc
	for i in $(seq "$HOSTS"); do
		hc="link set lo up
addr add 10.77.$i.2/24 dev eth0
link set eth0 up
neigh replace 10.77.$i.1 dev eth0 nud permanent lladdr $(mac 2 "$i")
route add default via 10.77.$i.1 dev eth0
"
		lc="addr add 10.77.$i.1/24 dev h$i
link set h$i up
neigh replace 10.77.$i.2 dev h$i nud permanent lladdr $(mac 1 "$i")
"
		if [ "$IPV6" = 1 ]; then
			hc+="addr add fd77:$i::2/64 dev eth0 nodad
neigh replace fd77:$i::1 dev eth0 nud permanent lladdr $(mac 2 "$i")
route add ::/0 via fd77:$i::1 dev eth0
"
			lc+="addr add fd77:$i::1/64 dev h$i nodad
neigh replace fd77:$i::2 dev h$i nud permanent lladdr $(mac 1 "$i")
"
		fi
		ip -n "$(ns_h "$i")" -batch - <<<"$hc" || die "host $i setup"
		# this host's leaf reaches it directly, the other leaf over
		# every path
		if [ "$i" -le "$LEFT" ]; then
			c1+=$lc
			c2+="route add 10.77.$i.0/24$nh2"$'\n'
			[ "$IPV6" = 1 ] && c2+="route add fd77:$i::/64$nh62"$'\n'
		else
			c2+=$lc
			c1+="route add 10.77.$i.0/24$nh1"$'\n'
			[ "$IPV6" = 1 ] && c1+="route add fd77:$i::/64$nh61"$'\n'
		fi
		# Full checksums on the wire: an AF_XDP receiver sees the bytes
		# as sent, never a checksum left for offload.
		ip netns exec "$(ns_h "$i")" ethtool -K eth0 tx off >/dev/null 2>&1
	done
	ip -n "$NS_L1" -batch - <<<"$c1" || die "leaf 1 setup"
	ip -n "$NS_L2" -batch - <<<"$c2" || die "leaf 2 setup"

	# Leaf host ports: clear the socket hash (tc ingress), XDP_PASS.
	# Path ports: the ECN marker (tc egress), nftables chains.
	local l tcb xdpb rules
	for l in 1 2; do
		ns=${PREFIX}l$l tcb="" xdpb=""
		for i in $(seq "$HOSTS"); do
			[ "$(leaf_of "$i")" = "$ns" ] || continue
			tcb+="qdisc add dev h$i clsact
filter add dev h$i ingress bpf da obj $BPF_DIR/fabric_hash.bpf.o sec tc
"
			xdpb+="link set dev h$i xdpdrv obj $BPF_DIR/fabric_hash.bpf.o sec xdp.frags"$'\n'
		done
		for j in $(seq "$PATHS"); do
			tcb+="qdisc add dev p$j clsact
filter add dev p$j egress bpf da obj $BPF_DIR/fabric_ecn.bpf.o sec tc
"
		done
		tc -n "$ns" -batch - <<<"$tcb" >/dev/null 2>&1 ||
			die "tc programs on $ns (tc -n $ns -batch failed)"
		ip -n "$ns" -batch - <<<"$xdpb" >/dev/null 2>&1 ||
			die "XDP_PASS programs on $ns"
		rules="add table inet fabric
add chain inet fabric forward { type filter hook forward priority 0; policy accept; }
"
		for j in $(seq "$PATHS"); do
			rules+="add chain inet fabric path$j
add rule inet fabric forward oifname \"p$j\" jump path$j
"
		done
		ip netns exec "$ns" nft -f - <<<"$rules" || die "nft on $ns"
	done
	ecn_resolve
	RATE=${O_RATE:-off} LOSS=${O_LOSS:-0} BH=${O_BH:-off}
	ECN_RATE=${O_ECN_RATE:-off} ECN_THRESH=${O_ECN_THRESH:-30000}
	for j in $(seq "$PATHS"); do
		path_state_write "$j"
		# a fresh port is already "no impairment, marker off"
		[ "$RATE$LOSS$BH$ECN_RATE" = off0offoff ] || path_apply "$j"
	done
	trap - EXIT
	echo "$PREFIX"
}

cmd_impair() {
	load_state
	[ -n "$O_PATH" ] || usage "impair needs --path"
	isnum "$O_PATH" && [ "$O_PATH" -ge 1 ] && [ "$O_PATH" -le "$PATHS" ] ||
		usage "--path 1..$PATHS"
	# shellcheck disable=SC1090
	. "$SD/path$O_PATH"
	[ -z "$O_RATE" ] || RATE=$O_RATE
	[ -z "$O_LOSS" ] || LOSS=$O_LOSS
	[ -z "$O_BH" ] || BH=$O_BH
	[ -z "$O_ECN_RATE" ] || ECN_RATE=$O_ECN_RATE
	[ -z "$O_ECN_THRESH" ] || ECN_THRESH=$O_ECN_THRESH
	local what=""
	[ -z "$O_RATE" ] || what+=" rate"
	[ -z "$O_LOSS$O_BH" ] || what+=" nft"
	[ -z "$O_ECN_RATE$O_ECN_THRESH" ] || what+=" ecn"
	[ -n "$what" ] || what="rate nft ecn"
	path_apply "$O_PATH" "$what"
	path_state_write "$O_PATH"
}

host_env() { # tag index
	local t=$1 i=$2
	echo "FABRIC_${t}_NS=$(ns_h "$i")"
	echo "FABRIC_${t}_IF=eth0"
	echo "FABRIC_${t}_IP=10.77.$i.2"
	echo "FABRIC_${t}_MAC=$(mac 1 "$i")"
	echo "FABRIC_${t}_GW_IP=10.77.$i.1"
	echo "FABRIC_${t}_GW_MAC=$(mac 2 "$i")"
	echo "FABRIC_${t}_LEAF_NS=$(leaf_of "$i")"
	echo "FABRIC_${t}_LEAF_IF=h$i"
	if [ "$IPV6" = 1 ]; then
		echo "FABRIC_${t}_IP6=fd77:$i::2"
		echo "FABRIC_${t}_GW_IP6=fd77:$i::1"
	fi
}

# "<ifname> <tx_packets>" for every path port of a leaf.
port_tx() { # ns
	ip netns exec "$1" sh -c 'cd /sys/class/net && for d in p*; do
		echo "$d $(cat $d/statistics/tx_packets)"; done'
}

cmd_status() {
	load_state
	local i j
	if [ "$O_ENV" = 1 ]; then
		echo "FABRIC_PREFIX=$PREFIX"
		echo "FABRIC_HOSTS=$HOSTS"
		echo "FABRIC_LEFT=$LEFT"
		echo "FABRIC_PATHS=$PATHS"
		echo "FABRIC_MTU=$MTU"
		echo "FABRIC_SEED=$SEED"
		echo "FABRIC_IPV6=$IPV6"
		echo "FABRIC_LEAF1_NS=$NS_L1"
		echo "FABRIC_LEAF2_NS=$NS_L2"
		for i in $(seq "$HOSTS"); do host_env "H$i" "$i"; done
		host_env A 1
		host_env B "$HOSTS"
		for j in $(seq "$PATHS"); do
			echo "FABRIC_P${j}_IF=p$j"
			echo "FABRIC_P${j}_IP1=10.78.$j.1"
			echo "FABRIC_P${j}_IP2=10.78.$j.2"
			echo "FABRIC_P${j}_MAC1=$(mac 3 "$j")"
			echo "FABRIC_P${j}_MAC2=$(mac 4 "$j")"
		done
		return
	fi
	local t1 t2
	t1=$(port_tx "$NS_L1") t2=$(port_tx "$NS_L2")
	echo "fabric $PREFIX: $HOSTS hosts ($LEFT on l1), $PATHS paths, MTU $MTU, hash seed $SEED"
	for i in $(seq "$HOSTS"); do
		printf '  host h%-3s ns %-14s 10.77.%s.2  %s  via %s\n' "$i" \
			"$(ns_h "$i")" "$i" "$(mac 1 "$i")" "$(leaf_of "$i")"
	done
	for j in $(seq "$PATHS"); do
		# shellcheck disable=SC1090
		. "$SD/path$j"
		printf '  path p%-3s rate %-8s loss %-6s blackhole %-3s ecn %s/%sB  tx12 %s tx21 %s\n' \
			"$j" "$RATE" "$LOSS" "$BH" "$ECN_RATE" "$ECN_THRESH" \
			"$(awk -v d="p$j" '$1 == d {print $2}' <<<"$t1")" \
			"$(awk -v d="p$j" '$1 == d {print $2}' <<<"$t2")"
	done
}

# "<chain> <packets dropped>" for the path chains of a leaf.
nft_drops() { # ns
	ip netns exec "$1" nft list table inet fabric | awk '
		$1 == "chain" { c = $2 }
		/counter packets/ { for (i = 1; i < NF; i++)
			if ($i == "packets") n[c] += $(i + 1) }
		END { for (c in n) print c, n[c] }'
}

# "<leaf> <path> <ce_marked> <ect>" for every ECN marker: one bpftool batch
# dumping every counter map in $SD/ecn order (each dump is one key, so each
# '"key":' line starts the next map); values summed over the CPUs.
ecn_counts() {
	local ids
	ids=$(awk '{ print $3 }' "$SD/ecn")
	# shellcheck disable=SC2086
	printf 'map dump id %s\n' $ids | bpftool batch file - | awk '
		NR == FNR { l[NR] = $1; p[NR] = $2; n = NR; next }
		/"key":/ { k++ }
		/"ce_marked":/ { v = $2; sub(",", "", v); ce[k] += v }
		/"ect":/ { v = $2; sub(",", "", v); ect[k] += v }
		END { for (i = 1; i <= n; i++)
			print l[i], p[i], ce[i] + 0, ect[i] + 0 }' "$SD/ecn" -
}

cmd_counters() {
	load_state
	local j t1 t2 d1 d2 e
	t1=$(port_tx "$NS_L1") t2=$(port_tx "$NS_L2")
	d1=$(nft_drops "$NS_L1") d2=$(nft_drops "$NS_L2")
	e=$(ecn_counts)
	get() { awk -v k="$2" -v c="$3" '$1 == k { print $c; f = 1 }
		END { if (!f) print 0 }' <<<"$1"; }
	geth() { awk -v l="$1" -v j="$2" -v c="$3" '$1 == l && $2 == j {
		print $c; f = 1 } END { if (!f) print 0 }' <<<"$e"; }
	for j in $(seq "$PATHS"); do
		echo "FABRIC_P${j}_TX12=$(get "$t1" "p$j" 2)"
		echo "FABRIC_P${j}_TX21=$(get "$t2" "p$j" 2)"
		echo "FABRIC_P${j}_DROP12=$(get "$d1" "path$j" 2)"
		echo "FABRIC_P${j}_DROP21=$(get "$d2" "path$j" 2)"
		echo "FABRIC_P${j}_CE12=$(geth 1 "$j" 3)"
		echo "FABRIC_P${j}_CE21=$(geth 2 "$j" 3)"
		echo "FABRIC_P${j}_ECT12=$(geth 1 "$j" 4)"
		echo "FABRIC_P${j}_ECT21=$(geth 2 "$j" 4)"
	done
}

case $CMD in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
counters) cmd_counters ;;
impair) cmd_impair ;;
esac
