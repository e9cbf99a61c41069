/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_index.c — the decoded-trace index writer on PostgreSQL
 * (store_index.h; store.h's index_* operations; the tables of store_pg.c's
 * migration 5).
 *
 * Each decode lane has a libpq connection of its own, used by one thread
 * at a time.  Invariants: every value goes in as a bound text parameter;
 * index_write writes each trace whole or not at all (a savepoint each, one
 * transaction for the batch; the deferred signatures of the batch's
 * written traces in one last statement, whose failure fails the batch)
 * and only while the trace's decode_queue row carries the lease the
 * decoder was handed (locked FOR UPDATE, so decode_finish of another
 * holder waits for this commit); the traces row goes first (foreign keys)
 * and its signature last (migration 5's traces_sig trigger counts it then,
 * reading its chains).  A re-decoded trace's old rows are deleted first,
 * each table by the trace's key (trace_id and its received_at: the
 * partition of its week, migration 8), its aggregate rows (trace_agg,
 * trace_paths) by trace_id; its call-path aggregates (rvs_agg_build's
 * rows, store_pg_agg.c) are written before its signature, as on sqlite.
 *
 * Nodes' batches share signatures and the traces_sig trigger's counter
 * rows: a batch writes its traces' rows with their signature, anomaly
 * signature and issue NULL (nothing counted), then takes a
 * transaction-scoped advisory lock (two-key form, class 1381389127 =
 * 0x52565347 "RVSG", apart from every one-key advisory lock; key the
 * signature's hashtext) for every signature it will count, in ascending
 * key order in one statement, and sets the signatures in one UPDATE just
 * before COMMIT — so the hot counter rows are held only from there to the
 * commit, and two batches never hold signature rows the other waits for
 * (no deadlock between index batches).  A batch that re-decodes a trace
 * with a signature (its DELETE uncounts the old one) takes all its locks,
 * old signatures too, before its first trace and sets signatures inline.
 * A batch that still fails with a transient error (store.h's
 * rvs_store_transient: deadlock 40P01, serialization failure 40001, lock
 * not available 55P03, a restart or shutdown, a full disk, a lost
 * connection, which is reopened) is rolled back whole and written again
 * after a jittered backoff, up to MAX_ATTEMPTS times; then every trace gets
 * -EAGAIN (decode_finish leaves it queued, store_pg.c), never a quarantine.
 * Only a trace's own error (a missing upload, bad data) fails it alone.
 * Round trips: a trace's method rows and chain rows go in one INSERT … SELECT
 * FROM unnest(arrays) each, never a statement per row.
 */
#include "store/store_index.h"
#include "store/store_agg.h"
#include "store/pg/pg.h"
#include "base/log.h"
#include "base/util.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#define MAX_ATTEMPTS 8

struct rvs_index_lane {
	PGconn *pg;
	/* The last statement's SQLSTATE ("": succeeded, or none) and error
	 * message. */
	struct rvs_pg_error fail;
};

/* rvs_pg_exec on the lane's connection: a failure's SQLSTATE and message
 * in l->fail, whose state is "" after a success. */
static int q(struct rvs_index_lane *l, const char *sql, const struct rvs_pg_params *a,
	     PGresult **out)
{
	l->fail.state[0] = 0;
	return rvs_pg_exec(l->pg, sql, 0, a, out, &l->fail);
}

/* Whether rc, a statement's result, is a failure that writing the batch
 * again can clear: a transient one (store.h, rvs_pg_errno's table: a
 * deadlock, a serialization failure, a lock not available, a restart, a
 * full disk, a lost connection — reopened here). */
static int transient(struct rvs_index_lane *l, int rc)
{
	if (!rvs_store_transient(rc))
		return 0;
	if (PQstatus(l->pg) != CONNECTION_OK)
		PQreset(l->pg);
	return 1;
}

/* The lane's connection, reopened when it broke (a restart since its last
 * use): 0, or -EAGAIN with l->fail.msg set when the server does not take it
 * now. */
static int lane_up(struct rvs_index_lane *l)
{
	if (PQstatus(l->pg) == CONNECTION_OK)
		return 0;
	PQreset(l->pg);
	if (PQstatus(l->pg) == CONNECTION_OK)
		return 0;
	snprintf(l->fail.msg, sizeof l->fail.msg, "%s", PQerrorMessage(l->pg));
	l->fail.msg[strcspn(l->fail.msg, "\n")] = 0;
	l->fail.state[0] = 0;
	return -EAGAIN;
}

/* The PostgreSQL array literal of the texts field() gives for the traces
 * of v[0..n) not failed (rc 0), in order, each quoted (NULL for NULL);
 * malloc'd (free), NULL when out of memory. */
static char *array_lit(const struct rvs_index_trace *v, size_t n,
		       const char *(*field)(const struct rvs_index_trace *))
{
	size_t cap = 3, len = 0;
	char *b;

	for (size_t i = 0; i < n; i++)
		cap += field(&v[i]) ? 2 * strlen(field(&v[i])) + 3 : 5;
	if (!(b = malloc(cap)))
		return NULL;
	b[len++] = '{';
	for (size_t i = 0; i < n; i++) {
		const char *s = field(&v[i]);
		if (v[i].rc)
			continue;
		if (len > 1)
			b[len++] = ',';
		if (!s) {
			memcpy(b + len, "NULL", 4);
			len += 4;
			continue;
		}
		b[len++] = '"';
		for (; *s; s++) {
			if (*s == '"' || *s == '\\')
				b[len++] = '\\';
			b[len++] = *s;
		}
		b[len++] = '"';
	}
	b[len++] = '}';
	b[len] = 0;
	assert(len < cap);
	return b;
}

static const char *f_sig(const struct rvs_index_trace *v)
{
	return v->signature;
}

static const char *f_anomaly_sig(const struct rvs_index_trace *v)
{
	return v->anomaly_signature;
}

static const char *f_issue(const struct rvs_index_trace *v)
{
	return v->issue;
}

static const char *f_trace(const struct rvs_index_trace *v)
{
	return v->trace_id;
}

/* A PostgreSQL array literal built element by element (one column of the
 * rows an INSERT … SELECT FROM unnest(…) writes in one statement, rather
 * than a round trip per row).  oom is set when a growth failed; b is then
 * NULL-safe to free. */
struct arr {
	char *b;
	size_t len, cap;
	int oom;
};

static void arr_room(struct arr *a, size_t more)
{
	char *n;
	size_t cap = a->cap ? a->cap : 64;

	if (a->oom || a->len + more + 2 <= a->cap)
		return;
	while (cap < a->len + more + 2)
		cap *= 2;
	if (!(n = realloc(a->b, cap))) {
		a->oom = 1;
		return;
	}
	a->b = n;
	a->cap = cap;
}

/* Appends an element: s quoted (NULL: a NULL element). */
static void arr_text(struct arr *a, const char *s)
{
	size_t k = s ? 2 * strlen(s) + 3 : 5;
	char sep;

	arr_room(a, k);
	if (a->oom)
		return;
	sep = a->len ? ',' : '{';
	a->b[a->len++] = sep;
	if (!s) {
		memcpy(a->b + a->len, "NULL", 4);
		a->len += 4;
		return;
	}
	a->b[a->len++] = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			a->b[a->len++] = '\\';
		a->b[a->len++] = *s;
	}
	a->b[a->len++] = '"';
}

/* Appends an integer element, or NULL when !has. */
static void arr_i64(struct arr *a, int has, int64_t v)
{
	char num[24], sep;

	snprintf(num, sizeof num, "%" PRId64, v);
	arr_room(a, has ? strlen(num) + 1 : 5);
	if (a->oom)
		return;
	sep = a->len ? ',' : '{';
	a->b[a->len++] = sep;
	if (!has) {
		memcpy(a->b + a->len, "NULL", 4);
		a->len += 4;
		return;
	}
	memcpy(a->b + a->len, num, strlen(num));
	a->len += strlen(num);
}

/* The closed literal ("{}" when empty), or NULL when out of memory. */
static const char *arr_done(struct arr *a)
{
	arr_room(a, 2);
	if (a->oom)
		return NULL;
	if (!a->len)
		a->b[a->len++] = '{';
	a->b[a->len++] = '}';
	a->b[a->len] = 0;
	return a->b;
}

/* Binds the k closed literals of cols after a's parameters; 0, or -ENOMEM
 * with l->fail.msg set. */
static int bind_cols(struct rvs_index_lane *l, struct rvs_pg_params *a, struct arr *cols, int k)
{
	for (int i = 0; i < k; i++) {
		const char *lit = arr_done(&cols[i]);
		if (!lit) {
			snprintf(l->fail.msg, sizeof l->fail.msg, "out of memory");
			return -ENOMEM;
		}
		rvs_pg_text(a, lit);
	}
	return 0;
}

/* The trace's trace_methods rows in one statement (none: no statement). */
static int insert_methods(struct rvs_index_lane *l, const struct rvs_index_trace *v,
			  const char *received)
{
	struct arr col[5] = {{0}};
	struct rvs_pg_params a = {0};
	int rc;

	if (!v->nmethod_rows)
		return 0;
	for (size_t i = 0; i < v->nmethod_rows; i++) {
		const struct rvs_index_method *m = &v->methods[i];
		arr_text(&col[0], m->method);
		arr_i64(&col[1], 1, (int64_t)(m->calls & INT64_MAX));
		arr_i64(&col[2], 1, (int64_t)(m->self_ns & INT64_MAX));
		arr_i64(&col[3], 1, (int64_t)(m->incl_ns & INT64_MAX));
		arr_i64(&col[4], m->self_rank > 0, m->self_rank);
	}
	rvs_pg_text(&a, v->trace_id);
	rvs_pg_text(&a, received);
	if (!(rc = bind_cols(l, &a, col, 5)))
		rc = q(l,
		       v->methods_first_wins
			       ? "INSERT INTO trace_methods (trace_id, method, calls, self_ns,"
				 " incl_ns, self_rank, received_at) SELECT $1, m, c, s, i, r,"
				 " $2::bigint FROM unnest($3::text[], $4::bigint[], $5::bigint[],"
				 " $6::bigint[], $7::int[]) AS x(m, c, s, i, r)"
				 " ON CONFLICT DO NOTHING"
			       : "INSERT INTO trace_methods (trace_id, method, calls, self_ns,"
				 " incl_ns, self_rank, received_at) SELECT $1, m, c, s, i, r,"
				 " $2::bigint FROM unnest($3::text[], $4::bigint[], $5::bigint[],"
				 " $6::bigint[], $7::int[]) AS x(m, c, s, i, r)",
		       &a, NULL);
	for (int i = 0; i < 5; i++)
		free(col[i].b);
	return rc;
}

/* The trace's trace_chains rows in one statement (none: no statement). */
static int insert_chains(struct rvs_index_lane *l, const struct rvs_index_trace *v,
			 const char *received)
{
	struct arr col[7] = {{0}};
	struct rvs_pg_params a = {0};
	int rc;

	if (!v->nchains)
		return 0;
	for (size_t i = 0; i < v->nchains; i++) {
		const struct rvs_index_chain *c = &v->chains[i];
		arr_text(&col[0], c->kind);
		arr_i64(&col[1], 1, c->rank);
		arr_text(&col[2], c->signature);
		arr_text(&col[3], c->chain);
		arr_i64(&col[4], 1, c->depth);
		arr_i64(&col[5], c->self_ns >= 0, c->self_ns);
		arr_i64(&col[6], c->incl_ns >= 0, c->incl_ns);
	}
	rvs_pg_text(&a, v->trace_id);
	rvs_pg_text(&a, received);
	if (!(rc = bind_cols(l, &a, col, 7)))
		rc = q(l,
		       "INSERT INTO trace_chains (trace_id, kind, rank, signature, chain, depth,"
		       " self_ns, incl_ns, received_at) SELECT $1, k, r, s, c, d, sn, i,"
		       " $2::bigint FROM unnest($3::text[], $4::int[], $5::text[], $6::text[],"
		       " $7::bigint[], $8::bigint[], $9::bigint[]) AS x(k, r, s, c, d, sn, i)",
		       &a, NULL);
	for (int i = 0; i < 7; i++)
		free(col[i].b);
	return rc;
}

/* Whether a trace of the batch is indexed already with a signature (a
 * re-decode: its DELETE uncounts that signature).  0 / 1 into *yes, or
 * -ENOMEM / -EIO. */
static int has_old_signature(struct rvs_index_lane *l, const struct rvs_index_trace *v, size_t n,
			     int *yes)
{
	struct rvs_pg_params a = {0};
	char *ids = array_lit(v, n, f_trace);
	PGresult *r;
	int rc;

	if (!ids) {
		snprintf(l->fail.msg, sizeof l->fail.msg, "out of memory");
		return -ENOMEM;
	}
	rvs_pg_text(&a, ids);
	rc = q(l,
	       "SELECT 1 FROM traces WHERE trace_id = ANY($1::text[]) AND signature IS NOT NULL"
	       " LIMIT 1",
	       &a, &r);
	free(ids);
	if (!rc) {
		*yes = PQntuples(r) > 0;
		PQclear(r);
	}
	return rc;
}

/* Inside the batch's transaction, before any of its signatures is counted:
 * the advisory lock of every signature the batch's traces_sig triggers
 * will count or uncount (the new signatures of the traces not failed, and
 * the ones they have now), in ascending key order.  0, -ENOMEM, or -EIO with l->fail.msg and
 * l->fail.state set. */
static int lock_signatures(struct rvs_index_lane *l, const struct rvs_index_trace *v, size_t n)
{
	struct rvs_pg_params a = {0};
	char *sigs = array_lit(v, n, f_sig), *ids = array_lit(v, n, f_trace);
	int rc = -ENOMEM;

	if (sigs && ids) {
		rvs_pg_text(&a, sigs);
		rvs_pg_text(&a, ids);
		/* The subquery's DISTINCT and ORDER BY keep it from being
		 * flattened: the locks are taken in its order. */
		rc = q(l,
		       "SELECT pg_advisory_xact_lock(1381389127, k)"
		       " FROM (SELECT DISTINCT hashtext(s) AS k FROM"
		       " (SELECT unnest($1::text[]) UNION ALL"
		       " SELECT signature FROM traces WHERE trace_id = ANY($2::text[])) u(s)"
		       " WHERE s IS NOT NULL ORDER BY k) x",
		       &a, NULL);
	} else {
		snprintf(l->fail.msg, sizeof l->fail.msg, "out of memory");
		l->fail.state[0] = 0;
	}
	free(sigs);
	free(ids);
	return rc;
}

int rvs_pg_index_open(const char *dsn, struct rvs_index_lane **out)
{
	struct rvs_index_lane *l = calloc(1, sizeof *l);

	if (!l)
		return -ENOMEM;
	l->pg = PQconnectdb(dsn);
	if (PQstatus(l->pg) != CONNECTION_OK) {
		rvs_log("error", "postgresql connect", "err=\"%s\"", PQerrorMessage(l->pg));
		rvs_pg_index_close(l);
		return -EAGAIN;
	}
	*out = l;
	return 0;
}

void rvs_pg_index_close(struct rvs_index_lane *l)
{
	if (!l)
		return;
	PQfinish(l->pg);
	free(l);
}

int rvs_pg_index_upload_meta(struct rvs_index_lane *l, const char *trace_id,
			     struct rvs_index_meta *m)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc;

	memset(m, 0, sizeof *m);
	if ((rc = lane_up(l)))
		return rc;
	rvs_pg_text(&a, trace_id);
	if ((rc = q(l,
		    "SELECT coalesce(compression, 0), coalesce(payload_size, 0), summary"
		    " FROM uploads WHERE trace_id = $1",
		    &a, &r)))
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return -ENOENT;
	}
	m->compression = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
	m->payload_size = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
	if (!PQgetisnull(r, 0, 2)) {
		size_t len = 0;
		unsigned char *b =
			PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 2), &len);
		if (!b) {
			rc = -ENOMEM;
		} else if (len > 0) {
			if ((m->summary = malloc(len))) {
				memcpy(m->summary, b, len);
				m->summary_len = len;
			} else {
				rc = -ENOMEM;
			}
		}
		PQfreemem(b);
	}
	PQclear(r);
	return rc;
}

/* Every row of one trace, inside the caller's transaction — its
 * signature, anomaly signature and issue too unless defer_sig (then they
 * stay NULL for set_signatures): 0, -ESTALE when the lease is no longer
 * the trace's, else -EIO / -ENOENT. */
static int write_one(struct rvs_index_lane *l, const struct rvs_index_trace *v, int defer_sig)
{
	struct rvs_pg_params a = {0};
	char received[24];
	PGresult *r;
	int rc, n;

	rvs_pg_text(&a, v->trace_id);
	rvs_pg_i64(&a, (int64_t)(v->lease & INT64_MAX));
	if ((rc = q(l, "SELECT 1 FROM decode_queue WHERE trace_id = $1 AND lease = $2 FOR UPDATE",
		    &a, &r)))
		return rc;
	n = PQntuples(r);
	PQclear(r);
	if (n != 1) {
		snprintf(l->fail.msg, sizeof l->fail.msg,
			 "decode lease lost (taken by another decoder)");
		return -ESTALE;
	}
	a.n = 0;
	rvs_pg_text(&a, v->trace_id);
	if ((rc = q(l, "SELECT received_at FROM uploads WHERE trace_id = $1", &a, &r)))
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		snprintf(l->fail.msg, sizeof l->fail.msg, "no upload %s", v->trace_id);
		return -ENOENT;
	}
	snprintf(received, sizeof received, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	rvs_pg_text(&a, received);
	if ((rc = q(l, "DELETE FROM trace_chains WHERE trace_id = $1 AND received_at = $2", &a,
		    NULL)) ||
	    (rc = q(l, "DELETE FROM trace_methods WHERE trace_id = $1 AND received_at = $2", &a,
		    NULL)) ||
	    (rc = q(l, "DELETE FROM traces WHERE trace_id = $1 AND received_at = $2", &a, NULL)))
		return rc;
	/* The aggregate rows: no foreign key into the partitioned traces. */
	a.n = 1;
	if ((rc = q(l, "DELETE FROM trace_paths WHERE trace_id = $1", &a, NULL)) ||
	    (rc = q(l, "DELETE FROM trace_agg WHERE trace_id = $1", &a, NULL)))
		return rc;
	a.n = 0;
	rvs_pg_text(&a, v->trace_id);
	rvs_pg_text(&a, v->anomaly_name);
	rvs_pg_opt_i64(&a, v->duration_ns >= 0, v->duration_ns);
	rvs_pg_opt_i64(&a, v->nmethods >= 0, v->nmethods);
	rvs_pg_opt_i64(&a, v->dropped >= 0, v->dropped);
	rvs_pg_i64(&a, v->decoded_at);
	rvs_pg_text(&a, received);
	rvs_pg_text(&a, v->index_cut);
	if ((rc = q(l,
		    "INSERT INTO traces (trace_id, app_id, app_version, model, os_build,"
		    " anomaly_kind, severity, captured_at_ns, received_at, anomaly_name,"
		    " duration_ns, nmethods, dropped, decoded_at, device_id, index_cut)"
		    " SELECT trace_id, app_id, app_version, model, os_build, anomaly_kind,"
		    " severity, captured_realtime_ns, received_at, $2, $3, $4, $5, $6, device_id,"
		    " $8 FROM uploads WHERE trace_id = $1 AND received_at = $7",
		    &a, &r)))
		return rc;
	n = (int)strtol(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	if (n != 1) {
		snprintf(l->fail.msg, sizeof l->fail.msg, "no upload %s", v->trace_id);
		return -ENOENT;
	}
	if ((rc = insert_methods(l, v, received)) || (rc = insert_chains(l, v, received)))
		return rc;
	if (v->agg) {
		struct rvs_agg_rows rows;
		assert(v->agg_build && v->agg_release);
		if (v->agg_build(v->agg, v->agg_max_nodes, &rows)) {
			snprintf(l->fail.msg, sizeof l->fail.msg, "out of memory");
			return -ENOMEM;
		}
		rc = rvs_pg_agg_write(l->pg, v->trace_id, &rows, l->fail.msg, sizeof l->fail.msg);
		v->agg_release(&rows);
		if (rc)
			return rc;
	}
	a.n = 0;
	rvs_pg_text(&a, v->anomaly_signature);
	rvs_pg_text(&a, v->signature);
	rvs_pg_text(&a, v->issue);
	rvs_pg_text(&a, v->trace_id);
	rvs_pg_text(&a, received);
	if (!defer_sig &&
	    (rc = q(l,
		    "UPDATE traces SET anomaly_signature = $1, signature = $2, issue = $3"
		    " WHERE trace_id = $4 AND received_at = $5",
		    &a, NULL)))
		return rc;
	if (!v->unresolved_replace)
		return 0;
	a.n = 0;
	rvs_pg_text(&a, v->trace_id);
	rvs_pg_text(&a, received);
	if ((rc = q(l, "DELETE FROM trace_unresolved WHERE trace_id = $1 AND received_at = $2", &a,
		    NULL)))
		return rc;
	for (size_t i = 0; i < v->nunresolved && !rc; i++) {
		a.n = 0;
		rvs_pg_text(&a, v->unresolved[i]);
		rvs_pg_text(&a, v->trace_id);
		rvs_pg_text(&a, received);
		rc = q(l,
		       "INSERT INTO trace_unresolved (build_id, trace_id, received_at)"
		       " VALUES ($1, $2, $3)"
		       " ON CONFLICT DO NOTHING",
		       &a, NULL);
	}
	return rc;
}

static void fail(struct rvs_index_lane *l, struct rvs_index_trace *v, int rc)
{
	snprintf(v->reason, sizeof v->reason, "index: %s", l->fail.msg);
	rvs_log("error", "decode index", "trace=%s err=\"%s\"", v->trace_id, l->fail.msg);
	v->rc = rc ? rc : -EIO;
}

/* The deferred signatures of every trace of the batch written so far (rc
 * 0), in one statement after their signatures' locks: the traces_sig
 * trigger counts them then, so the batch holds the hot counter rows only
 * from here to its commit.  0, -ENOMEM or -EIO. */
static int set_signatures(struct rvs_index_lane *l, const struct rvs_index_trace *v, size_t n)
{
	struct rvs_pg_params a = {0};
	char *ids = array_lit(v, n, f_trace), *an = array_lit(v, n, f_anomaly_sig),
	     *sig = array_lit(v, n, f_sig), *iss = array_lit(v, n, f_issue);
	int rc = -ENOMEM;

	if (ids && an && sig && iss && !(rc = lock_signatures(l, v, n))) {
		rvs_pg_text(&a, ids);
		rvs_pg_text(&a, an);
		rvs_pg_text(&a, sig);
		rvs_pg_text(&a, iss);
		rc = q(l,
		       "UPDATE traces t SET anomaly_signature = x.a, signature = x.s, issue = x.i"
		       " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(id, a, "
		       "s, i)"
		       " WHERE t.trace_id = x.id",
		       &a, NULL);
	} else if (rc == -ENOMEM) {
		snprintf(l->fail.msg, sizeof l->fail.msg, "out of memory");
	}
	free(ids);
	free(an);
	free(sig);
	free(iss);
	return rc;
}

/* One attempt at the batch: 0 when it ended (committed, or failed for
 * good: every v[i].rc set), 1 when it met a transient error and was rolled
 * back whole (nothing written; try again).  A batch that re-decodes a
 * trace with a signature takes every signature lock before its first
 * trace (the DELETE uncounts the old one); any other defers the
 * signatures to set_signatures.  Either way a batch takes all its
 * signature locks in one statement, holding none before. */
static int attempt(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n)
{
	int rc, again, early = 0;

	for (size_t i = 0; i < n; i++) {
		v[i].rc = 0;
		v[i].reason[0] = 0;
	}
	if ((rc = lane_up(l)))
		return 1;
	rc = q(l, "BEGIN", NULL, NULL);
	if (!rc)
		rc = has_old_signature(l, v, n, &early);
	if (!rc && early)
		rc = lock_signatures(l, v, n);
	for (size_t i = 0; i < n && !rc; i++) {
		int r = q(l, "SAVEPOINT one", NULL, NULL);

		if (!r)
			r = write_one(l, &v[i], !early);
		if (r && transient(l, r)) {
			rc = r;
			break;
		}
		if (r) {
			fail(l, &v[i], r);
			rc = q(l, "ROLLBACK TO SAVEPOINT one", NULL, NULL);
		}
		if (!rc)
			rc = q(l, "RELEASE SAVEPOINT one", NULL, NULL);
	}
	if (!rc && !early)
		rc = set_signatures(l, v, n);
	if (!rc)
		rc = q(l, "COMMIT", NULL, NULL);
	if (!rc)
		return 0;
	again = transient(l, rc);
	if (PQstatus(l->pg) == CONNECTION_OK)
		PQclear(PQexec(l->pg, "ROLLBACK"));
	if (again)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (!v[i].rc)
			fail(l, &v[i], rc);
	return 0;
}

/* Sleeps a random time in [d/2, d], d = 10 ms << attempt, at most 640 ms. */
static void backoff(int attempt_no)
{
	long d = 10L << (attempt_no < 6 ? attempt_no : 6), ms;
	uint32_t r = 0;
	struct timespec ts;

	if (rvs_random(&r, sizeof r))
		r = (uint32_t)time(NULL);
	ms = d / 2 + (long)(r % (uint32_t)(d / 2 + 1));
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void rvs_pg_index_write(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n)
{
	int again = 1;

	for (int k = 0; k < MAX_ATTEMPTS && again; k++) {
		if (k) {
			rvs_log("info", "decode index retry", "traces=%zu attempt=%d err=\"%s\"", n,
				k + 1, l->fail.msg);
			backoff(k);
		}
		again = attempt(l, v, n);
	}
	if (again) {
		/* Still transient: left queued for a later decode, not lost. */
		rvs_log("error", "decode index requeued", "traces=%zu err=\"%s\"", n, l->fail.msg);
		for (size_t i = 0; i < n; i++) {
			snprintf(v[i].reason, sizeof v[i].reason, "index: retry later: %s",
				 l->fail.msg);
			v[i].rc = -EAGAIN;
		}
	}
	/* A broken connection is reopened by the next call (lane_up). */
}
