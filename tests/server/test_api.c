/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api.c — the server assembled in-process (net + api + the store the
 * suite's switch picks, store_env.h)
 * with a stand-in decoder behind the decode seam, to check what the seam
 * promises: every upload leaves pending_decode either decoded or
 * quarantined with the decoder's reason.  The loop runs on its own thread;
 * libcurl drives it over TLS from the test thread.  Three groups, each
 * with its own server and limits: the decode seam and enrolment (issue 18
 * item 5), connection caps and eviction, handshakes under pressure (item 3);
 * a fourth streams a body of the test's own (GET /test/stream) to check
 * net.c's backpressure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "api/api.h"
#include "http/net.h"
#include "base/util.h"
#include "base/metrics.h"
#include "pipeline/upload.h"
#include "base/config.h"
#include "app/init.h"
#include "store/store.h"
#include "store_env.h"
#include "rearview/upload.pb-c.h"

static char g_dir[64], g_data[128];
static char g_dsn[512]; /* the database (store_env.h) */
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

/* GET /test/stream's body: STREAM_TOTAL bytes in STREAM_PIECE-byte pieces,
 * each ready the moment it is pulled (a source that never makes the
 * connection wait).  pull and release run on the loop thread; what they
 * saw is read by the test thread under g_mu once released is set. */
#define STREAM_PIECE (64u << 10)
#define STREAM_TOTAL (32u << 20)
static struct {
	struct rvs_conn *c;
	size_t sent, held_max; /* held_max: rvs_conn_held_bytes at a pull */
	int released;
} g_stream;

static int stream_pull(void *arg, const void **buf, size_t *len)
{
	static const char piece[STREAM_PIECE];
	size_t held = rvs_conn_held_bytes(g_stream.c);

	if (held > g_stream.held_max)
		g_stream.held_max = held;
	if (g_stream.sent == STREAM_TOTAL)
		return 2;
	*buf = piece;
	*len = sizeof piece;
	g_stream.sent += sizeof piece;
	return 1;
}

static void stream_release(void *arg)
{
	pthread_mutex_lock(&g_mu);
	g_stream.released = 1;
	pthread_mutex_unlock(&g_mu);
}

/* GET /test/big's whole body: BIG_TOTAL bytes, byte i being big_byte(i). */
#define BIG_TOTAL (16u << 20)
static uint8_t big_byte(size_t i)
{
	return (uint8_t)(i * 7 + i / 4093);
}

/* The API, GET /test/stream and GET /test/big. */
static void handle(void *ctx, struct rvs_conn *c, struct rvs_http_req *req)
{
	struct rvs_body_src src = {stream_pull, stream_release, NULL};

	if (strcmp(req->path, "/test/ping") == 0) {
		rvs_conn_respond(c, 200, "text/plain", NULL, 0, "pong", 4);
		return;
	}
	if (strcmp(req->path, "/test/big") == 0) {
		uint8_t *b = malloc(BIG_TOTAL);
		if (!b)
			abort();
		for (size_t i = 0; i < BIG_TOTAL; i++)
			b[i] = big_byte(i);
		rvs_conn_respond(c, 200, "application/octet-stream", NULL, 0, b, BIG_TOTAL);
		free(b);
		return;
	}
	if (strcmp(req->path, "/test/stream") != 0) {
		rvs_api_handle(ctx, c, req);
		return;
	}
	memset(&g_stream, 0, sizeof g_stream);
	g_stream.c = c;
	rvs_conn_respond_stream(c, 200, "application/octet-stream", NULL, 0, &src);
}

static void on_ready(void *arg, int rc)
{
	int port = -1;
	if (rc == 0 && rvs_server_new(&g_loop, &g_cfg, &g_m, handle, g_api, &g_srv) == 0)
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

static int setup_with(const char *extra)
{
	char path[256], err[256];
	FILE *f;

	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-api-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_data, sizeof g_data, "%s/d", g_dir);
	if (rvs_init_dir(g_data, NULL, 0))
		return -1;
	snprintf(path, sizeof path, "%s/rearview-server.conf", g_data);
	f = fopen(path, "a");
	if (!f)
		return -1;
	fputs("listen = 127.0.0.1:0\n", f);
	snprintf(path, sizeof path, "%s/rearview.db", g_data);
	if (rvt_store_dsn(path, g_dsn, sizeof g_dsn)) {
		fclose(f);
		return -1;
	}
	fprintf(f, "database = %s\n", g_dsn);
	fputs(extra, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/rearview-server.conf", g_data);
	g_port = -1;
	if (rvs_config_load(path, &g_cfg, err, sizeof err))
		return -1;
	uv_loop_init(&g_loop);
	uv_async_init(&g_loop, &g_stop, on_stop);
	if (rvs_api_new(&g_loop, &g_cfg, &g_m, rvs_store_for(g_cfg.database), &g_decoder, &g_api))
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

/* Enrolment and upload budgets with no refill to speak of (1 a minute), so
 * counts are exact. */
static int setup(void **state)
{
	return setup_with("enroll_burst = 20\nenroll_per_min = 1\n"
			  "enroll_secret_burst = 30\nenroll_secret_per_min = 1\n"
			  "upload_burst = 5\nupload_rate_per_min = 1\n");
}

/* The configuration's defaults. */
static int setup_defaults(void **state)
{
	return setup_with("");
}

/* 16 connections, 4 per address, no shorter handshake deadline. */
static int setup_conns(void **state)
{
	return setup_with("max_connections = 16\nmax_conns_per_addr = 4\n"
			  "handshake_pressure_ms = 30000\n");
}

/* 16 connections, 4 per address, the flood test's: a handshake under
 * pressure keeps the long deadline, so that only eviction can cut it. */
static int setup_flood(void **state)
{
	return setup_with("max_connections = 16\nmax_conns_per_addr = 4\n"
			  "handshake_pressure_ms = 60000\nrequest_timeout_ms = 60000\n");
}

/* 16 connections, handshakes past 12 open must finish within 200 ms. */
static int setup_pressure(void **state)
{
	return setup_with("max_connections = 16\nmax_conns_per_addr = 16\n"
			  "handshake_pressure_ms = 200\n");
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

/* POSTs body to path from the local address src (NULL: any), with a bearer
 * token when given; the status, the body in *out. */
static long post_from(const char *src, const char *path, const char *token, const void *body,
		      size_t len, struct buf *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[256], auth[256], ca[256], iface[64];
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
	if (src) {
		snprintf(iface, sizeof iface, "host!%s", src);
		curl_easy_setopt(c, CURLOPT_INTERFACE, iface);
	}
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

static long post(const char *path, const char *token, const void *body, size_t len, struct buf *out)
{
	return post_from(NULL, path, token, body, len, out);
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
	for (int i = 0; i < 1200; i++) {
		char *s = rvt_db_text(g_dsn, "SELECT state FROM uploads WHERE trace_id = ?", trace);
		int done = s && strcmp(s, "pending_decode") != 0;

		if (done) {
			char *r = rvt_db_text(
				g_dsn, "SELECT reason FROM quarantine WHERE trace_id = ?", trace);
			snprintf(state, cap, "%s", s);
			snprintf(reason, rcap, "%s", r ? r : "");
			free(r);
		}
		free(s);
		if (done)
			break;
		usleep(50000);
	}
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

/* The enrolment secret the server was initialized with. */
static void read_secret(char *secret, size_t cap)
{
	char path[256];
	uint8_t *s;
	size_t n;
	snprintf(path, sizeof path, "%s/enrollment.secret", g_data);
	assert_int_equal(rvs_read_file(path, cap - 1, &s, &n), 0);
	memcpy(secret, s, n);
	secret[n] = '\0';
	free(s);
}

/* One enrolment from src as client_device_id cid (NULL: none); the status,
 * and on 200 the token and device id (malloc'd) when asked for; *why gets
 * whether a refusal named the address or the secret. */
static long enroll(const char *src, const char *cid, char **tok, char **id, int *why)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__DeviceInfo dev = REARVIEW__DEVICE_INFO__INIT;
	Rearview__EnrollResponse *er;
	char secret[128];
	uint8_t body[512];
	struct buf out = {0};
	long code;
	size_t n;

	read_secret(secret, sizeof secret);
	q.enrollment_secret = secret;
	if (cid) {
		dev.device_id = (char *)cid;
		dev.model = (char *)"Pixel 7";
		q.device = &dev;
	}
	n = rearview__enroll_request__pack(&q, body);
	code = post_from(src, "/v1/enroll", NULL, body, n, &out);
	if (code == 200) {
		er = rearview__enroll_response__unpack(NULL, out.n, out.p);
		assert_non_null(er);
		if (tok)
			*tok = strdup(er->device_token);
		if (id)
			*id = strdup(er->device_id);
		rearview__enroll_response__free_unpacked(er, NULL);
	} else if (why && out.p) {
		*why = memmem(out.p, out.n, "this address", 12)	 ? 1
		       : memmem(out.p, out.n, "this secret", 11) ? 2
								 : 0;
	}
	free(out.p);
	return code;
}

static int64_t db_int(const char *sql)
{
	return rvt_db_int(g_dsn, sql, NULL);
}

/* Issue 18 item 5: a device that re-enrols (after a 401) became a second
 * device.  Now it keeps its device id, its old token stops working and the
 * fleet holds one row for it. */
static void test_api_reenrol_same_client_id_keeps_identity(void **state)
{
	char *tok1, *tok2, *id1, *id2, *t, sql[160];
	assert_int_equal(enroll(NULL, "phone-1", &tok1, &id1, NULL), 200);
	t = upload(tok1, 7, "RVCAPTURE before re-enrolment");
	free(t);
	assert_int_equal(enroll(NULL, "phone-1", &tok2, &id2, NULL), 200);
	assert_string_equal(id2, id1);
	assert_string_not_equal(tok2, tok1);
	t = upload(tok2, 8, "RVCAPTURE after re-enrolment");
	free(t);
	assert_int_equal(db_int("SELECT count(*) FROM devices WHERE client_device_id = 'phone-1'"),
			 1);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM uploads WHERE device_id = '%s'", id1);
	assert_int_equal(db_int(sql), 2);
	free(tok1);
	free(tok2);
	free(id1);
	free(id2);
}

/* The status of one upload (upload id seed) with token tok. */
static long upload_status(const char *tok, uint8_t seed)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	uint8_t id[16], body[256];
	struct buf out = {0};
	long code;
	memset(id, seed, sizeof id);
	e.upload_id.data = id;
	e.upload_id.len = 16;
	/* Manual captures: the weekly quota (3) does not charge them, so only
	 * the rate limit can refuse. */
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL;
	e.anomaly = &an;
	size_t n = rearview__upload_envelope__pack(&e, body);
	code = post("/v1/uploads", tok, body, n, &out);
	free(out.p);
	return code;
}

/* Issue 18 item 5: each enrolment came "with a fresh rate limit".  A device
 * that spent its upload budget (burst 5 here) and re-enrols keeps what was
 * left of it (nothing): its new token gets 429 too. */
static void test_api_reenrol_does_not_reset_upload_budget(void **state)
{
	char *tok1, *tok2;
	int ok = 0;
	assert_int_equal(enroll(NULL, "phone-q", &tok1, NULL, NULL), 200);
	for (int i = 0; i < 6; i++)
		ok += upload_status(tok1, (uint8_t)(40 + i)) == 200;
	assert_int_equal(ok, 5);
	assert_int_equal(upload_status(tok1, 50), 429);
	assert_int_equal(enroll(NULL, "phone-q", &tok2, NULL, NULL), 200);
	assert_int_equal(upload_status(tok2, 51), 429);
	free(tok1);
	free(tok2);
}

/* POSTs body to path with token tok; the status, and in *retry the
 * response's Retry-After in seconds (0 when none). */
static long post_retry_after(const char *path, const char *tok, const void *body, size_t len,
			     long *retry)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct buf out = {0};
	char url[256], auth[256], ca[256];
	curl_off_t ra = 0;
	long code = 0;

	snprintf(url, sizeof url, "https://localhost:%d%s", g_port, path);
	snprintf(ca, sizeof ca, "%s/ca.crt", g_data);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
	h = curl_slist_append(h, auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra);
	*retry = (long)ra;
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(out.p);
	return code;
}

/* Out of memory while unpacking a body was -EBADMSG: 400 "malformed", and
 * the device dropped a capture the server merely had no memory for.  With
 * the next allocation of the unpack made to fail (rvs_pb_alloc_fail_in),
 * an upload and a skip report now get 503 with Retry-After — which
 * device/src/upload.c retries, as it does every 5xx — and the same bodies
 * sent again are stored. */
static void test_api_out_of_memory_unpacking_gets_503_retry_after_not_400(void **state)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__SkipReport k = REARVIEW__SKIP_REPORT__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	uint8_t id[16], body[256], kbody[128];
	size_t n, kn;
	long retry = 0;
	char *tok;

	assert_int_equal(enroll("127.0.0.3", "phone-nomem", &tok, NULL, NULL), 200);
	memset(id, 0x61, sizeof id);
	e.upload_id.data = id;
	e.upload_id.len = 16;
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL; /* not charged to the quota */
	e.anomaly = &an;
	n = rearview__upload_envelope__pack(&e, body);
	k.report_id.data = id;
	k.report_id.len = 16;
	k.reason = (char *)"quota";
	kn = rearview__skip_report__pack(&k, kbody);

	rvs_pb_alloc_fail_in = 1;
	assert_int_equal(post_retry_after("/v1/uploads", tok, body, n, &retry), 503);
	assert_true(retry > 0);
	assert_int_equal(rvs_pb_alloc_fail_in, 0); /* the unpack met the failure */
	assert_int_equal(post_retry_after("/v1/uploads", tok, body, n, &retry), 200);

	rvs_pb_alloc_fail_in = 1;
	assert_int_equal(post_retry_after("/v1/skips", tok, kbody, kn, &retry), 503);
	assert_true(retry > 0);
	assert_int_equal(post_retry_after("/v1/skips", tok, kbody, kn, &retry), 200);
	assert_int_equal(db_int("SELECT count(*) FROM skips WHERE reason = 'quota'"), 1);
	free(tok);
}

/* Issue 18 item 5's reproducer: 300 enrolments in 0.1 s from one address,
 * each a new device.  Now the address's budget (burst 20 here, five
 * spent by the tests above) admits at most 20 and the rest get 429 naming
 * the address; another address still enrols. */
static void test_api_enroll_flood_300_from_one_address_gets_429(void **state)
{
	int ok = 0, limited = 0, why = 0;
	for (int i = 0; i < 300; i++) {
		long code = enroll("127.0.0.1", NULL, NULL, NULL, &why);
		if (code == 200)
			ok++;
		else if (code == 429 && why == 1)
			limited++;
	}
	assert_true(ok <= 20);
	assert_int_equal(ok + limited, 300);
	assert_int_equal(enroll("127.0.0.2", "phone-2", NULL, NULL, NULL), 200);
}

/* The enrolment secret has its own budget (burst 30 here) whatever the
 * addresses: spread over fresh addresses, enrolments stop at it with a 429
 * naming the secret. */
static void test_api_enroll_spread_over_addresses_hits_secret_budget(void **state)
{
	int ok = 0, secret_limited = 0, why = 0;
	char src[32];
	for (int i = 0; i < 40; i++) {
		snprintf(src, sizeof src, "127.0.1.%d", 1 + i / 10);
		why = 0;
		long code = enroll(src, NULL, NULL, NULL, &why);
		if (code == 200)
			ok++;
		else if (code == 429 && why == 2)
			secret_limited++;
	}
	assert_true(ok < 30);
	assert_int_equal(ok + secret_limited, 40);
}

/* A TCP connection from src to the server, sending nothing; -1 on failure. */
static int raw_connect(const char *src)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	inet_pton(AF_INET, src, &b.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&b, sizeof b), 0);
	a.sin_port = htons((uint16_t)g_port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	return fd;
}

/* Whether the server closes fd (EOF or reset) within ms milliseconds. */
static int closed_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;
	if (poll(&p, 1, ms) != 1)
		return 0;
	return recv(fd, &c, 1, 0) <= 0;
}

/* Issue 18 item 3's slowloris: one address could hold every slot for the
 * 30 s handshake timeout.  Now its fifth connection is closed at once (cap
 * 4 here); the waits are generous deadlines, far below 30 s. */
static void test_api_fifth_connection_from_one_address_is_closed(void **state)
{
	int fd[5];
	for (int i = 0; i < 5; i++)
		fd[i] = raw_connect("127.0.2.1");
	assert_true(closed_within(fd[4], 10000));
	assert_false(closed_within(fd[0], 0));
	for (int i = 0; i < 5; i++)
		close(fd[i]);
}

/* At max_connections (16 here, silent handshakes from four addresses) a
 * normal client is still served: the connection idle the longest, the
 * first one, is closed to make room. */
static void test_api_full_server_evicts_oldest_idle_for_new_client(void **state)
{
	int fd[16];
	char src[32];
	for (int i = 0; i < 16; i++) {
		snprintf(src, sizeof src, "127.0.3.%d", 1 + i / 4);
		fd[i] = raw_connect(src);
	}
	assert_int_equal(enroll("127.0.3.9", "phone-3", NULL, NULL, NULL), 200);
	assert_true(closed_within(fd[0], 10000));
	assert_false(closed_within(fd[15], 0));
	for (int i = 0; i < 16; i++)
		close(fd[i]);
}

/* Past three quarters of max_connections (12 of 16) a silent handshake is
 * dropped after handshake_pressure_ms (200 ms here), not request_timeout_ms
 * (30 s); the ones admitted before the pressure keep the long deadline. */
static void test_api_handshake_under_pressure_gets_short_deadline(void **state)
{
	int fd[14];
	char src[32];
	for (int i = 0; i < 14; i++) {
		snprintf(src, sizeof src, "127.0.4.%d", 1 + i);
		fd[i] = raw_connect(src);
	}
	assert_true(closed_within(fd[13], 10000));
	assert_false(closed_within(fd[0], 0));
	for (int i = 0; i < 14; i++)
		close(fd[i]);
}

/* The flood: FLOOD_ADDRS addresses (127.0.6.1 …) each holding up to
 * FLOOD_PER_ADDR silent connections — 48 for the server's 16 slots —, every
 * one the server closes opened again at once, so that the server is full
 * and admits every new connection by closing another, as fast as it
 * accepts.  One thread; poll() waits for the server's closes. */
#define FLOOD_ADDRS    12
#define FLOOD_PER_ADDR 4
#define FLOOD_N	       (FLOOD_ADDRS * FLOOD_PER_ADDR)
static atomic_int g_flood_stop;
/* Flood connections the server closed, signalled on g_flood_cv. */
static pthread_mutex_t g_flood_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_flood_cv = PTHREAD_COND_INITIALIZER;
static long g_flood_closed;

static long flood_closed(void)
{
	long n;

	pthread_mutex_lock(&g_flood_mu);
	n = g_flood_closed;
	pthread_mutex_unlock(&g_flood_mu);
	return n;
}

static int flood_connect(int addr)
{
	struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET};
	char src[32];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	snprintf(src, sizeof src, "127.0.6.%d", 1 + addr);
	inet_pton(AF_INET, src, &b.sin_addr);
	a.sin_port = htons((uint16_t)g_port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (bind(fd, (struct sockaddr *)&b, sizeof b) < 0 ||
	    (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *flood(void *arg)
{
	struct pollfd p[FLOOD_N];
	char c;

	(void)arg;
	for (int i = 0; i < FLOOD_N; i++)
		p[i] = (struct pollfd){.fd = -1, .events = POLLIN};
	while (!atomic_load(&g_flood_stop)) {
		for (int i = 0; i < FLOOD_N; i++)
			if (p[i].fd < 0)
				p[i].fd = flood_connect(i / FLOOD_PER_ADDR);
		if (poll(p, FLOOD_N, 100) <= 0)
			continue;
		for (int i = 0; i < FLOOD_N; i++)
			if (p[i].fd >= 0 && p[i].revents && recv(p[i].fd, &c, 1, 0) <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				pthread_mutex_lock(&g_flood_mu);
				g_flood_closed++;
				pthread_cond_broadcast(&g_flood_cv);
				pthread_mutex_unlock(&g_flood_mu);
			}
	}
	for (int i = 0; i < FLOOD_N; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	return NULL;
}

/* A red team's flood from many addresses at once starved a normal client:
 * the server's loop stayed in accept() while the flood reconnected as fast
 * as it was closed (the client's handshake was never read), and at the
 * limit the server closed the connection idle the longest, which was the
 * client's own, still in its TLS handshake.  Now accepts per loop turn are
 * bounded and a full server closes the oldest idle or handshaking
 * connection of the address holding the most, so the flood evicts itself:
 * the normal client (one address, one connection, a fresh handshake for
 * each request) completes every request, within a generous deadline,
 * while the flood goes on.  The flood is under way (the server has
 * closed many of its connections) before the client starts and after it
 * ends. */
static void test_api_flood_from_many_addresses_spares_client_in_handshake(void **state)
{
	enum { REQUESTS = 20 };
	char url[256], ca[256];
	pthread_t t;
	long before, after;
	int ok = 0;
	time_t deadline;

	(void)state;
	atomic_store(&g_flood_stop, 0);
	g_flood_closed = 0;
	assert_int_equal(pthread_create(&t, NULL, flood, NULL), 0);
	pthread_mutex_lock(&g_flood_mu);
	for (time_t until = time(NULL) + 120; g_flood_closed < 4 * FLOOD_N && time(NULL) < until;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&g_flood_cv, &g_flood_mu, &ts);
	}
	before = g_flood_closed;
	pthread_mutex_unlock(&g_flood_mu);
	deadline = time(NULL) + 120; /* for all the requests: generous */
	assert_true(before >= 4 * FLOOD_N);
	snprintf(url, sizeof url, "https://localhost:%d/test/ping", g_port);
	snprintf(ca, sizeof ca, "%s/ca.crt", g_data);
	for (int i = 0; i < REQUESTS && time(NULL) < deadline; i++) {
		CURL *c = curl_easy_init();
		struct buf out = {0};
		long code = 0;
		CURLcode rc;

		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_CAINFO, ca);
		curl_easy_setopt(c, CURLOPT_INTERFACE, "host!127.0.7.1");
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
		curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)(deadline - time(NULL)) + 1);
		rc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_cleanup(c);
		if (rc == CURLE_OK && code == 200 && out.n == 4 && memcmp(out.p, "pong", 4) == 0)
			ok++;
		else
			fprintf(stderr, "request %d: %s, status %ld\n", i, curl_easy_strerror(rc),
				code);
		free(out.p);
	}
	after = flood_closed();
	atomic_store(&g_flood_stop, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	fprintf(stderr,
		"flood: %ld connections closed by the server before the client, %ld "
		"while it made %d requests; %d answered\n",
		before, after - before, REQUESTS, ok);
	assert_true(after - before >= FLOOD_N); /* the flood ran throughout */
	assert_int_equal(ok, REQUESTS);
}

static size_t count_body(char *p, size_t sz, size_t n, void *u)
{
	*(size_t *)u += sz * n;
	return sz * n;
}

/* A source always ready and a client reading as fast as it can: writes the
 * socket takes at once leave its write queue but keep their buffers until
 * libuv's callbacks run, after the pump returns to the loop — so the
 * connection must count those too, or it holds up to the whole body.  The
 * source is pulled only while the connection holds at most 256 KiB
 * (net.h), and the body arrives whole. */
static void test_api_stream_pulled_only_while_256kib_held(void **state)
{
	CURL *c = curl_easy_init();
	char url[256], ca[256];
	size_t got = 0, held_max;
	long code = 0;
	int released;

	snprintf(url, sizeof url, "https://localhost:%d/test/stream", g_port);
	snprintf(ca, sizeof ca, "%s/ca.crt", g_data);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, count_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	/* The source is let go before the last chunk is sent. */
	pthread_mutex_lock(&g_mu);
	released = g_stream.released;
	held_max = g_stream.held_max;
	pthread_mutex_unlock(&g_mu);
	fprintf(stderr, "streamed %zu bytes; held at most %zu bytes when pulled\n", got, held_max);
	assert_int_equal(code, 200);
	assert_int_equal(got, STREAM_TOTAL);
	assert_true(released);
	assert_true(held_max <= 256u << 10);
}

/* A slow reader's body: how much arrived, and whether each byte was the
 * one sent at its offset. */
struct slow_body {
	size_t got, wrong;
};

static size_t check_big(char *p, size_t sz, size_t n, void *u)
{
	struct slow_body *b = u;
	for (size_t i = 0; i < sz * n; i++)
		b->wrong += (uint8_t)p[i] != big_byte(b->got + i);
	b->got += sz * n;
	return sz * n;
}

/* A 4 KiB receive buffer: the kernel holds little of the answer for the
 * client, so the server must. */
static int small_rcvbuf(void *u, curl_socket_t fd, curlsocktype purpose)
{
	int sz = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	return CURL_SOCKOPT_OK;
}

/* A whole 16 MiB answer read by a slow client (4 KiB at a time, ~8 MB/s,
 * a 4 KiB socket receive buffer) arrives whole: the answer used to be
 * queued at once and the connection closed past 4 MiB queued, after its
 * 200, so a slow reader got a truncated body. */
static void test_api_whole_body_reaches_slow_reader_intact(void **state)
{
	CURL *c = curl_easy_init();
	char url[256], ca[256];
	struct slow_body b = {0};
	long code = 0;
	CURLcode rc;

	snprintf(url, sizeof url, "https://localhost:%d/test/big", g_port);
	snprintf(ca, sizeof ca, "%s/ca.crt", g_data);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, check_big);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 4096L);
	curl_easy_setopt(c, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)8000000);
	curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, small_rcvbuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	fprintf(stderr, "slow reader: %s, %zu of %u bytes, %zu wrong\n", curl_easy_strerror(rc),
		b.got, BIG_TOTAL, b.wrong);
	assert_int_equal(code, 200);
	assert_int_equal(rc, CURLE_OK);
	assert_int_equal(b.got, BIG_TOTAL);
	assert_int_equal(b.wrong, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_failed_decode_is_quarantined_with_reason),
		cmocka_unit_test(test_api_reenrol_same_client_id_keeps_identity),
		cmocka_unit_test(test_api_reenrol_does_not_reset_upload_budget),
		cmocka_unit_test(test_api_out_of_memory_unpacking_gets_503_retry_after_not_400),
		cmocka_unit_test(test_api_enroll_flood_300_from_one_address_gets_429),
		cmocka_unit_test(test_api_enroll_spread_over_addresses_hits_secret_budget),
	};
	const struct CMUnitTest conns[] = {
		cmocka_unit_test(test_api_fifth_connection_from_one_address_is_closed),
	};
	const struct CMUnitTest full[] = {
		cmocka_unit_test(test_api_full_server_evicts_oldest_idle_for_new_client),
	};
	const struct CMUnitTest flood[] = {
		cmocka_unit_test(test_api_flood_from_many_addresses_spares_client_in_handshake),
	};
	const struct CMUnitTest pressure[] = {
		cmocka_unit_test(test_api_handshake_under_pressure_gets_short_deadline),
	};
	const struct CMUnitTest stream[] = {
		cmocka_unit_test(test_api_stream_pulled_only_while_256kib_held),
		cmocka_unit_test(test_api_whole_body_reaches_slow_reader_intact),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	rc |= cmocka_run_group_tests(conns, setup_conns, teardown);
	rc |= cmocka_run_group_tests(full, setup_conns, teardown);
	rc |= cmocka_run_group_tests(flood, setup_flood, teardown);
	rc |= cmocka_run_group_tests(pressure, setup_pressure, teardown);
	rc |= cmocka_run_group_tests(stream, setup_defaults, teardown);
	return rc;
}
