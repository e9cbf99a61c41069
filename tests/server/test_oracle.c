/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_oracle.c — every fleet figure against an independent recount.
 *
 * A random fleet from a fixed seed: three apps, three versions each, four
 * models, sixteen devices, two anomaly kinds, and per trace a call tree of
 * shared methods (layout_pass and draw_frame both reach measure_text
 * through bind_text, layout_pass also directly) and one app-only method,
 * with self times drawn in whole microseconds.  Each tree is written as a
 * capture byte by byte (tests/rvtrace/capbuild.h, a 1 GHz counter: every
 * duration exact), with an ANOMALY record inside one call's own time, and
 * uploaded through the device API to the real rearview-server binary
 * (tests/bench/server_common.h; the store is the suite's switch,
 * store_env.h, so the `pg` run repeats all of it on PostgreSQL).
 *
 * Every figure is recounted here from the trees this test generated —
 * never from the server's code — and compared: the trace lists (counts,
 * fields, the duration and severity orders), the aggregate per call path
 * (unfiltered, per app, and over a non-bucket filter; totals, traces,
 * calls, per-trace means, and each path's on/off-CPU split over its traces
 * with CPU data), the diff between two versions, the issues
 * (per app and chain: traces, devices, mean severity, impact order), the
 * method page per version and model (over the app's newest 2,000 traces
 * with the method, in the list's order, when it has more: the server's
 * documented sample) with its on- and off-CPU split (two traces in three
 * carry an OFFCPU record: each call off the CPU for 0, 1/8 or 2/8 of its
 * own time), chain search (every distinct matched
 * path of every trace, `* > m`, `a > * > b`, caller/callee), the
 * fleet-wide callers and callees, and the regressions' medians, means and
 * counts.  Each upload carries a selection (a sampling probability by
 * device, some quota-censored, some none as an older device sends), and
 * the weighted aggregate is recounted too: every node's weighted means
 * and estimated trace count, and the count of estimated and unknown
 * weights.  The fleet's jank per app: every device posts random frame
 * counts per app, version and day through POST /v1/jank (one app never
 * traced, earlier totals replaced by later ones), recounted and compared
 * with GET /api/v1/fleet/jank exactly.
 *
 * Size: RVS_ORACLE_TRACES (default 240, the make-check run: seconds);
 * the issue's large run is RVS_ORACLE_TRACES=10000 (server/README.md).
 * Waits are bounded polls on the server's own counts; nothing asserts on
 * timing.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "capbuild.h"
#include "rearview/upload.pb-c.h"
#include "server_common.h"

/* ---- the fleet ------------------------------------------------------------ */

#define NAPPS	 3
#define NVERS	 3
#define NMODELS	 4
#define NDEVICES 16
#define MAXN	 16    /* call instances per trace */
#define PER_DEV	 3     /* uploads a device makes (the default policy's weekly quota) */
#define NDAYS	 6     /* capture days of the fleet */
#define DAY0	 19676 /* the first: 2023-11-15 (days since 1970-01-01, UTC) */
#define STEP_APP 1     /* the app of the planted step (its versions follow time) */
#define STEP_VER 1     /* the step's first version (index in VERS) and so day 2 */

static const char *const APPS[NAPPS] = {"com.oracle.alpha", "com.oracle.beta", "com.oracle.gamma"};
static const char *const VERS[NVERS] = {"1.0", "1.1", "1.2"};
static const char *const MODELS[NMODELS] = {"pixel-7", "pixel-8", "galaxy-s23", "fp5"};

enum { M_MAIN, M_LAYOUT, M_DRAW, M_BIND, M_MEASURE, M_PARSE, M_PAINT0, M_COUNT = M_PAINT0 + NAPPS };
static const char *const METHODS[M_COUNT] = {"main_loop",   "layout_pass",  "draw_frame",
					     "bind_text",   "measure_text", "parse_json",
					     "alpha_paint", "beta_paint",   "gamma_paint"};

struct call {
	int m, parent, depth;
	int64_t self, incl, entry; /* ns; entry: its tick */
	/* With CPU data (trace.cpu): the time off the CPU inside its own time
	 * (one OFFCPU interval), and inside it and its callees. */
	int64_t off, off_incl;
};

struct trace {
	int app, ver, model, dev, kind, sev;
	int rdev;     /* the enrolled device that uploaded it (slot dev's, fresh every PER_DEV) */
	int n, focus; /* calls (preorder), the call the anomaly is in */
	int cpu;      /* its capture has an OFFCPU record (2 traces in 3) */
	struct call c[MAXN];
	char id[64]; /* the server's trace id (from the acknowledgement) */
	/* The selection it is uploaded with: kind 0 none (weight 1,
	 * unknown), else the probability and candidates; its weight. */
	int sel_kind;
	double p, w;
	uint32_t seen, taken;
};

static struct trace *g_t;
static const struct trace **g_byid; /* g_t by server id, once known (by_id) */
static int g_n;
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)((g_rng >> 11) % n);
}

static int add(struct trace *t, int m, int parent)
{
	struct call *c = &t->c[t->n];
	assert_true(t->n < MAXN);
	c->m = m;
	c->parent = parent;
	c->depth = parent < 0 ? 1 : t->c[parent].depth + 1;
	c->self = (int64_t)(1 + rnd(3000)) * 1000;
	return t->n++;
}

/* One trace's tree: at most 10 distinct call paths (so the server's 10
 * stored top chains are all of them and chain search sees every path). */
static void gen(struct trace *t, int i)
{
	int root, p, b;

	memset(t, 0, sizeof *t);
	t->app = (int)rnd(NAPPS);
	t->ver = (int)rnd(NVERS);
	/* The second app's versions follow time: trace i of g_n is version
	 * NVERS·i/g_n, captured on day NDAYS·i/g_n (capture_ns). */
	if (t->app == STEP_APP)
		t->ver = (int)((int64_t)i * NVERS / g_n);
	t->dev = (int)rnd(NDEVICES);
	t->model = t->dev % NMODELS;
	t->kind = rnd(3) ? REARVIEW__ANOMALY_KIND__ANOMALY_JANK
			 : REARVIEW__ANOMALY_KIND__ANOMALY_TOUCH_LATENCY;
	t->sev = (int)rnd(101);
	root = add(t, M_MAIN, -1);
	/* The planted step: from version 1.1 (and so from day 2) on, the
	 * second app's main loop takes three times as long of its own. */
	if (t->app == STEP_APP && t->ver >= STEP_VER)
		t->c[root].self *= 3;
	t->c[root].self += i; /* no two traces last as long */
	if (rnd(4)) {
		p = add(t, M_LAYOUT, root);
		for (int k = (int)rnd(3); k > 0; k--)
			add(t, M_MEASURE, p);
		if (rnd(2)) {
			b = add(t, M_BIND, p);
			if (rnd(4))
				add(t, M_MEASURE, b);
		}
	}
	if (rnd(3)) {
		p = add(t, M_DRAW, root);
		if (rnd(3)) {
			b = add(t, M_BIND, p);
			add(t, M_MEASURE, b);
		}
		if (rnd(2))
			add(t, M_PAINT0 + t->app, p);
	}
	if (rnd(2)) {
		/* 1.1 of the first app parses three times as long. */
		p = add(t, M_PARSE, root);
		if (t->app == 0 && t->ver == 1)
			t->c[p].self *= 3;
	}
	/* Off-CPU time without another random draw (the rest of the fleet
	 * stays as it was): 0, 1/8 or 2/8 of each call's own time. */
	t->cpu = i % 3 != 0;
	for (int k = 0; t->cpu && k < t->n; k++)
		t->c[k].off = t->c[k].self * ((i + k) % 3) / 8;
	for (int k = t->n; k-- > 0;) {
		t->c[k].incl += t->c[k].self;
		t->c[k].off_incl += t->c[k].off;
		if (t->c[k].parent >= 0) {
			t->c[t->c[k].parent].incl += t->c[k].incl;
			t->c[t->c[k].parent].off_incl += t->c[k].off_incl;
		}
	}
	t->focus = (int)rnd((uint32_t)t->n);
}

/* Trace i's capture time (ns since the epoch): day NDAYS·i/g_n after
 * DAY0, plus i seconds. */
static uint64_t capture_ns(int i)
{
	uint64_t day = DAY0 + (uint64_t)((int64_t)i * NDAYS / g_n);
	return (day * 86400 + (uint64_t)i) * 1000000000ull;
}

static uint64_t method_value(int m)
{
	return 0x1000 + 16 * (uint64_t)m;
}

/* Call k and its callees from tick *t: own time first, then the callees. */
static void emit(capbuf *cb, struct trace *tr, int k, uint64_t *t)
{
	tr->c[k].entry = (int64_t)*t;
	cb_entry(cb, method_value(tr->c[k].m), (uint32_t)*t);
	*t += (uint64_t)tr->c[k].self;
	for (int j = k + 1; j < tr->n; j++)
		if (tr->c[j].parent == k)
			emit(cb, tr, j, t);
	cb_exit(cb, (uint32_t)*t);
}

/* tr's OFFCPU record (tracer/FORMAT.md; tid 43, the header's): each call
 * with off-CPU time off the CPU from a quarter into its own time for that
 * long (never over a call's entry or exit), on the calls' clock
 * (monotonic = tick + base); blocked. */
static void offcpu(capbuf *cb, const struct trace *tr, uint64_t base)
{
	uint8_t v[8 + 24 * MAXN] = {0};
	uint32_t n = 0;

	v[0] = 43;
	for (int k = 0; k < tr->n; k++) {
		const struct call *c = &tr->c[k];
		uint64_t from = base + (uint64_t)(c->entry + c->self / 4);
		if (!c->off)
			continue;
		for (int b = 0; b < 8; b++) {
			v[8 + 24 * n + b] = (uint8_t)(from >> (8 * b));
			v[16 + 24 * n + b] = (uint8_t)((from + (uint64_t)c->off) >> (8 * b));
		}
		v[24 + 24 * n] = 2;
		n++;
	}
	v[4] = (uint8_t)n;
	cb_record(cb, 12, v, 8 + 24 * n);
}

/* The capture of tr (malloc'd bytes in cb->b): the header's reference
 * pairs the last tick with CLOCK_MONOTONIC 1000 s, so the ANOMALY's
 * monotonic time lands in the middle of the focus call's own time. */
static void capture(struct trace *tr, int i, capbuf *cb)
{
	const uint64_t mono_end = 1000000000000ull;
	uint64_t t = 1ull << 20, focus;
	uint8_t r[16 + 6] = {0};

	memset(cb, 0, sizeof *cb);
	cb_header(cb, 0, 1000000000, 0, mono_end, 0x400000, 0);
	emit(cb, tr, 0, &t);
	cb_end_slots(cb);
	cb_u64at(cb, 16, t);
	cb_u64at(cb, 24, capture_ns(i));
	for (int m = 0; m < M_COUNT; m++)
		cb_symbol(cb, method_value(m), method_value(m), 0, METHODS[m]);
	focus = (uint64_t)tr->c[tr->focus].entry + (uint64_t)tr->c[tr->focus].self / 2;
	r[0] = 1;
	for (int k = 0; k < 8; k++)
		r[8 + k] = (uint8_t)((mono_end - (t - focus)) >> (8 * k));
	memcpy(r + 16, "oracle", 6);
	cb_record(cb, 6, r, sizeof r);
	if (tr->cpu)
		offcpu(cb, tr, mono_end - t);
	cb_finish(cb);
}

/* ---- the server ------------------------------------------------------------ */

static struct rvsb g_b;
static CURL *g_curl;
/* Each device slot's current enrolment, its uploads, and its number. */
static char g_tok[NDEVICES][160];
static int g_used[NDEVICES], g_rdev[NDEVICES], g_enrolled;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* g_enrolled */

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

/* A request on curl handle h (its kept-alive connection); the body
 * (malloc'd) into out; the HTTP code, or -1 when curl failed.  No cmocka
 * assertion: the upload workers call it from their threads. */
static long request_on(CURL *h, const char *method, const char *path, const char *token,
		       const void *body, size_t len, struct body *out)
{
	struct curl_slist *hd = NULL;
	char auth[256];
	long code = 0;

	memset(out, 0, sizeof *out);
	curl_easy_reset(h);
	rvsb_curl(&g_b, h, path);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		hd = curl_slist_append(hd, auth);
	}
	hd = curl_slist_append(hd, "Expect:");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, grow);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	if (curl_easy_perform(h) != CURLE_OK)
		code = -1;
	else
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hd);
	return code;
}

static long request(const char *method, const char *path, const char *token, const void *body,
		    size_t len, struct body *out)
{
	long code = request_on(g_curl, method, path, token, body, len, out);
	assert_true(code > 0);
	return code;
}

/* GET of the JSON API, printf-style path; the document (200 asserted). */
static json_t *api(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *api(const char *fmt, ...)
{
	char path[2048];
	struct body b;
	json_t *doc;
	va_list ap;
	long code;

	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	code = request("GET", path, g_b.api_token, NULL, 0, &b);
	if (code != 200)
		fprintf(stderr, "GET %s: %ld %s\n", path, code, b.p ? b.p : "");
	assert_int_equal(code, 200);
	doc = json_loads(b.p, 0, NULL);
	free(b.p);
	assert_non_null(doc);
	return doc;
}

/* x percent-encoded (static buffer, one at a time). */
static const char *enc(const char *x)
{
	static char out[1024];
	char *e = curl_easy_escape(g_curl, x, 0);
	snprintf(out, sizeof out, "%s", e);
	curl_free(e);
	return out;
}

/* Enrols a device of slot d's model as the slot's current device, on
 * curl handle h.  0 or -1 (printed). */
static int enroll(CURL *h, int d)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__DeviceInfo di = REARVIEW__DEVICE_INFO__INIT;
	Rearview__EnrollResponse *er;
	uint8_t small[512];
	struct body b;
	long code;
	size_t n;

	di.model = (char *)MODELS[d % NMODELS];
	q.enrollment_secret = g_b.secret;
	q.device = &di;
	n = rearview__enroll_request__pack(&q, small);
	code = request_on(h, "POST", "/v1/enroll", NULL, small, n, &b);
	er = code == 200 ? rearview__enroll_response__unpack(NULL, b.n, (const uint8_t *)b.p)
			 : NULL;
	if (!er) {
		fprintf(stderr, "oracle: enrol: %ld\n", code);
		free(b.p);
		return -1;
	}
	snprintf(g_tok[d], sizeof g_tok[d], "%s", er->device_token);
	g_used[d] = 0;
	pthread_mutex_lock(&g_mu);
	g_rdev[d] = g_enrolled++;
	pthread_mutex_unlock(&g_mu);
	rearview__enroll_response__free_unpacked(er, NULL);
	free(b.p);
	return 0;
}

/* Uploads trace i on curl handle h from its slot's device (only this
 * worker uses the slot); tr->id from the acknowledgement.  0 or -1. */
static int upload(CURL *h, struct trace *tr, int i)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__DeviceInfo d = REARVIEW__DEVICE_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	Rearview__Selection sel = REARVIEW__SELECTION__INIT;
	Rearview__UploadAck *ack = NULL;
	uint8_t id[16] = {0x0a};
	uint8_t *body;
	struct body b;
	capbuf cb;
	long code;
	size_t n;

	/* The server holds each device to the policy's weekly quota. */
	if (g_used[tr->dev] == PER_DEV && enroll(h, tr->dev))
		return -1;
	g_used[tr->dev]++;
	tr->rdev = g_rdev[tr->dev];
	capture(tr, i, &cb);
	for (int k = 0; k < 4; k++)
		id[12 + k] = (uint8_t)(i >> (8 * k));
	e.upload_id.data = id;
	e.upload_id.len = sizeof id;
	app.app_id = (char *)APPS[tr->app];
	app.version = (char *)VERS[tr->ver];
	d.model = (char *)MODELS[tr->model];
	an.kind = (Rearview__AnomalyKind)tr->kind;
	an.severity = (uint32_t)tr->sev;
	if (tr->sel_kind) {
		sel.kind = (Rearview__SelectionKind)tr->sel_kind;
		sel.probability = tr->p;
		sel.candidates_seen = tr->seen;
		sel.candidates_taken = tr->taken;
		e.selection = &sel;
	}
	e.app = &app;
	e.device = &d;
	e.anomaly = &an;
	e.captured_realtime_ns = capture_ns(i);
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.payload.data = cb.b;
	e.payload.len = cb.len;
	e.payload_size = cb.len;
	n = rearview__upload_envelope__get_packed_size(&e);
	body = malloc(n);
	if (body) {
		rearview__upload_envelope__pack(&e, body);
		code = request_on(h, "POST", "/v1/uploads", g_tok[tr->dev], body, n, &b);
		if (code != 200)
			fprintf(stderr, "oracle: upload %d: %ld %.*s\n", i, code, (int)b.n,
				b.p ? b.p : "");
		else
			ack = rearview__upload_ack__unpack(NULL, b.n, (const uint8_t *)b.p);
		free(b.p);
	}
	if (ack && ack->trace_id)
		snprintf(tr->id, sizeof tr->id, "%s", ack->trace_id);
	if (ack)
		rearview__upload_ack__free_unpacked(ack, NULL);
	free(body);
	free(cb.b);
	return tr->id[0] ? 0 : -1;
}

/* Upload workers: worker w sends the traces whose device slot is w modulo
 * UPLOADERS (so a slot's enrolments and quota are one thread's), in
 * order, on its own connection; concurrent requests share the server's
 * group commits. */
#define UPLOADERS 4

struct worker {
	pthread_t th;
	int w, failed;
};

static void *upload_worker(void *arg)
{
	struct worker *wk = arg;
	CURL *h = curl_easy_init();

	wk->failed = !h;
	for (int d = wk->w; h && d < NDEVICES && !wk->failed; d += UPLOADERS)
		wk->failed = enroll(h, d) != 0;
	for (int i = 0; h && i < g_n && !wk->failed; i++)
		if (g_t[i].dev % UPLOADERS == wk->w)
			wk->failed = upload(h, &g_t[i], i) != 0;
	curl_easy_cleanup(h);
	return NULL;
}

static int group_setup(void **state)
{
	const char *env = getenv("RVS_ORACLE_TRACES");
	json_t *doc = NULL;
	double until;

	(void)state;
	g_n = env ? (int)strtol(env, NULL, 10) : 240;
	if (g_n < 10)
		g_n = 10;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	g_curl = curl_easy_init();
	if (rvsb_init(&g_b) || rvsb_start(&g_b, "decode_jobs = 2\n"))
		return -1;
	g_t = calloc((size_t)g_n, sizeof *g_t);
	if (!g_t)
		return -1;
	for (int i = 0; i < g_n; i++) {
		/* Selections: a probability by device slot; every 7th trace
		 * none (an older device), every 5th first-N with half the
		 * week's candidates refused (weight 2/p, an estimate). */
		static const double P[4] = {1.0, 0.5, 0.25, 0.2};
		struct trace *t = &g_t[i];
		gen(t, i);
		t->p = P[t->dev % 4];
		t->sel_kind = i % 7 == 3   ? 0
			      : i % 5 == 1 ? REARVIEW__SELECTION_KIND__SELECTION_FIRST_N
					   : REARVIEW__SELECTION_KIND__SELECTION_SAMPLED;
		t->seen = t->sel_kind == REARVIEW__SELECTION_KIND__SELECTION_FIRST_N ? 6 : 1;
		t->taken = t->sel_kind == REARVIEW__SELECTION_KIND__SELECTION_FIRST_N ? 3 : 1;
		t->w = !t->sel_kind ? 1.0 : (1.0 / t->p) * ((double)t->seen / t->taken);
	}
	{
		struct worker wk[UPLOADERS];
		int failed = 0;
		for (int w = 0; w < UPLOADERS; w++) {
			wk[w].w = w;
			wk[w].failed = 0;
			if (pthread_create(&wk[w].th, NULL, upload_worker, &wk[w]))
				return -1;
		}
		for (int w = 0; w < UPLOADERS; w++) {
			pthread_join(wk[w].th, NULL);
			failed |= wk[w].failed;
		}
		if (failed)
			return -1;
	}
	/* Until every trace is decoded with its aggregates: bounded by
	 * progress (120 s without one more decoded trace ends the wait), so a
	 * loaded machine's slow decoding is waited for and a stalled one is
	 * not. */
	{
		json_int_t seen = -1, now = 0;
		until = rvsb_now() + 120;
		do {
			json_decref(doc);
			doc = api("/api/v1/aggregate");
			now = json_integer_value(json_object_get(doc, "traces"));
			if (now == g_n)
				break;
			if (now != seen) {
				seen = now;
				until = rvsb_now() + 120;
			}
			usleep(100000);
		} while (rvsb_now() < until);
		fprintf(stderr, "oracle: %d traces uploaded, %lld decoded\n", g_n, (long long)now);
		json_decref(doc);
		if (now != g_n) {
			fprintf(stderr, "oracle: decoding stalled: no trace decoded in 120 s\n");
			return -1;
		}
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
	free(g_t);
	free(g_byid);
	return rc ? -1 : 0;
}

/* ---- the recount's helpers --------------------------------------------------- */

/* Call k's path, methods root first, each followed by ';'. */
static void path_of(const struct trace *t, int k, char *out, size_t cap)
{
	int st[MAXN], n = 0;
	size_t len = 0;
	for (int j = k; j >= 0; j = t->c[j].parent)
		st[n++] = j;
	out[0] = '\0';
	while (n-- > 0)
		len += (size_t)snprintf(out + len, cap - len, "%s;", METHODS[t->c[st[n]].m]);
}

static int64_t mean(int64_t sum, int64_t n)
{
	return n ? (sum + n / 2) / n : 0;
}

/* A keyed table of sums (linear: the fleet has few keys). */
struct row {
	char key[256];
	int64_t traces, calls, self, incl, n2;
	int last; /* the trace that last counted in traces */
	double sev;
	/* Issues: the sum of the traces' weights, the sum over devices of each
	 * one's smallest weight, the estimated and unknown weights. */
	double w, wdev;
	int64_t n_est, n_unknown;
	/* Aggregates: the traces with CPU data and their on/off-CPU sums. */
	int64_t cpu_traces, on_self, off_self, on_incl, off_incl;
};

struct table {
	struct row *v;
	size_t n, cap;
};

static struct row *get(struct table *tb, const char *key)
{
	for (size_t i = 0; i < tb->n; i++)
		if (!strcmp(tb->v[i].key, key))
			return &tb->v[i];
	if (tb->n == tb->cap) {
		tb->cap = tb->cap ? 2 * tb->cap : 64;
		tb->v = realloc(tb->v, tb->cap * sizeof *tb->v);
		assert_non_null(tb->v);
	}
	memset(&tb->v[tb->n], 0, sizeof tb->v[tb->n]);
	snprintf(tb->v[tb->n].key, sizeof tb->v[tb->n].key, "%s", key);
	tb->v[tb->n].last = -1;
	return &tb->v[tb->n++];
}

static struct row *find(const struct table *tb, const char *key)
{
	for (size_t i = 0; i < tb->n; i++)
		if (!strcmp(tb->v[i].key, key))
			return &tb->v[i];
	return NULL;
}

static json_int_t ival(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v)) {
		fprintf(stderr, "oracle: no integer \"%s\"\n", k);
		fail();
	}
	return json_integer_value(v);
}

static const char *sval(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

#define EXPECT_EQ(what, got, want)                                                                \
	do {                                                                                      \
		long long g_ = (long long)(got), w_ = (long long)(want);                          \
		if (g_ != w_) {                                                                   \
			fprintf(stderr, "oracle: %s: server %lld, recount %lld\n", what, g_, w_); \
			fail();                                                                   \
		}                                                                                 \
	} while (0)

/* The cap of a counted list's "total" (API.md: past it, total is the cap
 * and total_capped true). */
#define TOTAL_CAP 10000

/* A capped list's total and total_capped against the recount want. */
static void total_compare(const char *what, json_t *doc, int64_t want)
{
	char msg[200];
	snprintf(msg, sizeof msg, "%s: total", what);
	EXPECT_EQ(msg, ival(doc, "total"), want > TOTAL_CAP ? TOTAL_CAP : want);
	snprintf(msg, sizeof msg, "%s: total_capped", what);
	EXPECT_EQ(msg, json_is_true(json_object_get(doc, "total_capped")), want > TOTAL_CAP);
}

typedef int (*pick_fn)(const struct trace *t, const void *arg);

/* The recount of an aggregate over the traces pick selects: per app root
 * ("app|") and per path ("app|a;b;"). */
static void agg_recount(struct table *tb, pick_fn pick, const void *arg)
{
	char path[512], key[600];
	for (int i = 0; i < g_n; i++) {
		const struct trace *t = &g_t[i];
		if (!pick(t, arg))
			continue;
		snprintf(key, sizeof key, "%s|", APPS[t->app]);
		get(tb, key)->traces++;
		get(tb, key)->cpu_traces += t->cpu;
		for (int k = 0; k < t->n; k++) {
			struct row *r;
			path_of(t, k, path, sizeof path);
			snprintf(key, sizeof key, "%s|%s", APPS[t->app], path);
			r = get(tb, key);
			if (r->last != i) {
				r->traces++;
				r->cpu_traces += t->cpu;
				r->last = i;
			}
			r->calls++;
			r->self += t->c[k].self;
			r->incl += t->c[k].incl;
			if (!t->cpu)
				continue;
			r->on_self += t->c[k].self - t->c[k].off;
			r->off_self += t->c[k].off;
			r->on_incl += t->c[k].incl - t->c[k].off_incl;
			r->off_incl += t->c[k].off_incl;
		}
	}
}

/* Each node's key ("app|" for a root, "app|a;b;" for a path) into keys. */
static char (*node_keys(json_t *nodes))[600]
{
	size_t n = json_array_size(nodes);
	char(*keys)[600] = calloc(n + 1, sizeof *keys);
	json_int_t *ids = calloc(n + 1, sizeof *ids);
	assert_non_null(keys);
	assert_non_null(ids);
	/* Preorder: a node's parent comes before it. */
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(nodes, i);
		json_int_t parent = ival(o, "parent");
		ids[i] = ival(o, "node");
		if (!parent) {
			snprintf(keys[i], sizeof keys[i], "%s|", sval(o, "method"));
			continue;
		}
		for (size_t j = i; j-- > 0;)
			if (ids[j] == parent) {
				snprintf(keys[i], sizeof keys[i], "%s%s;", keys[j],
					 sval(o, "method"));
				break;
			}
		assert_true(keys[i][0]);
	}
	free(ids);
	return keys;
}

static const char *app_of_key(const char *key, char *out, size_t cap)
{
	size_t n = strcspn(key, "|");
	snprintf(out, cap, "%.*s", (int)n, key);
	return out;
}

/* Compares one aggregate reply with the recount of the same traces. */
static void agg_compare(const char *what, json_t *doc, pick_fn pick, const void *arg)
{
	struct table tb = {0};
	json_t *nodes = json_object_get(doc, "nodes"), *bu = json_object_get(doc, "bottom_up");
	char(*keys)[600], msg[900], app[256], rk[600];
	int64_t total = 0, cpu_total = 0;
	struct table mt = {0};

	agg_recount(&tb, pick, arg);
	for (size_t i = 0; i < tb.n; i++)
		if (tb.v[i].key[strlen(tb.v[i].key) - 1] == '|') {
			total += tb.v[i].traces;
			cpu_total += tb.v[i].cpu_traces;
		}
	snprintf(msg, sizeof msg, "%s: traces", what);
	EXPECT_EQ(msg, ival(doc, "traces"), total);
	snprintf(msg, sizeof msg, "%s: cpu_traces", what);
	EXPECT_EQ(msg, ival(doc, "cpu_traces"), cpu_total);
	snprintf(msg, sizeof msg, "%s: nodes", what);
	EXPECT_EQ(msg, json_array_size(nodes), tb.n);
	EXPECT_EQ(msg, ival(doc, "nodes_total"), tb.n);
	keys = node_keys(nodes);
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		json_t *o = json_array_get(nodes, i);
		const struct row *r = find(&tb, keys[i]), *root;
		snprintf(rk, sizeof rk, "%s|", app_of_key(keys[i], app, sizeof app));
		root = find(&tb, rk);
		snprintf(msg, sizeof msg, "%s: node %s present", what, keys[i]);
		EXPECT_EQ(msg, r != NULL && root != NULL, 1);
		snprintf(msg, sizeof msg, "%s: %s traces", what, keys[i]);
		EXPECT_EQ(msg, ival(o, "traces"), r->traces);
		if (!ival(o, "parent"))
			continue;
		snprintf(msg, sizeof msg, "%s: %s calls", what, keys[i]);
		EXPECT_EQ(msg, ival(o, "calls"), r->calls);
		snprintf(msg, sizeof msg, "%s: %s self_ns", what, keys[i]);
		EXPECT_EQ(msg, ival(o, "self_ns"), r->self);
		snprintf(msg, sizeof msg, "%s: %s incl_ns", what, keys[i]);
		EXPECT_EQ(msg, ival(o, "incl_ns"), r->incl);
		/* Per trace: over the traces of the node's own app. */
		snprintf(msg, sizeof msg, "%s: %s self_ns_per_trace", what, keys[i]);
		EXPECT_EQ(msg, ival(o, "self_ns_per_trace"), mean(r->self, root->traces));
		snprintf(msg, sizeof msg, "%s: %s incl_ns_per_trace", what, keys[i]);
		EXPECT_EQ(msg, ival(o, "incl_ns_per_trace"), mean(r->incl, root->traces));
		/* The path's on/off-CPU split over its traces with CPU data;
		 * none of them: no member. */
		{
			json_t *cpu = json_object_get(o, "cpu");
			snprintf(msg, sizeof msg, "%s: %s cpu present", what, keys[i]);
			EXPECT_EQ(msg, cpu != NULL, r->cpu_traces > 0);
			snprintf(msg, sizeof msg, "%s: %s cpu", what, keys[i]);
			if (cpu && r->cpu_traces > 0) {
				EXPECT_EQ(msg, ival(cpu, "traces"), r->cpu_traces);
				EXPECT_EQ(msg, ival(cpu, "on_cpu_self_ns"), r->on_self);
				EXPECT_EQ(msg, ival(cpu, "off_cpu_self_ns"), r->off_self);
				EXPECT_EQ(msg, ival(cpu, "on_cpu_incl_ns"), r->on_incl);
				EXPECT_EQ(msg, ival(cpu, "off_cpu_incl_ns"), r->off_incl);
			}
		}
		/* The bottom-up recount: per app and method (no recursion here). */
		{
			const char *last = strrchr(keys[i], ';'), *m = last;
			char mk[600];
			struct row *b;
			while (m > keys[i] && m[-1] != ';' && m[-1] != '|')
				m--;
			snprintf(mk, sizeof mk, "%s|%.*s", app, (int)(last - m), m);
			b = get(&mt, mk);
			b->calls += r->calls;
			b->self += r->self;
			b->incl += r->incl;
			b->traces = root->traces;
		}
	}
	snprintf(msg, sizeof msg, "%s: bottom-up rows", what);
	EXPECT_EQ(msg, json_array_size(bu), mt.n);
	for (size_t i = 0; i < json_array_size(bu); i++) {
		json_t *o = json_array_get(bu, i);
		char mk[600];
		const struct row *b;
		snprintf(mk, sizeof mk, "%s|%s", sval(o, "app_id"), sval(o, "method"));
		b = find(&mt, mk);
		snprintf(msg, sizeof msg, "%s: bottom-up %s", what, mk);
		EXPECT_EQ(msg, b != NULL, 1);
		EXPECT_EQ(msg, ival(o, "calls"), b->calls);
		EXPECT_EQ(msg, ival(o, "self_ns"), b->self);
		EXPECT_EQ(msg, ival(o, "incl_ns"), b->incl);
		EXPECT_EQ(msg, ival(o, "self_ns_per_trace"), mean(b->self, b->traces));
		EXPECT_EQ(msg, ival(o, "incl_ns_per_trace"), mean(b->incl, b->traces));
	}
	free(keys);
	free(tb.v);
	free(mt.v);
}

static int pick_all(const struct trace *t, const void *arg)
{
	(void)t;
	(void)arg;
	return 1;
}

static int pick_app(const struct trace *t, const void *arg)
{
	return t->app == *(const int *)arg;
}

/* {app, version} */
static int pick_app_ver(const struct trace *t, const void *arg)
{
	const int *av = arg;
	return t->app == av[0] && t->ver == av[1];
}

static int has_method(const struct trace *t, int m)
{
	for (int k = 0; k < t->n; k++)
		if (t->c[k].m == m)
			return 1;
	return 0;
}

static int pick_method(const struct trace *t, const void *arg)
{
	return has_method(t, *(const int *)arg);
}

/* ---- the tests ------------------------------------------------------------- */

static int cmp_id(const void *x, const void *y)
{
	return strcmp((*(const struct trace *const *)x)->id, (*(const struct trace *const *)y)->id);
}

/* The trace the server calls id (by binary search over g_byid), or NULL. */
static const struct trace *by_id(const char *id)
{
	struct trace key;
	const struct trace *k = &key, **hit;
	if (!g_byid) {
		g_byid = calloc((size_t)g_n, sizeof *g_byid);
		assert_non_null(g_byid);
		for (int i = 0; i < g_n; i++)
			g_byid[i] = &g_t[i];
		qsort(g_byid, (size_t)g_n, sizeof *g_byid, cmp_id);
	}
	snprintf(key.id, sizeof key.id, "%s", id ? id : "");
	hit = bsearch(&k, g_byid, (size_t)g_n, sizeof *g_byid, cmp_id);
	return hit ? *hit : NULL;
}

static void test_oracle_every_trace_decoded_and_listed(void **state)
{
	for (int a = 0; a < NAPPS; a++) {
		int want = 0, got = 0;
		char cursor[64] = "";
		for (int i = 0; i < g_n; i++)
			want += g_t[i].app == a;
		do {
			json_t *doc = api("/api/v1/traces?app=%s&limit=500%s%s", APPS[a],
					  cursor[0] ? "&cursor=" : "", cursor),
			       *v;
			size_t k;
			total_compare("trace list per app", doc, want);
			json_array_foreach(json_object_get(doc, "traces"), k, v)
			{
				const struct trace *t = by_id(sval(v, "trace_id"));
				assert_non_null(t);
				assert_string_equal(sval(v, "app_id"), APPS[t->app]);
				assert_string_equal(sval(v, "app_version"), VERS[t->ver]);
				assert_string_equal(sval(v, "model"), MODELS[t->model]);
				EXPECT_EQ("trace kind", ival(v, "anomaly_kind"), t->kind);
				EXPECT_EQ("trace severity", ival(v, "severity"), t->sev);
				EXPECT_EQ("trace duration", ival(v, "duration_ns"), t->c[0].incl);
				got++;
			}
			cursor[0] = '\0';
			if (json_is_string(json_object_get(doc, "next_cursor")))
				snprintf(cursor, sizeof cursor, "%s", sval(doc, "next_cursor"));
			json_decref(doc);
		} while (cursor[0]);
		EXPECT_EQ("traces listed per app", got, want);
	}
	/* Totals of narrower filters, plain and sorted, against a recount. */
	for (int a = 0; a < NAPPS; a++)
		for (int m = 0; m < NMODELS; m++) {
			int want = 0, wsev = 0, wmeth = 0;
			json_t *doc;
			for (int i = 0; i < g_n; i++) {
				const struct trace *t = &g_t[i];
				if (t->app != a || t->model != m)
					continue;
				want++;
				wsev += t->sev >= 50;
				wmeth += has_method(t, M_BIND);
			}
			doc = api("/api/v1/traces?app=%s&model=%s&limit=1", APPS[a], MODELS[m]);
			total_compare("app+model", doc, want);
			json_decref(doc);
			doc = api("/api/v1/"
				  "traces?app=%s&model=%s&min_severity=50&limit=1&sort=duration",
				  APPS[a], MODELS[m]);
			total_compare("sorted app+model+severity", doc, wsev);
			json_decref(doc);
			doc = api("/api/v1/traces?app=%s&model=%s&method=bind_text&limit=1",
				  APPS[a], MODELS[m]);
			total_compare("app+model+method", doc, wmeth);
			json_decref(doc);
			doc = api(
				"/api/v1/traces?app=%s&model=%s&method=bind_text&limit=1&sort=self",
				APPS[a], MODELS[m]);
			total_compare("sort=self app+model+method", doc, wmeth);
			json_decref(doc);
		}
}

/* Every page of /api/v1/traces?sort=key: each trace once, and the key's
 * value (duration or severity) of row r equal to the recount's r-th of
 * the order (ties may come in any order: their tie-break is arrival,
 * which concurrent uploads do not fix). */
static void sorted_compare(const char *key, const int64_t *want)
{
	unsigned char *listed = calloc((size_t)g_n, 1);
	char cursor[96] = "", what[64];
	int got = 0;

	assert_non_null(listed);
	do {
		json_t *doc = api("/api/v1/traces?sort=%s&limit=500%s%s", key,
				  cursor[0] ? "&cursor=" : "", enc(cursor)),
		       *v;
		size_t k;
		snprintf(what, sizeof what, "sort=%s", key);
		total_compare(what, doc, g_n);
		json_array_foreach(json_object_get(doc, "traces"), k, v)
		{
			const struct trace *t = by_id(sval(v, "trace_id"));
			assert_non_null(t);
			assert_true(got < g_n && !listed[t - g_t]);
			listed[t - g_t] = 1;
			snprintf(what, sizeof what, "sort=%s row %d", key, got);
			if (!strcmp(key, "duration")) {
				EXPECT_EQ(what, ival(v, "duration_ns"), t->c[0].incl);
				EXPECT_EQ(what, t->c[0].incl, want[got]);
			} else {
				EXPECT_EQ(what, ival(v, "severity"), t->sev);
				EXPECT_EQ(what, t->sev, want[got]);
			}
			got++;
		}
		cursor[0] = '\0';
		if (json_is_string(json_object_get(doc, "next_cursor")))
			snprintf(cursor, sizeof cursor, "%s", sval(doc, "next_cursor"));
		json_decref(doc);
	} while (cursor[0]);
	snprintf(what, sizeof what, "traces by %s", key);
	EXPECT_EQ(what, got, g_n);
	free(listed);
}

static int cmp_desc(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return (a < b) - (a > b);
}

static void test_oracle_worst_trace_orders(void **state)
{
	int64_t *want = calloc((size_t)g_n, sizeof *want);

	assert_non_null(want);
	for (int i = 0; i < g_n; i++)
		want[i] = g_t[i].c[0].incl;
	qsort(want, (size_t)g_n, sizeof *want, cmp_desc);
	sorted_compare("duration", want);
	for (int i = 0; i < g_n; i++)
		want[i] = g_t[i].sev;
	qsort(want, (size_t)g_n, sizeof *want, cmp_desc);
	sorted_compare("severity", want);
	free(want);
}

static void test_oracle_aggregate_unfiltered_per_app_and_by_method(void **state)
{
	json_t *doc = api("/api/v1/aggregate");
	char what[64];
	int m = M_BIND;

	assert_string_equal(sval(doc, "source"), "buckets");
	agg_compare("aggregate", doc, pick_all, NULL);
	json_decref(doc);
	for (int a = 0; a < NAPPS; a++) {
		doc = api("/api/v1/aggregate?app=%s", APPS[a]);
		snprintf(what, sizeof what, "aggregate app=%s", APPS[a]);
		agg_compare(what, doc, pick_app, &a);
		json_decref(doc);
	}
	/* Not a bucket filter: read from the traces' rows. */
	doc = api("/api/v1/aggregate?method=%s", METHODS[m]);
	assert_string_equal(sval(doc, "source"), "traces");
	agg_compare("aggregate method=bind_text", doc, pick_method, &m);
	json_decref(doc);
}

/* The weighted aggregate (weighted=1) against the recount from the
 * weights this test sent: per node Σw over the traces holding it, and
 * the Hájek means Σ w·x / Σ w over its app's traces; per side the count
 * of estimated and unknown weights. */
static void weighted_compare(const char *what, json_t *doc, pick_fn pick, const void *arg)
{
	json_t *nodes = json_object_get(doc, "nodes"), *side = json_object_get(doc, "weighted");
	char(*keys)[600] = node_keys(nodes), path[512], key[600], msg[900], app[256], rk[600];
	struct wrow {
		char key[600];
		double w, ws, wi;
		int last;
	} *v = calloc(4096, sizeof *v);
	size_t nv = 0;
	int64_t n_est = 0, n_unknown = 0;

	assert_non_null(v);
	assert_non_null(side);
	for (int i = 0; i < g_n; i++) {
		const struct trace *t = &g_t[i];
		if (!pick(t, arg))
			continue;
		n_est += t->sel_kind == REARVIEW__SELECTION_KIND__SELECTION_FIRST_N;
		n_unknown += t->sel_kind == 0;
		for (int k = -1; k < t->n; k++) {
			struct wrow *r = NULL;
			if (k < 0)
				snprintf(key, sizeof key, "%s|", APPS[t->app]);
			else {
				path_of(t, k, path, sizeof path);
				snprintf(key, sizeof key, "%s|%s", APPS[t->app], path);
			}
			for (size_t j = 0; j < nv && !r; j++)
				if (!strcmp(v[j].key, key))
					r = &v[j];
			if (!r) {
				assert_true(nv < 4096);
				r = &v[nv++];
				snprintf(r->key, sizeof r->key, "%s", key);
				r->last = -1;
			}
			if (r->last != i) {
				r->w += t->w;
				r->last = i;
			}
			if (k >= 0) {
				r->ws += t->w * (double)t->c[k].self;
				r->wi += t->w * (double)t->c[k].incl;
			}
		}
	}
	snprintf(msg, sizeof msg, "%s: estimated weights", what);
	EXPECT_EQ(msg, json_integer_value(json_object_get(side, "traces_weight_estimated")), n_est);
	snprintf(msg, sizeof msg, "%s: unknown weights", what);
	EXPECT_EQ(msg, json_integer_value(json_object_get(side, "traces_weight_unknown")),
		  n_unknown);
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		json_t *o = json_array_get(nodes, i);
		const struct wrow *r = NULL, *root = NULL;
		snprintf(rk, sizeof rk, "%s|", app_of_key(keys[i], app, sizeof app));
		for (size_t j = 0; j < nv; j++) {
			if (!strcmp(v[j].key, keys[i]))
				r = &v[j];
			if (!strcmp(v[j].key, rk))
				root = &v[j];
		}
		snprintf(msg, sizeof msg, "%s: weighted node %s present", what, keys[i]);
		EXPECT_EQ(msg, r != NULL && root != NULL, 1);
		if (fabs(json_number_value(json_object_get(o, "w_traces")) - r->w) > 1e-6 * r->w ||
		    (json_integer_value(json_object_get(o, "parent")) &&
		     (fabs(json_number_value(json_object_get(o, "w_self_ns_per_trace")) -
			   r->ws / root->w) > 1e-6 * (1 + r->ws / root->w) ||
		      fabs(json_number_value(json_object_get(o, "w_incl_ns_per_trace")) -
			   r->wi / root->w) > 1e-6 * (1 + r->wi / root->w)))) {
			fprintf(stderr,
				"oracle: %s: %s weighted: server w %g self %g incl %g, recount "
				"w %g self %g incl %g\n",
				what, keys[i], json_number_value(json_object_get(o, "w_traces")),
				json_number_value(json_object_get(o, "w_self_ns_per_trace")),
				json_number_value(json_object_get(o, "w_incl_ns_per_trace")), r->w,
				r->ws / root->w, r->wi / root->w);
			fail();
		}
	}
	free(keys);
	free(v);
}

static void test_oracle_weighted_aggregate(void **state)
{
	json_t *doc = api("/api/v1/aggregate?weighted=1");
	int a = 1;

	(void)state;
	assert_string_equal(sval(doc, "source"), "traces");
	/* The unweighted members stay what they were. */
	agg_compare("aggregate weighted=1", doc, pick_all, NULL);
	weighted_compare("aggregate weighted=1", doc, pick_all, NULL);
	json_decref(doc);
	doc = api("/api/v1/aggregate?weighted=1&app=%s", APPS[a]);
	weighted_compare("aggregate weighted=1 app", doc, pick_app, &a);
	json_decref(doc);
}

static void test_oracle_diff_between_versions(void **state)
{
	for (int a = 0; a < NAPPS; a++) {
		int av[2][2] = {{a, 0}, {a, 1}};
		struct table tb[2] = {{0}};
		json_t *doc = api("/api/v1/aggregate/diff?app=%s&a.version=%s&b.version=%s",
				  APPS[a], VERS[0], VERS[1]),
		       *v;
		char(*keys)[600], rk[600], msg[700];
		const struct row *root[2];
		size_t k;

		snprintf(rk, sizeof rk, "%s|", APPS[a]);
		for (int s = 0; s < 2; s++) {
			agg_recount(&tb[s], pick_app_ver, av[s]);
			root[s] = find(&tb[s], rk);
			EXPECT_EQ("diff side traces",
				  ival(json_object_get(doc, s ? "b" : "a"), "traces"),
				  root[s] ? root[s]->traces : 0);
		}
		keys = node_keys(json_object_get(doc, "nodes"));
		json_array_foreach(json_object_get(doc, "nodes"), k, v)
		{
			int64_t pt[2][2] = {{0}};
			for (int s = 0; s < 2; s++) {
				const struct row *r = find(&tb[s], keys[k]);
				const char *p = s ? "b_" : "a_";
				char key[40];
				snprintf(key, sizeof key, "%straces", p);
				snprintf(msg, sizeof msg, "diff %s %s", keys[k], key);
				EXPECT_EQ(msg, ival(v, key), r ? r->traces : 0);
				if (!ival(v, "parent"))
					continue;
				pt[s][0] = r && root[s] ? mean(r->self, root[s]->traces) : 0;
				pt[s][1] = r && root[s] ? mean(r->incl, root[s]->traces) : 0;
				snprintf(key, sizeof key, "%sself_ns_per_trace", p);
				snprintf(msg, sizeof msg, "diff %s %s", keys[k], key);
				EXPECT_EQ(msg, ival(v, key), pt[s][0]);
				snprintf(key, sizeof key, "%sincl_ns_per_trace", p);
				snprintf(msg, sizeof msg, "diff %s %s", keys[k], key);
				EXPECT_EQ(msg, ival(v, key), pt[s][1]);
			}
			if (!ival(v, "parent"))
				continue;
			snprintf(msg, sizeof msg, "diff %s self_delta_ns", keys[k]);
			EXPECT_EQ(msg, ival(v, "self_delta_ns"), pt[1][0] - pt[0][0]);
			snprintf(msg, sizeof msg, "diff %s incl_delta_ns", keys[k]);
			EXPECT_EQ(msg, ival(v, "incl_delta_ns"), pt[1][1] - pt[0][1]);
		}
		/* Every path of either side is a node. */
		{
			size_t both = tb[0].n;
			for (size_t i = 0; i < tb[1].n; i++)
				both += !find(&tb[0], tb[1].v[i].key);
			EXPECT_EQ("diff nodes", json_array_size(json_object_get(doc, "nodes")),
				  both);
		}
		free(keys);
		free(tb[0].v);
		free(tb[1].v);
		json_decref(doc);
	}
}

static void test_oracle_issues_per_app_and_chain(void **state)
{
	struct table tb = {0};
	json_t *doc = api("/api/v1/issues?limit=100"), *v;
	double last = INFINITY;
	char key[600], path[512], msg[700];
	unsigned char *seen = calloc((size_t)g_enrolled, 1);
	double *mindev = calloc((size_t)g_enrolled, sizeof *mindev);
	size_t k;

	assert_non_null(seen);
	assert_non_null(mindev);
	for (int i = 0; i < g_n; i++) {
		const struct trace *t = &g_t[i];
		struct row *r;
		path_of(t, t->focus, path, sizeof path);
		snprintf(key, sizeof key, "%s|%s", APPS[t->app], path);
		r = get(&tb, key);
		r->traces++;
		r->sev += t->sev > 1 ? t->sev : 1;
		r->w += t->w;
		r->n_est += t->sel_kind == REARVIEW__SELECTION_KIND__SELECTION_FIRST_N;
		r->n_unknown += t->sel_kind == 0;
	}
	/* Distinct devices per issue, and each device's smallest weight. */
	for (size_t x = 0; x < tb.n; x++) {
		memset(seen, 0, (size_t)g_enrolled);
		for (int d = 0; d < g_enrolled; d++)
			mindev[d] = INFINITY;
		for (int i = 0; i < g_n; i++) {
			const struct trace *t = &g_t[i];
			path_of(t, t->focus, path, sizeof path);
			snprintf(key, sizeof key, "%s|%s", APPS[t->app], path);
			if (strcmp(key, tb.v[x].key))
				continue;
			if (t->w < mindev[t->rdev])
				mindev[t->rdev] = t->w;
			if (!seen[t->rdev]) {
				seen[t->rdev] = 1;
				tb.v[x].n2++;
			}
		}
		for (int d = 0; d < g_enrolled; d++)
			if (seen[d])
				tb.v[x].wdev += mindev[d];
	}
	free(seen);
	free(mindev);
	EXPECT_EQ("issues", json_array_size(json_object_get(doc, "issues")), tb.n);
	EXPECT_EQ("issues total", ival(doc, "total"), tb.n);
	/* The total whatever the limit, and per app. */
	{
		json_t *d2 = api("/api/v1/issues?limit=2");
		EXPECT_EQ("issues total (limit 2)", ival(d2, "total"), tb.n);
		EXPECT_EQ("issues listed (limit 2)", json_array_size(json_object_get(d2, "issues")),
			  tb.n < 2 ? tb.n : 2);
		json_decref(d2);
		for (int a = 0; a < NAPPS; a++) {
			size_t want = 0, len = strlen(APPS[a]);
			for (size_t x = 0; x < tb.n; x++)
				want += !strncmp(tb.v[x].key, APPS[a], len) &&
					tb.v[x].key[len] == '|';
			d2 = api("/api/v1/issues?limit=1&app=%s", APPS[a]);
			EXPECT_EQ("issues total per app", ival(d2, "total"), want);
			json_decref(d2);
		}
	}
	json_array_foreach(json_object_get(doc, "issues"), k, v)
	{
		const struct row *r;
		double sev, impact;
		assert_non_null(sval(v, "app_id"));
		snprintf(key, sizeof key, "%s|%s", sval(v, "app_id"), sval(v, "chain"));
		r = find(&tb, key);
		snprintf(msg, sizeof msg, "issue %s", key);
		EXPECT_EQ(msg, r != NULL, 1);
		EXPECT_EQ(msg, ival(v, "traces"), r->traces);
		EXPECT_EQ(msg, ival(v, "devices"), r->n2);
		/* The weighted counts beside them, by this test's weights. */
		{
			json_t *w = json_object_get(v, "weighted"), *x;
			double wt = 0;
			size_t j;
			assert_non_null(w);
			assert_true(fabs(json_number_value(json_object_get(w, "traces")) - r->w) <=
				    1e-9 * r->w);
			assert_true(fabs(json_number_value(json_object_get(w, "devices")) -
					 r->wdev) <= 1e-9 * r->wdev);
			EXPECT_EQ(msg, ival(w, "traces_weight_estimated"), r->n_est);
			EXPECT_EQ(msg, ival(w, "traces_weight_unknown"), r->n_unknown);
			EXPECT_EQ(msg, json_is_true(json_object_get(w, "exact")),
				  !r->n_est && !r->n_unknown);
			json_array_foreach(json_object_get(w, "trend"), j, x) wt +=
				json_number_value(x);
			assert_true(fabs(wt - r->w) <= 1e-9 * r->w);
		}
		sev = r->sev / (double)r->traces;
		impact = (double)r->traces * sev * (double)r->n2;
		assert_true(fabs(json_real_value(json_object_get(v, "severity")) - sev) < 1e-9);
		assert_true(fabs(json_real_value(json_object_get(v, "impact")) - impact) <
			    1e-9 * impact);
		assert_true(impact <= last * (1 + 1e-12));
		last = impact;
	}
	json_decref(doc);
	free(tb.v);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return (a > b) - (a < b);
}

static int64_t nearest_rank(int64_t *v, size_t n, int p)
{
	size_t k;
	qsort(v, n, sizeof *v, cmp_i64);
	k = (size_t)ceil((double)p * (double)n / 100.0);
	return v[k ? k - 1 : 0];
}

/* A value and its selection weight. */
struct wval {
	int64_t v;
	double w;
};

static int cmp_wval(const void *a, const void *b)
{
	const struct wval *x = a, *y = b;
	return (x->v > y->v) - (x->v < y->v);
}

/* The weighted p-th percentile of x[0..n) (sorts x): the smallest value
 * whose cumulative weight, values ascending, reaches p/100 of the total
 * (API.md "GET /api/v1/trend"; relative 1e-12 for the sums' rounding). */
static int64_t weighted_rank(struct wval *x, size_t n, int p)
{
	double total = 0, cum = 0;
	qsort(x, n, sizeof *x, cmp_wval);
	for (size_t i = 0; i < n; i++)
		total += x[i].w;
	for (size_t i = 0; i < n; i++)
		if ((cum += x[i].w) >= (double)p / 100.0 * total * (1 - 1e-12))
			return x[i].v;
	return x[n - 1].v;
}

/* The per-trace totals of method m in the traces pick selects (those with
 * it) into self/incl; their count. */
static size_t method_totals(int m, pick_fn pick, const void *arg, int64_t *self, int64_t *incl)
{
	size_t n = 0;
	for (int i = 0; i < g_n; i++) {
		const struct trace *t = &g_t[i];
		int64_t s = 0, in = 0;
		if (!pick(t, arg) || !has_method(t, m))
			continue;
		for (int k = 0; k < t->n; k++)
			if (t->c[k].m == m) {
				s += t->c[k].self;
				in += t->c[k].incl; /* no recursion in this fleet */
			}
		self[n] = s;
		incl[n++] = in;
	}
	return n;
}

/* Method m's on/off-CPU split summed over the traces pick selects that
 * have it and CPU data (API.md: "cpu"), compared with o's. */
static void cpu_compare(const char *what, json_t *o, int m, pick_fn pick, const void *arg)
{
	int64_t n = 0, on_self = 0, off_self = 0, on_incl = 0, off_incl = 0;
	json_t *cpu = json_object_get(o, "cpu");
	char msg[200];

	for (int i = 0; i < g_n; i++) {
		const struct trace *t = &g_t[i];
		if (!t->cpu || !pick(t, arg) || !has_method(t, m))
			continue;
		n++;
		for (int k = 0; k < t->n; k++)
			if (t->c[k].m == m) { /* no recursion in this fleet */
				on_self += t->c[k].self - t->c[k].off;
				off_self += t->c[k].off;
				on_incl += t->c[k].incl - t->c[k].off_incl;
				off_incl += t->c[k].off_incl;
			}
	}
	snprintf(msg, sizeof msg, "%s cpu traces", what);
	EXPECT_EQ(msg, ival(cpu, "traces"), n);
	snprintf(msg, sizeof msg, "%s on-CPU self", what);
	EXPECT_EQ(msg, ival(cpu, "on_cpu_self_ns"), on_self);
	snprintf(msg, sizeof msg, "%s off-CPU self", what);
	EXPECT_EQ(msg, ival(cpu, "off_cpu_self_ns"), off_self);
	snprintf(msg, sizeof msg, "%s on-CPU incl", what);
	EXPECT_EQ(msg, ival(cpu, "on_cpu_incl_ns"), on_incl);
	snprintf(msg, sizeof msg, "%s off-CPU incl", what);
	EXPECT_EQ(msg, ival(cpu, "off_cpu_incl_ns"), off_incl);
}

static void pcts_compare(const char *what, json_t *o, int64_t *self, int64_t *incl, size_t n)
{
	char msg[200];
	snprintf(msg, sizeof msg, "%s count", what);
	EXPECT_EQ(msg, ival(o, "count"), n);
	if (!n)
		return;
	snprintf(msg, sizeof msg, "%s self p50", what);
	EXPECT_EQ(msg, ival(json_object_get(o, "self_ns"), "p50"), nearest_rank(self, n, 50));
	snprintf(msg, sizeof msg, "%s self p95", what);
	EXPECT_EQ(msg, ival(json_object_get(o, "self_ns"), "p95"), nearest_rank(self, n, 95));
	snprintf(msg, sizeof msg, "%s incl p50", what);
	EXPECT_EQ(msg, ival(json_object_get(o, "incl_ns"), "p50"), nearest_rank(incl, n, 50));
	snprintf(msg, sizeof msg, "%s incl p95", what);
	EXPECT_EQ(msg, ival(json_object_get(o, "incl_ns"), "p95"), nearest_rank(incl, n, 95));
}

/* The traces the method page's per-version and per-model rows are drawn
 * from, by index in g_t (NULL: every trace); the two picks below keep to
 * them. */
static const unsigned char *g_sample;

/* {app, version}, in g_sample */
static int pick_sample_ver(const struct trace *t, const void *arg)
{
	return pick_app_ver(t, arg) && (!g_sample || g_sample[t - g_t]);
}

/* {app, model}, in g_sample */
static int pick_sample_model(const struct trace *t, const void *arg)
{
	const int *am = arg;
	return t->app == am[0] && t->model == am[1] && (!g_sample || g_sample[t - g_t]);
}

/* API.md: the per-version and per-model rows are over the newest 2,000
 * matching traces containing the method. */
#define BY_VERSION_SAMPLE 2000

/* Marks in sample (by index in g_t) the newest k traces of app a holding
 * method m, in the trace list's newest-first order (the server's arrival
 * order, which the upload workers' interleaving decides: read, not
 * recomputed); how many it marked. */
static int newest_with_method(int a, int m, int k, unsigned char *sample)
{
	char cursor[64] = "";
	int got = 0;

	memset(sample, 0, (size_t)g_n);
	do {
		json_t *doc = api("/api/v1/traces?app=%s&limit=500%s%s", APPS[a],
				  cursor[0] ? "&cursor=" : "", cursor),
		       *v;
		size_t i;
		json_array_foreach(json_object_get(doc, "traces"), i, v)
		{
			const struct trace *t = by_id(sval(v, "trace_id"));
			assert_non_null(t);
			if (got < k && has_method(t, m)) {
				sample[t - g_t] = 1;
				got++;
			}
		}
		cursor[0] = '\0';
		if (got < k && json_is_string(json_object_get(doc, "next_cursor")))
			snprintf(cursor, sizeof cursor, "%s", sval(doc, "next_cursor"));
		json_decref(doc);
	} while (cursor[0]);
	return got;
}

static void test_oracle_method_page_per_version_and_model(void **state)
{
	int64_t *self = calloc((size_t)g_n, sizeof *self),
		*incl = calloc((size_t)g_n, sizeof *incl);
	unsigned char *sample = calloc((size_t)g_n, 1);
	const int ms[] = {M_MEASURE, M_PARSE};

	assert_non_null(self);
	assert_non_null(incl);
	assert_non_null(sample);
	for (size_t q = 0; q < sizeof ms / sizeof *ms; q++) {
		int m = ms[q];
		json_t *doc = api("/api/v1/methods/%s?limit=3", METHODS[m]);
		size_t n = method_totals(m, pick_all, NULL, self, incl);
		pcts_compare("method page", doc, self, incl, n);
		cpu_compare("method page", doc, m, pick_all, NULL);
		EXPECT_EQ("method page total", ival(doc, "total"), n);
		EXPECT_EQ("method page traces", json_array_size(json_object_get(doc, "traces")),
			  n < 3 ? n : 3);
		json_decref(doc);
		for (int a = 0; a < NAPPS; a++) {
			json_int_t rows = 0;
			json_t *v;
			size_t k;
			doc = api("/api/v1/methods/%s?app=%s", METHODS[m], APPS[a]);
			n = method_totals(m, pick_app, &a, self, incl);
			pcts_compare("method page app", doc, self, incl, n);
			cpu_compare("method page app", doc, m, pick_app, &a);
			EXPECT_EQ("method page app total", ival(doc, "total"), n);
			/* Beyond the sample's size the rows are over the app's
			 * newest traces with the method: recounted over those. */
			EXPECT_EQ("by_version_traces", ival(doc, "by_version_traces"),
				  n < BY_VERSION_SAMPLE ? n : BY_VERSION_SAMPLE);
			g_sample = NULL;
			if (n > BY_VERSION_SAMPLE) {
				EXPECT_EQ("sampled traces listed",
					  newest_with_method(a, m, BY_VERSION_SAMPLE, sample),
					  BY_VERSION_SAMPLE);
				g_sample = sample;
				fprintf(stderr,
					"oracle: %s in %s: by_version/by_model over its"
					" newest %d of %zu traces\n",
					METHODS[m], APPS[a], BY_VERSION_SAMPLE, n);
			}
			json_array_foreach(json_object_get(doc, "by_version"), k, v)
			{
				int av[2] = {a, -1};
				for (int x = 0; x < NVERS; x++)
					if (!strcmp(VERS[x], sval(v, "app_version")))
						av[1] = x;
				assert_true(av[1] >= 0);
				n = method_totals(m, pick_sample_ver, av, self, incl);
				pcts_compare("by_version", v, self, incl, n);
				cpu_compare("by_version", v, m, pick_sample_ver, av);
				rows += ival(v, "count");
			}
			/* No version or model of the sample left out. */
			EXPECT_EQ("by_version counts", rows, ival(doc, "by_version_traces"));
			rows = 0;
			json_array_foreach(json_object_get(doc, "by_model"), k, v)
			{
				int am[2] = {a, -1};
				for (int x = 0; x < NMODELS; x++)
					if (!strcmp(MODELS[x], sval(v, "model")))
						am[1] = x;
				assert_true(am[1] >= 0);
				n = method_totals(m, pick_sample_model, am, self, incl);
				pcts_compare("by_model", v, self, incl, n);
				cpu_compare("by_model", v, m, pick_sample_model, am);
				rows += ival(v, "count");
			}
			EXPECT_EQ("by_model counts", rows, ival(doc, "by_version_traces"));
			g_sample = NULL;
			json_decref(doc);
		}
	}
	free(self);
	free(incl);
	free(sample);
}

/* The pattern's leftmost match in path (names root first, each followed by
 * ';'): the length of path through the match's last frame, 0 without one.
 * el: names, NULL for '*'. */
static size_t glob(const char *const *el, int nel, const char *path)
{
	const char *fr[MAXN];
	size_t len[MAXN], nf = 0, pos = 0, end = 0;
	for (const char *p = path; *p; nf++) {
		fr[nf] = p;
		len[nf] = strcspn(p, ";");
		p += len[nf] + 1;
	}
	for (int i = 0; i < nel;) {
		int j = i;
		size_t k;
		if (!el[i]) {
			i++;
			continue;
		}
		while (j < nel && el[j])
			j++;
		for (k = pos; k + (size_t)(j - i) <= nf; k++) {
			int m = 0;
			while (m < j - i && strlen(el[i + m]) == len[k + (size_t)m] &&
			       !memcmp(el[i + m], fr[k + (size_t)m], len[k + (size_t)m]))
				m++;
			if (m == j - i)
				break;
		}
		if (k + (size_t)(j - i) > nf)
			return 0;
		pos = k + (size_t)(j - i);
		end = (size_t)(fr[pos - 1] + len[pos - 1] + 1 - path);
		i = j;
	}
	return end;
}

/* Chain search's hits for query (every page) against the recount: each
 * trace's distinct matched paths (the chain through the match's end). */
static void search_compare(const char *query, const char *const *el, int nel, int app)
{
	struct table want = {0}, got = {0};
	char cursor[64] = "", key[700], path[512];

	for (int i = 0; i < g_n; i++) {
		const struct trace *t = &g_t[i];
		if (app >= 0 && t->app != app)
			continue;
		for (int k = 0; k < t->n; k++) {
			size_t e;
			path_of(t, k, path, sizeof path);
			if ((e = glob(el, nel, path))) {
				snprintf(key, sizeof key, "%s|%.*s", t->id, (int)e, path);
				get(&want, key)->traces = 1;
			}
		}
	}
	do {
		json_t *doc = api("/api/v1/search?%s%s%s&limit=500%s%s", query,
				  app >= 0 ? "&app=" : "", app >= 0 ? APPS[app] : "",
				  cursor[0] ? "&cursor=" : "", cursor),
		       *v;
		struct table page = {0};
		size_t k;
		json_array_foreach(json_object_get(doc, "hits"), k, v)
		{
			json_t *fr = json_object_get(v, "frames");
			json_int_t to =
				json_integer_value(json_array_get(json_object_get(v, "match"), 1));
			size_t len = (size_t)snprintf(key, sizeof key, "%s|", sval(v, "trace_id"));
			for (json_int_t f = 0; f < to; f++)
				len += (size_t)snprintf(
					key + len, sizeof key - len, "%s;",
					json_string_value(json_array_get(fr, (size_t)f)));
			/* Once a page (a trace whose rows straddle a page boundary
			 * may show on both: API.md). */
			if (find(&page, key)) {
				fprintf(stderr, "oracle: search %s: hit %s twice\n", query, key);
				fail();
			}
			get(&page, key)->traces = 1;
			get(&got, key)->traces = 1;
			if (!find(&want, key)) {
				fprintf(stderr, "oracle: search %s: unexpected hit %s\n", query,
					key);
				fail();
			}
		}
		cursor[0] = '\0';
		if (json_is_string(json_object_get(doc, "next_cursor")))
			snprintf(cursor, sizeof cursor, "%s", sval(doc, "next_cursor"));
		json_decref(doc);
		free(page.v);
	} while (cursor[0]);
	for (size_t i = 0; i < want.n; i++)
		if (!find(&got, want.v[i].key)) {
			fprintf(stderr, "oracle: search %s: missing hit %s\n", query,
				want.v[i].key);
			fail();
		}
	fprintf(stderr, "oracle: search %s%s: %zu hits\n", query, app >= 0 ? " (one app)" : "",
		got.n);
	free(want.v);
	free(got.v);
}

static void test_oracle_chain_search_every_caller(void **state)
{
	const char *const any_measure[] = {NULL, "measure_text"};
	const char *const main_to_measure[] = {"main_loop", NULL, "measure_text"};
	const char *const bind_measure[] = {"bind_text", "measure_text"};
	const char *const layout_any[] = {"layout_pass", NULL};

	search_compare("chain=%2A%20%3E%20measure_text", any_measure, 2, -1);
	search_compare("chain=main_loop%20%3E%20%2A%20%3E%20measure_text", main_to_measure, 3, -1);
	search_compare("caller=bind_text&callee=measure_text", bind_measure, 2, -1);
	search_compare("chain=layout_pass%20%3E%20%2A", layout_any, 2, -1);
	search_compare("chain=%2A%20%3E%20measure_text", any_measure, 2, 1);
}

/* The callers / callees reply for method m (over pick) against the recount. */
static void callers_compare(const char *query, int m, pick_fn pick, const void *arg)
{
	struct table up = {0}, down = {0}, tot = {0}, apps = {0};
	json_t *doc = api("/api/v1/aggregate/callers?of=%s%s", METHODS[m], query), *v;
	static const char *const parts[] = {"callers", "callees", "apps"};
	struct table *tabs[] = {&up, &down, &tot};
	char key[600], msg[700];
	size_t k;

	for (int i = 0; i < g_n; i++) {
		const struct trace *t = &g_t[i];
		if (!pick(t, arg))
			continue;
		get(&apps, APPS[t->app])->traces++;
		for (int c = 0; c < t->n; c++) {
			struct row *r;
			if (t->c[c].m != m)
				continue;
			snprintf(key, sizeof key, "%s|%s", APPS[t->app],
				 t->c[c].parent < 0 ? "(none)" : METHODS[t->c[t->c[c].parent].m]);
			r = get(&up, key);
			r->calls++, r->self += t->c[c].self, r->incl += t->c[c].incl;
			snprintf(key, sizeof key, "%s|%s", APPS[t->app], METHODS[m]);
			r = get(&tot, key);
			r->calls++, r->self += t->c[c].self, r->incl += t->c[c].incl;
			for (int d = c + 1; d < t->n; d++)
				if (t->c[d].parent == c) {
					snprintf(key, sizeof key, "%s|%s", APPS[t->app],
						 METHODS[t->c[d].m]);
					r = get(&down, key);
					r->calls++, r->self += t->c[d].self,
						r->incl += t->c[d].incl;
				}
		}
	}
	for (int p = 0; p < 3; p++) {
		json_t *rows = json_object_get(doc, parts[p]);
		snprintf(msg, sizeof msg, "callers of %s%s: %s rows", METHODS[m], query, parts[p]);
		EXPECT_EQ(msg, json_array_size(rows), tabs[p]->n);
		json_array_foreach(rows, k, v)
		{
			const struct row *r, *a = find(&apps, sval(v, "app_id"));
			json_t *mv = json_object_get(v, "method");
			snprintf(key, sizeof key, "%s|%s", sval(v, "app_id"),
				 json_is_null(mv) ? "(none)" : json_string_value(mv));
			r = find(tabs[p], key);
			snprintf(msg, sizeof msg, "callers of %s%s: %s %s", METHODS[m], query,
				 parts[p], key);
			EXPECT_EQ(msg, r != NULL && a != NULL, 1);
			EXPECT_EQ(msg, ival(v, "calls"), r->calls);
			EXPECT_EQ(msg, ival(v, "self_ns"), r->self);
			EXPECT_EQ(msg, ival(v, "incl_ns"), r->incl);
			EXPECT_EQ(msg, ival(v, "app_traces"), a->traces);
			EXPECT_EQ(msg, ival(v, "incl_ns_per_trace"), mean(r->incl, a->traces));
			EXPECT_EQ(msg, ival(v, "self_ns_per_trace"), mean(r->self, a->traces));
		}
	}
	json_decref(doc);
	free(up.v);
	free(down.v);
	free(tot.v);
	free(apps.v);
}

static void test_oracle_fleet_callers_and_callees(void **state)
{
	int a = 2;
	callers_compare("", M_MEASURE, pick_all, NULL);
	callers_compare("", M_BIND, pick_all, NULL);
	callers_compare("&app=com.oracle.gamma", M_BIND, pick_app, &a);
	callers_compare("", M_MAIN, pick_all, NULL);
}

static double median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_i64);
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static void close_to(const char *what, double got, double want)
{
	if (fabs(got - want) > 1e-6 * (fabs(want) + 1)) {
		fprintf(stderr, "oracle: %s: server %.3f, recount %.3f\n", what, got, want);
		fail();
	}
}

static void test_oracle_regressions_medians_and_counts(void **state)
{
	int64_t *v[2][2];
	size_t n[2] = {0};
	json_t *doc = api("/api/v1/regressions?app=%s&a=%s&b=%s&limit=500", APPS[0], VERS[0],
			  VERS[1]),
	       *row;
	size_t k;

	for (int s = 0; s < 2; s++)
		for (int w = 0; w < 2; w++)
			assert_non_null(v[s][w] = calloc((size_t)g_n, sizeof(int64_t)));
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < g_n; i++)
			n[s] += g_t[i].app == 0 && g_t[i].ver == s;
	EXPECT_EQ("regressions a traces", ival(json_object_get(doc, "a"), "traces"), n[0]);
	EXPECT_EQ("regressions b traces", ival(json_object_get(doc, "b"), "traces"), n[1]);
	{
		int used = 0;
		for (int m = 0; m < M_COUNT; m++) {
			int any = 0;
			for (int i = 0; i < g_n && !any; i++)
				any = g_t[i].app == 0 && g_t[i].ver < 2 && has_method(&g_t[i], m);
			used += any;
		}
		EXPECT_EQ("regressions methods", json_array_size(json_object_get(doc, "methods")),
			  used);
		EXPECT_EQ("regressions methods_tested", ival(doc, "methods_tested"), used);
		{
			json_t *d2 = api("/api/v1/regressions?app=%s&a=%s&b=%s&limit=2", APPS[0],
					 VERS[0], VERS[1]);
			EXPECT_EQ("regressions methods_tested (limit 2)",
				  ival(d2, "methods_tested"), used);
			EXPECT_EQ("regressions methods listed (limit 2)",
				  json_array_size(json_object_get(d2, "methods")), 2);
			EXPECT_EQ("regressions chains_tested (limit 2)", ival(d2, "chains_tested"),
				  json_array_size(json_object_get(doc, "chains")));
			json_decref(d2);
		}
	}
	json_array_foreach(json_object_get(doc, "methods"), k, row)
	{
		int m = -1;
		size_t with[2] = {0};
		char what[128];
		for (int x = 0; x < M_COUNT; x++)
			if (!strcmp(METHODS[x], sval(row, "method")))
				m = x;
		assert_true(m >= 0);
		/* Every trace of a side, 0 where the method is absent. */
		for (int s = 0; s < 2; s++) {
			size_t j = 0;
			for (int i = 0; i < g_n; i++) {
				const struct trace *t = &g_t[i];
				int64_t se = 0, in = 0;
				if (t->app != 0 || t->ver != s)
					continue;
				with[s] += has_method(t, m);
				for (int c = 0; c < t->n; c++)
					if (t->c[c].m == m)
						se += t->c[c].self, in += t->c[c].incl;
				v[s][0][j] = se;
				v[s][1][j++] = in;
			}
		}
		snprintf(what, sizeof what, "regressions %s traces_a", METHODS[m]);
		EXPECT_EQ(what, ival(row, "traces_a"), with[0]);
		snprintf(what, sizeof what, "regressions %s traces_b", METHODS[m]);
		EXPECT_EQ(what, ival(row, "traces_b"), with[1]);
		for (int w = 0; w < 2; w++) {
			json_t *st = json_object_get(row, w ? "incl" : "self");
			for (int s = 0; s < 2; s++) {
				double sum = 0;
				for (size_t j = 0; j < n[s]; j++)
					sum += (double)v[s][w][j];
				snprintf(what, sizeof what, "regressions %s %s mean_%c", METHODS[m],
					 w ? "incl" : "self", 'a' + s);
				close_to(what,
					 json_number_value(json_object_get(st, s ? "mean_b_ns"
										 : "mean_a_ns")),
					 sum / (double)n[s]);
				snprintf(what, sizeof what, "regressions %s %s median_%c",
					 METHODS[m], w ? "incl" : "self", 'a' + s);
				close_to(what,
					 json_number_value(json_object_get(st, s ? "median_b_ns"
										 : "median_a_ns")),
					 median(v[s][w], n[s]));
			}
		}
	}
	json_decref(doc);
	for (int s = 0; s < 2; s++)
		for (int w = 0; w < 2; w++)
			free(v[s][w]);
}

/* A list's total against a recount of its rows: every page of the
 * signatures (by offset) and of the audit log (by before=) counted. */
static void test_oracle_signature_and_audit_totals(void **state)
{
	json_int_t total = -1, n = 0, off = 0;
	json_t *doc;

	(void)state;
	do {
		size_t k;
		doc = api("/api/v1/signatures?limit=7&offset=%lld", (long long)off);
		if (total < 0)
			total = ival(doc, "total");
		EXPECT_EQ("signatures total on every page", ival(doc, "total"), total);
		k = json_array_size(json_object_get(doc, "signatures"));
		n += (json_int_t)k;
		off = json_is_integer(json_object_get(doc, "next_offset"))
			      ? ival(doc, "next_offset")
			      : -1;
		json_decref(doc);
		if (!k)
			break;
	} while (off >= 0);
	EXPECT_EQ("signatures total", total, n);
	assert_true(total > 0);
	/* The audit log: four accounts made here (each audited), paged by 3. */
	{
		char before[32] = "";
		for (int i = 0; i < 4; i++) {
			char path[96];
			struct body b;
			snprintf(path, sizeof path, "/api/v1/users?name=oracle%d-%d&role=viewer", i,
				 (int)getpid());
			assert_int_equal(request("POST", path, g_b.api_token, NULL, 0, &b), 201);
			free(b.p);
		}
		total = -1;
		n = 0;
		do {
			doc = api("/api/v1/audit?limit=3%s%s", before[0] ? "&before=" : "", before);
			if (total < 0)
				total = ival(doc, "total");
			n += (json_int_t)json_array_size(json_object_get(doc, "audit"));
			before[0] = '\0';
			if (json_is_integer(json_object_get(doc, "next_before")))
				snprintf(before, sizeof before, "%lld",
					 (long long)ival(doc, "next_before"));
			json_decref(doc);
		} while (before[0]);
		EXPECT_EQ("audit total", total, n > TOTAL_CAP ? TOTAL_CAP : n);
		assert_true(total >= 4);
	}
}

/* "YYYY-MM-DD" of fleet day d (0..NDAYS) into out. */
static void day_key(int d, char out[16])
{
	time_t t = (time_t)((DAY0 + d) * 86400);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 16, "%Y-%m-%d", &tm);
}

/* /api/v1/trend of main_loop in app a by day or version against the
 * recount: the buckets in axis order, each one's traces and nearest-rank
 * p50/p95 of self and inclusive time; returns the document. */
static json_t *trend_compare(int a, int by_version)
{
	json_t *doc = api("/api/v1/trend?method=main_loop&app=%s&by=%s", APPS[a],
			  by_version ? "version" : "day"),
	       *buckets = json_object_get(doc, "buckets");
	int nk = by_version ? NVERS : NDAYS, k = 0;
	int64_t *self = calloc((size_t)g_n, sizeof *self),
		*incl = calloc((size_t)g_n, sizeof *incl);
	struct wval *wself = calloc((size_t)g_n, sizeof *wself),
		    *wincl = calloc((size_t)g_n, sizeof *wincl);
	size_t total = 0;

	assert_non_null(self);
	assert_non_null(incl);
	assert_non_null(wself);
	assert_non_null(wincl);
	assert_false(json_is_true(json_object_get(doc, "cut")));
	/* Versions are first seen in order here (the app's versions follow
	 * time for STEP_APP, and every version shows on day 0 for the rest). */
	for (int b = 0; b < nk; b++) {
		char key[16], what[96];
		size_t n = 0;
		int64_t n_est = 0, n_unknown = 0;
		double wn = 0;
		json_t *o, *w;
		for (int i = 0; i < g_n; i++) {
			const struct trace *t = &g_t[i];
			if (t->app != a ||
			    (by_version ? t->ver : (int)((int64_t)i * NDAYS / g_n)) != b)
				continue;
			wself[n] = (struct wval){t->c[0].self, t->w};
			wincl[n] = (struct wval){t->c[0].incl, t->w};
			wn += t->w;
			n_est += t->sel_kind == REARVIEW__SELECTION_KIND__SELECTION_FIRST_N;
			n_unknown += t->sel_kind == 0;
			self[n] = t->c[0].self; /* main_loop is the root, once */
			incl[n++] = t->c[0].incl;
		}
		if (!n)
			continue;
		if (by_version)
			snprintf(key, sizeof key, "%s", VERS[b]);
		else
			day_key(b, key);
		o = json_array_get(buckets, (size_t)k++);
		assert_non_null(o);
		snprintf(what, sizeof what, "trend %s bucket %d key", APPS[a], b);
		if (strcmp(sval(o, "key"), key))
			fail_msg("%s: %s, want %s", what, sval(o, "key"), key);
		snprintf(what, sizeof what, "trend %s %s", APPS[a], key);
		pcts_compare(what, o, self, incl, n);
		/* The weighted percentiles beside them, by this test's weights. */
		w = json_object_get(o, "weighted");
		assert_non_null(w);
		assert_true(fabs(json_number_value(json_object_get(w, "count")) - wn) <= 1e-9 * wn);
		EXPECT_EQ(what, ival(w, "traces_weight_estimated"), n_est);
		EXPECT_EQ(what, ival(w, "traces_weight_unknown"), n_unknown);
		EXPECT_EQ(what, json_is_true(json_object_get(w, "exact")), !n_est && !n_unknown);
		for (int q = 0; q < 2; q++) {
			const char *pn = q ? "p95" : "p50";
			EXPECT_EQ(what, ival(json_object_get(w, "self_ns"), pn),
				  weighted_rank(wself, n, q ? 95 : 50));
			EXPECT_EQ(what, ival(json_object_get(w, "incl_ns"), pn),
				  weighted_rank(wincl, n, q ? 95 : 50));
		}
		total += n;
	}
	EXPECT_EQ("trend buckets", json_array_size(buckets), k);
	EXPECT_EQ("trend traces", ival(doc, "traces"), total);
	free(self);
	free(incl);
	free(wself);
	free(wincl);
	return doc;
}

static void test_oracle_trend_buckets_and_planted_onset(void **state)
{
	char day2[16];
	json_t *doc, *on;

	(void)state;
	day_key(2, day2);
	/* The planted step: found at version 1.1, and at day 2 by day. */
	doc = trend_compare(STEP_APP, 1);
	on = json_object_get(json_object_get(doc, "onset"), "self");
	assert_true(json_is_object(on));
	assert_string_equal(sval(on, "key"), VERS[STEP_VER]);
	assert_true(json_real_value(json_object_get(on, "p")) < 0.01);
	assert_true(json_real_value(json_object_get(on, "shift")) > 2);
	json_decref(doc);
	doc = trend_compare(STEP_APP, 0);
	on = json_object_get(json_object_get(doc, "onset"), "self");
	assert_true(json_is_object(on));
	assert_string_equal(sval(on, "key"), day2);
	assert_string_equal(sval(on, "day"), day2);
	json_decref(doc);
	/* The first app's main loop did not change: no onset by day. */
	doc = trend_compare(0, 0);
	assert_true(json_is_null(json_object_get(json_object_get(doc, "onset"), "self")));
	json_decref(doc);
	/* Bad requests are 400 with the reason, before any read. */
	{
		static const char *const bad[][2] = {
			{"/api/v1/trend", "method is required"},
			{"/api/v1/trend?method=", "method is required"},
			{"/api/v1/trend?method=m&by=week", "by is day or version"},
			{"/api/v1/trend?method=m&issue=XYZ", "issue is 16 lowercase hex digits"},
			{"/api/v1/trend?method=m&kind=nope", "bad value for parameter: kind"},
			{"/api/v1/trend?method=%01", "bad value for parameter: method"},
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			struct body b;
			json_t *e;
			assert_int_equal(request("GET", bad[i][0], g_b.api_token, NULL, 0, &b),
					 400);
			e = json_loads(b.p, 0, NULL);
			free(b.p);
			assert_non_null(e);
			assert_string_equal(sval(e, "error"), bad[i][1]);
			json_decref(e);
		}
	}
}

/* ---- the /trend page ------------------------------------------------------- */

static size_t keep_headers(char *p, size_t sz, size_t n, void *u)
{
	char *h = u;
	size_t have = strlen(h), add = sz * n;
	if (have + add < 4096) {
		memcpy(h + have, p, add);
		h[have + add] = '\0';
	}
	return add;
}

/* A web UI request (a POST of form when not NULL) with cookie; the body
 * into out (malloc'd), the headers into hdrs (4096 bytes); the status. */
static long web_req(const char *path, const char *cookie, const char *form, struct body *out,
		    char *hdrs)
{
	long code = 0;

	memset(out, 0, sizeof *out);
	hdrs[0] = '\0';
	curl_easy_reset(g_curl);
	rvsb_curl(&g_b, g_curl, path);
	if (cookie)
		curl_easy_setopt(g_curl, CURLOPT_COOKIE, cookie);
	if (form)
		curl_easy_setopt(g_curl, CURLOPT_POSTFIELDS, form);
	curl_easy_setopt(g_curl, CURLOPT_WRITEFUNCTION, grow);
	curl_easy_setopt(g_curl, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(g_curl, CURLOPT_HEADERFUNCTION, keep_headers);
	curl_easy_setopt(g_curl, CURLOPT_HEADERDATA, hdrs);
	assert_int_equal(curl_easy_perform(g_curl), CURLE_OK);
	curl_easy_getinfo(g_curl, CURLINFO_RESPONSE_CODE, &code);
	if (!out->p)
		out->p = calloc(1, 1);
	return code;
}

/* The value of cookie name set in hdrs into out ("" when none). */
static void cookie_of(const char *hdrs, const char *name, char *out, size_t cap)
{
	char needle[64];
	const char *p;
	snprintf(needle, sizeof needle, "Set-Cookie: %s=", name);
	out[0] = '\0';
	if ((p = strcasestr(hdrs, needle)))
		snprintf(out, cap, "%.*s", (int)strcspn(p + strlen(needle), ";\r\n"),
			 p + strlen(needle));
}

/* Signs in as admin; the session cookie ("rv_session=…") into out. */
static void web_login(char *out, size_t cap)
{
	char hdrs[4096], tok[128], cookie[160], form[512], id[128];
	struct body b;

	if (!g_b.admin_password[0])
		skip(); /* init printed no password: say so, never pass silently */
	assert_int_equal(web_req("/login", NULL, NULL, &b, hdrs), 200);
	free(b.p);
	cookie_of(hdrs, "rv_login", tok, sizeof tok);
	assert_true(tok[0]);
	snprintf(cookie, sizeof cookie, "rv_login=%s", tok);
	snprintf(form, sizeof form, "csrf=%s&user=admin&password=%s", tok, g_b.admin_password);
	assert_int_equal(web_req("/login", cookie, form, &b, hdrs), 303);
	free(b.p);
	cookie_of(hdrs, "rv_session", id, sizeof id);
	assert_true(id[0]);
	snprintf(out, cap, "rv_session=%s", id);
}

/* The href of the element with id in html, "&amp;" decoded, into out. */
static void href_of(const char *html, const char *id, char *out, size_t cap)
{
	char needle[96];
	const char *p, *h;
	size_t n = 0;

	snprintf(needle, sizeof needle, "id=\"%s\" href=\"", id);
	p = strstr(html, needle);
	if (!p)
		fail_msg("no element %s with a link", id);
	for (h = p + strlen(needle); *h && *h != '"' && n + 1 < cap; h++) {
		out[n++] = *h;
		if (!strncmp(h, "&amp;", 5))
			h += 4;
	}
	out[n] = '\0';
}

/* GET path with the session: 200 asserted; the body (caller frees). */
static char *page(const char *cookie, const char *path)
{
	char hdrs[4096];
	struct body b;
	long code = web_req(path, cookie, NULL, &b, hdrs);
	if (code != 200)
		fail_msg("GET %s: %ld", path, code);
	return b.p;
}

/* The /trend page at query (by=version or by=day and the rest) against
 * /api/v1/trend of the same query: the weighted lines drawn exactly when
 * some bucket's weighted percentile differs from its own, each weighted
 * point's tooltip the API's figure; the weighted onset's marker (its
 * bucket's key) and legend entry exactly when the API has one, its diff
 * link the buckets before against those from it on; the note naming the
 * buckets whose weights are not exact exactly when the reply is not. */
static void trend_page_weighted_matches_api(const char *cookie, const char *query)
{
	static const char *const which[2] = {"self_ns", "incl_ns"}, *const pn[2] = {"p50", "p95"};
	static const char *const label[2] = {"self", "inclusive"};
	char path[1280], want[1024], inexact[1024] = "";
	json_t *doc = api("/api/v1/trend?%s", query), *bs = json_object_get(doc, "buckets"), *b;
	json_t *ow = json_object_get(json_object_get(doc, "onset_weighted"), "self");
	int by_version = !strcmp(json_string_value(json_object_get(doc, "by")), "version");
	int differs = 0;
	size_t i, nb = json_array_size(bs);
	char *html;

	snprintf(path, sizeof path, "/trend?%s", query);
	html = page(cookie, path);
	json_array_foreach(bs, i, b)
	{
		json_t *w = json_object_get(b, "weighted");
		for (int m = 0; m < 2; m++)
			for (int q = 0; q < 2; q++)
				differs |= ival(json_object_get(w, which[m]), pn[q]) !=
					   ival(json_object_get(b, which[m]), pn[q]);
		if (!json_is_true(json_object_get(w, "exact")))
			snprintf(inexact + strlen(inexact), sizeof inexact - strlen(inexact),
				 "%s%s", inexact[0] ? ", " : "",
				 json_string_value(json_object_get(b, "key")));
	}
	fprintf(stderr, "oracle: trend page %s: weighted lines %s, weighted onset %s\n", query,
		differs ? "drawn" : "same", json_is_object(ow) ? "found" : "none");
	assert_non_null(
		strstr(html, differs ? "data-weighted=\"drawn\"" : "data-weighted=\"same\""));
	assert_int_equal(strstr(html, "id=\"trend-weighted-self-p50\"") != NULL, differs);
	assert_int_equal(strstr(html, "id=\"weighted-same\"") == NULL, differs);
	json_array_foreach(bs, i, b)
	{
		json_t *w = json_object_get(b, "weighted");
		for (int m = 0; differs && m < 2; m++)
			for (int q = 0; q < 2; q++) {
				snprintf(want, sizeof want, "<title>%s: weighted %s %s %.3f ms;",
					 json_string_value(json_object_get(b, "key")), label[m],
					 pn[q],
					 (double)ival(json_object_get(w, which[m]), pn[q]) / 1e6);
				if (!strstr(html, want))
					fail_msg("trend page %s: no point %s", query, want);
			}
	}
	if (json_is_object(ow)) {
		size_t k = (size_t)ival(ow, "bucket");
		json_t *bk = json_array_get(bs, k);
		const char *line = strstr(html, "<line id=\"onset-weighted-line\"");
		assert_non_null(line);
		snprintf(want, sizeof want, "data-key=\"%s\"/>",
			 json_string_value(json_object_get(ow, "key")));
		assert_non_null(strstr(line, want));
		assert_true(strstr(line, want) < strchr(line, '>') + 1);
		assert_non_null(strstr(html, "id=\"legend-onset-weighted\""));
		href_of(html, "onset-weighted-diff", path, sizeof path);
		if (by_version)
			snprintf(
				want, sizeof want,
				"/aggregate/diff?method=main_loop&app=%s&a.version=%s&b.version=%s",
				json_string_value(json_object_get(doc, "app")),
				json_string_value(
					json_object_get(json_array_get(bs, k - 1), "key")),
				json_string_value(json_object_get(bk, "key")));
		else
			snprintf(want, sizeof want,
				 "/aggregate/diff?method=main_loop&app=%s&a.since=%lld&a.until=%lld"
				 "&b.since=%lld&b.until=%lld",
				 json_string_value(json_object_get(doc, "app")),
				 (long long)ival(json_array_get(bs, 0), "since"),
				 (long long)ival(json_array_get(bs, k - 1), "until"),
				 (long long)ival(bk, "since"),
				 (long long)ival(json_array_get(bs, nb - 1), "until"));
		assert_string_equal(path, want);
	} else {
		assert_null(strstr(html, "id=\"onset-weighted-line\""));
		assert_null(strstr(html, "id=\"legend-onset-weighted\""));
	}
	if (inexact[0]) {
		snprintf(want, sizeof want, "<span id=\"weighted-inexact\">%s</span>", inexact);
		assert_non_null(strstr(html, want));
		assert_false(
			json_is_true(json_object_get(json_object_get(doc, "weighted"), "exact")));
	} else {
		assert_null(strstr(html, "id=\"weighted-note\""));
	}
	free(html);
	json_decref(doc);
}

static void test_oracle_trend_page_marks_onset_and_links_the_sets(void **state)
{
	char cookie[160], path[1024], want[1024];
	char *html, *diff;

	(void)state;
	web_login(cookie, sizeof cookie);
	/* By version: the onset at 1.1, its diff 1.0 against 1.1. */
	snprintf(path, sizeof path, "/trend?method=main_loop&app=%s&by=version", APPS[STEP_APP]);
	html = page(cookie, path);
	assert_non_null(strstr(html, "<svg id=\"trend-chart\""));
	assert_non_null(strstr(html, "id=\"onset-line\""));
	assert_non_null(strstr(html, "<b id=\"onset-key\">1.1</b>"));
	assert_non_null(strstr(html, "<script src=\"/static/trend.js\""));
	/* The weighted onset beside it, as the JSON API gives it. */
	{
		json_t *doc =
			api("/api/v1/trend?method=main_loop&app=%s&by=version", APPS[STEP_APP]);
		json_t *ow = json_object_get(json_object_get(doc, "onset_weighted"), "self");
		if (json_is_object(ow))
			snprintf(want, sizeof want, "<b id=\"onset-weighted-key\">%s</b>",
				 json_string_value(json_object_get(ow, "key")));
		else
			snprintf(want, sizeof want,
				 "<p id=\"onset-weighted\">Weighted by each capture's selection"
				 " weight: no onset");
		assert_non_null(strstr(html, want));
		json_decref(doc);
	}
	href_of(html, "onset-diff", path, sizeof path);
	snprintf(want, sizeof want,
		 "/aggregate/diff?method=main_loop&app=%s&a.version=1.0&b.version=1.1",
		 APPS[STEP_APP]);
	assert_string_equal(path, want);
	diff = page(cookie, path); /* the diff page takes every parameter */
	free(diff);
	href_of(html, "onset-regressions", path, sizeof path);
	snprintf(want, sizeof want, "/regressions?app=%s&a=1.0&b=1.1", APPS[STEP_APP]);
	assert_string_equal(path, want);
	snprintf(want, sizeof want,
		 "class=\"bucket-agg\" href=\"/aggregate?method=main_loop&amp;app=%s&amp;"
		 "version=1.2\"",
		 APPS[STEP_APP]);
	assert_non_null(strstr(html, want));
	free(html);

	/* By day: the days before day 2 against day 2 on (unix s). */
	snprintf(path, sizeof path, "/trend?method=main_loop&app=%s", APPS[STEP_APP]);
	html = page(cookie, path);
	{
		char day2[16], key[64];
		day_key(2, day2);
		snprintf(key, sizeof key, "<b id=\"onset-key\">%s</b>", day2);
		assert_non_null(strstr(html, key));
	}
	href_of(html, "onset-diff", path, sizeof path);
	snprintf(want, sizeof want,
		 "/aggregate/diff?method=main_loop&app=%s&a.since=%d&a.until=%d&b.since=%d"
		 "&b.until=%d",
		 APPS[STEP_APP], DAY0 * 86400, (DAY0 + 2) * 86400, (DAY0 + 2) * 86400,
		 (DAY0 + NDAYS) * 86400);
	assert_string_equal(path, want);
	diff = page(cookie, path);
	free(diff);
	free(html);

	/* The weighted lines, onset and note against the API, both ways. */
	for (int a = 0; a < 2; a++)
		for (int by = 0; by < 2; by++) {
			snprintf(path, sizeof path, "method=main_loop&app=%s&by=%s",
				 APPS[a ? STEP_APP : 0], by ? "version" : "day");
			trend_page_weighted_matches_api(cookie, path);
		}

	/* No onset on a flat series: the page says so, and draws no marker. */
	snprintf(path, sizeof path, "/trend?method=main_loop&app=%s", APPS[0]);
	html = page(cookie, path);
	assert_non_null(strstr(html, "<p id=\"onset\">No onset"));
	assert_null(strstr(html, "id=\"onset-line\""));
	free(html);

	/* The method page links here; its script is served. */
	html = page(cookie, "/methods/main_loop");
	href_of(html, "method-trend", path, sizeof path);
	assert_string_equal(path, "/trend?method=main_loop");
	free(html);
	/* Each issue links to the trend of the method its anomaly is in,
	 * over its own traces. */
	snprintf(path, sizeof path, "/issues?app=%s", APPS[STEP_APP]);
	html = page(cookie, path);
	{
		const char *p = strstr(html, "class=\"issue-trend\" href=\"");
		size_t n = 0;
		assert_non_null(p);
		for (p += strlen("class=\"issue-trend\" href=\""); *p != '"' && n + 1 < sizeof path;
		     p++) {
			path[n++] = *p;
			if (!strncmp(p, "&amp;", 5))
				p += 4;
		}
		path[n] = '\0';
	}
	free(html);
	assert_non_null(strstr(path, "&issue="));
	html = page(cookie, path);
	assert_non_null(strstr(html, "<svg id=\"trend-chart\""));
	free(html);
	/* Each method of a regression links to its trend per version. */
	snprintf(path, sizeof path, "/regressions?app=%s&a=1.0&b=1.1", APPS[STEP_APP]);
	html = page(cookie, path);
	snprintf(want, sizeof want,
		 "class=\"regress-trend\" "
		 "href=\"/trend?by=version&amp;method=main_loop&amp;app=%s\"",
		 APPS[STEP_APP]);
	assert_non_null(strstr(html, want));
	free(html);
	html = page(cookie, "/static/trend.js");
	assert_non_null(strstr(html, "brush-diff"));
	free(html);
}

/* ---- the timeline's boxes --------------------------------------------------- */

/* One call as rvtrace exports it: depth (0: a root), start and end (ns on
 * the trace's clock), its method's name and its self time. */
struct tcall {
	int depth;
	int64_t s, e, self;
	const char *name;
};

/* rvtrace's calls of trace i into out[0..cap): its capture, rebuilt byte
 * for byte as it was uploaded, exported by the real build/bin/rvtrace as
 * speedscope JSON (evented: open and close events in ns).  *doc holds the
 * names (caller json_decref); *start: the profile's startValue, *end its
 * endValue.  The count. */
static size_t rvtrace_calls(int i, struct tcall *out, size_t cap, json_t **doc, int64_t *start,
			    int64_t *end)
{
	char path[] = "/tmp/rv-oracle-XXXXXX", cmd[256];
	json_t *frames, *prof, *ev;
	size_t n = 0, k, stack[MAXN + 1];
	int depth = 0, fd;
	capbuf cb;
	FILE *p;

	capture(&g_t[i], i, &cb);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, cb.b, cb.len), (ssize_t)cb.len);
	close(fd);
	free(cb.b);
	snprintf(cmd, sizeof cmd, "build/bin/rvtrace export --format speedscope %s", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	*doc = json_loadf(p, 0, NULL);
	assert_int_equal(pclose(p), 0);
	unlink(path);
	assert_non_null(*doc);
	frames = json_object_get(json_object_get(*doc, "shared"), "frames");
	prof = json_array_get(json_object_get(*doc, "profiles"), 0);
	assert_string_equal(sval(prof, "unit"), "nanoseconds");
	*start = ival(prof, "startValue");
	*end = ival(prof, "endValue");
	json_array_foreach(json_object_get(prof, "events"), k, ev)
	{
		if (!strcmp(sval(ev, "type"), "O")) {
			assert_true(n < cap && depth <= MAXN);
			out[n] = (struct tcall){
				depth, ival(ev, "at"), -1, 0,
				sval(json_array_get(frames, (size_t)ival(ev, "frame")), "name")};
			stack[depth++] = n++;
		} else {
			assert_true(depth > 0);
			out[stack[--depth]].e = ival(ev, "at");
		}
	}
	assert_int_equal(depth, 0);
	/* Self: the duration less the direct callees' (preorder: they follow
	 * until a call as shallow). */
	for (size_t a = 0; a < n; a++) {
		out[a].self = out[a].e - out[a].s;
		for (size_t b = a + 1; b < n && out[b].depth > out[a].depth; b++)
			if (out[b].depth == out[a].depth + 1)
				out[a].self -= out[b].e - out[b].s;
	}
	return n;
}

/* One box of the timeline's level of detail (WEB.md's timeline.json):
 * name NULL when a bar merges calls of several methods, self -1 when it
 * merges several calls. */
struct box {
	int depth;
	int64_t s, e, n, self;
	const char *name;
};

/* The boxes of calls c[0..nc) between from and to (the trace's clock)
 * drawn width pixels wide, by the documented rule, in exact integers: a
 * call (clipped to the range) at least a pixel wide is its own box; one
 * narrower joins its depth's open bar when it starts in a pixel column at
 * most one past the bar's last, else opens one; a call a pixel wide or
 * more closes its depth's bar. */
static size_t boxes_of(const struct tcall *c, size_t nc, int64_t from, int64_t to, int64_t width,
		       struct box *out)
{
	long open[MAXN + 1];
	int64_t col[MAXN + 1], span = to - from;
	size_t n = 0;

	for (int d = 0; d <= MAXN; d++)
		open[d] = -1;
	for (size_t k = 0; k < nc; k++) {
		int d = c[k].depth;
		int64_t s = c[k].s > from ? c[k].s : from, e = c[k].e < to ? c[k].e : to;
		int64_t c0 = (s - from) * width / span, c1 = (e - from) * width / span;
		if (c[k].s >= to || c[k].e < from || (c[k].e == from && c[k].s < from))
			continue;
		if ((e - s) * width >= span) {
			out[n++] = (struct box){d, s, e, 1, c[k].self, c[k].name};
			open[d] = -1;
			continue;
		}
		if (open[d] >= 0 && c0 <= col[d] + 1) {
			struct box *b = &out[open[d]];
			b->n++;
			b->e = e > b->e ? e : b->e;
			if (b->name && strcmp(b->name, c[k].name))
				b->name = NULL;
			b->self = -1;
			col[d] = c1 > col[d] ? c1 : col[d];
			continue;
		}
		open[d] = (long)n;
		col[d] = c1;
		out[n++] = (struct box){d, s, e, 1, c[k].self, c[k].name};
	}
	return n;
}

/* GET /traces/ID/timeline.json (from, to relative to the trace's start;
 * -1: absent) against the recount of rvtrace's calls. */
static void timeline_compare(const char *cookie, int i, int64_t from, int64_t to, int width)
{
	struct tcall calls[MAXN];
	struct box want[MAXN];
	char path[256], what[320];
	int64_t start, end, f, t;
	json_t *rv, *doc, *items, *names;
	size_t nc, nb;
	char *body;

	nc = rvtrace_calls(i, calls, MAXN, &rv, &start, &end);
	if (from >= 0)
		snprintf(path, sizeof path, "/traces/%s/timeline.json?from=%lld&to=%lld&width=%d",
			 g_t[i].id, (long long)from, (long long)to, width);
	else
		snprintf(path, sizeof path, "/traces/%s/timeline.json?width=%d", g_t[i].id, width);
	body = page(cookie, path);
	doc = json_loads(body, 0, NULL);
	free(body);
	assert_non_null(doc);
	snprintf(what, sizeof what, "timeline %s (trace %d)", path, i);
	/* The trace's span is rvtrace's, its start the first call's. */
	EXPECT_EQ(what, ival(doc, "end"), end - start);
	f = from >= 0 ? from : 0;
	t = from >= 0 ? to : end - start;
	nb = boxes_of(calls, nc, start + f, start + t, width, want);
	items = json_object_get(doc, "items");
	names = json_object_get(doc, "names");
	EXPECT_EQ(what, json_array_size(items), nb);
	for (size_t k = 0; k < nb; k++) {
		json_t *it = json_array_get(items, k);
		json_int_t m = json_integer_value(json_array_get(it, 3));
		char key[24], msg[360];
		snprintf(msg, sizeof msg, "%s box %zu", what, k);
		EXPECT_EQ(msg, json_integer_value(json_array_get(it, 0)), want[k].depth);
		EXPECT_EQ(msg, json_integer_value(json_array_get(it, 1)), want[k].s - start);
		EXPECT_EQ(msg, json_integer_value(json_array_get(it, 2)), want[k].e - start);
		EXPECT_EQ(msg, json_integer_value(json_array_get(it, 4)), want[k].n);
		EXPECT_EQ(msg, json_integer_value(json_array_get(it, 5)), want[k].self);
		if (!want[k].name) {
			EXPECT_EQ(msg, m, -1);
			continue;
		}
		snprintf(key, sizeof key, "%lld", (long long)m);
		if (m < 0 || strcmp(json_string_value(json_object_get(names, key)), want[k].name))
			fail_msg("%s: method %lld, want %s", msg, (long long)m, want[k].name);
	}
	json_decref(doc);
	json_decref(rv);
}

static void test_oracle_timeline_boxes(void **state)
{
	char cookie[160];
	int every = g_n / 40 > 0 ? g_n / 40 : 1, merged = 0;

	(void)state;
	web_login(cookie, sizeof cookie);
	for (int i = 0; i < g_n; i += every) {
		int64_t span = g_t[i].c[0].incl;
		/* Whole; few pixels (short calls merge); a zoom that cuts calls
		 * at both ends; the window ending at a call's entry. */
		timeline_compare(cookie, i, -1, -1, 1200);
		timeline_compare(cookie, i, -1, -1, 7);
		timeline_compare(cookie, i, span / 3 + 1, span / 2 + 7, 97);
		timeline_compare(cookie, i, 0, g_t[i].c[g_t[i].n - 1].entry - g_t[i].c[0].entry + 1,
				 13);
		merged += g_t[i].n > 3;
	}
	assert_true(merged > 0);
}

/* ---- jank per app (POST /v1/jank, GET /api/v1/fleet/jank) ------------------- */

#define JANK_APPS (NAPPS + 1) /* the fleet's apps and one never traced */

static const char *jank_app(int a)
{
	return a < NAPPS ? APPS[a] : "com.oracle.untraced";
}

struct jank_sum {
	int64_t frames, late, devices;
	int traces;
	int64_t vframes[NVERS], vlate[NVERS]; /* per version of VERS */
};

/* Rate order: highest late / frames first, then the app id (bytes). */
static const struct jank_sum *g_js;
static int jank_cmp(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	double ra = (double)g_js[a].late / (double)g_js[a].frames,
	       rb = (double)g_js[b].late / (double)g_js[b].frames;

	if (ra != rb)
		return ra > rb ? -1 : 1;
	return strcmp(jank_app(a), jank_app(b));
}

/* Posts device slot d's counts c[0..n) through the device API. */
static void jank_post(int d, Rearview__JankCount *c, size_t n)
{
	Rearview__JankReport r = REARVIEW__JANK_REPORT__INIT;
	Rearview__JankCount *pc[2 * JANK_APPS * NVERS];
	Rearview__JankAck *ack;
	uint8_t buf[8192];
	struct body b;
	size_t len;

	assert_true(n <= sizeof pc / sizeof *pc);
	for (size_t i = 0; i < n; i++)
		pc[i] = &c[i];
	r.counts = pc;
	r.n_counts = n;
	len = rearview__jank_report__get_packed_size(&r);
	assert_true(len <= sizeof buf);
	rearview__jank_report__pack(&r, buf);
	assert_int_equal(request("POST", "/v1/jank", g_tok[d], buf, len, &b), 200);
	ack = rearview__jank_ack__unpack(NULL, b.n, (const uint8_t *)b.p);
	assert_non_null(ack);
	assert_int_equal(ack->stored, n);
	rearview__jank_ack__free_unpacked(ack, NULL);
	free(b.p);
}

/* Every device reports random frame counts per app, version and day
 * (today and yesterday), one never-traced app among them; each device
 * first sends smaller totals of the same days, then the final ones, and
 * one repeats its final report: the server must keep the last totals of
 * each device-day.  The fleet's jank per app is recounted here — frames,
 * late, jank rate (the same double division), devices, the app's uploads
 * (all received within the two days), traced, and per version frames and
 * late — and compared exactly, in the rate order. */
static void test_oracle_jank_rates_per_app(void **state)
{
	Rearview__JankCount c[2 * JANK_APPS * NVERS];
	struct jank_sum sum[JANK_APPS];
	int64_t today = (int64_t)time(NULL) / 86400;
	int order[JANK_APPS];
	json_t *doc, *apps, *row;
	size_t i;

	(void)state;
	memset(sum, 0, sizeof sum);
	for (int k = 0; k < g_n; k++)
		sum[g_t[k].app].traces++;
	for (int d = 0; d < NDEVICES; d++) {
		size_t n = 0;
		int reported[JANK_APPS] = {0};

		for (int a = 0; a < JANK_APPS; a++) {
			for (int v = 0; v < NVERS; v++) {
				for (int day = 0; day < 2; day++) {
					uint32_t frames;

					if (rnd(3) == 0)
						continue; /* not every app, version and day */
					frames = 1 + rnd(20000);
					rearview__jank_count__init(&c[n]);
					c[n].app_id = (char *)jank_app(a);
					c[n].app_version = (char *)VERS[v];
					c[n].day = (uint32_t)(today - day);
					/* An earlier, smaller total first. */
					c[n].frames = frames / 2;
					c[n].late = rnd(frames / 2 + 1);
					n++;
				}
			}
		}
		if (!n)
			continue;
		jank_post(d, c, n);
		for (size_t k = 0; k < n; k++) {
			int a = 0, v = 0;

			while (strcmp(jank_app(a), c[k].app_id))
				a++;
			while (strcmp(VERS[v], c[k].app_version))
				v++;
			c[k].frames = c[k].frames * 2 + 1;
			c[k].late = c[k].late + rnd((uint32_t)(c[k].frames - c[k].late) + 1);
			sum[a].frames += (int64_t)c[k].frames;
			sum[a].late += (int64_t)c[k].late;
			sum[a].vframes[v] += (int64_t)c[k].frames;
			sum[a].vlate[v] += (int64_t)c[k].late;
			reported[a] = 1;
		}
		jank_post(d, c, n);
		if (d == 0)
			jank_post(d, c, n); /* a retry of the same report */
		for (int a = 0; a < JANK_APPS; a++)
			sum[a].devices += reported[a];
	}
	for (int a = 0; a < JANK_APPS; a++) {
		assert_true(sum[a].frames > 0); /* the seed gives every app counts */
		order[a] = a;
	}
	g_js = sum;
	qsort(order, JANK_APPS, sizeof *order, jank_cmp);

	doc = api("/api/v1/fleet/jank?days=2");
	apps = json_object_get(doc, "apps");
	assert_int_equal(json_array_size(apps), JANK_APPS);
	json_array_foreach(apps, i, row)
	{
		const struct jank_sum *x = &sum[order[i]];

		assert_string_equal(json_string_value(json_object_get(row, "app_id")),
				    jank_app(order[i]));
		assert_int_equal(json_integer_value(json_object_get(row, "frames")), x->frames);
		assert_int_equal(json_integer_value(json_object_get(row, "late")), x->late);
		assert_true(json_real_value(json_object_get(row, "jank_rate")) ==
			    (double)x->late / (double)x->frames);
		assert_int_equal(json_integer_value(json_object_get(row, "devices")), x->devices);
		assert_int_equal(json_integer_value(json_object_get(row, "traces")), x->traces);
		assert_true(json_is_boolean(json_object_get(row, "traced")));
		assert_int_equal(json_is_true(json_object_get(row, "traced")), x->traces > 0);
		assert_int_equal(x->traces > 0, order[i] < NAPPS);
		/* Its versions: each one counted, most frames first. */
		{
			json_t *vs = json_object_get(row, "versions"), *vr;
			size_t k, want = 0;
			int64_t prev = INT64_MAX;

			for (int v = 0; v < NVERS; v++)
				want += x->vframes[v] > 0;
			assert_int_equal(json_array_size(vs), want);
			json_array_foreach(vs, k, vr)
			{
				const char *ver = json_string_value(json_object_get(vr, "version"));
				int64_t f = json_integer_value(json_object_get(vr, "frames"));
				int v = 0;

				while (v < NVERS && strcmp(VERS[v], ver))
					v++;
				assert_true(v < NVERS);
				assert_int_equal(f, x->vframes[v]);
				assert_int_equal(json_integer_value(json_object_get(vr, "late")),
						 x->vlate[v]);
				assert_true(f <= prev);
				prev = f;
			}
		}
	}
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oracle_every_trace_decoded_and_listed),
		cmocka_unit_test(test_oracle_worst_trace_orders),
		cmocka_unit_test(test_oracle_aggregate_unfiltered_per_app_and_by_method),
		cmocka_unit_test(test_oracle_weighted_aggregate),
		cmocka_unit_test(test_oracle_diff_between_versions),
		cmocka_unit_test(test_oracle_issues_per_app_and_chain),
		cmocka_unit_test(test_oracle_method_page_per_version_and_model),
		cmocka_unit_test(test_oracle_chain_search_every_caller),
		cmocka_unit_test(test_oracle_fleet_callers_and_callees),
		cmocka_unit_test(test_oracle_regressions_medians_and_counts),
		cmocka_unit_test(test_oracle_signature_and_audit_totals),
		cmocka_unit_test(test_oracle_trend_buckets_and_planted_onset),
		cmocka_unit_test(test_oracle_trend_page_marks_onset_and_links_the_sets),
		cmocka_unit_test(test_oracle_timeline_boxes),
		cmocka_unit_test(test_oracle_jank_rates_per_app),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
