/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_search.c — worst traces, issues and chain search (server/src/
 * search.c, issue.c) through the JSON API in-process (rvs_api_v1) over a
 * store migrated by the real backend — sqlite, then a private PostgreSQL
 * (pg_harness.h; skipped, visibly, without one; one case compares the two
 * backends' documents) — with five known traces whose chains
 * and signatures are those decode.c would store (the signatures are
 * FNV-1a values computed independently of issue.c):
 *
 *   t1 A/1 d1 sev 3 dur 50 ms cap 1000  main;layout_pass;measure;parse_json;  (S1)
 *   t2 A/1 d2 sev 5 dur 80 ms cap 2000  (unknown caller);main;layout_pass;measure;parse_json;
 *   t3 A/2 d1 sev 1 dur 20 ms cap  500  main;layout_pass;parse_json;  (S2, last week)
 *   t4 B/1 d3 sev 2 dur 100ms cap 3000  main;on_touch;decode_image;  (S3), top chain
 *                                      main;layout_pass;inflate;parse_json;
 *   t5 A/1 d1 sev 3 dur NULL  cap 4000  (unknown caller);(unknown caller);main;…;parse_json;
 *
 * parse_json self time: t4 70 ms, t1 40 ms, t3 10 ms (others none).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "api/api.h"
#include "capbuild.h"
#include "pipeline/decode.h"
#include "base/issue.h"
#include "api/query.h"
#include "http/route.h"
#include "base/config.h"
#include "model/search.h"
#include "store/store.h"

#include "pg_harness.h"
#include "sql_both.h"

#define S1   "7f9773918f37b4da" /* main;layout_pass;measure;parse_json; */
#define S2   "2942e52eef448ba9" /* main;layout_pass;parse_json; */
#define S3   "0ccc0df92c8ab95a" /* main;on_touch;decode_image; */
#define S1U  "a66cc060a3f872c5" /* (unknown caller);main;layout_pass;measure;parse_json; */
#define S1V  "1f97fdba557922e0" /* two unknown callers before it */
#define WEEK 604800

static char g_dir[64];
static struct rvs_config g_cfg;
/* The backend the cases run on (main runs them on both), and the private
 * PostgreSQL server (pg_harness.h). */
static const struct rvs_store_ops *ops = &rvs_store_sqlite;
static struct pgh pg;
static char pg_skip_why[256];

struct tr {
	const char *id, *app, *ver, *dev;
	int sev;
	int64_t dur, cap, recv_off; /* dur < 0: NULL; recv_off from this week's start */
	const char *chain, *sig, *top_chain, *top_sig;
	int64_t pj_self; /* parse_json self ns, 0: no row */
};

static int64_t week_start(void)
{
	return (int64_t)time(NULL) / WEEK * WEEK;
}

static const struct tr TRACES[] = {
	{"t-00000000000000000000000000000001", "A", "1", "d1", 3, 50000000, 1000, 10,
	 "main;layout_pass;measure;parse_json;", S1, NULL, NULL, 40000000},
	{"t-00000000000000000000000000000002", "A", "1", "d2", 5, 80000000, 2000, 20,
	 "(unknown caller);main;layout_pass;measure;parse_json;", S1U, NULL, NULL, 0},
	{"t-00000000000000000000000000000003", "A", "2", "d1", 1, 20000000, 500, 5 - WEEK,
	 "main;layout_pass;parse_json;", S2, NULL, NULL, 10000000},
	{"t-00000000000000000000000000000004", "B", "1", "d3", 2, 100000000, 3000, 30,
	 "main;on_touch;decode_image;", S3, "main;layout_pass;inflate;parse_json;",
	 "00000000000000aa", 70000000},
	{"t-00000000000000000000000000000005", "A", "1", "d1", 3, -1, 4000, 40,
	 "(unknown caller);(unknown caller);main;layout_pass;measure;parse_json;", S1V, NULL, NULL,
	 0},
};
#define NTRACES (sizeof TRACES / sizeof TRACES[0])

static void exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err ? err : "?");
}

/* The five traces, on g_cfg.database (either backend), each with its
 * issue folded from its anomaly chain as decode.c does (issue.h). */
static void fill(void)
{
	const char *db = g_cfg.database;
	const int on_pg = ops == &rvs_store_pg;
	int64_t w = week_start();
	static const char *const devs[][2] = {{"d1", "\\x01"}, {"d2", "\\x02"}, {"d3", "\\x03"}};
	if (on_pg) { /* the weeks the traces land in (partitioned) */
		char ws[24];
		const char *wp[] = {ws};
		snprintf(ws, sizeof ws, "%lld", (long long)(w / WEEK));
		sqlb_exec(db,
			  "SELECT rv_week_partitions(x) FROM generate_series($1::bigint - 4,"
			  " $1::bigint) x",
			  1, wp);
	}
	for (size_t i = 0; i < 3; i++)
		sqlb_exec(db,
			  "INSERT INTO devices (device_id, token_hash, enrolled_at)"
			  " VALUES ($1, $2, 0)",
			  2, devs[i]);
	for (size_t i = 0; i < NTRACES; i++) {
		const struct tr *t = &TRACES[i];
		char upid[40], recv[24], sev[8], cap[24], dur[24], issue[17], pj[24];
		snprintf(upid, sizeof upid, "\\x%032zx", i + 1);
		snprintf(recv, sizeof recv, "%lld", (long long)(w + t->recv_off));
		snprintf(sev, sizeof sev, "%d", t->sev);
		snprintf(cap, sizeof cap, "%lld", (long long)t->cap);
		snprintf(dur, sizeof dur, "%lld", (long long)t->dur);
		snprintf(pj, sizeof pj, "%lld", (long long)t->pj_self);
		assert_int_equal(rvs_issue_fold(t->chain, t->sig, issue), 0);
		{
			const char *up[] = {t->id, t->dev, upid, recv, t->app, t->ver};
			const char *tr[] = {
				t->id,	t->app, t->ver, sev, cap, recv, t->dur >= 0 ? dur : NULL,
				t->sig, t->dev, issue};
			sqlb_exec(
				db,
				"INSERT INTO uploads (trace_id, device_id, upload_id, received_at,"
				" app_id, app_version, state) VALUES ($1, $2, $3, $4, $5, $6,"
				" 'decoded')",
				6, up);
			sqlb_exec(
				db,
				"INSERT INTO traces (trace_id, app_id, app_version, model,"
				" anomaly_kind, severity, captured_at_ns, received_at, duration_ns,"
				" anomaly_signature, signature, decoded_at, device_id, issue)"
				" VALUES ($1, $2, $3, 'm', 1, $4, $5, $6, $7, $8, $8, 0, $9, $10)",
				10, tr);
		}
		for (int k = 0; k < 2; k++) {
			const char *chain = k ? t->top_chain : t->chain;
			const char *ch[] = {t->id, k ? "top" : "anomaly", k ? t->top_sig : t->sig,
					    chain, recv};
			if (!chain)
				continue;
			/* PostgreSQL's rows carry their week (partitioned). */
			sqlb_exec(
				db,
				on_pg ? "INSERT INTO trace_chains (trace_id, kind, rank, signature,"
					" chain, depth, received_at) VALUES ($1, $2, 1, $3, $4, 3, "
					"$5)"
				      : "INSERT INTO trace_chains (trace_id, kind, rank, signature,"
					" chain, depth) VALUES ($1, $2, 1, $3, $4, 3)",
				on_pg ? 5 : 4, ch);
		}
		{
			const char *pjm[] = {t->id, "parse_json", pj, recv};
			const char *mainm[] = {t->id, "main", "1000", recv};
			const char *ins =
				on_pg ? "INSERT INTO trace_methods (trace_id, method, calls,"
					" self_ns, incl_ns, received_at) VALUES ($1, $2, 1,"
					" $3, $3, $4)"
				      : "INSERT INTO trace_methods (trace_id, method,"
					" calls, self_ns, incl_ns) VALUES ($1, $2, 1, $3, $3)";
			if (t->pj_self)
				sqlb_exec(db, ins, on_pg ? 4 : 3, pjm);
			sqlb_exec(db, ins, on_pg ? 4 : 3, mainm);
		}
	}
}

/* A migrated store (ops') with the five traces, in g_cfg. */
static int setup(void **state)
{
	struct rvs_store *s;
	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-search-XXXXXX");
	memset(&g_cfg, 0, sizeof g_cfg);
	if (pgh_store_dir(&pg, ops == &rvs_store_pg, g_dir, g_cfg.database, sizeof g_cfg.database,
			  g_cfg.blob_dir, sizeof g_cfg.blob_dir))
		return -1;
	if (ops->open(g_cfg.database, &s))
		return -1;
	ops->close(s);
	fill();
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* GET path?query through the route table: the parsed body, status in *st. */
static json_t *api(const char *path, const char *query, int *st)
{
	struct rvs_query_resp r;
	json_t *j;
	memset(&r, 0, sizeof r);
	rvs_api_v1(&g_cfg, 0, path, query, NULL, 0, &r);
	*st = r.status;
	j = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
	if (!j)
		fail_msg("%s?%s: not JSON: %.*s", path, query, (int)r.len, r.body ? r.body : "");
	free(r.body);
	return j;
}

/* The last digit of each listed trace id, in order ("t-…5" → '5'), from
 * doc[key][*].trace_id. */
static void ids(json_t *doc, const char *key, char *out)
{
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(doc, key), i, v)
	{
		const char *id = json_string_value(json_object_get(v, "trace_id"));
		out[i] = id ? id[strlen(id) - 1] : '?';
		out[i + 1] = '\0';
	}
	if (!json_array_size(json_object_get(doc, key)))
		out[0] = '\0';
}

static void expect_order(const char *query, const char *want)
{
	char got[16];
	int st;
	json_t *doc = api("/api/v1/traces", query, &st);
	assert_int_equal(st, 200);
	ids(doc, "traces", got);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got %s, want %s", query, got, want);
	json_decref(doc);
}

/* ---- issue folding ---------------------------------------------------------- */

static void test_issue_fold_unknown_caller_prefix_gives_known_chain_signature(void **state)
{
	char out[17];
	assert_int_equal(
		rvs_issue_fold("(unknown caller);main;layout_pass;measure;parse_json;", S1U, out),
		0);
	assert_string_equal(out, S1);
	assert_int_equal(rvs_issue_fold("(unknown caller);(unknown caller);main;layout_pass;"
					"measure;parse_json;",
					S1V, out),
			 0);
	assert_string_equal(out, S1);
	/* Without the prefix, or with nothing else, the signature stays. */
	assert_int_equal(rvs_issue_fold("main;layout_pass;parse_json;", S2, out), 0);
	assert_string_equal(out, S2);
	assert_int_equal(rvs_issue_fold("(unknown caller);", "00000000000000ff", out), 0);
	assert_string_equal(out, "00000000000000ff");
	assert_int_equal(rvs_issue_fold("a;", "not-hex", out), -EINVAL);
}

static void test_issue_migration_backfills_folded_issue(void **state)
{
	sqlite3 *db;
	struct rvs_store *s;
	sqlite3_stmt *st;
	int n = 0;
	/* Take the database back to version 8 (no issue column nor its index,
	 * which 9 makes and 15 remakes with app_id; nor the roles' migration
	 * 10, the fleet counts' 11, the index budget's 12, the alert rules' 13,
	 * the selection weights' 14, the jank counts' 16, the per-day rollup's
	 * 17, the weights' index 18, the heatmap's has_agg of 19, the CPU
	 * columns of 20 or the path CPU columns and triggers of 22, whose
	 * triggers go back to 7's), then let
	 * the store
	 * migrate it again:
	 * the backfill must fold as decode does, and the issues index must
	 * come out as 15 leaves it. */
	assert_int_equal(sqlite3_open(g_cfg.database, &db), SQLITE_OK);
	exec_ok(db,
		"DROP TRIGGER uploads_fleet_ins; DROP TRIGGER uploads_fleet_del;"
		" DROP TRIGGER uploads_fleet_upd; DROP TRIGGER devices_fleet_ins;"
		" DROP TRIGGER devices_fleet_upd; DROP TRIGGER devices_fleet_del;"
		" DROP TABLE fleet_weeks; DROP TABLE fleet_device_days; DROP TABLE fleet_devices;"
		" DROP INDEX uploads_fleet;"
		" DROP TABLE audit_log; DROP TABLE api_tokens;"
		" ALTER TABLE admins DROP COLUMN role; ALTER TABLE admins DROP COLUMN disabled;"
		" DROP INDEX traces_issue; DROP INDEX traces_by_severity;"
		" DROP INDEX traces_by_duration; DROP INDEX traces_by_captured;"
		" ALTER TABLE traces DROP COLUMN issue; ALTER TABLE traces DROP COLUMN device_id;"
		" ALTER TABLE traces DROP COLUMN index_cut;"
		" DROP TABLE alert_rules; DROP TABLE jank_counts;"
		" DROP TRIGGER trace_paths_day_ins; DROP TRIGGER trace_paths_day_del;"
		" DROP TABLE agg_day_sums; DROP INDEX uploads_weight;"
		" DROP TRIGGER trace_paths_ins; DROP TRIGGER trace_paths_del;"
		" ALTER TABLE trace_paths DROP COLUMN cpu_self_ns;"
		" ALTER TABLE trace_paths DROP COLUMN cpu_incl_ns;"
		" ALTER TABLE agg_sums DROP COLUMN cpu_traces;"
		" ALTER TABLE agg_sums DROP COLUMN cpu_self_ns;"
		" ALTER TABLE agg_sums DROP COLUMN cpu_incl_ns;"
		" ALTER TABLE agg_sums DROP COLUMN off_self_ns;"
		" ALTER TABLE agg_sums DROP COLUMN off_incl_ns;"
		" CREATE TRIGGER trace_paths_ins AFTER INSERT ON trace_paths BEGIN"
		" INSERT INTO agg_sums (bucket, node, traces, calls, self_ns, incl_ns) VALUES"
		" (NEW.bucket, NEW.node, 1, NEW.calls, NEW.self_ns, NEW.incl_ns)"
		" ON CONFLICT DO UPDATE SET traces = traces + 1, calls = calls + excluded.calls,"
		" self_ns = self_ns + excluded.self_ns, incl_ns = incl_ns + excluded.incl_ns; END;"
		" CREATE TRIGGER trace_paths_del AFTER DELETE ON trace_paths BEGIN"
		" UPDATE agg_sums SET traces = traces - 1, calls = calls - OLD.calls,"
		" self_ns = self_ns - OLD.self_ns, incl_ns = incl_ns - OLD.incl_ns"
		" WHERE bucket = OLD.bucket AND node = OLD.node;"
		" DELETE FROM agg_sums WHERE bucket = OLD.bucket AND node = OLD.node"
		" AND traces <= 0; END;"
		" DROP TRIGGER trace_agg_has_ins; DROP TRIGGER trace_agg_has_del;"
		" DROP INDEX traces_heat; ALTER TABLE traces DROP COLUMN has_agg;"
		" DROP INDEX trace_methods_cpu; ALTER TABLE trace_methods DROP COLUMN cpu_self_ns;"
		" ALTER TABLE trace_methods DROP COLUMN cpu_incl_ns;"
		" DROP INDEX uploads_received_app; CREATE INDEX uploads_received ON "
		"uploads(received_at);"
		" ALTER TABLE uploads DROP COLUMN sel_kind; ALTER TABLE uploads DROP COLUMN sel_p;"
		" ALTER TABLE uploads DROP COLUMN sel_seen; ALTER TABLE uploads DROP COLUMN "
		"sel_taken;"
		" ALTER TABLE uploads DROP COLUMN weight; ALTER TABLE uploads DROP COLUMN "
		"weight_exact;"
		" INSERT INTO agg_buckets (app_id, app_version, model, anomaly_kind, day)"
		" VALUES ('x', '1', 'm', 1, 0);"
		" INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns)"
		" SELECT trace_id, 1, 1, 1, 10, 30 FROM traces;"
		" PRAGMA user_version = 8");
	sqlite3_close(db);
	assert_int_equal(rvs_store_sqlite.open(g_cfg.database, &s), 0);
	rvs_store_sqlite.close(s);
	assert_int_equal(sqlite3_open(g_cfg.database, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT device_id, issue FROM traces"
					    " ORDER BY trace_id",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		static const char *const want[] = {S1, S1, S2, S3, S1};
		assert_string_equal((const char *)sqlite3_column_text(st, 1), want[n]);
		assert_string_equal((const char *)sqlite3_column_text(st, 0), TRACES[n].dev);
		n++;
	}
	assert_int_equal(n, 5);
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT group_concat(name, ',') FROM"
					    " (SELECT name FROM pragma_index_info('traces_issue')"
					    " ORDER BY seqno)",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0),
			    "issue,app_id,received_at,device_id,severity");
	sqlite3_finalize(st);
	/* Migration 22 over path rows it did not write (one per trace, added
	 * at version 8): none has CPU data, every rollup row counts 0 traces
	 * with it, and the rollups still count every path row. */
	assert_int_equal(
		sqlite3_prepare_v2(
			db,
			"SELECT (SELECT count(*) FROM trace_paths) = 5"
			" AND (SELECT count(*) FROM trace_paths WHERE cpu_self_ns IS NOT NULL"
			" OR cpu_incl_ns IS NOT NULL) = 0"
			" AND (SELECT coalesce(sum(traces), 0) FROM agg_sums) ="
			" (SELECT count(*) FROM trace_paths)"
			" AND (SELECT coalesce(sum(traces), 0) FROM agg_day_sums) ="
			" (SELECT count(*) FROM trace_paths)"
			" AND (SELECT coalesce(max(cpu_traces) + max(off_self_ns), 0) FROM"
			" agg_sums) = 0 AND (SELECT coalesce(max(cpu_traces) + max(cpu_incl_ns),"
			" 0) FROM agg_day_sums) = 0",
			-1, &st, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Three captures built from tracer/FORMAT.md (capbuild.h), decoded by the
 * real decoder: A's anomaly fires in 0x1200 > 0x1300 > 0x1400; B's ring
 * began inside 0x1200 (its exit has no entry: an "(unknown caller)" frame);
 * C's thread starts at 0x1300.  B folds into C's issue, A stays apart. */
static void capture(capbuf *c, int with_root, int root_exit)
{
	/* ts t is ns 900 + t (reference 100 ticks, frozen at ns 1000). */
	cb_header(c, 100, 1000000000, 0, 1000, 0x555555554000ull, 0);
	if (with_root)
		cb_entry(c, 0x1200, 10);
	cb_entry(c, 0x1300, 20);
	cb_entry(c, 0x1400, 30);
	cb_exit(c, 40);
	cb_exit(c, 50);
	if (root_exit)
		cb_exit(c, 60);
	cb_end_slots(c);
	cb_anomaly(c, 1, 935, "jank");
	cb_finish(c);
}

static void test_issue_decoder_folds_unknown_caller_prefix_of_real_captures(void **state)
{
	static const char *const ids[] = {"t-0000000000000000000000000000000a",
					  "t-0000000000000000000000000000000b",
					  "t-0000000000000000000000000000000c"};
	struct rvs_decode_item items[3];
	struct rvs_decoder dec;
	struct rvs_decode *d;
	char issue[3][17], sig[3][17], chain[256];
	sqlite3 *db;
	sqlite3_stmt *st;

	memset(items, 0, sizeof items);
	assert_int_equal(sqlite3_open(g_cfg.database, &db), SQLITE_OK);
	for (int i = 0; i < 3; i++) {
		capbuf c = {0};
		char sql[512];
		FILE *f;
		capture(&c, i == 0, i != 2);
		snprintf(items[i].path, sizeof items[i].path, "%s/cap%d", g_dir, i);
		snprintf(items[i].trace_id, sizeof items[i].trace_id, "%s", ids[i]);
		assert_non_null(f = fopen(items[i].path, "wb"));
		assert_int_equal(fwrite(c.b, 1, c.len, f), c.len);
		fclose(f);
		free(c.b);
		snprintf(sql, sizeof sql,
			 "INSERT INTO uploads (trace_id, device_id, upload_id, received_at, app_id,"
			 " app_version, severity, compression, state) VALUES ('%s', 'd1',"
			 " randomblob(16), strftime('%%s'), 'A', '1', 1, 0, 'pending_decode')",
			 ids[i]);
		exec_ok(db, sql);
	}
	assert_int_equal(rvs_decode_new(g_cfg.database, &dec, &d), 0);
	dec.decode(dec.ctx, items, 3);
	rvs_decode_free(d);
	for (int i = 0; i < 3; i++)
		if (items[i].rc)
			fail_msg("%s: %s", ids[i], items[i].reason);
	assert_int_equal(
		sqlite3_prepare_v2(db,
				   "SELECT t.issue, t.anomaly_signature, c.chain FROM traces t"
				   " JOIN trace_chains c ON c.trace_id = t.trace_id AND"
				   " c.kind = 'anomaly' WHERE t.trace_id = ?",
				   -1, &st, NULL),
		SQLITE_OK);
	for (int i = 0; i < 3; i++) {
		sqlite3_bind_text(st, 1, ids[i], -1, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		snprintf(issue[i], sizeof issue[i], "%s", sqlite3_column_text(st, 0));
		snprintf(sig[i], sizeof sig[i], "%s", sqlite3_column_text(st, 1));
		if (i == 1)
			snprintf(chain, sizeof chain, "%s", sqlite3_column_text(st, 2));
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	/* B's chain is C's behind one unknown caller; its issue is C's. */
	assert_int_equal(strncmp(chain, "(unknown caller);", 17), 0);
	assert_string_not_equal(sig[1], sig[2]);
	assert_string_equal(issue[1], sig[2]);
	assert_string_equal(issue[2], sig[2]);
	/* A saw the whole chain: its own issue. */
	assert_string_equal(issue[0], sig[0]);
	assert_string_not_equal(issue[0], issue[2]);
}

/* ---- worst traces ------------------------------------------------------------- */

static void test_search_sort_keys_give_exact_orders(void **state)
{
	expect_order("sort=severity", "25143");
	expect_order("sort=-severity", "34152");
	expect_order("sort=duration", "42135");
	expect_order("sort=age", "31245");
	expect_order("sort=-age", "54213");
	expect_order("sort=received", "54321");
	expect_order("sort=self&method=parse_json", "413");
	expect_order("sort=severity&app=A", "2513");
	expect_order("sort=severity&issue=" S1, "251");
	expect_order("issue=" S1, "521");
}

static void test_search_sort_keyset_pages_cover_list_once(void **state)
{
	const char *keys[] = {"severity", "duration", "age", "-age", "self&method=parse_json"};
	const char *want[] = {"25143", "42135", "31245", "54213", "413"};
	for (size_t k = 0; k < 5; k++) {
		char q[256], got[16] = "", page[16];
		const char *cursor = NULL;
		json_t *doc = NULL;
		int st, pages = 0;
		do {
			snprintf(q, sizeof q, "sort=%s&limit=2%s%s", keys[k],
				 cursor ? "&cursor=" : "", cursor ? cursor : "");
			json_t *next = api("/api/v1/traces", q, &st);
			assert_int_equal(st, 200);
			ids(next, "traces", page);
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s", page);
			json_decref(doc);
			doc = next;
			cursor = json_string_value(json_object_get(doc, "next_cursor"));
			pages++;
		} while (cursor && pages < 10);
		json_decref(doc);
		if (strcmp(got, want[k]) != 0)
			fail_msg("sort=%s pages: got %s, want %s", keys[k], got, want[k]);
	}
}

static void test_search_sort_unknown_key_is_400_naming_it(void **state)
{
	int st;
	json_t *doc = api("/api/v1/traces", "sort=worstest", &st);
	assert_int_equal(st, 400);
	assert_non_null(strstr(json_string_value(json_object_get(doc, "error")), "worstest"));
	json_decref(doc);
	doc = api("/api/v1/traces", "sort=self", &st);
	assert_int_equal(st, 400);
	json_decref(doc);
	doc = api("/api/v1/traces", "sort=severity&cursor=12", &st);
	assert_int_equal(st, 400);
	json_decref(doc);
}

/* Issue 16's papercuts 2-4: kinds by name wherever numbers are taken, a bad
 * value named in the 400, limit clamped (not refused) above its maximum. */
static void test_search_kind_names_and_bad_values_named(void **state)
{
	static const struct {
		const char *path, *query, *error;
	} bad[] = {
		{"/api/v1/traces", "kind=sluggish", "bad value for parameter: kind"},
		{"/api/v1/traces", "app=%zz", "bad value for parameter: app"},
		{"/api/v1/traces", "cursor=x", "bad value for parameter: cursor"},
		{"/api/v1/traces", "sort=severity&min_severity=x",
		 "bad value for parameter: min_severity"},
		{"/api/v1/traces", "sort=severity&kind=2x", "bad value for parameter: kind"},
		{"/api/v1/issues", "kind=nope", "bad value for parameter: kind"},
		{"/api/v1/search", "contains=parse&version=%zz",
		 "bad value for parameter: version"},
		{"/api/v1/traces", "limit=0", "bad limit"},
		{"/api/v1/issues", "limit=-1", "bad limit"},
	};
	int st;
	json_t *doc;

	expect_order("kind=jank", "54321");
	expect_order("kind=ANOMALY_JANK", "54321");
	expect_order("kind=1", "54321");
	expect_order("kind=Thermal", "");
	expect_order("sort=severity&kind=jank", "25143");
	expect_order("sort=severity&kind=touch", "");
	expect_order("limit=100000", "54321");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		doc = api(bad[i].path, bad[i].query, &st);
		if (st != 400 ||
		    strcmp(json_string_value(json_object_get(doc, "error")), bad[i].error) != 0)
			fail_msg("%s?%s: %d %s", bad[i].path, bad[i].query, st,
				 json_string_value(json_object_get(doc, "error")));
		json_decref(doc);
	}
	doc = api("/api/v1/issues", "kind=jank", &st);
	assert_int_equal(st, 200);
	assert_true(json_array_size(json_object_get(doc, "issues")) > 0);
	json_decref(doc);
	doc = api("/api/v1/issues", "kind=thermal", &st);
	assert_int_equal(st, 200);
	assert_int_equal(json_array_size(json_object_get(doc, "issues")), 0);
	json_decref(doc);
}

/* Issue 16's papercut 5: /methods/{name} narrowed by app and version, and
 * split by model as by version.  parse_json is in t1 (A 1, 40 ms), t3 (A 2,
 * 10 ms) and t4 (B 1, 70 ms, its model made "pixel" here). */
static void test_search_method_page_honours_app_version_and_splits_by_model(void **state)
{
	static const struct {
		const char *query;
		int count;
		long long p50, p95;
		const char *traces, *versions, *models;
	} cases[] = {
		{"", 3, 40000000, 70000000, "431", "1:2,2:1", "m:2,pixel:1"},
		{"app=A", 2, 10000000, 40000000, "31", "1:1,2:1", "m:2"},
		{"app=A&version=2", 1, 10000000, 10000000, "3", "2:1", "m:1"},
		{"version=1&app=", 2, 40000000, 70000000, "41", "1:2", "m:1,pixel:1"},
		{"app=Z", 0, -1, -1, "", "", ""},
	};
	char path[] = "/api/v1/methods/parse_json";
	int st;
	json_t *doc;

	sqlb_exec(g_cfg.database, "UPDATE traces SET model = 'pixel' WHERE trace_id LIKE '%4'", 0,
		  NULL);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char got[64], split[2][64];
		json_t *v;
		size_t k;

		doc = api(path, cases[i].query, &st);
		assert_int_equal(st, 200);
		assert_int_equal(json_integer_value(json_object_get(doc, "count")), cases[i].count);
		if (cases[i].p50 < 0) {
			assert_null(json_object_get(doc, "self_ns"));
		} else {
			v = json_object_get(doc, "self_ns");
			assert_int_equal(json_integer_value(json_object_get(v, "p50")),
					 cases[i].p50);
			assert_int_equal(json_integer_value(json_object_get(v, "p95")),
					 cases[i].p95);
		}
		ids(doc, "traces", got);
		assert_string_equal(got, cases[i].traces);
		for (int s2 = 0; s2 < 2; s2++) {
			const char *key = s2 ? "model" : "app_version";
			size_t o = 0;
			split[s2][0] = '\0';
			json_array_foreach(json_object_get(doc, s2 ? "by_model" : "by_version"), k,
					   v) o +=
				(size_t)snprintf(
					split[s2] + o, sizeof split[s2] - o, "%s%s:%lld",
					k ? "," : "", json_string_value(json_object_get(v, key)),
					(long long)json_integer_value(json_object_get(v, "count")));
		}
		if (strcmp(split[0], cases[i].versions) || strcmp(split[1], cases[i].models))
			fail_msg("%s: by_version %s, by_model %s", cases[i].query, split[0],
				 split[1]);
		json_decref(doc);
	}
	doc = api(path, "app=%zz", &st);
	assert_int_equal(st, 400);
	assert_string_equal(json_string_value(json_object_get(doc, "error")),
			    "bad value for parameter: app");
	json_decref(doc);
}

/* ---- issues ------------------------------------------------------------------- */

static void test_search_issues_ranked_by_impact_with_weekly_trend(void **state)
{
	int st;
	json_t *doc = api("/api/v1/issues", "weeks=2", &st), *is, *a;
	assert_int_equal(st, 200);
	is = json_object_get(doc, "issues");
	assert_int_equal(json_array_size(is), 3);
	/* S1: t1, t2, t5 folded; devices d1, d2; severity (3+5+3)/3; impact 22. */
	a = json_array_get(is, 0);
	assert_string_equal(json_string_value(json_object_get(a, "issue")), S1);
	assert_int_equal(json_integer_value(json_object_get(a, "traces")), 3);
	assert_int_equal(json_integer_value(json_object_get(a, "devices")), 2);
	assert_true(json_real_value(json_object_get(a, "impact")) > 21.999 &&
		    json_real_value(json_object_get(a, "impact")) < 22.001);
	assert_string_equal(json_string_value(json_object_get(a, "chain")),
			    "main;layout_pass;measure;parse_json;");
	assert_string_equal(json_string_value(json_object_get(a, "example_trace")), TRACES[4].id);
	assert_int_equal(json_array_size(json_object_get(a, "signatures")), 3);
	assert_string_equal(json_string_value(json_array_get(json_object_get(a, "signatures"), 0)),
			    S1V);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(a, "trend"), 0)), 0);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(a, "trend"), 1)), 3);
	/* S3 (impact 2) before S2 (impact 1, last week's). */
	assert_string_equal(json_string_value(json_object_get(json_array_get(is, 1), "issue")), S3);
	a = json_array_get(is, 2);
	assert_string_equal(json_string_value(json_object_get(a, "issue")), S2);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(a, "trend"), 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(a, "trend"), 1)), 0);
	json_decref(doc);
	/* One week: last week's S2 is out; app B: S3 only. */
	doc = api("/api/v1/issues", "weeks=1", &st);
	assert_int_equal(json_array_size(json_object_get(doc, "issues")), 2);
	json_decref(doc);
	doc = api("/api/v1/issues", "app=B", &st);
	assert_int_equal(json_array_size(json_object_get(doc, "issues")), 1);
	json_decref(doc);
	doc = api("/api/v1/issues", "weeks=0", &st);
	assert_int_equal(st, 400);
	json_decref(doc);
}

/* The issue's weighted figures where one read gives them all: S1 gets
 * last week's t3 (d1) too, its uploads the weights t1 10 (exact), t3 2
 * (exact), t5 5 (a most-severe quota: an estimate) and t2 1 (no selection:
 * unknown), and t2 no device.  Weighted traces 18, per week 2 and 16;
 * devices: d1 with its smallest weight over both weeks (2, where this
 * week's alone is 5), t2 none: 2. */
static void test_search_issue_weights_across_weeks_and_devices(void **state)
{
	static const char *const sql[] = {
		"UPDATE traces SET issue = (SELECT issue FROM traces WHERE trace_id ="
		" 't-00000000000000000000000000000001') WHERE trace_id ="
		" 't-00000000000000000000000000000003'",
		"UPDATE traces SET device_id = NULL WHERE trace_id ="
		" 't-00000000000000000000000000000002'",
		"UPDATE uploads SET weight = 10, weight_exact = 1, sel_kind = 1 WHERE trace_id ="
		" 't-00000000000000000000000000000001'",
		"UPDATE uploads SET weight = 2, weight_exact = 1, sel_kind = 1 WHERE trace_id ="
		" 't-00000000000000000000000000000003'",
		"UPDATE uploads SET weight = 5, weight_exact = 0, sel_kind = 3 WHERE trace_id ="
		" 't-00000000000000000000000000000005'",
	};
	json_t *doc, *a, *w;
	int st;

	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
		sqlb_exec(g_cfg.database, sql[i], 0, NULL);
	doc = api("/api/v1/issues", "weeks=2&app=A", &st);
	assert_int_equal(st, 200);
	a = json_array_get(json_object_get(doc, "issues"), 0);
	assert_string_equal(json_string_value(json_object_get(a, "issue")), S1);
	assert_int_equal(json_integer_value(json_object_get(a, "traces")), 4);
	assert_int_equal(json_integer_value(json_object_get(a, "devices")), 1);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(a, "trend"), 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(a, "trend"), 1)), 3);
	w = json_object_get(a, "weighted");
	assert_true(json_number_value(json_object_get(w, "traces")) == 18);
	assert_true(json_number_value(json_object_get(w, "devices")) == 2);
	assert_true(json_number_value(json_array_get(json_object_get(w, "trend"), 0)) == 2);
	assert_true(json_number_value(json_array_get(json_object_get(w, "trend"), 1)) == 16);
	assert_int_equal(json_integer_value(json_object_get(w, "traces_weight_estimated")), 1);
	assert_int_equal(json_integer_value(json_object_get(w, "traces_weight_unknown")), 1);
	assert_true(json_is_false(json_object_get(w, "exact")));
	/* One week: t3 is out, d1's smallest weight this week is 5. */
	json_decref(doc);
	doc = api("/api/v1/issues", "weeks=1&app=A", &st);
	w = json_object_get(json_array_get(json_object_get(doc, "issues"), 0), "weighted");
	assert_true(json_number_value(json_object_get(w, "traces")) == 16);
	assert_true(json_number_value(json_object_get(w, "devices")) == 5);
	json_decref(doc);
}

/* ---- chain search ------------------------------------------------------------- */

static void expect_hits(const char *query, const char *want, json_t **keep)
{
	char got[16];
	int st;
	json_t *doc = api("/api/v1/search", query, &st);
	if (st != 200)
		fail_msg("%s: status %d", query, st);
	ids(doc, "hits", got);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got %s, want %s", query, got, want);
	if (keep)
		*keep = doc;
	else
		json_decref(doc);
}

static void test_search_chain_wildcard_matches_zero_or_more_frames(void **state)
{
	json_t *doc, *h;
	expect_hits("chain=layout_pass+%3E+*+%3E+parse_json", "54321", &doc);
	/* t3's layout_pass calls parse_json directly: "*" matched no frame. */
	h = json_array_get(json_object_get(doc, "hits"), 2);
	assert_string_equal(json_string_value(json_object_get(h, "source")), "anomaly");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(h, "match"), 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(h, "match"), 1)), 3);
	/* t4 matches in its top chain, frames 1..3 of main;layout_pass;inflate;parse_json. */
	h = json_array_get(json_object_get(doc, "hits"), 1);
	assert_string_equal(json_string_value(json_object_get(h, "source")), "top");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(h, "match"), 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(h, "match"), 1)), 4);
	assert_string_equal(json_string_value(json_array_get(json_object_get(h, "frames"), 2)),
			    "inflate");
	json_decref(doc);
	expect_hits("chain=layout_pass+%3E+*+%3E+parse_json&app=B", "4", NULL);
	expect_hits("chain=main+%3E+*+%3E+measure+%3E+parse_json", "521", NULL);
}

static void test_search_caller_callee_is_adjacent(void **state)
{
	expect_hits("caller=layout_pass&callee=parse_json", "3", NULL);
	expect_hits("chain=layout_pass+%3E+parse_json", "3", NULL);
	expect_hits("caller=measure&callee=parse_json", "521", NULL);
}

static void test_search_method_exact_and_substring(void **state)
{
	json_t *doc;
	expect_hits("chain=parse_json", "431", &doc);
	assert_string_equal(json_string_value(json_object_get(doc, "mode")), "method");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(doc, "hits"), 0), "self_ns")),
			 70000000);
	json_decref(doc);
	expect_hits("contains=_js", "431", NULL);
	expect_hits("contains=no_such_thing", "", NULL);
}

static void test_search_cursor_pages_cover_hits_once(void **state)
{
	char q[256], got[16] = "", page[16];
	const char *cursor = NULL;
	json_t *doc = NULL;
	int st, pages = 0;
	do {
		snprintf(q, sizeof q, "chain=layout_pass+%%3E+*+%%3E+parse_json&limit=2%s%s",
			 cursor ? "&cursor=" : "", cursor ? cursor : "");
		json_t *next = api("/api/v1/search", q, &st);
		assert_int_equal(st, 200);
		ids(next, "hits", page);
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s", page);
		json_decref(doc);
		doc = next;
		cursor = json_string_value(json_object_get(doc, "next_cursor"));
		pages++;
	} while (cursor && pages < 10);
	json_decref(doc);
	assert_string_equal(got, "54321");
	/* The end of the table: nothing below rowid 0. */
	expect_hits("chain=layout_pass+%3E+*+%3E+parse_json&cursor=0", "", NULL);
}

static void test_search_empty_index_finds_nothing(void **state)
{
	int st;
	json_t *doc;
	sqlb_exec(g_cfg.database, "DELETE FROM traces", 0, NULL);
	expect_hits("chain=a+%3E+*+%3E+b", "", NULL);
	expect_hits("contains=a", "", NULL);
	expect_hits("chain=a", "", NULL);
	expect_order("sort=severity", "");
	doc = api("/api/v1/issues", "", &st);
	assert_int_equal(st, 200);
	assert_int_equal(json_array_size(json_object_get(doc, "issues")), 0);
	json_decref(doc);
}

/* 450,000 chains that all pass the prefilter and none matches: a search
 * stops at its row budget with a cursor, and going on from cursor to
 * cursor reaches the end — in exactly two pages when time is no limit
 * (the row budget, 400,000, is 20 chunks; the rest is the second page), so
 * the test takes as long as two pages on any machine.  With a 1 ms budget
 * the first page stops on time, long before the row budget (no machine
 * reads 400,000 rows in a millisecond). */
static void test_search_hostile_pattern_stops_at_budget_and_goes_on(void **state)
{
	const char *id[] = {TRACES[0].id};
	json_t *doc;
	char q[128], cursor[32] = "";
	int status, pages = 0, partial = 0;

	sqlb_exec(
		g_cfg.database,
		ops == &rvs_store_pg
			? "WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n"
			  " WHERE i < 45009) INSERT INTO trace_chains (trace_id, kind, rank,"
			  " signature, chain, depth, received_at) SELECT $1, 'top', i, '00',"
			  " 'a;a;a;a;zz;', 5, (SELECT received_at FROM traces WHERE trace_id = $1)"
			  " FROM n"
			: "WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n"
			  " WHERE i < 45009) INSERT INTO trace_chains (trace_id, kind, rank,"
			  " signature, chain, depth) SELECT $1, 'top', i, '00', 'a;a;a;a;zz;', 5"
			  " FROM n",
		1, id);
	/* The server's row budget, a tenth of the default (the same code
	 * path; 45,006 rows instead of 450,006). */
	g_cfg.search_budget_rows = 40000;
	g_cfg.search_budget_ms = 1;
	doc = api("/api/v1/search", "chain=zz+%3E+*+%3E+a", &status);
	assert_int_equal(status, 200);
	assert_true(json_is_true(json_object_get(doc, "partial")));
	assert_true(json_integer_value(json_object_get(doc, "scanned")) < 40000);
	assert_true(json_is_string(json_object_get(doc, "next_cursor")));
	json_decref(doc);
	g_cfg.search_budget_ms = 600000;
	do {
		snprintf(q, sizeof q, "chain=zz+%%3E+*+%%3E+a%s%s", cursor[0] ? "&cursor=" : "",
			 cursor);
		doc = api("/api/v1/search", q, &status);
		assert_int_equal(status, 200);
		assert_int_equal(json_array_size(json_object_get(doc, "hits")), 0);
		/* Never more than the row budget and one chunk. */
		assert_true(json_integer_value(json_object_get(doc, "scanned")) <= 40000 + 20000);
		partial += json_is_true(json_object_get(doc, "partial"));
		snprintf(cursor, sizeof cursor, "%s",
			 json_is_string(json_object_get(doc, "next_cursor"))
				 ? json_string_value(json_object_get(doc, "next_cursor"))
				 : "");
		json_decref(doc);
		pages++;
	} while (cursor[0] && pages < 1000);
	g_cfg.search_budget_ms = 0;
	g_cfg.search_budget_rows = 0;
	assert_int_equal(partial, 1); /* 45,006 rows: one stop at 40,000 */
	assert_int_equal(pages, 2);
}

static void test_search_bad_patterns_are_400(void **state)
{
	static const char *const bad[] = {
		"chain=*",
		"chain=*+%3E+*",
		"chain=a+%3E++%3E+b",
		"chain=",
		"caller=a",
		"",
		"contains=",
		"chain=a+%3E+b&contains=x",
		/* 17 elements */
		"chain=a+%3E+b+%3E+c+%3E+d+%3E+e+%3E+f+%3E+g+%3E+h+%3E+i+%3E+j+%3E+k+%3E+l+%3E+m+%"
		"3E+"
		"n+%3E+o+%3E+p+%3E+q",
		"chain=a+%3E+b&cursor=x",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int st;
		json_t *doc = api("/api/v1/search", bad[i], &st);
		if (st != 400)
			fail_msg("%s: status %d", bad[i], st);
		assert_non_null(json_string_value(json_object_get(doc, "error")));
		json_decref(doc);
	}
}

/* ---- the matcher ------------------------------------------------------------- */

static int match(const char *pat, const char *const *fr, size_t n, size_t *from, size_t *to)
{
	struct rvs_chain_pat p;
	size_t lens[2048];
	assert_int_equal(rvs_chain_pattern_parse(pat, &p), 0);
	for (size_t i = 0; i < n; i++)
		lens[i] = strlen(fr[i]);
	return rvs_chain_match(&p, fr, lens, n, from, to);
}

static void test_search_glob_semantics(void **state)
{
	const char *ab[] = {"a", "b"};
	const char *xaybw[] = {"x", "a", "y", "z", "b", "w"};
	const char *axb[] = {"a", "x", "b"};
	const char *abxbc[] = {"a", "b", "x", "b", "c"};
	const char *tmpl[] = {"main", "std::map<int>::at", "x"};
	struct rvs_chain_pat p;
	size_t from, to;

	assert_int_equal(match("a > * > b", ab, 2, &from, &to), 1);
	assert_true(from == 0 && to == 2);
	assert_int_equal(match("a > * > b", xaybw, 6, &from, &to), 1);
	assert_true(from == 1 && to == 5);
	assert_int_equal(match("a > b", axb, 3, &from, &to), 0);
	assert_int_equal(match("* > b", ab, 2, &from, &to), 1);
	assert_true(from == 1 && to == 2);
	assert_int_equal(match("a > * > b > c", abxbc, 5, &from, &to), 1);
	assert_true(from == 0 && to == 5);
	/* '>' inside a name (no spaces around it) is part of the name. */
	assert_int_equal(match("std::map<int>::at > x", tmpl, 3, &from, &to), 1);
	assert_true(from == 1 && to == 3);
	assert_int_equal(rvs_chain_pattern_parse("* > * > *", &p), -EINVAL);
	assert_int_equal(rvs_chain_pattern_parse("a > * > * > b", &p), 0);
	assert_int_equal(p.n, 3); /* stars merged */
}

/* The store's prefilter: the longest run of adjacent names, each followed
 * by ';' as a stored chain holds it, so a caller and its callee together
 * (the caller alone may be in every chain). */
static void test_search_needle_is_longest_adjacent_run(void **state)
{
	static const char *const cases[][2] = {
		{"com.example.Loop.run > com.example.X7", "com.example.Loop.run;com.example.X7;"},
		{"main > * > com.example.X499", "com.example.X499;"},
		{"a > b > * > longname", "longname;"},
		{"a > bb > * > abc", "a;bb;"},
		{"* > x > * ", "x;"},
		{"one", "one;"},
	};
	static const char chain[] = "root;a;bb;q;abc;";
	struct rvs_chain_pat p;
	char needle[RVS_PAT_NEEDLE_MAX];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(rvs_chain_pattern_parse(cases[i][0], &p), 0);
		assert_int_equal(rvs_chain_pattern_needle(&p, needle, sizeof needle),
				 strlen(cases[i][1]));
		assert_string_equal(needle, cases[i][1]);
	}
	/* A chain the pattern matches holds its needle. */
	assert_int_equal(rvs_chain_pattern_parse("a > bb > * > abc", &p), 0);
	rvs_chain_pattern_needle(&p, needle, sizeof needle);
	assert_non_null(strstr(chain, needle));
	/* Sixteen names of the longest length fit. */
	{
		char text[RVS_PAT_MAX * (RVS_PAT_NAME_MAX + 3)], *w = text;
		for (int k = 0; k < RVS_PAT_MAX; k++) {
			if (k) {
				memcpy(w, " > ", 3);
				w += 3;
			}
			memset(w, 'a' + k, RVS_PAT_NAME_MAX);
			w += RVS_PAT_NAME_MAX;
		}
		*w = '\0';
		assert_int_equal(rvs_chain_pattern_parse(text, &p), 0);
		assert_int_equal(rvs_chain_pattern_needle(&p, needle, sizeof needle),
				 RVS_PAT_MAX * (RVS_PAT_NAME_MAX + 1));
	}
}

static void test_search_hostile_pattern_is_linear(void **state)
{
	/* Every star and name of the pattern over 2,000 identical frames and a
	 * last name that never comes: a backtracking matcher would try
	 * C(2000, 7) placements; this one fails after one pass per run. */
	static const char *fr[2000];
	size_t from, to;
	for (size_t i = 0; i < 2000; i++)
		fr[i] = "a";
	assert_int_equal(match("a > * > a > * > a > * > a > * > a > * > a > * > a > * > b", fr,
			       2000, &from, &to),
			 0);
	assert_int_equal(match("a > * > a > * > a", fr, 2000, &from, &to), 1);
	assert_true(from == 0 && to == 3);
}

/* ---- both backends ------------------------------------------------------------ */

/* The same fixture on sqlite and on PostgreSQL answers every worst-traces,
 * issues and chain-search request with the same document (cursors
 * included: rowids and sequences number the rows alike). */
static void test_search_same_results_on_sqlite_and_postgresql(void **state)
{
	static const char *const req[][2] = {
		{"/api/v1/traces", "sort=severity"},
		{"/api/v1/traces", "sort=-age&limit=2"},
		{"/api/v1/traces", "sort=duration&cursor=50000000:1"},
		{"/api/v1/traces", "sort=self&method=parse_json"},
		{"/api/v1/traces", "sort=received&app=A&kind=jank"},
		{"/api/v1/traces", "issue=" S1},
		{"/api/v1/issues", "weeks=2"},
		{"/api/v1/issues", "app=A&version=1"},
		{"/api/v1/search", "chain=layout_pass+%3E+*+%3E+parse_json"},
		{"/api/v1/search", "chain=layout_pass+%3E+*+%3E+parse_json&limit=2"},
		{"/api/v1/search", "caller=measure&callee=parse_json&app=A"},
		{"/api/v1/search", "chain=parse_json"},
		{"/api/v1/search", "contains=_js&version=1"},
	};
	struct rvs_config on_pg = g_cfg, on_sqlite;
	char pg_dir[64];

	assert_true(ops == &rvs_store_pg);
	memcpy(pg_dir, g_dir, sizeof pg_dir);
	ops = &rvs_store_sqlite;
	assert_int_equal(setup(NULL), 0);
	on_sqlite = g_cfg;
	for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
		json_t *a, *b;
		char *ta, *tb;
		int sa, sb;
		g_cfg = on_sqlite;
		a = api(req[i][0], req[i][1], &sa);
		g_cfg = on_pg;
		b = api(req[i][0], req[i][1], &sb);
		ta = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT);
		tb = json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT);
		if (sa != 200 || sa != sb || !json_equal(a, b))
			fail_msg("%s?%s:\nsqlite     %d %s\npostgresql %d %s", req[i][0], req[i][1],
				 sa, ta, sb, tb);
		free(ta);
		free(tb);
		json_decref(a);
		json_decref(b);
	}
	g_cfg = on_sqlite;
	teardown(NULL);
	memcpy(g_dir, pg_dir, sizeof g_dir);
	g_cfg = on_pg;
	ops = &rvs_store_pg;
}

static void test_search_postgresql_missing_skips(void **state)
{
	print_message("PostgreSQL cases skipped: %s\n", pg_skip_why);
	skip();
}

int main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(test_issue_fold_unknown_caller_prefix_gives_known_chain_signature),
		cmocka_unit_test(test_search_glob_semantics),
		cmocka_unit_test(test_search_needle_is_longest_adjacent_run),
		cmocka_unit_test(test_search_hostile_pattern_is_linear),
	};
	/* sqlite's own: its migration's backfill, and the decoder's rows read
	 * back with sqlite. */
	const struct CMUnitTest sqlite_only[] = {
		cmocka_unit_test_setup_teardown(test_issue_migration_backfills_folded_issue, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_issue_decoder_folds_unknown_caller_prefix_of_real_captures, setup,
			teardown),
	};
	const struct CMUnitTest both[] = {
		cmocka_unit_test_setup_teardown(
			test_search_method_page_honours_app_version_and_splits_by_model, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_search_kind_names_and_bad_values_named, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_search_sort_keys_give_exact_orders, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_search_sort_keyset_pages_cover_list_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_search_sort_unknown_key_is_400_naming_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_search_issues_ranked_by_impact_with_weekly_trend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_search_issue_weights_across_weeks_and_devices,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_search_chain_wildcard_matches_zero_or_more_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_search_caller_callee_is_adjacent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_search_method_exact_and_substring, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_search_cursor_pages_cover_hits_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_search_bad_patterns_are_400, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_search_hostile_pattern_stops_at_budget_and_goes_on, setup, teardown),
		cmocka_unit_test_setup_teardown(test_search_empty_index_finds_nothing, setup,
						teardown),
	};
	const struct CMUnitTest pg_only[] = {
		cmocka_unit_test_setup_teardown(test_search_same_results_on_sqlite_and_postgresql,
						setup, teardown),
	};
	const struct CMUnitTest pg_missing[] = {
		cmocka_unit_test(test_search_postgresql_missing_skips),
	};
	int failed = 0, rc;

	failed += cmocka_run_group_tests_name("search", pure, NULL, NULL);
	ops = &rvs_store_sqlite;
	failed += cmocka_run_group_tests_name("search_sqlite_only", sqlite_only, NULL, NULL);
	failed += cmocka_run_group_tests_name("search_sqlite", both, NULL, NULL);
	ops = &rvs_store_pg;
	rc = pgh_start(&pg);
	if (rc == 0) {
		failed += cmocka_run_group_tests_name("search_postgresql", both, NULL, NULL);
		failed += cmocka_run_group_tests_name("search_both", pg_only, NULL, NULL);
	} else if (rc == -ENOENT) {
		snprintf(pg_skip_why, sizeof pg_skip_why, "%s", pg.why);
		failed += cmocka_run_group_tests_name("search_postgresql", pg_missing, NULL, NULL);
	} else {
		fprintf(stderr, "test_search: PostgreSQL did not start: %s\n", pg.why);
		failed++;
	}
	pgh_stop(&pg);
	return failed;
}
