/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_retention.c — the retention pass (retention.h) against a real store
 * (sqlite, or PostgreSQL with RVS_TEST_STORE=pg: store_env.h) and blob
 * directory in a temporary directory; the signature totals
 * the triggers of migration 3 keep; the retention config keys; the decode
 * histogram on /metrics.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "blob/blob.h"
#include "model/retention.h"
#include "base/metrics.h"
#include "base/config.h"
#include "server_common.h"
#include "store/store.h"
#include "store_env.h"

static const struct rvs_store_ops *ops; /* the store the switch picks (store_env.h) */

#define OLD   1000000	 /* received_at of "old" uploads (1970, week 1) */
#define NEWER 2000000000 /* far later */
/* The cutoff that expires OLD: the end of its week, since PostgreSQL's
 * retention drops whole weeks (sqlite's would take OLD + 1 as well). */
#define CUT (2 * 604800)

struct fx {
	char dir[64], db[512], blobs[128]; /* db: a sqlite file or a PostgreSQL URI */
	struct rvs_store *s;
	struct rvs_blobs *b; /* the blob store over blobs (local backend) */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct rvs_device_rec d = {0};
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-ret-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->blobs, sizeof f->blobs, "%s/t.db", f->dir);
	if (rvt_store_dsn(f->blobs, f->db, sizeof f->db))
		return -1;
	ops = rvs_store_for(f->db);
	snprintf(f->blobs, sizeof f->blobs, "%s/blobs", f->dir);
	if (ops->open(f->db, &f->s) || rvs_blobs_open_local(f->blobs, &f->b))
		return -1;
	/* PostgreSQL: the partitions of OLD's and NEWER's weeks. */
	if (rvt_store_is_pg() &&
	    rvt_db_exec(f->db, "SELECT rv_week_partitions(1);"
			       " SELECT rv_week_partitions(2000000000 / 604800);"))
		return -1;
	snprintf(d.device_id, sizeof d.device_id, "d-1");
	d.model = "m";
	if (ops->device_add(f->s, &d))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	ops->close(f->s);
	rvs_blobs_close(f->b);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

static __attribute__((format(printf, 2, 3))) void sql(struct fx *f, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	assert_int_equal(rvt_db_exec(f->db, buf), 0);
}

static int64_t num(struct fx *f, const char *q)
{
	return rvt_db_int(f->db, q, NULL);
}

/* An upload of `content` (blob stored, its mtime set to long ago), received
 * at `at`, indexed as a trace with signature sig (NULL: none) and one
 * method and chain row. */
static void add_trace(struct fx *f, int n, const char *content, int64_t at, const char *sig,
		      char blob_out[65])
{
	struct rvs_upload_rec u = {0};
	char path[1024];
	struct timeval tv[2] = {{1000, 0}, {1000, 0}};

	snprintf(u.trace_id, sizeof u.trace_id, "t-%032d", n);
	u.device_id = "d-1";
	memset(u.upload_id, n, 16);
	u.app_version = "1.0";
	assert_int_equal(rvs_blob_put(f->blobs, content, strlen(content), blob_out), 0);
	assert_int_equal(rvs_blob_path(f->blobs, blob_out, path, sizeof path), 0);
	assert_int_equal(utimes(path, tv), 0);
	u.blob_sha256 = blob_out;
	u.blob_bytes = strlen(content);
	assert_int_equal(ops->upload_add(f->s, &u), 0);
	sql(f, "UPDATE uploads SET received_at = %lld WHERE trace_id = '%s'", (long long)at,
	    u.trace_id);
	sql(f,
	    "INSERT INTO traces (trace_id, app_version, received_at, decoded_at) VALUES"
	    " ('%s', '1.0', %lld, 0)",
	    u.trace_id, (long long)at);
	/* PostgreSQL's rows carry their week (partitioned; then seq). */
	if (rvt_store_is_pg()) {
		sql(f, "INSERT INTO trace_methods VALUES ('%s', 'main', 1, 1, 1, 1, %lld)",
		    u.trace_id, (long long)at);
		sql(f,
		    "INSERT INTO trace_chains VALUES ('%s', 'top', 1, '%s', 'main;', 1, 1, 1, "
		    "%lld)",
		    u.trace_id, sig ? sig : "none", (long long)at);
	} else {
		sql(f,
		    "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns,"
		    " self_rank) VALUES ('%s', 'main', 1, 1, 1, 1)",
		    u.trace_id);
		sql(f, "INSERT INTO trace_chains VALUES ('%s', 'top', 1, '%s', 'main;', 1, 1, 1)",
		    u.trace_id, sig ? sig : "none");
	}
	if (sig)
		sql(f, "UPDATE traces SET signature = '%s' WHERE trace_id = '%s'", sig, u.trace_id);
}

static int blob_exists(struct fx *f, const char *hex)
{
	char path[1024];
	assert_int_equal(rvs_blob_path(f->blobs, hex, path, sizeof path), 0);
	return access(path, F_OK) == 0;
}

static void test_retention_old_traces_deleted_with_unshared_blobs(void **state)
{
	struct fx *f = *state;
	struct rvs_retention_stats st;
	char a[65], b[65], c[65];

	add_trace(f, 1, "only-a", OLD, "aaaaaaaaaaaaaaaa", a);
	add_trace(f, 2, "shared", OLD, "aaaaaaaaaaaaaaaa", b);
	add_trace(f, 3, "shared", NEWER, "cccccccccccccccc", c);
	assert_string_equal(b, c);
	assert_int_equal(
		num(f, "SELECT traces FROM signatures WHERE signature = 'aaaaaaaaaaaaaaaa'"), 2);

	assert_int_equal(rvs_retention_run(f->db, f->b, CUT, &st), 0);
	assert_int_equal(st.traces, 2);
	assert_int_equal(st.blobs, 1);
	assert_false(blob_exists(f, a));
	assert_true(blob_exists(f, c)); /* still referenced by the newer upload */
	assert_int_equal(num(f, "SELECT count(*) FROM uploads"), 1);
	assert_int_equal(num(f, "SELECT count(*) FROM traces"), 1);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_methods"), 1);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_chains"), 1);
	/* The triggers uncounted the deleted traces: the signature is gone. */
	assert_int_equal(num(f, "SELECT count(*) FROM signatures WHERE signature ="
				" 'aaaaaaaaaaaaaaaa'"),
			 0);
	assert_int_equal(num(f, "SELECT count(*) FROM signature_counts WHERE signature ="
				" 'aaaaaaaaaaaaaaaa'"),
			 0);
	assert_int_equal(
		num(f, "SELECT traces FROM signatures WHERE signature = 'cccccccccccccccc'"), 1);

	/* A second pass finds nothing more. */
	assert_int_equal(rvs_retention_run(f->db, f->b, CUT, &st), 0);
	assert_int_equal(st.traces, 0);
	assert_true(blob_exists(f, c));
}

static void test_retention_quarantined_and_pending_uploads_deleted(void **state)
{
	struct fx *f = *state;
	struct rvs_retention_stats st;
	struct rvs_decode_item it;
	char a[65], b[65];

	add_trace(f, 1, "q", OLD, NULL, a);
	add_trace(f, 2, "p", OLD, NULL, b);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, &it, 1), 1);
	it.rc = -EBADMSG;
	snprintf(it.reason, sizeof it.reason, "bad capture");
	assert_int_equal(ops->decode_finish(f->s, &it, 1), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM quarantine"), 1);
	assert_int_equal(num(f, "SELECT count(*) FROM decode_queue"), 1);

	assert_int_equal(rvs_retention_run(f->db, f->b, CUT, &st), 0);
	assert_int_equal(st.traces, 2);
	assert_int_equal(num(f, "SELECT count(*) FROM quarantine"), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM decode_queue"), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM uploads"), 0);
}

static void test_retention_recently_touched_blob_kept(void **state)
{
	struct fx *f = *state;
	struct rvs_retention_stats st;
	char a[65], again[65];

	add_trace(f, 1, "re-sent", OLD, NULL, a);
	/* The same content arrives again: put refreshes the mtime, and the
	 * new upload's row may not exist yet when retention runs. */
	assert_int_equal(rvs_blob_put(f->blobs, "re-sent", 7, again), 0);
	assert_int_equal(rvs_retention_run(f->db, f->b, CUT, &st), 0);
	assert_int_equal(st.traces, 1);
	assert_int_equal(st.blobs, 0);
	assert_true(blob_exists(f, a));
}

static void test_retention_signature_change_moves_counts(void **state)
{
	struct fx *f = *state;
	char a[65];

	add_trace(f, 1, "x", OLD, "1111111111111111", a);
	add_trace(f, 2, "y", NEWER, "1111111111111111", a);
	sql(f, "UPDATE traces SET signature = '2222222222222222' WHERE trace_id = '%s'",
	    "t-00000000000000000000000000000002");
	assert_int_equal(
		num(f, "SELECT traces FROM signatures WHERE signature = '1111111111111111'"), 1);
	assert_int_equal(
		num(f, "SELECT traces FROM signatures WHERE signature = '2222222222222222'"), 1);
	/* Per week and app version: the two traces are in different weeks. */
	assert_int_equal(num(f, "SELECT count(*) FROM signature_counts"), 2);
	assert_int_equal(num(f, "SELECT week FROM signature_counts WHERE signature ="
				" '2222222222222222'"),
			 NEWER / 604800);
	sql(f, "UPDATE traces SET signature = NULL");
	assert_int_equal(num(f, "SELECT count(*) FROM signatures"), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM signature_counts"), 0);
}

/* Writes `path` with mtime `at` (unix seconds). */
static void put_file(const char *path, time_t at)
{
	struct timeval tv[2] = {{at, 0}, {at, 0}};
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("leftover", fp);
	fclose(fp);
	assert_int_equal(utimes(path, tv), 0);
}

/* Issue 18 items 8 and 9: temporary files of writes a killed server never
 * finished, and blobs no upload references, are collected — old ones by the
 * pass, every temporary one by the start-up sweep — while referenced blobs,
 * fresh files and symlinks stay. */
static void test_retention_orphans_and_dead_temps_collected(void **state)
{
	struct fx *f = *state;
	char kept[65], orphan[65], path[1024], p2[1024];
	struct rvs_retention_stats st;
	struct rvs_blob_sweep_stats sw;
	struct stat sb;
	time_t now = time(NULL);

	add_trace(f, 1, "kept content", NEWER, NULL, kept);
	/* An orphan: stored, but its upload row never committed. */
	assert_int_equal(rvs_blob_put(f->blobs, "orphan content", 14, orphan), 0);
	assert_int_equal(rvs_blob_path(f->blobs, orphan, path, sizeof path), 0);
	put_file(path, 1000);
	/* Dead temporaries: in tmp/ and beside a blob, old and fresh. */
	snprintf(p2, sizeof p2, "%s/tmp", f->blobs);
	mkdir(p2, 0750);
	snprintf(p2, sizeof p2, "%s/tmp/%s.Xq12ab", f->blobs, orphan);
	put_file(p2, 1000);
	snprintf(p2, sizeof p2, "%s/%.2s/%s.tmp.Ab3dEf", f->blobs, kept, kept);
	put_file(p2, 1000);
	snprintf(p2, sizeof p2, "%s/%.2s/fresh.tmp", f->blobs, kept);
	put_file(p2, now);
	snprintf(p2, sizeof p2, "%s/%.2s/link", f->blobs, kept);
	assert_int_equal(symlink("/etc/passwd", p2), 0);

	assert_int_equal(rvs_retention_run(f->db, f->b, OLD, &st), 0);
	assert_int_equal(st.traces, 0);
	assert_int_equal(st.blobs, 1); /* the orphan */
	assert_int_equal(st.temps, 2); /* the two old temporaries */
	assert_int_equal(stat(path, &sb), -1);
	assert_int_equal(rvs_blob_path(f->blobs, kept, path, sizeof path), 0);
	assert_int_equal(stat(path, &sb), 0);
	snprintf(p2, sizeof p2, "%s/%.2s/fresh.tmp", f->blobs, kept);
	assert_int_equal(stat(p2, &sb), 0);
	snprintf(p2, sizeof p2, "%s/%.2s/link", f->blobs, kept);
	assert_int_equal(lstat(p2, &sb), 0);

	/* Start-up sweep: any temporary, whatever its age; blobs untouched. */
	assert_int_equal(rvs_blob_sweep(f->blobs, 0, NULL, NULL, &sw), 0);
	assert_int_equal(sw.temps, 1);
	assert_int_equal(sw.orphans, 0);
	snprintf(p2, sizeof p2, "%s/%.2s/fresh.tmp", f->blobs, kept);
	assert_int_equal(stat(p2, &sb), -1);
	assert_int_equal(stat(path, &sb), 0);
	snprintf(p2, sizeof p2, "%s/%.2s/link", f->blobs, kept);
	assert_int_equal(lstat(p2, &sb), 0);
}

static void test_retention_bad_database_fails_cleanly(void **state)
{
	struct fx *f = *state;
	struct rvs_retention_stats st = {9, 9, 9};
	char path[160];
	snprintf(path, sizeof path, "%s/missing/none.db", f->dir);
	assert_int_equal(rvs_retention_run(path, f->b, OLD, &st), -EIO);
	assert_int_equal(st.traces, 0);
}

static int write_conf(const char *dir, const char *extra, struct rvs_config *c, char *err)
{
	char path[160];
	FILE *fp;
	snprintf(path, sizeof path, "%s/c.conf", dir);
	fp = fopen(path, "w");
	if (!fp)
		return -1;
	fprintf(fp, "[server]\ndata_dir = %s\n%s\n", dir, extra);
	fclose(fp);
	memset(c, 0, sizeof *c);
	return rvs_config_load(path, c, err, 256);
}

static void test_retention_config_keys_parsed_and_checked(void **state)
{
	struct fx *f = *state;
	struct rvs_config c;
	char err[256];

	/* Issue 18 item 9: bounded by default (it kept everything forever). */
	assert_int_equal(write_conf(f->dir, "", &c, err), 0);
	assert_true(c.retention_days == RVS_DEFAULT_RETENTION_DAYS && c.retention_days > 0);
	assert_int_equal(write_conf(f->dir, "retention_days = 0", &c, err), 0);
	assert_true(c.retention_days == 0);
	assert_int_equal(c.retention_interval_s, 3600);
	assert_int_equal(
		write_conf(f->dir, "retention_days = 0.5\nretention_interval_s = 2", &c, err), 0);
	assert_true(c.retention_days == 0.5);
	assert_int_equal(c.retention_interval_s, 2);
	assert_int_not_equal(write_conf(f->dir, "retention_days = -1", &c, err), 0);
	assert_int_not_equal(write_conf(f->dir, "retention_days = 3x", &c, err), 0);
	assert_int_not_equal(write_conf(f->dir, "retention_interval_s = 0", &c, err), 0);
	/* The decode parallelism knob shares this test (config keys of server ops). */
	assert_int_equal(write_conf(f->dir, "", &c, err), 0);
	assert_int_equal(c.decode_jobs, sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1);
	assert_int_equal(write_conf(f->dir, "decode_jobs = 1", &c, err), 0);
	assert_int_equal(c.decode_jobs, 1);
	assert_int_equal(write_conf(f->dir, "decode_jobs = 2", &c, err), 0);
	assert_int_equal(c.decode_jobs, 2);
	assert_int_not_equal(write_conf(f->dir, "decode_jobs = 0", &c, err), 0);
	assert_int_not_equal(write_conf(f->dir, "decode_jobs = 5", &c, err), 0);
}

static void test_retention_metrics_render_histogram_and_counters(void **state)
{
	struct rvs_metrics m;
	struct rvs_hist h = {{0}, 0, 0};
	char *text;
	size_t len;

	memset(&m, 0, sizeof m);
	rvs_hist_observe(&h, 0.003);
	rvs_hist_observe(&h, 0.2);
	rvs_hist_observe(&h, 99);
	rvs_hist_merge(&m.decode_seconds, &h);
	m.retention_traces = 7;
	m.decode_runs = 5;
	m.decode_empty_runs = 2;
	m.decode_failures[rvs_decode_fail_class("zstd: corrupt or truncated")] = 2;
	m.decode_failures[rvs_decode_fail_class("capture: bad magic")] = 3;
	m.decode_failures[rvs_decode_fail_class("something new")] = 4;
	assert_int_equal(rvs_metrics_render(&m, &text, &len), 0);
	assert_non_null(strstr(text, "rearview_decode_seconds_bucket{le=\"0.005\"} 1\n"));
	assert_non_null(strstr(text, "rearview_decode_seconds_bucket{le=\"0.1\"} 1\n"));
	assert_non_null(strstr(text, "rearview_decode_seconds_bucket{le=\"0.25\"} 2\n"));
	assert_non_null(strstr(text, "rearview_decode_seconds_bucket{le=\"10\"} 2\n"));
	assert_non_null(strstr(text, "rearview_decode_seconds_bucket{le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(text, "rearview_decode_seconds_count 3\n"));
	assert_non_null(strstr(text, "rearview_retention_deleted_traces_total 7\n"));
	assert_non_null(strstr(text, "rearview_decode_failures_total{reason=\"zstd\"} 2\n"));
	assert_non_null(strstr(text, "rearview_decode_failures_total{reason=\"capture\"} 3\n"));
	assert_non_null(strstr(text, "rearview_decode_failures_total{reason=\"other\"} 4\n"));
	assert_non_null(strstr(text, "rearview_decode_failures_total{reason=\"index\"} 0\n"));
	assert_non_null(strstr(text, "rearview_decode_runs_total 5\n"));
	assert_non_null(strstr(text, "rearview_decode_empty_runs_total 2\n"));
	free(text);
}

/* The real server with retention_days a fraction of a second's worth and a
 * 1 s timer: an old upload disappears and /metrics counts the pass. */
static void test_retention_server_timer_deletes_and_counts(void **state)
{
	static char text[RVSB_TEXT_MAX];
	struct rvsb b;
	char rows[1024];
	CURL *h;
	int gone = 0;

	assert_int_equal(rvsb_init(&b), 0);
	/* The server migrates a PostgreSQL database as it starts: the rows go
	 * in through a store opened (and so migrated) here first. */
	if (rvt_store_is_pg()) {
		struct rvs_store *st;
		assert_int_equal(rvs_store_pg.open(b.db, &st), 0);
		rvs_store_pg.close(st);
	}
	snprintf(rows, sizeof rows,
		 "%sINSERT INTO devices (device_id, token_hash, client_device_id, model, os_build,"
		 " arch, enrolled_at) VALUES ('d-1', %s, 'c', 'm', 'o', 'a', 0);"
		 "INSERT INTO uploads (trace_id, device_id, upload_id, received_at, state)"
		 " VALUES ('t-old', 'd-1', %s, 1000, 'decoded');"
		 "INSERT INTO traces (trace_id, received_at, decoded_at, signature)"
		 " VALUES ('t-old', 1000, 1000, '00000000000000aa');",
		 /* PostgreSQL: received_at 1000's week first (partitioned). */
		 rvt_store_is_pg() ? "SELECT rv_week_partitions(0);" : "",
		 rvt_store_is_pg() ? "decode(repeat('00', 32), 'hex')" : "zeroblob(32)",
		 rvt_store_is_pg() ? "decode(repeat('00', 16), 'hex')" : "zeroblob(16)");
	assert_int_equal(rvt_db_exec(b.db, rows), 0);
	assert_int_equal(rvsb_start(&b, "retention_days = 0.0001\nretention_interval_s = 1\n"), 0);
	/* The pass commits its deletions before the loop counts it in
	 * /metrics: wait for the count, the event that ends the pass. */
	for (int i = 0; i < 600 && !gone; i++) {
		usleep(100000);
		text[0] = '\0';
		h = curl_easy_init();
		rvsb_curl(&b, h, "/metrics");
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, rvsb_append_text);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, text);
		assert_int_equal(curl_easy_perform(h), CURLE_OK);
		curl_easy_cleanup(h);
		gone = strstr(text, "rearview_retention_deleted_traces_total ") &&
		       !strstr(text, "rearview_retention_deleted_traces_total 0\n");
	}
	assert_true(gone);
	assert_int_equal(rvt_db_int(b.db, "SELECT count(*) FROM uploads", NULL), 0);
	assert_int_equal(rvt_db_int(b.db, "SELECT count(*) FROM signatures", NULL), 0);
	assert_non_null(strstr(text, "rearview_retention_deleted_traces_total 1\n"));
	assert_null(strstr(text, "rearview_retention_runs_total 0\n"));
	assert_int_equal(rvsb_stop(&b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_retention_old_traces_deleted_with_unshared_blobs, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_retention_quarantined_and_pending_uploads_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_recently_touched_blob_kept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_retention_signature_change_moves_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_retention_orphans_and_dead_temps_collected,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_bad_database_fails_cleanly, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_retention_config_keys_parsed_and_checked,
						setup, teardown),
		cmocka_unit_test(test_retention_metrics_render_histogram_and_counters),
		cmocka_unit_test(test_retention_server_timer_deletes_and_counts),
	};
	int rc;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
