/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_search.c — worst traces, issues and chain search on sqlite
 * (store_agg.h; store.h's traces_sorted, issues_read, search_scan; search.c
 * builds the documents), and rvs_issue(), issue.h's fold as an SQL
 * function for migration 9's backfill.
 *
 * Invariants: SQL text comes from fixed fragments chosen by a fixed table
 * (sort keys, directions), never from the request; request values are
 * bound.  Sorted lists page by keyset (the sort value and a rowid
 * tie-break), so page k costs what page 1 costs.  Each read runs on a
 * read-only connection of its own; a search scan keeps one statement for
 * all its chunks.
 */
#include "store/store_agg.h"
#include "store/sqlite/store_sqlite_util.h"
#include "base/issue.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

/* ---- rvs_issue() ------------------------------------------------------------ */

static void sql_issue(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *chain = (const char *)sqlite3_value_text(argv[0]);
	const char *sig = (const char *)sqlite3_value_text(argv[1]);
	char out[17];
	int rc;

	assert(argc == 2);
	if (!chain || !sig) {
		sqlite3_result_null(ctx);
		return;
	}
	rc = rvs_issue_fold(chain, sig, out);
	if (rc == -ENOMEM)
		sqlite3_result_error_nomem(ctx);
	else if (rc)
		sqlite3_result_null(ctx);
	else
		sqlite3_result_text(ctx, out, 16, SQLITE_TRANSIENT);
}

int rvs_sqlite_issue_register(sqlite3 *db)
{
	return sqlite3_create_function(db, "rvs_issue", 2,
				       SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
				       sql_issue, NULL, NULL) == SQLITE_OK
		       ? 0
		       : -EIO;
}

/* ---- traces_sorted ---------------------------------------------------------- */

/* Each key's ORDER BY expression (an index of migration 9's), by enum rvs_sort. */
static const char *const SORT_EXPR[] = {
	[RVS_SORT_RECEIVED] = "t.rowid",
	[RVS_SORT_SEVERITY] = "ifnull(t.severity, -1)",
	[RVS_SORT_DURATION] = "ifnull(t.duration_ns, -1)",
	[RVS_SORT_AGE] = "ifnull(t.captured_at_ns, -1)",
	[RVS_SORT_SELF] = "m.self_ns",
};

#define TRACE_COLS                                                                           \
	"t.trace_id, t.app_id, t.app_version, t.model, t.os_build, t.anomaly_kind,"          \
	" t.severity, t.captured_at_ns, t.received_at, t.anomaly_name, t.anomaly_signature," \
	" t.issue, t.duration_ns"
#define TRACE_FILTERS           \
	RVS_SQLITE_TRACE_FILTER \
	" AND (?11 IS NULL OR t.issue = ?11)"

/* The statement of q into sql[0..cap): 0 or -E2BIG.  By issue: an issue's
 * few traces drive the query (found by its index, then sorted) instead of
 * a walk of the sort index that would read most of the table to find them. */
static int sorted_sql(const struct rvs_sorted_query *q, char *sql, size_t cap)
{
	const int self = q->key == RVS_SORT_SELF;
	const char *expr = SORT_EXPR[q->key];
	const char *tb = self ? "m.rowid" : "t.rowid", *dir = q->desc ? "DESC" : "ASC";
	const char *le = q->desc ? "<=" : ">=", *lt = q->desc ? "<" : ">";
	char keyset[256] = "";
	int n;
	if (q->has_cursor && !q->count)
		snprintf(keyset, sizeof keyset, " AND %s %s ?12 AND (%s %s ?12 OR %s %s ?13)", expr,
			 le, expr, lt, tb, lt);
	if (q->count)
		n = snprintf(
			sql, cap,
			"SELECT count(*) AS total FROM (SELECT 1 FROM %s WHERE %s%s" TRACE_FILTERS
			" LIMIT ?14)",
			self ? "trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
			     : "traces t",
			self ? "m.method = ?10 AND"
			     : "(?10 IS NULL OR t.trace_id IN (SELECT x.trace_id FROM"
			       " trace_methods x WHERE x.method = ?10)) AND",
			q->issue && !self ? " t.rowid IN (SELECT x.rowid FROM traces x WHERE"
					    " x.issue = ?11) AND"
					  : "");
	else
		n = snprintf(sql, cap,
			     "SELECT " TRACE_COLS ", %s, %s AS sort_value_, %s AS tiebreak_ FROM %s"
			     " WHERE %s%s" TRACE_FILTERS "%s ORDER BY %s %s, %s %s LIMIT ?14",
			     self ? "m.self_ns AS method_self_ns" : "NULL AS method_self_ns", expr,
			     tb,
			     self ? "trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
				  : "traces t",
			     self ? "m.method = ?10 AND"
				  : "(?10 IS NULL OR t.trace_id IN (SELECT x.trace_id FROM "
				    "trace_methods x"
				    " WHERE x.method = ?10)) AND",
			     q->issue && !self ? " t.rowid IN (SELECT x.rowid FROM traces x WHERE "
						 "x.issue = ?11) AND"
					       : "",
			     keyset, expr, dir, tb, dir);
	return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}

int rvs_sqlite_traces_sorted(const char *dsn, const struct rvs_sorted_query *q, rvs_row_fn cb,
			     void *arg)
{
	char sql[2048];
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc;

	assert(q->key >= RVS_SORT_RECEIVED && q->key <= RVS_SORT_SELF);
	if (sorted_sql(q, sql, sizeof sql))
		return -E2BIG;
	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	rvs_sqlite_bind_opt_text(st, 1, q->app);
	rvs_sqlite_bind_opt_text(st, 2, q->version);
	rvs_sqlite_bind_opt_text(st, 3, q->model);
	rvs_sqlite_bind_opt_text(st, 4, q->os_build);
	rvs_sqlite_bind_opt_i64(st, 5, q->has_kind, q->kind);
	rvs_sqlite_bind_opt_i64(st, 6, q->has_min_severity, q->min_severity);
	rvs_sqlite_bind_opt_i64(st, 7, q->has_since, q->since);
	rvs_sqlite_bind_opt_i64(st, 8, q->has_until, q->until);
	rvs_sqlite_bind_opt_text(st, 9, q->signature);
	rvs_sqlite_bind_opt_text(st, 10, q->method);
	rvs_sqlite_bind_opt_text(st, 11, q->issue);
	rvs_sqlite_bind_opt_i64(st, 12, q->has_cursor, q->cursor_value);
	rvs_sqlite_bind_opt_i64(st, 13, q->has_cursor, q->cursor_tiebreak);
	sqlite3_bind_int64(st, 14, q->limit);
	rc = rvs_sqlite_rows_out(st, 0, cb, arg, NULL);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc < 0 ? rc : 0;
}

/* ---- issues_read ------------------------------------------------------------ */

/* An issue is an app's: (app_id, issue) groups, so two apps sharing a
 * chain are two issues.  Impact = traces × mean severity (at least 1
 * each) × distinct devices.  The per-issue reads name the app as ?7 (IS:
 * a missing app is its own). */
static const char ISSUES_SQL[] =
	"SELECT t.issue, count(*) AS traces, count(DISTINCT t.device_id) AS devices,"
	" avg(max(ifnull(t.severity, 0), 1)) AS severity,"
	" count(*) * avg(max(ifnull(t.severity, 0), 1)) * count(DISTINCT t.device_id) AS impact,"
	" min(t.received_at) AS first_seen, max(t.received_at) AS last_seen,"
	" max(t.rowid), t.app_id, count(*) OVER () AS total FROM traces t"
	" WHERE t.issue IS NOT NULL AND t.received_at >= ?1"
	" AND (?2 IS NULL OR t.app_id = ?2) AND (?3 IS NULL OR t.app_version = ?3)"
	" AND (?4 IS NULL OR t.anomaly_kind = ?4)"
	" GROUP BY t.app_id, t.issue ORDER BY impact DESC, t.issue, t.app_id LIMIT ?5";
/* An issue's traces (?1 the issue, ?7 its app) in the filter, with their
 * uploads for the selection weights. */
#define ISSUE_TRACES                                                                       \
	" FROM traces t LEFT JOIN uploads u ON u.trace_id = t.trace_id WHERE t.issue = ?1" \
	" AND t.app_id IS ?7 AND t.received_at >= ?6 AND (?2 IS NULL OR t.app_id = ?2)"    \
	" AND (?3 IS NULL OR t.app_version = ?3) AND (?4 IS NULL OR t.anomaly_kind = ?4)"
/* A trace's weight and its flag (store_agg.h) from its upload u. */
#define W_OF_U RVS_SQL_WEIGHT("u")
#define F_OF_U RVS_SQL_WFLAG("u")
/* The issue's traces joined to their uploads once, grouped by (week,
 * device), then: part 0, per week (ascending), its traces and the sum of
 * their weights; part 1, one row of the weighted traces and devices (each
 * device counted with its traces' smallest weight; traces without a device
 * count no device) and how many weights are estimates or unknown. */
static const char TRACES_SQL[] =
	"WITH g AS MATERIALIZED (SELECT t.received_at / 604800 AS wk, t.device_id AS dev,"
	" count(*) AS n, sum(" W_OF_U ") AS w, min(" W_OF_U ") AS mw, sum(" F_OF_U " = 1) AS est,"
	" sum(" F_OF_U " = 2) AS unk" ISSUE_TRACES " GROUP BY 1, 2)"
	" SELECT 0, wk, sum(n), sum(w), NULL, NULL, NULL FROM g GROUP BY wk"
	" UNION ALL SELECT 1, NULL, NULL, sum(d.w), sum(CASE WHEN d.dev IS NULL THEN 0"
	" ELSE d.mw END), sum(d.est), sum(d.unk) FROM (SELECT dev, sum(w) AS w, min(mw) AS mw,"
	" sum(est) AS est, sum(unk) AS unk FROM g GROUP BY dev) d ORDER BY 1, 2";
/* The issue's newest trace (by rowid) and its anomaly chain. */
static const char EXAMPLE_SQL[] =
	"SELECT x.trace_id, c.chain FROM traces x LEFT JOIN trace_chains c ON"
	" c.trace_id = x.trace_id AND c.kind = 'anomaly' AND c.rank = 1 WHERE x.rowid = ?1";
static const char SIGS_SQL[] =
	"SELECT DISTINCT t.anomaly_signature FROM traces t WHERE t.issue = ?1"
	" AND t.app_id IS ?7 AND t.received_at >= ?6 AND (?2 IS NULL OR t.app_id = ?2)"
	" AND (?3 IS NULL OR t.app_version = ?3) AND (?4 IS NULL OR t.anomaly_kind = ?4)"
	" AND t.anomaly_signature IS NOT NULL ORDER BY 1 LIMIT 64";

static void bind_issue_filters(sqlite3_stmt *st, const struct rvs_issue_filter *f)
{
	rvs_sqlite_bind_opt_text(st, 2, f->app);
	rvs_sqlite_bind_opt_text(st, 3, f->version);
	rvs_sqlite_bind_opt_i64(st, 4, f->has_kind, f->kind);
}

/* The example, signature, week and weight rows of the issue st's row
 * names. */
static int issue_rows(sqlite3_stmt *st, sqlite3_stmt *ex, sqlite3_stmt *sg, sqlite3_stmt *tr,
		      int (*cb)(void *arg, int part, const struct rvs_issue_row *r), void *arg)
{
	struct rvs_issue_row r = {0};
	int rc, stop, weights = 0;

	r.issue = (const char *)sqlite3_column_text(st, 0);
	r.app = (const char *)sqlite3_column_text(st, 8);
	r.traces = sqlite3_column_int64(st, 1);
	r.devices = sqlite3_column_int64(st, 2);
	r.severity = sqlite3_column_double(st, 3);
	r.impact = sqlite3_column_double(st, 4);
	r.first_seen = sqlite3_column_int64(st, 5);
	r.last_seen = sqlite3_column_int64(st, 6);
	r.total = sqlite3_column_int64(st, 9);
	sqlite3_bind_int64(ex, 1, sqlite3_column_int64(st, 7));
	if (sqlite3_step(ex) == SQLITE_ROW) {
		r.has_example = 1;
		r.example_trace = (const char *)sqlite3_column_text(ex, 0);
		r.example_chain = (const char *)sqlite3_column_text(ex, 1);
	}
	stop = cb(arg, RVS_ISSUE_ROW, &r);
	sqlite3_reset(ex);
	if (stop)
		return stop;
	sqlite3_bind_text(sg, 1, r.issue, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(sg, 7, r.app, -1, SQLITE_TRANSIENT); /* NULL binds NULL */
	while ((rc = sqlite3_step(sg)) == SQLITE_ROW) {
		struct rvs_issue_row x = {.signature = (const char *)sqlite3_column_text(sg, 0)};
		if ((stop = cb(arg, RVS_ISSUE_SIGNATURE, &x)))
			break;
	}
	sqlite3_reset(sg);
	if (stop)
		return stop;
	sqlite3_bind_text(tr, 1, r.issue, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(tr, 7, r.app, -1, SQLITE_TRANSIENT);
	while (!stop && (rc = sqlite3_step(tr)) == SQLITE_ROW) {
		struct rvs_issue_row x = {0};
		if (sqlite3_column_int(tr, 0) == 0) {
			x.week = sqlite3_column_int64(tr, 1);
			x.count = sqlite3_column_int64(tr, 2);
			x.w_count = sqlite3_column_double(tr, 3);
			stop = cb(arg, RVS_ISSUE_WEEK, &x);
			continue;
		}
		x.w_traces = sqlite3_column_double(tr, 3);
		x.w_devices = sqlite3_column_double(tr, 4);
		x.n_estimated = sqlite3_column_int64(tr, 5);
		x.n_unknown = sqlite3_column_int64(tr, 6);
		stop = cb(arg, RVS_ISSUE_WEIGHT, &x);
		weights++;
	}
	sqlite3_reset(tr);
	if (stop)
		return stop;
	/* The weights' row is the last, and always there. */
	return rc == SQLITE_DONE && weights == 1 ? 0 : -EIO;
}

int rvs_sqlite_issues_read(const char *dsn, const struct rvs_issue_filter *f,
			   int (*cb)(void *arg, int part, const struct rvs_issue_row *r), void *arg)
{
	sqlite3_stmt *st = NULL, *tr = NULL, *ex = NULL, *sg = NULL;
	sqlite3 *db;
	int rc = 0, stop = 0;

	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, ISSUES_SQL, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, TRACES_SQL, -1, &tr, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, EXAMPLE_SQL, -1, &ex, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, SIGS_SQL, -1, &sg, NULL) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	bind_issue_filters(st, f);
	bind_issue_filters(tr, f);
	bind_issue_filters(sg, f);
	sqlite3_bind_int64(st, 1, f->since);
	sqlite3_bind_int64(st, 5, f->limit);
	sqlite3_bind_int64(tr, 6, f->since);
	sqlite3_bind_int64(sg, 6, f->since);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW &&
	       !(stop = issue_rows(st, ex, sg, tr, cb, arg)))
		;
	rc = stop ? stop : rc == SQLITE_DONE ? 0 : -EIO;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(tr);
	sqlite3_finalize(ex);
	sqlite3_finalize(sg);
	sqlite3_close(db);
	return rc;
}

/* ---- search_scan ------------------------------------------------------------ */

#define HIT_COLS                                                                                   \
	"t.trace_id, t.app_id, t.app_version, t.model, t.anomaly_kind, t.severity, t.received_at," \
	" t.issue"
#define HIT_FILTERS " AND (?4 IS NULL OR t.app_id = ?4) AND (?5 IS NULL OR t.app_version = ?5)"

/* By RVS_SCAN_*: stored chains whose text holds ?3 (the pattern's longest
 * name and its ';'), in one rowid chunk [?2, ?1), newest first; methods
 * whose name holds ?3, in one rowid chunk; one method by name (its index),
 * newest rows first. */
static const char *const SCAN_SQL[] = {
	[RVS_SCAN_CHAINS] = "SELECT " HIT_COLS ", c.rowid, c.kind AS source, c.rank, c.chain"
			    " FROM trace_chains c JOIN traces t ON t.trace_id = c.trace_id"
			    " WHERE c.rowid < ?1 AND c.rowid >= ?2 AND instr(c.chain, ?3) > 0"
			    " " HIT_FILTERS " ORDER BY c.rowid DESC",
	[RVS_SCAN_METHODS] = "SELECT " HIT_COLS ", m.rowid, 'method' AS source, NULL AS rank,"
			     " m.method, m.calls, m.self_ns FROM trace_methods m JOIN traces t"
			     " ON t.trace_id = m.trace_id WHERE m.rowid < ?1 AND m.rowid >= ?2"
			     " AND instr(m.method, ?3) > 0" HIT_FILTERS " ORDER BY m.rowid DESC",
	[RVS_SCAN_METHOD_EXACT] =
		"SELECT " HIT_COLS ", m.rowid, 'method' AS source, NULL AS rank,"
		" m.method, m.calls, m.self_ns FROM trace_methods m JOIN traces t"
		" ON t.trace_id = m.trace_id WHERE m.method = ?3 AND m.rowid < ?1"
		" AND m.rowid >= ?2" HIT_FILTERS " ORDER BY m.rowid DESC LIMIT ?6",
};

int rvs_sqlite_search_scan(const char *dsn, const struct rvs_search_scan *q,
			   int (*chunk)(void *arg, int64_t top, int64_t *hi, int64_t *lo),
			   rvs_row_fn row, void *arg)
{
	sqlite3_stmt *st = NULL, *mx = NULL;
	int64_t top = 1, hi, lo;
	sqlite3 *db;
	int rc = 0;

	assert(q->mode >= RVS_SCAN_CHAINS && q->mode <= RVS_SCAN_METHOD_EXACT);
	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, SCAN_SQL[q->mode], -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       q->mode == RVS_SCAN_CHAINS ? "SELECT max(rowid) FROM trace_chains"
							  : "SELECT max(rowid) FROM trace_methods",
			       -1, &mx, NULL) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	if (sqlite3_step(mx) == SQLITE_ROW)
		top = sqlite3_column_int64(mx, 0) + 1;
	rvs_sqlite_bind_opt_text(st, 3, q->needle);
	rvs_sqlite_bind_opt_text(st, 4, q->app);
	rvs_sqlite_bind_opt_text(st, 5, q->version);
	while (rc >= 0 && !chunk(arg, top, &hi, &lo)) {
		sqlite3_bind_int64(st, 1, hi);
		sqlite3_bind_int64(st, 2, lo);
		if (q->mode == RVS_SCAN_METHOD_EXACT)
			sqlite3_bind_int64(st, 6, q->limit);
		rc = rvs_sqlite_rows_out(st, 0, row, arg, NULL);
		sqlite3_reset(st);
	}
out:
	sqlite3_finalize(st);
	sqlite3_finalize(mx);
	sqlite3_close(db);
	return rc < 0 ? rc : 0;
}
