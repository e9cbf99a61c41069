#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/run.sh — `make bench-real`: builds every real program
# (tests/bench/real/<prog>.sh build; a program whose source cannot be had is
# skipped and said so), runs ROUNDS interleaved rounds of every mode of every
# program (each round runs the modes in a rotated order, so drift and other
# load fall on all modes alike), and prints one table: program, mode, median
# CPU seconds (user + system of the program, tests/bench/real/cpurun.c),
# overhead against plain as the mean of the paired per-round differences of
# CPU time with its paired-t 95 % interval, and from the captures: trace
# points per second of the program's CPU time, the seconds of it the default
# 32 MiB ring holds, how many functions the budget muted, the first named
# function of self time and in how many rounds it was the planted (or
# perf-confirmed hottest) one, and functions instrumented / total.
#
#   tests/bench/real/run.sh      (ROUNDS=10, PROGS="zstd sqlite3 lua gzip bc cmark")
#   PROGS=startup RUNS=40 tests/bench/real/run.sh    the fixed cost per process
#                                (startup.sh: an empty program, RUNS per row)
# Run from the repository root.  Other settings: see common.sh; a program's
# row label is its name, or NAME:VARIANT when RV_VARIANT is set (a build with
# other RV_FLAGS, e.g. a never-list).
set -eu
ROUNDS=${ROUNDS:-10}
PROGS=${PROGS:-zstd sqlite3 lua gzip bc cmark}
MODES="plain off on capture"
D=tests/bench/real
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
LABEL=${RV_VARIANT:+:$RV_VARIANT}

have=""
for p in $PROGS; do
	[ -f "$D/$p.sh" ] || continue
	rc=0
	sh "$D/$p.sh" build || rc=$?
	case $rc in
	0) have="$have $p" ;;
	77) echo "run.sh: $p skipped (source not available)" >&2 ;;
	*) echo "run.sh: $p: build failed ($rc)" >&2 ;;
	esac
done
[ -n "$have" ] || {
	echo "run.sh: no program could be built" >&2
	exit 1
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
	for p in $have; do
		# Rotate the order of the modes by round.
		set -- $MODES
		k=$(((r - 1) % 4))
		while [ "$k" -gt 0 ]; do
			m=$1
			shift
			set -- "$@" "$m"
			k=$((k - 1))
		done
		for m in "$@"; do
			line=$(sh "$D/$p.sh" run "$m")
			echo "$p$LABEL $m $r $line" >>"$T/raw"
		done
	done
	r=$((r + 1))
done

echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); $(uname -sr)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); rounds: $ROUNDS; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
# t quantiles (0.975) for 1..30 degrees of freedom, then 1.96.
awk -v modes="$MODES" '
BEGIN {
	split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", tq, " ")
	nm = split(modes, mo, " ")
	printf "%-12s %-8s %8s %22s %9s %7s %5s %6s  %s\n", "program", "mode", "cpu s", \
		"cpu overhead (95% CI)", "events/s", "ring s", "muted", "found", "top of self time"
}
{
	p = $1; m = $2; r = $3
	for (i = 4; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	sec[p, m, r] = f["cpu"]
	if (f["instrumented"] != "-") inst[p, m] = f["instrumented"]
	if (f["found"] != "-") { nf[p, m]++; if (f["found"] == "yes") yf[p, m]++ }
	if (f["evrate"] != "-") { rate[p, m] += f["evrate"]; nrate[p, m]++ }
	if (f["ring"] != "-") { ring[p, m] += f["ring"]; nring[p, m]++ }
	if (f["muted"] != "-") { mut[p, m] += f["muted"]; nmut[p, m]++ }
	if (f["top"] != "-") top[p, m, f["top"]]++
	if (!(p in seenp)) { seenp[p] = 1; order[++np] = p }
	if (r > maxr) maxr = r
}
function median(p, m,    n, i, j, v, t) {
	n = 0
	for (i = 1; i <= maxr; i++) if ((p, m, i) in sec) v[++n] = sec[p, m, i]
	for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
	if (n == 0) return -1
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function mosttop(p, m,    k, best, bn, parts) {
	best = "-"; bn = 0
	for (k in top) {
		split(k, parts, SUBSEP)
		if (parts[1] == p && parts[2] == m && top[k] > bn) { bn = top[k]; best = parts[3] }
	}
	return best
}
END {
	for (k = 1; k <= np; k++) {
		p = order[k]
		base = 0; nb = 0
		for (i = 1; i <= maxr; i++) if ((p, "plain", i) in sec) { base += sec[p, "plain", i]; nb++ }
		base = nb ? base / nb : 0
		for (a = 1; a <= nm; a++) {
			m = mo[a]
			med = median(p, m)
			if (med < 0) continue
			ov = "-"
			if (m != "plain" && base > 0) {
				n = 0; s = 0; ss = 0
				for (i = 1; i <= maxr; i++)
					if (((p, m, i) in sec) && ((p, "plain", i) in sec)) {
						d = sec[p, m, i] - sec[p, "plain", i]; n++; s += d; ss += d * d
					}
				mean = s / n
				sd = n > 1 ? sqrt((ss - n * mean * mean) / (n - 1)) : 0
				t = n - 1 <= 30 ? tq[n - 1] : 1.96
				hw = n > 1 ? t * sd / sqrt(n) : 0
				ov = sprintf("%+.1f%% [%+.1f, %+.1f]", 100 * mean / base, 100 * (mean - hw) / base, 100 * (mean + hw) / base)
			}
			rt = nrate[p, m] ? sprintf("%.3g", rate[p, m] / nrate[p, m]) : "-"
			rg = nring[p, m] ? sprintf("%.3g", ring[p, m] / nring[p, m]) : "-"
			mu = nmut[p, m] ? sprintf("%.0f", mut[p, m] / nmut[p, m]) : "-"
			fd = ((p, m) in nf) ? sprintf("%d/%d", yf[p, m], nf[p, m]) : "-"
			printf "%-12s %-8s %8.3f %22s %9s %7s %5s %6s  %s\n", p, m, med, ov, rt, rg, mu, fd, mosttop(p, m)
		}
	}
	print ""
	print "instrumented (traced / total functions):"
	for (k = 1; k <= np; k++)
		if ((order[k], "off") in inst) printf "  %s %s\n", order[k], inst[order[k], "off"]
}' "$T/raw"
