/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_weights.c — the fleet's weighted (Horvitz–Thompson) aggregate
 * against the true population it was sampled from.
 *
 * A synthetic population of anomalies with exact durations (a 1 GHz
 * capture counter, tests/rvtrace/capbuild.h): one app on two models, the
 * slow model's anomalies many and long, the fast one's few and short.  Two
 * targeted campaigns sample them as rearviewd would: "tenth" takes a slow
 * model's anomaly with probability 0.1 (a seeded generator, so the run is
 * the same every time), "all" takes every fast one.  The sample is
 * uploaded through the device API, each envelope carrying its Selection,
 * to the real rearview-server binary (tests/bench/server_common.h; the
 * store is the suite's switch, so the `pg` run repeats it on PostgreSQL).
 *
 * Checked: the server's weighted mean per anomaly lies within the
 * interval it states (3 standard errors) of the population's true mean,
 * and so does its estimated population count; the unweighted mean does
 * not (the sample over-represents the fast model: the test would miss a
 * weighting that does nothing); the weighted figures equal this test's
 * own recount from the weights it sent; the side says the weights are
 * exact.  Then one upload without a Selection (an older device) makes
 * the side say a weight is unknown, and one with a first-N selection whose
 * quota refused candidates makes it say a weight is an estimate.
 */
#include <errno.h>
#include <math.h>
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

#include "capbuild.h"
#include "rearview/upload.pb-c.h"
#include "server_common.h"

#define APP	  "com.weights.app"
#define N_SLOW	  600 /* anomalies of the slow model, sampled at 10 % */
#define N_FAST	  150 /* of the fast model, every one taken */
#define P_SLOW	  0.1
#define PER_DEV	  3 /* uploads per enrolment (the default weekly quota) */
#define METHOD_NS 0x1000

static struct rvsb g_b;
static CURL *g_curl;
static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static char g_tok[160];
static int g_used = PER_DEV, g_uploaded;

/* The population: each anomaly's duration (ns), model, and whether the
 * campaigns' sampling took it. */
struct anomaly {
	int64_t ns;
	int slow, taken;
};
static struct anomaly g_pop[N_SLOW + N_FAST];

static uint64_t next(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

/* Uniform in [0, 1). */
static double unit(void)
{
	return (double)(next() >> 11) * 0x1.0p-53;
}

struct body {
	char *p;
	size_t n;
};

static size_t grow(char *p, size_t sz, size_t n, void *u)
{
	struct body *b = u;
	char *q = realloc(b->p, b->n + sz * n + 1);
	if (!q)
		return 0;
	memcpy(q + b->n, p, sz * n);
	b->n += sz * n;
	q[b->n] = '\0';
	b->p = q;
	return sz * n;
}

static long request(const char *method, const char *path, const char *token, const void *body,
		    size_t len, struct body *out)
{
	struct curl_slist *hd = NULL;
	char auth[256];
	long code = 0;

	memset(out, 0, sizeof *out);
	curl_easy_reset(g_curl);
	rvsb_curl(&g_b, g_curl, path);
	curl_easy_setopt(g_curl, CURLOPT_CUSTOMREQUEST, method);
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		hd = curl_slist_append(hd, auth);
	}
	hd = curl_slist_append(hd, "Expect:");
	curl_easy_setopt(g_curl, CURLOPT_HTTPHEADER, hd);
	if (body) {
		curl_easy_setopt(g_curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(g_curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	curl_easy_setopt(g_curl, CURLOPT_WRITEFUNCTION, grow);
	curl_easy_setopt(g_curl, CURLOPT_WRITEDATA, out);
	if (curl_easy_perform(g_curl) == CURLE_OK)
		curl_easy_getinfo(g_curl, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hd);
	return code;
}

static json_t *api(const char *path)
{
	struct body b;
	json_t *doc;
	long code = request("GET", path, g_b.api_token, NULL, 0, &b);

	if (code != 200)
		fprintf(stderr, "GET %s: %ld %s\n", path, code, b.p ? b.p : "");
	assert_int_equal(code, 200);
	doc = json_loads(b.p, 0, NULL);
	free(b.p);
	assert_non_null(doc);
	return doc;
}

/* A new device (the server holds each to the weekly quota).  0 or -1. */
static int enroll(const char *model)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__DeviceInfo di = REARVIEW__DEVICE_INFO__INIT;
	Rearview__EnrollResponse *er;
	uint8_t small[512];
	struct body b;
	long code;

	di.model = (char *)model;
	q.enrollment_secret = g_b.secret;
	q.device = &di;
	code = request("POST", "/v1/enroll", NULL, small, rearview__enroll_request__pack(&q, small),
		       &b);
	er = code == 200 ? rearview__enroll_response__unpack(NULL, b.n, (const uint8_t *)b.p)
			 : NULL;
	free(b.p);
	if (!er)
		return -1;
	snprintf(g_tok, sizeof g_tok, "%s", er->device_token);
	rearview__enroll_response__free_unpacked(er, NULL);
	g_used = 0;
	return 0;
}

/* A capture of one call lasting ns, with its ANOMALY record inside it. */
static void capture(int64_t ns, capbuf *cb)
{
	const uint64_t mono_end = 1000000000000ull;
	uint64_t t0 = 1ull << 20, t = t0 + (uint64_t)ns;
	uint8_t r[16 + 7] = {0};

	memset(cb, 0, sizeof *cb);
	cb_header(cb, 0, 1000000000, 0, mono_end, 0x400000, 0);
	cb_entry(cb, METHOD_NS, (uint32_t)t0);
	cb_exit(cb, (uint32_t)t);
	cb_end_slots(cb);
	cb_u64at(cb, 16, t);
	cb_u64at(cb, 24, 1700000000ull * 1000000000ull);
	cb_symbol(cb, METHOD_NS, METHOD_NS, 0, "on_frame");
	r[0] = 1;
	for (int k = 0; k < 8; k++)
		r[8 + k] = (uint8_t)((mono_end - (uint64_t)ns / 2) >> (8 * k));
	memcpy(r + 16, "weights", 7);
	cb_record(cb, 6, r, sizeof r);
	cb_finish(cb);
}

/* Uploads an anomaly of ns on model with selection sel (NULL: none, as an
 * older device sends).  0 or -1. */
static int upload(int64_t ns, const char *model, Rearview__Selection *sel)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__DeviceInfo d = REARVIEW__DEVICE_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	uint8_t id[16] = {0x3e}, *body;
	struct body b = {0};
	long code = 0;
	capbuf cb;
	size_t n;

	if (g_used == PER_DEV && enroll(model))
		return -1;
	g_used++;
	capture(ns, &cb);
	for (int k = 0; k < 4; k++)
		id[12 + k] = (uint8_t)(g_uploaded >> (8 * k));
	e.upload_id.data = id;
	e.upload_id.len = sizeof id;
	app.app_id = (char *)APP;
	app.version = (char *)"1.0";
	d.model = (char *)model;
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
	an.severity = 50;
	e.app = &app;
	e.device = &d;
	e.anomaly = &an;
	e.selection = sel;
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.payload.data = cb.b;
	e.payload.len = cb.len;
	e.payload_size = cb.len;
	n = rearview__upload_envelope__get_packed_size(&e);
	if ((body = malloc(n))) {
		rearview__upload_envelope__pack(&e, body);
		code = request("POST", "/v1/uploads", g_tok, body, n, &b);
		if (code != 200)
			fprintf(stderr, "weights: upload: %ld %s\n", code, b.p ? b.p : "");
		free(b.p);
	}
	free(body);
	free(cb.b);
	g_uploaded++;
	return code == 200 ? 0 : -1;
}

/* Until the aggregate counts `want` traces (bounded). */
static void wait_decoded(int want)
{
	double until = rvsb_now() + 180;
	json_int_t got = -1;

	do {
		json_t *doc = api("/api/v1/aggregate?app=" APP);
		got = json_integer_value(json_object_get(doc, "traces"));
		json_decref(doc);
		if (got == want)
			break;
		usleep(100000);
	} while (rvsb_now() < until);
	assert_int_equal(got, want);
}

static int group_setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	g_curl = curl_easy_init();
	if (!g_curl || rvsb_init(&g_b) || rvsb_start(&g_b, "decode_jobs = 2\n"))
		return -1;
	/* The population: slow anomalies 8..16 ms, fast ones 1..3 ms, in
	 * whole microseconds. */
	for (int i = 0; i < N_SLOW + N_FAST; i++) {
		struct anomaly *a = &g_pop[i];
		a->slow = i < N_SLOW;
		a->ns = (a->slow ? 8000 + (int64_t)(next() % 8001)
				 : 1000 + (int64_t)(next() % 2001)) *
			1000;
		a->taken = a->slow ? unit() < P_SLOW : 1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	int rc;
	(void)state;
	rc = rvsb_stop(&g_b);
	curl_easy_cleanup(g_curl);
	curl_global_cleanup();
	return rc ? -1 : 0;
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_number(v))
		fail_msg("missing number %s", k);
	return json_number_value(v);
}

/* The node of the app's root call (on_frame) in an aggregate document. */
static json_t *frame_node(json_t *doc)
{
	json_t *nodes = json_object_get(doc, "nodes"), *nd;
	size_t i;

	json_array_foreach(nodes, i, nd)
	{
		if (!strcmp(json_string_value(json_object_get(nd, "method")), "on_frame"))
			return nd;
	}
	fail_msg("no on_frame node");
	return NULL;
}

static void test_weights_weighted_mean_matches_population(void **state)
{
	Rearview__Selection tenth = REARVIEW__SELECTION__INIT, all = REARVIEW__SELECTION__INIT;
	double true_sum = 0, w_sum = 0, wx_sum = 0, plain_sum = 0;
	int n = 0;
	json_t *doc, *nd, *side;

	(void)state;
	tenth.campaign_id = (char *)"tenth";
	tenth.kind = REARVIEW__SELECTION_KIND__SELECTION_SAMPLED;
	tenth.probability = P_SLOW;
	tenth.candidates_seen = tenth.candidates_taken = 1;
	all.campaign_id = (char *)"all";
	all.kind = REARVIEW__SELECTION_KIND__SELECTION_SAMPLED;
	all.probability = 1.0;
	all.candidates_seen = all.candidates_taken = 1;
	for (int i = 0; i < N_SLOW + N_FAST; i++) {
		const struct anomaly *a = &g_pop[i];
		double w = a->slow ? 1 / P_SLOW : 1;
		true_sum += (double)a->ns;
		if (!a->taken)
			continue;
		/* One model per enrolment: each switch starts a new device. */
		if (i == N_SLOW)
			g_used = PER_DEV;
		assert_int_equal(upload(a->ns, a->slow ? "slow-model" : "fast-model",
					a->slow ? &tenth : &all),
				 0);
		n++;
		w_sum += w;
		wx_sum += w * (double)a->ns;
		plain_sum += (double)a->ns;
	}
	wait_decoded(n);
	doc = api("/api/v1/aggregate?app=" APP "&weighted=1");
	nd = frame_node(doc);
	{
		double truth = true_sum / (N_SLOW + N_FAST);
		double est = num(nd, "w_incl_ns_per_trace"), se = num(nd, "w_incl_se_ns");
		double plain = num(nd, "incl_ns_per_trace");
		double count = num(nd, "w_traces"), count_se = num(nd, "w_traces_se");

		fprintf(stderr,
			"weights: %d of %d anomalies uploaded; true mean %.0f ns, weighted %.0f ± "
			"%.0f (1 se), unweighted %.0f; population %d, estimated %.1f ± %.1f\n",
			n, N_SLOW + N_FAST, truth, est, se, plain, N_SLOW + N_FAST, count,
			count_se);
		/* The server's figures are this test's recount from what it sent. */
		assert_true(fabs(est - wx_sum / w_sum) < 1.0);
		assert_true(fabs(count - w_sum) < 1e-6);
		assert_true(fabs(plain - plain_sum / n) <= 1.0);
		/* Within the stated error of the truth... */
		assert_true(se > 0);
		assert_true(fabs(est - truth) <= 3 * se);
		assert_true(fabs(count - (N_SLOW + N_FAST)) <= 3 * count_se);
		/* ...which the unweighted mean misses by far. */
		assert_true(fabs(plain - truth) > 3 * se);
	}
	side = json_object_get(doc, "weighted");
	assert_non_null(side);
	assert_true(json_is_true(json_object_get(side, "exact")));
	assert_int_equal(json_integer_value(json_object_get(side, "traces_weight_estimated")), 0);
	assert_int_equal(json_integer_value(json_object_get(side, "traces_weight_unknown")), 0);
	assert_string_equal(json_string_value(json_object_get(doc, "source")), "traces");
	json_decref(doc);
	/* Unweighted (the default): no weighted members. */
	doc = api("/api/v1/aggregate?app=" APP);
	assert_null(json_object_get(doc, "weighted"));
	assert_null(json_object_get(frame_node(doc), "w_incl_ns_per_trace"));
	json_decref(doc);

	/* An older device's upload: counted as 1, and said so; a first-N
	 * upload whose quota refused half the week's candidates: weight 2,
	 * an estimate. */
	{
		Rearview__Selection firstn = REARVIEW__SELECTION__INIT;
		firstn.kind = REARVIEW__SELECTION_KIND__SELECTION_FIRST_N;
		firstn.probability = 1.0;
		firstn.candidates_seen = 6;
		firstn.candidates_taken = 3;
		g_used = PER_DEV;
		assert_int_equal(upload(5000000, "old-model", NULL), 0);
		assert_int_equal(upload(5000000, "old-model", &firstn), 0);
		wait_decoded(n + 2);
		doc = api("/api/v1/aggregate?app=" APP "&weighted=1");
		side = json_object_get(doc, "weighted");
		assert_false(json_is_true(json_object_get(side, "exact")));
		assert_int_equal(json_integer_value(json_object_get(side, "traces_weight_unknown")),
				 1);
		assert_int_equal(
			json_integer_value(json_object_get(side, "traces_weight_estimated")), 1);
		assert_true(fabs(num(frame_node(doc), "w_traces") - (w_sum + 1 + 2)) < 1e-6);
		json_decref(doc);
	}
	/* A bad value is refused. */
	{
		struct body b;
		assert_int_equal(request("GET", "/api/v1/aggregate?weighted=yes", g_b.api_token,
					 NULL, 0, &b),
				 400);
		free(b.p);
	}
}

/* Selections the server refuses: a probability out of range, more taken
 * than seen. */
static void test_weights_hostile_selection_refused(void **state)
{
	Rearview__Selection s = REARVIEW__SELECTION__INIT;

	(void)state;
	g_used = PER_DEV;
	s.kind = REARVIEW__SELECTION_KIND__SELECTION_SAMPLED;
	s.probability = 1e-9;
	assert_int_equal(upload(1000000, "x", &s), -1);
	s.probability = 1.5;
	assert_int_equal(upload(1000000, "x", &s), -1);
	s.probability = 0.5;
	s.candidates_seen = 1;
	s.candidates_taken = 2;
	assert_int_equal(upload(1000000, "x", &s), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weights_weighted_mean_matches_population),
		cmocka_unit_test(test_weights_hostile_selection_refused),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
