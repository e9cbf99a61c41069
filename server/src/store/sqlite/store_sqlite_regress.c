/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_regress.c — the sqlite backend's regression and webhook
 * delivery operations (store.h's "regressions and webhook deliveries"
 * block; tables of sqlite migration 8, server/SCHEMA.md).
 *
 * Each rvs_regress_db is one read-write connection of its own on the
 * database file, with the server's busy handler, used by one thread at a
 * time.  Invariants: every value is bound as a parameter; the reads of
 * regress_sides run in one read transaction (one WAL snapshot); writes that
 * go together (a comparison, its alert and its deliveries; a claim) run in
 * one BEGIN IMMEDIATE transaction; a delivery's state only moves from
 * pending (webhook_record matches state 'pending').
 */
#include "store/store_regress_be.h"
#include "store/store_agg.h"
#include "store/sqlite/store_sqlite_util.h"
#include "base/log.h"
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

struct rvs_regress_db {
	sqlite3 *db;
};

int rvs_sqlite_regress_open(const char *dsn, struct rvs_regress_db **out)
{
	struct rvs_regress_db *d = calloc(1, sizeof *d);

	if (!d)
		return -ENOMEM;
	if (sqlite3_open_v2(dsn, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(d->db);
		free(d);
		return -EIO;
	}
	rvs_sqlite_busy(d->db, 5000);
	*out = d;
	return 0;
}

void rvs_sqlite_regress_close(struct rvs_regress_db *d)
{
	if (!d)
		return;
	sqlite3_close(d->db);
	free(d);
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK)
		return 0;
	rvs_log("error", "sqlite prepare", "err=\"%s\"", sqlite3_errmsg(db));
	return -EIO;
}

/* ---- regress_sides --------------------------------------------------------- */

/* The sides' WHERE clauses: ?1 app, ?2 and ?3 as bind_sides binds them. */
#define W_VERSIONS                                           \
	" WHERE t.app_id = ?1 AND t.app_version IN (?2, ?3)" \
	" AND t.duration_ns IS NOT NULL"
#define W_MODEL                                                       \
	" WHERE t.app_id = ?1 AND (?3 IS NULL OR t.app_version = ?3)" \
	" AND t.duration_ns IS NOT NULL"
#define W_WEEK                                                      \
	" WHERE t.app_id = ?1 AND t.received_at >= ?2 - 2 * 604800" \
	" AND t.received_at < ?2 AND t.duration_ns IS NOT NULL"
#define TRACES_Q(side, w) "SELECT t.trace_id, " side " FROM traces t" w " ORDER BY t.trace_id"
static const char *const TRACES_SQL[3] = {
	TRACES_Q("CASE WHEN t.app_version = ?3 THEN 1 ELSE 0 END", W_VERSIONS),
	TRACES_Q("CASE WHEN t.model = ?2 THEN 1 ELSE 0 END", W_MODEL),
	TRACES_Q("CASE WHEN t.received_at >= ?2 - 604800 THEN 1 ELSE 0 END", W_WEEK),
};
/* One trace's rows of a part, ?1 its id: key, self, inclusive, chain.  Read
 * trace by trace (the sides' ids in order) rather than joined with traces
 * again: each join re-read every side's row of traces, a page of the table
 * per trace, which was a third of the pages the comparison read. */
static const char *const ROWS_SQL[3] = {
	[RVS_CMP_METHOD] = "SELECT method, self_ns, incl_ns, NULL FROM trace_methods"
			   " WHERE trace_id = ?1",
	[RVS_CMP_CHAIN] = "SELECT signature, self_ns, incl_ns, chain FROM trace_chains"
			  " WHERE trace_id = ?1 AND kind = 'top'",
};

static int bind_sides(sqlite3_stmt *st, const struct rvs_cmp_sides *q)
{
	int rc = sqlite3_bind_text(st, 1, q->app, -1, SQLITE_STATIC);
	switch (q->mode) {
	case RVS_CMP_VERSIONS:
		rc |= sqlite3_bind_text(st, 2, q->a, -1, SQLITE_STATIC);
		rc |= sqlite3_bind_text(st, 3, q->b, -1, SQLITE_STATIC);
		break;
	case RVS_CMP_MODEL:
		rc |= sqlite3_bind_text(st, 2, q->model, -1, SQLITE_STATIC);
		if (q->version)
			rc |= sqlite3_bind_text(st, 3, q->version, -1, SQLITE_STATIC);
		break;
	case RVS_CMP_WEEK:
		rc |= sqlite3_bind_int64(st, 2, q->now);
		break;
	}
	return rc == SQLITE_OK ? 0 : -EIO;
}

/* The sides' trace ids, in the order the traces' read gave them. */
struct ids {
	char **v;
	size_t n, cap;
};

static void ids_free(struct ids *ids)
{
	for (size_t i = 0; i < ids->n; i++)
		free(ids->v[i]);
	free(ids->v);
}

static int ids_add(struct ids *ids, const char *id)
{
	if (ids->n == ids->cap) {
		size_t cap = ids->cap ? 2 * ids->cap : 256;
		char **v = realloc(ids->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		ids->v = v;
		ids->cap = cap;
	}
	if (!(ids->v[ids->n] = strdup(id)))
		return -ENOMEM;
	ids->n++;
	return 0;
}

/* Every trace of the sides to cb (RVS_CMP_TRACE), their ids into ids. */
static int sides_traces(sqlite3 *db, const struct rvs_cmp_sides *q, struct ids *ids,
			int (*cb)(void *arg, const struct rvs_cmp_row *r), void *arg)
{
	sqlite3_stmt *st;
	int rc, s, stop = 0;

	if ((rc = prepare(db, TRACES_SQL[q->mode], &st)))
		return rc;
	if ((rc = bind_sides(st, q))) {
		sqlite3_finalize(st);
		return rc;
	}
	while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_cmp_row r = {.part = RVS_CMP_TRACE,
					.trace_id = rvs_sqlite_col_text(st, 0),
					.side = sqlite3_column_int(st, 1) != 0};
		if (!r.trace_id)
			continue;
		stop = ids_add(ids, r.trace_id);
		if (!stop)
			stop = cb(arg, &r);
	}
	sqlite3_finalize(st);
	if (stop)
		return stop;
	return s == SQLITE_DONE ? 0 : -EIO;
}

/* The rows of part (methods or top chains) of every trace in ids to cb. */
static int sides_rows(sqlite3 *db, int part, const struct ids *ids,
		      int (*cb)(void *arg, const struct rvs_cmp_row *r), void *arg)
{
	sqlite3_stmt *st;
	int rc, s = SQLITE_DONE, stop = 0;

	if ((rc = prepare(db, ROWS_SQL[part], &st)))
		return rc;
	for (size_t i = 0; !stop && i < ids->n; i++) {
		sqlite3_reset(st);
		if (sqlite3_bind_text(st, 1, ids->v[i], -1, SQLITE_STATIC) != SQLITE_OK) {
			stop = -EIO;
			break;
		}
		while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW) {
			struct rvs_cmp_row r = {.part = part,
						.trace_id = ids->v[i],
						.key = rvs_sqlite_col_text(st, 0),
						.self_ns = sqlite3_column_int64(st, 1),
						.incl_ns = sqlite3_column_int64(st, 2),
						.chain = rvs_sqlite_col_text(st, 3)};
			if (r.key)
				stop = cb(arg, &r);
		}
		if (!stop && s != SQLITE_DONE)
			stop = -EIO;
	}
	sqlite3_finalize(st);
	return stop;
}

int rvs_sqlite_regress_sides(struct rvs_regress_db *d, const struct rvs_cmp_sides *q,
			     int (*cb)(void *arg, const struct rvs_cmp_row *r), void *arg)
{
	struct ids ids = {0};
	int rc;

	assert(q->app && (unsigned)q->mode <= RVS_CMP_WEEK);
	if ((rc = rvs_sqlite_exec(d->db, "BEGIN")))
		return rc;
	rc = sides_traces(d->db, q, &ids, cb, arg);
	for (int part = RVS_CMP_METHOD; !rc && part <= RVS_CMP_CHAIN; part++)
		rc = sides_rows(d->db, part, &ids, cb, arg);
	rvs_sqlite_exec(d->db, "COMMIT");
	ids_free(&ids);
	return rc;
}

int rvs_sqlite_regress_versions(struct rvs_regress_db *d,
				int (*cb)(void *arg, const char *app, const char *version,
					  int64_t n),
				void *arg)
{
	sqlite3_stmt *st;
	int rc, s, stop = 0;

	if ((rc = prepare(d->db,
			  "SELECT app_id, app_version, count(*) FROM traces"
			  " WHERE duration_ns IS NOT NULL AND app_id IS NOT NULL"
			  " AND app_version IS NOT NULL GROUP BY app_id, app_version"
			  " ORDER BY app_id",
			  &st)))
		return rc;
	while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW)
		stop = cb(arg, rvs_sqlite_col_text(st, 0), rvs_sqlite_col_text(st, 1),
			  sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
	if (stop)
		return stop;
	return s == SQLITE_DONE ? 0 : -EIO;
}

int rvs_sqlite_regress_run_get(struct rvs_regress_db *d, const char *app, const char *a,
			       const char *b, int64_t *traces_a, int64_t *traces_b)
{
	sqlite3_stmt *st;
	int rc, s;

	if ((rc = prepare(d->db,
			  "SELECT traces_a, traces_b FROM regress_runs"
			  " WHERE app_id = ?1 AND version_a = ?2 AND version_b = ?3",
			  &st)))
		return rc;
	sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, b, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		*traces_a = sqlite3_column_int64(st, 0);
		*traces_b = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return s == SQLITE_ROW ? 0 : s == SQLITE_DONE ? -ENOENT : -EIO;
}

static int enqueue(sqlite3 *db, const struct rvs_webhook_new *w)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = prepare(
		     db,
		     "INSERT INTO webhook_deliveries (url, event, body, state, attempts,"
		     " next_try_ms, created_at) VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?4 / 1000)",
		     &st)))
		return rc;
	sqlite3_bind_text(st, 1, w->url, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, w->event, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, w->body, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, w->now_ms);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	return rc;
}

int rvs_sqlite_regress_run_put(struct rvs_regress_db *d, const struct rvs_regress_run_row *r,
			       const char *alert_method, const struct rvs_webhook_new *w, size_t n,
			       int *alerted)
{
	sqlite3_stmt *st = NULL;
	int alert = 0, rc;

	assert(r->app && r->version_a && r->version_b && r->result);
	if ((rc = rvs_sqlite_exec(d->db, "BEGIN IMMEDIATE")))
		return rc;
	if (alert_method) {
		if (prepare(d->db,
			    "INSERT OR IGNORE INTO regress_alerts (app_id, version_a, version_b,"
			    " method, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
			    &st))
			goto fail;
		sqlite3_bind_text(st, 1, r->app, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, r->version_a, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, r->version_b, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, alert_method, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, r->computed_at);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto fail;
		alert = sqlite3_changes(d->db) == 1;
		sqlite3_finalize(st);
		st = NULL;
	}
	for (size_t i = 0; alert && i < n; i++)
		if (enqueue(d->db, &w[i]))
			goto fail;
	if (prepare(d->db,
		    "INSERT OR REPLACE INTO regress_runs (app_id, version_a, version_b, traces_a,"
		    " traces_b, computed_at, top_method, top_ratio, top_delta, top_q, alerted,"
		    " result) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
		    &st))
		goto fail;
	sqlite3_bind_text(st, 1, r->app, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, r->version_a, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, r->version_b, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, r->traces_a);
	sqlite3_bind_int64(st, 5, r->traces_b);
	sqlite3_bind_int64(st, 6, r->computed_at);
	if (r->top_method) {
		sqlite3_bind_text(st, 7, r->top_method, -1, SQLITE_STATIC);
		if (r->has_ratio)
			sqlite3_bind_double(st, 8, r->top_ratio);
		sqlite3_bind_double(st, 9, r->top_delta);
		sqlite3_bind_double(st, 10, r->top_q);
	}
	sqlite3_bind_int(st, 11, r->alerted != 0);
	sqlite3_bind_text(st, 12, r->result, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	if (rvs_sqlite_exec(d->db, "COMMIT")) {
		st = NULL;
		goto fail;
	}
	if (alerted)
		*alerted = alert;
	return 0;
fail:
	sqlite3_finalize(st);
	rvs_sqlite_exec(d->db, "ROLLBACK");
	return -EIO;
}

int rvs_sqlite_regress_runs_list(struct rvs_regress_db *d, size_t max,
				 int (*cb)(void *arg, const struct rvs_regress_run_row *r),
				 void *arg)
{
	sqlite3_stmt *st;
	int rc, s, stop = 0;

	if ((rc = prepare(d->db,
			  "SELECT app_id, version_a, version_b, traces_a, traces_b, computed_at,"
			  " top_method, top_ratio, top_delta, top_q, alerted FROM regress_runs"
			  " ORDER BY computed_at DESC, app_id LIMIT ?1",
			  &st)))
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)max);
	while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_regress_run_row r = {
			.app = rvs_sqlite_col_text(st, 0),
			.version_a = rvs_sqlite_col_text(st, 1),
			.version_b = rvs_sqlite_col_text(st, 2),
			.traces_a = sqlite3_column_int64(st, 3),
			.traces_b = sqlite3_column_int64(st, 4),
			.computed_at = sqlite3_column_int64(st, 5),
			.top_method = rvs_sqlite_col_text(st, 6),
			.top_ratio = sqlite3_column_double(st, 7),
			.has_ratio = sqlite3_column_type(st, 7) != SQLITE_NULL,
			.top_delta = sqlite3_column_double(st, 8),
			.top_q = sqlite3_column_double(st, 9),
			.alerted = sqlite3_column_int(st, 10),
		};
		stop = cb(arg, &r);
	}
	sqlite3_finalize(st);
	if (stop)
		return stop;
	return s == SQLITE_DONE ? 0 : -EIO;
}

/* ---- webhook deliveries ------------------------------------------------------ */

int rvs_sqlite_webhook_enqueue(struct rvs_regress_db *d, const struct rvs_webhook_new *w)
{
	return enqueue(d->db, w);
}

#define ROW_COLS                                                                            \
	"SELECT id, url, event, body, state, attempts, ifnull(last_status, 0), last_error," \
	" next_try_ms, created_at, ifnull(delivered_at, -1) FROM webhook_deliveries"

static void row_of(sqlite3_stmt *st, struct rvs_webhook_row *r)
{
	*r = (struct rvs_webhook_row){
		.id = sqlite3_column_int64(st, 0),
		.url = rvs_sqlite_col_text(st, 1),
		.event = rvs_sqlite_col_text(st, 2),
		.body = rvs_sqlite_col_text(st, 3),
		.state = rvs_sqlite_col_text(st, 4),
		.attempts = (uint32_t)sqlite3_column_int64(st, 5),
		.last_status = sqlite3_column_int64(st, 6),
		.last_error = rvs_sqlite_col_text(st, 7),
		.next_try_ms = sqlite3_column_int64(st, 8),
		.created_at = sqlite3_column_int64(st, 9),
		.delivered_at = sqlite3_column_int64(st, 10),
	};
}

int rvs_sqlite_webhook_claim(struct rvs_regress_db *d, int64_t now_ms, int64_t lease_ms, size_t max,
			     int (*cb)(void *arg, const struct rvs_webhook_row *r), void *arg)
{
	sqlite3_stmt *st = NULL, *up = NULL;
	int rc, s, n = 0, stop = 0;

	assert(lease_ms > 0);
	if ((rc = rvs_sqlite_exec(d->db, "BEGIN IMMEDIATE")))
		return rc;
	if ((rc = prepare(d->db,
			  ROW_COLS " WHERE state = 'pending' AND next_try_ms <= ?1"
				   " ORDER BY next_try_ms, id LIMIT ?2",
			  &st)) ||
	    (rc = prepare(d->db, "UPDATE webhook_deliveries SET next_try_ms = ?2 WHERE id = ?1",
			  &up)))
		goto out;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	sqlite3_bind_int64(up, 2, now_ms + lease_ms);
	while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_webhook_row r;
		row_of(st, &r);
		sqlite3_bind_int64(up, 1, r.id);
		if (sqlite3_step(up) != SQLITE_DONE) {
			s = SQLITE_ERROR;
			break;
		}
		sqlite3_reset(up);
		n++;
		r.next_try_ms = now_ms + lease_ms;
		stop = cb(arg, &r);
	}
	rc = stop ? stop : s == SQLITE_DONE ? 0 : -EIO;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(up);
	if (!rc && rvs_sqlite_exec(d->db, "COMMIT"))
		rc = -EIO;
	if (rc)
		rvs_sqlite_exec(d->db, "ROLLBACK");
	return rc ? rc : n;
}

int rvs_sqlite_webhook_record(struct rvs_regress_db *d, const struct rvs_webhook_row *r,
			      uint32_t prev_attempts)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = prepare(d->db,
			  "UPDATE webhook_deliveries SET attempts = ?2, last_status = ?3,"
			  " last_error = ?4, state = ?5, next_try_ms = ?6, delivered_at = ?7"
			  " WHERE id = ?1 AND state = 'pending' AND attempts = ?8",
			  &st)))
		return rc;
	sqlite3_bind_int64(st, 1, r->id);
	sqlite3_bind_int64(st, 2, r->attempts);
	if (r->last_status)
		sqlite3_bind_int64(st, 3, r->last_status);
	if (r->last_error)
		sqlite3_bind_text(st, 4, r->last_error, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, r->state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, r->next_try_ms);
	if (r->delivered_at >= 0)
		sqlite3_bind_int64(st, 7, r->delivered_at);
	sqlite3_bind_int64(st, 8, prev_attempts);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	if (!rc && sqlite3_changes(d->db) != 1)
		rc = -ENOENT;
	sqlite3_finalize(st);
	return rc;
}

int rvs_sqlite_webhook_list(struct rvs_regress_db *d, size_t max,
			    int (*cb)(void *arg, const struct rvs_webhook_row *r), void *arg)
{
	sqlite3_stmt *st;
	int rc, s, stop = 0;

	if ((rc = prepare(d->db, ROW_COLS " ORDER BY id DESC LIMIT ?1", &st)))
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)max);
	while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_webhook_row r;
		row_of(st, &r);
		stop = cb(arg, &r);
	}
	sqlite3_finalize(st);
	if (stop)
		return stop;
	return s == SQLITE_DONE ? 0 : -EIO;
}

int rvs_sqlite_webhook_pending(struct rvs_regress_db *d, uint64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = prepare(d->db, "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'",
			  &st)))
		return rc;
	rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
	if (!rc)
		*out = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}

/* ---- alert rules (alert_rules, sqlite migration 13) ------------------------ */

int rvs_sqlite_alert_rule_add(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r,
			      size_t max, int64_t *id)
{
	sqlite3_stmt *st;
	int rc, s;

	if ((rc = rvs_sqlite_exec(d->db, "BEGIN IMMEDIATE")))
		return rc;
	/* The count and the insert in one write transaction: the cap holds
	 * against concurrent adds. */
	if ((rc = prepare(
		     d->db,
		     "INSERT INTO alert_rules (name, spec, created_at, created_by, state)"
		     " SELECT ?1, ?2, ?3, ?4, 'ok' WHERE (SELECT count(*) FROM alert_rules) < ?5",
		     &st)))
		goto fail;
	sqlite3_bind_text(st, 1, r->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, r->spec, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, r->created_at);
	sqlite3_bind_text(st, 4, r->created_by, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)max);
	s = sqlite3_step(st);
	sqlite3_finalize(st);
	if (s != SQLITE_DONE) {
		rc = rvc_sqlite_errno(s);
		goto fail;
	}
	if (!sqlite3_changes(d->db)) {
		rc = -ENOSPC;
		goto fail;
	}
	*id = sqlite3_last_insert_rowid(d->db);
	if ((rc = rvs_sqlite_exec(d->db, "COMMIT")))
		goto fail;
	return 0;
fail:
	rvs_sqlite_exec(d->db, "ROLLBACK");
	return rc;
}

int rvs_sqlite_alert_rule_delete(struct rvs_regress_db *d, int64_t id)
{
	sqlite3_stmt *st;
	int rc, s;

	if ((rc = prepare(d->db, "DELETE FROM alert_rules WHERE id = ?1", &st)))
		return rc;
	sqlite3_bind_int64(st, 1, id);
	s = sqlite3_step(st);
	sqlite3_finalize(st);
	if (s != SQLITE_DONE)
		return rvc_sqlite_errno(s);
	return sqlite3_changes(d->db) ? 0 : -ENOENT;
}

int rvs_sqlite_alert_rules_list(struct rvs_regress_db *d,
				int (*cb)(void *arg, const struct rvs_alert_rule_row *r), void *arg)
{
	sqlite3_stmt *st;
	int rc, s, stop = 0;

	if ((rc = prepare(d->db,
			  "SELECT r.id, r.name, r.spec, r.created_by, r.created_at, r.state,"
			  " ifnull(r.since, -1), r.value, ifnull(r.evaluated_at, -1),"
			  " ifnull(w.id, -1), w.state, ifnull(w.last_status, 0),"
			  " ifnull(w.delivered_at, -1) FROM alert_rules r"
			  " LEFT JOIN webhook_deliveries w ON w.id = r.last_delivery_id"
			  " ORDER BY r.id",
			  &st)))
		return rc;
	while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_alert_rule_row r = {
			.id = sqlite3_column_int64(st, 0),
			.name = rvs_sqlite_col_text(st, 1),
			.spec = rvs_sqlite_col_text(st, 2),
			.created_by = rvs_sqlite_col_text(st, 3),
			.created_at = sqlite3_column_int64(st, 4),
			.state = rvs_sqlite_col_text(st, 5),
			.since = sqlite3_column_int64(st, 6),
			.has_value = sqlite3_column_type(st, 7) != SQLITE_NULL,
			.value = sqlite3_column_double(st, 7),
			.evaluated_at = sqlite3_column_int64(st, 8),
			.delivery_id = sqlite3_column_int64(st, 9),
			.delivery_state = rvs_sqlite_col_text(st, 10),
			.delivery_status = sqlite3_column_int64(st, 11),
			.delivered_at = sqlite3_column_int64(st, 12),
		};
		stop = cb(arg, &r);
	}
	sqlite3_finalize(st);
	if (stop)
		return stop;
	return s == SQLITE_DONE ? 0 : rvc_sqlite_errno(s);
}

int rvs_sqlite_alert_rule_update(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r,
				 const char *from_state, const struct rvs_webhook_new *w, size_t n,
				 int *moved)
{
	sqlite3_stmt *st;
	int rc, s;

	*moved = 0;
	/* The write lock first: the state read below is the one updated. */
	if ((rc = rvs_sqlite_exec(d->db, "BEGIN IMMEDIATE")))
		return rc;
	if ((rc = prepare(d->db, "SELECT state FROM alert_rules WHERE id = ?1", &st)))
		goto fail;
	sqlite3_bind_int64(st, 1, r->id);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		*moved = strcmp(r->state, from_state) != 0 &&
			 !strcmp(rvs_sqlite_col_text(st, 0) ? rvs_sqlite_col_text(st, 0) : "",
				 from_state);
	sqlite3_finalize(st);
	if (s != SQLITE_ROW) {
		rc = s == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(s);
		goto fail;
	}
	if ((rc = prepare(d->db,
			  "UPDATE alert_rules SET value = ?2, evaluated_at = ?3,"
			  " state = CASE WHEN ?5 THEN ?4 ELSE state END,"
			  " since = CASE WHEN ?5 THEN ?6 ELSE ifnull(since, ?6) END WHERE id = ?1",
			  &st)))
		goto fail;
	sqlite3_bind_int64(st, 1, r->id);
	if (r->has_value)
		sqlite3_bind_double(st, 2, r->value);
	sqlite3_bind_int64(st, 3, r->evaluated_at);
	sqlite3_bind_text(st, 4, r->state, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, *moved);
	sqlite3_bind_int64(st, 6, r->since);
	s = sqlite3_step(st);
	sqlite3_finalize(st);
	if (s != SQLITE_DONE) {
		rc = rvc_sqlite_errno(s);
		goto fail;
	}
	for (size_t i = 0; *moved && i < n; i++)
		if ((rc = enqueue(d->db, &w[i])))
			goto fail;
	if (*moved && n) {
		if ((rc = prepare(d->db,
				  "UPDATE alert_rules SET last_delivery_id = ?2 WHERE id = ?1",
				  &st)))
			goto fail;
		sqlite3_bind_int64(st, 1, r->id);
		sqlite3_bind_int64(st, 2, sqlite3_last_insert_rowid(d->db));
		s = sqlite3_step(st);
		sqlite3_finalize(st);
		if (s != SQLITE_DONE) {
			rc = rvc_sqlite_errno(s);
			goto fail;
		}
	}
	if ((rc = rvs_sqlite_exec(d->db, "COMMIT")))
		goto fail;
	return 0;
fail:
	*moved = 0;
	rvs_sqlite_exec(d->db, "ROLLBACK");
	return rc;
}

/* A day's captures, their summed selection weights and how many of
 * those are estimates (wf 1) or unknown (2), from each trace's upload u;
 * ?1 from_day, ?2 to_day, ?3 app, ?4 model, ?5 kind. */
#define ALERT_WEIGHT_COLS RVS_SQL_WEIGHT("u") " AS w, " RVS_SQL_WFLAG("u") " AS wf"
static const char ALERT_COUNTS_SQL[] =
	"SELECT day, count(*), sum(w), sum(wf = 1), sum(wf = 2) FROM (SELECT CASE"
	" WHEN t.captured_at_ns > 0 THEN t.captured_at_ns / 86400000000000"
	" ELSE t.received_at / 86400 END AS day, " ALERT_WEIGHT_COLS " FROM traces t"
	" LEFT JOIN uploads u ON u.trace_id = t.trace_id WHERE t.received_at >= ?1 * 86400"
	" AND (?3 IS NULL OR t.app_id = ?3) AND (?4 IS NULL OR t.model = ?4)"
	" AND (?5 IS NULL OR t.anomaly_kind = ?5))"
	" WHERE day BETWEEN ?1 AND ?2 GROUP BY day ORDER BY day";

int rvs_sqlite_alert_counts(struct rvs_regress_db *d, const struct rvs_trend_filter *f,
			    int64_t from_day, int64_t to_day,
			    int (*cb)(void *arg, const struct rvs_alert_count_row *r), void *arg)
{
	sqlite3_stmt *st;
	int rc, s, stop = 0;

	if ((rc = prepare(d->db, ALERT_COUNTS_SQL, &st)))
		return rc;
	sqlite3_bind_int64(st, 1, from_day);
	sqlite3_bind_int64(st, 2, to_day);
	rvs_sqlite_bind_opt_text(st, 3, f->app);
	rvs_sqlite_bind_opt_text(st, 4, f->model);
	rvs_sqlite_bind_opt_i64(st, 5, f->has_kind, f->kind);
	while (!stop && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_alert_count_row r = {.day = sqlite3_column_int64(st, 0),
						.n = sqlite3_column_int64(st, 1),
						.weight = sqlite3_column_double(st, 2),
						.n_estimated = sqlite3_column_int64(st, 3),
						.n_unknown = sqlite3_column_int64(st, 4)};
		stop = cb(arg, &r);
	}
	sqlite3_finalize(st);
	if (stop)
		return stop;
	return s == SQLITE_DONE ? 0 : rvc_sqlite_errno(s);
}
