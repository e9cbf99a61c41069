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
 * transaction on a connection of its own; heaviest_read ranks the same
 * trace set (TRACE_SET) agg_read sums, and heatmap_read counts by its
 * predicates, so a heatmap cell's aggregate holds exactly the cell's traces.
 */
#include "store/store_agg.h"
#include "store/sqlite/store_sqlite_util.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "rearview/common.h"

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
	"INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns, cpu_self_ns,"
	" cpu_incl_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
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
		/* Without CPU data both stay NULL (cleared bindings). */
		rvs_sqlite_bind_opt_i64(st[S_PATH], 7, w->has_cpu, w->cpu_self_ns);
		rvs_sqlite_bind_opt_i64(st[S_PATH], 8, w->has_cpu, w->cpu_incl_ns);
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

/* Every read's row: node, traces, calls, self, incl, weight, wflag (0 ..
 * 6), then the CPU sums of struct rvs_agg_sum (7 .. 11): SUM_CPU_S / _D
 * of a rollup row s / d, PATH_CPU_ADD / _SUB of a path row p added or
 * subtracted (a NULL, no CPU data, counted out). */
#define SUM_CPU_S ", s.cpu_traces, s.cpu_self_ns, s.cpu_incl_ns, s.off_self_ns, s.off_incl_ns"
#define SUM_CPU_D ", d.cpu_traces, d.cpu_self_ns, d.cpu_incl_ns, d.off_self_ns, d.off_incl_ns"
#define PATH_CPU_ADD                                                           \
	", (p.cpu_self_ns IS NOT NULL), coalesce(p.cpu_self_ns, 0),"           \
	" coalesce(p.cpu_incl_ns, 0), coalesce(p.self_ns - p.cpu_self_ns, 0)," \
	" coalesce(p.incl_ns - p.cpu_incl_ns, 0)"
#define PATH_CPU_SUB                                                             \
	", -(p.cpu_self_ns IS NOT NULL), -coalesce(p.cpu_self_ns, 0),"           \
	" -coalesce(p.cpu_incl_ns, 0), -coalesce(p.self_ns - p.cpu_self_ns, 0)," \
	" -coalesce(p.incl_ns - p.cpu_incl_ns, 0)"
/* ?1 app, ?2 version, ?3 model, ?4 campaign, ?5 method, ?7 kind, ?8 since,
 * ?9 until, ?10 signature, ?11 chain, ?12 the trace cap (agg.c's order);
 * ?13 issue, ?14 dur_min, ?15 dur_max, ?16 1 when a cell is excepted, ?17
 * and ?18 its received_at range, ?19 and ?20 its duration range. */
#define BUCKET_SQL                                                                    \
	"SELECT s.node, s.traces, s.calls, s.self_ns, s.incl_ns, 1.0, 2" SUM_CPU_S    \
	" FROM agg_buckets b CROSS JOIN agg_sums s ON s.bucket = b.bucket"            \
	" WHERE (?1 IS NULL OR b.app_id = ?1) AND (?2 IS NULL OR b.app_version = ?2)" \
	" AND (?3 IS NULL OR b.model = ?3) AND (?7 IS NULL OR b.anomaly_kind = ?7)"   \
	" AND (?8 IS NULL OR b.day >= ?8 / 86400) AND (?9 IS NULL OR b.day < ?9 / 86400)"
/* The newest ?12 traces of a trace-level side, as x (trace_id, received_at,
 * duration_ns): what an aggregate sums and heaviest_read ranks. */
#define TRACE_SET                                                                             \
	"(SELECT t.trace_id, t.received_at, t.duration_ns FROM traces t"                      \
	" CROSS JOIN trace_agg a ON a.trace_id = t.trace_id"                                  \
	" WHERE (?1 IS NULL OR t.app_id = ?1) AND (?2 IS NULL OR t.app_version = ?2)"         \
	" AND (?3 IS NULL OR t.model = ?3) AND (?7 IS NULL OR t.anomaly_kind = ?7)"           \
	" AND (?8 IS NULL OR t.received_at >= ?8) AND (?9 IS NULL OR t.received_at < ?9)"     \
	" AND (?13 IS NULL OR t.issue = ?13)"                                                 \
	" AND (?14 IS NULL OR t.duration_ns >= ?14) AND (?15 IS NULL OR t.duration_ns < ?15)" \
	" AND (?16 IS NULL OR NOT (t.received_at >= ?17 AND t.received_at < ?18"              \
	" AND coalesce(t.duration_ns, -1) >= ?19 AND coalesce(t.duration_ns, -1) < ?20))"     \
	" AND (?4 IS NULL OR EXISTS (SELECT 1 FROM uploads u WHERE u.trace_id = t.trace_id"   \
	" AND u.campaign_id = ?4))"                                                           \
	" AND (?5 IS NULL OR EXISTS (SELECT 1 FROM trace_methods m"                           \
	" WHERE m.trace_id = t.trace_id AND m.method = ?5))"                                  \
	" AND (?10 IS NULL OR EXISTS (SELECT 1 FROM trace_chains c"                           \
	" WHERE c.trace_id = t.trace_id AND c.signature = ?10))"                              \
	" AND (?11 IS NULL OR EXISTS (SELECT 1 FROM trace_chains c"                           \
	" WHERE c.trace_id = t.trace_id AND c.chain = ?11))"                                  \
	" ORDER BY t.received_at DESC, t.trace_id DESC LIMIT ?12) x"
/* Each row's weight w and flag wf (0 exact, 1 estimated, 2 unknown: an
 * upload without a selection) from its upload, joined once per trace. */
#define TRACE_SQL                                                                        \
	"SELECT p.node, 1, p.calls, p.self_ns, p.incl_ns, COALESCE(uw.weight, 1.0),"     \
	" CASE WHEN uw.weight_exact = 1 THEN 0 WHEN COALESCE(uw.sel_kind, 0) = 0 THEN 2" \
	" ELSE 1 END" PATH_CPU_ADD " FROM " TRACE_SET                                    \
	" LEFT JOIN uploads uw ON uw.trace_id = x.trace_id"                              \
	" CROSS JOIN trace_paths p ON p.trace_id = x.trace_id"
/* ?21 the node, ?22 the rows, ?23 1: by self time. */
#define HEAVY_SQL                                                               \
	"SELECT p.trace_id, p.calls, p.self_ns, p.incl_ns, x.received_at,"      \
	" coalesce(x.duration_ns, -1) FROM " TRACE_SET                          \
	" CROSS JOIN trace_paths p ON p.trace_id = x.trace_id AND p.node = ?21" \
	" ORDER BY CASE WHEN ?23 THEN p.self_ns ELSE p.incl_ns END DESC, p.trace_id LIMIT ?22"

/* The rest of a range around a cell (store_agg.h's rvs_agg_rest_days):
 * ?1 app, [?2, ?3) the rollup's days, [?4, ?5) the range, ?6 to ?9 the
 * cell's received_at and duration ranges (TRACE_SET's except predicate).
 * One row a node whose net trace count is not 0, and whether it is a root
 * (its traces are the side's).  The arms after the rollup's: the days'
 * traces before and after the range, all (an empty interval when the days
 * start or end inside it); the cell's traces in both; the range's traces
 * outside the cell before and after the days.  REST_SQL(a, b): a limits
 * the rollup's nodes to the app's, b the traces. */
#define REST_CELL                                                                      \
	" (t.received_at >= ?6 AND t.received_at < ?7 AND coalesce(t.duration_ns, -1)" \
	" >= ?8 AND coalesce(t.duration_ns, -1) < ?9)"
/* An arm's path rows added (REST_ADD) or subtracted (REST_SUB), as the
 * rollup's columns. */
#define REST_ADD ", 1, p.calls, p.self_ns, p.incl_ns" PATH_CPU_ADD
#define REST_SUB ", -1, -p.calls, -p.self_ns, -p.incl_ns" PATH_CPU_SUB
#define REST_ARM(cols, where, app_traces)                    \
	" UNION ALL SELECT p.node" cols " FROM traces t"     \
	" CROSS JOIN trace_agg a ON a.trace_id = t.trace_id" \
	" CROSS JOIN trace_paths p ON p.trace_id = t.trace_id WHERE " where app_traces
#define REST_BEFORE	 "t.received_at >= ?2 * 86400 AND t.received_at < ?4"
#define REST_AFTER	 "t.received_at >= ?5 AND t.received_at < ?3 * 86400"
#define REST_EDGE_BEFORE "t.received_at >= ?4 AND t.received_at < ?2 * 86400 AND NOT" REST_CELL
#define REST_EDGE_AFTER	 "t.received_at >= ?3 * 86400 AND t.received_at < ?5 AND NOT" REST_CELL
/* Its columns as every read's (weight 1, unknown), then whether the node
 * is a root (12). */
#define REST_SQL(app_nodes, app_traces, cell_arm)                                              \
	"SELECT r.node, sum(r.traces), sum(r.calls), sum(r.self_ns), sum(r.incl_ns), 1.0, 2,"  \
	" sum(r.cpu_traces), sum(r.cpu_self_ns), sum(r.cpu_incl_ns), sum(r.off_self_ns),"      \
	" sum(r.off_incl_ns), n.parent = 0 FROM (SELECT d.node, d.traces, d.calls,"            \
	" d.self_ns, d.incl_ns" SUM_CPU_D " FROM agg_day_sums d"                               \
	" WHERE d.day >= ?2 AND d.day < ?3" app_nodes                                          \
	REST_ARM(REST_SUB, REST_BEFORE, app_traces) REST_ARM(REST_SUB, REST_AFTER, app_traces) \
		cell_arm                                                                       \
		REST_ARM(REST_ADD, REST_EDGE_BEFORE, app_traces)                               \
			REST_ARM(REST_ADD, REST_EDGE_AFTER,                                    \
				 app_traces) ") r CROSS JOIN agg_nodes n ON n.node = r.node "  \
					     "GROUP BY r.node HAVING sum(r.traces) <> 0"
#define REST_CELL_ARM(app_traces)                                                               \
	REST_ARM(REST_SUB,                                                                      \
		 "t.received_at >= max(?2 * 86400, ?4) AND t.received_at < min(?3 * 86400, ?5)" \
		 " AND" REST_CELL,                                                              \
		 app_traces)
#define REST_APP_NODES	" AND d.node IN (SELECT node FROM agg_nodes WHERE app_id = ?1)"
#define REST_APP_TRACES " AND t.app_id = ?1"
static const char *const REST_SQL_ANY = REST_SQL("", "", REST_CELL_ARM(""));
static const char *const REST_SQL_APP =
	REST_SQL(REST_APP_NODES, REST_APP_TRACES, REST_CELL_ARM(REST_APP_TRACES));
/* Without the cell's arm: the caller subtracts the cell's rows it read. */
static const char *const REST_SQL_APP_NO_CELL = REST_SQL(REST_APP_NODES, REST_APP_TRACES, "");

/* The trace-level filter of f bound on st (TRACE_SET's parameters). */
static void bind_set(sqlite3_stmt *st, const struct rvs_agg_filter *f)
{
	rvs_sqlite_bind_opt_text(st, 1, f->app);
	rvs_sqlite_bind_opt_text(st, 2, f->version);
	rvs_sqlite_bind_opt_text(st, 3, f->model);
	rvs_sqlite_bind_opt_i64(st, 7, f->has_kind, f->kind);
	rvs_sqlite_bind_opt_i64(st, 8, f->has_since, f->since);
	rvs_sqlite_bind_opt_i64(st, 9, f->has_until, f->until);
	rvs_sqlite_bind_opt_text(st, 4, f->campaign);
	rvs_sqlite_bind_opt_text(st, 5, f->method);
	rvs_sqlite_bind_opt_text(st, 10, f->signature);
	rvs_sqlite_bind_opt_text(st, 11, f->chain);
	sqlite3_bind_int64(st, 12, f->max_traces);
	rvs_sqlite_bind_opt_text(st, 13, f->issue);
	rvs_sqlite_bind_opt_i64(st, 14, f->has_dur_min, f->dur_min);
	rvs_sqlite_bind_opt_i64(st, 15, f->has_dur_max, f->dur_max);
	rvs_sqlite_bind_opt_i64(st, 16, f->has_except, 1);
	sqlite3_bind_int64(st, 17, f->except_since);
	sqlite3_bind_int64(st, 18, f->except_until);
	sqlite3_bind_int64(st, 19, f->except_dur_min);
	sqlite3_bind_int64(st, 20, f->except_dur_max);
}

/* The summed row st stands on (every read's columns). */
static void sum_of(sqlite3_stmt *st, struct rvs_agg_sum *r)
{
	r->node = sqlite3_column_int64(st, 0);
	r->traces = sqlite3_column_int64(st, 1);
	r->calls = sqlite3_column_int64(st, 2);
	r->self_ns = sqlite3_column_int64(st, 3);
	r->incl_ns = sqlite3_column_int64(st, 4);
	r->cpu_traces = sqlite3_column_int64(st, 7);
	r->cpu_self_ns = sqlite3_column_int64(st, 8);
	r->cpu_incl_ns = sqlite3_column_int64(st, 9);
	r->off_self_ns = sqlite3_column_int64(st, 10);
	r->off_incl_ns = sqlite3_column_int64(st, 11);
}

/* Side s, f's range (without its cell, if any) from the rollup's days and
 * per-trace edges (rr, rvs_agg_rest_days's), to cb->row as one summed row
 * a node (weight 1, unknown, as a bucket row: the side is unweighted).  cell: the cell's rows as
 * side 0 read them (rvs_agg_rest_is_cell), subtracted here instead of read again; NULL: read. *over
 * is 1, and nothing given, when the per-trace read must answer instead: the rest holds more than
 * f->max_traces traces (that read sums only the newest), the cell as many (its read sampled them),
 * or a node's net count is below 0 (which a consistent rollup never gives). 0, cb's stop value,
 * -ENOMEM or -EIO. */
static int collect_rest(sqlite3 *db, const struct rvs_agg_filter *f,
			const struct rvs_agg_rest_range *rr, size_t s, const struct rvs_agg_cb *cb,
			void *arg, const struct rvs_agg_acc *cell, int *over)
{
	struct rvs_agg_acc v = {0};
	int64_t traces = 0;
	size_t matched = 0;
	sqlite3_stmt *st;
	int rc, stop = 0;

	*over = 0;
	if (sqlite3_prepare_v2(db,
			       cell	? REST_SQL_APP_NO_CELL
			       : f->app ? REST_SQL_APP
					: REST_SQL_ANY,
			       -1, &st, NULL))
		return -EIO;
	rvs_sqlite_bind_opt_text(st, 1, f->app);
	sqlite3_bind_int64(st, 2, rr->day0);
	sqlite3_bind_int64(st, 3, rr->day1);
	sqlite3_bind_int64(st, 4, rr->since);
	sqlite3_bind_int64(st, 5, rr->until);
	sqlite3_bind_int64(st, 6, rr->ex_since);
	sqlite3_bind_int64(st, 7, rr->ex_until);
	sqlite3_bind_int64(st, 8, rr->ex_dur_min);
	sqlite3_bind_int64(st, 9, rr->ex_dur_max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_agg_sum r;
		const struct rvs_agg_sum *c;
		int root = sqlite3_column_int(st, 12);

		sum_of(st, &r);
		if ((c = cell ? rvs_agg_acc_find(cell, r.node) : NULL)) {
			matched++;
			if (root && c->traces >= f->max_traces)
				*over = 1;
			rvs_agg_sum_sub(&r, c);
		}
		if (r.traces < 0 || r.cpu_traces < 0)
			*over = 1;
		if (root && r.traces > 0 && traces < INT64_MAX - r.traces)
			traces += r.traces;
		if (r.traces > 0 && rvs_agg_acc_add(&v, &r)) {
			rc = SQLITE_NOMEM;
			break;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		rvs_agg_acc_release(&v);
		return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
	}
	/* A cell node the range lacks: the rollup lost rows. */
	if (cell && matched != cell->n)
		*over = 1;
	if (traces > f->max_traces)
		*over = 1;
	for (size_t i = 0; i < v.n && !*over && !stop; i++)
		stop = cb->row(arg, s, &v.v[i], 1.0, 2);
	rvs_agg_acc_release(&v);
	return stop;
}

/* Side s's rows to cb->row (cell: as collect_rest takes it).  0, cb's
 * stop value, or -EIO. */
static int collect(sqlite3 *db, const struct rvs_agg_filter *f, size_t s,
		   const struct rvs_agg_cb *cb, void *arg, const struct rvs_agg_acc *cell)
{
	sqlite3_stmt *st;
	struct rvs_agg_rest_range rr;
	int rc, stop = 0, over = 0;

	if (rvs_agg_rest_days(f, &rr) &&
	    ((stop = collect_rest(db, f, &rr, s, cb, arg, cell, &over)) || !over))
		return stop;
	if (sqlite3_prepare_v2(db, f->bucketed ? BUCKET_SQL : TRACE_SQL, -1, &st, NULL))
		return -EIO;
	if (f->bucketed) {
		rvs_sqlite_bind_opt_text(st, 1, f->app);
		rvs_sqlite_bind_opt_text(st, 2, f->version);
		rvs_sqlite_bind_opt_text(st, 3, f->model);
		rvs_sqlite_bind_opt_i64(st, 7, f->has_kind, f->kind);
		rvs_sqlite_bind_opt_i64(st, 8, f->has_since, f->since);
		rvs_sqlite_bind_opt_i64(st, 9, f->has_until, f->until);
	} else {
		bind_set(st, f);
	}
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvs_agg_sum r;
		sum_of(st, &r);
		stop = cb->row(arg, s, &r, sqlite3_column_double(st, 5), sqlite3_column_int(st, 6));
	}
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
	struct rvs_agg_tee tee = {.cb = cb, .arg = arg};
	struct rvs_agg_rest_range rr;
	sqlite3 *db;
	int rc = 0;

	assert(nsides >= 1 && nsides <= 2);
	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	/* One read transaction: both sides see the same snapshot. */
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL))
		rc = -EIO;
	/* The diff of a cell against the rest of its range: the cell's rows,
	 * read for side 0, are summed on the way and subtracted from the
	 * rest's instead of read again. */
	if (nsides == 2 && rvs_agg_rest_days(&f[1], &rr) &&
	    rvs_agg_rest_is_cell(&f[0], &f[1], &rr)) {
		struct rvs_agg_cb tee_cb = *cb;
		tee_cb.row = rvs_agg_acc_tee;
		if (!rc)
			rc = collect(db, &f[0], 0, &tee_cb, &tee, NULL);
		if (!rc)
			rc = collect(db, &f[1], 1, cb, arg, tee.failed ? NULL : &tee.acc);
	} else {
		for (size_t i = 0; i < nsides && !rc; i++)
			rc = collect(db, &f[i], i, cb, arg, NULL);
	}
	rvs_agg_acc_release(&tee.acc);
	if (!rc)
		rc = describe(db, cb, arg);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

/* ---- the anomaly heatmap ---------------------------------------------------- */

/* ?1 app, ?2 kind, ?3 issue, ?4 since, ?5 until: TRACE_SET's predicates
 * (a trace with an aggregate, received in the range) plus a duration. */
static const char HEATMAP_SQL[] =
	"SELECT t.received_at, t.duration_ns FROM traces t"
	" CROSS JOIN trace_agg a ON a.trace_id = t.trace_id"
	" WHERE (?1 IS NULL OR t.app_id = ?1) AND (?2 IS NULL OR t.anomaly_kind = ?2)"
	" AND (?3 IS NULL OR t.issue = ?3) AND t.received_at >= ?4 AND t.received_at < ?5"
	" AND t.duration_ns >= 0";

/* ?1 since, ?2 until: the same traces as HEATMAP_SQL without an app, kind
 * or issue, read from the partial index traces_heat alone (migration 19:
 * has_agg is 1 exactly when the trace has a trace_agg row). */
static const char HEATMAP_FLEET_SQL[] =
	"SELECT received_at, duration_ns FROM traces INDEXED BY traces_heat"
	" WHERE has_agg = 1 AND received_at >= ?1 AND received_at < ?2 AND duration_ns >= 0";

int rvs_sqlite_heatmap_read(const char *dsn, const struct rvs_heatmap_filter *f,
			    int (*cb)(void *arg, int64_t received_at, int64_t duration_ns),
			    void *arg)
{
	int fleet = !f->app && !f->has_kind && !f->issue;
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, fleet ? HEATMAP_FLEET_SQL : HEATMAP_SQL, -1, &st, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	if (fleet) {
		sqlite3_bind_int64(st, 1, f->since);
		sqlite3_bind_int64(st, 2, f->until);
	} else {
		rvs_sqlite_bind_opt_text(st, 1, f->app);
		rvs_sqlite_bind_opt_i64(st, 2, f->has_kind, f->kind);
		rvs_sqlite_bind_opt_text(st, 3, f->issue);
		sqlite3_bind_int64(st, 4, f->since);
		sqlite3_bind_int64(st, 5, f->until);
	}
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
		stop = cb(arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

int rvs_sqlite_heaviest_read(const char *dsn, const struct rvs_agg_filter *f, int64_t node,
			     int by_self, int64_t limit,
			     int (*cb)(void *arg, const struct rvs_heavy_row *r), void *arg)
{
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc, stop = 0;

	assert(!f->bucketed && limit > 0);
	if (rvs_sqlite_scan_open(dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, HEAVY_SQL, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	bind_set(st, f);
	sqlite3_bind_int64(st, 21, node);
	sqlite3_bind_int64(st, 22, limit);
	sqlite3_bind_int(st, 23, !!by_self);
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct rvs_heavy_row r = {
			.trace_id = (const char *)sqlite3_column_text(st, 0),
			.calls = sqlite3_column_int64(st, 1),
			.self_ns = sqlite3_column_int64(st, 2),
			.incl_ns = sqlite3_column_int64(st, 3),
			.received_at = sqlite3_column_int64(st, 4),
			.duration_ns = sqlite3_column_int64(st, 5),
		};
		stop = cb(arg, &r);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}
