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
 * decoder was handed (locked FOR UPDATE at the batch's start, so
 * decode_finish of another holder waits for this commit); the traces row
 * goes first and its signature last (migration 5's traces_sig trigger
 * counts it then, reading its chains).  A re-decoded trace's old rows are
 * deleted first, each table by the trace's key (trace_id and its
 * received_at: the partition of its week, migration 8), its aggregate
 * rows (trace_agg, trace_paths) by trace_id — and only when the batch's
 * probe, read under the lease's lock, found such rows: a first decode has
 * none, and no other writer can add them while the lock is held.  Its
 * call-path aggregates (rvs_agg_build's rows, store_pg_agg.c) are written
 * before its signature, as on sqlite; the batch's last statements add the
 * path rows of every trace it wrote to the per-node rollup (migration 14,
 * RVS_PG_ROLLUP_FOLD) and set the signatures.
 *
 * Round trips: statements go in libpq pipelines (pg.h), several per round
 * trip: the probe (BEGIN, the leases locked, each trace's upload and old
 * rows), then per trace one for its rows up to the aggregates (its method
 * rows and chain rows one INSERT … SELECT FROM unnest(arrays) each, never
 * a statement per row), the aggregates' own (store_pg_agg.c), and one for
 * the rest, the last trace's with the batch's end and COMMIT.  A trace's
 * own failure inside a pipeline leaves the transaction failed at its
 * savepoint (PostgreSQL skips to the pipeline's sync): it is rolled back
 * to there and the batch goes on.
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
 * Only a trace's own error (a missing upload, a lost lease, bad data)
 * fails it alone.
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
	if (PQstatus(l->pg) != CONNECTION_OK || PQpipelineStatus(l->pg) != PQ_PIPELINE_OFF)
		PQreset(l->pg);
	return 1;
}

/* The lane's connection, reopened when it broke (a restart since its last
 * use, a pipeline broken off: rvs_pg_usable): 0, or -EAGAIN with
 * l->fail.msg set when the server does not take it now.  Called between
 * batches, outside any transaction. */
static int lane_up(struct rvs_index_lane *l)
{
	if (rvs_pg_usable(l->pg))
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

/* Binds trace_id, received and the k closed literals of cols to st (NULL:
 * pp->oom is set), which takes the literals' buffers; out of memory sets
 * pp->oom. */
static void bind_cols(struct rvs_pg_pipe *pp, struct rvs_pg_step *st, const char *trace_id,
		      const char *received, struct arr *cols, int k)
{
	if (st) {
		rvs_pg_text(&st->p, trace_id);
		rvs_pg_text(&st->p, received);
	}
	for (int i = 0; i < k; i++) {
		const char *lit = arr_done(&cols[i]);
		if (!st || !lit) {
			pp->oom = 1;
			free(cols[i].b);
			continue;
		}
		rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, cols[i].b));
	}
}

/* Adds the trace's trace_methods rows to pp as one statement tagged tag
 * (none: no statement). */
static void add_methods(struct rvs_pg_pipe *pp, int tag, const struct rvs_index_trace *v,
			const char *received)
{
	struct arr col[7] = {{0}};
	struct rvs_pg_step *st;

	if (!v->nmethod_rows)
		return;
	for (size_t i = 0; i < v->nmethod_rows; i++) {
		const struct rvs_index_method *m = &v->methods[i];
		arr_text(&col[0], m->method);
		arr_i64(&col[1], 1, (int64_t)(m->calls & INT64_MAX));
		arr_i64(&col[2], 1, (int64_t)(m->self_ns & INT64_MAX));
		arr_i64(&col[3], 1, (int64_t)(m->incl_ns & INT64_MAX));
		arr_i64(&col[4], m->self_rank > 0, m->self_rank);
		/* NULL without CPU data, never 0. */
		arr_i64(&col[5], m->has_cpu, (int64_t)(m->cpu_self_ns & INT64_MAX));
		arr_i64(&col[6], m->has_cpu, (int64_t)(m->cpu_incl_ns & INT64_MAX));
	}
	st = rvs_pg_pipe_add(
		pp,
		v->methods_first_wins
			? "INSERT INTO trace_methods (trace_id, method, calls, self_ns,"
			  " incl_ns, self_rank, cpu_self_ns, cpu_incl_ns, received_at)"
			  " SELECT $1, m, c, s, i, r, cs, ci, $2::bigint FROM unnest($3::text[],"
			  " $4::bigint[], $5::bigint[], $6::bigint[], $7::int[], $8::bigint[],"
			  " $9::bigint[]) AS x(m, c, s, i, r, cs, ci)"
			  " ON CONFLICT DO NOTHING"
			: "INSERT INTO trace_methods (trace_id, method, calls, self_ns,"
			  " incl_ns, self_rank, cpu_self_ns, cpu_incl_ns, received_at)"
			  " SELECT $1, m, c, s, i, r, cs, ci, $2::bigint FROM unnest($3::text[],"
			  " $4::bigint[], $5::bigint[], $6::bigint[], $7::int[], $8::bigint[],"
			  " $9::bigint[]) AS x(m, c, s, i, r, cs, ci)",
		0, tag, 0);
	bind_cols(pp, st, v->trace_id, received, col, 7);
}

/* Adds the trace's trace_chains rows to pp as one statement tagged tag
 * (none: no statement). */
static void add_chains(struct rvs_pg_pipe *pp, int tag, const struct rvs_index_trace *v,
		       const char *received)
{
	struct arr col[7] = {{0}};
	struct rvs_pg_step *st;

	if (!v->nchains)
		return;
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
	st = rvs_pg_pipe_add(
		pp,
		"INSERT INTO trace_chains (trace_id, kind, rank, signature, chain, depth,"
		" self_ns, incl_ns, received_at) SELECT $1, k, r, s, c, d, sn, i,"
		" $2::bigint FROM unnest($3::text[], $4::int[], $5::text[], $6::text[],"
		" $7::bigint[], $8::bigint[], $9::bigint[]) AS x(k, r, s, c, d, sn, i)",
		0, tag, 0);
	bind_cols(pp, st, v->trace_id, received, col, 7);
}

/* Adds to pp, inside the batch's transaction and before any of its
 * signatures is counted: the advisory lock of every signature the batch's
 * traces_sig triggers will count or uncount (the new signatures of the
 * traces not failed, and the ones they have now), in ascending key order,
 * in one statement. */
static void add_lock_signatures(struct rvs_pg_pipe *pp, const struct rvs_index_trace *v, size_t n)
{
	struct rvs_pg_step *st =
		/* The subquery's DISTINCT and ORDER BY keep it from being
		 * flattened: the locks are taken in its order. */
		rvs_pg_pipe_add(
			pp,
			"SELECT pg_advisory_xact_lock(1381389127, k)"
			" FROM (SELECT DISTINCT hashtext(s) AS k FROM"
			" (SELECT unnest($1::text[]) UNION ALL"
			" SELECT signature FROM traces WHERE trace_id = ANY($2::text[])) u(s)"
			" WHERE s IS NOT NULL ORDER BY k) x",
			0, -1, 0);
	if (!st)
		return;
	rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, array_lit(v, n, f_sig)));
	rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, array_lit(v, n, f_trace)));
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

/* The summary column's text (bytea's hex form) into m, when not NULL:
 * 0 or -ENOMEM. */
static int meta_summary(const PGresult *r, int row, int col, struct rvs_index_meta *m)
{
	size_t len = 0;
	unsigned char *b;
	int rc = 0;

	if (PQgetisnull(r, row, col))
		return 0;
	if (!(b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &len)))
		return -ENOMEM;
	if (len > 0) {
		if ((m->summary = malloc(len))) {
			memcpy(m->summary, b, len);
			m->summary_len = len;
		} else {
			rc = -ENOMEM;
		}
	}
	PQfreemem(b);
	return rc;
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
	rc = meta_summary(r, 0, 2, m);
	PQclear(r);
	return rc;
}

int rvs_pg_index_upload_metas(struct rvs_index_lane *l, const char *const *trace_ids, size_t n,
			      struct rvs_index_meta *m, int *rc)
{
	struct rvs_pg_params a = {0};
	struct arr ids = {0};
	PGresult *r;
	int err;

	for (size_t i = 0; i < n; i++) {
		memset(&m[i], 0, sizeof m[i]);
		rc[i] = -ENOENT;
		arr_text(&ids, trace_ids[i]);
	}
	if (!arr_done(&ids)) {
		free(ids.b);
		return -ENOMEM;
	}
	if ((err = lane_up(l))) {
		free(ids.b);
		return err;
	}
	rvs_pg_text(&a, ids.b);
	err = q(l,
		"SELECT x.i, coalesce(u.compression, 0), coalesce(u.payload_size, 0), u.summary"
		" FROM unnest($1::text[]) WITH ORDINALITY AS x(id, i)"
		" JOIN uploads u ON u.trace_id = x.id",
		&a, &r);
	free(ids.b);
	if (err)
		return err;
	for (int row = 0; row < PQntuples(r) && !err; row++) {
		int64_t i = rvs_pg_val_i64(r, row, 0) - 1;
		assert(i >= 0 && (size_t)i < n);
		m[i].compression = (int)rvs_pg_val_i64(r, row, 1);
		m[i].payload_size = (uint64_t)rvs_pg_val_i64(r, row, 2);
		err = meta_summary(r, row, 3, &m[i]);
		rc[i] = 0;
	}
	PQclear(r);
	if (err)
		for (size_t i = 0; i < n; i++) {
			free(m[i].summary);
			m[i].summary = NULL;
		}
	return err;
}

static void fail(struct rvs_index_lane *l, struct rvs_index_trace *v, int rc)
{
	snprintf(v->reason, sizeof v->reason, "index: %s", l->fail.msg);
	rvs_log("error", "decode index", "trace=%s err=\"%s\"", v->trace_id, l->fail.msg);
	v->rc = rc ? rc : -EIO;
}

/* A step of the batch's transaction as a whole, not of one trace. */
#define BATCH -1

/* What the probe found of a trace, to write it. */
struct seen {
	char received[24]; /* its upload's received_at */
	int indexed;	   /* it has rows to delete first (a re-decode) */
	char *app;	   /* its upload's app id, "" for none (malloc'd) */
	/* Its call-path aggregate rows and their writer, while they are
	 * being written (agg_drop). */
	struct rvs_agg_rows rows;
	int has_rows;
	struct rvs_pg_agg_job *job;
};

/* Frees what seen holds of its trace's aggregates. */
static void agg_drop(const struct rvs_index_trace *v, struct seen *seen)
{
	rvs_pg_agg_job_free(seen->job);
	seen->job = NULL;
	if (seen->has_rows)
		v->agg_release(&seen->rows);
	seen->has_rows = 0;
}

/* Runs pp from step 0 on the lane's connection: 0, or the first
 * failure's errno with its step's tag in *tag and the failure in l->fail
 * (a NOT NULL violation of a traces row's trace_id, the upload missing:
 * -ENOENT). */
static int run(struct rvs_index_lane *l, struct rvs_pg_pipe *pp, int *tag)
{
	size_t failed;
	int rc = rvs_pg_pipe_run(l->pg, pp, 0, &failed, &l->fail);

	*tag = failed < pp->n ? pp->step[failed]->tag : BATCH;
	if (rc && failed < pp->n && strcmp(l->fail.state, "23502") == 0 &&
	    strcmp(l->fail.column, "trace_id") == 0 &&
	    strncmp(pp->step[failed]->sql, "INSERT INTO traces ", 19) == 0) {
		snprintf(l->fail.msg, sizeof l->fail.msg, "no upload %s", pp->step[failed]->p.v[0]);
		rc = -ENOENT;
	}
	return rc;
}

/* The batch's first round trip: BEGIN; every trace's decode_queue row
 * locked (FOR UPDATE, in trace_id order) while it carries the lease its
 * decoder was handed; and what the store holds of each trace: its
 * upload's received_at, whether any row the re-decode DELETEs would remove
 * exists (each table by the same key as its DELETE: traces, trace_methods,
 * trace_chains by trace_id and received_at, trace_paths and trace_agg by
 * trace_id), whether it has a signature now.  Read after the lease's lock:
 * a writer of the trace's rows holds that lock (a decoder whose lease
 * expired finds it taken, index_write's -ESTALE), so what was absent
 * stays absent to the commit.  A trace whose lease is lost or whose
 * upload is gone is failed here.  0 (*early: some trace has a signature),
 * or the errno of a failure of the whole batch. */
static int probe(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n, struct seen *seen,
		 int *early)
{
	struct rvs_pg_pipe pp = {0};
	struct rvs_pg_step *lk, *pr;
	struct arr ids = {0}, leases = {0};
	int rc, tag;

	for (size_t i = 0; i < n; i++) {
		arr_text(&ids, v[i].trace_id);
		arr_i64(&leases, 1, (int64_t)(v[i].lease & INT64_MAX));
	}
	rvs_pg_pipe_add(&pp, "BEGIN", 0, BATCH, 0);
	lk = rvs_pg_pipe_add(&pp,
			     "SELECT q.trace_id FROM decode_queue q JOIN unnest($1::text[],"
			     " $2::bigint[]) AS x(id, lease) ON q.trace_id = x.id"
			     " AND q.lease = x.lease ORDER BY q.trace_id FOR UPDATE OF q",
			     0, BATCH, 1);
	pr = rvs_pg_pipe_add(&pp,
			     "SELECT x.i, u.received_at,"
			     " EXISTS (SELECT 1 FROM traces t WHERE t.trace_id = x.id"
			     " AND t.received_at = u.received_at)"
			     " OR EXISTS (SELECT 1 FROM trace_methods m WHERE m.trace_id = x.id"
			     " AND m.received_at = u.received_at)"
			     " OR EXISTS (SELECT 1 FROM trace_chains c WHERE c.trace_id = x.id"
			     " AND c.received_at = u.received_at)"
			     " OR EXISTS (SELECT 1 FROM trace_paths p WHERE p.trace_id = x.id)"
			     " OR EXISTS (SELECT 1 FROM trace_agg a WHERE a.trace_id = x.id),"
			     " EXISTS (SELECT 1 FROM traces t WHERE t.trace_id = x.id"
			     " AND t.signature IS NOT NULL), COALESCE(u.app_id, '')"
			     " FROM unnest($1::text[]) WITH ORDINALITY AS x(id, i)"
			     " LEFT JOIN uploads u ON u.trace_id = x.id",
			     0, BATCH, 1);
	if (lk && pr && arr_done(&ids) && arr_done(&leases)) {
		rvs_pg_text(&lk->p, rvs_pg_pipe_own(&pp, lk, ids.b));
		rvs_pg_text(&lk->p, rvs_pg_pipe_own(&pp, lk, leases.b));
		rvs_pg_text(&pr->p, ids.b);
	} else {
		pp.oom = 1;
		free(ids.b);
		free(leases.b);
	}
	if ((rc = run(l, &pp, &tag)))
		goto out;
	*early = 0;
	for (size_t i = 0; i < n; i++) {
		int held = 0;
		for (int k = 0; k < PQntuples(lk->res) && !held; k++)
			held = strcmp(PQgetvalue(lk->res, k, 0), v[i].trace_id) == 0;
		seen[i].received[0] = 0;
		seen[i].indexed = 0;
		if (!held) {
			snprintf(l->fail.msg, sizeof l->fail.msg,
				 "decode lease lost (taken by another decoder)");
			fail(l, &v[i], -ESTALE);
		}
	}
	for (int k = 0; k < PQntuples(pr->res); k++) {
		int64_t i = rvs_pg_val_i64(pr->res, k, 0) - 1;
		assert(i >= 0 && (size_t)i < n);
		if (strcmp(PQgetvalue(pr->res, k, 3), "t") == 0)
			*early = 1;
		if (v[i].rc)
			continue;
		if (PQgetisnull(pr->res, k, 1)) {
			snprintf(l->fail.msg, sizeof l->fail.msg, "no upload %s", v[i].trace_id);
			fail(l, &v[i], -ENOENT);
			continue;
		}
		snprintf(seen[i].received, sizeof seen[i].received, "%s",
			 PQgetvalue(pr->res, k, 1));
		seen[i].indexed = strcmp(PQgetvalue(pr->res, k, 2), "t") == 0;
		free(seen[i].app);
		if (!(seen[i].app = strdup(PQgetvalue(pr->res, k, 4)))) {
			snprintf(l->fail.msg, sizeof l->fail.msg, "out of memory");
			fail(l, &v[i], -ENOMEM);
		}
	}
out:
	rvs_pg_pipe_free(&pp);
	return rc;
}

/* Adds a statement tagged tag with the trace's id and received_at as $1
 * and $2. */
static void add_by_key(struct rvs_pg_pipe *pp, const char *sql, int tag, const char *trace_id,
		       const char *received)
{
	struct rvs_pg_step *st = rvs_pg_pipe_add(pp, sql, 0, tag, 0);

	if (!st)
		return;
	rvs_pg_text(&st->p, trace_id);
	if (received)
		rvs_pg_text(&st->p, received);
}

/* The first part of trace i's rows, inside the batch's transaction: its
 * savepoint; the rows a re-decode replaces deleted, each table by the
 * trace's key (trace_id and received_at: the partition of its week), its
 * aggregate rows (trace_agg, trace_paths) by trace_id — only when the
 * probe found any (seen->indexed); its traces row (signature, anomaly
 * signature and issue NULL: set later), a NULL trace_id when its upload is
 * gone (a NOT NULL violation, run's -ENOENT); its method and chain rows. */
static void add_rows(struct rvs_pg_pipe *pp, int i, const struct rvs_index_trace *v,
		     const struct seen *seen)
{
	const char *id = v->trace_id, *rec = seen->received;
	struct rvs_pg_step *st;

	rvs_pg_pipe_add(pp, "SAVEPOINT one", 0, i, 0);
	if (seen->indexed) {
		add_by_key(pp, "DELETE FROM trace_chains WHERE trace_id = $1 AND received_at = $2",
			   i, id, rec);
		add_by_key(pp, "DELETE FROM trace_methods WHERE trace_id = $1 AND received_at = $2",
			   i, id, rec);
		add_by_key(pp, "DELETE FROM traces WHERE trace_id = $1 AND received_at = $2", i, id,
			   rec);
		/* The aggregate rows: no foreign key into the partitioned traces. */
		add_by_key(pp, "DELETE FROM trace_paths WHERE trace_id = $1", i, id, NULL);
		add_by_key(pp, "DELETE FROM trace_agg WHERE trace_id = $1", i, id, NULL);
	}
	st = rvs_pg_pipe_add(
		pp,
		"INSERT INTO traces (trace_id, app_id, app_version, model, os_build,"
		" anomaly_kind, severity, captured_at_ns, received_at, anomaly_name,"
		" duration_ns, nmethods, dropped, decoded_at, device_id, index_cut)"
		" SELECT u.trace_id, u.app_id, u.app_version, u.model, u.os_build,"
		" u.anomaly_kind, u.severity, u.captured_realtime_ns, $7::bigint, $2, $3, $4,"
		" $5, $6, u.device_id, $8 FROM (SELECT 1) one LEFT JOIN uploads u"
		" ON u.trace_id = $1 AND u.received_at = $7",
		0, i, 0);
	if (st) {
		rvs_pg_text(&st->p, id);
		rvs_pg_text(&st->p, v->anomaly_name);
		rvs_pg_opt_i64(&st->p, v->duration_ns >= 0, v->duration_ns);
		rvs_pg_opt_i64(&st->p, v->nmethods >= 0, v->nmethods);
		rvs_pg_opt_i64(&st->p, v->dropped >= 0, v->dropped);
		rvs_pg_i64(&st->p, v->decoded_at);
		rvs_pg_text(&st->p, rec);
		rvs_pg_text(&st->p, v->index_cut);
	}
	add_methods(pp, i, v, rec);
	add_chains(pp, i, v, rec);
}

/* The last part of trace i's rows: its signature, anomaly signature and
 * issue unless they are deferred (set_signatures), its trace_unresolved
 * rows when they are replaced, and its savepoint released. */
static void add_rows_end(struct rvs_pg_pipe *pp, int i, const struct rvs_index_trace *v,
			 const struct seen *seen, int defer_sig)
{
	struct rvs_pg_step *st;

	if (!defer_sig &&
	    (st = rvs_pg_pipe_add(pp,
				  "UPDATE traces SET anomaly_signature = $1, signature = $2,"
				  " issue = $3 WHERE trace_id = $4 AND received_at = $5",
				  0, i, 0))) {
		rvs_pg_text(&st->p, v->anomaly_signature);
		rvs_pg_text(&st->p, v->signature);
		rvs_pg_text(&st->p, v->issue);
		rvs_pg_text(&st->p, v->trace_id);
		rvs_pg_text(&st->p, seen->received);
	}
	if (v->unresolved_replace) {
		add_by_key(pp,
			   "DELETE FROM trace_unresolved WHERE trace_id = $1 AND received_at = $2",
			   i, v->trace_id, seen->received);
		for (size_t k = 0; k < v->nunresolved; k++) {
			st = rvs_pg_pipe_add(pp,
					     "INSERT INTO trace_unresolved (build_id, trace_id,"
					     " received_at) VALUES ($1, $2, $3)"
					     " ON CONFLICT DO NOTHING",
					     0, i, 0);
			if (!st)
				break;
			rvs_pg_text(&st->p, v->unresolved[k]);
			rvs_pg_text(&st->p, v->trace_id);
			rvs_pg_text(&st->p, seen->received);
		}
	}
	rvs_pg_pipe_add(pp, "RELEASE SAVEPOINT one", 0, i, 0);
}

/* The batch's end: unless early, the signatures of every trace written
 * (rc 0) after their locks, in one statement, so the traces_sig trigger
 * counts them then and the batch holds the hot counter rows only from
 * there to its commit; the path rows of every trace written added to the
 * per-node rollup (RVS_PG_ROLLUP_FOLD: its rows, one an app's path, are
 * hotter still, so likewise last and in one order) and then to the per-day
 * one (RVS_PG_DAY_FOLD, likewise); then COMMIT. */
static void add_end(struct rvs_pg_pipe *pp, const struct rvs_index_trace *v, size_t n, int early)
{
	struct rvs_pg_step *st;
	int any_agg = 0;

	for (size_t i = 0; i < n; i++)
		any_agg |= !v[i].rc && v[i].agg;
	if (any_agg && (st = rvs_pg_pipe_add(pp, RVS_PG_ROLLUP_FOLD, 0, BATCH, 0)))
		rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, array_lit(v, n, f_trace)));
	if (any_agg && (st = rvs_pg_pipe_add(pp, RVS_PG_DAY_FOLD, 0, BATCH, 0)))
		rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, array_lit(v, n, f_trace)));
	if (!early) {
		add_lock_signatures(pp, v, n);
		st = rvs_pg_pipe_add(pp,
				     "UPDATE traces t SET anomaly_signature = x.a, signature = x.s,"
				     " issue = x.i FROM unnest($1::text[], $2::text[], $3::text[],"
				     " $4::text[]) AS x(id, a, s, i) WHERE t.trace_id = x.id",
				     0, BATCH, 0);
		if (st) {
			rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, array_lit(v, n, f_trace)));
			rvs_pg_text(&st->p,
				    rvs_pg_pipe_own(pp, st, array_lit(v, n, f_anomaly_sig)));
			rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, array_lit(v, n, f_sig)));
			rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, array_lit(v, n, f_issue)));
		}
	}
	rvs_pg_pipe_add(pp, "COMMIT", 0, BATCH, 0);
}

/* Trace i's own failure rc (not transient), met in its savepoint: its
 * rows rolled back, the batch goes on.  0, or the errno of the rollback. */
static int trace_failed(struct rvs_index_lane *l, struct rvs_index_trace *v, int rc)
{
	fail(l, v, rc);
	if ((rc = q(l, "ROLLBACK TO SAVEPOINT one", NULL, NULL)))
		return rc;
	return q(l, "RELEASE SAVEPOINT one", NULL, NULL);
}

/* Adds to pp, after trace v's rows, the reads its aggregates need
 * (rvs_pg_agg_begin), its rows cut first (agg_build).  Out of memory sets
 * pp->oom. */
static void add_agg_reads(struct rvs_pg_pipe *pp, int tag, const struct rvs_index_trace *v,
			  struct seen *seen)
{
	assert(v->agg_build && v->agg_release && !seen->has_rows && !seen->job);
	if (v->agg_build(v->agg, v->agg_max_nodes, &seen->rows)) {
		pp->oom = 1;
		return;
	}
	seen->has_rows = 1;
	if (rvs_pg_agg_begin(pp, tag, v->trace_id, seen->app, &seen->rows, &seen->job))
		pp->oom = 1;
}

/* One attempt at the batch: 0 when it ended (committed, or failed for
 * good: every v[i].rc set), 1 when it met a transient error and was rolled
 * back whole (nothing written; try again).  Round trips: the probe; then
 * pipelines of whole traces, each ending at a trace with aggregates (they
 * need the dictionary's answers: written between, rvs_pg_agg_write) or at
 * the batch's end (COMMIT); so a batch of summaries takes two or three
 * round trips, a capture four and the aggregates'.  A trace's own failure
 * is rolled back to its savepoint and the traces after it are sent again.
 * A batch that re-decodes a trace with a signature takes every signature
 * lock before its first trace (the DELETE uncounts the old one) and sets
 * signatures inline; any other defers the signatures to the end.  Either
 * way a batch takes all its signature locks in one statement, holding
 * none before. */
static int attempt(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n, struct seen *seen)
{
	struct rvs_pg_pipe pp = {0};
	int rc, again, early = 0, tag = BATCH, ended = 0, locked = 0, pend = -1;
	size_t i = 0;

	for (size_t k = 0; k < n; k++) {
		v[k].rc = 0;
		v[k].reason[0] = 0;
	}
	if ((rc = lane_up(l)))
		return 1;
	rc = probe(l, v, n, seen, &early);
	while (!rc && !ended) {
		size_t start = i;
		int open = -1, cur = pend, locking = 0;

		/* cur: the trace whose steps are being added (oom's culprit). */
		if (pend >= 0 && !rvs_pg_agg_add_rows(&pp, pend, seen[pend].job))
			add_rows_end(&pp, pend, &v[pend], &seen[pend], !early);
		for (; i < n && open < 0 && !pp.oom; i++) {
			if (v[i].rc)
				continue;
			cur = (int)i;
			if (early && !locked) { /* before any trace's DELETE */
				add_lock_signatures(&pp, v, n);
				locked = locking = 1;
			}
			add_rows(&pp, (int)i, &v[i], &seen[i]);
			if (v[i].agg) {
				add_agg_reads(&pp, (int)i, &v[i], &seen[i]);
				open = (int)i;
			} else {
				add_rows_end(&pp, (int)i, &v[i], &seen[i], !early);
			}
		}
		if (open < 0 && !pp.oom) {
			cur = BATCH;
			add_end(&pp, v, n, early);
			ended = 1;
		}
		if (pp.oom) {
			/* Nothing sent: cur alone fails (rolled back to its
			 * savepoint when it is open), the rest is built again. */
			rvs_pg_pipe_free(&pp);
			if (open >= 0 && open != pend)
				agg_drop(&v[open], &seen[open]);
			snprintf(l->fail.msg, sizeof l->fail.msg, "out of memory");
			l->fail.state[0] = 0;
			if (cur < 0) {
				rc = -ENOMEM;
				break;
			}
			if (locking)
				locked = 0;
			if (cur == pend) {
				agg_drop(&v[cur], &seen[cur]);
				rc = trace_failed(l, &v[cur], -ENOMEM);
				pend = -1;
			} else {
				fail(l, &v[cur], -ENOMEM);
			}
			i = start;
			ended = 0;
			continue;
		}
		rc = run(l, &pp, &tag);
		if (!rc && open >= 0) {
			tag = open;
			rc = rvs_pg_agg_resolve(l->pg, seen[open].job, l->fail.msg,
						sizeof l->fail.msg);
		}
		rvs_pg_pipe_free(&pp);
		if (pend >= 0)
			agg_drop(&v[pend], &seen[pend]);
		pend = open;
		if (rc && tag >= 0 && !transient(l, rc)) {
			/* The steps after the failure did not run. */
			if (pend >= 0)
				agg_drop(&v[pend], &seen[pend]);
			pend = -1;
			rc = trace_failed(l, &v[tag], rc);
			i = (size_t)tag + 1;
			ended = 0;
		}
	}
	for (size_t k = 0; k < n; k++)
		agg_drop(&v[k], &seen[k]);
	if (!rc)
		return 0;
	again = transient(l, rc);
	if (PQstatus(l->pg) == CONNECTION_OK)
		PQclear(PQexec(l->pg, "ROLLBACK"));
	if (again)
		return 1;
	for (size_t k = 0; k < n; k++)
		if (!v[k].rc)
			fail(l, &v[k], rc);
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
	struct seen *seen = calloc(n ? n : 1, sizeof *seen);
	int again = 1;

	if (!seen) {
		for (size_t i = 0; i < n; i++) {
			snprintf(v[i].reason, sizeof v[i].reason, "index: out of memory");
			v[i].rc = -ENOMEM;
		}
		return;
	}

	for (int k = 0; k < MAX_ATTEMPTS && again; k++) {
		if (k) {
			rvs_log("info", "decode index retry", "traces=%zu attempt=%d err=\"%s\"", n,
				k + 1, l->fail.msg);
			backoff(k);
		}
		again = attempt(l, v, n, seen);
	}
	for (size_t i = 0; i < n; i++)
		free(seen[i].app);
	free(seen);
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
