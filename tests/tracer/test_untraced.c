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
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* xxHash from libxxhash-dev, compiled in, as the decoder has it. */
#define XXH_INLINE_ALL
#include <xxhash.h>

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
	*mu = (struct rvt_muted){.value = 0x29aaaaaad000,
				 .counter = 0x200000004ull,
				 .monotonic_ns = 123456788988ull,
				 .rate = 52000000,
				 .median_ns = 12,
				 .sites = 2,
				 .ncallers = 1,
				 .share_ppm = {750000},
				 .caller = {0x1200}};
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
	assert_int_equal(glen, 144);
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
	assert_int_equal(t->muted[0].ncallers, 1);
	assert_string_equal(t->names[t->muted[0].caller[0]], "main");
	assert_int_equal(t->muted[0].share_ppm[0], 750000);
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

/* FORMAT.md's example: main runs 18 ns (12 of them its own), work 6 ns
 * inside it, muted at 6 ns into main with a share of 75 % of main's self
 * time.  From the mute on (12 of the 18 ns) work takes 75 % of main's
 * self time: 12 x 0.75 x 12/18 = 6 ns, moved from main to work, in every
 * statistic: the model's, the streaming summary's, the report's, and the
 * ranking puts work first. */
static void test_untraced_muted_self_estimated(void **state)
{
	(void)state;
	uint8_t *out;
	size_t len;
	encode(&out, &len);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(out, len, &t, &err), 0);
	int64_t main_id = rva_method_find(t, "main"), work_id = rva_method_find(t, "work");
	assert_true(main_id >= 0 && work_id >= 0);
	assert_int_equal(t->end - t->start, 18);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(st[main_id].self, 6);
	assert_int_equal(st[main_id].est_self, -6);
	assert_int_equal(st[work_id].self, 12);
	assert_int_equal(st[work_id].est_self, 6);
	assert_int_equal(st[work_id].calls, 1);
	uint32_t ids[2];
	assert_int_equal(rva_top_self(t, st, ids, 2), 2);
	assert_int_equal(ids[0], work_id);
	free(st);
	rva_summary sm;
	assert_int_equal(rva_capture_summarize(out, len, &sm, &err), 0);
	assert_int_equal(sm.stats[rva_method_find(sm.trace, "main")].self, 6);
	assert_int_equal(sm.stats[rva_method_find(sm.trace, "work")].self, 12);
	rva_summary_release(&sm);
	rva_rstat *rs;
	assert_int_equal(rva_report_stats(t, SIZE_MAX, &rs), 0);
	assert_int_equal(rs[main_id].self, 6);
	assert_int_equal(rs[work_id].self, 12);
	assert_int_equal(rs[work_id].est_self, 6);
	free(rs);
	/* Without the share: the measured times. */
	t->muted[0].ncallers = 0;
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(st[main_id].self, 12);
	assert_int_equal(st[work_id].self, 6);
	assert_int_equal(st[work_id].est_self, 0);
	free(st);
	/* Muted before the trace began: the whole of main's self time (the
	 * part after the mute the decoder measured was for the old time). */
	t->muted[0].ncallers = 1;
	t->muted[0].ns = t->start - 5;
	assert_int_equal(t->muted[0].after_known, 1);
	assert_int_equal(t->muted[0].after_ppm[0], 666667); /* 12 of main's 18 ns */
	t->muted[0].after_known = 0;
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(st[main_id].self, 3);
	assert_int_equal(st[work_id].self, 15);
	free(st);
	rva_trace_free(t);
	free(out);
}

/* Two functions muted at one look share their caller's self time as it
 * was then; one muted later takes its share first (newest first), and a
 * share a hostile file sums above the whole never drives a self time below
 * zero. */
static void test_untraced_muted_self_order(void **state)
{
	(void)state;
	rva_trace *t = rva_trace_new();
	assert_non_null(t);
	int64_t a = rva_method_intern(t, "a", 1), x = rva_method_intern(t, "x", 1),
		y = rva_method_intern(t, "y", 1), z = rva_method_intern(t, "z", 1);
	int64_t th = rva_thread_add(t, 1, 1, NULL);
	assert_true(a >= 0 && x >= 0 && y >= 0 && z >= 0 && th >= 0);
	t->start = 0;
	t->end = 1000;
	int64_t self[4] = {0}, est[4];
	self[a] = 1000;
	t->muted = calloc(3, sizeof(*t->muted));
	assert_non_null(t->muted);
	t->nmuted = 3;
	/* x and y at one look (same time), z later: z takes 20 % of 1000,
	 * then x 50 % and y 25 % of the 800 left. */
	t->muted[0] = (rva_muted){.method = (uint32_t)x,
				  .ns = -10,
				  .ncallers = 1,
				  .caller = {(uint32_t)a},
				  .share_ppm = {500000}};
	t->muted[1] = (rva_muted){.method = (uint32_t)y,
				  .ns = -10,
				  .ncallers = 1,
				  .caller = {(uint32_t)a},
				  .share_ppm = {250000}};
	t->muted[2] = (rva_muted){.method = (uint32_t)z,
				  .ns = -5,
				  .ncallers = 1,
				  .caller = {(uint32_t)a},
				  .share_ppm = {200000}};
	assert_int_equal(rva_muted_self(t, self, est), 0);
	assert_int_equal(est[z], 200);
	assert_int_equal(est[x], 400);
	assert_int_equal(est[y], 200);
	assert_int_equal(est[a], -800);
	t->muted[0].share_ppm[0] = 1000000;
	t->muted[1].share_ppm[0] = 1000000;
	assert_int_equal(rva_muted_self(t, self, est), 0);
	assert_int_equal(est[a], -1000);
	assert_int_equal(est[x] + est[y] + est[z], 1000);
	rva_trace_free(t);
}

/* The example's MUTED_CALLERS record (the 32 bytes before CHECKSUM and
 * END) after `edit`, the CHECKSUM made to match again: decoded into *t, or
 * the decoder's error. */
static int decode_edited(void (*edit)(uint8_t *rec), rva_trace **t)
{
	uint8_t *out;
	size_t len;
	encode(&out, &len);
	uint8_t *rec = out + len - 32 - 32;
	assert_int_equal(rec[0], 17);
	edit(rec);
	uint64_t h = XXH3_64bits(out, len - 32);
	for (int i = 0; i < 8; i++)
		out[len - 32 + 16 + i] = (uint8_t)(h >> (8 * i));
	rva_error err = {{0}};
	int rc = rva_capture_decode(out, len, t, &err);
	free(out);
	return rc;
}

static void share_too_big(uint8_t *rec)
{
	rec[24] = 0x41; /* 1000001 = 0x0f4241 */
	rec[25] = 0x42;
	rec[26] = 0x0f;
}

static void length_not_whole(uint8_t *rec)
{
	rec[4] = 20; /* still padded to 24 */
}

static void another_function(uint8_t *rec)
{
	rec[8] ^= 0x10; /* not the MUTED record's value before it */
}

/* Hostile MUTED_CALLERS: a share above the whole or a length that is no
 * whole number of callers is refused; one that follows another function's
 * MUTED record is ignored. */
static void test_untraced_muted_callers_hostile(void **state)
{
	(void)state;
	rva_trace *t = NULL;
	assert_int_equal(decode_edited(share_too_big, &t), -EINVAL);
	assert_int_equal(decode_edited(length_not_whole, &t), -EINVAL);
	assert_int_equal(decode_edited(another_function, &t), 0);
	assert_int_equal(t->nmuted, 1);
	assert_int_equal(t->muted[0].ncallers, 0);
	rva_trace_free(t);
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
		cmocka_unit_test(test_untraced_muted_self_estimated),
		cmocka_unit_test(test_untraced_muted_self_order),
		cmocka_unit_test(test_untraced_muted_callers_hostile),
		cmocka_unit_test(test_untraced_summary_json_and_speedscope_say_it),
		cmocka_unit_test(test_untraced_none_no_note),
		cmocka_unit_test(test_untraced_empty_list_no_names),
		cmocka_unit_test(test_untraced_own_section_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
