/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_perfetto.c — the Perfetto importer on the packet kinds real Chrome
 * and Android traces carry beyond plain slices: per-sequence defaults (the
 * track of events that name none, the timestamp clock), sequence-scoped
 * incremental clocks from a ClockSnapshot, legacy ThreadDescriptor
 * sequences, compressed_packets, Android's atrace sections (B/E lines in
 * ftrace print events) as slices, and what maps to no call (other ftrace
 * events, atrace counters, instants) skipped with a count, never fatal.
 *
 * The field numbers were checked against Perfetto's own schema: the bytes
 * the first test builds, written to a file, decode with
 * `protoc -I . --decode=perfetto.protos.Trace
 * protos/perfetto/trace/trace.proto` in a google/perfetto checkout
 * (ec5d16b14b, 2026-11-24) into clock_snapshot, trace_packet_defaults
 * {track_event_defaults, timestamp_clock_id}, thread_descriptor,
 * ftrace_events and compressed_packets, as intended.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "rearview/analysis.h"
#include "rvanalysis/rvperfetto.pb-c.h"

typedef struct obuf {
	uint8_t b[1 << 14];
	size_t len;
} obuf;

static void put_varint(obuf *o, uint64_t v)
{
	do {
		o->b[o->len++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

/* Appends a Trace's field-1 record holding bytes. */
static void put_raw(obuf *o, const uint8_t *b, size_t n)
{
	o->b[o->len++] = 0x0a;
	put_varint(o, n);
	memcpy(o->b + o->len, b, n);
	o->len += n;
}

static void put(obuf *o, const Rvpf__TracePacket *p)
{
	uint8_t tmp[4096];
	size_t n = rvpf__trace_packet__pack(p, tmp);
	assert_true(n < sizeof(tmp));
	put_raw(o, tmp, n);
}

static void slice(obuf *o, uint32_t seq, int type, uint64_t ts, int has_track, uint64_t track,
		  const char *name, uint64_t iid)
{
	Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
	Rvpf__TrackEvent te = RVPF__TRACK_EVENT__INIT;
	p.has_trusted_packet_sequence_id = 1;
	p.trusted_packet_sequence_id = seq;
	p.has_timestamp = 1;
	p.timestamp = ts;
	te.has_type = 1;
	te.type = type;
	te.has_track_uuid = has_track;
	te.track_uuid = track;
	te.name = (char *)name;
	te.has_name_iid = iid != 0;
	te.name_iid = iid;
	p.track_event = &te;
	put(o, &p);
}

static uint64_t skipped(const rva_trace *t, const char *what)
{
	for (size_t i = 0; i < t->nskipped; i++)
		if (strcmp(t->skipped[i].what, what) == 0)
			return t->skipped[i].n;
	return 0;
}

static void test_perfetto_defaults_clocks_legacy_and_compressed_packets_imported(void **state)
{
	(void)state;
	obuf o = {.len = 0};
	/* Sequence 1: defaults (track 100, clock 64), a snapshot defining
	 * clock 64 as incremental in µs from BOOTTIME 1 000 000 ns, an
	 * interned name. */
	{
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__TracePacketDefaults d = RVPF__TRACE_PACKET_DEFAULTS__INIT;
		Rvpf__TrackEventDefaults ted = RVPF__TRACK_EVENT_DEFAULTS__INIT;
		Rvpf__ClockSnapshot cs = RVPF__CLOCK_SNAPSHOT__INIT;
		Rvpf__ClockSnapshot__Clock boot = RVPF__CLOCK_SNAPSHOT__CLOCK__INIT,
					   inc = RVPF__CLOCK_SNAPSHOT__CLOCK__INIT;
		Rvpf__ClockSnapshot__Clock *clocks[] = {&boot, &inc};
		Rvpf__InternedData id = RVPF__INTERNED_DATA__INIT;
		Rvpf__EventName en = RVPF__EVENT_NAME__INIT;
		Rvpf__EventName *ens[] = {&en};
		p.has_trusted_packet_sequence_id = 1;
		p.trusted_packet_sequence_id = 1;
		p.has_sequence_flags = 1;
		p.sequence_flags = 1;
		ted.has_track_uuid = 1;
		ted.track_uuid = 100;
		d.track_event_defaults = &ted;
		d.has_timestamp_clock_id = 1;
		d.timestamp_clock_id = 64;
		p.trace_packet_defaults = &d;
		boot.has_clock_id = boot.has_timestamp = 1;
		boot.clock_id = 6;
		boot.timestamp = 1000000;
		inc.has_clock_id = inc.has_timestamp = inc.has_is_incremental = 1;
		inc.has_unit_multiplier_ns = 1;
		inc.clock_id = 64;
		inc.timestamp = 0;
		inc.is_incremental = 1;
		inc.unit_multiplier_ns = 1000;
		cs.n_clocks = 2;
		cs.clocks = clocks;
		p.clock_snapshot = &cs;
		en.has_iid = 1;
		en.iid = 1;
		en.name = (char *)"work";
		id.n_event_names = 1;
		id.event_names = ens;
		p.interned_data = &id;
		put(&o, &p);
	}
	{
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__TrackDescriptor td = RVPF__TRACK_DESCRIPTOR__INIT;
		Rvpf__ThreadDescriptor th = RVPF__THREAD_DESCRIPTOR__INIT;
		td.has_uuid = 1;
		td.uuid = 100;
		th.has_pid = th.has_tid = 1;
		th.pid = 5;
		th.tid = 6;
		th.thread_name = (char *)"main";
		td.thread = &th;
		p.track_descriptor = &td;
		put(&o, &p);
	}
	{
		/* A named track that is no thread's (a counter's): no thread
		 * of its own while it carries no slice. */
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__TrackDescriptor td = RVPF__TRACK_DESCRIPTOR__INIT;
		td.has_uuid = 1;
		td.uuid = 300;
		td.name = (char *)"queue depth";
		p.track_descriptor = &td;
		put(&o, &p);
	}
	slice(&o, 1, 1, 10, 0, 0, NULL, 1);	      /* 1 000 000 + 10 µs */
	slice(&o, 1, 3, 1, 0, 0, "mark", 0);	      /* an instant: skipped; +1 µs */
	slice(&o, 1, 2, 4, 0, 0, NULL, 0);	      /* 15 µs */
	static const uint8_t ftrace[] = {0x0a, 0x00}; /* ftrace_events = {} */
	put_raw(&o, ftrace, sizeof(ftrace));
	/* Sequence 2: a legacy ThreadDescriptor, BOOTTIME stamps. */
	{
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__ThreadDescriptor th = RVPF__THREAD_DESCRIPTOR__INIT;
		p.has_trusted_packet_sequence_id = 1;
		p.trusted_packet_sequence_id = 2;
		th.has_pid = th.has_tid = 1;
		th.pid = 5;
		th.tid = 7;
		th.thread_name = (char *)"legacy";
		p.thread_descriptor = &th;
		put(&o, &p);
	}
	slice(&o, 2, 1, 2000000, 0, 0, "old", 0);
	slice(&o, 2, 2, 2000500, 0, 0, NULL, 0);
	/* compressed_packets: a slice on track 100 from sequence 3. */
	{
		obuf inner = {.len = 0};
		slice(&inner, 3, 1, 1020000, 1, 100, "zipped", 0);
		slice(&inner, 3, 2, 1030000, 1, 100, NULL, 0);
		uint8_t z[4096];
		uLongf zl = sizeof(z);
		assert_int_equal(compress(z, &zl, inner.b, inner.len), Z_OK);
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		p.has_compressed_packets = 1;
		p.compressed_packets.data = z;
		p.compressed_packets.len = zl;
		put(&o, &p);
	}
	rva_trace *t;
	rva_error err = {{0}};
	if (rva_import(o.b, o.len, &t, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(t->format, "perfetto");
	assert_int_equal(t->nthreads, 2);
	const rva_thread *m = NULL, *l = NULL;
	for (size_t i = 0; i < t->nthreads; i++) {
		if (t->threads[i].tid == 6)
			m = &t->threads[i];
		if (t->threads[i].tid == 7)
			l = &t->threads[i];
	}
	assert_non_null(m);
	assert_non_null(l);
	assert_string_equal(m->name, "main");
	assert_int_equal(m->pid, 5);
	assert_int_equal(m->ncalls, 2);
	assert_string_equal(t->names[m->calls[0].method], "work");
	assert_int_equal(m->calls[0].start, 1010000);
	assert_int_equal(m->calls[0].end, 1015000);
	assert_string_equal(t->names[m->calls[1].method], "zipped");
	assert_int_equal(m->calls[1].end - m->calls[1].start, 10000);
	assert_string_equal(l->name, "legacy");
	assert_int_equal(l->ncalls, 1);
	assert_string_equal(t->names[l->calls[0].method], "old");
	assert_int_equal(l->calls[0].end - l->calls[0].start, 500);
	assert_int_equal(skipped(t, "instant track events"), 1);
	assert_int_equal(t->nskipped, 1); /* the empty ftrace bundle: nothing */
	assert_int_equal(t->dropped, 0);
	rva_trace_free(t);
}

/* One ftrace event of a bundle: at ts (0: none) on thread tid, with an
 * atrace line (NULL: no print, as a sched event). */
static void fevent(Rvpf__FtraceEvent *e, Rvpf__PrintFtraceEvent *pr, uint64_t ts, uint32_t tid,
		   const char *line)
{
	rvpf__ftrace_event__init(e);
	rvpf__print_ftrace_event__init(pr);
	e->has_timestamp = ts != 0;
	e->timestamp = ts;
	e->has_pid = 1;
	e->pid = tid;
	pr->buf = (char *)line;
	e->print = line ? pr : NULL;
}

/* Android's app sections: atrace B/E lines in ftrace print events become
 * nested slices on the event's thread (pid from the line, name from a
 * process tree), bundles out of time order sorted; a B with no name is
 * "(unnamed)"; counters and
 * non-print events are skipped with a count, an event without time is
 * damage. */
static void test_perfetto_atrace_print_events_become_slices(void **state)
{
	(void)state;
	static const struct {
		uint64_t ts;
		uint32_t tid;
		const char *line;
	} ev[2][5] = {
		{{1300, 42, "E|40\n"},
		 {1400, 42, "E"},
		 {1200, 43, "C|40|queue|5"},
		 {1500, 42, NULL},
		 {0, 44, "B|40|lost"}},
		{{1000, 42, "B|40|outer\n"},
		 {1100, 42, "B|40|inner"},
		 {1600, 45, "B|40|"},
		 {1700, 45, "E|40"},
		 {1800, 46, "I|40|mark"}},
	};
	obuf o = {.len = 0};
	for (int b = 0; b < 2; b++) {
		Rvpf__FtraceEvent e[5], *ep[5];
		Rvpf__PrintFtraceEvent pr[5];
		for (int i = 0; i < 5; i++) {
			fevent(&e[i], &pr[i], ev[b][i].ts, ev[b][i].tid, ev[b][i].line);
			ep[i] = &e[i];
		}
		Rvpf__FtraceEventBundle fb = RVPF__FTRACE_EVENT_BUNDLE__INIT;
		fb.n_event = 5;
		fb.event = ep;
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		p.ftrace_events = &fb;
		put(&o, &p);
	}
	{
		/* Names: thread 42 "ui"; process 45's main thread from its
		 * command line; thread 99 carries no slice, so no thread. */
		Rvpf__ProcessTree pt = RVPF__PROCESS_TREE__INIT;
		Rvpf__ProcessTree__Thread t1 = RVPF__PROCESS_TREE__THREAD__INIT,
					  t2 = RVPF__PROCESS_TREE__THREAD__INIT,
					  *ths[] = {&t1, &t2};
		Rvpf__ProcessTree__Process pr = RVPF__PROCESS_TREE__PROCESS__INIT, *prs[] = {&pr};
		char *cmd[] = {(char *)"com.example.app", (char *)"--flag"};
		t1.has_tid = t1.has_tgid = 1;
		t1.tid = 42;
		t1.tgid = 40;
		t1.name = (char *)"ui";
		t2.has_tid = 1;
		t2.tid = 99;
		t2.name = (char *)"idle";
		pr.has_pid = 1;
		pr.pid = 45;
		pr.n_cmdline = 2;
		pr.cmdline = cmd;
		pt.n_threads = 2;
		pt.threads = ths;
		pt.n_processes = 1;
		pt.processes = prs;
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		p.process_tree = &pt;
		put(&o, &p);
	}
	rva_trace *t;
	rva_error err = {{0}};
	if (rva_import(o.b, o.len, &t, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(t->format, "perfetto");
	for (size_t i = 0; i < t->nthreads; i++)
		assert_int_not_equal(t->threads[i].tid, 99);
	const rva_thread *a = NULL, *u = NULL;
	for (size_t i = 0; i < t->nthreads; i++) {
		if (t->threads[i].tid == 42)
			a = &t->threads[i];
		if (t->threads[i].tid == 45)
			u = &t->threads[i];
	}
	assert_non_null(a);
	assert_non_null(u);
	assert_int_equal(a->pid, 40);
	assert_string_equal(a->name, "ui");
	assert_string_equal(u->name, "com.example.app");
	assert_int_equal(a->ncalls, 2);
	assert_string_equal(t->names[a->calls[0].method], "outer");
	assert_int_equal(a->calls[0].start, 1000);
	assert_int_equal(a->calls[0].end, 1400);
	assert_string_equal(t->names[a->calls[1].method], "inner");
	assert_int_equal(a->calls[1].start, 1100);
	assert_int_equal(a->calls[1].end, 1300);
	assert_int_equal(u->ncalls, 1);
	assert_string_equal(t->names[u->calls[0].method], "(unnamed)");
	assert_int_equal(skipped(t, "atrace events other than B/E"), 2);
	assert_int_equal(skipped(t, "ftrace events (sched, …)"), 1);
	assert_int_equal(t->dropped, 1);
	rva_trace_free(t);
}

/* An event on an undefined sequence clock cannot be placed: damage,
 * counted, not a refusal; a broken compressed_packets likewise. */
static void test_perfetto_undefined_clock_and_bad_compression_dropped(void **state)
{
	(void)state;
	obuf o = {.len = 0};
	Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
	Rvpf__TrackEvent te = RVPF__TRACK_EVENT__INIT;
	p.has_timestamp = p.has_timestamp_clock_id = 1;
	p.timestamp = 5;
	p.timestamp_clock_id = 70;
	te.has_type = 1;
	te.type = 1;
	te.name = (char *)"lost";
	p.track_event = &te;
	put(&o, &p);
	slice(&o, 1, 1, 100, 1, 9, "kept", 0);
	slice(&o, 1, 2, 200, 1, 9, NULL, 0);
	static uint8_t junk[] = {1, 2, 3, 4};
	Rvpf__TracePacket q = RVPF__TRACE_PACKET__INIT;
	q.has_compressed_packets = 1;
	q.compressed_packets.data = junk;
	q.compressed_packets.len = sizeof(junk);
	put(&o, &q);
	rva_trace *t;
	rva_error err = {{0}};
	if (rva_import(o.b, o.len, &t, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(t->dropped, 2);
	assert_int_equal(t->nthreads, 1);
	assert_int_equal(t->threads[0].ncalls, 1);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_perfetto_defaults_clocks_legacy_and_compressed_packets_imported),
		cmocka_unit_test(test_perfetto_undefined_clock_and_bad_compression_dropped),
		cmocka_unit_test(test_perfetto_atrace_print_events_become_slices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
