#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/rvcc/test_rvcc.sh — rvcc, the compiler wrapper, in TAP (counted by
# tests/run-tests.sh like a cmocka binary).
#   test_rvcc.sh BIN_DIR [SANFLAGS]   (the build's bin/: rvcc and rvtrace)
# A sanitizer flavour skips every case visibly: its librvtrace needs the
# sanitizer runtime in the programs rvcc builds.
set -u
B=${1:?usage: test_rvcc.sh BIN_DIR [SANFLAGS]}
N=10
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
int main(void) { return rvcc_busy(1000) == 7 && looper(3) == 0; }
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

untraced_named() {
	readelf -p .rearview_untraced "$T/app" | grep -q 'threshold small_helper\\n' &&
		! readelf -p .rearview_untraced "$T/app" | grep -q 'looper'
}
check "test_rvcc_untraced_section_names_left_out_functions" untraced_named

never_list() { # the never-list leaves rvcc_busy out; main stays traced
	printf '# comment\nrvcc_busy # from hotlist\n' >"$T/never" &&
		"$RVCC" gcc --rv-never="$T/never" -O2 -o "$T/app2" "$T/app.c" &&
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

exact_name() {
	"$RVCC" gcc --rv-never="$T/never.foo" -O2 -o "$T/names" "$T/names.c" 2>"$T/err" &&
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
			"$RVCC" gcc --rv-plugin="$p" --rv-never="$T/never.foo" -O2 -o "$T/names_fb" \
				"$T/names.c" 2>"$T/err" || return 1
			cat "$T/err"
			[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^rvcc: $p: " "$T/err" || return 1
			RV_TRACE=1 RV_TRACE_FILE="$T/fb.rvt" "$T/names_fb" &&
				"$B/rvtrace" summary "$T/fb.rvt" | grep -q ' foo$' || return 1
		done
}
check "test_rvcc_plugin_unavailable_falls_back_to_substring_safe" fallback

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
		"$RVCC" clang --rv-never="$T/never.foo" -O2 -c -o "$T/cnames.o" "$T/names.c" &&
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
