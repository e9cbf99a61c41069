/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_integration.c — the real rearview-server binary, started in a
 * temporary directory on a free port, driven by libcurl over TLS on
 * loopback (plus a raw mbedTLS client for slowloris and raw TCP sockets for
 * the connection limit).  No timing assertions: waits are bounded polls.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <zstd.h>
#include <jansson.h>

#include "rearview/analysis.h"
#include "rearview/policy.h"
#include "rearview/trace.h"

#include "rearview/common.pb-c.h"
#include "rearview/policy.pb-c.h"
#include "rearview/upload.pb-c.h"
#include "payload_size.h"
#include "store_env.h"

static char g_dir[256], g_data[320], g_conf[400], g_ca[400], g_secret[128], g_api[128];
static char g_dsn[512]; /* the server's database (store_env.h) */
static int g_port;
static pid_t g_pid;

static int run_init(void)
{
	pid_t p = fork();
	int st;
	if (p == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(RVS_BIN, RVS_BIN, "init", g_data, (char *)NULL);
		_exit(127);
	}
	if (p < 0 || waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;
	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

static int write_text(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* What the policy library will publish: a SignedPolicy around a PolicyBody
 * (unsigned here — the server serves the bytes and only reads the version). */
static uint8_t g_policy[256];
static size_t g_policy_len;

static int write_policy(const char *path)
{
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	Rearview__SignedPolicy sp = REARVIEW__SIGNED_POLICY__INIT;
	uint8_t body[64];
	FILE *f;
	b.version = 7;
	b.weekly_quota = 3;
	sp.body.data = body;
	sp.body.len = rearview__policy_body__pack(&b, body);
	sp.key_id = (char *)"test";
	sp.algorithm = (char *)"ecdsa-p256-sha256";
	g_policy_len = rearview__signed_policy__pack(&sp, g_policy);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(g_policy, 1, g_policy_len, f);
	return fclose(f);
}

/* Starts a server in a fresh data directory; with_policy writes the test's
 * own policy first, else the server publishes its default. */
static int start_server(int with_policy)
{
	char path[512], buf[64];
	g_port = 0;
	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-it-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_data, sizeof g_data, "%s/data", g_dir);
	if (run_init())
		return -1;
	snprintf(g_conf, sizeof g_conf, "%s/rearview-server.conf", g_data);
	snprintf(g_ca, sizeof g_ca, "%s/ca.crt", g_data);
	snprintf(path, sizeof path, "%s/enrollment.secret", g_data);
	if (slurp(path, g_secret, sizeof g_secret) <= 0)
		return -1;
	snprintf(path, sizeof path, "%s/api.token", g_data);
	if (slurp(path, g_api, sizeof g_api) <= 0)
		return -1;
	/* Later keys override the generated defaults (inih calls us per line). */
	if (write_text(g_conf, "a",
		       "listen = 127.0.0.1:0\n"
		       "request_timeout_ms = 6000\n"
		       "idle_timeout_ms = 4000\n"
		       "max_connections = 8\n"
		       "max_body_bytes = 1048576\n"
		       "max_header_bytes = 8192\n"
		       "upload_rate_per_min = 6\n"
		       "upload_burst = 20\n"
		       "auth_fail_burst = 10\n"
		       "auth_fail_per_min = 1\n"
		       "enroll_burst = 1000\n") ||
	    rvt_store_conf(g_conf, g_data, g_dsn, sizeof g_dsn))
		return -1;
	snprintf(path, sizeof path, "%s/policy/current.spb", g_data);
	if (with_policy && write_policy(path))
		return -1;
	snprintf(path, sizeof path, "%s/server.log", g_dir);
	g_pid = fork();
	if (g_pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		execl(RVS_BIN, RVS_BIN, "--config", g_conf, (char *)NULL);
		_exit(127);
	}
	if (g_pid < 0)
		return -1;
	snprintf(path, sizeof path, "%s/server.port", g_data);
	for (int i = 0; i < 1200; i++) { /* up to a minute on a loaded machine */
		if (slurp(path, buf, sizeof buf) > 0) {
			g_port = (int)strtol(buf, NULL, 10);
			break;
		}
		if (waitpid(g_pid, NULL, WNOHANG) == g_pid)
			return -1;
		usleep(50000);
	}
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return g_port > 0 ? 0 : -1;
}

static int group_setup(void **state)
{
	return start_server(1);
}

static int group_setup_default_policy(void **state)
{
	return start_server(0);
}

static int group_teardown(void **state)
{
	char cmd[600];
	if (g_pid > 0 && kill(g_pid, 0) == 0) {
		kill(g_pid, SIGKILL);
		waitpid(g_pid, NULL, 0);
	}
	curl_global_cleanup();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- a small libcurl client ---------------------------------------------- */

struct resp {
	CURLcode rc;
	long code;
	long new_conns;
	uint8_t *body;
	size_t len;
	char hdrs[8192];
	size_t hlen;
};

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	struct resp *r = u;
	uint8_t *b = realloc(r->body, r->len + sz * n + 1);
	if (!b)
		return 0;
	memcpy(b + r->len, p, sz * n);
	r->body = b;
	r->len += sz * n;
	r->body[r->len] = 0;
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *u)
{
	struct resp *r = u;
	size_t k = sz * n;
	if (r->hlen + k < sizeof r->hdrs) {
		memcpy(r->hdrs + r->hlen, p, k);
		r->hlen += k;
		r->hdrs[r->hlen] = 0;
	}
	return k;
}

static void resp_free(struct resp *r)
{
	free(r->body);
	memset(r, 0, sizeof *r);
}

/* One request; h may be a handle reused for keep-alive (NULL: a fresh one). */
static void http(CURL *h, const char *method, const char *path, const char *token, const void *body,
		 size_t len, const char *extra, struct resp *r)
{
	CURL *c = h ? h : curl_easy_init();
	struct curl_slist *hl = NULL;
	char url[2048], auth[256];

	memset(r, 0, sizeof *r);
	snprintf(url, sizeof url, "https://127.0.0.1:%d%s", g_port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, g_ca);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		hl = curl_slist_append(hl, "Content-Type: application/x-protobuf");
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		hl = curl_slist_append(hl, auth);
	}
	if (extra)
		hl = curl_slist_append(hl, extra);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	r->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &r->new_conns);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hl);
	if (!h)
		curl_easy_cleanup(c);
}

static char *enroll(const char *model)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__DeviceInfo d = REARVIEW__DEVICE_INFO__INIT;
	Rearview__EnrollResponse *a;
	uint8_t buf[1024];
	size_t n;
	struct resp r;
	char *tok;

	q.enrollment_secret = g_secret;
	/* Each enrolment is a new install: a device id reused would re-enrol
	 * the same device (its old token revoked). */
	static int installs;
	char install[48];
	snprintf(install, sizeof install, "%s-%d", "test-device", ++installs);
	d.device_id = install;
	d.model = (char *)model;
	d.os_build = (char *)"os-1";
	d.arch = (char *)"x86_64";
	q.device = &d;
	n = rearview__enroll_request__pack(&q, buf);
	http(NULL, "POST", "/v1/enroll", NULL, buf, n, NULL, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.code, 200);
	a = rearview__enroll_response__unpack(NULL, r.len, r.body);
	assert_non_null(a);
	assert_true(strlen(a->device_token) >= 16);
	assert_true(strncmp(a->device_id, "d-", 2) == 0);
	tok = strdup(a->device_token);
	rearview__enroll_response__free_unpacked(a, NULL);
	resp_free(&r);
	return tok;
}

/* The anomaly kind of the envelopes built next (0: JANK, quota-charged). */
static Rearview__AnomalyKind g_anomaly_kind;

/* Packs an envelope (caller frees) carrying pl[0..pllen) with the given
 * compression; upload_id filled from seed. */
static uint8_t *envelope_with(uint8_t seed, const char *app_id, const char *model,
			      const uint8_t *pl, size_t pllen, int compression, size_t *len)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__DeviceInfo dev = REARVIEW__DEVICE_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	static uint8_t nonce[8];
	static int nonce_set;
	uint8_t id[16], *out;

	if (!nonce_set) {
		for (int i = 0; i < 8; i++)
			nonce[i] = (uint8_t)(rand() ^ getpid());
		nonce_set = 1;
	}
	memset(id, seed, sizeof id);
	memcpy(id, nonce, 8);
	e.upload_id.data = id;
	e.upload_id.len = 16;
	e.envelope_version = 1;
	app.app_id = (char *)app_id;
	app.version = (char *)"1.2.3";
	e.app = &app;
	dev.model = (char *)model;
	dev.os_build = (char *)"os-1";
	e.device = &dev;
	an.kind = g_anomaly_kind ? g_anomaly_kind : REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
	an.severity = 40;
	e.anomaly = &an;
	if (pl) {
		e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
		e.compression = (Rearview__Compression)compression;
		e.payload.data = (uint8_t *)pl;
		e.payload.len = pllen;
		e.payload_size = declared_size(pl, pllen, compression);
	}
	*len = rearview__upload_envelope__get_packed_size(&e);
	out = malloc(*len);
	rearview__upload_envelope__pack(&e, out);
	return out;
}

/* An envelope with a generated (non-capture) payload of `payload` bytes. */
static uint8_t *envelope(uint8_t seed, const char *app_id, const char *model, size_t payload,
			 size_t *len)
{
	uint8_t *pl = NULL, *out;
	if (payload) {
		pl = malloc(payload);
		for (size_t i = 0; i < payload; i++)
			pl[i] = (uint8_t)(i * 7 + seed);
	}
	out = envelope_with(seed, app_id, model, pl, payload, 0, len);
	free(pl);
	return out;
}

static Rearview__UploadAck *upload(const char *tok, const uint8_t *env, size_t len)
{
	struct resp r;
	Rearview__UploadAck *k;
	http(NULL, "POST", "/v1/uploads", tok, env, len, NULL, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.code, 200);
	k = rearview__upload_ack__unpack(NULL, r.len, r.body);
	assert_non_null(k);
	resp_free(&r);
	return k;
}

static Rearview__Error *error_of(const struct resp *r)
{
	Rearview__Error *e = rearview__error__unpack(NULL, r->len, r->body);
	assert_non_null(e);
	return e;
}

/* What the server stored, read from its database on either backend. */
static int db_count(const char *sql, const char *arg)
{
	return rvt_db_int(g_dsn, sql, arg);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_integration_enroll_then_upload_stores_blob(void **state)
{
	char *tok = enroll("pixel-test");
	size_t len;
	uint8_t *env = envelope(1, "com.example.app", "pixel-test", 4096, &len);
	Rearview__UploadAck *k = upload(tok, env, len);
	char blobdir[512];
	struct stat st;

	assert_false(k->duplicate);
	assert_true(strncmp(k->trace_id, "t-", 2) == 0);
	assert_int_equal(k->policy_version, 7); /* the served policy's version */
	/* Stored; the decoder may already have taken it off the queue. */
	assert_int_equal(db_count("SELECT count(*) FROM uploads WHERE trace_id = ?"
				  " AND state IN ('pending_decode','quarantined')",
				  k->trace_id),
			 1);
	/* The payload is on disk under its SHA-256. */
	assert_int_equal(db_count("SELECT blob_bytes FROM uploads WHERE trace_id = ?", k->trace_id),
			 4096);
	snprintf(blobdir, sizeof blobdir, "%s/blobs", g_data);
	assert_int_equal(stat(blobdir, &st), 0);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(tok);
}

static void test_integration_retry_returns_original_ack_as_duplicate(void **state)
{
	char *tok = enroll("retry-model");
	size_t len;
	uint8_t *env = envelope(2, "com.example.retry", "m", 100, &len);
	Rearview__UploadAck *a = upload(tok, env, len);
	Rearview__UploadAck *b = upload(tok, env, len);

	assert_false(a->duplicate);
	assert_true(b->duplicate);
	assert_string_equal(a->trace_id, b->trace_id);
	assert_memory_equal(a->upload_id.data, b->upload_id.data, 16);
	assert_int_equal(db_count("SELECT count(*) FROM uploads WHERE trace_id = ?", a->trace_id),
			 1);
	rearview__upload_ack__free_unpacked(a, NULL);
	rearview__upload_ack__free_unpacked(b, NULL);
	free(env);
	free(tok);
}

static void test_integration_bad_token_gets_401(void **state)
{
	size_t len;
	uint8_t *env = envelope(3, "a", "m", 0, &len);
	struct resp r;

	http(NULL, "POST", "/v1/uploads", "rvd_0000000000000000000000000000000000", env, len, NULL,
	     &r);
	assert_int_equal(r.code, 401);
	resp_free(&r);
	http(NULL, "POST", "/v1/uploads", NULL, env, len, NULL, &r);
	assert_int_equal(r.code, 401);
	resp_free(&r);
	/* SQL in the token is rejected by shape, never reaches a query. */
	http(NULL, "POST", "/v1/uploads", "' OR '1'='1' --", env, len, NULL, &r);
	assert_int_equal(r.code, 401);
	resp_free(&r);
	free(env);
}

static void test_integration_wrong_enrolment_secret_gets_403(void **state)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	uint8_t buf[256];
	size_t n;
	struct resp r;
	q.enrollment_secret = (char *)"not-the-secret-but-long-enough";
	n = rearview__enroll_request__pack(&q, buf);
	http(NULL, "POST", "/v1/enroll", NULL, buf, n, NULL, &r);
	assert_int_equal(r.code, 403);
	resp_free(&r);
}

static void test_integration_oversized_body_gets_413(void **state)
{
	char *tok = enroll("big");
	size_t len = 2u << 20;
	uint8_t *big = calloc(1, len);
	struct resp r;

	http(NULL, "POST", "/v1/uploads", tok, big, len, NULL, &r);
	assert_int_equal(r.code, 413);
	resp_free(&r);
	free(big);
	free(tok);
}

static void test_integration_malformed_protobuf_gets_400_with_reason(void **state)
{
	char *tok = enroll("malformed");
	static const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	uint8_t id[8] = {0}, buf[64];
	size_t n;
	struct resp r;
	Rearview__Error *err;

	http(NULL, "POST", "/v1/uploads", tok, junk, sizeof junk, NULL, &r);
	assert_int_equal(r.code, 400);
	err = error_of(&r);
	assert_int_equal(err->code, REARVIEW__ERROR__CODE__MALFORMED);
	assert_non_null(strstr(err->message, "malformed"));
	rearview__error__free_unpacked(err, NULL);
	resp_free(&r);

	/* Decodes, but breaks a rule: the reason names it. */
	e.upload_id.data = id;
	e.upload_id.len = sizeof id;
	n = rearview__upload_envelope__pack(&e, buf);
	http(NULL, "POST", "/v1/uploads", tok, buf, n, NULL, &r);
	assert_int_equal(r.code, 400);
	err = error_of(&r);
	assert_non_null(strstr(err->message, "upload_id"));
	rearview__error__free_unpacked(err, NULL);
	resp_free(&r);
	free(tok);
}

static void test_integration_expect_100_continue_is_answered(void **state)
{
	char *tok = enroll("expect");
	size_t len;
	uint8_t *env = envelope(11, "expect.app", "m", 2000, &len);
	CURL *h = curl_easy_init();
	struct resp r;

	/* Were the server silent, curl would wait 10 minutes for the interim
	 * response and the request's 60 s timeout would fail it. */
	curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 600000L);
	http(h, "POST", "/v1/uploads", tok, env, len, "Expect: 100-continue", &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr(r.hdrs, "HTTP/1.1 100 Continue"));
	resp_free(&r);
	curl_easy_cleanup(h);
	free(env);
	free(tok);
}

static void test_integration_keep_alive_reuses_connection(void **state)
{
	CURL *h = curl_easy_init();
	struct resp r;

	http(h, "GET", "/metrics", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.code, 200);
	assert_int_equal(r.new_conns, 1);
	resp_free(&r);
	http(h, "GET", "/metrics", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.code, 200);
	assert_int_equal(r.new_conns, 0);
	assert_non_null(strstr((char *)r.body, "rearview_uploads_total "));
	/* The decoder drains the queue, so its depth may be anything here. */
	assert_non_null(strstr((char *)r.body, "rearview_decode_queue_depth "));
	assert_null(strstr((char *)r.body, "rearview_uploads_total 0\n"));
	assert_non_null(
		strstr((char *)r.body, "rearview_errors_total{reason=\"malformed_protobuf\"}"));
	resp_free(&r);
	curl_easy_cleanup(h);
}

static void test_integration_policy_etag_gives_304(void **state)
{
	char *tok = enroll("policy");
	struct resp r;
	char etag[128] = "", inm[160], *p;

	http(NULL, "GET", "/v1/policy", tok, NULL, 0, NULL, &r);
	assert_int_equal(r.code, 200);
	assert_int_equal(r.len, g_policy_len);
	assert_memory_equal(r.body, g_policy, r.len);
	p = strstr(r.hdrs, "ETag: ");
	assert_non_null(p);
	sscanf(p + 6, "%127[^\r\n]", etag);
	assert_true(etag[0] == '"');
	resp_free(&r);
	snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
	http(NULL, "GET", "/v1/policy", tok, NULL, 0, inm, &r);
	assert_int_equal(r.code, 304);
	assert_int_equal(r.len, 0);
	resp_free(&r);
	http(NULL, "GET", "/v1/policy", tok, NULL, 0, "If-None-Match: \"other\"", &r);
	assert_int_equal(r.code, 200);
	resp_free(&r);
	free(tok);
}

static void test_integration_rate_limit_gives_429_with_retry_after(void **state)
{
	char *tok = enroll("rate");
	int limited = 0;
	struct resp r;

	/* Manual captures: not charged against the weekly quota (3), so the
	 * 429 is the rate limit's. */
	g_anomaly_kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL;
	for (int i = 0; i < 60 && !limited; i++) {
		size_t len;
		uint8_t *env = envelope((uint8_t)(100 + i), "rate.app", "m", 0, &len);
		http(NULL, "POST", "/v1/uploads", tok, env, len, NULL, &r);
		free(env);
		if (r.code == 429) {
			char *p = strstr(r.hdrs, "Retry-After: ");
			assert_non_null(p);
			assert_true(strtol(p + 13, NULL, 10) >= 1);
			limited = 1;
		} else {
			assert_int_equal(r.code, 200);
		}
		resp_free(&r);
	}
	assert_true(limited);
	g_anomaly_kind = 0;
	free(tok);
}

static void test_integration_token_guessing_is_throttled_per_address(void **state)
{
	char *known = enroll("known-before");
	char *fresh;
	size_t len;
	uint8_t *env = envelope(60, "guess.app", "m", 0, &len);
	Rearview__UploadAck *k;
	struct resp r;
	int limited = 0;

	for (int i = 0; i < 40 && !limited; i++) {
		char tok[80];
		snprintf(tok, sizeof tok, "rvd_guess%032d", i);
		http(NULL, "POST", "/v1/uploads", tok, env, len, NULL, &r);
		if (r.code == 429) {
			assert_non_null(strstr(r.hdrs, "Retry-After: "));
			limited = 1;
		} else {
			assert_int_equal(r.code, 401);
		}
		resp_free(&r);
	}
	assert_true(limited);
	/* Devices that have authenticated, or enrol now, keep working from the
	 * same address. */
	k = upload(known, env, len);
	rearview__upload_ack__free_unpacked(k, NULL);
	fresh = enroll("enrolled-after");
	k = upload(fresh, env, len);
	assert_false(k->duplicate);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(fresh);
	free(known);
}

/* ---- decoding: real captures from librvtrace ------------------------------ */

uint64_t rvs_fixture_outer(int rounds); /* capture_fixture.c, instrumented */

/* Traces the instrumented fixture on this thread and returns the capture
 * file's bytes (caller frees). */
static uint8_t *make_capture(size_t *len)
{
	char path[512];
	uint8_t *buf = malloc(1u << 20);
	FILE *f;

	snprintf(path, sizeof path, "%s/fixture.rvt", g_dir);
	assert_int_equal(rvt_set_config(256u << 10, 0), 0);
	assert_int_equal(rvt_start(0), 0);
	assert_true(rvs_fixture_outer(3) != 1);
	assert_int_equal(rvt_capture_to_path(0, path), 0);
	assert_int_equal(rvt_stop(0, 1), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	*len = fread(buf, 1, 1u << 20, f);
	assert_true(feof(f));
	fclose(f);
	assert_true(*len > 64);
	return buf;
}

/* The text of the first column of the first row of sql bound with arg. */
static char *db_text(const char *sql, const char *arg)
{
	return rvt_db_text(g_dsn, sql, arg);
}

/* Polls (bounded) until the upload leaves pending_decode; returns its state. */
static char *wait_decoded(const char *trace_id)
{
	for (int i = 0; i < 600; i++) {
		char *st = db_text("SELECT state FROM uploads WHERE trace_id = ?", trace_id);
		if (st && strcmp(st, "pending_decode") != 0)
			return st;
		free(st);
		usleep(50000);
	}
	return NULL;
}

/* The capture cap[0..clen) as a device sends it with Compression comp: zstd
 * over the capture, or over its shuffled form (tracer/FORMAT.md §3). */
static uint8_t *compress_capture(const uint8_t *cap, size_t clen, int comp, int level, size_t *zlen)
{
	size_t zcap = ZSTD_compressBound(clen);
	uint8_t *z = malloc(zcap), *form = malloc(clen);

	if (comp == REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED) {
		assert_int_equal(rva_shuffle_buf(cap, clen, form), 0);
		cap = form;
	}
	*zlen = ZSTD_compress(z, zcap, cap, clen, level);
	assert_false(ZSTD_isError(*zlen));
	free(form);
	return z;
}

/* A capture uploaded with Compression comp is decoded and indexed. */
static void check_capture_decoded_and_indexed(uint8_t seed, const char *model, int comp)
{
	char *tok = enroll(model);
	size_t clen, zlen, len;
	uint8_t *cap = make_capture(&clen), *z, *env;
	Rearview__UploadAck *k;
	char *st, *top, *sig;

	z = compress_capture(cap, clen, comp, 3, &zlen);
	env = envelope_with(seed, "com.example.decode", model, z, zlen, comp, &len);
	k = upload(tok, env, len);
	st = wait_decoded(k->trace_id);
	assert_non_null(st);
	assert_string_equal(st, "decoded");
	/* The method ranked first by self time has the most self time, and the
	 * hot loop is queryable by name with its calls.  Which method has the
	 * most is the machine's to say (the hot loop, unless the test was
	 * preempted elsewhere in the capture: a loaded machine made it so), so
	 * the rank is checked against the stored times, not against a name. */
	top = db_text("SELECT method FROM trace_methods WHERE trace_id = ? AND self_rank = 1",
		      k->trace_id);
	assert_non_null(top);
	assert_int_equal(db_count("SELECT count(*) FROM trace_methods t WHERE t.trace_id = ?"
				  " AND t.self_rank = 1 AND t.self_ns = (SELECT max(u.self_ns)"
				  " FROM trace_methods u WHERE u.trace_id = t.trace_id)",
				  k->trace_id),
			 1);
	assert_int_equal(db_count("SELECT calls FROM trace_methods WHERE trace_id = ?"
				  " AND method LIKE '%rvs_fixture_hot_spin%'",
				  k->trace_id),
			 3);
	assert_int_equal(db_count("SELECT count(*) FROM traces WHERE trace_id = ?"
				  " AND app_id = 'com.example.decode' AND app_version = '1.2.3'"
				  " AND severity = 40",
				  k->trace_id),
			 1);
	free(top);
	top = db_text("SELECT model FROM traces WHERE trace_id = ?", k->trace_id);
	assert_non_null(top);
	assert_string_equal(top, model);
	/* The hot loop's chain, under the fixture's outer function, is among the
	 * top chains with a 16-hex-digit signature, and the first of them ends
	 * in the method ranked first by self time (the hot loop, unless the test
	 * was preempted elsewhere, as above: seen once in a loaded CI run). */
	sig = db_text("SELECT signature FROM trace_chains WHERE trace_id = ? AND kind = 'top'"
		      " AND chain LIKE '%rvs_fixture_outer;%rvs_fixture_hot_spin;'",
		      k->trace_id);
	assert_non_null(sig);
	assert_int_equal(strlen(sig), 16);
	assert_int_equal(db_count("SELECT count(*) FROM trace_chains c WHERE c.trace_id = ?"
				  " AND c.kind = 'top' AND c.rank = 1 AND c.chain LIKE '%' ||"
				  " (SELECT m.method FROM trace_methods m WHERE m.trace_id ="
				  " c.trace_id AND m.self_rank = 1) || ';'",
				  k->trace_id),
			 1);
	assert_int_equal(
		db_count("SELECT count(*) FROM quarantine WHERE trace_id = ?", k->trace_id), 0);
	free(sig);
	free(top);
	free(st);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(z);
	free(cap);
	free(tok);
}

static void test_integration_zstd_capture_is_decoded_and_indexed(void **state)
{
	check_capture_decoded_and_indexed(20, "pixel-decode",
					  REARVIEW__COMPRESSION__COMPRESSION_ZSTD);
}

static void test_integration_shuffled_capture_is_decoded_and_indexed(void **state)
{
	check_capture_decoded_and_indexed(23, "pixel-shuffled",
					  REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED);
}

static void test_integration_truncated_capture_is_quarantined_with_reason(void **state)
{
	char *tok = enroll("pixel-trunc");
	size_t clen, len;
	uint8_t *cap = make_capture(&clen), *env;
	Rearview__UploadAck *k;
	char *st, *why;

	/* Uncompressed, cut in the middle of its header + records. */
	env = envelope_with(21, "com.example.trunc", "pixel-trunc", cap, 40,
			    REARVIEW__COMPRESSION__COMPRESSION_NONE, &len);
	k = upload(tok, env, len);
	st = wait_decoded(k->trace_id);
	assert_non_null(st);
	assert_string_equal(st, "quarantined");
	why = db_text("SELECT reason FROM quarantine WHERE trace_id = ?", k->trace_id);
	assert_non_null(why);
	assert_true(strncmp(why, "capture: ", 9) == 0);
	assert_int_equal(db_count("SELECT count(*) FROM traces WHERE trace_id = ?", k->trace_id),
			 0);
	free(why);
	free(st);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(cap);
	free(tok);
}

static void test_integration_truncated_zstd_is_quarantined_with_reason(void **state)
{
	char *tok = enroll("pixel-ztrunc");
	size_t clen, zlen, len;
	uint8_t *cap = make_capture(&clen);
	size_t zcap = ZSTD_compressBound(clen);
	uint8_t *z = malloc(zcap), *env;
	Rearview__UploadAck *k;
	char *st, *why;

	zlen = ZSTD_compress(z, zcap, cap, clen, 3);
	assert_false(ZSTD_isError(zlen));
	env = envelope_with(22, "com.example.ztrunc", "pixel-ztrunc", z, zlen / 2,
			    REARVIEW__COMPRESSION__COMPRESSION_ZSTD, &len);
	k = upload(tok, env, len);
	st = wait_decoded(k->trace_id);
	assert_non_null(st);
	assert_string_equal(st, "quarantined");
	why = db_text("SELECT reason FROM quarantine WHERE trace_id = ?", k->trace_id);
	assert_non_null(why);
	assert_string_equal(why, "zstd: corrupt or truncated");
	free(why);
	free(st);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(z);
	free(cap);
	free(tok);
}

static void test_integration_summary_only_upload_is_indexed_without_methods(void **state)
{
	char *tok = enroll("pixel-summary"), *st;
	size_t len;
	uint8_t *env = envelope(23, "com.example.summary", "pixel-summary", 0, &len);
	Rearview__UploadAck *k = upload(tok, env, len);

	st = wait_decoded(k->trace_id);
	assert_non_null(st);
	assert_string_equal(st, "decoded");
	assert_int_equal(db_count("SELECT count(*) FROM traces WHERE trace_id = ?"
				  " AND app_id = 'com.example.summary' AND duration_ns IS NULL",
				  k->trace_id),
			 1);
	assert_int_equal(
		db_count("SELECT count(*) FROM trace_methods WHERE trace_id = ?", k->trace_id), 0);
	free(st);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(tok);
}

/* ---- the JSON API ---------------------------------------------------------- */

/* Uploads a zstd capture of the fixture and waits until it is decoded. */
static char *decoded_trace(uint8_t seed, const char *app, const char *model)
{
	char *tok = enroll(model), *st, *id;
	size_t clen, zlen, len;
	uint8_t *cap = make_capture(&clen), *z, *env;
	Rearview__UploadAck *k;

	/* As devices send captures: the export and API tests read it back. */
	z = compress_capture(cap, clen, REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED, 1, &zlen);
	env = envelope_with(seed, app, model, z, zlen,
			    REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED, &len);
	k = upload(tok, env, len);
	st = wait_decoded(k->trace_id);
	assert_non_null(st);
	assert_string_equal(st, "decoded");
	id = strdup(k->trace_id);
	free(st);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(z);
	free(cap);
	free(tok);
	return id;
}

/* GET path with the API token; returns the parsed JSON (status checked). */
static json_t *api_get(const char *path, long want)
{
	struct resp r;
	json_t *j;
	http(NULL, "GET", path, g_api, NULL, 0, NULL, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.code, want);
	assert_non_null(strstr(r.hdrs, "Content-Type: application/json"));
	j = json_loadb((const char *)r.body, r.len, 0, NULL);
	assert_non_null(j);
	resp_free(&r);
	return j;
}

/* Issue 18 item 11: the served policy's weekly quota is 3; a 4th
 * quota-charged upload of one device is refused with 429, a clear reason
 * and Retry-After (a modified device cannot flood), a retry of an
 * accepted one is still its duplicate ack, a manual capture is not
 * charged, and the fleet page counts the 3 charged uploads apart from the
 * manual one (it showed 300 %). */
static void test_integration_fourth_upload_over_weekly_quota_3_gets_429(void **state)
{
	char *tok = enroll("quota-model");
	Rearview__UploadAck *k;
	Rearview__Error *e;
	struct resp r;
	uint8_t *env;
	size_t len;
	json_t *fleet, *devs;
	int seen = 0;

	for (int i = 0; i < 3; i++) {
		env = envelope((uint8_t)(200 + i), "quota.app", "quota-model", 0, &len);
		k = upload(tok, env, len);
		rearview__upload_ack__free_unpacked(k, NULL);
		free(env);
	}
	env = envelope(203, "quota.app", "quota-model", 0, &len);
	http(NULL, "POST", "/v1/uploads", tok, env, len, NULL, &r);
	free(env);
	assert_int_equal(r.code, 429);
	assert_non_null(strstr(r.hdrs, "Retry-After: "));
	e = error_of(&r);
	assert_non_null(strstr(e->message, "weekly upload quota exhausted (3 of 3"));
	rearview__error__free_unpacked(e, NULL);
	resp_free(&r);
	env = envelope(200, "quota.app", "quota-model", 0, &len);
	k = upload(tok, env, len);
	assert_true(k->duplicate);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	g_anomaly_kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL;
	env = envelope(204, "quota.app", "quota-model", 0, &len);
	k = upload(tok, env, len);
	assert_false(k->duplicate);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	g_anomaly_kind = 0;
	fleet = api_get("/api/v1/fleet", 200);
	devs = json_object_get(fleet, "devices");
	for (size_t i = 0; i < json_array_size(devs); i++) {
		json_t *d = json_array_get(devs, i);
		json_t *m = json_object_get(d, "model");

		if (!json_is_string(m) || strcmp(json_string_value(m), "quota-model"))
			continue;
		assert_int_equal(json_integer_value(json_object_get(d, "uploads_7d")), 3);
		assert_int_equal(json_integer_value(json_object_get(d, "manual_7d")), 1);
		assert_true(json_real_value(json_object_get(d, "quota_used")) <= 1.0);
		seen++;
	}
	assert_int_equal(seen, 1);
	json_decref(fleet);
	free(tok);
}

static int list_has(json_t *arr, const char *key, const char *val)
{
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o)
	{
		const char *v = json_string_value(json_object_get(o, key));
		if (v && strcmp(v, val) == 0)
			return 1;
	}
	return 0;
}

static void test_integration_api_without_token_gets_401(void **state)
{
	struct resp r;
	http(NULL, "GET", "/api/v1/traces", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.code, 401);
	resp_free(&r);
	http(NULL, "GET", "/api/v1/traces", "wrong-token-wrong-token-wrong", NULL, 0, NULL, &r);
	assert_int_equal(r.code, 401);
	resp_free(&r);
	/* A device token is not an API token. */
	char *tok = enroll("api-401");
	http(NULL, "GET", "/api/v1/signatures", tok, NULL, 0, NULL, &r);
	assert_int_equal(r.code, 401);
	resp_free(&r);
	free(tok);
}

static void test_integration_api_traces_filters_and_paginates(void **state)
{
	char *a = decoded_trace(30, "com.example.api", "api-model-a");
	char *b = decoded_trace(31, "com.example.api", "api-model-b");
	char *method = db_text("SELECT method FROM trace_methods WHERE trace_id = ?"
			       " AND self_rank = 1",
			       a);
	char path[1024], *esc;
	json_t *j, *j2;
	const char *cur;

	j = api_get("/api/v1/traces?app=com.example.api", 200);
	assert_true(list_has(json_object_get(j, "traces"), "trace_id", a));
	assert_true(list_has(json_object_get(j, "traces"), "trace_id", b));
	json_decref(j);
	j = api_get("/api/v1/traces?app=com.example.api&model=api-model-b&min_severity=40&kind=1",
		    200);
	assert_false(list_has(json_object_get(j, "traces"), "trace_id", a));
	assert_true(list_has(json_object_get(j, "traces"), "trace_id", b));
	json_decref(j);
	j = api_get("/api/v1/traces?app=com.example.api&min_severity=41", 200);
	assert_int_equal(json_array_size(json_object_get(j, "traces")), 0);
	json_decref(j);
	/* "contains method", URL-encoded. */
	esc = curl_easy_escape(NULL, method, 0);
	snprintf(path, sizeof path, "/api/v1/traces?app=com.example.api&method=%s", esc);
	j = api_get(path, 200);
	assert_true(list_has(json_object_get(j, "traces"), "trace_id", a));
	json_decref(j);
	j = api_get("/api/v1/traces?app=com.example.api&method=no_such_method", 200);
	assert_int_equal(json_array_size(json_object_get(j, "traces")), 0);
	json_decref(j);
	/* Pagination: newest first, one per page, the cursor leads to the other. */
	j = api_get("/api/v1/traces?app=com.example.api&limit=1", 200);
	assert_int_equal(json_array_size(json_object_get(j, "traces")), 1);
	assert_true(list_has(json_object_get(j, "traces"), "trace_id", b));
	cur = json_string_value(json_object_get(j, "next_cursor"));
	assert_non_null(cur);
	snprintf(path, sizeof path, "/api/v1/traces?app=com.example.api&limit=1&cursor=%s", cur);
	j2 = api_get(path, 200);
	assert_true(list_has(json_object_get(j2, "traces"), "trace_id", a));
	assert_true(json_is_null(json_object_get(j2, "next_cursor")));
	json_decref(j2);
	json_decref(j);
	json_decref(api_get("/api/v1/traces?limit=abc", 400));
	json_decref(api_get("/api/v1/traces?min_severity=1x", 400));
	curl_free(esc);
	free(method);
	free(a);
	free(b);
}

static void test_integration_api_sql_injection_matches_nothing(void **state)
{
	json_t *j;
	int before = db_count("SELECT count(*) FROM traces", NULL);
	j = api_get("/api/v1/traces?app=%27%20OR%20%271%27%3D%271", 200);
	assert_int_equal(json_array_size(json_object_get(j, "traces")), 0);
	json_decref(j);
	j = api_get("/api/v1/traces?model=x%27%29%3B%20DROP%20TABLE%20traces%3B%20--", 200);
	assert_int_equal(json_array_size(json_object_get(j, "traces")), 0);
	json_decref(j);
	j = api_get("/api/v1/methods/%27%20OR%201%3D1%20--", 200);
	assert_int_equal(json_integer_value(json_object_get(j, "count")), 0);
	json_decref(j);
	/* Filter values that are not UTF-8 match nothing (on either backend). */
	j = api_get("/api/v1/traces?app=%FF%FE", 200);
	assert_int_equal(json_array_size(json_object_get(j, "traces")), 0);
	json_decref(j);
	j = api_get("/api/v1/traces?method=%C0%AF", 200);
	assert_int_equal(json_array_size(json_object_get(j, "traces")), 0);
	json_decref(j);
	assert_int_equal(db_count("SELECT count(*) FROM traces", NULL), before);
	json_decref(api_get("/api/v1/traces/t-%27%20OR%201%3D1", 404));
	json_decref(api_get("/api/v1/traces/t-%FF", 404));
	json_decref(api_get("/api/v1/traces/t-%FF/export?format=folded", 404));
}

static void test_integration_api_trace_page_has_top_self_and_chains(void **state)
{
	char *id = decoded_trace(32, "com.example.page", "api-page"), path[256];
	json_t *j, *top, *chains;
	const char *m;

	snprintf(path, sizeof path, "/api/v1/traces/%s", id);
	j = api_get(path, 200);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "decoded");
	assert_string_equal(json_string_value(json_object_get(j, "app_id")), "com.example.page");
	top = json_object_get(j, "top_self");
	assert_true(json_array_size(top) >= 3);
	m = json_string_value(json_object_get(json_array_get(top, 0), "method"));
	assert_non_null(m);
	assert_non_null(strstr(m, "rvs_fixture_hot_spin"));
	chains = json_object_get(j, "chains");
	assert_true(json_array_size(chains) >= 1);
	assert_int_equal(
		strlen(json_string_value(json_object_get(json_array_get(chains, 0), "signature"))),
		16);
	json_decref(j);
	json_decref(api_get("/api/v1/traces/t-00000000000000000000000000000000", 404));
	free(id);
}

static void test_integration_api_quarantined_trace_shows_reason(void **state)
{
	char *tok = enroll("api-q"), path[256], *st;
	size_t len;
	uint8_t *env = envelope(33, "com.example.q", "api-q", 300, &len);
	Rearview__UploadAck *k = upload(tok, env, len);
	json_t *j;

	st = wait_decoded(k->trace_id);
	assert_string_equal(st, "quarantined");
	snprintf(path, sizeof path, "/api/v1/traces/%s", k->trace_id);
	j = api_get(path, 200);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "quarantined");
	assert_true(strncmp(json_string_value(json_object_get(j, "quarantine_reason")),
			    "capture: ", 9) == 0);
	json_decref(j);
	free(st);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(tok);
}

static void test_integration_api_export_every_format(void **state)
{
	static const char *const fmts[] = {"folded",   "chrome",  "speedscope",
					   "perfetto", "android", "svg"};
	char *id = decoded_trace(34, "com.example.export", "api-export"), path[512];
	struct resp r;

	for (size_t i = 0; i < 6; i++) {
		snprintf(path, sizeof path, "/api/v1/traces/%s/export?format=%s", id, fmts[i]);
		http(NULL, "GET", path, g_api, NULL, 0, NULL, &r);
		assert_int_equal(r.code, 200);
		assert_true(r.len > 16);
		assert_non_null(strstr(r.hdrs, "Content-Disposition: attachment"));
		if (strcmp(fmts[i], "folded") == 0)
			assert_non_null(strstr((char *)r.body, "rvs_fixture_hot_spin"));
		if (strcmp(fmts[i], "svg") == 0)
			assert_non_null(strstr((char *)r.body, "<svg"));
		resp_free(&r);
	}
	snprintf(path, sizeof path, "/api/v1/traces/%s/export?format=pdf", id);
	json_decref(api_get(path, 400));
	snprintf(path, sizeof path, "/api/v1/traces/%s/export?format=..%%2F..%%2Fetc%%2Fpasswd",
		 id);
	json_decref(api_get(path, 400));
	snprintf(path, sizeof path, "/api/v1/traces/%s/export", id);
	json_decref(api_get(path, 400));
	json_decref(api_get("/api/v1/traces/..%2F..%2Fetc/export?format=folded", 404));
	free(id);
}

static void test_integration_api_method_page_has_percentiles(void **state)
{
	char *id = decoded_trace(35, "com.example.method", "api-method"), path[1024], *esc;
	char *method = db_text("SELECT method FROM trace_methods WHERE trace_id = ?"
			       " AND self_rank = 1",
			       id);
	json_t *j, *self;

	esc = curl_easy_escape(NULL, method, 0);
	snprintf(path, sizeof path, "/api/v1/methods/%s", esc);
	j = api_get(path, 200);
	assert_string_equal(json_string_value(json_object_get(j, "method")), method);
	assert_true(json_integer_value(json_object_get(j, "count")) >= 1);
	self = json_object_get(j, "self_ns");
	assert_true(json_integer_value(json_object_get(self, "p50")) > 0);
	assert_true(json_integer_value(json_object_get(self, "p95")) >=
		    json_integer_value(json_object_get(self, "p50")));
	assert_true(list_has(json_object_get(j, "traces"), "trace_id", id));
	json_decref(j);
	curl_free(esc);
	free(method);
	free(id);
}

static void test_integration_api_hostile_method_name_is_escaped(void **state)
{
	struct resp r;
	json_t *j;
	/* <script>"\ plus a control character and bytes that are not UTF-8. */
	http(NULL, "GET", "/api/v1/methods/%3Cscript%3E%22%5C%01%FF%FE", g_api, NULL, 0, NULL, &r);
	assert_int_equal(r.code, 200);
	assert_null(strstr((char *)r.body, "<script>\""));
	assert_null(memchr(r.body, 0x01, r.len));
	j = json_loadb((const char *)r.body, r.len, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "method")), "<script>\"\\\x01??");
	json_decref(j);
	resp_free(&r);
	json_decref(api_get("/api/v1/methods/%ZZ", 400));
	json_decref(api_get("/api/v1/methods/a%00b", 400));
}

/* Packs a SkipReport (caller frees); report_id filled from seed. */
static uint8_t *skip_report(uint8_t seed, const char *app_id, const char *reason, size_t *len)
{
	Rearview__SkipReport k = REARVIEW__SKIP_REPORT__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	uint8_t id[16], *buf;

	memset(id, seed, sizeof id);
	k.report_id.data = id;
	k.report_id.len = sizeof id;
	app.app_id = (char *)app_id;
	app.version = (char *)"1.0";
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
	an.severity = 60;
	k.app = &app;
	k.anomaly = &an;
	k.reason = (char *)reason;
	k.captured_realtime_ns = 1700000000000000000ull;
	*len = rearview__skip_report__get_packed_size(&k);
	buf = malloc(*len);
	assert_non_null(buf);
	rearview__skip_report__pack(&k, buf);
	return buf;
}

/* POSTs a skip report that must be acknowledged, as a duplicate or not. */
static void post_skip(const char *tok, const uint8_t *k, size_t len, int duplicate)
{
	Rearview__SkipAck *a;
	struct resp r;

	http(NULL, "POST", "/v1/skips", tok, k, len, NULL, &r);
	assert_int_equal(r.code, 200);
	a = rearview__skip_ack__unpack(NULL, r.len, r.body);
	assert_non_null(a);
	assert_int_equal(a->duplicate, duplicate);
	rearview__skip_ack__free_unpacked(a, NULL);
	resp_free(&r);
}

static void test_integration_skip_reports_are_stored_once_and_counted(void **state)
{
	char *tok = enroll("skip-model");
	const char *app = "com.example.skips<script>";
	size_t len, l2;
	uint8_t *k1 = skip_report(0x51, app, "quota_exhausted", &len);
	uint8_t *k2 = skip_report(0x52, app, "quota_exhausted", &l2);
	json_t *j, *row;
	int found = 0;

	(void)state;
	post_skip(tok, k1, len, 0);
	/* A retry (same report_id) is acknowledged as a duplicate, stored once. */
	post_skip(tok, k1, len, 1);
	post_skip(tok, k2, l2, 0);

	j = api_get("/api/v1/skips?app=com.example.skips%3Cscript%3E", 200);
	for (size_t i = 0; i < json_array_size(json_object_get(j, "reasons")); i++) {
		row = json_array_get(json_object_get(j, "reasons"), i);
		if (strcmp(json_string_value(json_object_get(row, "reason")), "quota_exhausted"))
			continue;
		assert_int_equal(json_integer_value(json_object_get(row, "count")), 2);
		assert_int_equal(json_integer_value(json_object_get(row, "anomaly_kind")), 1);
		found = 1;
	}
	assert_true(found);
	assert_int_equal(json_array_size(json_object_get(j, "recent")), 2);
	row = json_array_get(json_object_get(j, "recent"), 0);
	assert_string_equal(json_string_value(json_object_get(row, "app_id")), app);
	json_decref(j);
	free(k1);
	free(k2);
	free(tok);
}

static void test_integration_bad_skip_reports_get_400_with_reason(void **state)
{
	char *tok = enroll("skip-bad-model");
	size_t len;
	uint8_t *k = skip_report(0x53, "a", "Quota Exhausted; DROP TABLE skips", &len);
	uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	Rearview__Error *e;
	struct resp r;

	(void)state;
	http(NULL, "POST", "/v1/skips", tok, k, len, NULL, &r);
	assert_int_equal(r.code, 400);
	e = error_of(&r);
	assert_non_null(strstr(e->message, "reason"));
	rearview__error__free_unpacked(e, NULL);
	resp_free(&r);
	http(NULL, "POST", "/v1/skips", tok, junk, sizeof junk, NULL, &r);
	assert_int_equal(r.code, 400);
	e = error_of(&r);
	assert_non_null(strstr(e->message, "malformed"));
	rearview__error__free_unpacked(e, NULL);
	resp_free(&r);
	assert_int_equal(
		db_count("SELECT count(*) FROM skips WHERE reason != ?", "quota_exhausted"), 0);
	free(k);
	free(tok);
}

static void test_integration_api_signatures_group_traces(void **state)
{
	char *a = decoded_trace(36, "com.example.sig", "api-sig-a");
	char *b = decoded_trace(37, "com.example.sig", "api-sig-b");
	char *sig = db_text("SELECT signature FROM trace_chains WHERE trace_id = ? AND kind = 'top'"
			    " AND rank = 1",
			    a);
	json_t *j, *arr, *o;
	size_t i;
	int found = 0;

	j = api_get("/api/v1/signatures", 200);
	arr = json_object_get(j, "signatures");
	json_array_foreach(arr, i, o)
	{
		if (strcmp(json_string_value(json_object_get(o, "signature")), sig) == 0) {
			/* Every fixture capture has this top chain: a and b at least. */
			assert_true(json_integer_value(json_object_get(o, "traces")) >= 2);
			assert_non_null(strstr(json_string_value(json_object_get(o, "chain")),
					       "rvs_fixture_hot_spin"));
			found = 1;
		}
	}
	assert_true(found);
	json_decref(j);
	free(sig);
	free(a);
	free(b);
}

static void test_integration_sql_injection_is_stored_verbatim(void **state)
{
	static const char evil_app[] = "x'); DROP TABLE uploads; --";
	static const char evil_model[] = "' OR '1'='1";
	char *tok = enroll(evil_model);
	size_t len;
	uint8_t *env = envelope(5, evil_app, evil_model, 10, &len);
	Rearview__UploadAck *k = upload(tok, env, len);

	assert_int_equal(db_count("SELECT count(*) FROM uploads WHERE app_id = ?", evil_app), 1);
	assert_int_equal(db_count("SELECT count(*) FROM devices WHERE model = ?", evil_model), 1);
	assert_true(db_count("SELECT count(*) FROM uploads", NULL) >= 1);
	rearview__upload_ack__free_unpacked(k, NULL);
	free(env);
	free(tok);
}

static void test_integration_control_chars_and_bad_utf8_get_400(void **state)
{
	static const char *const evil[] = {"app\x1b[31m<script>alert(1)</script>", "app\xc0\xaf",
					   "line\nbreak"};
	char *tok = enroll("evil-chars");
	for (size_t i = 0; i < sizeof evil / sizeof evil[0]; i++) {
		size_t len;
		uint8_t *env = envelope((uint8_t)(40 + i), evil[i], "m", 0, &len);
		struct resp r;
		Rearview__Error *err;
		http(NULL, "POST", "/v1/uploads", tok, env, len, NULL, &r);
		assert_int_equal(r.code, 400);
		err = error_of(&r);
		assert_non_null(strstr(err->message, "app field"));
		rearview__error__free_unpacked(err, NULL);
		resp_free(&r);
		free(env);
	}
	free(tok);
}

static void test_integration_path_traversal_gets_404(void **state)
{
	static const char *const paths[] = {
		"/v1/policy/../../../../etc/passwd",
		"/../rearview.db",
		"/v1/%2e%2e/%2e%2e/etc/passwd",
		"/v1/../server.key",
		"//etc/passwd",
		"/blobs/../enrollment.secret",
	};
	char *tok = enroll("traversal");
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		struct resp r;
		http(NULL, "GET", paths[i], tok, NULL, 0, NULL, &r);
		assert_int_equal(r.rc, CURLE_OK);
		assert_int_equal(r.code, 404);
		assert_null(r.body ? strstr((char *)r.body, "root:") : NULL);
		assert_null(r.body ? strstr((char *)r.body, "PRIVATE KEY") : NULL);
		resp_free(&r);
	}
	free(tok);
}

static void test_integration_huge_header_gets_431(void **state)
{
	char *hdr = malloc(12000);
	struct resp r;
	memcpy(hdr, "X-Junk: ", 8);
	memset(hdr + 8, 'a', 12000 - 9);
	hdr[12000 - 1] = '\0';
	http(NULL, "GET", "/metrics", NULL, NULL, 0, hdr, &r);
	assert_int_equal(r.code, 431);
	resp_free(&r);
	free(hdr);
}

/* A blocking mbedTLS client, for requests libcurl cannot send slowly. */
struct tls {
	mbedtls_net_context net;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca;
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
};

/* Connects and handshakes; `suites` and `groups` (each 0-terminated, or
 * NULL for mbedTLS's defaults) restrict what the client offers.  Returns
 * the handshake's result: 0 or an mbedTLS error. */
static int tls_try(struct tls *t, const mbedtls_ssl_session *resume, const int *suites,
		   const mbedtls_ecp_group_id *groups)
{
	char port[16];
	int r;

	mbedtls_net_init(&t->net);
	mbedtls_ssl_init(&t->ssl);
	mbedtls_ssl_config_init(&t->conf);
	mbedtls_x509_crt_init(&t->ca);
	mbedtls_entropy_init(&t->ent);
	mbedtls_ctr_drbg_init(&t->drbg);
	assert_int_equal(mbedtls_ctr_drbg_seed(&t->drbg, mbedtls_entropy_func, &t->ent, NULL, 0),
			 0);
	assert_int_equal(mbedtls_x509_crt_parse_file(&t->ca, g_ca), 0);
	snprintf(port, sizeof port, "%d", g_port);
	assert_int_equal(mbedtls_net_connect(&t->net, "127.0.0.1", port, MBEDTLS_NET_PROTO_TCP), 0);
	assert_int_equal(mbedtls_ssl_config_defaults(&t->conf, MBEDTLS_SSL_IS_CLIENT,
						     MBEDTLS_SSL_TRANSPORT_STREAM,
						     MBEDTLS_SSL_PRESET_DEFAULT),
			 0);
	mbedtls_ssl_conf_ca_chain(&t->conf, &t->ca, NULL);
	mbedtls_ssl_conf_authmode(&t->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_rng(&t->conf, mbedtls_ctr_drbg_random, &t->drbg);
	if (suites)
		mbedtls_ssl_conf_ciphersuites(&t->conf, suites);
	if (groups)
		mbedtls_ssl_conf_curves(&t->conf, groups);
	assert_int_equal(mbedtls_ssl_setup(&t->ssl, &t->conf), 0);
	assert_int_equal(mbedtls_ssl_set_hostname(&t->ssl, "localhost"), 0);
	mbedtls_ssl_set_bio(&t->ssl, &t->net, mbedtls_net_send, mbedtls_net_recv, NULL);
	if (resume)
		assert_int_equal(mbedtls_ssl_set_session(&t->ssl, resume), 0);
	while ((r = mbedtls_ssl_handshake(&t->ssl)) == MBEDTLS_ERR_SSL_WANT_READ ||
	       r == MBEDTLS_ERR_SSL_WANT_WRITE)
		;
	return r;
}

static void tls_connect_resume(struct tls *t, const mbedtls_ssl_session *resume)
{
	assert_int_equal(tls_try(t, resume, NULL, NULL), 0);
}

static void tls_connect(struct tls *t)
{
	tls_connect_resume(t, NULL);
}

static void tls_write(struct tls *t, const void *data, size_t len)
{
	const unsigned char *p = data;
	while (len > 0) {
		int n = mbedtls_ssl_write(&t->ssl, p, len);
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

static void tls_free(struct tls *t)
{
	mbedtls_ssl_free(&t->ssl);
	mbedtls_ssl_config_free(&t->conf);
	mbedtls_x509_crt_free(&t->ca);
	mbedtls_net_free(&t->net);
	mbedtls_ctr_drbg_free(&t->drbg);
	mbedtls_entropy_free(&t->ent);
}

/* A TLS client that sends its request one byte per second. */
static void test_integration_slowloris_is_cut_off(void **state)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				  "User-Agent: slowloris/1.0 (one byte per second)\r\n"
				  "Accept: */*\r\n\r\n";
	struct tls t;
	size_t sent = 0;
	int cut = 0, r;

	tls_connect(&t);
	while (sent < sizeof req - 1) {
		struct pollfd p = {.fd = t.net.fd, .events = POLLIN};
		if (mbedtls_ssl_write(&t.ssl, (const unsigned char *)req + sent, 1) != 1) {
			cut = 1;
			break;
		}
		sent++;
		/* The pause between bytes; readable early means the server acted. */
		if (poll(&p, 1, 1000) > 0) {
			unsigned char buf[256];
			r = mbedtls_ssl_read(&t.ssl, buf, sizeof buf);
			/* Any answer but a closed connection would be wrong. */
			assert_true(r <= 0);
			cut = 1;
			break;
		}
	}
	assert_true(cut);
	assert_true(sent < sizeof req - 1);
	tls_free(&t);
}

/* Issue 18 item 13: only forward-secret AEAD suites, X25519/P-256/P-384.
 * A client offering nothing else is refused at the handshake. */
static void test_integration_tls_offers_only_aead_suites_and_modern_groups(void **state)
{
	static const int cbc[] = {MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
				  MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, 0};
	static const int ccm8[] = {MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8, 0};
	static const int camellia[] = {MBEDTLS_TLS_ECDHE_ECDSA_WITH_CAMELLIA_128_GCM_SHA256,
				       MBEDTLS_TLS_ECDHE_ECDSA_WITH_CAMELLIA_128_CBC_SHA256, 0};
	static const int gcm[] = {MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, 0};
	static const int chacha[] = {MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, 0};
	static const mbedtls_ecp_group_id p521[] = {MBEDTLS_ECP_DP_SECP521R1, MBEDTLS_ECP_DP_NONE};
	static const mbedtls_ecp_group_id x25519[] = {
		MBEDTLS_ECP_DP_CURVE25519, MBEDTLS_ECP_DP_SECP256R1, MBEDTLS_ECP_DP_NONE};
	static const int *const refused[] = {cbc, ccm8, camellia};
	struct tls t;

	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		assert_int_not_equal(tls_try(&t, NULL, refused[i], NULL), 0);
		tls_free(&t);
	}
	assert_int_not_equal(tls_try(&t, NULL, gcm, p521), 0);
	tls_free(&t);

	assert_int_equal(tls_try(&t, NULL, gcm, x25519), 0);
	assert_string_equal(mbedtls_ssl_get_ciphersuite(&t.ssl),
			    "TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256");
	tls_free(&t);
	assert_int_equal(tls_try(&t, NULL, chacha, NULL), 0);
	assert_string_equal(mbedtls_ssl_get_ciphersuite(&t.ssl),
			    "TLS-ECDHE-ECDSA-WITH-CHACHA20-POLY1305-SHA256");
	tls_free(&t);
	/* A default client gets an AEAD suite. */
	assert_int_equal(tls_try(&t, NULL, NULL, NULL), 0);
	const char *cs = mbedtls_ssl_get_ciphersuite(&t.ssl);
	assert_true(strstr(cs, "-GCM-") || strstr(cs, "CHACHA20-POLY1305"));
	tls_free(&t);
}

/* A reconnecting client offering its session id gets an abbreviated
 * handshake: the server echoes the id instead of minting a new one. */
static void test_integration_tls_session_is_resumed(void **state)
{
	struct tls a, b, c;
	mbedtls_ssl_session saved;

	mbedtls_ssl_session_init(&saved);
	tls_connect(&a);
	assert_int_equal(mbedtls_ssl_get_session(&a.ssl, &saved), 0);
	assert_int_equal(saved.id_len, 32);
	assert_string_equal(mbedtls_ssl_get_version(&a.ssl), "TLSv1.2");
	mbedtls_ssl_close_notify(&a.ssl);
	tls_free(&a);

	tls_connect_resume(&b, &saved);
	assert_int_equal(b.ssl.session->id_len, 32);
	assert_memory_equal(b.ssl.session->id, saved.id, 32);
	mbedtls_ssl_close_notify(&b.ssl);
	tls_free(&b);

	/* Control: without the saved session the id is new. */
	tls_connect(&c);
	assert_memory_not_equal(c.ssl.session->id, saved.id, 32);
	mbedtls_ssl_close_notify(&c.ssl);
	tls_free(&c);
	mbedtls_ssl_session_free(&saved);
}

/* After a complete exchange, a kept-alive connection that stays silent is
 * closed by the server once idle_timeout_ms passes (bounded wait here). */
static void test_integration_idle_keep_alive_connection_is_closed(void **state)
{
	static const char req[] = "GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[4096];
	size_t got = 0;
	struct tls t;
	struct pollfd p;
	char *end;
	long clen;
	int n;

	tls_connect(&t);
	tls_write(&t, req, sizeof req - 1);
	/* Read exactly one response: headers, then Content-Length bytes. */
	for (;;) {
		n = mbedtls_ssl_read(&t.ssl, (unsigned char *)buf + got, sizeof buf - 1 - got);
		assert_true(n > 0);
		got += (size_t)n;
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end && strstr(buf, "Content-Length: ")) {
			clen = strtol(strstr(buf, "Content-Length: ") + 16, NULL, 10);
			if ((long)got >= (end + 4 - buf) + clen)
				break;
		}
	}
	assert_true(strncmp(buf, "HTTP/1.1 404 ", 13) == 0);
	assert_non_null(strstr(buf, "Connection: keep-alive"));
	p = (struct pollfd){.fd = t.net.fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 60000), 1);
	n = mbedtls_ssl_read(&t.ssl, (unsigned char *)buf, sizeof buf);
	assert_true(n <= 0 && n != MBEDTLS_ERR_SSL_WANT_READ);
	tls_free(&t);
}

/* Issue 18 item 3: silent connections filling every slot (8 here) locked a
 * normal client out for the handshake timeout.  Now the one idle the longest
 * is closed to admit it: the client is served at once. */
static void test_integration_connection_limit_evicts_oldest_idle(void **state)
{
	int fds[8];
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct resp r;

	a.sin_port = htons((uint16_t)g_port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 8; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(connect(fds[i], (struct sockaddr *)&a, sizeof a), 0);
	}
	http(NULL, "GET", "/metrics", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr((char *)r.body, "rearview_connections_evicted_total"));
	resp_free(&r);
	for (int i = 0; i < 8; i++)
		close(fds[i]);
}

static int log_has(const char *needle)
{
	char path[512];
	static char buf[1 << 20];
	snprintf(path, sizeof path, "%s/server.log", g_dir);
	return slurp(path, buf, sizeof buf) > 0 && strstr(buf, needle) != NULL;
}

/* SIGTERM while a request is half sent: new connections are refused, the
 * in-flight request is still answered (Connection: close), then exit 0. */
static void test_integration_sigterm_drains_in_flight_request(void **state)
{
	char *tok = enroll("drain");
	size_t len, got = 0;
	uint8_t *env = envelope(9, "drain.app", "m", 64, &len);
	char head[512], reply[4096];
	struct tls t;
	struct resp r;
	int st, n;

	tls_connect(&t);
	n = snprintf(head, sizeof head,
		     "POST /v1/uploads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
		     "Content-Type: application/x-protobuf\r\nContent-Length: %zu\r\n\r\n",
		     tok, len);
	tls_write(&t, head, (size_t)n);
	tls_write(&t, env, len / 2);
	assert_int_equal(kill(g_pid, SIGTERM), 0);
	for (int i = 0; i < 1200 && !log_has("msg=\"draining\""); i++)
		usleep(50000);
	assert_true(log_has("msg=\"draining\""));
	http(NULL, "GET", "/metrics", NULL, NULL, 0, NULL, &r);
	assert_int_not_equal(r.rc, CURLE_OK);
	resp_free(&r);
	tls_write(&t, env + len / 2, len - len / 2);
	while (got < sizeof reply - 1) {
		n = mbedtls_ssl_read(&t.ssl, (unsigned char *)reply + got, sizeof reply - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	reply[got] = '\0';
	assert_true(strncmp(reply, "HTTP/1.1 200 ", 13) == 0);
	assert_non_null(strstr(reply, "Connection: close\r\n"));
	tls_free(&t);
	assert_int_equal(waitpid(g_pid, &st, 0), g_pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	g_pid = -1;
	free(env);
	free(tok);
}

/* ---- a server started without a policy publishes the default, signed ---- */

static void test_integration_default_policy_is_published_signed_and_verifies(void **state)
{
	char *tok = enroll("policy-default");
	char path[512], pub[1024], etag[128] = "", inm[160], *p;
	Rearview__PolicyBody *b = NULL;
	struct resp r;

	snprintf(path, sizeof path, "%s/policy-signing.pub", g_data);
	assert_true(slurp(path, pub, sizeof pub) > 0);
	http(NULL, "GET", "/v1/policy", tok, NULL, 0, NULL, &r);
	assert_int_equal(r.rc, CURLE_OK);
	assert_int_equal(r.code, 200);
	assert_int_equal(rvp_policy_verify(r.body, r.len, pub, 0, (int64_t)time(NULL), &b),
			 RVP_VERIFY_OK);
	assert_non_null(b);
	assert_int_equal(b->version, 1);
	assert_int_equal(rvp_policy_weekly_quota(b), rvp_policy_weekly_quota(rvp_policy_default()));
	rearview__policy_body__free_unpacked(b, NULL);
	/* A flipped byte no longer verifies. */
	r.body[r.len - 1] ^= 1;
	assert_int_not_equal(rvp_policy_verify(r.body, r.len, pub, 0, (int64_t)time(NULL), NULL),
			     RVP_VERIFY_OK);
	p = strstr(r.hdrs, "ETag: ");
	assert_non_null(p);
	sscanf(p + 6, "%127[^\r\n]", etag);
	resp_free(&r);
	snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
	http(NULL, "GET", "/v1/policy", tok, NULL, 0, inm, &r);
	assert_int_equal(r.code, 304);
	resp_free(&r);
	free(tok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integration_enroll_then_upload_stores_blob),
		cmocka_unit_test(test_integration_tls_offers_only_aead_suites_and_modern_groups),
		cmocka_unit_test(test_integration_retry_returns_original_ack_as_duplicate),
		cmocka_unit_test(test_integration_bad_token_gets_401),
		cmocka_unit_test(test_integration_wrong_enrolment_secret_gets_403),
		cmocka_unit_test(test_integration_oversized_body_gets_413),
		cmocka_unit_test(test_integration_malformed_protobuf_gets_400_with_reason),
		cmocka_unit_test(test_integration_expect_100_continue_is_answered),
		cmocka_unit_test(test_integration_keep_alive_reuses_connection),
		cmocka_unit_test(test_integration_policy_etag_gives_304),
		cmocka_unit_test(test_integration_rate_limit_gives_429_with_retry_after),
		cmocka_unit_test(test_integration_fourth_upload_over_weekly_quota_3_gets_429),
		cmocka_unit_test(test_integration_zstd_capture_is_decoded_and_indexed),
		cmocka_unit_test(test_integration_shuffled_capture_is_decoded_and_indexed),
		cmocka_unit_test(test_integration_truncated_capture_is_quarantined_with_reason),
		cmocka_unit_test(test_integration_truncated_zstd_is_quarantined_with_reason),
		cmocka_unit_test(test_integration_summary_only_upload_is_indexed_without_methods),
		cmocka_unit_test(test_integration_api_without_token_gets_401),
		cmocka_unit_test(test_integration_api_traces_filters_and_paginates),
		cmocka_unit_test(test_integration_api_sql_injection_matches_nothing),
		cmocka_unit_test(test_integration_api_trace_page_has_top_self_and_chains),
		cmocka_unit_test(test_integration_api_quarantined_trace_shows_reason),
		cmocka_unit_test(test_integration_api_export_every_format),
		cmocka_unit_test(test_integration_api_method_page_has_percentiles),
		cmocka_unit_test(test_integration_api_hostile_method_name_is_escaped),
		cmocka_unit_test(test_integration_api_signatures_group_traces),
		cmocka_unit_test(test_integration_skip_reports_are_stored_once_and_counted),
		cmocka_unit_test(test_integration_bad_skip_reports_get_400_with_reason),
		cmocka_unit_test(test_integration_token_guessing_is_throttled_per_address),
		cmocka_unit_test(test_integration_sql_injection_is_stored_verbatim),
		cmocka_unit_test(test_integration_control_chars_and_bad_utf8_get_400),
		cmocka_unit_test(test_integration_path_traversal_gets_404),
		cmocka_unit_test(test_integration_huge_header_gets_431),
		cmocka_unit_test(test_integration_slowloris_is_cut_off),
		cmocka_unit_test(test_integration_tls_session_is_resumed),
		cmocka_unit_test(test_integration_idle_keep_alive_connection_is_closed),
		cmocka_unit_test(test_integration_connection_limit_evicts_oldest_idle),
		cmocka_unit_test(test_integration_sigterm_drains_in_flight_request),
	};
	const struct CMUnitTest published[] = {
		cmocka_unit_test(test_integration_default_policy_is_published_signed_and_verifies),
	};
	int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
	return failed + cmocka_run_group_tests_name("published_policy", published,
						    group_setup_default_policy, group_teardown);
}
