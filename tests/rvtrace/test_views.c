/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_views.c — the practitioner views (views.c) and the filters
 * (filter.c) on a model with exact durations: every report sort key, the
 * per-thread report, the focus graph and its backtraces, replay's time
 * order across threads, and each filter alone and combined, checked
 * line by line against figures worked out by hand from the calls below.
 *
 * The model (ns; thread 0 is tid 43, thread 1 tid 44):
 *   tid 43  main 0–10000
 *             a 100–6100
 *               b 200–3200: c 300–1300, c 1400–2400
 *               c 3300–5300
 *             a 6200–9200
 *               b 6300–8300: c 6400–7400, c 7500–8000
 *   tid 44  worker 500–2500: c 600–900
 * So: main total 10000 self 1000; a total 9000 self 2000 (1000 + 1000),
 * calls 2, min 3000 max 6000; b total 5000 self 1500 (1000 + 500); c total
 * 5800 = self, 6 calls, min 300 max 2000; worker total 2000 self 1700.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/analysis.h"

static void enter(rva_trace *t, size_t th, const char *name, int64_t ts)
{
	int64_t m = rva_method_intern(t, name, strlen(name));
	assert_true(m >= 0);
	assert_int_equal(rva_enter(t, th, (uint32_t)m, ts), 0);
}

static void leave(rva_trace *t, size_t th, int64_t ts)
{
	assert_int_equal(rva_exit(t, th, RVA_ANY_METHOD, ts), 0);
}

static rva_trace *model(void)
{
	rva_trace *t = rva_trace_new();
	assert_non_null(t);
	assert_int_equal(rva_thread_add(t, 42, 43, "main"), 0);
	assert_int_equal(rva_thread_add(t, 42, 44, "worker"), 1);
	enter(t, 0, "main", 0);
	enter(t, 0, "a", 100);
	enter(t, 0, "b", 200);
	enter(t, 0, "c", 300);
	leave(t, 0, 1300);
	enter(t, 0, "c", 1400);
	leave(t, 0, 2400);
	leave(t, 0, 3200);
	enter(t, 0, "c", 3300);
	leave(t, 0, 5300);
	leave(t, 0, 6100);
	enter(t, 0, "a", 6200);
	enter(t, 0, "b", 6300);
	enter(t, 0, "c", 6400);
	leave(t, 0, 7400);
	enter(t, 0, "c", 7500);
	leave(t, 0, 8000);
	leave(t, 0, 8300);
	leave(t, 0, 9200);
	leave(t, 0, 10000);
	enter(t, 1, "worker", 500);
	enter(t, 1, "c", 600);
	leave(t, 1, 900);
	leave(t, 1, 2500);
	rva_trace_finish(t, INT64_MIN);
	return t;
}

/* A memory stream the views print into. */
typedef struct out {
	FILE *f;
	char *buf;
	size_t len;
} out;

static void out_open(out *o)
{
	o->buf = NULL;
	o->len = 0;
	o->f = open_memstream(&o->buf, &o->len);
	assert_non_null(o->f);
}

/* Closes the stream and compares it with `want`, showing both on a
 * mismatch. */
static void out_check(out *o, const char *want)
{
	assert_int_equal(fclose(o->f), 0);
	if (strcmp(o->buf, want) != 0)
		fail_msg("got:\n%s\nwant:\n%s", o->buf, want);
	free(o->buf);
}

#define HDR                                                                                    \
	"  Total time   Self time       Calls   Avg total   Min total   Max total  Function\n" \
	"  ==========  ==========  ==========  ==========  ==========  ==========  "           \
	"====================\n"
#define R_MAIN "   10.000 us    1.000 us           1   10.000 us   10.000 us   10.000 us  main\n"
#define R_A    "    9.000 us    2.000 us           2    4.500 us    3.000 us    6.000 us  a\n"
#define R_B    "    5.000 us    1.500 us           2    2.500 us    2.000 us    3.000 us  b\n"
#define R_C    "    5.800 us    5.800 us           6    0.967 us    0.300 us    2.000 us  c\n"
#define R_WORKER \
	"    2.000 us    1.700 us           1    2.000 us    2.000 us    2.000 us  worker\n"

static void report(const rva_trace *t, size_t th, const int *keys, size_t n, int by_self,
		   size_t top, const char *want)
{
	out o;
	out_open(&o);
	assert_int_equal(rva_report_print(o.f, t, th, keys, n, by_self, top), 0);
	out_check(&o, want);
}

static void test_views_report_every_sort_key_orders_as_worked_out(void **state)
{
	rva_trace *t = model();
	int k;
	k = RVA_SORT_TOTAL;
	report(t, SIZE_MAX, &k, 1, 0, 0, HDR R_MAIN R_A R_C R_B R_WORKER);
	k = RVA_SORT_SELF;
	report(t, SIZE_MAX, &k, 1, 0, 0, HDR R_C R_A R_WORKER R_B R_MAIN);
	/* Ties (a and b: 2 calls; main and worker: 1) end by name. */
	k = RVA_SORT_CALLS;
	report(t, SIZE_MAX, &k, 1, 0, 0, HDR R_C R_A R_B R_MAIN R_WORKER);
	k = RVA_SORT_AVG;
	report(t, SIZE_MAX, &k, 1, 0, 0, HDR R_MAIN R_A R_B R_WORKER R_C);
	k = RVA_SORT_MIN;
	report(t, SIZE_MAX, &k, 1, 0, 0, HDR R_MAIN R_A R_B R_WORKER R_C);
	/* max: worker and c both 2000 ns: c first by name. */
	k = RVA_SORT_MAX;
	report(t, SIZE_MAX, &k, 1, 0, 0, HDR R_MAIN R_A R_B R_C R_WORKER);
	k = RVA_SORT_NAME;
	report(t, SIZE_MAX, &k, 1, 0, 0, HDR R_A R_B R_C R_MAIN R_WORKER);
	/* Two keys: calls, then self breaks the a/b and main/worker ties. */
	int two[] = {RVA_SORT_CALLS, RVA_SORT_SELF};
	report(t, SIZE_MAX, two, 2, 0, 0, HDR R_C R_A R_B R_WORKER R_MAIN);
	/* top */
	k = RVA_SORT_TOTAL;
	report(t, SIZE_MAX, &k, 1, 0, 2, HDR R_MAIN R_A);
	rva_trace_free(t);
}

static void test_views_report_avg_self_uses_self_per_call(void **state)
{
	rva_trace *t = model();
	/* Self per call: main 1000; a 1000, 1000; b 1000, 500; c = its
	 * durations 300..2000 (avg 5800 / 6); worker 1700. */
	const char *hdr =
		"  Total time   Self time       Calls    Avg self    Min self    Max self  "
		"Function\n"
		"  ==========  ==========  ==========  ==========  ==========  ==========  "
		"====================\n";
	const char *w = "    2.000 us    1.700 us           1    1.700 us    1.700 us    1.700 us  "
			"worker\n";
	const char *a =
		"    9.000 us    2.000 us           2    1.000 us    1.000 us    1.000 us  a\n";
	const char *m =
		"   10.000 us    1.000 us           1    1.000 us    1.000 us    1.000 us  main\n";
	const char *c =
		"    5.800 us    5.800 us           6    0.967 us    0.300 us    2.000 us  c\n";
	const char *b =
		"    5.000 us    1.500 us           2    0.750 us    0.500 us    1.000 us  b\n";
	char want[2048];
	int k = RVA_SORT_AVG;
	snprintf(want, sizeof(want), "%s%s%s%s%s%s", hdr, w, a, m, c, b);
	report(t, SIZE_MAX, &k, 1, 1, 0, want);
	k = RVA_SORT_MIN; /* worker 1700, a 1000, main 1000, b 500, c 300 */
	snprintf(want, sizeof(want), "%s%s%s%s%s%s", hdr, w, a, m, b, c);
	report(t, SIZE_MAX, &k, 1, 1, 0, want);
	k = RVA_SORT_MAX; /* c 2000, worker 1700, a, b, main 1000 */
	snprintf(want, sizeof(want), "%s%s%s%s%s%s", hdr, c, w, a, b, m);
	report(t, SIZE_MAX, &k, 1, 1, 0, want);
	rva_trace_free(t);
}

/* A muted function the trace names with a caller and a share (MUTED_CALLERS):
 * `x`, muted before the trace began, took half of a's self time (2 us):
 * both show 1 us marked "~", x with no calls and no per-call figures. */
static void test_views_report_muted_estimate_marked(void **state)
{
	rva_trace *t = model();
	int64_t x = rva_method_intern(t, "x", 1), a = rva_method_find(t, "a");
	assert_true(x >= 0 && a >= 0);
	t->muted = calloc(1, sizeof(*t->muted));
	assert_non_null(t->muted);
	t->nmuted = 1;
	t->muted[0] = (rva_muted){.method = (uint32_t)x,
				  .ns = -1,
				  .ncallers = 1,
				  .caller = {(uint32_t)a},
				  .share_ppm = {500000}};
	int k = RVA_SORT_SELF; /* c, worker, b; then a, main and x at 1 us, by name */
	char want[2048];
	snprintf(want, sizeof(want), "%s%s%s%s%s%s%s%s", HDR, R_C, R_WORKER, R_B,
		 "    9.000 us  ~ 1.000 us           2    4.500 us    3.000 us    6.000 us  a\n",
		 R_MAIN,
		 "    0.000 us  ~ 1.000 us           0           -           -           -  x\n",
		 "  ~ estimated: a muted function's share of its callers' self time, as the "
		 "tracer measured it at the mute and in its rechecks since (a phase it did not "
		 "sample may differ)\n");
	report(t, SIZE_MAX, &k, 1, 0, 0, want);
	rva_trace_free(t);
}

/* An estimate whose figure fills the column (150 us) is marked too. */
static void test_views_report_wide_estimate_marked(void **state)
{
	rva_trace *t = rva_trace_new();
	assert_non_null(t);
	assert_int_equal(rva_thread_add(t, 1, 1, NULL), 0);
	enter(t, 0, "p", 0);
	leave(t, 0, 300000);
	rva_trace_finish(t, INT64_MIN);
	int64_t q = rva_method_intern(t, "q", 1), p = rva_method_find(t, "p");
	assert_true(q >= 0 && p >= 0);
	t->muted = calloc(1, sizeof(*t->muted));
	assert_non_null(t->muted);
	t->nmuted = 1;
	t->muted[0] = (rva_muted){.method = (uint32_t)q,
				  .ns = -1,
				  .ncallers = 1,
				  .caller = {(uint32_t)p},
				  .share_ppm = {500000}};
	out o;
	out_open(&o);
	int k = RVA_SORT_SELF;
	assert_int_equal(rva_report_print(o.f, t, SIZE_MAX, &k, 1, 0, 0), 0);
	assert_int_equal(fclose(o.f), 0);
	assert_non_null(strstr(o.buf, "~150.000 us           1"));
	assert_non_null(strstr(o.buf, "~150.000 us           0"));
	free(o.buf);
	rva_trace_free(t);
}

static void test_views_report_per_thread_counts_each_thread_alone(void **state)
{
	rva_trace *t = model();
	int k = RVA_SORT_TOTAL;
	report(t, 0, &k, 1, 0, 0,
	       HDR R_MAIN R_A
	       "    5.500 us    5.500 us           5    1.100 us    0.500 us    2.000 us  c\n" R_B);
	report(t, 1, &k, 1, 0, 0,
	       HDR R_WORKER
	       "    0.300 us    0.300 us           1    0.300 us    0.300 us    0.300 us  c\n");
	rva_trace_free(t);
}

static void test_views_report_recursion_total_once_avg_every_call(void **state)
{
	/* r 0–1000 holding r 100–600: total 1000 (once), avg (1000 + 500) / 2. */
	rva_trace *t = rva_trace_new();
	assert_int_equal(rva_thread_add(t, 1, 1, NULL), 0);
	enter(t, 0, "r", 0);
	enter(t, 0, "r", 100);
	leave(t, 0, 600);
	leave(t, 0, 1000);
	rva_trace_finish(t, INT64_MIN);
	int k = RVA_SORT_TOTAL;
	report(t, SIZE_MAX, &k, 1, 0, 0,
	       HDR "    1.000 us    1.000 us           2    0.750 us    0.500 us    1.000 us  r\n");
	rva_trace_free(t);
}

static void replay(const rva_trace *t, unsigned fields, const char *want)
{
	out o;
	out_open(&o);
	assert_int_equal(rva_replay_print(o.f, t, fields), 0);
	out_check(&o, want);
}

static void test_views_replay_merges_threads_by_time(void **state)
{
	rva_trace *t = model();
	replay(t, RVA_REPLAY_DURATION | RVA_REPLAY_TID,
	       "#  DURATION     TID    FUNCTION\n"
	       "            [    43] | main() {\n"
	       "            [    43] |   a() {\n"
	       "            [    43] |     b() {\n"
	       "   1.000 us [    43] |       c();\n"
	       "            [    44] | worker() {\n"
	       "   0.300 us [    44] |   c();\n"
	       "   1.000 us [    43] |       c();\n"
	       "   2.000 us [    44] | } /* worker */\n"
	       "   3.000 us [    43] |     } /* b */\n"
	       "   2.000 us [    43] |     c();\n"
	       "   6.000 us [    43] |   } /* a */\n"
	       "            [    43] |   a() {\n"
	       "            [    43] |     b() {\n"
	       "   1.000 us [    43] |       c();\n"
	       "   0.500 us [    43] |       c();\n"
	       "   2.000 us [    43] |     } /* b */\n"
	       "   3.000 us [    43] |   } /* a */\n"
	       "  10.000 us [    43] | } /* main */\n");
	/* The worker's exit at 2500 comes after c 1400–2400 began (at 1400)
	 * and before b ends (3200): lines are ordered by when they happen. */
	/* An equal time goes to the lower thread index first. */
	rva_trace_free(t);
}

static void test_views_replay_fields_and_anomaly_line(void **state)
{
	rva_trace *t = model();
	t->has_anomaly = 1;
	t->anomaly_ns = 8100;
	t->anomaly_name = strdup("frame drop");
	rva_filter *f = rva_filter_new();
	assert_int_equal(rva_filter_tid(f, 43), 0);
	rva_filter_depth(f, 2);
	assert_int_equal(rva_trace_filter(t, f), 0);
	rva_filter_free(f);
	replay(t, RVA_REPLAY_ELAPSED | RVA_REPLAY_DURATION,
	       "#   ELAPSED   DURATION   FUNCTION\n"
	       "   0.000 us            | main() {\n"
	       "   0.100 us   6.000 us |   a();\n"
	       "   6.200 us   3.000 us |   a();\n"
	       "   8.100 us            | /* anomaly: frame drop */\n"
	       "  10.000 us  10.000 us | } /* main */\n");
	replay(t, 0,
	       "#  FUNCTION\n | main() {\n |   a();\n |   a();\n | /* anomaly: frame drop */\n"
	       " | } /* main */\n");
	rva_trace_free(t);
}

/* The calls of thread th as "depth:name:start-end" lines. */
static void calls(const rva_trace *t, size_t th, const char *want)
{
	out o;
	out_open(&o);
	for (size_t i = 0; i < t->threads[th].ncalls; i++) {
		const rva_call *c = &t->threads[th].calls[i];
		fprintf(o.f, "%u:%s:%lld-%lld\n", c->depth, t->names[c->method],
			(long long)c->start, (long long)c->end);
	}
	out_check(&o, want);
}

/* A filter with one pattern of kind (or none: NULL). */
static rva_trace *filtered(int kind, const char *pat, uint64_t depth, int64_t min)
{
	rva_trace *t = model();
	rva_filter *f = rva_filter_new();
	rva_error err = {{0}};
	assert_non_null(f);
	if (pat)
		assert_int_equal(rva_filter_add(f, kind, pat, &err), 0);
	rva_filter_depth(f, depth);
	rva_filter_min_duration(f, min);
	assert_int_equal(rva_trace_filter(t, f), 0);
	rva_filter_free(f);
	return t;
}

static void test_views_filter_include_reroots_at_the_outermost_match(void **state)
{
	rva_trace *t = filtered(RVA_FILTER_INCLUDE, "b", 0, -1);
	calls(t, 0,
	      "0:b:200-3200\n1:c:300-1300\n1:c:1400-2400\n0:b:6300-8300\n1:c:6400-7400\n"
	      "1:c:7500-8000\n");
	calls(t, 1, "");
	assert_int_equal(t->start, 200);
	assert_int_equal(t->end, 8300);
	/* Everything else in the report is b's subtree. */
	int k = RVA_SORT_TOTAL;
	report(t, SIZE_MAX, &k, 1, 0, 0,
	       HDR R_B
	       "    3.500 us    3.500 us           4    0.875 us    0.500 us    1.000 us  c\n");
	rva_trace_free(t);
	/* A regex: ^(b|worker)$ selects b and worker, not main's a. */
	t = filtered(RVA_FILTER_INCLUDE, "^(b|worker)$", 0, -1);
	calls(t, 1, "0:worker:500-2500\n1:c:600-900\n");
	assert_int_equal(t->threads[0].ncalls, 6);
	rva_trace_free(t);
}

static void test_views_filter_exclude_drops_the_subtree_into_self(void **state)
{
	rva_trace *t = filtered(RVA_FILTER_EXCLUDE, "b", 0, -1);
	calls(t, 0, "0:main:0-10000\n1:a:100-6100\n2:c:3300-5300\n1:a:6200-9200\n");
	calls(t, 1, "0:worker:500-2500\n1:c:600-900\n");
	/* b's time is a's self time now: a self = 6000 - 2000 + 3000. */
	int k = RVA_SORT_SELF;
	report(t, SIZE_MAX, &k, 1, 0, 0,
	       HDR "    9.000 us    7.000 us           2    4.500 us    3.000 us    6.000 us  a\n"
		   "    2.300 us    2.300 us           2    1.150 us    0.300 us    2.000 us  "
		   "c\n" R_WORKER R_MAIN);
	rva_trace_free(t);
}

static void test_views_filter_hide_keeps_the_callees(void **state)
{
	rva_trace *t = filtered(RVA_FILTER_HIDE, "a", 0, -1);
	calls(t, 0,
	      "0:main:0-10000\n1:b:200-3200\n2:c:300-1300\n2:c:1400-2400\n1:c:3300-5300\n"
	      "1:b:6300-8300\n2:c:6400-7400\n2:c:7500-8000\n");
	rva_trace_free(t);
}

static void test_views_filter_depth_and_time(void **state)
{
	rva_trace *t = filtered(0, NULL, 2, -1);
	calls(t, 0, "0:main:0-10000\n1:a:100-6100\n1:a:6200-9200\n");
	calls(t, 1, "0:worker:500-2500\n1:c:600-900\n");
	rva_trace_free(t);
	/* At least 1000 ns: c 7500–8000 and c 600–900 go. */
	t = filtered(0, NULL, 0, 1000);
	calls(t, 0,
	      "0:main:0-10000\n1:a:100-6100\n2:b:200-3200\n3:c:300-1300\n3:c:1400-2400\n"
	      "2:c:3300-5300\n1:a:6200-9200\n2:b:6300-8300\n3:c:6400-7400\n");
	calls(t, 1, "0:worker:500-2500\n");
	rva_trace_free(t);
	/* A depth as large as any: nothing goes. */
	t = filtered(0, NULL, UINT64_MAX, 0);
	assert_int_equal(t->threads[0].ncalls, 10);
	assert_int_equal(t->threads[1].ncalls, 2);
	rva_trace_free(t);
}

static void test_views_filter_combined_and_depth_counts_from_the_new_root(void **state)
{
	/* -F a -N c -D 2: a re-rooted, b below it, c gone everywhere. */
	rva_trace *t = model();
	rva_filter *f = rva_filter_new();
	rva_error err = {{0}};
	assert_int_equal(rva_filter_add(f, RVA_FILTER_INCLUDE, "a", &err), 0);
	assert_int_equal(rva_filter_add(f, RVA_FILTER_EXCLUDE, "c", &err), 0);
	rva_filter_depth(f, 2);
	assert_int_equal(rva_trace_filter(t, f), 0);
	calls(t, 0, "0:a:100-6100\n1:b:200-3200\n0:a:6200-9200\n1:b:6300-8300\n");
	calls(t, 1, "");
	rva_filter_free(f);
	rva_trace_free(t);
	/* --tid 44 keeps that thread only. */
	t = model();
	f = rva_filter_new();
	assert_int_equal(rva_filter_tid(f, 44), 0);
	assert_int_equal(rva_trace_filter(t, f), 0);
	assert_int_equal(t->nthreads, 1);
	assert_int_equal(t->threads[0].tid, 44);
	calls(t, 0, "0:worker:500-2500\n1:c:600-900\n");
	rva_filter_free(f);
	rva_trace_free(t);
}

static void test_views_filter_bad_regex_is_refused_with_the_reason(void **state)
{
	rva_filter *f = rva_filter_new();
	rva_error err = {{0}};
	assert_int_equal(rva_filter_add(f, RVA_FILTER_INCLUDE, "a(b", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bad pattern 'a(b'"));
	assert_int_equal(rva_filter_add(f, RVA_FILTER_EXCLUDE, "", &err), -EINVAL);
	assert_int_equal(rva_filter_add(f, 7, "x", &err), -EINVAL);
	assert_false(rva_filter_active(f));
	/* A name with regex characters is still selected by its exact text. */
	assert_int_equal(rva_filter_add(f, RVA_FILTER_INCLUDE, "ns::C::m(int)", &err), 0);
	assert_true(rva_filter_matches(f, RVA_FILTER_INCLUDE, "ns::C::m(int)"));
	assert_false(rva_filter_matches(f, RVA_FILTER_INCLUDE, "ns::C::m"));
	rva_trace *t = model();
	size_t it = 0;
	const char *unused = rva_filter_unused(f, t, &it);
	assert_non_null(unused);
	assert_string_equal(unused, "ns::C::m(int)");
	assert_null(rva_filter_unused(f, t, &it));
	rva_trace_free(t);
	rva_filter_free(f);
}

static void graph(const rva_trace *t, const char *name, size_t maxdepth, const char *want)
{
	rva_focus fc;
	uint32_t m = name ? (uint32_t)rva_method_find(t, name) : UINT32_MAX;
	assert_int_equal(rva_focus_build(t, m, maxdepth, &fc), 0);
	out o;
	out_open(&o);
	assert_int_equal(rva_focus_print(o.f, t, &fc), 0);
	out_check(&o, want);
	rva_focus_release(&fc);
}

static void test_views_graph_of_a_merges_its_calls_with_backtraces(void **state)
{
	rva_trace *t = model();
	graph(t, "a", SIZE_MAX,
	      "# Function Call Graph for 'a'\n"
	      "=============== BACKTRACE ===============\n"
	      " backtrace #0: hit 2, time   9.000 us\n"
	      "   [0] main\n"
	      "   [1] a\n"
	      "\n"
	      "========== FUNCTION CALL GRAPH ==========\n"
	      "# TOTAL TIME   FUNCTION\n"
	      "    9.000 us : (2) a\n"
	      "    5.000 us :  +-(2) b\n"
	      "    3.500 us :  | (4) c\n"
	      "             :  |\n"
	      "    2.000 us :  +-(1) c\n");
	/* c is reached by three paths: most time first. */
	graph(t, "c", SIZE_MAX,
	      "# Function Call Graph for 'c'\n"
	      "=============== BACKTRACE ===============\n"
	      " backtrace #0: hit 4, time   3.500 us\n"
	      "   [0] main\n"
	      "   [1] a\n"
	      "   [2] b\n"
	      "   [3] c\n"
	      " backtrace #1: hit 1, time   2.000 us\n"
	      "   [0] main\n"
	      "   [1] a\n"
	      "   [2] c\n"
	      " backtrace #2: hit 1, time   0.300 us\n"
	      "   [0] worker\n"
	      "   [1] c\n"
	      "\n"
	      "========== FUNCTION CALL GRAPH ==========\n"
	      "# TOTAL TIME   FUNCTION\n"
	      "    5.800 us : (6) c\n");
	rva_trace_free(t);
}

static void test_views_graph_whole_and_depth_cut(void **state)
{
	rva_trace *t = model();
	graph(t, NULL, SIZE_MAX,
	      "# Function Call Graph\n"
	      "========== FUNCTION CALL GRAPH ==========\n"
	      "# TOTAL TIME   FUNCTION\n"
	      "   10.000 us : (1) main\n"
	      "    9.000 us : (2) a\n"
	      "    5.000 us :  +-(2) b\n"
	      "    3.500 us :  | (4) c\n"
	      "             :  |\n"
	      "    2.000 us :  +-(1) c\n"
	      "    2.000 us : (1) worker\n"
	      "    0.300 us : (1) c\n");
	/* One level below main: its callees only. */
	graph(t, "main", 1,
	      "# Function Call Graph for 'main'\n"
	      "=============== BACKTRACE ===============\n"
	      " backtrace #0: hit 1, time  10.000 us\n"
	      "   [0] main\n"
	      "\n"
	      "========== FUNCTION CALL GRAPH ==========\n"
	      "# calls more than 1 levels below it left out\n"
	      "# TOTAL TIME   FUNCTION\n"
	      "   10.000 us : (1) main\n"
	      "    9.000 us : (2) a\n");
	rva_trace_free(t);
}

static void test_views_graph_recursion_is_part_of_the_outermost_call(void **state)
{
	/* r 0–1000 { r 100–600 { x 200–300 } }: one hit, r inside r below it. */
	rva_trace *t = rva_trace_new();
	assert_int_equal(rva_thread_add(t, 1, 1, NULL), 0);
	enter(t, 0, "r", 0);
	enter(t, 0, "r", 100);
	enter(t, 0, "x", 200);
	leave(t, 0, 300);
	leave(t, 0, 600);
	leave(t, 0, 1000);
	rva_trace_finish(t, INT64_MIN);
	graph(t, "r", SIZE_MAX,
	      "# Function Call Graph for 'r'\n"
	      "=============== BACKTRACE ===============\n"
	      " backtrace #0: hit 1, time   1.000 us\n"
	      "   [0] r\n"
	      "\n"
	      "========== FUNCTION CALL GRAPH ==========\n"
	      "# TOTAL TIME   FUNCTION\n"
	      "    1.000 us : (1) r\n"
	      "    0.500 us : (1) r\n"
	      "    0.100 us : (1) x\n");
	rva_trace_free(t);
}

static void test_views_deep_trace_lines_stay_bounded(void **state)
{
	/* 3000 nested calls: replay's indentation stops at 256 levels and
	 * says the depth; the graph of the root stops at its cap. */
	rva_trace *t = rva_trace_new();
	assert_int_equal(rva_thread_add(t, 1, 1, NULL), 0);
	for (int i = 0; i < 3000; i++)
		enter(t, 0, "d", i);
	for (int i = 0; i < 3000; i++)
		leave(t, 0, 3000 + i);
	rva_trace_finish(t, INT64_MIN);
	out o;
	out_open(&o);
	assert_int_equal(rva_replay_print(o.f, t, RVA_REPLAY_DURATION), 0);
	assert_int_equal(fclose(o.f), 0);
	size_t longest = 0, lines = 0;
	for (char *p = o.buf, *nl; (nl = strchr(p, '\n')); p = nl + 1, lines++)
		longest = (size_t)(nl - p) > longest ? (size_t)(nl - p) : longest;
	assert_int_equal(lines, 1 + 2 * 3000 - 1); /* the innermost is one line */
	assert_true(longest < 12 + 3 + 2 * 256 + 16);
	assert_non_null(strstr(o.buf, "[2999] d();"));
	free(o.buf);
	rva_focus fc;
	assert_int_equal(rva_focus_build(t, 0, RVA_EXPORT_MAX_DEPTH, &fc), 0);
	/* d inside d is part of d's graph: a chain, cut 512 levels below. */
	assert_int_equal(fc.graph.n, 2 + RVA_EXPORT_MAX_DEPTH);
	assert_true(fc.cut);
	rva_focus_release(&fc);
	assert_int_equal(rva_focus_build(t, UINT32_MAX, 100, &fc), 0);
	assert_int_equal(fc.graph.n, 101);
	assert_true(fc.cut);
	rva_focus_release(&fc);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_views_report_every_sort_key_orders_as_worked_out),
		cmocka_unit_test(test_views_report_avg_self_uses_self_per_call),
		cmocka_unit_test(test_views_report_muted_estimate_marked),
		cmocka_unit_test(test_views_report_wide_estimate_marked),
		cmocka_unit_test(test_views_report_per_thread_counts_each_thread_alone),
		cmocka_unit_test(test_views_report_recursion_total_once_avg_every_call),
		cmocka_unit_test(test_views_replay_merges_threads_by_time),
		cmocka_unit_test(test_views_replay_fields_and_anomaly_line),
		cmocka_unit_test(test_views_filter_include_reroots_at_the_outermost_match),
		cmocka_unit_test(test_views_filter_exclude_drops_the_subtree_into_self),
		cmocka_unit_test(test_views_filter_hide_keeps_the_callees),
		cmocka_unit_test(test_views_filter_depth_and_time),
		cmocka_unit_test(test_views_filter_combined_and_depth_counts_from_the_new_root),
		cmocka_unit_test(test_views_filter_bad_regex_is_refused_with_the_reason),
		cmocka_unit_test(test_views_graph_of_a_merges_its_calls_with_backtraces),
		cmocka_unit_test(test_views_graph_whole_and_depth_cut),
		cmocka_unit_test(test_views_graph_recursion_is_part_of_the_outermost_call),
		cmocka_unit_test(test_views_deep_trace_lines_stay_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
