/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heatmap.h — an anomaly heatmap (heatmap.c): traces counted per cell of
 * time received (columns: hours, days or weeks of UTC, cut to the range)
 * against anomaly duration (rows: a log scale of 1-2-5 steps from 1 µs to
 * 1000 s, with [0, 1 µs) below and [1000 s, ∞) above).
 *
 * A cell is the half-open box [col_since, col_until) × [row_min, row_max)
 * in integers (seconds, nanoseconds), so the traces of a cell are exactly
 * those an aggregate filter with since/until and dur_min/dur_max of those
 * bounds selects: nothing is rounded.
 *
 * No HTTP, no SQL: the traces come from the caller (store.h's
 * heatmap_read).  Memory is the cells only (at most RVS_HEATMAP_MAX_COLS
 * × RVS_HEATMAP_ROWS counters), whatever the number of traces.  A struct
 * rvs_heatmap is used by one thread at a time.
 */
#ifndef RVS_HEATMAP_H
#define RVS_HEATMAP_H

#include <stddef.h>
#include <stdint.h>

#define RVS_HEATMAP_MAX_COLS 400
#define RVS_HEATMAP_ROWS     29 /* [0,1µs), 27 steps of 1-2-5 to 1000 s, [1000 s,∞) */
#define RVS_HEATMAP_HOUR     3600
#define RVS_HEATMAP_DAY	     86400
#define RVS_HEATMAP_WEEK     604800

struct rvs_heatmap {
	int64_t since, until; /* the range, unix seconds, since < until */
	int64_t width;	      /* seconds per column */
	size_t ncols;
	int64_t *count; /* [col * RVS_HEATMAP_ROWS + row] */
	int64_t total;	/* traces counted (in the range, duration >= 0) */
};

/* The column width a range gets when none is asked: hours up to 3 days,
 * days up to 400, weeks beyond.  Pure. */
int64_t rvs_heatmap_auto_width(int64_t since, int64_t until);

/* An empty heatmap of [since, until) in columns of width seconds, in
 * caller-owned storage h (release with rvs_heatmap_release).  0, -EINVAL
 * (since >= until, width < 1, or more than RVS_HEATMAP_MAX_COLS columns)
 * or -ENOMEM. */
int rvs_heatmap_init(struct rvs_heatmap *h, int64_t since, int64_t until, int64_t width);

/* Counts one trace received at t (unix s) whose anomaly lasted d ns;
 * outside the range or d < 0: not counted.  Always 0 (a store callback). */
int rvs_heatmap_add(void *h, int64_t t, int64_t d);

/* Column j's [since, until) (seconds; the range cuts the first and the
 * last).  j < h->ncols. */
int64_t rvs_heatmap_col_since(const struct rvs_heatmap *h, size_t j);
int64_t rvs_heatmap_col_until(const struct rvs_heatmap *h, size_t j);

/* Row k's [min, max) in ns (k < RVS_HEATMAP_ROWS; the last row's max is
 * INT64_MAX: no upper bound), and the row of a duration d >= 0.  Pure. */
int64_t rvs_heatmap_row_min(size_t k);
int64_t rvs_heatmap_row_max(size_t k);
size_t rvs_heatmap_row_of(int64_t d);

/* The count of cell (j, k). */
int64_t rvs_heatmap_cell(const struct rvs_heatmap *h, size_t j, size_t k);

/* Frees what h holds (h itself is the caller's); twice is harmless. */
void rvs_heatmap_release(struct rvs_heatmap *h);

#endif
