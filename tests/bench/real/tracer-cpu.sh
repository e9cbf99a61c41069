#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/tracer-cpu.sh — what the tracer itself costs a traced
# real program, side by side for several librvtrace builds, in measures a
# noisy machine leaves alone (a shared VM moved `make bench-real`'s paired
# CPU-time intervals by ±8 % on 2026-12-01, its plain runs by 30 %):
#
#   tests/bench/real/tracer-cpu.sh PROG RUNS LIBDIR...
#   tests/bench/real/tracer-cpu.sh --calls PROG RUNS LIBDIR...
#
# PROG: zstd-c, zstd-d (zstd's compression, decompression), sqlite3, cmark,
# gzip or bc, each built by `make bench-real` under build/real/; each LIBDIR
# holds a librvtrace.so.0 the rv build is run with (LD_LIBRARY_PATH,
# RV_TRACE=1), RUNS times, the LIBDIRs interleaved.  Prints per LIBDIR the
# medians over the runs of: the milliseconds of perf cpu-clock samples
# (`perf record -e cpu-clock`) the main thread spent in the inline-mode
# hooks (rvt__inl_enter/exit), the milliseconds of the budget thread (every
# sample of the process's other thread), and the main thread's.  With
# --calls, instead: the calls a capture of the run recorded (`rvtrace info`)
# and the functions the budget muted.  Needs perf; run from the repository
# root after `make bench-real`.
set -eu
calls=0
if [ "${1:-}" = --calls ]; then
	calls=1
	shift
fi
[ $# -ge 3 ] || {
	sed -n '8,9p' "$0" >&2
	exit 2
}
P=$1
N=$2
shift 2
R=${BUILD:-build}/real
RVTRACE=${BUILD:-build}/bin/rvtrace
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
IN=/dev/null
case $P in
zstd-c) CMD="$R/zstd/rv/zstd -q -f -3 --single-thread --no-asyncio $R/zstd/corpus-20M -o $T/c.zst" ;;
zstd-d)
	"$R/zstd/plain/zstd" -q -f -3 --single-thread --no-asyncio "$R/zstd/corpus-20M" -o "$T/in.zst"
	CMD="$R/zstd/rv/zstd -q -d -f --no-asyncio $T/in.zst -o $T/out"
	;;
sqlite3)
	sed -n '/^workload()/,/^}/p' tests/bench/real/sqlite3.sh >"$T/wl.sh"
	echo 'workload 200000 40000' >>"$T/wl.sh"
	sh "$T/wl.sh" >"$T/w.sql"
	IN=$T/w.sql
	CMD="$R/sqlite3/rv/sqlite3 -batch :memory:"
	;;
cmark) CMD="$R/cmark/rv/build/src/cmark $R/cmark/spec-40.md" ;;
gzip) CMD="$R/gzip/rv/gzip/gzip -6 -c $R/gzip/corpus-20M" ;;
bc)
	printf 'scale=1200\n4*a(1)\nquit\n' >"$T/pi.bc"
	CMD="$R/bc/rv/bc/bc/bc -lq $T/pi.bc"
	;;
*)
	echo "tracer-cpu.sh: unknown program $P" >&2
	exit 2
	;;
esac
i=1
while [ "$i" -le "$N" ]; do
	k=0
	for L in "$@"; do
		k=$((k + 1))
		if [ "$calls" = 1 ]; then
			# shellcheck disable=SC2086
			LD_LIBRARY_PATH=$L RV_TRACE=1 RV_TRACE_FILE=$T/c.rvt $CMD <"$IN" >/dev/null 2>&1
			"$RVTRACE" info "$T/c.rvt" >"$T/info"
			echo "$k $(sed -n 's/^calls: *\([0-9]*\).*/\1/p' "$T/info") $(grep -c '^muted:' "$T/info" || true)" >>"$T/raw"
		else
			# shellcheck disable=SC2086
			LD_LIBRARY_PATH=$L RV_TRACE=1 perf record -q -e cpu-clock -F 10000 -o "$T/p" $CMD \
				<"$IN" >/dev/null 2>&1
			perf script -i "$T/p" -F tid,ip,sym 2>/dev/null | awk -v k="$k" '
				NR == 1 { m = $1 }
				$1 == m { main++; if ($3 ~ /^rvt__inl_(enter|exit)/) tp++; next }
				{ budget++ }
				END { printf "%s %.2f %.2f %.2f\n", k, tp / 10, budget / 10, main / 10 }' >>"$T/raw"
		fi
	done
	i=$((i + 1))
done
median() { # column of $T/raw for LIBDIR number $1
	awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$T/raw" | sort -n |
		awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
k=0
for L in "$@"; do
	k=$((k + 1))
	if [ "$calls" = 1 ]; then
		echo "$L: calls recorded $(median $k 2), functions muted $(median $k 3) (medians of $N)"
	else
		echo "$L: trace points $(median $k 2) ms, budget thread $(median $k 3) ms, main thread $(median $k 4) ms (medians of $N)"
	fi
done
