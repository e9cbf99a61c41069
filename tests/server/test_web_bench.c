/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_web_bench.c — `make bench`: latency of the web UI's pages, side by
 * side with the JSON API documents they render, with N indexed traces
 * (default 100,000; argv[1] overrides; argv[2]: only the rows whose label
 * contains one of its '|'-separated parts) written straight into a fresh
 * server's database (synthetic rows shaped like decode.c's: 8 methods and
 * 3 chains per trace, 2,000 method names, 500 signatures; agg_fill.h's
 * call-path aggregates).  The real binary
 * serves them over TLS; one keep-alive libcurl handle per page measures
 * REPS sequential requests after a warm-up (fewer, at least MIN_REPS, once a
 * row has taken ROW_SECONDS) and reports p50 / p99 (nearest rank).
 * Not a test: it asserts nothing and prints a table for server/BENCHMARKS.md.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sqlite3.h>

#include "agg_fill.h"
#include "test_web_server.h"

#define REPS	    200
#define MIN_REPS    20
#define ROW_SECONDS 10.0

static struct web_server g_srv;
static char g_cookie[128];
static long g_n = 100000;

/* The attributes fill gives trace i (agg_fill.h's callback). */
static void trace_attrs(long i, void *ctx, struct agg_fill_trace *t)
{
	(void)ctx;
	snprintf(t->id, sizeof t->id, "t-%032lx", (unsigned long)i + 1);
	snprintf(t->app, sizeof t->app, "com.example.app%ld", i % 20);
	snprintf(t->version, sizeof t->version, "1.%ld.0", i % 7);
	snprintf(t->model, sizeof t->model, "model-%ld", i % 50);
	t->kind = 1;
	t->received_at = 1795000000 + i * 6;
}

/* Synthetic index rows for n traces in one transaction. */
static int fill(const char *data)
{
	long n = g_n;
	char path[256], id[40], m[64], sig[17], chain[256];
	sqlite3 *db;
	sqlite3_stmt *up, *tr, *me, *ch;
	int rc = 0;

	snprintf(path, sizeof path, "%s/rearview.db", data);
	fprintf(stderr, "filling %ld traces...\n", n);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	sqlite3_exec(db, "PRAGMA synchronous=OFF; BEGIN", NULL, NULL, NULL);
	/* The one device every upload is of (the fleet page lists it). */
	sqlite3_exec(db,
		     "INSERT INTO devices (device_id, token_hash, model, os_build, arch,"
		     " enrolled_at) VALUES ('d-bench', randomblob(32), 'model-0', 'os-1',"
		     " 'arm64', 1795000000);"
		     "WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM k"
		     " WHERE x < 499) INSERT INTO devices (device_id, token_hash, model,"
		     " os_build, arch, enrolled_at) SELECT 'j-' || x, randomblob(32), 'model-1',"
		     " 'os-1', 'arm64', 1795000000 FROM k",
		     NULL, NULL, NULL);
	/* Frame counts (POST /v1/jank) for the fleet's jank page: 500 devices
	 * of their own (they upload nothing), a day of each of the last 8 UTC
	 * days for the 20 traced apps and 5 never traced, one version each
	 * (100,000 rows). */
	sqlite3_exec(db,
		     "WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM k"
		     " WHERE x < 99999) INSERT INTO jank_counts (device_id, app_id, app_version,"
		     " day, frames, late, received_at) SELECT 'j-' || (x / 200), CASE WHEN"
		     " x % 25 < 20 THEN 'com.example.app' || (x % 25) ELSE"
		     " 'com.example.untraced' || (x % 25 - 20) END, '1.' || ((x / 200 + x % 25)"
		     " % 7) || '.0', unixepoch() / 86400 - (x / 25) % 8, 3600 + x % 500,"
		     " (x * 13) % 97, unixepoch() FROM k",
		     NULL, NULL, NULL);
	sqlite3_prepare_v2(
		db,
		"INSERT INTO uploads (trace_id, device_id, upload_id, received_at, app_id,"
		" app_version, model, os_build, anomaly_kind, severity, state)"
		" VALUES (?1, 'd-bench', randomblob(16), ?2, ?3, ?4, ?5, 'os-1', 1, ?6,"
		" 'decoded')",
		-1, &up, NULL);
	sqlite3_prepare_v2(
		db,
		"INSERT INTO traces (trace_id, app_id, app_version, model, os_build,"
		" anomaly_kind, severity, captured_at_ns, received_at, duration_ns, nmethods,"
		" dropped, anomaly_signature, decoded_at, issue, device_id) VALUES (?1, ?3, ?4, ?5,"
		" 'os-1', 1, ?6, ?2 * 1000000000, ?2, ?8, 8, 0, ?7, ?2, ?7, 'd-bench')",
		-1, &tr, NULL);
	sqlite3_prepare_v2(db,
			   "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns,"
			   " self_rank) VALUES (?, ?, ?, ?, ?, ?)",
			   -1, &me, NULL);
	sqlite3_prepare_v2(
		db,
		"INSERT INTO trace_chains (trace_id, kind, rank, signature, chain, depth,"
		" self_ns, incl_ns) VALUES (?, 'top', ?, ?, ?, 3, ?, ?)",
		-1, &ch, NULL);
	for (long i = 0; i < n && !rc; i++) {
		char app[32], ver[16], model[16];
		snprintf(id, sizeof id, "t-%032lx", (unsigned long)i + 1);
		snprintf(app, sizeof app, "com.example.app%ld", i % 20);
		snprintf(ver, sizeof ver, "1.%ld.0", i % 7);
		snprintf(model, sizeof model, "model-%ld", i % 50);
		snprintf(sig, sizeof sig, "%016lx", (unsigned long)(i % 500) * 2654435761u);
		sqlite3_bind_text(up, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(up, 2, 1795000000 + i * 6);
		sqlite3_bind_text(up, 3, app, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(up, 4, ver, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(up, 5, model, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(up, 6, (int)(i % 100));
		rc |= sqlite3_step(up) != SQLITE_DONE;
		sqlite3_reset(up);
		sqlite3_bind_text(tr, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(tr, 2, 1795000000 + i * 6);
		sqlite3_bind_text(tr, 3, app, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(tr, 4, ver, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(tr, 5, model, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(tr, 6, (int)(i % 100));
		sqlite3_bind_text(tr, 7, sig, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(tr, 8, 1000000 + (i * 7919) % 100000 * 1000);
		rc |= sqlite3_step(tr) != SQLITE_DONE;
		sqlite3_reset(tr);
		for (int k = 0; k < 8; k++) {
			snprintf(m, sizeof m, "com.example.Class%ld.method%ld",
				 (i * 7 + k * 131) % 2000 / 10, (i * 7 + k * 131) % 2000);
			sqlite3_bind_text(me, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(me, 2, m, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int(me, 3, 1 + k);
			sqlite3_bind_int64(me, 4, 100000 * (8 - k) + i % 1000);
			sqlite3_bind_int64(me, 5, 200000 * (8 - k) + i % 1000);
			sqlite3_bind_int(me, 6, k + 1);
			rc |= sqlite3_step(me) != SQLITE_DONE;
			sqlite3_reset(me);
		}
		for (int k = 0; k < 3; k++) {
			snprintf(sig, sizeof sig, "%016lx",
				 (unsigned long)((i + k) % 500) * 2654435761u);
			snprintf(chain, sizeof chain, "main;com.example.Loop.run;com.example.X%ld;",
				 (i + k) % 500);
			sqlite3_bind_text(ch, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int(ch, 2, k + 1);
			sqlite3_bind_text(ch, 3, sig, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(ch, 4, chain, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(ch, 5, 300000 - k);
			sqlite3_bind_int64(ch, 6, 400000 - k);
			rc |= sqlite3_step(ch) != SQLITE_DONE;
			sqlite3_reset(ch);
		}
	}
	sqlite3_finalize(up);
	sqlite3_finalize(tr);
	sqlite3_finalize(me);
	sqlite3_finalize(ch);
	rc |= sqlite3_exec(db, "COMMIT; ANALYZE", NULL, NULL, NULL) != SQLITE_OK;
	sqlite3_close(db);
	/* Their call-path aggregates (issue 16 question 2). */
	if (!rc)
		rc = agg_fill(path, n, 20, 2000, trace_attrs, NULL);
	return rc ? -1 : 0;
}

static size_t sink(char *p, size_t sz, size_t n, void *u)
{
	(void)p;
	(void)u;
	return sz * n;
}

static size_t hdr(char *p, size_t sz, size_t n, void *u)
{
	const char *k = "Set-Cookie: rv_session=";
	if (sz * n > strlen(k) + 64 && strncmp(p, k, strlen(k)) == 0)
		snprintf(g_cookie, sizeof g_cookie, "rv_session=%.64s", p + strlen(k));
	return sz * n;
}

static CURL *handle(const char *path, const char *auth_hdr, struct curl_slist **hl)
{
	CURL *c = curl_easy_init();
	char url[512];
	snprintf(url, sizeof url, "https://127.0.0.1:%d%s", g_srv.port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, g_srv.ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hdr);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	*hl = auth_hdr ? curl_slist_append(NULL, auth_hdr) : NULL;
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hl);
	return c;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static const char *g_only; /* argv[2]: measure only labels containing one of its
			    * '|'-separated parts */

/* 1 when label contains one of g_only's parts (or g_only is unset). */
static int wanted(const char *label)
{
	const char *p = g_only;
	if (!p)
		return 1;
	for (;;) {
		size_t n = strcspn(p, "|");
		char part[128];
		snprintf(part, sizeof part, "%.*s", (int)n, p);
		if (n && strstr(label, part))
			return 1;
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

static void measure(const char *label, const char *path, int api)
{
	static double ms[REPS];
	struct curl_slist *hl;
	char auth[200];
	long code = 0;
	double total = 0;
	int n;
	CURL *c;

	if (!wanted(label))
		return;
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", g_srv.api);
	c = handle(path, api ? auth : NULL, &hl);
	if (!api)
		curl_easy_setopt(c, CURLOPT_COOKIE, g_cookie);
	curl_easy_perform(c); /* warm-up, and the TLS handshake */
	for (n = 0; n < REPS && (n < MIN_REPS || total < ROW_SECONDS * 1e3); n++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		curl_easy_perform(c);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ms[n] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		total += ms[n];
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	qsort(ms, n, sizeof ms[0], cmp_d);
	printf("| %-30s | %3ld | %3d | %7.1f | %7.1f |\n", label, code, n, ms[(n + 1) / 2 - 1],
	       ms[(99 * n + 99) / 100 - 1]);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
}

/* The heatmap's three clicks on app3 (5,000 traces over the 7 days):
 * the heatmap (by day; the fleet's 100,000 by hour), a full day's cell of
 * [50, 100) ms and its diff against the rest of the range, where one of
 * its frames is heaviest, and the trace page opened at the anomaly (the
 * synthetic traces have no capture: bench_timeline measures the
 * timeline's own cost). */
static void heatmap_rows(void)
{
	char path[256], q[1024], node[32] = "1";
	sqlite3 *db;
	sqlite3_stmt *st;
	const char *cell = "app=com.example.app3&since=1795046400&until=1795132800"
			   "&dur_min=50000000&dur_max=100000000";

	snprintf(path, sizeof path, "%s/rearview.db", g_srv.data);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db,
			       "SELECT min(node) FROM agg_nodes WHERE app_id = 'com.example.app3'"
			       " AND parent <> 0",
			       -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			snprintf(node, sizeof node, "%s", (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	measure("/heatmap?app= (7 days)",
		"/heatmap?app=com.example.app3&from=1795000000&to=1795600000", 0);
	measure("/api/v1/heatmap?app= (7 days)",
		"/api/v1/heatmap?app=com.example.app3&from=1795000000&to=1795600000", 1);
	measure("/api/v1/heatmap (all apps, by hour)",
		"/api/v1/heatmap?from=1795000000&to=1795600000&bucket=hour", 1);
	snprintf(q, sizeof q, "/aggregate?%s&range_since=1795000000&range_until=1795600000", cell);
	measure("/aggregate (a cell)", q, 0);
	snprintf(q, sizeof q, "/api/v1/aggregate?%s", cell);
	measure("/api/v1/aggregate (a cell)", q, 1);
	measure("/aggregate/diff (cell, rest)",
		"/aggregate/diff?app=com.example.app3&a.since=1795046400&a.until=1795132800"
		"&a.dur_min=50000000&a.dur_max=100000000&b.since=1795000000&b.until=1795600000"
		"&b.except_since=1795046400&b.except_until=1795132800"
		"&b.except_dur_min=50000000&b.except_dur_max=100000000",
		0);
	snprintf(q, sizeof q, "/heaviest?%s&node=%s&frame=x", cell, node);
	measure("/heaviest (a cell's frame)", q, 0);
	snprintf(q, sizeof q, "/api/v1/aggregate/heaviest?%s&node=%s", cell, node);
	measure("/api/v1/aggregate/heaviest", q, 1);
	measure("/traces/{id}?focus=anomaly&method=",
		"/traces/t-00000000000000000000000000000007?focus=anomaly"
		"&method=com.example.Class13.method131",
		0);
}

int main(int argc, char **argv)
{
	char form[256];
	struct curl_slist *hl;
	CURL *c;

	if (argc > 1)
		g_n = strtol(argv[1], NULL, 10);
	if (argc > 2)
		g_only = argv[2];
	if (web_server_start(&g_srv, NULL, fill))
		return 1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* Sign in (the login form's double-submit token is any 64 hex here). */
	c = handle("/login",
		   "Cookie: rv_login="
		   "00000000000000000000000000000000000000000000000000000000000000aa",
		   &hl);
	snprintf(form, sizeof form,
		 "csrf=00000000000000000000000000000000000000000000000000000000000000aa"
		 "&user=admin&password=%s",
		 g_srv.password);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
	curl_easy_perform(c);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	if (!g_cookie[0]) {
		fprintf(stderr, "sign-in failed\n");
		web_server_stop(&g_srv);
		return 1;
	}
	printf("%ld traces, sequential requests on one keep-alive TLS connection per row\n\n", g_n);
	printf("| page | status | requests | p50 ms | p99 ms |\n|---|---|---|---|---|\n");
	measure("/traces", "/traces", 0);
	measure("/api/v1/traces", "/api/v1/traces", 1);
	measure("/traces?app=&version=", "/traces?app=com.example.app3&version=1.3.0", 0);
	measure("/api/v1/traces?app=&version=", "/api/v1/traces?app=com.example.app3&version=1.3.0",
		1);
	measure("/traces/{id}", "/traces/t-00000000000000000000000000000007", 0);
	measure("/api/v1/traces/{id}", "/api/v1/traces/t-00000000000000000000000000000007", 1);
	measure("/methods/{name}", "/methods/com.example.Class13.method131", 0);
	measure("/api/v1/methods/{name}", "/api/v1/methods/com.example.Class13.method131", 1);
	measure("/signatures", "/signatures", 0);
	measure("/api/v1/signatures", "/api/v1/signatures", 1);
	measure("/fleet", "/fleet", 0);
	measure("/api/v1/fleet", "/api/v1/fleet", 1);
	measure("/api/v1/fleet/jank", "/api/v1/fleet/jank", 1);
	/* Issue 16 question 2: the aggregate views (≤ 1 s). */
	measure("/aggregate", "/aggregate", 0);
	measure("/api/v1/aggregate", "/api/v1/aggregate", 1);
	measure("/aggregate?app=", "/aggregate?app=com.example.app3", 0);
	measure("/api/v1/aggregate?app=", "/api/v1/aggregate?app=com.example.app3", 1);
	measure("/aggregate?app=&method=",
		"/aggregate?app=com.example.app3&method=com.example.Class13.method131", 0);
	measure("/api/v1/aggregate?app=&method=",
		"/api/v1/aggregate?app=com.example.app3&method=com.example.Class13.method131", 1);
	measure("/aggregate/diff (versions)",
		"/aggregate/diff?app=com.example.app3&a.version=1.3.0&b.version=1.4.0", 0);
	measure("/api/v1/aggregate/diff (versions)",
		"/api/v1/aggregate/diff?app=com.example.app3&a.version=1.3.0&b.version=1.4.0", 1);
	measure("/aggregate/diff (since)",
		"/aggregate/diff?app=com.example.app3&a.until=1795300001&b.since=1795300001", 0);
	/* Worst traces, issues and chain search (search.c). */
	measure("/traces?sort=severity", "/traces?sort=severity", 0);
	measure("/api/v1/traces?sort=severity", "/api/v1/traces?sort=severity", 1);
	measure("/api/v1/traces?sort=severity&cursor= (mid-list)",
		"/api/v1/traces?sort=severity&cursor=50:50000", 1);
	measure("/api/v1/traces?sort=duration", "/api/v1/traces?sort=duration", 1);
	measure("/api/v1/traces?sort=age", "/api/v1/traces?sort=age", 1);
	measure("/api/v1/traces?sort=severity&app=&version=",
		"/api/v1/traces?sort=severity&app=com.example.app3&version=1.3.0", 1);
	measure("/api/v1/traces?sort=self&method=",
		"/api/v1/traces?sort=self&method=com.example.Class13.method131", 1);
	measure("/api/v1/traces?issue=&sort=severity",
		"/api/v1/traces?sort=severity&issue=0000000000000000", 1);
	measure("/issues", "/issues", 0);
	measure("/api/v1/issues", "/api/v1/issues", 1);
	/* A method's trend: its traces with their selection weights. */
	measure("/api/v1/trend (method of one app)",
		"/api/v1/trend?method=com.example.Class13.method131&app=com.example.app3", 1);
	measure("/search?chain=a > * > b", "/search?chain=main+%3E+*+%3E+com.example.X499", 0);
	measure("/api/v1/search?chain=a > * > b",
		"/api/v1/search?chain=main+%3E+*+%3E+com.example.X499", 1);
	measure("/api/v1/search?caller=&callee=",
		"/api/v1/search?caller=com.example.Loop.run&callee=com.example.X7", 1);
	measure("/api/v1/search?chain=(one method)",
		"/api/v1/search?chain=com.example.Class13.method131", 1);
	measure("/api/v1/search?contains=", "/api/v1/search?contains=method1999", 1);
	measure("/api/v1/search?chain= (hostile: 7 stars, no match)",
		"/api/v1/search?chain=main+%3E+*+%3E+main+%3E+*+%3E+main+%3E+*+%3E+main+%3E+*+%3E"
		"+main+%3E+*+%3E+main+%3E+*+%3E+main+%3E+*+%3E+nothing",
		1);
	/* Issue 16 question 1: what got slower (≈ 714 traces a side; a model
	 * against the others: 100 against ≈ 4,900).  The synthetic traces are
	 * received over the week ending about now: there is no week before to
	 * compare with (week=1 answers 404). */
	measure("/regressions?app=&a=&b=", "/regressions?app=com.example.app3&a=1.2.0&b=1.3.0", 0);
	measure("/api/v1/regressions?app=&a=&b=",
		"/api/v1/regressions?app=com.example.app3&a=1.2.0&b=1.3.0", 1);
	measure("/api/v1/regressions?app=&model=",
		"/api/v1/regressions?app=com.example.app3&model=model-3", 1);
	measure("/api/v1/alerts (regressions)", "/api/v1/alerts", 1);
	heatmap_rows();
	curl_global_cleanup();
	return web_server_stop(&g_srv) ? 1 : 0;
}
