/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_method_cpu.c — time on and off the CPU across traces, per method
 * and per call path: the decoder's trace_methods.cpu_self_ns / cpu_incl_ns
 * (SCHEMA.md, migration 20) and /api/v1/methods/{name}'s "cpu" (API.md);
 * trace_paths' (migration 22), the rollups' sums of them and each
 * /api/v1/aggregate node's "cpu", the same on every read of a set; on
 * sqlite and on a private PostgreSQL (pg_harness.h; skipped, visibly,
 * without one).
 *
 * Three captures built byte by byte (tests/rvtrace/capbuild.h; a 1 GHz
 * counter whose ticks are CLOCK_MONOTONIC ns, so every duration is exact),
 * decoded by the real decoder into a real store:
 *
 *   main 1000–99000
 *     work 2000–50000
 *       wait 10000–30000
 *     work 60000–80000
 *
 * CPU capture (t1: A 1 m1, t2: A 2 m2): an OFFCPU record (tracer/FORMAT.md)
 * with the thread off the CPU 5000–7000 (in work's own time), 12000–28000
 * (in wait), 55000–58000 (main's own), 70000–71000 (the second work's own)
 * and 90000–92000 (main's own).  So, per trace:
 *
 *   method  calls  self   incl   on-CPU self  on-CPU incl
 *   main    1      30000  98000  25000        74000
 *   work    2      48000  68000  45000        49000
 *   wait    1      20000  20000   4000         4000
 *
 * Plain capture (t3: A 2 m1): the same calls and a `log_line` 85000–88000
 * inside main, no OFFCPU record: its rows' CPU columns are NULL, not 0, and
 * the API leaves it out of the split (2 of 3 traces).
 *
 * Per call path the CPU capture's rows are main's, work's and wait's as
 * above (each method has one path), and the app's root: no self time, 74000
 * of its 98000 inclusive on the CPU.  A fourth capture, of app B, has more
 * paths than its index budget keeps: its folded leaves' split goes to one
 * "(other)" row whole.
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

#include "api/api.h"
#include "api/query.h"
#include "base/config.h"
#include "capbuild.h"
#include "http/route.h"
#include "pipeline/decode.h"
#include "store/store.h"

#include "pg_harness.h"
#include "sql_both.h"

static char g_dir[64];
static struct rvs_config g_cfg;
/* The backend the cases run on (main runs them on both). */
static const struct rvs_store_ops *ops = &rvs_store_sqlite;
static struct pgh pg;
static char pg_skip_why[256];

#define NCAP 3
static const char *const IDS[NCAP] = {"t-00000000000000000000000000000001",
				      "t-00000000000000000000000000000002",
				      "t-00000000000000000000000000000003"};
static const char *const VERSIONS[NCAP] = {"1", "2", "2"};
static const char *const MODELS[NCAP] = {"m1", "m2", "m1"};

/* An OFFCPU record's value for tid 43 (the header's): n intervals
 * [from, to) with reason 1 (preempted) or 2 (blocked). */
static void offcpu_record(capbuf *c, const uint64_t (*iv)[3], uint32_t n)
{
	uint8_t v[8 + 24 * 8] = {0};
	size_t len = 8 + 24 * (size_t)n;

	assert_true(n <= 8);
	v[0] = 43;
	v[4] = (uint8_t)n;
	for (uint32_t i = 0; i < n; i++)
		for (int k = 0; k < 8; k++) {
			v[8 + 24 * i + k] = (uint8_t)(iv[i][0] >> (8 * k));
			v[16 + 24 * i + k] = (uint8_t)(iv[i][1] >> (8 * k));
			v[24 + 24 * i + k] = k ? 0 : (uint8_t)iv[i][2];
		}
	cb_record(c, 12, v, (uint32_t)len);
}

/* The header comment's capture: with_cpu the CPU one, else the plain one. */
static void capture(capbuf *c, int with_cpu)
{
	static const uint64_t off[][3] = {
		{5000, 7000, 2},   {12000, 28000, 2}, {55000, 58000, 1},
		{70000, 71000, 1}, {90000, 92000, 2},
	};
	cb_header(c, 100000, 1000000000, 0, 100000, 0x400000, 0);
	cb_entry(c, 0x1000, 1000); /* main */
	cb_entry(c, 0x1010, 2000); /* work */
	cb_entry(c, 0x1020, 10000);
	cb_exit(c, 30000);
	cb_exit(c, 50000);
	cb_entry(c, 0x1010, 60000);
	cb_exit(c, 80000);
	if (!with_cpu) {
		cb_entry(c, 0x1030, 85000);
		cb_exit(c, 88000);
	}
	cb_exit(c, 99000);
	cb_end_slots(c);
	cb_symbol(c, 0x1000, 0x1000, 0, "main");
	cb_symbol(c, 0x1010, 0x1010, 0, "work");
	cb_symbol(c, 0x1020, 0x1020, 0, "wait");
	cb_symbol(c, 0x1030, 0x1030, 0, "log_line");
	if (with_cpu)
		offcpu_record(c, off, sizeof off / sizeof off[0]);
	cb_finish(c);
}

/* Writes capture i's file (with_cpu: the CPU capture, else the plain one)
 * into path. */
static void write_capture(int i, int with_cpu, char *path, size_t len, size_t *bytes)
{
	capbuf c = {0};
	FILE *f;

	capture(&c, with_cpu);
	snprintf(path, len, "%s/cap%d", g_dir, i);
	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(c.b, 1, c.len, f), c.len);
	fclose(f);
	*bytes = c.len;
	free(c.b);
}

/* The queued items of store s (n of them) decoded by the real decoder from
 * their files, capture i with CPU data when cpu[i], and finished, as the
 * server's lanes do. */
static void decode_queued(struct rvs_store *s, int n, const int *cpu)
{
	struct rvs_decoder dec;
	struct rvs_decode *d;

	assert_int_equal(rvs_decode_new(g_cfg.database, &dec, &d), 0);
	for (int k = 0; k < n; k++) {
		struct rvs_decode_item it = {0};
		size_t bytes;
		int i;

		assert_int_equal(ops->decode_next_batch(s, 0, 1, &it, 1), 1);
		for (i = 0; i < NCAP && strcmp(it.trace_id, IDS[i]); i++)
			;
		assert_true(i < NCAP);
		write_capture(i, cpu[i], it.path, sizeof it.path, &bytes);
		dec.decode(dec.ctx, &it, 1);
		if (it.rc)
			fail_msg("%s: %s", IDS[i], it.reason);
		assert_int_equal(ops->decode_finish(s, &it, 1), 0);
	}
	rvs_decode_free(d);
}

/* Capture c, written to g_dir/name, uploaded into store s as trace `id`
 * (upload_add: queued for decoding), taken off the queue with its lease
 * (decode_next_batch), decoded by `dec` and its outcome recorded
 * (decode_finish), as the server's lanes do.  Frees c's bytes. */
static void ingest(struct rvs_store *s, const struct rvs_decoder *dec, capbuf *c, const char *name,
		   const char *id, uint8_t upload, const char *app, const char *version,
		   const char *model)
{
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it = {0};
	char path[sizeof it.path];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", g_dir, name);
	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(c->b, 1, c->len, f), c->len);
	fclose(f);
	snprintf(u.trace_id, sizeof u.trace_id, "%s", id);
	u.device_id = "d1";
	u.upload_id[0] = upload;
	u.app_id = app;
	u.app_version = version;
	u.model = model;
	u.anomaly_kind = 1;
	u.severity = 1;
	u.payload_kind = 1;
	u.payload_size = c->len;
	u.blob_sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
	u.blob_bytes = c->len;
	free(c->b);
	c->b = NULL;
	assert_int_equal(ops->upload_add(s, &u), 0);
	assert_int_equal(ops->decode_next_batch(s, 0, 1, &it, 1), 1);
	assert_string_equal(it.trace_id, id);
	snprintf(it.path, sizeof it.path, "%s", path);
	dec->decode(dec->ctx, &it, 1);
	if (it.rc)
		fail_msg("%s: %s", id, it.reason);
	assert_int_equal(ops->decode_finish(s, &it, 1), 0);
}

/* The three captures ingested into store s (ingest). */
static void decode_all(struct rvs_store *s)
{
	struct rvs_decoder dec;
	struct rvs_decode *d;

	sqlb_exec(g_cfg.database,
		  "INSERT INTO devices (device_id, token_hash, enrolled_at) VALUES ('d1', '\\x01', "
		  "0)",
		  0, NULL);
	assert_int_equal(rvs_decode_new(g_cfg.database, &dec, &d), 0);
	for (int i = 0; i < NCAP; i++) {
		capbuf c = {0};
		char name[16];

		capture(&c, i < 2);
		snprintf(name, sizeof name, "cap%d", i);
		ingest(s, &dec, &c, name, IDS[i], (uint8_t)(i + 1), "A", VERSIONS[i], MODELS[i]);
	}
	rvs_decode_free(d);
}

/* A migrated store (ops') with the three captures decoded, in g_cfg. */
static int setup(void **state)
{
	struct rvs_store *s;
	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-mcpu-XXXXXX");
	memset(&g_cfg, 0, sizeof g_cfg);
	if (pgh_store_dir(&pg, ops == &rvs_store_pg, g_dir, g_cfg.database, sizeof g_cfg.database,
			  g_cfg.blob_dir, sizeof g_cfg.blob_dir))
		return -1;
	if (ops->open(g_cfg.database, &s))
		return -1;
	decode_all(s);
	ops->close(s);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* GET path?query through the route table: the parsed body, status 200. */
static json_t *api(const char *path, const char *query)
{
	struct rvs_query_resp r;
	json_t *j;
	memset(&r, 0, sizeof r);
	rvs_api_v1(&g_cfg, 0, path, query, NULL, 0, &r);
	j = json_loadb(r.body ? r.body : "", r.len, 0, NULL);
	if (!j || r.status != 200)
		fail_msg("%s?%s: %d %.*s", path, query, r.status, (int)r.len, r.body ? r.body : "");
	free(r.body);
	return j;
}

/* The one integer sql gives for trace i's row of method m (-1: NULL). */
static int64_t row_int(const char *col, int i, const char *m)
{
	char sql[256];
	snprintf(sql, sizeof sql,
		 "SELECT %s FROM trace_methods WHERE trace_id = '%s'"
		 " AND method = '%s'",
		 col, IDS[i], m);
	return sqlb_int(g_cfg.database, sql);
}

static void test_method_cpu_decoder_stores_exact_split_and_null_without_cpu(void **state)
{
	static const struct {
		const char *m;
		int64_t calls, self, incl, cpu_self, cpu_incl;
	} want[] = {
		{"main", 1, 30000, 98000, 25000, 74000},
		{"work", 2, 48000, 68000, 45000, 49000},
		{"wait", 1, 20000, 20000, 4000, 4000},
	};
	for (int i = 0; i < 2; i++)
		for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
			assert_int_equal(row_int("calls", i, want[k].m), want[k].calls);
			assert_int_equal(row_int("self_ns", i, want[k].m), want[k].self);
			assert_int_equal(row_int("incl_ns", i, want[k].m), want[k].incl);
			assert_int_equal(row_int("cpu_self_ns", i, want[k].m), want[k].cpu_self);
			assert_int_equal(row_int("cpu_incl_ns", i, want[k].m), want[k].cpu_incl);
		}
	/* The plain capture: every row there, both columns NULL (not 0). */
	assert_int_equal(sqlb_int(g_cfg.database,
				  "SELECT count(*) FROM trace_methods WHERE trace_id ="
				  " 't-00000000000000000000000000000003'"),
			 4);
	assert_int_equal(sqlb_int(g_cfg.database,
				  "SELECT count(*) FROM trace_methods WHERE trace_id ="
				  " 't-00000000000000000000000000000003' AND cpu_self_ns IS NULL"
				  " AND cpu_incl_ns IS NULL"),
			 4);
	assert_int_equal(row_int("self_ns", 2, "main"), 27000);
	/* Nothing else stored a 0 for "unknown". */
	assert_int_equal(sqlb_int(g_cfg.database, "SELECT count(*) FROM trace_methods"
						  " WHERE cpu_self_ns = 0 OR cpu_incl_ns = 0"),
			 0);
}

/* doc["cpu"] is exactly {n, on self, off self, on incl, off incl}. */
static void cpu_is(const char *what, json_t *o, int64_t n, int64_t on_self, int64_t off_self,
		   int64_t on_incl, int64_t off_incl)
{
	json_t *want = json_pack("{s:I,s:I,s:I,s:I,s:I}", "traces", (json_int_t)n, "on_cpu_self_ns",
				 (json_int_t)on_self, "off_cpu_self_ns", (json_int_t)off_self,
				 "on_cpu_incl_ns", (json_int_t)on_incl, "off_cpu_incl_ns",
				 (json_int_t)off_incl);
	json_t *got = json_object_get(o, "cpu");
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT),
		     *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
		fail_msg("%s: cpu %s, want %s", what, g ? g : "(none)", w);
	}
	json_decref(want);
}

/* The by_version / by_model row whose key is val. */
static json_t *row(json_t *doc, const char *arr, const char *key, const char *val)
{
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(doc, arr), i, v)
	{
		if (!strcmp(json_string_value(json_object_get(v, key)), val))
			return v;
	}
	fail_msg("%s: no row %s", arr, val);
	return NULL;
}

static void test_method_cpu_api_sums_over_traces_with_cpu_data(void **state)
{
	json_t *doc = api("/api/v1/methods/main", "");

	/* 2 of the 3 traces have CPU data: 2 × (25000 on, 5000 off) of self,
	 * 2 × (74000 on, 24000 off) inclusive. */
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 3);
	cpu_is("main", doc, 2, 50000, 10000, 148000, 48000);
	cpu_is("main 1", row(doc, "by_version", "app_version", "1"), 1, 25000, 5000, 74000, 24000);
	cpu_is("main 2", row(doc, "by_version", "app_version", "2"), 1, 25000, 5000, 74000, 24000);
	assert_int_equal(json_integer_value(json_object_get(
				 row(doc, "by_version", "app_version", "2"), "count")),
			 2);
	cpu_is("main m1", row(doc, "by_model", "model", "m1"), 1, 25000, 5000, 74000, 24000);
	cpu_is("main m2", row(doc, "by_model", "model", "m2"), 1, 25000, 5000, 74000, 24000);
	/* The existing figures are unchanged: percentiles over all 3. */
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(doc, "self_ns"), "p95")), 30000);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(doc, "self_ns"), "p50")), 30000);
	json_decref(doc);

	doc = api("/api/v1/methods/work", "");
	cpu_is("work", doc, 2, 90000, 6000, 98000, 38000);
	json_decref(doc);

	/* Filtered (the joined read): version 2 holds t2 (CPU) and t3. */
	doc = api("/api/v1/methods/wait", "version=2");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 2);
	cpu_is("wait version 2", doc, 1, 4000, 16000, 4000, 16000);
	json_decref(doc);
	doc = api("/api/v1/methods/wait", "app=B");
	cpu_is("wait app B", doc, 0, 0, 0, 0, 0);
	json_decref(doc);

	/* Only in the plain capture: no trace to split, every figure 0. */
	doc = api("/api/v1/methods/log_line", "");
	assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
	cpu_is("log_line", doc, 0, 0, 0, 0, 0);
	cpu_is("log_line 2", row(doc, "by_version", "app_version", "2"), 0, 0, 0, 0, 0);
	json_decref(doc);
	doc = api("/api/v1/methods/nowhere", "");
	cpu_is("nowhere", doc, 0, 0, 0, 0, 0);
	json_decref(doc);
}

/* ---- per call path: trace_paths and the aggregates ---- */

/* The one integer of trace i's path row ending in method m (its column
 * col; -1: NULL); m "" is the app's root. */
static int64_t path_int(const char *col, int i, const char *m)
{
	char sql[320];
	snprintf(sql, sizeof sql,
		 "SELECT p.%s FROM trace_paths p JOIN agg_nodes n ON n.node = p.node"
		 " WHERE p.trace_id = '%s' AND n.method = '%s'",
		 col, IDS[i], m);
	return sqlb_int(g_cfg.database, sql);
}

/* The node of an aggregate reply whose method is m (unique in these
 * trees; the root's is the app id "A"). */
static json_t *agg_node(json_t *doc, const char *m)
{
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(doc, "nodes"), i, v)
	{
		if (!strcmp(json_string_value(json_object_get(v, "method")), m))
			return v;
	}
	fail_msg("no node %s", m);
	return NULL;
}

/* The split of node m under key: n traces with CPU data of `traces`, and
 * the sums; n 0: no such member at all. */
static void path_cpu_is(const char *what, json_t *doc, const char *key, const char *m,
			int64_t traces, int64_t n, int64_t on_self, int64_t off_self,
			int64_t on_incl, int64_t off_incl)
{
	json_t *nd = agg_node(doc, m);
	char tkey[16];

	snprintf(tkey, sizeof tkey, "%straces", key[0] == 'c' ? "" : key[0] == 'a' ? "a_" : "b_");
	if (json_integer_value(json_object_get(nd, tkey)) != traces)
		fail_msg("%s %s: %s %lld, want %lld", what, m, tkey,
			 (long long)json_integer_value(json_object_get(nd, tkey)),
			 (long long)traces);
	if (!n) {
		if (json_object_get(nd, key))
			fail_msg("%s %s: a %s member without CPU data", what, m, key);
		return;
	}
	json_t *o = json_object();
	json_object_set(o, "cpu", json_object_get(nd, key));
	cpu_is(what, o, n, on_self, off_self, on_incl, off_incl);
	json_decref(o);
}

/* Every read of the app's aggregate — the buckets (app alone; version),
 * the rollups (PostgreSQL's per-node one for the app alone; the per-day
 * one for a range not on whole days), the per-trace rows (a method filter,
 * weighted) — gives the same exact split, with cpu of its `traces` traces
 * carrying CPU data (the others, the plain captures, each a log_line).  (On sqlite the app alone
 * reads agg_sums.) */
static void every_read_agrees(const char *when, int64_t traces, int64_t cpu)
{
	static const char *const q[] = {"app=A", "app=A&since=1", "app=A&method=main",
					"app=A&method=main&weighted=1",
					"app=A&since=1&until=4000000000"};
	for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
		json_t *doc = api("/api/v1/aggregate", q[k]);
		char what[96];

		snprintf(what, sizeof what, "%s %s", when, q[k]);
		assert_int_equal(json_integer_value(json_object_get(doc, "traces")), traces);
		assert_int_equal(json_integer_value(json_object_get(doc, "cpu_traces")), cpu);
		/* Per CPU trace: main 25000 on / 5000 off self, 74000 / 24000
		 * inclusive; work 45000 / 3000, 49000 / 19000; wait 4000 /
		 * 16000 both; the root no self, all of main's inclusive. */
		path_cpu_is(what, doc, "cpu", "A", traces, cpu, 0, 0, cpu * 74000, cpu * 24000);
		path_cpu_is(what, doc, "cpu", "main", traces, cpu, cpu * 25000, cpu * 5000,
			    cpu * 74000, cpu * 24000);
		path_cpu_is(what, doc, "cpu", "work", traces, cpu, cpu * 45000, cpu * 3000,
			    cpu * 49000, cpu * 19000);
		path_cpu_is(what, doc, "cpu", "wait", traces, cpu, cpu * 4000, cpu * 16000,
			    cpu * 4000, cpu * 16000);
		/* Only in the plain captures: no split, not a 0 one. */
		path_cpu_is(what, doc, "cpu", "log_line", traces - cpu, 0, 0, 0, 0, 0);
		json_decref(doc);
	}
}

static void test_method_cpu_paths_exact_split_on_every_aggregate_read(void **state)
{
	static const struct {
		const char *m;
		int64_t self, incl, cpu_self, cpu_incl;
	} want[] = {
		{"", 0, 98000, 0, 74000},
		{"main", 30000, 98000, 25000, 74000},
		{"work", 48000, 68000, 45000, 49000},
		{"wait", 20000, 20000, 4000, 4000},
	};
	json_t *doc;

	for (int i = 0; i < 2; i++)
		for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
			assert_int_equal(path_int("self_ns", i, want[k].m), want[k].self);
			assert_int_equal(path_int("incl_ns", i, want[k].m), want[k].incl);
			assert_int_equal(path_int("cpu_self_ns", i, want[k].m), want[k].cpu_self);
			assert_int_equal(path_int("cpu_incl_ns", i, want[k].m), want[k].cpu_incl);
		}
	/* The plain capture's paths: every one NULL, never 0. */
	assert_int_equal(sqlb_int(g_cfg.database,
				  "SELECT count(*) FROM trace_paths WHERE"
				  " trace_id = 't-00000000000000000000000000000003'"
				  " AND cpu_self_ns IS NULL AND cpu_incl_ns IS NULL"),
			 5);
	every_read_agrees("decoded", 3, 2);

	/* One bucket: version 2 holds t2 (CPU) and t3. */
	doc = api("/api/v1/aggregate", "app=A&version=2");
	assert_int_equal(json_integer_value(json_object_get(doc, "cpu_traces")), 1);
	path_cpu_is("version 2", doc, "cpu", "main", 2, 1, 25000, 5000, 74000, 24000);
	json_decref(doc);
	/* The diff's sides each carry theirs: version 1 (t1) against 2. */
	doc = api("/api/v1/aggregate/diff", "app=A&a.version=1&b.version=2");
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(doc, "a"), "cpu_traces")), 1);
	path_cpu_is("diff a", doc, "a_cpu", "wait", 1, 1, 4000, 16000, 4000, 16000);
	path_cpu_is("diff b", doc, "b_cpu", "wait", 2, 1, 4000, 16000, 4000, 16000);
	path_cpu_is("diff b", doc, "b_cpu", "log_line", 1, 0, 0, 0, 0, 0);
	json_decref(doc);
	/* A heatmap cell (today, durations from 0) against the rest of five
	 * days around it: the rest reads the per-day rollup less the cell's
	 * rows as read for A (store_agg.h rvs_agg_rest_is_cell).  Every
	 * trace arrived today with a duration: the cell holds all three, the
	 * rest none. */
	{
		long long d = (long long)time(NULL) / 86400;
		char q[512];
		snprintf(q, sizeof q,
			 "app=A&a.since=%lld&a.until=%lld&a.dur_min=0&b.since=%lld&b.until=%lld"
			 "&b.except_since=%lld&b.except_until=%lld&b.except_dur_min=0",
			 d * 86400, (d + 1) * 86400, (d - 2) * 86400 + 1, (d + 3) * 86400,
			 d * 86400, (d + 1) * 86400);
		doc = api("/api/v1/aggregate/diff", q);
		assert_int_equal(json_integer_value(
					 json_object_get(json_object_get(doc, "a"), "cpu_traces")),
				 2);
		assert_int_equal(
			json_integer_value(json_object_get(json_object_get(doc, "b"), "traces")),
			0);
		assert_int_equal(json_integer_value(
					 json_object_get(json_object_get(doc, "b"), "cpu_traces")),
				 0);
		path_cpu_is("cell", doc, "a_cpu", "work", 3, 2, 90000, 6000, 98000, 38000);
		json_decref(doc);
	}
}

/* A re-decode deletes a trace's path rows (taken off every rollup: the
 * sqlite triggers; PostgreSQL's row trigger, statement trigger and batch
 * folds) and writes them again: t1 re-decoded without its CPU data leaves
 * one trace with a split, and back with it (as `reindex --all` after the
 * migration fills old rows) two again, on every read. */
static void test_method_cpu_redecode_takes_paths_off_and_back_on_the_rollups(void **state)
{
	static const int plain_t1[NCAP] = {0, 1, 0}, as_before[NCAP] = {1, 1, 0};
	struct rvs_store *s;
	size_t queued;
	char last[40];

	assert_int_equal(ops->open(g_cfg.database, &s), 0);
	assert_int_equal(ops->reindex_queue(s, "", 1, 100, last, &queued), NCAP);
	decode_queued(s, NCAP, plain_t1);
	assert_int_equal(path_int("cpu_self_ns", 0, "main"), -1);
	every_read_agrees("t1 plain", 3, 1);
	assert_int_equal(ops->reindex_queue(s, "", 1, 100, last, &queued), NCAP);
	decode_queued(s, NCAP, as_before);
	ops->close(s);
	assert_int_equal(path_int("cpu_self_ns", 0, "main"), 25000);
	every_read_agrees("t1 again", 3, 2);
	/* Nothing was left behind in the rollups: their CPU sums are the
	 * path rows' summed. */
	assert_int_equal(sqlb_int(g_cfg.database, "SELECT sum(cpu_traces) FROM agg_sums"),
			 sqlb_int(g_cfg.database, "SELECT count(cpu_self_ns) FROM trace_paths"));
	assert_int_equal(
		sqlb_int(g_cfg.database, "SELECT sum(off_self_ns) FROM agg_day_sums"),
		sqlb_int(g_cfg.database, "SELECT sum(self_ns - cpu_self_ns) FROM trace_paths"));
	if (ops == &rvs_store_pg)
		assert_int_equal(
			sqlb_int(g_cfg.database, "SELECT sum(cpu_incl_ns) FROM agg_node_sums"),
			sqlb_int(g_cfg.database, "SELECT sum(cpu_incl_ns) FROM trace_paths"));
}

/* A capture of app B whose top calls WIDE leaves one after another (100 ns
 * each), the last 8 of them half off the CPU: more paths than a capture of
 * its size keeps (pipeline/index_cap.h: budget / 384 nodes, here some
 * tens fewer), so the latest leaves — those 8 among them — fold into one
 * "(other)" row. */
#define WIDE 200
static void capture_wide(capbuf *c)
{
	uint64_t off[8][3];
	char name[32];

	cb_header(c, 100000, 1000000000, 0, 100000, 0x400000, 0);
	cb_entry(c, 0x2000, 1000);
	for (uint32_t k = 0; k < WIDE; k++) {
		cb_entry(c, 0x3000 + 16 * k, 2000 + 200 * k);
		cb_exit(c, 2100 + 200 * k);
	}
	cb_exit(c, 3000 + 200 * WIDE);
	cb_end_slots(c);
	cb_symbol(c, 0x2000, 0x2000, 0, "wide_top");
	for (uint32_t k = 0; k < WIDE; k++) {
		snprintf(name, sizeof name, "wide_leaf_%03u", k);
		cb_symbol(c, 0x3000 + 16 * k, 0x3000 + 16 * k, 0, name);
	}
	for (uint32_t i = 0; i < 8; i++) {
		uint64_t k = WIDE - 8 + i;
		off[i][0] = 2050 + 200 * k;
		off[i][1] = 2100 + 200 * k;
		off[i][2] = 2;
	}
	offcpu_record(c, (const uint64_t(*)[3])off, 8);
	cb_finish(c);
}

/* The folded callees' on/off-CPU time goes to their "(other)" row whole
 * (8 × 50 ns off the CPU, self = inclusive), their caller keeps its own
 * (none off the CPU), and the aggregate shows the same split. */
static void test_method_cpu_folded_paths_keep_their_split_in_other(void **state)
{
	static const char id[] = "t-00000000000000000000000000000004";
	struct rvs_decoder dec;
	struct rvs_decode *d;
	struct rvs_store *s;
	capbuf c = {0};
	char sql[400];
	json_t *doc, *cpu;

	capture_wide(&c);
	assert_int_equal(ops->open(g_cfg.database, &s), 0);
	assert_int_equal(rvs_decode_new(g_cfg.database, &dec, &d), 0);
	ingest(s, &dec, &c, "wide", id, 9, "B", "1", "m1");
	rvs_decode_free(d);
	ops->close(s);

#define OTHER_ROW                                                                         \
	" FROM trace_paths p JOIN agg_nodes n ON n.node = p.node WHERE p.trace_id = '%s'" \
	" AND n.method = '%s'"
	snprintf(sql, sizeof sql, "SELECT count(*)" OTHER_ROW, id, "(other)");
	assert_int_equal(sqlb_int(g_cfg.database, sql), 1);
	snprintf(sql, sizeof sql,
		 "SELECT (self_ns - cpu_self_ns) * 1000000 + (incl_ns - cpu_incl_ns) * 1000"
		 " + CASE WHEN self_ns = incl_ns THEN 1 ELSE 0 END" OTHER_ROW,
		 id, "(other)");
	assert_int_equal(sqlb_int(g_cfg.database, sql), 400 * 1000000 + 400 * 1000 + 1);
	/* wide_top: 2000 + 200 × WIDE ns, 100 × WIDE of them in its leaves;
	 * the 400 off the CPU are all in leaves. */
	snprintf(sql, sizeof sql, "SELECT cpu_self_ns * 1000000 + cpu_incl_ns" OTHER_ROW, id,
		 "wide_top");
	assert_int_equal(sqlb_int(g_cfg.database, sql),
			 (2000 + 100 * WIDE) * 1000000LL + 2000 + 200 * WIDE - 400);
#undef OTHER_ROW

	doc = api("/api/v1/aggregate", "app=B");
	cpu = json_object_get(agg_node(doc, "(other)"), "cpu");
	assert_int_equal(json_integer_value(json_object_get(cpu, "traces")), 1);
	assert_int_equal(json_integer_value(json_object_get(cpu, "off_cpu_self_ns")), 400);
	assert_int_equal(json_integer_value(json_object_get(cpu, "off_cpu_incl_ns")), 400);
	cpu = json_object_get(agg_node(doc, "wide_top"), "cpu");
	assert_int_equal(json_integer_value(json_object_get(cpu, "off_cpu_self_ns")), 0);
	assert_int_equal(json_integer_value(json_object_get(cpu, "off_cpu_incl_ns")), 400);
	json_decref(doc);
}

static void test_method_cpu_postgresql_missing_skips(void **state)
{
	print_message("PostgreSQL cases skipped: %s\n", pg_skip_why);
	skip();
}

int main(void)
{
	const struct CMUnitTest both[] = {
		cmocka_unit_test_setup_teardown(
			test_method_cpu_decoder_stores_exact_split_and_null_without_cpu, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_method_cpu_api_sums_over_traces_with_cpu_data,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_method_cpu_paths_exact_split_on_every_aggregate_read, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_method_cpu_redecode_takes_paths_off_and_back_on_the_rollups, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_method_cpu_folded_paths_keep_their_split_in_other, setup, teardown),
	};
	const struct CMUnitTest pg_missing[] = {
		cmocka_unit_test(test_method_cpu_postgresql_missing_skips),
	};
	int failed = 0, rc;

	ops = &rvs_store_sqlite;
	failed += cmocka_run_group_tests_name("method_cpu_sqlite", both, NULL, NULL);
	ops = &rvs_store_pg;
	rc = pgh_start(&pg);
	if (rc == 0) {
		failed += cmocka_run_group_tests_name("method_cpu_postgresql", both, NULL, NULL);
	} else if (rc == -ENOENT) {
		snprintf(pg_skip_why, sizeof pg_skip_why, "%s", pg.why);
		failed += cmocka_run_group_tests_name("method_cpu_postgresql", pg_missing, NULL,
						      NULL);
	} else {
		fprintf(stderr, "test_method_cpu: PostgreSQL did not start: %s\n", pg.why);
		failed++;
	}
	pgh_stop(&pg);
	return failed;
}
