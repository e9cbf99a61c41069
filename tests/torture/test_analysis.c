/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_analysis.c — allocation-failure tests for librvanalysis' decoders
 * and importers: the capture decoder and its streaming summary, the
 * unshuffler, and the Android .trace, Chrome JSON, Perfetto, pprof, folded
 * and nanoscope importers (and the detecting rva_import).  Each input is made
 * here: a capture built from tracer/FORMAT.md (tests/rvtrace/capbuild.h),
 * decoded once, then exported to every other format, so nothing depends on
 * data outside the tree.  Every failing allocation must give -ENOMEM, no
 * crash and no leak (tests/torture/torture.h).
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
#include <zlib.h>

#include "capbuild.h"
#include "rearview/analysis.h"
#include "torture.h"

typedef int (*importer)(const uint8_t *, size_t, rva_trace **, rva_error *);
typedef int (*exporter)(FILE *, const rva_trace *);

/* What a complete import of one input looks like. */
struct shape {
	size_t nmethods, nthreads, ncalls;
};

/* One importer over one input, and the shape of its complete result. */
struct import_case {
	importer imp;
	const uint8_t *buf;
	size_t len;
	struct shape want;
};

static struct shape shape_of(const rva_trace *t)
{
	struct shape s = {t->nmethods, t->nthreads, 0};

	for (size_t i = 0; i < t->nthreads; i++)
		s.ncalls += t->threads[i].ncalls;
	return s;
}

/* The shared input: a small capture with two-slot values, unmatched exits,
 * a module, a symbol, an anomaly and a FRAMES record. */
static capbuf capture(void)
{
	capbuf c = {0};

	cb_header(&c, 1ull << 34, 1000000000, 2, 99999, 0x400000, 1);
	cb_slot(&c, 7ull << 32 | 1);
	for (uint32_t i = 0; i < 24; i++) {
		cb_entry(&c, i % 4 ? 0x1000 + i % 6 : 0xfff0000000000000ull + i, i * 1000);
		if (i % 3)
			cb_exit(&c, i * 1000 + 500);
	}
	cb_end_slots(&c);
	cb_module(&c, 0, 0x400000, 0x500000, "/bin/app");
	cb_symbol(&c, 0x1001, 0x1001, 0, "f");
	cb_anomaly(&c, 1, 5000, "jank");
	cb_record(&c, 14, cb_frames_value, sizeof(cb_frames_value)); /* FRAMES */
	cb_finish(&c);
	return c;
}

static int run_import(void *arg)
{
	const struct import_case *ic = arg;
	rva_trace *t = NULL;
	rva_error err;
	int rc = ic->imp(ic->buf, ic->len, &t, &err);

	if (rc == 0) {
		struct shape got = shape_of(t);

		rva_trace_free(t);
		if (memcmp(&got, &ic->want, sizeof(got)) != 0)
			print_message("incomplete result at allocation %lu\n", torture_point());
		assert_int_equal(got.nmethods, ic->want.nmethods);
		assert_int_equal(got.nthreads, ic->want.nthreads);
		assert_int_equal(got.ncalls, ic->want.ncalls);
	} else {
		assert_null(t);
	}
	return rc;
}

/* Decodes the capture (no failures armed) and exports it with `ex`. */
static char *exported(exporter ex, size_t *len)
{
	capbuf c = capture();
	rva_trace *t = NULL;
	rva_error err;
	char *out = NULL;
	FILE *f;

	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	f = open_memstream(&out, len);
	assert_non_null(f);
	assert_int_equal(ex(f, t), 0);
	assert_int_equal(fclose(f), 0);
	rva_trace_free(t);
	free(c.b);
	return out;
}

static void torture_import(importer imp, const void *buf, size_t len)
{
	struct import_case ic = {imp, buf, len, {0, 0, 0}};
	rva_trace *t = NULL;
	rva_error err;

	if (imp(buf, len, &t, &err) != 0)
		fail_msg("the input does not import: %s", err.msg);
	ic.want = shape_of(t);
	rva_trace_free(t);
	assert_true(torture_run(run_import, &ic, -ENOMEM) > 0);
}

static void test_analysis_capture_decode_each_alloc_failing_fails_cleanly(void **state)
{
	capbuf c = capture();

	torture_import(rva_capture_decode, c.b, c.len);
	free(c.b);
}

static int run_summarize(void *arg)
{
	const capbuf *c = arg;
	rva_summary s;
	rva_error err;
	int rc = rva_capture_summarize(c->b, c->len, &s, &err);

	if (rc == 0)
		rva_summary_release(&s);
	return rc;
}

static void test_analysis_capture_summarize_each_alloc_failing_fails_cleanly(void **state)
{
	capbuf c = capture();

	assert_int_equal(run_summarize(&c), 0);
	assert_true(torture_run(run_summarize, &c, -ENOMEM) > 0);
	free(c.b);
}

struct unshuffle_case {
	const uint8_t *shuffled;
	size_t len;
	uint8_t *out;
};

static int run_unshuffle(void *arg)
{
	struct unshuffle_case *uc = arg;
	rva_unshuffler *u;
	size_t len = 0;
	int rc = rva_unshuffler_new(uc->out, uc->len, &u);

	if (rc)
		return rc;
	for (size_t pos = 0; pos < uc->len && !rc; pos += 100)
		rc = rva_unshuffler_write(u, uc->shuffled + pos,
					  uc->len - pos < 100 ? uc->len - pos : 100);
	if (!rc)
		rc = rva_unshuffler_finish(u, &len);
	rva_unshuffler_free(u);
	return rc;
}

static void test_analysis_unshuffle_each_alloc_failing_fails_cleanly(void **state)
{
	capbuf c = capture();
	struct unshuffle_case uc = {.len = c.len};
	uint8_t *form = malloc(c.len);

	assert_non_null(form);
	uc.out = malloc(c.len);
	assert_non_null(uc.out);
	assert_int_equal(rva_shuffle_buf(c.b, c.len, form), 0);
	uc.shuffled = form;
	assert_int_equal(run_unshuffle(&uc), 0);
	assert_memory_equal(uc.out, c.b, c.len);
	torture_run(run_unshuffle, &uc, -ENOMEM);
	free(uc.out);
	free(form);
	free(c.b);
}

/* Exports the capture with `ex`, then tortures `imp` on it and, when the
 * format is one rva_detect() recognizes (nanoscope text is not), rva_import. */
static void torture_exported(exporter ex, importer imp, int detectable)
{
	size_t len = 0;
	char *buf = exported(ex, &len);

	torture_import(imp, buf, len);
	if (detectable)
		torture_import(rva_import, buf, len);
	free(buf);
}

static void test_analysis_android_import_each_alloc_failing_fails_cleanly(void **state)
{
	torture_exported(rva_export_android, rva_android_import, 1);
}

static void test_analysis_chrome_import_each_alloc_failing_fails_cleanly(void **state)
{
	torture_exported(rva_export_chrome, rva_chrome_import, 1);
}

static void test_analysis_perfetto_import_each_alloc_failing_fails_cleanly(void **state)
{
	torture_exported(rva_export_perfetto, rva_perfetto_import, 1);
}

static void test_analysis_folded_import_each_alloc_failing_fails_cleanly(void **state)
{
	torture_exported(rva_export_folded, rva_folded_import, 1);
}

/* rva_export_pprof writes gzip'd profile.proto; rva_pprof_import reads it
 * plain (rva_import inflates), so the plain form is inflated here. */
static void test_analysis_pprof_import_each_alloc_failing_fails_cleanly(void **state)
{
	size_t len = 0, cap = 1 << 20;
	char *gz = exported(rva_export_pprof, &len);
	uint8_t *plain = malloc(cap);
	z_stream z = {0};

	assert_non_null(plain);
	assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	z.next_out = plain;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	torture_import(rva_pprof_import, plain, z.total_out);
	inflateEnd(&z);
	torture_import(rva_import, gz, len);
	free(plain);
	free(gz);
}

static int export_nanoscope_thread0(FILE *f, const rva_trace *t)
{
	return rva_export_nanoscope(f, t, 0);
}

static void test_analysis_nanoscope_import_each_alloc_failing_fails_cleanly(void **state)
{
	torture_exported(export_nanoscope_thread0, rva_nanoscope_import, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_analysis_capture_decode_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_capture_summarize_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_unshuffle_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_android_import_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_chrome_import_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_perfetto_import_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_pprof_import_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_folded_import_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_analysis_nanoscope_import_each_alloc_failing_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
