/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_model.c — the model builder and the analyses on hand-built traces
 * whose answers are worked out in the comments.
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

static uint32_t M(rva_trace *t, const char *name)
{
	int64_t id = rva_method_intern(t, name, strlen(name));
	assert_true(id >= 0);
	return (uint32_t)id;
}

/* main [0,100): a [10,40) { a [15,35) { b [20,30) } }, b [50,90) { c [60,70) }.
 * main self 100-30-40 = 30; a calls 2, incl 30 (recursion once), self
 * 30-20 + 20-10 = 20; b calls 2, incl 10+40 = 50, self 10 + 30 = 40; c 10. */
static rva_trace *sample(void)
{
	rva_trace *t = rva_trace_new();
	assert_non_null(t);
	assert_int_equal(rva_thread_add(t, 1, 1, "main"), 0);
	uint32_t m = M(t, "main"), a = M(t, "a"), b = M(t, "b"), c = M(t, "c");
	assert_int_equal(rva_enter(t, 0, m, 0), 0);
	assert_int_equal(rva_enter(t, 0, a, 10), 0);
	assert_int_equal(rva_enter(t, 0, a, 15), 0);
	assert_int_equal(rva_enter(t, 0, b, 20), 0);
	assert_int_equal(rva_exit(t, 0, b, 30), 0);
	assert_int_equal(rva_exit(t, 0, RVA_ANY_METHOD, 35), 0);
	assert_int_equal(rva_exit(t, 0, a, 40), 0);
	assert_int_equal(rva_enter(t, 0, b, 50), 0);
	assert_int_equal(rva_enter(t, 0, c, 60), 0);
	assert_int_equal(rva_exit(t, 0, c, 70), 0);
	assert_int_equal(rva_exit(t, 0, b, 90), 0);
	assert_int_equal(rva_exit(t, 0, m, 100), 0);
	rva_trace_finish(t, INT64_MIN);
	return t;
}

/* rva_native_name_len: the compilers' suffixes for copies of a function,
 * in symbol and demangled form, any number; nothing else. */
static void test_model_native_name_len_strips_copy_suffixes_only(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"f.isra.0", "f"},
		{"f.constprop.12", "f"},
		{"f.part.0", "f"},
		{"f.cold", "f"},
		{"f.cold.3", "f"},
		{"f.constprop.0.isra.0", "f"},
		{"_ZN1A1fEv.localalias", "_ZN1A1fEv"},
		{"f.lto_priv.0", "f"},
		{"f.llvm.1234567890", "f"},
		{"f.specialized.1", "f"},
		{"A::f(int) [clone .isra.0]", "A::f(int)"},
		{"g() [clone .constprop.0] [clone .cold]", "g()"},
		{"f.isra", "f.isra"}, /* no digits: not gcc's */
		{"f.part", "f.part"},
		{".cold", ".cold"}, /* never empty */
		{"x.isra.0y", "x.isra.0y"},
		{"bench.lua:222:planted_slow", "bench.lua:222:planted_slow"},
		{"[clone .isra.0]", "[clone .isra.0]"},
		{"main", "main"},
		{"", ""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = rva_native_name_len(cases[i].in, strlen(cases[i].in));
		if (n != strlen(cases[i].out) || strncmp(cases[i].in, cases[i].out, n) != 0)
			fail_msg("%s: kept %zu bytes, want \"%s\"", cases[i].in, n, cases[i].out);
	}
}

static void test_model_rename_keeps_names_unique_and_findable(void **state)
{
	rva_trace *t = rva_trace_new();
	int64_t a, b;

	(void)state;
	assert_non_null(t);
	a = rva_method_intern(t, "app+0x1c0", 9);
	b = rva_method_intern(t, "main", 4);
	assert_true(a >= 0 && b >= 0);
	assert_int_equal(rva_method_rename(t, (uint32_t)a, "hot_leaf"), 0);
	assert_string_equal(t->names[a], "hot_leaf");
	assert_int_equal(rva_method_find(t, "hot_leaf"), a);
	assert_int_equal(rva_method_find(t, "app+0x1c0"), -ENOENT);
	/* Two methods may not share a name; ids out of range are refused. */
	assert_int_equal(rva_method_rename(t, (uint32_t)a, "main"), -EINVAL);
	assert_int_equal(rva_method_rename(t, 99, "x"), -EINVAL);
	/* Interning the new name finds the renamed method. */
	assert_int_equal(rva_method_intern(t, "hot_leaf", 8), a);
	rva_trace_free(t);
}

static void test_model_recursion_inclusive_counted_once(void **state)
{
	rva_trace *t = sample();
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(st[0].calls, 1);
	assert_int_equal(st[0].incl, 100);
	assert_int_equal(st[0].self, 30);
	assert_int_equal(st[1].calls, 2);
	assert_int_equal(st[1].incl, 30);
	assert_int_equal(st[1].self, 20);
	assert_int_equal(st[2].calls, 2);
	assert_int_equal(st[2].incl, 50);
	assert_int_equal(st[2].self, 40);
	assert_int_equal(st[3].self, 10);
	uint32_t ids[8];
	assert_int_equal(rva_top_self(t, st, ids, 2), 2);
	assert_int_equal(ids[0], 2); /* b 40 */
	assert_int_equal(ids[1], 0); /* main 30 */
	free(st);
	assert_int_equal(t->start, 0);
	assert_int_equal(t->end, 100);
	rva_trace_free(t);
}

static void test_model_mismatched_exit_closes_inner_frames(void **state)
{
	rva_trace *t = rva_trace_new();
	rva_thread_add(t, 1, 1, NULL);
	uint32_t x = M(t, "x"), y = M(t, "y"), z = M(t, "z");
	rva_enter(t, 0, x, 0);
	rva_enter(t, 0, y, 5);
	rva_enter(t, 0, z, 6);
	/* longjmp out of z and y straight to x's exit. */
	assert_int_equal(rva_exit(t, 0, x, 9), 0);
	/* An exit of something never entered is dropped. */
	assert_int_equal(rva_exit(t, 0, z, 10), 0);
	rva_trace_finish(t, INT64_MIN);
	assert_int_equal(t->threads[0].ncalls, 3);
	assert_int_equal(t->threads[0].calls[1].end, 9);
	assert_int_equal(t->threads[0].calls[2].end, 9);
	assert_int_equal(t->threads[0].calls[0].end, 9);
	assert_int_equal(t->dropped, 1);
	rva_trace_free(t);
}

static void test_model_open_frames_end_at_given_time(void **state)
{
	rva_trace *t = rva_trace_new();
	rva_thread_add(t, 1, 1, NULL);
	uint32_t x = M(t, "x");
	rva_enter(t, 0, x, 3);
	rva_enter(t, 0, x, 4);
	rva_trace_finish(t, 50);
	assert_int_equal(t->threads[0].calls[0].end, 50);
	assert_int_equal(t->threads[0].calls[1].end, 50);
	rva_trace_free(t);
}

static void test_model_chain_at_returns_running_frames(void **state)
{
	rva_trace *t = sample();
	uint32_t ch[8];
	size_t n = rva_chain_at(t, 0, 25, ch, 8);
	assert_int_equal(n, 4);
	assert_int_equal(ch[0], 0);
	assert_int_equal(ch[1], 1);
	assert_int_equal(ch[2], 1);
	assert_int_equal(ch[3], 2);
	n = rva_chain_at(t, 0, 65, ch, 8);
	assert_int_equal(n, 3);
	assert_int_equal(ch[2], 3);
	n = rva_chain_at(t, 0, 45, ch, 8);
	assert_int_equal(n, 1);
	assert_int_equal(rva_chain_at(t, 0, 500, ch, 8), 0);
	rva_trace_free(t);
}

static void test_model_slice_clips_to_window(void **state)
{
	rva_trace *t = sample();
	rva_trace *s = rva_trace_slice(t, 55, 95);
	assert_non_null(s);
	/* main [55,95), b [55,90), c [60,70). */
	assert_int_equal(s->threads[0].ncalls, 3);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(s, &st), 0);
	assert_int_equal(st[0].incl, 40);
	assert_int_equal(st[0].self, 5);
	assert_int_equal(st[2].incl, 35);
	assert_int_equal(st[2].self, 25);
	assert_int_equal(st[1].calls, 0);
	free(st);
	rva_trace_free(s);
	rva_trace_free(t);
}

static void test_model_normalize_strips_addresses_keeps_module_offset(void **state)
{
	char out[128];
	rva_normalize_name("/usr/lib/x86_64-linux-gnu/libc.so.6+0x2a1c0", out, sizeof(out));
	assert_string_equal(out, "libc.so.6+0x2a1c0");
	rva_normalize_name("lambda at 0x7ffd1234abcd", out, sizeof(out));
	assert_string_equal(out, "lambda at 0x?");
	rva_normalize_name("f(0x10)", out, sizeof(out));
	assert_string_equal(out, "f(0x10)");
	rva_normalize_name("/tmp/a.out (deleted)", out, sizeof(out));
	assert_string_equal(out, "/tmp/a.out");
	assert_int_equal(rva_normalize_name("abcdef", out, 4), 6);
	assert_string_equal(out, "abc");
}

static void test_model_signature_stable_across_aslr(void **state)
{
	rva_trace *a = rva_trace_new(), *b = rva_trace_new();
	uint32_t ca[2] = {M(a, "main"), M(a, "/opt/x/lib/libfoo.so+0x120")};
	uint32_t cb[2] = {M(b, "/usr/lib/libfoo.so+0x120"), M(b, "main")};
	uint32_t cb2[2] = {cb[1], cb[0]};
	assert_true(rva_signature(a, ca, 2) == rva_signature(b, cb2, 2));
	assert_true(rva_signature(a, ca, 2) != rva_signature(b, cb, 2));
	/* FNV-1a of "main;" — fixed forever, the fleet clusters by it. */
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = "main;"; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ull;
	}
	assert_true(rva_signature(a, ca, 1) == h);
	rva_trace_free(a);
	rva_trace_free(b);
}

static void test_model_chains_sorted_by_self(void **state)
{
	rva_trace *t = sample();
	rva_chains ch;
	assert_int_equal(rva_chains_collect(t, 0, &ch), 0);
	/* Paths: main(30) main;a(10) main;a;a(10) main;a;a;b(10) main;b(30) main;b;c(10) */
	assert_int_equal(ch.n, 6);
	assert_int_equal(ch.v[0].self, 30);
	assert_int_equal(ch.v[1].self, 30);
	for (size_t i = 1; i < ch.n; i++)
		assert_true(ch.v[i - 1].self >= ch.v[i].self);
	int found = 0;
	for (size_t i = 0; i < ch.n; i++)
		if (ch.v[i].depth == 4) {
			assert_int_equal(ch.v[i].methods[3], 2);
			assert_true(ch.v[i].signature == rva_signature(t, ch.v[i].methods, 4));
			found = 1;
		}
	assert_true(found);
	rva_chains_release(&ch);
	rva_trace_free(t);
}

static void test_model_pattern_matches_sequence_with_threshold(void **state)
{
	rva_trace *t = sample();
	const char *seq[] = {"main", "b"};
	rva_pattern p = {seq, 2, 20};
	rva_match m[4];
	/* b [20,30) lasts 10 < 20; b [50,90) lasts 40. */
	assert_int_equal(rva_pattern_match(t, &p, m, 4), 1);
	assert_int_equal(m[0].call, 4);
	p.min_ns = 0;
	assert_int_equal(rva_pattern_match(t, &p, m, 4), 2);
	const char *seq2[] = {"c", "b"};
	rva_pattern q = {seq2, 2, 0};
	assert_int_equal(rva_pattern_match(t, &q, m, 4), 0);
	const char *glob[] = {"[ab]"};
	rva_pattern g = {glob, 1, 0};
	assert_int_equal(rva_pattern_match(t, &g, m, 4), 4);
	rva_trace_free(t);
}

static void test_model_tree_merges_paths(void **state)
{
	rva_trace *t = sample();
	rva_tree tr;
	assert_int_equal(rva_tree_build(t, SIZE_MAX, &tr), 0);
	assert_int_equal(tr.n, 7); /* root + 6 paths */
	assert_int_equal(tr.nodes[0].incl, 100);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_tree_print(f, t, &tr, 15.0), 0);
	fclose(f);
	/* main 100 %, b 40 %, a 30 %; c (10 %) and the inner a (20 %) shown,
	 * b under a;a is 10 %: cut. */
	assert_non_null(strstr(buf, "100.00%"));
	assert_non_null(strstr(buf, " 40.00%"));
	assert_null(strstr(buf, "   c "));
	assert_true(strstr(buf, "  b (2") == NULL);
	free(buf);
	rva_tree_release(&tr);
	rva_trace_free(t);
}

static void test_model_callers_attribute_outermost(void **state)
{
	rva_trace *t = sample();
	rva_caller *c;
	/* a: one outermost call from main (30). */
	assert_int_equal(rva_callers(t, 1, &c), 1);
	assert_int_equal(c[0].caller, 0);
	assert_int_equal(c[0].calls, 1);
	assert_int_equal(c[0].incl, 30);
	free(c);
	/* b: from main (40) and from a (10). */
	assert_int_equal(rva_callers(t, 2, &c), 2);
	assert_int_equal(c[0].caller, 0);
	assert_int_equal(c[0].incl, 40);
	assert_int_equal(c[1].caller, 1);
	assert_int_equal(c[1].incl, 10);
	free(c);
	assert_int_equal(rva_callers(t, 0, &c), 1);
	assert_int_equal(c[0].caller, UINT32_MAX);
	free(c);
	rva_trace_free(t);
}

static void test_model_diff_by_self_delta(void **state)
{
	rva_trace *a = sample();
	rva_trace *b = rva_trace_new();
	rva_thread_add(b, 1, 1, NULL);
	uint32_t c = M(b, "c"), d = M(b, "d");
	rva_enter(b, 0, c, 0);
	rva_exit(b, 0, c, 110);
	rva_enter(b, 0, d, 200);
	rva_exit(b, 0, d, 205);
	rva_trace_finish(b, INT64_MIN);
	rva_delta *v;
	int64_t n = rva_diff(a, b, &v);
	assert_int_equal(n, 5);
	assert_string_equal(v[0].name, "c");
	assert_int_equal(v[0].delta, 100);
	assert_string_equal(v[1].name, "b");
	assert_int_equal(v[1].delta, -40);
	assert_string_equal(v[4].name, "d");
	assert_int_equal(v[4].delta, 5);
	free(v);
	rva_trace_free(a);
	rva_trace_free(b);
}

static void test_model_intern_rejects_huge_name(void **state)
{
	rva_trace *t = rva_trace_new();
	char *big = calloc(1, 70000);
	memset(big, 'x', 69999);
	assert_int_equal(rva_method_intern(t, big, 69999), -E2BIG);
	assert_int_equal(rva_method_intern(t, "a\0b", 3), 0);
	assert_string_equal(t->names[0], "a");
	assert_int_equal(rva_method_find(t, "a"), 0);
	assert_true(rva_method_find(t, "zz") < 0);
	for (int i = 0; i < 1000; i++) {
		char n[16];
		snprintf(n, sizeof(n), "m%d", i);
		assert_int_equal(rva_method_intern(t, n, strlen(n)), i + 1);
	}
	assert_int_equal(rva_method_intern(t, "m500", 4), 501);
	free(big);
	rva_trace_free(t);
	rva_trace_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_rename_keeps_names_unique_and_findable),
		cmocka_unit_test(test_model_native_name_len_strips_copy_suffixes_only),
		cmocka_unit_test(test_model_recursion_inclusive_counted_once),
		cmocka_unit_test(test_model_mismatched_exit_closes_inner_frames),
		cmocka_unit_test(test_model_open_frames_end_at_given_time),
		cmocka_unit_test(test_model_chain_at_returns_running_frames),
		cmocka_unit_test(test_model_slice_clips_to_window),
		cmocka_unit_test(test_model_normalize_strips_addresses_keeps_module_offset),
		cmocka_unit_test(test_model_signature_stable_across_aslr),
		cmocka_unit_test(test_model_chains_sorted_by_self),
		cmocka_unit_test(test_model_pattern_matches_sequence_with_threshold),
		cmocka_unit_test(test_model_tree_merges_paths),
		cmocka_unit_test(test_model_callers_attribute_outermost),
		cmocka_unit_test(test_model_diff_by_self_delta),
		cmocka_unit_test(test_model_intern_rejects_huge_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
