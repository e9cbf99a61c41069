#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/pg_index_cost.sh [ROUNDS] [CAPTURES] [RING_KIB] [SUMMARIES] BIN...
# Indexing throughput on sqlite and PostgreSQL side by side, for one or
# more rearview-server binaries (a before and an after), interleaved: each
# round runs every binary on each backend, in a rotated order, with
# build/tests/server/bench_upload (32 devices; CAPTURES real captures of a
# RING_KIB ring, then SUMMARIES summary-only uploads in a separate run).
# PostgreSQL is one private cluster (deploy/pg-private.sh, fsync on) that
# only this script uses, so its figures per run are cluster-wide deltas:
# WAL bytes from pg_current_wal_lsn() and CPU from /proc (the postmaster
# with its reaped children, plus every live child), less the same deltas of
# a run that only sets up (a fresh database and its migrations, 32
# enrolments, one summary: "base", measured each round for each binary),
# divided by the uploads indexed.  Prints one line per run; medians are
# left to the reader.
set -u
ROUNDS=${1:-3}; NCAP=${2:-200}; KIB=${3:-1024}; NSUM=${4:-2000}
shift 4 2>/dev/null || { echo "usage: $0 ROUNDS CAPTURES RING_KIB SUMMARIES BIN..." >&2; exit 2; }
[ $# -ge 1 ] || { echo "name at least one rearview-server binary" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 1
BENCH=build/tests/server/bench_upload
. deploy/pg-private.sh
pgp_start rv-pgidx || { echo "$PGP_WHY"; exit 1; }
trap 'pgp_stop' EXIT INT TERM
HZ=$(getconf CLK_TCK)

pg_cpu_ticks() {
	pm=$(head -n 1 "$PGP_DIR/data/postmaster.pid")
	t=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$pm/stat")
	for c in $(cat /proc/$pm/task/*/children 2>/dev/null); do
		t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$c/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
wal() {
	pgp_as_pg "$PGP_BIN/psql" -h "$PGP_DIR" -p "$PGP_PORT" -d postgres -Atqc \
		"SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
}

BASE_W=0; BASE_C=0
run() { # BIN BACKEND KIND (cap, sum, or base: the set-up cost, kept in BASE_W/BASE_C)
	case $3 in
	cap) args="32 1 $NCAP $KIB" ;;
	sum) args="32 $NSUM 0 $KIB" ;;
	base) args="32 1 0 $KIB" ;;
	esac
	if [ "$2" = pg ]; then
		w0=$(wal); c0=$(pg_cpu_ticks)
		out=$(RVS_BENCH_BIN="$1" RVS_TEST_STORE=pg RVT_PG_HOST="$PGP_DIR" RVT_PG_PORT="$PGP_PORT" \
			$BENCH $args 2>/dev/null)
		w1=$(wal); c1=$(pg_cpu_ticks)
	else
		out=$(RVS_BENCH_BIN="$1" $BENCH $args 2>/dev/null)
	fi
	if [ "$3" = base ]; then
		BASE_W=$((w1 - w0)); BASE_C=$((c1 - c0))
		return
	fi
	if [ "$3" = cap ]; then
		line=$(echo "$out" | grep "captures/s (upload start")
		n=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "indexed") print $i }' | head -n 1)
		rate=$(echo "$line" | awk '{ for (i = 2; i <= NF; i++) if ($i == "captures/s") print $(i - 1) }')
	else
		line=$(echo "$out" | grep "uploads/s (upload start to last decode)")
		n=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "indexed") print $i }' | head -n 1)
		rate=$(echo "$line" | awk '{ for (i = 2; i <= NF; i++) if ($i == "uploads/s") print $(i - 1) }')
	fi
	extra=""
	if [ "$2" = pg ] && [ "${n:-0}" -gt 0 ]; then
		extra=$(awk -v w="$((w1 - w0 - BASE_W))" -v c="$((c1 - c0 - BASE_C))" -v n="$n" -v hz="$HZ" \
			'BEGIN { printf "  PG CPU %.2f ms/upload  WAL %.0f B/upload", c * 1000 / hz / n, w / n }')
	fi
	printf '%-40s %-6s %-3s indexed %5s  %8s /s%s  (load %s)\n' "$1" "$2" "$3" "${n:-?}" \
		"${rate:-?}" "$extra" "$(cut -d' ' -f1 /proc/loadavg)"
}

r=0
while [ $r -lt "$ROUNDS" ]; do
	for kind in cap sum; do
		for bin in "$@"; do
			run "$bin" pg base
			for be in sqlite pg; do
				run "$bin" $be $kind
			done
		done
	done
	r=$((r + 1))
	# rotate the binaries' order for the next round
	first=$1; shift; set -- "$@" "$first"
done
