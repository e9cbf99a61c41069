/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trend.h — a method's time as an axis (trend.c): the traces of a method
 * bucketed per capture day or per app version, each bucket's p50 and p95
 * of self and inclusive time, and the onset — the bucket at which the
 * series shifts, found by a change-point test.
 *
 * Percentiles are exact, by nearest rank: the p-th of n sorted values is
 * the ceil(p·n/100)-th (1-based).  Each trace also carries its capture's
 * weight (1/p, the inverse of the probability with which its campaign
 * took it), and each bucket also has weighted percentiles: the p-th is
 * the smallest value whose cumulative weight (values sorted ascending)
 * reaches p/100 of the bucket's total weight — with every weight 1 that is
 * exactly the nearest-rank one.  A bucket says how many of its weights are
 * estimates (a quota's censoring selection: most severe or first N) or
 * unknown (an older device: counted as 1).  The change point: for every
 * split of the bucket sequence into the traces before a bucket and those from it
 * on, the standardized Mann–Whitney statistic of "after" against
 * "before" (midranks for ties, tie-corrected variance); the split with the
 * largest |z| is the candidate, and its p-value is a permutation test of
 * that largest |z| itself (RVS_TREND_PERMUTATIONS shuffles of the traces
 * across the same bucket sizes, a fixed seed: the same input gives the
 * same p, on every machine), so scanning every split is accounted for.
 * The onset is reported only when p < RVS_TREND_ALPHA.
 *
 * The weighted onset is the same search with each trace counting with
 * its weight: for each split the weighted Mann–Whitney U (Σ w_i w_j over
 * the pairs of an after trace i and a before trace j with x_i > x_j, ties
 * half) over W_after · W_before — an estimate of the population's
 * P(after > before) — standardized as Mann–Whitney's z on each side's
 * effective size W² / Σ w² (with every weight 1 it is Mann–Whitney's z),
 * and its p the same permutation test of the largest |z|, each trace
 * permuted with its weight (the same shuffles as the unweighted test).
 * Its medians are weighted (rvs_trend_wpct).  It is exact only as far as
 * the weights are (the buckets' n_estimated, n_unknown).
 *
 * No HTTP, no SQL: the rows come from the caller (store.h's trend_read).
 * A struct rvs_trend is used by one thread at a time.
 */
#ifndef RVS_TREND_H
#define RVS_TREND_H

#include <stddef.h>
#include <stdint.h>

/* The test's fixed parameters. */
#define RVS_TREND_ALPHA	       0.01
#define RVS_TREND_PERMUTATIONS 999
#define RVS_TREND_SEED	       0x5eed7e4d5eed7e4dull

/* How traces are bucketed. */
enum rvs_trend_by {
	RVS_TREND_DAY,	   /* one bucket per capture day, in day order */
	RVS_TREND_VERSION, /* one per app version, ordered by the first day it was
			    * seen (then as versions, base/version.h) */
};

/* One bucket of computed figures. */
struct rvs_trend_bucket {
	int64_t first_day, last_day; /* days (unix s / 86400) of its traces; equal for DAY */
	const char *version;	     /* VERSION: the version (owned by the trend); DAY: NULL */
	size_t n;		     /* traces */
	int64_t self_p50, self_p95, incl_p50, incl_p95; /* ns, nearest rank */
	/* Weighted: the total weight, the weighted percentiles (ns), and the
	 * traces whose weight is an estimate (censored) or unknown; the
	 * weighted figures are exact when both are 0. */
	double w_n;
	int64_t w_self_p50, w_self_p95, w_incl_p50, w_incl_p95;
	size_t n_estimated, n_unknown;
};

/* The change-point test of one measure (self or inclusive); in a weighted
 * onset z is the weighted statistic's and the medians are weighted, while
 * before and after still count traces. */
struct rvs_trend_onset {
	int tested;	       /* 0: fewer than 2 buckets, or every value ties: no test ran */
	int found;	       /* tested and p < RVS_TREND_ALPHA */
	size_t bucket;	       /* the first bucket after the split (>= 1) */
	size_t before, after;  /* traces on each side */
	double z;	       /* Mann–Whitney z of after against before: > 0 slower after */
	double p;	       /* permutation p-value, (1 + k) / (1 + RVS_TREND_PERMUTATIONS) */
	int64_t median_before; /* ns, nearest-rank p50 of each side */
	int64_t median_after;
	double shift; /* median_after / median_before (0 when median_before is 0) */
};

struct rvs_trend {
	enum rvs_trend_by by;
	struct rvs_trend_bucket *b; /* after rvs_trend_compute: nb buckets in axis order */
	size_t nb;
	size_t n;		     /* traces added */
	struct rvs_trend_onset self; /* after rvs_trend_compute */
	struct rvs_trend_onset incl;
	struct rvs_trend_onset w_self; /* the weighted test, after rvs_trend_compute */
	struct rvs_trend_onset w_incl;
	struct rvs_trend_sample *s; /* the traces (private to trend.c) */
	size_t cap;
};

/* Starts an empty trend bucketed by (enum rvs_trend_by) in caller-owned
 * storage t; release it with rvs_trend_release. */
void rvs_trend_init(struct rvs_trend *t, enum rvs_trend_by by);

/* How exact a trace's weight is (as store.h's agg rows' wflag). */
enum { RVS_TREND_W_EXACT, RVS_TREND_W_ESTIMATED, RVS_TREND_W_UNKNOWN };

/* Adds one trace: its capture day, app version (copied; "" when none;
 * ignored when bucketing by day) and the method's self and inclusive ns
 * (>= 0), with weight 1, exact.  0 or -ENOMEM.  Not after
 * rvs_trend_compute. */
int rvs_trend_add(struct rvs_trend *t, int64_t day, const char *version, int64_t self_ns,
		  int64_t incl_ns);

/* rvs_trend_add with the capture's weight (> 0; anything else counts as
 * 1, unknown) and how exact it is (RVS_TREND_W_*). */
int rvs_trend_add_weighted(struct rvs_trend *t, int64_t day, const char *version, int64_t self_ns,
			   int64_t incl_ns, double weight, int wflag);

/* A weight as the trend counts it: weight itself when it is > 0 and
 * finite and *wflag is an RVS_TREND_W_*; else 1, and *wflag becomes
 * RVS_TREND_W_UNKNOWN.  Pure. */
double rvs_trend_weight(double weight, int *wflag);

/* Computes the buckets and the four onsets (self and inclusive,
 * unweighted and weighted) from the traces added (none: no buckets,
 * nothing tested).  Once.  0 or -ENOMEM (t then holds no
 * buckets). */
int rvs_trend_compute(struct rvs_trend *t);

/* Frees what t holds (t itself is the caller's); t may be released after
 * any step, or twice. */
void rvs_trend_release(struct rvs_trend *t);

/* The p-th percentile (1..100) of v[0..n) by nearest rank (n > 0); sorts v
 * in place.  Pure. */
int64_t rvs_trend_pct(int64_t *v, size_t n, int p);

/* A value and its weight (> 0), for rvs_trend_wpct. */
struct rvs_trend_wv {
	int64_t v;
	double w;
};

/* The weighted p-th percentile (1..100) of x[0..n) (n > 0): the smallest
 * value whose cumulative weight, values ascending, reaches p/100 of the
 * total (within a relative 1e-12, so sums of weights like 1/0.1 that a
 * double cannot hold exactly still land on the right value); sorts x in
 * place.  Pure. */
int64_t rvs_trend_wpct(struct rvs_trend_wv *x, size_t n, int p);

#endif
