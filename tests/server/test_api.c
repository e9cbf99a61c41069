/*
 * test_api.c — the server assembled in-process (net + api + sqlite store)
 * with a stand-in decoder behind the decode seam, to check what the seam
 * promises: every upload leaves pending_decode either decoded or
 * quarantined with the decoder's reason.  The loop runs on its own thread;
 * libcurl drives it over TLS from the test thread.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <sqlite3.h>

#include "api.h"
#include "net.h"
#include "rvs.h"
#include "rearview/upload.pb-c.h"

static char g_dir[64], g_data[128];
static struct rvs_config g_cfg;
static struct rvs_metrics g_m;
static uv_loop_t g_loop;
static uv_async_t g_stop;
static struct rvs_api *g_api;
static struct rvs_server *g_srv;
static pthread_t g_thread;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_port = -1;

/* The stand-in decoder: a payload starting with "BAD" fails to decode. */
static void fake_decode(void *ctx, struct rvs_decode_item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t *buf;
		size_t len;
		it[i].rc = 0;
		if (!it[i].path[0])
			continue;
		if (rvs_read_file(it[i].path, 1 << 20, &buf, &len)) {
			it[i].rc = -EIO;
			continue;
		}
		if (len >= 3 && memcmp(buf, "BAD", 3) == 0) {
			snprintf(it[i].reason, sizeof it[i].reason,
				 "truncated capture (stand-in decoder)");
			it[i].rc = -EBADMSG;
		}
		free(buf);
	}
}
static const struct rvs_decoder g_decoder = {fake_decode, NULL};

static void on_ready(void *arg, int rc)
{
	int port = -1;
	if (rc == 0 && rvs_server_new(&g_loop, &g_cfg, &g_m, rvs_api_handle, g_api, &g_srv) == 0)
		port = rvs_server_port(g_srv);
	pthread_mutex_lock(&g_mu);
	g_port = port > 0 ? port : 0;
	pthread_cond_signal(&g_cv);
	pthread_mutex_unlock(&g_mu);
}

static void on_api_stopped(void *arg)
{
	uv_close((uv_handle_t *)&g_stop, NULL);
}

static void on_drained(void *arg)
{
	rvs_api_stop(g_api, on_api_stopped, NULL);
}

static void on_stop(uv_async_t *a)
{
	rvs_server_drain(g_srv, on_drained, NULL);
}

static void *loop_main(void *arg)
{
	uv_run(&g_loop, UV_RUN_DEFAULT);
	return NULL;
}

static int setup(void **state)
{
	char path[256], err[256];
	FILE *f;

	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-api-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_data, sizeof g_data, "%s/d", g_dir);
	if (rvs_init_dir(g_data))
		return -1;
	snprintf(path, sizeof path, "%s/rearview-server.conf", g_data);
	f = fopen(path, "a");
	if (!f)
		return -1;
	fputs("listen = 127.0.0.1:0\n", f);
	fclose(f);
	if (rvs_config_load(path, &g_cfg, err, sizeof err))
		return -1;
	uv_loop_init(&g_loop);
	uv_async_init(&g_loop, &g_stop, on_stop);
	if (rvs_api_new(&g_loop, &g_cfg, &g_m, &rvs_store_sqlite, &g_decoder, &g_api))
		return -1;
	rvs_api_start(g_api, on_ready, NULL);
	pthread_create(&g_thread, NULL, loop_main, NULL);
	pthread_mutex_lock(&g_mu);
	while (g_port < 0)
		pthread_cond_wait(&g_cv, &g_mu);
	pthread_mutex_unlock(&g_mu);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return g_port > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	uv_async_send(&g_stop);
	pthread_join(g_thread, NULL);
	rvs_server_free(g_srv);
	rvs_api_free(g_api);
	uv_loop_close(&g_loop);
	curl_global_cleanup();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

struct buf {
	uint8_t *p;
	size_t n;
};

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	struct buf *b = u;
	b->p = realloc(b->p, b->n + sz * n);
	memcpy(b->p + b->n, p, sz * n);
	b->n += sz * n;
	return sz * n;
}

static long post(const char *path, const char *token, const void *body, size_t len, struct buf *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[256], auth[256], ca[256];
	long code = 0;

	snprintf(url, sizeof url, "https://localhost:%d%s", g_port, path);
	snprintf(ca, sizeof ca, "%s/ca.crt", g_data);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

static char *upload(const char *tok, uint8_t seed, const char *payload)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__UploadAck *k;
	uint8_t id[16], body[512];
	struct buf out = {0};
	size_t n;
	char *trace;

	memset(id, seed, sizeof id);
	e.upload_id.data = id;
	e.upload_id.len = 16;
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.payload.data = (uint8_t *)payload;
	e.payload.len = strlen(payload);
	n = rearview__upload_envelope__pack(&e, body);
	assert_int_equal(post("/v1/uploads", tok, body, n, &out), 200);
	k = rearview__upload_ack__unpack(NULL, out.n, out.p);
	assert_non_null(k);
	trace = strdup(k->trace_id);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(out.p);
	return trace;
}

/* The upload's state once it has left the decode queue. */
static void final_state(const char *trace, char *state, size_t cap, char *reason, size_t rcap)
{
	char path[256];
	sqlite3 *db;
	snprintf(path, sizeof path, "%s/rearview.db", g_data);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	for (int i = 0; i < 1200; i++) {
		sqlite3_stmt *st;
		int done = 0;
		assert_int_equal(sqlite3_prepare_v2(db,
						    "SELECT u.state, q.reason FROM uploads u"
						    " LEFT JOIN quarantine q USING (trace_id)"
						    " WHERE u.trace_id = ?",
						    -1, &st, NULL),
				 SQLITE_OK);
		sqlite3_bind_text(st, 1, trace, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW) {
			const char *s = (const char *)sqlite3_column_text(st, 0);
			const char *r = (const char *)sqlite3_column_text(st, 1);
			if (strcmp(s, "pending_decode") != 0) {
				snprintf(state, cap, "%s", s);
				snprintf(reason, rcap, "%s", r ? r : "");
				done = 1;
			}
		}
		sqlite3_finalize(st);
		if (done)
			break;
		usleep(50000);
	}
	sqlite3_close(db);
}

static void test_api_failed_decode_is_quarantined_with_reason(void **state)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__EnrollResponse *er;
	char secret[128] = "", path[256], st1[32] = "", st2[32] = "", r1[128], r2[128];
	uint8_t body[256];
	struct buf out = {0};
	uint8_t *s;
	size_t n;
	char *tok, *good, *bad;

	snprintf(path, sizeof path, "%s/enrollment.secret", g_data);
	assert_int_equal(rvs_read_file(path, sizeof secret - 1, &s, &n), 0);
	memcpy(secret, s, n);
	free(s);
	q.enrollment_secret = secret;
	n = rearview__enroll_request__pack(&q, body);
	assert_int_equal(post("/v1/enroll", NULL, body, n, &out), 200);
	er = rearview__enroll_response__unpack(NULL, out.n, out.p);
	assert_non_null(er);
	tok = strdup(er->device_token);
	rearview__enroll_response__free_unpacked(er, NULL);
	free(out.p);

	good = upload(tok, 1, "RVCAPTURE good bytes");
	bad = upload(tok, 2, "BAD capture, cut short");
	final_state(good, st1, sizeof st1, r1, sizeof r1);
	final_state(bad, st2, sizeof st2, r2, sizeof r2);
	assert_string_equal(st1, "decoded");
	assert_string_equal(st2, "quarantined");
	assert_string_equal(r2, "truncated capture (stand-in decoder)");
	free(good);
	free(bad);
	free(tok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_failed_decode_is_quarantined_with_reason),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
