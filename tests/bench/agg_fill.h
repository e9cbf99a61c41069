/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agg_fill.h — the web benchmarks' call-path aggregates (agg.c's tables,
 * server/SCHEMA.md migration 7) for traces already in a bench database:
 * per app a dictionary of AGG_FILL_PATHS paths (a ternary tree: path k's
 * parent is (k - 1) / 3, its method one of `methods` names
 * "com.example.M<n>"), and per trace i the rows of paths 0 .. 20 +
 * (i * 7) % 41 (closed under parent; 40 on average), self times varying
 * by trace, inclusive times summed up the tree; even traces carry CPU data
 * (3/4 of each path's time on the CPU), odd ones none (NULL, as a capture
 * without OFFCPU records).  The bucket sums are kept
 * by the triggers, as at decode.  Header-only, benchmark use.
 */
#ifndef RV_AGG_FILL_H
#define RV_AGG_FILL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#define AGG_FILL_PATHS 200
#define AGG_FILL_APPS  32

/* What the bench's own fill gave trace i. */
struct agg_fill_trace {
	char id[40], app[32], version[16], model[24];
	int kind;
	int64_t received_at;
};

static int agg_fill_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "agg_fill: %s\n", err ? err : "?");
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

/* Adds the aggregates of traces 0..n of the database at path, whose apps
 * are "com.example.app0" .. app(napps - 1) and whose attributes attrs
 * gives.  0 or -1. */
static int agg_fill(const char *path, long n, int napps, int methods,
		    void (*attrs)(long i, void *ctx, struct agg_fill_trace *t), void *ctx)
{
	static int64_t ids[AGG_FILL_APPS][AGG_FILL_PATHS];
	int64_t incl[AGG_FILL_PATHS], self[AGG_FILL_PATHS];
	sqlite3_stmt *node, *bucket_add, *bucket, *ta, *tp;
	sqlite3 *db;
	int rc = -1;

	if (napps > AGG_FILL_APPS || sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	sqlite3_busy_timeout(db, 10000);
	if (agg_fill_exec(db, "PRAGMA synchronous=OFF; PRAGMA cache_size=-262144") ||
	    agg_fill_exec(db, "BEGIN")) {
		sqlite3_close(db);
		return -1;
	}
	sqlite3_prepare_v2(db,
			   "INSERT INTO agg_nodes (app_id, parent, method, depth) VALUES (?,?,?,?)"
			   " RETURNING node",
			   -1, &node, NULL);
	sqlite3_prepare_v2(db,
			   "INSERT OR IGNORE INTO agg_buckets (app_id, app_version, model,"
			   " anomaly_kind, day) VALUES (?1, ?2, ?3, ?4, ?5)",
			   -1, &bucket_add, NULL);
	sqlite3_prepare_v2(db,
			   "SELECT bucket FROM agg_buckets WHERE app_id = ?1 AND app_version = ?2"
			   " AND model = ?3 AND anomaly_kind = ?4 AND day = ?5",
			   -1, &bucket, NULL);
	sqlite3_prepare_v2(db, "INSERT INTO trace_agg VALUES (?, ?, ?, 0, ?)", -1, &ta, NULL);
	sqlite3_prepare_v2(
		db,
		"INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns,"
		" cpu_self_ns, cpu_incl_ns) VALUES (?, ?, ?, 1, ?, ?, ?, ?)",
		-1, &tp, NULL);
	for (int a = 0; a < napps; a++) {
		char app[32], m[64];
		int depth[AGG_FILL_PATHS];
		snprintf(app, sizeof app, "com.example.app%d", a);
		for (int k = 0; k < AGG_FILL_PATHS; k++) {
			depth[k] = k ? depth[(k - 1) / 3] + 1 : 0;
			snprintf(m, sizeof m, "com.example.M%d", (a * 101 + k * 7) % methods);
			sqlite3_bind_text(node, 1, app, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(node, 2, k ? ids[a][(k - 1) / 3] : 0);
			sqlite3_bind_text(node, 3, k ? m : "", -1, SQLITE_TRANSIENT);
			sqlite3_bind_int(node, 4, depth[k]);
			if (sqlite3_step(node) != SQLITE_ROW)
				goto finalize;
			ids[a][k] = sqlite3_column_int64(node, 0);
			sqlite3_reset(node);
		}
	}
	for (long i = 0; i < n; i++) {
		struct agg_fill_trace t;
		int np = 20 + (int)((i * 7) % 41), a;
		int64_t b;

		memset(&t, 0, sizeof t);
		attrs(i, ctx, &t);
		if (sscanf(t.app, "com.example.app%d", &a) != 1 || a < 0 || a >= napps)
			goto finalize;
		for (int k = 0; k < 2; k++) {
			sqlite3_stmt *st = k ? bucket : bucket_add;
			sqlite3_bind_text(st, 1, t.app, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 2, t.version, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 3, t.model, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int(st, 4, t.kind);
			sqlite3_bind_int64(st, 5, t.received_at / 86400);
		}
		if (sqlite3_step(bucket_add) != SQLITE_DONE || sqlite3_step(bucket) != SQLITE_ROW)
			goto finalize;
		b = sqlite3_column_int64(bucket, 0);
		sqlite3_reset(bucket_add);
		sqlite3_reset(bucket);
		for (int k = np; k-- > 0;) {
			self[k] = 1000 * (int64_t)(1 + (i + k) % 97);
			incl[k] = self[k];
		}
		for (int k = np; k-- > 1;)
			incl[(k - 1) / 3] += incl[k];
		sqlite3_bind_text(ta, 1, t.id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(ta, 2, b);
		sqlite3_bind_int(ta, 3, np);
		sqlite3_bind_int64(ta, 4, incl[0]);
		if (sqlite3_step(ta) != SQLITE_DONE)
			goto finalize;
		sqlite3_reset(ta);
		for (int k = 0; k < np; k++) {
			sqlite3_bind_text(tp, 1, t.id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(tp, 2, ids[a][k]);
			sqlite3_bind_int64(tp, 3, b);
			sqlite3_bind_int64(tp, 4, self[k]);
			sqlite3_bind_int64(tp, 5, incl[k]);
			if (i % 2 == 0) { /* CPU data: 3/4 of each time on the CPU */
				sqlite3_bind_int64(tp, 6, self[k] / 4 * 3);
				sqlite3_bind_int64(tp, 7, incl[k] / 4 * 3);
			} else {
				sqlite3_bind_null(tp, 6);
				sqlite3_bind_null(tp, 7);
			}
			if (sqlite3_step(tp) != SQLITE_DONE)
				goto finalize;
			sqlite3_reset(tp);
		}
	}
	rc = agg_fill_exec(db, "COMMIT") || agg_fill_exec(db, "ANALYZE") ? -1 : 0;
finalize:
	if (rc)
		fprintf(stderr, "agg_fill: %s\n", sqlite3_errmsg(db));
	sqlite3_finalize(node);
	sqlite3_finalize(bucket_add);
	sqlite3_finalize(bucket);
	sqlite3_finalize(ta);
	sqlite3_finalize(tp);
	sqlite3_close(db);
	return rc;
}

#endif
