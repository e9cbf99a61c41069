/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_stat.h — the few helpers every micro-benchmark here repeats: a clock
 * in milliseconds and the median of a run of samples.  Header-only, test
 * use.  The machines are shared, so benches quote medians of several runs,
 * and CPU benches read the thread's CPU clock, which neighbours do not move.
 */
#ifndef RV_BENCH_STAT_H
#define RV_BENCH_STAT_H

#include <stdlib.h>
#include <time.h>

/* clk (CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC, …) in milliseconds. */
static inline double rvb_ms(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline int rvb_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v[0..n) ascending (so v[0] and v[n-1] are the extremes) and returns
 * the median, v[n/2]. */
static inline double rvb_sort_median(double *v, size_t n)
{
	qsort(v, n, sizeof v[0], rvb_cmp_double);
	return v[n / 2];
}

#endif
