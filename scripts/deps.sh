#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# deps.sh - install mroce's build and test dependencies from Debian 12.
#
#   scripts/deps.sh           install whatever is missing (apt-get; idempotent)
#   scripts/deps.sh --check   install nothing; fail with one message naming the
#                             Debian package of the first missing tool/library
#   scripts/deps.sh --list    print the package list
#
# Each package and why we need it:
#   gcc make pkg-config   userspace build
#   clang llvm            BPF objects, libFuzzer targets
#   libclang-rt-14-dev    libFuzzer and sanitizer runtimes for clang
#   libbpf-dev libxdp-dev BPF loading, AF_XDP sockets, XDP dispatcher
#   bpftool               BPF skeleton generation; counters readable with
#                         `bpftool map dump`
#   xdp-tools             xdp-loader for inspecting attached programs
#   check                 unit-test framework
#   tshark                Wireshark interop tests (decode our packets)
#   iproute2 nftables ethtool   network-namespace tests and the test fabric
#   libjson-c-dev         JSON output of every tool (one escaping, one schema)
#   help2man              man pages generated from each tool's --help
#   python3 gnuplot-nox   make demo: reads mroce_perf's JSON, plots goodput
#                         over time (PNG)
#   iperf3                scripts/bench_loaded.sh: kernel TCP's bulk flow,
#                         the loaded-latency reference row
set -euo pipefail

PKGS=(gcc make pkg-config clang llvm libclang-rt-14-dev libbpf-dev libxdp-dev
      bpftool xdp-tools check tshark iproute2 nftables ethtool
      libjson-c-dev help2man python3 gnuplot-nox iperf3)

# tool-or-file  package   (what --check verifies)
PROBES=(
  "cmd:gcc gcc" "cmd:make make" "cmd:pkg-config pkg-config" "cmd:clang clang"
  "cmd:llvm-strip llvm" "cmd:bpftool bpftool" "cmd:tshark tshark"
  "cmd:ip iproute2" "cmd:nft nftables"
  "pc:libbpf libbpf-dev" "pc:libxdp libxdp-dev" "pc:check check"
  "pc:json-c libjson-c-dev" "cmd:help2man help2man"
  "cmd:python3 python3" "cmd:gnuplot gnuplot-nox" "cmd:iperf3 iperf3"
  "file:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a libclang-rt-14-dev"
)

case "${1:-}" in
--list) printf '%s\n' "${PKGS[@]}"; exit 0 ;;
--check)
	export PATH="$PATH:/usr/sbin:/sbin"
	for p in "${PROBES[@]}"; do
		what=${p%% *} pkg=${p#* }
		kind=${what%%:*} name=${what#*:}
		case $kind in
		cmd) command -v "$name" >/dev/null 2>&1 && continue ;;
		pc) pkg-config --exists "$name" 2>/dev/null && continue ;;
		file) [ -e "$name" ] && continue ;;
		esac
		echo "mroce: missing $name: install the Debian package '$pkg' (or run: make deps)" >&2
		exit 1
	done
	exit 0 ;;
-h|--help) sed -n '3,27p' "$0"; exit 0 ;;
"") ;;
*) echo "deps.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac

missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "mroce: missing packages: ${missing[*]}; run 'make deps' as root" >&2
	exit 1
fi
echo "mroce: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
