#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# manpage.sh - one man page from a tool's --help, through help2man.
#
#   scripts/manpage.sh TOOL SECTION VERSION OUT
#
# Every mroce tool prints its --help as a man page in plain text: headings
# NAME, SYNOPSIS, DESCRIPTION, OPTIONS, ... at column 0, bodies indented by
# four spaces. help2man reads GNU-style help instead ("Usage:" and "or:"
# lines, "Options:", "Examples:", "*Other Section*"), so this script
# rewrites the one into the other, hands help2man a stand-in program that
# prints the rewrite, and takes the page's NAME line from the tool's. Page
# and --help thus have one source. A tool with a COMMANDS section (mrocectl)
# also gets each command's `TOOL COMMAND --help` as a section of its own.
# help2man asks the stand-in for nothing else: the version comes from
# --version-string, and --no-info (-N) drops the "see the info page" note.
set -euo pipefail

[ $# -eq 4 ] || { echo "usage: $0 TOOL SECTION VERSION OUT" >&2; exit 2; }
tool=$1 section=$2 version=$3 out=$4
name=$(basename "$tool")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Rewrites one --help text (stdin). MODE=main: the tool's own text, in
# help2man's sections. MODE=sub: a command's text, as one custom section
# whose headings become indented sub-sections.
convert() {
	awk -v tool="$1" -v mode="$2" -v namefile="$tmp/name" '
	/^[A-Z][A-Z ]*[A-Z]$/ { sect = $0; order[++n] = sect; next }
	{ body[sect] = body[sect] $0 "\n" }

	# a body that lines up columns (two spaces inside a line) keeps its
	# indentation, so that help2man makes a tagged list of it; prose
	# loses it and becomes plain paragraphs
	function tabular(s) { return s ~ /(^|\n)    [^ \n][^\n]*[^ \n]  +[^ \n]/ }
	function dedent(s,   k, nl, lines, r) {
		nl = split(s, lines, "\n"); r = ""
		for (k = 1; k < nl; k++) {
			sub(/^    /, "", lines[k])
			r = r lines[k] "\n"
		}
		return r
	}

	function emit_synopsis(s,   k, nl, lines, usage, prose) {
		nl = split(s, lines, "\n")
		usage = ""; prose = ""
		for (k = 1; k <= nl; k++) {
			if (index(lines[k], "    " tool) == 1) {
				sub(/^    /, "", lines[k])
				usage = usage (usage == "" ? "Usage: " : "\n  or: ") lines[k]
			} else if (lines[k] ~ /^     +[^ ]/ && prose == "" && usage != "") {
				sub(/^ +/, " ", lines[k])
				usage = usage lines[k]
			} else {
				prose = prose lines[k] "\n"
			}
		}
		if (usage != "")
			print usage "\n"
		printf "%s", dedent(prose)
	}

	function emit_main(   i, s, b, nl, lines, k) {
		for (i = 1; i <= n; i++) {
			s = order[i]; b = body[s]
			if (s == "NAME") {
				sub(/^[ \n]+/, "", b); sub(/\n.*/, "", b)
				sub("^" tool " +- +", "", b)
				print b > namefile
			} else if (s == "SYNOPSIS") {
				emit_synopsis(b)
			} else if (s == "DESCRIPTION") {
				printf "%s", tabular(b) ? b : dedent(b)
			} else if (s == "OPTIONS") {
				printf "Options:\n%s", b
			} else if (s ~ /^EXAMPLES?$/) {
				# "$ " makes help2man print each command on
				# its own line, in a fixed-width font
				gsub(/(^|\n)    /, "&$ ", b)
				printf "Examples:\n%s", b
			} else {
				printf "*%s*\n%s", s, tabular(b) ? b : dedent(b)
			}
			print ""
		}
	}

	function emit_sub(   i, s, b) {
		for (i = 1; i <= n; i++) {
			s = order[i]; b = body[s]
			if (s == "NAME") {
				sub(/^[ \n]+/, "", b); sub(/\n.*/, "", b)
				sub("^" tool " +- +", "", b)
				print "*" tool "*\n" b "\n"
				continue
			}
			# "Options:" alone would switch help2man to OPTIONS
			s = toupper(substr(s, 1, 1)) tolower(substr(s, 2))
			if (s == "Options")
				s = "Command options"
			printf "%s:\n%s\n", s, b
		}
	}

	END { if (mode == "main") emit_main(); else emit_sub() }'
}

help=$("$tool" --help 2>&1) || true
[ -n "$help" ] || { echo "$name --help printed nothing" >&2; exit 1; }
printf '%s\n' "$help" | convert "$name" main > "$tmp/help"

# COMMANDS lists "  word  args  what": each word but help has its own --help
cmds=$(printf '%s\n' "$help" |
	awk '/^[A-Z]/ { in_cmds = ($0 == "COMMANDS") ; next }
	     in_cmds && /^    [a-z]/ && $1 != "help" { print $1 }')
for c in $cmds; do
	sub=$("$tool" "$c" --help 2>&1) || true
	case $sub in
	NAME*) printf '%s\n' "$sub" | convert "$name $c" sub >> "$tmp/help" ;;
	esac
done

mkdir -p "$tmp/bin"
printf '#!/bin/sh\ncat "%s"\n' "$tmp/help" > "$tmp/bin/$name"
chmod +x "$tmp/bin/$name"
desc=$(cat "$tmp/name" 2>/dev/null || echo "a tool of mroce")
help2man --no-info --no-discard-stderr --section="$section" \
	--version-string="$version" --name="$desc" \
	--source="mroce $version" --output="$out.tmp" "$tmp/bin/$name"
mv "$out.tmp" "$out"
