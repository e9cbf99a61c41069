/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_demo_e2e.c — the whole path, end to end, as a newcomer runs it:
 * `deploy/demo.sh` in oneshot end-to-end mode (DEMO_ONESHOT=1 DEMO_E2E=1)
 * starts the real rearview-server, rearviewd, rearview-demo-app and
 * rearview-demo-thermal in a temporary directory on a free port, and exits
 * 0 once a jank and a thermal capture are indexed by the server and a later
 * anomaly was skipped for quota.  The test then starts the server again on
 * the demo's data directory and asserts everything through the engineer
 * JSON API (libcurl over TLS, trusting only the demo CA; jansson):
 *   - the jank trace's top self-time method is the demo's slow list-item
 *     builder, the chain at the anomaly ends in it, and its anomaly is a
 *     jank of severity 100 (the demo's slow frames are over 4x the budget);
 *   - a thermal anomaly was captured and indexed;
 *   - with the default weekly quota of 3, exactly 3 traces reached the
 *     server, and the device skipped the 4th anomaly with reason
 *     quota_exhausted and reported it (GET /api/v1/skips).
 * Every wait is a hang guard, not a timing assertion.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#define GUARD_S 300

struct e2e {
	char dir[128];	 /* DEMO_VAR */
	char url[128];	 /* https://127.0.0.1:PORT/ of the restarted server */
	char token[128]; /* api.token */
	char ca[256];	 /* the demo CA */
	char demo_log[192];
	pid_t server;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads path into buf (NUL-terminated, trailing newline cut); 0 or -1. */
static int slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	return 0;
}

/* Runs the oneshot end-to-end demo; its exit status, or -1. */
static int run_demo(struct e2e *e)
{
	double until = now_s() + GUARD_S;
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int fd = open(e->demo_log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		setenv("DEMO_VAR", e->dir, 1);
		setenv("DEMO_PORT", "0", 1);
		setenv("DEMO_ONESHOT", "1", 1);
		setenv("DEMO_E2E", "1", 1);
		setenv("DEMO_BIN", RV_BIN_DIR, 1);
		/* The chain at the anomaly is checked frame by frame: the
		 * tracer's budget (mute.c, on by default) mutes the demo's
		 * small functions on a loaded machine, folding build_list_item
		 * into layout_pass.  The budget has tests of its own
		 * (test_mute*, test_daemon_show accepts it only when the
		 * capture lists the function muted). */
		setenv("RV_TRACE_MUTE", "off", 1);
		execl("/bin/sh", "sh", RV_SRC_DIR "/deploy/demo.sh", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	while (now_s() < until) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(200 * 1000);
	}
	/* The script stops its children on TERM. */
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	return -1;
}

/* Starts rearview-server on the demo's data directory (its config still
 * says listen = 127.0.0.1:0) and reads the URL it logs; 0 or -1. */
static int start_server(struct e2e *e)
{
	char conf[256], log[256], text[4096];
	double until = now_s() + 30;

	snprintf(conf, sizeof(conf), "%s/server/rearview-server.conf", e->dir);
	snprintf(log, sizeof(log), "%s/server-again.log", e->dir);
	e->server = fork();
	if (e->server == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		execl(RV_BIN_DIR "/rearview-server", "rearview-server", "--config", conf,
		      (char *)NULL);
		_exit(127);
	}
	if (e->server < 0)
		return -1;
	while (now_s() < until) {
		const char *p;

		/* The line `… url=https://HOST:PORT/ store=… msg="listening"`. */
		if (slurp(log, text, sizeof(text)) == 0 &&
		    (p = strstr(text, "msg=\"listening\"")) != NULL) {
			const char *msg = p;

			while (p > text && p[-1] != '\n')
				p--;
			p = strstr(p, " url=");
			if (!p || p > msg) {
				usleep(100 * 1000);
				continue;
			}
			p += strlen(" url=");
			size_t n = strcspn(p, " \n");
			if (n < sizeof(e->url)) {
				memcpy(e->url, p, n);
				e->url[n] = 0;
				return 0;
			}
		}
		usleep(100 * 1000);
	}
	return -1;
}

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
	struct {
		char *buf;
		size_t len;
	} *b = arg;
	char *nb = realloc(b->buf, b->len + size * n + 1);

	if (!nb)
		return 0;
	memcpy(nb + b->len, p, size * n);
	b->buf = nb;
	b->len += size * n;
	b->buf[b->len] = 0;
	return size * n;
}

/* GET URL/api/v1/<path> with the API token; the parsed JSON or NULL. */
static json_t *api_get(struct e2e *e, const char *path)
{
	struct {
		char *buf;
		size_t len;
	} b = {NULL, 0};
	char url[512], auth[192];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	long code = 0;
	json_t *j = NULL;

	if (!c)
		return NULL;
	snprintf(url, sizeof(url), "%sapi/v1/%s", e->url, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", e->token);
	h = curl_slist_append(h, auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_CAINFO, e->ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(c) == CURLE_OK &&
	    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200 && b.buf)
		j = json_loads(b.buf, 0, NULL);
	else
		fprintf(stderr, "GET %s: HTTP %ld\n", url, code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(b.buf);
	return j;
}

static void print_file(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  | %s", line);
	fclose(f);
}

static int setup(void **state)
{
	struct e2e *e = calloc(1, sizeof(*e));
	char path[256];
	int rc;

	if (!e)
		return -1;
	snprintf(e->dir, sizeof(e->dir), "/tmp/rv-e2e-XXXXXX");
	if (!mkdtemp(e->dir))
		return -1;
	snprintf(e->demo_log, sizeof(e->demo_log), "%s/demo.out", e->dir);
	*state = e;
	rc = run_demo(e);
	if (rc != 0) {
		fprintf(stderr, "demo.sh exited %d; its output:\n", rc);
		print_file(e->demo_log);
		snprintf(path, sizeof(path), "%s/log/rearviewd.log", e->dir);
		fprintf(stderr, "rearviewd.log:\n");
		print_file(path);
		return -1;
	}
	snprintf(e->ca, sizeof(e->ca), "%s/server/ca.crt", e->dir);
	snprintf(path, sizeof(path), "%s/server/api.token", e->dir);
	if (slurp(path, e->token, sizeof(e->token)) < 0 || start_server(e) < 0) {
		fprintf(stderr, "cannot restart the demo's server\n");
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	struct e2e *e = *state;
	char cmd[200];
	int st;

	if (!e)
		return 0;
	if (e->server > 0) {
		kill(e->server, SIGTERM);
		waitpid(e->server, &st, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", e->dir);
	free(e);
	return 0;
}

/* The oldest (`oldest` true) or newest trace of anomaly kind `kind`, as the
 * list returns it (a new reference), failing the test if there is none.  The
 * list is newest first and the demo makes three captures at most, so one
 * page holds them all. */
static json_t *trace_of_kind(struct e2e *e, int kind, bool oldest)
{
	char q[64];
	json_t *list, *traces, *t;
	size_t n;

	snprintf(q, sizeof(q), "traces?kind=%d&limit=500", kind);
	list = api_get(e, q);
	assert_non_null(list);
	traces = json_object_get(list, "traces");
	n = json_array_size(traces);
	assert_true(n > 0);
	t = json_array_get(traces, oldest ? n - 1 : 0);
	assert_non_null(t);
	json_incref(t);
	json_decref(list);
	return t;
}

static void test_demo_e2e_jank_trace_top_self_is_slow_builder(void **state)
{
	struct e2e *e = *state;
	/* The first jank: the demo holds its first slow touch (450 ms in
	 * apply_touch_slow) until after it, so its window's top self time is the
	 * slow builder.  A later jank may have that touch in its window, and
	 * then the touch handler is, rightly, the top self. */
	json_t *t = trace_of_kind(e, 1, true), *full, *top, *chain;
	size_t i;
	int at_anomaly = 0;
	char q[96];

	assert_int_equal(json_integer_value(json_object_get(t, "anomaly_kind")), 1);
	assert_int_equal(json_integer_value(json_object_get(t, "severity")), 100);
	assert_string_equal(json_string_value(json_object_get(t, "app_id")), "rearview-demo-app");
	snprintf(q, sizeof(q), "traces/%s", json_string_value(json_object_get(t, "trace_id")));
	full = api_get(e, q);
	assert_non_null(full);
	assert_string_equal(json_string_value(json_object_get(full, "state")), "decoded");
	/* The daemon sent the real capture in its shuffled transport form
	 * (upload.proto COMPRESSION_ZSTD_SHUFFLED = 2, tracer/FORMAT.md §3). */
	assert_int_equal(json_integer_value(json_object_get(full, "compression")), 2);
	top = json_array_get(json_object_get(full, "top_self"), 0);
	assert_non_null(top);
	assert_string_equal(json_string_value(json_object_get(top, "method")),
			    "build_list_item_slow");
	/* The chain at the anomaly (the middle of the worst late frame) ends in
	 * the slow builder. */
	json_array_foreach(json_object_get(full, "chains"), i, chain)
	{
		const char *kind = json_string_value(json_object_get(chain, "kind"));
		const char *text = json_string_value(json_object_get(chain, "chain"));
		if (kind && text && strcmp(kind, "anomaly") == 0 &&
		    strstr(text, "layout_pass;build_list_item;build_list_item_slow;"))
			at_anomaly++;
	}
	assert_int_equal(at_anomaly, 1);
	json_decref(full);
	json_decref(t);
}

static void test_demo_e2e_thermal_anomaly_indexed(void **state)
{
	struct e2e *e = *state;
	json_t *t = trace_of_kind(e, 3, false);

	assert_int_equal(json_integer_value(json_object_get(t, "anomaly_kind")), 3);
	json_decref(t);
}

static void test_demo_e2e_quota_of_three_skips_the_fourth(void **state)
{
	struct e2e *e = *state;
	json_t *list = api_get(e, "traces?limit=500"), *skips, *row;
	char out[65536];
	json_int_t quota = 0;
	size_t i;

	/* The device uploaded what the quota allowed, and no more. */
	assert_non_null(list);
	assert_int_equal(json_array_size(json_object_get(list, "traces")), 3);
	json_decref(list);
	/* It told the server what it skipped, and why. */
	skips = api_get(e, "skips");
	assert_non_null(skips);
	json_array_foreach(json_object_get(skips, "reasons"), i, row)
	{
		const char *why = json_string_value(json_object_get(row, "reason"));
		if (why && strcmp(why, "quota_exhausted") == 0)
			quota += json_integer_value(json_object_get(row, "count"));
	}
	json_decref(skips);
	assert_true(quota >= 1);
	/* And the demo said so on the terminal. */
	assert_int_equal(slurp(e->demo_log, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "SKIPPED, reason quota_exhausted"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demo_e2e_jank_trace_top_self_is_slow_builder),
		cmocka_unit_test(test_demo_e2e_thermal_anomaly_indexed),
		cmocka_unit_test(test_demo_e2e_quota_of_three_skips_the_fourth),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, setup, teardown);
}
