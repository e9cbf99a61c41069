/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_upload.c — rearviewd's uploader against a real
 * rearview-server: `rearview-server init` in a mkdtemp() directory, the
 * server listening on 127.0.0.1 with a port it picks (listen = …:0,
 * port_file), a real rearviewd with [upload] pointing at it, rv_helper_app
 * answering captures.  What reached the server is checked through its own
 * interfaces: the engineer JSON API (/api/v1/traces/{id} with api.token)
 * and /metrics (first deliveries vs duplicates); what the daemon believes
 * through its spool index (read-only sqlite) and admin.sock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "rearview/policy.h"
#include "upload_harness.h"

#define CRASH_ROUNDS 20
#define MAX_ROWS     512

/* Every uploaded row's trace is on the server once; returns their count. */
static size_t check_on_server(struct rvh *h, const struct server *s)
{
	static struct row rows[MAX_ROWS];
	size_t n = spool_rows(h, rows, MAX_ROWS), up = 0;

	for (size_t i = 0; i < n; i++) {
		struct body b;
		char path[96];

		if (rows[i].state != 3) /* RVD_SPOOL_UPLOADED */
			continue;
		up++;
		assert_int_equal(strlen(rows[i].trace_id), 34);
		for (size_t k = i + 1; k < n; k++)
			assert_string_not_equal(rows[i].trace_id, rows[k].trace_id);
		snprintf(path, sizeof(path), "/api/v1/traces/%s", rows[i].trace_id);
		assert_int_equal(server_get(s, path, true, &b), 200);
		assert_non_null(strstr(b.buf, "\"app_id\":\"rv_helper_app\""));
		/* The payload arrived as a capture in its shuffled zstd form:
		 * the helper's captures are real ones, with a slot area. */
		assert_non_null(strstr(b.buf, "\"compression\":2"));
	}
	/* First deliveries: one per uploaded capture, none twice. */
	assert_int_equal(metric(s, "rearview_uploads_total"), (long)up);
	return up;
}

static uint64_t policy_version(struct rvh *h)
{
	Rearview__AdminResponse *r = rvh_status(h);
	uint64_t v = r && r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_STATUS
			     ? r->status->policy_version
			     : 0;

	if (r)
		rearview__admin_response__free_unpacked(r, NULL);
	return v;
}

static bool wait_policy_version(struct rvh *h, uint64_t want)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (policy_version(h) != want) {
		if (rvh_now() > until)
			return false;
		rvh_sleep_ms(20);
	}
	return true;
}

/* ---- tests ------------------------------------------------------------------- */

static char g_top[64];
/* What a test started, stopped by per_test_teardown even after a failed
 * assertion (cmocka leaves the test function by longjmp). */
static struct server g_s, g_other;
static struct rvh g_h;
static bool g_h_live;

static int per_test_teardown(void **state)
{
	(void)state;
	if (g_h_live)
		rvh_teardown(&g_h);
	g_h_live = false;
	server_stop(&g_s);
	server_stop(&g_other);
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(g_top, sizeof(g_top), "/tmp/rvd-up-XXXXXX");
	if (!mkdtemp(g_top))
		return -1;
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	curl_global_cleanup();
	if (getenv("RVH_KEEP"))
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_top);
	return run_quiet(cmd) == 0 ? 0 : -1;
}

/*
 * Starts a server `name` and a daemon uploading to it (extra config
 * appended; ca_file NULL: the server's own CA) with an rv_helper_app
 * registered.  Returns the helper's pid.
 */
static pid_t start_all(const char *name, const char *ca_file, const char *extra)
{
	char conf[1400], ca[200];
	pid_t app;

	assert_int_equal(server_setup(&g_s, g_top, name), 0);
	assert_int_equal(server_start(&g_s, 0), 0);
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_s.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca_file ? ca_file : ca);
	snprintf(conf + strlen(conf), sizeof(conf) - strlen(conf), "%s", extra ? extra : "");
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	app = rvh_helper(&g_h, "--reconnect", NULL);
	assert_true(rvh_wait_registered(&g_h, app, true));
	return app;
}

static void test_daemon_upload_captures_reach_server_once_and_policy_applied(void **state)
{
	char out[2048];
	pid_t app;

	(void)state;
	app = start_all("s1", NULL, NULL);
	for (int i = 0; i < 5; i++) {
		capture_now(&g_h, app);
		assert_true(rvh_wait_captures(&g_h, (size_t)i + 1) >= (size_t)i + 1);
	}
	assert_true(wait_uploaded(&g_h, 5));
	assert_int_equal(check_on_server(&g_h, &g_s), 5);
	/* admin.sock names each uploaded capture's trace (CaptureInfo.trace_id). */
	{
		Rearview__AdminResponse *r = rvh_captures(&g_h);
		size_t named = 0;

		assert_non_null(r);
		for (size_t i = 0; i < r->captures->n_captures; i++) {
			const Rearview__CaptureInfo *ci = r->captures->captures[i];

			if (!strcmp(ci->state, "uploaded") && strlen(ci->trace_id) == 34 &&
			    !strncmp(ci->trace_id, "t-", 2) && !ci->reason[0])
				named++;
		}
		assert_int_equal(named, 5);
		rearview__admin_response__free_unpacked(r, NULL);
	}
	/* The server unshuffled and inflated the payload and decoded it:
	 * rv_helper_app's capture is a real one (one call of
	 * rv_helper_app_answer), so it is indexed, not quarantined. */
	{
		static struct row rows[8];
		double until = rvh_now() + RVH_GUARD_S;
		char path[96];
		struct body b;

		assert_true(spool_rows(&g_h, rows, 8) >= 1);
		snprintf(path, sizeof(path), "/api/v1/traces/%s", rows[0].trace_id);
		do {
			assert_int_equal(server_get(&g_s, path, true, &b), 200);
			if (!strstr(b.buf, "\"pending_decode\""))
				break;
			rvh_sleep_ms(20);
		} while (rvh_now() < until);
		assert_null(strstr(b.buf, "\"quarantine_reason\":\"capture"));
		assert_non_null(strstr(b.buf, "rv_helper_app_answer"));
	}
	assert_int_equal(metric(&g_s, "rearview_enrollments_total"), 1);

	/* The server's default signed policy (version 1) was fetched, verified
	 * with its policy-signing.pub and applied. */
	assert_true(wait_policy_version(&g_h, 1));
	assert_int_equal(rvh_rvctl(&g_h, out, sizeof(out), "status"), 0);
	assert_non_null(strstr(out, "policy version:     1"));

	/* A restart keeps the device token: no second enrolment, no re-upload. */
	assert_true(WIFEXITED(rvh_stop_daemon(&g_h, SIGTERM)));
	assert_int_equal(rvh_start_daemon(&g_h), 0);
	assert_true(rvh_wait_registered(&g_h, app, true));
	capture_now(&g_h, app);
	assert_true(wait_uploaded(&g_h, 6));
	assert_int_equal(check_on_server(&g_h, &g_s), 6);
	assert_int_equal(metric(&g_s, "rearview_enrollments_total"), 1);
}

static void test_daemon_upload_wrong_ca_uploads_nothing_and_reports(void **state)
{
	char ca[200];
	pid_t app;

	(void)state;
	assert_int_equal(server_setup(&g_other, g_top, "s2-other"), 0);
	/* Pinned to another installation's CA: the real server must not be trusted. */
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_other.dir);
	app = start_all("s2", ca, NULL);
	capture_now(&g_h, app);
	assert_true(rvh_wait_captures(&g_h, 1) >= 1);
	assert_true(wait_status_error(&g_h, "enrolment"));
	/* curl's verification failure is what the operator gets to see. */
	assert_true(status_error(&g_h, "certificate"));
	/* Let a few retries happen; none may get through.  The capture becomes
	 * pending once summarized, which a loaded machine may not have done
	 * yet: wait for it. */
	rvh_sleep_ms(300);
	assert_true(wait_state_poll(&g_h, "pending", 1, 20));
	assert_int_equal(count_state(&g_h, "uploaded"), 0);
	assert_int_equal(count_state(&g_h, "pending"), 1);
	assert_int_equal(metric(&g_s, "rearview_enrollments_total"), 0);
	assert_int_equal(metric(&g_s, "rearview_uploads_total"), 0);
}

static void test_daemon_upload_server_down_backs_off_then_uploads(void **state)
{
	char conf[1024], ca[200];
	pid_t app;
	int port;

	(void)state;
	assert_int_equal(server_setup(&g_s, g_top, "s3"), 0);
	assert_int_equal(server_start(&g_s, 0), 0);
	port = g_s.port;
	server_stop(&g_s);
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_s.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca);
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	app = rvh_helper(&g_h, NULL);
	assert_true(rvh_wait_registered(&g_h, app, true));
	capture_now(&g_h, app);
	capture_now(&g_h, app);
	assert_true(rvh_wait_captures(&g_h, 1) >= 1);
	assert_true(wait_status_error(&g_h, "enrolment"));
	assert_int_equal(count_state(&g_h, "uploaded"), 0);

	/* Back on the same port: the next backoff attempt gets through. */
	assert_int_equal(server_start(&g_s, port), 0);
	assert_true(wait_uploaded(&g_h, rvh_wait_captures(&g_h, 1)));
	check_on_server(&g_h, &g_s);
}

static void test_daemon_upload_kill9_during_uploads_loses_and_duplicates_nothing(void **state)
{
	static struct row rows[MAX_ROWS];
	size_t n, up;
	pid_t app;
	double until;

	(void)state;
	srand((unsigned)getpid());
	app = start_all("s4", NULL, NULL);
	for (int round = 0; round < CRASH_ROUNDS; round++) {
		int shots = 1 + rand() % 3;

		assert_true(rvh_wait_registered(&g_h, app, true));
		for (int i = 0; i < shots; i++) {
			capture_now(&g_h, app);
			rvh_sleep_ms((unsigned)(rand() % 10));
		}
		/* Kill somewhere in store → pending → uploading → ack → uploaded. */
		rvh_sleep_ms((unsigned)(rand() % 40));
		rvh_stop_daemon(&g_h, SIGKILL);
		assert_int_equal(rvh_start_daemon(&g_h), 0);
	}
	/* Recovery re-sends whatever was pending or uploading. */
	until = rvh_now() + RVH_GUARD_S;
	for (;;) {
		bool settled = true;

		n = spool_rows(&g_h, rows, MAX_ROWS);
		for (size_t i = 0; i < n; i++)
			settled &= rows[i].state == 3 || rows[i].state == 4;
		if (settled || rvh_now() > until)
			break;
		rvh_sleep_ms(20);
	}
	up = check_on_server(&g_h, &g_s);
	print_message("%zu captures uploaded after %d kills, %ld duplicate deliveries answered\n",
		      up, CRASH_ROUNDS, metric(&g_s, "rearview_upload_duplicates_total"));
	assert_true(up >= 1);
	/* Nothing left behind: every capture with a file is on the server. */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rows[i].state, 3);
}

static void test_daemon_upload_consent_summary_sends_no_trace(void **state)
{
	static struct row rows[8];
	char path[96];
	struct body b;
	pid_t app;

	(void)state;
	/* The later key wins: consent summary. */
	app = start_all("s5", NULL, "[capture]\nconsent_default = summary\n");
	capture_now(&g_h, app);
	assert_true(wait_uploaded(&g_h, 1));
	assert_int_equal(spool_rows(&g_h, rows, 8), 1);
	snprintf(path, sizeof(path), "/api/v1/traces/%s", rows[0].trace_id);
	assert_int_equal(server_get(&g_s, path, true, &b), 200);
	/* PAYLOAD_NONE, nothing compressed, no blob. */
	assert_non_null(strstr(b.buf, "\"payload_kind\":0"));
	assert_non_null(strstr(b.buf, "\"compression\":0"));
}

/* At consent summary the local summary is what reaches the server: the
 * real instrumented demo app's slow builder tops the trace's self time
 * although no trace bytes were sent. */
/* The server's view of trace_id into *b, once it is decoded (or the guard
 * time is up: the caller's assertions then fail on what it shows). */
static void get_decoded(const struct server *s, const char *trace_id, struct body *b)
{
	char path[96];

	snprintf(path, sizeof(path), "/api/v1/traces/%s", trace_id);
	for (double until = rvh_now() + RVH_GUARD_S;; rvh_sleep_ms(50)) {
		assert_int_equal(server_get(s, path, true, b), 200);
		if (strstr(b->buf, "\"state\":\"decoded\"") || rvh_now() > until)
			break;
	}
}

static void test_daemon_upload_consent_summary_sends_the_local_summary(void **state)
{
	static struct row rows[8];
	char conf[1400], ca[200];
	struct body b;

	(void)state;
	assert_int_equal(server_setup(&g_s, g_top, "s10"), 0);
	assert_int_equal(server_start(&g_s, 0), 0);
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_s.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca);
	snprintf(conf + strlen(conf), sizeof(conf) - strlen(conf),
		 "[capture]\nconsent_default = summary\n");
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	assert_true(rvh_run_demo_app(&g_h) > 0);
	assert_true(wait_uploaded(&g_h, 1));
	assert_int_equal(spool_rows(&g_h, rows, 8), 1);
	/* Indexed from the envelope's Summary on the server's decode queue. */
	get_decoded(&g_s, rows[0].trace_id, &b);
	assert_non_null(strstr(b.buf, "\"payload_kind\":0"));
	assert_non_null(
		strstr(b.buf, "\"top_self\":[{\"rank\":1,\"method\":\"build_list_item_slow\""));
}

/* A server from before the shuffled form refuses COMPRESSION_ZSTD_SHUFFLED
 * as an unknown compression (400): the daemon sends the same capture again
 * as plain zstd instead of dropping it as rejected.  extra: more [upload]
 * keys, or "". */
static void old_server_gets_plain_zstd(const char *name, const char *extra)
{
	static struct row rows[8];
	char conf[1400], ca[200];
	struct body b;

	assert_int_equal(server_setup(&g_s, g_top, name), 0);
	g_s.bin = RV_TBIN_DIR "/server/rearview-server-v1";
	assert_int_equal(server_start(&g_s, 0), 0);
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_s.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca);
	snprintf(conf + strlen(conf), sizeof(conf) - strlen(conf), "%s", extra);
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	assert_true(rvh_run_demo_app(&g_h) > 0);
	assert_true(wait_uploaded(&g_h, 1));
	assert_int_equal(spool_rows(&g_h, rows, 8), 1);
	assert_int_equal(rows[0].state, 3); /* RVD_SPOOL_UPLOADED, not skipped */
	/* The shuffled attempt was refused, the plain one taken. */
	assert_true(metric(&g_s, "rearview_errors_total{reason=\"bad_request\"}") >= 1);
	assert_int_equal(metric(&g_s, "rearview_uploads_total"), 1);
	get_decoded(&g_s, rows[0].trace_id, &b);
	assert_non_null(strstr(b.buf, "\"compression\":1"));
	assert_non_null(
		strstr(b.buf, "\"top_self\":[{\"rank\":1,\"method\":\"build_list_item_slow\""));
}

static void test_daemon_upload_old_server_gets_plain_zstd(void **state)
{
	(void)state;
	old_server_gets_plain_zstd("s13", "");
}

/* The same with a backoff of at most 1 ms: the retry timer fires before the
 * spool has recorded the refused capture pending again (a write on the
 * spool's thread), so the retry must come from that record, not only from
 * the timer (else the capture waits for some other event: none comes). */
static void test_daemon_upload_old_server_retry_outruns_the_spool(void **state)
{
	(void)state;
	old_server_gets_plain_zstd("s14", "backoff_initial_ms = 1\nbackoff_max_ms = 1\n");
}

static void test_daemon_upload_metered_network_waits_until_pushed_policy_lifts_it(void **state)
{
	Rearview__PolicyBody body = REARVIEW__POLICY_BODY__INIT;
	char keydir[96], pub_path[160], doc_path[160], lift_path[160], extra[300];
	char *priv = NULL, *pub = NULL;
	uint8_t *doc = NULL;
	size_t doc_len;
	pid_t app;
	FILE *f;

	(void)state;
	snprintf(keydir, sizeof(keydir), "%s/keys", g_top);
	assert_int_equal(mkdir(keydir, 0700), 0);
	assert_int_equal(rvp_keygen(&priv, &pub), 0);
	body.version = 5;
	body.issued_at_s = (uint64_t)time(NULL);
	body.unmetered_only = true;
	assert_int_equal(rvp_policy_sign(&body, priv, &doc, &doc_len), 0);
	snprintf(pub_path, sizeof(pub_path), "%s/policy.pub", keydir);
	snprintf(doc_path, sizeof(doc_path), "%s/unmetered.policy", keydir);
	f = fopen(pub_path, "w");
	assert_non_null(f);
	fputs(pub, f);
	fclose(f);
	f = fopen(doc_path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(doc, 1, doc_len, f), doc_len);
	fclose(f);
	free(doc);
	/* The next document (version 6) lifts unmetered_only. */
	body.version = 6;
	body.unmetered_only = false;
	assert_int_equal(rvp_policy_sign(&body, priv, &doc, &doc_len), 0);
	snprintf(lift_path, sizeof(lift_path), "%s/lifted.policy", keydir);
	f = fopen(lift_path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(doc, 1, doc_len, f), doc_len);
	fclose(f);
	free(priv);
	free(pub);
	free(doc);

	snprintf(extra, sizeof(extra), "metered = true\n[policy]\npublic_key = %s\n", pub_path);
	app = start_all("s6", NULL, extra);
	assert_int_equal(rvh_rvctl(&g_h, NULL, 0, "push-policy %s", doc_path), 0);
	capture_now(&g_h, app);
	assert_true(rvh_wait_captures(&g_h, 1) >= 1);
	assert_true(wait_status_error(&g_h, "unmetered"));
	assert_int_equal(count_state(&g_h, "pending"), 1);
	assert_int_equal(metric(&g_s, "rearview_uploads_total"), 0);
	/* Issue 18 item 12: pushing the lifting policy lets the waiting
	 * capture go — no restart, no further capture (it used to wait). */
	assert_int_equal(rvh_rvctl(&g_h, NULL, 0, "push-policy %s", lift_path), 0);
	assert_true(wait_uploaded(&g_h, 1));
}

static void test_daemon_upload_ack_hint_fetches_newer_policy(void **state)
{
	Rearview__PolicyBody body;
	char path[220], tmp[230], key[4096];
	uint8_t *doc = NULL;
	size_t doc_len;
	pid_t app;
	FILE *f;

	(void)state;
	/* No periodic fetch: only the start and the server's hint fetch. */
	app = start_all("s7", NULL, "policy_interval_s = 0\n");
	capture_now(&g_h, app);
	assert_true(wait_uploaded(&g_h, 1));
	assert_true(wait_policy_version(&g_h, 1));

	/* The operator publishes version 2, signed with the server's key. */
	snprintf(path, sizeof(path), "%s/policy-signing.key", g_s.dir);
	read_file(path, key, sizeof(key));
	assert_true(strlen(key) > 0);
	body = *rvp_policy_default();
	body.version = 2;
	body.issued_at_s = (uint64_t)time(NULL);
	assert_int_equal(rvp_policy_sign(&body, key, &doc, &doc_len), 0);
	snprintf(path, sizeof(path), "%s/policy/current.spb", g_s.dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(doc, 1, doc_len, f), doc_len);
	fclose(f);
	free(doc);
	assert_int_equal(rename(tmp, path), 0);

	/* The next acknowledgement names version 2: the daemon fetches it. */
	capture_now(&g_h, app);
	assert_true(wait_uploaded(&g_h, 2));
	assert_true(wait_policy_version(&g_h, 2));
}

static void test_daemon_upload_rejected_upload_skipped_not_retried(void **state)
{
	char out[4096];
	pid_t app;
	FILE *f;
	int port;

	(void)state;
	app = start_all("s8", NULL, NULL);
	port = g_s.port;
	capture_now(&g_h, app);
	assert_true(wait_uploaded(&g_h, 1));

	/* Enrolled; now the server takes no body over 64 bytes: 413. */
	server_stop(&g_s);
	f = fopen(g_s.conf, "a");
	assert_non_null(f);
	fputs("max_body_bytes = 64\n", f);
	fclose(f);
	assert_int_equal(server_start(&g_s, port), 0);
	capture_now(&g_h, app);
	assert_true(wait_status_error(&g_h, "rejected: HTTP 413"));
	assert_true(wait_state_poll(&g_h, "skipped", 1, 20));
	assert_int_equal(rvh_rvctl(&g_h, out, sizeof(out), "captures"), 0);
	assert_non_null(strstr(out, "rejected_413"));
	/* Given up, not retried: nothing is waiting for a next attempt. */
	assert_int_equal(count_state(&g_h, "pending"), 0);
	assert_int_equal(count_state(&g_h, "uploading"), 0);
	assert_int_equal(count_state(&g_h, "uploaded"), 1);
}

/* quota_exhausted skips the server has heard of (GET /api/v1/skips). */
static long quota_skips_on_server(const struct server *s)
{
	struct body b;
	const char *p;
	long n = 0;

	assert_int_equal(server_get(s, "/api/v1/skips", true, &b), 200);
	/* {"reasons":[{"reason":"quota_exhausted","anomaly_kind":4,"count":N}…] */
	p = strstr(b.buf, "\"reason\":\"quota_exhausted\"");
	if (p && (p = strstr(p, "\"count\":")) != NULL)
		n = strtol(p + 8, NULL, 10);
	return n;
}

/* Skipped rows the spool marks as reported to the server. */
static int reported_skips(const struct rvh *h)
{
	char path[200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int n = -1;

	snprintf(path, sizeof(path), "%s/spool.db", h->state);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_busy_timeout(db, 5000) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM captures WHERE skip_reported = 1", -1, &st,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static void test_daemon_upload_quota_skip_is_reported_once(void **state)
{
	double until;
	pid_t app;

	(void)state;
	app = start_all("s9", NULL, NULL);
	/* Detector anomalies go through the policy: weekly quota 3, debounce 3
	 * per kind.  Two janks and one generic anomaly are captured ... */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(
			i < 2 ? rvh_rvctl(&g_h, NULL, 0, "event jank %d", (int)app)
			      : rvh_rvctl(&g_h, NULL, 0, "event anomaly gpu_stall %d", (int)app),
			0);
		assert_true(rvh_wait_captures(&g_h, (size_t)i + 1) >= (size_t)i + 1);
	}
	/* ... and the fourth is skipped for quota, and reported. */
	assert_int_equal(rvh_rvctl(&g_h, NULL, 0, "event anomaly gpu_stall %d", (int)app), 0);
	assert_true(wait_uploaded(&g_h, 3));
	assert_true(wait_state_poll(&g_h, "skipped", 1, 20));
	until = rvh_now() + RVH_GUARD_S;
	while (quota_skips_on_server(&g_s) < 1 && rvh_now() < until)
		rvh_sleep_ms(50);
	assert_int_equal(quota_skips_on_server(&g_s), 1);
	until = rvh_now() + RVH_GUARD_S;
	while (reported_skips(&g_h) < 1 && rvh_now() < until)
		rvh_sleep_ms(20);
	assert_int_equal(reported_skips(&g_h), 1);

	/* A restart (kill -9) does not send it again: the spool remembers (and
	 * a re-send would only be acknowledged as a duplicate). */
	rvh_stop_daemon(&g_h, SIGKILL);
	assert_int_equal(rvh_start_daemon(&g_h), 0);
	assert_true(rvh_wait_registered(&g_h, app, true));
	capture_now(&g_h, app); /* the uploader has run once more after the restart */
	assert_true(wait_uploaded(&g_h, 4));
	assert_int_equal(quota_skips_on_server(&g_s), 1);
}

/* How many lines of the daemon's log hold any of `needles` (NULL-ended). */
static unsigned log_lines_with(const struct rvh *h, const char *const *needles)
{
	char path[200], line[1024];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/daemon.log", h->dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		for (const char *const *k = needles; *k; k++)
			if (strstr(line, *k)) {
				n++;
				break;
			}
	fclose(f);
	return n;
}

/* Every start fetches the policy again: the one already in force is
 * neither applied anew nor a rollback (each clean restart used to log
 * "fetched policy refused: rollback" among the last errors). */
static void test_daemon_upload_restart_refetch_is_not_a_rollback(void **state)
{
	static const char *const judged[] = {"policy version 1 applied", "already in force",
					     "fetched policy refused", NULL};
	static const char *const rollback[] = {"rollback", NULL};
	double until;
	char out[4096];

	(void)state;
	start_all("s12", NULL, NULL);
	assert_true(wait_policy_version(&g_h, 1));
	assert_true(WIFEXITED(rvh_stop_daemon(&g_h, SIGTERM)));
	assert_int_equal(rvh_start_daemon(&g_h), 0);
	/* Wait for the restarted daemon's fetch to be judged. */
	until = rvh_now() + RVH_GUARD_S;
	while (log_lines_with(&g_h, judged) < 2 && rvh_now() < until)
		rvh_sleep_ms(20);
	assert_int_equal(log_lines_with(&g_h, judged), 2);
	assert_int_equal(log_lines_with(&g_h, rollback), 0);
	assert_int_equal(rvh_rvctl(&g_h, out, sizeof(out), "status"), 0);
	assert_null(strstr(out, "rollback"));
	assert_non_null(strstr(out, "policy version:     1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			test_daemon_upload_captures_reach_server_once_and_policy_applied,
			per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_wrong_ca_uploads_nothing_and_reports,
					  per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_server_down_backs_off_then_uploads,
					  per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_consent_summary_sends_no_trace,
					  per_test_teardown),
		cmocka_unit_test_teardown(
			test_daemon_upload_consent_summary_sends_the_local_summary,
			per_test_teardown),
		cmocka_unit_test_teardown(
			test_daemon_upload_metered_network_waits_until_pushed_policy_lifts_it,
			per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_ack_hint_fetches_newer_policy,
					  per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_restart_refetch_is_not_a_rollback,
					  per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_rejected_upload_skipped_not_retried,
					  per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_old_server_gets_plain_zstd,
					  per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_old_server_retry_outruns_the_spool,
					  per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_upload_quota_skip_is_reported_once,
					  per_test_teardown),
		cmocka_unit_test_teardown(
			test_daemon_upload_kill9_during_uploads_loses_and_duplicates_nothing,
			per_test_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
