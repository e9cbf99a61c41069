#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/check-stages.sh SET MAKE... — the stages of `make check` (SET
# check) and `make check-full` (SET full), run by the Makefile's
# check-stages with its own make command line (MAKE...), inside the run's
# PostgreSQL cluster (tests/with-pg.sh).
#
#   1/4 lint                      (the Makefile's check-lint)
#   2/4 DEVELOPER=1 build, tests  (check-build-dev, check-run-dev; build/)
#   3/4 the `pg` tests again on PostgreSQL (check-run-pg; build/)
#   4/4 ASan+UBSan build, tests   (check-build-san, check-run-san; build/san)
#
# Every stage runs even when an earlier one fails, and each adds its counts
# to the tally the Makefile's targets write (a failed lint or build counts
# as one failure); the caller prints the closing line.  On two cores the
# stages overlap where they do not compete for the same files: the npm
# trees both builds share (build/web, build/s3rver, build/openapi-tools)
# are installed first (check-assets), then the DEVELOPER=1 build and the
# sanitizer build run side by side with lint beside them; the sanitizer
# tests start when their build ends, beside the DEVELOPER=1 tests and then
# the PostgreSQL tests.  The output of what runs in the background is kept in
# build/.check/ and printed when it ends; the sanitizer tests print as
# they go.  The last lines
# give each stage's wall time (the figures README.md keeps) and its CPU
# time (user + system of everything the stage waited for; the run's
# PostgreSQL cluster is counted apart, by tests/with-pg.sh): on a loaded
# machine the CPU time is the figure that holds, and on two quiet cores the
# wall time of overlapped stages follows from it.
set -u
SET=$1
shift
LOGS=build/.check
mkdir -p "$LOGS"
rm -f "$LOGS"/*.rc "$LOGS"/*.start "$LOGS"/*.end "$LOGS"/*.cpu
pids=""
T0=$(date +%s)
# now: seconds since the stages began.
now() { echo $(($(date +%s) - T0)); }
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; exit 130' INT TERM

# stage_bg NAME TARGET: "$@" TARGET in the background, its output in NAME.log,
# its status in NAME.rc, its start and end (seconds) in NAME.start, NAME.end,
# its CPU time in NAME.cpu (the subshell's `times`: what its children used).
stage_bg() {
	name=$1
	target=$2
	shift 2
	(
		echo "$(now)" >"$LOGS/$name.start"
		"$@" RV_CHECK="$SET" "$target" >"$LOGS/$name.log" 2>&1
		rc=$?
		times >"$LOGS/$name.cpu"
		echo "$(now)" >"$LOGS/$name.end"
		echo $rc >"$LOGS/$name.rc"
	) &
	pids="$pids $!"
}
# wait_for NAME: until NAME.rc exists; its status.
wait_for() {
	while [ ! -f "$LOGS/$1.rc" ]; do sleep 1; done
	return "$(cat "$LOGS/$1.rc")"
}

# stage NAME TARGET: "$@" TARGET, its start, end and CPU time kept as
# stage_bg's are.
stage() {
	(
		name=$1
		target=$2
		shift 2
		echo "$(now)" >"$LOGS/$name.start"
		"$@" RV_CHECK="$SET" "$target"
		rc=$?
		times >"$LOGS/$name.cpu"
		echo "$(now)" >"$LOGS/$name.end"
		exit $rc
	)
}
# cpu NAME: the CPU seconds in NAME.cpu (the second line of `times`).
cpu() {
	awk 'function s(x, m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]*m/, "", x)
		sub(/s$/, "", x); return m * 60 + x }
	NR == 2 { printf "%.0f", s($1) + s($2) }' "$LOGS/$1.cpu" 2>/dev/null
}

echo "== $SET: lint in the background; the npm trees; the DEVELOPER=1 build (build/) beside the sanitizer build (build/san)"
stage_bg lint check-lint "$@"
"$@" check-assets
stage_bg san-build check-build-san "$@"

# The DEVELOPER=1 build, then its tests and then the PostgreSQL tests (they
# wait on the cluster more than they compute), in the background beside
# the sanitizer build and then its tests, which start as soon as their
# build is done; their output is printed when they end.
(
	if stage dev-build check-build-dev "$@" >"$LOGS/dev-build.log" 2>&1; then
		stage dev-tests check-run-dev "$@" >"$LOGS/dev-tests.log" 2>&1
		stage pg-tests check-run-pg "$@" >"$LOGS/pg-tests.log" 2>&1
		echo 0 >"$LOGS/dev-pg.rc"
	else
		echo 1 >"$LOGS/dev-pg.rc"
	fi
) &
pids="$pids $!"

echo "== $SET 4/4: ASan+UBSan tests (build/san)"
if wait_for san-build; then
	stage san-tests check-run-san "$@"
else
	echo "check: the sanitizer build failed; the end of its log ($LOGS/san-build.log):"
	tail -n 40 "$LOGS/san-build.log"
fi

wait_for lint
echo "== $SET 1/4: lint"
cat "$LOGS/lint.log"
if wait_for dev-pg; then
	echo "== $SET 2/4: the DEVELOPER=1 build (build/), its end"
	tail -n 5 "$LOGS/dev-build.log"
	echo "== $SET 2/4: DEVELOPER=1 tests (build/)"
	cat "$LOGS/dev-tests.log"
	echo "== $SET 3/4: the server tests flagged pg, on PostgreSQL (build/, RVS_TEST_STORE=pg)"
	cat "$LOGS/pg-tests.log"
else
	echo "check: the DEVELOPER=1 build failed (its tests and the PostgreSQL stage did not run); its errors ($LOGS/dev-build.log):"
	grep -E 'error|Error' "$LOGS/dev-build.log" | head -n 40 | grep . || tail -n 30 "$LOGS/dev-build.log"
fi
wait
echo "== $SET: stage times (seconds from the start: began-ended, wall, CPU)"
for st in lint dev-build dev-tests pg-tests san-build san-tests; do
	[ -f "$LOGS/$st.start" ] && [ -f "$LOGS/$st.end" ] || continue
	b=$(cat "$LOGS/$st.start")
	e=$(cat "$LOGS/$st.end")
	echo "   $st: $b-$e, $((e - b)) s, $(cpu $st) s CPU"
done
echo "   all stages: $(now) s"
