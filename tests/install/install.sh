#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# install.sh - `make install` gives a program everything it needs, and
# `make uninstall` takes it all back.
#   tests/install/install.sh [--probe]
#
# Installs into a temporary DESTDIR with PREFIX=/usr and checks: the file
# list; that libmroce.so.0 (nm -D) and libmroce.a (nm -g) define exactly
# the functions the installed headers declare, and nothing else; the
# soname and the pkg-config version against include/mroce/version.h; the
# man pages; the systemd unit (systemd-analyze verify, where present).
# Then it builds user/examples/example.c with nothing but `pkg-config
# --cflags --libs mroce` against that tree, once shared and once static,
# and runs the two as a server/client pair over loopback (UDP backend, no
# privileges needed), each way round. Last, `make uninstall` must leave no
# file behind, and so must an install with the default PREFIX.
set -u
MROCE_BUILD=${MROCE_BUILD:-build}

if [ "${1:-}" = --probe ]; then
	for c in make cc pkg-config nm readelf help2man ss; do
		command -v "$c" >/dev/null ||
			{ echo "no $c (make deps installs it)"; exit 77; }
	done
	exit 0
fi

T=$(mktemp -d /tmp/mroce-install.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "install.sh: FAIL: $*" >&2; exit 1; }

build=$(cd "$MROCE_BUILD" && pwd) || fail "no build directory $MROCE_BUILD"
# The make runs below see only what they are given: not the flags of a
# make that started the test runner, nor install directories in the
# environment (the Makefile takes those, as `PREFIX=... make install`).
unset MAKEFLAGS MFLAGS MAKELEVEL DESTDIR PREFIX BINDIR SBINDIR LIBDIR \
	INCLUDEDIR DATADIR MANDIR DOCDIR PKGCONFIGDIR UNITDIR SYSUSERSDIR SYSCONFDIR
R=$T/root
mk() { make --no-print-directory -s BUILD="$build" "$@" >"$T/make.log" 2>&1 ||
	{ tail -20 "$T/make.log"; fail "make $*"; }; }

ver_def() { sed -n "s/^#define MROCE_VERSION$1  *\"\{0,1\}\([^\"]*\)\"\{0,1\}$/\1/p" \
	include/mroce/version.h; }
VERSION=$(ver_def "") MAJOR=$(ver_def _MAJOR)
[ -n "$VERSION" ] && [ -n "$MAJOR" ] || fail "no version in version.h"

mk install DESTDIR="$R" PREFIX=/usr

# ---- the file list
tools="mroce_blast mroce_pcapgen mroce_perf mroce_sim mrocectl"
{
	for t in $tools; do echo "usr/bin/$t"; echo "usr/share/man/man1/$t.1"; done
	echo usr/sbin/mroced
	echo usr/share/man/man8/mroced.8
	echo usr/include/mroce/mroce.h
	echo usr/include/mroce/version.h
	for l in libmroce.a libmroce.so libmroce.so.$MAJOR libmroce.so.$VERSION; do
		echo "usr/lib/$l"
	done
	echo usr/lib/pkgconfig/mroce.pc
	echo usr/lib/systemd/system/mroced.service
	echo usr/lib/sysusers.d/mroce.conf
	for d in README.md LICENSES/GPL-2.0-only.txt LICENSES/BSD-2-Clause.txt \
		 mroced.default examples/example.c; do
		echo "usr/share/doc/mroce/$d"
	done
} | sort > "$T/want"
(cd "$R" && find . -type f -o -type l) | sed 's|^\./||' | sort > "$T/got"
diff -u "$T/want" "$T/got" >&2 || fail "installed files differ from the list (- wanted, + got)"
[ "$(readlink "$R/usr/lib/libmroce.so")" = "libmroce.so.$MAJOR" ] &&
	[ "$(readlink "$R/usr/lib/libmroce.so.$MAJOR")" = "libmroce.so.$VERSION" ] ||
	fail "libmroce.so symlinks"
[ -x "$R/usr/sbin/mroced" ] && [ -x "$R/usr/bin/mrocectl" ] || fail "tools not executable"

# ---- the ABI: exactly the functions the installed headers declare
# (static inline helpers there are not symbols of the library)
printf '#include <mroce/mroce.h>\n#include <mroce/version.h>\n' |
	cc -E -P -I"$R/usr/include" - |
	grep -oE '(\bstatic\b[^;{}()]*)?\b(mrv_[a-z0-9_]+|mroce_version)[[:space:]]*\(' |
	grep -v '^static' | tr -d '( \t' | sort -u > "$T/api"
[ "$(wc -l < "$T/api")" -ge 20 ] || fail "too few API functions found in mroce.h"
so=$R/usr/lib/libmroce.so.$MAJOR
nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
	sort > "$T/so_syms"
diff -u "$T/api" "$T/so_syms" >&2 ||
	fail "libmroce.so exports differ from the headers' functions (- declared, + exported)"
nm -g --defined-only "$R/usr/lib/libmroce.a" | awk 'NF == 3 { print $3 }' |
	sort > "$T/a_syms"
diff -u "$T/api" "$T/a_syms" >&2 ||
	fail "libmroce.a global symbols differ from the headers' functions"
readelf -d "$so" | grep -q "SONAME.*\[libmroce\.so\.$MAJOR\]" || fail "soname"
readelf -d "$so" | grep -q 'NEEDED.*json-c' && fail "libmroce.so needs json-c"

# ---- pkg-config, man pages, systemd unit
export PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_PATH=$R/usr/lib/pkgconfig
[ "$(pkg-config --modversion mroce)" = "$VERSION" ] || fail "mroce.pc version"
for f in "$R"/usr/share/man/man1/*.1 "$R"/usr/share/man/man8/*.8; do
	m=${f#"$R"/} n=$(basename "${f%.*}")
	grep -q "^\.TH \"*${n^^}\"* " "$f" || fail "$m: no .TH"
	grep -q '^\.SH OPTIONS' "$f" || fail "$m: no OPTIONS section"
	grep -q 'manual page for' "$f" && fail "$m: NAME line not taken from --help"
done
grep -q "^ExecStart=/usr/sbin/mroced " "$R/usr/lib/systemd/system/mroced.service" ||
	fail "unit: ExecStart"
if command -v systemd-analyze >/dev/null; then
	sed "s|/usr/sbin/mroced|$R/usr/sbin/mroced|" \
		"$R/usr/lib/systemd/system/mroced.service" > "$T/mroced.service"
	out=$(systemd-analyze verify --man=no "$T/mroced.service" 2>&1)
	[ -z "$out" ] || fail "systemd-analyze verify: $out"
fi

# ---- a program built with pkg-config alone, shared and static
src=user/examples/example.c
# shellcheck disable=SC2046 # pkg-config's output is split into words
cc -o "$T/ex_so" "$src" $(pkg-config --cflags --libs mroce) \
	-Wl,-rpath-link,"$R/usr/lib" 2>"$T/cc.log" ||
	{ cat "$T/cc.log"; fail "example does not build against libmroce.so"; }
# shellcheck disable=SC2046
cc -o "$T/ex_a" "$src" $(pkg-config --cflags mroce) \
	-Wl,-Bstatic $(pkg-config --static --libs mroce) -Wl,-Bdynamic 2>"$T/cc.log" ||
	{ cat "$T/cc.log"; fail "example does not build against libmroce.a"; }
readelf -d "$T/ex_a" | grep -q 'NEEDED.*libmroce' && fail "static build needs libmroce.so"
export LD_LIBRARY_PATH=$R/usr/lib
ldd "$T/ex_so" | grep -q "libmroce\.so\.$MAJOR => $R/usr/lib/" ||
	fail "ex_so does not load libmroce.so from DESTDIR: $(ldd "$T/ex_so" | grep mroce)"
for b in ex_so ex_a; do
	"$T/$b" --help | grep -q '^SYNOPSIS' || fail "$b --help"
done

# A server and a client on two addresses of a loopback /24 of our own (so
# that parallel runs do not meet); the rendezvous port is random, and taken
# again if someone else holds it.
net=127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))
serve() { # serve SERVER: start it on a free port, set $port
	local _
	for _ in 1 2 3; do
		port=$((20000 + RANDOM % 30000))
		"$T/$1" --local "$net.1" -p "$port" > "$T/srv.out" 2>&1 &
		PIDS+=($!)
		for _ in $(seq 100); do
			ss -Hltn "sport = :$port" | grep -q . && return 0
			kill -0 "${PIDS[-1]}" 2>/dev/null || break
			sleep 0.1
		done
		grep -q listen "$T/srv.out" || break
	done
	cat "$T/srv.out"
	fail "$1: the server does not listen"
}
pair() { # pair SERVER CLIENT
	local port
	serve "$1"
	timeout 30 "$T/$2" --local "$net.2" -p "$port" "$net.1" > "$T/cli.out" 2>&1 ||
		{ cat "$T/cli.out" "$T/srv.out"; fail "$2 -> $1: client failed"; }
	wait "${PIDS[-1]}" || { cat "$T/srv.out"; fail "$2 -> $1: server failed"; }
	grep -q "^WRITE placed: \"hello from $net.2\"" "$T/srv.out" &&
		grep -q '^SEND received: "a message" (imm 42)' "$T/srv.out" ||
		{ cat "$T/srv.out"; fail "$2 -> $1: server output"; }
}
pair ex_so ex_a
pair ex_a ex_so
unset LD_LIBRARY_PATH

# ---- uninstall leaves no file; nor does the default PREFIX
mk uninstall DESTDIR="$R" PREFIX=/usr
left=$(cd "$R" && find . -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall: $left"
[ ! -e "$R/usr/share/doc/mroce" ] && [ ! -e "$R/usr/include/mroce" ] ||
	fail "own directories left after uninstall"
mk install DESTDIR="$T/local"
[ -e "$T/local/usr/local/lib/libmroce.so.$MAJOR" ] &&
	grep -q '^ExecStart=/usr/local/sbin/mroced ' \
		"$T/local/usr/local/lib/systemd/system/mroced.service" &&
	grep -q '^prefix=/usr/local$' "$T/local/usr/local/lib/pkgconfig/mroce.pc" ||
	fail "default PREFIX is not /usr/local"
mk uninstall DESTDIR="$T/local"
left=$(cd "$T/local" && find . -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall (default PREFIX): $left"
echo "install.sh: ok ($(wc -l < "$T/want") files, $(wc -l < "$T/api") API functions)"
