#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# python.sh — CPython 3.11 under rvpython (tracer/runtimes/python/) for
# `tests/bench/real/run.sh` (its interface: build, run MODE, check), running
# tracer/runtimes/python/bench.py: recursive calls, small methods, a float
# loop, the standard library's json, generators and the planted slow
# function `planted_slow`.  Debian's /usr/bin/python3.11 throughout, so the
# only difference between the modes is rvpython.  Run from the repository
# root.
#
#   python.sh build        build the rvpython package (build/lib/python);
#                          exit 77 without python3.11's headers
#   python.sh run MODE     MODE plain (python3.11 running bench.py with
#                          runpy, as -m rvpython does) | off (python3.11
#                          -m rvpython bench.py: the hook installed, thread
#                          not traced) | on (RV_TRACE=1) | capture (on, and a
#                          capture at exit); one line: seconds=<wall>
#                          tracepoints=<n|-> found=<yes|no|-> instrumented=-
#                          tprate=<events/s|-> cpu=<user+system s>
#   python.sh check        the small version (SCALE 0.2): the capture names
#                          planted_slow at the top of self time and counts
#                          count_me's calls as the script does; exit 0 or 1
#
# PYTHON_BENCH_SCRIPT=tracer/runtimes/python/calls.py runs the worst case
# (nothing but small Python calls) instead.
# RV_BENCH_CLOCK=cpu puts the CPU time (user + system of the interpreter,
# from getrusage) in seconds=, so that run.sh's table compares CPU time,
# steadier than wall time on a loaded machine:
#   PROGS=python ROUNDS=12 RV_BENCH_CLOCK=cpu sh tests/bench/real/run.sh
set -eu
ROOT=$(pwd)
. tests/bench/real/common.sh
PY=$(pkg-config --variable=exec_prefix python-3.11 2>/dev/null)/bin/python3.11
SCRIPT=${PYTHON_BENCH_SCRIPT:-tracer/runtimes/python/bench.py}
PKG=$BUILD/lib/python
# plain runs the script as `-m rvpython` does, through runpy.run_path, minus
# the import of rvpython: run that way, bench.py takes ~5 % less CPU than as
# `python3.11 bench.py` (its globals live in a fresh module dict), which
# would otherwise be charged to rvpython.
RUNPY='import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")'

build() {
	pkg-config --exists python-3.11 && [ -x "$PY" ] || {
		echo "python.sh: python3.11 or its headers (python3-dev) missing" >&2
		exit 77
	}
	make -s RV_INNER=1 rvpython "$RVTRACE" >/dev/null
}

# The planted function's name as rvpython gives it: FILE:LINE:NAME.
planted() {
	echo "$ROOT/$SCRIPT:$(grep -n '^def planted_slow' "$SCRIPT" | cut -d: -f1):planted_slow"
}

run() { # MODE [SCALE]
	mode=$1
	scale=${2:-1}
	on="" cap=""
	case $mode in
	plain) set -- "$PY" -c "$RUNPY" "$ROOT/$SCRIPT" "$scale" ;;
	off) set -- "$PY" -m rvpython "$ROOT/$SCRIPT" "$scale" ;;
	on)
		on=1
		set -- "$PY" -m rvpython "$ROOT/$SCRIPT" "$scale"
		;;
	capture)
		on=1
		cap=$(mktemp /tmp/rvpython.XXXXXX)
		set -- "$PY" -m rvpython "$ROOT/$SCRIPT" "$scale"
		;;
	*)
		echo "python.sh: unknown mode $mode" >&2
		exit 2
		;;
	esac
	[ -e "$PKG/rvpython/__init__.py" ] || build
	# Wall and CPU (user + system) of the interpreter alone, by a runner.
	set -- $(PYTHONPATH=$PKG RV_TRACE=$on RV_TRACE_FILE=$cap "$PY" -c '
import resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.monotonic_ns()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
t1 = time.monotonic_ns()
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.6f %.6f" % ((t1 - t0) / 1e9, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)))' "$@")
	wall=$1 cpu=$2
	fields="tracepoints=- found=- tprate=-"
	if [ -n "$cap" ]; then
		PLANTED=$(planted)
		fields=$(capture_fields "$cap" "$PLANTED")
		rm -f "$cap"
	fi
	secs=$wall
	[ "${RV_BENCH_CLOCK:-wall}" = cpu ] && secs=$cpu
	set -- $fields
	echo "seconds=$secs $1 $2 instrumented=- $3 cpu=$cpu"
}

check() {
	build
	cap=$(mktemp /tmp/rvpython.XXXXXX)
	trap 'rm -f "$cap"' EXIT
	want=$(PYTHONPATH=$PKG RV_TRACE=1 RV_TRACE_BUFFER=256m RV_TRACE_FILE=$cap "$PY" -m rvpython \
		"$ROOT/$SCRIPT" 0.2 | sed -n 's/^count_me=//p')
	plain=$("$PY" "$SCRIPT" 0.2 | sed -n 's/^count_me=//p')
	top=$("$RVTRACE" report -s self -n 1 "$cap" | sed -n '3s/.*  //p')
	calls=$("$RVTRACE" report -F ':count_me$' "$cap" | awk 'NR == 3 { print $5 }')
	bad=0
	[ "$top" = "$(planted)" ] || {
		echo "python.sh check: top of self time is '$top', not planted_slow" >&2
		bad=1
	}
	[ "$want" = "$plain" ] && [ "$calls" = "$want" ] || {
		echo "python.sh check: count_me $want under rvpython, $plain plain, $calls in the capture" >&2
		bad=1
	}
	return $bad
}

case ${1:-} in
build) build ;;
run) run "${2:?usage: python.sh run plain|off|on|capture}" ;;
check) check ;;
*)
	echo "usage: python.sh build | run MODE | check" >&2
	exit 2
	;;
esac
