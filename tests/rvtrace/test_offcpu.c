/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_offcpu.c — the OFFCPU and THREAD_COUNTERS records (tracer/FORMAT.md
 * §2, "Off-CPU records, worked example"): the example's exact record bytes
 * are decoded into the model, each method's inclusive time splits into
 * on-CPU and off-CPU time by reason (a CPU-bound call preempted once, a call
 * blocked on a pipe, a page-faulting call), another thread's records are
 * ignored, a record whose intervals run past it is refused, time before
 * the switch window is unknown once the daemon's ring lost switches, and the
 * summary JSON lists the off-CPU reasons largest first.  The exports show
 * it: Perfetto's thread-state slices and counter tracks (decoded here with
 * the generated code, and re-imported), Chrome's off-CPU slices and
 * counter (C) events; and Perfetto's lock waits: the FORMAT.md example's
 * wait as a slice on the waiter's "lock waits" track, ending the flow an
 * instant on the holder's "locks held" track (a thread track of its own,
 * tid 44 has no calls) begins.
 *
 * The Perfetto bytes were checked against Perfetto's own schema: the
 * example's export, written to a file, decodes with `protoc -I .
 * --decode=perfetto.protos.Trace protos/perfetto/trace/trace.proto` in a
 * google/perfetto checkout (ec5d16b14b) into track_descriptor {uuid,
 * parent_uuid, name, counter {unit: UNIT_COUNT / UNIT_TIME_NS}} and
 * track_event {type: TYPE_COUNTER, counter_value} as intended.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "capbuild.h"
#include "rearview/analysis.h"
#include "rvanalysis/rvperfetto.pb-c.h"

enum { M_MAIN = 0x1000, M_CPU = 0x1010, M_PIPE = 0x1020, M_FAULT = 0x1030 };

/* 1 GHz counter, monotonic = counter: the times are nanoseconds. */
static void build(capbuf *c, uint8_t tid_byte, int bad_count)
{
	uint8_t off[80], cnt[80];

	memcpy(off, cb_offcpu_value, sizeof(off));
	memcpy(cnt, cb_counters_value, sizeof(cnt));
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

/* The export of the example capture, into *len bytes (caller frees). */
static char *export_of(int (*fn)(FILE *, const rva_trace *), rva_trace **tp, size_t *len)
{
	capbuf c = {0};
	char *doc = NULL;
	FILE *f;
	int rc;

	build(&c, 0x2b, 0);
	*tp = decode(&c, &rc);
	assert_int_equal(rc, 0);
	f = open_memstream(&doc, len);
	assert_non_null(f);
	assert_int_equal(fn(f, *tp), 0);
	assert_int_equal(fclose(f), 0);
	free(c.b);
	return doc;
}

/* The events on track `uuid`, as text: "Name@ts" per slice begin, "E@ts"
 * per end, "I:Name@ts" per instant, "value@ts" per counter value,
 * space-separated. */
static void track_text(const Rvpf__Trace *tr, uint64_t uuid, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = 0;
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Rvpf__TrackEvent *te = tr->packet[i]->track_event;
		if (!te || te->track_uuid != uuid)
			continue;
		if (te->type == 1)
			n += (size_t)snprintf(out + n, cap - n, "%s@%llu ", te->name,
					      (unsigned long long)tr->packet[i]->timestamp);
		else if (te->type == 2)
			n += (size_t)snprintf(out + n, cap - n, "E@%llu ",
					      (unsigned long long)tr->packet[i]->timestamp);
		else if (te->type == 3)
			n += (size_t)snprintf(out + n, cap - n, "I:%s@%llu ", te->name,
					      (unsigned long long)tr->packet[i]->timestamp);
		else
			n += (size_t)snprintf(out + n, cap - n, "%lld@%llu ",
					      (long long)te->counter_value,
					      (unsigned long long)tr->packet[i]->timestamp);
		assert_true(n < cap);
	}
}

static const Rvpf__TrackDescriptor *track_of(const Rvpf__Trace *tr, uint64_t uuid)
{
	for (size_t i = 0; i < tr->n_packet; i++)
		if (tr->packet[i]->track_descriptor &&
		    tr->packet[i]->track_descriptor->uuid == uuid)
			return tr->packet[i]->track_descriptor;
	fail_msg("no track %llu", (unsigned long long)uuid);
	return NULL;
}

/* Thread state tiles the known span (from the daemon's window, 9000, to the
 * last event, 99000); the counters step at each interval and at the
 * THREAD_COUNTERS' since / at. */
/* The streaming summary (what rearviewd's local summary and the server's
 * index use) splits every method as the model does: the example's
 * intervals lie inside calls, so no cut tells them apart; and its trace
 * gives the same off-CPU reasons. */
static void test_offcpu_streaming_summary_splits_as_the_model(void **state)
{
	capbuf c = {0};
	rva_trace *t = NULL;
	rva_summary sum = {0};
	rva_error err = {{0}};
	rva_mstat *st = NULL;
	rva_offcpu_reason a[RVA_OFF_NREASONS - 1], b[RVA_OFF_NREASONS - 1];
	size_t na, nb;

	(void)state;
	cb_offcpu_example(&c);
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(rva_capture_summarize(c.b, c.len, &sum, &err), 0);
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_true(sum.trace->has_cpu);
	assert_int_equal(sum.trace->nmethods, t->nmethods);
	for (size_t m = 0; m < t->nmethods; m++) {
		assert_int_equal(sum.stats[m].incl, st[m].incl);
		assert_int_equal(sum.stats[m].cpu_incl, st[m].cpu_incl);
		assert_int_equal(sum.stats[m].cpu_self, st[m].cpu_self);
	}
	assert_int_equal(st[0].cpu_incl, 64000); /* main: 98000 less 34000 off */
	na = rva_offcpu_reasons(t, a);
	nb = rva_offcpu_reasons(sum.trace, b);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(a[i].name, b[i].name);
		assert_int_equal(a[i].ns, b[i].ns);
	}
	assert_int_equal(a[0].ns, 33000); /* blocked */
	free(st);
	rva_summary_release(&sum);
	rva_trace_free(t);
	free(c.b);
}

/* The TrackEvent on track `uuid` of `type` (the first). */
static const Rvpf__TrackEvent *event_of(const Rvpf__Trace *tr, uint64_t uuid, int type)
{
	for (size_t i = 0; i < tr->n_packet; i++)
		if (tr->packet[i]->track_event && tr->packet[i]->track_event->track_uuid == uuid &&
		    tr->packet[i]->track_event->type == type)
			return tr->packet[i]->track_event;
	fail_msg("no event of type %d on track %llu", type, (unsigned long long)uuid);
	return NULL;
}

/* The example's wait: read_pipe (tid 43, thread 0, track 1) waited
 * 21000–49000 for the mutex tid 44 held in flush_log. */
static void test_offcpu_perfetto_export_lock_wait_slice_and_flow(void **state)
{
	capbuf c = {0};
	rva_trace *t = NULL, *back = NULL;
	rva_error err = {{0}};
	char *doc = NULL, text[512];
	size_t len;
	FILE *f;
	Rvpf__Trace *tr;
	const Rvpf__TrackDescriptor *td;
	const Rvpf__TrackEvent *wait, *held;

	(void)state;
	cb_offcpu_example(&c);
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	assert_int_equal(t->nthreads, 1);
	assert_int_equal(t->nlock_waits, 1);
	f = open_memstream(&doc, &len);
	assert_non_null(f);
	assert_int_equal(rva_export_perfetto(f, t), 0);
	assert_int_equal(fclose(f), 0);
	tr = rvpf__trace__unpack(NULL, len, (const uint8_t *)doc);
	assert_non_null(tr);
	/* The holder's thread track: the next uuid after the threads'. */
	td = track_of(tr, 2);
	assert_non_null(td->thread);
	assert_int_equal(td->thread->tid, 44);
	assert_int_equal(td->thread->pid, (int32_t)t->threads[0].pid);
	td = track_of(tr, 1ull << 32 | 7);
	assert_string_equal(td->name, "lock waits");
	assert_int_equal(td->parent_uuid, 1);
	track_text(tr, 1ull << 32 | 7, text, sizeof(text));
	assert_string_equal(text, "lock wait (mutex)@21000 E@49000 ");
	td = track_of(tr, 2ull << 32 | 8);
	assert_string_equal(td->name, "locks held");
	assert_int_equal(td->parent_uuid, 2);
	track_text(tr, 2ull << 32 | 8, text, sizeof(text));
	assert_string_equal(text, "I:lock held in flush_log@21000 ");
	/* One flow, from the holder's instant to the waiter's slice. */
	held = event_of(tr, 2ull << 32 | 8, 3);
	assert_int_equal(held->n_flow_ids, 1);
	assert_int_equal(held->flow_ids[0], 1);
	assert_int_equal(held->n_terminating_flow_ids, 0);
	wait = event_of(tr, 1ull << 32 | 7, 1);
	assert_int_equal(wait->n_flow_ids, 0);
	assert_int_equal(wait->n_terminating_flow_ids, 1);
	assert_int_equal(wait->terminating_flow_ids[0], 1);
	/* rvtrace's importer still reads the calls as they were. */
	assert_int_equal(rva_perfetto_import((const uint8_t *)doc, len, &back, &err), 0);
	assert_int_equal(back->threads[0].tid, 43);
	assert_int_equal(back->threads[0].ncalls, t->threads[0].ncalls);
	rva_trace_free(back);
	rvpf__trace__free_unpacked(tr, NULL);
	free(doc);
	free(c.b);
	rva_trace_free(t);
}

static void test_offcpu_perfetto_export_thread_state_and_counters(void **state)
{
	static const struct {
		uint64_t k;
		const char *name;
		int unit;
		const char *events;
	} want[] = {
		{1, "thread state", -1,
		 "Runnable (preempted)@9000 E@10000 Running@10000 E@21000 "
		 "Blocked (sleeping)@21000 E@49000 Running@49000 E@65000 "
		 "Blocked (sleeping)@65000 E@70000 Running@70000 E@99000 "},
		{2, "switch-outs: blocked", 2, "0@9000 1@21000 2@65000 "},
		{3, "switch-outs: preempted", 2, "0@9000 1@9000 "},
		{4, "minor faults", 2, "0@500 12@100000 "},
		{5, "major faults", 2, "0@500 1@100000 "},
		{6, "task-clock", 1, "0@500 64000@100000 "},
	};
	rva_trace *t, *back = NULL;
	rva_error err = {{0}};
	size_t len;
	char *doc = export_of(rva_export_perfetto, &t, &len);
	Rvpf__Trace *tr = rvpf__trace__unpack(NULL, len, (const uint8_t *)doc);
	char text[1024];

	(void)state;
	assert_non_null(tr);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const Rvpf__TrackDescriptor *td = track_of(tr, 1ull << 32 | want[i].k);
		assert_string_equal(td->name, want[i].name);
		assert_int_equal(td->parent_uuid, 1); /* the thread's track */
		assert_null(td->thread);
		if (want[i].unit < 0) {
			assert_null(td->counter);
		} else {
			assert_non_null(td->counter);
			assert_int_equal(td->counter->unit, want[i].unit);
		}
		track_text(tr, 1ull << 32 | want[i].k, text, sizeof(text));
		assert_string_equal(text, want[i].events);
	}
	/* rvtrace's importer: the calls as they were, the thread state as a
	 * track of slices of its own, the counter tracks no threads. */
	assert_int_equal(rva_perfetto_import((const uint8_t *)doc, len, &back, &err), 0);
	assert_int_equal(back->nthreads, 2);
	assert_int_equal(back->threads[0].tid, 43);
	assert_int_equal(back->threads[0].ncalls, t->threads[0].ncalls);
	for (size_t i = 0; i < t->threads[0].ncalls; i++) {
		assert_int_equal(back->threads[0].calls[i].start, t->threads[0].calls[i].start);
		assert_int_equal(back->threads[0].calls[i].end, t->threads[0].calls[i].end);
		assert_string_equal(back->names[back->threads[0].calls[i].method],
				    t->names[t->threads[0].calls[i].method]);
	}
	assert_string_equal(back->threads[1].name, "thread state");
	assert_int_equal(back->threads[1].ncalls, 6);
	assert_string_equal(back->names[back->threads[1].calls[2].method], "Blocked (sleeping)");
	assert_int_equal(back->threads[1].calls[2].start, 21000);
	assert_int_equal(back->threads[1].calls[2].end, 49000);
	assert_int_equal(back->nskipped, 1);
	assert_string_equal(back->skipped[0].what, "counter track events");
	assert_int_equal(back->skipped[0].n, 3 + 2 + 2 + 2 + 2);
	rva_trace_free(back);
	rvpf__trace__free_unpacked(tr, NULL);
	free(doc);
	rva_trace_free(t);
}

/* Chrome: an X slice per interval inside the call it interrupted, and the
 * counters, in µs from the trace start (main's entry, 1000 ns). */
static void test_offcpu_chrome_export_slices_and_counters(void **state)
{
	static const char *const want[] = {
		"{\"ph\":\"C\",\"pid\":42,\"tid\":43,\"ts\":0,\"name\":\"switch-outs tid 43\","
		"\"args\":{\"blocked\":0,\"preempted\":0}}",
		"{\"ph\":\"C\",\"pid\":42,\"tid\":43,\"ts\":8,\"name\":\"switch-outs tid 43\","
		"\"args\":{\"blocked\":0,\"preempted\":1}}",
		"{\"ph\":\"X\",\"pid\":42,\"tid\":43,\"ts\":8,\"dur\":1,\"cat\":\"offcpu\","
		"\"name\":\"off-CPU (preempted)\"}",
		"{\"ph\":\"C\",\"pid\":42,\"tid\":43,\"ts\":20,\"name\":\"switch-outs tid 43\","
		"\"args\":{\"blocked\":1,\"preempted\":1}}",
		"{\"ph\":\"X\",\"pid\":42,\"tid\":43,\"ts\":20,\"dur\":28,\"cat\":\"offcpu\","
		"\"name\":\"off-CPU (blocked)\"}",
		"{\"ph\":\"X\",\"pid\":42,\"tid\":43,\"ts\":64,\"dur\":5,\"cat\":\"offcpu\","
		"\"name\":\"off-CPU (blocked)\"}",
		/* since (500 ns) is before the trace: only the totals */
		"{\"ph\":\"C\",\"pid\":42,\"tid\":43,\"ts\":99,\"name\":\"page faults tid 43\","
		"\"args\":{\"minor\":12,\"major\":1}}",
		"{\"ph\":\"C\",\"pid\":42,\"tid\":43,\"ts\":99,\"name\":\"task-clock tid 43\","
		"\"args\":{\"ns\":64000}}",
	};
	rva_trace *t;
	size_t len;
	char *doc = export_of(rva_export_chrome, &t, &len);
	json_error_t jerr;
	json_t *root = json_loadb(doc, len, 0, &jerr);

	(void)state;
	assert_non_null(root);
	json_decref(root);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(doc, want[i]))
			fail_msg("missing %s in\n%s", want[i], doc);
	assert_null(strstr(doc, "\"ts\":-"));
	free(doc);
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
		cmocka_unit_test(test_offcpu_perfetto_export_thread_state_and_counters),
		cmocka_unit_test(test_offcpu_perfetto_export_lock_wait_slice_and_flow),
		cmocka_unit_test(test_offcpu_streaming_summary_splits_as_the_model),
		cmocka_unit_test(test_offcpu_chrome_export_slices_and_counters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
