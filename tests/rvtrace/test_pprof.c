/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pprof.c — pprof import: profiles written by Go's runtime/pprof,
 * Go's pprof tool, fgprof and two Node.js profilers (npm pprof,
 * @datadog/pprof)
 * (tests/rvtrace/corpus/pprof, SOURCES.md there) import as aggregated
 * stacks whose self and inclusive totals per function equal what Go's own
 * `go tool pprof -top` printed for them (flat and cum, committed beside
 * them), and so do rvtrace's pprof exports of them read back; rvtrace's
 * pprof export of a capture imports back with the same self times
 * and carries its unresolved methods' modules as mappings with build ids; a
 * plain (not gzip'd) profile is told from a Perfetto trace.
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

#include "capbuild.h"
#include "rearview/analysis.h"
#include "rvpprof.pb-c.h"

#ifndef RV_CORPUS
#define RV_CORPUS "tests/rvtrace/corpus"
#endif

/* Every function row of a `go tool pprof -top` listing (values in one
 * unit, suffix ns or B) against the trace's self (flat) and inclusive
 * (cum) totals.  Returns the rows compared. */
static int agree_with_top(const rva_trace *t, const char *top)
{
	FILE *f = fopen(top, "r");
	assert_non_null(f);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	char line[1024];
	int rows = 0, header = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, "flat%")) {
			header = 1;
			continue;
		}
		if (!header)
			continue;
		/* flat flat% sum% cum cum% name: the values are integers
		 * with a unit suffix, or a bare 0. */
		char *tok[5], *p = line;
		for (int k = 0; k < 5; k++) {
			p += strspn(p, " ");
			tok[k] = p;
			p += strcspn(p, " ");
			if (!*p)
				fail_msg("unparsed row: %s", line);
			*p++ = '\0';
		}
		long long flat = strtoll(tok[0], NULL, 10), cum = strtoll(tok[3], NULL, 10);
		const char *name = p + strspn(p, " ");
		char *inl = strstr(p, " (inline)");
		if (inl)
			*inl = '\0';
		int64_t m = rva_method_find(t, name);
		if (m < 0)
			fail_msg("%s: no method %s", top, name);
		if (st[m].self != flat || st[m].incl != cum)
			fail_msg("%s: self %lld incl %lld, go tool pprof says flat %lld cum %lld",
				 name, (long long)st[m].self, (long long)st[m].incl, flat, cum);
		rows++;
	}
	fclose(f);
	free(st);
	return rows;
}

static rva_trace *load(const char *path)
{
	rva_trace *t = NULL;
	rva_error err = {{0}};
	if (rva_import_file(path, &t, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	return t;
}

static void test_pprof_real_profiles_and_round_trip_agree_with_go_tool_pprof_top(void **state)
{
	(void)state;
	static const struct {
		const char *file, *top, *thread;
		int weighted;
	} cases[] = {
		{"go-cpu.pb.gz", "go-cpu.top.txt", "pprof cpu/nanoseconds", 0},
		{"go-heap.pb.gz", "go-heap.top.txt", "pprof inuse_space/bytes", 1},
		{"go-block.pb.gz", "go-block.top.txt", "pprof delay/nanoseconds", 0},
		{"pprof-proto-rewrite.pb.gz", "pprof-proto-rewrite.top.txt",
		 "pprof inuse_space/bytes", 1},
		{"google-node-wall.pb.gz", "google-node-wall.top.txt", "pprof wall/microseconds",
		 0},
		{"google-node-heap.pb.gz", "google-node-heap.top.txt", "pprof space/bytes", 1},
		{"datadog-node-wall.pb.gz", "datadog-node-wall.top.txt", "pprof wall/nanoseconds",
		 0},
		{"datadog-node-heap.pb.gz", "datadog-node-heap.top.txt", "pprof inuse_space/bytes",
		 1},
		{"fgprof-wall.pb.gz", "fgprof-wall.top.txt", "pprof time/nanoseconds", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[512], top[512];
		snprintf(path, sizeof path, "%s/pprof/%s", RV_CORPUS, cases[i].file);
		snprintf(top, sizeof top, "%s/pprof/%s", RV_CORPUS, cases[i].top);
		rva_trace *t = load(path);
		assert_string_equal(t->format, "pprof");
		assert_int_equal(t->weighted, cases[i].weighted);
		assert_int_equal(t->nthreads, 1);
		assert_string_equal(t->threads[0].name, cases[i].thread);
		assert_int_equal(t->dropped, 0);
		int rows = agree_with_top(t, top);
		assert_true(rows >= 5);
		/* Round trip: rvtrace's own pprof of it reads back with the
		 * same figures. */
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_int_equal(rva_export_pprof(f, t), 0);
		fclose(f);
		rva_trace *u;
		rva_error err = {{0}};
		if (rva_import((const uint8_t *)buf, len, &u, &err) < 0)
			fail_msg("%s round trip: %s", path, err.msg);
		assert_int_equal(agree_with_top(u, top), rows);
		rva_trace_free(u);
		free(buf);
		rva_trace_free(t);
	}
}

/* rvtrace's own pprof (default type wall time) imports back as the same
 * self and inclusive times per method, from the gzip'd file and plain. */
static void test_pprof_export_round_trip_same_times(void **state)
{
	(void)state;
	capbuf c = {0};
	cb_header(&c, 1000000, 1000000000, 0, 5000000, 0x400000, 0);
	for (uint32_t i = 0; i < 20; i++) {
		cb_entry(&c, 0x1000, i * 3001);
		cb_entry(&c, 0x2000, i * 3001 + 7);
		cb_exit(&c, i * 3001 + 1234);
		cb_entry(&c, 0x3000, i * 3001 + 1300);
		cb_exit(&c, i * 3001 + 2000);
		cb_exit(&c, i * 3001 + 2999);
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1000, 0x1000, 0, "outer");
	cb_symbol(&c, 0x2000, 0x2000, 0, "left");
	cb_symbol(&c, 0x3000, 0x3000, 0, "right");
	cb_finish(&c);
	rva_trace *t, *u;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	free(c.b);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_pprof(f, t), 0);
	fclose(f);
	if (rva_import((const uint8_t *)buf, len, &u, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(u->format, "pprof");
	assert_string_equal(u->threads[0].name, "pprof wall/nanoseconds");
	rva_mstat *a, *b;
	assert_int_equal(rva_method_stats(t, &a), 0);
	assert_int_equal(rva_method_stats(u, &b), 0);
	for (size_t i = 0; i < t->nmethods; i++) {
		int64_t j = rva_method_find(u, t->names[i]);
		assert_true(j >= 0);
		assert_int_equal(a[i].self, b[j].self);
		assert_int_equal(a[i].incl, b[j].incl);
	}
	free(a);
	free(b);
	rva_trace_free(u);
	rva_trace_free(t);
	free(buf);
}

/* A MODULE record with a GNU build id (tracer/FORMAT.md): index, id
 * length, load bias, start, end, the id, the path. */
static void module_with_id(capbuf *c, uint64_t bias, const char *path)
{
	uint8_t r[32 + 20 + 64] = {0};
	size_t n = strlen(path);
	r[4] = 20;
	for (int i = 0; i < 8; i++) {
		r[8 + i] = (uint8_t)(bias >> (8 * i));
		r[16 + i] = (uint8_t)(bias >> (8 * i));
		r[24 + i] = (uint8_t)((bias + 0x100000) >> (8 * i));
	}
	for (int i = 0; i < 20; i++)
		r[32 + i] = (uint8_t)(0xa0 + i);
	memcpy(r + 52, path, n);
	cb_record(c, 4, r, (uint32_t)(52 + n));
}

/* Methods the device could not name keep their module in the export: one
 * Mapping with the path and the hex build id, the Location at the ELF
 * address, so symbolizers can name them later. */
static void test_pprof_export_mappings_carry_build_ids(void **state)
{
	(void)state;
	capbuf c = {0};
	const uint64_t bias = 0x7f0000000000ull;
	cb_header(&c, 1000000, 1000000000, 0, 5000000, bias, 0);
	cb_entry(&c, 0x1234, 10); /* offsets from the header's base */
	cb_entry(&c, 0x5678, 20);
	cb_exit(&c, 30);
	cb_exit(&c, 40);
	cb_end_slots(&c);
	module_with_id(&c, bias, "/usr/lib/libwork.so");
	cb_finish(&c);
	rva_trace *t;
	rva_error err = {{0}};
	if (rva_capture_decode(c.b, c.len, &t, &err) < 0)
		fail_msg("%s", err.msg);
	free(c.b);
	assert_int_equal(t->nunresolved, 2);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_pprof(f, t), 0);
	fclose(f);
	uint8_t *plain;
	size_t pl;
	assert_int_equal(rva_decompress((const uint8_t *)buf, len, 1u << 26, &plain, &pl, &err), 0);
	Rvpprof__Profile *p = rvpprof__profile__unpack(NULL, pl, plain);
	assert_non_null(p);
	assert_int_equal(p->n_mapping, 1);
	assert_string_equal(p->string_table[p->mapping[0]->filename], "libwork.so");
	assert_string_equal(p->string_table[p->mapping[0]->build_id],
			    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3");
	size_t mapped = 0;
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->mapping_id == p->mapping[0]->id) {
			assert_true(p->location[i]->address == 0x1234 ||
				    p->location[i]->address == 0x5678);
			mapped++;
		}
	assert_int_equal(mapped, 2);
	rvpprof__profile__free_unpacked(p, NULL);
	free(plain);
	free(buf);
	rva_trace_free(t);
}

/* A profile's bytes, un-gzip'd: detected as pprof, never as Perfetto
 * (both begin with field-1 records); garbage is refused. */
static void test_pprof_plain_profile_detected_not_perfetto(void **state)
{
	(void)state;
	uint8_t *gz, *plain;
	size_t gl, pl;
	rva_error err = {{0}};
	assert_int_equal(rva_file_read(RV_CORPUS "/pprof/go-cpu.pb.gz", &gz, &gl, &err), 0);
	assert_int_equal(rva_decompress(gz, gl, 1u << 26, &plain, &pl, &err), 0);
	assert_int_equal(rva_detect(plain, pl), RVA_FMT_PPROF);
	rva_trace *t;
	assert_int_equal(rva_import(plain, pl, &t, &err), 0);
	assert_string_equal(t->format, "pprof");
	rva_trace_free(t);
	static const uint8_t junk[] = {0x0a, 0x02, 0x08};
	assert_int_equal(rva_pprof_import(junk, sizeof junk, &t, &err), -EINVAL);
	free(plain);
	free(gz);
}

/* n calls over 64 methods, each inside the last (2 slots a call). */
static void nested_capture(capbuf *c, unsigned n)
{
	uint32_t ts = 0;
	cb_header(c, 0, 1000000000, 0, 1000000000ull, 0x400000, 0);
	for (unsigned i = 0; i < n; i++)
		cb_entry(c, 0x1000 + 16 * (i % 64), ts += 20 + i % 7);
	for (unsigned i = 0; i < n; i++)
		cb_exit(c, ts += 20 + i % 5);
	cb_end_slots(c);
	for (unsigned m = 0; m < 64; m++) {
		char name[32];
		snprintf(name, sizeof name, "nested%02u", m);
		cb_symbol(c, 0x1000 + 16 * m, 0x1000 + 16 * m, 0, name);
	}
	cb_finish(c);
}

/* Issue 20: a trace deeper than RVA_EXPORT_MAX_DEPTH exports one sample per
 * path of the capped tree, no stack longer than the cap plus the
 * RVA_TRUNCATED_FRAME leaf, which carries the calls and self time of
 * everything below; the samples' totals are rvtrace's own (the old export
 * wrote every path whole: 2 000 frames deep, 2 M location ids). */
static void test_pprof_export_deep_trace_capped_with_truncation_frame_totals_kept(void **state)
{
	(void)state;
	enum { N = 2000 };
	capbuf c = {0};
	nested_capture(&c, N);
	rva_trace *t;
	rva_error err = {{0}};
	if (rva_capture_decode(c.b, c.len, &t, &err) < 0)
		fail_msg("%s", err.msg);
	free(c.b);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	int64_t self = 0;
	uint64_t calls = 0;
	for (size_t m = 0; m < t->nmethods; m++) {
		self += st[m].self;
		calls += st[m].calls;
	}
	assert_int_equal(calls, N);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_pprof(f, t), 0);
	fclose(f);
	uint8_t *plain;
	size_t pl;
	assert_int_equal(rva_decompress((const uint8_t *)buf, len, 1u << 26, &plain, &pl, &err), 0);
	Rvpprof__Profile *p = rvpprof__profile__unpack(NULL, pl, plain);
	assert_non_null(p);
	uint64_t cut_id = 0;
	for (size_t i = 0; i < p->n_function; i++)
		if (strcmp(p->string_table[p->function[i]->name], RVA_TRUNCATED_FRAME) == 0)
			cut_id = p->function[i]->id; /* location id = function id */
	assert_true(cut_id != 0);
	assert_int_equal(p->n_sample, RVA_EXPORT_MAX_DEPTH + 1);
	int64_t psum = 0, pcalls = 0, cut_calls = 0;
	size_t cut_samples = 0;
	for (size_t s = 0; s < p->n_sample; s++) {
		const Rvpprof__Sample *sm = p->sample[s];
		assert_true(sm->n_location_id <= RVA_EXPORT_MAX_DEPTH + 1);
		assert_int_equal(sm->n_value, 2);
		psum += sm->value[0];
		pcalls += sm->value[1];
		if (sm->location_id[0] == cut_id) {
			cut_samples++;
			cut_calls += sm->value[1];
			assert_int_equal(sm->n_location_id, RVA_EXPORT_MAX_DEPTH + 1);
		}
	}
	assert_int_equal(cut_samples, 1);
	assert_int_equal(cut_calls, N - RVA_EXPORT_MAX_DEPTH);
	assert_int_equal(psum, self);
	assert_int_equal(pcalls, (int64_t)calls);
	rvpprof__profile__free_unpacked(p, NULL);
	free(plain);
	free(buf);
	free(st);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_pprof_real_profiles_and_round_trip_agree_with_go_tool_pprof_top),
		cmocka_unit_test(test_pprof_export_round_trip_same_times),
		cmocka_unit_test(test_pprof_export_mappings_carry_build_ids),
		cmocka_unit_test(test_pprof_plain_profile_detected_not_perfetto),
		cmocka_unit_test(
			test_pprof_export_deep_trace_capped_with_truncation_frame_totals_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
