#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# house.sh - the rooms stay livable (issue #11): checks the source tree's
# shape, not its behaviour.
#   1. no .c file under user/ above 1,200 lines;
#   2. no function in user/ or bpf/ above 120 lines (kernel style: from a
#      line "{" at column 0 to the next "}" at column 0);
#   3. the directories' include graph has no cycle: no two directories
#      whose files include each other, directly or around a loop
#      (a header in include/mroce counts as part of the component that
#      implements it, see HDR_OWNER below; mroce.h, the public API, and
#      the wire/ABI headers are contracts of their own: "include").
#
#   tests/house/house.sh            check; exit 1 naming every violation
#   tests/house/house.sh --graph    print the directory edges (from -> to)
#   tests/house/house.sh --probe    exit 0 (needs only bash and awk)
set -uo pipefail
cd "$(dirname "$0")/../.."

MAX_FILE=1200
MAX_FN=120

# Which directory a public header belongs to (its implementation).
declare -A HDR_OWNER=(
	[wire.h]=include [codec.h]=user/codec [engine.h]=user/engine
	[io.h]=user/io [io_afxdp.h]=user/io [mroce.h]=include
	[version.h]=include [addr.h]=include [abi.h]=include [counters.h]=include
	[spray.h]=include [xdp.h]=user/xdp [sim.h]=user/sim
)

case "${1:-}" in
--probe) exit 0 ;;
--graph|"") ;;
-h|--help) sed -n '3,17p' "$0"; exit 0 ;;
*) echo "house.sh: unknown option '$1'" >&2; exit 2 ;;
esac

# Directory edges "from to" for every #include "..." between our files.
edges() {
	local f d inc t
	while IFS= read -r f; do
		d=$(dirname "$f")
		while IFS= read -r inc; do
			t=""
			if [[ $inc == mroce/* ]]; then
				t=${HDR_OWNER[${inc#mroce/}]:-include}
			elif [ -e "$d/$inc" ]; then
				t=$(dirname "$(realpath -m --relative-to=. "$d/$inc")")
			else
				continue
			fi
			[ "$t" != "$d" ] && echo "$d $t"
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	done < <(find user -name '*.[ch]' | sort)
}

if [ "${1:-}" = "--graph" ]; then
	edges | sort -u
	exit 0
fi

fail=0
big=$(find user -name '*.c' -exec wc -l {} + | grep -v ' total$' |
	awk -v m=$MAX_FILE '$1 > m { print $2 " (" $1 " lines)" }')
if [ -n "$big" ]; then
	echo "files over $MAX_FILE lines:"; echo "$big" | sed 's/^/  /'
	fail=1
fi
long=$(for f in $(find user bpf -name '*.c' | sort); do
	awk -v f="$f" -v m=$MAX_FN '/^\{/ { s = NR }
		/^\}/ { if (s) { n = NR - s; if (n > m) print f ":" s " (" n " lines)"; s = 0 } }' "$f"
done)
if [ -n "$long" ]; then
	echo "functions over $MAX_FN lines:"; echo "$long" | sed 's/^/  /'
	fail=1
fi
# tsort names the members of every loop on stderr.
loops=$(edges | sort -u | tsort 2>&1 >/dev/null | grep -v 'input contains a loop')
if [ -n "$loops" ]; then
	echo "directories that include each other (a loop in the include graph):"
	echo "$loops" | sed 's/^tsort: */  /'
	edges | sort -u | awk '{ e[$1 " " $2] = 1 } END { for (k in e) { split(k, p, " "); if ((p[2] " " p[1]) in e && p[1] < p[2]) print "  " p[1] " <-> " p[2] } }'
	fail=1
fi
if [ $fail -ne 0 ]; then
	exit 1
fi
echo "house: files <= $MAX_FILE lines, functions <= $MAX_FN lines, include graph without loops"
