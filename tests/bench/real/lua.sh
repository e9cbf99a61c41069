#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lua.sh — the Lua 5.4 program of `make bench-real` (interface in
# tests/bench/real/run.sh): Debian's lua5.4 source built uninstrumented
# (plain) and as rvlua (tracer/runtimes/lua/), running tests/bench/real/lua/
# bench.lua — five Benchmarks Game programs, a counted function and the
# planted slow function `planted_slow`.  Run from the repository root.
#
#   lua.sh build          fetch the source once (build/real/src/lua), build
#                         build/real/lua/{plain/lua,rv/rvlua}; exit 77 if the
#                         source cannot be had
#   lua.sh run MODE       MODE plain | off | on | capture; prints one line
#                         (common.sh run_line: wall, cpu, the capture's
#                         fields, instrumented = distinct traced functions in
#                         the capture / the same: every Lua function and every
#                         C function Lua calls is traced, the VM's own C not);
#                         LUA_BENCH_SCRIPT=… runs another script (calls.lua:
#                         nothing but calls, the worst case)
#   lua.sh check          the small version (SCALE 0.05): the capture names
#                         planted_slow at the top of self time and counts
#                         count_me's calls exactly as the script does; exit 0,
#                         1 (why on stderr) or 77
set -eu
ROOT=$(pwd)
. "$ROOT/tests/bench/real/common.sh"
B=$BUILD
W=$B/real/lua
SCRIPT=${LUA_BENCH_SCRIPT:-tests/bench/real/lua/bench.lua}
PLANTED="@$SCRIPT:$(grep -n '^local function planted_slow' "$SCRIPT" | cut -d: -f1):planted_slow"

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

run() { # MODE
	mode=$1
	bin=$W/rv/rvlua
	[ "$mode" = plain ] && bin=$W/plain/lua
	[ -x "$bin" ] || build
	T=$(mktemp -d)
	env $(mode_env "$mode" "$T") "$CPURUN" "$T/cost" "$bin" "$SCRIPT" >/dev/null
	line=$(run_line "$mode" "$bin" "$T")
	if [ "$mode" = capture ]; then
		n=$("$RVTRACE" summary --top 100000 "$T/c.rvt" | awk '/^ *calls/ { on = 1; next } on && NF == 4 { n++ } END { print n + 0 }')
		line=$(echo "$line" | sed "s|instrumented=[^ ]*|instrumented=$n/$n|")
	else
		line=$(echo "$line" | sed "s|instrumented=[^ ]*|instrumented=-|")
	fi
	rm -rf "$T"
	echo "$line"
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

case ${1:-} in
build) build ;;
run) run "${2:?usage: lua.sh run plain|off|on|capture}" ;;
check) check ;;
*)
	echo "usage: lua.sh build | run MODE | check" >&2
	exit 2
	;;
esac
