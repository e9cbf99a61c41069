#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/test_real.sh — `make check`'s correctness run of the real
# programs, in TAP (tests/run-tests.sh counts it like a cmocka binary): for
# each program, `<prog>.sh build` then `<prog>.sh check` (the planted cause
# found by name, call counts exact).  A program whose source cannot be had
# (exit 77), or a sanitizer flavour (SANFLAGS set: the programs are built
# plain), is a visible skip.  Builds are cached under BUILD/real.
#   test_real.sh BUILD [SANFLAGS]     (run from the repository root)
set -u
export BUILD=${1:?usage: test_real.sh BUILD [SANFLAGS]}
SAN=${2:-}
PROGS="zstd sqlite3"
echo "1..2"
n=0
fails=0
for p in $PROGS; do
	n=$((n + 1))
	name="test_real_${p}_capture_names_planted_cause"
	if [ -n "$SAN" ]; then
		echo "ok $n # SKIP $name: sanitizer flavour"
		continue
	fi
	rc=0
	out=$(sh "tests/bench/real/$p.sh" build 2>&1) || rc=$?
	if [ "$rc" -eq 0 ]; then
		out=$(sh "tests/bench/real/$p.sh" check 2>&1) || rc=$?
	fi
	case $rc in
	0) echo "ok $n - $name" ;;
	77) echo "ok $n # SKIP $name: source not available" ;;
	*)
		echo "not ok $n - $name"
		fails=$((fails + 1))
		;;
	esac
	echo "$out" | sed 's/^/# /'
done
[ "$fails" -eq 0 ]
