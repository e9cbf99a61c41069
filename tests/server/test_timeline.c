/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_timeline.c — the trace page's timeline (web_timeline.c) on its own:
 * what it leaves out is counted in its caption (issue 18 item 2: a trace of
 * 1 M nested calls drew 48 levels and said nothing of the rest), and names
 * are shown cut, so the page is bounded whatever the names.  The zoomable
 * timeline's levels of detail count exactly the calls they merge, the
 * butterfly's times add up, and the cache of decoded traces hits, misses
 * and evicts by bytes (model_cache.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/analysis.h"
#include "pipeline/model_cache.h"
#include "web/web_int.h"

/* One stack of depth nested calls (folded "m0;m1;… 1000"). */
static rva_trace *nested(size_t depth)
{
	size_t cap = depth * 12 + 16, n = 0;
	char *line = malloc(cap);
	rva_trace *t = NULL;
	rva_error err = {{0}};
	assert_non_null(line);
	for (size_t i = 0; i < depth; i++)
		n += (size_t)snprintf(line + n, cap - n, "%sm%zu", i ? ";" : "", i);
	n += (size_t)snprintf(line + n, cap - n, " 1000\n");
	assert_int_equal(rva_folded_import((const uint8_t *)line, n, &t, &err), 0);
	free(line);
	return t;
}

static char *timeline(const rva_trace *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	web_timeline_svg(f, t);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* 100 nested calls: 48 levels drawn, the 52 below counted in the caption. */
static void test_timeline_100_nested_calls_says_52_below_depth_48_not_shown(void **state)
{
	rva_trace *t = nested(100);
	char *page = timeline(t);
	assert_non_null(strstr(page, "48 calls drawn"));
	assert_non_null(strstr(page, "52 calls below depth 48 not shown"));
	free(page);
	rva_trace_free(t);
}

/* A shallow trace draws every call and mentions no depth. */
static void test_timeline_shallow_trace_mentions_no_depth(void **state)
{
	rva_trace *t = nested(10);
	char *page = timeline(t);
	assert_non_null(strstr(page, "10 calls drawn"));
	assert_null(strstr(page, "below depth"));
	free(page);
	rva_trace_free(t);
}

/* Names may be 64 KiB: 20 000 rectangles each naming one twice made a
 * 2.6 GB page.  A name is shown cut to 240 bytes and then "…". */
static void test_timeline_64kib_name_shown_cut_to_240_bytes(void **state)
{
	size_t len = 64 * 1024 - 1;
	char *text = malloc(len + 16), *page;
	rva_trace *t = NULL;
	rva_error err = {{0}};
	assert_non_null(text);
	memset(text, 'a', len);
	memcpy(text + len, " 1000\n", 7);
	assert_int_equal(rva_folded_import((const uint8_t *)text, len + 6, &t, &err), 0);
	page = timeline(t);
	assert_non_null(strstr(page, "1 calls drawn"));
	assert_true(strlen(page) < 4096);
	memset(text + 241, 0, 1);
	assert_null(strstr(page, text)); /* never 241 bytes of it */
	text[240] = '\0';
	assert_non_null(strstr(page, text));
	assert_non_null(strstr(page, "…"));
	free(page);
	free(text);
	rva_trace_free(t);
}

/* 3600 calls of 1 ns every 2 ns under one root (issue 16: the page said
 * "3599 too short to draw"): the root drawn, the 3600 counted in one grey
 * busy bar. */
static void test_timeline_svg_3600_tiny_calls_in_one_busy_bar(void **state)
{
	rva_trace *t = rva_trace_new();
	int64_t root, tiny, th;
	char *page;
	assert_non_null(t);
	root = rva_method_intern(t, "root", 4);
	tiny = rva_method_intern(t, "tiny", 4);
	th = rva_thread_add(t, 1, 1, "main");
	assert_true(root >= 0 && tiny >= 0 && th >= 0);
	assert_int_equal(rva_enter(t, (size_t)th, (uint32_t)root, 0), 0);
	for (int i = 0; i < 3600; i++) {
		assert_int_equal(rva_enter(t, (size_t)th, (uint32_t)tiny, 2 * i), 0);
		assert_int_equal(rva_exit(t, (size_t)th, (uint32_t)tiny, 2 * i + 1), 0);
	}
	assert_int_equal(rva_exit(t, (size_t)th, (uint32_t)root, 7200), 0);
	rva_trace_finish(t, 7200);
	page = timeline(t);
	assert_non_null(strstr(page, "1 calls drawn, 3600 more narrower than a pixel in 1 grey "
				     "busy bars"));
	assert_non_null(strstr(page, "data-name=\"3600 calls narrower than a pixel\""));
	assert_null(strstr(page, "too short"));
	free(page);
	rva_trace_free(t);
}

/* ---- the zoomable timeline's levels of detail (web_timeline_lod) -------- */

/* main 0..1000 ns; in it big 0..500 (with leaf 100..200) and then 100
 * tiny calls of 1 ns every 5 ns from 500; the anomaly at 800. */
static rva_trace *known(void)
{
	rva_trace *t = rva_trace_new();
	int64_t m, big, leaf, tiny, th;
	assert_non_null(t);
	m = rva_method_intern(t, "main", 4);
	big = rva_method_intern(t, "big", 3);
	leaf = rva_method_intern(t, "leaf", 4);
	tiny = rva_method_intern(t, "tiny", 4);
	th = rva_thread_add(t, 1, 1, "main");
	assert_true(m >= 0 && big >= 0 && leaf >= 0 && tiny >= 0 && th >= 0);
	assert_int_equal(rva_enter(t, (size_t)th, (uint32_t)m, 0), 0);
	assert_int_equal(rva_enter(t, (size_t)th, (uint32_t)big, 0), 0);
	assert_int_equal(rva_enter(t, (size_t)th, (uint32_t)leaf, 100), 0);
	assert_int_equal(rva_exit(t, (size_t)th, (uint32_t)leaf, 200), 0);
	assert_int_equal(rva_exit(t, (size_t)th, (uint32_t)big, 500), 0);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(rva_enter(t, (size_t)th, (uint32_t)tiny, 500 + 5 * i), 0);
		assert_int_equal(rva_exit(t, (size_t)th, (uint32_t)tiny, 501 + 5 * i), 0);
	}
	assert_int_equal(rva_exit(t, (size_t)th, (uint32_t)m, 1000), 0);
	rva_trace_finish(t, 1000);
	t->has_anomaly = 1;
	t->anomaly_ns = 800;
	return t;
}

static json_t *lod(const rva_trace *t, int64_t from, int64_t to, unsigned width)
{
	json_t *doc = NULL;
	assert_int_equal(web_timeline_lod(t, from, to, width, &doc), 0);
	assert_non_null(doc);
	return doc;
}

/* item i of doc as [depth, start, end, method, n, self]. */
static void item_is(json_t *doc, size_t i, json_int_t d, json_int_t s, json_int_t e,
		    const char *name, json_int_t n, json_int_t self)
{
	json_t *it = json_array_get(json_object_get(doc, "items"), i);
	char key[24];
	assert_non_null(it);
	assert_int_equal(json_integer_value(json_array_get(it, 0)), d);
	assert_int_equal(json_integer_value(json_array_get(it, 1)), s);
	assert_int_equal(json_integer_value(json_array_get(it, 2)), e);
	if (name) {
		snprintf(key, sizeof key, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(json_array_get(it, 3)));
		assert_string_equal(
			json_string_value(json_object_get(json_object_get(doc, "names"), key)),
			name);
	} else {
		assert_int_equal(json_integer_value(json_array_get(it, 3)), -1);
	}
	assert_int_equal(json_integer_value(json_array_get(it, 4)), n);
	assert_int_equal(json_integer_value(json_array_get(it, 5)), self);
}

/* The whole trace 100 px wide (10 ns a pixel): main, big and leaf drawn as
 * themselves with their self times, the 100 tiny calls one busy bar that
 * counts all 100; the anomaly at x 80. */
static void test_timeline_lod_whole_trace_merges_100_tiny_calls_into_one_bar(void **state)
{
	rva_trace *t = known();
	json_t *doc = lod(t, 0, 1000, 100), *items = json_object_get(doc, "items");
	json_int_t total = 0;
	size_t i;
	json_t *it;

	assert_int_equal(json_array_size(items), 4);
	item_is(doc, 0, 0, 0, 1000, "main", 1, 400);
	item_is(doc, 1, 1, 0, 500, "big", 1, 400);
	item_is(doc, 2, 2, 100, 200, "leaf", 1, 100);
	item_is(doc, 3, 1, 500, 996, "tiny", 100, -1);
	json_array_foreach(items, i, it) total += json_integer_value(json_array_get(it, 4));
	assert_int_equal(total, t->threads[0].ncalls);
	assert_int_equal(json_integer_value(json_object_get(doc, "anomaly")), 800);
	assert_true(json_real_value(json_object_get(doc, "anomaly_x")) == 80.0);
	assert_int_equal(json_integer_value(json_object_get(doc, "deep")), 0);
	json_decref(doc);
	rva_trace_free(t);
}

/* Zoomed to 500..600 ns at 100 px (1 ns a pixel): each tiny call there is a
 * pixel wide and drawn as itself — 20 of them — under main clipped to the
 * range; the anomaly is outside (null). */
static void test_timeline_lod_zoomed_in_draws_each_tiny_call(void **state)
{
	rva_trace *t = known();
	json_t *doc = lod(t, 500, 600, 100);

	assert_int_equal(json_array_size(json_object_get(doc, "items")), 21);
	item_is(doc, 0, 0, 500, 600, "main", 1, 400);
	for (size_t i = 0; i < 20; i++)
		item_is(doc, 1 + i, 1, 500 + 5 * (json_int_t)i, 501 + 5 * (json_int_t)i, "tiny", 1,
			1);
	assert_true(json_is_null(json_object_get(doc, "anomaly_x")));
	json_decref(doc);
	rva_trace_free(t);
}

/* Two narrow calls of different methods in one bar: the bar names none. */
static void test_timeline_lod_bar_of_two_methods_names_none(void **state)
{
	rva_trace *t = known();
	json_t *doc;
	int64_t other = rva_method_intern(t, "other", 5);
	assert_true(other >= 0);
	t->threads[0].calls[t->threads[0].ncalls - 1].method = (uint32_t)other;
	doc = lod(t, 0, 1000, 100);
	item_is(doc, 3, 1, 500, 996, NULL, 100, -1);
	json_decref(doc);
	rva_trace_free(t);
}

/* A method name that is not UTF-8 (names are untrusted) is named so in
 * timeline.json, not dropped, and its butterfly still answers. */
static void test_timeline_lod_non_utf8_name_is_named_so(void **state)
{
	rva_trace *t = known();
	json_t *doc;
	assert_int_equal(rva_method_rename(t, 0, "main\xff\xfe"), 0);
	doc = lod(t, 0, 1000, 100);
	item_is(doc, 0, 0, 0, 1000, "(name not UTF-8)", 1, 400);
	json_decref(doc);
	assert_int_equal(web_butterfly(t, "main\xff\xfe", &doc), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "self_ns")), 400);
	json_decref(doc);
	rva_trace_free(t);
}

/* 100 nested calls: 64 depths drawn, the 36 below counted in "deep". */
static void test_timeline_lod_counts_calls_below_depth_64(void **state)
{
	rva_trace *t = nested(100);
	json_t *doc = lod(t, t->start, t->end, 800);
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 64);
	assert_int_equal(json_integer_value(json_object_get(doc, "deep")), 36);
	json_decref(doc);
	rva_trace_free(t);
}

/* known() with the app's frames (by start): one before the trace (-20..-5),
 * 0..160 on time, 160..330 late, two of 1 ns at 600 (on time) and 602
 * (late), 950..1016 past the end; and the thread off the CPU 250..350
 * (preempted), 400..401 (blocked) and 403..404 (preempted). */
static rva_trace *known_rows(void)
{
	static const rva_frame fr[] = {
		{-20, -5, 0, 1, 0},  {0, 160, 0, 1, 0},	  {160, 330, 0, 1, 1},
		{600, 601, 0, 1, 0}, {602, 603, 0, 1, 1}, {950, 1016, 0, 1, 0},
	};
	static const rva_offcpu off[] = {
		{250, 350, RVA_OFF_PREEMPTED},
		{400, 401, RVA_OFF_BLOCKED},
		{403, 404, RVA_OFF_PREEMPTED},
	};
	rva_trace *t = known();

	t->frames = malloc(sizeof fr);
	assert_non_null(t->frames);
	memcpy(t->frames, fr, sizeof fr);
	t->nframes = sizeof fr / sizeof fr[0];
	assert_int_equal(rva_offcpu_set(t, 0, off, sizeof off / sizeof off[0], NULL), 0);
	return t;
}

/* Row row of doc as a string of its [start, end, marked, n] items. */
static void row_is(json_t *doc, const char *row, const char *want)
{
	char got[512] = "";
	size_t i, n = 0;
	json_t *it;

	json_array_foreach(json_object_get(doc, row), i, it)
	{
		n += (size_t)snprintf(got + n, sizeof got - n,
				      "[%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT
				      ",%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT "]",
				      json_integer_value(json_array_get(it, 0)),
				      json_integer_value(json_array_get(it, 1)),
				      json_integer_value(json_array_get(it, 2)),
				      json_integer_value(json_array_get(it, 3)));
		assert_true(n < sizeof got);
	}
	assert_true(json_is_array(json_object_get(doc, row)));
	assert_string_equal(got, want);
}

/* The whole trace 100 px wide (10 ns a pixel): the frames in the range with
 * their exact times, the late ones marked, the two 1 ns frames one merged
 * item that counts both and its late one, the frame running past the end
 * with its own end; the frame before the trace left out.  The off-CPU row
 * likewise: the 100 ns preemption as itself, the two 1 ns intervals merged
 * (one preempted). */
static void test_timeline_lod_frames_and_offcpu_rows_exact(void **state)
{
	rva_trace *t = known_rows();
	json_t *doc = lod(t, 0, 1000, 100);

	row_is(doc, "frames", "[0,160,0,1][160,330,1,1][600,603,1,2][950,1016,0,1]");
	row_is(doc, "offcpu", "[250,350,1,1][400,404,1,2]");
	/* The calls are what they were without the rows. */
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 4);
	json_decref(doc);
	rva_trace_free(t);
}

/* Zoomed to 590..610 ns at 100 px (5 px a ns): the two 1 ns frames each as
 * itself, the late one marked; no off-CPU interval there, the row empty
 * but present. */
static void test_timeline_lod_zoomed_in_splits_frames(void **state)
{
	rva_trace *t = known_rows();
	json_t *doc = lod(t, 590, 610, 100);

	row_is(doc, "frames", "[600,601,0,1][602,603,1,1]");
	row_is(doc, "offcpu", "");
	json_decref(doc);
	rva_trace_free(t);
}

/* A capture without FRAMES or OFFCPU records has no such rows (null). */
static void test_timeline_lod_no_rows_without_records(void **state)
{
	rva_trace *t = known();
	json_t *doc = lod(t, 0, 1000, 100);

	assert_true(json_is_null(json_object_get(doc, "frames")));
	assert_true(json_is_null(json_object_get(doc, "offcpu")));
	json_decref(doc);
	rva_trace_free(t);
}

/* ---- butterfly -------------------------------------------------------------- */

static void test_timeline_butterfly_of_main_lists_callees_with_times(void **state)
{
	rva_trace *t = known();
	json_t *doc = NULL, *ce, *cr;
	assert_int_equal(web_butterfly(t, "main", &doc), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "calls")), 1);
	assert_int_equal(json_integer_value(json_object_get(doc, "incl_ns")), 1000);
	assert_int_equal(json_integer_value(json_object_get(doc, "self_ns")), 400);
	ce = json_object_get(doc, "callees");
	assert_int_equal(json_array_size(ce), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ce, 0), "method")),
			    "big");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ce, 0), "incl_ns")),
			 500);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ce, 1), "method")),
			    "tiny");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ce, 1), "calls")), 100);
	cr = json_object_get(doc, "callers");
	assert_string_equal(json_string_value(json_object_get(json_array_get(cr, 0), "method")),
			    "(root)");
	json_decref(doc);
	assert_int_equal(web_butterfly(t, "leaf", &doc), 0);
	cr = json_object_get(doc, "callers");
	assert_string_equal(json_string_value(json_object_get(json_array_get(cr, 0), "method")),
			    "big");
	assert_int_equal(json_array_size(json_object_get(doc, "callees")), 0);
	json_decref(doc);
	assert_int_equal(web_butterfly(t, "nosuch", &doc), -ENOENT);
	rva_trace_free(t);
}

/* ---- the cache of decoded traces (model_cache.c) ---------------------------- */

static int loads;

static int load_known(void *arg, const char *id, rva_trace **out)
{
	loads++;
	*out = known();
	return strcmp(id, "fail") == 0 ? (rva_trace_free(*out), -EIO) : 0;
}

/* A cap of 2.5 traces: a, a again (hit), b, c (a, the least recently used,
 * evicted), a again (loaded again). */
static void test_timeline_cache_hit_miss_and_eviction_by_bytes(void **state)
{
	rva_trace *probe = known();
	size_t one = rvs_trace_bytes(probe);
	struct rvs_mcache *c;
	struct rvs_mentry *r;
	struct rvs_mcache_stats st;
	const rva_trace *t, *first;

	rva_trace_free(probe);
	loads = 0;
	assert_int_equal(rvs_mcache_new(one * 5 / 2, &c), 0);
	assert_int_equal(rvs_mcache_get(c, "a", load_known, NULL, &r, &first), 0);
	rvs_mcache_release(c, r);
	assert_int_equal(rvs_mcache_get(c, "a", load_known, NULL, &r, &t), 0);
	assert_ptr_equal(t, first);
	rvs_mcache_release(c, r);
	assert_int_equal(loads, 1);
	assert_int_equal(rvs_mcache_get(c, "b", load_known, NULL, &r, &t), 0);
	rvs_mcache_release(c, r);
	assert_int_equal(rvs_mcache_get(c, "c", load_known, NULL, &r, &t), 0);
	rvs_mcache_release(c, r);
	rvs_mcache_stats(c, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 3);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.bytes, 2 * one);
	assert_int_equal(rvs_mcache_get(c, "b", load_known, NULL, &r, &t), 0);
	rvs_mcache_release(c, r);
	assert_int_equal(loads, 3);
	assert_int_equal(rvs_mcache_get(c, "a", load_known, NULL, &r, &t), 0);
	rvs_mcache_release(c, r);
	assert_int_equal(loads, 4);
	rvs_mcache_stats(c, &st);
	assert_true(st.bytes <= one * 5 / 2);
	assert_int_equal(rvs_mcache_get(c, "fail", load_known, NULL, &r, &t), -EIO);
	rvs_mcache_free(c);
}

/* A trace evicted while a request holds it stays readable until released;
 * one larger than the cap is handed out and never kept. */
static void test_timeline_cache_held_trace_survives_eviction(void **state)
{
	rva_trace *probe = known();
	size_t one = rvs_trace_bytes(probe);
	struct rvs_mcache *c;
	struct rvs_mentry *ra, *rb;
	struct rvs_mcache_stats st;
	const rva_trace *a, *b;

	rva_trace_free(probe);
	assert_int_equal(rvs_mcache_new(one, &c), 0);
	assert_int_equal(rvs_mcache_get(c, "a", load_known, NULL, &ra, &a), 0);
	assert_int_equal(rvs_mcache_get(c, "b", load_known, NULL, &rb, &b), 0);
	assert_int_equal(a->threads[0].ncalls, 103);
	rvs_mcache_stats(c, &st);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.evictions, 1);
	rvs_mcache_release(c, ra);
	rvs_mcache_release(c, rb);
	rvs_mcache_free(c);

	assert_int_equal(rvs_mcache_new(one - 1, &c), 0);
	assert_int_equal(rvs_mcache_get(c, "a", load_known, NULL, &ra, &a), 0);
	assert_int_equal(a->threads[0].ncalls, 103);
	rvs_mcache_stats(c, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
	rvs_mcache_release(c, ra);
	rvs_mcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeline_100_nested_calls_says_52_below_depth_48_not_shown),
		cmocka_unit_test(test_timeline_shallow_trace_mentions_no_depth),
		cmocka_unit_test(test_timeline_64kib_name_shown_cut_to_240_bytes),
		cmocka_unit_test(test_timeline_svg_3600_tiny_calls_in_one_busy_bar),
		cmocka_unit_test(test_timeline_lod_whole_trace_merges_100_tiny_calls_into_one_bar),
		cmocka_unit_test(test_timeline_lod_zoomed_in_draws_each_tiny_call),
		cmocka_unit_test(test_timeline_lod_bar_of_two_methods_names_none),
		cmocka_unit_test(test_timeline_lod_non_utf8_name_is_named_so),
		cmocka_unit_test(test_timeline_lod_counts_calls_below_depth_64),
		cmocka_unit_test(test_timeline_lod_frames_and_offcpu_rows_exact),
		cmocka_unit_test(test_timeline_lod_zoomed_in_splits_frames),
		cmocka_unit_test(test_timeline_lod_no_rows_without_records),
		cmocka_unit_test(test_timeline_butterfly_of_main_lists_callees_with_times),
		cmocka_unit_test(test_timeline_cache_hit_miss_and_eviction_by_bytes),
		cmocka_unit_test(test_timeline_cache_held_trace_survives_eviction),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
