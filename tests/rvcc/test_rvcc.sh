#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/rvcc/test_rvcc.sh — rvcc, the compiler wrapper, in TAP (counted by
# tests/run-tests.sh like a cmocka binary).
#   test_rvcc.sh BIN_DIR [SANFLAGS]   (the build's bin/: rvcc and rvtrace)
# A sanitizer flavour skips every case visibly: its librvtrace needs the
# sanitizer runtime in the programs rvcc builds.
# Besides rvcc's options (threshold, never-list, plugins), it checks that a
# build through rvcc answers as the compiler alone does: a source's own
# _GNU_SOURCE, dialect and warning probes (exit status and stderr, as
# configure and CMake read them), the exported symbols; the header clean
# under strict warnings by itself; no RUNPATH unless asked; options before
# the compiler; an instrumented library in an uninstrumented program.
set -u
B=${1:?usage: test_rvcc.sh BIN_DIR [SANFLAGS]}
N=23
if [ -n "${2:-}" ]; then
	echo "1..$N"
	i=0
	while [ $i -lt $N ]; do
		i=$((i + 1))
		echo "ok $i # SKIP sanitizer flavour"
	done
	exit 0
fi
RVCC="$B/rvcc"
LIBDIR=$(cd "$B/../lib" && pwd)
INLINE_H=$(cd "$(dirname "$0")/../../tracer/include/rearview" && pwd)/trace-inline.h
# The build tree's programs find librvtrace through a RUNPATH, asked for
# explicitly (rvcc adds none by default); test_rvcc_no_runpath unsets it.
export RVCC_RPATH=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
check() { # name, command...
	name=$1
	shift
	n=$((n + 1))
	if "$@" >"$T/out" 2>&1; then
		echo "ok $n - $name"
	else
		fails=$((fails + 1))
		echo "not ok $n - $name"
		sed 's/^/# /' "$T/out"
	fi
}
skip() { # name, reason
	n=$((n + 1))
	echo "ok $n # SKIP $1: $2"
}
echo "1..$N"

cat >"$T/app.c" <<'C'
static int small_helper(int x) { return x + 1; }
__attribute__((noinline)) int tiny_leaf(int x);
__attribute__((noinline)) int tiny_leaf(int x) { return x * 3 + 1; }
int looper(int n);
int looper(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * n; return s; }
__attribute__((noinline)) int rvcc_busy(int n);
__attribute__((noinline)) int rvcc_busy(int n)
{
	volatile unsigned h = 1;
	for (int i = 0; i < n; i++)
		h = h * 31 + (unsigned)small_helper(i);
	return (int)h;
}
int main(void) { return rvcc_busy(1000) == 7 && looper(3) == tiny_leaf(0); }
C

probe_same() { # configure's probes pass through unchanged
	[ "$("$RVCC" gcc --version)" = "$(gcc --version)" ] &&
		[ "$("$RVCC" gcc -dumpmachine)" = "$(gcc -dumpmachine)" ] &&
		[ "$(echo 'int x = __LINE__;' | "$RVCC" gcc -E -P -x c -)" = \
			"$(echo 'int x = __LINE__;' | gcc -E -P -x c -)" ]
}
check "test_rvcc_probes_pass_through_unchanged" probe_same

build_traced() { # threshold 20: small_helper is left out (inlined copies too), looper has
	# a loop, rvcc_busy is traced
	echo "-O2 -c $T/app.c -o $T/app.o" >"$T/rsp" &&
		"$RVCC" gcc --rv-threshold=20 @"$T/rsp" &&
		"$RVCC" gcc -o "$T/app" "$T/app.o" &&
		RV_TRACE=1 RV_TRACE_FILE="$T/app.rvt" "$T/app" &&
		"$B/rvtrace" summary "$T/app.rvt" >"$T/sum" && grep -q ' rvcc_busy$' "$T/sum" &&
		! grep -q ' small_helper$' "$T/sum"
}
check "test_rvcc_response_file_threshold_traces_only_big_functions" build_traced

untraced_named() { # (small_helper is inlined: part of its callers, in late mode no
	# function of its own)
	readelf -p .rearview_untraced "$T/app" | grep -q 'threshold tiny_leaf\\n' &&
		! readelf -p .rearview_untraced "$T/app" | grep -q 'looper'
}
check "test_rvcc_untraced_section_names_left_out_functions" untraced_named

never_list() { # the never-list leaves rvcc_busy out; main stays traced (threshold 0);
	# a clone's name from a capture (rvcc_busy.isra.0) names the function
	printf '# comment\nrvcc_busy.isra.0 # from hotlist\n' >"$T/never" &&
		"$RVCC" gcc --rv-threshold=0 --rv-never="$T/never" -O2 -o "$T/app2" "$T/app.c" &&
		RV_TRACE=1 RV_TRACE_FILE="$T/app2.rvt" "$T/app2" &&
		"$B/rvtrace" summary "$T/app2.rvt" >"$T/sum2" && grep -q ' main$' "$T/sum2" &&
		! grep -q 'rvcc_busy' "$T/sum2"
}
check "test_rvcc_never_list_leaves_named_function_out" never_list

shared_and_off() { # a shared object links librvtrace; --rv-off adds nothing
	"$RVCC" gcc -O2 -fPIC -shared -o "$T/lib.so" "$T/app.c" &&
		readelf -d "$T/lib.so" | grep -q 'librvtrace' &&
		"$RVCC" gcc --rv-off -O2 -o "$T/plain" "$T/app.c" &&
		! nm "$T/plain" | grep -q cyg_profile && ! readelf -d "$T/plain" | grep -q librvtrace
}
check "test_rvcc_shared_object_links_library_and_off_adds_nothing" shared_and_off

default_threshold() { # rvcc's default leaves functions of under 200 instructions a call
	# without a long loop out (tiny_leaf, main; looper and rvcc_busy loop n times),
	# silently; inline mode's rule (size) leaves small_helper's copies out too;
	# RVCC_THRESHOLD=0 and --rv-threshold=0 trace every function
	"$RVCC" gcc -O2 -o "$T/appd" "$T/app.c" 2>"$T/err" && [ ! -s "$T/err" ] &&
		readelf -p .rearview_untraced "$T/appd" >"$T/untr" &&
		grep -q 'threshold tiny_leaf\\n' "$T/untr" && grep -q 'threshold main\\n' "$T/untr" &&
		"$RVCC" gcc --rv-mode=inline -O2 -o "$T/appi" "$T/app.c" &&
		readelf -p .rearview_untraced "$T/appi" | grep -q 'threshold small_helper\\n' &&
		! grep -q 'looper\|rvcc_busy' "$T/untr" &&
		RV_TRACE=1 RV_TRACE_FILE="$T/appd.rvt" "$T/appd" &&
		"$B/rvtrace" summary "$T/appd.rvt" | grep -q ' rvcc_busy$' &&
		RVCC_THRESHOLD=0 "$RVCC" gcc -O2 -o "$T/app0" "$T/app.c" &&
		! readelf -S "$T/app0" | grep -q rearview_untraced &&
		"$RVCC" gcc --rv-threshold=0 -O2 -o "$T/app0f" "$T/app.c" &&
		! readelf -S "$T/app0f" | grep -q rearview_untraced
}
check "test_rvcc_default_threshold_200_leaves_small_functions_out" default_threshold

unknown_option() {
	"$RVCC" gcc --rv-bogus -c "$T/app.c" -o "$T/x.o"
	[ $? -eq 2 ]
}
check "test_rvcc_unknown_option_exits_2" unknown_option
[ "$fails" -eq 0 ]

# Exact names: the never-list says foo; foo2 and xfoo contain it and must stay
# traced (gcc's own exclude list matches substrings, so without the plugin
# foo could only stay traced too).
cat >"$T/names.c" <<'C'
__attribute__((noinline)) int foo(int x);
__attribute__((noinline)) int foo2(int x);
__attribute__((noinline)) int xfoo(int x);
__attribute__((noinline)) int foo(int x) { return x * 3; }
__attribute__((noinline)) int foo2(int x) { return x * 5; }
__attribute__((noinline)) int xfoo(int x) { return x * 7; }
int main(int argc, char **argv) { (void)argv; return foo(argc) + foo2(argc) + xfoo(argc) == 0; }
C
echo foo >"$T/never.foo"
PLUGIN="$B/../lib/rearview/rvcc_gcc_plugin.so"

exact_name() { # (threshold 0: the three tiny functions would all be left out)
	"$RVCC" gcc --rv-threshold=0 --rv-never="$T/never.foo" -O2 -o "$T/names" "$T/names.c" 2>"$T/err" &&
		[ ! -s "$T/err" ] &&
		RV_TRACE=1 RV_TRACE_FILE="$T/names.rvt" "$T/names" &&
		"$B/rvtrace" summary "$T/names.rvt" >"$T/sumn" &&
		grep -q ' foo2$' "$T/sumn" && grep -q ' xfoo$' "$T/sumn" &&
		! grep -q ' foo$' "$T/sumn" &&
		readelf -p .rearview_untraced "$T/names" | grep -q 'never foo\\n'
}
if [ -e "$PLUGIN" ]; then
	check "test_rvcc_plugin_excludes_exact_name_only" exact_name
else
	skip test_rvcc_plugin_excludes_exact_name_only "no $PLUGIN (gcc-12-plugin-dev)"
fi

fallback() { # a missing plugin and one gcc cannot load: one line on stderr each,
	# the build succeeds, foo stays traced (a substring of traced names)
	echo 'not a plugin' >"$T/bad.so" &&
		for p in "$T/none.so" "$T/bad.so"; do
			"$RVCC" gcc --rv-threshold=0 --rv-plugin="$p" --rv-never="$T/never.foo" -O2 \
				-o "$T/names_fb" \
				"$T/names.c" 2>"$T/err" || return 1
			cat "$T/err"
			[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^rvcc: $p: " "$T/err" || return 1
			RV_TRACE=1 RV_TRACE_FILE="$T/fb.rvt" "$T/names_fb" &&
				"$B/rvtrace" summary "$T/fb.rvt" | grep -q ' foo$' || return 1
		done
}
check "test_rvcc_plugin_unavailable_falls_back_to_substring_safe" fallback

# Late mode, gcc's C default: the plugin puts the trace points into the
# functions gcc leaves out of line, after it has inlined and cloned as it
# would without rvcc.  -finstrument-functions (inline mode) takes every
# function's address first, so a static function called once stays out of
# line there; here the program has plain gcc's functions, and the helper's
# time is its caller's.
cat >"$T/late.c" <<'C'
static int once_helper(int n)
{
	volatile int s = 0;
	for (int i = 0; i < n; i++)
		s += i;
	return s;
}
__attribute__((noinline)) int rvcc_busy2(int n);
__attribute__((noinline)) int rvcc_busy2(int n) { return once_helper(n) + 1; }
int main(void)
{
	int s = 0;
	for (int i = 0; i < 5; i++)
		s += rvcc_busy2(100 + i);
	return s == 7;
}
C
text_symbols() { # the program's own functions
	nm --defined-only "$1" | awk '$2 ~ /^[tT]$/ && $3 !~ /^rvt__/ { print $3 }' | LC_ALL=C sort
}
late_mode() {
	gcc -O2 -o "$T/late_plain" "$T/late.c" &&
		"$RVCC" gcc --rv-threshold=0 -O2 -o "$T/late" "$T/late.c" 2>"$T/err" &&
		[ ! -s "$T/err" ] &&
		"$RVCC" gcc --rv-mode=inline --rv-threshold=0 -O2 -o "$T/late_inl" "$T/late.c" &&
		[ "$(text_symbols "$T/late")" = "$(text_symbols "$T/late_plain")" ] &&
		text_symbols "$T/late_inl" | grep -qx once_helper &&
		! text_symbols "$T/late" | grep -qx once_helper &&
		RV_TRACE=1 RV_TRACE_FILE="$T/late.rvt" "$T/late" &&
		"$B/rvtrace" report "$T/late.rvt" >"$T/rep" &&
		grep -Eq '^ .* 5 .* rvcc_busy2$' "$T/rep" && grep -Eq ' 1 .* main$' "$T/rep" &&
		! grep -q once_helper "$T/rep" &&
		"$RVCC" gcc --rv-mode=late --rv-plugin=off -O2 -o "$T/late_off" "$T/late.c" \
			2>"$T/err" && grep -q '^rvcc: late mode unavailable; inline mode instead$' "$T/err" &&
		text_symbols "$T/late_off" | grep -qx once_helper
}
check "test_rvcc_late_mode_default_keeps_gccs_inlining" late_mode

# Every way out of a function passes its exit trace point: a call whose value
# is returned (gcc would make it a jump, and the caller's exit would be
# lost: leafy's frame would close tailer's), a variadic function (%al says
# how many vector registers hold arguments; the trace point uses %rax);
# the output is the plain build's.
cat >"$T/ret.c" <<'C'
#include <stdarg.h>
#include <stdio.h>
__attribute__((noinline)) int leafy(int x)
{
	volatile int s = x;
	for (int i = 0; i < 3; i++)
		s += i;
	return s;
}
__attribute__((noinline)) int tailer(int x)
{
	if (x & 1)
		return leafy(x);
	return leafy(x + 1) + 1;
}
__attribute__((noinline)) int sum(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	int s = 0;
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	double d = va_arg(ap, double);
	va_end(ap);
	return s + (int)(d * 2);
}
int main(void)
{
	int s = 0;
	for (int i = 0; i < 10; i++)
		s += tailer(i);
	printf("%d\n", s + sum(3, 1, 2, 3, 2.5));
	return 0;
}
C
late_exits() {
	gcc -O2 -o "$T/ret_plain" "$T/ret.c" &&
		"$RVCC" gcc --rv-threshold=0 -O2 -o "$T/ret" "$T/ret.c" &&
		[ "$("$T/ret_plain")" = 96 ] &&
		[ "$(RV_TRACE=1 RV_TRACE_FILE="$T/ret.rvt" "$T/ret")" = 96 ] &&
		"$B/rvtrace" replay "$T/ret.rvt" >"$T/replay" &&
		[ "$(grep -c '|   tailer() {$' "$T/replay")" -eq 10 ] &&
		[ "$(grep -c '|     leafy();$' "$T/replay")" -eq 10 ] &&
		[ "$(grep -c '|   } /\* tailer \*/$' "$T/replay")" -eq 10 ] &&
		[ "$(grep -c '|   sum();$' "$T/replay")" -eq 1 ]
}
check "test_rvcc_late_mode_every_return_passes_the_exit" late_exits

# Late mode's build-time budget weighs the work gcc expects of one call:
# rare_loop (gzip's ct_tally: a 30-round loop behind a rare branch) and
# fast_path (sqlite3GetVarint: a large body, one short likely path) are left
# out; long_loop (n rounds) is traced.  Inline mode's rule (size, any loop)
# keeps both, which shows they are the cases the budget is for.  A compile of
# two sources gets it too (inline mode's pass one takes one source only).
cat >"$T/budget.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#define R8(s) s s s s s s s s
volatile unsigned sink;
unsigned counts[30];
__attribute__((noinline)) int rare_loop(unsigned x);
__attribute__((noinline)) int rare_loop(unsigned x)
{
	counts[x % 30]++;
	if ((x & 0xfff) == 0) {
		unsigned s = 0;
		for (int i = 0; i < 30; i++)
			s += counts[i] * (unsigned)(i + 5);
		sink = s;
	}
	return (x & 7) == 0;
}
__attribute__((noinline)) unsigned fast_path(unsigned x);
__attribute__((noinline)) unsigned fast_path(unsigned x)
{
	if (__builtin_expect(x < 1000000u, 1))
		return x + 1;
	unsigned v = x;
	R8(R8(v = v * 2654435761u + (v >> 7); sink = v;))
	return v;
}
__attribute__((noinline)) unsigned long long long_loop(unsigned n);
__attribute__((noinline)) unsigned long long long_loop(unsigned n)
{
	unsigned long long s = 0;
	for (unsigned i = 0; i < n; i++)
		s += (unsigned long long)i * n;
	return s;
}
int tiny2(int x);
int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20000u;
	unsigned long long t = 0;
	for (unsigned i = 0; i < n; i++)
		t += (unsigned)rare_loop(i) + fast_path(i * 97u);
	t += long_loop(n) + (unsigned)tiny2((int)n);
	printf("%llu\n", t);
	return 0;
}
C
printf 'int tiny2(int x);\nint tiny2(int x) { return x + 2; }\n' >"$T/tiny2.c"
late_budget() {
	gcc -O2 -o "$T/budget_plain" "$T/budget.c" "$T/tiny2.c" &&
		"$RVCC" gcc -O2 -o "$T/budget" "$T/budget.c" "$T/tiny2.c" &&
		"$RVCC" gcc --rv-mode=inline -O2 -c -o "$T/budget_inl.o" "$T/budget.c" &&
		readelf -p .rearview_untraced "$T/budget" >"$T/bu" &&
		grep -q 'threshold rare_loop\\n' "$T/bu" && grep -q 'threshold fast_path\\n' "$T/bu" &&
		grep -q 'threshold tiny2\\n' "$T/bu" && ! grep -q long_loop "$T/bu" &&
		readelf -p .rearview_untraced "$T/budget_inl.o" >"$T/bi" &&
		! grep -q 'rare_loop\|fast_path' "$T/bi" &&
		! objdump -d --no-show-raw-insn --disassemble=rare_loop "$T/budget" | grep -q rvt__gate &&
		objdump -d --no-show-raw-insn --disassemble=long_loop "$T/budget" | grep -q rvt__gate &&
		[ "$("$T/budget_plain")" = "$(RV_TRACE=1 RV_TRACE_FILE="$T/budget.rvt" "$T/budget")" ] &&
		"$B/rvtrace" report "$T/budget.rvt" >"$T/brep" &&
		grep -Eq ' 1 .* long_loop$' "$T/brep" && ! grep -q 'rare_loop\|fast_path' "$T/brep"
}
check "test_rvcc_late_mode_budget_counts_work_per_call" late_budget

# clang: the pass plugin gives -finstrument-functions-after-inlining the same
# threshold (main: small, no loop; rvcc_busy and looper have loops) and the
# exact never-list.
CPLUGIN="$B/../lib/rearview/rvcc_clang_plugin.so"
clang_lists() {
	"$RVCC" clang --rv-threshold=20 -O2 -o "$T/capp" "$T/app.c" 2>"$T/err" && [ ! -s "$T/err" ] &&
		RV_TRACE=1 RV_TRACE_FILE="$T/capp.rvt" "$T/capp" &&
		"$B/rvtrace" summary "$T/capp.rvt" >"$T/csum" && grep -q ' rvcc_busy$' "$T/csum" &&
		! grep -q ' main$' "$T/csum" &&
		readelf -p .rearview_untraced "$T/capp" | grep -q 'threshold main\\n' &&
		"$RVCC" clang --rv-threshold=0 --rv-never="$T/never.foo" -O2 -c -o "$T/cnames.o" \
			"$T/names.c" &&
		"$RVCC" clang -o "$T/cnames" "$T/cnames.o" &&
		RV_TRACE=1 RV_TRACE_FILE="$T/cnames.rvt" "$T/cnames" &&
		"$B/rvtrace" summary "$T/cnames.rvt" >"$T/csumn" &&
		grep -q ' foo2$' "$T/csumn" && grep -q ' xfoo$' "$T/csumn" && grep -q ' main$' "$T/csumn" &&
		! grep -q ' foo$' "$T/csumn"
}
if ! command -v clang >/dev/null; then
	skip test_rvcc_clang_threshold_and_never_list_exact "no clang"
elif [ -e "$CPLUGIN" ]; then
	check "test_rvcc_clang_threshold_and_never_list_exact" clang_lists
else
	skip test_rvcc_clang_threshold_and_never_list_exact "no $CPLUGIN (llvm-14-dev)"
fi

clang_fallback() { # clang cannot load the plugin: one line, every function traced
	command -v clang >/dev/null || return 0
	"$RVCC" clang --rv-plugin="$T/bad.so" --rv-never="$T/never.foo" -O2 -o "$T/cnames_fb" \
		"$T/names.c" 2>"$T/err" || return 1
	cat "$T/err"
	[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^rvcc: $T/bad.so: " "$T/err" &&
		RV_TRACE=1 RV_TRACE_FILE="$T/cfb.rvt" "$T/cnames_fb" &&
		"$B/rvtrace" summary "$T/cfb.rvt" | grep -q ' foo$' &&
		! "$RVCC" clang --rv-plugin="$T/bad.so" --rv-never="$T/never.foo" -c -o "$T/x.o" \
			"$T/nonexistent.c" 2>/dev/null
}
check "test_rvcc_clang_plugin_unavailable_instruments_everything" clang_fallback

# ---- transparency ----------------------------------------------------------

# A source that asks for GNU extensions itself: with a header included
# before it that pulled <stdint.h> or <time.h>, memmem, strptime and pipe2
# were undeclared (implicit int: the pointer memmem returns cut to 32 bits).
cat >"$T/gnu.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static char text[] = "hello,world";
int main(void)
{
	char *p = memmem(text, sizeof(text) - 1, ",", 1);
	struct tm tm;
	int fds[2];
	memset(&tm, 0, sizeof(tm));
	if (!strptime("2024-01-02", "%Y-%m-%d", &tm) || tm.tm_mday != 2 || pipe2(fds, O_CLOEXEC))
		return 2;
	printf("%d\n", (int)(p - text));
	return p == text + 5 ? 0 : 1;
}
C
gnu_source() {
	"$RVCC" gcc -O2 -Werror=implicit-function-declaration -o "$T/gnu" "$T/gnu.c" &&
		[ "$("$T/gnu")" = 5 ] && [ "$(RV_TRACE=1 "$T/gnu")" = 5 ]
}
check "test_rvcc_source_gnu_source_still_applies" gnu_source

# A probe's answer: the exit status and stderr of one compile of
# $T/probe/SRC (configure reads the status, some read "any output on
# stderr" too).
answer() { # SRC compiler flags...
	(
		cd "$T/probe" && src=$1 && shift &&
			"$@" -c -o probe.o "$src" >/dev/null 2>probe.err
		echo "status $?"
		cat probe.err
	)
}
# same_answers COMPILER EXT SOURCE_FILE FLAGSET...: rvcc and the compiler
# agree on each flag set.
same_answers() {
	cc=$1 ext=$2 src=$3
	shift 3
	rm -rf "$T/probe" && mkdir -p "$T/probe" && cp "$src" "$T/probe/probe.$ext" || return 1
	for flags in "$@"; do
		# shellcheck disable=SC2086 # flag sets are word lists
		a=$(answer "probe.$ext" $cc $flags) && b=$(answer "probe.$ext" "$RVCC" $cc $flags) ||
			return 1
		if [ "$a" != "$b" ]; then
			echo "$cc $flags: the compiler says"
			echo "$a"
			echo "rvcc says"
			echo "$b"
			return 1
		fi
	done
}
printf 'int main(void) { return 0; }\n' >"$T/c89.c"
printf 'int main(void) { for (int i = 0; i < 1; i++) { } return 0; } // C99\n' >"$T/c99.c"
printf 'int main() { int unused; return 0; }\n' >"$T/warns.c"
printf '#include <vector>\nint main() { std::vector<int> v(1); return v[0]; }\n' >"$T/cxx.cc"
C_FLAGSETS='-ansi|-ansi -pedantic-errors|-std=c89 -pedantic-errors|-std=c99 -pedantic-errors|-std=c11 -pedantic-errors|-std=gnu89 -pedantic-errors|-traditional-cpp|-Werror -Wall -Wextra -pedantic|-Werror -Wall -Wextra -pedantic -Wconversion -Wsign-conversion -Wmissing-prototypes -Wmissing-declarations -Wstrict-prototypes -Wold-style-definition -Wdeclaration-after-statement -Wredundant-decls -Wundef -Wshadow -Wcast-qual -Wpadded -Wtraditional -Wc++-compat -Wlong-long -Wnested-externs -Wbad-function-cast -Wjump-misses-init|-O2 -Werror -Winline -Wstack-usage=64 -Wframe-larger-than=64 -Wnull-dereference'
probes_c() {
	IFS='|'
	# shellcheck disable=SC2086
	set -- $C_FLAGSETS
	unset IFS
	for src in c89 c99 warns; do
		same_answers gcc c "$T/$src.c" "$@" || return 1
	done
	# The probes must tell: the C99 source fails both under -std=c89, the
	# unused variable under -Werror -Wall.
	same_answers gcc c "$T/c99.c" "-std=c89 -pedantic-errors" &&
		[ "$(answer probe.c gcc -std=c89 -pedantic-errors | head -n 1)" != "status 0" ] &&
		same_answers gcc c "$T/warns.c" "-Werror -Wall" &&
		[ "$(answer probe.c gcc -Werror -Wall | head -n 1)" != "status 0" ]
}
check "test_rvcc_gcc_dialect_and_warning_probes_answer_as_gcc" probes_c

probes_cxx() {
	same_answers g++ cc "$T/cxx.cc" "-std=c++98 -pedantic-errors" "-std=c++11 -pedantic-errors" \
		"-std=gnu++17 -Werror -Wall -Wextra -pedantic -Wold-style-cast -Wuseless-cast" \
		"-Werror -Wall -Wextra -Wzero-as-null-pointer-constant -Wmissing-declarations" &&
		same_answers g++ cc "$T/c89.c" "-std=c++98 -pedantic-errors" &&
		same_answers g++ cc "$T/warns.c" "-Werror -Wall"
}
check "test_rvcc_gxx_dialect_probes_answer_as_gxx" probes_cxx

probes_clang() {
	same_answers clang c "$T/c89.c" "-ansi -pedantic-errors" "-std=c89 -pedantic-errors" \
		"-Weverything -Werror" && same_answers clang c "$T/c99.c" "-ansi -pedantic-errors"
}
if command -v clang >/dev/null; then
	check "test_rvcc_clang_dialect_probes_answer_as_clang" probes_clang
else
	skip test_rvcc_clang_dialect_probes_answer_as_clang "no clang"
fi

# trace-inline.h by itself, without the system-header pragma that keeps
# warnings quiet: clean under strict warnings in every dialect, C and C++,
# gcc and clang (RVT__CHECK_WARNINGS drops the pragma).
header_strict() {
	[ -f "$INLINE_H" ] || { echo "no $INLINE_H"; return 1; }
	w='-Werror -Wall -Wextra -pedantic-errors -Wconversion -Wsign-conversion -Wshadow -Wundef -Wcast-qual -Wredundant-decls -Wmissing-declarations -Wlong-long'
	wc="$w -Wmissing-prototypes -Wstrict-prototypes -Wold-style-definition -Wdeclaration-after-statement -Wc++-compat -Wnested-externs -Wbad-function-cast"
	for std in -ansi -std=c99 -std=c11 -std=gnu17; do
		# shellcheck disable=SC2086
		gcc $std $wc -DRVT__CHECK_WARNINGS -finstrument-functions -O2 -include "$INLINE_H" \
			-c "$T/c89.c" -o "$T/h.o" || return 1
	done
	for std in -std=c++98 -std=c++17; do
		# shellcheck disable=SC2086
		g++ $std $w -Wuseless-cast -Wzero-as-null-pointer-constant -DRVT__CHECK_WARNINGS \
			-finstrument-functions -O2 -include "$INLINE_H" -c "$T/cxx.cc" -o "$T/h.o" ||
			return 1
	done
	! command -v clang >/dev/null ||
		clang -ansi -Weverything -Werror -Wno-reserved-identifier -Wno-padded \
			-DRVT__CHECK_WARNINGS -finstrument-functions -O2 -include "$INLINE_H" \
			-c "$T/c89.c" -o "$T/h.o"
}
check "test_rvcc_inline_header_clean_under_strict_warnings" header_strict

# The exported symbols (nm -D --defined-only) of a shared library and a
# program built through rvcc are the plain build's: inline and call mode,
# clang.
exports() {
	nm -D --defined-only "$1" | awk '{ print $2, $3 }' | sort
}
same_abi() {
	gcc -O2 -fPIC -shared -o "$T/plain.so" "$T/app.c" &&
		gcc -O2 -o "$T/plain.exe" "$T/gnu.c" || return 1
	for how in "gcc" "--rv-mode=call gcc" "clang"; do
		# shellcheck disable=SC2086
		"$RVCC" $how -O2 -fPIC -shared -o "$T/rv.so" "$T/app.c" &&
			"$RVCC" $how -O2 -o "$T/rv.exe" "$T/gnu.c" || return 1
		[ "$(exports "$T/plain.so")" = "$(exports "$T/rv.so")" ] &&
			[ "$(exports "$T/plain.exe")" = "$(exports "$T/rv.exe")" ] || {
			echo "$how: exports differ"
			exports "$T/rv.so"
			return 1
		}
	done
}
check "test_rvcc_no_new_exported_symbols" same_abi

# Packageable: librvtrace is needed by its SONAME and no RUNPATH names the
# build tree, unless --rv-rpath (or RVCC_RPATH=1) asks for one.
no_runpath() {
	(unset RVCC_RPATH && "$RVCC" gcc -O2 -o "$T/norp" "$T/gnu.c") &&
		"$RVCC" gcc --rv-rpath -O2 -o "$T/rp" "$T/gnu.c" &&
		soname=$(readelf -d "$LIBDIR/librvtrace.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p') &&
		[ -n "$soname" ] && readelf -d "$T/norp" | grep -q "(NEEDED).*\[$soname\]" &&
		! readelf -d "$T/norp" | grep -q 'R.*PATH' &&
		readelf -d "$T/rp" | grep -q "(RUNPATH).*\[$LIBDIR\]" &&
		[ "$(LD_LIBRARY_PATH="$LIBDIR" "$T/norp")" = 5 ]
}
check "test_rvcc_no_runpath_unless_asked" no_runpath

# README's spellings: rvcc's options before the compiler, a bare source
# compiled with RVCC_CC (default gcc), rvcc-gcc (a link: the compiler from
# the name, and --help is gcc's).
options_first() {
	"$RVCC" --rv-threshold=20 gcc -O2 -o "$T/first" "$T/app.c" &&
		readelf -p .rearview_untraced "$T/first" | grep -q 'threshold tiny_leaf\\n' &&
		"$RVCC" --rv-verbose "$T/gnu.c" -o "$T/bare" 2>"$T/err" &&
		grep -q "^rvcc: gcc $T/gnu.c -o $T/bare " "$T/err" && [ "$("$T/bare")" = 5 ] &&
		"$B/rvcc-gcc" --rv-threshold=20 -O2 -o "$T/named" "$T/app.c" &&
		readelf -p .rearview_untraced "$T/named" | grep -q 'threshold tiny_leaf\\n' &&
		[ "$("$B/rvcc-gcc" --help | head -n 1)" = "$(gcc --help | head -n 1)" ]
}
check "test_rvcc_options_before_the_compiler" options_first

# An instrumented library in a program that is not: librvtrace comes after
# the C library in the lookup order, its interposers find nothing next and
# must take the C library's (the lock interposers aborted the program at
# start), tracing off and on; the traced main thread's calls into it are
# captured; with RV_SOCKET set its control thread starts (pthread_create
# found).
cat >"$T/lib.c" <<'C'
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
__attribute__((noinline)) int lib_locked_sum(int n);
__attribute__((noinline)) int lib_locked_sum(int n)
{
	int s = 0;
	pthread_mutex_lock(&m);
	for (int i = 0; i < n; i++)
		s += i;
	pthread_mutex_unlock(&m);
	return s;
}
int lib_entry(int n);
int lib_entry(int n) { return lib_locked_sum(n) + 1; }
C
printf '#include <stdio.h>\nint lib_entry(int);\nint main(void) { printf("%%d\\n", lib_entry(10)); return 0; }\n' \
	>"$T/host.c"
uninstrumented_host() {
	"$RVCC" gcc -O2 -fPIC -shared -o "$T/libhosted.so" "$T/lib.c" &&
		gcc -O2 -o "$T/host" "$T/host.c" -L"$T" -lhosted &&
		! readelf -d "$T/host" | grep -q librvtrace &&
		[ "$(LD_LIBRARY_PATH="$T" "$T/host")" = 46 ] &&
		[ "$(LD_LIBRARY_PATH="$T" RV_TRACE=1 RV_TRACE_FILE="$T/host.rvt" "$T/host")" = 46 ] &&
		LD_LIBRARY_PATH="$T" RV_SOCKET="$T/none.sock" "$T/host" >"$T/hout" 2>"$T/herr" &&
		[ "$(cat "$T/hout")" = 46 ] && ! grep -q 'not found' "$T/herr" &&
		"$B/rvtrace" summary "$T/host.rvt" >"$T/hsum" && grep -q ' lib_locked_sum$' "$T/hsum"
}
check "test_rvcc_instrumented_library_in_uninstrumented_program" uninstrumented_host
[ "$fails" -eq 0 ]
