/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_regress.c — the PostgreSQL backend's regression and webhook
 * delivery operations (store.h's "regressions and webhook deliveries"
 * block; the tables of store_pg.c's migration 8 (regress)).
 *
 * Each rvs_regress_db is a libpq connection of its own, used by one thread
 * at a time (a pass or a request opens one: the statements run once each,
 * so they go as parameterized text, as on a decode lane).  Invariants:
 * every value is a bound text parameter; regress_sides reads in one
 * REPEATABLE READ READ ONLY transaction (one snapshot); a comparison, its
 * alert and its deliveries commit together, and the primary keys of
 * regress_runs and regress_alerts make two nodes comparing one pair at
 * once keep one run row and queue one alert (the second insert waits for
 * the first's commit, then finds it); a due delivery is claimed by one
 * node only (FOR UPDATE SKIP LOCKED, then a lease in next_try_ms), and its
 * outcome is recorded only while it is pending with the attempts it was
 * claimed with.
 */
#include "store/store_regress_be.h"
#include "store/store_agg.h"
#include "store/pg/pg.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

struct rvs_regress_db {
	PGconn *pg;
};

int rvs_pg_regress_open(const char *dsn, struct rvs_regress_db **out)
{
	struct rvs_regress_db *d = calloc(1, sizeof *d);

	if (!d)
		return -ENOMEM;
	d->pg = PQconnectdb(dsn);
	if (PQstatus(d->pg) != CONNECTION_OK) {
		rvs_log("error", "postgresql connect", "err=\"%s\"", PQerrorMessage(d->pg));
		rvs_pg_regress_close(d);
		return -EIO;
	}
	PQclear(PQexec(d->pg, "SET client_min_messages = warning"));
	*out = d;
	return 0;
}

void rvs_pg_regress_close(struct rvs_regress_db *d)
{
	if (!d)
		return;
	PQfinish(d->pg);
	free(d);
}

/* ---- regress_sides --------------------------------------------------------- */

/* The sides' WHERE clauses: $1 app, $2 and $3 as sides_args binds them.
 * Trace ids sort bytewise (regress.c looks them up with strcmp). */
#define W_VERSIONS                                           \
	" WHERE t.app_id = $1 AND t.app_version IN ($2, $3)" \
	" AND t.duration_ns IS NOT NULL"
#define W_MODEL                                                                   \
	" WHERE t.app_id = $1 AND ($3::text IS NULL OR t.app_version = $3::text)" \
	" AND t.duration_ns IS NOT NULL"
#define W_WEEK                                                              \
	" WHERE t.app_id = $1 AND t.received_at >= $2::bigint - 2 * 604800" \
	" AND t.received_at < $2::bigint AND t.duration_ns IS NOT NULL"
#define TRACES_Q(side, w) \
	"SELECT t.trace_id, " side " FROM traces t" w " ORDER BY t.trace_id COLLATE \"C\""
#define METHODS_Q(w)                                                               \
	"SELECT t.trace_id, 0, m.method, m.self_ns, m.incl_ns, NULL FROM traces t" \
	" JOIN trace_methods m ON m.trace_id = t.trace_id" w
#define CHAINS_Q(w)                                                                      \
	"SELECT t.trace_id, 0, c.signature, c.self_ns, c.incl_ns, c.chain FROM traces t" \
	" JOIN trace_chains c ON c.trace_id = t.trace_id AND c.kind = 'top'" w
static const char *const SIDES_SQL[3][3] = {
	[RVS_CMP_TRACE] =
		{
			TRACES_Q("CASE WHEN t.app_version = $3 THEN 1 ELSE 0 END", W_VERSIONS),
			TRACES_Q("CASE WHEN t.model = $2 THEN 1 ELSE 0 END", W_MODEL),
			TRACES_Q("CASE WHEN t.received_at >= $2::bigint - 604800 THEN 1 ELSE 0 END",
				 W_WEEK),
		},
	[RVS_CMP_METHOD] = {METHODS_Q(W_VERSIONS), METHODS_Q(W_MODEL), METHODS_Q(W_WEEK)},
	[RVS_CMP_CHAIN] = {CHAINS_Q(W_VERSIONS), CHAINS_Q(W_MODEL), CHAINS_Q(W_WEEK)},
};

static void sides_args(struct rvs_pg_params *a, const struct rvs_cmp_sides *s)
{
	rvs_pg_text(a, s->app);
	switch (s->mode) {
	case RVS_CMP_VERSIONS:
		rvs_pg_text(a, s->a);
		rvs_pg_text(a, s->b);
		break;
	case RVS_CMP_MODEL:
		rvs_pg_text(a, s->model);
		rvs_pg_text(a, s->version);
		break;
	case RVS_CMP_WEEK:
		rvs_pg_i64(a, s->now);
		break;
	}
}

int rvs_pg_regress_sides(struct rvs_regress_db *d, const struct rvs_cmp_sides *s,
			 int (*cb)(void *arg, const struct rvs_cmp_row *r), void *arg)
{
	struct rvs_pg_params a = {.typed = 1};
	int rc, stop = 0;

	assert(s->app && (unsigned)s->mode <= RVS_CMP_WEEK);
	sides_args(&a, s);
	if ((rc = rvs_pg_exec(d->pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL,
			      NULL, NULL)))
		return rc;
	for (int part = RVS_CMP_TRACE; !rc && !stop && part <= RVS_CMP_CHAIN; part++) {
		PGresult *r;
		if ((rc = rvs_pg_exec(d->pg, SIDES_SQL[part][s->mode], 0, &a, &r, NULL)))
			break;
		for (int i = 0; !stop && i < PQntuples(r); i++) {
			struct rvs_cmp_row row = {.part = part,
						  .trace_id = rvs_pg_val(r, i, 0),
						  .side = rvs_pg_val_i64(r, i, 1) != 0};
			if (part != RVS_CMP_TRACE) { /* the traces' read has 2 columns */
				row.key = rvs_pg_val(r, i, 2);
				row.chain = rvs_pg_val(r, i, 5);
				row.self_ns = rvs_pg_val_i64(r, i, 3);
				row.incl_ns = rvs_pg_val_i64(r, i, 4);
			}
			if (!row.trace_id || (part != RVS_CMP_TRACE && !row.key))
				continue;
			stop = cb(arg, &row);
		}
		PQclear(r);
	}
	rvs_pg_exec(d->pg, rc ? "ROLLBACK" : "COMMIT", 0, NULL, NULL, NULL);
	return stop ? stop : rc;
}

int rvs_pg_regress_versions(struct rvs_regress_db *d,
			    int (*cb)(void *arg, const char *app, const char *version, int64_t n),
			    void *arg)
{
	PGresult *r;
	int rc, stop = 0;

	if ((rc = rvs_pg_exec(d->pg,
			      "SELECT app_id, app_version, count(*) FROM traces"
			      " WHERE duration_ns IS NOT NULL AND app_id IS NOT NULL"
			      " AND app_version IS NOT NULL GROUP BY app_id, app_version"
			      " ORDER BY app_id COLLATE \"C\"",
			      0, NULL, &r, NULL)))
		return rc;
	for (int i = 0; !stop && i < PQntuples(r); i++)
		stop = cb(arg, rvs_pg_val(r, i, 0), rvs_pg_val(r, i, 1), rvs_pg_val_i64(r, i, 2));
	PQclear(r);
	return stop;
}

int rvs_pg_regress_run_get(struct rvs_regress_db *d, const char *app, const char *va,
			   const char *vb, int64_t *traces_a, int64_t *traces_b)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc;

	rvs_pg_text(&a, app);
	rvs_pg_text(&a, va);
	rvs_pg_text(&a, vb);
	if ((rc = rvs_pg_exec(d->pg,
			      "SELECT traces_a, traces_b FROM regress_runs"
			      " WHERE app_id = $1 AND version_a = $2 AND version_b = $3",
			      0, &a, &r, NULL)))
		return rc;
	if (PQntuples(r) == 1) {
		*traces_a = rvs_pg_val_i64(r, 0, 0);
		*traces_b = rvs_pg_val_i64(r, 0, 1);
	} else {
		rc = -ENOENT;
	}
	PQclear(r);
	return rc;
}

static int enqueue(struct rvs_regress_db *d, const struct rvs_webhook_new *w)
{
	struct rvs_pg_params a = {0};

	rvs_pg_text(&a, w->url);
	rvs_pg_text(&a, w->event);
	rvs_pg_text(&a, w->body);
	rvs_pg_i64(&a, w->now_ms);
	return rvs_pg_exec(d->pg,
			   "INSERT INTO webhook_deliveries (url, event, body, state, attempts,"
			   " next_try_ms, created_at) VALUES ($1, $2, $3, 'pending', 0, $4::bigint,"
			   " $4::bigint / 1000)",
			   0, &a, NULL, NULL);
}

int rvs_pg_regress_run_put(struct rvs_regress_db *d, const struct rvs_regress_run_row *run,
			   const char *alert_method, const struct rvs_webhook_new *w, size_t n,
			   int *alerted)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int alert = 0, rc;

	assert(run->app && run->version_a && run->version_b && run->result);
	if ((rc = rvs_pg_exec(d->pg, "BEGIN", 0, NULL, NULL, NULL)))
		return rc;
	if (alert_method) {
		rvs_pg_text(&a, run->app);
		rvs_pg_text(&a, run->version_a);
		rvs_pg_text(&a, run->version_b);
		rvs_pg_text(&a, alert_method);
		rvs_pg_i64(&a, run->computed_at);
		if ((rc = rvs_pg_exec(
			     d->pg,
			     "INSERT INTO regress_alerts (app_id, version_a, version_b, method,"
			     " created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"
			     " RETURNING 1",
			     0, &a, &r, NULL)))
			goto fail;
		alert = PQntuples(r) == 1;
		PQclear(r);
	}
	for (size_t i = 0; alert && i < n; i++)
		if ((rc = enqueue(d, &w[i])))
			goto fail;
	memset(&a, 0, sizeof a);
	rvs_pg_text(&a, run->app);
	rvs_pg_text(&a, run->version_a);
	rvs_pg_text(&a, run->version_b);
	rvs_pg_i64(&a, run->traces_a);
	rvs_pg_i64(&a, run->traces_b);
	rvs_pg_i64(&a, run->computed_at);
	rvs_pg_text(&a, run->top_method);
	if (run->top_method && run->has_ratio)
		rvs_pg_dbl(&a, run->top_ratio);
	else
		rvs_pg_text(&a, NULL);
	if (run->top_method) {
		rvs_pg_dbl(&a, run->top_delta);
		rvs_pg_dbl(&a, run->top_q);
	} else {
		rvs_pg_text(&a, NULL);
		rvs_pg_text(&a, NULL);
	}
	rvs_pg_i64(&a, run->alerted != 0);
	rvs_pg_text(&a, run->result);
	if ((rc = rvs_pg_exec(
		     d->pg,
		     "INSERT INTO regress_runs (app_id, version_a, version_b, traces_a, traces_b,"
		     " computed_at, top_method, top_ratio, top_delta, top_q, alerted, result)"
		     " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
		     " ON CONFLICT (app_id, version_a, version_b) DO UPDATE SET"
		     " traces_a = excluded.traces_a, traces_b = excluded.traces_b,"
		     " computed_at = excluded.computed_at, top_method = excluded.top_method,"
		     " top_ratio = excluded.top_ratio, top_delta = excluded.top_delta,"
		     " top_q = excluded.top_q, alerted = excluded.alerted,"
		     " result = excluded.result",
		     0, &a, NULL, NULL)) ||
	    (rc = rvs_pg_exec(d->pg, "COMMIT", 0, NULL, NULL, NULL)))
		goto fail;
	if (alerted)
		*alerted = alert;
	return 0;
fail:
	rvs_pg_exec(d->pg, "ROLLBACK", 0, NULL, NULL, NULL);
	return rc;
}

int rvs_pg_regress_runs_list(struct rvs_regress_db *d, size_t max,
			     int (*cb)(void *arg, const struct rvs_regress_run_row *r), void *arg)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_i64(&a, (int64_t)max);
	if ((rc = rvs_pg_exec(
		     d->pg,
		     "SELECT app_id, version_a, version_b, traces_a, traces_b, computed_at,"
		     " top_method, top_ratio, top_delta, top_q, alerted FROM regress_runs"
		     " ORDER BY computed_at DESC, app_id COLLATE \"C\" LIMIT $1",
		     0, &a, &r, NULL)))
		return rc;
	for (int i = 0; !stop && i < PQntuples(r); i++) {
		struct rvs_regress_run_row row = {
			.app = rvs_pg_val(r, i, 0),
			.version_a = rvs_pg_val(r, i, 1),
			.version_b = rvs_pg_val(r, i, 2),
			.traces_a = rvs_pg_val_i64(r, i, 3),
			.traces_b = rvs_pg_val_i64(r, i, 4),
			.computed_at = rvs_pg_val_i64(r, i, 5),
			.top_method = rvs_pg_val(r, i, 6),
			.top_ratio = rvs_pg_val_dbl(r, i, 7),
			.has_ratio = !PQgetisnull(r, i, 7),
			.top_delta = rvs_pg_val_dbl(r, i, 8),
			.top_q = rvs_pg_val_dbl(r, i, 9),
			.alerted = (int)rvs_pg_val_i64(r, i, 10),
		};
		stop = cb(arg, &row);
	}
	PQclear(r);
	return stop;
}

/* ---- webhook deliveries ------------------------------------------------------ */

int rvs_pg_webhook_enqueue(struct rvs_regress_db *d, const struct rvs_webhook_new *w)
{
	return enqueue(d, w);
}

/* A delivery's columns as row_of reads them, of the table named p. */
#define ROW_COLS(p)                                                                          \
	p "id, " p "url, " p "event, " p "body, " p "state, " p "attempts, coalesce(" p      \
	  "last_status, 0), " p "last_error, " p "next_try_ms, " p "created_at, coalesce(" p \
	  "delivered_at, -1)"

static void row_of(const PGresult *r, int i, struct rvs_webhook_row *w)
{
	*w = (struct rvs_webhook_row){
		.id = rvs_pg_val_i64(r, i, 0),
		.url = rvs_pg_val(r, i, 1),
		.event = rvs_pg_val(r, i, 2),
		.body = rvs_pg_val(r, i, 3),
		.state = rvs_pg_val(r, i, 4),
		.attempts = (uint32_t)rvs_pg_val_i64(r, i, 5),
		.last_status = rvs_pg_val_i64(r, i, 6),
		.last_error = rvs_pg_val(r, i, 7),
		.next_try_ms = rvs_pg_val_i64(r, i, 8),
		.created_at = rvs_pg_val_i64(r, i, 9),
		.delivered_at = rvs_pg_val_i64(r, i, 10),
	};
}

int rvs_pg_webhook_claim(struct rvs_regress_db *d, int64_t now_ms, int64_t lease_ms, size_t max,
			 int (*cb)(void *arg, const struct rvs_webhook_row *r), void *arg)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc, n, stop = 0;

	assert(lease_ms > 0);
	rvs_pg_i64(&a, now_ms);
	rvs_pg_i64(&a, (int64_t)max);
	rvs_pg_i64(&a, now_ms + lease_ms);
	/* One statement, so one transaction: the rows are locked as taken,
	 * skipping those another node is claiming, and leased. */
	if ((rc = rvs_pg_exec(
		     d->pg,
		     "WITH due AS (SELECT id FROM webhook_deliveries WHERE state = 'pending'"
		     " AND next_try_ms <= $1 ORDER BY next_try_ms, id LIMIT $2"
		     " FOR UPDATE SKIP LOCKED)"
		     " UPDATE webhook_deliveries w SET next_try_ms = $3 FROM due"
		     " WHERE w.id = due.id RETURNING " ROW_COLS("w."),
		     0, &a, &r, NULL)))
		return rc;
	n = PQntuples(r);
	for (int i = 0; !stop && i < n; i++) {
		struct rvs_webhook_row w;
		row_of(r, i, &w);
		stop = cb(arg, &w);
	}
	PQclear(r);
	return stop ? stop : n;
}

int rvs_pg_webhook_record(struct rvs_regress_db *d, const struct rvs_webhook_row *w,
			  uint32_t prev_attempts)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc;

	rvs_pg_i64(&a, w->id);
	rvs_pg_i64(&a, w->attempts);
	if (w->last_status)
		rvs_pg_i64(&a, w->last_status);
	else
		rvs_pg_text(&a, NULL);
	rvs_pg_text(&a, w->last_error);
	rvs_pg_text(&a, w->state);
	rvs_pg_i64(&a, w->next_try_ms);
	if (w->delivered_at >= 0)
		rvs_pg_i64(&a, w->delivered_at);
	else
		rvs_pg_text(&a, NULL);
	rvs_pg_i64(&a, prev_attempts);
	if ((rc = rvs_pg_exec(d->pg,
			      "UPDATE webhook_deliveries SET attempts = $2, last_status = $3,"
			      " last_error = $4, state = $5, next_try_ms = $6, delivered_at = $7"
			      " WHERE id = $1 AND state = 'pending' AND attempts = $8",
			      0, &a, &r, NULL)))
		return rc;
	rc = strcmp(PQcmdTuples(r), "1") == 0 ? 0 : -ENOENT;
	PQclear(r);
	return rc;
}

int rvs_pg_webhook_list(struct rvs_regress_db *d, size_t max,
			int (*cb)(void *arg, const struct rvs_webhook_row *r), void *arg)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_i64(&a, (int64_t)max);
	if ((rc = rvs_pg_exec(
		     d->pg,
		     "SELECT " ROW_COLS("") " FROM webhook_deliveries ORDER BY id DESC LIMIT $1", 0,
		     &a, &r, NULL)))
		return rc;
	for (int i = 0; !stop && i < PQntuples(r); i++) {
		struct rvs_webhook_row w;
		row_of(r, i, &w);
		stop = cb(arg, &w);
	}
	PQclear(r);
	return stop;
}

int rvs_pg_webhook_pending(struct rvs_regress_db *d, uint64_t *out)
{
	PGresult *r;
	int rc;

	if ((rc = rvs_pg_exec(d->pg,
			      "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'", 0,
			      NULL, &r, NULL)))
		return rc;
	*out = (uint64_t)rvs_pg_val_i64(r, 0, 0);
	PQclear(r);
	return 0;
}

/* ---- alert rules (alert_rules, PostgreSQL migration 11) -------------------- */

int rvs_pg_alert_rule_add(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r, size_t max,
			  int64_t *id)
{
	struct rvs_pg_params a = {0};
	PGresult *res;
	int rc;

	if ((rc = rvs_pg_exec(d->pg, "BEGIN", 0, NULL, NULL, NULL)))
		return rc;
	/* Adds serialize on the table's lock, so the cap holds across nodes. */
	if ((rc = rvs_pg_exec(d->pg, "LOCK TABLE alert_rules IN SHARE ROW EXCLUSIVE MODE", 0, NULL,
			      NULL, NULL)))
		goto fail;
	rvs_pg_text(&a, r->name);
	rvs_pg_text(&a, r->spec);
	rvs_pg_i64(&a, r->created_at);
	rvs_pg_text(&a, r->created_by);
	rvs_pg_i64(&a, (int64_t)max);
	if ((rc = rvs_pg_exec(
		     d->pg,
		     "INSERT INTO alert_rules (name, spec, created_at, created_by, state)"
		     " SELECT $1, $2, $3, $4, 'ok' WHERE (SELECT count(*) FROM alert_rules)"
		     " < $5 RETURNING id",
		     0, &a, &res, NULL)))
		goto fail;
	if (PQntuples(res) != 1) {
		PQclear(res);
		rc = -ENOSPC;
		goto fail;
	}
	*id = rvs_pg_val_i64(res, 0, 0);
	PQclear(res);
	if ((rc = rvs_pg_exec(d->pg, "COMMIT", 0, NULL, NULL, NULL)))
		goto fail;
	return 0;
fail:
	rvs_pg_exec(d->pg, "ROLLBACK", 0, NULL, NULL, NULL);
	return rc;
}

int rvs_pg_alert_rule_delete(struct rvs_regress_db *d, int64_t id)
{
	struct rvs_pg_params a = {0};
	PGresult *res;
	int rc;

	rvs_pg_i64(&a, id);
	if ((rc = rvs_pg_exec(d->pg, "DELETE FROM alert_rules WHERE id = $1 RETURNING id", 0, &a,
			      &res, NULL)))
		return rc;
	rc = PQntuples(res) ? 0 : -ENOENT;
	PQclear(res);
	return rc;
}

int rvs_pg_alert_rules_list(struct rvs_regress_db *d,
			    int (*cb)(void *arg, const struct rvs_alert_rule_row *r), void *arg)
{
	PGresult *res;
	int rc, stop = 0;

	if ((rc = rvs_pg_exec(d->pg,
			      "SELECT r.id, r.name, r.spec, r.created_by, r.created_at, r.state,"
			      " coalesce(r.since, -1), r.value, coalesce(r.evaluated_at, -1),"
			      " coalesce(w.id, -1), w.state, coalesce(w.last_status, 0),"
			      " coalesce(w.delivered_at, -1) FROM alert_rules r"
			      " LEFT JOIN webhook_deliveries w ON w.id = r.last_delivery_id"
			      " ORDER BY r.id",
			      0, NULL, &res, NULL)))
		return rc;
	for (int i = 0; !stop && i < PQntuples(res); i++) {
		struct rvs_alert_rule_row r = {
			.id = rvs_pg_val_i64(res, i, 0),
			.name = rvs_pg_val(res, i, 1),
			.spec = rvs_pg_val(res, i, 2),
			.created_by = rvs_pg_val(res, i, 3),
			.created_at = rvs_pg_val_i64(res, i, 4),
			.state = rvs_pg_val(res, i, 5),
			.since = rvs_pg_val_i64(res, i, 6),
			.has_value = !PQgetisnull(res, i, 7),
			.value = rvs_pg_val_dbl(res, i, 7),
			.evaluated_at = rvs_pg_val_i64(res, i, 8),
			.delivery_id = rvs_pg_val_i64(res, i, 9),
			.delivery_state = rvs_pg_val(res, i, 10),
			.delivery_status = rvs_pg_val_i64(res, i, 11),
			.delivered_at = rvs_pg_val_i64(res, i, 12),
		};
		stop = cb(arg, &r);
	}
	PQclear(res);
	return stop;
}

int rvs_pg_alert_rule_update(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r,
			     const char *from_state, const struct rvs_webhook_new *w, size_t n,
			     int *moved)
{
	struct rvs_pg_params a = {0};
	PGresult *res;
	int rc;

	*moved = 0;
	if ((rc = rvs_pg_exec(d->pg, "BEGIN", 0, NULL, NULL, NULL)))
		return rc;
	/* The row lock: a concurrent pass waits, then reads the moved state. */
	rvs_pg_i64(&a, r->id);
	if ((rc = rvs_pg_exec(d->pg, "SELECT state FROM alert_rules WHERE id = $1 FOR UPDATE", 0,
			      &a, &res, NULL)))
		goto fail;
	if (PQntuples(res) != 1) {
		PQclear(res);
		rc = -ENOENT;
		goto fail;
	}
	*moved = strcmp(r->state, from_state) != 0 && !strcmp(rvs_pg_val(res, 0, 0), from_state);
	PQclear(res);
	memset(&a, 0, sizeof a);
	rvs_pg_i64(&a, r->id);
	if (r->has_value)
		rvs_pg_dbl(&a, r->value);
	else
		rvs_pg_text(&a, NULL);
	rvs_pg_i64(&a, r->evaluated_at);
	rvs_pg_text(&a, r->state);
	rvs_pg_i64(&a, *moved);
	rvs_pg_i64(&a, r->since);
	if ((rc = rvs_pg_exec(d->pg,
			      "UPDATE alert_rules SET value = $2::double precision,"
			      " evaluated_at = $3, state = CASE WHEN $5::bigint = 1 THEN $4 ELSE"
			      " state END, since = CASE WHEN $5::bigint = 1 THEN $6::bigint ELSE"
			      " coalesce(since, $6::bigint) END WHERE id = $1",
			      0, &a, NULL, NULL)))
		goto fail;
	for (size_t i = 0; *moved && i < n; i++)
		if ((rc = enqueue(d, &w[i])))
			goto fail;
	if (*moved && n) {
		memset(&a, 0, sizeof a);
		rvs_pg_i64(&a, r->id);
		if ((rc = rvs_pg_exec(d->pg,
				      "UPDATE alert_rules SET last_delivery_id = currval("
				      "pg_get_serial_sequence('webhook_deliveries', 'id'))"
				      " WHERE id = $1",
				      0, &a, NULL, NULL)))
			goto fail;
	}
	if ((rc = rvs_pg_exec(d->pg, "COMMIT", 0, NULL, NULL, NULL)))
		goto fail;
	return 0;
fail:
	*moved = 0;
	rvs_pg_exec(d->pg, "ROLLBACK", 0, NULL, NULL, NULL);
	return rc;
}

/* A day's captures, their summed selection weights and how many of
 * those are estimates (wf 1) or unknown (2), from each trace's upload u;
 * $1 from_day, $2 to_day, $3 app, $4 model, $5 kind. */
#define ALERT_WEIGHT_COLS RVS_SQL_WEIGHT("u") " AS w, " RVS_SQL_WFLAG("u") " AS wf"
static const char ALERT_COUNTS_SQL[] =
	"SELECT day, count(*), sum(w), sum(CASE WHEN wf = 1 THEN 1 ELSE 0 END),"
	" sum(CASE WHEN wf = 2 THEN 1 ELSE 0 END) FROM (SELECT CASE"
	" WHEN t.captured_at_ns > 0 THEN t.captured_at_ns / 86400000000000"
	" ELSE t.received_at / 86400 END AS day, " ALERT_WEIGHT_COLS " FROM traces t"
	" LEFT JOIN uploads u ON u.trace_id = t.trace_id"
	" WHERE t.received_at >= $1::bigint * 86400 AND ($3::text IS NULL OR t.app_id = $3)"
	" AND ($4::text IS NULL OR t.model = $4)"
	" AND ($5::bigint IS NULL OR t.anomaly_kind = $5)) x"
	" WHERE day BETWEEN $1::bigint AND $2::bigint GROUP BY day ORDER BY day";

int rvs_pg_alert_counts(struct rvs_regress_db *d, const struct rvs_trend_filter *f,
			int64_t from_day, int64_t to_day,
			int (*cb)(void *arg, const struct rvs_alert_count_row *r), void *arg)
{
	struct rvs_pg_params a = {0};
	PGresult *res;
	int rc, stop = 0;

	rvs_pg_i64(&a, from_day);
	rvs_pg_i64(&a, to_day);
	rvs_pg_text(&a, f->app);
	rvs_pg_text(&a, f->model);
	rvs_pg_opt_i64(&a, f->has_kind, f->kind);
	if ((rc = rvs_pg_exec(d->pg, ALERT_COUNTS_SQL, 0, &a, &res, NULL)))
		return rc;
	for (int i = 0; !stop && i < PQntuples(res); i++) {
		struct rvs_alert_count_row r = {.day = rvs_pg_val_i64(res, i, 0),
						.n = rvs_pg_val_i64(res, i, 1),
						.weight = rvs_pg_val_dbl(res, i, 2),
						.n_estimated = rvs_pg_val_i64(res, i, 3),
						.n_unknown = rvs_pg_val_i64(res, i, 4)};
		stop = cb(arg, &r);
	}
	PQclear(res);
	return stop;
}
