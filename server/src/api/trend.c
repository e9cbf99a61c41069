/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trend.c — GET /api/v1/trend (trend.h; API.md "Trend"): the traces of a
 * method (of an app, device model, anomaly kind or issue when asked) read
 * through the store's trend_read, bucketed per capture day or per app
 * version by the model (model/trend.h), with each bucket's nearest-rank
 * p50/p95, beside them the p50/p95 weighted by each capture's selection
 * weight (saying where a censoring quota makes them estimates), and the
 * onset of a shift, unweighted and weighted.
 *
 * Invariants: every request value is checked here and bound by the store;
 * at most RVS_TREND_MAX_TRACES traces are read (the newest; "cut" says
 * when there were more), so a request's memory is bounded whatever the
 * fleet's size; strings reach JSON through jansson.
 */
#include "api/trend.h"
#include "model/trend.h"
#include "store/store.h"
#include "base/issue.h"
#include "base/json.h"
#include "base/params.h"
#include "base/text.h"
#include "http/reply.h"
#include "http/route.h"
#include "base/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define DAY_S 86400

static int add_row(void *arg, const struct rvs_trend_row *r)
{
	return rvs_trend_add_weighted(arg, r->day, r->version, r->self_ns, r->incl_ns, r->weight,
				      r->wflag);
}

/* "YYYY-MM-DD" of day (days since 1970-01-01, UTC). */
static json_t *date_of(int64_t day)
{
	time_t t = (time_t)(day * DAY_S);
	struct tm tm;
	char s[32];

	if (!gmtime_r(&t, &tm))
		return json_null();
	strftime(s, sizeof s, "%Y-%m-%d", &tm);
	return json_string(s);
}

/* A bucket's key on the axis: its date or its version. */
static json_t *key_of(const struct rvs_trend *t, size_t j)
{
	return t->by == RVS_TREND_DAY ? date_of(t->b[j].first_day) : rvs_json_str(t->b[j].version);
}

/* Why a weighted figure is not exact (NULL: it is). */
static const char *weight_note(size_t estimated, size_t unknown)
{
	return estimated ? "estimated: quota selection (most severe or first N) censors"
	       : unknown ? "partly unweighted: uploads without a selection count as 1"
			 : NULL;
}

/* A bucket: the unweighted (nearest-rank) figures, and beside them the
 * weighted ones with how exact they are. */
static json_t *bucket_json(const struct rvs_trend *t, size_t j)
{
	const struct rvs_trend_bucket *b = &t->b[j];
	const char *note = weight_note(b->n_estimated, b->n_unknown);
	json_t *w = json_pack("{s:f,s:{s:I,s:I},s:{s:I,s:I},s:I,s:I,s:b,s:o}", "count", b->w_n,
			      "self_ns", "p50", (json_int_t)b->w_self_p50, "p95",
			      (json_int_t)b->w_self_p95, "incl_ns", "p50",
			      (json_int_t)b->w_incl_p50, "p95", (json_int_t)b->w_incl_p95,
			      "traces_weight_estimated", (json_int_t)b->n_estimated,
			      "traces_weight_unknown", (json_int_t)b->n_unknown, "exact", !note,
			      "note", note ? json_string(note) : json_null());
	return json_pack("{s:o,s:o,s:o,s:I,s:I,s:I,s:{s:I,s:I},s:{s:I,s:I},s:o}", "key",
			 key_of(t, j), "first_day", date_of(b->first_day), "last_day",
			 date_of(b->last_day), "since", (json_int_t)(b->first_day * DAY_S), "until",
			 (json_int_t)((b->last_day + 1) * DAY_S), "count", (json_int_t)b->n,
			 "self_ns", "p50", (json_int_t)b->self_p50, "p95", (json_int_t)b->self_p95,
			 "incl_ns", "p50", (json_int_t)b->incl_p50, "p95", (json_int_t)b->incl_p95,
			 "weighted", w);
}

/* The best split of one measure (null when no test ran). */
static json_t *split_json(const struct rvs_trend *t, const struct rvs_trend_onset *o)
{
	if (!o->tested)
		return json_null();
	return json_pack("{s:I,s:o,s:o,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:b}", "bucket",
			 (json_int_t)o->bucket, "key", key_of(t, o->bucket), "day",
			 date_of(t->b[o->bucket].first_day), "p", o->p, "z", o->z, "shift",
			 o->shift, "median_before_ns", (json_int_t)o->median_before,
			 "median_after_ns", (json_int_t)o->median_after, "before",
			 (json_int_t)o->before, "after", (json_int_t)o->after, "found", o->found);
}

/* The weighted onsets (null: not significant) and how exact the weights
 * under them are. */
static json_t *onset_weighted_json(const struct rvs_trend *t, size_t est, size_t unk)
{
	const char *note = weight_note(est, unk);

	return json_pack("{s:o,s:o,s:s,s:b,s:o}", "self",
			 t->w_self.found ? split_json(t, &t->w_self) : json_null(), "incl",
			 t->w_incl.found ? split_json(t, &t->w_incl) : json_null(), "statistic",
			 "weighted Mann-Whitney z (each trace counting with its weight, on the "
			 "sides' effective sizes), largest |z| over every split; p by the same "
			 "permutations",
			 "exact", !note, "note", note ? json_string(note) : json_null());
}

static json_t *opt_str(const char *s)
{
	return s ? rvs_json_str(s) : json_null();
}

static json_t *trend_json(const struct rvs_trend *t, const struct rvs_trend_filter *f, int cut)
{
	json_t *buckets = json_array(), *doc;
	size_t est = 0, unk = 0;

	for (size_t j = 0; buckets && j < t->nb; j++) {
		est += t->b[j].n_estimated;
		unk += t->b[j].n_unknown;
		if (json_array_append_new(buckets, bucket_json(t, j))) {
			json_decref(buckets);
			return NULL;
		}
	}
	doc = json_pack(
		"{s:o,s:o,s:o,s:o,s:o,s:s,s:I,s:b,s:I,s:s,s:o,s:{s:o,s:o},s:{s:o,s:o},s:{s:s,s:f,s:"
		"i,s:s},s:{s:s,s:b,s:I,s:I,s:o}}",
		"method", rvs_json_str(f->method), "app", opt_str(f->app), "model",
		opt_str(f->model), "issue", opt_str(f->issue), "kind",
		f->has_kind ? json_integer(f->kind) : json_null(), "by",
		t->by == RVS_TREND_DAY ? "day" : "version", "traces", (json_int_t)t->n, "cut", cut,
		"max_traces", (json_int_t)RVS_TREND_MAX_TRACES, "percentiles", "nearest-rank",
		"buckets", buckets, "onset", "self",
		t->self.found ? split_json(t, &t->self) : json_null(), "incl",
		t->incl.found ? split_json(t, &t->incl) : json_null(), "best_split", "self",
		split_json(t, &t->self), "incl", split_json(t, &t->incl), "test", "statistic",
		"Mann-Whitney z of the traces after a bucket against those before, largest |z| over"
		" every split",
		"alpha", RVS_TREND_ALPHA, "permutations", RVS_TREND_PERMUTATIONS, "p",
		"permutation test of the largest |z|, fixed seed", "weighted", "percentiles",
		"the smallest value whose cumulative weight (1/p per capture) reaches p/100 of the"
		" bucket's total; onset_weighted: the same test with each trace counting with its"
		" weight",
		"exact", !weight_note(est, unk), "traces_weight_estimated", (json_int_t)est,
		"traces_weight_unknown", (json_int_t)unk, "note",
		weight_note(est, unk) ? json_string(weight_note(est, unk)) : json_null());
	if (doc && (json_object_set_new(doc, "onset_weighted", onset_weighted_json(t, est, unk)) ||
		    json_object_set_new(doc, "best_split_weighted",
					json_pack("{s:o,s:o}", "self", split_json(t, &t->w_self),
						  "incl", split_json(t, &t->w_incl))))) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

void rvs_trend_api(struct rvs_call *c)
{
	char method[1024], app[256], model[128], issue[32], kind[64], by[16];
	static const char *const names[] = {"method", "app", "model", "issue", "kind", "by"};
	char *const vals[] = {method, app, model, issue, kind, by};
	const size_t caps[] = {sizeof method, sizeof app,  sizeof model,
			       sizeof issue,  sizeof kind, sizeof by};
	int has[6];
	struct rvs_trend_filter f = {.method = method, .max_rows = RVS_TREND_MAX_TRACES};
	struct rvs_trend t;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char msg[64];
	int rc, cut = 0;
	json_t *doc;

	for (int i = 0; i < 6; i++)
		if ((has[i] = rvs_query_text(c->query, names[i], vals[i], caps[i])) < 0) {
			snprintf(msg, sizeof msg, "bad value for parameter: %s", names[i]);
			return rvs_query_set_error(c->q, 400, msg);
		}
	if (!has[0])
		return rvs_query_set_error(c->q, 400, "method is required");
	f.app = has[1] ? app : NULL;
	f.model = has[2] ? model : NULL;
	if (has[3] && !rvs_issue_id_ok(issue))
		return rvs_query_set_error(c->q, 400, "issue is 16 lowercase hex digits");
	f.issue = has[3] ? issue : NULL;
	if (has[4] && rvs_param_kind(kind, &f.kind))
		return rvs_query_set_error(c->q, 400, "bad value for parameter: kind");
	f.has_kind = has[4];
	if (has[5] && strcmp(by, "day") && strcmp(by, "version"))
		return rvs_query_set_error(c->q, 400, "by is day or version");
	rvs_trend_init(&t, has[5] && !strcmp(by, "version") ? RVS_TREND_VERSION : RVS_TREND_DAY);
	if (rvs_store_acquire(c->cfg->database, &ops, &st)) {
		rvs_trend_release(&t);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	rc = ops->trend_read(st, &f, add_row, &t, &cut);
	rvs_store_release(st);
	if (!rc)
		rc = rvs_trend_compute(&t);
	if (rc) {
		rvs_trend_release(&t);
		return rvs_query_set_error(
			c->q, rc == -ENOMEM || rvs_store_transient(rc) ? 503 : 500, "trend failed");
	}
	doc = trend_json(&t, &f, cut);
	rvs_trend_release(&t);
	rvs_query_reply(c->q, 200, doc);
}
