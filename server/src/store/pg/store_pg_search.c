/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_search.c — worst traces, issues and chain search on PostgreSQL
 * (store_agg.h; store.h's traces_sorted, issues_read, search_scan; the
 * statements of store_sqlite_search.c in PostgreSQL's dialect: seq, the
 * arrival sequence of traces, trace_methods and trace_chains (migrations 5
 * and 7), stands for sqlite's rowid, and coalesce for ifnull).
 *
 * Invariants: SQL text comes from fixed fragments chosen by a fixed table
 * (sort keys, directions), never from the request; request values are
 * bound as text parameters, every one of them typed in the statement.
 * issues_read runs in one REPEATABLE READ, READ ONLY transaction (the
 * issues, their examples, signatures and trends agree); a search scan
 * keeps one pooled connection for all its chunks.
 */
#include "store/store_agg.h"
#include "store/pg/pg.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

/* ---- traces_sorted ---------------------------------------------------------- */

/* Each key's ORDER BY expression (migration 5's expression indexes), by
 * enum rvs_sort. */
static const char *const SORT_EXPR[] = {
	[RVS_SORT_RECEIVED] = "t.seq",
	[RVS_SORT_SEVERITY] = "coalesce(t.severity, -1)",
	[RVS_SORT_DURATION] = "coalesce(t.duration_ns, -1)",
	[RVS_SORT_AGE] = "coalesce(t.captured_at_ns, -1)",
	[RVS_SORT_SELF] = "m.self_ns",
};

#define TRACE_COLS                                                                           \
	"t.trace_id, t.app_id, t.app_version, t.model, t.os_build, t.anomaly_kind,"          \
	" t.severity, t.captured_at_ns, t.received_at, t.anomaly_name, t.anomaly_signature," \
	" t.issue, t.duration_ns"
#define TRACE_FILTERS                                                                            \
	" ($1::text IS NULL OR t.app_id = $1) AND ($2::text IS NULL OR t.app_version = $2)"      \
	" AND ($3::text IS NULL OR t.model = $3) AND ($4::text IS NULL OR t.os_build = $4)"      \
	" AND ($5::bigint IS NULL OR t.anomaly_kind = $5)"                                       \
	" AND ($6::bigint IS NULL OR t.severity >= $6)"                                          \
	" AND ($7::bigint IS NULL OR t.received_at >= $7)"                                       \
	" AND ($8::bigint IS NULL OR t.received_at < $8)"                                        \
	" AND ($9::text IS NULL OR t.anomaly_signature = $9 OR t.trace_id IN (SELECT c.trace_id" \
	"  FROM trace_chains c WHERE c.signature = $9))"                                         \
	" AND ($11::text IS NULL OR t.issue = $11)"

static int sorted_sql(const struct rvs_sorted_query *q, char *sql, size_t cap)
{
	const int self = q->key == RVS_SORT_SELF;
	const char *expr = SORT_EXPR[q->key];
	const char *tb = self ? "m.seq" : "t.seq", *dir = q->desc ? "DESC" : "ASC";
	const char *le = q->desc ? "<=" : ">=", *lt = q->desc ? "<" : ">";
	char keyset[256];
	int n;
	if (q->has_cursor && !q->count)
		snprintf(keyset, sizeof keyset,
			 " AND %s %s $12::bigint AND (%s %s $12::bigint OR %s %s $13::bigint)",
			 expr, le, expr, lt, tb, lt);
	else
		snprintf(keyset, sizeof keyset, " AND $12::bigint IS NULL AND $13::bigint IS NULL");
	if (q->count)
		n = snprintf(
			sql, cap,
			"SELECT count(*) AS total FROM (SELECT 1 FROM %s WHERE %s" TRACE_FILTERS
			"%s LIMIT $14) x",
			self ? "trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
			     : "traces t",
			self ? "m.method = $10 AND"
			     : "($10::text IS NULL OR t.trace_id IN (SELECT x.trace_id FROM"
			       " trace_methods x WHERE x.method = $10)) AND",
			keyset);
	else
		n = snprintf(sql, cap,
			     "SELECT " TRACE_COLS ", %s, %s AS sort_value_, %s AS tiebreak_ FROM %s"
			     " WHERE %s" TRACE_FILTERS "%s ORDER BY %s %s, %s %s LIMIT $14",
			     self ? "m.self_ns AS method_self_ns"
				  : "NULL::bigint AS method_self_ns",
			     expr, tb,
			     self ? "trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
				  : "traces t",
			     self ? "m.method = $10 AND"
				  : "($10::text IS NULL OR t.trace_id IN (SELECT x.trace_id FROM"
				    " trace_methods x WHERE x.method = $10)) AND",
			     keyset, expr, dir, tb, dir);
	return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}

int rvs_pg_traces_sorted(const struct rvs_pg_pool *pool, const struct rvs_sorted_query *sq,
			 rvs_row_fn cb, void *arg)
{
	struct rvs_pg_params a = {0};
	char sql[2048];
	PGresult *r;
	void *h;
	PGconn *pg;
	int rc;

	assert(sq->key >= RVS_SORT_RECEIVED && sq->key <= RVS_SORT_SELF);
	if (sorted_sql(sq, sql, sizeof sql))
		return -E2BIG;
	rvs_pg_text(&a, sq->app);
	rvs_pg_text(&a, sq->version);
	rvs_pg_text(&a, sq->model);
	rvs_pg_text(&a, sq->os_build);
	rvs_pg_opt_i64(&a, sq->has_kind, sq->kind);
	rvs_pg_opt_i64(&a, sq->has_min_severity, sq->min_severity);
	rvs_pg_opt_i64(&a, sq->has_since, sq->since);
	rvs_pg_opt_i64(&a, sq->has_until, sq->until);
	rvs_pg_text(&a, sq->signature);
	rvs_pg_text(&a, sq->method);
	rvs_pg_text(&a, sq->issue);
	rvs_pg_opt_i64(&a, sq->has_cursor && !sq->count, sq->cursor_value);
	rvs_pg_opt_i64(&a, sq->has_cursor && !sq->count, sq->cursor_tiebreak);
	rvs_pg_opt_i64(&a, 1, sq->limit);
	if (!(pg = pool->get(pool->s, &h)))
		return -EAGAIN;
	rc = rvs_pg_exec(pg, sql, 0, &a, &r, NULL);
	pool->put(pool->s, h);
	if (rc)
		return rc;
	rc = rvs_pg_rows_out(r, 0, PQntuples(r), 0, cb, arg);
	PQclear(r);
	return rc < 0 ? rc : 0;
}

/* ---- issues_read ------------------------------------------------------------ */

#define ISSUE_FILTERS                                                                           \
	" AND ($2::text IS NULL OR t.app_id = $2) AND ($3::text IS NULL OR t.app_version = $3)" \
	" AND ($4::bigint IS NULL OR t.anomaly_kind = $4)"

/* Impact = traces × mean severity (at least 1 each) × distinct devices;
 * the mean as sqlite's avg(): the sum over the count, in double.  Summed
 * per (issue, app, device) first, then per (issue, app), each group's
 * devices being its rows (count(device_id) skips NULL as count(DISTINCT)
 * does): two hash aggregates, where count(DISTINCT) sorted every trace of
 * the window (BENCHMARKS-web.md, "Issues by app"). */
static const char ISSUES_SQL[] =
	"SELECT d.issue, sum(d.n)::bigint AS traces, count(d.device_id) AS devices,"
	" sum(d.sev)::float8 / sum(d.n)::bigint AS severity,"
	" sum(d.n)::bigint * (sum(d.sev)::float8 / sum(d.n)::bigint) * count(d.device_id)"
	" AS impact, min(d.first_seen) AS first_seen, max(d.last_seen) AS last_seen,"
	" max(d.seq), d.app_id, count(*) OVER () AS total FROM"
	" (SELECT t.issue, t.app_id, t.device_id, count(*) AS n,"
	" sum(greatest(coalesce(t.severity, 0), 1)) AS sev, min(t.received_at) AS first_seen,"
	" max(t.received_at) AS last_seen, max(t.seq) AS seq FROM traces t"
	" WHERE t.issue IS NOT NULL AND t.received_at >= $1" ISSUE_FILTERS
	" GROUP BY t.issue, t.app_id, t.device_id) d"
	" GROUP BY d.issue, d.app_id"
	" ORDER BY impact DESC, d.issue COLLATE \"C\", d.app_id COLLATE \"C\" LIMIT $5";
/* The shown issues' reads, each one statement for the whole page (not
 * one per issue): $5 the issues and $6 their apps, two text[] of the
 * ranking's rows in its order (a NULL app is an unknown app, its own).
 * Each reads an issue's traces through the index on (issue, app_id,
 * received_at, ...): the app is an index condition in the first arm
 * (never IS NOT DISTINCT FROM, which no index condition can use), the
 * NULL app the second's, which runs only for an issue without one.
 * Rows come per issue in the ranking's order (k.i). */
#define SHOWN "unnest($5::text[], $6::text[]) WITH ORDINALITY AS k(issue, app, i)"
#define ISSUE_TRACES(COLS, MORE)                                                        \
	"(SELECT " COLS " FROM traces t WHERE t.issue = k.issue AND t.app_id = k.app"   \
	" AND t.received_at >= $1" ISSUE_FILTERS MORE " UNION ALL SELECT " COLS         \
	" FROM traces t WHERE k.app IS NULL AND t.issue = k.issue AND t.app_id IS NULL" \
	" AND t.received_at >= $1" ISSUE_FILTERS MORE ")"
/* A trace's weight and its flag (store_agg.h) from its upload u. */
#define W_OF_U	      RVS_SQL_WEIGHT("u")
#define F_OF_U	      RVS_SQL_WFLAG("u")
#define WEEK_DEV_OF   "t.received_at / 604800 AS week, t.device_id AS dev, t.trace_id AS tid"
#define WEEK_DEV_ROWS ISSUE_TRACES(WEEK_DEV_OF, "")
/* Each issue's traces joined to their uploads once, grouped by (issue,
 * week, device), then per issue (k.i): part 0, per week (ascending), its
 * traces and the sum of their selection weights; part 1, one row of the
 * weighted traces and devices (each device counted with its traces'
 * smallest weight; traces without a device count no device) and how many
 * weights are estimates or unknown. */
static const char TRACES_SQL[] =
	"WITH g AS MATERIALIZED (SELECT k.i, x.week, x.dev, count(*) AS n, sum(" W_OF_U ") AS w,"
	" min(" W_OF_U ") AS mw, count(*) FILTER (WHERE " F_OF_U " = 1) AS est,"
	" count(*) FILTER (WHERE " F_OF_U " = 2) AS unk FROM " SHOWN
	" CROSS JOIN LATERAL " WEEK_DEV_ROWS " x LEFT JOIN uploads u ON u.trace_id = x.tid"
	" GROUP BY k.i, x.week, x.dev)"
	" SELECT i, 0 AS part, week, sum(n)::bigint, sum(w)::float8, NULL::float8, NULL::bigint,"
	" NULL::bigint FROM g GROUP BY i, week"
	" UNION ALL SELECT d.i, 1, NULL, NULL, sum(d.w)::float8,"
	" coalesce(sum(d.mw) FILTER (WHERE d.dev IS NOT NULL), 0)::float8, sum(d.est)::bigint,"
	" sum(d.unk)::bigint FROM (SELECT i, dev, sum(w) AS w, min(mw) AS mw, sum(est) AS est,"
	" sum(unk) AS unk FROM g GROUP BY i, dev) d GROUP BY d.i ORDER BY 1, 2, 3";
/* Each issue's anomaly signatures, sorted, at most 64. */
#define SIG_OF	"t.anomaly_signature AS sig"
#define HAS_SIG " AND t.anomaly_signature IS NOT NULL"
static const char SIGS_SQL[] =
	"SELECT k.i, g.sig FROM " SHOWN " CROSS JOIN LATERAL"
	" (SELECT DISTINCT x.sig COLLATE \"C\" AS sig FROM " ISSUE_TRACES(
		SIG_OF, HAS_SIG) " x ORDER BY 1 LIMIT 64) g ORDER BY k.i, g.sig";
/* The issues' newest traces ($1: their seq) and their anomaly chains. */
static const char EXAMPLES_SQL[] =
	"SELECT x.seq, x.trace_id, c.chain FROM traces x LEFT JOIN trace_chains c ON"
	" c.trace_id = x.trace_id AND c.kind = 'anomaly' AND c.rank = 1"
	" WHERE x.seq = ANY($1::bigint[])";

/* column col of top's rows as an array literal (NULL for a NULL value);
 * malloc'd, NULL when out of memory. */
static char *column_lit(const PGresult *top, int col)
{
	struct rvs_pg_lit l = {malloc(64), 0, 64};

	rvs_pg_lit_put(&l, "{", 1);
	for (int i = 0; i < PQntuples(top); i++)
		rvs_pg_lit_text(&l, rvs_pg_val(top, i, col));
	rvs_pg_lit_put(&l, "}", 1);
	return l.b;
}

/* The first row of res at or after *k whose column 0 is key (rows sorted
 * by that column); *k moves past the rows before it. */
static int at_key(const PGresult *res, int *k, int64_t key)
{
	while (*k < PQntuples(res) && rvs_pg_val_i64(res, *k, 0) < key)
		(*k)++;
	return *k < PQntuples(res) && rvs_pg_val_i64(res, *k, 0) == key;
}

/* Issue i of top to cb, then its signatures, weeks and weights (sigs and
 * trs: every issue's, by ordinal, each consumed from *ks and *kt); ex: the
 * examples (by seq, any order). */
static int issue_out(const PGresult *top, int i, const PGresult *ex, const PGresult *sigs, int *ks,
		     const PGresult *trs, int *kt,
		     int (*cb)(void *arg, int part, const struct rvs_issue_row *r), void *arg)
{
	struct rvs_issue_row r = {0};
	const char *seq = PQgetvalue(top, i, 7);
	int stop;

	r.issue = rvs_pg_val(top, i, 0);
	r.app = rvs_pg_val(top, i, 8);
	r.traces = rvs_pg_val_i64(top, i, 1);
	r.devices = rvs_pg_val_i64(top, i, 2);
	r.severity = strtod(PQgetvalue(top, i, 3), NULL);
	r.impact = strtod(PQgetvalue(top, i, 4), NULL);
	r.first_seen = rvs_pg_val_i64(top, i, 5);
	r.last_seen = rvs_pg_val_i64(top, i, 6);
	r.total = rvs_pg_val_i64(top, i, 9);
	for (int k = 0; k < PQntuples(ex); k++)
		if (!strcmp(PQgetvalue(ex, k, 0), seq)) {
			r.has_example = 1;
			r.example_trace = rvs_pg_val(ex, k, 1);
			r.example_chain = rvs_pg_val(ex, k, 2);
			break;
		}
	if ((stop = cb(arg, RVS_ISSUE_ROW, &r)))
		return stop;
	for (; !stop && at_key(sigs, ks, i + 1); (*ks)++) {
		struct rvs_issue_row x = {.signature = rvs_pg_val(sigs, *ks, 1)};
		stop = cb(arg, RVS_ISSUE_SIGNATURE, &x);
	}
	for (; !stop && at_key(trs, kt, i + 1); (*kt)++) {
		struct rvs_issue_row x = {0};
		if (rvs_pg_val_i64(trs, *kt, 1) == 0) {
			x.week = rvs_pg_val_i64(trs, *kt, 2);
			x.count = rvs_pg_val_i64(trs, *kt, 3);
			x.w_count = rvs_pg_val_dbl(trs, *kt, 4);
			stop = cb(arg, RVS_ISSUE_WEEK, &x);
			continue;
		}
		x.w_traces = rvs_pg_val_dbl(trs, *kt, 4);
		x.w_devices = rvs_pg_val_dbl(trs, *kt, 5);
		x.n_estimated = rvs_pg_val_i64(trs, *kt, 6);
		x.n_unknown = rvs_pg_val_i64(trs, *kt, 7);
		stop = cb(arg, RVS_ISSUE_WEIGHT, &x);
	}
	return stop;
}

int rvs_pg_issues_read(const struct rvs_pg_pool *pool, const struct rvs_issue_filter *f,
		       int (*cb)(void *arg, int part, const struct rvs_issue_row *r), void *arg)
{
	struct rvs_pg_params a = {0}, e = {0};
	PGresult *top = NULL, *ex = NULL, *sigs = NULL, *trs = NULL, *res;
	char *seqs = NULL, *issues = NULL, *apps = NULL;
	void *h;
	PGconn *pg = pool->get(pool->s, &h);
	int rc;

	if (!pg)
		return -EAGAIN;
	/* $1 since, $2 app, $3 version, $4 kind, $5 the limit (the shown
	 * issues and $6 their apps in the per-issue reads). */
	rvs_pg_opt_i64(&a, 1, f->since);
	rvs_pg_text(&a, f->app);
	rvs_pg_text(&a, f->version);
	rvs_pg_opt_i64(&a, f->has_kind, f->kind);
	rvs_pg_opt_i64(&a, 1, f->limit);
	rc = rvs_pg_exec(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, &res,
			 NULL);
	PQclear(res);
	if (!rc)
		rc = rvs_pg_exec(pg, ISSUES_SQL, 0, &a, &top, NULL);
	/* Four statements a page, whatever the number of issues shown. */
	if (!rc && PQntuples(top) > 0) {
		if (!(seqs = column_lit(top, 7)) || !(issues = column_lit(top, 0)) ||
		    !(apps = column_lit(top, 8)))
			rc = -ENOMEM;
		rvs_pg_text(&e, seqs);
		if (!rc)
			rc = rvs_pg_exec(pg, EXAMPLES_SQL, 0, &e, &ex, NULL);
		a.n = 4;
		rvs_pg_text(&a, issues);
		rvs_pg_text(&a, apps);
		if (!rc)
			rc = rvs_pg_exec(pg, SIGS_SQL, 0, &a, &sigs, NULL);
		if (!rc)
			rc = rvs_pg_exec(pg, TRACES_SQL, 0, &a, &trs, NULL);
	}
	for (int i = 0, ks = 0, kt = 0; !rc && i < PQntuples(top); i++)
		rc = issue_out(top, i, ex, sigs, &ks, trs, &kt, cb, arg);
	PQclear(top);
	PQclear(ex);
	PQclear(sigs);
	PQclear(trs);
	free(seqs);
	free(issues);
	free(apps);
	PQclear(PQexec(pg, rc ? "ROLLBACK" : "COMMIT"));
	pool->put(pool->s, h);
	return rc;
}

/* ---- search_scan ------------------------------------------------------------ */

#define HIT_COLS                                                                                   \
	"t.trace_id, t.app_id, t.app_version, t.model, t.anomaly_kind, t.severity, t.received_at," \
	" t.issue"
/* Row R's trace (same id and week: its partition's key) with the filters,
 * one index lookup per row that passed the needle: a LATERAL the planner
 * cannot flatten (LIMIT 1), because a join lets it misjudge the needle
 * (strpos is opaque to it) and hash every trace of the fleet for a chunk's
 * few hits (BENCHMARKS-web.md: 24.5 → 3.5 ms a chunk). */
#define HIT_TRACE(R)                                                                            \
	" CROSS JOIN LATERAL (SELECT * FROM traces t WHERE t.trace_id = " R ".trace_id"         \
	" AND t.received_at = " R ".received_at"                                                \
	" AND ($4::text IS NULL OR t.app_id = $4) AND ($5::text IS NULL OR t.app_version = $5)" \
	" LIMIT 1) t"

/* By RVS_SCAN_*, as store_sqlite_search.c's: $1 hi, $2 lo, $3 the needle,
 * $4 app, $5 version, $6 the exact method's row limit. */
static const char *const SCAN_SQL[] = {
	[RVS_SCAN_CHAINS] = "SELECT " HIT_COLS ", c.seq, c.kind AS source, c.rank, c.chain"
			    " FROM trace_chains c" HIT_TRACE(
				    "c") " WHERE c.seq < $1 AND c.seq >= $2"
					 " AND strpos(c.chain, $3) > 0 ORDER BY c.seq DESC",
	[RVS_SCAN_METHODS] =
		"SELECT " HIT_COLS ", m.seq, 'method' AS source, NULL::int AS rank,"
		" m.method, m.calls, m.self_ns FROM trace_methods m" HIT_TRACE(
			"m") " WHERE m.seq < $1 AND m.seq >= $2 AND strpos(m.method, $3) > 0"
			     " ORDER BY m.seq DESC",
	[RVS_SCAN_METHOD_EXACT] =
		"SELECT " HIT_COLS ", m.seq, 'method' AS source,"
		" NULL::int AS rank, m.method, m.calls, m.self_ns"
		" FROM trace_methods m" HIT_TRACE(
			"m") " WHERE m.method = $3"
			     " AND m.seq < $1 AND m.seq >= $2 ORDER BY m.seq DESC LIMIT $6",
};

int rvs_pg_search_scan(const struct rvs_pg_pool *pool, const struct rvs_search_scan *sq,
		       int (*chunk)(void *arg, int64_t top, int64_t *hi, int64_t *lo),
		       rvs_row_fn row, void *arg)
{
	struct rvs_pg_params a = {0};
	int64_t top, hi, lo;
	PGresult *r;
	void *h;
	PGconn *pg;
	int rc;

	assert(sq->mode >= RVS_SCAN_CHAINS && sq->mode <= RVS_SCAN_METHOD_EXACT);
	if (!(pg = pool->get(pool->s, &h)))
		return -EAGAIN;
	rc = rvs_pg_exec(pg,
			 sq->mode == RVS_SCAN_CHAINS
				 ? "SELECT coalesce(max(seq), 0) + 1 FROM trace_chains"
				 : "SELECT coalesce(max(seq), 0) + 1 FROM trace_methods",
			 0, NULL, &r, NULL);
	if (rc) {
		pool->put(pool->s, h);
		return rc;
	}
	top = rvs_pg_val_i64(r, 0, 0);
	PQclear(r);
	while (rc >= 0 && !chunk(arg, top, &hi, &lo)) {
		a.n = 0;
		rvs_pg_opt_i64(&a, 1, hi);
		rvs_pg_opt_i64(&a, 1, lo);
		rvs_pg_text(&a, sq->needle);
		rvs_pg_text(&a, sq->app);
		rvs_pg_text(&a, sq->version);
		if (sq->mode == RVS_SCAN_METHOD_EXACT)
			rvs_pg_opt_i64(&a, 1, sq->limit);
		if ((rc = rvs_pg_exec(pg, SCAN_SQL[sq->mode], 0, &a, &r, NULL)))
			break;
		rc = rvs_pg_rows_out(r, 0, PQntuples(r), 0, row, arg);
		PQclear(r);
	}
	pool->put(pool->s, h);
	return rc < 0 ? rc : 0;
}
