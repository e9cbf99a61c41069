#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/test_man.sh — the man pages against the programs and the
# configuration files they document, in TAP (tests/run-tests.sh counts it).
#
#   test_man.sh BIN_DIR MAN_DIR VERSION PROGRAM...
#
# MAN_DIR holds the roff pages the build made from the scdoc sources
# (deploy/man.mk); PROGRAM... are the installed programs' names.  For each
# program:
#   1. it has a page, in section 1 or 8;
#   2. every option its --help prints (for rvtrace, also each command's
#      --help) is in the page, and every option the page defines (a term of
#      a definition list: OPTIONS, the commands' options) is in --help;
#   3. --version prints "PROGRAM (Rearview) VERSION" and exits 0.
# For each configuration page NAME.5, the keys it defines are exactly the
# keys of deploy/NAME.example (each of its `key = value` lines, commented
# out or not).
set -u
BIN=${1:?usage: test_man.sh BIN_DIR MAN_DIR VERSION PROGRAM...}
MAN=${2:?man directory}
VERSION=${3:?version}
shift 3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# The text is what matters here, not the sanitizers' leak reports at exit.
export ASAN_OPTIONS=detect_leaks=0
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1"
	[ -s "$T/why" ] && sed 's/^/# /' "$T/why"
}

# Options in a text: -x and --long-name not glued to a word before them.
options() { # file
	grep -oE '(^|[^A-Za-z0-9_-])--?[A-Za-z][A-Za-z0-9-]*' "$1" | sed 's/^[^-]*//' | sort -u
}
# A roff page as text, and its definition-list terms (the line before .RS).
plain() { # page
	sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\(aq/'"'"'/g' "$1"
}
terms() { # page
	plain "$1" | awk '/^\.RS/ { if (prev !~ /^\./) print prev } { prev = $0 }'
}

# The help of a program: --help, and for a program with commands (rvtrace)
# each command's --help too (the indented names under "commands:").
help_of() { # program
	"$BIN/$1" --help 2>&1
	if [ "$1" = rvtrace ]; then
		"$BIN/$1" --help 2>/dev/null |
			awk '/^commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }' |
			while read -r c; do "$BIN/$1" "$c" --help 2>&1; done
	fi
}

nprog=$#
nconf=$(ls "$MAN"/*.5 2>/dev/null | wc -l)
echo "1..$((nprog * 3 + nconf))"

for p in "$@"; do
	page=$(ls "$MAN/$p.1" "$MAN/$p.8" 2>/dev/null | head -n 1)
	: >"$T/why"
	if [ -n "$page" ]; then
		ok "$p has a man page ($(basename "$page"))"
	else
		echo "no $p.1 or $p.8 in $MAN" >"$T/why"
		notok "$p has a man page"
	fi

	: >"$T/why"
	if [ -z "$page" ]; then
		echo "no page" >"$T/why"
		notok "$p: --help and the man page name the same options"
	else
		help_of "$p" >"$T/help"
		options "$T/help" >"$T/help.opts"
		plain "$page" >"$T/page"
		options "$T/page" >"$T/page.opts"
		terms "$page" >"$T/terms"
		options "$T/terms" >"$T/terms.opts"
		comm -23 "$T/help.opts" "$T/page.opts" | sed 's/^/in --help, not in the page: /' >"$T/why"
		comm -13 "$T/help.opts" "$T/terms.opts" | sed 's/^/defined in the page, not in --help: /' >>"$T/why"
		if [ ! -s "$T/help.opts" ]; then
			echo "--help printed no option at all" >>"$T/why"
		fi
		if [ -s "$T/why" ]; then
			notok "$p: --help and the man page name the same options"
		else
			ok "$p: --help and the man page name the same options ($(wc -l <"$T/help.opts") options)"
		fi
	fi

	: >"$T/why"
	if out=$("$BIN/$p" --version 2>"$T/err") && [ "$(echo "$out" | head -n 1)" = "$p (Rearview) $VERSION" ]; then
		ok "$p --version: $p (Rearview) $VERSION"
	else
		{ echo "got: $out"; cat "$T/err"; } >"$T/why"
		notok "$p --version prints '$p (Rearview) $VERSION'"
	fi
done

# Configuration pages: their keys are the example's.
for page in "$MAN"/*.5; do
	[ -e "$page" ] || continue
	name=$(basename "$page" .5)
	example="$ROOT/deploy/$name.example"
	: >"$T/why"
	if [ ! -f "$example" ]; then
		echo "no $example to hold the page to" >"$T/why"
		notok "$name(5) documents the keys of deploy/$name.example"
		continue
	fi
	sed -n 's/^[#;]\{0,1\}\([a-z][a-z0-9_]*\) *=.*/\1/p' "$example" | sort -u >"$T/ex.keys"
	terms "$page" | grep -oE '(^|, )[a-z][a-z0-9_]* =' | sed 's/^, //; s/ =$//' | sort -u >"$T/page.keys"
	comm -23 "$T/ex.keys" "$T/page.keys" | sed 's/^/in the example, not in the page: /' >"$T/why"
	comm -13 "$T/ex.keys" "$T/page.keys" | sed 's/^/in the page, not in the example: /' >>"$T/why"
	[ -s "$T/ex.keys" ] || echo "no key found in $example" >>"$T/why"
	if [ -s "$T/why" ]; then
		notok "$name(5) documents the keys of deploy/$name.example"
	else
		ok "$name(5) documents the $(wc -l <"$T/ex.keys") keys of deploy/$name.example"
	fi
done

[ "$fails" -eq 0 ]
