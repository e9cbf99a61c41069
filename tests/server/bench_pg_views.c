/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_pg_views.c — issue 16's aggregate, worst-trace, issues and chain
 * search views on PostgreSQL at 100,000 synthetic traces (issue 16;
 * server/BENCHMARKS-web.md).  A private PostgreSQL (pg_harness.h), a fresh
 * database migrated by the store, filled by SQL alone (generate_series):
 * 100,000 traces over 20 apps × 7 versions × 50 models, 500 devices and
 * issues, 3 chains and 8 methods (of 2,000 names) a trace, a dictionary
 * of 200 paths per app and 10 path rows a trace (1 M trace_paths rows,
 * every even trace's with CPU data; agg_sums kept by the trigger).  Then
 * each request through the JSON API in-process (rvs_api_v1, no TLS or
 * HTTP), the store held open as the server holds it: one warm-up and 20
 * timed, p50 and p99 in ms.  Exits 1 when PostgreSQL is missing or a step
 * fails, its PostgreSQL stopped (atexit) either way.  `make
 * bench-pg-views` runs it under tests/with-pg.sh (deploy/pg-private.sh),
 * whose trap stops the cluster even when the program is killed.
 * RVS_BENCH_ROWS=a|b measures only the rows whose label contains a or b;
 * RVS_BENCH_KEEP=1 keeps the filled database on a shared cluster
 * (RVT_PG_HOST) for psql; RVS_BENCH_SQL runs more statements after the
 * fill (an index tried without a migration).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "api/api.h"
#include "api/query.h"
#include "http/route.h"
#include "base/config.h"
#include "store/store.h"
#include "pg_harness.h"

static struct pgh pg;
static struct rvs_config cfg; /* database: the fresh PostgreSQL database */

/* The private server stopped (a shared cluster's database dropped),
 * whichever way the program ends. */
static void stop_pg(void)
{
	/* RVS_BENCH_KEEP=1 on the run's cluster (tests/with-pg.sh's, or
	 * RVT_PG_HOST's): the filled database is kept for psql, named here. */
	const char *keep = getenv("RVS_BENCH_KEEP");

	if (keep && *keep && strcmp(keep, "0") && pg.shared && cfg.database[0]) {
		fprintf(stderr, "kept: %s\n", cfg.database);
		pg.ndbs = 0;
	}
	pgh_stop(&pg);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void ex(PGconn *c, const char *sql)
{
	double t = now_ms();
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "%s\n%s\n", sql, PQerrorMessage(c));
		exit(1);
	}
	PQclear(r);
	fprintf(stderr, "  %.0f ms: %.60s\n", now_ms() - t, sql);
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* RVS_BENCH_ROWS: only the rows whose label contains one of its
 * '|'-separated parts (every row when unset). */
static int wanted(const char *label)
{
	const char *want = getenv("RVS_BENCH_ROWS"), *p;

	if (!want || !*want)
		return 1;
	for (p = want; *p;) {
		size_t n = strcspn(p, "|");
		char part[128];
		if (n && n < sizeof part) {
			memcpy(part, p, n);
			part[n] = 0;
			if (strstr(label, part))
				return 1;
		}
		p += n + (p[n] == '|');
	}
	return 0;
}

static void measure(const char *label, const char *path, const char *query, int n)
{
	double ms[64];
	int status = 0;

	if (!wanted(label))
		return;
	for (int i = 0; i < n + 1; i++) {
		struct rvs_query_resp r;
		double t = now_ms();
		memset(&r, 0, sizeof r);
		rvs_api_v1(&cfg, 0, path, query, NULL, 0, &r);
		if (i)
			ms[i - 1] = now_ms() - t;
		status = r.status;
		free(r.body);
	}
	qsort(ms, n, sizeof ms[0], cmpd);
	printf("| %s | %d | %d | %.1f | %.1f |\n", label, status, n, ms[(n + 1) / 2 - 1],
	       ms[n - 1]);
}

int main(void)
{
	const struct rvs_store_ops *o;
	struct rvs_store *s, *held;
	PGconn *c;
	if (pgh_start(&pg))
		return fprintf(stderr, "pg: %s\n", pg.why), 1;
	atexit(stop_pg); /* every exit below, a failed step's too */
	if (pgh_fresh_db(&pg, cfg.database, sizeof cfg.database))
		return fprintf(stderr, "pg: %s\n", pg.why), 1;
	snprintf(cfg.blob_dir, sizeof cfg.blob_dir, "%s/blobs", pg.dir);
	if (rvs_store_pg.open(cfg.database, &s))
		return 1;
	rvs_store_pg.close(s);
	c = PQconnectdb(cfg.database);
	double t0 = now_ms();
	/* The fill's uploads go back 600,000 s (up to two weeks before this
	 * one): their weeks' partitions, made as the store makes them. */
	ex(c, "SELECT rv_week_partitions(w) FROM generate_series("
	      "extract(epoch FROM now())::bigint / 604800 - 2,"
	      " extract(epoch FROM now())::bigint / 604800 - 1) w");
	ex(c, "INSERT INTO devices (device_id, token_hash, enrolled_at) SELECT 'd' || i,"
	      " decode(lpad(to_hex(i), 8, '0'), 'hex'), 0 FROM generate_series(1, 500) i");
	/* Frame counts (POST /v1/jank) for the fleet's jank page: every device
	 * a day of each of the last 8 UTC days for the 20 traced apps and 5
	 * never traced, one version each (100,000 rows). */
	ex(c, "INSERT INTO jank_counts (device_id, app_id, app_version, day, frames, late,"
	      " received_at) SELECT 'd' || d, CASE WHEN a < 20 THEN 'com.example.app' || a"
	      " ELSE 'com.example.untraced' || (a - 20) END, '1.' || ((d + a) % 7) || '.0',"
	      " extract(epoch FROM now())::bigint / 86400 - k, 3600 + (d * 7 + a) % 500,"
	      " (d * 13 + a * 7 + k) % 97, extract(epoch FROM now())::bigint"
	      " FROM generate_series(1, 500) d, generate_series(0, 24) a,"
	      " generate_series(0, 7) k");
	/* Selections as devices send them (API.md "Weights"): six uploads in
	 * ten sampled at 10 % (weight 10, exact), two first-N under a quota
	 * that refused half (weight 20, an estimate), two from older devices
	 * without one (weight 1, unknown). */
	ex(c,
	   "INSERT INTO uploads (trace_id, device_id, upload_id, received_at, app_id, app_version,"
	   " model, anomaly_kind, severity, state, sel_kind, sel_p, weight, weight_exact)"
	   " SELECT 't-' || lpad(to_hex(i), 32, '0'), 'd' || (i % 500 + 1),"
	   " decode(lpad(to_hex(i), 8, '0'), 'hex'), extract(epoch FROM now())::bigint - i * 6,"
	   " 'com.example.app' || (i % 20), '1.' || (i % 7) || '.0', 'model-' || (i % 50), 1,"
	   " i % 5, 'decoded', CASE WHEN i % 10 < 6 THEN 1 WHEN i % 10 < 8 THEN 2 ELSE 0 END,"
	   " CASE WHEN i % 10 < 8 THEN 0.1 END,"
	   " CASE WHEN i % 10 < 6 THEN 10 WHEN i % 10 < 8 THEN 20 ELSE 1 END,"
	   " CASE WHEN i % 10 < 6 THEN 1 ELSE 0 END FROM generate_series(1, 100000) i");
	ex(c, "INSERT INTO traces (trace_id, app_id, app_version, model, anomaly_kind, severity,"
	      " captured_at_ns, received_at, duration_ns, anomaly_signature, signature, issue,"
	      " device_id, decoded_at) SELECT trace_id, app_id, app_version, model, anomaly_kind,"
	      " severity, received_at * 1000000000, received_at,"
	      " 1000000 + (('x' || right(trace_id, 16))::bit(64)::bigint * 7919) % 100000000,"
	      " lpad(to_hex(('x' || right(trace_id, 16))::bit(64)::bigint % 500), 16, '0'),"
	      " lpad(to_hex(('x' || right(trace_id, 16))::bit(64)::bigint % 500), 16, '0'),"
	      " lpad(to_hex(('x' || right(trace_id, 16))::bit(64)::bigint % 500), 16, '0'), "
	      "device_id, 0 FROM uploads"
	      " ORDER BY received_at");
	/* trace_chains and trace_methods carry their trace's received_at:
	 * their partition key. */
	ex(c, "INSERT INTO trace_chains (trace_id, kind, rank, signature, chain, depth,"
	      " received_at)"
	      " SELECT t.trace_id, k.kind, k.rank, lpad(to_hex((t.seq + k.rank) % 500), 16, '0'),"
	      " 'main;com.example.Loop.run;com.example.X' || ((t.seq * k.rank) % 500) || ';', 3,"
	      " t.received_at FROM traces t, (VALUES ('anomaly', 1), ('top', 1), ('top', 2)) "
	      "k(kind, rank)"
	      " ORDER BY t.seq, k.kind, k.rank");
	ex(c, "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns, received_at)"
	      " SELECT t.trace_id, 'com.example.Class' || (((t.seq * 31 + j * 250) % 2000) / 10) ||"
	      " '.method' || ((t.seq * 31 + j * 250) % 2000), 1, 1000 * j + t.seq % 1000,"
	      " 2000 * j, t.received_at FROM traces t, generate_series(0, 7) j ORDER BY t.seq, j");
	/* One method in every trace of app3 (5,000): the trend of a method
	 * the app always runs, which reads each trace's upload for its weight. */
	ex(c, "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns, received_at)"
	      " SELECT trace_id, 'com.example.Hot.run', 1, 1000 + seq % 5000, 2000 + seq % 5000,"
	      " received_at FROM traces WHERE app_id = 'com.example.app3' ORDER BY seq");
	ex(c, "INSERT INTO agg_buckets (app_id, app_version, model, anomaly_kind, day)"
	      " SELECT DISTINCT app_id, app_version, model, anomaly_kind, received_at / 86400"
	      " FROM traces");
	ex(c, "INSERT INTO agg_nodes (app_id, parent, method, depth) SELECT 'com.example.app' || a,"
	      " 0, '', 0 FROM generate_series(0, 19) a");
	ex(c, "INSERT INTO agg_nodes (app_id, parent, method, depth) SELECT n.app_id, n.node,"
	      " 'com.example.Class' || m || '.method' || m, 1 FROM agg_nodes n,"
	      " generate_series(1, 199) m WHERE n.parent = 0");
	ex(c, "INSERT INTO trace_agg (trace_id, bucket, nodes, folded, total_ns) SELECT t.trace_id,"
	      " b.bucket, 10, 0, 10000 FROM traces t JOIN agg_buckets b ON b.app_id = t.app_id AND"
	      " b.app_version = t.app_version AND b.model = t.model AND b.anomaly_kind ="
	      " t.anomaly_kind AND b.day = t.received_at / 86400");
	/* Every even trace has CPU data (3/4 of each path's time on the
	 * CPU), the others none (NULL), as tests/bench/agg_fill.h's. */
	ex(c, "INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns,"
	      " cpu_self_ns, cpu_incl_ns) SELECT a.trace_id, n.node, a.bucket, 1, 1000, 1000,"
	      " CASE WHEN t.seq % 2 = 0 THEN 750 END, CASE WHEN t.seq % 2 = 0 THEN 750 END"
	      " FROM trace_agg a JOIN traces t"
	      " USING (trace_id) JOIN agg_nodes n ON n.app_id = t.app_id AND (n.parent = 0 OR"
	      " (n.depth = 1 AND (n.node + t.seq) % 22 = 0))");
	/* The per-node rollup (migration 14, CPU sums since 18), as the index
	 * lane adds a batch's paths to it. */
	ex(c, "INSERT INTO agg_node_sums (node, traces, calls, self_ns, incl_ns, cpu_traces,"
	      " cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns)"
	      " SELECT node, count(*), sum(calls), sum(self_ns), sum(incl_ns), count(cpu_self_ns),"
	      " coalesce(sum(cpu_self_ns), 0), coalesce(sum(cpu_incl_ns), 0),"
	      " coalesce(sum(self_ns - cpu_self_ns), 0), coalesce(sum(incl_ns - cpu_incl_ns), 0)"
	      " FROM trace_paths GROUP BY node ORDER BY node");
	/* The per-day rollup likewise (migration 16). */
	ex(c, "INSERT INTO agg_day_sums (node, day, traces, calls, self_ns, incl_ns, cpu_traces,"
	      " cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns)"
	      " SELECT s.node, b.day, sum(s.traces), sum(s.calls), sum(s.self_ns), sum(s.incl_ns),"
	      " sum(s.cpu_traces), sum(s.cpu_self_ns), sum(s.cpu_incl_ns), sum(s.off_self_ns),"
	      " sum(s.off_incl_ns) FROM agg_sums s JOIN agg_buckets b ON b.bucket = s.bucket"
	      " GROUP BY s.node, b.day ORDER BY s.node, b.day");
	/* RVS_BENCH_SQL: statements (';'-separated, each run alone, so VACUUM
	 * may be one) after the fill: an index tried without a migration. */
	if (getenv("RVS_BENCH_SQL")) {
		char *sql = strdup(getenv("RVS_BENCH_SQL")), *save = NULL;
		for (char *one = sql ? strtok_r(sql, ";", &save) : NULL; one;
		     one = strtok_r(NULL, ";", &save))
			if (one[strspn(one, " \t\n")])
				ex(c, one);
		free(sql);
	}
	ex(c, "ANALYZE");
	fprintf(stderr, "fill %.1f s\n", (now_ms() - t0) / 1e3);
	ex(c, "SELECT (SELECT count(*) FROM trace_paths), (SELECT count(*) FROM agg_sums)");
	/* RVS_BENCH_EXPLAIN=MS: the plan (EXPLAIN ANALYZE, buffers) of every
	 * statement of the store's sessions slower than MS ms, as a warning on
	 * stderr (auto_explain, PostgreSQL's own module). */
	if (getenv("RVS_BENCH_EXPLAIN")) {
		char sql[512];
		long ms = strtol(getenv("RVS_BENCH_EXPLAIN"), NULL, 10);
		ex(c, "DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET session_preload_libraries"
		      " = ''auto_explain''', current_database()); END$$");
		snprintf(
			sql, sizeof sql,
			"DO $$BEGIN EXECUTE format('ALTER DATABASE %%I SET"
			" auto_explain.log_min_duration = %ld', current_database());"
			" EXECUTE format('ALTER DATABASE %%I SET auto_explain.log_analyze = on',"
			" current_database());"
			" EXECUTE format('ALTER DATABASE %%I SET auto_explain.log_buffers = on',"
			" current_database());"
			" EXECUTE format('ALTER DATABASE %%I SET auto_explain.log_level = warning',"
			" current_database()); END$$",
			ms);
		ex(c, sql);
	}
	PQfinish(c);
	if (rvs_store_acquire(cfg.database, &o, &held)) /* held, as the server holds it */
		return 1;
	printf("| request | status | n | p50 ms | p99 ms |\n|---|---|---|---|---|\n");
	measure("/api/v1/aggregate", "/api/v1/aggregate", "", 20);
	measure("/api/v1/aggregate?app=", "/api/v1/aggregate", "app=com.example.app3", 20);
	measure("/api/v1/aggregate?app=&method=", "/api/v1/aggregate",
		"app=com.example.app3&method=com.example.Class13.method131", 20);
	measure("/api/v1/aggregate/diff (versions)", "/api/v1/aggregate/diff",
		"app=com.example.app3&a.version=1.3.0&b.version=1.4.0", 20);
	measure("/api/v1/traces?sort=severity", "/api/v1/traces", "sort=severity", 20);
	measure("/api/v1/traces?sort=severity&cursor= (mid-list)", "/api/v1/traces",
		"sort=severity&cursor=2:50000", 20);
	measure("/api/v1/traces?sort=duration", "/api/v1/traces", "sort=duration", 20);
	measure("/api/v1/traces?sort=age", "/api/v1/traces", "sort=age", 20);
	measure("/api/v1/traces?sort=severity&app=&version=", "/api/v1/traces",
		"sort=severity&app=com.example.app3&version=1.3.0", 20);
	measure("/api/v1/traces?sort=self&method=", "/api/v1/traces",
		"sort=self&method=com.example.Class13.method131", 20);
	measure("/api/v1/traces?issue=&sort=severity", "/api/v1/traces",
		"sort=severity&issue=0000000000000000", 20);
	measure("/api/v1/issues", "/api/v1/issues", "", 20);
	measure("/api/v1/search?chain=a > * > b", "/api/v1/search",
		"chain=main+%3E+*+%3E+com.example.X499", 20);
	measure("/api/v1/search?caller=&callee=", "/api/v1/search",
		"caller=com.example.Loop.run&callee=com.example.X7", 20);
	measure("/api/v1/search?chain=(one method)", "/api/v1/search",
		"chain=com.example.Class13.method131", 20);
	measure("/api/v1/search?contains=", "/api/v1/search", "contains=method1999", 20);
	/* The other pages bench_web measures on sqlite, so that both backends
	 * have the same rows (a trace, a method, versions and models the fill
	 * has). */
	measure("/api/v1/traces?app=&version=", "/api/v1/traces",
		"app=com.example.app3&version=1.3.0", 20);
	measure("/api/v1/traces/{id}", "/api/v1/traces/t-00000000000000000000000000000007", "", 20);
	measure("/api/v1/methods/{name}", "/api/v1/methods/com.example.Class13.method131", "", 20);
	measure("/api/v1/signatures", "/api/v1/signatures", "", 20);
	measure("/api/v1/fleet", "/api/v1/fleet", "", 20);
	measure("/api/v1/fleet/jank", "/api/v1/fleet/jank", "", 20);
	measure("/api/v1/aggregate/diff (since)", "/api/v1/aggregate/diff",
		"app=com.example.app3&a.until=1795300001&b.since=1795300001", 20);
	measure("/api/v1/trend (method of one app)", "/api/v1/trend",
		"method=com.example.Class13.method131&app=com.example.app3", 20);
	measure("/api/v1/trend (a method in all 5,000 traces of one app)", "/api/v1/trend",
		"method=com.example.Hot.run&app=com.example.app3", 20);
	measure("/api/v1/regressions?app=&a=&b=", "/api/v1/regressions",
		"app=com.example.app3&a=1.2.0&b=1.3.0", 20);
	measure("/api/v1/regressions?app=&model=", "/api/v1/regressions",
		"app=com.example.app3&model=model-3", 20);
	measure("/api/v1/alerts (regressions)", "/api/v1/alerts", "", 20);
	/* The heatmap's three clicks on app3 (5,000 traces over the week):
	 * the heatmap (by day, and the fleet's 100,000 by hour), a full day's
	 * cell of [50, 100) ms, its diff against the rest of the range, and
	 * where one of its frames is heaviest. */
	{
		int64_t to = (int64_t)time(NULL) + 1, from = to - 600000;
		int64_t day = (to / 86400 - 2) * 86400;
		char hq[256], cq[256], dq[512], nq[320];
		PGresult *r;
		c = PQconnectdb(cfg.database);
		r = PQexec(c, "SELECT min(node) FROM agg_nodes WHERE app_id = 'com.example.app3'"
			      " AND depth = 1");
		snprintf(hq, sizeof hq, "app=com.example.app3&from=%lld&to=%lld", (long long)from,
			 (long long)to);
		snprintf(cq, sizeof cq,
			 "app=com.example.app3&since=%lld&until=%lld&dur_min=50000000"
			 "&dur_max=100000000",
			 (long long)day, (long long)(day + 86400));
		snprintf(dq, sizeof dq,
			 "app=com.example.app3&a.since=%lld&a.until=%lld&a.dur_min=50000000"
			 "&a.dur_max=100000000&b.since=%lld&b.until=%lld&b.except_since=%lld"
			 "&b.except_until=%lld&b.except_dur_min=50000000"
			 "&b.except_dur_max=100000000",
			 (long long)day, (long long)(day + 86400), (long long)from, (long long)to,
			 (long long)day, (long long)(day + 86400));
		snprintf(nq, sizeof nq, "%s&node=%s", cq,
			 PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "1");
		PQclear(r);
		PQfinish(c);
		measure("/api/v1/heatmap?app= (7 days)", "/api/v1/heatmap", hq, 20);
		snprintf(hq, sizeof hq, "from=%lld&to=%lld&bucket=hour", (long long)from,
			 (long long)to);
		measure("/api/v1/heatmap (all apps, by hour)", "/api/v1/heatmap", hq, 20);
		measure("/api/v1/aggregate (a cell)", "/api/v1/aggregate", cq, 20);
		measure("/api/v1/aggregate/diff (cell, rest)", "/api/v1/aggregate/diff", dq, 20);
		measure("/api/v1/aggregate/heaviest (a cell's frame)", "/api/v1/aggregate/heaviest",
			nq, 20);
	}
	measure("(control) /api/v1/traces", "/api/v1/traces", "", 20);
	rvs_store_release(held);
	return 0;
}
