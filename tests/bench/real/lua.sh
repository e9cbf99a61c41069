#!/bin/sh
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
SCRIPT=tests/bench/real/lua/bench.lua
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

now() { date +%s%N; }

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
	t0=$(now)
	RV_TRACE=$on RV_TRACE_FILE=$cap "$bin" "$SCRIPT" "$scale" >/dev/null
	t1=$(now)
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
	want=$(RV_TRACE=1 RV_TRACE_BUFFER=256m RV_TRACE_FILE=$cap "$W/rv/rvlua" "$SCRIPT" 0.05 | sed -n 's/^count_me=//p')
	plain=$("$W/plain/lua" "$SCRIPT" 0.05 | sed -n 's/^count_me=//p')
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

case ${1:-} in
build) build ;;
run) run "${2:?usage: lua.sh run plain|off|on|capture}" ;;
check) check ;;
*)
	echo "usage: lua.sh build | run MODE | check" >&2
	exit 2
	;;
esac
