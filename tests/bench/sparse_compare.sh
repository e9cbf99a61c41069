#!/bin/sh
# tests/bench/sparse_compare.sh — sparse time (issue 14, lever 5) against
# exact time on the real programs of tests/bench/real/ (their cached builds).
#
#   tests/bench/sparse_compare.sh [K]     (K default 8; run from the repo root)
#
# 1. Wall clock: ROUNDS (default 10) interleaved rounds, per program, of
#    `<prog>.sh run on` with exact time and with RV_TRACE_TIME=sparse:K (the
#    order alternates by round); the mean of the paired differences with
#    its paired-t 95 % interval, relative to the exact mean.
# 2. Accuracy, the issue's bar: the same deterministic workload captured
#    twice in exact mode and once in sparse mode, each whole (a ring large
#    enough never to wrap: RV_TRACE_BUFFER, default 1g), then for each of
#    the first exact capture's top-20 functions by self time the relative
#    deviation of the other two captures' self time.  Printed: the worst
#    |deviation| of sparse against exact (the bar: within ±5 %), as the
#    floor two exact runs already differ by, of exact against exact, and
#    the interpolation error alone: sparse time simulated on the first exact
#    capture (tests/bench/sparse_sim.py), the same execution decoded twice.
# PROGS (default "zstd sqlite3 lua") selects programs.  Nothing is asserted:
# this is a measurement (tracer/BENCHMARKS.md).
set -eu
K=${1:-8}
ROUNDS=${ROUNDS:-10}
PROGS=${PROGS:-zstd sqlite3 lua}
BUF=${RV_TRACE_BUFFER:-1g}
D=tests/bench/real
RVTRACE=${BUILD:-build}/bin/rvtrace
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

have=""
for p in $PROGS; do
	if sh "$D/$p.sh" build >"$T/build.log" 2>&1; then
		have="$have $p"
	else
		echo "sparse_compare: $p skipped (build failed or no source)" >&2
	fi
done

# secs PROG TIME: one `run on`, the seconds it printed.
secs() {
	RV_TRACE_TIME=$2 sh "$D/$1.sh" run on | sed -n 's/^seconds=\([0-9.]*\).*/\1/p'
}

# capture PROG TIME OUT: the whole workload traced into OUT (the largest
# capture of the run: zstd's compression, its first process).
capture() {
	rm -f "$T"/cap-*.rvt
	if [ "$1" = lua ]; then
		RV_TRACE=1 RV_TRACE_TIME=$2 RV_TRACE_BUFFER=$BUF RV_TRACE_FILE="$T/cap-%p.rvt" \
			"${BUILD:-build}/real/lua/rv/rvlua" "$D/lua/bench.lua" 1 >/dev/null
	else
		RV_TRACE_TIME=$2 RV_TRACE_BUFFER=$BUF RV_TRACE_FILE="$T/cap-%p.rvt" \
			sh "$D/$1.sh" run on >/dev/null
	fi
	mv "$(ls -S "$T"/cap-*.rvt | head -n 1)" "$3"
}

echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); $(uname -sr)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); K=$K; rounds: $ROUNDS; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for p in $have; do
	r=1
	while [ "$r" -le "$ROUNDS" ]; do
		if [ $((r % 2)) -eq 1 ]; then
			e=$(secs "$p" exact)
			s=$(secs "$p" "sparse:$K")
		else
			s=$(secs "$p" "sparse:$K")
			e=$(secs "$p" exact)
		fi
		echo "$e $s" >>"$T/$p.wall"
		r=$((r + 1))
	done
	capture "$p" exact "$T/$p.e1.rvt"
	capture "$p" exact "$T/$p.e2.rvt"
	capture "$p" "sparse:$K" "$T/$p.s.rvt"
	python3 tests/bench/sparse_sim.py "$T/$p.e1.rvt" "$K" "$T/$p.sim.rvt" >/dev/null
	for c in e1 e2 s sim; do
		"$RVTRACE" summary --top 1000000 --json "$T/$p.$c.rvt" >"$T/$p.$c.json"
	done
	"$RVTRACE" info "$T/$p.s.rvt" | sed -n 's/^times: *//p' | sed "s/^/$p sparse capture: /"
done

python3 - "$T" "$have" <<'PY'
import json, math, statistics, sys
tdir, progs = sys.argv[1], sys.argv[2].split()
tq = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
      2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064]
print("%-8s %10s %10s %24s %13s %12s %12s  %s" % ("program", "exact s", "sparse s",
      "sparse - exact (95% CI)", "worst top-20", "exact floor", "simulated", "worst function (simulated)"))
for p in progs:
    pairs = [tuple(map(float, l.split())) for l in open("%s/%s.wall" % (tdir, p))]
    e = [a for a, _ in pairs]
    d = [b - a for a, b in pairs]
    n, me = len(d), statistics.mean(e)
    md = statistics.mean(d)
    half = (tq[n - 2] if n - 2 < len(tq) else 1.96) * statistics.stdev(d) / math.sqrt(n) if n > 1 else float("nan")
    load = lambda c: {m["method"]: m["self"] for m in json.load(open("%s/%s.%s.json" % (tdir, p, c)))["top_self"]}
    e1, e2, s, sim = load("e1"), load("e2"), load("s"), load("sim")
    top = sorted(e1, key=lambda m: -e1[m])[:20]
    dev = lambda other, m: (other.get(m, 0) - e1[m]) / e1[m] if e1[m] else 0.0
    worst = lambda other: max(abs(dev(other, m)) for m in top)
    wsim = max(top, key=lambda m: abs(dev(sim, m)))
    print("%-8s %10.4f %10.4f %+8.1f%% [%+6.1f, %+6.1f] %12.1f%% %11.1f%% %11.1f%%  %s" % (
        p, statistics.median(e), statistics.median([b for _, b in pairs]),
        100 * md / me, 100 * (md - half) / me, 100 * (md + half) / me,
        100 * worst(s), 100 * worst(e2), 100 * worst(sim), wsim))
    for m in top:
        print("    %-44s exact %11d ns: exact2 %+7.1f%%  sparse %+7.1f%%  simulated %+7.1f%%" % (
            m[:44], e1[m], 100 * dev(e2, m), 100 * dev(s, m), 100 * dev(sim, m)))
PY
