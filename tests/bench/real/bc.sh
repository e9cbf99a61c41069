#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/bc.sh — GNU bc from Debian's source (bc 1.07.1, autotools)
# as a real program nobody tuned for Rearview: no never-list, no rvcc flag
# beyond its defaults.  The workload computes pi to SCALE (default 1200)
# digits with the math library (`4*a(1)`): arbitrary-precision arithmetic,
# millions of calls a second of small number routines.  Its hottest
# function, confirmed by perf on the uninstrumented build, is what a capture
# must name at the top of self time: _bc_rec_mul (`perf record -e cpu-clock
# bc -lq`, 2026-12-02: 44.9 % of the samples, _bc_shift_addsub.isra.0 31.6 %,
# _bc_do_sub 8.0 %; the same on the build in rvcc's default late mode, which
# inlines as gcc alone does: 42.3 / 31.1 / 8.7).  Until 2026-12-02 the
# target was _bc_shift_addsub, from a perf run that gave it 45 % and
# _bc_rec_mul 26 %, which today's plain build does not reproduce.
#
#   tests/bench/real/bc.sh build          (quiet; exit 77 without the source)
#   tests/bench/real/bc.sh run MODE       plain | off | on | capture; one line
#                                         (common.sh run_line)
# Run from the repository root.  Settings: see common.sh; SCALE.
set -eu
ROOT=$(pwd)
. "$ROOT/tests/bench/real/common.sh"
PLANTED=_bc_rec_mul
W="$REAL/bc"

build_one() { # name, CC
	out="$W/$1/bc/bc/bc"
	up_to_date "$1" "$2" "$out" "$ROOT/tests/bench/real/bc.sh" "$ROOT/tests/bench/real/common.sh" \
		$([ "$1" != plain ] && rv_deps) && return 0
	configure_build bc "$2" "$SRC" "$W/$1/bc" || return 1
	echo "$2" >"$out.cc"
}

case ${1:-} in
build | run) ;;
*)
	echo "usage: $0 build | run MODE" >&2
	exit 2
	;;
esac
SRC=$(fetch_source bc bc)
mkdir -p "$W"
build_one plain "$RV_CC"
build_one "$RV_VARIANT" "$(rv_cc)"
[ "$1" = build ] && exit 0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mode=${2:?run MODE}
bin="$W/$RV_VARIANT/bc/bc/bc"
[ "$mode" = plain ] && bin="$W/plain/bc/bc/bc"
printf 'scale=%d\n4*a(1)\nquit\n' "${SCALE:-1200}" >"$T/pi.bc"
timed "$T" env $(mode_env "$mode" "$T") "$bin" -lq "$T/pi.bc" >"$T/out"
grep -q '^3\.14159265358979323846' "$T/out" || {
	echo "bc.sh: wrong pi" >&2
	exit 1
}
run_line "$mode" "$bin" "$T"
