#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/sqlite3.sh — the sqlite3 shell from Debian's source as a
# real program for Rearview: the amalgamation is generated once (configure;
# make sqlite3.c shell.c — needs tclsh), then the shell is built
# uninstrumented and through rvcc, both with sqlite3-planted.c (the SQL
# function rv_slow(X, N), registered by SQLITE_EXTRA_INIT, doing its work in
# sqlite_planted_slow_fn) that a capture must name at the top of self time.
# The workload (an in-memory database): N rows inserted through a recursive
# CTE, an index, LIKE scans, GROUP BY, a self-join, updates, deletes, and
# last (just before the end, where a capture at an anomaly would look)
# rv_slow(a, 40000) over the rows with a % 50 = 1 (none of them deleted).
#
#   tests/bench/real/sqlite3.sh build          (quiet; exit 77 without the source)
#   tests/bench/real/sqlite3.sh run MODE       plain | off | on | capture; one line
#                                              (common.sh run_line: wall, cpu, ...)
#   tests/bench/real/sqlite3.sh check          small and fast: the planted function
#                                              found by name, called exactly once per
#                                              selected row, the output equal to the
#                                              uninstrumented shell's; exit 0/1/77
# Run from the repository root.  Settings: see common.sh; ROWS (default 200000).
# sqlite3.never is the hand-made never-list the bench used before the
# tracer's budget (RV_FLAGS=--rv-never=tests/bench/real/sqlite3.never
# RV_VARIANT=never).
set -eu
ROOT=$(pwd)
. "$ROOT/tests/bench/real/common.sh"
PLANTED=sqlite_planted_slow_fn
W="$REAL/sqlite3"
PLANT="$ROOT/tests/bench/real/sqlite3-planted.c"

amalgamation() {
	A="$W/amalgamation"
	[ -s "$A/sqlite3.c" ] && [ -s "$A/shell.c" ] && return 0
	command -v tclsh >/dev/null || {
		echo "sqlite3: tclsh missing (apt-get install tcl)" >&2
		exit 77
	}
	rm -rf "$A" && mkdir -p "$A"
	(cd "$A" && "$SRC/configure" --disable-tcl >"$W/configure.log" 2>&1 &&
		make -j2 sqlite3.c shell.c >"$W/amalgamation.log" 2>&1) || {
		cat "$W/configure.log" "$W/amalgamation.log" >&2
		exit 1
	}
}

build_one() { # name, CC
	out="$W/$1/sqlite3"
	up_to_date "$1" "$2" "$out" "$ROOT/tests/bench/real/sqlite3.sh" "$PLANT" $([ "$1" != plain ] && rv_deps) &&
		return 0
	rm -rf "$W/$1" && mkdir -p "$W/$1"
	D="-D_GNU_SOURCE -DSQLITE_EXTRA_INIT=rv_planted_init -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION"
	# shellcheck disable=SC2086
	(cd "$W/$1" && $2 -O2 -g $D -I"$A" -c "$A/sqlite3.c" -o sqlite3.o &&
		$2 -O2 -g $D -I"$A" -c "$A/shell.c" -o shell.o &&
		$2 -O2 -g $D -I"$A" -c "$PLANT" -o planted.o &&
		$2 -o sqlite3 sqlite3.o shell.o planted.o -lm) >"$W/$1.log" 2>&1 || {
		cat "$W/$1.log" >&2
		return 1
	}
	echo "$2" >"$out.cc"
}

workload() { # rows, rounds per rv_slow call
	cat <<SQL
CREATE TABLE t(a INTEGER PRIMARY KEY, b INT, c TEXT);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $1)
  INSERT INTO t SELECT i, (i * 7919) % 10007, printf('row-%d-%x', i, i * 2654435761) FROM s;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(b) FROM t WHERE c LIKE '%7f%';
SELECT b, count(*) FROM t GROUP BY b ORDER BY 2 DESC, 1 LIMIT 3;
UPDATE t SET b = b + 1 WHERE a % 3 = 0;
SELECT count(*), sum(t2.b) FROM t t1 JOIN t t2 ON t1.b = t2.a WHERE t1.a < $1 / 4;
DELETE FROM t WHERE a % 5 = 0;
SELECT count(*), max(c) FROM t;
SELECT sum(rv_slow(a, $2)) FROM t WHERE a % 50 = 1;
SQL
}

# run_once MODE ROWS TMP [ROUNDS]: prints the fields; the shell's output in TMP/out.
run_once() {
	mode=$1
	bin="$W/$RV_VARIANT/sqlite3"
	[ "$mode" = plain ] && bin="$W/plain/sqlite3"
	workload "$2" "${4:-40000}" >"$3/w.sql"
	timed "$3" env $(mode_env "$mode" "$3") "$bin" -batch :memory: <"$3/w.sql" >"$3/out"
	run_line "$mode" "$bin" "$3"
}

cmd=${1:-}
want_cmd "$cmd" "$0"
SRC=$(fetch_source sqlite3 sqlite3)
mkdir -p "$W"
amalgamation
A="$W/amalgamation"
build_one plain "$RV_CC"
build_one "$RV_VARIANT" "$(rv_cc)"
[ "$cmd" = build ] && exit 0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

if [ "$cmd" = run ]; then
	run_once "${2:?run MODE}" "${ROWS:-200000}" "$T"
	exit 0
fi

# check: 5000 rows; rv_slow (200000 rounds, so that it stands out in so
# short a run) runs exactly once per row with a % 50 = 1: 5000 / 50 rows.
# Exact counts: the budget (on by default) could mute a hot callee and fold
# its time into a caller's self time (RV_TRACE_MUTE).
export RV_TRACE_MUTE=off
run_once plain 5000 "$T" 200000 >/dev/null
mv "$T/out" "$T/out.plain"
rm -f "$T/cost"
line=$(run_once capture 5000 "$T" 200000)
cmp -s "$T/out" "$T/out.plain" || {
	echo "sqlite3 check: output differs from the uninstrumented shell" >&2
	diff "$T/out.plain" "$T/out" >&2
	exit 1
}
calls=$("$RVTRACE" summary --top 100 "$T/c.rvt" | awk -v p="$PLANTED" '$NF == p { print $1; exit }')
want=$((5000 / 50))
case "$line" in
*found=yes*) ;;
*)
	echo "sqlite3 check: $PLANTED not at the top of self time: $line" >&2
	"$RVTRACE" summary --top 5 "$T/c.rvt" >&2
	exit 1
	;;
esac
[ "$calls" = "$want" ] || {
	echo "sqlite3 check: $PLANTED called ${calls:-0} times in the capture, expected $want" >&2
	exit 1
}
echo "sqlite3 check: ok ($line; $PLANTED calls $calls)"
