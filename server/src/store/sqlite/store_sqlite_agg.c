/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_agg.c — the call-path aggregates on sqlite (store_agg.h;
 * agg.h, SCHEMA.md migration 7): a decoded trace's rows written by its
 * index lane, and the aggregate reads (store.h's agg_read).
 *
 * Invariants: every value goes into SQL through bound parameters; a trace's
 * dictionary ids are resolved in rvs_agg_build's order (its kept rows
 * first, then each "(other)" row as its path row is written), as
 * store_pg_agg.c does, so both backends number a fixture's nodes alike;
 * agg_read runs every side and the dictionary lookups in one read
 * transaction on a connection of its own.
 */
#include "store/store_agg.h"
#include "store/sqlite/store_sqlite_util.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* ---- decode time ------------------------------------------------------------ */

enum { S_BUCKET_ADD, S_BUCKET, S_FIND, S_ADD, S_TRACE, S_PATH, S_N };

static const char *const INDEX_SQL[S_N] = {
	"INSERT OR IGNORE INTO agg_buckets (app_id, app_version, model, anomaly_kind, day)"
	" SELECT COALESCE(app_id, ''), COALESCE(app_version, ''), COALESCE(model, ''),"
	" COALESCE(anomaly_kind, 0), received_at / 86400 FROM traces WHERE trace_id = ?1",
	"SELECT b.bucket, b.app_id FROM traces t JOIN agg_buckets b"
	" ON b.app_id = COALESCE(t.app_id, '') AND b.app_version = COALESCE(t.app_version, '')"
	" AND b.model = COALESCE(t.model, '') AND b.anomaly_kind = COALESCE(t.anomaly_kind, 0)"
	" AND b.day = t.received_at / 86400 WHERE t.trace_id = ?1",
	"SELECT node FROM agg_nodes WHERE app_id = ?1 AND parent = ?2 AND method = ?3",
	"INSERT INTO agg_nodes (app_id, parent, method, depth) VALUES (?1, ?2, ?3, ?4)"
	" RETURNING node",
	"INSERT INTO trace_agg (trace_id, bucket, nodes, folded, total_ns) VALUES (?1,?2,?3,?4,?5)",
	"INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns)"
	" VALUES (?1,?2,?3,?4,?5,?6)",
};

/* The dictionary's id of (app, parent, method), added when new. */
static int node_id(sqlite3_stmt *find, sqlite3_stmt *add, const char *app, int64_t parent,
		   const char *method, uint32_t depth, int64_t *id)
{
	int rc;
	sqlite3_bind_text(find, 1, app, -1, SQLITE_STATIC);
	sqlite3_bind_int64(find, 2, parent);
	sqlite3_bind_text(find, 3, method, -1, SQLITE_STATIC);
	rc = sqlite3_step(find);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(find, 0);
	sqlite3_reset(find);
	sqlite3_clear_bindings(find);
	if (rc == SQLITE_ROW)
		return SQLITE_OK;
	if (rc != SQLITE_DONE)
		return rc;
	sqlite3_bind_text(add, 1, app, -1, SQLITE_STATIC);
	sqlite3_bind_int64(add, 2, parent);
	sqlite3_bind_text(add, 3, method, -1, SQLITE_STATIC);
	sqlite3_bind_int64(add, 4, depth);
	rc = sqlite3_step(add);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(add, 0);
	sqlite3_reset(add);
	sqlite3_clear_bindings(add);
	return rc == SQLITE_ROW ? SQLITE_OK : rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
}

static int write_rows(sqlite3_stmt **st, const char *trace_id, const struct rvs_agg_rows *r,
		      int64_t *id)
{
	int64_t bucket;
	char *app;
	int rc;

	sqlite3_bind_text(st[S_BUCKET_ADD], 1, trace_id, -1, SQLITE_STATIC);
	if ((rc = rvs_sqlite_step_done(st[S_BUCKET_ADD])))
		return rc;
	sqlite3_bind_text(st[S_BUCKET], 1, trace_id, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st[S_BUCKET])) != SQLITE_ROW)
		return rc == SQLITE_DONE ? SQLITE_NOTFOUND : rc;
	bucket = sqlite3_column_int64(st[S_BUCKET], 0);
	app = strdup((const char *)sqlite3_column_text(st[S_BUCKET], 1));
	sqlite3_reset(st[S_BUCKET]);
	if (!app)
		return SQLITE_NOMEM;
	rc = SQLITE_OK;
	for (size_t i = 0; i < r->n && !rc; i++)
		if (!r->v[i].other)
			rc = node_id(st[S_FIND], st[S_ADD], app, i ? id[r->v[i].parent] : 0,
				     r->v[i].method, r->v[i].depth, &id[i]);
	sqlite3_bind_text(st[S_TRACE], 1, trace_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st[S_TRACE], 2, bucket);
	sqlite3_bind_int64(st[S_TRACE], 3, r->nodes);
	sqlite3_bind_int64(st[S_TRACE], 4, r->folded);
	sqlite3_bind_int64(st[S_TRACE], 5, r->total_ns);
	if (!rc)
		rc = rvs_sqlite_step_done(st[S_TRACE]);
	for (size_t i = 0; i < r->n && !rc; i++) {
		const struct rvs_agg_row *w = &r->v[i];
		assert(!i || w->parent < i);
		if (w->other && (rc = node_id(st[S_FIND], st[S_ADD], app, id[w->parent], w->method,
					      w->depth, &id[i])))
			break;
		sqlite3_bind_text(st[S_PATH], 1, trace_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st[S_PATH], 2, id[i]);
		sqlite3_bind_int64(st[S_PATH], 3, bucket);
		sqlite3_bind_int64(st[S_PATH], 4, (sqlite3_int64)(w->calls & INT64_MAX));
		sqlite3_bind_int64(st[S_PATH], 5, w->self_ns);
		sqlite3_bind_int64(st[S_PATH], 6, w->incl_ns);
		rc = rvs_sqlite_step_done(st[S_PATH]);
	}
	free(app);
	return rc;
}

int rvs_sqlite_agg_write(sqlite3 *db, const char *trace_id, const struct rvs_agg_rows *r)
{
	sqlite3_stmt *st[S_N] = {0};
	int64_t *id;
	int rc = SQLITE_OK;

	assert(r->n >= 1 && !r->v[0].other);
	if (!(id = calloc(r->n, sizeof *id)))
		return SQLITE_NOMEM;
	for (int i = 0; i < S_N && rc == SQLITE_OK; i++)
		rc = sqlite3_prepare_v2(db, INDEX_SQL[i], -1, &st[i], NULL);
	if (rc == SQLITE_OK)
		rc = write_rows(st, trace_id, r, id);
	for (int i = 0; i < S_N; i++)
		sqlite3_finalize(st[i]);
	free(id);
	return rc;
}

/* ---- reads ------------------------------------------------------------------ */

/* ?1 app, ?2 version, ?3 model, ?4 campaign, ?5 method, ?7 kind, ?8 since,
 * ?9 until, ?10 signature, ?11 chain, ?12 the trace cap (agg.c's order). */
#define BUCKET_SQL                                                                          \
	"SELECT s.node, s.traces, s.calls, s.self_ns, s.incl_ns, 1.0, 2 FROM agg_buckets b" \
	" CROSS JOIN agg_sums s ON s.bucket = b.bucket"                                     \
	" WHERE (?1 IS NULL OR b.app_id = ?1) AND (?2 IS NULL OR b.app_version = ?2)"       \
	" AND (?3 IS NULL OR b.model = ?3) AND (?7 IS NULL OR b.anomaly_kind = ?7)"         \
	" AND (?8 IS NULL OR b.day >= ?8 / 86400) AND (?9 IS NULL OR b.day < ?9 / 86400)"
#define TRACE_SQL                                                                             \
	"SELECT p.node, 1, p.calls, p.self_ns, p.incl_ns, x.w, x.wf FROM (SELECT t.trace_id," \
	" COALESCE(uw.weight, 1.0) AS w, CASE WHEN uw.weight_exact = 1 THEN 0"                \
	" WHEN COALESCE(uw.sel_kind, 0) = 0 THEN 2 ELSE 1 END AS wf FROM traces t"            \
	" LEFT JOIN uploads uw ON uw.trace_id = t.trace_id"                                   \
	" CROSS JOIN trace_agg a ON a.trace_id = t.trace_id"                                  \
	" WHERE (?1 IS NULL OR t.app_id = ?1) AND (?2 IS NULL OR t.app_version = ?2)"         \
	" AND (?3 IS NULL OR t.model = ?3) AND (?7 IS NULL OR t.anomaly_kind = ?7)"           \
	" AND (?8 IS NULL OR t.received_at >= ?8) AND (?9 IS NULL OR t.received_at < ?9)"     \
	" AND (?4 IS NULL OR EXISTS (SELECT 1 FROM uploads u WHERE u.trace_id = t.trace_id"   \
	" AND u.campaign_id = ?4))"                                                           \
	" AND (?5 IS NULL OR EXISTS (SELECT 1 FROM trace_methods m"                           \
	" WHERE m.trace_id = t.trace_id AND m.method = ?5))"                                  \
	" AND (?10 IS NULL OR EXISTS (SELECT 1 FROM trace_chains c"                           \
	" WHERE c.trace_id = t.trace_id AND c.signature = ?10))"                              \
	" AND (?11 IS NULL OR EXISTS (SELECT 1 FROM trace_chains c"                           \
	" WHERE c.trace_id = t.trace_id AND c.chain = ?11))"                                  \
	" ORDER BY t.received_at DESC LIMIT ?12) x CROSS JOIN trace_paths p"                  \
	" ON p.trace_id = x.trace_id"

/* Side s's rows to cb->row.  0, cb's stop value, or -EIO. */
static int collect(sqlite3 *db, const struct rvs_agg_filter *f, size_t s,
		   const struct rvs_agg_cb *cb, void *arg)
{
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (sqlite3_prepare_v2(db, f->bucketed ? BUCKET_SQL : TRACE_SQL, -1, &st, NULL))
		return -EIO;
	rvs_sqlite_bind_opt_text(st, 1, f->app);
	rvs_sqlite_bind_opt_text(st, 2, f->version);
	rvs_sqlite_bind_opt_text(st, 3, f->model);
	rvs_sqlite_bind_opt_i64(st, 7, f->has_kind, f->kind);
	rvs_sqlite_bind_opt_i64(st, 8, f->has_since, f->since);
	rvs_sqlite_bind_opt_i64(st, 9, f->has_until, f->until);
	if (!f->bucketed) {
		rvs_sqlite_bind_opt_text(st, 4, f->campaign);
		rvs_sqlite_bind_opt_text(st, 5, f->method);
		rvs_sqlite_bind_opt_text(st, 10, f->signature);
		rvs_sqlite_bind_opt_text(st, 11, f->chain);
		sqlite3_bind_int64(st, 12, f->max_traces);
	}
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
		stop = cb->row(arg, s, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
			       sqlite3_column_int64(st, 4), sqlite3_column_double(st, 5),
			       sqlite3_column_int(st, 6));
	sqlite3_finalize(st);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* Every node cb names to cb->describe. */
static int describe(sqlite3 *db, const struct rvs_agg_cb *cb, void *arg)
{
	size_t n = cb->nodes(arg);
	sqlite3_stmt *st;
	int rc = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT parent, depth, method, app_id FROM agg_nodes"
			       " WHERE node = ?",
			       -1, &st, NULL))
		return -EIO;
	for (size_t i = 0; i < n && !rc; i++) {
		int64_t parent;
		sqlite3_bind_int64(st, 1, cb->node_id(arg, i));
		if (sqlite3_step(st) != SQLITE_ROW) {
			rc = -EIO;
			break;
		}
		parent = sqlite3_column_int64(st, 0);
		rc = cb->describe(arg, cb->node_id(arg, i), parent, sqlite3_column_int(st, 1),
				  (const char *)sqlite3_column_text(st, parent ? 2 : 3));
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc;
}

int rvs_sqlite_agg_read(const char *dsn, const struct rvs_agg_filter *f, size_t nsides,
			const struct rvs_agg_cb *cb, void *arg)
{
	sqlite3 *db;
	int rc = 0;

	assert(nsides >= 1 && nsides <= 2);
	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	/* One read transaction: both sides see the same snapshot. */
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL))
		rc = -EIO;
	for (size_t i = 0; i < nsides && !rc; i++)
		rc = collect(db, &f[i], i, cb, arg);
	if (!rc)
		rc = describe(db, cb, arg);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}
