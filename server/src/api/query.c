/* SPDX-License-Identifier: Apache-2.0 */
/*
 * query.c — the JSON API (query.h, server/API.md).
 *
 * Invariants: the reads are the store's (store.h: SQL text fixed at
 * compile time, request values only as bound parameters, an absent filter
 * NULL).  Integers are parsed with end checks;
 * trace ids must be "t-" + 32 lowercase hex; export formats come from a
 * fixed table and never name a path.  Output strings go through jansson,
 * which escapes them; bytes that are not UTF-8 (method names are whatever
 * the device sent) are replaced by '?' first.
 */
#include "api/query.h"
#include "base/json.h"
#include "base/text.h"
#include "model/export.h"
#include "base/params.h"
#include "pipeline/trace_load.h"
#include "store/store.h"
#include "http/route.h"
#include "model/search.h"
#include "base/config.h"
#include "base/version.h"
#include "model/why.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rearview/analysis.h"
#include "rearview/summary.pb-c.h"
#include "api/search.h"

#define LIST_DEFAULT 50
#define LIST_MAX     500

/* ---- helpers --------------------------------------------------------------- */

/* The decoded value of query parameter `name`: 1 found, 0 absent, <0 bad
 * (params.h). */
static int qparam(const char *query, const char *name, char *out, size_t outsz)
{
	return rvs_query_param(query, name, out, outsz);
}

/* The reply helpers (reply.h) under the names this file's endpoints use. */
static void set_json(struct rvs_query_resp *r, int status, json_t *doc)
{
	rvs_query_reply(r, status, doc);
}

static void set_error(struct rvs_query_resp *r, int status, const char *msg)
{
	rvs_query_set_error(r, status, msg);
}

/* 400 naming the parameter whose value does not parse. */
static void bad_param(struct rvs_query_resp *r, const char *name)
{
	char msg[96];

	snprintf(msg, sizeof msg, "bad value for parameter: %s", name);
	set_error(r, 400, msg);
}

static int parse_limit(const char *query, int64_t *limit)
{
	return rvs_param_limit(query, LIST_DEFAULT, LIST_MAX, limit);
}

/* ---- GET /api/v1/traces ------------------------------------------------------ */

/* A store read's row as a JSON object keyed by column name. */
static json_t *jrow(const struct rvs_col *cols, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, cols[i].name,
				    cols[i].type == RVS_COL_INT	   ? json_integer(cols[i].i)
				    : cols[i].type == RVS_COL_TEXT ? rvs_json_str(cols[i].text)
								   : json_null());
	return o;
}

/* traces_list's rows: at most limit into items (without their rowid_,
 * kept in *last); one more sets *more. */
struct list_rows {
	json_t *items;
	int64_t limit, n, last;
	int more;
};

static int list_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct list_rows *x = arg;
	json_t *o;

	if (x->n == x->limit) {
		x->more = 1;
		return 1;
	}
	assert(n >= 1 && !strcmp(cols[0].name, "rowid_") && cols[0].type == RVS_COL_INT);
	x->last = cols[0].i;
	o = jrow(cols + 1, n - 1);
	json_array_append_new(x->items, o);
	x->n++;
	return 0;
}

/* traces_list's count row: its total into *(int64_t *)arg. */
static int count_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	if (n >= 1 && cols[0].type == RVS_COL_INT)
		*(int64_t *)arg = cols[0].i;
	return 0;
}

/* The plain (unsorted) trace list, newest first, through the store, and
 * the total its filter matches. */
static void list_traces(const struct rvs_store_ops *ops, struct rvs_store *st, const char *query,
			struct rvs_query_resp *r)
{
	static const char *const text_params[] = {"app", "version", "model", "os_build"};
	static const char *const int_params[] = {"kind", "min_severity", "since", "until"};
	struct rvs_trace_filter f = {0};
	char text[6][1024], v[64];
	const char **tp[] = {&f.app, &f.version, &f.model, &f.os_build, &f.signature, &f.method};
	int64_t *ip[] = {&f.kind, &f.min_severity, &f.since, &f.until};
	int *hp[] = {&f.has_kind, &f.has_min_severity, &f.has_since, &f.has_until};
	struct list_rows x = {0};
	int64_t total = 0;
	json_t *doc;
	int rc;

	if (parse_limit(query, &x.limit))
		return set_error(r, 400, "bad limit");
	for (int i = 0; i < 6; i++) {
		const char *name = i < 4 ? text_params[i] : i == 4 ? "signature" : "method";
		if ((rc = qparam(query, name, text[i], sizeof text[i])) < 0)
			return bad_param(r, name);
		if (rc)
			*tp[i] = text[i];
	}
	for (int i = 0; i < 4; i++) {
		/* kind: a number or a name (params.h). */
		if ((rc = qparam(query, int_params[i], v, sizeof v)) < 0 ||
		    (rc && (i ? rvs_parse_i64(v, ip[i]) : rvs_param_kind(v, ip[i]))))
			return bad_param(r, int_params[i]);
		*hp[i] = rc;
	}
	if ((rc = qparam(query, "cursor", v, sizeof v)) < 0 || (rc && rvs_parse_i64(v, &f.cursor)))
		return bad_param(r, "cursor");
	f.has_cursor = rc;
	f.limit = x.limit + 1;
	x.items = json_array();
	rc = ops->traces_list(st, &f, list_row, &x);
	if (rc < 0) {
		json_decref(x.items);
		return set_error(r, 500, "query failed");
	}
	/* The total the filter matches, whatever the page: counted up to the
	 * cap (one more says it is past). */
	f.count = 1;
	f.limit = RVS_LIST_TOTAL_CAP + 1;
	if (ops->traces_list(st, &f, count_row, &total) < 0) {
		json_decref(x.items);
		return set_error(r, 500, "query failed");
	}
	doc = json_pack("{s:o,s:I,s:b}", "traces", x.items, "total",
			(json_int_t)(total > RVS_LIST_TOTAL_CAP ? RVS_LIST_TOTAL_CAP : total),
			"total_capped", total > RVS_LIST_TOTAL_CAP);
	if (x.more) {
		snprintf(v, sizeof v, "%" PRId64, x.last);
		json_object_set_new(doc, "next_cursor", json_string(v));
	} else {
		json_object_set_new(doc, "next_cursor", json_null());
	}
	set_json(r, 200, doc);
}

/* ---- GET /api/v1/traces/{id} ------------------------------------------------ */

/* trace_read's rows: the head row's columns into doc, the others into
 * its "top_self" and "chains" arrays. */
static int trace_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	json_t *doc = arg, *o = jrow(cols, n);

	if (part == RVS_TRACE_HEAD) {
		json_object_update(doc, o);
		json_decref(o);
		json_object_set_new(doc, "top_self", json_array());
		json_object_set_new(doc, "chains", json_array());
		return 0;
	}
	json_array_append_new(
		json_object_get(doc, part == RVS_TRACE_TOP_SELF ? "top_self" : "chains"), o);
	return 0;
}

/* The "why" of a summary-only upload: from the device's Summary, if it
 * sent one with off-CPU figures; *out NULL otherwise.  0 or -ENOMEM / -EIO. */
static int summary_why(const struct rvs_store_ops *ops, struct rvs_store *st, const char *id,
		       json_t **out)
{
	struct rvs_index_lane *lane = NULL;
	struct rvs_index_meta m = {0};
	Rearview__Summary *s = NULL;
	int rc;

	*out = NULL;
	if ((rc = ops->index_lane_open(st, &lane)))
		return -EIO;
	rc = ops->index_upload_meta(lane, id, &m);
	ops->index_lane_close(lane);
	if (rc)
		return rc == -ENOENT ? 0 : -EIO;
	if (m.summary && m.summary_len)
		s = rearview__summary__unpack(NULL, m.summary_len, m.summary);
	free(m.summary);
	if (s)
		rc = rvs_why_json_summary(s, out);
	rearview__summary__free_unpacked(s, NULL);
	return rc;
}

/* The document's "why" (why.h): from the decoded capture when one is
 * stored, else from the device's summary; null when neither says (or the
 * capture no longer loads: the rest of the document still stands). */
static int why_into(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
		    struct rvs_store *st, const char *id, json_t *doc)
{
	rva_trace *t = NULL;
	json_t *why = NULL;
	int rc = rvs_query_load_trace(cfg, id, &t);

	if (rc == 0) {
		rc = rvs_why_json(t, &why);
		rva_trace_free(t);
	} else if (rc == -ENOENT) {
		rc = summary_why(ops, st, id, &why);
	} else {
		rc = 0;
	}
	if (rc == 0 && json_object_set_new(doc, "why", why ? why : json_null()) < 0)
		rc = -ENOMEM;
	return rc;
}

/* The trace document; its "why" (cfg not NULL) loads the capture. */
static void get_trace(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
		      struct rvs_store *st, const char *id, struct rvs_query_resp *r)
{
	json_t *doc = json_object();
	int rc = ops->trace_read(st, id, trace_row, doc);

	if (rc) {
		json_decref(doc);
		return set_error(r, rc == -ENOENT ? 404 : 500,
				 rc == -ENOENT ? "no such trace" : "query failed");
	}
	if (cfg && why_into(cfg, ops, st, id, doc)) {
		json_decref(doc);
		return set_error(r, 500, "query failed");
	}
	set_json(r, 200, doc);
}

/* ---- GET /api/v1/traces/{id}/export?format=F -------------------------------- */

/* Loads the trace and hands it out as r->stream: the body is written later,
 * while it is sent (the HTTP layer streams it with backpressure), so an
 * export's memory is the trace plus a few chunks whatever its size. */
static void export_trace(const struct rvs_config *cfg, const char *id, const char *query,
			 json_t *row, struct rvs_query_resp *r)
{
	const struct rvs_export_fmt *f;
	struct rvs_export *x;
	char fmt[32];
	rva_trace *t = NULL;
	int rc;

	if (qparam(query, "format", fmt, sizeof fmt) != 1)
		return set_error(r, 400, "format required");
	if (!(f = rvs_export_format(fmt)))
		return set_error(r, 400, "unknown format");
	rc = rvs_query_load_trace(cfg, id, &t);
	if (rc == -ENOENT)
		return set_error(r, 404, "no decoded capture for this trace");
	if (rc == -EIO)
		return set_error(r, 500, "blob unreadable");
	if (rc)
		return set_error(r, 500, "capture does not decode");
	if (rvs_export_new(f, t, id, &x)) {
		rva_trace_free(t);
		return set_error(r, 500, "out of memory");
	}
	if (rvs_export_set_origin(x, json_string_value(json_object_get(row, "app_id")),
				  json_string_value(json_object_get(row, "app_version")),
				  json_string_value(json_object_get(row, "device_id")),
				  json_string_value(json_object_get(row, "model")))) {
		rvs_export_free(x);
		return set_error(r, 500, "out of memory");
	}
	r->stream = x;
	r->status = 200;
	r->content_type = f->ctype;
	snprintf(r->disposition, sizeof r->disposition, "attachment; filename=\"%s.%s\"", id,
		 f->ext);
}

/* ---- GET /api/v1/methods/{name} --------------------------------------------- */

/* One integer (the first column of the only row) of a method read, or -1
 * on error or no row. */
static int int_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	int64_t *v = arg;
	*v = n >= 1 && cols[0].type == RVS_COL_INT ? cols[0].i : -1;
	return 0;
}

static int64_t method_int(const struct rvs_store_ops *ops, struct rvs_store *st, int part,
			  const char *name, int64_t arg)
{
	int64_t v = -1;
	if (ops->method_read(st, part, name, arg, 0, NULL, NULL, int_row, &v))
		return -1;
	return v;
}

/* {"p50","p95"} of self or inclusive time (nearest rank), read off the
 * store's (method, col) index: no sort. */
static json_t *method_pcts(const struct rvs_store_ops *ops, struct rvs_store *st, const char *name,
			   int64_t n, int incl)
{
	int part = incl ? RVS_METHOD_INCL_NTH : RVS_METHOD_SELF_NTH;
	int64_t k50 = (50 * n + 99) / 100, k95 = (95 * n + 99) / 100;
	int64_t p50 = method_int(ops, st, part, name, k50 ? k50 - 1 : 0);
	int64_t p95 = method_int(ops, st, part, name, k95 ? k95 - 1 : 0);
	if (p50 < 0 || p95 < 0)
		return NULL;
	return json_pack("{s:I,s:I}", "p50", (json_int_t)p50, "p95", (json_int_t)p95);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static int64_t pct(const int64_t *v, size_t n, int p)
{
	size_t k = (size_t)((p * n + 99) / 100);
	return v[k ? k - 1 : 0];
}

/* Per-trace self / inclusive totals of a method, for percentiles. */
struct samples {
	int64_t *self, *incl;
	size_t n, cap;
};

static int samples_add(struct samples *s, int64_t self, int64_t incl)
{
	int64_t *g;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		if (!(g = realloc(s->self, cap * sizeof *g)))
			return -ENOMEM;
		s->self = g;
		if (!(g = realloc(s->incl, cap * sizeof *g)))
			return -ENOMEM;
		s->incl = g;
		s->cap = cap;
	}
	s->self[s->n] = self;
	s->incl[s->n] = incl;
	s->n++;
	return 0;
}

/* Sets obj's "count" and, when there are samples, "self_ns" / "incl_ns"
 * {p50, p95} (nearest rank); then empties s for the next group. */
static void samples_into(struct samples *s, json_t *obj)
{
	json_object_set_new(obj, "count", json_integer((json_int_t)s->n));
	if (s->n) {
		qsort(s->self, s->n, sizeof *s->self, cmp_i64);
		qsort(s->incl, s->n, sizeof *s->incl, cmp_i64);
		json_object_set_new(obj, "self_ns",
				    json_pack("{s:I,s:I}", "p50",
					      (json_int_t)pct(s->self, s->n, 50), "p95",
					      (json_int_t)pct(s->self, s->n, 95)));
		json_object_set_new(obj, "incl_ns",
				    json_pack("{s:I,s:I}", "p50",
					      (json_int_t)pct(s->incl, s->n, 50), "p95",
					      (json_int_t)pct(s->incl, s->n, 95)));
	}
	s->n = 0;
}

/* The on/off-CPU split of a method over the traces that have CPU data
 * (trace_methods.cpu_self_ns not NULL): how many, and the sums of their
 * wall and on-CPU self and inclusive times. */
struct cpu_sums {
	int64_t n, self, incl, cpu_self, cpu_incl;
};

/* {"traces", "on_cpu_self_ns", "off_cpu_self_ns", "on_cpu_incl_ns",
 * "off_cpu_incl_ns"}: the split summed over the c->n traces (all 0 when
 * none); off-CPU is the wall time less the on-CPU time. */
static json_t *cpu_json(const struct cpu_sums *c)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I}", "traces", (json_int_t)c->n, "on_cpu_self_ns",
			 (json_int_t)c->cpu_self, "off_cpu_self_ns",
			 (json_int_t)(c->self - c->cpu_self), "on_cpu_incl_ns",
			 (json_int_t)c->cpu_incl, "off_cpu_incl_ns",
			 (json_int_t)(c->incl - c->cpu_incl));
}

static int cpu_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct cpu_sums *c = arg;
	if (n != 5)
		return -EIO;
	*c = (struct cpu_sums){cols[0].i, cols[1].i, cols[2].i, cols[3].i, cols[4].i};
	return 0;
}

/* doc's "cpu": RVS_METHOD_CPU's sums over every trace with the method
 * (and app / version) that has CPU data. */
static int method_cpu(const struct rvs_store_ops *ops, struct rvs_store *st, const char *name,
		      const char *app, const char *ver, json_t *doc)
{
	struct cpu_sums c = {0};
	if (ops->method_read(st, RVS_METHOD_CPU, name, 0, 0, app, ver, cpu_row, &c))
		return -EIO;
	json_object_set_new(doc, "cpu", cpu_json(&c));
	return 0;
}

/* Traces the per-version percentiles are drawn from: the newest ones
 * containing the method (a sample, so the page stays fast for a method
 * that is in every trace). */
#define BY_VERSION_SAMPLE 2000

/* method_split's state: the group (version or model) being gathered and
 * its samples. */
struct by_group {
	struct samples sm;
	struct cpu_sums cpu; /* the group's traces with CPU data */
	const char *key;     /* "app_version" or "model" */
	char *val;
	json_t *arr;
	int oom;
};

/* The gathered group's percentiles into arr. */
static void group_out(struct by_group *b)
{
	json_t *o;
	if (!b->sm.n)
		return;
	o = json_pack("{s:o}", b->key, rvs_json_str(b->val));
	samples_into(&b->sm, o);
	json_object_set_new(o, "cpu", cpu_json(&b->cpu));
	b->cpu = (struct cpu_sums){0};
	json_array_append_new(b->arr, o);
}

/* Rows v, s, i, cs, ci (cs, ci NULL: the trace has no CPU data). */
static int group_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct by_group *b = arg;
	const char *v = n == 5 && cols[0].type == RVS_COL_TEXT ? cols[0].text : "";

	if (n != 5)
		return -EIO;
	if (b->sm.n && strcmp(v, b->val) != 0)
		group_out(b);
	if (b->sm.n == 0) {
		free(b->val);
		if (!(b->val = strdup(v)))
			return b->oom = 1;
	}
	if (samples_add(&b->sm, cols[1].i, cols[2].i))
		return b->oom = 1;
	if (cols[3].type == RVS_COL_INT && cols[4].type == RVS_COL_INT) {
		b->cpu.n++;
		b->cpu.self += cols[1].i;
		b->cpu.incl += cols[2].i;
		b->cpu.cpu_self += cols[3].i;
		b->cpu.cpu_incl += cols[4].i;
	}
	return 0;
}

/* The same percentiles per app version (listed in version order) or per
 * device model (part RVS_METHOD_BY_VERSION / _BY_MODEL) into doc[key], over
 * the newest BY_VERSION_SAMPLE traces containing the method that pass the
 * filters (n of them in all: it picks the plan, as for the trace list). */
static int method_split(const struct rvs_store_ops *ops, struct rvs_store *st, const char *name,
			int64_t n, int part, const char *key, const char *app, const char *ver,
			json_t *doc)
{
	struct by_group b = {.key = part == RVS_METHOD_BY_MODEL ? "model" : "app_version",
			     .arr = json_array()};
	int rc;

	assert(part == RVS_METHOD_BY_VERSION || part == RVS_METHOD_BY_MODEL);
	json_object_set_new(doc, key, b.arr);
	rc = ops->method_read(st, part, name, BY_VERSION_SAMPLE, n, app, ver, group_row, &b);
	if (!rc && !b.oom)
		group_out(&b);
	free(b.val);
	free(b.sm.self);
	free(b.sm.incl);
	if (!rc && part == RVS_METHOD_BY_VERSION)
		rvs_version_sort(b.arr, "app_version", (const char *const[]){NULL});
	return rc || b.oom ? -EIO : 0;
}

/* Samples of every trace passing the filters: "count", and "self_ns" /
 * "incl_ns" percentiles (nearest rank) over all of them. */
static int sample_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	return n == 2 ? samples_add(arg, cols[0].i, cols[1].i) : 0;
}

static int method_filtered(const struct rvs_store_ops *ops, struct rvs_store *st, const char *name,
			   const char *app, const char *ver, int64_t *n, json_t *doc)
{
	struct samples sm = {0};
	int rc = ops->method_read(st, RVS_METHOD_SAMPLES, name, 0, 0, app, ver, sample_row, &sm);

	*n = (int64_t)sm.n;
	if (!rc)
		samples_into(&sm, doc);
	free(sm.self);
	free(sm.incl);
	return rc ? -EIO : 0;
}

static int method_alert(const struct rvs_store_ops *ops, struct rvs_store *st, const char *name,
			json_t *doc)
{
	json_t *p95 = json_object_get(json_object_get(doc, "self_ns"), "p95");
	int64_t th;
	int rc = ops->method_alert_get(st, name, &th);

	if (rc == 0)
		json_object_set_new(
			doc, "alert",
			json_pack("{s:I,s:b}", "p95_threshold_ns", (json_int_t)th, "crossed",
				  json_is_integer(p95) && json_integer_value(p95) >= th));
	else
		json_object_set_new(doc, "alert", json_null());
	return rc == 0 || rc == -ENOENT ? 0 : -EIO;
}

/* A read's rows appended to the JSON array arg. */
static int array_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	json_array_append_new(arg, jrow(cols, n));
	return 0;
}

static void get_method(const struct rvs_store_ops *ops, struct rvs_store *store, const char *name,
		       const char *query, struct rvs_query_resp *r)
{
	int64_t limit, n;
	json_t *doc, *traces, *self = NULL, *incl = NULL;
	char app[257], ver[129];
	const char *a, *v;
	int has_app, has_ver;

	if (parse_limit(query, &limit))
		return set_error(r, 400, "bad limit");
	/* app / version narrow everything below; empty is absent (web form). */
	if ((has_app = qparam(query, "app", app, sizeof app)) < 0)
		return bad_param(r, "app");
	if ((has_ver = qparam(query, "version", ver, sizeof ver)) < 0)
		return bad_param(r, "version");
	a = has_app && app[0] ? app : NULL;
	v = has_ver && ver[0] ? ver : NULL;
	doc = json_object();
	json_object_set_new(doc, "method", rvs_json_str(name));
	if (a || v) {
		if (method_filtered(ops, store, name, a, v, &n, doc)) {
			json_decref(doc);
			return set_error(r, 500, "query failed");
		}
	} else {
		n = method_int(ops, store, RVS_METHOD_COUNT, name, 0);
		if (n < 0 || (n && (!(self = method_pcts(ops, store, name, n, 0)) ||
				    !(incl = method_pcts(ops, store, name, n, 1))))) {
			json_decref(self);
			json_decref(doc);
			return set_error(r, 500, "query failed");
		}
		json_object_set_new(doc, "count", json_integer((json_int_t)n));
		if (n) {
			json_object_set_new(doc, "self_ns", self);
			json_object_set_new(doc, "incl_ns", incl);
		}
	}
	json_object_set_new(doc, "by_version_traces",
			    json_integer(n < BY_VERSION_SAMPLE ? n : BY_VERSION_SAMPLE));
	if (method_cpu(ops, store, name, a, v, doc) ||
	    method_split(ops, store, name, n, RVS_METHOD_BY_VERSION, "by_version", a, v, doc) ||
	    method_split(ops, store, name, n, RVS_METHOD_BY_MODEL, "by_model", a, v, doc) ||
	    method_alert(ops, store, name, doc)) {
		json_decref(doc);
		return set_error(r, 500, "query failed");
	}
	traces = json_array();
	json_object_set_new(doc, "traces", traces);
	/* The traces list's total: every trace with the method (and app /
	 * version), of which it shows the newest limit. */
	json_object_set_new(doc, "total", json_integer((json_int_t)n));
	if (ops->method_read(store, RVS_METHOD_TRACES, name, limit, n, a, v, array_row, traces)) {
		json_decref(doc);
		return set_error(r, 500, "query failed");
	}
	set_json(r, 200, doc);
}

/* ---- GET /api/v1/signatures ------------------------------------------------- */

/* A signatures page ends before the signature that would take its text
 * (chains, and ~64 bytes a count) past this; the first is always listed. */
#define SIG_PAGE_BYTES (2u << 20)
/* The deepest page (offset) asked for. */
#define SIG_MAX_OFFSET 1000000

/* signatures_read's rows: each total an object of arr, its per-week
 * counts (part 1) into that object's "counts"; 1 (stop) at the page's
 * byte budget. */
struct sig_page {
	json_t *arr;
	size_t bytes;
};

static int sig_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct sig_page *pg = arg;
	json_t *arr = pg->arr, *o;

	if (part == 0) {
		size_t len = 64;
		for (size_t i = 0; i < n; i++)
			if (cols[i].type == RVS_COL_TEXT)
				len += strlen(cols[i].text);
		if (json_array_size(arr) && pg->bytes + len > SIG_PAGE_BYTES)
			return 1;
		pg->bytes += len;
		o = jrow(cols, n);
		json_object_set_new(o, "counts", json_array());
		json_array_append_new(arr, o);
		return 0;
	}
	pg->bytes += 64;
	json_array_append_new(
		json_object_get(json_array_get(arr, json_array_size(arr) - 1), "counts"),
		jrow(cols, n));
	return 0;
}

/* Reads the totals migration 5's triggers maintain: no scan of traces.  A
 * page ends at limit signatures or SIG_PAGE_BYTES; next_offset says where
 * the next one starts when there may be one. */
static void list_signatures(const struct rvs_store_ops *ops, struct rvs_store *st,
			    const char *query, struct rvs_query_resp *r)
{
	int64_t limit, offset, total = 0;
	struct sig_page pg = {0};
	json_t *arr, *doc;
	int rc;

	if (parse_limit(query, &limit))
		return set_error(r, 400, "bad limit");
	if (rvs_param_offset(query, SIG_MAX_OFFSET, &offset))
		return set_error(r, 400, "bad offset");
	arr = pg.arr = json_array();
	rc = ops->signatures_read(st, offset, limit, sig_row, &pg);
	if (rc && rc != 1) {
		json_decref(arr);
		return set_error(r, 500, "query failed");
	}
	/* Each signature's counts: per week, versions in version order. */
	for (size_t i = 0; i < json_array_size(arr); i++)
		rvs_version_sort(json_object_get(json_array_get(arr, i), "counts"), "app_version",
				 (const char *const[]){"week_start", NULL});
	if (ops->signatures_total(st, &total)) {
		json_decref(arr);
		return set_error(r, 500, "query failed");
	}
	doc = json_pack("{s:o,s:I}", "signatures", arr, "total", (json_int_t)total);
	if (doc && (rc == 1 || (int64_t)json_array_size(arr) == limit))
		json_object_set_new(doc, "next_offset",
				    json_integer(offset + (int64_t)json_array_size(arr)));
	set_json(r, 200, doc);
}

/* ---- GET /api/v1/versions ------------------------------------------------------- */

/* versions_read's rows (app_id, app_version; by app) into one object per
 * app: {"app_id", "versions": [...]}, the last one in *cur. */
struct ver_rows {
	json_t *apps, *cur;
};

static int version_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct ver_rows *x = arg;
	const char *app, *ver;

	if (n < 2 || cols[0].type != RVS_COL_TEXT || cols[1].type != RVS_COL_TEXT)
		return 0;
	app = cols[0].text;
	ver = cols[1].text;
	if (!x->cur || strcmp(json_string_value(json_object_get(x->cur, "app_id")), app)) {
		x->cur = json_pack("{s:o,s:[]}", "app_id", rvs_json_str(app), "versions");
		if (!x->cur || json_array_append_new(x->apps, x->cur))
			return -ENOMEM;
	}
	return json_array_append_new(json_object_get(x->cur, "versions"),
				     json_pack("{s:o}", "v", rvs_json_str(ver)))
		       ? -ENOMEM
		       : 0;
}

/* The versions each app's data has, for the pickers: in version order. */
static void list_versions(const struct rvs_store_ops *ops, struct rvs_store *st, const char *query,
			  struct rvs_query_resp *r)
{
	char app[256];
	struct ver_rows x = {.apps = json_array()};
	size_t i;
	json_t *o;
	int has = qparam(query, "app", app, sizeof app);

	if (has < 0)
		return bad_param(r, "app");
	if (ops->versions_read(st, has && app[0] ? app : NULL, version_row, &x)) {
		json_decref(x.apps);
		return set_error(r, 500, "query failed");
	}
	/* Sorted as version objects, then flattened to strings. */
	json_array_foreach(x.apps, i, o)
	{
		json_t *vs = json_object_get(o, "versions"), *flat = json_array(), *v;
		size_t k;
		rvs_version_sort(vs, "v", (const char *const[]){NULL});
		json_array_foreach(vs, k, v) json_array_append(flat, json_object_get(v, "v"));
		json_object_set_new(o, "versions", flat);
	}
	set_json(r, 200, json_pack("{s:o}", "apps", x.apps));
}

/* ---- GET /api/v1/skips --------------------------------------------------------- */

static json_t *jint(int64_t v, int has)
{
	return has ? json_integer(v) : json_null();
}

static int skip_reason_row(void *arg, const struct rvs_skip_row *k)
{
	json_array_append_new(arg, json_pack("{s:o,s:o,s:I}", "reason", rvs_json_str(k->reason),
					     "anomaly_kind", jint(k->anomaly_kind, k->has_kind),
					     "count", (json_int_t)k->count));
	return 0;
}

static int skip_recent_row(void *arg, const struct rvs_skip_row *k)
{
	json_array_append_new(arg, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:o}", "device_id",
					     rvs_json_str(k->device_id), "app_id",
					     rvs_json_str(k->app_id), "app_version",
					     rvs_json_str(k->app_version), "anomaly_kind",
					     jint(k->anomaly_kind, k->has_kind), "severity",
					     jint(k->severity, k->has_severity), "reason",
					     rvs_json_str(k->reason), "received_at",
					     (json_int_t)k->received_at, "captured_realtime_ns",
					     jint(k->captured_realtime_ns, k->has_captured)));
	return 0;
}

/* Anomalies devices reported as not uploaded: counts by reason and kind,
 * and the newest reports.  Filters: since / until (received_at), app. */
static void list_skips(const struct rvs_store_ops *ops, struct rvs_store *st, const char *query,
		       struct rvs_query_resp *r)
{
	struct rvs_skip_filter f = {0};
	char v[256], app[257];
	json_t *reasons = json_array(), *recent = json_array();
	int64_t limit, t[2];
	int has[2], has_app;

	if (parse_limit(query, &limit)) {
		set_error(r, 400, "bad limit");
		goto free;
	}
	for (int i = 0; i < 2; i++) {
		int rc = qparam(query, i ? "until" : "since", v, sizeof v);
		if (rc < 0 || (rc == 1 && rvs_parse_i64(v, &t[i]))) {
			set_error(r, 400, i ? "bad until" : "bad since");
			goto free;
		}
		has[i] = rc == 1;
	}
	if ((has_app = qparam(query, "app", app, sizeof app)) < 0) {
		set_error(r, 400, "bad app");
		goto free;
	}
	f.since = t[0];
	f.until = t[1];
	f.has_since = has[0];
	f.has_until = has[1];
	f.app = has_app ? app : NULL;
	if (ops->skips_by_reason(st, &f, skip_reason_row, reasons) ||
	    ops->skips_recent(st, &f, limit, skip_recent_row, recent)) {
		set_error(r, 500, "query failed");
		goto free;
	}
	/* The recent list's total: every report f matches, the sum of the
	 * counts by reason and kind. */
	{
		int64_t total = 0;
		size_t i;
		json_t *o;
		json_array_foreach(reasons, i, o) total +=
			json_integer_value(json_object_get(o, "count"));
		return set_json(r, 200,
				json_pack("{s:o,s:o,s:I}", "reasons", reasons, "recent", recent,
					  "recent_total", (json_int_t)total));
	}
free:
	json_decref(reasons);
	json_decref(recent);
}

/* ---- GET /api/v1/signatures/weekly ------------------------------------------ */

static void signatures_weekly(const struct rvs_store_ops *ops, struct rvs_store *st,
			      const char *query, struct rvs_query_resp *r)
{
	char v[32] = "0", list[4096], *save = NULL;
	const char *sigs[200];
	size_t nsigs = 0;
	int64_t since;
	json_t *arr;
	int rc, some;

	if ((rc = qparam(query, "since", v, sizeof v)) < 0 || rvs_parse_i64(v, &since))
		return set_error(r, 400, "bad since");
	if ((rc = qparam(query, "signatures", list, sizeof list)) < 0)
		return set_error(r, 400, "bad signatures");
	some = rc == 1;
	/* Comma-separated signatures: 16 hex digits each, at most 200. */
	for (char *t = some ? strtok_r(list, ",", &save) : NULL; t;
	     t = strtok_r(NULL, ",", &save)) {
		if (strlen(t) != 16 || strspn(t, "0123456789abcdef") != 16 || nsigs == 200)
			return set_error(r, 400, "bad signatures");
		sigs[nsigs++] = t;
	}
	arr = json_array();
	/* An empty list counts nothing (not everything). */
	if ((!some || nsigs) && ops->signatures_weekly(st, since, sigs, nsigs, array_row, arr)) {
		json_decref(arr);
		return set_error(r, 500, "query failed");
	}
	rvs_version_sort(arr, "app_version", (const char *const[]){"signature", "week", NULL});
	set_json(r, 200, json_pack("{s:o}", "rows", arr));
}

/* ---- the endpoints (route.c's table) ------------------------------------------ */

void rvs_query_traces(struct rvs_call *c)
{
	char v[64];

	if (qparam(c->query, "sort", v, sizeof v) || qparam(c->query, "issue", v, sizeof v))
		return rvs_search_traces(c); /* sorted, or by issue: search.h */
	rvs_call_with_store(c, list_traces);
}

void rvs_query_signatures(struct rvs_call *c)
{
	rvs_call_with_store(c, list_signatures);
}

void rvs_query_versions(struct rvs_call *c)
{
	rvs_call_with_store(c, list_versions);
}

void rvs_query_weekly(struct rvs_call *c)
{
	rvs_call_with_store(c, signatures_weekly);
}

void rvs_query_skips(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	if (rvs_store_acquire(c->cfg->database, &ops, &st))
		return set_error(c->q, 503, "database unavailable");
	list_skips(ops, st, c->query, c->q);
	rvs_store_release(st);
}

/* The trace id the route's wildcard matched into tid, or 404 and -1. */
static int trace_arg(struct rvs_call *c, char tid[40])
{
	if (!rvs_trace_id_ok(c->arg, c->arg_len)) {
		set_error(c->q, 404, "no such trace");
		return -1;
	}
	memcpy(tid, c->arg, c->arg_len);
	tid[c->arg_len] = '\0';
	return 0;
}

void rvs_query_trace(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char tid[40], why[4];
	/* ?why=0: no "why", and the capture is not loaded. */
	int nowhy = qparam(c->query, "why", why, sizeof why) == 1 && !strcmp(why, "0");

	if (rvs_store_acquire(c->cfg->database, &ops, &st))
		return set_error(c->q, 503, "database unavailable");
	if (trace_arg(c, tid) == 0)
		get_trace(nowhy ? NULL : c->cfg, ops, st, tid, c->q);
	rvs_store_release(st);
}

void rvs_query_export(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	json_t *row;
	char tid[40];

	if (trace_arg(c, tid))
		return;
	/* The upload's metadata, for the formats that say where a trace came
	 * from (unknown when the row does not read). */
	if (!(row = json_object()))
		return set_error(c->q, 500, "out of memory");
	if (rvs_store_acquire(c->cfg->database, &ops, &st) == 0) {
		ops->trace_read(st, tid, trace_row, row);
		rvs_store_release(st);
	}
	export_trace(c->cfg, tid, c->query, row, c->q);
	json_decref(row);
}

void rvs_query_trace_none(struct rvs_call *c)
{
	char tid[40];
	size_t n = strcspn(c->arg, "/");
	c->arg_len = n;
	if (trace_arg(c, tid) == 0)
		set_error(c->q, 404, "no such resource");
}

void rvs_query_method(struct rvs_call *c)
{
	char name[1024];
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	if (!c->arg_len)
		return set_error(c->q, 404, "no such resource");
	if (rvs_store_acquire(c->cfg->database, &ops, &st))
		return set_error(c->q, 503, "database unavailable");
	if (rvs_url_decode(c->arg, c->arg_len, 0, name, sizeof name))
		set_error(c->q, 400, "bad method name");
	else
		get_method(ops, st, name, c->query, c->q);
	rvs_store_release(st);
}

void rvs_query_none(struct rvs_call *c)
{
	set_error(c->q, 404, "no such resource");
}

void rvs_query_handle(const char *database, const char *blob_dir, const char *path,
		      const char *query, struct rvs_query_resp *r)
{
	static const struct rvs_config zero;
	struct rvs_config cfg = zero;

	snprintf(cfg.database, sizeof cfg.database, "%s", database);
	snprintf(cfg.blob_dir, sizeof cfg.blob_dir, "%s", blob_dir);
	rvs_api_v1(&cfg, 0, path, query, NULL, 0, r);
}
