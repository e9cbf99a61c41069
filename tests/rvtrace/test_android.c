/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_android.c — the Android .trace importer: all 28 dmtracedump golden
 * scenarios must reproduce the call trees written in their text files, the
 * perflib traces' quirks, a streaming trace built byte by byte, and
 * truncated / corrupted input.
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

#include <cmocka.h>

#include "rearview/analysis.h"

#ifndef RV_TESTDATA
#define RV_TESTDATA "../shared/testdata"
#endif
#define DMT	RV_TESTDATA "/android-trace/dmtracedump-tests"
#define PERFLIB RV_TESTDATA "/android-trace/perflib"

typedef struct xcall {
	unsigned tid, depth;
	char name[32];
	long start, end;
} xcall;

/* Parses a scenario: "time thread<spaces>Name", spaces − 1 = depth; the
 * second line of a name at the innermost open depth is its exit.  Fills
 * calls in pre-order per thread (sorted by tid, then entry order). */
static size_t parse_scenario(const char *path, xcall *out, size_t max)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[256];
	size_t n = 0;
	size_t stack[2][64], sn[2] = {0, 0};
	unsigned tids[2] = {0, 0};
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char *p = line, *e;
		long time = strtol(p, &e, 10);
		assert_true(e != p && *e == ' ');
		p = e + 1;
		unsigned tid = (unsigned)strtoul(p, &e, 10);
		assert_true(e != p && *e == ' ');
		p = e;
		unsigned sp = 0;
		while (*p == ' ') {
			sp++;
			p++;
		}
		size_t nl = strcspn(p, "\r\n");
		p[nl] = '\0';
		size_t ti = tids[0] == tid || tids[0] == 0 ? 0 : 1;
		tids[ti] = tid;
		unsigned depth = sp - 1;
		if (sn[ti] == depth + 1 && strcmp(out[stack[ti][depth]].name, p) == 0) {
			out[stack[ti][depth]].end = time;
			sn[ti]--;
			continue;
		}
		assert_int_equal(sn[ti], depth);
		assert_true(n < max);
		out[n].tid = tid;
		out[n].depth = depth;
		snprintf(out[n].name, sizeof(out[n].name), "%s", p);
		out[n].start = time;
		out[n].end = -1;
		stack[ti][sn[ti]++] = n++;
	}
	fclose(f);
	return n;
}

static void check_scenario(const char *name)
{
	char path[1024];
	xcall want[64];
	snprintf(path, sizeof(path), "%s/%s", DMT, name);
	size_t n = parse_scenario(path, want, 64);
	assert_true(n > 0);
	snprintf(path, sizeof(path), "%s/%sTrace", DMT, name);
	rva_trace *t;
	rva_error err = {{0}};
	if (rva_import_file(path, &t, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	assert_int_equal(t->dropped, 0);
	size_t got = 0;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (want[i].tid != th->tid)
				continue;
			if (k >= th->ncalls)
				fail_msg("%s: thread %u has too few calls", name, th->tid);
			const rva_call *c = &th->calls[k++];
			const char *mn = t->names[c->method];
			size_t wl = strlen(want[i].name);
			if (strncmp(mn, want[i].name, wl) != 0 || mn[wl] != '.')
				fail_msg("%s: call %zu is %s, want %s", name, i, mn, want[i].name);
			assert_int_equal(c->depth, want[i].depth);
			assert_int_equal(c->start, want[i].start * 1000);
			assert_int_equal(c->end, want[i].end * 1000);
		}
		assert_int_equal(k, th->ncalls);
		got += k;
	}
	assert_int_equal(got, n);
	rva_trace_free(t);
}

static void test_android_dmtracedump_golden_trees_match(void **state)
{
	DIR *d = opendir(DMT);
	if (!d)
		skip();
	struct dirent *e;
	int scenarios = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "test", 4) != 0 || strcmp(e->d_name, "testFilters") == 0 ||
		    (l > 5 && strcmp(e->d_name + l - 5, "Trace") == 0))
			continue;
		check_scenario(e->d_name);
		scenarios++;
	}
	closedir(d);
	assert_int_equal(scenarios, 28);
}

static rva_trace *load(const char *path)
{
	rva_trace *t;
	rva_error err = {{0}};
	if (rva_import_file(path, &t, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	return t;
}

static const rva_thread *busiest(const rva_trace *t)
{
	const rva_thread *b = &t->threads[0];
	for (size_t i = 1; i < t->nthreads; i++)
		if (t->threads[i].ncalls > b->ncalls)
			b = &t->threads[i];
	return b;
}

static void test_android_perflib_quirks_handled(void **state)
{
	FILE *probe = fopen(PERFLIB "/basic.trace", "rb");
	if (!probe)
		skip();
	fclose(probe);
	/* v1, 9-byte records, Method* ids. */
	rva_trace *t = load(PERFLIB "/basic-api10.trace");
	assert_int_equal(t->nthreads, 8);
	assert_int_equal(busiest(t)->ncalls, 7);
	assert_string_equal(busiest(t)->name, "AsyncTask #1");
	assert_false(t->has_cpu); /* one clock: it is the timeline */
	rva_trace_free(t);
	/* v3 dual; first record is the exit of startMethodTracing. */
	t = load(PERFLIB "/basic.trace");
	const rva_thread *th = busiest(t);
	int64_t smt =
		rva_method_find(t, "android.os.Debug.startMethodTracing(Ljava/lang/String;)V");
	assert_true(smt >= 0);
	assert_int_equal(th->calls[0].method, smt);
	assert_int_equal(th->calls[0].start, t->start);
	assert_int_equal(t->dropped, 0);
	assert_true(t->has_cpu);
	assert_non_null(th->cpu);
	rva_trace_free(t);
	/* Three unwind exits; all frames closed, none dropped. */
	t = load(PERFLIB "/exception.trace");
	assert_int_equal(t->dropped, 0);
	assert_int_equal(busiest(t)->ncalls, 14);
	rva_trace_free(t);
	/* 3 enters, 6 exits. */
	t = load(PERFLIB "/mismatched.trace");
	assert_int_equal(t->dropped, 0);
	assert_int_equal(busiest(t)->ncalls, 8);
	rva_trace_free(t);
	/* Key section only: threads and no calls, flagged. */
	t = load(PERFLIB "/header.trace");
	assert_int_equal(t->dropped, 1);
	assert_int_equal(busiest(t)->ncalls, 0);
	rva_trace_free(t);
}

typedef struct buf {
	uint8_t b[4096];
	size_t n;
} buf;

static void put(buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put16(buf *b, uint16_t v)
{
	uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
	put(b, x, 2);
}

static void put32(buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	put(b, x, 4);
}

static void srec(buf *b, uint16_t tid, uint32_t word, uint32_t cpu, uint32_t wall)
{
	put16(b, tid);
	put32(b, word);
	put32(b, cpu);
	put32(b, wall);
}

typedef struct drec {
	uint32_t word, cpu, wall;
} drec;

/* ART streaming 0xF3: method and thread packets, records r[0..n) of thread
 * 7 "main", summary. */
static void build_streaming_recs(buf *b, const drec *r, size_t n)
{
	uint8_t hdr[32] = {'S', 'L', 'O', 'W', 0xf3, 0, 32, 0};
	hdr[16] = 14;
	b->n = 0;
	put(b, hdr, 32);
	static const char m1[] = "0x4\tcom.a.Main\trun\t()V\tMain.java\n";
	static const char m2[] = "0x8\tcom.a.Main\tstep\t(I)V\tMain.java\n";
	put16(b, 0);
	put(b, "\x01", 1);
	put16(b, sizeof(m1) - 1);
	put(b, m1, sizeof(m1) - 1);
	put16(b, 0);
	put(b, "\x01", 1);
	put16(b, sizeof(m2) - 1);
	put(b, m2, sizeof(m2) - 1);
	put16(b, 0);
	put(b, "\x02", 1);
	put16(b, 7);
	put16(b, 4);
	put(b, "main", 4);
	for (size_t i = 0; i < n; i++)
		srec(b, 7, r[i].word, r[i].cpu, r[i].wall);
	static const char sum[] = "*version\n3\nclock=dual\n*threads\n7\tmain\n*methods\n*end\n";
	put16(b, 0);
	put(b, "\x03", 1);
	put32(b, sizeof(sum) - 1);
	put(b, sum, sizeof(sum) - 1);
}

/* Records of which one id is never defined. */
static void build_streaming(buf *b)
{
	static const drec r[] = {{0x4, 0, 100}, {0x8, 1, 110},
				 {0x9, 2, 150}, {0xc, 3, 160}, /* id 0xc never defined */
				 {0xd, 4, 170}, {0x5, 5, 200}};
	build_streaming_recs(b, r, sizeof(r) / sizeof(r[0]));
}

/* Dual clock: wall stays the timeline, each call carries its thread-CPU
 * time, across a wrap of the 32-bit CPU clock and through the dummy exit
 * of a frame closed by its caller's exit; statistics and the summary JSON
 * show it. */
static void test_android_dual_clock_cpu_time_per_call(void **state)
{
	(void)state;
	static const drec r[] = {
		{0x4, 0xffffff00u, 100}, /* enter run */
		{0x8, 0xffffff10u, 110}, /* enter step */
		{0x9, 0x00000010u, 400}, /* exit step: CPU wrapped, 256 µs */
		{0x8, 0x00000020u, 410}, /* enter step */
		{0x5, 0x00000030u, 500}, /* exit run, closing step (16 µs) */
	};
	buf b;
	build_streaming_recs(&b, r, sizeof(r) / sizeof(r[0]));
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_import(b.b, b.n, &t, &err), 0);
	assert_true(t->has_cpu);
	const rva_thread *th = &t->threads[0];
	assert_int_equal(th->ncalls, 3);
	assert_non_null(th->cpu);
	assert_int_equal(th->calls[0].end - th->calls[0].start, 400000);
	assert_int_equal(th->cpu[0], 0x130 * 1000);
	assert_int_equal(th->calls[1].end - th->calls[1].start, 290000);
	assert_int_equal(th->cpu[1], 256000);
	assert_int_equal(th->calls[2].end - th->calls[2].start, 90000);
	assert_int_equal(th->cpu[2], 16000);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	int64_t run = rva_method_find(t, "com.a.Main.run()V");
	int64_t step = rva_method_find(t, "com.a.Main.step(I)V");
	assert_true(run >= 0 && step >= 0);
	assert_int_equal(st[run].incl, 400000);
	assert_int_equal(st[run].self, 20000);
	assert_int_equal(st[run].cpu_incl, 304000);
	assert_int_equal(st[run].cpu_self, 32000);
	assert_int_equal(st[step].calls, 2);
	assert_int_equal(st[step].cpu_incl, 272000);
	assert_int_equal(st[step].cpu_self, 272000);
	free(st);
	char *doc = NULL;
	size_t dlen = 0;
	FILE *f = open_memstream(&doc, &dlen);
	assert_non_null(f);
	assert_int_equal(rva_summary_json(f, t, -1, 5), 0);
	fclose(f);
	assert_non_null(strstr(doc,
			       "\"method\":\"com.a.Main.step(I)V\",\"calls\":2,\"incl\":380000,"
			       "\"self\":380000,\"cpu_incl\":272000,\"cpu_self\":272000}"));
	free(doc);
	/* Appending keeps the CPU times; a window slice drops them. */
	rva_trace *all = rva_trace_new();
	assert_non_null(all);
	assert_int_equal(rva_trace_append(all, t), 0);
	assert_true(all->has_cpu);
	assert_int_equal(all->threads[0].cpu[1], 256000);
	rva_trace *sl = rva_trace_slice(t, t->start, t->end);
	assert_non_null(sl);
	assert_false(sl->has_cpu);
	rva_trace_free(sl);
	rva_trace_free(all);
	rva_trace_free(t);
}

static void test_android_streaming_built_bytewise(void **state)
{
	buf b;
	build_streaming(&b);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_detect(b.b, b.n), RVA_FMT_ANDROID);
	assert_int_equal(rva_import(b.b, b.n, &t, &err), 0);
	assert_string_equal(t->format, "android-trace-streaming");
	assert_int_equal(t->nthreads, 1);
	assert_string_equal(t->threads[0].name, "main");
	const rva_thread *th = &t->threads[0];
	assert_int_equal(th->ncalls, 3);
	assert_string_equal(t->names[th->calls[0].method], "com.a.Main.run()V");
	assert_int_equal(th->calls[0].end - th->calls[0].start, 100000);
	assert_string_equal(t->names[th->calls[1].method], "com.a.Main.step(I)V");
	assert_int_equal(th->calls[1].end - th->calls[1].start, 40000);
	assert_string_equal(t->names[th->calls[2].method], "unknown-method-0xc");
	assert_int_equal(th->calls[2].depth, 1);
	rva_trace_free(t);
}

static void test_android_truncated_and_corrupt_never_crash(void **state)
{
	buf b;
	build_streaming(&b);
	for (size_t n = 0; n <= b.n; n++) {
		rva_trace *t = NULL;
		rva_error err;
		if (rva_android_import(b.b, n, &t, &err) == 0)
			rva_trace_free(t);
		else
			assert_null(t);
	}
	FILE *f = fopen(PERFLIB "/exception.trace", "rb");
	if (!f)
		skip();
	uint8_t orig[4096], cur[4096];
	size_t len = fread(orig, 1, sizeof(orig), f);
	fclose(f);
	for (size_t n = 0; n <= len; n += 7) {
		rva_trace *t = NULL;
		rva_error err;
		if (rva_android_import(orig, n, &t, &err) == 0)
			rva_trace_free(t);
	}
	uint64_t seed = 42;
	for (int round = 0; round < 2000; round++) {
		memcpy(cur, orig, len);
		for (int k = 0; k < 1 + round % 6; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			cur[(seed >> 33) % len] = (uint8_t)(seed >> 24);
		}
		rva_trace *t = NULL;
		rva_error err;
		if (rva_android_import(cur, len, &t, &err) == 0)
			rva_trace_free(t);
	}
}

static void test_android_export_header_and_record_count(void **state)
{
	FILE *probe = fopen(PERFLIB "/exception.trace", "rb");
	if (!probe)
		skip();
	fclose(probe);
	rva_trace *t = load(PERFLIB "/exception.trace");
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	assert_int_equal(rva_export_android(f, t), 0);
	fclose(f);
	assert_memory_equal(out, "*version\n3\n", 11);
	const char *n = strstr(out, "num-method-calls=");
	assert_non_null(n);
	long calls = strtol(n + 17, NULL, 10);
	assert_int_equal(calls, 28); /* 14 calls: an enter and an exit each */
	const char *end = strstr(out, "*end\n");
	assert_non_null(end);
	const uint8_t *d = (const uint8_t *)end + 5;
	size_t dl = len - (size_t)(d - (const uint8_t *)out);
	assert_memory_equal(d, "SLOW", 4);
	assert_int_equal(d[4] | d[5] << 8, 3);
	assert_int_equal(d[6] | d[7] << 8, 32);
	assert_int_equal(d[16] | d[17] << 8, 14);
	assert_int_equal((dl - 32) % 14, 0);
	assert_int_equal((dl - 32) / 14, calls);
	/* And it reads back as the same tree. */
	rva_trace *u;
	rva_error err;
	assert_int_equal(rva_import((const uint8_t *)out, len, &u, &err), 0);
	assert_int_equal(busiest(u)->ncalls, 14);
	for (size_t i = 0; i < 14; i++) {
		assert_string_equal(t->names[busiest(t)->calls[i].method],
				    u->names[busiest(u)->calls[i].method]);
		assert_int_equal(busiest(t)->calls[i].depth, busiest(u)->calls[i].depth);
	}
	free(out);
	rva_trace_free(u);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_android_dmtracedump_golden_trees_match),
		cmocka_unit_test(test_android_perflib_quirks_handled),
		cmocka_unit_test(test_android_streaming_built_bytewise),
		cmocka_unit_test(test_android_dual_clock_cpu_time_per_call),
		cmocka_unit_test(test_android_truncated_and_corrupt_never_crash),
		cmocka_unit_test(test_android_export_header_and_record_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
