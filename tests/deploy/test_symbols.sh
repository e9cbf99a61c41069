#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/test_symbols.sh — the shared libraries export exactly their
# documented API, in TAP (tests/run-tests.sh counts it).
#
#   test_symbols.sh LIB_DIR MAJOR
#
# For librvtrace and librvevents, held to debian/libX<MAJOR>.symbols (the
# list dpkg-gensymbols also checks when the packages are built):
#   1. the SONAME is libX.so.MAJOR, the one the symbols file names;
#   2. the dynamic symbols the library defines, with their versions, are
#      exactly the file's (a symbol added or dropped, or a changed version
#      node, fails until the list — the ABI record — says so);
#   3. every function and variable the library's objects give default
#      visibility (what its sources mean to export: they are built hidden)
#      is in that list, so the version script hides nothing meant to be
#      public (a new interposer, say).
set -u
LIB=${1:?usage: test_symbols.sh LIB_DIR MAJOR}
MAJOR=${2:?usage: test_symbols.sh LIB_DIR MAJOR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
result() { # status name
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		fails=$((fails + 1))
		echo "not ok $n - $2"
		sed 's/^/# /' "$T/why"
	fi
}

echo "1..6"
for lib in librvtrace librvevents; do
	sym="$ROOT/debian/$lib$MAJOR.symbols"
	so="$LIB/$lib.so"

	: >"$T/why"
	soname=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	head=$(head -n 1 "$sym" 2>/dev/null)
	[ "$soname" = "$lib.so.$MAJOR" ] || echo "$so: SONAME '$soname', not $lib.so.$MAJOR" >>"$T/why"
	[ "$head" = "$lib.so.$MAJOR $lib$MAJOR #MINVER#" ] ||
		echo "$sym: first line '$head', not '$lib.so.$MAJOR $lib$MAJOR #MINVER#'" >>"$T/why"
	[ -s "$T/why" ]
	result $((!$?)) "$lib: SONAME $lib.so.$MAJOR, named by debian/$lib$MAJOR.symbols"

	# name@VERSION of every defined dynamic symbol; the version nodes'
	# own absolute symbols as dpkg-gensymbols writes them (NODE@NODE).
	nm -D --defined-only --with-symbol-versions "$so" |
		awk '{ s = $3; if ($2 == "A") s = s "@" s; sub(/@@/, "@", s); print s }' |
		LC_ALL=C sort >"$T/exported"
	sed -n 's/^ \([^ ]*\) .*/\1/p' "$sym" | LC_ALL=C sort >"$T/listed"
	{
		LC_ALL=C comm -23 "$T/exported" "$T/listed" | sed 's/^/exported, not listed: /'
		LC_ALL=C comm -13 "$T/exported" "$T/listed" | sed 's/^/listed, not exported: /'
	} >"$T/why"
	[ -s "$T/listed" ] || echo "no symbol in $sym" >>"$T/why"
	[ -s "$T/why" ]
	result $((!$?)) "$lib: its $(wc -l <"$T/listed") exported symbols are the list's"

	# Default-visibility definitions in the objects (sanitizer
	# instrumentation's own symbols aside).
	readelf -sW "$LIB/$lib.a" |
		awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" && $7 != "UND" { print $8 }' |
		grep -Ev '^_{0,3}(odr_)?(asan|tsan|ubsan|sancov|msan)' | LC_ALL=C sort -u >"$T/public"
	sed 's/@.*//' "$T/listed" | LC_ALL=C sort -u >"$T/names"
	LC_ALL=C comm -23 "$T/public" "$T/names" |
		sed 's/^/default visibility in the objects, not exported: /' >"$T/why"
	[ -s "$T/public" ] || echo "no public symbol in $LIB/$lib.a" >>"$T/why"
	[ -s "$T/why" ]
	result $((!$?)) "$lib: everything its objects make public is exported"
done
[ "$fails" -eq 0 ]
