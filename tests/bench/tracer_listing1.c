/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracer_listing1.c — `make bench` for librvtrace: Hubble's Listing 1
 * (recursive Test(depth=10, work, sum), ten calls = twenty trace points per
 * Test) built uninstrumented, with empty hooks, in call mode and in inline
 * mode (gcc), and uninstrumented / call mode with clang; each instrumented
 * build measured with tracing off and on.  Prints medians and minima (the
 * least disturbed figure on a shared machine) of 15 interleaved rounds: ns
 * per Test call and ns per trace point over the same compiler's
 * uninstrumented build, plus the raw cost of one counter read.  Arguments: the work values
 * to run (default 0 1 10 100 1000).  Results: tracer/BENCHMARKS.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rearview/trace-inline.h"
#include "rearview/trace.h"

typedef long (*test_fn)(int depth, int work, long sum);
long plain_test(int, int, long);
long call_test(int, int, long);
long inline_test(int, int, long);
long inline_c_test(int, int, long);
long clang_plain_test(int, int, long);
long clang_call_test(int, int, long);
long empty_test(int, int, long);

/* The empty hooks the "empty" build's calls were renamed to (objcopy). */
__attribute__((noinline, no_instrument_function)) void bench_empty_enter(void *fn, void *site);
__attribute__((noinline, no_instrument_function)) void bench_empty_exit(void *fn, void *site);
void bench_empty_enter(void *fn, void *site)
{
	(void)fn;
	(void)site;
	__asm__ __volatile__("");
}
void bench_empty_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
	__asm__ __volatile__("");
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile long sink;

/* ns per Test(10, work) call. */
static double run(test_fn f, int work, long iters)
{
	long sum = 1;
	double t0 = now_ns();
	for (long i = 0; i < iters; i++)
		sum = f(10, work, sum + 1);
	double t1 = now_ns();
	sink = sum;
	return (t1 - t0) / (double)iters;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define REPS 15
static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_d);
	return v[n / 2];
}

/* Median and minimum cost of one counter read in a tight loop. */
static void counter_read_ns(double *med, double *min)
{
	double v[REPS];
	const long n = 5000000;
	for (int r = 0; r < REPS; r++) {
		uint64_t acc = 0;
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			acc += rvt__counter();
		double t1 = now_ns();
		sink = (long)acc;
		v[r] = (t1 - t0) / (double)n;
	}
	*med = median_of(v, REPS);
	*min = v[0];
}

struct variant {
	const char *name;
	test_fn fn;
	int trace; /* run with tracing on */
	test_fn base;
};

/* Arguments: the work values to run (default 0 1 10 100 1000). */
int main(int argc, char **argv)
{
	/* The trace point's own cost is measured: the tracer must not mute
	 * Test() (it would, at these rates; RV_TRACE_MUTE, trace.h). */
	rvt_set_mute("off");
	int works[16] = {0, 1, 10, 100, 1000};
	size_t nworks = 5;
	if (argc > 1) {
		nworks = 0;
		for (int i = 1; i < argc && nworks < 16; i++) {
			char *end;
			long v = strtol(argv[i], &end, 10);
			if (*end != '\0' || v < 0 || v > 100000) {
				fprintf(stderr, "usage: %s [work...]\n", argv[0]);
				return 2;
			}
			works[nworks++] = (int)v;
		}
	}
	const struct variant vs[] = {
		{"gcc uninstrumented", plain_test, 0, plain_test},
		{"gcc empty hooks", empty_test, 0, plain_test},
		{"gcc call off", call_test, 0, plain_test},
		{"gcc call on", call_test, 1, plain_test},
		{"gcc inline off", inline_test, 0, plain_test},
		{"gcc inline on", inline_test, 1, plain_test},
		{"gcc inline-C off", inline_c_test, 0, plain_test},
		{"gcc inline-C on", inline_c_test, 1, plain_test},
		{"clang uninstrumented", clang_plain_test, 0, clang_plain_test},
		{"clang call off", clang_call_test, 0, clang_plain_test},
		{"clang call on", clang_call_test, 1, clang_plain_test},
	};
	const size_t nv = sizeof(vs) / sizeof(vs[0]);
	/* RVT_BENCH_ITERS: Test calls per round at work 0 (default 1000000);
	 * small values let the run go under valgrind for instruction counts.
	 * RVT_BENCH_OFF=1: skip the tracing-on variants (then each Test
	 * function runs only untraced, so its instruction count is the off
	 * path's). */
	long iters_base = 1000000;
	const char *ie = getenv("RVT_BENCH_ITERS");
	if (ie) {
		char *end;
		iters_base = strtol(ie, &end, 10);
		if (*end != '\0' || iters_base < 1) {
			fprintf(stderr, "bad RVT_BENCH_ITERS\n");
			return 2;
		}
	}
	const char *oe = getenv("RVT_BENCH_OFF");
	int off_only = oe && strcmp(oe, "1") == 0;
	double cmed, cmin;
	counter_read_ns(&cmed, &cmin);
	printf("counter read: %.2f ns (median of %d), min %.2f ns\n", cmed, REPS, cmin);
	printf("%-22s %5s %12s %14s %10s %10s\n", "variant", "work", "ns/Test", "ns/tracepoint",
	       "min ns/T", "min ns/tp");
	for (size_t w = 0; w < nworks; w++) {
		int work = works[w];
		long iters = iters_base / (1 + work);
		if (iters < 200)
			iters = 200;
		/* Rounds interleave the variants, so the load of a shared machine
		 * falls on all of them alike; medians over the rounds. */
		double t[sizeof(vs) / sizeof(vs[0])][REPS] = {{0}};
		for (int r = -1; r < REPS; r++) {
			for (size_t i = 0; i < nv; i++) {
				if (vs[i].trace && off_only)
					continue;
				if (vs[i].trace && rvt_start(0) != 0) {
					fprintf(stderr, "rvt_start failed\n");
					return 1;
				}
				/* round -1 is a warm-up */
				double x = run(vs[i].fn, work, r < 0 ? iters / 10 : iters);
				if (vs[i].trace)
					rvt_stop(0, 0);
				if (r >= 0)
					t[i][r] = x;
			}
		}
		double med[sizeof(vs) / sizeof(vs[0])], min[sizeof(vs) / sizeof(vs[0])];
		for (size_t i = 0; i < nv; i++) {
			med[i] = median_of(t[i], REPS);
			min[i] = t[i][0]; /* sorted by median_of() */
		}
		for (size_t i = 0; i < nv; i++) {
			if (vs[i].trace && off_only)
				continue;
			size_t b = 0;
			for (size_t j = 0; j < nv; j++)
				if (vs[j].fn == vs[i].base)
					b = j;
			printf("%-22s %5d %12.2f %14.3f %10.2f %10.3f\n", vs[i].name, work, med[i],
			       (med[i] - med[b]) / 20.0, min[i], (min[i] - min[b]) / 20.0);
		}
	}
	rvt_stop(0, 1);
	return 0;
}
