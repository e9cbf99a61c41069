#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/cmark.sh — cmark from Debian's source (CommonMark 0.30.2,
# CMake) as a real program nobody tuned for Rearview: no never-list, no rvcc
# flag beyond its defaults.  The workload renders its own spec (test/spec.txt,
# 200 KB of Markdown) repeated COPIES (default 40) times as HTML: a parser of
# many small functions called millions of times a second.  Its hottest
# function, confirmed by perf, is what a capture must name at the top of
# self time: cmark_parse_inlines, with each perf sample of the rvcc build
# (tracing off) given to the innermost frame a capture would show, so that
# malloc's and the kernel's time (half of the samples) counts for their
# caller as a capture's self time does (`RV_VARIANT=late python3
# tests/bench/real/estimate.py 3 cmark`, a build with rvcc's default late
# mode: 23.8 % on the AMD EPYC VM on 2026-12-02, houdini_escape_html0 next
# at 16.6 %).  gcc inlines parse_inline into it, as in the plain build; in
# rvcc's inline mode (-finstrument-functions keeps parse_inline out of
# line) parse_inline is the top (29.9–37 %: CMARK_HOT=parse_inline).  By
# the program's own instructions alone nothing stands out (perf on the
# plain build: the top five at 1.6–2.8 % of the samples each), and
# S_parser_feed, this file's target until 2026-12-02, was fifth or sixth
# of them.
#
#   tests/bench/real/cmark.sh build          (quiet; exit 77 without the source)
#   tests/bench/real/cmark.sh run MODE       plain | off | on | capture; one line
#                                            (common.sh run_line)
# Run from the repository root.  Settings: see common.sh; COPIES.
set -eu
ROOT=$(pwd)
. "$ROOT/tests/bench/real/common.sh"
PLANTED=${CMARK_HOT:-cmark_parse_inlines}
W="$REAL/cmark"

build_one() { # name, CC
	out="$W/$1/build/src/cmark"
	up_to_date "$1" "$2" "$out" "$ROOT/tests/bench/real/cmark.sh" \
		$([ "$1" != plain ] && rv_deps) && return 0
	rm -rf "$W/$1" && mkdir -p "$W/$1/build"
	(cd "$W/$1/build" && CC="$2" cmake -DCMAKE_BUILD_TYPE=Release -DCMARK_TESTS=OFF \
		-DCMARK_SHARED=OFF "$SRC" >"$W/$1.log" 2>&1 && make -j2 cmark_exe >>"$W/$1.log" 2>&1) || {
		echo "cmark: build failed:" >&2
		tail -n 30 "$W/$1.log" >&2
		return 1
	}
	echo "$2" >"$out.cc"
}

case ${1:-} in
build | run) ;;
*)
	echo "usage: $0 build | run MODE" >&2
	exit 2
	;;
esac
SRC=$(fetch_source cmark cmark)
mkdir -p "$W"
build_one plain "$RV_CC"
build_one "$RV_VARIANT" "$(rv_cc)"
[ "$1" = build ] && exit 0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mode=${2:?run MODE}
bin="$W/$RV_VARIANT/build/src/cmark"
[ "$mode" = plain ] && bin="$W/plain/build/src/cmark"
in="$W/spec-${COPIES:-40}.md"
[ -s "$in" ] || {
	for i in $(seq "${COPIES:-40}"); do cat "$SRC/test/spec.txt"; done >"$in.tmp"
	mv "$in.tmp" "$in"
}
timed "$T" env $(mode_env "$mode" "$T") "$bin" "$in" >"$T/out.html"
grep -q '<h1>Introduction</h1>' "$T/out.html" || {
	echo "cmark.sh: unexpected output" >&2
	exit 1
}
run_line "$mode" "$bin" "$T"
