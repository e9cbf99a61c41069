/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_trend.c — a method's trend (model/trend.c) on exact inputs: the
 * nearest-rank percentiles of each bucket checked by hand, version
 * buckets in first-seen order, a planted 3× step found at its bucket with
 * its shift, a flat series and a series of ties finding none, and the
 * permutation p-value the same on every run; the weighted onset equal to
 * the unweighted one when every weight is 1, and found where only the
 * weights show the shift: two campaigns, one sampling a slow model at 10 %
 * and one taking every capture of a fast one, the slow model tripling
 * from a planted day.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/trend.h"

/* A fixed pseudo-random noise in [0, n) for trace i (no state). */
static int64_t noise(uint64_t i, int64_t n)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	return (int64_t)(x % (uint64_t)n);
}

static void test_trend_day_buckets_nearest_rank_percentiles(void **state)
{
	struct rvs_trend t;
	static const int64_t d10[] = {5, 1, 3, 2, 4};

	(void)state;
	rvs_trend_init(&t, RVS_TREND_DAY);
	/* Day 11 first: the axis is in day order, not arrival order. */
	for (int64_t v = 20; v >= 1; v--)
		assert_int_equal(rvs_trend_add(&t, 11, "x", v * 1000, v * 1000 + 7), 0);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(rvs_trend_add(&t, 10, "y", d10[i], 10 * d10[i]), 0);
	assert_int_equal(rvs_trend_add(&t, 13, NULL, 42, 43), 0);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_int_equal(t.nb, 3);
	/* Day 10: 1..5; p50 is the ceil(2.5) = 3rd, p95 the ceil(4.75) = 5th. */
	assert_int_equal(t.b[0].first_day, 10);
	assert_int_equal(t.b[0].last_day, 10);
	assert_null(t.b[0].version);
	assert_int_equal(t.b[0].n, 5);
	assert_int_equal(t.b[0].self_p50, 3);
	assert_int_equal(t.b[0].self_p95, 5);
	assert_int_equal(t.b[0].incl_p50, 30);
	assert_int_equal(t.b[0].incl_p95, 50);
	/* Day 11: 1000..20000 by 1000; the 10th and the 19th. */
	assert_int_equal(t.b[1].first_day, 11);
	assert_int_equal(t.b[1].n, 20);
	assert_int_equal(t.b[1].self_p50, 10000);
	assert_int_equal(t.b[1].self_p95, 19000);
	assert_int_equal(t.b[1].incl_p50, 10007);
	assert_int_equal(t.b[1].incl_p95, 19007);
	/* Day 13 (no day 12 bucket: days without traces are not buckets). */
	assert_int_equal(t.b[2].first_day, 13);
	assert_int_equal(t.b[2].n, 1);
	assert_int_equal(t.b[2].self_p50, 42);
	assert_int_equal(t.b[2].self_p95, 42);
	assert_int_equal(t.b[2].incl_p95, 43);
	rvs_trend_release(&t);
	rvs_trend_release(&t);
}

static void test_trend_pct_nearest_rank_edges(void **state)
{
	int64_t one[] = {7}, two[] = {9, 3}, hundred[100];

	(void)state;
	assert_int_equal(rvs_trend_pct(one, 1, 50), 7);
	assert_int_equal(rvs_trend_pct(one, 1, 95), 7);
	assert_int_equal(rvs_trend_pct(two, 2, 50), 3); /* the 1st of 2 */
	assert_int_equal(rvs_trend_pct(two, 2, 95), 9);
	for (int i = 0; i < 100; i++)
		hundred[i] = 100 - i;
	assert_int_equal(rvs_trend_pct(hundred, 100, 50), 50);
	assert_int_equal(rvs_trend_pct(hundred, 100, 95), 95);
	assert_int_equal(rvs_trend_pct(hundred, 100, 100), 100);
}

static void test_trend_version_buckets_in_first_seen_order(void **state)
{
	struct rvs_trend t;

	(void)state;
	rvs_trend_init(&t, RVS_TREND_VERSION);
	assert_int_equal(rvs_trend_add(&t, 9, "2.0", 1, 1), 0);
	assert_int_equal(rvs_trend_add(&t, 5, "2.0", 2, 2), 0);
	assert_int_equal(rvs_trend_add(&t, 7, "10.0", 3, 3), 0);
	assert_int_equal(rvs_trend_add(&t, 3, "10.0", 4, 4), 0);
	assert_int_equal(rvs_trend_add(&t, 3, "9.0", 5, 5), 0);
	assert_int_equal(rvs_trend_add(&t, 8, "", 6, 6), 0);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_int_equal(t.nb, 4);
	/* First seen on day 3 both: then as versions, 9.0 before 10.0. */
	assert_string_equal(t.b[0].version, "9.0");
	assert_string_equal(t.b[1].version, "10.0");
	assert_int_equal(t.b[1].first_day, 3);
	assert_int_equal(t.b[1].last_day, 7);
	assert_int_equal(t.b[1].n, 2);
	assert_int_equal(t.b[1].self_p50, 3);
	assert_string_equal(t.b[2].version, "2.0");
	assert_int_equal(t.b[2].first_day, 5);
	assert_int_equal(t.b[2].last_day, 9);
	assert_string_equal(t.b[3].version, "");
	rvs_trend_release(&t);
}

/* days × per traces of noise around 1 ms; from day `step` on self × 3
 * (inclusive gets a constant 5 ms of callees on top). */
static void fill(struct rvs_trend *t, int days, int per, int step)
{
	uint64_t i = 0;
	for (int d = 0; d < days; d++)
		for (int k = 0; k < per; k++, i++) {
			int64_t s = 1000000 + noise(i, 1000000);
			if (step >= 0 && d >= step)
				s *= 3;
			assert_int_equal(rvs_trend_add(t, 20000 + d, "1.0", s, s + 5000000), 0);
		}
}

static void test_trend_planted_step_found_at_its_bucket(void **state)
{
	struct rvs_trend t;

	(void)state;
	rvs_trend_init(&t, RVS_TREND_DAY);
	fill(&t, 8, 12, 5);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_int_equal(t.nb, 8);
	assert_true(t.self.tested);
	assert_true(t.self.found);
	assert_int_equal(t.self.bucket, 5);
	assert_int_equal(t.b[t.self.bucket].first_day, 20005);
	assert_int_equal(t.self.before, 60);
	assert_int_equal(t.self.after, 36);
	assert_true(t.self.z > 0);
	/* No permutation of 96 traces puts the step's 36 as far apart. */
	assert_true(t.self.p == 1.0 / (1 + RVS_TREND_PERMUTATIONS));
	/* Medians: noise in [1, 2) ms before, three times that after. */
	assert_true(t.self.median_before >= 1000000 && t.self.median_before < 2000000);
	assert_true(t.self.median_after >= 3000000 && t.self.median_after < 6000000);
	assert_true(t.self.shift > 2.4 && t.self.shift < 3.6);
	/* Inclusive time moves with it (smaller relative shift, same onset). */
	assert_true(t.incl.found);
	assert_int_equal(t.incl.bucket, 5);
	assert_true(t.incl.shift > 1.2 && t.incl.shift < t.self.shift);
	rvs_trend_release(&t);
}

static void test_trend_flat_series_finds_no_onset(void **state)
{
	struct rvs_trend t;

	(void)state;
	rvs_trend_init(&t, RVS_TREND_DAY);
	fill(&t, 8, 12, -1);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_true(t.self.tested);
	assert_false(t.self.found);
	assert_true(t.self.p >= RVS_TREND_ALPHA);
	assert_false(t.incl.found);
	rvs_trend_release(&t);
}

static void test_trend_ties_and_one_bucket_run_no_test(void **state)
{
	struct rvs_trend t;

	(void)state;
	rvs_trend_init(&t, RVS_TREND_DAY);
	for (int d = 0; d < 4; d++)
		for (int k = 0; k < 5; k++)
			assert_int_equal(rvs_trend_add(&t, d, "1", 500, 500), 0);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_int_equal(t.nb, 4);
	assert_false(t.self.tested);
	assert_false(t.self.found);
	rvs_trend_release(&t);

	rvs_trend_init(&t, RVS_TREND_VERSION);
	for (int k = 0; k < 5; k++)
		assert_int_equal(rvs_trend_add(&t, k, "1", k, k), 0);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_int_equal(t.nb, 1);
	assert_false(t.self.tested);
	rvs_trend_release(&t);

	rvs_trend_init(&t, RVS_TREND_VERSION);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_int_equal(t.nb, 0);
	assert_false(t.incl.tested);
	rvs_trend_release(&t);
}

static void test_trend_p_value_same_on_every_run(void **state)
{
	struct rvs_trend a, b;

	(void)state;
	/* A weak step (× 1.1 is not 3): a p strictly between the bounds. */
	rvs_trend_init(&a, RVS_TREND_DAY);
	rvs_trend_init(&b, RVS_TREND_DAY);
	for (int r = 0; r < 2; r++) {
		struct rvs_trend *t = r ? &b : &a;
		for (uint64_t i = 0; i < 60; i++) {
			int64_t s = 1000 + noise(i, 1000);
			assert_int_equal(rvs_trend_add(t, (int64_t)i / 10, "1",
						       i >= 30 ? s * 11 / 10 : s, s),
					 0);
		}
		assert_int_equal(rvs_trend_compute(t), 0);
	}
	assert_true(a.self.tested);
	assert_true(a.self.p > 1.0 / (1 + RVS_TREND_PERMUTATIONS));
	assert_true(a.self.p == b.self.p);
	assert_int_equal(a.self.bucket, b.self.bucket);
	assert_true(a.self.z == b.self.z);
	rvs_trend_release(&a);
	rvs_trend_release(&b);
}

/* Weighted percentiles: with unit weights the nearest-rank ones; a value
 * of weight 10 counts as ten of it; a bucket counts its estimated and
 * unknown weights, and a weight that is no positive number counts as 1,
 * unknown. */
static void test_trend_weighted_percentiles(void **state)
{
	struct rvs_trend_wv x[20];
	int64_t v[20];
	struct rvs_trend t;

	(void)state;
	for (int p = 1; p <= 100; p++) {
		for (int i = 0; i < 20; i++) {
			x[i] = (struct rvs_trend_wv){(int64_t)(19 - i) * 7 % 20, 1.0};
			v[i] = x[i].v;
		}
		assert_int_equal(rvs_trend_wpct(x, 20, p), rvs_trend_pct(v, 20, p));
	}
	/* 1 and 2 of weight 1, 3 of weight 10 (as 1/0.1): 12 in all; the
	 * p50 wants 6 of weight, the p10 1.2 — the 2nd value; p8 0.96 the 1st. */
	x[0] = (struct rvs_trend_wv){3, 1 / 0.1};
	x[1] = (struct rvs_trend_wv){1, 1};
	x[2] = (struct rvs_trend_wv){2, 1};
	assert_int_equal(rvs_trend_wpct(x, 3, 50), 3);
	assert_int_equal(rvs_trend_wpct(x, 3, 10), 2);
	assert_int_equal(rvs_trend_wpct(x, 3, 8), 1);
	/* 10 × (1/0.1) + 10 × 1: the p50 is exactly the 10th unit (55 of 110
	 * when 10 values of 1/0.1 follow), whatever the sum's rounding. */
	for (int i = 0; i < 10; i++) {
		x[i] = (struct rvs_trend_wv){i + 1, 1};
		x[10 + i] = (struct rvs_trend_wv){100 + i, 1 / 0.1};
	}
	assert_int_equal(rvs_trend_wpct(x, 20, 50), 104);
	assert_int_equal(rvs_trend_wpct(x, 20, 95), 109);

	rvs_trend_init(&t, RVS_TREND_DAY);
	assert_int_equal(rvs_trend_add_weighted(&t, 1, "", 10, 10, 1 / 0.1, RVS_TREND_W_EXACT), 0);
	assert_int_equal(rvs_trend_add_weighted(&t, 1, "", 20, 20, 4, RVS_TREND_W_ESTIMATED), 0);
	assert_int_equal(rvs_trend_add_weighted(&t, 1, "", 30, 30, -1, RVS_TREND_W_EXACT), 0);
	assert_int_equal(rvs_trend_add(&t, 2, "", 5, 5), 0);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_int_equal(t.nb, 2);
	assert_true(t.b[0].w_n == 15);
	assert_int_equal(t.b[0].n_estimated, 1);
	assert_int_equal(t.b[0].n_unknown, 1);
	assert_int_equal(t.b[0].self_p50, 20);
	assert_int_equal(t.b[0].w_self_p50, 10); /* 10 of 15 reach 7.5 */
	assert_int_equal(t.b[0].w_incl_p95, 30);
	assert_int_equal(t.b[1].n_estimated + t.b[1].n_unknown, 0);
	assert_true(t.b[1].w_n == 1);
	rvs_trend_release(&t);
}

/* With every weight 1 the weighted test is the unweighted one: the same
 * split, z (to rounding), p (the same permutations) and medians. */
static void test_trend_weighted_onset_with_unit_weights_is_the_unweighted(void **state)
{
	struct rvs_trend t;

	(void)state;
	for (int weak = 0; weak < 2; weak++) {
		rvs_trend_init(&t, RVS_TREND_DAY);
		if (weak) /* × 1.1 from trace 30: p strictly between the bounds */
			for (uint64_t i = 0; i < 60; i++) {
				int64_t s = 1000 + noise(i, 1000);
				assert_int_equal(rvs_trend_add(&t, (int64_t)i / 10, "1",
							       i >= 30 ? s * 11 / 10 : s, s),
						 0);
			}
		else
			fill(&t, 8, 12, 5);
		assert_int_equal(rvs_trend_compute(&t), 0);
		for (int m = 0; m < 2; m++) {
			const struct rvs_trend_onset *u = m ? &t.incl : &t.self,
						     *w = m ? &t.w_incl : &t.w_self;
			assert_true(u->tested && w->tested);
			assert_int_equal(w->bucket, u->bucket);
			assert_true(fabs(w->z - u->z) <= 1e-9 * fabs(u->z));
			assert_true(w->p == u->p);
			assert_int_equal(w->found, u->found);
			assert_int_equal(w->median_before, u->median_before);
			assert_int_equal(w->median_after, u->median_after);
		}
		if (weak)
			assert_true(t.self.p > 1.0 / (1 + RVS_TREND_PERMUTATIONS));
		rvs_trend_release(&t);
	}
}

/* Ten days; each day FAST captures of a fast model, every one taken
 * (weight 1), and SLOW of a slow model sampled at 10 % (weight 10), both
 * in [1, 2) ms; from day STEP on the slow model takes three times as
 * long.  The slow model is half the fleet but a eleventh of the sample:
 * its step moves the fleet's distribution a lot and the sample's little.
 * drop: every weight 1 (as a server that dropped them). */
#define DAYS_W 10
#define FAST   40
#define SLOW   4
#define STEP   6

static void fill_campaigns(struct rvs_trend *t, int drop)
{
	uint64_t i = 0;

	for (int d = 0; d < DAYS_W; d++)
		for (int k = 0; k < FAST + SLOW; k++, i++) {
			int slow = k >= FAST;
			int64_t s = 1000000 + noise(i + 7777, 1000000);
			if (slow && d >= STEP)
				s *= 3;
			assert_int_equal(rvs_trend_add_weighted(t, 30000 + d, "1.0", s, s + 200000,
								drop || !slow ? 1 : 10,
								RVS_TREND_W_EXACT),
					 0);
		}
}

static void test_trend_weighted_onset_found_at_a_step_only_weights_show(void **state)
{
	struct rvs_trend t;

	(void)state;
	rvs_trend_init(&t, RVS_TREND_DAY);
	fill_campaigns(&t, 0);
	assert_int_equal(rvs_trend_compute(&t), 0);
	print_message("trend: unweighted bucket %zu z %.3f p %.4f; weighted bucket %zu z %.3f "
		      "p %.4f\n",
		      t.self.bucket, t.self.z, t.self.p, t.w_self.bucket, t.w_self.z, t.w_self.p);
	/* The sample: 16 of 176 traces after the step moved; not significant. */
	assert_true(t.self.tested);
	assert_false(t.self.found);
	/* The fleet: half of it moved, from the planted day. */
	assert_true(t.w_self.found);
	assert_int_equal(t.w_self.bucket, STEP);
	assert_int_equal(t.w_self.before, STEP * (FAST + SLOW));
	assert_true(t.w_self.z > 0);
	assert_true(t.w_self.p == 1.0 / (1 + RVS_TREND_PERMUTATIONS));
	assert_true(t.w_incl.found);
	assert_int_equal(t.w_incl.bucket, STEP);
	/* Weighted medians: the fleet's after is the slow model's low end
	 * (the fast half is below 2 ms, the slow from 3 ms). */
	assert_true(t.w_self.median_before >= 1000000 && t.w_self.median_before < 2000000);
	assert_true(t.w_self.median_after >= 1900000 && t.w_self.median_after < 3300000);
	rvs_trend_release(&t);

	/* Without the weights the step is not found: the weights found it. */
	rvs_trend_init(&t, RVS_TREND_DAY);
	fill_campaigns(&t, 1);
	assert_int_equal(rvs_trend_compute(&t), 0);
	assert_false(t.w_self.found);
	rvs_trend_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trend_day_buckets_nearest_rank_percentiles),
		cmocka_unit_test(test_trend_pct_nearest_rank_edges),
		cmocka_unit_test(test_trend_version_buckets_in_first_seen_order),
		cmocka_unit_test(test_trend_planted_step_found_at_its_bucket),
		cmocka_unit_test(test_trend_flat_series_finds_no_onset),
		cmocka_unit_test(test_trend_ties_and_one_bucket_run_no_test),
		cmocka_unit_test(test_trend_p_value_same_on_every_run),
		cmocka_unit_test(test_trend_weighted_percentiles),
		cmocka_unit_test(test_trend_weighted_onset_with_unit_weights_is_the_unweighted),
		cmocka_unit_test(test_trend_weighted_onset_found_at_a_step_only_weights_show),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
