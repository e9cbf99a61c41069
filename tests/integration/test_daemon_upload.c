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
#include <curl/curl.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "daemon_harness.h"

#define CRASH_ROUNDS 20
#define MAX_ROWS     512

struct server {
	char dir[128]; /* the data directory */
	char conf[160];
	char token[64]; /* api.token */
	int port;
	pid_t pid;
};

struct row {
	long long id;
	int state;
	char trace_id[40];
};

/* ---- the server ------------------------------------------------------------ */

static int run_quiet(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (!f)
		return;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
}

/* Starts the server (listen = 127.0.0.1:port; 0 = any) and waits for its port file. */
static int server_start(struct server *s, int port)
{
	char path[200], buf[32], *end;
	double until = rvh_now() + RVH_GUARD_S;
	FILE *f = fopen(s->conf, "a");

	if (!f)
		return -1;
	/* Later keys win in the server's INI reader: the last listen line applies. */
	fprintf(f, "listen = 127.0.0.1:%d\n", port);
	fclose(f);
	snprintf(path, sizeof(path), "%s/server.port", s->dir);
	unlink(path);
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		char log[200];
		int fd;

		snprintf(log, sizeof(log), "%s/../server.log", s->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execl(RV_BIN_DIR "/rearview-server", "rearview-server", "--config", s->conf,
		      (char *)NULL);
		_exit(127);
	}
	while (rvh_now() < until) {
		read_file(path, buf, sizeof(buf));
		if (buf[0]) {
			long p = strtol(buf, &end, 10);

			if (*end == '\0' && p > 0 && p < 65536) {
				s->port = (int)p;
				return 0;
			}
		}
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			return -1;
		}
		rvh_sleep_ms(10);
	}
	return -1;
}

static void server_stop(struct server *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

/* init into <parent>/<name>, rate limits out of the way, then start. */
static int server_setup(struct server *s, const char *parent, const char *name)
{
	char cmd[512], path[200];
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s/%s", parent, name);
	snprintf(cmd, sizeof(cmd), "'%s/rearview-server' init '%s' >'%s/%s.init' 2>&1", RV_BIN_DIR,
		 s->dir, parent, name);
	if (run_quiet(cmd) != 0)
		return -1;
	snprintf(s->conf, sizeof(s->conf), "%s/rearview-server.conf", s->dir);
	f = fopen(s->conf, "a");
	if (!f)
		return -1;
	fputs("upload_rate_per_min = 1000000\nupload_burst = 1000000\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/api.token", s->dir);
	read_file(path, s->token, sizeof(s->token));
	return s->token[0] ? 0 : -1;
}

struct body {
	char buf[16384];
	size_t n;
};

static size_t body_cb(char *p, size_t sz, size_t n, void *u)
{
	struct body *b = u;
	size_t len = sz * n, room = sizeof(b->buf) - 1 - b->n;

	memcpy(b->buf + b->n, p, len < room ? len : room);
	b->n += len < room ? len : room;
	b->buf[b->n] = '\0';
	return len;
}

/* GET path from the server; returns the HTTP status (0 on transport error). */
static long server_get(const struct server *s, const char *path, bool auth, struct body *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[256], hdr[128], ca[200];
	long code = 0;

	memset(out, 0, sizeof(*out));
	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", s->port, path);
	snprintf(ca, sizeof(ca), "%s/ca.crt", s->dir);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (auth) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", s->token);
		h = curl_slist_append(h, hdr);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

/* One counter from /metrics, or -1. */
static long metric(const struct server *s, const char *name)
{
	struct body b;
	char key[96];
	const char *p;

	if (server_get(s, "/metrics", false, &b) != 200)
		return -1;
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(b.buf, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* ---- the daemon's side -------------------------------------------------------- */

static size_t spool_rows(const struct rvh *h, struct row *rows, size_t cap)
{
	char path[200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/spool.db", h->state);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto close_db;
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, "SELECT id,state,trace_id FROM captures ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK)
		goto close_db;
	while (n < cap && sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 2);

		rows[n].id = sqlite3_column_int64(st, 0);
		rows[n].state = sqlite3_column_int(st, 1);
		snprintf(rows[n].trace_id, sizeof(rows[n].trace_id), "%s",
			 t ? (const char *)t : "");
		n++;
	}
close_db:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static void capture_now(struct rvh *h, pid_t pid)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_CAPTURE_PID;
	q.capture_pid = pid;
	/* The daemon may be killed under us: failures are expected there. */
	if (rvh_admin(h, &q, &r) == 0)
		rearview__admin_response__free_unpacked(r, NULL);
}

/* Counts captures in `state` ("uploaded", …) as admin.sock lists them. */
static size_t count_state(struct rvh *h, const char *state)
{
	Rearview__AdminResponse *r = rvh_captures(h);
	size_t n = 0;

	if (!r)
		return 0;
	if (r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES)
		for (size_t i = 0; i < r->captures->n_captures; i++)
			n += !strcmp(r->captures->captures[i]->state, state);
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

static bool wait_uploaded(struct rvh *h, size_t n)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		if (count_state(h, "uploaded") >= n)
			return true;
		rvh_sleep_ms(20);
	}
	return false;
}

/* Whether any of the daemon's last errors contains `needle`. */
static bool status_error(struct rvh *h, const char *needle)
{
	Rearview__AdminResponse *r = rvh_status(h);
	bool found = false;

	if (r && r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_STATUS)
		for (size_t i = 0; i < r->status->n_last_errors && !found; i++)
			found = strstr(r->status->last_errors[i], needle) != NULL;
	if (r)
		rearview__admin_response__free_unpacked(r, NULL);
	return found;
}

static void upload_conf(char *buf, size_t cap, const struct server *s, const char *ca_file)
{
	snprintf(buf, cap,
		 "[capture]\nconsent_default = full\n"
		 "[policy]\npublic_key = %s/policy-signing.pub\n"
		 "[upload]\nserver_url = https://127.0.0.1:%d\nca_file = %s\n"
		 "enrollment_secret_file = %s/enrollment.secret\n"
		 "backoff_initial_ms = 50\nbackoff_max_ms = 400\n",
		 s->dir, s->port, ca_file, s->dir);
}

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
		/* The payload arrived zstd-compressed as a capture. */
		assert_non_null(strstr(b.buf, "\"compression\":1"));
	}
	/* First deliveries: one per uploaded capture, none twice. */
	assert_int_equal(metric(s, "rearview_uploads_total"), (long)up);
	return up;
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

static void test_daemon_upload_captures_reach_server_once_and_policy_applied(void **state)
{
	char conf[1024], ca[200], out[2048];
	pid_t app;
	double until;

	(void)state;
	assert_int_equal(server_setup(&g_s, g_top, "s1"), 0);
	assert_int_equal(server_start(&g_s, 0), 0);
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_s.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca);
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	app = rvh_helper(&g_h, "--reconnect", NULL);
	assert_true(rvh_wait_registered(&g_h, app, true));
	for (int i = 0; i < 5; i++) {
		capture_now(&g_h, app);
		assert_true(rvh_wait_captures(&g_h, (size_t)i + 1) >= (size_t)i + 1);
	}
	assert_true(wait_uploaded(&g_h, 5));
	assert_int_equal(check_on_server(&g_h, &g_s), 5);
	assert_int_equal(metric(&g_s, "rearview_enrollments_total"), 1);

	/* The server's default signed policy (version 1) was fetched, verified
	 * with its policy-signing.pub and applied. */
	until = rvh_now() + RVH_GUARD_S;
	for (;;) {
		Rearview__AdminResponse *r = rvh_status(&g_h);
		uint64_t v = r && r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_STATUS
				     ? r->status->policy_version
				     : 0;

		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (v == 1 || rvh_now() > until) {
			assert_int_equal(v, 1);
			break;
		}
		rvh_sleep_ms(20);
	}
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
	char conf[1024], ca[200];
	pid_t app;
	double until;

	(void)state;
	assert_int_equal(server_setup(&g_s, g_top, "s2"), 0);
	assert_int_equal(server_setup(&g_other, g_top, "s2-other"), 0);
	assert_int_equal(server_start(&g_s, 0), 0);
	/* Pinned to another installation's CA: the real server must not be trusted. */
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_other.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca);
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	app = rvh_helper(&g_h, NULL);
	assert_true(rvh_wait_registered(&g_h, app, true));
	capture_now(&g_h, app);
	assert_true(rvh_wait_captures(&g_h, 1) >= 1);
	until = rvh_now() + RVH_GUARD_S;
	while (!status_error(&g_h, "enrolment") && rvh_now() < until)
		rvh_sleep_ms(20);
	assert_true(status_error(&g_h, "enrolment"));
	/* Let a few retries happen; none may get through. */
	rvh_sleep_ms(300);
	assert_int_equal(count_state(&g_h, "uploaded"), 0);
	assert_int_equal(count_state(&g_h, "pending"), 1);
	assert_int_equal(metric(&g_s, "rearview_enrollments_total"), 0);
	assert_int_equal(metric(&g_s, "rearview_uploads_total"), 0);
}

static void test_daemon_upload_server_down_backs_off_then_uploads(void **state)
{
	char conf[1024], ca[200];
	pid_t app;
	double until;
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
	until = rvh_now() + RVH_GUARD_S;
	while (!status_error(&g_h, "enrolment") && rvh_now() < until)
		rvh_sleep_ms(20);
	assert_true(status_error(&g_h, "enrolment"));
	assert_int_equal(count_state(&g_h, "uploaded"), 0);

	/* Back on the same port: the next backoff attempt gets through. */
	assert_int_equal(server_start(&g_s, port), 0);
	assert_true(wait_uploaded(&g_h, rvh_wait_captures(&g_h, 1)));
	check_on_server(&g_h, &g_s);
}

static void test_daemon_upload_kill9_during_uploads_loses_and_duplicates_nothing(void **state)
{
	static struct row rows[MAX_ROWS];
	char conf[1024], ca[200];
	size_t n, up;
	pid_t app;
	double until;

	(void)state;
	srand((unsigned)getpid());
	assert_int_equal(server_setup(&g_s, g_top, "s4"), 0);
	assert_int_equal(server_start(&g_s, 0), 0);
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_s.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca);
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	app = rvh_helper(&g_h, "--reconnect", NULL);
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
		cmocka_unit_test(
			test_daemon_upload_kill9_during_uploads_loses_and_duplicates_nothing),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
