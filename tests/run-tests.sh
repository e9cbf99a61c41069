#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs cmocka test binaries in TAP mode, several at once, and prints one
# closing line, `N passed, N failed` (`, N skipped` when some were),
# counting every test case across all binaries.
#
#   tests/run-tests.sh [-j N] [--times FILE] [--tally FILE] BIN... [--alone BIN]...
#                      [--long BIN]...
#
#   -j N          binaries at once (default: RV_TEST_JOBS, else the number of
#                 online cores); -j 1 runs them one after another.
#   --alone BIN   BIN cannot share the machine (it needs a quiet CPU or a
#                 resource no other test may hold): it runs after the others,
#                 by itself.
#   --long BIN    BIN (also given as BIN or --alone BIN) runs for many minutes
#                 by design (it builds real programs): its hang guard is four
#                 times RV_TEST_TIMEOUT.
#   --times FILE  each binary's wall seconds (and, after its path, its CPU
#                 seconds) are kept in FILE; the next run
#                 starts the slowest binaries first (what it has not timed
#                 yet, in the order given, after them).  Without FILE (a
#                 clean checkout) the times in tests/test-times.seed order
#                 them, matched by the path from `tests/` on (`san/tests/…`
#                 for a sanitizer build's binary under a san/ directory), so
#                 that the longest binaries never start last in CI either.
#                 A run with RVS_TEST_STORE=pg keeps and matches its times
#                 apart (keys `pg:…`): a server test takes longer there.
#   RV_TEST_TIMEOUT  seconds per binary (default 1800: a guard against
#                 hangs, long enough for the slowest binary on a machine
#                 loaded many times over); a binary that runs longer is
#                 killed and counted as failed.
#
# Each binary's line gives its wall and CPU seconds (user + system of the
# binary and every process it waited for: the figure that holds up when the
# machine is loaded; daemons it did not wait for and the run's PostgreSQL
# are not in it).
# Skipped cases (cmocka's `# SKIP`) are counted apart.
# A binary that crashes or exits non-zero without reporting a failure counts
# its unreported cases (or at least one) as failed, so a crash is never a pass.
# Each binary prints one line when it ends; logs of failing binaries are
# printed in full, each in one piece, never interleaved with another's.
#
# `make check` runs several stages and wants one closing line for all:
#   tests/run-tests.sh --tally FILE BIN...   appends `passed failed skipped`
#       to FILE and prints a stage line that is not a closing line;
#   tests/run-tests.sh --total FILE          prints the closing line of the
#       sums in FILE; fails when any stage failed or FILE holds no stage.
#
# Parallelism without `wait -n` (POSIX sh): N workers walk the same list and
# each binary goes to the worker that first creates its claim directory
# (mkdir is atomic); output is serialised by a lock directory the same way.
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

usage() {
	echo "usage: $0 [-j N] [--times FILE] [--tally FILE] BIN... [--alone BIN]... [--long BIN]..." >&2
	exit 2
}

jobs=${RV_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
tally=""
times=""
# Times are kept and looked up by key: the binary's path, `pg:` before it
# on PostgreSQL.
pfx=""
[ "${RVS_TEST_STORE:-}" = pg ] && pfx="pg:"
work=$(mktemp -d "${TMPDIR:-/tmp}/rv-run-tests.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
: >"$work/shared"
: >"$work/alone"
: >"$work/long"
while [ $# -gt 0 ]; do
	case $1 in
	-j) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	--tally) [ $# -ge 2 ] || usage; tally=$2; shift 2 ;;
	--times) [ $# -ge 2 ] || usage; times=$2; shift 2 ;;
	--alone) [ $# -ge 2 ] || usage; echo "$2" >>"$work/alone"; shift 2 ;;
	--long) [ $# -ge 2 ] || usage; echo "$2" >>"$work/long"; shift 2 ;;
	-*) usage ;;
	*) echo "$1" >>"$work/shared"; shift ;;
	esac
done
case $jobs in '' | *[!0-9]* | 0) echo "$0: -j wants a positive number" >&2; exit 2 ;; esac

# Slowest first by the times kept from the last run (else by the seed's,
# keyed by the path from the last `tests/` on); the rest in order.
SEED=$(dirname "$0")/test-times.seed
order() {
	if [ -n "$times" ] && [ -s "$times" ]; then
		awk -v p="$pfx" 'NR == FNR { t[$2] = $1; next }
			{ print ((p $0 in t) ? t[p $0] : -1), FNR, $0 }' \
			"$times" "$1" | sort -k1,1gr -k2,2n | cut -d' ' -f3-
	elif [ -s "$SEED" ]; then
		awk -v p="$pfx" 'NR == FNR { if ($1 !~ /^#/) t[$2] = $1; next }
		     { k = $0; sub(/^.*tests\//, "tests/", k)
		       if ($0 ~ /(^|\/)san\//) k = "san/" k
		       k = p k
		       print ((k in t) ? t[k] : -1), FNR, $0 }' \
			"$SEED" "$1" | sort -k1,1gr -k2,2n | cut -d' ' -f3-
	else
		cat "$1"
	fi
}

# Runs binary number $1 ($2): its log and result files are $work/$1.*.
run_one() {
	n=$1
	bin=$2
	log=$work/$n.log
	start=$(date +%s.%N)
	# The shell's `times` (its children's CPU time so far) before and after:
	# the difference is the binary's.
	times >"$work/$n.cpu0"
	guard=${RV_TEST_TIMEOUT:-1800}
	grep -qxF "$bin" "$work/long" && guard=$((guard * 4))
	CMOCKA_MESSAGE_OUTPUT=TAP timeout -k 10 "$guard" "$bin" >"$log" 2>&1 </dev/null
	rc=$?
	times >"$work/$n.cpu1"
	end=$(date +%s.%N)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	cpu=$(awk 'function s(x, m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]*m/, "", x)
			sub(/s$/, "", x); return m * 60 + x }
		FNR == 2 { t += (FILENAME ~ /cpu1$/ ? 1 : -1) * (s($1) + s($2)) }
		END { printf "%.1f", t }' "$work/$n.cpu0" "$work/$n.cpu1")
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
	echo "$ok $((notok + missing)) $skip $secs $bin $cpu" >"$work/$n.result"
	until mkdir "$work/print.lock" 2>/dev/null; do sleep 0.05; done
	if [ "$notok" -ne 0 ] || [ "$missing" -ne 0 ]; then
		why="exit $rc"
		[ "$rc" -eq 124 ] && why="timed out after $guard s"
		echo "FAIL $bin ($why, $ok ok, $notok not ok, $missing missing, ${secs} s, ${cpu} s CPU)"
		sed 's/^/    /' "$log"
	else
		echo "ok   $bin ($ok$([ "$skip" -ne 0 ] && echo ", $skip skipped"), ${secs} s, ${cpu} s CPU)"
	fi
	rmdir "$work/print.lock"
}

# One worker: every binary of list $1 it manages to claim.
worker() {
	w_i=0
	while IFS= read -r w_bin; do
		w_i=$((w_i + 1))
		mkdir "$work/claim.$1.$w_i" 2>/dev/null && run_one "$1.$w_i" "$w_bin"
	done <"$work/$1.order"
}

order "$work/shared" >"$work/s.order"
order "$work/alone" >"$work/a.order"
i=0
while [ $i -lt "$jobs" ]; do
	worker s &
	i=$((i + 1))
done
wait
worker a

passed=0
failed=0
skipped=0
bad_bins=""
for r in "$work"/*.result; do
	[ -e "$r" ] || continue
	read -r p f s secs bin cpu <"$r"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	[ "$f" -ne 0 ] && bad_bins="$bad_bins $bin"
	cpusum=$(awk -v a="${cpusum:-0}" -v b="$cpu" 'BEGIN { printf "%.1f", a + b }')
	[ -n "$times" ] && echo "$secs $pfx$bin $cpu" >>"$work/times"
done
if [ -n "$times" ] && [ -s "$work/times" ]; then
	# Keep what this run did not time; replace what it did.
	{ [ -f "$times" ] && awk 'NR == FNR { seen[$2] = 1; next } !($2 in seen)' \
		"$work/times" "$times"; cat "$work/times"; } >"$work/times.new" &&
		mkdir -p "$(dirname "$times")" && mv "$work/times.new" "$times"
fi

[ -n "$bad_bins" ] && echo "failing:$bad_bins"
if [ -n "$tally" ]; then
	echo "$passed $failed $skipped" >>"$tally"
	echo "stage: $passed ok, $failed not ok, $skipped skipped (${cpusum:-0} CPU seconds in the test binaries)"
elif [ "$skipped" -ne 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
