/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_untraced.c — what a capture says was left out (FORMAT.md, "What was
 * left out"): the writer's UNTRACED and MUTED records against the worked
 * example's bytes (tests/tracer/golden/untraced.hex), their round trip
 * through rvtrace's decoder into the model and its "self time includes
 * untraced callees" line (summary JSON and speedscope export too), and librvtrace reading a
 * module's
 * `.rearview_untraced` section (this test binary carries one, added by
 * objcopy when it is linked: golden/untraced.txt).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "golden/golden_hex.h"
#include "rearview/analysis.h"
#include "tracer-int.h"

#ifndef RVT_GOLDEN_DIR
#define RVT_GOLDEN_DIR "tests/tracer/golden"
#endif

static const uint64_t slots[8] = {
	0xfffffffe00001200ull,
	0x000029aaaaaad000ull,
	0x0000000200000001ull,
	0x0000000800000000ull,
	0x0000001000000000ull,
	0,
	0,
	0,
};
static const char lines[] = "threshold clamp\nnever hot_hash\n";

/* FORMAT.md §2's example plus the worked example's two records. */
static void example(struct rvt_capture_desc *d, struct rvt_module m[2], struct rvt_symbol s[2],
		    struct rvt_untraced *u, struct rvt_muted *mu)
{
	static const uint8_t id0[4] = {1, 2, 3, 4}, id1[4] = {0xaa, 0xbb, 0xcc, 0xdd};
	m[0] = (struct rvt_module){0, 0x555555554000,	 0x555555554000, 0x555555559000, id0,
				   4, "/usr/bin/example"};
	m[1] = (struct rvt_module){1, 0x7f0000000000,	    0x7f0000000000, 0x7f0000003000, id1,
				   4, "/usr/lib/libwork.so"};
	s[0] = (struct rvt_symbol){0x1200, 0x1200, 0, "main"};
	s[1] = (struct rvt_symbol){0x29aaaaaad000, 0x1000, 1, "work"};
	*u = (struct rvt_untraced){"/usr/bin/example", lines, strlen(lines), 0};
	*mu = (struct rvt_muted){0x29aaaaaad000, 0x200000004ull, 123456788988ull, 52000000, 12, 2};
	memset(d, 0, sizeof(*d));
	d->ref_counter = 0x0000000200000010ull;
	d->ref_realtime_ns = 1763683200000000000ull;
	d->ref_monotonic_ns = 123456789000ull;
	d->counter_hz = 1000000000ull;
	d->arch = 1;
	d->pid = d->tid = 4242;
	d->method_base = 0x555555554000ull;
	d->ring_slots = 8;
	d->end_pos = 5;
	d->ring = slots;
	d->exe = "/usr/bin/example";
	d->cmdline = "example\0--demo";
	d->cmdline_len = 15;
	d->thread_name = "main";
	d->modules = m;
	d->nmodules = 2;
	d->symbols = s;
	d->nsymbols = 2;
	d->untraced = u;
	d->nuntraced = 1;
	d->muted = mu;
	d->nmuted = 1;
}

static void encode(uint8_t **out, size_t *len)
{
	struct rvt_capture_desc d;
	struct rvt_module m[2];
	struct rvt_symbol s[2];
	struct rvt_untraced u;
	struct rvt_muted mu;
	example(&d, m, s, &u, &mu);
	assert_int_equal(rvt_capture_encode(&d, out, len), 0);
}

static void test_untraced_writer_matches_golden_records(void **state)
{
	(void)state;
	uint8_t golden[256];
	size_t glen = golden_load_hex(RVT_GOLDEN_DIR "/untraced.hex", golden, sizeof(golden));
	assert_int_equal(glen, 112);
	uint8_t *out;
	size_t len;
	encode(&out, &len);
	/* The records end with CHECKSUM (24 bytes) and END (8): ours precede. */
	assert_true(len > glen + 32);
	const uint8_t *ours = out + len - 32 - glen;
	for (size_t i = 0; i < glen; i++)
		if (ours[i] != golden[i])
			fail_msg("byte %zu of the records: writer %02x, golden %02x", i, ours[i],
				 golden[i]);
	free(out);
}

static void test_untraced_round_trip_model_and_note(void **state)
{
	(void)state;
	uint8_t *out;
	size_t len;
	encode(&out, &len);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(out, len, &t, &err), 0);
	assert_int_equal(t->nuntraced, 2);
	assert_string_equal(t->untraced[0].rule, "threshold");
	assert_string_equal(t->untraced[0].name, "clamp");
	assert_string_equal(t->untraced[1].rule, "never");
	assert_string_equal(t->untraced[1].name, "hot_hash");
	assert_int_equal(t->untraced_truncated, 0);
	assert_int_equal(t->nmuted, 1);
	assert_string_equal(t->names[t->muted[0].method], "work");
	assert_int_equal(t->muted[0].ns, 123456788988);
	assert_int_equal(t->muted[0].rate, 52000000);
	assert_int_equal(t->muted[0].median_ns, 12);
	char note[256];
	assert_int_equal(rva_untraced_note(t, note, sizeof(note)), 1);
	assert_string_equal(note, "self time includes untraced callees (2 left out at build "
				  "time; 1 muted at run time: work)");
	/* Cut to fit, still terminated. */
	assert_int_equal(rva_untraced_note(t, note, 10), 1);
	assert_string_equal(note, "self time");
	rva_trace_free(t);
	free(out);
}

/* The summary JSON (model and streaming: the same bytes), the speedscope
 * export and the Chrome export say it too. */
static void test_untraced_summary_json_and_speedscope_say_it(void **state)
{
	(void)state;
	uint8_t *out;
	size_t len;
	encode(&out, &len);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(out, len, &t, &err), 0);
	char *doc = NULL, *stream = NULL, *ss = NULL;
	size_t dl = 0, sl = 0, xl = 0;
	FILE *f = open_memstream(&doc, &dl);
	assert_int_equal(rva_summary_json(f, t, -1, 10), 0);
	fclose(f);
	assert_non_null(strstr(doc,
			       "\"untraced\":{\"note\":\"self time includes untraced callees "
			       "(2 left out at build time; 1 muted at run time: work)\","
			       "\"count\":2,\"truncated\":false,\"muted\":[{\"method\":\"work\","
			       "\"ns\":123456788988,\"rate\":52000000,\"median_ns\":12}]}"));
	rva_summary sm;
	assert_int_equal(rva_capture_summarize(out, len, &sm, &err), 0);
	f = open_memstream(&stream, &sl);
	assert_int_equal(rva_summary_json_from(f, &sm, 10), 0);
	fclose(f);
	assert_string_equal(stream, doc);
	rva_summary_release(&sm);
	f = open_memstream(&ss, &xl);
	assert_int_equal(rva_export_speedscope(f, t), 0);
	fclose(f);
	assert_non_null(strstr(ss, "\"name\":\"rvtrace export: self time includes untraced"));
	char *cj = NULL;
	size_t cl = 0;
	f = open_memstream(&cj, &cl);
	assert_int_equal(rva_export_chrome(f, t), 0);
	fclose(f);
	assert_non_null(
		strstr(cj, "],\"otherData\":{\"note\":\"self time includes untraced "
			   "callees (2 left out at build time; 1 muted at run time: work)\"}}"));
	free(cj);
	free(doc);
	free(stream);
	free(ss);
	rva_trace_free(t);
	free(out);
}

static void test_untraced_none_no_note(void **state)
{
	(void)state;
	struct rvt_capture_desc d;
	struct rvt_module m[2];
	struct rvt_symbol s[2];
	struct rvt_untraced u;
	struct rvt_muted mu;
	example(&d, m, s, &u, &mu);
	d.nuntraced = d.nmuted = 0;
	uint8_t *out;
	size_t len;
	assert_int_equal(rvt_capture_encode(&d, &out, &len), 0);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(out, len, &t, &err), 0);
	char note[64] = "x";
	assert_int_equal(rva_untraced_note(t, note, sizeof(note)), 0);
	assert_string_equal(note, "");
	rva_trace_free(t);
	free(out);
}

static void test_untraced_empty_list_no_names(void **state)
{
	(void)state;
	struct rvt_capture_desc d;
	struct rvt_module m[2];
	struct rvt_symbol s[2];
	struct rvt_untraced u;
	struct rvt_muted mu;
	example(&d, m, s, &u, &mu);
	u.path = "/a/path/longer/than/the/record/holds";
	u.text_len = 0;
	uint8_t *out;
	size_t len;
	assert_int_equal(rvt_capture_encode(&d, &out, &len), 0);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(out, len, &t, &err), 0);
	assert_int_equal(t->nuntraced, 0);
	rva_trace_free(t);
	free(out);
}

static void test_untraced_own_section_read(void **state)
{
	(void)state;
	const struct rvt_untraced *u;
	size_t n = rvt_untraced_sections(&u);
	const struct rvt_untraced *mine = NULL;
	for (size_t i = 0; i < n; i++)
		if (strstr(u[i].path, "test_untraced"))
			mine = &u[i];
	if (!mine)
		fail_msg("no .rearview_untraced section found in this test binary (%zu modules)",
			 n);
	assert_int_equal(mine->text_len, strlen(lines));
	assert_memory_equal(mine->text, lines, strlen(lines));
	assert_int_equal(mine->truncated, 0);
	/* Read once: the same storage again. */
	const struct rvt_untraced *again;
	assert_int_equal(rvt_untraced_sections(&again), n);
	assert_ptr_equal(again, u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untraced_writer_matches_golden_records),
		cmocka_unit_test(test_untraced_round_trip_model_and_note),
		cmocka_unit_test(test_untraced_summary_json_and_speedscope_say_it),
		cmocka_unit_test(test_untraced_none_no_note),
		cmocka_unit_test(test_untraced_empty_list_no_names),
		cmocka_unit_test(test_untraced_own_section_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
