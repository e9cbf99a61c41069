/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_chrome.c — the streaming Chrome Trace Event JSON importer (chrome.c):
 * every phase kept or skipped with a count, any chunking of the input giving
 * the same trace, compressed files streamed, equal timestamps, ids of any
 * size, unknown and nested fields, truncation.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>
#include <zstd.h>

#include "analysis-int.h"
#include "rearview/analysis.h"

static rva_trace *import_str(const char *s)
{
	rva_trace *t = NULL;
	rva_error err = {{0}};
	if (rva_import((const uint8_t *)s, strlen(s), &t, &err) < 0)
		fail_msg("refused: %s", err.msg);
	return t;
}

static uint64_t skipped(const rva_trace *t, const char *what)
{
	for (size_t i = 0; i < t->nskipped; i++)
		if (strcmp(t->skipped[i].what, what) == 0)
			return t->skipped[i].n;
	return 0;
}

static const char every_phase[] =
	"{\"otherData\":{\"traceEvents\":[1,2]},\"traceEvents\":["
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"app\"}},"
	"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"main\"}},"
	"{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":2,\"args\":{\"sort_index\":"
	"-1}},"
	"{\"ph\":\"B\",\"name\":\"outer\",\"pid\":1,\"tid\":2,\"ts\":1,\"cat\":\"c\"},"
	"{\"ph\":\"X\",\"name\":\"inner\",\"pid\":1,\"tid\":2,\"ts\":2,\"dur\":3,"
	"\"args\":{\"ph\":\"C\",\"name\":\"not-a-name\",\"deep\":{\"name\":\"x\",\"ts\":99}}},"
	"{\"ph\":\"I\",\"name\":\"i1\",\"pid\":1,\"tid\":2,\"ts\":3,\"s\":\"t\"},"
	"{\"ph\":\"i\",\"name\":\"i2\",\"pid\":1,\"tid\":2,\"ts\":3,\"s\":\"g\"},"
	"{\"ph\":\"C\",\"name\":\"ctr\",\"pid\":1,\"ts\":3,\"args\":{\"v\":1.5e300}},"
	"{\"ph\":\"b\",\"name\":\"a\",\"pid\":1,\"tid\":2,\"ts\":3,\"id\":\"0x1\",\"cat\":\"c\"},"
	"{\"ph\":\"n\",\"name\":\"a\",\"pid\":1,\"tid\":2,\"ts\":4,\"id2\":{\"local\":\"0x2\"}},"
	"{\"ph\":\"e\",\"name\":\"a\",\"pid\":1,\"tid\":2,\"ts\":5,\"id\":18446744073709551615},"
	"{\"ph\":\"s\",\"name\":\"f\",\"pid\":1,\"tid\":2,\"ts\":3,\"id\":1},"
	"{\"ph\":\"t\",\"name\":\"f\",\"pid\":1,\"tid\":2,\"ts\":4,\"id\":1},"
	"{\"ph\":\"f\",\"name\":\"f\",\"pid\":1,\"tid\":2,\"ts\":5,\"id\":1,\"bp\":\"e\"},"
	"{\"ph\":\"P\",\"name\":\"sample\",\"pid\":1,\"tid\":2,\"ts\":5,\"sf\":7},"
	"{\"ph\":\"O\",\"name\":\"obj\",\"pid\":1,\"ts\":5,\"id\":\"0x9\"},"
	"{\"ph\":\"v\",\"name\":\"dump\",\"pid\":1,\"ts\":5},"
	"{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":9,\"unknown\":[true,false,null,{}]},"
	"{\"ph\":\"XX\",\"ts\":1},{\"ts\":1},7,[]"
	"],\"metadata\":{\"traceEvents\":[]},\"stackFrames\":{}}";

/* Issue 20: every phase Chrome and Perfetto write is kept (B/E, X, M
 * thread_name) or skipped with a count per kind; fields named like the
 * event's own inside args, or in other keys of the object form, do not
 * leak into the event. */
static void test_chrome_every_phase_kept_or_skipped_with_count(void **state)
{
	(void)state;
	rva_trace *t = import_str(every_phase);
	assert_int_equal(t->nthreads, 1);
	assert_string_equal(t->threads[0].name, "main");
	assert_int_equal(t->threads[0].ncalls, 2);
	assert_string_equal(t->names[t->threads[0].calls[0].method], "outer");
	assert_string_equal(t->names[t->threads[0].calls[1].method], "inner");
	assert_int_equal(t->threads[0].calls[0].end, 9000);
	assert_int_equal(t->threads[0].calls[1].end, 5000);
	assert_int_equal(t->nmethods, 2); /* skipped events' names are not methods */
	assert_int_equal(skipped(t, "instant (I/i/R) events"), 2);
	assert_int_equal(skipped(t, "counter (C) events"), 1);
	assert_int_equal(skipped(t, "async (b/e/n/S/T/p/F) events"), 3);
	assert_int_equal(skipped(t, "flow (s/t/f) events"), 3);
	assert_int_equal(skipped(t, "sample (P) events"), 1);
	assert_int_equal(skipped(t, "object (N/O/D) events"), 1);
	assert_int_equal(skipped(t, "metadata (M) events"), 2);
	assert_int_equal(skipped(t, "events of other phases"), 1);
	/* Damage, not a phase: a two-letter ph and an event without one. */
	assert_int_equal(t->dropped, 2);
	rva_trace_free(t);
}

typedef struct dribble {
	const char *p;
	size_t left, step;
} dribble;

static ssize_t dribble_read(void *arg, uint8_t *buf, size_t cap, rva_error *err)
{
	dribble *d = arg;
	(void)err;
	size_t n = d->left < d->step ? d->left : d->step;
	if (n > cap)
		n = cap;
	memcpy(buf, d->p, n);
	d->p += n;
	d->left -= n;
	return (ssize_t)n;
}

static void assert_same_trace(const rva_trace *a, const rva_trace *b)
{
	assert_int_equal(a->nthreads, b->nthreads);
	assert_int_equal(a->nmethods, b->nmethods);
	assert_int_equal(a->dropped, b->dropped);
	assert_int_equal(a->nskipped, b->nskipped);
	for (size_t i = 0; i < a->nthreads; i++) {
		assert_int_equal(a->threads[i].ncalls, b->threads[i].ncalls);
		for (size_t k = 0; k < a->threads[i].ncalls; k++) {
			const rva_call *x = &a->threads[i].calls[k], *y = &b->threads[i].calls[k];
			assert_string_equal(a->names[x->method], b->names[y->method]);
			assert_int_equal(x->start, y->start);
			assert_int_equal(x->end, y->end);
			assert_int_equal(x->depth, y->depth);
		}
	}
}

/* Tokens cut anywhere (inside strings, numbers, literals, escapes) by the
 * chunks the file arrives in give the same trace. */
static void test_chrome_any_chunking_same_trace(void **state)
{
	(void)state;
	rva_trace *whole = import_str(every_phase);
	static const size_t steps[] = {1, 2, 3, 7, 64};
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		dribble d = {every_phase, strlen(every_phase), steps[s]};
		rva_trace *t;
		rva_error err = {{0}};
		if (rva_chrome_import_stream(dribble_read, &d, &t, &err) < 0)
			fail_msg("step %zu: %s", steps[s], err.msg);
		assert_same_trace(whole, t);
		rva_trace_free(t);
	}
	rva_trace_free(whole);
}

/* At equal times: ends of X frames, then X begins (longer first), then B
 * and E in file order, then ends of zero-length X frames. */
static void test_chrome_equal_timestamps_nest_in_order(void **state)
{
	(void)state;
	rva_trace *t = import_str(
		"[{\"ph\":\"B\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":10},"
		"{\"ph\":\"X\",\"name\":\"z\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":0},"
		"{\"ph\":\"X\",\"name\":\"short\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":8},"
		"{\"ph\":\"X\",\"name\":\"long\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":20},"
		"{\"ph\":\"X\",\"name\":\"prev\",\"pid\":1,\"tid\":1,\"ts\":4,\"dur\":6},"
		"{\"ph\":\"E\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":15}]");
	const rva_thread *th = &t->threads[0];
	assert_int_equal(th->ncalls, 5);
	static const char *const want[] = {"prev", "long", "short", "b", "z"};
	static const uint32_t depth[] = {0, 0, 1, 2, 3};
	static const int64_t end[] = {10000, 30000, 18000, 15000, 10000};
	for (size_t i = 0; i < 5; i++) {
		assert_string_equal(t->names[th->calls[i].method], want[i]);
		assert_int_equal(th->calls[i].depth, depth[i]);
		assert_int_equal(th->calls[i].end, end[i]);
	}
	assert_int_equal(t->dropped, 0);
	rva_trace_free(t);
}

/* Issue 20: pids and tids beyond 32 or 64 bits, or strings, are distinct
 * threads, never a refusal nor all folded into 0. */
static void test_chrome_big_and_string_ids_distinct_threads(void **state)
{
	(void)state;
	rva_trace *t = import_str(
		"[{\"ph\":\"X\",\"name\":\"a\",\"pid\":18446744073709551615,\"tid\":1,\"ts\":1,"
		"\"dur\":1},"
		"{\"ph\":\"X\",\"name\":\"a\",\"pid\":18446744073709551614,\"tid\":1,\"ts\":1,"
		"\"dur\":1},"
		"{\"ph\":\"X\",\"name\":\"a\",\"pid\":\"renderer\",\"tid\":1,\"ts\":1,\"dur\":1},"
		"{\"ph\":\"X\",\"name\":\"a\",\"pid\":7,\"tid\":1e0,\"ts\":1,\"dur\":1},"
		"{\"ph\":\"X\",\"name\":\"a\",\"pid\":7,\"tid\":1,\"ts\":3,\"dur\":1}]");
	assert_int_equal(t->nthreads, 4);
	rva_trace_free(t);
}

/* A file cut inside its events keeps every complete event and counts the
 * cut-off one as damage; an error inside the text is refused. */
static void test_chrome_truncation_kept_syntax_error_refused(void **state)
{
	(void)state;
	rva_trace *t =
		import_str("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,"
			   "\"tid\":1,\"ts\":1,\"dur\":2},{\"ph\":\"X\",\"name\":\"b\",\"ts");
	assert_int_equal(t->threads[0].ncalls, 1);
	assert_int_equal(t->dropped, 1);
	rva_trace_free(t);
	static const char *const bad[] = {
		"[{\"ph\":\"X\",\"ts\":1},x,{\"ph\":\"X\",\"ts\":1}]",
		"[{\"ph\": \"B\", \"ts\": ",
		"{\"notEvents\":[]}",
		"42",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rva_error err = {{0}};
		t = (rva_trace *)1;
		assert_int_equal(
			rva_chrome_import((const uint8_t *)bad[i], strlen(bad[i]), &t, &err),
			-EINVAL);
		assert_null(t);
		assert_true(err.msg[0]);
	}
}

static char *write_tmp(const void *b, size_t len)
{
	char *path = strdup("/tmp/rv-test-chrome-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t)len);
	close(fd);
	return path;
}

/* Files are streamed from disk, plain, gzip'd (two members) or zstd'd,
 * with the progress reported up to the file's size; a truncated
 * compressed file is an error naming its compression. */
static void test_chrome_streamed_files_plain_gzip_zstd_same_trace(void **state)
{
	(void)state;
	rva_trace *want = import_str(every_phase);
	size_t len = strlen(every_phase), cap = len + 1024, half = len / 2;
	uint8_t *gz = malloc(2 * cap), *zs = malloc(cap);
	size_t gl = 0;
	for (int m = 0; m < 2; m++) {
		z_stream z;
		memset(&z, 0, sizeof z);
		assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
				 Z_OK);
		z.next_in = (Bytef *)every_phase + (m ? half : 0);
		z.avail_in = (uInt)(m ? len - half : half);
		z.next_out = gz + gl;
		z.avail_out = (uInt)cap;
		assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
		gl += z.total_out;
		deflateEnd(&z);
	}
	size_t zl = ZSTD_compress(zs, cap, every_phase, len, 3);
	assert_false(ZSTD_isError(zl));
	const struct {
		const void *b;
		size_t len;
		const char *name;
	} files[] = {{every_phase, len, "plain"}, {gz, gl, "gzip"}, {zs, zl, "zstd"}};
	for (size_t i = 0; i < 3; i++) {
		char *path = write_tmp(files[i].b, files[i].len);
		rva_trace *t;
		rva_error err = {{0}};
		if (rva_import_file(path, &t, &err) < 0)
			fail_msg("%s: %s", files[i].name, err.msg);
		assert_string_equal(t->format, "chrome-json");
		assert_same_trace(want, t);
		rva_trace_free(t);
		unlink(path);
		free(path);
		if (i == 0)
			continue;
		path = write_tmp(files[i].b, files[i].len - 5);
		t = (rva_trace *)1;
		assert_true(rva_import_file(path, &t, &err) < 0);
		assert_null(t);
		assert_non_null(strstr(err.msg, files[i].name));
		unlink(path);
		free(path);
	}
	free(gz);
	free(zs);
	rva_trace_free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chrome_every_phase_kept_or_skipped_with_count),
		cmocka_unit_test(test_chrome_any_chunking_same_trace),
		cmocka_unit_test(test_chrome_equal_timestamps_nest_in_order),
		cmocka_unit_test(test_chrome_big_and_string_ids_distinct_threads),
		cmocka_unit_test(test_chrome_truncation_kept_syntax_error_refused),
		cmocka_unit_test(test_chrome_streamed_files_plain_gzip_zstd_same_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
