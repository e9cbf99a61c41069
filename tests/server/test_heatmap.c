/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_heatmap.c — the anomaly heatmap and the path it opens
 * (api/heatmap.c, model/heatmap.c, api/aggregate.c's cell filters and
 * /api/v1/aggregate/heaviest) on a synthetic fleet decoded by the real
 * decoder into a real store: sqlite, or PostgreSQL under
 * RVS_TEST_STORE=pg (store_env.h; the `pg` flag runs it there too).
 *
 * Every trace gets an exact received_at and anomaly duration (set in the
 * store after decoding: durations on and either side of the rows' edges,
 * times on and either side of the columns'), a method `work` of its own
 * inclusive time and a method named after it (mark_<i>), so that:
 * - each cell's count equals a recount done here from the fleet's own
 *   table with edges written out independently of model/heatmap.c;
 * - each cell's aggregate (/api/v1/aggregate with the cell's bounds) holds
 *   exactly the cell's traces: its marks are the recount's, no more;
 * - the diff of a cell against the rest of the range (except_*) splits the
 *   range's traces exactly (those without a duration fall in the rest),
 *   also where the range starts and ends inside a day and the cell is on
 *   its first, last or a whole day (the rest's whole days are read from
 *   the per-day rollup, its edge days' traces one by one);
 * - the captures where `work` is heaviest in a cell are the recount's top
 *   N by the per-trace time, in order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/query.h"
#include "blob/blob.h"
#include "model/heatmap.h"
#include "pipeline/decode.h"
#include "store/store.h"

#include "capbuild.h"
#include "sql_both.h"
#include "store_env.h"

#define APP   "com.example.heat"
#define OTHER "com.example.other"
#define T0    1700006400LL /* 2023-11-15 00:00 UTC: a multiple of a day */
#define SPAN  (3 * 86400LL)
#define ISSUE "00000000000000aa"

/* The rows' lower edges, written out: 0, then 1-2-5 steps from 1 µs. */
static const int64_t EDGES[] = {
	0,	     1000,	   2000,	 5000,	       10000,	      20000,
	50000,	     100000,	   200000,	 500000,       1000000,	      2000000,
	5000000,     10000000,	   20000000,	 50000000,     100000000,     200000000,
	500000000,   1000000000,   2000000000,	 5000000000,   10000000000,   20000000000,
	50000000000, 100000000000, 200000000000, 500000000000, 1000000000000,
};
#define NEDGES (sizeof EDGES / sizeof EDGES[0])

/* One trace of the fleet. */
struct tr {
	char id[40];
	const char *app;
	int64_t at, dur; /* dur -1: none (NULL in the store) */
	int64_t work;	 /* ns of `work` */
	int issue;
};

#define N 64
struct fx {
	char dir[64], db[256], blobs[160];
	struct rvs_store *s;
	struct rvs_decode *d;
	struct rvs_decoder dec;
	const struct rvs_store_ops *ops;
	struct tr t[N];
	int n;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct rvs_device_rec dev = {0};
	char path[128];

	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-heat-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	snprintf(path, sizeof path, "%s/t.db", f->dir);
	if (rvt_store_dsn(path, f->db, sizeof f->db)) {
		fprintf(stderr, "test_heatmap: no store: %s\n", rvt_store_why());
		return -1;
	}
	snprintf(f->blobs, sizeof f->blobs, "%s/blobs", f->dir);
	/* Acquired (shared), as the server holds its store: the API calls
	 * below use it and its connections instead of opening their own. */
	if (rvs_store_acquire(f->db, &f->ops, &f->s) || rvs_decode_new(f->db, &f->dec, &f->d))
		return -1;
	/* PostgreSQL partitions the traces by week received: the fleet's
	 * weeks, made as the store makes them. */
	if (rvt_store_is_pg() &&
	    rvt_db_exec(f->db, "SELECT rv_week_partitions(w) FROM generate_series(2809, 2812) w"))
		return -1;
	snprintf(dev.device_id, sizeof dev.device_id, "d-1");
	if (f->ops->device_add(f->s, &dev))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	rvs_decode_free(f->d);
	rvs_store_release(f->s);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

#define METHOD(m) (0x1000 + 16 * (uint64_t)(m))

/* main calls work for `work` ns, then mark_<i> for 100 ns. */
static capbuf capture(int i, int64_t work)
{
	capbuf c = {0};
	char mark[32];
	const char *names[3] = {"main", "work", mark};
	uint32_t t = 1000, w = (uint32_t)work;

	snprintf(mark, sizeof mark, "mark_%d", i);
	cb_header(&c, 0, 1000000000, 0, 1000000000000ull, 0x400000, 0);
	cb_entry(&c, METHOD(0), t);
	cb_entry(&c, METHOD(1), t + 10);
	cb_exit(&c, t + 10 + w);
	cb_entry(&c, METHOD(2), t + 20 + w);
	cb_exit(&c, t + 120 + w);
	cb_exit(&c, t + 200 + w);
	cb_u64at(&c, 16, t + 210 + w);
	cb_end_slots(&c);
	for (int m = 0; m < 3; m++)
		cb_symbol(&c, METHOD(m), METHOD(m), 0, names[m]);
	cb_finish(&c);
	return c;
}

/* Stores trace r received at its exact arrival, decodes it, then gives it
 * its exact duration and issue. */
static void add(struct fx *f, struct tr *r, int i)
{
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it = {0};
	capbuf c = capture(i, r->work);
	char hex[65], sql[512];

	assert_int_equal(rvs_blob_put(f->blobs, c.b, c.len, hex), 0);
	free(c.b);
	snprintf(r->id, sizeof r->id, "t-%032d", i + 1);
	snprintf(u.trace_id, sizeof u.trace_id, "%s", r->id);
	u.device_id = "d-1";
	memcpy(u.upload_id, &i, sizeof i);
	u.upload_id[15] = 1;
	u.app_id = r->app;
	u.app_version = "1.0";
	u.model = "Pixel 8";
	u.anomaly_kind = 1;
	u.payload_kind = 1;
	u.blob_sha256 = hex;
	assert_int_equal(f->ops->upload_add(f->s, &u), 0);
	/* Received at r->at before its decode, so that its aggregate rows
	 * (their bucket's day, the per-day rollup) are that day's, as a real
	 * upload's are. */
	snprintf(sql, sizeof sql, "UPDATE uploads SET received_at = %lld WHERE trace_id = '%s'",
		 (long long)r->at, r->id);
	assert_int_equal(rvt_db_exec(f->db, sql), 0);
	assert_int_equal(f->ops->decode_next_batch(f->s, 0, 1, &it, 1), 1);
	assert_string_equal(it.trace_id, u.trace_id);
	assert_int_equal(rvs_blob_path(f->blobs, hex, it.path, sizeof it.path), 0);
	f->dec.decode(f->dec.ctx, &it, 1);
	assert_int_equal(it.rc, 0);
	assert_int_equal(f->ops->decode_finish(f->s, &it, 1), 0);
	if (r->dur >= 0)
		snprintf(sql, sizeof sql,
			 "UPDATE traces SET received_at = %lld, duration_ns = %lld, issue = %s"
			 " WHERE trace_id = '%s'",
			 (long long)r->at, (long long)r->dur, r->issue ? "'" ISSUE "'" : "NULL",
			 r->id);
	else
		snprintf(sql, sizeof sql,
			 "UPDATE traces SET received_at = %lld, duration_ns = NULL, issue = %s"
			 " WHERE trace_id = '%s'",
			 (long long)r->at, r->issue ? "'" ISSUE "'" : "NULL", r->id);
	assert_int_equal(rvt_db_exec(f->db, sql), 0);
}

/* The fleet: durations on and beside the rows' edges, arrivals on and
 * beside the columns' (hours), a few outside the range, without a
 * duration, or of another app. */
static void fleet(struct fx *f)
{
	static const int64_t durs[] = {0,	999,	      1000,	     1999,	    2000,
				       4999,	5000,	      1000000,	     1999999,	    2000000,
				       2500000, 999999999999, 1000000000000, 3000000000000, -1};
	static const int64_t ats[] = {T0,	 T0 + 1,     T0 + 3599,		 T0 + 3600,
				      T0 + 7199, T0 + 86400, T0 + 86400 * 2 + 5, SPAN + T0 - 1,
				      T0 - 1,	 T0 + SPAN};
	for (int i = 0; i < N; i++) {
		struct tr *r = &f->t[i];
		r->app = i % 13 == 12 ? OTHER : APP;
		r->dur = durs[(i * 7) % (sizeof durs / sizeof durs[0])];
		r->at = ats[(i * 3) % (sizeof ats / sizeof ats[0])];
		/* Distinct per trace: the heaviest list has one order. */
		r->work = 10000 + 37 * (int64_t)((i * 29) % N);
		r->issue = i % 3 == 0;
		add(f, r, i);
	}
	f->n = N;
}

static json_t *api(struct fx *f, const char *path, const char *query, int *status)
{
	struct rvs_query_resp r;
	json_t *j;
	rvs_query_handle(f->db, f->blobs, path, query, &r);
	*status = r.status;
	j = json_loadb(r.body, r.len, 0, NULL);
	if (!j)
		fail_msg("%s?%s: not JSON: %.*s", path, query, (int)r.len, r.body);
	free(r.body);
	return j;
}

static int64_t iget(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v))
		fail_msg("no integer member %s", k);
	return json_integer_value(v);
}

/* The recount's row of d: the last edge <= d. */
static size_t row_of(int64_t d)
{
	size_t k = 0;
	while (k + 1 < NEDGES && EDGES[k + 1] <= d)
		k++;
	return k;
}

/* 1 when trace r is in the cell [since, until) x [dmin, dmax) (dmax -1:
 * unbounded) of the heatmap of app (and issue when only_issue). */
static int in_cell(const struct tr *r, int only_issue, int64_t since, int64_t until, int64_t dmin,
		   int64_t dmax)
{
	return !strcmp(r->app, APP) && (!only_issue || r->issue) && r->at >= since &&
	       r->at < until && r->dur >= 0 && r->dur >= dmin && (dmax < 0 || r->dur < dmax);
}

/* The set of mark_<i> nodes of an aggregate reply into seen[] (N). */
static void marks(json_t *doc, const char *prefix, int *seen)
{
	size_t i;
	json_t *n;
	char key[32];
	snprintf(key, sizeof key, "%straces", prefix);
	memset(seen, 0, N * sizeof *seen);
	json_array_foreach(json_object_get(doc, "nodes"), i, n)
	{
		const char *m = json_string_value(json_object_get(n, "method"));
		json_t *tr = json_object_get(n, key);
		int k;
		if (m && sscanf(m, "mark_%d", &k) == 1 && k >= 0 && k < N &&
		    json_integer_value(tr) > 0)
			seen[k] = 1;
	}
}

static int64_t node_of(json_t *doc, const char *name)
{
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(doc, "nodes"), i, n)
	{
		if (!strcmp(json_string_value(json_object_get(n, "method")), name))
			return iget(n, "node");
	}
	fail_msg("no node %s", name);
	return -1;
}

/* Every cell of the heatmap of app (of ISSUE when only_issue): its count
 * equals the recount, and its aggregate holds exactly its traces. */
static void check_map(struct fx *f, int only_issue, size_t *cells_checked)
{
	char q[512];
	int status, expect[N], seen[N];
	json_t *doc, *cols, *rows, *cell;
	int64_t counted = 0, total = 0;
	size_t i;

	snprintf(q, sizeof q, "app=%s&from=%lld&to=%lld%s", APP, (long long)T0,
		 (long long)(T0 + SPAN), only_issue ? "&issue=" ISSUE : "");
	doc = api(f, "/api/v1/heatmap", q, &status);
	assert_int_equal(status, 200);
	assert_string_equal(json_string_value(json_object_get(doc, "bucket")), "hour");
	cols = json_object_get(doc, "columns");
	rows = json_object_get(doc, "rows");
	assert_int_equal(json_array_size(cols), SPAN / 3600);
	for (int k = 0; k < f->n; k++)
		total += in_cell(&f->t[k], only_issue, T0, T0 + SPAN, 0, -1);
	assert_true(total > 10);
	assert_int_equal(iget(doc, "traces"), total);
	json_array_foreach(json_object_get(doc, "cells"), i, cell)
	{
		json_t *col = json_array_get(cols, json_integer_value(json_array_get(cell, 0)));
		json_t *row = json_array_get(rows, json_integer_value(json_array_get(cell, 1)));
		int64_t n = json_integer_value(json_array_get(cell, 2)), since = iget(col, "since"),
			until = iget(col, "until"), dmin = iget(row, "dur_min");
		json_t *dm = json_object_get(row, "dur_max");
		int64_t dmax = json_is_integer(dm) ? json_integer_value(dm) : -1, recount = 0;
		json_t *agg;

		/* The bounds are the independent grid's. */
		assert_int_equal((since - T0) % 3600, 0);
		assert_int_equal(until - since, 3600);
		assert_int_equal(dmin, EDGES[row_of(dmin)]);
		assert_int_equal(dmax, row_of(dmin) + 1 < NEDGES ? EDGES[row_of(dmin) + 1] : -1);
		for (int k = 0; k < f->n; k++) {
			expect[k] = in_cell(&f->t[k], only_issue, since, until, dmin, dmax);
			recount += expect[k];
		}
		assert_int_equal(n, recount);
		counted += n;
		/* The cell's merged flame graph: exactly these traces. */
		if (dmax >= 0)
			snprintf(q, sizeof q,
				 "app=%s&since=%lld&until=%lld&dur_min=%lld&dur_max=%lld%s", APP,
				 (long long)since, (long long)until, (long long)dmin,
				 (long long)dmax, only_issue ? "&issue=" ISSUE : "");
		else
			snprintf(q, sizeof q, "app=%s&since=%lld&until=%lld&dur_min=%lld%s", APP,
				 (long long)since, (long long)until, (long long)dmin,
				 only_issue ? "&issue=" ISSUE : "");
		agg = api(f, "/api/v1/aggregate", q, &status);
		assert_int_equal(status, 200);
		assert_int_equal(iget(agg, "traces"), n);
		marks(agg, "", seen);
		for (int k = 0; k < f->n; k++)
			if (seen[k] != expect[k])
				fail_msg("cell %lld+%lld ns at %lld: trace %d %s", (long long)dmin,
					 (long long)dmax, (long long)since, k,
					 expect[k] ? "missing" : "not in the cell");
		json_decref(agg);
		(*cells_checked)++;
	}
	/* No trace counted twice or lost. */
	assert_int_equal(counted, total);
	json_decref(doc);
}

static void test_heatmap_cells_equal_recount_and_hold_exactly_their_traces(void **state)
{
	struct fx *f = *state;
	size_t cells = 0;

	fleet(f);
	check_map(f, 0, &cells);
	assert_true(cells >= 8);
	check_map(f, 1, &cells);
}

/* The heatmap of every app (no filter) over the fleet's range, where
 * noagg[k] marks the traces whose aggregate was taken away: each cell's
 * count is the recount of every app's traces with an aggregate. */
static void check_fleet(struct fx *f, const int *noagg)
{
	char q[256];
	int status;
	json_t *doc, *cols, *rows, *cell;
	int64_t counted = 0, total = 0;
	size_t i;

	snprintf(q, sizeof q, "from=%lld&to=%lld&bucket=hour", (long long)T0,
		 (long long)(T0 + SPAN));
	doc = api(f, "/api/v1/heatmap", q, &status);
	assert_int_equal(status, 200);
	assert_true(json_is_null(json_object_get(doc, "app")));
	cols = json_object_get(doc, "columns");
	rows = json_object_get(doc, "rows");
	assert_int_equal(json_array_size(cols), SPAN / 3600);
	for (int k = 0; k < f->n; k++) {
		const struct tr *r = &f->t[k];
		total += !noagg[k] && r->at >= T0 && r->at < T0 + SPAN && r->dur >= 0;
	}
	assert_int_equal(iget(doc, "traces"), total);
	json_array_foreach(json_object_get(doc, "cells"), i, cell)
	{
		json_t *col = json_array_get(cols, json_integer_value(json_array_get(cell, 0)));
		json_t *row = json_array_get(rows, json_integer_value(json_array_get(cell, 1)));
		int64_t n = json_integer_value(json_array_get(cell, 2)), since = iget(col, "since"),
			until = iget(col, "until"), dmin = iget(row, "dur_min"), recount = 0;
		json_t *dm = json_object_get(row, "dur_max");
		int64_t dmax = json_is_integer(dm) ? json_integer_value(dm) : -1;

		assert_int_equal(dmin, EDGES[row_of(dmin)]);
		for (int k = 0; k < f->n; k++) {
			const struct tr *r = &f->t[k];
			recount += !noagg[k] && r->at >= since && r->at < until && r->dur >= 0 &&
				   r->dur >= dmin && (dmax < 0 || r->dur < dmax);
		}
		if (n != recount)
			fail_msg("fleet cell %lld+%lld ns at %lld: %lld, recount %lld",
				 (long long)dmin, (long long)dmax, (long long)since, (long long)n,
				 (long long)recount);
		counted += n;
	}
	assert_int_equal(counted, total);
	json_decref(doc);
}

/* Without an app, kind or issue the heatmap counts every app's traces
 * (sqlite reads them from an index of the traces with an aggregate, kept
 * by triggers on trace_agg): the recount's, also after two traces' (one of
 * each app) aggregates are deleted, which the heatmap then leaves out. */
static void test_heatmap_fleet_wide_counts_every_app_with_an_aggregate(void **state)
{
	struct fx *f = *state;
	int noagg[N] = {0}, gone[2] = {-1, -1};
	char sql[256];

	fleet(f);
	check_fleet(f, noagg);
	for (int k = 0; k < f->n; k++) {
		const struct tr *r = &f->t[k];
		int other = !strcmp(r->app, OTHER);
		if (gone[other] < 0 && r->at >= T0 && r->at < T0 + SPAN && r->dur >= 0)
			gone[other] = k;
	}
	assert_true(gone[0] >= 0 && gone[1] >= 0);
	for (int g = 0; g < 2; g++) {
		snprintf(sql, sizeof sql, "DELETE FROM trace_agg WHERE trace_id = '%s'",
			 f->t[gone[g]].id);
		assert_int_equal(rvt_db_exec(f->db, sql), 0);
		noagg[gone[g]] = 1;
	}
	check_fleet(f, noagg);
}

/* Every node of doc (the diff for query q) has the members of the per-trace
 * read's (weighted=1 reads every trace's rows whatever the filter). */
static void same_as_per_trace(struct fx *f, const char *q, json_t *doc)
{
	static const char *const keys[] = {
		"a_traces", "a_calls", "a_self_ns_per_trace", "a_incl_ns_per_trace",
		"b_traces", "b_calls", "b_self_ns_per_trace", "b_incl_ns_per_trace"};
	char wq[800];
	int status;
	json_t *w, *n, *m;
	size_t i, j;

	snprintf(wq, sizeof wq, "%s&weighted=1", q);
	w = api(f, "/api/v1/aggregate/diff", wq, &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(doc, "nodes_total"), iget(w, "nodes_total"));
	json_array_foreach(json_object_get(doc, "nodes"), i, n)
	{
		json_t *hit = NULL;
		json_array_foreach(json_object_get(w, "nodes"), j, m)
		{
			if (iget(m, "node") == iget(n, "node"))
				hit = m;
		}
		assert_non_null(hit);
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
			if (iget(n, keys[k]) != iget(hit, keys[k]))
				fail_msg("%s: node %lld %s: %lld, per trace %lld", q,
					 (long long)iget(n, "node"), keys[k],
					 (long long)iget(n, keys[k]),
					 (long long)iget(hit, keys[k]));
	}
	json_decref(w);
}

/* The diff of the cell [since, until) x [dmin, dmax) against the rest of
 * the range [from, to) (extra appended to the query): each side holds
 * exactly the recount's traces, and (without extra) every node's counts,
 * calls and means are the per-trace read's; the rest's count into
 * *rest_out. */
static void check_cell_rest(struct fx *f, int64_t from, int64_t to, int64_t since, int64_t until,
			    int64_t dmin, int64_t dmax, const char *extra, int64_t *rest_out)
{
	char q[768];
	int status, seen_a[N], seen_b[N];
	int64_t in = 0, rest = 0;
	json_t *doc;

	for (int k = 0; k < f->n; k++) {
		const struct tr *r = &f->t[k];
		in += in_cell(r, 0, since, until, dmin, dmax);
		rest += !strcmp(r->app, APP) && r->at >= from && r->at < to &&
			!in_cell(r, 0, since, until, dmin, dmax);
	}
	assert_true(in >= 1);
	snprintf(q, sizeof q,
		 "app=%s&a.since=%lld&a.until=%lld&a.dur_min=%lld&a.dur_max=%lld&b.since=%lld"
		 "&b.until=%lld&b.except_since=%lld&b.except_until=%lld&b.except_dur_min=%lld"
		 "&b.except_dur_max=%lld%s",
		 APP, (long long)since, (long long)until, (long long)dmin, (long long)dmax,
		 (long long)from, (long long)to, (long long)since, (long long)until,
		 (long long)dmin, (long long)dmax, extra);
	doc = api(f, "/api/v1/aggregate/diff", q, &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(json_object_get(doc, "a"), "traces"), in);
	assert_int_equal(iget(json_object_get(doc, "b"), "traces"), rest);
	marks(doc, "a_", seen_a);
	marks(doc, "b_", seen_b);
	for (int k = 0; k < f->n; k++) {
		const struct tr *r = &f->t[k];
		int a = in_cell(r, 0, since, until, dmin, dmax);
		int b = !strcmp(r->app, APP) && r->at >= from && r->at < to && !a;
		if (seen_a[k] != a || seen_b[k] != b)
			fail_msg("cell %lld..%lld of %lld..%lld: trace %d at %lld: a %d/%d b %d/%d",
				 (long long)since, (long long)until, (long long)from, (long long)to,
				 k, (long long)r->at, seen_a[k], a, seen_b[k], b);
	}
	/* The same members node by node as the per-trace read's. */
	if (!extra[0])
		same_as_per_trace(f, q, doc);
	*rest_out = rest;
	json_decref(doc);
}

/* The fullest cell and the rest of the range, as the web page links them. */
static void test_heatmap_cell_diff_against_rest_of_range_splits_the_range(void **state)
{
	struct fx *f = *state;
	int64_t rest;

	fleet(f);
	check_cell_rest(f, T0, T0 + SPAN, T0, T0 + 3600, 1000, 2000, "", &rest);
}

/* The rest of ranges that do not start or end on a day (days read from
 * the per-day rollup, corrected trace by trace at the ends: a day mostly
 * outside the range read per trace, one mostly inside from the rollup less
 * its traces outside), with the cell on the first day, the last day and a
 * day in between: each side exactly the recount's; and the rest's whole days do
 * come from the rollup (a count planted there shows, unweighted; the
 * weighted read, per trace, does not see it). */
static void test_heatmap_cell_diff_rest_with_partial_first_and_last_days(void **state)
{
	struct fx *f = *state;
	const int64_t from = T0 + 1, to = T0 + 2 * 86400 + 6, dmin = 0, dmax = 4000000000000;
	/* Ends late and early in their days: the first day read per trace,
	 * the last from the rollup less its part after the range. */
	const int64_t from2 = T0 - 1, to2 = T0 + 2 * 86400 + 50000;
	int64_t rest, again;
	char sql[256];

	fleet(f);
	check_cell_rest(f, from, to, T0 + 1, T0 + 3600, dmin, dmax, "", &rest);
	check_cell_rest(f, from, to, T0 + 2 * 86400, T0 + 2 * 86400 + 6, dmin, dmax, "", &rest);
	check_cell_rest(f, from2, to2, T0 - 1, T0, dmin, dmax, "", &rest);
	check_cell_rest(f, from2, to2, T0 + 2 * 86400, to2, dmin, dmax, "", &rest);
	check_cell_rest(f, from2, to2, T0, T0 + 3600, 1000, 2000, "", &rest);
	check_cell_rest(f, from, to, T0 + 86400, T0 + 86400 + 3600, dmin, dmax, "", &rest);
	check_cell_rest(f, from, to, T0 + 86400, T0 + 86400 + 3600, dmin, dmax, "&weighted=1",
			&again);
	assert_int_equal(again, rest);
	snprintf(sql, sizeof sql,
		 "UPDATE agg_day_sums SET traces = traces + 1000 WHERE day = %lld AND node IN"
		 " (SELECT node FROM agg_nodes WHERE parent = 0 AND app_id = '%s')",
		 (long long)(T0 / 86400 + 1), APP);
	assert_int_equal(rvt_db_exec(f->db, sql), 0);
	{
		char q[768];
		int status;
		json_t *doc;
		for (int weighted = 0; weighted < 2; weighted++) {
			snprintf(q, sizeof q,
				 "app=%s&a.since=%lld&a.until=%lld&b.since=%lld&b.until=%lld"
				 "&b.except_since=%lld&b.except_until=%lld&b.except_dur_min=%lld"
				 "&b.except_dur_max=%lld&weighted=%d",
				 APP, (long long)(T0 + 86400), (long long)(T0 + 86400 + 3600),
				 (long long)from, (long long)to, (long long)(T0 + 86400),
				 (long long)(T0 + 86400 + 3600), (long long)dmin, (long long)dmax,
				 weighted);
			doc = api(f, "/api/v1/aggregate/diff", q, &status);
			assert_int_equal(status, 200);
			assert_int_equal(iget(json_object_get(doc, "b"), "traces"),
					 weighted ? rest : rest + 1000);
			json_decref(doc);
		}
	}
}

/* A diff split in time (a.until = b.since), at ends inside a day: sides
 * with a range and no other filter are read from the per-day rollup
 * corrected per trace at the ends, as the rest of a cell is.  Each side
 * holds exactly the recount's traces, node by node the per-trace read's;
 * and the rollup is read (a count planted there shows, unweighted). */
static void test_heatmap_time_split_diff_reads_the_day_rollup(void **state)
{
	struct fx *f = *state;
	static const int64_t at[] = {T0 + 1, T0 + 43201, T0 + 86400 + 5, T0 + 2 * 86400 + 50000};
	char q[256], sql[256];
	int status;
	json_t *doc;

	fleet(f);
	for (size_t x = 0; x < sizeof at / sizeof at[0]; x++) {
		int64_t a = 0, b = 0;
		for (int k = 0; k < f->n; k++) {
			if (strcmp(f->t[k].app, APP))
				continue;
			a += f->t[k].at < at[x];
			b += f->t[k].at >= at[x];
		}
		assert_true(a > 0 && b > 0);
		snprintf(q, sizeof q, "app=%s&a.until=%lld&b.since=%lld", APP, (long long)at[x],
			 (long long)at[x]);
		doc = api(f, "/api/v1/aggregate/diff", q, &status);
		assert_int_equal(status, 200);
		assert_int_equal(iget(json_object_get(doc, "a"), "traces"), a);
		assert_int_equal(iget(json_object_get(doc, "b"), "traces"), b);
		same_as_per_trace(f, q, doc);
		json_decref(doc);
	}
	/* A bounded range on both sides, and the planted count. */
	snprintf(q, sizeof q, "app=%s&a.since=%lld&a.until=%lld&b.since=%lld&b.until=%lld", APP,
		 (long long)(T0 - 1), (long long)(T0 + 86400 + 5), (long long)(T0 + 1),
		 (long long)(T0 + 2 * 86400 + 6));
	doc = api(f, "/api/v1/aggregate/diff", q, &status);
	assert_int_equal(status, 200);
	same_as_per_trace(f, q, doc);
	{
		int64_t b = iget(json_object_get(doc, "b"), "traces");
		json_decref(doc);
		snprintf(sql, sizeof sql,
			 "UPDATE agg_day_sums SET traces = traces + 1000 WHERE day = %lld AND node"
			 " IN (SELECT node FROM agg_nodes WHERE parent = 0 AND app_id = '%s')",
			 (long long)(T0 / 86400 + 1), APP);
		assert_int_equal(rvt_db_exec(f->db, sql), 0);
		doc = api(f, "/api/v1/aggregate/diff", q, &status);
		assert_int_equal(status, 200);
		assert_int_equal(iget(json_object_get(doc, "b"), "traces"), b + 1000);
		json_decref(doc);
	}
}

static int cmp_work(const void *x, const void *y)
{
	const struct tr *a = *(const struct tr *const *)x, *b = *(const struct tr *const *)y;
	if (a->work != b->work)
		return a->work > b->work ? -1 : 1;
	return strcmp(a->id, b->id);
}

/* The captures where `work` is heaviest over the whole range: the
 * recount's top 5 by its time, in order, with its exact time. */
static void test_heatmap_heaviest_captures_equal_recount(void **state)
{
	struct fx *f = *state;
	const struct tr *top[N];
	char q[512];
	int status, n = 0;
	int64_t node;
	json_t *agg, *doc, *rows;
	const char *by[] = {"incl", "self"};

	fleet(f);
	for (int k = 0; k < f->n; k++)
		if (in_cell(&f->t[k], 0, T0, T0 + SPAN, 1000, -1))
			top[n++] = &f->t[k];
	assert_true(n > 5);
	qsort(top, (size_t)n, sizeof *top, cmp_work);
	snprintf(q, sizeof q, "app=%s&since=%lld&until=%lld&dur_min=1000", APP, (long long)T0,
		 (long long)(T0 + SPAN));
	agg = api(f, "/api/v1/aggregate", q, &status);
	assert_int_equal(status, 200);
	node = node_of(agg, "work");
	json_decref(agg);
	for (int b = 0; b < 2; b++) {
		char hq[640];
		snprintf(hq, sizeof hq, "%s&node=%lld&limit=5&by=%s", q, (long long)node, by[b]);
		doc = api(f, "/api/v1/aggregate/heaviest", hq, &status);
		assert_int_equal(status, 200);
		rows = json_object_get(doc, "traces");
		assert_int_equal(json_array_size(rows), 5);
		for (size_t i = 0; i < 5; i++) {
			json_t *r = json_array_get(rows, i);
			/* work is a leaf: self = inclusive = its time. */
			assert_string_equal(json_string_value(json_object_get(r, "trace_id")),
					    top[i]->id);
			assert_int_equal(iget(r, "incl_ns"), top[i]->work);
			assert_int_equal(iget(r, "self_ns"), top[i]->work);
			assert_int_equal(iget(r, "calls"), 1);
			assert_int_equal(iget(r, "duration_ns"), top[i]->dur);
			assert_int_equal(iget(r, "received_at"), top[i]->at);
		}
		json_decref(doc);
	}
}

static void test_heatmap_bad_parameters_are_400(void **state)
{
	struct fx *f = *state;
	static const char *const bad[][2] = {
		{"/api/v1/heatmap", "from=10&to=10"},
		{"/api/v1/heatmap", "from=0&to=100000000&bucket=hour"}, /* > 400 columns */
		{"/api/v1/heatmap", "bucket=minute"},
		{"/api/v1/heatmap", "issue=xyz"},
		{"/api/v1/heatmap", "from=abc"},
		{"/api/v1/heatmap", "zoom=2"},
		{"/api/v1/aggregate/heaviest", "app=a"},
		{"/api/v1/aggregate/heaviest", "node=0"},
		{"/api/v1/aggregate/heaviest", "node=1&limit=201"},
		{"/api/v1/aggregate/heaviest", "node=1&by=total"},
		{"/api/v1/aggregate", "dur_min=x"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int status;
		json_t *doc = api(f, bad[i][0], bad[i][1], &status);
		if (status != 400)
			fail_msg("%s?%s: %d", bad[i][0], bad[i][1], status);
		assert_non_null(json_object_get(doc, "error"));
		json_decref(doc);
	}
}

/* The model alone: the rows' edges, the columns' cut, the width by range. */
static void test_heatmap_model_edges_and_columns(void **state)
{
	struct rvs_heatmap h;
	(void)state;
	assert_int_equal(RVS_HEATMAP_ROWS, NEDGES);
	for (size_t k = 0; k < NEDGES; k++) {
		assert_int_equal(rvs_heatmap_row_min(k), EDGES[k]);
		assert_int_equal(rvs_heatmap_row_of(EDGES[k]), k);
		if (k)
			assert_int_equal(rvs_heatmap_row_of(EDGES[k] - 1), k - 1);
	}
	assert_int_equal(rvs_heatmap_row_max(NEDGES - 1), INT64_MAX);
	assert_int_equal(rvs_heatmap_row_of(INT64_MAX), NEDGES - 1);
	assert_int_equal(rvs_heatmap_auto_width(0, 3 * 86400), 3600);
	assert_int_equal(rvs_heatmap_auto_width(0, 3 * 86400 + 1), 86400);
	assert_int_equal(rvs_heatmap_auto_width(0, 401 * 86400), 604800);
	/* 10:30 to 13:15: three hours cut at both ends. */
	assert_int_equal(rvs_heatmap_init(&h, T0 + 37800, T0 + 47700, 3600), 0);
	assert_int_equal(h.ncols, 4);
	assert_int_equal(rvs_heatmap_col_since(&h, 0), T0 + 37800);
	assert_int_equal(rvs_heatmap_col_until(&h, 0), T0 + 39600);
	assert_int_equal(rvs_heatmap_col_until(&h, 3), T0 + 47700);
	rvs_heatmap_add(&h, T0 + 37799, 5);  /* before */
	rvs_heatmap_add(&h, T0 + 47700, 5);  /* at the end: outside */
	rvs_heatmap_add(&h, T0 + 39600, -1); /* no duration */
	rvs_heatmap_add(&h, T0 + 39600, 1000);
	assert_int_equal(h.total, 1);
	assert_int_equal(rvs_heatmap_cell(&h, 1, 1), 1);
	rvs_heatmap_release(&h);
	rvs_heatmap_release(&h);
	assert_int_equal(rvs_heatmap_init(&h, 0, 401 * 3600, 3600), -EINVAL);
	assert_int_equal(rvs_heatmap_init(&h, 5, 5, 3600), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heatmap_model_edges_and_columns),
		cmocka_unit_test_setup_teardown(
			test_heatmap_cells_equal_recount_and_hold_exactly_their_traces, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_heatmap_fleet_wide_counts_every_app_with_an_aggregate, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_heatmap_cell_diff_against_rest_of_range_splits_the_range, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_heatmap_cell_diff_rest_with_partial_first_and_last_days, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_heatmap_time_split_diff_reads_the_day_rollup,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_heatmap_heaviest_captures_equal_recount, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_heatmap_bad_parameters_are_400, setup,
						teardown),
	};
	return cmocka_run_group_tests_name(
		rvt_store_is_pg() ? "heatmap_postgresql" : "heatmap_sqlite", tests, NULL, NULL);
}
