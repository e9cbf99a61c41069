/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_agg.c — the call-path aggregates on PostgreSQL (store_agg.h;
 * agg.h; store_pg.c's migrations 3 and 7): a decoded trace's rows written
 * by its index lane, and the aggregate reads (store.h's agg_read).
 *
 * Invariants: every value goes in as a bound text parameter; a trace's
 * dictionary ids are resolved in rvs_agg_build's order, as
 * store_sqlite_agg.c does, and a new bucket or node is inserted only after
 * a lookup missed (a conflicting insert would still draw a sequence
 * number), so one lane numbers a fixture's buckets and nodes as sqlite
 * does.  The known paths of a trace are found in one statement (a
 * recursive walk from the app's root), only new ones one by one; a lookup that misses because
 * another lane is inserting the same node waits for it (ON CONFLICT DO NOTHING) and reads it again.
 * agg_read runs every side and the dictionary lookup in one REPEATABLE
 * READ, READ ONLY transaction; a bucketed side whose only filter is the
 * app reads the per-node rollup (migration 14), whose sums are the
 * buckets' summed per node (kept by store_pg_index.c's batch end and
 * trace_paths' DELETE trigger).
 */
#include "store/store_agg.h"
#include "store/pg/pg.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

/* rvs_pg_exec with a's parameters: a failure's message into err when it is
 * given, else logged. */
static int q(PGconn *pg, const char *sql, const struct rvs_pg_params *a, PGresult **out, char *err,
	     size_t errlen)
{
	struct rvs_pg_error e;
	int rc = rvs_pg_exec(pg, sql, 0, a, out, err ? &e : NULL);

	if (rc && err)
		snprintf(err, errlen, "%s", e.msg);
	return rc;
}

/* ---- decode time ------------------------------------------------------------ */

/* The dictionary's id of (app, parent, method), added when new. */
static int node_id(PGconn *pg, const char *app, int64_t parent, const char *method, uint32_t depth,
		   int64_t *id, char *err, size_t errlen)
{
	static const char find[] =
		"SELECT node FROM agg_nodes WHERE app_id = $1 AND parent = $2 AND method = $3";
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc;

	rvs_pg_text(&a, app);
	rvs_pg_opt_i64(&a, 1, parent);
	rvs_pg_text(&a, method);
	for (int attempt = 0; attempt < 2; attempt++) {
		if ((rc = q(pg, find, &a, &r, err, errlen)))
			return rc;
		if (PQntuples(r) == 1) {
			*id = rvs_pg_val_i64(r, 0, 0);
			PQclear(r);
			return 0;
		}
		PQclear(r);
		if (attempt)
			break;
		rvs_pg_opt_i64(&a, 1, depth);
		rc = q(pg,
		       "INSERT INTO agg_nodes (app_id, parent, method, depth)"
		       " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING node",
		       &a, &r, err, errlen);
		a.n = 3;
		if (rc)
			return rc;
		if (PQntuples(r) == 1) {
			*id = rvs_pg_val_i64(r, 0, 0);
			PQclear(r);
			return 0;
		}
		PQclear(r); /* another lane inserted it: read it */
	}
	snprintf(err, errlen, "agg_nodes: no node for %s", method);
	return -EIO;
}

/* The trace's bucket and app (the bucket added when new). */
static const char bucket_find[] = "SELECT b.bucket, b.app_id FROM traces t JOIN agg_buckets b"
				  " ON b.app_id = COALESCE(t.app_id, '') AND b.app_version = "
				  "COALESCE(t.app_version, '')"
				  " AND b.model = COALESCE(t.model, '') AND b.anomaly_kind = "
				  "COALESCE(t.anomaly_kind, 0)"
				  " AND b.day = t.received_at / 86400 WHERE t.trace_id = $1";

static int bucket_of(PGconn *pg, const char *trace_id, int64_t *bucket, char **app, char *err,
		     size_t errlen)
{
	static const char *const find = bucket_find;
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc;

	rvs_pg_text(&a, trace_id);
	for (int attempt = 0; attempt < 2; attempt++) {
		if ((rc = q(pg, find, &a, &r, err, errlen)))
			return rc;
		if (PQntuples(r) == 1) {
			*bucket = rvs_pg_val_i64(r, 0, 0);
			*app = strdup(PQgetvalue(r, 0, 1));
			PQclear(r);
			return *app ? 0 : -ENOMEM;
		}
		PQclear(r);
		if (attempt)
			break;
		if ((rc = q(pg,
			    "INSERT INTO agg_buckets (app_id, app_version, model, anomaly_kind, "
			    "day)"
			    " SELECT COALESCE(app_id, ''), COALESCE(app_version, ''),"
			    " COALESCE(model, ''), COALESCE(anomaly_kind, 0), received_at / 86400"
			    " FROM traces WHERE trace_id = $1 ON CONFLICT DO NOTHING",
			    &a, NULL, err, errlen)))
			return rc;
	}
	snprintf(err, errlen, "agg_buckets: no traces row for %s", trace_id);
	return -ENOENT;
}

/* Appends v to the array literal text b (NULL on allocation failure). */
static void arr_add(char **b, size_t *len, size_t *cap, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof num, "%s%" PRId64, *len > 1 ? "," : "", v);
	if (!*b)
		return;
	if (*len + (size_t)n + 2 > *cap) {
		char *nb = realloc(*b, *cap * 2 + (size_t)n + 2);
		if (!nb) {
			free(*b);
			*b = NULL;
			return;
		}
		*b = nb;
		*cap = *cap * 2 + (size_t)n + 2;
	}
	memcpy(*b + *len, num, (size_t)n + 1);
	*len += (size_t)n;
}

/* arr_add of v, or of NULL when !has. */
static void arr_add_opt(char **b, size_t *len, size_t *cap, int has, int64_t v)
{
	if (has) {
		arr_add(b, len, cap, v);
		return;
	}
	if (!*b)
		return;
	if (*len + 7 > *cap) {
		char *nb = realloc(*b, *cap * 2 + 7);
		if (!nb) {
			free(*b);
			*b = NULL;
			return;
		}
		*b = nb;
		*cap = *cap * 2 + 7;
	}
	memcpy(*b + *len, *len > 1 ? ",NULL" : "NULL", *len > 1 ? 6 : 5);
	*len += *len > 1 ? 5 : 4;
}

/* The statement finding which of a trace's paths the dictionary holds: a
 * walk down from the app's root ($1) along the rows' parents ($2 indexes,
 * $3 parents, $4 methods); rows (i, node). */
static const char known_sql[] =
	"WITH RECURSIVE x(i, p, method) AS (SELECT * FROM unnest($2::int[], $3::int[],"
	" $4::text[])), w(i, node) AS (SELECT 0, n.node FROM agg_nodes n"
	" WHERE n.app_id = $1 AND n.parent = 0 AND n.method = ''"
	" UNION ALL SELECT x.i, n.node FROM w JOIN x ON x.p = w.i AND x.i > 0"
	" JOIN agg_nodes n ON n.app_id = $1 AND n.parent = w.node"
	" AND n.method = x.method) SELECT i, node FROM w";

/* Adds known_sql for r's rows to st (app its $1, which must outlive it);
 * the array literals are st's.  0 or -ENOMEM. */
static int known_params(struct rvs_pg_pipe *pp, struct rvs_pg_step *st, const char *app,
			const struct rvs_agg_rows *r)
{
	struct rvs_pg_lit ix = {malloc(64), 0, 64}, par = {malloc(64), 0, 64},
			  met = {malloc(256), 0, 256};

	rvs_pg_lit_put(&ix, "{", 1);
	rvs_pg_lit_put(&par, "{", 1);
	rvs_pg_lit_put(&met, "{", 1);
	for (size_t i = 0; i < r->n; i++) {
		rvs_pg_lit_i64(&ix, (int64_t)i);
		rvs_pg_lit_i64(&par, r->v[i].parent);
		rvs_pg_lit_text(&met, r->v[i].method);
	}
	rvs_pg_lit_put(&ix, "}", 1);
	rvs_pg_lit_put(&par, "}", 1);
	rvs_pg_lit_put(&met, "}", 1);
	rvs_pg_text(&st->p, app);
	rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, ix.b));
	rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, par.b));
	rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, met.b));
	return pp->oom ? -ENOMEM : 0;
}

/* known_sql's rows res into id[] and found[]. */
static void known_read(const PGresult *res, const struct rvs_agg_rows *r, int64_t *id,
		       unsigned char *found)
{
	for (int k = 0; k < PQntuples(res); k++) {
		int64_t i = rvs_pg_val_i64(res, k, 0);
		if (i < 0 || (size_t)i >= r->n)
			continue;
		id[i] = rvs_pg_val_i64(res, k, 1);
		found[i] = 1;
	}
}

struct rvs_pg_agg_job {
	const char *trace_id;
	const struct rvs_agg_rows *r;
	char *app;			    /* the trace's app, "" for none */
	struct rvs_pg_step *bucket, *known; /* the reads in the caller's pipeline */
	int64_t bucket_id, *id;
	unsigned char *found;
};

int rvs_pg_agg_begin(struct rvs_pg_pipe *pp, int tag, const char *trace_id, const char *app,
		     const struct rvs_agg_rows *r, struct rvs_pg_agg_job **out)
{
	struct rvs_pg_agg_job *j = calloc(1, sizeof *j);

	assert(r->n >= 1 && !r->v[0].other);
	*out = NULL;
	if (!j || !(j->app = strdup(app)) || !(j->id = calloc(r->n, sizeof *j->id)) ||
	    !(j->found = calloc(r->n, 1))) {
		rvs_pg_agg_job_free(j);
		return -ENOMEM;
	}
	j->trace_id = trace_id;
	j->r = r;
	if ((j->bucket = rvs_pg_pipe_add(pp, bucket_find, 0, tag, 1)))
		rvs_pg_text(&j->bucket->p, trace_id);
	if ((j->known = rvs_pg_pipe_add(pp, known_sql, 0, tag, 1)))
		known_params(pp, j->known, j->app, r);
	if (pp->oom) {
		rvs_pg_agg_job_free(j);
		return -ENOMEM;
	}
	*out = j;
	return 0;
}

int rvs_pg_agg_resolve(PGconn *pg, struct rvs_pg_agg_job *j, char *err, size_t errlen)
{
	const struct rvs_agg_rows *r = j->r;
	PGresult *b = j->bucket->res;
	int rc = 0;

	assert(b && j->known->res);
	if (PQntuples(b) == 1) {
		j->bucket_id = rvs_pg_val_i64(b, 0, 0);
	} else { /* a new bucket: added, then read */
		char *app = NULL;
		if ((rc = bucket_of(pg, j->trace_id, &j->bucket_id, &app, err, errlen)))
			return rc;
		free(app);
	}
	/* The bucket's app is the traces row's, copied from the upload the
	 * caller's app came from. */
	assert(PQntuples(b) != 1 || strcmp(PQgetvalue(b, 0, 1), j->app) == 0);
	known_read(j->known->res, r, j->id, j->found);
	/* New paths only: one lookup and insert each, in sqlite's order (the
	 * folded "other" rows after every path, as they are met). */
	for (size_t i = 0; i < r->n && !rc; i++)
		if (!r->v[i].other && !j->found[i])
			rc = node_id(pg, j->app, i ? j->id[r->v[i].parent] : 0, r->v[i].method,
				     r->v[i].depth, &j->id[i], err, errlen);
	for (size_t i = 0; i < r->n && !rc; i++) {
		const struct rvs_agg_row *w = &r->v[i];
		assert(!i || w->parent < i);
		if (w->other && !j->found[i])
			rc = node_id(pg, j->app, j->id[w->parent], w->method, w->depth, &j->id[i],
				     err, errlen);
	}
	j->bucket = j->known = NULL; /* the caller's pipeline ends */
	return rc;
}

int rvs_pg_agg_add_rows(struct rvs_pg_pipe *pp, int tag, const struct rvs_pg_agg_job *j)
{
	/* The path rows go in as one INSERT of six arrays (the CPU ones NULL
	 * without CPU data). */
	enum { A_NODE, A_CALLS, A_SELF, A_INCL, A_CPU_SELF, A_CPU_INCL, A_N };
	const struct rvs_agg_rows *r = j->r;
	char *arr[A_N] = {0};
	size_t len[A_N], cap[A_N];
	struct rvs_pg_step *st;

	for (int k = 0; k < A_N; k++) {
		cap[k] = 64 + 24 * r->n;
		len[k] = 1;
		if ((arr[k] = malloc(cap[k])))
			memcpy(arr[k], "{", 2);
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct rvs_agg_row *w = &r->v[i];
		arr_add(&arr[A_NODE], &len[A_NODE], &cap[A_NODE], j->id[i]);
		arr_add(&arr[A_CALLS], &len[A_CALLS], &cap[A_CALLS],
			(int64_t)(w->calls & INT64_MAX));
		arr_add(&arr[A_SELF], &len[A_SELF], &cap[A_SELF], w->self_ns);
		arr_add(&arr[A_INCL], &len[A_INCL], &cap[A_INCL], w->incl_ns);
		arr_add_opt(&arr[A_CPU_SELF], &len[A_CPU_SELF], &cap[A_CPU_SELF], w->has_cpu,
			    w->cpu_self_ns);
		arr_add_opt(&arr[A_CPU_INCL], &len[A_CPU_INCL], &cap[A_CPU_INCL], w->has_cpu,
			    w->cpu_incl_ns);
	}
	if ((st = rvs_pg_pipe_add(
		     pp,
		     "INSERT INTO trace_agg (trace_id, bucket, nodes, folded, total_ns)"
		     " VALUES ($1, $2, $3, $4, $5)",
		     0, tag, 0))) {
		rvs_pg_text(&st->p, j->trace_id);
		rvs_pg_opt_i64(&st->p, 1, j->bucket_id);
		rvs_pg_opt_i64(&st->p, 1, r->nodes);
		rvs_pg_opt_i64(&st->p, 1, r->folded);
		rvs_pg_opt_i64(&st->p, 1, r->total_ns);
	}
	st = rvs_pg_pipe_add(
		pp,
		"INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns,"
		" cpu_self_ns, cpu_incl_ns)"
		" SELECT $1, x.node, $2, x.calls, x.self_ns, x.incl_ns, x.cs, x.ci FROM"
		" unnest($3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],"
		" $8::bigint[]) WITH ORDINALITY AS x(node, calls, self_ns, incl_ns, cs, ci, i)"
		" ORDER BY x.i",
		0, tag, 0);
	if (st) {
		rvs_pg_text(&st->p, j->trace_id);
		rvs_pg_opt_i64(&st->p, 1, j->bucket_id);
	}
	for (int k = 0; k < A_N; k++) {
		if (!st || !arr[k]) {
			free(arr[k]);
			pp->oom = 1;
			continue;
		}
		memcpy(arr[k] + len[k], "}", 2);
		rvs_pg_text(&st->p, rvs_pg_pipe_own(pp, st, arr[k]));
	}
	return pp->oom ? -ENOMEM : 0;
}

void rvs_pg_agg_job_free(struct rvs_pg_agg_job *j)
{
	if (!j)
		return;
	free(j->app);
	free(j->id);
	free(j->found);
	free(j);
}

/* ---- reads ------------------------------------------------------------------ */

/* Every read's row: node, traces, calls, self, incl, weight, wflag (0 ..
 * 6), then the CPU sums of struct rvs_agg_sum (7 .. 11): SUM_CPU_S / _D
 * of a rollup row s / d, SUM_CPU_SUMMED_S / _R of rows s / r added up,
 * PATH_CPU_ADD / _SUB of a path row p added or subtracted (a NULL, no CPU
 * data, counted out). */
#define SUM_CPU_S ", s.cpu_traces, s.cpu_self_ns, s.cpu_incl_ns, s.off_self_ns, s.off_incl_ns"
#define SUM_CPU_D ", d.cpu_traces, d.cpu_self_ns, d.cpu_incl_ns, d.off_self_ns, d.off_incl_ns"
#define SUM_CPU_SUMMED_S                                                                       \
	", sum(s.cpu_traces)::bigint, sum(s.cpu_self_ns)::bigint, sum(s.cpu_incl_ns)::bigint," \
	" sum(s.off_self_ns)::bigint, sum(s.off_incl_ns)::bigint"
#define SUM_CPU_SUMMED_R                                                                       \
	", sum(r.cpu_traces)::bigint, sum(r.cpu_self_ns)::bigint, sum(r.cpu_incl_ns)::bigint," \
	" sum(r.off_self_ns)::bigint, sum(r.off_incl_ns)::bigint"
#define PATH_CPU_ADD                                                           \
	", (p.cpu_self_ns IS NOT NULL)::int, coalesce(p.cpu_self_ns, 0),"      \
	" coalesce(p.cpu_incl_ns, 0), coalesce(p.self_ns - p.cpu_self_ns, 0)," \
	" coalesce(p.incl_ns - p.cpu_incl_ns, 0)"
#define PATH_CPU_SUB                                                             \
	", -(p.cpu_self_ns IS NOT NULL)::int, -coalesce(p.cpu_self_ns, 0),"      \
	" -coalesce(p.cpu_incl_ns, 0), -coalesce(p.self_ns - p.cpu_self_ns, 0)," \
	" -coalesce(p.incl_ns - p.cpu_incl_ns, 0)"
/* $1 app, $2 version, $3 model, $4 campaign, $5 method, $6 kind, $7 since,
 * $8 until, $9 signature, $10 chain, $11 the trace cap; $12 issue, $13
 * dur_min, $14 dur_max, $15 1 when a cell is excepted, $16 and $17 its
 * received_at range, $18 and $19 its duration range (store_sqlite_agg.c's
 * predicates).  The buckets' sums are added up per node here: one row a
 * node, not one a bucket and node (the all-apps aggregate of 100,000 traces
 * sent 1 M rows to be added up by the caller); $4 and $5 are there typed:
 * bucketed sides have neither. */
#define BUCKET_SQL                                                                                \
	"SELECT s.node, sum(s.traces)::bigint, sum(s.calls)::bigint, sum(s.self_ns)::bigint,"     \
	" sum(s.incl_ns)::bigint, 1.0, 2" SUM_CPU_SUMMED_S                                        \
	" FROM agg_buckets b JOIN agg_sums s ON s.bucket = b.bucket"                              \
	" WHERE ($1::text IS NULL OR b.app_id = $1) AND ($2::text IS NULL OR b.app_version = $2)" \
	" AND ($3::text IS NULL OR b.model = $3) AND ($6::bigint IS NULL OR b.anomaly_kind = $6)" \
	" AND ($7::bigint IS NULL OR b.day >= $7 / 86400)"                                        \
	" AND ($8::bigint IS NULL OR b.day < $8 / 86400)"                                         \
	" AND $4::text IS NULL AND $5::text IS NULL GROUP BY s.node"
/* BUCKET_SQL when the app is the only filter ($1, NULL for every app): the
 * same sums, read from the per-node rollup (migration 14; each node is one
 * app's), one row a node where BUCKET_SQL adds up one a bucket and node
 * (the fleet's 100,000 traces: 4,000 rows, not 1 M). */
static const char ROLLUP_SQL[] =
	"SELECT s.node, s.traces, s.calls, s.self_ns, s.incl_ns, 1.0, 2" SUM_CPU_S
	" FROM agg_node_sums s JOIN agg_nodes n ON n.node = s.node"
	" WHERE ($1::text IS NULL OR n.app_id = $1)";
#define TRACE_SET                                                                                 \
	"(SELECT t.trace_id, t.received_at, t.duration_ns FROM traces t"                          \
	" JOIN trace_agg a ON a.trace_id = t.trace_id"                                            \
	" WHERE ($1::text IS NULL OR t.app_id = $1) AND ($2::text IS NULL OR t.app_version = $2)" \
	" AND ($3::text IS NULL OR t.model = $3) AND ($6::bigint IS NULL OR t.anomaly_kind = $6)" \
	" AND ($7::bigint IS NULL OR t.received_at >= $7)"                                        \
	" AND ($8::bigint IS NULL OR t.received_at < $8)"                                         \
	" AND ($12::text IS NULL OR t.issue = $12)"                                               \
	" AND ($13::bigint IS NULL OR t.duration_ns >= $13)"                                      \
	" AND ($14::bigint IS NULL OR t.duration_ns < $14)"                                       \
	" AND ($15::bigint IS NULL OR NOT (t.received_at >= $16::bigint"                          \
	" AND t.received_at < $17::bigint AND coalesce(t.duration_ns, -1) >= $18::bigint"         \
	" AND coalesce(t.duration_ns, -1) < $19::bigint))"                                        \
	" AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM uploads u WHERE u.trace_id = t.trace_id" \
	" AND u.campaign_id = $4))"                                                               \
	" AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM trace_methods m"                         \
	" WHERE m.trace_id = t.trace_id AND m.method = $5))"                                      \
	" AND ($9::text IS NULL OR EXISTS (SELECT 1 FROM trace_chains c"                          \
	" WHERE c.trace_id = t.trace_id AND c.signature = $9))"                                   \
	" AND ($10::text IS NULL OR EXISTS (SELECT 1 FROM trace_chains c"                         \
	" WHERE c.trace_id = t.trace_id AND c.chain = $10))"                                      \
	" ORDER BY t.received_at DESC, t.seq DESC LIMIT $11) x"
/* Each row's weight w and flag wf (0 exact, 1 estimated, 2 unknown: an
 * upload without a selection) from its upload, joined once per trace. */
#define TRACE_SQL                                                                        \
	"SELECT p.node, 1, p.calls, p.self_ns, p.incl_ns, COALESCE(uw.weight, 1.0),"     \
	" CASE WHEN uw.weight_exact = 1 THEN 0 WHEN COALESCE(uw.sel_kind, 0) = 0 THEN 2" \
	" ELSE 1 END" PATH_CPU_ADD " FROM " TRACE_SET                                    \
	" LEFT JOIN uploads uw ON uw.trace_id = x.trace_id"                              \
	" JOIN trace_paths p ON p.trace_id = x.trace_id"
/* TRACE_SQL for a caller that reads no weight (rvs_agg_filter.unweighted):
 * no uploads row read, every row's weight unknown. */
#define TRACE_SQL_UNWEIGHTED                                                                      \
	"SELECT p.node, 1, p.calls, p.self_ns, p.incl_ns, 1.0, 2" PATH_CPU_ADD " FROM " TRACE_SET \
	" JOIN trace_paths p ON p.trace_id = x.trace_id"
/* $20 the node, $21 the rows, $22 1: by self time. */
#define HEAVY_SQL                                                                     \
	"SELECT p.trace_id, p.calls, p.self_ns, p.incl_ns, x.received_at,"            \
	" coalesce(x.duration_ns, -1) FROM " TRACE_SET                                \
	" JOIN trace_paths p ON p.trace_id = x.trace_id AND p.node = $20"             \
	" ORDER BY CASE WHEN $22::bigint = 1 THEN p.self_ns ELSE p.incl_ns END DESC," \
	" p.trace_id LIMIT $21"

/* The rest of a range around a cell (store_agg.h's rvs_agg_rest_days;
 * store_sqlite_agg.c's REST_SQL, its arms): $1 app, [$2, $3) the
 * rollup's days, [$4, $5) the range, $6 to $9 the cell's received_at and
 * duration ranges.  One row a node whose net trace count is not 0, with
 * 1.0 and 2 (no weight, as a bucket row), the CPU sums and whether it
 * is a root (12).
 * REST_SQL(a, b): a limits the rollup's nodes to the app's, b the traces.
 * The rollup's rows of a node are an index range of its key (node, day). */
#define REST_CELL                                                      \
	" (t.received_at >= $6::bigint AND t.received_at < $7::bigint" \
	" AND coalesce(t.duration_ns, -1) >= $8::bigint"               \
	" AND coalesce(t.duration_ns, -1) < $9::bigint)"
/* An arm's path rows added (REST_ADD) or subtracted (REST_SUB), as the
 * rollup's columns. */
#define REST_ADD ", 1, p.calls, p.self_ns, p.incl_ns" PATH_CPU_ADD
#define REST_SUB ", -1, -p.calls, -p.self_ns, -p.incl_ns" PATH_CPU_SUB
#define REST_ARM(cols, where, app_traces)                \
	" UNION ALL SELECT p.node" cols " FROM traces t" \
	" JOIN trace_agg a ON a.trace_id = t.trace_id"   \
	" JOIN trace_paths p ON p.trace_id = t.trace_id WHERE " where app_traces
#define REST_BEFORE "t.received_at >= $2::bigint * 86400 AND t.received_at < $4::bigint"
#define REST_AFTER  "t.received_at >= $5::bigint AND t.received_at < $3::bigint * 86400"
#define REST_EDGE_BEFORE                                                         \
	"t.received_at >= $4::bigint AND t.received_at < $2::bigint * 86400 AND" \
	" NOT" REST_CELL
#define REST_EDGE_AFTER                                                          \
	"t.received_at >= $3::bigint * 86400 AND t.received_at < $5::bigint AND" \
	" NOT" REST_CELL
#define REST_SQL(app_nodes, app_traces, cell_arm)                                               \
	"SELECT r.node, sum(r.traces)::bigint, sum(r.calls)::bigint, sum(r.self_ns)::bigint,"   \
	" sum(r.incl_ns)::bigint, 1.0, 2" SUM_CPU_SUMMED_R ", (n.parent = 0)::int"              \
	" FROM (SELECT d.node, d.traces, d.calls, d.self_ns, d.incl_ns" SUM_CPU_D               \
	" FROM agg_day_sums d WHERE d.day >= $2::bigint AND d.day < $3::bigint" app_nodes       \
	REST_ARM(REST_SUB, REST_BEFORE, app_traces) REST_ARM(REST_SUB, REST_AFTER,              \
							     app_traces) cell_arm               \
	REST_ARM(REST_ADD, REST_EDGE_BEFORE, app_traces) REST_ARM(                              \
		REST_ADD, REST_EDGE_AFTER,                                                      \
		app_traces) ") r JOIN agg_nodes n ON n.node = r.node GROUP BY r.node, n.parent" \
			    " HAVING sum(r.traces) <> 0"
#define REST_CELL_ARM(app_traces)                                                            \
	REST_ARM(REST_SUB,                                                                   \
		 "t.received_at >= greatest($2::bigint * 86400, $4::bigint)"                 \
		 " AND t.received_at < least($3::bigint * 86400, $5::bigint) AND" REST_CELL, \
		 app_traces)
#define REST_APP_NODES	" AND d.node IN (SELECT node FROM agg_nodes WHERE app_id = $1::text)"
#define REST_APP_TRACES " AND t.app_id = $1::text"
static const char REST_SQL_ANY[] =
	REST_SQL("", " AND $1::text IS NULL", REST_CELL_ARM(" AND $1::text IS NULL"));
static const char REST_SQL_APP[] =
	REST_SQL(REST_APP_NODES, REST_APP_TRACES, REST_CELL_ARM(REST_APP_TRACES));
/* Without the cell's arm: the caller subtracts the cell's rows it read. */
static const char REST_SQL_APP_NO_CELL[] = REST_SQL(REST_APP_NODES, REST_APP_TRACES, "");

/* Row i of r as a summed row (every read's columns). */
static void sum_of(const PGresult *r, int i, struct rvs_agg_sum *w)
{
	w->node = rvs_pg_val_i64(r, i, 0);
	w->traces = rvs_pg_val_i64(r, i, 1);
	w->calls = rvs_pg_val_i64(r, i, 2);
	w->self_ns = rvs_pg_val_i64(r, i, 3);
	w->incl_ns = rvs_pg_val_i64(r, i, 4);
	w->cpu_traces = rvs_pg_val_i64(r, i, 7);
	w->cpu_self_ns = rvs_pg_val_i64(r, i, 8);
	w->cpu_incl_ns = rvs_pg_val_i64(r, i, 9);
	w->off_self_ns = rvs_pg_val_i64(r, i, 10);
	w->off_incl_ns = rvs_pg_val_i64(r, i, 11);
}

/* The parameters of TRACE_SET for side f into a. */
static void set_params(struct rvs_pg_params *a, const struct rvs_agg_filter *f)
{
	rvs_pg_text(a, f->app);
	rvs_pg_text(a, f->version);
	rvs_pg_text(a, f->model);
	rvs_pg_text(a, f->campaign);
	rvs_pg_text(a, f->method);
	rvs_pg_opt_i64(a, f->has_kind, f->kind);
	rvs_pg_opt_i64(a, f->has_since, f->since);
	rvs_pg_opt_i64(a, f->has_until, f->until);
	rvs_pg_text(a, f->signature);
	rvs_pg_text(a, f->chain);
	rvs_pg_i64(a, f->max_traces);
	rvs_pg_text(a, f->issue);
	rvs_pg_opt_i64(a, f->has_dur_min, f->dur_min);
	rvs_pg_opt_i64(a, f->has_dur_max, f->dur_max);
	rvs_pg_opt_i64(a, f->has_except, 1);
	rvs_pg_i64(a, f->except_since);
	rvs_pg_i64(a, f->except_until);
	rvs_pg_i64(a, f->except_dur_min);
	rvs_pg_i64(a, f->except_dur_max);
}

/* Side s, f's range (without its cell, if any) from the rollup's days and
 * per-trace edges (rr, rvs_agg_rest_days's), to cb->row, one summed row a node; cell and *over as
 * store_sqlite_agg.c's collect_rest takes and sets them.  0, cb's stop
 * value, -ENOMEM or a statement's -errno. */
static int collect_rest(PGconn *pg, const struct rvs_agg_filter *f,
			const struct rvs_agg_rest_range *rr, size_t s, const struct rvs_agg_cb *cb,
			void *arg, const struct rvs_agg_acc *cell, int *over)
{
	struct rvs_pg_params a = {0};
	struct rvs_agg_acc v = {0};
	int64_t traces = 0;
	size_t matched = 0;
	PGresult *r;
	int rc, stop = 0;

	*over = 0;
	rvs_pg_text(&a, f->app);
	rvs_pg_i64(&a, rr->day0);
	rvs_pg_i64(&a, rr->day1);
	rvs_pg_i64(&a, rr->since);
	rvs_pg_i64(&a, rr->until);
	rvs_pg_i64(&a, rr->ex_since);
	rvs_pg_i64(&a, rr->ex_until);
	rvs_pg_i64(&a, rr->ex_dur_min);
	rvs_pg_i64(&a, rr->ex_dur_max);
	if ((rc = q(pg,
		    cell     ? REST_SQL_APP_NO_CELL
		    : f->app ? REST_SQL_APP
			     : REST_SQL_ANY,
		    &a, &r, NULL, 0)))
		return rc;
	for (int i = 0; i < PQntuples(r) && !rc; i++) {
		struct rvs_agg_sum w;
		const struct rvs_agg_sum *c;
		int root = rvs_pg_val_i64(r, i, 12) != 0;

		sum_of(r, i, &w);
		if ((c = cell ? rvs_agg_acc_find(cell, w.node) : NULL)) {
			matched++;
			if (root && c->traces >= f->max_traces)
				*over = 1;
			rvs_agg_sum_sub(&w, c);
		}
		if (w.traces < 0 || w.cpu_traces < 0)
			*over = 1;
		if (root && w.traces > 0 && traces < INT64_MAX - w.traces)
			traces += w.traces;
		if (w.traces > 0)
			rc = rvs_agg_acc_add(&v, &w);
	}
	PQclear(r);
	/* A cell node the range lacks: the rollup lost rows. */
	if ((cell && matched != cell->n) || traces > f->max_traces)
		*over = 1;
	for (size_t i = 0; i < v.n && !rc && !*over && !stop; i++)
		stop = cb->row(arg, s, &v.v[i], 1.0, 2);
	rvs_agg_acc_release(&v);
	return rc ? rc : stop;
}

/* Side s's rows to cb->row (cell: as collect_rest takes it). */
static int collect(PGconn *pg, const struct rvs_agg_filter *f, size_t s,
		   const struct rvs_agg_cb *cb, void *arg, const struct rvs_agg_acc *cell)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	struct rvs_agg_rest_range rr;
	int rc, stop = 0, over = 0;
	int rollup = f->bucketed && !f->version && !f->model && !f->has_kind && !f->has_since &&
		     !f->has_until;

	if (rvs_agg_rest_days(f, &rr) &&
	    ((stop = collect_rest(pg, f, &rr, s, cb, arg, cell, &over)) || !over))
		return stop;
	if (f->bucketed) {
		rvs_pg_text(&a, f->app);
		rvs_pg_text(&a, f->version);
		rvs_pg_text(&a, f->model);
		rvs_pg_text(&a, NULL);
		rvs_pg_text(&a, NULL);
		rvs_pg_opt_i64(&a, f->has_kind, f->kind);
		rvs_pg_opt_i64(&a, f->has_since, f->since);
		rvs_pg_opt_i64(&a, f->has_until, f->until);
	} else {
		set_params(&a, f);
	}
	if (rollup) {
		a.n = 1;
		rc = q(pg, ROLLUP_SQL, &a, &r, NULL, 0);
	} else {
		rc = q(pg,
		       f->bucketed     ? BUCKET_SQL
		       : f->unweighted ? TRACE_SQL_UNWEIGHTED
				       : TRACE_SQL,
		       &a, &r, NULL, 0);
	}
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++) {
		struct rvs_agg_sum w;
		sum_of(r, i, &w);
		stop = cb->row(arg, s, &w, rvs_pg_val_dbl(r, i, 5), (int)rvs_pg_val_i64(r, i, 6));
	}
	PQclear(r);
	return stop;
}

/* Every node cb names, in one statement (the ids as an array). */
static int describe(PGconn *pg, const struct rvs_agg_cb *cb, void *arg)
{
	size_t n = cb->nodes(arg), len = 1, cap = 64 + 24 * n;
	char *ids = malloc(cap);
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc, stop = 0;

	if (!ids)
		return -ENOMEM;
	memcpy(ids, "{", 2);
	for (size_t i = 0; i < n; i++)
		arr_add(&ids, &len, &cap, cb->node_id(arg, i));
	if (!ids)
		return -ENOMEM;
	memcpy(ids + len, "}", 2);
	rvs_pg_text(&a, ids);
	rc = q(pg,
	       "SELECT node, parent, depth, CASE WHEN parent = 0 THEN app_id ELSE method END"
	       " FROM agg_nodes WHERE node = ANY($1::bigint[])",
	       &a, &r, NULL, 0);
	free(ids);
	if (rc)
		return rc;
	if ((size_t)PQntuples(r) != n)
		stop = -EIO; /* a node missing from the dictionary */
	for (int i = 0; i < PQntuples(r) && !stop; i++)
		stop = cb->describe(arg, rvs_pg_val_i64(r, i, 0), rvs_pg_val_i64(r, i, 1),
				    (int)rvs_pg_val_i64(r, i, 2), PQgetvalue(r, i, 3));
	PQclear(r);
	return stop;
}

int rvs_pg_agg_read(const struct rvs_pg_pool *pool, const struct rvs_agg_filter *f, size_t nsides,
		    const struct rvs_agg_cb *cb, void *arg)
{
	struct rvs_agg_tee tee = {.cb = cb, .arg = arg};
	struct rvs_agg_rest_range rr;
	void *h;
	PGconn *pg = pool->get(pool->s, &h);
	int rc;

	assert(nsides >= 1 && nsides <= 2);
	if (!pg)
		return -EAGAIN;
	/* One snapshot: both sides and the dictionary agree. */
	rc = q(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", NULL, NULL, NULL, 0);
	/* The diff of a cell against the rest of its range: the cell's rows,
	 * read for side 0, are summed on the way and subtracted from the
	 * rest's instead of read again. */
	if (!rc && nsides == 2 && rvs_agg_rest_days(&f[1], &rr) &&
	    rvs_agg_rest_is_cell(&f[0], &f[1], &rr)) {
		struct rvs_agg_cb tee_cb = *cb;
		tee_cb.row = rvs_agg_acc_tee;
		rc = collect(pg, &f[0], 0, &tee_cb, &tee, NULL);
		if (!rc)
			rc = collect(pg, &f[1], 1, cb, arg, tee.failed ? NULL : &tee.acc);
	} else {
		for (size_t i = 0; i < nsides && !rc; i++)
			rc = collect(pg, &f[i], i, cb, arg, NULL);
	}
	rvs_agg_acc_release(&tee.acc);
	if (!rc)
		rc = describe(pg, cb, arg);
	PQclear(PQexec(pg, rc ? "ROLLBACK" : "COMMIT"));
	pool->put(pool->s, h);
	return rc;
}

/* ---- the anomaly heatmap ---------------------------------------------------- */

/* store_sqlite_agg.c's HEATMAP_SQL: $1 app, $2 kind, $3 issue, $4 since,
 * $5 until. */
static const char HEATMAP_SQL[] =
	"SELECT t.received_at, t.duration_ns FROM traces t"
	" JOIN trace_agg a ON a.trace_id = t.trace_id"
	" WHERE ($1::text IS NULL OR t.app_id = $1) AND ($2::bigint IS NULL OR t.anomaly_kind = $2)"
	" AND ($3::text IS NULL OR t.issue = $3) AND t.received_at >= $4 AND t.received_at < $5"
	" AND t.duration_ns >= 0";

int rvs_pg_heatmap_read(const struct rvs_pg_pool *pool, const struct rvs_heatmap_filter *f,
			int (*cb)(void *arg, int64_t received_at, int64_t duration_ns), void *arg)
{
	struct rvs_pg_params a = {0};
	PGresult *r = NULL;
	void *h;
	PGconn *pg;
	int rc, stop = 0;

	rvs_pg_text(&a, f->app);
	rvs_pg_opt_i64(&a, f->has_kind, f->kind);
	rvs_pg_text(&a, f->issue);
	rvs_pg_i64(&a, f->since);
	rvs_pg_i64(&a, f->until);
	if (!(pg = pool->get(pool->s, &h)))
		return -EAGAIN;
	rc = q(pg, HEATMAP_SQL, &a, &r, NULL, 0);
	pool->put(pool->s, h);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++)
		stop = cb(arg, rvs_pg_val_i64(r, i, 0), rvs_pg_val_i64(r, i, 1));
	PQclear(r);
	return stop;
}

int rvs_pg_heaviest_read(const struct rvs_pg_pool *pool, const struct rvs_agg_filter *f,
			 int64_t node, int by_self, int64_t limit,
			 int (*cb)(void *arg, const struct rvs_heavy_row *r), void *arg)
{
	struct rvs_pg_params a = {0};
	PGresult *r = NULL;
	void *h;
	PGconn *pg;
	int rc, stop = 0;

	assert(!f->bucketed && limit > 0);
	set_params(&a, f);
	rvs_pg_i64(&a, node);
	rvs_pg_i64(&a, limit);
	rvs_pg_i64(&a, !!by_self);
	if (!(pg = pool->get(pool->s, &h)))
		return -EAGAIN;
	rc = q(pg, HEAVY_SQL, &a, &r, NULL, 0);
	pool->put(pool->s, h);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++) {
		const struct rvs_heavy_row row = {
			.trace_id = PQgetvalue(r, i, 0),
			.calls = rvs_pg_val_i64(r, i, 1),
			.self_ns = rvs_pg_val_i64(r, i, 2),
			.incl_ns = rvs_pg_val_i64(r, i, 3),
			.received_at = rvs_pg_val_i64(r, i, 4),
			.duration_ns = rvs_pg_val_i64(r, i, 5),
		};
		stop = cb(arg, &row);
	}
	PQclear(r);
	return stop;
}
