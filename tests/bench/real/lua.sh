#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lua.sh — the Lua 5.4 program of `make bench-real` (issue 14; interface in
# tests/bench/real/run.sh): Debian's lua5.4 source built uninstrumented
# (plain) and as rvlua (tracer/runtimes/lua/), running tests/bench/real/lua/
# bench.lua — five Benchmarks Game programs, a counted function and the
# planted slow function `planted_slow`.  Run from the repository root.
#
#   lua.sh build          fetch the source once (build/real/src/lua), build
#                         build/real/lua/{plain/lua,rv/rvlua}; exit 77 if the
#                         source cannot be had
#   lua.sh run MODE       MODE plain | off | on | capture; prints one line
#                         seconds=<wall> tracepoints=<n|-> found=<yes|no|->
#                         instrumented=<k>/<total>
#   lua.sh rounds [N]     N (default 10) interleaved rounds of every mode; a
#                         table of medians and paired-t overheads vs plain
#                         (until tests/bench/real/run.sh covers it);
#                         LUA_BENCH_SCRIPT=… runs another script (calls.lua:
#                         nothing but calls, the worst case)
#   lua.sh check          the small version (SCALE 0.05): the capture names
#                         planted_slow at the top of self time and counts
#                         count_me's calls exactly as the script does; exit 0,
#                         1 (why on stderr) or 77
#
# tracepoints: entries + exits in the capture, scaled by wall time / span when
# the ring wrapped (the default 32 MiB ring holds ~4 M events; `check` uses
# 256 MiB so nothing of its run is overwritten).
# instrumented: distinct traced functions in the capture / the same (every
# Lua function and every C function Lua calls is traced; the VM's own C is
# not), `-` without a capture.
set -eu
B=build
W=$B/real/lua
SCRIPT=${LUA_BENCH_SCRIPT:-tests/bench/real/lua/bench.lua}
RVTRACE=$B/bin/rvtrace

build() {
	top=$(sh tracer/runtimes/lua/fetch.sh "$B/real/src/lua") || exit 77
	for f in "$B/lib/librvtrace.a" "$B/lib/librvproto.a" "$RVTRACE"; do
		if [ ! -e "$f" ]; then
			make -s RV_INNER=1 "$B/lib/librvtrace.a" "$B/lib/librvproto.a" "$RVTRACE" >/dev/null
			break
		fi
	done
	sh tracer/runtimes/lua/build.sh plain "$top" "$W/plain"
	sh tracer/runtimes/lua/build.sh rv "$top" "$W/rv" "$B"
}

# summary FILE -> "calls methods top_method span_ns"
summary() {
	"$RVTRACE" summary --top 100000 --json "$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)
top = s["top_self"]
print(sum(m["calls"] for m in top), len(top), top[0]["method"] if top else "-", s["end"] - s["start"])'
}

run() { # MODE [SCALE]
	mode=$1
	scale=${2:-1}
	cap=""
	case $mode in
	plain) bin=$W/plain/lua on="" ;;
	off) bin=$W/rv/rvlua on="" ;;
	on) bin=$W/rv/rvlua on=1 ;;
	capture) bin=$W/rv/rvlua on=1 cap=$(mktemp /tmp/rvlua.XXXXXX) ;;
	*)
		echo "lua.sh: unknown mode $mode" >&2
		exit 2
		;;
	esac
	[ -x "$bin" ] || build
	# Wall and CPU (user + system, µs resolution from getrusage) of the
	# interpreter alone, measured around it by a small runner.
	set -- $(RV_TRACE=$on RV_TRACE_FILE=$cap python3 -c '
import resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.monotonic_ns()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
t1 = time.monotonic_ns()
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
print("%d %d %.6f" % (t0, t1, cpu))' "$bin" "$SCRIPT" "$scale")
	t0=$1 t1=$2
	# `rounds` also wants CPU time, steadier than wall time on a loaded machine.
	[ -z "${LUA_SH_CPU_LOG:-}" ] || echo "$3" >>"$LUA_SH_CPU_LOG"
	secs=$(echo "$t0 $t1" | awk '{ printf "%.4f", ($2 - $1) / 1e9 }')
	if [ -z "$cap" ]; then
		echo "seconds=$secs tracepoints=- found=- instrumented=-"
		return 0
	fi
	set -- $(summary "$cap")
	rm -f "$cap"
	case $3 in *:planted_slow) found=yes ;; *) found=no ;; esac
	tp=$(echo "$1 $4 $t0 $t1" | awk '{ n = 2 * $1; w = $4 - $3; if ($2 > 0 && $2 < w) n = n * w / $2; printf "%.0f", n }')
	echo "seconds=$secs tracepoints=$tp found=$found instrumented=$2/$2"
}

check() {
	build || exit $?
	cap=$(mktemp /tmp/rvlua.XXXXXX)
	trap 'rm -f "$cap"' EXIT
	# Exact counts and the planted function's own self time: the budget
	# (on by default) would mute hot callers' callees (RV_TRACE_MUTE).
	want=$(RV_TRACE_MUTE=off RV_TRACE=1 RV_TRACE_BUFFER=256m RV_TRACE_FILE=$cap "$W/rv/rvlua" tests/bench/real/lua/bench.lua 0.05 | sed -n 's/^count_me=//p')
	plain=$("$W/plain/lua" tests/bench/real/lua/bench.lua 0.05 | sed -n 's/^count_me=//p')
	"$RVTRACE" summary --top 100000 --json "$cap" | python3 -c '
import json, re, sys
want, plain = int(sys.argv[1]), int(sys.argv[2])
s = json.load(sys.stdin)
top = s["top_self"]
bad = []
if not top or not re.fullmatch(r"@\S*bench\.lua:\d+:planted_slow", top[0]["method"]):
    bad.append("top of self time is %s, not planted_slow" % (top[0]["method"] if top else "nothing"))
calls = [m["calls"] for m in top if m["method"].endswith(":count_me")]
if want != plain:
    bad.append("count_me=%d under rvlua, %d under plain lua" % (want, plain))
if calls != [want]:
    bad.append("capture counts %s calls of count_me, the script %d" % (calls, want))
if s["dropped"]:
    bad.append("%d events dropped" % s["dropped"])
for b in bad:
    print("lua.sh check:", b, file=sys.stderr)
sys.exit(1 if bad else 0)' "$want" "$plain"
}

rounds() { # N
	build || exit $?
	log=$(mktemp)
	for r in $(seq 1 "${1:-10}"); do
		for m in plain off on capture; do
			: >"$log.cpu"
			line=$(LUA_SH_CPU_LOG=$log.cpu run "$m")
			echo "$r $m $line cpu=$(cat "$log.cpu")" >>"$log"
		done
	done
	python3 - "$log" <<'PY'
import math, re, statistics as st, sys
t975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
        10: 2.23, 11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 19: 2.09, 24: 2.06, 29: 2.05}
by, cpu, extra = {}, {}, {}
for line in open(sys.argv[1]):
    r, m, rest = line.split(" ", 2)
    kv = dict(re.findall(r"(\w+)=(\S+)", rest))
    by.setdefault(m, {})[int(r)] = float(kv["seconds"])
    cpu.setdefault(m, {})[int(r)] = float(kv["cpu"])
    extra.setdefault(m, []).append(kv)
def paired(v, base):
    d = [(v[r] - base[r]) / base[r] for r in sorted(v)]
    n = len(d)
    mean = st.mean(d)
    half = t975.get(n - 1, 2.0) * st.stdev(d) / math.sqrt(n) if n > 1 else float("nan")
    return "%7.2f%% [%+6.2f%%, %+6.2f%%]" % (100 * mean, 100 * (mean - half), 100 * (mean + half))
print("%-8s %8s %-31s %8s %-31s %10s %5s" % ("mode", "wall s", "wall overhead, paired-t 95%",
      "cpu s", "cpu overhead, paired-t 95%", "points/s", "found"))
for m in ["plain", "off", "on", "capture"]:
    tp = [float(k["tracepoints"]) / float(k["seconds"]) for k in extra[m] if k["tracepoints"] != "-"]
    found = ",".join(sorted(set(k["found"] for k in extra[m])))
    print("%-8s %8.3f %-31s %8.3f %-31s %10s %5s" % (
        m, st.median(by[m].values()), "" if m == "plain" else paired(by[m], by["plain"]),
        st.median(cpu[m].values()), "" if m == "plain" else paired(cpu[m], cpu["plain"]),
        "%.3g" % st.median(tp) if tp else "-", found))
PY
	rm -f "$log" "$log.cpu"
}

case ${1:-} in
build) build ;;
rounds) rounds "${2:-10}" ;;
run) run "${2:?usage: lua.sh run plain|off|on|capture}" ;;
check) check ;;
*)
	echo "usage: lua.sh build | run MODE | rounds [N] | check" >&2
	exit 2
	;;
esac
