/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_trend.c — a method's trend on sqlite (store_agg.h; store.h's
 * trend_read; model/trend.h computes the buckets): one row per trace with
 * the method, its capture day, app version, self and inclusive ns and
 * its upload's selection weight.
 *
 * Invariants: the statement is fixed text and every request value is
 * bound; at most max_rows + 1 rows are read (the extra one only says the
 * read was cut), so memory is bounded by the caller's cap.  The newest
 * rows are kept, by received_at then trace_id — the same order as
 * store_pg_trend.c, so both backends answer with the same traces.
 */
#include "store/store_agg.h"
#include "store/sqlite/store_sqlite_util.h"

#include <assert.h>
#include <errno.h>

#include <sqlite3.h>

#include "rearview/common.h"

/* The trace's selection weight and its flag from its upload u. */
#define WEIGHT_COLS RVS_SQL_WEIGHT("u") ", " RVS_SQL_WFLAG("u")
/* ?1 method, ?2 app, ?3 model, ?4 kind, ?5 issue, ?6 the cap + 1.  A day
 * is the capture's UTC day (86400 s of 1e9 ns), else the arrival's. */
static const char TREND_SQL[] =
	"SELECT CASE WHEN t.captured_at_ns > 0 THEN t.captured_at_ns / 86400000000000"
	" ELSE t.received_at / 86400 END, coalesce(t.app_version, ''), m.self_ns, "
	"m.incl_ns, " WEIGHT_COLS " FROM trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
	" LEFT JOIN uploads u ON u.trace_id = t.trace_id"
	" WHERE m.method = ?1 AND (?2 IS NULL OR t.app_id = ?2)"
	" AND (?3 IS NULL OR t.model = ?3) AND (?4 IS NULL OR t.anomaly_kind = ?4)"
	" AND (?5 IS NULL OR t.issue = ?5)"
	" ORDER BY t.received_at DESC, t.trace_id DESC LIMIT ?6";

int rvs_sqlite_trend_read(const char *dsn, const struct rvs_trend_filter *f,
			  int (*cb)(void *arg, const struct rvs_trend_row *r), void *arg, int *cut)
{
	sqlite3_stmt *st;
	sqlite3 *db;
	int64_t n = 0;
	int rc, stop = 0;

	assert(f->method && f->max_rows > 0);
	*cut = 0;
	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, TREND_SQL, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, f->method, -1, SQLITE_TRANSIENT);
	rvs_sqlite_bind_opt_text(st, 2, f->app);
	rvs_sqlite_bind_opt_text(st, 3, f->model);
	rvs_sqlite_bind_opt_i64(st, 4, f->has_kind, f->kind);
	rvs_sqlite_bind_opt_text(st, 5, f->issue);
	sqlite3_bind_int64(st, 6, f->max_rows + 1);
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_trend_row r;
		if (n++ == f->max_rows) {
			*cut = 1;
			rc = SQLITE_DONE;
			break;
		}
		r.day = sqlite3_column_int64(st, 0);
		r.version = (const char *)sqlite3_column_text(st, 1);
		r.self_ns = sqlite3_column_int64(st, 2);
		r.incl_ns = sqlite3_column_int64(st, 3);
		r.weight = sqlite3_column_double(st, 4);
		r.wflag = sqlite3_column_int(st, 5);
		if (!r.version)
			r.version = "";
		stop = cb(arg, &r);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}
