/* SPDX-License-Identifier: Apache-2.0 */
/*
 * search.c — the JSON API's worst traces, top issues and chain search
 * (search.h, server/API.md "Worst traces", "Issues", "Chain search"); the
 * chain patterns are the model's (model/search.h).
 *
 * Invariants: no SQL here: the store runs it (store.h's traces_sorted,
 * issues_read, search_scan; store_sqlite_search.c, store_pg_search.c),
 * from fixed fragments chosen by a fixed table (sort keys, directions),
 * never from the request; request values are bound there.  Sorted lists
 * page by keyset (the sort value and an arrival tie-break — sqlite's rowid,
 * PostgreSQL's seq — both in the cursor), so page k costs what page 1
 * costs.  A chain or substring search scans its table newest first in
 * chunks of SEARCH_CHUNK by arrival and stops after the configured
 * search_budget_rows rows (SEARCH_MAX_ROWS when unset) or search_budget_ms
 * of work (SEARCH_MAX_MS when unset),
 * whichever comes first (on_chunk and on_hit keep
 * the budget), with a cursor to go on: no pattern, how hostile soever,
 * costs more.  Pattern matching is rvs_chain_match over frames (no regular
 * expressions on user input), O(frames × elements).
 */
#include "api/search.h"
#include "base/json.h"
#include "base/text.h"
#include "model/search.h"
#include "store/store.h"
#include "base/issue.h"
#include "base/params.h"
#include "base/util.h"
#include "http/reply.h"
#include "http/route.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define LIST_DEFAULT	 50
#define LIST_MAX	 500
#define SEARCH_CHUNK	 20000
#define SEARCH_MAX_ROWS	 400000
#define SEARCH_MAX_MS	 400
#define CHAIN_MAX_FRAMES 1024 /* decode.c stores at most 513 per chain */
#define TAKEN_SLOTS	 2048 /* > 2 × the most hits a page has */
#define WEEK		 604800
#define WEEKS_DEFAULT	 8
#define WEEKS_MAX	 52
#define ISSUES_DEFAULT	 20
#define ISSUES_MAX	 100

_Static_assert(TAKEN_SLOTS > 2 * (LIST_MAX + 1), "the taken set stays half empty");

/* ---- helpers --------------------------------------------------------------- */

static json_t *jstrn(const char *s, size_t n)
{
	char *c = strndup(s, n);
	json_t *j = rvs_json_str(c);
	free(c);
	return j;
}

static json_t *jcol(const struct rvs_col *c)
{
	switch (c->type) {
	case RVS_COL_INT:
		return json_integer(c->i);
	case RVS_COL_TEXT:
		return rvs_json_str(c->text);
	default:
		return json_null();
	}
}

/* Columns [from, to) of a row into obj, keyed by column name. */
static void cols_into(const struct rvs_col *cols, size_t from, size_t to, json_t *obj)
{
	for (size_t i = from; i < to; i++)
		json_object_set_new(obj, cols[i].name, jcol(&cols[i]));
}

/* 400 naming the parameter whose value is bad. */
static void bad_param(struct rvs_query_resp *r, const char *name)
{
	char msg[96];

	assert(name);
	snprintf(msg, sizeof msg, "bad value for parameter: %s", name);
	rvs_query_set_error(r, 400, msg);
}

/* Text parameter `name` of query into buf (cap bytes), *out = buf when
 * present (else left alone): 0, or -EINVAL for a bad value (*bad = name). */
static int text_param(const char *query, const char *name, char *buf, size_t cap, const char **out,
		      const char **bad)
{
	int rc = rvs_query_param(query, name, buf, cap);
	if (rc < 0) {
		*bad = name;
		return -EINVAL;
	}
	if (rc)
		*out = buf;
	return 0;
}

/* Integer parameter `name` (an anomaly kind for "kind", params.h) into
 * *v and *has, like text_param. */
static int int_param(const char *query, const char *name, int64_t *v, int *has, const char **bad)
{
	char buf[32];
	int64_t iv;
	int rc = rvs_query_param(query, name, buf, sizeof buf);
	if (rc < 0 ||
	    (rc && (strcmp(name, "kind") ? rvs_parse_i64(buf, &iv) : rvs_param_kind(buf, &iv)))) {
		*bad = name;
		return -EINVAL;
	}
	if (rc) {
		*v = iv;
		*has = 1;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- GET /api/v1/traces?sort=K ---------------------------------------------- */

struct sort_key {
	const char *name;
	int key;  /* enum rvs_sort: the store's ORDER BY (an index of migration 9's) */
	int desc; /* the key's own direction: worst first */
};

/* "-" before a key reverses it.  age: the anomaly's age, oldest first
 * (captured_at_ns ascending; unknown capture times count as oldest). */
static const struct sort_key SORT_KEYS[] = {
	{"received", RVS_SORT_RECEIVED, 1}, {"severity", RVS_SORT_SEVERITY, 1},
	{"duration", RVS_SORT_DURATION, 1}, {"age", RVS_SORT_AGE, 0},
	{"self", RVS_SORT_SELF, 1},
};

/* The rows' columns: TRACE_NCOLS of the trace, then method_self_ns,
 * sort_value_ and tiebreak_ (store.h's traces_sorted). */
#define TRACE_NCOLS 13

/* "V:T" into the sort value and tie-break; -EINVAL when malformed. */
static int parse_cursor(const char *s, int64_t *v, int64_t *t)
{
	char a[32];
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : 0;
	if (!colon || n >= sizeof a)
		return -EINVAL;
	memcpy(a, s, n);
	a[n] = '\0';
	return rvs_parse_i64(a, v) || rvs_parse_i64(colon + 1, t) ? -EINVAL : 0;
}

struct sorted_page {
	int self;
	int64_t limit, n, lastv, lastt;
	int more; /* a row past the limit came */
	json_t *items;
};

static int on_sorted_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct sorted_page *p = arg;
	json_t *o;

	assert(part == 0 && n == TRACE_NCOLS + 3);
	if (p->n == p->limit) {
		p->more = 1;
		return 1;
	}
	o = json_object();
	cols_into(cols, 0, TRACE_NCOLS, o);
	if (p->self)
		cols_into(cols, TRACE_NCOLS, TRACE_NCOLS + 1, o);
	p->lastv = cols[TRACE_NCOLS + 1].i;
	p->lastt = cols[TRACE_NCOLS + 2].i;
	json_array_append_new(p->items, o);
	p->n++;
	return 0;
}

/* The count row of traces_sorted (q->count): its total into *(int64_t *)arg. */
static int on_total_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	assert(n == 1 && cols[0].type == RVS_COL_INT);
	*(int64_t *)arg = cols[0].i;
	return 0;
}

static void search_traces(const struct rvs_store_ops *ops, struct rvs_store *st, const char *query,
			  struct rvs_query_resp *r)
{
	static const char *const text_params[] = {"app", "version", "model", "os_build"};
	static const char *const int_params[] = {"kind", "min_severity", "since", "until"};
	struct rvs_sorted_query q = {0};
	const struct sort_key *k;
	char v[1100], tv[7][1024];
	const char **text_out[7] = {&q.app,	  &q.version, &q.model, &q.os_build,
				    &q.signature, &q.method,  &q.issue};
	int64_t *int_out[4] = {&q.kind, &q.min_severity, &q.since, &q.until};
	int *has_out[4] = {&q.has_kind, &q.has_min_severity, &q.has_since, &q.has_until};
	const char *name = "received", *bad = NULL;
	struct sorted_page p = {0};
	int64_t total = 0;
	int desc, rc;
	json_t *doc;

	if (rvs_param_limit(query, LIST_DEFAULT, LIST_MAX, &p.limit))
		return rvs_query_set_error(r, 400, "bad limit");
	rc = rvs_query_param(query, "sort", v, sizeof v);
	if (rc < 0)
		return rvs_query_set_error(r, 400, "bad sort");
	if (rc == 1)
		name = v;
	desc = name[0] == '-' ? 0 : 1;
	if (name[0] == '-')
		name++;
	k = NULL;
	for (size_t i = 0; i < sizeof SORT_KEYS / sizeof SORT_KEYS[0]; i++)
		if (strcmp(SORT_KEYS[i].name, name) == 0)
			k = &SORT_KEYS[i];
	if (!k) {
		char msg[1200];
		snprintf(msg, sizeof msg,
			 "unknown sort key \"%.1024s\" (known: received, severity, duration, age,"
			 " self; \"-\" reverses)",
			 name);
		return rvs_query_set_error(r, 400, msg);
	}
	if (!k->desc)
		desc = !desc;
	if (k->key == RVS_SORT_SELF && rvs_query_param(query, "method", v, sizeof v) != 1)
		return rvs_query_set_error(r, 400, "sort=self needs method=NAME");
	rc = rvs_query_param(query, "cursor", v, sizeof v);
	if (rc < 0 || (rc == 1 && parse_cursor(v, &q.cursor_value, &q.cursor_tiebreak)))
		return rvs_query_set_error(r, 400, "bad cursor");
	q.has_cursor = rc == 1;
	q.key = k->key;
	q.desc = desc;
	q.limit = p.limit + 1;
	for (int i = 0; i < 4; i++)
		if (text_param(query, text_params[i], tv[i], sizeof tv[i], text_out[i], &bad) ||
		    int_param(query, int_params[i], int_out[i], has_out[i], &bad))
			return bad_param(r, bad);
	if (text_param(query, "signature", tv[4], sizeof tv[4], text_out[4], &bad) ||
	    text_param(query, "method", tv[5], sizeof tv[5], text_out[5], &bad) ||
	    text_param(query, "issue", tv[6], sizeof tv[6], text_out[6], &bad))
		return bad_param(r, bad);

	p.self = k->key == RVS_SORT_SELF;
	p.items = json_array();
	rc = ops->traces_sorted(st, &q, on_sorted_row, &p);
	if (rc >= 0) {
		/* The total the filter matches, counted up to the cap. */
		q.count = 1;
		q.has_cursor = 0;
		q.limit = RVS_LIST_TOTAL_CAP + 1;
		rc = ops->traces_sorted(st, &q, on_total_row, &total);
	}
	doc = json_pack("{s:o,s:s+,s:I,s:b}", "traces", p.items, "sort", desc == k->desc ? "" : "-",
			k->name, "total",
			(json_int_t)(total > RVS_LIST_TOTAL_CAP ? RVS_LIST_TOTAL_CAP : total),
			"total_capped", total > RVS_LIST_TOTAL_CAP);
	if (p.more) {
		snprintf(v, sizeof v, "%" PRId64 ":%" PRId64, p.lastv, p.lastt);
		json_object_set_new(doc, "next_cursor", json_string(v));
	} else {
		json_object_set_new(doc, "next_cursor", json_null());
	}
	if (rc < 0) {
		json_decref(doc);
		return rvs_query_set_error(r, 500, "query failed");
	}
	return rvs_query_reply(r, 200, doc);
}

/* ---- GET /api/v1/issues ----------------------------------------------------- */

struct issues_doc {
	int64_t first_week, weeks, total;
	int64_t counts[WEEKS_MAX];
	double w_counts[WEEKS_MAX]; /* the weeks' sums of selection weights */
	json_t *issues, *cur;	    /* the issue being filled (borrowed from issues) */
};

/* The current issue's trend, from its week rows. */
static void close_issue(struct issues_doc *d)
{
	json_t *trend;

	if (!d->cur)
		return;
	trend = json_array();
	for (int64_t w = 0; w < d->weeks; w++)
		json_array_append_new(trend, json_integer(d->counts[w]));
	json_object_set_new(d->cur, "trend", trend);
	d->cur = NULL;
}

/* The current issue's weighted figures beside its raw counts: traces and
 * traces per week as sums of selection weights (Horvitz–Thompson), devices
 * as the sum over its devices of each one's smallest weight, and whether
 * they are exact. */
static int weighted_issue(struct issues_doc *d, const struct rvs_issue_row *r)
{
	const char *note = r->n_estimated ? "estimated: quota selection (most severe or first N)"
					    " censors"
			   : r->n_unknown
				   ? "partly unweighted: uploads without a selection count as 1"
				   : NULL;
	json_t *trend = json_array(), *o;

	for (int64_t w = 0; trend && w < d->weeks; w++)
		json_array_append_new(trend, json_real(d->w_counts[w]));
	o = json_pack("{s:f,s:f,s:o,s:I,s:I,s:b,s:o,s:s}", "traces", r->w_traces, "devices",
		      r->w_devices, "trend", trend, "traces_weight_estimated",
		      (json_int_t)r->n_estimated, "traces_weight_unknown", (json_int_t)r->n_unknown,
		      "exact", !note, "note", note ? json_string(note) : json_null(),
		      "devices_estimate",
		      "each device counts 1/p of its likeliest trace: exact when every affected"
		      " device had one such anomaly, higher when devices had several");
	if (!o)
		return -ENOMEM;
	json_object_set_new(d->cur, "weighted", o);
	return 0;
}

static int on_issue(void *arg, int part, const struct rvs_issue_row *r)
{
	static const char unk[] = "(unknown caller);";
	struct issues_doc *d = arg;
	json_t *o;

	if (part == RVS_ISSUE_SIGNATURE) {
		assert(d->cur);
		json_array_append_new(json_object_get(d->cur, "signatures"),
				      rvs_json_str(r->signature));
		return 0;
	}
	if (part == RVS_ISSUE_WEEK) {
		int64_t w = r->week - d->first_week;
		assert(d->cur);
		if (w >= 0 && w < d->weeks) {
			d->counts[w] = r->count;
			d->w_counts[w] = r->w_count;
		}
		return 0;
	}
	if (part == RVS_ISSUE_WEIGHT) {
		assert(d->cur);
		return weighted_issue(d, r);
	}
	assert(part == RVS_ISSUE_ROW);
	close_issue(d);
	d->total = r->total;
	memset(d->counts, 0, sizeof d->counts);
	memset(d->w_counts, 0, sizeof d->w_counts);
	o = json_pack("{s:o,s:o,s:I,s:I,s:f,s:f,s:I,s:I}", "issue", rvs_json_str(r->issue),
		      "app_id", r->app ? rvs_json_str(r->app) : json_null(), "traces",
		      (json_int_t)r->traces, "devices", (json_int_t)r->devices, "severity",
		      r->severity, "impact", r->impact, "first_seen", (json_int_t)r->first_seen,
		      "last_seen", (json_int_t)r->last_seen);
	if (!o)
		return -ENOMEM;
	/* The example trace, with its anomaly chain less its leading
	 * "(unknown caller);" frames as the issue's chain. */
	if (r->has_example) {
		const char *s = r->example_chain;
		json_object_set_new(o, "example_trace", rvs_json_str(r->example_trace));
		while (s && strncmp(s, unk, sizeof unk - 1) == 0 && s[sizeof unk - 1])
			s += sizeof unk - 1;
		json_object_set_new(o, "chain", rvs_json_str(s));
	} else {
		json_object_set_new(o, "chain", json_null());
	}
	json_object_set_new(o, "signatures", json_array());
	json_array_append_new(d->issues, o);
	d->cur = o;
	return 0;
}

static void list_issues(const struct rvs_store_ops *ops, struct rvs_store *st, const char *query,
			struct rvs_query_resp *r)
{
	char v[32], app[1024], version[1024];
	int64_t weeks = WEEKS_DEFAULT, cur = (int64_t)time(NULL) / WEEK;
	struct rvs_issue_filter f = {0};
	struct issues_doc d = {0};
	json_t *starts, *doc;
	const char *bad = NULL;
	int rc;

	if (rvs_param_limit(query, ISSUES_DEFAULT, ISSUES_MAX, &f.limit))
		return rvs_query_set_error(r, 400, "bad limit");
	rc = rvs_query_param(query, "weeks", v, sizeof v);
	if (rc < 0 || (rc && (rvs_parse_i64(v, &weeks) || weeks < 1 || weeks > WEEKS_MAX)))
		return rvs_query_set_error(r, 400, "bad weeks (1..52)");
	if (text_param(query, "app", app, sizeof app, &f.app, &bad) ||
	    text_param(query, "version", version, sizeof version, &f.version, &bad) ||
	    int_param(query, "kind", &f.kind, &f.has_kind, &bad))
		return bad_param(r, bad);
	f.since = (cur - weeks + 1) * WEEK;
	d.first_week = cur - weeks + 1;
	d.weeks = weeks;
	d.issues = json_array();
	starts = json_array();
	for (int64_t w = cur - weeks + 1; w <= cur; w++)
		json_array_append_new(starts, json_integer(w * WEEK));
	doc = json_pack("{s:I,s:o,s:o}", "weeks", (json_int_t)weeks, "week_starts", starts,
			"issues", d.issues);
	rc = ops->issues_read(st, &f, on_issue, &d);
	close_issue(&d);
	if (rc) {
		json_decref(doc);
		return rvs_query_set_error(r, 500, "query failed");
	}
	/* Every issue the filter matches, whatever the limit (0: none). */
	json_object_set_new(doc, "total", json_integer((json_int_t)d.total));
	rvs_query_reply(r, 200, doc);
}

/* ---- GET /api/v1/search ------------------------------------------------------ */

/* A hit row's columns (store.h's search_scan): HIT_NCOLS of the trace, its
 * sequence, source, rank, the chain or method text, then (methods) calls
 * and self_ns. */
#define HIT_NCOLS 8

enum search_mode { MODE_CHAIN, MODE_METHOD, MODE_SUBSTRING };

struct search {
	enum search_mode mode;
	struct rvs_chain_pat pat;
	char needle[RVS_PAT_NEEDLE_MAX]; /* the store's prefilter */
	int64_t limit, n;
	json_t *hits;
	/* The hits of this page, as hashes of their trace id and (chains)
	 * the matched call path — the chain through the match's last frame:
	 * one hit per trace and matched path, so a method called from several
	 * places shows every caller, and a path stored twice (the anomaly
	 * chain and a top chain) once.  Open addressing, 0 = empty. */
	uint64_t taken[TAKEN_SLOTS];
	int64_t last_rowid;
	/* The scan's budget (search_scan's chunk callback): the chunk [lo, hi)
	 * being read, the last row it handed over, rows counted per chunk. */
	int64_t hi, lo, seen, scanned, t0, max_ms, max_rows;
	unsigned k;
	int started, full, partial;
};

/* 1 when this page already has a hit of key h, else remembers it (the
 * table holds more slots than a page has hits). */
static int taken(struct search *s, uint64_t h)
{
	size_t i;
	h |= 1; /* never the empty slot */
	for (i = h % TAKEN_SLOTS; s->taken[i]; i = (i + 1) % TAKEN_SLOTS)
		if (s->taken[i] == h)
			return 1;
	s->taken[i] = h;
	return 0;
}

/* The hit of a row (a chain or method row) when it matches: appended to
 * s->hits.  0, or 1 when the hit is one past the limit (not appended). */
static int take_row(struct search *s, const struct rvs_col *cols, size_t ncols)
{
	const char *tid = cols[0].type == RVS_COL_TEXT ? cols[0].text : NULL;
	const char *text =
		cols[HIT_NCOLS + 3].type == RVS_COL_TEXT ? cols[HIT_NCOLS + 3].text : NULL;
	const char *frames[CHAIN_MAX_FRAMES];
	size_t lens[CHAIN_MAX_FRAMES], nf = 0, from = 0, to = 1;
	uint64_t key;
	json_t *o, *fr;

	if (!tid || !text)
		return 0;
	key = rvs_fnv1a(RVS_FNV_BASIS, tid, strlen(tid) + 1);
	if (s->mode == MODE_CHAIN) {
		for (const char *p = text; *p && nf < CHAIN_MAX_FRAMES;) {
			size_t l = strcspn(p, ";");
			frames[nf] = p;
			lens[nf++] = l;
			p += l + (p[l] == ';');
		}
		if (!rvs_chain_match(&s->pat, frames, lens, nf, &from, &to))
			return 0;
		/* The trace's other chains through this path add nothing. */
		assert(to >= 1 && to <= nf);
		key = rvs_fnv1a(key, text, (size_t)(frames[to - 1] + lens[to - 1] - text));
	} else {
		frames[0] = text;
		lens[0] = strlen(text);
		nf = 1;
	}
	if (taken(s, key))
		return 0;
	if (s->n == s->limit)
		return 1;
	o = json_object();
	cols_into(cols, 0, HIT_NCOLS, o);
	cols_into(cols, HIT_NCOLS + 1, HIT_NCOLS + 3, o);
	if (s->mode != MODE_CHAIN) {
		assert(ncols >= HIT_NCOLS + 6);
		cols_into(cols, HIT_NCOLS + 4, HIT_NCOLS + 6, o);
	}
	fr = json_array();
	for (size_t i = 0; i < nf; i++)
		json_array_append_new(fr, jstrn(frames[i], lens[i]));
	json_object_set_new(o, "frames", fr);
	json_object_set_new(o, "match", json_pack("[I,I]", (json_int_t)from, (json_int_t)to));
	json_array_append_new(s->hits, o);
	s->last_rowid = cols[HIT_NCOLS].i;
	s->n++;
	return 0;
}

/* Which search the query asks for, into s: exactly one of chain=,
 * caller=&callee=, contains=.  0 or an error message (static). */
static const char *parse_search(const char *query, struct search *s)
{
	char a[RVS_PAT_NAME_MAX * 3], b[RVS_PAT_NAME_MAX + 1];
	int has_chain = rvs_query_param(query, "chain", a, sizeof a);
	int has_caller = rvs_query_param(query, "caller", b, sizeof b);
	int has_callee, has_sub;

	if (has_chain < 0 || has_caller < 0)
		return "bad chain or caller";
	if (has_caller == 1) {
		size_t bl = strlen(b);
		has_callee = rvs_query_param(query, "callee", a, sizeof a);
		if (has_callee != 1 || has_chain)
			return "caller needs callee (and no chain)";
		/* Adjacent caller → callee: the pattern "caller > callee",
		 * built here so the names need no escaping. */
		if (!bl || bl > RVS_PAT_NAME_MAX || !a[0] || strlen(a) > RVS_PAT_NAME_MAX)
			return "bad caller or callee";
		s->mode = MODE_CHAIN;
		s->pat.n = 2;
		memcpy(s->pat.buf, b, bl + 1);
		memcpy(s->pat.buf + bl + 1, a, strlen(a) + 1);
		s->pat.el[0] = s->pat.buf;
		s->pat.len[0] = bl;
		s->pat.el[1] = s->pat.buf + bl + 1;
		s->pat.len[1] = strlen(a);
	} else if (has_chain == 1) {
		if (rvs_chain_pattern_parse(a, &s->pat))
			return "bad chain pattern (names separated by \" > \", \"*\" for any "
			       "frames, "
			       "at most 16 elements)";
		s->mode = s->pat.n == 1 ? MODE_METHOD : MODE_CHAIN;
	} else {
		has_sub = rvs_query_param(query, "contains", a, sizeof a);
		if (has_sub != 1 || !a[0] || strlen(a) > RVS_PAT_NAME_MAX)
			return "give chain=, caller= and callee=, or contains=";
		s->mode = MODE_SUBSTRING;
		snprintf(s->needle, sizeof s->needle, "%s", a);
		return NULL;
	}
	if (rvs_query_param(query, "contains", b, sizeof b) != 0)
		return "contains= goes alone";
	/* The prefilter: a chain's longest run of adjacent names (so a caller
	 * and its callee together, not the caller alone, which may be in
	 * every chain); an exact method's own name. */
	if (s->mode == MODE_CHAIN)
		rvs_chain_pattern_needle(&s->pat, s->needle, sizeof s->needle);
	else
		snprintf(s->needle, sizeof s->needle, "%s", s->pat.el[0]);
	return NULL;
}

/* search_scan's chunk callback: accounts for the chunk just read, then
 * gives the next one, or ends the scan (found enough, out of rows, or over
 * the budget).  An exact method is one index lookup: no chunks.  Time is
 * checked between chunks and every 256 rows a chunk hands over; a search
 * cut mid-chunk goes on below the last row it looked at. */
static int on_chunk(void *arg, int64_t top, int64_t *hi, int64_t *lo)
{
	struct search *s = arg;

	if (!s->started) {
		s->started = 1;
		if (s->hi == INT64_MAX) /* the first page starts past the newest row */
			s->hi = top;
	} else if (s->partial) {
		s->scanned += s->hi - s->seen;
		s->hi = s->seen;
	} else {
		s->scanned += s->hi - s->lo;
		s->hi = s->lo;
	}
	if (s->hi <= 0 || s->full || s->partial)
		return 1;
	if (s->scanned >= s->max_rows || now_ms() - s->t0 > s->max_ms) {
		s->partial = 1;
		return 1;
	}
	s->lo = s->mode == MODE_METHOD ? 0 : (s->hi > SEARCH_CHUNK ? s->hi - SEARCH_CHUNK : 0);
	s->seen = s->hi;
	s->k = 0;
	*hi = s->hi;
	*lo = s->lo;
	return 0;
}

static int on_hit(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct search *s = arg;

	assert(part == 0 && n >= HIT_NCOLS + 4);
	s->seen = cols[HIT_NCOLS].i;
	if ((s->full = take_row(s, cols, n)))
		return 1;
	if (s->mode != MODE_METHOD && ++s->k % 256 == 0 && now_ms() - s->t0 > s->max_ms) {
		s->partial = 1;
		return 1;
	}
	return 0;
}

static void search_chains(const struct rvs_store_ops *ops, struct rvs_store *st, const char *query,
			  const struct rvs_config *cfg, struct rvs_query_resp *r)
{
	struct search *s = calloc(1, sizeof *s);
	struct rvs_search_scan q = {0};
	char v[32], app[1024], version[1024];
	const char *msg, *bad = NULL;
	int rc;
	json_t *doc;

	if (!s)
		return rvs_query_set_error(r, 500, "out of memory");
	s->hi = INT64_MAX;
	s->t0 = now_ms();
	s->max_ms = cfg->search_budget_ms ? cfg->search_budget_ms : SEARCH_MAX_MS;
	s->max_rows = cfg->search_budget_rows ? cfg->search_budget_rows : SEARCH_MAX_ROWS;
	if ((msg = parse_search(query, s))) {
		rvs_query_set_error(r, 400, msg);
		goto out;
	}
	if (rvs_param_limit(query, LIST_DEFAULT, LIST_MAX, &s->limit)) {
		rvs_query_set_error(r, 400, "bad limit");
		goto out;
	}
	rc = rvs_query_param(query, "cursor", v, sizeof v);
	if (rc < 0 || (rc && (rvs_parse_i64(v, &s->hi) || s->hi < 0))) {
		rvs_query_set_error(r, 400, "bad cursor");
		goto out;
	}
	if (text_param(query, "app", app, sizeof app, &q.app, &bad) ||
	    text_param(query, "version", version, sizeof version, &q.version, &bad)) {
		bad_param(r, bad);
		goto out;
	}
	q.mode = s->mode == MODE_CHAIN	  ? RVS_SCAN_CHAINS
		 : s->mode == MODE_METHOD ? RVS_SCAN_METHOD_EXACT
					  : RVS_SCAN_METHODS;
	q.needle = s->needle;
	q.limit = s->limit + 1;
	s->hits = json_array();
	if ((rc = ops->search_scan(st, &q, on_chunk, on_hit, s)) < 0) {
		json_decref(s->hits);
		rvs_query_set_error(r, 500, "query failed");
		goto out;
	}
	doc = json_pack("{s:o,s:s,s:I,s:b}", "hits", s->hits, "mode",
			s->mode == MODE_CHAIN	 ? "chain"
			: s->mode == MODE_METHOD ? "method"
						 : "contains",
			"scanned", (json_int_t)s->scanned, "partial", s->partial);
	if (s->full)
		snprintf(v, sizeof v, "%" PRId64, s->last_rowid);
	else if (s->partial)
		snprintf(v, sizeof v, "%" PRId64, s->hi);
	json_object_set_new(doc, "next_cursor",
			    s->full || s->partial ? json_string(v) : json_null());
	rvs_query_reply(r, 200, doc);
out:
	free(s);
}

void rvs_search_traces(struct rvs_call *c)
{
	rvs_call_with_store(c, search_traces);
}

void rvs_search_issues(struct rvs_call *c)
{
	rvs_call_with_store(c, list_issues);
}

void rvs_search_chains(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;

	/* rvs_call_with_store, with the configured budgets. */
	if (rvs_store_acquire(c->cfg->database, &ops, &st))
		return rvs_query_set_error(c->q, 503, "database unavailable");
	search_chains(ops, st, c->query, c->cfg, c->q);
	rvs_store_release(st);
}
