/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_format.c — the capture writer's encoding against the golden bytes of
 * FORMAT.md's worked examples (tests/tracer/golden/example.rvt.hex and
 * frames.rvt.hex, generated from the byte tables independently of the
 * writer), the STACK record as the trace point's slow path writes it, the
 * examples' decoding and timestamp reconstruction, and a reader that
 * refuses damaged files.
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

#include "golden/golden_hex.h"

#include "capture_util.h"
#include "tracer-int.h"

#ifndef RVT_GOLDEN_DIR
#define RVT_GOLDEN_DIR "tests/tracer/golden"
#endif

static const uint64_t example_slots[8] = {
	0xfffffffe00001200ull,
	0x000029aaaaaad000ull,
	0x0000000200000001ull,
	0x0000000800000000ull,
	0x0000001000000000ull,
	0,
	0,
	0,
};

static void example_desc(struct rvt_capture_desc *d, struct rvt_module m[2], struct rvt_symbol s[2])
{
	static const uint8_t id0[4] = {1, 2, 3, 4}, id1[4] = {0xaa, 0xbb, 0xcc, 0xdd};
	m[0] = (struct rvt_module){0, 0x555555554000,	 0x555555554000, 0x555555559000, id0,
				   4, "/usr/bin/example"};
	m[1] = (struct rvt_module){1, 0x7f0000000000,	    0x7f0000000000, 0x7f0000003000, id1,
				   4, "/usr/lib/libwork.so"};
	s[0] = (struct rvt_symbol){0x1200, 0x1200, 0, "main"};
	s[1] = (struct rvt_symbol){0x29aaaaaad000, 0x1000, 1, "work"};
	memset(d, 0, sizeof(*d));
	d->ref_counter = 0x0000000200000010ull;
	d->ref_realtime_ns = 1763683200000000000ull;
	d->ref_monotonic_ns = 123456789000ull;
	d->counter_hz = 1000000000ull;
	d->shift = 0;
	d->arch = 1;
	d->pid = 4242;
	d->tid = 4242;
	d->method_base = 0x555555554000ull;
	d->ring_slots = 8;
	d->start_pos = 0;
	d->end_pos = 5;
	d->ring = example_slots;
	d->exe = "/usr/bin/example";
	d->cmdline = "example\0--demo";
	d->cmdline_len = 15;
	d->thread_name = "main";
	d->modules = m;
	d->nmodules = 2;
	d->symbols = s;
	d->nsymbols = 2;
}

/* out[0..len) is the golden file's bytes, byte for byte. */
static void assert_golden(const uint8_t *out, size_t len, const uint8_t *golden, size_t glen)
{
	assert_int_equal(len, glen);
	for (size_t i = 0; i < len; i++)
		if (out[i] != golden[i])
			fail_msg("byte %zu: writer %02x, golden %02x", i, out[i], golden[i]);
}

static void test_format_writer_matches_golden_example(void **state)
{
	(void)state;
	uint8_t golden[4096];
	size_t glen = golden_load_hex(RVT_GOLDEN_DIR "/example.rvt.hex", golden, sizeof(golden));
	assert_int_equal(glen, 472);
	struct rvt_capture_desc d;
	struct rvt_module m[2];
	struct rvt_symbol s[2];
	example_desc(&d, m, s);
	uint8_t *out;
	size_t len;
	assert_int_equal(rvt_capture_encode(&d, &out, &len), 0);
	assert_golden(out, len, golden, glen);
	free(out);
}

static void test_format_golden_example_decodes_as_documented(void **state)
{
	(void)state;
	uint8_t golden[4096];
	size_t glen = golden_load_hex(RVT_GOLDEN_DIR "/example.rvt.hex", golden, sizeof(golden));
	struct cu_capture c;
	assert_int_equal(cu_parse(golden, glen, &c), 0);
	assert_int_equal(c.nevents, 4);
	assert_int_equal(c.nmodules, 2);
	assert_string_equal(c.exe, "/usr/bin/example");
	assert_string_equal(c.thread_name, "main");
	assert_true(c.has_cmdline);
	assert_string_equal(cu_name(&c, c.events[0].value), "main");
	assert_string_equal(cu_name(&c, c.events[1].value), "work");
	/* main ran 18 ns (0x1_fffffffe → 0x2_00000010), work 6 ns. */
	assert_true(c.events[0].ts == 0x1fffffffeull);
	assert_true(c.events[1].ts == 0x200000002ull);
	assert_true(c.events[2].ts == 0x200000008ull);
	assert_true(c.events[3].ts == 0x200000010ull);
	assert_int_equal(c.events[3].ts - c.events[0].ts, 18);
	assert_int_equal(c.events[2].ts - c.events[1].ts, 6);
	cu_release(&c);
}

static void test_format_damaged_file_is_refused(void **state)
{
	(void)state;
	uint8_t golden[4096];
	size_t glen = golden_load_hex(RVT_GOLDEN_DIR "/example.rvt.hex", golden, sizeof(golden));
	struct cu_capture c;
	for (size_t cut = 0; cut < glen; cut += 8) {
		assert_int_equal(cu_parse(golden, cut, &c), -EBADMSG);
		cu_release(&c);
	}
	/* Slot 1's value now fits 32 bits: a writer never makes that two slots. */
	memset(golden + 128 + 8 + 4, 0, 4);
	assert_int_equal(cu_parse(golden, glen, &c), -EBADMSG);
	cu_release(&c);
}

static void test_format_wrapped_ring_starts_at_end_pos(void **state)
{
	(void)state;
	uint64_t ring[4] = {0x0000000500000000ull, 0x0000000600001200ull, 0x0000000300001200ull,
			    0x0000000400000000ull};
	struct rvt_capture_desc d;
	memset(&d, 0, sizeof(d));
	d.flags = RVT_CAP_WRAPPED;
	d.ref_counter = 7;
	d.counter_hz = 1000000000;
	d.ring_slots = 4;
	d.start_pos = 2;
	d.end_pos = 2;
	d.ring = ring;
	uint8_t *out;
	size_t len;
	assert_int_equal(rvt_capture_encode(&d, &out, &len), 0);
	struct cu_capture c;
	assert_int_equal(cu_parse(out, len, &c), 0);
	assert_int_equal(c.slot_count, 4);
	assert_true(c.slots[0] == ring[2] && c.slots[3] == ring[1]);
	for (size_t i = 1; i < c.nevents; i++)
		assert_true(c.events[i].ts > c.events[i - 1].ts);
	cu_release(&c);
	free(out);
	assert_int_equal(rvt_capture_slot_count(8, 0, 5, 0), 5);
	assert_int_equal(rvt_capture_slot_count(8, 3, 3, 1), 8);
}

/*
 * 200 exits whose full (shifted) counters step by up to 0xf0000000: the low
 * 32 bits wrap over and over, and FORMAT.md's backward reconstruction from
 * the reference counter must give every full value back, at shift 0 and 7.
 */
static void test_format_timestamps_reconstruct_across_many_wraps(void **state)
{
	(void)state;
	for (unsigned shift = 0; shift <= 7; shift += 7) {
		enum { N = 200 };
		uint64_t full[N], ring[N];
		uint64_t t = 0x123456789ull;
		for (int i = 0; i < N; i++) {
			t += 0x10000000ull + (uint64_t)(i % 15) * 0x10000000ull;
			full[i] = t;
			ring[i] = (t & 0xffffffffull) << 32; /* exit slot */
		}
		struct rvt_capture_desc d;
		memset(&d, 0, sizeof(d));
		d.ref_counter = (full[N - 1] + 5) << shift;
		d.counter_hz = 1000000000;
		d.shift = (uint8_t)shift;
		d.ring_slots = N + 1;
		d.end_pos = N;
		d.ring = ring;
		uint8_t *out;
		size_t len;
		assert_int_equal(rvt_capture_encode(&d, &out, &len), 0);
		struct cu_capture c;
		assert_int_equal(cu_parse(out, len, &c), 0);
		assert_int_equal(c.nevents, N);
		for (int i = 0; i < N; i++)
			assert_true(c.events[i].ts == full[i]);
		cu_release(&c);
		free(out);
	}
}

/* FORMAT.md §1, "STACK and EXIT_OF, worked example". */
static const uint64_t frames_slots[24] = {
	0x0000000500000100ull, 0x0000010000000002ull, /* CLOCK */
	0x0000000000001200ull, 0x0000010000000004ull, /* FRAME main */
	0x0000000000001300ull, 0x0000010000000004ull, /* FRAME loop */
	0x0000000200000002ull, 0x0000010000000005ull, /* STACK: 2 open, 2 listed */
	0x0000010000001400ull, 0x0000018000000000ull, /* work */
	0x0000020000001400ull, 0x0000028000000000ull, /* work */
	0x0000030000000000ull, 0x0000038000000000ull, /* exits of loop, main */
	0x0000000000001100ull, 0x0000040000000006ull, /* EXIT_OF serve */
	0x0000040000000000ull,			      /* its exit */
};

/* The trace point's slow path writes the record's first eight slots: a
 * thread whose shadow holds main → loop reaches rvt__clock (a ring of 24
 * slots is one segment: a STACK lists at most (24 / 4 - 2) / 2 frames). */
static void test_format_clock_writes_stack_record_as_documented(void **state)
{
	(void)state;
	uint64_t ring[24] = {0};
	static uintptr_t shadow[2 * RVT_SHADOW_FRAMES];
	struct rvt__thread t;
	memset(&t, 0, sizeof(t));
	struct rvt_ring r = {.slots = ring, .nslots = 24, .step = 24, .clock_hi = UINT64_MAX};
	t.seen = (uintptr_t)&r;
	t.base = ring;
	t.limit = t.bound = ring + 24;
	t.step = sizeof(ring);
	t.method_base = 0x555555554000ull;
	t.sh_base = (uintptr_t)shadow;
	t.sh_end = t.sh_base + RVT_SHADOW_FRAMES * RVT_SHADOW_FRAME;
	shadow[0] = 0x7ffd0000f000u; /* stack pointers: not written */
	shadow[1] = 0x1200;
	shadow[2] = 0x7ffd0000e000u;
	shadow[3] = 0x1300;
	t.sh_top = t.sh_base + 2 * RVT_SHADOW_FRAME;
	RVT__ST(t.cur, ring);
	RVT__ST(t.busy, 1);
	assert_true(rvt__clock(&t, 0x500000100ull) == 0x500000100ull);
	assert_true(RVT__LD(t.cur) == ring + 8);
	assert_true(t.hi == 5);
	for (size_t i = 0; i < 8; i++)
		if (ring[i] != frames_slots[i])
			fail_msg("slot %zu: %016llx, documented %016llx", i,
				 (unsigned long long)ring[i], (unsigned long long)frames_slots[i]);
	/* Three frames open: still two listed (the bound), three counted. */
	shadow[4] = 0x7ffd0000d000u;
	shadow[5] = 0x1400;
	t.sh_top += RVT_SHADOW_FRAME;
	rvt__clock(&t, 0x500000200ull);
	assert_true(ring[14] == ((uint64_t)3 << 32 | 2));
}

/* The trace point after a bound: its slot pointer at p, hi asking for
 * rvt__clock (trace-inline.h); returns the slots rvt__clock wrote. */
static size_t clock_at(struct rvt__thread *t, uint64_t *p, uint64_t now)
{
	RVT__ST(t->cur, p);
	t->hi = UINT64_MAX;
	assert_true(rvt__clock(t, now) == now);
	return (size_t)(RVT__LD(t->cur) - p);
}

/* Bounds come every few slots, segments are longer (trace-inline.h,
 * Segments): at a bound inside a segment rvt__clock writes nothing unless
 * the counter's high word changed, and it times the stretch since the last
 * bound for the budget's wake (tracer-int.h, rvt__wake); at a segment's
 * start it writes CLOCK and STACK whatever the high word. */
static void test_format_bound_inside_segment_writes_no_clock(void **state)
{
	(void)state;
	enum { SUB = 16, STEP = 64, N = 128 };
	static uint64_t ring[N];
	static uintptr_t shadow[2 * RVT_SHADOW_FRAMES];
	struct rvt_ring r = {.slots = ring, .nslots = N, .step = STEP, .clock_hi = UINT64_MAX};
	struct rvt__thread t;
	memset(&t, 0, sizeof(t));
	t.seen = (uintptr_t)&r;
	t.base = ring;
	t.limit = ring + N;
	t.bound = ring + SUB;
	t.step = SUB * sizeof(uint64_t);
	t.sh_base = t.sh_top = (uintptr_t)shadow;
	t.sh_end = t.sh_base + RVT_SHADOW_FRAMES * RVT_SHADOW_FRAME;
	RVT__ST(t.busy, 1);
	/* No wake wanted yet: nothing but the records. */
	atomic_store(&rvt__wake.tps, 0);
	atomic_store(&rvt__wake.word, 0);

	/* A segment's start: CLOCK, STACK (no frame). */
	assert_int_equal(clock_at(&t, ring, 0x500000000ull), 4);
	assert_true(ring[0] == 0x500000000ull && (uint32_t)ring[1] == RVT_SLOT_CLOCK);

	/* A bound inside the segment, the high word unchanged: nothing. */
	assert_int_equal(clock_at(&t, ring + SUB, 0x500000100ull), 0);
	assert_true(t.hi == 5);

	/* The next bound, SUB slots in 0x10 ticks, under a threshold of 2
	 * ticks a slot: the thread marks its ring and takes the word of a
	 * budget that sleeps wanting a wake. */
	atomic_store(&rvt__wake.tps, 2u << 16);
	atomic_store(&rvt__wake.not_before, 0);
	atomic_store(&rvt__wake.word, 1);
	assert_int_equal(clock_at(&t, ring + 2 * SUB, 0x500000110ull), 0);
	assert_int_equal(atomic_load(&r.wake_fast), 1);
	assert_int_equal(atomic_load(&rvt__wake.word), 0);

	/* Slower than the threshold (SUB slots in 0x40 ticks): no mark, and
	 * the word stays for the budget to take back. */
	atomic_store(&r.wake_fast, 0);
	atomic_store(&rvt__wake.word, 1);
	assert_int_equal(clock_at(&t, ring + 3 * SUB, 0x500000150ull), 0);
	assert_int_equal(atomic_load(&r.wake_fast), 0);
	assert_int_equal(atomic_load(&rvt__wake.word), 1);

	/* A segment's start: CLOCK and STACK with the high word unchanged. */
	assert_int_equal(clock_at(&t, ring + STEP, 0x500000200ull), 4);
	assert_true(ring[STEP] == 0x500000200ull && (uint32_t)ring[STEP + 1] == RVT_SLOT_CLOCK);

	/* A bound inside it where the high word changed: CLOCK and STACK. */
	assert_int_equal(clock_at(&t, ring + STEP + SUB, 0x600000000ull), 4);
	assert_true(ring[STEP + SUB] == 0x600000000ull &&
		    (uint32_t)ring[STEP + SUB + 1] == RVT_SLOT_CLOCK);
	atomic_store(&rvt__wake.tps, 0);
	atomic_store(&rvt__wake.word, 0);
}

static void test_format_writer_matches_golden_frames(void **state)
{
	(void)state;
	uint8_t golden[4096];
	size_t glen = golden_load_hex(RVT_GOLDEN_DIR "/frames.rvt.hex", golden, sizeof(golden));
	assert_int_equal(glen, 584);
	struct rvt_capture_desc d;
	struct rvt_module m[2];
	struct rvt_symbol s[2];
	example_desc(&d, m, s);
	static const struct rvt_symbol syms[4] = {{0x1100, 0x1100, 0, "serve"},
						  {0x1200, 0x1200, 0, "main"},
						  {0x1300, 0x1300, 0, "loop"},
						  {0x1400, 0x1400, 0, "work"}};
	d.ref_counter = 0x500000410ull;
	d.ring_slots = 24;
	d.end_pos = 17;
	d.ring = frames_slots;
	d.nmodules = 1;
	d.symbols = syms;
	d.nsymbols = 4;
	uint8_t *out;
	size_t len;
	assert_int_equal(rvt_capture_encode(&d, &out, &len), 0);
	assert_golden(out, len, golden, glen);
	free(out);
	struct cu_capture c;
	assert_int_equal(cu_parse(golden, glen, &c), 0);
	assert_int_equal(c.nstacks, 1);
	assert_int_equal(c.nexit_of, 1);
	assert_int_equal(c.nevents, 7);
	assert_string_equal(cu_name(&c, c.events[6].value), "serve");
	cu_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_writer_matches_golden_example),
		cmocka_unit_test(test_format_bound_inside_segment_writes_no_clock),
		cmocka_unit_test(test_format_golden_example_decodes_as_documented),
		cmocka_unit_test(test_format_damaged_file_is_refused),
		cmocka_unit_test(test_format_wrapped_ring_starts_at_end_pos),
		cmocka_unit_test(test_format_timestamps_reconstruct_across_many_wraps),
		cmocka_unit_test(test_format_clock_writes_stack_record_as_documented),
		cmocka_unit_test(test_format_writer_matches_golden_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
