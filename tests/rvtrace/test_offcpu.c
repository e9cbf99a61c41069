/*
 * test_offcpu.c — the OFFCPU and THREAD_COUNTERS records (tracer/FORMAT.md
 * §2, "Off-CPU records, worked example"): the example's exact record bytes
 * are decoded into the model, each method's inclusive time splits into
 * on-CPU and off-CPU time by reason (a CPU-bound call preempted once, a call
 * blocked on a pipe, a page-faulting call), another thread's records are
 * ignored, a record whose intervals run past it is refused, time before
 * the switch window is unknown once the daemon's ring lost switches, and the
 * summary JSON lists the off-CPU reasons largest first.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capbuild.h"
#include "rearview/analysis.h"

enum { M_MAIN = 0x1000, M_CPU = 0x1010, M_PIPE = 0x1020, M_FAULT = 0x1030 };

/* FORMAT.md's example records, byte for byte (value bytes after the
 * 8-byte record header). */
static const uint8_t offcpu_value[80] = {
	0x2b, 0,    0, 0, 3, 0, 0, 0,				    /* tid 43, 3 intervals */
	0x28, 0x23, 0, 0, 0, 0, 0, 0, 0x10, 0x27, 0, 0, 0, 0, 0, 0, /* 9000 .. 10000 */
	1,    0,    0, 0, 0, 0, 0, 0,				    /* preempted */
	0x08, 0x52, 0, 0, 0, 0, 0, 0, 0x68, 0xbf, 0, 0, 0, 0, 0, 0, /* 21000 .. 49000 */
	2,    0,    0, 0, 0, 0, 0, 0,				    /* blocked */
	0xe8, 0xfd, 0, 0, 0, 0, 0, 0, 0x70, 0x11, 1, 0, 0, 0, 0, 0, /* 65000 .. 70000 */
	2,    0,    0, 0, 0, 0, 0, 0,				    /* blocked */
};
static const uint8_t counters_value[80] = {
	0x2b, 0,    0, 0, 0, 0, 0, 0, /* tid 43 */
	0xf4, 0x01, 0, 0, 0, 0, 0, 0, /* since 500 */
	0xa0, 0x86, 1, 0, 0, 0, 0, 0, /* at 100000 */
	0x00, 0xfa, 0, 0, 0, 0, 0, 0, /* task-clock 64000 ns */
	12,   0,    0, 0, 0, 0, 0, 0, /* minor faults */
	1,    0,    0, 0, 0, 0, 0, 0, /* major faults */
	3,    0,    0, 0, 0, 0, 0, 0, /* context switches */
	0x28, 0x23, 0, 0, 0, 0, 0, 0, /* window from 9000 */
	2,    0,    0, 0, 0, 0, 0, 0, /* voluntary */
	1,    0,    0, 0, 0, 0, 0, 0, /* involuntary */
};

/* 1 GHz counter, monotonic = counter: the times are nanoseconds. */
static void build(capbuf *c, uint8_t tid_byte, int bad_count)
{
	uint8_t off[80], cnt[80];

	memcpy(off, offcpu_value, sizeof(off));
	memcpy(cnt, counters_value, sizeof(cnt));
	off[0] = cnt[0] = tid_byte;
	if (bad_count)
		off[4] = 4; /* four intervals in room for three */
	cb_header(c, 100000, 1000000000, 0, 100000, 0x400000, 0);
	cb_entry(c, M_MAIN, 1000);
	cb_entry(c, M_CPU, 2000);
	cb_exit(c, 12000);
	cb_entry(c, M_PIPE, 20000);
	cb_exit(c, 50000);
	cb_entry(c, M_FAULT, 60000);
	cb_exit(c, 80000);
	cb_exit(c, 99000);
	cb_end_slots(c);
	cb_symbol(c, M_MAIN, M_MAIN, 0, "main");
	cb_symbol(c, M_CPU, M_CPU, 0, "spin");
	cb_symbol(c, M_PIPE, M_PIPE, 0, "read_pipe");
	cb_symbol(c, M_FAULT, M_FAULT, 0, "touch_pages");
	cb_record(c, 12, off, sizeof(off));
	cb_record(c, 13, cnt, sizeof(cnt));
	cb_finish(c);
}

static rva_trace *decode(const capbuf *c, int *rc)
{
	rva_trace *t = NULL;
	rva_error err = {{0}};

	*rc = rva_capture_decode(c->b, c->len, &t, &err);
	return t;
}

static const rva_mstat *stat_of(const rva_trace *t, rva_mstat *st, const char *name)
{
	int64_t id = rva_method_find(t, name);

	assert_true(id >= 0);
	return &st[id];
}

static void test_offcpu_example_splits_each_method(void **state)
{
	capbuf c = {0};
	rva_mstat *st;
	rva_trace *t;
	int64_t r[RVA_OFF_NREASONS];
	int rc;

	(void)state;
	build(&c, 0x2b, 0);
	assert_int_equal(rva_capture_has_offcpu(c.b, c.len), 1);
	t = decode(&c, &rc);
	assert_int_equal(rc, 0);
	assert_true(t->has_cpu);
	assert_int_equal(rva_trace_has_offcpu(t), 1);
	assert_int_equal(t->threads[0].noffcpu, 3);
	assert_non_null(t->threads[0].counters);
	assert_int_equal(t->threads[0].counters->task_clock_ns, 64000);
	assert_int_equal(t->threads[0].counters->minor_faults, 12);
	assert_int_equal(t->threads[0].counters->major_faults, 1);
	assert_int_equal(t->threads[0].counters->voluntary, 2);
	assert_int_equal(t->threads[0].counters->involuntary, 1);
	assert_int_equal(t->threads[0].counters->window, 9000);
	assert_int_equal(rva_method_stats(t, &st), 0);
	/* CPU-bound: 10 µs, 1 µs of it preempted. */
	assert_int_equal(stat_of(t, st, "spin")->incl, 10000);
	assert_int_equal(stat_of(t, st, "spin")->cpu_incl, 9000);
	/* Blocked on the pipe for 28 of its 30 µs. */
	assert_int_equal(stat_of(t, st, "read_pipe")->cpu_incl, 2000);
	/* Faulting: 5 of 20 µs blocked (a major fault). */
	assert_int_equal(stat_of(t, st, "touch_pages")->cpu_incl, 15000);
	assert_int_equal(stat_of(t, st, "main")->incl, 98000);
	assert_int_equal(stat_of(t, st, "main")->cpu_incl, 64000);
	assert_int_equal(stat_of(t, st, "main")->cpu_self, 64000 - 9000 - 2000 - 15000);
	/* By reason, for a span cutting into intervals. */
	assert_int_equal(rva_offcpu_overlap(&t->threads[0], 9500, 30000, r), 500 + 9000);
	assert_int_equal(r[RVA_OFF_PREEMPTED], 500);
	assert_int_equal(r[RVA_OFF_BLOCKED], 9000);
	assert_int_equal(rva_offcpu_overlap(&t->threads[0], 50000, 60000, r), 0);
	free(st);
	rva_trace_free(t);
	free(c.b);
}

/* The example's window starts at 9000: with all 3 switches in it nothing is
 * unknown; had the ring lost 2 older ones, the time before 9000 is. */
static void test_offcpu_lost_switches_make_time_before_window_unknown(void **state)
{
	capbuf c = {0};
	rva_trace *t;
	rva_tcounters *k;
	int rc;

	(void)state;
	build(&c, 0x2b, 0);
	t = decode(&c, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(rva_offcpu_unknown(&t->threads[0], 1000, 99000), 0);
	k = t->threads[0].counters;
	k->switches = 5;
	assert_int_equal(rva_offcpu_unknown(&t->threads[0], 1000, 99000), 8000); /* main */
	assert_int_equal(rva_offcpu_unknown(&t->threads[0], 2000, 12000), 7000); /* spin */
	assert_int_equal(rva_offcpu_unknown(&t->threads[0], 20000, 50000), 0);	 /* read_pipe */
	assert_int_equal(rva_offcpu_unknown(&t->threads[0], 9000, 9000), 0);
	rva_trace_free(t);
	free(c.b);
}

static void test_offcpu_other_thread_records_ignored(void **state)
{
	capbuf c = {0};
	rva_mstat *st;
	rva_trace *t;
	int rc;

	(void)state;
	build(&c, 0x2c, 0); /* tid 44: not the captured thread (43) */
	t = decode(&c, &rc);
	assert_int_equal(rc, 0);
	assert_false(t->has_cpu);
	assert_int_equal(rva_trace_has_offcpu(t), 0);
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(stat_of(t, st, "read_pipe")->cpu_incl, 0);
	free(st);
	rva_trace_free(t);
	free(c.b);
}

static void test_offcpu_intervals_past_record_refused(void **state)
{
	capbuf c = {0};
	rva_trace *t;
	int rc;

	(void)state;
	build(&c, 0x2b, 1);
	t = decode(&c, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_null(t);
	free(c.b);
}

static void test_offcpu_summary_json_lists_reasons(void **state)
{
	capbuf c = {0};
	rva_trace *t;
	char *doc = NULL;
	size_t n = 0;
	FILE *f;
	int rc;

	(void)state;
	build(&c, 0x2b, 0);
	t = decode(&c, &rc);
	assert_int_equal(rc, 0);
	f = open_memstream(&doc, &n);
	assert_non_null(f);
	assert_int_equal(rva_summary_json(f, t, -1, 5), 0);
	fclose(f);
	assert_non_null(strstr(doc, "\"offcpu_reasons\":[{\"reason\":\"blocked\",\"ns\":33000},"
				    "{\"reason\":\"preempted\",\"ns\":1000}]"));
	free(doc);
	rva_trace_free(t);
	free(c.b);
}

/* The two clocks disagree by some µs: an interval holding a call's entry
 * or exit is cut to its longest part without any (a thread traces only
 * while it runs). */
static void test_offcpu_interval_over_events_cut_to_longest_gap(void **state)
{
	const rva_offcpu iv[2] = {{.from = 150, .to = 220, .reason = RVA_OFF_BLOCKED},
				  {.from = 390, .to = 420, .reason = RVA_OFF_PREEMPTED}};
	rva_trace *t = rva_trace_new();

	(void)state;
	assert_non_null(t);
	assert_int_equal(rva_thread_add(t, 1, 1, NULL), 0);
	assert_int_equal(rva_enter(t, 0, (uint32_t)rva_method_intern(t, "a", 1), 100), 0);
	assert_int_equal(rva_exit(t, 0, RVA_ANY_METHOD, 120), 0);
	assert_int_equal(rva_enter(t, 0, (uint32_t)rva_method_intern(t, "b", 1), 200), 0);
	assert_int_equal(rva_exit(t, 0, RVA_ANY_METHOD, 400), 0);
	rva_trace_finish(t, 400);
	assert_int_equal(rva_offcpu_set(t, 0, iv, 2, NULL), 0);
	/* 150..220 holds b's entry at 200: 150..200 is the longer part. */
	assert_int_equal(t->threads[0].offcpu[0].from, 150);
	assert_int_equal(t->threads[0].offcpu[0].to, 200);
	/* 390..420 holds b's exit at 400: 400..420 is the longer part. */
	assert_int_equal(t->threads[0].offcpu[1].from, 400);
	assert_int_equal(t->threads[0].offcpu[1].to, 420);
	assert_int_equal(t->threads[0].cpu[1], 200); /* b: never off the CPU */
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offcpu_example_splits_each_method),
		cmocka_unit_test(test_offcpu_lost_switches_make_time_before_window_unknown),
		cmocka_unit_test(test_offcpu_other_thread_records_ignored),
		cmocka_unit_test(test_offcpu_intervals_past_record_refused),
		cmocka_unit_test(test_offcpu_summary_json_lists_reasons),
		cmocka_unit_test(test_offcpu_interval_over_events_cut_to_longest_gap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
