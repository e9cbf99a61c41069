/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heatmap.c — an anomaly heatmap's cells (heatmap.h): traces counted per
 * column of time received and row of anomaly duration.
 *
 * Invariants: every bound is an integer and every cell half-open, so each
 * trace in the range with a duration >= 0 is in exactly one cell, and a
 * cell's traces are exactly those its bounds select in SQL (the aggregate
 * filter's since/until, dur_min/dur_max); columns align to multiples of
 * the width in UTC (unix time), the first and last cut to the range.
 */
#include "model/heatmap.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

/* The rows' lower edges: 0, then 1, 2, 5 × 10^k ns from 1 µs to 1000 s. */
static int64_t edge(size_t k)
{
	static const int64_t step[3] = {1, 2, 5};
	int64_t p = 1000;

	assert(k < RVS_HEATMAP_ROWS);
	if (!k)
		return 0;
	k--;
	for (size_t i = 0; i < k / 3; i++)
		p *= 10;
	return step[k % 3] * p;
}

int64_t rvs_heatmap_row_min(size_t k)
{
	return edge(k);
}

int64_t rvs_heatmap_row_max(size_t k)
{
	assert(k < RVS_HEATMAP_ROWS);
	return k + 1 < RVS_HEATMAP_ROWS ? edge(k + 1) : INT64_MAX;
}

size_t rvs_heatmap_row_of(int64_t d)
{
	size_t lo = 0, hi = RVS_HEATMAP_ROWS - 1;

	assert(d >= 0);
	/* The last row whose lower edge is <= d. */
	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2;
		if (edge(mid) <= d)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b && a < 0) ? q - 1 : q;
}

int64_t rvs_heatmap_auto_width(int64_t since, int64_t until)
{
	int64_t span = until - since;
	if (span <= 3 * RVS_HEATMAP_DAY)
		return RVS_HEATMAP_HOUR;
	if (span <= 400 * (int64_t)RVS_HEATMAP_DAY)
		return RVS_HEATMAP_DAY;
	return RVS_HEATMAP_WEEK;
}

int rvs_heatmap_init(struct rvs_heatmap *h, int64_t since, int64_t until, int64_t width)
{
	int64_t first, last;

	*h = (struct rvs_heatmap){0};
	if (since >= until || width < 1)
		return -EINVAL;
	first = floor_div(since, width);
	last = floor_div(until - 1, width);
	if (last - first + 1 > RVS_HEATMAP_MAX_COLS)
		return -EINVAL;
	h->since = since;
	h->until = until;
	h->width = width;
	h->ncols = (size_t)(last - first + 1);
	if (!(h->count = calloc(h->ncols * RVS_HEATMAP_ROWS, sizeof *h->count)))
		return -ENOMEM;
	return 0;
}

int rvs_heatmap_add(void *arg, int64_t t, int64_t d)
{
	struct rvs_heatmap *h = arg;
	size_t j;

	if (t < h->since || t >= h->until || d < 0)
		return 0;
	j = (size_t)(floor_div(t, h->width) - floor_div(h->since, h->width));
	assert(j < h->ncols);
	h->count[j * RVS_HEATMAP_ROWS + rvs_heatmap_row_of(d)]++;
	h->total++;
	return 0;
}

int64_t rvs_heatmap_col_since(const struct rvs_heatmap *h, size_t j)
{
	int64_t s = (floor_div(h->since, h->width) + (int64_t)j) * h->width;
	assert(j < h->ncols);
	return s > h->since ? s : h->since;
}

int64_t rvs_heatmap_col_until(const struct rvs_heatmap *h, size_t j)
{
	int64_t u = (floor_div(h->since, h->width) + (int64_t)j + 1) * h->width;
	assert(j < h->ncols);
	return u < h->until ? u : h->until;
}

int64_t rvs_heatmap_cell(const struct rvs_heatmap *h, size_t j, size_t k)
{
	assert(j < h->ncols && k < RVS_HEATMAP_ROWS);
	return h->count[j * RVS_HEATMAP_ROWS + k];
}

void rvs_heatmap_release(struct rvs_heatmap *h)
{
	free(h->count);
	h->count = NULL;
	h->ncols = 0;
}
