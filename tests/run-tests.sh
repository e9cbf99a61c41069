#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs cmocka test binaries in TAP mode and prints one closing line,
# `N passed, N failed` (`, N skipped` when some were), counting every test
# case across all binaries.
#
# Skipped cases (cmocka's `# SKIP`) are counted apart.
# A binary that crashes or exits non-zero without reporting a failure counts
# its unreported cases (or at least one) as failed, so a crash is never a pass.
# Logs of failing binaries are printed in full; passing ones print one line.
#   tests/run-tests.sh BIN...      (RV_TEST_TIMEOUT: seconds per binary, default 600)
#
# `make check` runs several stages and wants one closing line for all:
#   tests/run-tests.sh --tally FILE BIN...   appends `passed failed skipped`
#       to FILE and prints a stage line that is not a closing line;
#   tests/run-tests.sh --total FILE          prints the closing line of the
#       sums in FILE; fails when any stage failed or FILE holds no stage.
set -u

if [ "${1:-}" = "--total" ]; then
	[ $# -eq 2 ] || { echo "usage: $0 --total FILE" >&2; exit 2; }
	set -- $(awk 'NF == 3 { p += $1; f += $2; s += $3; n++ }
		END { if (n == 0) f = 1; print p + 0, f + 0, s + 0 }' "$2" 2>/dev/null || echo 0 1 0)
	if [ "$3" -ne 0 ]; then
		echo "$1 passed, $2 failed, $3 skipped"
	else
		echo "$1 passed, $2 failed"
	fi
	[ "$2" -eq 0 ]
	exit
fi

tally=""
if [ "${1:-}" = "--tally" ]; then
	[ $# -ge 2 ] || { echo "usage: $0 --tally FILE BIN..." >&2; exit 2; }
	tally=$2
	shift 2
fi

passed=0
failed=0
skipped=0
bad_bins=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for bin in "$@"; do
	CMOCKA_MESSAGE_OUTPUT=TAP timeout "${RV_TEST_TIMEOUT:-600}" "$bin" >"$log" 2>&1 </dev/null
	rc=$?
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
	# cmocka reports a skipped case as `not ok N # SKIP`: neither a pass nor a failure.
	skip=$(grep -c '^\(not \)\{0,1\}ok .*# SKIP' "$log")
	ok=$(grep '^ok ' "$log" | grep -vc '# SKIP')
	notok=$(grep '^not ok ' "$log" | grep -vc '# SKIP')
	missing=0
	if [ -n "$plan" ] && [ "$plan" -gt $((ok + notok + skip)) ]; then
		missing=$((plan - ok - notok - skip))
	fi
	if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ] && [ "$missing" -eq 0 ]; then
		missing=1
	fi
	passed=$((passed + ok))
	skipped=$((skipped + skip))
	failed=$((failed + notok + missing))
	if [ "$notok" -ne 0 ] || [ "$missing" -ne 0 ]; then
		echo "FAIL $bin (exit $rc, $ok ok, $notok not ok, $missing missing)"
		sed 's/^/    /' "$log"
		bad_bins="$bad_bins $bin"
	else
		echo "ok   $bin ($ok$([ "$skip" -ne 0 ] && echo ", $skip skipped"))"
	fi
done

[ -n "$bad_bins" ] && echo "failing:$bad_bins"
if [ -n "$tally" ]; then
	echo "$passed $failed $skipped" >>"$tally"
	echo "stage: $passed ok, $failed not ok, $skipped skipped"
elif [ "$skipped" -ne 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
