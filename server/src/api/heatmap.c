/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heatmap.c — GET /api/v1/heatmap (heatmap.h; API.md "Heatmap"): the
 * traces of an app, anomaly kind or issue received in [from, to), read
 * through the store's heatmap_read and counted per cell by the model
 * (model/heatmap.h); each cell carries the aggregate filter that selects
 * exactly its traces (since/until, dur_min/dur_max), so the cell's merged
 * flame graph (/api/v1/aggregate) and the diff against the rest of the
 * range (except_*) hold the traces the cell counts.
 *
 * Invariants: every request value is checked here and bound by the store;
 * memory is the cells (model/heatmap.h), whatever the fleet's size; strings
 * reach JSON through jansson.
 */
#include "api/heatmap.h"
#include "model/heatmap.h"
#include "store/store.h"
#include "base/config.h"
#include "base/issue.h"
#include "base/json.h"
#include "base/params.h"
#include "base/text.h"
#include "http/reply.h"
#include "http/route.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

/* The range when none is asked: the 30 days before to (or now). */
#define DEFAULT_SPAN (30 * 86400)

static json_t *opt_str(const char *s)
{
	return s ? rvs_json_str(s) : json_null();
}

/* The listed rows: from the lowest non-empty to the highest (none when
 * the heatmap is empty), into *lo, *hi (hi exclusive). */
static void row_span(const struct rvs_heatmap *h, size_t *lo, size_t *hi)
{
	*lo = RVS_HEATMAP_ROWS;
	*hi = 0;
	for (size_t j = 0; j < h->ncols; j++)
		for (size_t k = 0; k < RVS_HEATMAP_ROWS; k++)
			if (rvs_heatmap_cell(h, j, k)) {
				*lo = k < *lo ? k : *lo;
				*hi = k + 1 > *hi ? k + 1 : *hi;
			}
	if (*lo > *hi)
		*lo = *hi = 0;
}

static const char *width_name(int64_t w)
{
	return w == RVS_HEATMAP_HOUR ? "hour" : w == RVS_HEATMAP_DAY ? "day" : "week";
}

static json_t *heatmap_json(const struct rvs_heatmap *h, const struct rvs_heatmap_filter *f)
{
	json_t *cols = json_array(), *rows = json_array(), *cells = json_array();
	int64_t max = 0;
	size_t lo, hi;

	row_span(h, &lo, &hi);
	for (size_t j = 0; j < h->ncols; j++)
		json_array_append_new(cols,
				      json_pack("{s:I,s:I}", "since",
						(json_int_t)rvs_heatmap_col_since(h, j), "until",
						(json_int_t)rvs_heatmap_col_until(h, j)));
	for (size_t k = lo; k < hi; k++) {
		int64_t mx = rvs_heatmap_row_max(k);
		json_array_append_new(rows,
				      json_pack("{s:I,s:o}", "dur_min",
						(json_int_t)rvs_heatmap_row_min(k), "dur_max",
						mx == INT64_MAX ? json_null() : json_integer(mx)));
	}
	for (size_t j = 0; j < h->ncols; j++)
		for (size_t k = lo; k < hi; k++) {
			int64_t n = rvs_heatmap_cell(h, j, k);
			if (!n)
				continue;
			max = n > max ? n : max;
			json_array_append_new(cells,
					      json_pack("[I,I,I]", (json_int_t)j,
							(json_int_t)(k - lo), (json_int_t)n));
		}
	return json_pack("{s:o,s:o,s:o,s:I,s:I,s:s,s:I,s:s,s:I,s:I,s:o,s:o,s:o}", "app",
			 opt_str(f->app), "issue", opt_str(f->issue), "kind",
			 f->has_kind ? json_integer(f->kind) : json_null(), "from",
			 (json_int_t)h->since, "to", (json_int_t)h->until, "bucket",
			 width_name(h->width), "width_s", (json_int_t)h->width, "y", "duration_ns",
			 "traces", (json_int_t)h->total, "max_count", (json_int_t)max, "columns",
			 cols, "rows", rows, "cells", cells);
}

void rvs_heatmap_api(struct rvs_call *c)
{
	char app[256], issue[32], kind[64], from[32], to[32], bucket[16];
	static const char *const names[] = {"app", "issue", "kind", "from", "to", "bucket"};
	char *const vals[] = {app, issue, kind, from, to, bucket};
	const size_t caps[] = {sizeof app,  sizeof issue, sizeof kind,
			       sizeof from, sizeof to,	  sizeof bucket};
	int has[6];
	struct rvs_heatmap_filter f = {0};
	struct rvs_heatmap h;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	int64_t width = 0;
	char msg[64];
	int rc;

	for (int i = 0; i < 6; i++)
		if ((has[i] = rvs_query_text(c->query, names[i], vals[i], caps[i])) < 0) {
			snprintf(msg, sizeof msg, "bad value for parameter: %s", names[i]);
			return rvs_query_set_error(c->q, 400, msg);
		}
	f.app = has[0] ? app : NULL;
	if (has[1] && !rvs_issue_id_ok(issue))
		return rvs_query_set_error(c->q, 400, "issue is 16 lowercase hex digits");
	f.issue = has[1] ? issue : NULL;
	if (has[2] && rvs_param_kind(kind, &f.kind))
		return rvs_query_set_error(c->q, 400, "bad value for parameter: kind");
	f.has_kind = has[2];
	f.until = (int64_t)time(NULL) + 1;
	if (has[4] && rvs_parse_i64(to, &f.until))
		return rvs_query_set_error(c->q, 400, "to is unix seconds");
	f.since = f.until - DEFAULT_SPAN;
	if (has[3] && rvs_parse_i64(from, &f.since))
		return rvs_query_set_error(c->q, 400, "from is unix seconds");
	if (f.since >= f.until)
		return rvs_query_set_error(c->q, 400, "from must be before to");
	if (has[5]) {
		width = !strcmp(bucket, "hour")	  ? RVS_HEATMAP_HOUR
			: !strcmp(bucket, "day")  ? RVS_HEATMAP_DAY
			: !strcmp(bucket, "week") ? RVS_HEATMAP_WEEK
						  : 0;
		if (!width)
			return rvs_query_set_error(c->q, 400, "bucket is hour, day or week");
	} else {
		width = rvs_heatmap_auto_width(f.since, f.until);
	}
	if ((rc = rvs_heatmap_init(&h, f.since, f.until, width)))
		return rvs_query_set_error(c->q, rc == -ENOMEM ? 503 : 400,
					   rc == -ENOMEM ? "out of memory"
							 : "too many columns: at most 400 buckets");
	if (rvs_store_acquire(c->cfg->database, &ops, &st)) {
		rvs_heatmap_release(&h);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	rc = ops->heatmap_read(st, &f, rvs_heatmap_add, &h);
	rvs_store_release(st);
	if (rc) {
		rvs_heatmap_release(&h);
		return rvs_query_set_error(c->q, rvs_store_transient(rc) ? 503 : 500,
					   "heatmap failed");
	}
	rvs_query_reply(c->q, 200, heatmap_json(&h, &f));
	rvs_heatmap_release(&h);
}
