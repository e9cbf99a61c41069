/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_trend.c — a method's trend on PostgreSQL (store_agg.h; store.h's
 * trend_read): store_sqlite_trend.c's statement in PostgreSQL's dialect.
 *
 * Invariants: the statement is fixed text and every request value is a
 * typed parameter; at most max_rows + 1 rows come back (the extra one
 * only says the read was cut), so memory is bounded by the caller's cap.
 * The newest rows are kept, by received_at then trace_id, as on sqlite.
 */
#include "store/store_agg.h"
#include "store/pg/pg.h"

#include <assert.h>
#include <errno.h>

#include <libpq-fe.h>

/* The trace's selection weight and its flag from its upload u. */
#define WEIGHT_COLS RVS_SQL_WEIGHT("u") ", " RVS_SQL_WFLAG("u")
/* $1 method, $2 app, $3 model, $4 kind, $5 issue, $6 the cap + 1. */
static const char TREND_SQL[] =
	"SELECT CASE WHEN t.captured_at_ns > 0 THEN t.captured_at_ns / 86400000000000"
	" ELSE t.received_at / 86400 END, coalesce(t.app_version, ''), m.self_ns, "
	"m.incl_ns, " WEIGHT_COLS " FROM trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
	" LEFT JOIN uploads u ON u.trace_id = t.trace_id"
	" WHERE m.method = $1 AND ($2::text IS NULL OR t.app_id = $2)"
	" AND ($3::text IS NULL OR t.model = $3)"
	" AND ($4::bigint IS NULL OR t.anomaly_kind = $4)"
	" AND ($5::text IS NULL OR t.issue = $5)"
	" ORDER BY t.received_at DESC, t.trace_id DESC LIMIT $6";

int rvs_pg_trend_read(const struct rvs_pg_pool *pool, const struct rvs_trend_filter *f,
		      int (*cb)(void *arg, const struct rvs_trend_row *r), void *arg, int *cut)
{
	struct rvs_pg_params p = {0};
	PGresult *res = NULL;
	void *h;
	PGconn *pg;
	int rc, n, stop = 0;

	assert(f->method && f->max_rows > 0);
	*cut = 0;
	rvs_pg_text(&p, f->method);
	rvs_pg_text(&p, f->app);
	rvs_pg_text(&p, f->model);
	rvs_pg_opt_i64(&p, f->has_kind, f->kind);
	rvs_pg_text(&p, f->issue);
	rvs_pg_i64(&p, f->max_rows + 1);
	if (!(pg = pool->get(pool->s, &h)))
		return -EAGAIN;
	rc = rvs_pg_exec(pg, TREND_SQL, 0, &p, &res, NULL);
	pool->put(pool->s, h);
	if (rc)
		return rc;
	n = PQntuples(res);
	if (n > f->max_rows) {
		*cut = 1;
		n = (int)f->max_rows;
	}
	for (int i = 0; i < n && !stop; i++) {
		const struct rvs_trend_row r = {
			.day = rvs_pg_val_i64(res, i, 0),
			.version = PQgetvalue(res, i, 1),
			.self_ns = rvs_pg_val_i64(res, i, 2),
			.incl_ns = rvs_pg_val_i64(res, i, 3),
			.weight = rvs_pg_val_dbl(res, i, 4),
			.wflag = (int)rvs_pg_val_i64(res, i, 5),
		};
		stop = cb(arg, &r);
	}
	PQclear(res);
	return stop;
}
