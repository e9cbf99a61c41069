/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzzreplay.c — deterministic replay of the libFuzzer targets
 * (tests/fuzz/rvtrace_*.c, linked here without libFuzzer): each target runs
 * over seed inputs from the shared test data and a built capture, every
 * truncation of a prefix, and seeded random mutations.  A crash or a
 * sanitizer report fails the binary; `make asan` runs it instrumented.
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

#include "capbuild.h"
#include "rearview/analysis.h"

#ifndef RV_TESTDATA
#define RV_TESTDATA "../shared/testdata"
#endif
#ifndef RV_FUZZ_SEEDS
#define RV_FUZZ_SEEDS "tests/fuzz"
#endif

int rva_fuzz_capture(const uint8_t *data, size_t size);
int rva_fuzz_android(const uint8_t *data, size_t size);
int rva_fuzz_chrome(const uint8_t *data, size_t size);
int rva_fuzz_perfetto(const uint8_t *data, size_t size);
int rva_fuzz_folded(const uint8_t *data, size_t size);
int rva_fuzz_nanoscope(const uint8_t *data, size_t size);
int rva_fuzz_shuffle(const uint8_t *data, size_t size);
int rva_fuzz_pprof(const uint8_t *data, size_t size);

typedef int (*target)(const uint8_t *, size_t);

static uint8_t *slurp(const char *path, size_t *len, size_t max)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *b = malloc(max);
	*len = fread(b, 1, max, f);
	fclose(f);
	return b;
}

static void replay(target fn, const uint8_t *seed, size_t len)
{
	uint8_t *b = malloc(len + 1);
	fn(seed, len);
	for (size_t k = 1; k <= 24; k++)
		fn(seed, len * k / 25);
	uint64_t s = 0x243f6a8885a308d3ull ^ len;
	for (int round = 0; round < 300; round++) {
		memcpy(b, seed, len);
		for (int k = 0; k < 1 + round % 5 && len; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			b[(s >> 33) % len] = (uint8_t)(s >> 17);
		}
		fn(b, len);
	}
	free(b);
}

/* Replays every file of a NULL-terminated list.  The shared test data lives
 * outside the tree (../shared/testdata): when any file is missing the whole
 * case is a visible skip, checked before anything runs. */
static void replay_files(target fn, const char *const *paths)
{
	for (const char *const *p = paths; *p; p++) {
		if (access(*p, R_OK) != 0) {
			print_message("missing test data %s\n", *p);
			skip();
		}
	}
	for (const char *const *p = paths; *p; p++) {
		size_t len = 0;
		uint8_t *b = slurp(*p, &len, 64 * 1024);
		assert_non_null(b);
		replay(fn, b, len);
		free(b);
	}
}

static void test_fuzzreplay_capture_corpus_survives(void **state)
{
	capbuf c = {0};
	cb_header(&c, 1ull << 34, 1000000000, 2, 99999, 0x400000, 1);
	cb_slot(&c, 7ull << 32 | 1);
	for (uint32_t i = 0; i < 40; i++) {
		cb_entry(&c, i % 4 ? 0x1000 + i : 0xfff0000000000000ull + i, i * 1000);
		if (i % 3)
			cb_exit(&c, i * 1000 + 500);
	}
	cb_end_slots(&c);
	cb_module(&c, 0, 0x400000, 0x500000, "/bin/app");
	cb_symbol(&c, 0x1001, 0x1001, 0, "f");
	cb_anomaly(&c, 1, 5000, "x");
	cb_record(&c, 14, cb_frames_value, sizeof(cb_frames_value)); /* FRAMES */
	cb_finish(&c);
	replay(rva_fuzz_capture, c.b, c.len);
	free(c.b);
}

static void test_fuzzreplay_shuffle_corpus_survives(void **state)
{
	capbuf c = {0};
	uint8_t *form;
	cb_header(&c, 1ull << 34, 1000000000, 2, 99999, 0x400000, 1);
	for (uint32_t i = 0; i < 300; i++) {
		cb_entry(&c, i % 5 ? 0x1000 + i % 9 : 0xfff0000000000000ull + i, i * 1000);
		cb_exit(&c, i * 1000 + 500);
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1001, 0x1001, 0, "f");
	cb_finish(&c);
	form = malloc(c.len);
	assert_int_equal(rva_shuffle_buf(c.b, c.len, form), 0);
	replay(rva_fuzz_shuffle, form, c.len);
	free(form);
	free(c.b);
}

static void test_fuzzreplay_android_corpus_survives(void **state)
{
	static const char *const files[] = {
		RV_TESTDATA "/android-trace/perflib/basic-api10.trace",
		RV_TESTDATA "/android-trace/perflib/exception.trace",
		RV_TESTDATA "/android-trace/dmtracedump-tests/"
			    "testWaitingNestedOverlapCrossThreadDiffFilterDiffKeysTrace",
		NULL,
	};
	replay_files(rva_fuzz_android, files);
}

static void test_fuzzreplay_chrome_corpus_survives(void **state)
{
	static const char *const files[] = {
		RV_TESTDATA "/chrome-json/catapult/simple_trace.json",
		RV_TESTDATA "/chrome-json/speedscope-edge-cases/simple.json",
		NULL,
	};
	replay_files(rva_fuzz_chrome, files);
}

static void test_fuzzreplay_perfetto_corpus_survives(void **state)
{
	static const char *const files[] = {
		RV_TESTDATA "/perfetto/instants-only/test.pftrace",
		RV_TESTDATA "/perfetto/tokio-slices/test.pftrace",
		NULL,
	};
	replay_files(rva_fuzz_perfetto, files);
}

/* Issue 20's real files: committed seeds, no skip. */
static void test_fuzzreplay_real_writers_corpus_survives(void **state)
{
	static const char *const chrome[] = {
		RV_FUZZ_SEEDS "/rvtrace_chrome_corpus/clang-ftime-trace.json",
		RV_FUZZ_SEEDS "/rvtrace_chrome_corpus/uftrace-dump-chrome.json",
		RV_FUZZ_SEEDS "/rvtrace_chrome_corpus/chromium-benchmark-head.json",
		NULL,
	};
	static const char *const perfetto[] = {
		RV_FUZZ_SEEDS "/rvtrace_perfetto_corpus/chromium-v8-execute.pftrace",
		RV_FUZZ_SEEDS "/rvtrace_perfetto_corpus/android13-pixel-system.perfetto-trace",
		NULL,
	};
	static const char *const pprof[] = {
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/go-cpu.pb",
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/go-heap.pb",
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/rvtrace-export.pb",
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/google-node-wall.pb",
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/google-node-heap.pb",
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/datadog-node-wall.pb",
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/datadog-node-heap.pb",
		RV_FUZZ_SEEDS "/rvtrace_pprof_corpus/fgprof-wall.pb",
		NULL,
	};
	replay_files(rva_fuzz_chrome, chrome);
	replay_files(rva_fuzz_perfetto, perfetto);
	replay_files(rva_fuzz_pprof, pprof);
}

static void test_fuzzreplay_text_corpus_survives(void **state)
{
	static const char *const folded[] = {
		RV_TESTDATA "/folded/speedscope-edge-cases/simple-utf16-le.txt",
		RV_TESTDATA "/folded/flamegraph/perf-numa-stacks-01-collapsed-all.txt",
		NULL,
	};
	static const char *const nanoscope[] = {
		"tests/rvtrace/fixtures/nanoscope-basic.txt",
		/* make fuzz's find: time going back (40:inner, then 30:POP) left
		 * the open parent ending before its closed child. */
		"tests/rvtrace/fixtures/nanoscope-backwards-time.txt",
		NULL,
	};
	replay_files(rva_fuzz_folded, folded);
	replay_files(rva_fuzz_nanoscope, nanoscope);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzzreplay_capture_corpus_survives),
		cmocka_unit_test(test_fuzzreplay_shuffle_corpus_survives),
		cmocka_unit_test(test_fuzzreplay_android_corpus_survives),
		cmocka_unit_test(test_fuzzreplay_chrome_corpus_survives),
		cmocka_unit_test(test_fuzzreplay_perfetto_corpus_survives),
		cmocka_unit_test(test_fuzzreplay_real_writers_corpus_survives),
		cmocka_unit_test(test_fuzzreplay_text_corpus_survives),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
