/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_import.c — every trace file of the shared test data imports through
 * detection; Chrome JSON specifics (truncated arrays, object form, X/B/E
 * mixes) and the Chrome JSON round trip.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>
#include <zstd.h>

#include "capbuild.h"
#include "rearview/analysis.h"

#ifndef RV_TESTDATA
#define RV_TESTDATA "../shared/testdata"
#endif
#define CJ RV_TESTDATA "/chrome-json"

/* Files in the test data that are not traces. */
static int is_trace(const char *dir, const char *name)
{
	size_t l = strlen(name);
	if (strcmp(name, "SOURCES.md") == 0 || strncmp(name, "README", 6) == 0 ||
	    strcmp(name, "testFilters") == 0)
		return 0;
	/* dmtracedump scenario text files sit beside their <name>Trace. */
	if (strstr(dir, "dmtracedump-tests") && !(l > 5 && strcmp(name + l - 5, "Trace") == 0))
		return 0;
	return 1;
}

static int walk(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[2048];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			walk(path, count);
			continue;
		}
		if (!is_trace(dir, e->d_name))
			continue;
		rva_trace *t = NULL;
		rva_error err = {{0}};
		int rc = rva_import_file(path, &t, &err);
		if (rc < 0)
			fail_msg("%s: %s (%d)", path, err.msg, rc);
		rva_mstat *ms;
		assert_int_equal(rva_method_stats(t, &ms), 0);
		free(ms);
		rva_trace_free(t);
		(*count)++;
	}
	closedir(d);
	return 0;
}

static void test_import_every_testdata_file_imports(void **state)
{
	int count = 0;
	if (walk(RV_TESTDATA, &count) < 0)
		skip();
	/* 5 perflib + 28 dmtracedump + 25 JSON + 11 folded + 3 Perfetto. */
	assert_int_equal(count, 72);
}

static rva_trace *load(const char *path)
{
	rva_trace *t = NULL;
	rva_error err = {{0}};
	if (rva_import_file(path, &t, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	return t;
}

static void test_import_chrome_truncated_arrays_repaired(void **state)
{
	FILE *probe = fopen(CJ "/speedscope-edge-cases/simple-partial.json", "r");
	if (!probe)
		skip();
	fclose(probe);
	static const char *names[] = {"simple-partial.json", "simple-partial-trailing-comma.json",
				      "simple-partial-whitespace.json"};
	for (size_t i = 0; i < 3; i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/speedscope-edge-cases/%s", CJ, names[i]);
		rva_trace *t = load(path);
		assert_string_equal(t->format, "chrome-json");
		assert_int_equal(t->threads[0].ncalls, 4);
		rva_mstat *st;
		assert_int_equal(rva_method_stats(t, &st), 0);
		int64_t alpha = rva_method_find(t, "alpha"), gamma = rva_method_find(t, "gamma");
		assert_int_equal(st[alpha].incl, 14000);
		assert_int_equal(st[gamma].incl, 5000);
		free(st);
		rva_trace_free(t);
	}
	/* Garbage that is not repairable is an error with a message. */
	static const char bad[] = "[{\"ph\": \"B\", \"ts\": ";
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_chrome_import((const uint8_t *)bad, sizeof(bad) - 1, &t, &err),
			 -EINVAL);
	assert_true(err.msg[0]);
}

/* Issue 20: a current Chrome trace stopped at `too big integer near
 * '18446744064077150000'` — JSON allows any number; ids and addresses past
 * int64 must not refuse the file. */
static void test_import_chrome_unsigned_64_bit_ids_accepted(void **state)
{
	static const char in[] =
		"{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"draw\",\"pid\":7,\"tid\":8,\"ts\":100,"
		"\"dur\":40,\"id\":18446744064077150000,\"args\":{\"addr\":18446744073709551615,"
		"\"neg\":-9223372036854775809}},"
		"{\"ph\":\"X\",\"name\":\"paint\",\"pid\":7,\"tid\":8,\"ts\":110,\"dur\":10}]}";
	rva_trace *t;
	rva_error err = {{0}};
	int rc = rva_import((const uint8_t *)in, sizeof(in) - 1, &t, &err);
	if (rc != 0)
		fail_msg("refused: %s", err.msg);
	assert_int_equal(t->threads[0].ncalls, 2);
	assert_int_equal(t->threads[0].pid, 7);
	assert_int_equal(t->threads[0].tid, 8);
	assert_int_equal(t->threads[0].calls[1].depth, 1);
	rva_trace_free(t);
}

/* Compresses in with gzip (zlib's gzip wrapper) or zstd. */
static uint8_t *compress_as(int zstd, const void *in, size_t len, size_t *outlen)
{
	size_t cap = len + 1024;
	uint8_t *out = malloc(cap);
	assert_non_null(out);
	if (zstd) {
		*outlen = ZSTD_compress(out, cap, in, len, 3);
		assert_false(ZSTD_isError(*outlen));
		return out;
	}
	z_stream z;
	memset(&z, 0, sizeof z);
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = z.total_out;
	deflateEnd(&z);
	return out;
}

/* Issue 20: `.json.gz` (and gzip'd Perfetto, zstd'd anything) were
 * "unrecognized trace format".  By magic, not name: the same calls as the
 * plain file, through the API and through rvtrace; two gzip members
 * concatenated are one file as zcat reads it. */
static void test_import_gzip_and_zstd_input_by_magic(void **state)
{
	static const char in[] =
		"[{\"ph\":\"X\",\"name\":\"outer\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":9},"
		"{\"ph\":\"X\",\"name\":\"inner\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2}]";
	for (int zstd = 0; zstd < 2; zstd++) {
		size_t zl;
		uint8_t *z = compress_as(zstd, in, sizeof(in) - 1, &zl);
		rva_trace *t;
		rva_error err = {{0}};
		assert_int_equal(rva_compression_of(z, zl),
				 zstd ? RVA_COMPRESSED_ZSTD : RVA_COMPRESSED_GZIP);
		if (rva_import(z, zl, &t, &err) != 0)
			fail_msg("%s: %s", zstd ? "zstd" : "gzip", err.msg);
		assert_string_equal(t->format, "chrome-json");
		assert_int_equal(t->threads[0].ncalls, 2);
		rva_trace_free(t);
		/* Truncated: a clear error, never a partial trace. */
		t = (rva_trace *)1;
		assert_true(rva_import(z, zl - 3, &t, &err) < 0);
		assert_null(t);
		assert_true(strstr(err.msg, zstd ? "zstd" : "gzip") != NULL);
		free(z);
	}
	/* Two gzip members: "[...]" split across them. */
	size_t l1, l2;
	uint8_t *a = compress_as(0, in, 40, &l1),
		*b = compress_as(0, in + 40, sizeof(in) - 41, &l2);
	uint8_t *cat = malloc(l1 + l2);
	memcpy(cat, a, l1);
	memcpy(cat + l1, b, l2);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_import(cat, l1 + l2, &t, &err), 0);
	assert_int_equal(t->threads[0].ncalls, 2);
	rva_trace_free(t);
	free(a);
	free(b);
	free(cat);
}

/* A small zstd file that inflates past the limit is refused once it passes
 * it, whatever its frame header declares; memory stays at the limit. */
static void test_import_compression_bomb_bounded(void **state)
{
	size_t n = 8u << 20, zl;
	uint8_t *zeros = calloc(1, n), *out = NULL;
	size_t outlen = 0;
	uint8_t *z = compress_as(1, zeros, n, &zl);
	rva_error err = {{0}};
	assert_true(zl < 4096);
	assert_int_equal(rva_decompress(z, zl, 1u << 20, &out, &outlen, &err), -EFBIG);
	assert_null(out);
	assert_non_null(strstr(err.msg, "inflates past"));
	/* Under a limit it fits, it inflates whole. */
	assert_int_equal(rva_decompress(z, zl, n, &out, &outlen, &err), 0);
	assert_int_equal(outlen, n);
	free(out);
	free(z);
	free(zeros);
}

static void test_import_chrome_object_form_and_thread_names(void **state)
{
	static const char in[] =
		"{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,"
		"\"args\":{\"name\":\"worker\"}},"
		"{\"ph\":\"X\",\"name\":\"outer\",\"pid\":1,\"tid\":2,\"ts\":10,\"dur\":5.5},"
		"{\"ph\":\"X\",\"name\":\"inner\",\"pid\":1,\"tid\":2,\"ts\":10,\"dur\":2},"
		"{\"ph\":\"C\",\"name\":\"ctr\",\"pid\":1,\"tid\":2,\"ts\":11},"
		"{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":20}],\"displayTimeUnit\":\"ns\"}";
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_import((const uint8_t *)in, sizeof(in) - 1, &t, &err), 0);
	assert_int_equal(t->nthreads, 1);
	assert_string_equal(t->threads[0].name, "worker");
	assert_int_equal(t->threads[0].ncalls, 2);
	/* Same start: the longer X is the parent. */
	assert_string_equal(t->names[t->threads[0].calls[0].method], "outer");
	assert_int_equal(t->threads[0].calls[0].end - t->threads[0].calls[0].start, 5500);
	assert_int_equal(t->threads[0].calls[1].depth, 1);
	assert_int_equal(t->dropped, 1); /* the nameless E with nothing open */
	rva_trace_free(t);
}

static void test_import_chrome_round_trip_preserves_calls_and_times(void **state)
{
	capbuf c = {0};
	cb_header(&c, 1000000, 1000000000, 0, 5000000, 0x400000, 0);
	for (uint32_t i = 0; i < 30; i++) {
		cb_entry(&c, 0x1000, i * 3001);
		cb_entry(&c, 0x2000, i * 3001 + 7);
		cb_entry(&c, 0x2000, i * 3001 + 9);
		cb_exit(&c, i * 3001 + 1234);
		cb_exit(&c, i * 3001 + 1999);
		cb_exit(&c, i * 3001 + 2999);
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1000, 0x1000, 0, "outer \"q\" \\ \n");
	cb_symbol(&c, 0x2000, 0x2000, 0, "rec");
	cb_finish(&c);
	rva_trace *t, *u;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	free(c.b);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_chrome(f, t), 0);
	fclose(f);
	if (rva_import((const uint8_t *)buf, len, &u, &err) < 0)
		fail_msg("%s", err.msg);
	rva_mstat *a, *b;
	assert_int_equal(rva_method_stats(t, &a), 0);
	assert_int_equal(rva_method_stats(u, &b), 0);
	for (size_t i = 0; i < t->nmethods; i++) {
		int64_t j = rva_method_find(u, t->names[i]);
		assert_true(j >= 0);
		assert_int_equal(a[i].calls, b[j].calls);
		assert_int_equal(a[i].incl, b[j].incl);
		assert_int_equal(a[i].self, b[j].self);
	}
	free(a);
	free(b);
	free(buf);
	rva_trace_free(t);
	rva_trace_free(u);
}

static void test_import_perfetto_tokio_slices_sorted_and_paired(void **state)
{
	FILE *probe = fopen(RV_TESTDATA "/perfetto/tokio-slices/test.pftrace", "rb");
	if (!probe)
		skip();
	fclose(probe);
	rva_trace *t = load(RV_TESTDATA "/perfetto/tokio-slices/test.pftrace");
	assert_string_equal(t->format, "perfetto");
	size_t calls = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		calls += t->threads[i].ncalls;
		for (size_t k = 1; k < t->threads[i].ncalls; k++)
			assert_true(t->threads[i].calls[k].start >=
				    t->threads[i].calls[k - 1].start);
	}
	assert_int_equal(calls, 20013);
	assert_int_equal(t->nthreads, 9);
	assert_int_equal(t->dropped, 0);
	rva_trace_free(t);
}

static void test_import_perfetto_export_decodes_with_protoc_and_round_trips(void **state)
{
	rva_trace *t = load("tests/rvtrace/fixtures/nanoscope-basic.txt");
	char dir[] = "/tmp/rvtrace-pf-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256], txt[256], cmd[1024];
	snprintf(path, sizeof(path), "%s/out.pftrace", dir);
	snprintf(txt, sizeof(txt), "%s/out.txt", dir);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(rva_export_perfetto(f, t), 0);
	fclose(f);
	rva_trace *u = load(path);
	assert_string_equal(u->format, "perfetto");
	rva_mstat *a, *b;
	assert_int_equal(rva_method_stats(t, &a), 0);
	assert_int_equal(rva_method_stats(u, &b), 0);
	for (size_t i = 0; i < t->nmethods; i++) {
		int64_t j = rva_method_find(u, t->names[i]);
		assert_true(j >= 0);
		assert_int_equal(a[i].calls, b[j].calls);
		assert_int_equal(a[i].incl, b[j].incl);
	}
	free(a);
	free(b);
	/* An independent decoder: protoc against the schema. */
	snprintf(cmd, sizeof(cmd),
		 "protoc --proto_path=tracer/analysis/proto --decode=rvpf.Trace "
		 "rvperfetto.proto < %s > %s 2>&1",
		 path, txt);
	assert_int_equal(system(cmd), 0);
	f = fopen(txt, "r");
	assert_non_null(f);
	char text[65536];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_non_null(strstr(text, "track_descriptor"));
	assert_non_null(strstr(text, "name: \"void com.example.Main.inflate()\""));
	int begins = 0, ends = 0;
	for (char *p = text; (p = strstr(p, "type: ")); p += 6)
		p[6] == '1' ? begins++ : ends++;
	assert_int_equal(begins, 4);
	assert_int_equal(ends, 4);
	unlink(path);
	unlink(txt);
	rmdir(dir);
	rva_trace_free(t);
	rva_trace_free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_every_testdata_file_imports),
		cmocka_unit_test(test_import_chrome_truncated_arrays_repaired),
		cmocka_unit_test(test_import_chrome_object_form_and_thread_names),
		cmocka_unit_test(test_import_chrome_unsigned_64_bit_ids_accepted),
		cmocka_unit_test(test_import_gzip_and_zstd_input_by_magic),
		cmocka_unit_test(test_import_compression_bomb_bounded),
		cmocka_unit_test(test_import_chrome_round_trip_preserves_calls_and_times),
		cmocka_unit_test(test_import_perfetto_tokio_slices_sorted_and_paired),
		cmocka_unit_test(test_import_perfetto_export_decodes_with_protoc_and_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
