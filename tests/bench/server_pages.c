/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_pages.c — latency of the JSON API pages at 100k indexed traces:
 * a server data directory filled directly through sqlite (N traces with
 * 10 method rows each out of 2,000 names plus one method every trace has,
 * an anomaly chain each, 500 signatures, 20 models, 8 app versions, spread
 * over 12 days; their call-path aggregates: 20 to 60 paths each out of 200
 * per app), then the real server answering sequential requests on one
 * kept-alive HTTPS connection.  Prints p50/p99 per request kind.
 *   server_pages [traces] [requests_per_kind]
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <sqlite3.h>

#include "agg_fill.h"
#include "server_common.h"

#define METHODS	   2000
#define SIGNATURES 500
#define SPREAD_S   (12 * 86400)

static int n_traces;

static int exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "fill: %s\n", err ? err : "?");
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static void trace_id(int i, char out[40])
{
	snprintf(out, 40, "t-%032x", (unsigned)i);
}

static void signature(int i, char out[17])
{
	/* Skewed: low signature numbers are much more common, as top issues are. */
	unsigned k = (unsigned)((uint64_t)i * 2654435761u % 1000003u);
	snprintf(out, 17, "%016x", (k * k / 1000003u) % SIGNATURES);
}

static int fill(const char *path, int n, int64_t now)
{
	sqlite3 *db;
	sqlite3_stmt *up, *tr, *me, *ch;
	int rc = -1;

	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	sqlite3_busy_timeout(db, 10000);
	/* A throwaway fill: no fsync, a big cache for the index builds. */
	if (exec(db, "PRAGMA synchronous=OFF; PRAGMA cache_size=-262144") || exec(db, "BEGIN") ||
	    exec(db, "INSERT INTO devices VALUES ('d-bench', zeroblob(32), 'b', 'm', 'o', 'a', 0)"))
		goto close_db;
	sqlite3_prepare_v2(
		db,
		"INSERT INTO uploads (trace_id, device_id, upload_id, received_at,"
		" app_id, app_version, model, os_build, anomaly_kind, severity,"
		" payload_kind, compression, state)"
		" VALUES (?1, 'd-bench', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, 1, 'decoded')",
		-1, &up, NULL);
	sqlite3_prepare_v2(db,
			   "INSERT INTO traces (trace_id, app_id, app_version, model, os_build,"
			   " anomaly_kind, severity, captured_at_ns, received_at, anomaly_name,"
			   " duration_ns, nmethods, dropped, anomaly_signature, decoded_at,"
			   " signature) VALUES (?1, ?4, ?5, ?6, ?7, ?8, ?9, ?3 * 1000000000, ?3,"
			   " 'jank', 250000000, 11, 0, ?10, ?3, ?10)",
			   -1, &tr, NULL);
	sqlite3_prepare_v2(db,
			   "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns,"
			   " self_rank) VALUES (?, ?, ?, ?, ?, ?)",
			   -1, &me, NULL);
	sqlite3_prepare_v2(db,
			   "INSERT INTO trace_chains VALUES (?, 'anomaly', 1, ?, ?, 3, NULL, NULL)",
			   -1, &ch, NULL);
	for (int i = 0; i < n; i++) {
		char id[40], app[32], ver[16], model[16], os[16], sig[17], chain[128], m[64];
		int64_t at = now - SPREAD_S + (int64_t)i * SPREAD_S / n;
		uint8_t uid[16] = {0};

		trace_id(i, id);
		signature(i, sig);
		memcpy(uid, &i, sizeof i);
		snprintf(app, sizeof app, "com.example.app%d", i % 5);
		snprintf(ver, sizeof ver, "1.%d", i % 8);
		snprintf(model, sizeof model, "m%d", i % 20);
		snprintf(os, sizeof os, "b%d", i % 10);
		snprintf(chain, sizeof chain, "main;com.example.Handler%s;com.example.Slow%s;",
			 sig + 12, sig + 12);
		/* The chain first: the traces insert trigger picks its text up. */
		sqlite3_bind_text(ch, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ch, 2, sig, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ch, 3, chain, -1, SQLITE_TRANSIENT);
		/* uploads and traces share parameters ?1 and ?3..?9. */
		for (int k = 0; k < 2; k++) {
			sqlite3_stmt *st = k ? tr : up;
			sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 3, at);
			sqlite3_bind_text(st, 4, app, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 5, ver, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 6, model, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 7, os, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int(st, 8, i % 4);
			sqlite3_bind_int(st, 9, i % 101);
		}
		sqlite3_bind_blob(up, 2, uid, 16, SQLITE_TRANSIENT);
		sqlite3_bind_text(tr, 10, sig, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(ch) != SQLITE_DONE || sqlite3_step(up) != SQLITE_DONE ||
		    sqlite3_step(tr) != SQLITE_DONE) {
			fprintf(stderr, "fill: %s\n", sqlite3_errmsg(db));
			goto finalize;
		}
		sqlite3_reset(ch);
		sqlite3_reset(up);
		sqlite3_reset(tr);
		for (int j = 0; j < 10; j++) {
			if (j < 9)
				snprintf(m, sizeof m, "com.example.M%d",
					 (i * 13 + j * 223) % METHODS);
			else
				snprintf(m, sizeof m, "android.os.Looper.loop");
			sqlite3_bind_text(me, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(me, 2, m, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int(me, 3, 1 + j);
			sqlite3_bind_int64(me, 4, 1000 * (int64_t)(1 + (i + j) % 997));
			sqlite3_bind_int64(me, 5, 5000 * (int64_t)(1 + (i + j) % 997));
			sqlite3_bind_int(me, 6, j + 1);
			if (sqlite3_step(me) != SQLITE_DONE) {
				fprintf(stderr, "fill: %s\n", sqlite3_errmsg(db));
				goto finalize;
			}
			sqlite3_reset(me);
		}
	}
	rc = exec(db, "COMMIT") || exec(db, "ANALYZE") ? -1 : 0;
finalize:
	sqlite3_finalize(up);
	sqlite3_finalize(tr);
	sqlite3_finalize(me);
	sqlite3_finalize(ch);
close_db:
	sqlite3_close(db);
	return rc;
}

/* The attributes fill gave trace i (agg_fill.h's callback). */
static void trace_attrs(long i, void *ctx, struct agg_fill_trace *t)
{
	int64_t now = *(const int64_t *)ctx;
	trace_id((int)i, t->id);
	snprintf(t->app, sizeof t->app, "com.example.app%ld", i % 5);
	snprintf(t->version, sizeof t->version, "1.%ld", i % 8);
	snprintf(t->model, sizeof t->model, "m%ld", i % 20);
	t->kind = (int)(i % 4);
	t->received_at = now - SPREAD_S + (int64_t)i * SPREAD_S / n_traces;
}

static size_t count_body(char *p, size_t sz, size_t n, void *u)
{
	*(size_t *)u += sz * n;
	return sz * n;
}

enum arg { ARG_NONE, ARG_TRACE_ID, ARG_METHOD_NO };

/* reqs sequential GETs of path, with a varying trace id or method number
 * appended per request when arg says so. */
static int measure(const struct rvsb *b, CURL *h, const char *label, const char *path, enum arg arg,
		   int n, int reqs)
{
	double *lat = calloc((size_t)reqs, sizeof *lat);
	size_t bytes = 0;
	int ok = 0;
	for (int r = 0; r <= reqs; r++) {
		char full[600], id[40];
		int k = (r * 7919 + 17) % n;
		long code = 0;
		double t0;
		trace_id(k, id);
		if (arg == ARG_TRACE_ID)
			snprintf(full, sizeof full, "%s%s", path, id);
		else if (arg == ARG_METHOD_NO)
			snprintf(full, sizeof full, "%s%d", path, k % METHODS);
		else
			snprintf(full, sizeof full, "%s", path);
		rvsb_curl(b, h, full);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &bytes);
		t0 = rvsb_now();
		if (curl_easy_perform(h) != CURLE_OK)
			continue;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		if (code != 200) {
			fprintf(stderr, "%s: HTTP %ld\n", full, code);
			continue;
		}
		/* r == 0 warms the connection: the handshake is not a page cost. */
		if (r)
			lat[ok++] = (rvsb_now() - t0) * 1000;
	}
	printf("%-40s %4d ok  p50 %7.2f ms  p99 %7.2f ms  %7zu B/resp\n", label, ok,
	       rvsb_pct(lat, (size_t)ok, 50), rvsb_pct(lat, (size_t)ok, 99),
	       bytes / (size_t)(ok + 1));
	free(lat);
	return ok == reqs ? 0 : -1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 100000;
	int reqs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 100;
	int64_t now = (int64_t)time(NULL);
	struct rvsb b;
	struct curl_slist *hdr;
	char auth[200], sig[17], since[128], sigpath[128], aggsince[128];
	double t0;
	CURL *h;
	int bad = 0;

	if (n < 1 || reqs < 1)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rvsb_init(&b))
		return 1;
	t0 = rvsb_now();
	if (fill(b.db, n, now)) {
		rvsb_stop(&b);
		return 1;
	}
	printf("filled %d traces in %.1f s\n", n, rvsb_now() - t0);
	t0 = rvsb_now();
	n_traces = n;
	if (agg_fill(b.db, n, 5, METHODS, trace_attrs, &now)) {
		rvsb_stop(&b);
		return 1;
	}
	printf("filled their call-path aggregates in %.1f s\n", rvsb_now() - t0);
	if (rvsb_start(&b, NULL)) {
		rvsb_stop(&b);
		return 1;
	}
	h = curl_easy_init();
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", b.api_token);
	hdr = curl_slist_append(NULL, auth);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	signature(12345, sig);
	snprintf(since, sizeof since, "/api/v1/traces?since=%" PRId64 "&until=%" PRId64,
		 now - 6 * 86400, now - 5 * 86400);
	snprintf(sigpath, sizeof sigpath, "/api/v1/traces?signature=%s", sig);
	snprintf(aggsince, sizeof aggsince, "/api/v1/aggregate?app=com.example.app3&since=%" PRId64,
		 now - 6 * 86400 + 1);

	{
		const struct {
			const char *label, *path;
			enum arg arg;
		} kinds[] = {
			{"traces (newest 50)", "/api/v1/traces", ARG_NONE},
			{"traces?app=", "/api/v1/traces?app=com.example.app3", ARG_NONE},
			{"traces?version=", "/api/v1/traces?version=1.3", ARG_NONE},
			{"traces?model=", "/api/v1/traces?model=m7", ARG_NONE},
			{"traces?os_build=", "/api/v1/traces?os_build=b4", ARG_NONE},
			{"traces?kind=", "/api/v1/traces?kind=2", ARG_NONE},
			{"traces?min_severity=99", "/api/v1/traces?min_severity=99", ARG_NONE},
			{"traces?since=&until= (one day)", since, ARG_NONE},
			{"traces?signature=", sigpath, ARG_NONE},
			{"traces?method= (1 of 2000)", "/api/v1/traces?method=com.example.M42",
			 ARG_NONE},
			{"traces?app=&model=&min_severity= (none)",
			 "/api/v1/traces?model=m7&min_severity=100&app=com.example.app1", ARG_NONE},
			{"traces/{id}", "/api/v1/traces/", ARG_TRACE_ID},
			{"methods/{name} (~500 traces)", "/api/v1/methods/com.example.M",
			 ARG_METHOD_NO},
			{"methods/{name} (in every trace)",
			 "/api/v1/methods/android.os.Looper.loop", ARG_NONE},
			{"signatures (top 50)", "/api/v1/signatures", ARG_NONE},
			/* Issue 16 question 2: the aggregate views (≤ 1 s). */
			{"aggregate (all apps)", "/api/v1/aggregate", ARG_NONE},
			{"aggregate?app=", "/api/v1/aggregate?app=com.example.app3", ARG_NONE},
			{"aggregate?app=&version=",
			 "/api/v1/aggregate?app=com.example.app3&version=1.3", ARG_NONE},
			{"aggregate?app=&since= (traces: 10k newest)", aggsince, ARG_NONE},
			{"aggregate?method= (1 of 2000)",
			 "/api/v1/aggregate?method=com.example.M42", ARG_NONE},
			{"aggregate?method= (in every trace)",
			 "/api/v1/aggregate?app=com.example.app3&method=android.os.Looper.loop",
			 ARG_NONE},
			{"aggregate/diff a.version= b.version=",
			 "/api/v1/aggregate/diff?app=com.example.app3&a.version=1.3&b.version=1.4",
			 ARG_NONE},
			{"aggregate/diff a.model= b.method=",
			 "/api/v1/aggregate/diff?app=com.example.app3&a.model=m3"
			 "&b.method=android.os.Looper.loop",
			 ARG_NONE},
		};
		for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
			bad |= measure(&b, h, kinds[i].label, kinds[i].path, kinds[i].arg, n, reqs);
	}

	curl_easy_cleanup(h);
	curl_slist_free_all(hdr);
	curl_global_cleanup();
	return rvsb_stop(&b) || bad ? 1 : 0;
}
