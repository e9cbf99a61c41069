/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_index.c — the decoded-trace index writer on sqlite
 * (store_index.h; store.h's index_* operations), moved from decode.c.
 *
 * Each decode lane has its own connection with sqlite's own busy handler,
 * the savepoint journals in memory and its prepared statements cached for
 * the connection's life (keyed by the address of their SQL text, each a
 * string literal of this file).  Invariants: every value goes into SQL
 * through bound parameters; index_write writes each trace whole or not at
 * all (a savepoint each, one BEGIN IMMEDIATE … COMMIT for the batch); the
 * traces row goes first (foreign keys) and its signature last (migration
 * 5's triggers count it then, reading its chains).
 */
#include "store/store_index.h"
#include "store/sqlite/store_sqlite_util.h"
#include "store/store_agg.h"
#include "base/log.h"
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#define STMT_CACHE 16

struct rvs_index_lane {
	sqlite3 *db;
	const char *stmt_sql[STMT_CACHE];
	sqlite3_stmt *stmt[STMT_CACHE];
};

int rvs_sqlite_index_open(const char *dsn, struct rvs_index_lane **out)
{
	struct rvs_index_lane *l = calloc(1, sizeof *l);
	int rc;

	if (!l)
		return -ENOMEM;
	rc = sqlite3_open_v2(dsn, &l->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_URI, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close(l->db);
		free(l);
		return -EIO;
	}
	/* sqlite's own busy handler (sleeps of 1, 2, 5, 10 … ms), not
	 * rvs_sqlite_busy: a lane that finds the write lock taken backs off
	 * coarsely, so a waiting upload acknowledgement (the store, polling
	 * finely) gets the lock first and indexing uses the gaps between them
	 * (server/BENCHMARKS.md: acks 2,600–2,900/s with indexing at
	 * 1,500–1,700/s, against 1,700/s for both when lanes polled finely). */
	sqlite3_busy_timeout(l->db, 10000);
	/* Savepoint and statement journals in memory: an index batch's
	 * savepoints would otherwise spill every page they touch to a temp file
	 * (server/BENCHMARKS.md: half the bytes this process wrote). */
	rc = sqlite3_exec(l->db,
			  "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;"
			  " PRAGMA temp_store=MEMORY;",
			  NULL, NULL, NULL);
	rvs_sqlite_ckpt_attach(l->db); /* on failure: sqlite's own checkpoints */
	if (rc != SQLITE_OK) {
		rvs_sqlite_index_close(l);
		return -EIO;
	}
	*out = l;
	return 0;
}

void rvs_sqlite_index_close(struct rvs_index_lane *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < STMT_CACHE; i++)
		sqlite3_finalize(l->stmt[i]);
	rvs_sqlite_ckpt_detach(l->db);
	sqlite3_close(l->db);
	free(l);
}

/* The cached statement for sql (prepared on first use), ready to bind. */
static int prep(struct rvs_index_lane *l, const char *sql, sqlite3_stmt **st)
{
	size_t i;
	for (i = 0; i < STMT_CACHE && l->stmt_sql[i]; i++)
		if (l->stmt_sql[i] == sql) {
			*st = l->stmt[i];
			return SQLITE_OK;
		}
	if (i == STMT_CACHE) /* more statements than slots: not cached */
		return sqlite3_prepare_v2(l->db, sql, -1, st, NULL);
	int rc = sqlite3_prepare_v3(l->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &l->stmt[i], NULL);
	if (rc == SQLITE_OK) {
		l->stmt_sql[i] = sql;
		*st = l->stmt[i];
	}
	return rc;
}

/* Done with a statement from prep: reset for its next use. */
static void unprep(struct rvs_index_lane *l, sqlite3_stmt *st)
{
	for (size_t i = 0; i < STMT_CACHE && l->stmt_sql[i]; i++)
		if (l->stmt[i] == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return;
		}
	sqlite3_finalize(st);
}

int rvs_sqlite_index_upload_meta(struct rvs_index_lane *l, const char *trace_id,
				 struct rvs_index_meta *m)
{
	sqlite3_stmt *st;
	int rc =
		prep(l, "SELECT compression, summary, payload_size FROM uploads WHERE trace_id = ?",
		     &st);

	memset(m, 0, sizeof *m);
	if (rc)
		return -EIO;
	sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const void *blob = sqlite3_column_blob(st, 1);
		int len = sqlite3_column_bytes(st, 1);
		m->compression = sqlite3_column_int(st, 0);
		m->payload_size = (uint64_t)sqlite3_column_int64(st, 2);
		rc = 0;
		if (blob && len > 0) {
			if ((m->summary = malloc((size_t)len))) {
				memcpy(m->summary, blob, (size_t)len);
				m->summary_len = (size_t)len;
			} else {
				rc = -ENOMEM;
			}
		}
	} else {
		rc = rc == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(rc);
	}
	unprep(l, st);
	return rc;
}

/* Every row of one trace, inside the caller's transaction; an sqlite code. */
static int write_one(struct rvs_index_lane *l, const struct rvs_index_trace *v)
{
	static const char *const wipe[] = {
		"DELETE FROM trace_chains WHERE trace_id = ?",
		"DELETE FROM trace_methods WHERE trace_id = ?",
		"DELETE FROM traces WHERE trace_id = ?",
	};
	static const char ins_method[] = "INSERT INTO trace_methods (trace_id, method, calls,"
					 " self_ns, incl_ns, self_rank, cpu_self_ns, cpu_incl_ns)"
					 " VALUES (?,?,?,?,?,?,?,?)";
	static const char ins_method_first[] =
		"INSERT OR IGNORE INTO trace_methods (trace_id, method, calls, self_ns, incl_ns,"
		" self_rank, cpu_self_ns, cpu_incl_ns) VALUES (?,?,?,?,?,?,?,?)";
	sqlite3_stmt *st = NULL;
	int rc, decoded_before;

	/* A trace decoded again (re-symbolized, or after a crash before its
	 * outcome was recorded) replaces its rows; a first decode — nearly all
	 * of them — has none (child rows exist only under a traces row). */
	if ((rc = prep(l, "SELECT 1 FROM traces WHERE trace_id = ?", &st)))
		return rc;
	sqlite3_bind_text(st, 1, v->trace_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	unprep(l, st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return rc;
	decoded_before = rc == SQLITE_ROW;
	for (size_t i = 0; decoded_before && i < 3; i++) {
		if ((rc = prep(l, wipe[i], &st)))
			return rc;
		sqlite3_bind_text(st, 1, v->trace_id, -1, SQLITE_STATIC);
		rc = rvs_sqlite_step_done(st);
		unprep(l, st);
		if (rc)
			return rc;
	}
	rc = prep(l,
		  "INSERT INTO traces (trace_id, app_id, app_version, model, os_build,"
		  " anomaly_kind, severity, captured_at_ns, received_at, anomaly_name, duration_ns,"
		  " nmethods, dropped, decoded_at, device_id, index_cut)"
		  " SELECT trace_id, app_id, app_version, model, os_build, anomaly_kind, severity,"
		  " captured_realtime_ns, received_at, ?2, ?3, ?4, ?5, ?6, device_id, ?7"
		  " FROM uploads WHERE trace_id = ?1",
		  &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, v->trace_id, -1, SQLITE_STATIC);
	rvs_sqlite_bind_opt_text(st, 2, v->anomaly_name);
	rvs_sqlite_bind_opt_i64(st, 3, v->duration_ns >= 0, v->duration_ns);
	rvs_sqlite_bind_opt_i64(st, 4, v->nmethods >= 0, v->nmethods);
	rvs_sqlite_bind_opt_i64(st, 5, v->dropped >= 0, v->dropped);
	sqlite3_bind_int64(st, 6, v->decoded_at);
	rvs_sqlite_bind_opt_text(st, 7, v->index_cut);
	rc = rvs_sqlite_step_done(st);
	if (!rc && sqlite3_changes(l->db) != 1)
		rc = SQLITE_NOTFOUND;
	unprep(l, st);
	if (rc)
		return rc;

	if ((rc = prep(l, v->methods_first_wins ? ins_method_first : ins_method, &st)))
		return rc;
	for (size_t i = 0; i < v->nmethod_rows && !rc; i++) {
		const struct rvs_index_method *m = &v->methods[i];
		sqlite3_bind_text(st, 1, v->trace_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, m->method, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)(m->calls & INT64_MAX));
		sqlite3_bind_int64(st, 4, (sqlite3_int64)(m->self_ns & INT64_MAX));
		sqlite3_bind_int64(st, 5, (sqlite3_int64)(m->incl_ns & INT64_MAX));
		if (m->self_rank)
			sqlite3_bind_int64(st, 6, m->self_rank);
		/* Without CPU data both stay NULL (cleared bindings). */
		rvs_sqlite_bind_opt_i64(st, 7, m->has_cpu,
					(sqlite3_int64)(m->cpu_self_ns & INT64_MAX));
		rvs_sqlite_bind_opt_i64(st, 8, m->has_cpu,
					(sqlite3_int64)(m->cpu_incl_ns & INT64_MAX));
		rc = rvs_sqlite_step_done(st);
	}
	unprep(l, st);
	if (rc)
		return rc;

	rc = prep(l,
		  "INSERT INTO trace_chains (trace_id, kind, rank, signature, chain,"
		  " depth, self_ns, incl_ns) VALUES (?,?,?,?,?,?,?,?)",
		  &st);
	if (rc)
		return rc;
	for (size_t i = 0; i < v->nchains && !rc; i++) {
		const struct rvs_index_chain *c = &v->chains[i];
		sqlite3_bind_text(st, 1, v->trace_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, c->kind, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, c->rank);
		sqlite3_bind_text(st, 4, c->signature, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, c->chain, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, c->depth);
		rvs_sqlite_bind_opt_i64(st, 7, c->self_ns >= 0, c->self_ns);
		rvs_sqlite_bind_opt_i64(st, 8, c->incl_ns >= 0, c->incl_ns);
		rc = rvs_sqlite_step_done(st);
	}
	unprep(l, st);
	if (rc)
		return rc;
	if (v->agg) {
		struct rvs_agg_rows rows;
		assert(v->agg_build && v->agg_release);
		if (v->agg_build(v->agg, v->agg_max_nodes, &rows))
			return SQLITE_NOMEM;
		rc = rvs_sqlite_agg_write(l->db, v->trace_id, &rows);
		v->agg_release(&rows);
		if (rc)
			return rc;
	}

	/* Setting traces.signature fires migration 5's triggers, which count the
	 * trace into its signature's totals inside this transaction. */
	rc = prep(l,
		  "UPDATE traces SET anomaly_signature = ?1, signature = ?2, issue = ?3"
		  " WHERE trace_id = ?4",
		  &st);
	if (rc)
		return rc;
	rvs_sqlite_bind_opt_text(st, 1, v->anomaly_signature);
	rvs_sqlite_bind_opt_text(st, 2, v->signature);
	rvs_sqlite_bind_opt_text(st, 3, v->issue);
	sqlite3_bind_text(st, 4, v->trace_id, -1, SQLITE_STATIC);
	rc = rvs_sqlite_step_done(st);
	unprep(l, st);
	if (rc || !v->unresolved_replace)
		return rc;

	if ((rc = prep(l, "DELETE FROM trace_unresolved WHERE trace_id = ?", &st)))
		return rc;
	sqlite3_bind_text(st, 1, v->trace_id, -1, SQLITE_STATIC);
	rc = rvs_sqlite_step_done(st);
	unprep(l, st);
	if (rc || !v->nunresolved)
		return rc;
	st = NULL;
	rc = prep(l, "INSERT OR IGNORE INTO trace_unresolved (build_id, trace_id) VALUES (?, ?)",
		  &st);
	for (size_t i = 0; i < v->nunresolved && !rc; i++) {
		sqlite3_bind_text(st, 1, v->unresolved[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, v->trace_id, -1, SQLITE_STATIC);
		rc = rvs_sqlite_step_done(st);
	}
	if (st)
		unprep(l, st);
	return rc;
}

/* The failure of v: its reason names sqlite's message; rc a -errno. */
static void fail(struct rvs_index_lane *l, struct rvs_index_trace *v, int rc)
{
	snprintf(v->reason, sizeof v->reason, "index: %s", sqlite3_errmsg(l->db));
	rvs_log("error", "decode index", "err=\"%s\"", sqlite3_errmsg(l->db));
	rc = rvc_sqlite_errno(rc);
	v->rc = rc ? rc : -EIO;
}

void rvs_sqlite_index_write(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n)
{
	int rc;

	for (size_t i = 0; i < n; i++) {
		v[i].rc = 0;
		v[i].reason[0] = 0;
	}
	rc = sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	for (size_t i = 0; i < n; i++) {
		int r = rc;

		if (!r)
			r = sqlite3_exec(l->db, "SAVEPOINT one", NULL, NULL, NULL);
		if (!r)
			r = write_one(l, &v[i]);
		if (r) {
			fail(l, &v[i], r);
			if (!rc)
				sqlite3_exec(l->db, "ROLLBACK TO one", NULL, NULL, NULL);
		}
		if (!rc)
			sqlite3_exec(l->db, "RELEASE one", NULL, NULL, NULL);
	}
	if (!rc && (rc = sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL))) {
		for (size_t i = 0; i < n; i++)
			if (!v[i].rc)
				fail(l, &v[i], rc);
		sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
	}
}
