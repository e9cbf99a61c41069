/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_corpus.c — real trace files from other people's tools
 * (tests/rvtrace/corpus/<format>/, provenance in SOURCES.md there) import,
 * and their per-name call counts equal an independent reader's
 * (corpus/count_calls.py, Python, no rvtrace code: FILE.calls beside each
 * FILE); then each round-trips through rvtrace's Chrome JSON export with
 * the same counts.  The Perfetto files of ../shared/testdata (tracing-perfetto
 * and the Perfetto SDK; not copied: read-only, 3.8 MB) are checked the same
 * way against counts committed in corpus/perfetto-shared/, skipped visibly
 * where ../shared is absent.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/analysis.h"

#ifndef RV_CORPUS
#define RV_CORPUS "tests/rvtrace/corpus"
#endif
#ifndef RV_TESTDATA
#define RV_TESTDATA "../shared/testdata"
#endif

/* The trace's calls per name against the reader's CPATH; every name both
 * ways. */
static void assert_counts(const rva_trace *t, const char *path, const char *cpath, const char *what)
{
	FILE *f = fopen(cpath, "r");
	if (!f)
		fail_msg("%s: no %s (run corpus/count_calls.py)", path, cpath);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	char line[4096];
	size_t names = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *tab = strchr(line, '\t');
		assert_non_null(tab);
		*tab = '\0';
		unsigned long long want = strtoull(line, NULL, 10);
		int64_t m = rva_method_find(t, tab + 1);
		if (m < 0)
			fail_msg("%s (%s): no method \"%s\"", path, what, tab + 1);
		if (st[m].calls != want)
			fail_msg("%s (%s): %s has %llu calls, the independent reader counts %llu",
				 path, what, tab + 1, (unsigned long long)st[m].calls, want);
		names++;
	}
	fclose(f);
	/* No method the reader did not see (names with calls only). */
	size_t with_calls = 0;
	for (size_t i = 0; i < t->nmethods; i++)
		with_calls += st[i].calls > 0;
	assert_int_equal(with_calls, names);
	free(st);
}

static int is_trace(const char *name)
{
	size_t l = strlen(name);
	static const char *const not [] = {".calls", ".md", ".py", ".c", ".js", ".sh"};
	for (size_t i = 0; i < sizeof(not ) / sizeof(not [0]); i++) {
		size_t k = strlen(not [i]);
		if (l >= k && strcmp(name + l - k, not [i]) == 0)
			return 0;
	}
	return name[0] != '.';
}

/* PATH imports as FORMAT with the counts of CPATH, and round-trips through
 * the Chrome JSON export with the same counts. */
static void check_file(const char *path, const char *cpath, const char *format)
{
	rva_trace *t, *u;
	rva_error err = {{0}};
	if (rva_import_file(path, &t, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	assert_string_equal(t->format, format);
	assert_counts(t, path, cpath, "import");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_chrome(f, t), 0);
	fclose(f);
	if (rva_import((const uint8_t *)buf, len, &u, &err) < 0)
		fail_msg("%s round trip: %s", path, err.msg);
	assert_counts(u, path, cpath, "round trip");
	rva_trace_free(u);
	rva_trace_free(t);
	free(buf);
}

static int check_dir(const char *sub, const char *format)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/%s", RV_CORPUS, sub);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!is_trace(e->d_name))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		char cpath[1100];
		snprintf(cpath, sizeof cpath, "%s.calls", path);
		check_file(path, cpath, format);
		n++;
	}
	closedir(d);
	return n;
}

static void test_corpus_chrome_json_counts_equal_independent_reader(void **state)
{
	(void)state;
	int n = check_dir("chrome-json", "chrome-json");
	if (n < 0)
		skip();
	assert_true(n >= 6); /* clang, lld, node, uftrace, chromium ×2 */
}

static void test_corpus_perfetto_counts_equal_independent_reader(void **state)
{
	(void)state;
	int n = check_dir("perfetto", "perfetto");
	if (n < 0)
		skip();
	assert_true(n >= 3); /* Chromium, Android 13, Perfetto's Python builder */
}

static void test_corpus_shared_perfetto_counts_equal_independent_reader(void **state)
{
	(void)state;
	static const struct {
		const char *file, *calls;
	} cases[] = {
		{"tokio-slices/test.pftrace", "tokio-slices.calls"},
		{"instants-only/test.pftrace", "instants-only.calls"},
		{"no-track-events/trace.pftrace", "no-track-events.calls"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[1024], cpath[1024];
		snprintf(path, sizeof path, "%s/perfetto/%s", RV_TESTDATA, cases[i].file);
		snprintf(cpath, sizeof cpath, "%s/perfetto-shared/%s", RV_CORPUS, cases[i].calls);
		FILE *probe = fopen(path, "rb");
		if (!probe)
			skip(); /* ../shared/testdata absent */
		fclose(probe);
		check_file(path, cpath, "perfetto");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_chrome_json_counts_equal_independent_reader),
		cmocka_unit_test(test_corpus_perfetto_counts_equal_independent_reader),
		cmocka_unit_test(test_corpus_shared_perfetto_counts_equal_independent_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
