/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_capture.c — the capture decoder against files built byte by byte
 * from tracer/FORMAT.md (capbuild.h): the worked examples, timestamp wraps,
 * every damage rule, frames named by STACK and EXIT_OF records and captures
 * whose exits do not match them, and hostile or truncated input.
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

#include "../tracer/golden/golden_hex.h"
#include "capbuild.h"
#include "rearview/analysis.h"

#ifndef RVT_GOLDEN_DIR
#define RVT_GOLDEN_DIR "tests/tracer/golden"
#endif

#define BASE 0x555555554000ull

static int64_t find(const rva_trace *t, const char *name)
{
	return rva_method_find(t, name);
}

/* FORMAT.md's worked example. */
static void build_example(capbuf *c)
{
	cb_header(c, 0x0000000200000010ull, 1000000000, 0, 1000, BASE, 0);
	cb_slot(c, 0xfffffffe00001200ull);
	cb_slot(c, 0x000029aaaaaad000ull);
	cb_slot(c, 0x0000000200000001ull);
	cb_slot(c, 0x0000000800000000ull);
	cb_slot(c, 0x0000001000000000ull);
	cb_end_slots(c);
	cb_module(c, 1, 0x7f0000000000ull, 0x7f0000100000ull, "/usr/lib/libwork.so");
	cb_symbol(c, 0x1200, 0x1200, 0, "main");
	cb_finish(c);
}

static void test_capture_worked_example_main_18ns_work_6ns(void **state)
{
	capbuf c = {0};
	build_example(&c);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(t->nthreads, 1);
	assert_int_equal(t->threads[0].tid, 43);
	assert_int_equal(t->threads[0].ncalls, 2);
	const rva_call *m = &t->threads[0].calls[0], *w = &t->threads[0].calls[1];
	assert_int_equal(m->method, find(t, "main"));
	assert_int_equal(w->method, find(t, "libwork.so+0x1000"));
	assert_int_equal(m->end - m->start, 18);
	assert_int_equal(w->end - w->start, 6);
	assert_int_equal(m->end, 1000); /* the reference time */
	assert_int_equal(m->start, 982);
	assert_int_equal(w->start, 986);
	assert_int_equal(w->depth, 1);
	assert_int_equal(t->dropped, 0);
	rva_trace_free(t);
	free(c.b);
}

/* FORMAT.md §1's CLOCK example, with a LOSS record between the calls: the
 * second call is 40 s after the first (9.3 wraps of the 32-bit ts). */
static void test_capture_clock_records_span_any_gap_and_loss_is_counted(void **state)
{
	capbuf c = {0};
	cb_header(&c, 0xc502f9030ull, 1000000000, 0, 100000000000ll, BASE, 0);
	cb_u16at(&c, 8, 2);
	cb_slot(&c, 0x0000000300000010ull); /* CLOCK */
	cb_slot(&c, 0x0000001000000002ull);
	cb_entry(&c, 0x1200, 0x10);
	cb_exit(&c, 0x18);
	cb_slot(&c, 0x00000003000000b0ull); /* LOSS from 0x3_000000b0 ... */
	cb_slot(&c, 0x000000f000000003ull); /* ... to 0x3_000000f0 */
	cb_slot(&c, 0x0000000c502f9018ull); /* CLOCK: the high word moved */
	cb_slot(&c, 0x502f901800000002ull);
	cb_entry(&c, 0x1200, 0x502f9018);
	cb_exit(&c, 0x502f9020);
	cb_end_slots(&c);
	cb_symbol(&c, 0x1200, 0x1200, 0xffffffffu, "f");
	cb_finish(&c);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(t->threads[0].ncalls, 2);
	const rva_call *a = &t->threads[0].calls[0], *b = &t->threads[0].calls[1];
	assert_int_equal(a->end - a->start, 8);
	assert_int_equal(b->end - b->start, 8);
	assert_int_equal(b->start - a->start, 40000000008ll);
	assert_int_equal(b->end, 100000000000ll - 0x10); /* 16 ticks before the freeze */
	assert_int_equal(t->lost_spans, 1);
	assert_int_equal(t->lost_ns, 64);
	assert_int_equal(t->lost_first_start, a->start + 0xa0);
	assert_int_equal(t->dropped, 0);
	rva_trace_free(t);
	free(c.b);
}

static void test_capture_many_wraps_reconstructed(void **state)
{
	/* 1 GHz, shift 0: 40 calls of 3 s each, 1 s apart: 160 s, ~37 wraps. */
	capbuf c = {0};
	uint64_t now = 5ull << 32;
	uint64_t start = now;
	for (int i = 0; i < 40; i++)
		now += 4000000000ull;
	uint64_t ref = now + 7;
	cb_header(&c, ref, 1000000000, 0, 500000000000ull, BASE, 0);
	now = start;
	for (int i = 0; i < 40; i++) {
		cb_entry(&c, 0x1000 + 16 * (uint64_t)(i % 3), (uint32_t)now);
		cb_exit(&c, (uint32_t)(now + 3000000000ull));
		now += 4000000000ull;
	}
	cb_end_slots(&c);
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(t->threads[0].ncalls, 40);
	for (int i = 0; i < 40; i++) {
		const rva_call *k = &t->threads[0].calls[i];
		assert_int_equal(k->end - k->start, 3000000000ll);
		int64_t want = 500000000000ll - (int64_t)(ref - start) + 4000000000ll * i;
		assert_int_equal(k->start, want);
		assert_int_equal(k->depth, 0);
	}
	/* Unknown values without a module show as the bare address. */
	assert_true(find(t, "0x555555555000") >= 0);
	rva_trace_free(t);
	free(c.b);
}

static void test_capture_shift_scales_ticks(void **state)
{
	/* 3 GHz counter, shift 7: one tick = 128 / 3 ns. */
	capbuf c = {0};
	uint64_t ref = 3000000000ull * 10; /* 10 s */
	uint32_t now = (uint32_t)(ref >> 7);
	cb_header(&c, ref, 3000000000ull, 7, 10000000000ull, BASE, 0);
	cb_entry(&c, 0x2000, now - 3000);
	cb_exit(&c, now);
	cb_end_slots(&c);
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	const rva_call *k = &t->threads[0].calls[0];
	assert_int_equal(k->end - k->start, 128000); /* 3000 ticks × 128 / 3 */
	rva_trace_free(t);
	free(c.b);
}

static void test_capture_exits_without_entry_start_at_oldest(void **state)
{
	capbuf c = {0};
	cb_header(&c, 100, 1000000000, 0, 100, BASE, 0);
	cb_entry(&c, 0x3000, 5);
	cb_exit(&c, 7);
	cb_exit(&c, 10);
	cb_exit(&c, 20);
	cb_end_slots(&c);
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	const rva_thread *th = &t->threads[0];
	assert_int_equal(th->ncalls, 3);
	int64_t unk = find(t, "(unknown caller)");
	assert_true(unk >= 0);
	assert_int_equal(th->calls[0].method, unk);
	assert_int_equal(th->calls[0].start, 5);
	assert_int_equal(th->calls[0].end, 20);
	assert_int_equal(th->calls[1].end, 10);
	assert_int_equal(th->calls[2].depth, 2);
	assert_int_equal(th->calls[2].end - th->calls[2].start, 2);
	assert_int_equal(t->repaired, 2);
	rva_trace_free(t);
	free(c.b);
}

static void test_capture_entries_without_exit_end_at_reference(void **state)
{
	capbuf c = {0};
	cb_header(&c, 100, 1000000000, 0, 7000, BASE, 0);
	cb_entry(&c, 0x3000, 5);
	cb_entry(&c, 0x3010, 6);
	cb_exit(&c, 7);
	cb_entry(&c, 0x3020, 9);
	cb_end_slots(&c);
	cb_anomaly(&c, 2, 6990, "jank");
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	const rva_thread *th = &t->threads[0];
	assert_int_equal(th->ncalls, 3);
	assert_int_equal(th->calls[0].end, 7000);
	assert_int_equal(th->calls[0].start, 6905);
	assert_int_equal(th->calls[2].end, 7000);
	assert_int_equal(th->calls[2].depth, 1);
	assert_true(t->has_anomaly);
	assert_int_equal(t->anomaly_ns, 6990);
	assert_string_equal(t->anomaly_name, "jank");
	rva_trace_free(t);
	free(c.b);
}

static void test_capture_torn_oldest_slot_dropped(void **state)
{
	capbuf c = {0};
	cb_header(&c, 100, 1000000000, 0, 100, BASE, 1);
	cb_slot(&c, (uint64_t)3 << 32 | 1); /* second half, first half overwritten */
	cb_entry(&c, 0x1200, 5);
	cb_exit(&c, 9);
	cb_end_slots(&c);
	cb_symbol(&c, 0x1200, 0x1200, 0, "main");
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(t->dropped, 1);
	assert_int_equal(t->threads[0].ncalls, 1);
	assert_int_equal(t->threads[0].calls[0].method, find(t, "main"));
	assert_int_equal(t->threads[0].calls[0].end - t->threads[0].calls[0].start, 4);
	rva_trace_free(t);
	free(c.b);
}

static void test_capture_empty_symbol_name_uses_module_offset(void **state)
{
	capbuf c = {0};
	cb_header(&c, 100, 1000000000, 0, 100, BASE, 0);
	cb_entry(&c, 0x1240, 5);
	cb_exit(&c, 9);
	cb_end_slots(&c);
	cb_module(&c, 0, BASE, BASE + 0x100000, "/opt/app/bin/app");
	cb_symbol(&c, 0x1240, 0x1240, 0, "");
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(t->threads[0].calls[0].method, find(t, "app+0x1240"));
	rva_trace_free(t);
	free(c.b);
}

static void expect_error(const uint8_t *b, size_t len)
{
	rva_trace *t = (rva_trace *)1;
	rva_error err = {{0}};
	int rc = rva_capture_decode(b, len, &t, &err);
	assert_true(rc < 0);
	assert_null(t);
	assert_true(err.msg[0] != '\0');
}

static void test_capture_truncated_every_length_rejected(void **state)
{
	capbuf c = {0};
	build_example(&c);
	for (size_t n = 0; n < c.len; n++)
		expect_error(c.b, n);
	free(c.b);
}

static void test_capture_hostile_headers_rejected(void **state)
{
	capbuf c = {0};
	build_example(&c);
	uint8_t *b = malloc(c.len);
	struct {
		size_t off;
		uint64_t v;
		int width;
	} bad[] = {
		{0, 0x41, 1},	       /* magic */
		{8, 2, 3},	       /* version (1 and 2 are read) */
		{10, 64, 2},	       /* header_size < 128 */
		{40, 0, 8},	       /* counter_hz 0 */
		{48, 32, 1},	       /* shift > 31 */
		{72, 2, 8},	       /* ring_slots < slot_count */
		{72, (1ull << 33), 8}, /* ring_slots > 2^32 */
		{96, 1ull << 60, 8},   /* slot_count huge */
		{104, 129, 8},	       /* slots_offset not aligned */
		{112, 8, 8},	       /* meta_offset inconsistent */
		{120, 1ull << 40, 8},  /* file_size beyond the data */
		{172, 0xfffffff0u, 4}, /* first record length */
		{168, 0xffff, 2},      /* first record becomes END, not last */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(b, c.b, c.len);
		for (int k = 0; k < bad[i].width; k++)
			b[bad[i].off + k] = (uint8_t)(bad[i].v >> (8 * k));
		expect_error(b, c.len);
	}
	/* No END at all: drop it and shrink file_size. */
	memcpy(b, c.b, c.len);
	capbuf d = {b, c.len - 8, c.len, 0};
	cb_u64at(&d, 120, c.len - 8);
	expect_error(b, c.len - 8);
	free(b);
	free(c.b);
}

/* The streaming summary must agree with decode + stats + tree. */
static void assert_summary_matches(const uint8_t *b, size_t len)
{
	rva_trace *t;
	rva_summary s;
	rva_error err;
	int r1 = rva_capture_decode(b, len, &t, &err);
	int r2 = rva_capture_summarize(b, len, &s, &err);
	assert_int_equal(r1, r2);
	if (r1 < 0)
		return;
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(t->nmethods, s.trace->nmethods);
	for (size_t i = 0; i < t->nmethods; i++) {
		assert_string_equal(t->names[i], s.trace->names[i]);
		assert_int_equal(st[i].calls, s.stats[i].calls);
		assert_int_equal(st[i].incl, s.stats[i].incl);
		assert_int_equal(st[i].self, s.stats[i].self);
	}
	rva_tree tr;
	assert_int_equal(rva_tree_build(t, SIZE_MAX, &tr), 0);
	assert_int_equal(tr.n, s.tree.n);
	assert_int_equal(tr.nodes[0].incl, s.tree.nodes[0].incl);
	rva_chains a, c;
	assert_int_equal(rva_chains_from_tree(t, &tr, 5, &a), 0);
	assert_int_equal(rva_chains_from_tree(s.trace, &s.tree, 5, &c), 0);
	assert_int_equal(a.n, c.n);
	for (size_t i = 0; i < a.n; i++) {
		assert_true(a.v[i].signature == c.v[i].signature);
		assert_int_equal(a.v[i].self, c.v[i].self);
		assert_int_equal(a.v[i].calls, c.v[i].calls);
	}
	assert_int_equal(t->start, s.trace->start);
	assert_int_equal(t->end, s.trace->end);
	if (t->has_anomaly) {
		/* The same chain as on the model, frames entered or exited exactly
		 * at the anomaly included. */
		uint32_t ch[64];
		size_t d = rva_chain_at(t, 0, t->anomaly_ns, ch, 64);
		assert_non_null(s.anomaly_chain);
		assert_int_equal(s.anomaly_depth, d);
		for (size_t i = 0; i < d && i < 64; i++)
			assert_int_equal(ch[i], s.anomaly_chain[i]);
	} else {
		assert_null(s.anomaly_chain);
	}
	if (s.end_chain) {
		/* No anomaly: the chain at the end, as on the model. */
		assert_false(t->has_anomaly);
		uint32_t ch[64];
		size_t d = rva_chain_at(t, 0, t->end, ch, 64);
		assert_int_equal(s.end_depth, d);
		for (size_t i = 0; i < d && i < 64; i++)
			assert_int_equal(ch[i], s.end_chain[i]);
	}
	rva_chains_release(&a);
	rva_chains_release(&c);
	rva_tree_release(&tr);
	free(st);
	rva_trace_free(t);
	rva_summary_release(&s);
}

/* A muted function's estimate takes the part of its caller's calls' time
 * after the mute, not the part of the capture's span (1 GHz; counter values,
 * 900 ns before the monotonic clock's): main [100, 30100] calls a [10100,
 * 20100] (a phase: a third of the span), which calls x [10100, 11100]; x is
 * muted at 12100 with half of a's self
 * time.  a's own 9,000 ns are 0.8 after the mute (8,000 of its 10,000), so
 * x takes 9,000 × 0.5 × 0.8 = 3,600 ns of them (the span's part, 0.6, gave
 * 2,700) — in the decoded model and in the streamed summary alike. */
static void test_capture_muted_share_of_a_phase_callers_time_after_the_mute(void **state)
{
	(void)state;
	capbuf c = {0};
	cb_header(&c, 40000, 1000000000, 0, 40900, BASE, 0); /* frozen at 40000 */
	cb_entry(&c, 0x1200, 100);
	cb_entry(&c, 0x1300, 10100);
	cb_entry(&c, 0x1400, 10100);
	cb_exit(&c, 11100);
	cb_exit(&c, 20100);
	cb_exit(&c, 30100);
	cb_end_slots(&c);
	cb_muted(&c, 0x1400, 12100, 13000, 0x1300, 500000); /* monotonic: 900 past the counter */
	cb_symbol(&c, 0x1200, 0x1200, 0xffffffffu, "main");
	cb_symbol(&c, 0x1300, 0x1300, 0xffffffffu, "a");
	cb_symbol(&c, 0x1400, 0x1400, 0xffffffffu, "x");
	cb_finish(&c);

	rva_trace *t;
	rva_summary sm;
	rva_error err;
	rva_mstat *st;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(rva_capture_summarize(c.b, c.len, &sm, &err), 0);
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(t->nmuted, 1);
	assert_int_equal(t->muted[0].after_known, 1);
	assert_int_equal(t->muted[0].after_ppm[0], 800000);
	assert_int_equal(sm.trace->muted[0].after_ppm[0], 800000);
	int64_t x = find(t, "x"), a = find(t, "a"), mn = find(t, "main");
	assert_true(x >= 0 && a >= 0 && mn >= 0);
	const rva_mstat *views[2] = {st, sm.stats};
	for (int v = 0; v < 2; v++) {
		assert_int_equal(views[v][x].self, 1000 + 3600);
		assert_int_equal(views[v][x].est_self, 3600);
		assert_int_equal(views[v][a].self, 9000 - 3600);
		assert_int_equal(views[v][a].est_self, -3600);
		assert_int_equal(views[v][mn].self, 20000);
	}
	free(st);
	rva_summary_release(&sm);
	rva_trace_free(t);
	free(c.b);
}

/* A compiler's copies of a native function are the function: f and its
 * clone f.isra.0 (two values) are one method `f` with two calls, the
 * recursion counted once; a demangled clone of a clone loses both
 * suffixes; a runtime's key (no module) keeps its name as the runtime gave
 * it, suffix or not. */
static void test_capture_native_clones_named_as_their_function(void **state)
{
	(void)state;
	capbuf c = {0};
	cb_header(&c, 1000, 1000000000, 0, 1000, BASE, 0);
	cb_entry(&c, 0x1200, 100);
	cb_entry(&c, 0x1300, 200);
	cb_exit(&c, 300);
	cb_exit(&c, 400);
	cb_entry(&c, 0x1400, 500);
	cb_exit(&c, 600);
	cb_entry(&c, 0x1500, 700);
	cb_exit(&c, 800);
	cb_end_slots(&c);
	cb_module(&c, 0, BASE, BASE + 0x100000, "/opt/app/bin/app");
	cb_symbol(&c, 0x1200, 0x1200, 0, "f");
	cb_symbol(&c, 0x1300, 0x1300, 0, "f.isra.0");
	cb_symbol(&c, 0x1400, 0x1400, 0, "g(int) [clone .constprop.0] [clone .isra.0]");
	cb_symbol(&c, 0x1500, 0x1500, 0xffffffffu, "key.cold");
	cb_finish(&c);

	rva_trace *t;
	rva_error err;
	rva_mstat *st;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	int64_t f = find(t, "f"), g = find(t, "g(int)"), k = find(t, "key.cold");
	assert_true(f >= 0 && g >= 0 && k >= 0);
	assert_true(find(t, "f.isra.0") < 0);
	assert_int_equal(t->threads[0].ncalls, 4);
	assert_int_equal(t->threads[0].calls[0].method, f);
	assert_int_equal(t->threads[0].calls[1].method, f);
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(st[f].calls, 2);
	assert_int_equal(st[f].incl, 300); /* the recursion once */
	free(st);
	rva_trace_free(t);
	free(c.b);
}

/* A hostile capture naming one caller in every muted record: each of the
 * caller's calls is measured against the first RVA_MAFTER_PER_METHOD (64)
 * only, the others keep the span's part (after_known 0), in both decoders. */
static void test_capture_muted_pairs_per_caller_bounded(void **state)
{
	(void)state;
	capbuf c = {0};
	cb_header(&c, 40000, 1000000000, 0, 40900, BASE, 0);
	cb_entry(&c, 0x1200, 100);
	for (uint32_t i = 0; i < 200; i++) {
		cb_entry(&c, 0x1300, 1000 + 100 * i);
		cb_exit(&c, 1050 + 100 * i);
	}
	cb_exit(&c, 30100);
	cb_end_slots(&c);
	for (uint32_t i = 0; i < 70; i++)
		cb_muted(&c, 0x2000 + 0x10 * i, 5000 + i, 5900 + i, 0x1300, 1000);
	cb_finish(&c);
	rva_trace *t;
	rva_summary sm;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(rva_capture_summarize(c.b, c.len, &sm, &err), 0);
	const rva_trace *both[2] = {t, sm.trace};
	for (int v = 0; v < 2; v++) {
		size_t known = 0;
		assert_int_equal(both[v]->nmuted, 70);
		for (size_t i = 0; i < both[v]->nmuted; i++) {
			const rva_muted *m = &both[v]->muted[i];
			known += m->after_known;
			/* Muted at 5,000 + i: 159 of a's 50 ns calls after it,
			 * and 50 − i ns of the one at 5,000 (none from 50 on), of
			 * 200 × 50. */
			assert_int_equal(m->after_known, i < 64);
			if (m->after_known)
				assert_int_equal(m->after_ppm[0],
						 i < 50 ? 800000 - 100 * i : 795000);
		}
		assert_int_equal(known, 64);
	}
	rva_summary_release(&sm);
	rva_trace_free(t);
	free(c.b);
}

static void test_capture_streaming_summary_matches_model(void **state)
{
	capbuf c = {0};
	build_example(&c);
	assert_summary_matches(c.b, c.len);
	/* The anomaly falls inside main → work. */
	cb_header(&c, 100, 1000000000, 0, 1000, BASE, 0);
	cb_entry(&c, 0x1200, 10);
	cb_entry(&c, 0x1300, 20);
	cb_exit(&c, 30);
	cb_entry(&c, 0x1400, 40);
	cb_exit(&c, 60);
	cb_exit(&c, 70);
	cb_end_slots(&c);
	cb_anomaly(&c, 1, 1000 - 100 + 50, "slow");
	cb_finish(&c);
	assert_summary_matches(c.b, c.len);
	rva_summary sm;
	rva_error err;
	assert_int_equal(rva_capture_summarize(c.b, c.len, &sm, &err), 0);
	assert_int_equal(sm.anomaly_depth, 2);
	assert_string_equal(sm.trace->names[sm.anomaly_chain[1]], "0x555555555400");
	rva_summary_release(&sm);
	cb_header(&c, 100, 1000000000, 0, 7000, BASE, 1);
	cb_slot(&c, (uint64_t)3 << 32 | 1);
	cb_exit(&c, 4);
	cb_entry(&c, 0x3000, 5);
	cb_entry(&c, 0x3000, 6);
	cb_entry(&c, 0x3010, 6);
	cb_exit(&c, 7);
	cb_exit(&c, 8);
	cb_entry(&c, 0x3020, 9);
	cb_end_slots(&c);
	cb_finish(&c);
	assert_summary_matches(c.b, c.len);
	uint64_t seed = 7;
	uint8_t *b = malloc(c.len);
	for (int r = 0; r < 500; r++) {
		memcpy(b, c.b, c.len);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		b[128 + (seed >> 33) % (c.len - 128)] ^= (uint8_t)(seed >> 20);
		assert_summary_matches(b, c.len);
	}
	free(b);
	free(c.b);
}

/* The chain at the anomaly when events fall exactly on it, before the
 * first event, after the freeze, and with frames still open at the end: the
 * streaming summary gives what rva_chain_at gives on the model. */
static void test_capture_streaming_anomaly_chain_edges_match_model(void **state)
{
	(void)state;
	/* ts t is ns 900 + t (reference 100 ticks, frozen at ns 1000). */
	static const struct {
		uint64_t anomaly;
		size_t depth;
	} cases[] = {{950, 2}, {960, 3}, {970, 1}, {905, 0}, {2000, 0}, {1000, 1}, {975, 1}};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		capbuf c = {0};
		cb_header(&c, 100, 1000000000, 0, 1000, BASE, 0);
		cb_entry(&c, 0x1200, 10); /* A */
		cb_entry(&c, 0x1300, 20); /* B */
		cb_exit(&c, 50);	  /* B ends exactly at 950 */
		cb_entry(&c, 0x1400, 50); /* C starts there */
		cb_entry(&c, 0x1500, 60); /* D: entered and exited at 960 */
		cb_exit(&c, 60);
		cb_exit(&c, 60);	  /* C */
		cb_exit(&c, 70);	  /* A */
		cb_entry(&c, 0x1600, 75); /* E, open at the end */
		cb_end_slots(&c);
		cb_anomaly(&c, 1, cases[k].anomaly, "edge");
		cb_finish(&c);
		assert_summary_matches(c.b, c.len);
		rva_summary s;
		rva_error err;
		assert_int_equal(rva_capture_summarize(c.b, c.len, &s, &err), 0);
		assert_int_equal(s.anomaly_depth, cases[k].depth);
		assert_null(s.end_chain);
		rva_summary_release(&s);
		free(c.b);
	}
	/* No anomaly: the chain at the end of the trace.  Ends at the last
	 * event (970, B exited there before its sibling C), at the freeze
	 * inside the still-open A (1000), or, the freeze (tick 60) before the
	 * last event, unknown in one pass (NULL). */
	static const struct {
		uint64_t ref;
		int close_a;
		size_t depth;
		int known;
	} ends[] = {{100, 1, 2, 1}, {100, 0, 1, 1}, {60, 1, 0, 0}};
	for (size_t k = 0; k < sizeof(ends) / sizeof(ends[0]); k++) {
		capbuf c = {0};
		/* ts t is ns 1000 - ref + t. */
		cb_header(&c, ends[k].ref, 1000000000, 0, 1000, BASE, 0);
		cb_entry(&c, 0x1200, 10); /* A */
		cb_entry(&c, 0x1300, 20); /* B */
		cb_exit(&c, 70);
		cb_entry(&c, 0x1400, 70); /* C, entered and exited at 70 */
		cb_exit(&c, 70);
		if (ends[k].close_a)
			cb_exit(&c, 70);
		cb_end_slots(&c);
		cb_finish(&c);
		assert_summary_matches(c.b, c.len);
		rva_summary s;
		rva_error err;
		assert_int_equal(rva_capture_summarize(c.b, c.len, &s, &err), 0);
		assert_null(s.anomaly_chain);
		if (ends[k].known) {
			assert_non_null(s.end_chain);
			assert_int_equal(s.end_depth, ends[k].depth);
		} else {
			assert_null(s.end_chain);
		}
		rva_summary_release(&s);
		free(c.b);
	}
}

typedef struct prog_log {
	uint64_t calls, last, total;
	int backwards, total_changed;
} prog_log;

static void prog_cb(void *arg, uint64_t done, uint64_t total)
{
	prog_log *l = arg;
	if (l->calls && done < l->last)
		l->backwards = 1;
	if (l->calls && total != l->total)
		l->total_changed = 1;
	if (l->calls == 0)
		assert_int_equal(done, 0);
	l->calls++;
	l->last = done;
	l->total = total;
}

/* Progress of a 1.2 Mi-slot capture (9.6 MiB): reported from 0, never
 * backwards, ending at the file size, a few times per pass, not per slot;
 * the same for the summary, the model and rva_import_progress. */
static void test_capture_progress_monotonic_ends_at_total(void **state)
{
	(void)state;
	capbuf c = {0};
	cb_header(&c, 1ull << 40, 1000000000, 0, 1ull << 40, BASE, 0);
	uint32_t t = 0;
	for (uint32_t i = 0; i < 300000; i++) {
		cb_entry(&c, 0x1000, t += 3);
		cb_entry(&c, i % 3 ? 0x1010 : 0xffffff0000000010ull, t += 3);
		cb_exit(&c, t += 3);
		cb_exit(&c, t += 3);
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1000, 0x1000, 0, "outer");
	cb_finish(&c);
	for (int mode = 0; mode < 3; mode++) {
		prog_log l = {0};
		rva_progress p = {prog_cb, &l};
		rva_error err;
		if (mode == 0) {
			rva_summary s;
			assert_int_equal(rva_capture_summarize_progress(c.b, c.len, &s, &err, &p),
					 0);
			assert_int_equal(s.stats[0].calls, 300000);
			rva_summary_release(&s);
		} else {
			rva_trace *tr;
			assert_int_equal(
				mode == 1 ? rva_capture_decode_progress(c.b, c.len, &tr, &err, &p)
					  : rva_import_progress(c.b, c.len, &tr, &err, &p),
				0);
			assert_int_equal(tr->threads[0].ncalls, 600000);
			rva_trace_free(tr);
		}
		assert_false(l.backwards);
		assert_false(l.total_changed);
		assert_int_equal(l.total, c.len);
		assert_int_equal(l.last, c.len);
		/* 1.3 Mi slots: 6 reports per pass, plus start, records, end. */
		assert_true(l.calls >= 8);
		assert_true(l.calls <= 20);
	}
	/* A NULL progress, or one with no function, is accepted. */
	rva_summary s;
	rva_error err;
	rva_progress none = {NULL, NULL};
	assert_int_equal(rva_capture_summarize_progress(c.b, c.len, &s, &err, &none), 0);
	rva_summary_release(&s);
	/* Other formats: the start and the end only. */
	static const char folded[] = "a;b 3\na;c 4\n";
	prog_log l = {0};
	rva_progress p = {prog_cb, &l};
	rva_trace *tr;
	assert_int_equal(
		rva_import_progress((const uint8_t *)folded, sizeof(folded) - 1, &tr, &err, &p), 0);
	rva_trace_free(tr);
	assert_int_equal(l.calls, 2);
	assert_int_equal(l.last, sizeof(folded) - 1);
	free(c.b);
}

static void test_capture_random_corruption_never_crashes(void **state)
{
	capbuf c = {0};
	cb_header(&c, 1ull << 36, 1000000000, 3, 1000000, BASE, 1);
	for (uint32_t i = 0; i < 200; i++) {
		cb_entry(&c, i % 5 ? 0x1000 + i : (0xffff000000000000ull | i), i * 100);
		if (i % 3)
			cb_exit(&c, i * 100 + 50);
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1001, 0x1001, 0, "f1");
	cb_module(&c, 0, BASE, BASE + 0x10000, "/bin/x");
	cb_finish(&c);
	uint8_t *b = malloc(c.len);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 3000; round++) {
		memcpy(b, c.b, c.len);
		for (int k = 0; k < 1 + round % 8; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			b[(seed >> 33) % c.len] ^= (uint8_t)(seed >> 20);
		}
		rva_trace *t = NULL;
		rva_error err;
		if (rva_capture_decode(b, c.len, &t, &err) == 0) {
			rva_mstat *st;
			assert_int_equal(rva_method_stats(t, &st), 0);
			free(st);
			rva_trace_free(t);
		}
	}
	free(b);
	free(c.b);
}

/* Many distinct unsymbolized values (the value->method table grows several
 * times), parents with more distinct callees than the per-node memo holds,
 * and recursion through other methods: the summary still equals the model,
 * with a clock that divides 10^9 (integer ns) and one that does not. */
static void test_capture_streaming_many_callees_and_recursion_match_model(void **state)
{
	(void)state;
	static const uint64_t hz[] = {1000000, 19200000, 1000000000};
	for (size_t k = 0; k < 3; k++) {
		capbuf c = {0};
		cb_header(&c, 5000000, hz[k], 0, 40000000, BASE, 0);
		uint64_t rng = 88172645463325252ull;
		uint32_t t = 1000;
		unsigned depth = 0;
		for (int i = 0; i < 20000; i++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			t += 1 + (uint32_t)(rng & 7);
			if (depth == 0 || (depth < 16 && (rng >> 8) % 2)) {
				/* 9 callees per method among the first 16, 1000
				 * distinct values overall, some of them 64-bit. */
				uint64_t m = (rng >> 20) % 8 ? (rng >> 24) % 9 : (rng >> 24) % 1000;
				uint64_t v = (rng >> 40) % 4 ? 0x1000 + 16 * m
							     : 0xffffff0000000000ull + 16 * m;
				cb_entry(&c, v, t);
				depth++;
			} else {
				cb_exit(&c, t);
				depth--;
			}
		}
		cb_end_slots(&c);
		cb_symbol(&c, 0x1000, 0x1000, 0, "root");
		cb_finish(&c);
		assert_summary_matches(c.b, c.len);
		rva_summary s;
		rva_error err;
		assert_int_equal(rva_capture_summarize(c.b, c.len, &s, &err), 0);
		assert_true(s.trace->nmethods > 600);
		assert_true(s.tree.n > 1000);
		rva_summary_release(&s);
		free(c.b);
	}
}

/* A clock of 1 MHz: whole microseconds, converted in integers. */
static void test_capture_integer_clock_exact_ns(void **state)
{
	(void)state;
	capbuf c = {0};
	cb_header(&c, 100, 1000000, 0, 1000, BASE, 0);
	cb_entry(&c, 0x1000, 10);
	cb_exit(&c, 13);
	cb_end_slots(&c);
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(t->threads[0].ncalls, 1);
	assert_int_equal(t->threads[0].calls[0].end - t->threads[0].calls[0].start, 3000);
	assert_int_equal(t->threads[0].calls[0].start, 1000 - 90 * 1000);
	rva_trace_free(t);
	free(c.b);
}

/* Two-slot entries whose value has low word 1 make runs of low-word-1
 * slots; only the backward reading (a marker takes the slot before it) is
 * right, and the forward replay must pair them the same way. */
static void test_capture_value_with_low_word_one_paired_backwards(void **state)
{
	(void)state;
	static const uint64_t va = 0xffff000000001300ull, vb = 0x100000001ull, vc = 0x200000001ull;
	for (int torn = 0; torn < 2; torn++) {
		capbuf c = {0};
		cb_header(&c, 100, 1000000000, 0, 100, BASE, 1);
		if (torn) /* a lone second half, then a pair starting with low word 1 */
			cb_slot(&c, (uint64_t)2 << 32 | 1);
		cb_entry(&c, 0x1200, 5);
		cb_entry(&c, va, 6); /* value, marker */
		cb_entry(&c, vb, 7); /* value (low word 1), marker: a run of 3 */
		cb_exit(&c, 8);
		cb_exit(&c, 9);
		cb_entry(&c, vc, 10);
		cb_exit(&c, 11);
		cb_exit(&c, 12);
		cb_end_slots(&c);
		cb_symbol(&c, 0x1200, 0x1200, 0, "main");
		cb_symbol(&c, va, va, 0, "a");
		cb_symbol(&c, vb, vb, 0, "b");
		cb_symbol(&c, vc, vc, 0, "c");
		cb_finish(&c);
		rva_trace *t;
		rva_error err;
		assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
		assert_int_equal(t->dropped, (uint64_t)torn);
		assert_int_equal(t->threads[0].ncalls, 4);
		static const char *const want[] = {"main", "a", "b", "c"};
		static const int64_t dur[] = {7, 3, 1, 1};
		for (size_t i = 0; i < 4; i++) {
			const rva_call *k = &t->threads[0].calls[i];
			assert_string_equal(t->names[k->method], want[i]);
			assert_int_equal(k->end - k->start, dur[i]);
		}
		rva_trace_free(t);
		assert_summary_matches(c.b, c.len);
		free(c.b);
	}
}

/* FORMAT.md §1's STACK and EXIT_OF example (tests/tracer/golden/
 * frames.rvt.hex): serve (named by its EXIT_OF) → main → loop (named by the
 * STACK record) → work twice; ref 0x5_00000410 at 123456789000 ns. */
static void test_capture_golden_frames_every_frame_named(void **state)
{
	(void)state;
	uint8_t b[4096];
	size_t len = golden_load_hex(RVT_GOLDEN_DIR "/frames.rvt.hex", b, sizeof(b));
	assert_int_equal(len, 584);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(b, len, &t, &err), 0);
	const rva_thread *th = &t->threads[0];
	static const char *const names[] = {"serve", "main", "loop", "work", "work"};
	static const int64_t start[] = {0x100, 0x100, 0x100, 0x100, 0x200},
			     end[] = {0x400, 0x380, 0x300, 0x180, 0x280};
	static const uint32_t depth[] = {0, 1, 2, 3, 3};
	assert_int_equal(th->ncalls, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(th->calls[i].method, find(t, names[i]));
		assert_int_equal(th->calls[i].depth, depth[i]);
		/* ns = 1000 - (0x410 - counter) at 1 GHz, shift 0 */
		assert_int_equal(th->calls[i].start, 123456789000 - (0x410 - start[i]));
		assert_int_equal(th->calls[i].end, 123456789000 - (0x410 - end[i]));
	}
	assert_true(find(t, "(unknown caller)") < 0);
	assert_int_equal(t->repaired, 0);
	assert_int_equal(t->unbalanced, 0);
	assert_null(t->warning);
	assert_int_equal(t->nskipped, 0);
	rva_trace_free(t);
	assert_summary_matches(b, len);
}

/* CLOCK, FRAME..., STACK for a thread at `ts` in the frames `v[0..n)`
 * (outermost first) of `open` open. */
static void cb_stack(capbuf *c, uint32_t ts, const uint64_t *v, uint32_t n, uint32_t open)
{
	cb_slot(c, (uint64_t)ts);
	cb_slot(c, (uint64_t)ts << 32 | 2);
	for (uint32_t i = 0; i < n; i++) {
		cb_slot(c, v[i]);
		cb_slot(c, (uint64_t)ts << 32 | 4);
	}
	cb_slot(c, (uint64_t)open << 32 | n);
	cb_slot(c, (uint64_t)ts << 32 | 5);
}

static void names_symbols(capbuf *c)
{
	cb_symbol(c, 0x1200, 0x1200, 0, "main");
	cb_symbol(c, 0x1300, 0x1300, 0, "loop");
	cb_symbol(c, 0x1400, 0x1400, 0, "work");
	cb_symbol(c, 0x1500, 0x1500, 0, "step");
}

/*
 * A wrapped ring whose oldest slots are the end of a segment: `step` was
 * entered before the oldest slot and exits at 4 (nothing names it), then
 * work runs; the STACK record at 10 lists main → loop.  The replay starts
 * after step's exit, with main → loop open, named, and the 5 slots before
 * it counted as skipped.  A second segment's STACK agrees with the replay.
 */
static void test_capture_stack_names_frames_of_a_wrapped_ring(void **state)
{
	(void)state;
	static const uint64_t ml[] = {0x1200, 0x1300};
	capbuf c = {0};
	cb_header(&c, 100, 1000000000, 0, 1000, BASE, 1);
	cb_entry(&c, 0x1400, 2); /* work, closed before step's exit */
	cb_exit(&c, 3);
	cb_exit(&c, 4);		 /* step: begun before the oldest slot */
	cb_entry(&c, 0x1400, 6); /* work: entered here, open at the STACK */
	cb_stack(&c, 10, ml, 2, 3);
	cb_exit(&c, 20); /* work */
	cb_stack(&c, 30, ml, 2, 2);
	cb_entry(&c, 0x1400, 31);
	cb_exit(&c, 40);
	cb_exit(&c, 50); /* loop */
	cb_end_slots(&c);
	names_symbols(&c);
	cb_finish(&c);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	const rva_thread *th = &t->threads[0];
	static const char *const names[] = {"main", "loop", "work", "work"};
	static const int64_t start[] = {4, 4, 6, 31}, end[] = {100, 50, 20, 40};
	assert_int_equal(th->ncalls, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(th->calls[i].method, find(t, names[i]));
		assert_int_equal(th->calls[i].start, 900 + start[i]);
		assert_int_equal(th->calls[i].end, 900 + end[i]);
	}
	assert_int_equal(t->repaired, 0);
	assert_int_equal(t->unbalanced, 0);
	assert_int_equal(t->nskipped, 1);
	assert_int_equal(t->skipped[0].n, 3); /* the slots up to step's exit */
	rva_trace_free(t);
	assert_summary_matches(c.b, c.len);
	free(c.b);
}

/* Exits that do not match the entries: a STACK record listing other frames
 * than the replay holds, one listing another number of them, an EXIT_OF
 * with a traced frame still open, more exits than frames open.  Each is
 * counted and the capture says so. */
static void test_capture_unbalanced_exits_are_flagged(void **state)
{
	(void)state;
	static const uint64_t ml[] = {0x1200, 0x1300}, mw[] = {0x1200, 0x1400};
	for (int kind = 0; kind < 4; kind++) {
		capbuf c = {0};
		cb_header(&c, 100, 1000000000, 0, 1000, BASE, 0);
		cb_stack(&c, 1, ml, 2, 2);
		cb_entry(&c, 0x1400, 2);
		cb_exit(&c, 3);
		if (kind == 0) {
			cb_stack(&c, 4, mw, 2, 2); /* loop is open, not work */
		} else if (kind == 1) {
			cb_stack(&c, 4, ml, 2, 3); /* three open */
		} else if (kind == 2) {
			cb_slot(&c, 0x1500); /* EXIT_OF step ... */
			cb_slot(&c, (uint64_t)4 << 32 | 6);
			cb_exit(&c, 4); /* ... closing loop */
		} else {
			cb_exit(&c, 4);
			cb_exit(&c, 5);
			cb_exit(&c, 6); /* a third exit: main and loop were all */
		}
		cb_end_slots(&c);
		names_symbols(&c);
		cb_finish(&c);
		rva_trace *t;
		rva_error err = {{0}};
		assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
		if (t->unbalanced != 1)
			fail_msg("kind %d: unbalanced %llu", kind,
				 (unsigned long long)t->unbalanced);
		assert_non_null(t->warning);
		assert_non_null(strstr(t->warning, "exits do not match"));
		rva_trace_free(t);
		assert_summary_matches(c.b, c.len);
		free(c.b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_golden_frames_every_frame_named),
		cmocka_unit_test(test_capture_stack_names_frames_of_a_wrapped_ring),
		cmocka_unit_test(test_capture_unbalanced_exits_are_flagged),
		cmocka_unit_test(test_capture_worked_example_main_18ns_work_6ns),
		cmocka_unit_test(test_capture_clock_records_span_any_gap_and_loss_is_counted),
		cmocka_unit_test(test_capture_many_wraps_reconstructed),
		cmocka_unit_test(test_capture_shift_scales_ticks),
		cmocka_unit_test(test_capture_exits_without_entry_start_at_oldest),
		cmocka_unit_test(test_capture_entries_without_exit_end_at_reference),
		cmocka_unit_test(test_capture_torn_oldest_slot_dropped),
		cmocka_unit_test(test_capture_empty_symbol_name_uses_module_offset),
		cmocka_unit_test(test_capture_truncated_every_length_rejected),
		cmocka_unit_test(test_capture_hostile_headers_rejected),
		cmocka_unit_test(test_capture_streaming_anomaly_chain_edges_match_model),
		cmocka_unit_test(test_capture_progress_monotonic_ends_at_total),
		cmocka_unit_test(test_capture_random_corruption_never_crashes),
		cmocka_unit_test(test_capture_streaming_summary_matches_model),
		cmocka_unit_test(test_capture_muted_share_of_a_phase_callers_time_after_the_mute),
		cmocka_unit_test(test_capture_muted_pairs_per_caller_bounded),
		cmocka_unit_test(test_capture_native_clones_named_as_their_function),
		cmocka_unit_test(test_capture_streaming_many_callees_and_recursion_match_model),
		cmocka_unit_test(test_capture_integer_clock_exact_ns),
		cmocka_unit_test(test_capture_value_with_low_word_one_paired_backwards),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
