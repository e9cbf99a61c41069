/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gap.c — exact time across idle gaps longer than the timestamp's wrap
 * (issue 21, item 3).  RV_TRACE_CLOCK_SHIFT=0 makes the 32-bit slot
 * timestamp wrap every 2^32 counter ticks (about 1.6 s at 2.6 GHz) instead
 * of ≥ 180 s.  The thread calls call_top(0), idles more than three wraps,
 * calls it again, idles more than one wrap and is captured.  Both the
 * test's decoder and librvanalysis' (rvtrace's) must place each call
 * between the counter values read around it — exactly: without the CLOCK
 * records a decoder is off by whole wraps.  The waits poll the counter for
 * the wraps to pass; nothing is asserted on how long anything took.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "fixture.h"
#include "rearview/analysis.h"
#include "rearview/trace-inline.h"
#include "rearview/trace.h"

#define WRAP ((uint64_t)1 << 32) /* ticks per timestamp wrap at shift 0 */

static void idle_ticks(uint64_t ticks)
{
	uint64_t t0 = rvt__counter();
	while (rvt__counter() - t0 < ticks) {
		struct timespec nap = {0, 50 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
}

static void test_gap_three_wraps_idle_decodes_to_the_right_span(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	uint64_t c0 = rvt__counter();
	call_top(0);
	uint64_t c1 = rvt__counter();
	idle_ticks(3 * WRAP + WRAP / 4);
	uint64_t c2 = rvt__counter();
	call_top(0);
	uint64_t c3 = rvt__counter();
	idle_ticks(WRAP + WRAP / 4); /* idle before the freeze too */
	assert_int_equal(rvt_stop(0, 0), 0);
	int fd = rvt_capture_to_memfd(0, NULL);
	assert_true(fd >= 0);
	uint8_t *buf = malloc(64u << 20);
	assert_non_null(buf);
	ssize_t len = pread(fd, buf, 64u << 20, 0);
	close(fd);
	assert_true(len > 128);

	/* The test decoder: full counter values (shift 0). */
	struct cu_capture c;
	assert_int_equal(cu_parse(buf, (size_t)len, &c), 0);
	assert_int_equal(c.shift, 0);
	assert_true(c.nclocks >= 2); /* at the ring's start, after the gap */
	long a = cu_find_entry(&c, "call_top", 0);
	assert_true(a >= 0);
	long b = cu_find_entry(&c, "call_top", (size_t)a + 1);
	assert_true(b > a);
	if (c.events[a].ts < c0 || c.events[a].ts > c1 || c.events[b].ts < c2 ||
	    c.events[b].ts > c3)
		fail_msg("calls at %#llx and %#llx, expected in [%#llx, %#llx] and [%#llx, %#llx]",
			 (unsigned long long)c.events[a].ts, (unsigned long long)c.events[b].ts,
			 (unsigned long long)c0, (unsigned long long)c1, (unsigned long long)c2,
			 (unsigned long long)c3);
	uint64_t hz = c.counter_hz;
	cu_release(&c);

	/* librvanalysis (rvtrace, the server): the two calls' start times. */
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(buf, (size_t)len, &t, &err), 0);
	int64_t m = rva_method_find(t, "call_top");
	assert_true(m >= 0);
	int64_t s[2];
	int n = 0;
	for (size_t i = 0; i < t->threads[0].ncalls && n < 2; i++)
		if (t->threads[0].calls[i].method == (uint32_t)m)
			s[n++] = t->threads[0].calls[i].start;
	assert_int_equal(n, 2);
	/* ns between them, from the counters bracketing the calls (±1 us
	 * for the conversion's rounding). */
	double lo = (double)(c2 - c1) * 1e9 / (double)hz - 1000;
	double hi = (double)(c3 - c0) * 1e9 / (double)hz + 1000;
	if ((double)(s[1] - s[0]) < lo || (double)(s[1] - s[0]) > hi)
		fail_msg("rvtrace: %lld ns between the calls, expected %.0f .. %.0f",
			 (long long)(s[1] - s[0]), lo, hi);
	assert_int_equal(t->lost_spans, 0);
	rva_trace_free(t);
	free(buf);
	assert_int_equal(rvt_stop(0, 1), 0);
}

int main(void)
{
	/* Before anything measures the clock (the first rvt_start). */
	setenv("RV_TRACE_CLOCK_SHIFT", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gap_three_wraps_idle_decodes_to_the_right_span),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
