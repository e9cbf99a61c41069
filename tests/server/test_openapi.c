/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_openapi.c — the real server's answers against server/openapi.json.
 *
 * A real rearview-server (tests/bench/server_common.h; the suite's store
 * switch, so the `pg` run repeats it on PostgreSQL) gets real uploads:
 * devices enrol and send the fleet fixture's synthetic captures of two
 * app versions, with anomalies (fleet_fixture.h, through fleet_client.h's
 * POST), and a skip report.  Then every operation the document lists is
 * called — each one's success answer, and the error answers that can be
 * provoked without breaking the server (a bad parameter, no token, a role
 * too low, nothing there, a conflict) — with the API token, and with a
 * viewer's personal token made through the web UI as a user would (an
 * alert rule added, then evaluated after one more capture is indexed —
 * the regression timer is set to an hour, so it is not the timer).  Each
 * answer (status, content type, body) is written to DIR/answers.jsonl and
 * tests/server/openapi/check.js validates them all against the document
 * with ajv (JSON Schema 2020-12): an undocumented status or content type,
 * a JSON body its schema refuses (a missing, extra or mistyped field), or
 * an operation whose success answer was never seen fails the test.  The
 * statuses themselves are asserted here, so without node the calls still
 * run and only the schema check skips (visibly).
 *
 * Waits are bounded polls on the server's own counts; nothing asserts on
 * timing.
 */
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
#include <jansson.h>

#include "fleet_client.h"
#include "fleet_fixture.h"
#include "openapi_node.h"
#include "rearview/upload.pb-c.h"
#include "server_common.h"

#define APP	 "com.example.openapi"
#define PER_VER	 3 /* uploads of each version, one device each */
#define DEADLINE 120.0

static struct rvsb g_b;
static FILE *g_out; /* DIR/answers.jsonl */
static char g_answers[256];
static char g_trace[40];  /* a decoded trace */
static char g_viewer[80]; /* a viewer's personal token */
static char g_build_id[160];

/* ---- HTTP ------------------------------------------------------------------- */

struct ans {
	long code;
	char ctype[128];
	char *body, *hdrs;
	size_t len, hlen;
};

static size_t grow(char **buf, size_t *len, const char *p, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);
	if (!b)
		return 0;
	memcpy(b + *len, p, n);
	*len += n;
	b[*len] = '\0';
	*buf = b;
	return n;
}

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	struct ans *a = u;
	return grow(&a->body, &a->len, p, sz * n);
}

static size_t on_header(char *p, size_t sz, size_t n, void *u)
{
	struct ans *a = u;
	return grow(&a->hdrs, &a->hlen, p, sz * n);
}

static void ans_free(struct ans *a)
{
	free(a->body);
	free(a->hdrs);
	memset(a, 0, sizeof *a);
}

/* One request: method path (with its query), a bearer token and a cookie
 * when not NULL, a body of type body_ctype when not NULL. */
static void http(const char *method, const char *path, const char *token, const char *cookie,
		 const void *body, size_t len, const char *body_ctype, struct ans *a)
{
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	char line[300];
	char *ct = NULL;

	assert_non_null(c);
	memset(a, 0, sizeof *a);
	rvsb_curl(&g_b, c, path);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (token) {
		snprintf(line, sizeof line, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, line);
	}
	if (cookie) {
		snprintf(line, sizeof line, "Cookie: %s", cookie);
		h = curl_slist_append(h, line);
	}
	if (body_ctype) {
		snprintf(line, sizeof line, "Content-Type: %s", body_ctype);
		h = curl_slist_append(h, line);
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	if (curl_easy_perform(c) != CURLE_OK)
		fail_msg("%s %s: no answer", method, path);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->code);
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	snprintf(a->ctype, sizeof a->ctype, "%s", ct ? ct : "");
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	if (!a->body)
		a->body = calloc(1, 1);
	assert_non_null(a->body);
}

/* The JSON pointers (RFC 6901) of the reals with an integral value in v
 * ("5.0": JavaScript reads it as the integer 5), appended to out: check.js
 * nudges them off the integers, so a real where the document promises an
 * integer fails as it would in a typed client. */
static void integral_reals(json_t *v, char *at, size_t len, size_t cap, json_t *out)
{
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v)) {
		json_array_append_new(out, json_string(at));
		return;
	}
	json_object_foreach(v, key, x)
	{
		size_t n = len;
		if (n + 2 < cap)
			at[n++] = '/';
		for (const char *k = key; *k && n + 3 < cap; k++) {
			if (*k == '~' || *k == '/') {
				at[n++] = '~';
				at[n++] = *k == '~' ? '0' : '1';
			} else {
				at[n++] = *k;
			}
		}
		at[n] = '\0';
		integral_reals(x, at, n, cap, out);
	}
	json_array_foreach(v, i, x)
	{
		int n = snprintf(at + len, cap - len, "/%zu", i);
		assert_true(n > 0 && (size_t)n < cap - len);
		integral_reals(x, at, len + (size_t)n, cap, out);
	}
	at[len] = '\0';
}

/* Calls operation op ("get /api/v1/traces/{id}") as method path, records
 * the answer for check.js, asserts its status is want; returns the body
 * parsed as JSON (NULL when it is not JSON). */
static json_t *call(const char *op, const char *what, const char *method, const char *path,
		    const char *token, const void *body, size_t len, long want)
{
	struct ans a;
	json_t *doc, *rec;
	char *line;

	http(method, path, token, NULL, body, len, body ? "application/json" : NULL, &a);
	doc = json_loadb(a.body, a.len, JSON_DECODE_ANY, NULL);
	rec = json_pack("{s:s,s:s,s:I,s:s,s:O?,s:[]}", "op", op, "what", what, "status",
			(json_int_t)a.code, "ctype", a.ctype, "json", doc, "reals");
	assert_non_null(rec);
	if (doc) {
		char at[4096] = "";
		integral_reals(doc, at, 0, sizeof at, json_object_get(rec, "reals"));
	}
	line = json_dumps(rec, JSON_COMPACT);
	assert_non_null(line);
	fprintf(g_out, "%s\n", line);
	fflush(g_out);
	free(line);
	json_decref(rec);
	if (a.code != want)
		fail_msg("%s %s (%s): %ld, not %ld: %.300s", method, path, what, a.code, want,
			 a.body);
	ans_free(&a);
	return doc;
}

/* call() for an answer whose body is not needed. */
static void expect(const char *op, const char *what, const char *method, const char *path,
		   const char *token, const void *body, size_t len, long want)
{
	json_decref(call(op, what, method, path, token, body, len, want));
}

/* ---- the fleet --------------------------------------------------------------- */

/* Enrols a device of model; its token into tok. */
static void enroll(const char *model, char *tok, size_t cap)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__DeviceInfo d = REARVIEW__DEVICE_INFO__INIT;
	Rearview__EnrollResponse *r;
	struct fc_buf out;
	uint8_t body[512];
	size_t n;

	d.model = (char *)model;
	q.enrollment_secret = g_b.secret;
	q.device = &d;
	n = rearview__enroll_request__pack(&q, body);
	assert_int_equal(fc_post(g_b.port, g_b.ca, "/v1/enroll", NULL, body, n, &out), 200);
	r = rearview__enroll_response__unpack(NULL, out.n, out.b);
	assert_non_null(r);
	snprintf(tok, cap, "%s", r->device_token);
	rearview__enroll_response__free_unpacked(r, NULL);
}

static void upload(const char *tok, const char *model, const char *version, int i)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__DeviceInfo d = REARVIEW__DEVICE_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	struct fc_buf out;
	uint8_t id[16], *cap, *body;
	size_t len, n;

	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
	an.severity = (uint32_t)(10 + 7 * i);
	assert_int_equal(
		rvs_fleet_capture_anomaly(version, an.severity,
					  i % 2 ? RVS_FLEET_AT_BUILD_ITEM : RVS_FLEET_AT_PARSE_JSON,
					  &cap, &len),
		0);
	memset(id, 0x5a, sizeof id);
	id[0] = (uint8_t)i;
	e.upload_id.data = id;
	e.upload_id.len = sizeof id;
	app.app_id = (char *)APP;
	app.version = (char *)version;
	d.model = (char *)model;
	e.app = &app;
	e.device = &d;
	e.anomaly = &an;
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.payload.data = cap;
	e.payload.len = len;
	e.payload_size = len;
	n = rearview__upload_envelope__get_packed_size(&e);
	body = malloc(n);
	assert_non_null(body);
	rearview__upload_envelope__pack(&e, body);
	assert_int_equal(fc_post(g_b.port, g_b.ca, "/v1/uploads", tok, body, n, &out), 200);
	free(body);
	free(cap);
}

static void skip_report(const char *tok)
{
	Rearview__SkipReport s = REARVIEW__SKIP_REPORT__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	struct fc_buf out;
	uint8_t id[16], body[512];
	size_t n;

	memset(id, 0x33, sizeof id);
	app.app_id = (char *)APP;
	app.version = (char *)"4.3";
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
	an.severity = 40;
	s.report_id.data = id;
	s.report_id.len = sizeof id;
	s.app = &app;
	s.anomaly = &an;
	s.reason = (char *)"quota_exhausted";
	s.captured_realtime_ns = 1700000000000000000ull;
	n = rearview__skip_report__pack(&s, body);
	assert_int_equal(fc_post(g_b.port, g_b.ca, "/v1/skips", tok, body, n, &out), 200);
}

static int group_setup(void **state)
{
	static const char *const versions[] = {"4.2", "4.3"};
	static const char *const models[] = {"pixel-7", "fp5", "galaxy-s23"};
	char tok[160] = "";
	double until;
	json_t *doc = NULL;

	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* The regression timer once an hour: the alert rules' evaluation seen
	 * in test_openapi_alert_rules is the one after indexing. */
	if (rvsb_init(&g_b) || rvsb_start(&g_b, "regress_interval_ms = 3600000\n"))
		return -1;
	snprintf(g_answers, sizeof g_answers, "%s/answers.jsonl", g_b.dir);
	if (!(g_out = fopen(g_answers, "w")))
		return -1;
	for (int v = 0; v < 2; v++)
		for (int i = 0; i < PER_VER; i++) {
			enroll(models[i], tok, sizeof tok);
			upload(tok, models[i], versions[v], v * PER_VER + i);
		}
	skip_report(tok);
	/* Until every upload is decoded and listed (bounded). */
	until = rvsb_now() + DEADLINE;
	for (;;) {
		struct ans a;
		http("GET", "/api/v1/traces?limit=500", g_b.api_token, NULL, NULL, 0, NULL, &a);
		doc = json_loadb(a.body, a.len, 0, NULL);
		ans_free(&a);
		if (json_array_size(json_object_get(doc, "traces")) == 2 * PER_VER)
			break;
		json_decref(doc);
		if (rvsb_now() > until) {
			fprintf(stderr, "uploads not decoded within %.0f s\n", DEADLINE);
			return -1;
		}
		usleep(100 * 1000);
	}
	snprintf(g_trace, sizeof g_trace, "%s",
		 json_string_value(json_object_get(
			 json_array_get(json_object_get(doc, "traces"), 0), "trace_id")));
	json_decref(doc);
	return strlen(g_trace) == 34 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	if (g_out)
		fclose(g_out);
	rvsb_stop(&g_b);
	curl_global_cleanup();
	return 0;
}

/* ---- a viewer's personal token, made as a user makes it ------------------------ */

/* The value of cookie `name` set in a's headers, into out. */
static void set_cookie(const struct ans *a, const char *name, char *out, size_t cap)
{
	char needle[64];
	const char *p;
	snprintf(needle, sizeof needle, "Set-Cookie: %s=", name);
	p = a->hdrs ? strcasestr(a->hdrs, needle) : NULL;
	assert_non_null(p);
	p += strlen(needle);
	snprintf(out, cap, "%.*s", (int)strcspn(p, ";\r\n"), p);
}

/* The text after `after` up to the character `end` in a's body, into out. */
static void body_value(const struct ans *a, const char *after, char end, char *out, size_t cap)
{
	const char *p = strstr(a->body, after);
	assert_non_null(p);
	p += strlen(after);
	snprintf(out, cap, "%.*s", (int)(strchr(p, end) - p), p);
}

/* Signs `name` in through the login form and makes a token on /tokens. */
static void personal_token(const char *name, const char *password, char *tok, size_t cap)
{
	char login[80], cookie[160], session[80], csrf[80], form[512];
	CURL *c = curl_easy_init();
	char *pw = curl_easy_escape(c, password, 0);
	struct ans a;

	http("GET", "/login", NULL, NULL, NULL, 0, NULL, &a);
	assert_int_equal(a.code, 200);
	set_cookie(&a, "rv_login", login, sizeof login);
	ans_free(&a);
	snprintf(cookie, sizeof cookie, "rv_login=%s", login);
	snprintf(form, sizeof form, "csrf=%s&user=%s&password=%s", login, name, pw);
	http("POST", "/login", NULL, cookie, form, strlen(form),
	     "application/x-www-form-urlencoded", &a);
	assert_int_equal(a.code, 303);
	set_cookie(&a, "rv_session", session, sizeof session);
	ans_free(&a);
	snprintf(cookie, sizeof cookie, "rv_session=%s", session);
	http("GET", "/tokens", NULL, cookie, NULL, 0, NULL, &a);
	assert_int_equal(a.code, 200);
	body_value(&a, "name=\"csrf\" value=\"", '"', csrf, sizeof csrf);
	ans_free(&a);
	snprintf(form, sizeof form, "name=laptop&csrf=%s", csrf);
	http("POST", "/tokens", NULL, cookie, form, strlen(form),
	     "application/x-www-form-urlencoded", &a);
	assert_int_equal(a.code, 200);
	body_value(&a, "<code id=\"new-token\">", '<', tok, cap);
	ans_free(&a);
	curl_free(pw);
	curl_easy_cleanup(c);
}

/* ---- the operations ----------------------------------------------------------- */

static void test_openapi_document_served_without_a_token(void **state)
{
	json_t *doc = call("get /api/v1/openapi.json", "no token", "GET", "/api/v1/openapi.json",
			   NULL, NULL, 0, 200);
	json_t *file = json_load_file(RVS_OPENAPI_DOC, 0, NULL);
	(void)state;
	assert_non_null(file);
	assert_true(json_equal(doc, file));
	json_decref(file);
	json_decref(doc);
}

static void test_openapi_symbols(void **state)
{
	const char *tok = g_b.api_token;
	char path[300];
	uint8_t *exe = NULL;
	size_t len = 0, n;
	FILE *f = fopen("/proc/self/exe", "rb");
	uint8_t buf[65536];
	json_t *doc;

	(void)state;
	assert_non_null(f);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		exe = realloc(exe, len + n);
		assert_non_null(exe);
		memcpy(exe + len, buf, n);
		len += n;
	}
	fclose(f);
	/* This test's own executable: an ELF file with a build-id and a .symtab. */
	doc = call("post /api/v1/symbols", "this executable", "POST", "/api/v1/symbols", tok, exe,
		   len, 201);
	free(exe);
	snprintf(g_build_id, sizeof g_build_id, "%s",
		 json_string_value(json_object_get(doc, "build_id")));
	json_decref(doc);
	expect("post /api/v1/symbols", "not ELF", "POST", "/api/v1/symbols", tok, "nope", 4, 400);
	expect("get /api/v1/symbols", "one file", "GET", "/api/v1/symbols", tok, NULL, 0, 200);
	snprintf(path, sizeof path, "/api/v1/symbols/%s", g_build_id);
	expect("get /api/v1/symbols/{build_id}", "stored", "GET", path, tok, NULL, 0, 200);
	snprintf(path, sizeof path, "/api/v1/symbols/%s?offset=0x10", g_build_id);
	expect("get /api/v1/symbols/{build_id}", "an offset", "GET", path, tok, NULL, 0, 200);
	expect("get /api/v1/symbols/{build_id}", "not stored", "GET", "/api/v1/symbols/abcd", tok,
	       NULL, 0, 404);
	expect("get /api/v1/symbols/{build_id}", "not hex", "GET", "/api/v1/symbols/XY", tok, NULL,
	       0, 400);
	snprintf(path, sizeof path, "/api/v1/symbols/%s", g_build_id);
	expect("post /api/v1/symbols/{build_id}", "refused", "POST", path, tok, NULL, 0, 405);
}

static void test_openapi_campaigns(void **state)
{
	const char *tok = g_b.api_token;
	static const char spec[] =
		"{\"id\":\"oa-1\",\"app_patterns\":[\"" APP "\"],\"kinds\":[\"jank\"],"
		"\"sample_probability\":0.5,\"upload_mode\":\"UPLOAD_FULL\",\"quota\":2}";
	static const char typo[] = "{\"id\":\"oa-2\",\"app_patterns\":[\"x\"],\"qouta\":1,"
				   "\"sample_probability\":1}";
	static const char wide[] = "{\"id\":\"oa-3\",\"all_apps\":true,\"sample_probability\":1}";

	(void)state;
	expect("get /api/v1/campaigns", "none", "GET", "/api/v1/campaigns", tok, NULL, 0, 200);
	expect("post /api/v1/campaigns/preview", "a campaign", "POST", "/api/v1/campaigns/preview",
	       tok, spec, strlen(spec), 200);
	expect("post /api/v1/campaigns", "a campaign", "POST", "/api/v1/campaigns", tok, spec,
	       strlen(spec), 200);
	expect("post /api/v1/campaigns", "the same id", "POST", "/api/v1/campaigns", tok, spec,
	       strlen(spec), 409);
	expect("post /api/v1/campaigns", "a misspelt field", "POST", "/api/v1/campaigns", tok, typo,
	       strlen(typo), 400);
	expect("post /api/v1/campaigns/preview", "fleet-wide", "POST", "/api/v1/campaigns/preview",
	       tok, wide, strlen(wide), 200);
	expect("post /api/v1/campaigns", "fleet-wide, unconfirmed", "POST", "/api/v1/campaigns",
	       tok, wide, strlen(wide), 409);
	expect("post /api/v1/campaigns/preview", "not JSON", "POST", "/api/v1/campaigns/preview",
	       tok, "{", 1, 400);
	expect("get /api/v1/campaigns", "one active", "GET", "/api/v1/campaigns", tok, NULL, 0,
	       200);
	expect("post /api/v1/campaigns/{id}/end", "active", "POST", "/api/v1/campaigns/oa-1/end",
	       tok, NULL, 0, 200);
	expect("post /api/v1/campaigns/{id}/end", "ended", "POST", "/api/v1/campaigns/oa-1/end",
	       tok, NULL, 0, 404);
	expect("get /api/v1/campaigns", "one ended", "GET", "/api/v1/campaigns", tok, NULL, 0, 200);
}

static void test_openapi_traces_and_exports(void **state)
{
	static const char *const formats[] = {"folded",	 "chrome", "speedscope", "perfetto",
					      "android", "svg",	   "nanoscope",	 "pprof"};
	const char *tok = g_b.api_token;
	char path[300];
	json_t *doc;
	const char *sig, *issue;

	(void)state;
	expect("get /api/v1/fleet", "six devices", "GET", "/api/v1/fleet", tok, NULL, 0, 200);
	expect("get /api/v1/fleet/jank", "the last 30 days", "GET",
	       "/api/v1/fleet/jank?days=30&limit=10", tok, NULL, 0, 200);
	expect("get /api/v1/fleet/jank", "days out of range", "GET", "/api/v1/fleet/jank?days=367",
	       tok, NULL, 0, 400);
	doc = call("get /api/v1/traces", "all", "GET", "/api/v1/traces?limit=2", tok, NULL, 0, 200);
	expect("get /api/v1/traces", "next page", "GET", "/api/v1/traces?limit=500&cursor=1", tok,
	       NULL, 0, 200);
	json_decref(doc);
	expect("get /api/v1/traces", "by severity", "GET", "/api/v1/traces?sort=severity&limit=2",
	       tok, NULL, 0, 200);
	doc = call("get /api/v1/traces", "by self time", "GET",
		   "/api/v1/traces?sort=self&method=" RVS_FLEET_PLANTED, tok, NULL, 0, 200);
	issue = json_string_value(
		json_object_get(json_array_get(json_object_get(doc, "traces"), 0), "issue"));
	assert_non_null(issue);
	snprintf(path, sizeof path, "/api/v1/traces?issue=%s&kind=jank&app=" APP, issue);
	json_decref(doc);
	expect("get /api/v1/traces", "one issue", "GET", path, tok, NULL, 0, 200);
	expect("get /api/v1/traces", "unknown parameter", "GET", "/api/v1/traces?colour=red", tok,
	       NULL, 0, 400);
	expect("get /api/v1/traces", "no token", "GET", "/api/v1/traces", NULL, NULL, 0, 401);
	expect("get /api/v1/traces", "wrong token", "GET", "/api/v1/traces", "not-a-token", NULL, 0,
	       401);
	snprintf(path, sizeof path, "/api/v1/traces/%s", g_trace);
	expect("get /api/v1/traces/{id}", "with why", "GET", path, tok, NULL, 0, 200);
	snprintf(path, sizeof path, "/api/v1/traces/%s?why=0", g_trace);
	expect("get /api/v1/traces/{id}", "without why", "GET", path, tok, NULL, 0, 200);
	expect("get /api/v1/traces/{id}", "no such trace", "GET",
	       "/api/v1/traces/t-00000000000000000000000000000000", tok, NULL, 0, 404);
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		snprintf(path, sizeof path, "/api/v1/traces/%s/export?format=%s", g_trace,
			 formats[i]);
		expect("get /api/v1/traces/{id}/export", formats[i], "GET", path, tok, NULL, 0,
		       200);
	}
	snprintf(path, sizeof path, "/api/v1/traces/%s/export?format=gif", g_trace);
	expect("get /api/v1/traces/{id}/export", "unknown format", "GET", path, tok, NULL, 0, 400);
	doc = call("get /api/v1/signatures", "all", "GET", "/api/v1/signatures", tok, NULL, 0, 200);
	sig = json_string_value(json_object_get(
		json_array_get(json_object_get(doc, "signatures"), 0), "signature"));
	assert_non_null(sig);
	snprintf(path, sizeof path, "/api/v1/signatures/weekly?since=0&signatures=%s", sig);
	json_decref(doc);
	expect("get /api/v1/signatures", "a page of one", "GET",
	       "/api/v1/signatures?limit=1&offset=0", tok, NULL, 0, 200);
	expect("get /api/v1/signatures/weekly", "all", "GET", "/api/v1/signatures/weekly", tok,
	       NULL, 0, 200);
	expect("get /api/v1/signatures/weekly", "one", "GET", path, tok, NULL, 0, 200);
	expect("get /api/v1/signatures/weekly", "bad since", "GET",
	       "/api/v1/signatures/weekly?since=x", tok, NULL, 0, 400);
	expect("get /api/v1/skips", "one report", "GET", "/api/v1/skips?app=" APP, tok, NULL, 0,
	       200);
	expect("get /api/v1/trend", "by day", "GET", "/api/v1/trend?method=" RVS_FLEET_PLANTED, tok,
	       NULL, 0, 200);
	expect("get /api/v1/trend", "by version, one app", "GET",
	       "/api/v1/trend?method=" RVS_FLEET_PLANTED "&app=" APP "&by=version", tok, NULL, 0,
	       200);
	expect("get /api/v1/trend", "no method", "GET", "/api/v1/trend?by=day", tok, NULL, 0, 400);
	expect("get /api/v1/trend", "bad axis", "GET",
	       "/api/v1/trend?method=" RVS_FLEET_PLANTED "&by=week", tok, NULL, 0, 400);
	expect("get /api/v1/trend", "no token", "GET", "/api/v1/trend?method=x", NULL, NULL, 0,
	       401);
	expect("get /api/v1/versions", "all apps", "GET", "/api/v1/versions", tok, NULL, 0, 200);
	expect("get /api/v1/versions", "one app", "GET", "/api/v1/versions?app=" APP, tok, NULL, 0,
	       200);
	expect("get /api/v1/versions", "no token", "GET", "/api/v1/versions", NULL, NULL, 0, 401);
	expect("get /api/v1/methods/{name}", "fleet-wide", "GET",
	       "/api/v1/methods/" RVS_FLEET_PLANTED, tok, NULL, 0, 200);
	expect("get /api/v1/methods/{name}", "one version", "GET",
	       "/api/v1/methods/" RVS_FLEET_PLANTED "?app=" APP "&version=4.3&limit=2", tok, NULL,
	       0, 200);
	expect("get /api/v1/methods/{name}", "never called", "GET", "/api/v1/methods/nobody", tok,
	       NULL, 0, 200);
}

static void test_openapi_fleet_views(void **state)
{
	const char *tok = g_b.api_token;
	char path[256];
	json_t *doc;

	(void)state;
	expect("get /api/v1/aggregate", "all", "GET", "/api/v1/aggregate", tok, NULL, 0, 200);
	expect("get /api/v1/aggregate", "one version, by traces", "GET",
	       "/api/v1/aggregate?app=" APP "&version=4.3&since=1", tok, NULL, 0, 200);
	expect("get /api/v1/aggregate", "bad kind", "GET", "/api/v1/aggregate?kind=sneeze", tok,
	       NULL, 0, 400);
	expect("get /api/v1/aggregate/diff", "4.2 against 4.3", "GET",
	       "/api/v1/aggregate/diff?app=" APP "&a.version=4.2&b.version=4.3", tok, NULL, 0, 200);
	expect("get /api/v1/aggregate/pprof", "all", "GET", "/api/v1/aggregate/pprof", tok, NULL, 0,
	       200);
	expect("get /api/v1/aggregate/diff/pprof", "the difference", "GET",
	       "/api/v1/aggregate/diff/pprof?a.version=4.2&b.version=4.3&side=diff", tok, NULL, 0,
	       200);
	expect("get /api/v1/aggregate/diff/pprof", "bad side", "GET",
	       "/api/v1/aggregate/diff/pprof?side=c", tok, NULL, 0, 400);
	expect("get /api/v1/aggregate/callers", "measure_text", "GET",
	       "/api/v1/aggregate/callers?of=rvs_fleet_measure_text", tok, NULL, 0, 200);
	expect("get /api/v1/aggregate/callers", "without of", "GET", "/api/v1/aggregate/callers",
	       tok, NULL, 0, 400);
	expect("get /api/v1/aggregate", "a heatmap cell", "GET",
	       "/api/v1/aggregate?app=" APP "&since=1&dur_min=0&dur_max=1000000000000"
	       "&except_since=1&except_until=2",
	       tok, NULL, 0, 200);
	expect("get /api/v1/heatmap", "the last 30 days", "GET", "/api/v1/heatmap?app=" APP, tok,
	       NULL, 0, 200);
	expect("get /api/v1/heatmap", "by week", "GET",
	       "/api/v1/heatmap?from=0&to=86400000&bucket=week&kind=jank", tok, NULL, 0, 200);
	expect("get /api/v1/heatmap", "too many columns", "GET",
	       "/api/v1/heatmap?from=0&to=86400000&bucket=hour", tok, NULL, 0, 400);
	expect("get /api/v1/heatmap", "no token", "GET", "/api/v1/heatmap", NULL, NULL, 0, 401);
	doc = call("get /api/v1/aggregate", "the app's nodes", "GET", "/api/v1/aggregate?app=" APP,
		   tok, NULL, 0, 200);
	{
		json_t *nd = json_array_get(json_object_get(doc, "nodes"), 1);
		assert_true(json_integer_value(json_object_get(nd, "parent")) > 0);
		snprintf(path, sizeof path,
			 "/api/v1/aggregate/heaviest?app=" APP "&node=%lld&by=self",
			 (long long)json_integer_value(json_object_get(nd, "node")));
	}
	json_decref(doc);
	expect("get /api/v1/aggregate/heaviest", "a frame", "GET", path, tok, NULL, 0, 200);
	expect("get /api/v1/aggregate/heaviest", "without node", "GET",
	       "/api/v1/aggregate/heaviest?app=" APP, tok, NULL, 0, 400);
	expect("get /api/v1/issues", "all", "GET", "/api/v1/issues", tok, NULL, 0, 200);
	expect("get /api/v1/issues", "filtered", "GET",
	       "/api/v1/issues?app=" APP "&version=4.3&kind=jank&weeks=2&limit=1", tok, NULL, 0,
	       200);
	expect("get /api/v1/search", "a chain", "GET",
	       "/api/v1/search?chain=%2A%20%3E%20rvs_fleet_measure_text", tok, NULL, 0, 200);
	expect("get /api/v1/search", "a method", "GET",
	       "/api/v1/search?chain=" RVS_FLEET_PLANTED "&app=" APP "&limit=2", tok, NULL, 0, 200);
	expect("get /api/v1/search", "caller and callee", "GET",
	       "/api/v1/search?caller=rvs_fleet_build_item&callee=rvs_fleet_measure_text", tok,
	       NULL, 0, 200);
	expect("get /api/v1/search", "contains", "GET", "/api/v1/search?contains=measure", tok,
	       NULL, 0, 200);
	expect("get /api/v1/search", "a star alone", "GET", "/api/v1/search?chain=%2A", tok, NULL,
	       0, 400);
	expect("get /api/v1/regressions", "4.2 against 4.3", "GET",
	       "/api/v1/regressions?app=" APP "&a=4.2&b=4.3", tok, NULL, 0, 200);
	expect("get /api/v1/regressions", "by model", "GET",
	       "/api/v1/regressions?app=" APP "&model=fp5&limit=3", tok, NULL, 0, 200);
	expect("get /api/v1/regressions", "a side without traces", "GET",
	       "/api/v1/regressions?app=" APP "&a=4.2&b=9.9", tok, NULL, 0, 404);
	expect("get /api/v1/regressions", "no sides", "GET", "/api/v1/regressions?app=" APP, tok,
	       NULL, 0, 400);
	expect("get /api/v1/regressions/runs", "none or some", "GET", "/api/v1/regressions/runs",
	       tok, NULL, 0, 200);
	expect("get /api/v1/alerts", "none", "GET", "/api/v1/alerts", tok, NULL, 0, 200);
}

static void test_openapi_users_audit_and_tokens(void **state)
{
	const char *tok = g_b.api_token;
	char path[200], id[40];
	json_t *doc;

	(void)state;
	doc = call("post /api/v1/users", "a viewer", "POST", "/api/v1/users?name=olga&role=viewer",
		   tok, NULL, 0, 201);
	personal_token("olga", json_string_value(json_object_get(doc, "password")), g_viewer,
		       sizeof g_viewer);
	json_decref(doc);
	expect("post /api/v1/users", "again", "POST", "/api/v1/users?name=olga&role=viewer", tok,
	       NULL, 0, 409);
	expect("post /api/v1/users", "bad role", "POST", "/api/v1/users?name=pavel&role=king", tok,
	       NULL, 0, 400);
	expect("post /api/v1/users", "as a viewer", "POST", "/api/v1/users?name=pavel&role=viewer",
	       g_viewer, NULL, 0, 403);
	expect("post /api/v1/users", "an author", "POST", "/api/v1/users?name=pavel&role=author",
	       tok, NULL, 0, 201);
	expect("post /api/v1/users/{name}", "disabled", "POST",
	       "/api/v1/users/pavel?role=viewer&disabled=1", tok, NULL, 0, 200);
	expect("post /api/v1/users/{name}", "no such account", "POST",
	       "/api/v1/users/nobody?role=viewer", tok, NULL, 0, 404);
	expect("get /api/v1/users", "three", "GET", "/api/v1/users", tok, NULL, 0, 200);
	expect("get /api/v1/users", "as a viewer", "GET", "/api/v1/users", g_viewer, NULL, 0, 403);
	expect("get /api/v1/audit", "everything", "GET", "/api/v1/audit", tok, NULL, 0, 200);
	expect("get /api/v1/audit", "a page", "GET",
	       "/api/v1/audit?limit=1&action=user.create&since=0", tok, NULL, 0, 200);
	expect("get /api/v1/tokens", "api.token has none", "GET", "/api/v1/tokens", tok, NULL, 0,
	       400);
	expect("get /api/v1/tokens", "a viewer's", "GET", "/api/v1/tokens", g_viewer, NULL, 0, 200);
	doc = call("post /api/v1/tokens", "a second", "POST", "/api/v1/tokens?name=ci", g_viewer,
		   NULL, 0, 201);
	snprintf(id, sizeof id, "%s", json_string_value(json_object_get(doc, "id")));
	json_decref(doc);
	expect("post /api/v1/tokens", "no name", "POST", "/api/v1/tokens", g_viewer, NULL, 0, 400);
	snprintf(path, sizeof path, "/api/v1/tokens/%s/revoke", id);
	expect("post /api/v1/tokens/{id}/revoke", "live", "POST", path, g_viewer, NULL, 0, 200);
	expect("post /api/v1/tokens/{id}/revoke", "revoked", "POST", path, g_viewer, NULL, 0, 404);
	expect("get /api/v1/tokens", "one revoked", "GET", "/api/v1/tokens", g_viewer, NULL, 0,
	       200);
	expect("post /api/v1/campaigns", "as a viewer", "POST", "/api/v1/campaigns", g_viewer, "{}",
	       2, 403);
	expect("get /api/v1/traces", "as a viewer", "GET", "/api/v1/traces", g_viewer, NULL, 0,
	       200);
}

/* Alert rules: an admin adds and deletes (each audited), a viewer reads. */
static void test_openapi_alert_rules(void **state)
{
	static const char RULE[] = "{\"name\":\"planted slow\",\"metric\":\"self_p95\","
				   "\"method\":\"" RVS_FLEET_PLANTED "\",\"app\":\"" APP "\","
				   "\"condition\":\"above\",\"threshold\":5,\"days\":2}";
	static const char RATE[] = "{\"name\":\"capture rate\",\"metric\":\"captures\","
				   "\"app\":\"" APP "\",\"condition\":\"up\",\"threshold\":50}";
	const char *tok = g_b.api_token;
	char path[96];
	json_t *doc, *rules;
	json_int_t id;

	(void)state;
	expect("get /api/v1/alert-rules", "none", "GET", "/api/v1/alert-rules", tok, NULL, 0, 200);
	doc = call("post /api/v1/alert-rules", "p95 above", "POST", "/api/v1/alert-rules", tok,
		   RULE, strlen(RULE), 200);
	id = json_integer_value(json_object_get(doc, "id"));
	assert_true(id > 0);
	json_decref(doc);
	expect("post /api/v1/alert-rules", "week over week", "POST", "/api/v1/alert-rules", tok,
	       RATE, strlen(RATE), 200);
	/* One more capture indexed: the rules are evaluated after it. */
	{
		char dtok[160];
		double until = rvsb_now() + DEADLINE;
		enroll("pixel-7", dtok, sizeof dtok);
		upload(dtok, "pixel-7", "4.3", 2 * PER_VER);
		for (;;) {
			struct ans a;
			json_t *r;
			http("GET", "/api/v1/alert-rules", tok, NULL, NULL, 0, NULL, &a);
			doc = json_loadb(a.body, a.len, 0, NULL);
			ans_free(&a);
			r = json_array_get(json_object_get(doc, "rules"), 0);
			if (json_is_integer(json_object_get(r, "evaluated_at")))
				break;
			json_decref(doc);
			if (rvsb_now() > until)
				fail_msg("the rules were not evaluated after indexing");
			usleep(100 * 1000);
		}
		json_decref(doc);
	}
	expect("post /api/v1/alert-rules", "no method", "POST", "/api/v1/alert-rules", tok,
	       "{\"name\":\"x\",\"metric\":\"self_p95\",\"condition\":\"above\","
	       "\"threshold\":1}",
	       strlen("{\"name\":\"x\",\"metric\":\"self_p95\",\"condition\":\"above\","
		      "\"threshold\":1}"),
	       400);
	expect("post /api/v1/alert-rules", "not JSON", "POST", "/api/v1/alert-rules", tok, "{", 1,
	       400);
	expect("post /api/v1/alert-rules", "as a viewer", "POST", "/api/v1/alert-rules", g_viewer,
	       RULE, strlen(RULE), 403);
	expect("post /api/v1/alert-rules", "no token", "POST", "/api/v1/alert-rules", NULL, RULE,
	       strlen(RULE), 401);
	doc = call("get /api/v1/alert-rules", "two, as a viewer", "GET", "/api/v1/alert-rules",
		   g_viewer, NULL, 0, 200);
	rules = json_object_get(doc, "rules");
	assert_int_equal(json_array_size(rules), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(rules, 0), "id")), id);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rules, 0), "state")),
			    "ok");
	json_decref(doc);
	snprintf(path, sizeof path, "/api/v1/alert-rules/%lld/delete", (long long)id);
	expect("post /api/v1/alert-rules/{id}/delete", "as a viewer", "POST", path, g_viewer, NULL,
	       0, 403);
	expect("post /api/v1/alert-rules/{id}/delete", "the first", "POST", path, tok, NULL, 0,
	       200);
	expect("post /api/v1/alert-rules/{id}/delete", "gone", "POST", path, tok, NULL, 0, 404);
	expect("post /api/v1/alert-rules/{id}/delete", "not an id", "POST",
	       "/api/v1/alert-rules/x/delete", tok, NULL, 0, 404);
	/* Both changes are in the audit log. */
	doc = call("get /api/v1/audit", "alert rules added", "GET",
		   "/api/v1/audit?action=alert_rule.create", tok, NULL, 0, 200);
	assert_int_equal(json_array_size(json_object_get(doc, "audit")), 2);
	json_decref(doc);
	doc = call("get /api/v1/audit", "an alert rule deleted", "GET",
		   "/api/v1/audit?action=alert_rule.delete", tok, NULL, 0, 200);
	assert_int_equal(json_array_size(json_object_get(doc, "audit")), 1);
	json_decref(doc);
}

/* Last: every answer above against the document. */
static void test_openapi_answers_match_the_document(void **state)
{
	const char *why = openapi_node_missing();
	(void)state;
	fflush(g_out);
	if (why) {
		printf("# skip: %s\n", why);
		skip();
	}
	assert_int_equal(openapi_node("check.js", RVS_OPENAPI_DOC, g_answers), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openapi_document_served_without_a_token),
		cmocka_unit_test(test_openapi_symbols),
		cmocka_unit_test(test_openapi_campaigns),
		cmocka_unit_test(test_openapi_traces_and_exports),
		cmocka_unit_test(test_openapi_fleet_views),
		cmocka_unit_test(test_openapi_users_audit_and_tokens),
		cmocka_unit_test(test_openapi_alert_rules),
		cmocka_unit_test(test_openapi_answers_match_the_document),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
