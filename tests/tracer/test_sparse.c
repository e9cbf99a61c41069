/*
 * test_sparse.c — sparse time (issue 14, lever 5; FORMAT.md §1 "Sparse
 * time"): every K-th event stamped in call mode, inline mode and manual
 * trace points alike; a forced stamp after the ticker marks the thread (by
 * hand, and after a real gap); the FORMAT.md worked example encoded and
 * decoded to its exact times; interpolation monotonic and bounded by the
 * stamped neighbours on a live capture; exact mode unchanged (version 2, no
 * SPARSE record, every event read the clock, the rare path's clamp only in
 * sparse rings); and a mode switch taking effect at a capture's ring switch.
 *
 * A burst of events checked for exact K-periodicity is retried when the
 * ticker's counter (rvt_sparse_ticks) moved during it: no timing is assumed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "rearview/analysis.h"
#include "rearview/trace-inline.h"
#include "rearview/trace.h"
#include "tracer-int.h"

#define NONE 0xffffffffu

static uint64_t rd(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Captures the calling thread into a heap buffer (caller frees). */
static uint8_t *grab(size_t *len)
{
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	uint8_t *buf = malloc(size);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, size, 0), (ssize_t)size);
	close(fd);
	*len = size;
	return buf;
}

struct ev {
	uint32_t lo; /* 0 exit, 1 two-slot entry, else the method value */
	uint32_t ts;
};

/* The events of a capture's slots, oldest first (CLOCK and LOSS records
 * left out), decoding backwards (FORMAT.md §1).  Returns how many. */
static size_t raw_events(const uint8_t *buf, struct ev *out, size_t cap)
{
	uint64_t n = rd(buf + 96, 8);
	const uint8_t *sl = buf + rd(buf + 104, 8);
	size_t k = 0;
	for (uint64_t i = n; i-- > 0;) {
		uint64_t s = rd(sl + 8 * i, 8);
		uint32_t lo = (uint32_t)s;
		if (lo >= 1 && lo <= 15) {
			assert_true(i > 0);
			i--;
			if (lo >= 2)
				continue;
		}
		assert_true(k < cap);
		out[k].lo = lo;
		out[k++].ts = (uint32_t)(s >> 32);
	}
	for (size_t a = 0, b = k; a + 1 < b; a++, b--) {
		struct ev t = out[a];
		out[a] = out[b - 1];
		out[b - 1] = t;
	}
	return k;
}

/* The SPARSE record's K, 0 when the capture has none. */
static uint32_t sparse_record_k(const uint8_t *buf, size_t len)
{
	uint64_t off = rd(buf + 112, 8);
	while (off + 8 <= len) {
		uint16_t type = (uint16_t)rd(buf + off, 2);
		uint32_t l = (uint32_t)rd(buf + off + 4, 4);
		if (type == RVT_REC_SPARSE) {
			assert_int_equal(l, 8);
			assert_int_equal(rd(buf + off + 12, 4), RVT_SPARSE_TICK_US);
			return (uint32_t)rd(buf + off + 8, 4);
		}
		if (type == RVT_REC_END)
			break;
		off += 8 + ((l + 7u) & ~7u);
	}
	return 0;
}

static void workload(int which, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		if (which == 0) {
			call_top(3);
		} else if (which == 1) {
			inl_top(3);
		} else {
			static const char key[2];
			rvt_enter(&key[0]);
			rvt_enter(&key[1]);
			rvt_exit();
			rvt_exit();
		}
	}
}

/*
 * Traces `rounds` of workload `which` into a fresh ring with K = k until
 * no tick fell inside the burst, and returns its events (*n).
 */
static struct ev *clean_burst(unsigned k, int which, int rounds, size_t *n, uint8_t **capture,
			      size_t *caplen)
{
	assert_int_equal(rvt_set_time_mode(k), 0);
	for (int attempt = 0; attempt < 1000; attempt++) {
		uint64_t t0 = atomic_load(&rvt_sparse_ticks);
		assert_int_equal(rvt_start(0), 0);
		workload(which, rounds);
		assert_int_equal(rvt_stop(0, 0), 0);
		uint64_t t1 = atomic_load(&rvt_sparse_ticks);
		size_t len;
		uint8_t *buf = grab(&len);
		assert_int_equal(rvt_stop(0, 1), 0); /* the next start maps a new ring */
		if (t0 != t1 || (t0 & 1)) {
			free(buf);
			continue;
		}
		struct ev *e = calloc(4096, sizeof(*e));
		assert_non_null(e);
		*n = raw_events(buf, e, 4096);
		if (capture) {
			*capture = buf;
			*caplen = len;
		} else {
			free(buf);
		}
		return e;
	}
	fail_msg("a tick fell into every one of 1000 bursts");
	return NULL;
}

static void check_every_kth(unsigned k, int which)
{
	size_t n;
	uint8_t *buf;
	size_t len;
	struct ev *e = clean_burst(k, which, 20, &n, &buf, &len);
	assert_true(n >= 40);
	for (size_t i = 0; i < n; i++) {
		int stamped = i % k == 0;
		if (stamped != (e[i].ts != NONE))
			fail_msg("K=%u: event %zu of %zu is %s", k, i, n,
				 stamped ? "unstamped, expected a stamp"
					 : "stamped, expected none");
	}
	assert_int_equal(rd(buf + 8, 2), RVT_FORMAT_VERSION_SPARSE);
	assert_true(rd(buf + 12, 4) & RVT_CAP_SPARSE);
	assert_int_equal(sparse_record_k(buf, len), k);
	free(buf);
	free(e);
	assert_int_equal(rvt_set_time_mode(0), 0);
}

static void test_sparse_call_mode_stamps_every_kth_event(void **state)
{
	(void)state;
	check_every_kth(4, 0);
	check_every_kth(7, 0);
}

static void test_sparse_inline_mode_stamps_every_kth_event(void **state)
{
	(void)state;
	check_every_kth(4, 1);
	check_every_kth(5, 1);
}

static void test_sparse_manual_trace_points_stamp_every_kth_event(void **state)
{
	(void)state;
	check_every_kth(3, 2);
}

static void test_sparse_call_and_inline_modes_write_the_same_pattern(void **state)
{
	(void)state;
	size_t na, nb;
	struct ev *a = clean_burst(6, 0, 10, &na, NULL, NULL);
	struct ev *b = clean_burst(6, 1, 10, &nb, NULL, NULL);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].lo == 0, b[i].lo == 0);
		assert_int_equal(a[i].ts == NONE, b[i].ts == NONE);
	}
	free(a);
	free(b);
	assert_int_equal(rvt_set_time_mode(0), 0);
}

static void test_sparse_tick_forces_the_next_event_stamped(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_time_mode(1000), 0);
	assert_int_equal(rvt_start(0), 0);
	workload(0, 1);	   /* 12 events: the first stamped */
	rvt_sparse_tick(); /* what the ticker does every millisecond */
	workload(0, 1);
	/* A real gap: wait until the ticker has run twice. */
	uint64_t t0 = atomic_load(&rvt_sparse_ticks);
	while (atomic_load(&rvt_sparse_ticks) < t0 + 4) {
		struct timespec nap = {0, 200 * 1000};
		nanosleep(&nap, NULL);
	}
	workload(0, 1);
	assert_int_equal(rvt_stop(0, 0), 0);
	size_t len;
	uint8_t *buf = grab(&len);
	assert_int_equal(rvt_stop(0, 1), 0);
	struct ev e[64];
	size_t n = raw_events(buf, e, 64);
	assert_int_equal(n, 36);
	assert_true(e[0].ts != NONE);
	assert_true(e[12].ts != NONE); /* after the hand-made mark */
	assert_true(e[24].ts != NONE); /* after the gap */
	/* K = 1000: nothing else but what a stray tick may have marked. */
	assert_true(e[1].ts == NONE || e[13].ts == NONE || e[25].ts == NONE);
	free(buf);
	assert_int_equal(rvt_set_time_mode(0), 0);
}

/* rvt__clock, the rare path: a counter whose low word is all ones. */
static void test_sparse_clock_moves_all_ones_back_only_in_sparse_rings(void **state)
{
	(void)state;
	uint64_t ring[8] = {0};
	struct rvt__thread t;
	memset(&t, 0, sizeof(t));
	t.base = ring;
	t.limit = ring + 8;
	t.cur = ring;
	t.hi = 5;
	uint64_t now = (uint64_t)5 << 32 | NONE;
	/* Exact: unchanged, no CLOCK (same high word). */
	assert_int_equal(rvt__clock(&t, now), now);
	assert_ptr_equal(atomic_load(&t.cur), ring);
	/* Sparse: one tick back, never the "no time" value. */
	t.reload = 3;
	assert_int_equal(rvt__clock(&t, now), now - 1);
	assert_ptr_equal(atomic_load(&t.cur), ring);
	/* A new high word still writes its CLOCK. */
	t.reload = 0;
	assert_int_equal(rvt__clock(&t, (uint64_t)6 << 32 | 7), (uint64_t)6 << 32 | 7);
	assert_ptr_equal(atomic_load(&t.cur), ring + 2);
	assert_int_equal(ring[0], (uint64_t)6 << 32 | 7);
	assert_int_equal(ring[1], (uint64_t)7 << 32 | RVT_SLOT_CLOCK);
	assert_int_equal(t.hi, 6);
}

static void test_sparse_exact_mode_is_unchanged(void **state)
{
	(void)state;
	assert_int_equal(rvt_time_mode(), 0);
	assert_int_equal(rvt_start(0), 0);
	uint64_t c0 = rvt__counter();
	workload(0, 5);
	workload(1, 5);
	workload(2, 5);
	uint64_t c1 = rvt__counter();
	assert_int_equal(rvt_stop(0, 0), 0);
	size_t len;
	uint8_t *buf = grab(&len);
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(rd(buf + 8, 2), RVT_FORMAT_VERSION);
	assert_int_equal(rd(buf + 12, 4) & RVT_CAP_SPARSE, 0);
	assert_int_equal(sparse_record_k(buf, len), 0);
	/* Every event read the clock: its timestamp lies between the counters
	 * read around the workload (32-bit timestamps, compared modulo 2^32). */
	unsigned shift = buf[48];
	uint32_t lo = (uint32_t)(c0 >> shift), span = (uint32_t)((c1 >> shift) - (c0 >> shift));
	struct ev e[512];
	size_t n = raw_events(buf, e, 512);
	assert_int_equal(n, 5 * 12 + 5 * 12 + 5 * 4);
	for (size_t i = 0; i < n; i++)
		if ((uint32_t)(e[i].ts - lo) > span)
			fail_msg("event %zu: ts %#x outside [%#x, +%#x]", i, e[i].ts, lo, span);
	free(buf);
}

/* FORMAT.md §1, "Sparse time, worked example": the slots, oldest first. */
static const uint64_t example_slots[12] = {
	0x00000001fffffff0ull, 0xfffffff000000002ull, 0xfffffff000001200ull, 0xffffffff00001300ull,
	0xffffffff00000000ull, 0xffffffff00001300ull, 0x0000000200000030ull, 0x0000003000000002ull,
	0x0000003000000000ull, 0xffffffff00000000ull, 0x4000000000001200ull, 0xffffffff00000000ull,
};

static void test_sparse_worked_example_decodes_to_format_md_times(void **state)
{
	(void)state;
	struct rvt_symbol syms[2] = {{0x1200, 0x1200, 0, "f"}, {0x1300, 0x1300, 0, "g"}};
	struct rvt_module mod = {0, 0x555555554000ull, 0x555555554000ull, 0x555555559000ull, NULL,
				 0, "/usr/bin/example"};
	struct rvt_capture_desc d = {
		.ref_counter = 0x240000100ull,
		.ref_realtime_ns = 1763683200000000000ull,
		.ref_monotonic_ns = 1000000000000ull,
		.counter_hz = 1000000000u,
		.shift = 0,
		.arch = 1,
		.pid = 4242,
		.tid = 4242,
		.method_base = 0x555555554000ull,
		.ring_slots = 16,
		.start_pos = 0,
		.end_pos = 12,
		.ring = example_slots,
		.modules = &mod,
		.nmodules = 1,
		.symbols = syms,
		.nsymbols = 2,
		.sparse_k = 4,
	};
	uint8_t *buf;
	size_t len;
	assert_int_equal(rvt_capture_encode(&d, &buf, &len), 0);
	assert_int_equal(rd(buf + 8, 2), 3);
	assert_int_equal(rd(buf + 12, 4), RVT_CAP_SPARSE | RVT_CAP_CHECKSUMMED);
	assert_int_equal(sparse_record_k(buf, len), 4);

	rva_trace *t;
	rva_error err;
	if (rva_capture_decode(buf, len, &t, &err) != 0)
		fail_msg("decode: %s", err.msg);
	assert_int_equal(t->sparse_k, 4);
	assert_int_equal(t->interpolated, 5);
	/* Calls in entry order, as ns relative to the freeze (FORMAT.md). */
	static const struct {
		const char *name;
		int64_t start, end;
	} want[] = {
		{"f", -0x40000110, -0x400000c0}, /* 0x1_fffffff0 .. 0x2_00000040 */
		{"g", -0x40000100, -0x400000f0}, /* 0x2_00000000 .. 0x2_00000010 */
		{"g", -0x400000e0, -0x400000d0}, /* 0x2_00000020 .. 0x2_00000030 */
		{"f", -0x100, -0xf0},		 /* 0x2_40000000 .. 0x2_40000010 */
	};
	const rva_thread *th = &t->threads[0];
	assert_int_equal(th->ncalls, 4);
	for (size_t i = 0; i < 4; i++) {
		const char *name = t->names[th->calls[i].method];
		int64_t s = th->calls[i].start - 1000000000000ll;
		int64_t e = th->calls[i].end - 1000000000000ll;
		if (strcmp(name, want[i].name) || s != want[i].start || e != want[i].end)
			fail_msg("call %zu: %s %lld..%lld, want %s %lld..%lld", i, name,
				 (long long)s, (long long)e, want[i].name, (long long)want[i].start,
				 (long long)want[i].end);
	}
	rva_trace_free(t);
	free(buf);
	/* K = 0: exact, version 2, no record. */
	d.sparse_k = 0;
	assert_int_equal(rvt_capture_encode(&d, &buf, &len), 0);
	assert_int_equal(rd(buf + 8, 2), 2);
	assert_int_equal(sparse_record_k(buf, len), 0);
	free(buf);
}

/* Live: every call's times are ordered and lie within the trace. */
static void check_model_ordered(const rva_trace *t)
{
	const rva_thread *th = &t->threads[0];
	assert_true(th->ncalls > 0);
	for (size_t i = 0; i < th->ncalls; i++) {
		assert_true(th->calls[i].start <= th->calls[i].end);
		assert_true(th->calls[i].start >= t->start);
		assert_true(th->calls[i].end <= t->end);
		if (i)
			assert_true(th->calls[i].start >= th->calls[i - 1].start);
	}
}

static void test_sparse_live_interpolation_is_monotonic_and_bounded(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_time_mode(8), 0);
	assert_int_equal(rvt_start(0), 0);
	for (int r = 0; r < 50; r++) {
		workload(r % 3, 3);
		if (r % 10 == 9) { /* an idle gap the ticker marks */
			uint64_t t0 = atomic_load(&rvt_sparse_ticks);
			while (atomic_load(&rvt_sparse_ticks) < t0 + 4) {
				struct timespec nap = {0, 200 * 1000};
				nanosleep(&nap, NULL);
			}
		}
	}
	assert_int_equal(rvt_stop(0, 0), 0);
	size_t len;
	uint8_t *buf = grab(&len);
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(rvt_set_time_mode(0), 0);

	/* The stamped events' full counters, and every event's decoded time:
	 * each interpolated event lies between its stamped neighbours. */
	rva_trace *t;
	rva_error err;
	if (rva_capture_decode(buf, len, &t, &err) != 0)
		fail_msg("decode: %s", err.msg);
	assert_int_equal(t->sparse_k, 8);
	assert_true(t->interpolated > 0);
	check_model_ordered(t);
	/* Bounded: each call lies inside its parent (pre-order: the nearest
	 * earlier call one level up), so with starts in entry order no event
	 * goes back in time past a neighbour. */
	const rva_thread *th = &t->threads[0];
	for (size_t i = 0; i < th->ncalls; i++) {
		if (th->calls[i].depth == 0)
			continue;
		size_t p = i;
		while (p-- > 0 && th->calls[p].depth != th->calls[i].depth - 1)
			;
		assert_true(p < i);
		if (th->calls[i].start < th->calls[p].start || th->calls[i].end > th->calls[p].end)
			fail_msg("call %zu (%lld..%lld) outside its parent %zu (%lld..%lld)", i,
				 (long long)th->calls[i].start, (long long)th->calls[i].end, p,
				 (long long)th->calls[p].start, (long long)th->calls[p].end);
	}
	rva_trace_free(t);
	free(buf);
}

static void test_sparse_mode_switch_takes_effect_at_a_capture(void **state)
{
	(void)state;
	assert_int_equal(rvt_time_mode(), 0);
	assert_int_equal(rvt_start(0), 0);
	workload(0, 4);
	assert_int_equal(rvt_set_time_mode(4), 0);
	workload(0, 4); /* still the exact ring */
	size_t len;
	uint8_t *c1 = grab(&len); /* the thread goes on in a sparse spare */
	assert_int_equal(rd(c1 + 8, 2), RVT_FORMAT_VERSION);
	struct ev e[256];
	size_t n = raw_events(c1, e, 256);
	assert_int_equal(n, 96);
	for (size_t i = 0; i < n; i++)
		assert_true(e[i].ts != NONE);
	workload(0, 4);
	assert_int_equal(rvt_set_time_mode(0), 0);
	uint8_t *c2 = grab(&len); /* sparse; the next ring is exact again */
	assert_int_equal(rd(c2 + 8, 2), RVT_FORMAT_VERSION_SPARSE);
	assert_int_equal(sparse_record_k(c2, len), 4);
	n = raw_events(c2, e, 256);
	assert_int_equal(n, 48);
	assert_true(e[0].ts != NONE);
	size_t none = 0;
	for (size_t i = 0; i < n; i++)
		none += e[i].ts == NONE;
	assert_true(none > 0 && none <= n - n / 4);
	rva_trace *t;
	rva_error err;
	if (rva_capture_decode(c2, len, &t, &err) != 0)
		fail_msg("decode: %s", err.msg);
	assert_int_equal(t->threads[0].ncalls, 24);
	check_model_ordered(t);
	rva_trace_free(t);
	workload(0, 4);
	assert_int_equal(rvt_stop(0, 0), 0);
	uint8_t *c3 = grab(&len);
	assert_int_equal(rd(c3 + 8, 2), RVT_FORMAT_VERSION);
	assert_int_equal(rvt_stop(0, 1), 0);
	free(c1);
	free(c2);
	free(c3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_call_mode_stamps_every_kth_event),
		cmocka_unit_test(test_sparse_inline_mode_stamps_every_kth_event),
		cmocka_unit_test(test_sparse_manual_trace_points_stamp_every_kth_event),
		cmocka_unit_test(test_sparse_call_and_inline_modes_write_the_same_pattern),
		cmocka_unit_test(test_sparse_tick_forces_the_next_event_stamped),
		cmocka_unit_test(test_sparse_clock_moves_all_ones_back_only_in_sparse_rings),
		cmocka_unit_test(test_sparse_exact_mode_is_unchanged),
		cmocka_unit_test(test_sparse_worked_example_decodes_to_format_md_times),
		cmocka_unit_test(test_sparse_live_interpolation_is_monotonic_and_bounded),
		cmocka_unit_test(test_sparse_mode_switch_takes_effect_at_a_capture),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
