#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/gzip.sh — gzip from Debian's source (gzip 1.12, autotools)
# as a real program nobody tuned for Rearview: no never-list, no rvcc flag
# beyond its defaults.  The workload compresses the 20 MiB corpus of
# common.sh at level 6 and decompresses it again.  Its hottest function,
# confirmed by perf on the uninstrumented build (`perf record -e cpu-clock
# gzip -6`: longest_match 44 % of the samples, deflate 27 %, updcrc 9 %,
# ct_tally 6 %), is what a capture must name at the top of self time;
# longest_match alone is called millions of times a second.
#
#   tests/bench/real/gzip.sh build          (quiet; exit 77 without the source)
#   tests/bench/real/gzip.sh run MODE       plain | off | on | capture; one line
#                                           (common.sh run_line)
# Run from the repository root.  Settings: see common.sh; CORPUS_MB (default 20).
set -eu
ROOT=$(pwd)
. "$ROOT/tests/bench/real/common.sh"
PLANTED=longest_match
W="$REAL/gzip"

build_one() { # name, CC
	out="$W/$1/gzip/gzip"
	up_to_date "$1" "$2" "$out" "$ROOT/tests/bench/real/gzip.sh" "$ROOT/tests/bench/real/common.sh" \
		$([ "$1" != plain ] && rv_deps) && return 0
	configure_build gzip "$2" "$SRC" "$W/$1/gzip" || return 1
	echo "$2" >"$out.cc"
}

# run_once MODE CORPUS TMP: compress + decompress; prints the fields (the
# capture's: compression's).
run_once() {
	mode=$1
	bin="$W/$RV_VARIANT/gzip/gzip"
	[ "$mode" = plain ] && bin="$W/plain/gzip/gzip"
	env_on=$(mode_env "$mode" "$3")
	timed "$3" env $env_on "$bin" -6 -c "$2" >"$3/x.gz"
	[ "$mode" = capture ] && env_on="RV_TRACE=1 RV_TRACE_FILE=$3/d.rvt"
	timed "$3" env $env_on "$bin" -d -c "$3/x.gz" >"$3/x.out"
	cmp -s "$2" "$3/x.out" || {
		echo "gzip.sh: round trip differs" >&2
		exit 1
	}
	run_line "$mode" "$bin" "$3"
}

case ${1:-} in
build | run) ;;
*)
	echo "usage: $0 build | run MODE" >&2
	exit 2
	;;
esac
SRC=$(fetch_source gzip gzip)
mkdir -p "$W"
build_one plain "$RV_CC"
build_one "$RV_VARIANT" "$(rv_cc)"
[ "$1" = build ] && exit 0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
run_once "${2:?run MODE}" "$(corpus "$W" "${CORPUS_MB:-20}")" "$T"
