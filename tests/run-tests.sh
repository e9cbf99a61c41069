#!/bin/sh
# Runs cmocka test binaries in TAP mode and prints one closing line,
# `N passed, N failed`, counting every test case across all binaries.
#
# Skipped cases (cmocka's `# SKIP`) are counted apart.
# A binary that crashes or exits non-zero without reporting a failure counts
# its unreported cases (or at least one) as failed, so a crash is never a pass.
# Logs of failing binaries are printed in full; passing ones print one line.
#   tests/run-tests.sh BIN...      (RV_TEST_TIMEOUT: seconds per binary, default 600)
set -u

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
if [ "$skipped" -ne 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
