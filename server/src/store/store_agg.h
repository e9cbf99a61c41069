/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_agg.h — the backends' aggregate, search and trend operations
 * (store.h's aggregates-and-search block, and trend_read), in files of
 * their own: store_sqlite_agg.c, store_sqlite_search.c,
 * store_sqlite_trend.c, store_pg_agg.c, store_pg_search.c,
 * store_pg_trend.c, which
 * store_sqlite.c and store_pg.c call with what they need of their store
 * (its dsn; its pool of connections).  Internal to the store: only the
 * backends include it.
 * Errors, threads and ownership as store.h's operations.
 */
#ifndef RVS_STORE_AGG_H
#define RVS_STORE_AGG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store/store.h"

struct sqlite3;
struct sqlite3_stmt;
struct pg_conn;
struct pg_result;
struct rvs_agg_rows;
struct rvs_pg_pool;

/* ---- the rest of a range around a heatmap cell ---- */

/* A side that is "every trace of a time range", or of a range but one
 * cell (the B side of a cell's diff against the rest of its range), is
 * summed, on both backends, from the per-day rollup agg_day_sums over days
 * [day0, day1) (day = received_at / 86400), corrected per trace at the
 * range's ends: minus every trace of those days outside the range, minus
 * the cell's traces inside both, plus the range's traces outside the cell
 * beyond those days.  The same integer sums as the per-trace read, from a
 * node's few day rows and the cell's and the edges' traces instead of
 * every row of the range.  An end inside a day takes that day from the
 * rollup when the range covers most of it (subtracting the part outside),
 * else reads the part inside per trace: at most half a day of traces at
 * each end.
 *
 * It qualifies only when the per-trace read's result does not depend on
 * what the rollup lacks: no weights (each trace's upload's), no
 * trace-level filter other than the excepted cell (campaign, method,
 * chain, issue, duration), no version, model or kind (agg_day_sums sums
 * over them; agg_sums' buckets could serve those, not done), a range with
 * an end inside a day (whole days are bucketed sides: agg_sums answers
 * them).  A range without a start starts at 0; one without an end ends at
 * RVS_AGG_OPEN_UNTIL (no trace is received that late).  No cell: an empty
 * one.  The caller also falls back to the per-trace read when the range
 * holds more than f->max_traces traces: that read sums only the newest. */
#define RVS_AGG_OPEN_UNTIL ((INT64_MAX / 86400 - 2) * 86400)
struct rvs_agg_rest_range {
	int64_t day0, day1;	    /* the rollup's days */
	int64_t since, until;	    /* the range, both ends set */
	int64_t ex_since, ex_until; /* the cell's arrival range (empty: none) */
	int64_t ex_dur_min, ex_dur_max;
};
/* 1 when side f qualifies, with *r set (r->day0 < r->day1); else 0. */
static inline int rvs_agg_rest_days(const struct rvs_agg_filter *f, struct rvs_agg_rest_range *r)
{
	int64_t lo, hi;

	if (f->bucketed || !f->unweighted || f->version || f->model || f->has_kind || f->campaign ||
	    f->method || f->signature || f->chain || f->issue || f->has_dur_min || f->has_dur_max ||
	    (!f->has_since && !f->has_until) || (f->has_since && f->since < 0) ||
	    (f->has_until && f->until > RVS_AGG_OPEN_UNTIL))
		return 0;
	r->since = f->has_since ? f->since : 0;
	r->until = f->has_until ? f->until : RVS_AGG_OPEN_UNTIL;
	if (r->since >= r->until)
		return 0;
	r->ex_since = f->has_except ? f->except_since : 0;
	r->ex_until = f->has_except ? f->except_until : 0;
	r->ex_dur_min = f->has_except ? f->except_dur_min : 0;
	r->ex_dur_max = f->has_except ? f->except_dur_max : 0;
	lo = r->since % 86400;
	hi = r->until % 86400;
	r->day0 = r->since / 86400 + (lo > 43200);
	r->day1 = r->until / 86400 + (hi >= 43200);
	return r->day0 < r->day1;
}

/* Side a is the cell that side b's rest excepts, exactly and inside the
 * range b reads per day (rb, rvs_agg_rest_days's of b): the same app
 * (given), no other filter, a's [since, until) b's except range inside b's
 * range and days, a's durations [dur_min >= 0, dur_max or none) b's except
 * durations (a NULL duration in neither).  Then b's read may subtract a's
 * rows as read (rvs_agg_tee) instead of reading them again, when a holds
 * fewer than a->max_traces traces (else a's read sampled them). */
static inline int rvs_agg_rest_is_cell(const struct rvs_agg_filter *a,
				       const struct rvs_agg_filter *b,
				       const struct rvs_agg_rest_range *rb)
{
	int64_t lo = rb->day0 * 86400 > rb->since ? rb->day0 * 86400 : rb->since;
	int64_t hi = rb->day1 * 86400 < rb->until ? rb->day1 * 86400 : rb->until;

	return b->has_except && a->app && b->app && !strcmp(a->app, b->app) && !a->bucketed &&
	       a->unweighted && !a->version && !a->model && !a->has_kind && !a->campaign &&
	       !a->method && !a->signature && !a->chain && !a->issue && !a->has_except &&
	       a->has_since && a->has_until && a->since == b->except_since &&
	       a->until == b->except_until && a->since >= lo && a->until <= hi && a->has_dur_min &&
	       a->dur_min >= 0 && a->dur_min == b->except_dur_min &&
	       (a->has_dur_max ? a->dur_max : INT64_MAX) == b->except_dur_max;
}

/* A side's rows summed per node (store.h's struct rvs_agg_sum), sorted
 * by node (store_agg_rest.c). */
struct rvs_agg_acc {
	struct rvs_agg_sum *v;
	size_t n, cap;
};
/* Adds row r to r->node's sums.  0 or -ENOMEM. */
int rvs_agg_acc_add(struct rvs_agg_acc *a, const struct rvs_agg_sum *r);
/* r's figures less c's (the same node's), in place. */
void rvs_agg_sum_sub(struct rvs_agg_sum *r, const struct rvs_agg_sum *c);
/* Node's sums, or NULL. */
struct rvs_agg_sum *rvs_agg_acc_find(const struct rvs_agg_acc *a, int64_t node);
void rvs_agg_acc_release(struct rvs_agg_acc *a);
/* A row callback (struct rvs_agg_cb's row) that gives each row to cb->row
 * and, unless that stopped the read, adds it to acc; failed is set when
 * acc ran out of memory (its sums are then incomplete: not to be used). */
struct rvs_agg_tee {
	const struct rvs_agg_cb *cb;
	void *arg;
	struct rvs_agg_acc acc;
	int failed;
};
int rvs_agg_acc_tee(void *arg, size_t side, const struct rvs_agg_sum *r, double weight, int wflag);

/* A trace's selection weight and its flag, from its uploads row U (a
 * LEFT JOIN: none reads as 1, unknown): the weight (1/p, uploads.weight),
 * and the flag 0 exact, 1 an estimate (a censoring quota), 2 unknown (an
 * upload without a selection).  The same text on both backends. */
#define RVS_SQL_WEIGHT(U) "COALESCE(" U ".weight, 1.0)"
#define RVS_SQL_WFLAG(U)                                                            \
	"(CASE WHEN " U ".weight_exact = 1 THEN 0 WHEN COALESCE(" U ".sel_kind, 0)" \
	" = 0 THEN 2 ELSE 1 END)"

/* ---- sqlite ---- */

/* Inside the index lane's transaction on db, after trace_id's traces row:
 * replaces nothing (a re-decoded trace's rows went with its traces row)
 * and writes r's trace_agg and trace_paths rows.  An sqlite result code. */
int rvs_sqlite_agg_write(struct sqlite3 *db, const char *trace_id, const struct rvs_agg_rows *r);
/* store.h's agg_read, traces_sorted, issues_read and search_scan, each on
 * a read connection of its own (store_sqlite_util.h's rvs_sqlite_scan_open)
 * on the database dsn. */
int rvs_sqlite_agg_read(const char *dsn, const struct rvs_agg_filter *f, size_t nsides,
			const struct rvs_agg_cb *cb, void *arg);
int rvs_sqlite_traces_sorted(const char *dsn, const struct rvs_sorted_query *q, rvs_row_fn cb,
			     void *arg);
int rvs_sqlite_issues_read(const char *dsn, const struct rvs_issue_filter *f,
			   int (*cb)(void *arg, int part, const struct rvs_issue_row *r),
			   void *arg);
int rvs_sqlite_search_scan(const char *dsn, const struct rvs_search_scan *q,
			   int (*chunk)(void *arg, int64_t top, int64_t *hi, int64_t *lo),
			   rvs_row_fn row, void *arg);
/* store.h's trend_read on a read connection of its own on dsn. */
int rvs_sqlite_trend_read(const char *dsn, const struct rvs_trend_filter *f,
			  int (*cb)(void *arg, const struct rvs_trend_row *r), void *arg, int *cut);
/* store.h's heatmap_read and heaviest_read on a read connection of their
 * own on dsn. */
int rvs_sqlite_heatmap_read(const char *dsn, const struct rvs_heatmap_filter *f,
			    int (*cb)(void *arg, int64_t received_at, int64_t duration_ns),
			    void *arg);
int rvs_sqlite_heaviest_read(const char *dsn, const struct rvs_agg_filter *f, int64_t node,
			     int by_self, int64_t limit,
			     int (*cb)(void *arg, const struct rvs_heavy_row *r), void *arg);
/* Registers rvs_issue(chain, signature) on db: the SQL face of
 * rvs_issue_fold (issue.h; NULL when either argument is NULL or the
 * signature is malformed), deterministic, for migration 9's backfill.
 * 0 or -EIO. */
int rvs_sqlite_issue_register(struct sqlite3 *db);

/* ---- PostgreSQL ---- */

/* The on- and off-CPU sums of path rows P ("" or "p."): how many have CPU
 * data (count skips NULLs), their on-CPU self and inclusive time, and
 * their wall time less it; and the upsert adding them. */
#define RVS_PG_FOLD_CPU(P)                                                       \
	", count(" P "cpu_self_ns), coalesce(sum(" P "cpu_self_ns), 0)::bigint," \
	" coalesce(sum(" P "cpu_incl_ns), 0)::bigint,"                           \
	" coalesce(sum(" P "self_ns - " P "cpu_self_ns), 0)::bigint,"            \
	" coalesce(sum(" P "incl_ns - " P "cpu_incl_ns), 0)::bigint"
#define RVS_PG_FOLD_CPU_SET                                    \
	", cpu_traces = s.cpu_traces + excluded.cpu_traces,"   \
	" cpu_self_ns = s.cpu_self_ns + excluded.cpu_self_ns," \
	" cpu_incl_ns = s.cpu_incl_ns + excluded.cpu_incl_ns," \
	" off_self_ns = s.off_self_ns + excluded.off_self_ns," \
	" off_incl_ns = s.off_incl_ns + excluded.off_incl_ns"
#define RVS_PG_FOLD_ROWS RVS_PG_FOLD_CPU("")
#define RVS_PG_FOLD_P	 RVS_PG_FOLD_CPU("p.")

/* The statement adding the path rows of the traces $1 (a text[] of
 * trace ids) to agg_node_sums (store_pg.c's migration 14: agg_sums summed
 * per node; with the on- and off-CPU sums of migration 18), one upsert a
 * node in node order, so that writers take these rows in one order.  The
 * index lane runs it once a batch, just before its COMMIT, over the traces
 * it wrote (store_pg_index.c); trace_paths' DELETE trigger takes rows off
 * the same way. */
#define RVS_PG_ROLLUP_FOLD                                                                   \
	"INSERT INTO agg_node_sums AS s (node, traces, calls, self_ns, incl_ns, cpu_traces," \
	" cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns) SELECT node, count(*),"        \
	" sum(calls)::bigint, sum(self_ns)::bigint, sum(incl_ns)::bigint" RVS_PG_FOLD_ROWS   \
	" FROM trace_paths WHERE trace_id = ANY($1::text[])"                                 \
	" GROUP BY node ORDER BY node ON CONFLICT (node) DO UPDATE SET"                      \
	" traces = s.traces + excluded.traces, calls = s.calls + excluded.calls,"            \
	" self_ns = s.self_ns + excluded.self_ns,"                                           \
	" incl_ns = s.incl_ns + excluded.incl_ns" RVS_PG_FOLD_CPU_SET

/* The same for the per-day rollup agg_day_sums (store_pg.c's migration
 * 16: agg_sums summed per node and UTC day), one upsert a (node, day) in
 * that order; the index lane runs it just after RVS_PG_ROLLUP_FOLD, so
 * batches take these rows in one order too. */
#define RVS_PG_DAY_FOLD                                                                          \
	"INSERT INTO agg_day_sums AS s (node, day, traces, calls, self_ns, incl_ns, cpu_traces," \
	" cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns) SELECT p.node, b.day, count(*),"   \
	" sum(p.calls)::bigint, sum(p.self_ns)::bigint, sum(p.incl_ns)::bigint" RVS_PG_FOLD_P    \
	" FROM trace_paths p JOIN agg_buckets b ON b.bucket = p.bucket"                          \
	" WHERE p.trace_id = ANY($1::text[]) GROUP BY p.node, b.day ORDER BY p.node, b.day"      \
	" ON CONFLICT (node, day) DO UPDATE SET traces = s.traces + excluded.traces,"            \
	" calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"             \
	" incl_ns = s.incl_ns + excluded.incl_ns" RVS_PG_FOLD_CPU_SET

/* A trace's call-path aggregate rows on pg, inside the index lane's
 * transaction, in three steps around its pipelines (store/pg/pg.h;
 * store_pg_index.c): rvs_pg_agg_begin adds to pp, tagged tag, the reads of
 * the trace's bucket and of the paths the dictionary holds (after the
 * trace's traces row; app is its upload's app, "" for none); once that
 * pipeline ran, rvs_pg_agg_resolve reads their answers and adds what is
 * new (a bucket, paths: its own round trips, in rvs_agg_build's order) on
 * pg; rvs_pg_agg_add_rows then adds the trace_agg row and the trace_paths
 * rows to a later pipeline.  r and trace_id must outlive the job.  Each:
 * 0 or -errno (-ENOMEM; resolve: a statement's, with the message in err);
 * rvs_pg_agg_job_free frees the job (NULL: nothing). */
struct rvs_pg_agg_job;
struct rvs_pg_pipe;
int rvs_pg_agg_begin(struct rvs_pg_pipe *pp, int tag, const char *trace_id, const char *app,
		     const struct rvs_agg_rows *r, struct rvs_pg_agg_job **out);
int rvs_pg_agg_resolve(struct pg_conn *pg, struct rvs_pg_agg_job *j, char *err, size_t errlen);
int rvs_pg_agg_add_rows(struct rvs_pg_pipe *pp, int tag, const struct rvs_pg_agg_job *j);
void rvs_pg_agg_job_free(struct rvs_pg_agg_job *j);
/* store.h's agg_read, traces_sorted, issues_read and search_scan, on
 * connections pool lends (pg.h: store_pg.c's pool). */
int rvs_pg_agg_read(const struct rvs_pg_pool *pool, const struct rvs_agg_filter *f, size_t nsides,
		    const struct rvs_agg_cb *cb, void *arg);
int rvs_pg_traces_sorted(const struct rvs_pg_pool *pool, const struct rvs_sorted_query *q,
			 rvs_row_fn cb, void *arg);
int rvs_pg_issues_read(const struct rvs_pg_pool *pool, const struct rvs_issue_filter *f,
		       int (*cb)(void *arg, int part, const struct rvs_issue_row *r), void *arg);
int rvs_pg_search_scan(const struct rvs_pg_pool *pool, const struct rvs_search_scan *q,
		       int (*chunk)(void *arg, int64_t top, int64_t *hi, int64_t *lo),
		       rvs_row_fn row, void *arg);
/* store.h's trend_read on a connection pool lends. */
int rvs_pg_trend_read(const struct rvs_pg_pool *pool, const struct rvs_trend_filter *f,
		      int (*cb)(void *arg, const struct rvs_trend_row *r), void *arg, int *cut);
/* store.h's heatmap_read and heaviest_read on connections pool lends. */
int rvs_pg_heatmap_read(const struct rvs_pg_pool *pool, const struct rvs_heatmap_filter *f,
			int (*cb)(void *arg, int64_t received_at, int64_t duration_ns), void *arg);
int rvs_pg_heaviest_read(const struct rvs_pg_pool *pool, const struct rvs_agg_filter *f,
			 int64_t node, int by_self, int64_t limit,
			 int (*cb)(void *arg, const struct rvs_heavy_row *r), void *arg);

#endif
