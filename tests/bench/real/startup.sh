#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/startup.sh — the fixed cost of a process built with rvcc:
# `int main(void) { return 0; }` built plain and through rvcc (threshold 0,
# so that main is traced and a capture has something to name), run RUNS
# times (default 200) per measurement.  What it measures is everything
# librvtrace adds to a process's life: loading it and the libraries it
# needs, its constructors, and with tracing on the ring, the budget thread
# and its calibration; in capture mode also the capture at exit.  Divide a
# row's CPU seconds by RUNS for the cost per process.
#
#   tests/bench/real/startup.sh build        (quiet)
#   tests/bench/real/startup.sh run MODE     plain | off | on | capture; one line
#                                            (common.sh run_line)
# Run from the repository root.  Settings: see common.sh; RUNS.
set -eu
ROOT=$(pwd)
. "$ROOT/tests/bench/real/common.sh"
PLANTED=main
W="$REAL/startup"

build_one() { # name, CC
	out="$W/$1/empty"
	up_to_date "$1" "$2" "$out" "$ROOT/tests/bench/real/startup.sh" \
		$([ "$1" != plain ] && rv_deps) && return 0
	mkdir -p "$W/$1"
	echo 'int main(void) { return 0; }' >"$W/empty.c"
	$2 -O2 -o "$out" "$W/empty.c" || return 1
	echo "$2" >"$out.cc"
}

want_cmd "${1:-}" "$0"
mkdir -p "$W"
build_one plain "$RV_CC"
RV_FLAGS="--rv-threshold=0${RV_FLAGS:+ $RV_FLAGS}"
build_one "$RV_VARIANT" "$(rv_cc)"
[ "$1" = build ] && exit 0
[ "$1" = check ] && {
	echo "startup.sh: no check" >&2
	exit 77
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mode=${2:?run MODE}
bin="$W/$RV_VARIANT/empty"
[ "$mode" = plain ] && bin="$W/plain/empty"
timed "$T" env $(mode_env "$mode" "$T") sh -c \
	'i=0; while [ $i -lt "$1" ]; do "$2" || exit 1; i=$((i + 1)); done' sh "${RUNS:-200}" "$bin"
run_line "$mode" "$bin" "$T"
