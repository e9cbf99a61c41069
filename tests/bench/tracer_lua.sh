#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tracer_lua.sh — librvtrace macro-benchmark (Hubble §8.3 in spirit): the Lua
# 5.4 interpreter from Debian's sources, built uninstrumented, in call mode
# and in inline mode (gcc -O2; also inline mode with the whole C trace point
# inlined, as before the x86-64 stubs, and both modes with the tiniest hot
# helpers excluded from instrumentation), runs a workload RUNS times per build,
# interleaved round by round; the instrumented builds run with tracing off and
# with tracing on (RV_TRACE=1: the main thread traced from start into a 32 MiB
# ring); clang builds instrument after inlining.  Prints mean wall time per
# build and each build's overhead against the same compiler's uninstrumented
# build with a paired t-test.
#
#   tests/bench/tracer_lua.sh [BUILD_DIR]     (default build; RUNS=5)
#   CONFIGS="plain call-off inline-off" RUNS=15 tests/bench/tracer_lua.sh
#                                             (a subset; plain and/or
#                                             clang-plain must be in it)
#
# Needs the network once: it adds a deb-src entry for Debian bookworm (root
# only) and runs `apt-get source lua5.4` into $BUILD_DIR/bench/lua.
set -eu
BUILD=${1:-build}
RUNS=${RUNS:-5}
ROOT=$(pwd)
WORK="$BUILD/bench/lua"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

if ! ls -d "$WORK"/lua5.4-*/src >/dev/null 2>&1; then
	if ! grep -rqs 'deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "tracer_lua: need a deb-src entry (run as root once)" >&2
			exit 0
		fi
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			>/etc/apt/sources.list.d/rearview-src.sources
		apt-get update -qq
	fi
	(cd "$WORK" && apt-get source -qq lua5.4 >/dev/null 2>&1) || {
		echo "tracer_lua: apt-get source lua5.4 failed; skipped" >&2
		exit 0
	}
fi
SRC=$(ls -d "$WORK"/lua5.4-*/src | head -n 1)
# Debian's module-path patch expects this generated header (debian/rules).
[ -f "$SRC/lua5.4-deb-multiarch.h" ] ||
	printf '#define DEB_HOST_MULTIARCH "%s"\n' "$(gcc -dumpmachine)" >"$SRC/lua5.4-deb-multiarch.h"
CORE=$(ls "$SRC"/*.c | grep -v '/luac\.c$')
LIBS="$ROOT/$BUILD/lib/librvtrace.a $ROOT/$BUILD/lib/librvproto.a \
	$(pkg-config --libs libprotobuf-c libelf) -lpthread"

build() { # name, compiler, extra cflags, extra libs (rebuilt when the tracer changes)
	[ "$WORK/lua-$1" -nt "$ROOT/$BUILD/lib/librvtrace.a" ] &&
		[ "$WORK/lua-$1" -nt "$ROOT/tracer/include/rearview/trace-inline.h" ] && return 0
	# shellcheck disable=SC2086
	$2 -std=gnu99 -O2 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX $3 -o "$WORK/lua-$1" $CORE -lm -ldl $4
}
build plain gcc "" ""
build call gcc "-finstrument-functions" "$LIBS"
build inline gcc "-finstrument-functions -include $ROOT/tracer/include/rearview/trace-inline.h \
	-I$ROOT/tracer/include" "$LIBS"
# Before the x86-64 inline stubs: the whole C trace point inlined.
build inline-c gcc "-finstrument-functions -DRVT_INLINE_PORTABLE \
	-include $ROOT/tracer/include/rearview/trace-inline.h -I$ROOT/tracer/include" "$LIBS"
# The interpreter's tiniest hot helpers left uninstrumented (by substring of
# the name; chosen from call counts of RV_TRACE captures: index2value alone
# is 6 million calls in the sort).  Lua-level calls (luaD_precall) and the
# library functions stay traced.
EXCL=index2value,prepCallInfo,l_strcmp,lessthanothers,luaV_lessthan,lua_type,lua_geti,lua_seti
EXCL=$EXCL,set2,lua_settop,sort_comp,lua_compare,singlematch,match_class,classend,luaH_get
EXCL=$EXCL,luaS_hash,internshrstr,reprepstate,lua_touserdata,luaL_checkstack,luaD_poscall
build call-x gcc "-finstrument-functions -finstrument-functions-exclude-function-list=$EXCL" "$LIBS"
build inline-x gcc "-finstrument-functions -finstrument-functions-exclude-function-list=$EXCL \
	-include $ROOT/tracer/include/rearview/trace-inline.h -I$ROOT/tracer/include" "$LIBS"
# clang instruments after inlining: only functions that remain calls.
build clang-plain clang "" ""
build clang-call clang "-finstrument-functions-after-inlining" "$LIBS"

cat >"$WORK/bench.lua" <<'LUA'
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {}
for i = 1, 200000 do t[i] = tostring(i * 7 % 1000) .. "x" end
table.sort(t)
local s = 0
for i = 1, #t, 3 do s = s + #t[i] end
local words = {}
for w in string.gmatch(string.rep("the quick brown fox jumps ", 20000), "%a+") do
	words[w] = (words[w] or 0) + 1
end
print(fib(27) + s + words.fox)
LUA

now() { date +%s%N; }
run() { # config -> ns
	case $1 in
	plain) b=plain on="" ;;
	call-off) b=call on="" ;;
	call-on) b=call on=1 ;;
	inline-off) b=inline on="" ;;
	inline-on) b=inline on=1 ;;
	inline-c-off) b=inline-c on="" ;;
	inline-c-on) b=inline-c on=1 ;;
	call-x-off) b=call-x on="" ;;
	call-x-on) b=call-x on=1 ;;
	inline-x-off) b=inline-x on="" ;;
	inline-x-on) b=inline-x on=1 ;;
	clang-plain) b=clang-plain on="" ;;
	clang-call-off) b=clang-call on="" ;;
	clang-call-on) b=clang-call on=1 ;;
	esac
	t0=$(now)
	RV_TRACE=$on "$WORK/lua-$b" "$WORK/bench.lua" >/dev/null
	t1=$(now)
	echo $((t1 - t0))
}
CONFIGS=${CONFIGS:-"plain call-off call-on inline-off inline-on inline-c-off inline-c-on call-x-off \
	call-x-on inline-x-off inline-x-on clang-plain clang-call-off clang-call-on"}
: >"$WORK/times.txt"
for r in $(seq 1 "$RUNS"); do
	for c in $CONFIGS; do
		echo "$r $c $(run "$c")" >>"$WORK/times.txt"
	done
done
echo "Lua 5.4 ($(basename "$(dirname "$SRC")")), $RUNS interleaved runs, $(date -u '+%Y-%m-%d %H:%M UTC')"
python3 - "$WORK/times.txt" <<'PY'
import sys, math, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, c, ns in rows:
    by.setdefault(c, {})[int(r)] = int(ns) / 1e6

# two-sided 95% critical t values by degrees of freedom
tcrit = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
         10: 2.23, 14: 2.14, 19: 2.09, 29: 2.05}
print("%-15s %10s %10s %9s %8s %s" % ("build", "mean ms", "median ms", "overhead", "t", "95%"))
for c in ["plain", "call-off", "call-on", "inline-off", "inline-on", "inline-c-off",
          "inline-c-on", "call-x-off", "call-x-on", "inline-x-off", "inline-x-on",
          "clang-plain", "clang-call-off", "clang-call-on"]:
    if c not in by:
        continue
    v = by[c]
    base = by["clang-plain" if c.startswith("clang") else "plain"]
    rs = sorted(v)
    mean = st.mean(v.values())
    if c.endswith("plain"):
        print("%-15s %10.1f %10.1f" % (c, mean, st.median(v.values())))
        continue
    d = [v[r] - base[r] for r in rs]
    n = len(d)
    sd = st.stdev(d) if n > 1 else 0.0
    t = st.mean(d) / (sd / math.sqrt(n)) if sd > 0 else float("inf")
    crit = tcrit.get(n - 1, 2.0)
    print("%-15s %10.1f %10.1f %8.2f%% %8.2f %s" % (
        c, mean, st.median(v.values()), 100 * st.mean(d) / st.mean(base.values()), t,
        "significant" if abs(t) > crit else "not significant"))
PY
