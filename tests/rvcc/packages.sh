#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/rvcc/packages.sh — `make check-rvcc-packages` (system tier): Debian
# source packages built with their own debian/rules (dh: configure, build,
# their own test suite) once with the plain compilers and once through rvcc
# (CC=rvcc-gcc CXX=rvcc-g++), whose test suite then runs a second time with
# tracing on (RV_TRACE=1, a capture per process at exit).  rvcc is
# transparent when every package's outcome is the same all three ways; TAP,
# one case per package (tests/run-tests.sh counts it).
#
#   sh tests/rvcc/packages.sh BUILD_DIR [PACKAGE...]   (default: $PACKAGES)
#
# Per package it also checks what a distribution needs of an rvcc build: the
# libraries export the same symbols as the plain build's (nm -D
# --defined-only), at least one ELF needs librvtrace (by its SONAME) and none
# carries a RUNPATH into Rearview's build tree; and jq's `indices(",")`,
# which crashed when rvcc's header hid jq's own _GNU_SOURCE.
#
# Sources come from `apt-get source` once into BUILD_DIR/rvcc-packages/src
# (a deb-src entry for bookworm is added when there is none, as root); a
# package whose build dependencies are missing gets them with `apt-get
# build-dep --arch-only` as root.  Without network, root or dependencies the
# package's case is a visible skip.  Every run unpacks fresh trees into
# BUILD_DIR/rvcc-packages/work; the logs stay there, and the table of
# outcomes is BUILD_DIR/rvcc-packages/results.md (tests/rvcc/README.md).
#
# The plain and rvcc builds get the same environment: LD_LIBRARY_PATH names
# Rearview's lib/ (where an installed librvtrace would be found without it),
# DEB_BUILD_OPTIONS=parallel=2, and jq's NO_VALGRIND=1 (its tests would run
# under valgrind otherwise, ten times slower).
set -u
B=$(cd "${1:?usage: packages.sh BUILD_DIR [PACKAGE...]}" && pwd)
shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PACKAGES=${*:-jq fribidi cjson libjsoncpp serd bzip2}
TOP="$B/rvcc-packages"
SRC="$TOP/src"
WORK="$TOP/work"
RVCC_GCC="$B/bin/rvcc-gcc"
RVCC_GXX="$B/bin/rvcc-g++"
mkdir -p "$SRC" "$WORK"

# What each package stands for in the table.
about() {
	case $1 in
	jq) echo "autotools | C | defines _GNU_SOURCE in its sources (memmem, strptime)" ;;
	fribidi) echo "autotools | C | builds with -Wall -ansi (configure.ac)" ;;
	cjson) echo "CMake | C | -std=c89 -pedantic and 24 warning flags, each probed" ;;
	libjsoncpp) echo "CMake | C++ | C++ library and its test runner" ;;
	serd) echo "Meson | C | warning flags probed (get_supported_arguments)" ;;
	bzip2) echo "plain make | C | -Wall -Winline, a Makefile without configure" ;;
	*) echo "? | ? | ?" ;;
	esac
}

# fetch PKG: the .dsc of PKG's Debian source, downloaded once; 77 when it
# cannot be had.
fetch() {
	dsc=$(ls "$SRC/$1"/*.dsc 2>/dev/null | head -n 1)
	if [ -z "$dsc" ]; then
		if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
			[ "$(id -u)" -eq 0 ] || return 77
			printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
				>/etc/apt/sources.list.d/rearview-src.sources
			apt-get update -qq >/dev/null 2>&1
		fi
		rm -rf "$SRC/$1.part" && mkdir -p "$SRC/$1.part" &&
			(cd "$SRC/$1.part" && apt-get source -qq --download-only "$1") \
				>"$SRC/$1.fetch.log" 2>&1 || return 77
		rm -rf "$SRC/$1" && mv "$SRC/$1.part" "$SRC/$1"
		dsc=$(ls "$SRC/$1"/*.dsc | head -n 1)
	fi
	echo "$dsc"
}

# unpack DSC DIR: a fresh source tree in DIR; prints it.
unpack() {
	rm -rf "$2" && mkdir -p "$2" &&
		(cd "$2" && dpkg-source -x "$1" tree >/dev/null 2>&1) && echo "$2/tree"
}

# deps TREE: its build dependencies are there (installed now when root).
deps() {
	(cd "$1" && dpkg-checkbuilddeps -B >/dev/null 2>&1) && return 0
	[ "$(id -u)" -eq 0 ] || return 1
	DEBIAN_FRONTEND=noninteractive apt-get build-dep --arch-only -y -qq "$1" \
		>"$1.deps.log" 2>&1
}

# The package's own test step, run in its tree with CC and CXX exported: its
# override target, else dh_auto_test with the options its `dh` line gives.
test_step() {
	if grep -q '^override_dh_auto_test' debian/rules; then
		debian/rules override_dh_auto_test CC="$CC" CXX="$CXX" NO_VALGRIND=1
	else
		# shellcheck disable=SC2046 # dh's options are words
		dh_auto_test -a $(sed -n 's/^[[:space:]]*dh \$@ *//p' debian/rules | head -n 1)
	fi
}

# build TREE CC CXX LOG: `debian/rules build-arch` (configure, build, test);
# prints "BUILD TEST": ok/FAIL and pass/FAIL/- (the tests were not reached).
build() {
	(cd "$1" && env LD_LIBRARY_PATH="$B/lib" DEB_BUILD_OPTIONS=parallel=2 \
		debian/rules build-arch CC="$2" CXX="$3" NO_VALGRIND=1) >"$4" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok pass"
	elif grep -Eq '^ +(dh_auto_test|debian/rules override_dh_auto_test)' "$4"; then
		echo "ok FAIL"
	else
		echo "FAIL -"
	fi
}

# counts LOG: the test suite's own tally, when its format is known
# (automake, CTest, Meson), else "-".
counts() {
	a=$(grep -E '^# (PASS|FAIL|XFAIL|ERROR):' "$1" |
		awk '{ n[$2] += $3 } END { if (NR) printf "%d passed, %d failed", n["PASS:"] + n["XFAIL:"], n["FAIL:"] + n["ERROR:"] }')
	c=$(grep -E 'tests passed, [0-9]+ tests? failed out of' "$1" | tail -n 1 |
		sed -E 's/.*, ([0-9]+) tests? failed out of ([0-9]+).*/\2 \1/' |
		awk '{ printf "%d passed, %d failed", $1 - $2, $2 }')
	m=$(grep -E '^(Ok|Fail|Expected Fail|Unexpected Pass|Timeout): +[0-9]+' "$1" |
		awk '{ v = $NF; $NF = ""; n[$0] += v } END { if (NR) printf "%d passed, %d failed", n["Ok: "] + n["Expected Fail: "], n["Fail: "] + n["Unexpected Pass: "] + n["Timeout: "] }')
	echo "${a:-${c:-${m:--}}}"
}

# probes LOG TREE: the build system's probe answers (autoconf's "checking
# …", CMake's "-- Performing Test …", "-- Looking for …", Meson's "Compiler
# for C supports …", "Checking …"), with the compiler's and the tree's
# paths taken out, sorted.
probes() {
	grep -E '^checking |^-- (Performing Test|Looking for|Check(ing)? )|^Compiler for |^Checking |^Has header |^Library ' "$1" |
		sed -e "s|$RVCC_GCC|gcc|g" -e "s|$RVCC_GXX|g++|g" -e "s|/usr/bin/gcc|gcc|g" \
			-e "s|/usr/bin/g++|g++|g" -e "s|/usr/bin/c++|g++|g" -e "s|/usr/bin/cc|gcc|g" \
			-e "s|$2|TREE|g" -e 's/ (cached)//' -e 's/ - skipped$//' | sort
}

# elfs TREE: the ELF programs and shared objects built in TREE.
elfs() {
	find "$1" -type f \( -perm -u+x -o -name '*.so*' \) -size +1k 2>/dev/null |
		while read -r f; do
			[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
		done
}

# exports TREE: "relative-path symbol" for every shared object's exported
# symbols.
exports() {
	elfs "$1" | grep '\.so' | sort | while read -r f; do
		nm -D --defined-only "$f" 2>/dev/null | awk -v f="${f#"$1"/}" '{ print f, $NF }' | sort
	done
}

# jq's smoke check: the built jq finds the commas.
jq_indices() {
	out=$(cd "$1" && LD_LIBRARY_PATH="$B/lib" ./jq -c -n '"a,b, cd, efg" | indices(",")' 2>&1)
	[ "$out" = "[1,3,7]" ] || {
		echo "jq indices: $out"
		return 1
	}
}

n=0
fails=0
set -- $PACKAGES
echo "1..$#"
{
	echo "| package | build system | language | why | probes, all answered alike | plain: build, tests | rvcc: build, tests | rvcc, RV_TRACE=1: tests (captures) | same exports | ELFs needing librvtrace, RUNPATHs to Rearview's lib/ |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$TOP/results.md"
for pkg in "$@"; do
	n=$((n + 1))
	dsc=$(fetch "$pkg") || {
		echo "ok $n # SKIP $pkg: apt-get source failed (network, root or deb-src; $SRC/$pkg.fetch.log)"
		continue
	}
	d="$WORK/$pkg"
	rm -rf "$d" && mkdir -p "$d"
	plain=$(unpack "$dsc" "$d/plain") && rv=$(unpack "$dsc" "$d/rvcc") || {
		echo "not ok $n - $pkg: dpkg-source -x failed"
		fails=$((fails + 1))
		continue
	}
	if ! deps "$plain"; then
		echo "ok $n # SKIP $pkg: build dependencies missing and not root (dpkg-checkbuilddeps -B)"
		continue
	fi
	why=""
	p=$(build "$plain" gcc g++ "$d/plain.log")
	r=$(build "$rv" "$RVCC_GCC" "$RVCC_GXX" "$d/rvcc.log")
	pc=$(counts "$d/plain.log")
	rc=$(counts "$d/rvcc.log")
	# The rvcc build's tests again, traced: every process writes a capture.
	caps="$d/captures"
	mkdir -p "$caps"
	t="- -"
	tc="-"
	if [ "${r%% *}" = ok ]; then
		(cd "$rv" && export LD_LIBRARY_PATH="$B/lib" DEB_BUILD_OPTIONS=parallel=2 \
			CC="$RVCC_GCC" CXX="$RVCC_GXX" RV_TRACE=1 RV_TRACE_FILE="$caps/%e.%p.rvt" &&
			test_step) >"$d/traced.log" 2>&1
		[ $? -eq 0 ] && t="ok pass" || t="ok FAIL"
		tc=$(counts "$d/traced.log")
	fi
	ncap=$(find "$caps" -name '*.rvt' | wc -l)
	# What a package needs: the same ABI, librvtrace by SONAME, no RUNPATH
	# into the build tree.
	same_exports=no
	[ "$(exports "$plain")" = "$(exports "$rv")" ] && same_exports=yes
	needing=0
	runpaths=0
	for f in $(elfs "$rv"); do
		dyn=$(readelf -d "$f" 2>/dev/null)
		echo "$dyn" | grep -q '(NEEDED).*\[librvtrace' && needing=$((needing + 1))
		echo "$dyn" | sed -n 's/.*(R.*PATH).*\[\(.*\)\]/\1/p' | tr ':' '\n' |
			grep -qx "$B/lib/*" && runpaths=$((runpaths + 1))
	done
	plain_needing=0
	for f in $(elfs "$plain"); do
		readelf -d "$f" 2>/dev/null | grep -q '(NEEDED).*\[librvtrace' &&
			plain_needing=$((plain_needing + 1))
	done
	[ "$p" = "$r" ] || why="$why; outcome plain ($p) and through rvcc ($r) differ"
	probes "$d/plain.log" "$plain" >"$d/plain.probes"
	probes "$d/rvcc.log" "$rv" >"$d/rvcc.probes"
	nprobes=$(wc -l <"$d/plain.probes")
	cmp -s "$d/plain.probes" "$d/rvcc.probes" ||
		why="$why; probes answered differently ($(diff "$d/plain.probes" "$d/rvcc.probes" |
			grep -c '^[<>]') lines: diff $d/plain.probes $d/rvcc.probes)"
	[ "$pc" = "$rc" ] || why="$why; test tallies differ (plain: $pc, rvcc: $rc)"
	[ "$t" = "- -" ] || [ "${p#* }" = "${t#* }" ] ||
		why="$why; traced tests ($t) differ from plain ($p)"
	[ "$tc" = "-" ] || [ "$tc" = "$pc" ] || why="$why; traced tally $tc, plain $pc"
	[ "$same_exports" = yes ] || why="$why; exported symbols differ"
	[ "$needing" -gt 0 ] || why="$why; no ELF of the rvcc build needs librvtrace"
	[ "$plain_needing" -eq 0 ] || why="$why; the plain build needs librvtrace"
	[ "$runpaths" -eq 0 ] || why="$why; $runpaths ELFs have a RUNPATH into $B"
	[ "${r%% *}" != ok ] || [ "$t" = "- -" ] || [ "$ncap" -gt 0 ] ||
		why="$why; tracing on wrote no capture"
	if [ "$pkg" = jq ] && [ "${r%% *}" = ok ]; then
		msg=$(jq_indices "$rv") || why="$why; $msg"
	fi
	echo "| $pkg | $(about "$pkg") | $nprobes | $p ($pc) | $r ($rc) | ${t#* } ($tc; $ncap) | $same_exports | $needing, $runpaths |" >>"$TOP/results.md"
	if [ -z "$why" ]; then
		echo "ok $n - $pkg: plain $p ($pc), rvcc $r ($rc), traced ${t#* } ($ncap captures)"
	else
		echo "not ok $n - $pkg${why} (logs: $d)"
		fails=$((fails + 1))
	fi
done
sed 's/^/# /' "$TOP/results.md"
[ "$fails" -eq 0 ]
