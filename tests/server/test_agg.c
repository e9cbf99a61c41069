/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_agg.c — aggregate and differential flame graphs (agg.c, web_agg.c)
 * from captures of known times (capbuild.h) decoded by the real decoder
 * into a real store — sqlite, then a private PostgreSQL (pg_harness.h;
 * skipped, visibly, without one): exact per-trace means and counts, the diff
 * shaded by significance (a significant slowdown red, noise and changes
 * too few traces can show grey), the per-trace bound on call paths, the
 * bucket sums kept exact when a trace is deleted, trace-level filters
 * agreeing with the bucket sums, and unknown parameters named in a 400;
 * and the same captures giving the same documents on both backends.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "model/agg.h"
#include "api/api.h"
#include "pipeline/decode.h"
#include "api/query.h"
#include "blob/blob.h"
#include "store/store.h"

#include "capbuild.h"
#include "pg_harness.h"
#include "sql_both.h"
#include "web/web.h"

/* The backend the cases run on (main runs them on both), and the private
 * PostgreSQL server (pg_harness.h). */
static const struct rvs_store_ops *ops = &rvs_store_sqlite;
static struct pgh pg;
static char pg_skip_why[256];

struct fx {
	char dir[64], db[256], blobs[160]; /* db: the dsn, a file or a PostgreSQL URI */
	struct rvs_store *s;
	struct rvs_decode *d;
	struct rvs_decoder dec;
	int next;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct rvs_device_rec dev = {0};
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-agg-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	if (ops == &rvs_store_pg) {
		if (pgh_migrated_db(&pg, f->db, sizeof f->db))
			return -1;
	} else {
		snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
	}
	snprintf(f->blobs, sizeof f->blobs, "%s/blobs", f->dir);
	if (ops->open(f->db, &f->s) || rvs_decode_new(f->db, &f->dec, &f->d))
		return -1;
	snprintf(dev.device_id, sizeof dev.device_id, "d-1");
	if (ops->device_add(f->s, &dev))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	rvs_decode_free(f->d);
	ops->close(f->s);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

/* Method m's entry value and symbol. */
#define METHOD(m) (0x1000 + 16 * (uint64_t)(m))

static void header(capbuf *c)
{
	cb_header(c, 0, 1000000000, 0, 1000000000000ull, 0x400000, 0);
}

static void finish(capbuf *c, uint32_t last, const char *const *names, size_t n)
{
	cb_u64at(c, 16, last + 10);
	cb_end_slots(c);
	for (size_t m = 0; m < n; m++)
		cb_symbol(c, METHOD(m), METHOD(m), 0, names[m]);
	cb_finish(c);
}

/* main [0, 1000 + p) calls parse_json for p ns, then layout_pass for l
 * ns: main's self time is 1000 - l ns, parse_json's p. */
static const char *const APP_NAMES[] = {"main", "parse_json", "layout_pass"};

static capbuf app_capture_l(uint32_t p, uint32_t l)
{
	capbuf c = {0};
	uint32_t t = 1000;
	header(&c);
	cb_entry(&c, METHOD(0), t);
	cb_entry(&c, METHOD(1), t + 100);
	cb_exit(&c, t + 100 + p);
	cb_entry(&c, METHOD(2), t + 200 + p);
	cb_exit(&c, t + 200 + p + l);
	cb_exit(&c, t + 1000 + p);
	finish(&c, t + 1000 + p, APP_NAMES, 3);
	return c;
}

static capbuf app_capture(uint32_t p)
{
	return app_capture_l(p, 300);
}

/* Stores capture c as an upload of app/version/model and decodes it; the
 * trace id into id. */
static void add_trace(struct fx *f, const capbuf *c, const char *version, const char *model,
		      char id[40])
{
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it = {0};
	char hex[65];

	assert_int_equal(rvs_blob_put(f->blobs, c->b, c->len, hex), 0);
	f->next++;
	snprintf(u.trace_id, sizeof u.trace_id, "t-%032d", f->next);
	u.device_id = "d-1";
	memset(u.upload_id, 0, 16);
	memcpy(u.upload_id, &f->next, sizeof f->next);
	u.app_id = "com.example.app";
	u.app_version = version;
	u.model = model;
	u.anomaly_kind = 1;
	u.payload_kind = 1;
	u.blob_sha256 = hex;
	assert_int_equal(ops->upload_add(f->s, &u), 0);
	/* Taken from the queue as the decode step takes it (PostgreSQL's lease). */
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, &it, 1), 1);
	assert_string_equal(it.trace_id, u.trace_id);
	assert_int_equal(rvs_blob_path(f->blobs, hex, it.path, sizeof it.path), 0);
	f->dec.decode(f->dec.ctx, &it, 1);
	assert_int_equal(it.rc, 0);
	assert_int_equal(ops->decode_finish(f->s, &it, 1), 0);
	if (id)
		snprintf(id, 40, "%s", u.trace_id);
}

/* GET path?query on the JSON API; the parsed reply (status into *status). */
static json_t *api(struct fx *f, const char *path, const char *query, int *status)
{
	struct rvs_query_resp r;
	json_t *j;
	rvs_query_handle(f->db, f->blobs, path, query, &r);
	*status = r.status;
	j = json_loadb(r.body, r.len, 0, NULL);
	free(r.body);
	assert_non_null(j);
	return j;
}

/* The (first listed) node of doc whose method is name. */
static json_t *node(json_t *doc, const char *name)
{
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(doc, "nodes"), i, n)
	{
		if (!strcmp(json_string_value(json_object_get(n, "method")), name))
			return n;
	}
	fail_msg("no node %s", name);
	return NULL;
}

static int64_t iget(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v))
		fail_msg("no integer member %s", k);
	return json_integer_value(v);
}

static int64_t num(struct fx *f, const char *q)
{
	return sqlb_int(f->db, q);
}

/* Three traces of 4.2 (parse_json 100 ns) and two of 4.3 (400 ns). */
static void two_versions(struct fx *f)
{
	capbuf a = app_capture(100), b = app_capture(400);
	for (int i = 0; i < 3; i++)
		add_trace(f, &a, "4.2", i ? "Pixel 7" : "Pixel 8", NULL);
	for (int i = 0; i < 2; i++)
		add_trace(f, &b, "4.3", "Pixel 7", NULL);
	free(a.b);
	free(b.b);
}

static void test_agg_one_version_exact_means_and_counts(void **state)
{
	struct fx *f = *state;
	int status;
	json_t *doc, *n;

	two_versions(f);
	doc = api(f, "/api/v1/aggregate", "app=com.example.app&version=4.2", &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(doc, "traces"), 3);
	assert_string_equal(json_string_value(json_object_get(doc, "source")), "buckets");
	n = node(doc, "com.example.app"); /* the app's root */
	assert_int_equal(iget(n, "parent"), 0);
	assert_int_equal(iget(n, "incl_ns_per_trace"), 1100);
	n = node(doc, "main");
	assert_int_equal(iget(n, "incl_ns_per_trace"), 1100);
	assert_int_equal(iget(n, "self_ns_per_trace"), 700);
	assert_int_equal(iget(n, "traces"), 3);
	assert_int_equal(iget(n, "calls"), 3);
	n = node(doc, "parse_json");
	assert_int_equal(iget(n, "self_ns_per_trace"), 100);
	assert_int_equal(iget(n, "depth"), 2);
	assert_int_equal(iget(node(doc, "layout_pass"), "self_ns_per_trace"), 300);
	/* Bottom-up: heaviest self time first. */
	n = json_array_get(json_object_get(doc, "bottom_up"), 0);
	assert_string_equal(json_string_value(json_object_get(n, "method")), "main");
	json_decref(doc);
}

/* The diff's flame graph of fx's two versions, shaded by their regression
 * test (the web page's two API calls); caller frees. */
static char *diff_svg(struct fx *f, const char *a, const char *b, json_t **doc)
{
	char q[160], link[200], *svg = NULL;
	size_t len = 0;
	int status;
	json_t *reg;
	FILE *out;

	snprintf(q, sizeof q, "app=com.example.app&a.version=%s&b.version=%s", a, b);
	*doc = api(f, "/api/v1/aggregate/diff", q, &status);
	assert_int_equal(status, 200);
	snprintf(q, sizeof q, "app=com.example.app&a=%s&b=%s&limit=500", a, b);
	reg = api(f, "/api/v1/regressions", q, &status);
	assert_int_equal(status, 200);
	snprintf(link, sizeof link, "/regressions?%s", q);
	out = open_memstream(&svg, &len);
	assert_non_null(out);
	rvs_agg_flame_svg(out, *doc, 1, reg, link);
	assert_int_equal(fclose(out), 0);
	json_decref(reg);
	return svg;
}

/* The <g> of doc's node for method name in svg (NULL when not drawn). */
static const char *frame(const char *svg, json_t *doc, const char *name, const char *cls)
{
	char key[96];
	snprintf(key, sizeof key, "<g class=\"%s\" data-node=\"%lld\">", cls,
		 (long long)iget(node(doc, name), "node"));
	return strstr(svg, key);
}

/* The diff of 4.2 → 4.3 finds parse_json 4× slower with the right means
 * and counts, and it leads bottom-up; but three traces against two cannot
 * make it significant (the exact Mann–Whitney p is at least 0.2), so its
 * frame is grey, not red: noise never looks like a regression. */
static void test_agg_diff_planted_slower_method_exact_means_grey_when_not_significant(void **state)
{
	struct fx *f = *state;
	int status;
	json_t *doc, *n;
	char *svg;
	const char *at;

	two_versions(f);
	doc = api(f, "/api/v1/aggregate/diff", "app=com.example.app&a.version=4.2&b.version=4.3",
		  &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(json_object_get(doc, "a"), "traces"), 3);
	assert_int_equal(iget(json_object_get(doc, "b"), "traces"), 2);
	n = node(doc, "parse_json");
	assert_int_equal(iget(n, "a_self_ns_per_trace"), 100);
	assert_int_equal(iget(n, "b_self_ns_per_trace"), 400);
	assert_int_equal(iget(n, "self_delta_ns"), 300);
	assert_int_equal(iget(n, "a_traces"), 3);
	assert_int_equal(iget(n, "b_traces"), 2);
	assert_int_equal(iget(node(doc, "layout_pass"), "self_delta_ns"), 0);
	assert_int_equal(iget(node(doc, "main"), "self_delta_ns"), 0);
	assert_int_equal(iget(node(doc, "main"), "incl_delta_ns"), 300);
	n = json_array_get(json_object_get(doc, "bottom_up"), 0);
	assert_string_equal(json_string_value(json_object_get(n, "method")), "parse_json");
	json_decref(doc);

	svg = diff_svg(f, "4.2", "4.3", &doc);
	assert_non_null(at = frame(svg, doc, "parse_json", "n same"));
	assert_non_null(strstr(at, "fill=\"#dddddd\""));
	assert_null(strstr(svg, "n slower"));
	assert_null(strstr(svg, "n faster"));
	/* Each frame links to its method's row on /regressions. */
	assert_non_null(strstr(at, "<a href=\"/regressions?app=com.example.app&amp;a=4.2&amp;"
				   "b=4.3&amp;limit=500#m-parse_json\">"));
	assert_non_null(strstr(svg, "only where q &lt; 0.05; grey where q ≥ 0.05"));
	free(svg);
	json_decref(doc);
}

/* Eight traces a side: parse_json 100 → 400 ns in every trace is
 * significant (q far below 0.05, Cliff's delta +1): red at full
 * saturation; layout_pass's 300–330 ns against 305–335 ns is noise (its
 * mean self time grew 5 ns, which the old shading drew pink): grey. */
static void test_agg_diff_significant_change_red_noise_grey(void **state)
{
	struct fx *f = *state;
	json_t *doc;
	char *svg;
	const char *at;

	for (uint32_t i = 0; i < 8; i++) {
		capbuf a = app_capture_l(100, 300 + i % 4 * 10),
		       b = app_capture_l(400, 305 + i % 4 * 10);
		add_trace(f, &a, "5.0", "Pixel 7", NULL);
		add_trace(f, &b, "5.1", "Pixel 7", NULL);
		free(a.b);
		free(b.b);
	}
	svg = diff_svg(f, "5.0", "5.1", &doc);
	assert_int_equal(iget(node(doc, "layout_pass"), "self_delta_ns"), 5);
	assert_non_null(at = frame(svg, doc, "parse_json", "n slower"));
	assert_non_null(strstr(at, "fill=\"rgb(255,30,30)\""));
	assert_non_null(at = frame(svg, doc, "layout_pass", "n same"));
	assert_non_null(strstr(at, "fill=\"#dddddd\""));
	assert_non_null(frame(svg, doc, "main", "n same"));
	free(svg);
	json_decref(doc);
}

/* GET path?query on the JSON API whose body is a gzip'd profile.proto:
 * protoc's text of it (an independent decoder, against the schema of
 * rva_export_pprof's profiles); fails unless 200 application/octet-stream. */
static char *pprof_text(struct fx *f, const char *path, const char *query)
{
	static char text[1 << 16];
	struct rvs_query_resp r;
	char file[300], cmd[800];
	FILE *o;
	size_t n;

	rvs_query_handle(f->db, f->blobs, path, query, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/octet-stream");
	snprintf(file, sizeof file, "%s/p.pb.gz", f->dir);
	assert_non_null(o = fopen(file, "wb"));
	assert_int_equal(fwrite(r.body, 1, r.len, o), r.len);
	assert_int_equal(fclose(o), 0);
	free(r.body);
	snprintf(cmd, sizeof cmd,
		 "gzip -dc %s | protoc --proto_path=tracer/analysis/proto --decode=rvpprof.Profile "
		 "rvpprof.proto",
		 file);
	assert_non_null(o = popen(cmd, "r"));
	n = fread(text, 1, sizeof text - 1, o);
	text[n] = '\0';
	assert_int_equal(pclose(o), 0);
	return text;
}

/* The aggregate and the diff as pprof: the functions are the names in
 * order ("com.example.app" 1, "layout_pass" 2, "main" 3, "parse_json" 4),
 * parse_json's sample is its path leaf first; the aggregate's values are
 * the set's self time and calls (4.3: 2 traces of 400 ns), a diff side's
 * the self time per trace (for pprof -diff_base), the diff's B − A. */
static void test_agg_pprof_of_aggregate_and_diff_sides(void **state)
{
	struct fx *f = *state;
	static const char *const side[][2] = {{"a", "100"}, {"b", "400"}, {"diff", "300"}};
	char q[160], want[160];
	struct rvs_query_resp r;
	const char *text;

	two_versions(f);
	text = pprof_text(f, "/api/v1/aggregate/pprof", "app=com.example.app&version=4.3");
	assert_non_null(strstr(text, "string_table: \"com.example.app\"\nstring_table: "
				     "\"layout_pass\"\nstring_table: \"main\"\nstring_table: "
				     "\"parse_json\"\n"));
	assert_non_null(strstr(text, "sample {\n  location_id: 4\n  location_id: 3\n  "
				     "location_id: 1\n  value: 800\n  value: 2\n}"));
	assert_non_null(strstr(text, "sample {\n  location_id: 2\n  location_id: 3\n  "
				     "location_id: 1\n  value: 600\n  value: 2\n}"));
	for (int i = 0; i < 3; i++) {
		snprintf(q, sizeof q, "app=com.example.app&a.version=4.2&side=%s&b.version=4.3",
			 side[i][0]);
		text = pprof_text(f, "/api/v1/aggregate/diff/pprof", q);
		snprintf(want, sizeof want,
			 "sample {\n  location_id: 4\n  location_id: 3\n  location_id: 1\n  "
			 "value: %s\n}",
			 side[i][1]);
		if (!strstr(text, want))
			fail_msg("side %s: no %s in\n%s", side[i][0], want, text);
	}
	/* layout_pass did not change: no sample in the difference. */
	assert_null(strstr(text, "location_id: 2\n  location_id: 3"));
	rvs_query_handle(f->db, f->blobs, "/api/v1/aggregate/diff/pprof",
			 "app=com.example.app&side=c", &r);
	assert_int_equal(r.status, 400);
	free(r.body);
}

/* A trace-level filter (contains method) reads per-trace rows and agrees
 * with the bucket sums; a model filter narrows the bucket sums. */
static void test_agg_trace_filter_agrees_with_buckets(void **state)
{
	struct fx *f = *state;
	int status;
	json_t *doc;

	two_versions(f);
	doc = api(f, "/api/v1/aggregate", "app=com.example.app&version=4.3&method=parse_json",
		  &status);
	assert_int_equal(status, 200);
	assert_string_equal(json_string_value(json_object_get(doc, "source")), "traces");
	assert_int_equal(iget(doc, "traces"), 2);
	assert_int_equal(iget(node(doc, "parse_json"), "self_ns_per_trace"), 400);
	json_decref(doc);
	doc = api(f, "/api/v1/aggregate", "app=com.example.app&model=Pixel+8", &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(doc, "traces"), 1);
	json_decref(doc);
	doc = api(f, "/api/v1/aggregate", "app=com.example.app&kind=ANOMALY_JANK", &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(doc, "traces"), 5);
	json_decref(doc);
	doc = api(f, "/api/v1/aggregate", "kind=2", &status);
	assert_int_equal(iget(doc, "traces"), 0);
	json_decref(doc);
	doc = api(f, "/api/v1/aggregate", "method=no_such_method", &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(doc, "traces"), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 0);
	json_decref(doc);
}

/* Deleting a trace (retention, re-decode) takes its rows out of the sums. */
static void test_agg_deleted_trace_leaves_the_sums(void **state)
{
	struct fx *f = *state;
	capbuf a = app_capture(100), b = app_capture(400);
	char id[40];
	const char *del[] = {id};
	int status;
	json_t *doc;

	add_trace(f, &a, "4.2", "Pixel 7", NULL);
	add_trace(f, &b, "4.2", "Pixel 7", id);
	sqlb_exec(f->db, "DELETE FROM traces WHERE trace_id = $1", 1, del);
	/* PostgreSQL's traces is partitioned: no cascade; its index writer and
	 * retention delete the aggregate rows themselves, as here. */
	if (ops == &rvs_store_pg) {
		sqlb_exec(f->db, "DELETE FROM trace_paths WHERE trace_id = $1", 1, del);
		sqlb_exec(f->db, "DELETE FROM trace_agg WHERE trace_id = $1", 1, del);
	}
	doc = api(f, "/api/v1/aggregate", "app=com.example.app", &status);
	assert_int_equal(iget(doc, "traces"), 1);
	assert_int_equal(iget(node(doc, "parse_json"), "self_ns_per_trace"), 100);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_paths"), 4);
	assert_int_equal(num(f, "SELECT sum(traces) FROM agg_sums"), 4);
	/* PostgreSQL's per-node rollup, which the app's aggregate above read:
	 * the remaining trace's rows alone. */
	if (ops == &rvs_store_pg)
		assert_int_equal(num(f, "SELECT sum(traces) FROM agg_node_sums"), 4);
	/* The per-day rollup (both backends): the same rows, per node and day. */
	assert_int_equal(num(f, "SELECT sum(traces) FROM agg_day_sums"), 4);
	assert_int_equal(num(f,
			     "SELECT count(*) FROM (SELECT s.node, b.day, sum(s.traces) t,"
			     " sum(s.calls) c, sum(s.self_ns) x, sum(s.incl_ns) i FROM agg_sums s"
			     " JOIN agg_buckets b ON b.bucket = s.bucket GROUP BY s.node, b.day) a"
			     " FULL JOIN agg_day_sums r ON r.node = a.node AND r.day = a.day"
			     " WHERE r.node IS NULL OR a.node IS NULL OR r.traces <> a.t"
			     " OR r.calls <> a.c OR r.self_ns <> a.x OR r.incl_ns <> a.i"),
			 0);
	json_decref(doc);
	free(a.b);
	free(b.b);
}

/* Decodes what is on the decode queue as the server's decode lane does;
 * how many. */
static int drain_queue(struct fx *f)
{
	struct rvs_decode_item it;
	int n = 0;

	for (;;) {
		memset(&it, 0, sizeof it);
		if (ops->decode_next_batch(f->s, 0, 1, &it, 1) != 1)
			return n;
		assert_int_equal(rvs_blob_path(f->blobs, it.blob_sha256, it.path, sizeof it.path),
				 0);
		f->dec.decode(f->dec.ctx, &it, 1);
		assert_int_equal(it.rc, 0);
		assert_int_equal(ops->decode_finish(f->s, &it, 1), 0);
		n++;
	}
}

/* Re-index (`rearview-server reindex`): traces whose aggregate rows are
 * gone (as a migration that adds them leaves the traces before it) are
 * found in batches, queued, decoded again from their blobs, and the
 * aggregate is the one before, exactly; traces with rows are left alone,
 * unless all is asked for. */
static void test_agg_reindex_rebuilds_dropped_aggregates(void **state)
{
	struct fx *f = *state;
	char id[3][40], last[40];
	const char *del[1];
	int status;
	uint64_t queued, total = 0;
	json_t *before, *gone, *after;
	capbuf a = app_capture(100), b = app_capture(400);
	int rc, batches = 0;
	char from[40] = "";

	add_trace(f, &a, "4.2", "Pixel 7", id[0]);
	add_trace(f, &b, "4.2", "Pixel 8", id[1]);
	add_trace(f, &b, "4.3", "Pixel 7", id[2]);
	before = api(f, "/api/v1/aggregate", "app=com.example.app", &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(before, "traces"), 3);
	/* Nothing to do while every trace has its rows. */
	assert_int_equal(ops->reindex_queue(f->s, "", 0, 10, last, &queued), 0);
	assert_int_equal(queued, 0);
	for (int i = 0; i < 2; i++) {
		del[0] = id[i];
		sqlb_exec(f->db, "DELETE FROM trace_paths WHERE trace_id = $1", 1, del);
		sqlb_exec(f->db, "DELETE FROM trace_agg WHERE trace_id = $1", 1, del);
	}
	gone = api(f, "/api/v1/aggregate", "app=com.example.app", &status);
	assert_int_equal(iget(gone, "traces"), 1);
	/* Batches of one: the cursor moves past each, the third trace is
	 * never queued. */
	while ((rc = ops->reindex_queue(f->s, from, 0, 1, last, &queued)) > 0) {
		assert_int_equal(rc, 1);
		assert_string_equal(last, id[batches]);
		memcpy(from, last, sizeof from);
		total += queued;
		batches++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(batches, 2);
	assert_int_equal(total, 2);
	assert_int_equal(num(f, "SELECT count(*) FROM uploads WHERE state = 'pending_decode'"), 2);
	/* Queued ones are not queued twice. */
	assert_int_equal(ops->reindex_queue(f->s, "", 0, 10, last, &queued), 0);
	assert_int_equal(drain_queue(f), 2);
	after = api(f, "/api/v1/aggregate", "app=com.example.app", &status);
	assert_int_equal(status, 200);
	assert_true(json_equal(before, after));
	assert_int_equal(num(f, "SELECT count(*) FROM trace_agg"), 3);
	/* all: every decoded trace, once, and the sums stay exact. */
	assert_int_equal(ops->reindex_queue(f->s, "", 1, 100, last, &queued), 3);
	assert_int_equal(queued, 3);
	assert_string_equal(last, id[2]);
	assert_int_equal(ops->reindex_queue(f->s, "", 1, 0, last, &queued), -EINVAL);
	assert_int_equal(drain_queue(f), 3);
	json_decref(after);
	after = api(f, "/api/v1/aggregate", "app=com.example.app", &status);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(gone);
	json_decref(after);
	free(a.b);
	free(b.b);
}

/* The trace list's total: every trace its filter matches, whatever the
 * page's size or cursor (the list's filter and the total's are one). */
static void test_agg_trace_list_total_counts_every_match(void **state)
{
	struct fx *f = *state;
	static const struct {
		const char *query;
		int page, total;
	} cases[] = {
		{"limit=1", 1, 5},	   {"version=4.2&limit=2", 2, 3},
		{"version=4.3", 2, 2},	   {"model=Pixel+7&method=parse_json", 4, 4},
		{"app=no.such.app", 0, 0}, {"limit=2&cursor=3", 2, 5},
	};
	int status;
	json_t *doc;

	two_versions(f);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		doc = api(f, "/api/v1/traces", cases[i].query, &status);
		assert_int_equal(status, 200);
		assert_int_equal(json_array_size(json_object_get(doc, "traces")), cases[i].page);
		assert_int_equal(iget(doc, "total"), cases[i].total);
		json_decref(doc);
	}
}

/* main calls 600 distinct methods, method k for k + 1 ns: 602 tree nodes
 * (root and main included) keep 512 — the 510 longest callees — and the 90
 * shortest (1..90 ns: 4095 ns) are one "(other)" node; self times still
 * sum to the root's inclusive time. */
static void test_agg_more_paths_than_the_cap_fold_into_other(void **state)
{
	struct fx *f = *state;
	enum { N = 600 };
	static char names[N + 1][24];
	const char *np[N + 1];
	capbuf c = {0};
	uint32_t t = 1000;
	int status;
	json_t *doc;

	header(&c);
	snprintf(names[0], sizeof names[0], "main");
	np[0] = names[0];
	cb_entry(&c, METHOD(0), t);
	/* Each callee called twice: the capture is large enough that its
	 * index budget (index_cap.h) allows the full RVS_AGG_MAX_NODES. */
	for (int k = 0; k < N; k++) {
		snprintf(names[k + 1], sizeof names[k + 1], "callee_%03d", k);
		np[k + 1] = names[k + 1];
		for (int r = 0; r < 2; r++) {
			cb_entry(&c, METHOD(k + 1), ++t);
			t += (uint32_t)k + 1;
			cb_exit(&c, t);
		}
	}
	cb_exit(&c, ++t);
	finish(&c, t, np, N + 1);
	add_trace(f, &c, "1.0", "Pixel 7", NULL);
	free(c.b);

	assert_int_equal(num(f, "SELECT nodes FROM trace_agg"), RVS_AGG_MAX_NODES);
	assert_int_equal(num(f, "SELECT folded FROM trace_agg"), 602 - RVS_AGG_MAX_NODES);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_paths"), RVS_AGG_MAX_NODES + 1);
	assert_int_equal(num(f, "SELECT sum(self_ns) FROM trace_paths"),
			 num(f, "SELECT total_ns FROM trace_agg"));
	doc = api(f, "/api/v1/aggregate", "app=com.example.app", &status);
	assert_int_equal(status, 200);
	assert_int_equal(iget(node(doc, RVS_AGG_OTHER), "incl_ns_per_trace"), 2 * (90 * 91 / 2));
	assert_int_equal(iget(node(doc, RVS_AGG_OTHER), "calls"), 2 * 90);
	assert_int_equal(iget(node(doc, "callee_090"), "incl_ns_per_trace"), 2 * 91);
	json_decref(doc);
}

static void test_agg_unknown_or_bad_parameter_is_named_in_a_400(void **state)
{
	struct fx *f = *state;
	int status;
	json_t *doc;

	doc = api(f, "/api/v1/aggregate", "app=x&sort=self", &status);
	assert_int_equal(status, 400);
	assert_string_equal(json_string_value(json_object_get(doc, "error")),
			    "unknown parameter: sort");
	json_decref(doc);
	doc = api(f, "/api/v1/aggregate", "a.version=4.2", &status);
	assert_int_equal(status, 400);
	assert_string_equal(json_string_value(json_object_get(doc, "error")),
			    "unknown parameter: a.version");
	json_decref(doc);
	doc = api(f, "/api/v1/aggregate/diff", "b.kind=sluggish", &status);
	assert_int_equal(status, 400);
	assert_string_equal(json_string_value(json_object_get(doc, "error")),
			    "bad value for parameter: b.kind");
	json_decref(doc);
	/* Kinds by short name, as everywhere (params.c). */
	doc = api(f, "/api/v1/aggregate/diff", "b.kind=jank", &status);
	assert_int_equal(status, 200);
	json_decref(doc);
}

/* The same captures decoded into sqlite and into PostgreSQL give the same
 * aggregates and diffs, node ids included (both backends number the
 * dictionary in rvs_agg_build's order). */
static void test_agg_same_aggregates_on_sqlite_and_postgresql(void **state)
{
	static const char *const req[][2] = {
		{"/api/v1/aggregate", ""},
		{"/api/v1/aggregate", "app=com.example.app&version=4.2"},
		{"/api/v1/aggregate", "app=com.example.app&model=Pixel+8"},
		{"/api/v1/aggregate", "app=com.example.app&method=parse_json"},
		{"/api/v1/aggregate", "version=4.3&since=1"},
		{"/api/v1/aggregate", "method=no_such_method"},
		{"/api/v1/aggregate/diff", "app=com.example.app&a.version=4.2&b.version=4.3"},
		{"/api/v1/aggregate/diff", "a.model=Pixel+8&b.method=layout_pass"},
	};
	struct fx *on_pg = *state, *on_sqlite;
	void *st = NULL;
	capbuf wide = {0};
	const char *names[40];
	char name[40][16];

	assert_true(ops == &rvs_store_pg);
	ops = &rvs_store_sqlite;
	assert_int_equal(setup(&st), 0);
	on_sqlite = st;
	/* Two versions, and a capture of 40 callees of main (3.9) to fold. */
	header(&wide);
	cb_entry(&wide, METHOD(0), 1000);
	names[0] = "main";
	for (uint32_t m = 1; m < 40; m++) {
		snprintf(name[m], sizeof name[m], "callee_%u", m);
		names[m] = name[m];
		cb_entry(&wide, METHOD(m), 1000 + 100 * m);
		cb_exit(&wide, 1000 + 100 * m + m);
	}
	cb_exit(&wide, 6000);
	finish(&wide, 6000, names, 40);
	two_versions(on_sqlite);
	add_trace(on_sqlite, &wide, "3.9", "Pixel 6", NULL);
	ops = &rvs_store_pg;
	two_versions(on_pg);
	add_trace(on_pg, &wide, "3.9", "Pixel 6", NULL);
	free(wide.b);
	for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
		json_t *a, *b;
		char *ta, *tb;
		int sa, sb;
		a = api(on_sqlite, req[i][0], req[i][1], &sa);
		b = api(on_pg, req[i][0], req[i][1], &sb);
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
	assert_int_equal(num(on_sqlite, "SELECT count(*) FROM trace_paths"),
			 num(on_pg, "SELECT count(*) FROM trace_paths"));
	assert_int_equal(num(on_sqlite, "SELECT max(node) FROM agg_nodes"),
			 num(on_pg, "SELECT max(node) FROM agg_nodes"));
	ops = &rvs_store_sqlite;
	assert_int_equal(teardown(&st), 0);
	ops = &rvs_store_pg;
}

static void test_agg_postgresql_missing_skips(void **state)
{
	print_message("PostgreSQL cases skipped: %s\n", pg_skip_why);
	skip();
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_agg_one_version_exact_means_and_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agg_diff_significant_change_red_noise_grey,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_agg_diff_planted_slower_method_exact_means_grey_when_not_significant,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_agg_pprof_of_aggregate_and_diff_sides, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agg_trace_filter_agrees_with_buckets, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agg_deleted_trace_leaves_the_sums, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agg_reindex_rebuilds_dropped_aggregates, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agg_trace_list_total_counts_every_match, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_agg_more_paths_than_the_cap_fold_into_other,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_agg_unknown_or_bad_parameter_is_named_in_a_400,
						setup, teardown),
	};
	const struct CMUnitTest pg_only[] = {
		cmocka_unit_test_setup_teardown(test_agg_same_aggregates_on_sqlite_and_postgresql,
						setup, teardown),
	};
	const struct CMUnitTest pg_missing[] = {
		cmocka_unit_test(test_agg_postgresql_missing_skips),
	};
	int failed = 0, rc;

	ops = &rvs_store_sqlite;
	failed += cmocka_run_group_tests_name("agg_sqlite", tests, NULL, NULL);
	ops = &rvs_store_pg;
	rc = pgh_start(&pg);
	if (rc == 0) {
		failed += cmocka_run_group_tests_name("agg_postgresql", tests, NULL, NULL);
		failed += cmocka_run_group_tests_name("agg_both", pg_only, NULL, NULL);
	} else if (rc == -ENOENT) {
		snprintf(pg_skip_why, sizeof pg_skip_why, "%s", pg.why);
		failed += cmocka_run_group_tests_name("agg_postgresql", pg_missing, NULL, NULL);
	} else {
		fprintf(stderr, "test_agg: PostgreSQL did not start: %s\n", pg.why);
		failed++;
	}
	pgh_stop(&pg);
	return failed;
}
