/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfetto.c — Perfetto protobuf traces: import of track_event slices on
 * thread tracks, and export as TrackEvent slices with interned names.
 *
 * Import walks the Trace's field-1 packets one at a time (a truncated last
 * packet is dropped, not fatal) and unpacks each with protobuf-c against
 * proto/rvperfetto.proto (Perfetto's field numbers); a packet that does not
 * unpack is counted as damage, unless an allocation failed (-ENOMEM).
 * Slice events are collected, then sorted per track by timestamp (files are
 * not in time order) keeping file order for ties, and replayed: SLICE_BEGIN enters,
 * SLICE_END closes the innermost open slice of that track (END names are
 * unreliable).  Interned names are keyed by (sequence, generation, iid);
 * SEQ_INCREMENTAL_STATE_CLEARED starts a new generation.  Per sequence:
 * TracePacketDefaults give the track of events that name none and the
 * default timestamp clock; a legacy ThreadDescriptor packet gives a thread
 * track; ClockSnapshots define sequence-scoped clocks (ids >= 64), absolute
 * or incremental, with their unit, mapped onto BOOTTIME through the
 * snapshot's BOOTTIME reading.  compressed_packets are inflated (bounded)
 * and walked like the top level.  What maps to no call is never fatal:
 * instant, counter and other track events, and packets of kinds not read
 * (process stats, …: unknown fields) are counted per kind in the trace's
 * skipped counts.  Android's app and framework sections arrive as atrace
 * lines in ftrace print events: "B|pid|name" and "E|pid" become slices on
 * the event's thread (a track of its own per tid, ATRACE_TRACK), sorted and
 * replayed with the track events, named from process trees; every other
 * ftrace event is skipped.
 * Export: one TrackDescriptor per thread, one interning packet, then
 * BEGIN/END per call in pre-order, all on one sequence; a thread with
 * off-CPU intervals or counters (FORMAT.md OFFCPU, THREAD_COUNTERS) gets
 * child tracks: its thread state as slices, and counter tracks
 * (offcpu_tracks); lock waits (FORMAT.md LOCK_WAIT) are slices on a child
 * track of the waiter's, each the end of a flow from an instant on a child
 * track of the holder's (lock_tracks), a thread that has no calls getting
 * a thread track of its own; the trace's origin (app, version, device,
 * model) and its anomaly go on a process track and an instant on a child
 * track of it (origin_tracks).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "rearview/analysis.h"
#include "analysis-int.h"
#include "rvanalysis/rvperfetto.pb-c.h"

#define MAX_PFTRACE (1024ull * 1024 * 1024)
#define MAX_PACKET  (64u * 1024 * 1024)

/* protobuf-c returns NULL both for a malformed packet (damage: counted and
 * skipped) and when an allocation fails (-ENOMEM: the import fails).  This
 * allocator records the second so the two can be told apart. */
struct pb_alloc {
	ProtobufCAllocator a;
	int failed;
};

static void *pb_alloc(void *data, size_t n)
{
	void *p = malloc(n);

	if (!p)
		((struct pb_alloc *)data)->failed = 1;
	return p;
}

static void pb_free(void *data, void *p)
{
	free(p);
}

static int varint(const uint8_t *b, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*pos >= len)
			return -1;
		uint8_t c = b[(*pos)++];
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

typedef struct pev {
	uint64_t track;
	int64_t ts;
	uint32_t seq;
	uint32_t pid;	/* an atrace event's process (from its line), else 0 */
	int64_t method; /* -1 for END */
} pev;

typedef struct iname {
	uint64_t key;
	uint32_t method;
	int used;
} iname;

#define MAX_SEQ_CLOCKS 8
#define CLOCK_BOOTTIME 6

/* A sequence-scoped clock from a ClockSnapshot. */
typedef struct pclock {
	uint32_t id;
	int incremental;
	uint64_t unit; /* ns per tick */
	uint64_t last; /* last value, in ticks */
	uint64_t snap; /* its value at the snapshot, in ticks */
	int64_t boot;  /* BOOTTIME at the snapshot, ns */
} pclock;

/* Incremental state of one packet sequence. */
typedef struct pseq {
	uint32_t id, gen;
	int has_track, has_clock;
	uint64_t track; /* TracePacketDefaults' track, or a ThreadDescriptor's */
	uint32_t clock; /* TracePacketDefaults' timestamp clock */
	pclock clocks[MAX_SEQ_CLOCKS];
	size_t nclocks;
} pseq;

typedef struct pctx {
	rva_trace *t;
	pev *ev;
	size_t nev, evcap;
	iname *names;
	size_t ncap, nnames;
	pseq *seqs;
	size_t nseqs, scap, last_seq;
	struct track {
		uint64_t uuid;
		uint32_t pid, tid;
		int thread; /* a thread's track (not a counter's, a process's, …) */
		char *name;
	} * tracks;
	size_t ntracks, tcap;
} pctx;

/* The state of sequence id, created on first sight; NULL on ENOMEM. */
static pseq *seq_of(pctx *c, uint32_t id)
{
	if (c->last_seq < c->nseqs && c->seqs[c->last_seq].id == id)
		return &c->seqs[c->last_seq];
	for (size_t i = 0; i < c->nseqs; i++)
		if (c->seqs[i].id == id) {
			c->last_seq = i;
			return &c->seqs[i];
		}
	if (c->nseqs == c->scap) {
		size_t cap = c->scap ? c->scap * 2 : 16;
		pseq *n = realloc(c->seqs, cap * sizeof(*n));
		if (!n)
			return NULL;
		c->seqs = n;
		c->scap = cap;
	}
	c->seqs[c->nseqs] = (pseq){.id = id};
	c->last_seq = c->nseqs;
	return &c->seqs[c->nseqs++];
}

static uint64_t name_key(uint32_t seq, uint32_t gen, uint64_t iid)
{
	uint64_t k = iid * 0x9e3779b97f4a7c15ull ^ ((uint64_t)seq << 32 | gen);
	k ^= k >> 31;
	return k * 0xbf58476d1ce4e5b9ull;
}

static int name_put(pctx *c, uint64_t key, uint32_t method)
{
	if ((c->nnames + 1) * 2 > c->ncap) {
		size_t cap = c->ncap ? c->ncap * 2 : 256;
		iname *n = calloc(cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < c->ncap; i++)
			if (c->names[i].used) {
				size_t h = c->names[i].key & (cap - 1);
				while (n[h].used)
					h = (h + 1) & (cap - 1);
				n[h] = c->names[i];
			}
		free(c->names);
		c->names = n;
		c->ncap = cap;
	}
	size_t h = key & (c->ncap - 1);
	while (c->names[h].used && c->names[h].key != key)
		h = (h + 1) & (c->ncap - 1);
	if (!c->names[h].used)
		c->nnames++;
	c->names[h] = (iname){key, method, 1};
	return 0;
}

static int64_t name_get(pctx *c, uint64_t key)
{
	if (!c->ncap)
		return -1;
	size_t h = key & (c->ncap - 1);
	while (c->names[h].used) {
		if (c->names[h].key == key)
			return c->names[h].method;
		h = (h + 1) & (c->ncap - 1);
	}
	return -1;
}

static int add_track_raw(pctx *c, uint64_t uuid, uint32_t pid, uint32_t tid, int thread,
			 const char *n)
{
	for (size_t i = 0; i < c->ntracks; i++)
		if (c->tracks[i].uuid == uuid)
			return 0;
	if (c->ntracks == c->tcap) {
		size_t cap = c->tcap ? c->tcap * 2 : 16;
		if (cap > 1u << 20)
			return -E2BIG;
		struct track *v = realloc(c->tracks, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->tracks = v;
		c->tcap = cap;
	}
	struct track *k = &c->tracks[c->ntracks];
	k->uuid = uuid;
	k->pid = pid;
	k->tid = tid;
	k->thread = thread;
	k->name = n ? strndup(n, 4096) : NULL;
	if (n && !k->name)
		return -ENOMEM;
	c->ntracks++;
	return 0;
}

static int add_track(pctx *c, const Rvpf__TrackDescriptor *td)
{
	if (!td->has_uuid || td->counter)
		return 0; /* a counter track is no thread: its events are skipped */
	uint32_t pid = td->thread && td->thread->has_pid     ? (uint32_t)td->thread->pid
		       : td->process && td->process->has_pid ? (uint32_t)td->process->pid
							     : 0;
	uint32_t tid =
		td->thread && td->thread->has_tid ? (uint32_t)td->thread->tid : (uint32_t)td->uuid;
	const char *n = td->thread && td->thread->thread_name ? td->thread->thread_name
			: td->name			      ? td->name
							      : NULL;
	return add_track_raw(c, td->uuid, pid, tid, td->thread != NULL, n);
}

/* A legacy ThreadDescriptor packet: the sequence's thread, as a track of
 * its own (uuid with the top bit set, which TrackDescriptors' uuids from
 * Perfetto's SDK and Chrome do not use for threads). */
static int legacy_thread(pctx *c, pseq *s, const Rvpf__ThreadDescriptor *td)
{
	uint32_t pid = td->has_pid ? (uint32_t)td->pid : 0,
		 tid = td->has_tid ? (uint32_t)td->tid : 0;
	uint64_t uuid = 1ull << 63 | (((uint64_t)pid << 31) ^ tid);
	if (!s->has_track) {
		s->has_track = 1;
		s->track = uuid;
	}
	return add_track_raw(c, uuid, pid, tid, 1, td->thread_name);
}

static void clock_snapshot(pseq *s, const Rvpf__ClockSnapshot *cs)
{
	int64_t boot = INT64_MIN;
	for (size_t i = 0; i < cs->n_clocks; i++)
		if (cs->clocks[i]->has_clock_id && cs->clocks[i]->clock_id == CLOCK_BOOTTIME &&
		    cs->clocks[i]->has_timestamp && cs->clocks[i]->timestamp <= INT64_MAX)
			boot = (int64_t)cs->clocks[i]->timestamp;
	for (size_t i = 0; i < cs->n_clocks; i++) {
		const Rvpf__ClockSnapshot__Clock *k = cs->clocks[i];
		if (!k->has_clock_id || k->clock_id < 64 || !k->has_timestamp)
			continue;
		pclock *pc = NULL;
		for (size_t j = 0; j < s->nclocks && !pc; j++)
			if (s->clocks[j].id == k->clock_id)
				pc = &s->clocks[j];
		if (!pc && s->nclocks < MAX_SEQ_CLOCKS)
			pc = &s->clocks[s->nclocks++];
		if (!pc)
			continue;
		uint64_t unit = k->has_unit_multiplier_ns && k->unit_multiplier_ns
					? k->unit_multiplier_ns
					: 1;
		*pc = (pclock){
			k->clock_id,  k->has_is_incremental && k->is_incremental,
			unit,	      k->timestamp,
			k->timestamp, boot != INT64_MIN ? boot : (int64_t)(k->timestamp * unit)};
	}
}

/* The packet's time in ns on BOOTTIME (builtin clocks are taken as they
 * are); -1 when it cannot be placed (an undefined sequence clock). */
static int packet_time(pseq *s, const Rvpf__TracePacket *p, int64_t *out)
{
	uint32_t clk = p->has_timestamp_clock_id ? p->timestamp_clock_id
		       : s->has_clock		 ? s->clock
						 : CLOCK_BOOTTIME;
	if (clk < 64) {
		if (p->timestamp > INT64_MAX)
			return -1;
		*out = (int64_t)p->timestamp;
		return 0;
	}
	for (size_t j = 0; j < s->nclocks; j++) {
		pclock *k = &s->clocks[j];
		if (k->id != clk)
			continue;
		uint64_t v = k->incremental ? k->last + p->timestamp : p->timestamp;
		k->last = v;
		double ns = (double)k->boot + ((double)v - (double)k->snap) * (double)k->unit;
		if (!(ns >= 0 && ns < 9.2e18))
			return -1;
		*out = (int64_t)ns;
		return 0;
	}
	return -1;
}

/* A packet whose payload rvtrace does not read: its kind, by field. */
static const char *unread_kind(const Rvpf__TracePacket *p)
{
	for (size_t i = 0; i < p->base.n_unknown_fields; i++) {
		uint32_t tag = p->base.unknown_fields[i].tag;
		switch (tag) {
		case 9:
			return "process stats packets";
		case 5:
			return "legacy Chrome JSON-in-proto packets";
		default:
			if (tag != 3 && tag != 79 && tag != 42 && tag != 87 && tag != 98)
				return "packets of other kinds";
		}
	}
	return NULL;
}

static int walk(pctx *c, const uint8_t *buf, size_t len, int nested, size_t *packets,
		rva_error *err);

/* Inflates a compressed_packets payload (zlib or raw deflate header
 * detected by zlib) into *out, at most MAX_PACKET bytes. */
static int inflate_packets(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z;
	size_t cap = len * 4 + 4096, used = 0;
	int rc = 0;
	memset(&z, 0, sizeof z);
	if (len > MAX_PACKET || inflateInit2(&z, 15 + 32) != Z_OK)
		return -EINVAL;
	*out = NULL;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	for (;;) {
		if (used == cap || !*out) {
			if (*out)
				cap *= 2;
			if (cap > MAX_PACKET) {
				rc = -E2BIG;
				break;
			}
			uint8_t *n = realloc(*out, cap);
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			*out = n;
		}
		z.next_out = *out + used;
		z.avail_out = (uInt)(cap - used);
		int zr = inflate(&z, Z_NO_FLUSH);
		used = cap - z.avail_out;
		if (zr == Z_STREAM_END)
			break;
		if (zr != Z_OK && !(zr == Z_BUF_ERROR && z.avail_out == 0)) {
			rc = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			break;
		}
	}
	inflateEnd(&z);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		return rc;
	}
	*outlen = used;
	return 0;
}

/* One slice event (method -1: an END) on a track, in file order. */
static int push_ev(pctx *c, uint64_t track, int64_t ts, uint32_t pid, int64_t method)
{
	if (c->nev == c->evcap) {
		size_t cap = c->evcap ? c->evcap * 2 : 1024;
		pev *v = realloc(c->ev, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->ev = v;
		c->evcap = cap;
	}
	if (c->nev >= UINT32_MAX)
		return -E2BIG;
	c->ev[c->nev] = (pev){track, ts, (uint32_t)c->nev, pid, method};
	c->nev++;
	return 0;
}

/* The track of a thread's atrace slices: uuid bit 62 set over the tid
 * (bit 63 marks legacy ThreadDescriptor tracks; the SDK's and Chrome's
 * uuids for threads set neither). */
#define ATRACE_TRACK(tid) (1ull << 62 | (uint64_t)(tid))

/* An ftrace bundle: each print event holding an atrace line — "B|pid|name"
 * begins a slice on the event's thread, "E|pid" (or "E") ends its innermost
 * one — becomes a slice event; other atrace lines (async S/F, counters C,
 * …) and other ftrace events (sched, irq, …) are counted as skipped. */
static int ftrace_bundle(pctx *c, const Rvpf__FtraceEventBundle *b)
{
	int rc;
	for (size_t i = 0; i < b->n_event; i++) {
		const Rvpf__FtraceEvent *e = b->event[i];
		const char *buf = e->print ? e->print->buf : NULL;
		if (!buf) {
			if ((rc = rva_skip_count(c->t, "ftrace events (sched, …)", 1)) < 0)
				return rc;
			continue;
		}
		if ((buf[0] != 'B' && buf[0] != 'E') ||
		    (buf[1] != '|' && buf[1] != '\n' && buf[1] != '\0')) {
			if ((rc = rva_skip_count(c->t, "atrace events other than B/E", 1)) < 0)
				return rc;
			continue;
		}
		if (!e->has_timestamp || e->timestamp > INT64_MAX || !e->has_pid) {
			c->t->dropped++;
			continue;
		}
		int64_t m = -1;
		const char *p = buf[1] == '|' ? buf + 2 : NULL;
		uint32_t pid = p ? (uint32_t)strtoul(p, NULL, 10) : 0;
		if (buf[0] == 'B') {
			const char *bar = p ? strchr(p, '|') : NULL;
			const char *name = bar ? bar + 1 : "(unnamed)";
			size_t n = strcspn(name, "\n");
			m = rva_method_intern(c->t, n ? name : "(unnamed)", n ? n : 9);
			if (m < 0)
				return (int)m;
		}
		if ((rc = push_ev(c, ATRACE_TRACK(e->pid), (int64_t)e->timestamp, pid, m)) < 0)
			return rc;
	}
	return 0;
}

/* Names an atrace thread's track (tid; pid when known), creating it as no
 * thread of its own: it appears only if atrace slices land on it.  A name
 * already given stays. */
static int name_atrace_thread(pctx *c, int32_t pid, int32_t tid, const char *name)
{
	if (tid <= 0 || !name || !*name)
		return 0;
	for (size_t i = 0; i < c->ntracks; i++) {
		struct track *k = &c->tracks[i];
		if (k->uuid != ATRACE_TRACK(tid))
			continue;
		if (!k->name && !(k->name = strndup(name, 4096)))
			return -ENOMEM;
		return 0;
	}
	return add_track_raw(c, ATRACE_TRACK(tid), pid > 0 ? (uint32_t)pid : 0, (uint32_t)tid, 0,
			     name);
}

/* A process tree: its threads' names, and each process's first command
 * line word as its main thread's (Android names main threads only so). */
static int process_tree(pctx *c, const Rvpf__ProcessTree *pt)
{
	int rc;
	for (size_t i = 0; i < pt->n_threads; i++) {
		const Rvpf__ProcessTree__Thread *th = pt->threads[i];
		if (th->has_tid && (rc = name_atrace_thread(c, th->has_tgid ? th->tgid : 0, th->tid,
							    th->name)) < 0)
			return rc;
	}
	for (size_t i = 0; i < pt->n_processes; i++) {
		const Rvpf__ProcessTree__Process *pr = pt->processes[i];
		if (pr->has_pid && pr->n_cmdline &&
		    (rc = name_atrace_thread(c, pr->pid, pr->pid, pr->cmdline[0])) < 0)
			return rc;
	}
	return 0;
}

static int packet(pctx *c, const Rvpf__TracePacket *p, int nested, size_t *packets, rva_error *err)
{
	uint32_t seq = p->has_trusted_packet_sequence_id ? p->trusted_packet_sequence_id : 0;
	int clear = (p->has_sequence_flags && (p->sequence_flags & 1)) ||
		    (p->has_incremental_state_cleared && p->incremental_state_cleared);
	pseq *s = seq_of(c, seq);
	int rc;
	if (!s)
		return -ENOMEM;
	if (clear)
		s->gen++;
	uint32_t gen = s->gen;
	if (p->has_compressed_packets) {
		if (nested) {
			c->t->dropped++; /* compression inside compression */
			return 0;
		}
		uint8_t *in;
		size_t inlen;
		if ((rc = inflate_packets(p->compressed_packets.data, p->compressed_packets.len,
					  &in, &inlen)) < 0) {
			if (rc == -ENOMEM)
				return rc;
			c->t->dropped++;
			return 0;
		}
		rc = walk(c, in, inlen, 1, packets, err);
		free(in);
		return rc;
	}
	if (p->trace_packet_defaults) {
		const Rvpf__TracePacketDefaults *d = p->trace_packet_defaults;
		if (d->has_timestamp_clock_id) {
			s->has_clock = 1;
			s->clock = d->timestamp_clock_id;
		}
		if (d->track_event_defaults && d->track_event_defaults->has_track_uuid) {
			s->has_track = 1;
			s->track = d->track_event_defaults->track_uuid;
		}
	}
	if (p->clock_snapshot)
		clock_snapshot(s, p->clock_snapshot);
	if (p->thread_descriptor && (rc = legacy_thread(c, s, p->thread_descriptor)) < 0)
		return rc;
	if (p->track_descriptor && (rc = add_track(c, p->track_descriptor)) < 0)
		return rc;
	if (p->interned_data)
		for (size_t i = 0; i < p->interned_data->n_event_names; i++) {
			const Rvpf__EventName *en = p->interned_data->event_names[i];
			if (!en->has_iid || !en->name)
				continue;
			int64_t m = rva_method_intern(c->t, en->name, strlen(en->name));
			if (m < 0)
				return (int)m;
			if ((rc = name_put(c, name_key(seq, gen, en->iid), (uint32_t)m)) < 0)
				return rc;
		}
	if (p->ftrace_events)
		return ftrace_bundle(c, p->ftrace_events);
	if (p->process_tree)
		return process_tree(c, p->process_tree);
	int64_t ts = 0;
	int has_ts = p->has_timestamp && packet_time(s, p, &ts) == 0;
	const Rvpf__TrackEvent *te = p->track_event;
	if (!te) {
		const char *k = p->trace_packet_defaults || p->clock_snapshot ||
						p->thread_descriptor || p->process_descriptor ||
						p->track_descriptor || p->interned_data
					? NULL
					: unread_kind(p);
		return k ? rva_skip_count(c->t, k, 1) : 0;
	}
	if (!te->has_type || (te->type != 1 && te->type != 2))
		return rva_skip_count(c->t,
				      !te->has_type   ? "untyped (legacy) track events"
				      : te->type == 3 ? "instant track events"
				      : te->type == 4 ? "counter track events"
						      : "track events of other types",
				      1);
	if (!has_ts) {
		c->t->dropped++;
		return 0;
	}
	int64_t m = -1;
	if (te->type == 1) {
		if (te->name)
			m = rva_method_intern(c->t, te->name, strlen(te->name));
		else if (te->has_name_iid)
			m = name_get(c, name_key(seq, gen, te->name_iid));
		if (m == -1)
			m = rva_method_intern(c->t, "(unnamed)", 9);
		if (m < 0)
			return (int)m;
	}
	uint64_t track = te->has_track_uuid ? te->track_uuid : s->has_track ? s->track : 0;
	return push_ev(c, track, ts, 0, m);
}

static int cmp_pev(const void *x, const void *y)
{
	const pev *a = x, *b = y;
	if (a->track != b->track)
		return a->track < b->track ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int replay(pctx *c)
{
	if (c->nev)
		qsort(c->ev, c->nev, sizeof(*c->ev), cmp_pev);
	int64_t th = -1;
	uint64_t cur = 0;
	for (size_t i = 0; i < c->nev; i++) {
		const pev *e = &c->ev[i];
		if (th < 0 || e->track != cur) {
			cur = e->track;
			const struct track *k = NULL;
			for (size_t j = 0; j < c->ntracks; j++)
				if (c->tracks[j].uuid == cur)
					k = &c->tracks[j];
			uint32_t pid = k ? k->pid : 0;
			/* An atrace thread's process: from its lines. */
			for (size_t j = i; !pid && j < c->nev && c->ev[j].track == cur; j++)
				pid = c->ev[j].pid;
			th = rva_thread_add(c->t, pid, k ? k->tid : (uint32_t)cur,
					    k ? k->name : NULL);
			if (th < 0)
				return (int)th;
		}
		int rc = e->method >= 0 ? rva_enter(c->t, (size_t)th, (uint32_t)e->method, e->ts)
					: rva_exit(c->t, (size_t)th, RVA_ANY_METHOD, e->ts);
		if (rc < 0)
			return rc;
	}
	/* Thread tracks without slices still appear (named tracks of other
	 * kinds — counters, processes — only when they carry slices). */
	for (size_t j = 0; j < c->ntracks; j++) {
		int found = 0;
		for (size_t i = 0; i < c->t->nthreads && !found; i++)
			found = c->t->threads[i].tid == c->tracks[j].tid &&
				c->t->threads[i].pid == c->tracks[j].pid;
		if (!found && c->tracks[j].thread && c->tracks[j].name &&
		    rva_thread_add(c->t, c->tracks[j].pid, c->tracks[j].tid, c->tracks[j].name) < 0)
			return -ENOMEM;
	}
	rva_trace_finish(c->t, INT64_MIN);
	return 0;
}

/* The field-1 packets of buf (a Trace, or inflated compressed_packets). */
static int walk(pctx *c, const uint8_t *buf, size_t len, int nested, size_t *packets,
		rva_error *err)
{
	size_t pos = 0;
	while (pos < len) {
		uint64_t tag, n;
		size_t at = pos;
		if (varint(buf, len, &pos, &tag) < 0)
			break;
		unsigned wt = tag & 7;
		if (wt == 0) {
			if (varint(buf, len, &pos, &n) < 0)
				break;
			continue;
		}
		if (wt == 1 || wt == 5) {
			pos += wt == 1 ? 8 : 4;
			continue;
		}
		if (wt != 2 || varint(buf, len, &pos, &n) < 0 || n > len - pos) {
			pos = at;
			break;
		}
		if (tag >> 3 == 1) {
			if (n > MAX_PACKET)
				return rva_fail(err, -E2BIG, "packet of %llu bytes",
						(unsigned long long)n);
			struct pb_alloc pa = {{pb_alloc, pb_free, NULL}, 0};
			pa.a.allocator_data = &pa;
			Rvpf__TracePacket *p =
				rvpf__trace_packet__unpack(&pa.a, (size_t)n, buf + pos);
			if (!p && pa.failed)
				return rva_fail(err, -ENOMEM, "out of memory");
			if (!p) {
				c->t->dropped++;
			} else {
				size_t here = *packets;
				int rc = packet(c, p, nested, packets, err);
				rvpf__trace_packet__free_unpacked(p, &pa.a);
				if (rc < 0)
					return rva_fail(err, rc, "packet %zu rejected", here);
				++*packets;
			}
		}
		pos += (size_t)n;
	}
	if (pos < len)
		c->t->dropped++; /* a truncated tail */
	return 0;
}

int rva_perfetto_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	pctx c = {0};
	*out = NULL;
	if (len > MAX_PFTRACE)
		return rva_fail(err, -E2BIG, "Perfetto trace larger than 1 GiB");
	c.t = rva_trace_new();
	if (!c.t)
		return rva_fail(err, -ENOMEM, "out of memory");
	c.t->format = "perfetto";
	size_t packets = 0;
	int rc = walk(&c, buf, len, 0, &packets, err);
	if (rc < 0)
		goto out_free;
	if (packets == 0) {
		rc = rva_fail(err, -EINVAL, "no Perfetto trace packet");
		goto out_free;
	}
	if ((rc = replay(&c)) < 0) {
		rva_fail(err, rc, "cannot build the model");
		goto out_free;
	}
	*out = c.t;
	c.t = NULL;
out_free:
	rva_trace_free(c.t);
	free(c.ev);
	free(c.names);
	free(c.seqs);
	for (size_t i = 0; i < c.ntracks; i++)
		free(c.tracks[i].name);
	free(c.tracks);
	return rc;
}

/* ---- export ---- */

static int put_packet(FILE *f, const Rvpf__TracePacket *p, uint8_t **scratch, size_t *cap)
{
	size_t n = rvpf__trace_packet__get_packed_size(p);
	if (n > *cap) {
		uint8_t *b = realloc(*scratch, n);
		if (!b)
			return -ENOMEM;
		*scratch = b;
		*cap = n;
	}
	rvpf__trace_packet__pack(p, *scratch);
	uint8_t hdr[11];
	size_t h = 0;
	hdr[h++] = 0x0a;
	for (uint64_t v = n;; v >>= 7) {
		hdr[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		if (v < 0x80)
			break;
	}
	if (fwrite(hdr, 1, h, f) != h || fwrite(*scratch, 1, n, f) != n)
		return -EIO;
	return 0;
}

/* A TrackEvent of `type` on `track` at ts: a slice named by iid (>= 0) or
 * by `name` (not NULL), or a counter's value (TYPE_COUNTER, 4). */
static int track_event(FILE *f, int type, uint64_t track, int64_t ts, int64_t iid, const char *name,
		       int64_t value, uint8_t **s, size_t *cap)
{
	Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
	Rvpf__TrackEvent te = RVPF__TRACK_EVENT__INIT;
	p.has_timestamp = 1;
	p.timestamp = (uint64_t)(ts < 0 ? 0 : ts);
	p.has_trusted_packet_sequence_id = 1;
	p.trusted_packet_sequence_id = 1;
	p.has_sequence_flags = 1;
	p.sequence_flags = 2;
	te.has_type = 1;
	te.type = type;
	te.has_track_uuid = 1;
	te.track_uuid = track;
	if (iid >= 0) {
		te.has_name_iid = 1;
		te.name_iid = (uint64_t)iid;
	}
	te.name = (char *)name;
	if (type == 4) {
		te.has_counter_value = 1;
		te.counter_value = value;
	}
	p.track_event = &te;
	return put_packet(f, &p, s, cap);
}

static int slice(FILE *f, int type, uint64_t track, int64_t ts, int64_t iid, uint8_t **s,
		 size_t *cap)
{
	return track_event(f, type, track, ts, iid, NULL, 0, s, cap);
}

/* A child track of thread track `parent`: a slice track (unit < 0) or a
 * counter track of CounterDescriptor unit `unit` (1 ns, 2 count). */
static int child_track(FILE *f, uint64_t uuid, uint64_t parent, const char *name, int unit,
		       uint8_t **s, size_t *cap)
{
	Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
	Rvpf__TrackDescriptor td = RVPF__TRACK_DESCRIPTOR__INIT;
	Rvpf__CounterDescriptor cd = RVPF__COUNTER_DESCRIPTOR__INIT;
	td.has_uuid = 1;
	td.uuid = uuid;
	td.has_parent_uuid = 1;
	td.parent_uuid = parent;
	td.name = (char *)name;
	if (unit >= 0) {
		cd.has_unit = 1;
		cd.unit = unit;
		td.counter = &cd;
	}
	p.track_descriptor = &td;
	p.has_trusted_packet_sequence_id = 1;
	p.trusted_packet_sequence_id = 1;
	return put_packet(f, &p, s, cap);
}

/* The off-CPU view of thread ti (track uuid ti + 1), when it has one:
 *  - uuid (ti + 1) << 32 | 1, "thread state": slices "Running",
 *    "Runnable (preempted)" and "Blocked (sleeping)" tiling the span in
 *    which the thread's state is known, from the oldest switch the daemon
 *    kept (the counters' window; else the thread's first event) to its
 *    last event;
 *  - | 2 and | 3, "switch-outs: blocked" / "switch-outs: preempted":
 *    counters of the intervals so far, 0 at that start;
 *  - | 4, | 5, | 6 (THREAD_COUNTERS): "minor faults", "major faults",
 *    "task-clock" (ns), 0 when tracing started and the totals at the
 *    capture.
 * Thread track uuids are below 2^32, so these never collide with them. */
static int offcpu_tracks(FILE *f, const rva_thread *th, size_t ti, uint8_t **s, size_t *cap)
{
	static const char *const state[RVA_OFF_NREASONS] = {"Running", "Runnable (preempted)",
							    "Blocked (sleeping)"};
	const uint64_t base = (uint64_t)(ti + 1) << 32;
	int rc = 0;
	if (!th->noffcpu && !th->counters)
		return 0;
	int64_t from = INT64_MAX, to = INT64_MIN;
	for (size_t i = 0; i < th->ncalls; i++) {
		from = th->calls[i].start < from ? th->calls[i].start : from;
		to = th->calls[i].end > to ? th->calls[i].end : to;
	}
	if (th->noffcpu) {
		from = th->offcpu[0].from < from ? th->offcpu[0].from : from;
		to = th->offcpu[th->noffcpu - 1].to > to ? th->offcpu[th->noffcpu - 1].to : to;
	}
	if (th->counters && th->counters->window > from && th->counters->window <= to)
		from = th->counters->window;
	if (th->noffcpu && from <= to) {
		uint64_t sw[RVA_OFF_NREASONS] = {0};
		int64_t at = from;
		rc = child_track(f, base | 1, ti + 1, "thread state", -1, s, cap);
		for (int k = 2; k <= 3 && rc == 0; k++)
			rc = child_track(f, base | (uint64_t)k, ti + 1,
					 k == 2 ? "switch-outs: blocked" : "switch-outs: preempted",
					 2, s, cap);
		for (int k = 2; k <= 3 && rc == 0; k++)
			rc = track_event(f, 4, base | (uint64_t)k, from, -1, NULL, 0, s, cap);
		for (size_t i = 0; i <= th->noffcpu && rc == 0; i++) {
			int64_t next = i < th->noffcpu ? th->offcpu[i].from : to;
			if (next > at &&
			    (rc = track_event(f, 1, base | 1, at, -1, state[0], 0, s, cap)) == 0)
				rc = slice(f, 2, base | 1, next, -1, s, cap);
			if (i == th->noffcpu || rc < 0)
				break;
			const rva_offcpu *v = &th->offcpu[i];
			uint32_t r = v->reason == RVA_OFF_PREEMPTED ? RVA_OFF_PREEMPTED
								    : RVA_OFF_BLOCKED;
			/* Sorted and disjoint (rva_offcpu_set), but the window is
			 * the daemon's: an interval before it is cut there. */
			int64_t vf = v->from < at ? at : v->from, vt = v->to < vf ? vf : v->to;
			if (vt > vf &&
			    (rc = track_event(f, 1, base | 1, vf, -1, state[r], 0, s, cap)) == 0)
				rc = slice(f, 2, base | 1, vt, -1, s, cap);
			if (rc == 0)
				rc = track_event(f, 4, base | (r == RVA_OFF_BLOCKED ? 2u : 3u), vf,
						 -1, NULL, (int64_t)++sw[r], s, cap);
			at = vt;
		}
	}
	const rva_tcounters *k = th->counters;
	if (!k || rc < 0)
		return rc;
	static const char *const cname[3] = {"minor faults", "major faults", "task-clock"};
	const uint64_t val[3] = {k->minor_faults, k->major_faults, k->task_clock_ns};
	for (int i = 0; i < 3 && rc == 0; i++) {
		rc = child_track(f, base | (uint64_t)(4 + i), ti + 1, cname[i], i == 2 ? 1 : 2, s,
				 cap);
		if (rc == 0 && k->since < k->at)
			rc = track_event(f, 4, base | (uint64_t)(4 + i), k->since, -1, NULL, 0, s,
					 cap);
		if (rc == 0)
			rc = track_event(f, 4, base | (uint64_t)(4 + i), k->at, -1, NULL,
					 (int64_t)(val[i] > INT64_MAX ? INT64_MAX : val[i]), s,
					 cap);
	}
	return rc;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

/* The thread track uuid of `tid`: its thread's index + 1, else nthreads +
 * 1 + its index in extra[0..nextra) (sorted: the lock waits' tids that no
 * thread of t has); 0 for tid 0 (unknown). */
static uint64_t tid_track(const rva_trace *t, const uint32_t *extra, size_t nextra, uint32_t tid)
{
	const uint32_t *e;

	if (!tid)
		return 0;
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return i + 1;
	e = bsearch(&tid, extra, nextra, sizeof(*extra), cmp_u32);
	assert(e);
	return t->nthreads + 1 + (uint64_t)(e - extra);
}

/* The lock waits of t:
 *  - a thread track (uuid nthreads + 1 + k, t's first thread's pid) for each
 *    waiter or holder tid no thread of t has;
 *  - uuid (waiter's track) << 32 | 7, "lock waits": a slice "lock wait
 *    (KIND)" per wait (one that begins before the previous one on that track
 *    ends is cut there), which terminates flow i + 1 (the i-th wait);
 *  - with the holder known, uuid (holder's track) << 32 | 8, "locks held": an
 *    instant "lock held in METHOD" ("signalled in METHOD" for a condition
 *    variable) at the wait's start, which begins that flow.
 * Memory linear in the waits. */
static int lock_tracks(FILE *f, const rva_trace *t, uint8_t **s, size_t *cap)
{
	uint32_t *extra, pid = t->nthreads ? t->threads[0].pid : 0;
	size_t nextra = 0, ntracks;
	uint8_t *has = NULL;
	int64_t *last = NULL;
	char name[512];
	int rc = 0;

	if (!t->nlock_waits)
		return 0;
	extra = malloc(2 * t->nlock_waits * sizeof(*extra));
	if (!extra)
		return -ENOMEM;
	for (size_t i = 0; i < t->nlock_waits; i++) {
		const uint32_t tid[2] = {t->lock_waits[i].waiter, t->lock_waits[i].holder};
		for (int k = 0; k < 2; k++) {
			size_t j = 0;
			while (j < t->nthreads && t->threads[j].tid != tid[k])
				j++;
			if (tid[k] && j == t->nthreads)
				extra[nextra++] = tid[k];
		}
	}
	qsort(extra, nextra, sizeof(*extra), cmp_u32);
	ntracks = 0;
	for (size_t i = 0; i < nextra; i++)
		if (!ntracks || extra[ntracks - 1] != extra[i])
			extra[ntracks++] = extra[i];
	nextra = ntracks;
	ntracks = t->nthreads + nextra;
	has = calloc(ntracks + 1, sizeof(*has));
	last = calloc(ntracks + 1, sizeof(*last));
	if (!has || !last) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nextra && rc == 0; i++) {
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__TrackDescriptor td = RVPF__TRACK_DESCRIPTOR__INIT;
		Rvpf__ThreadDescriptor thd = RVPF__THREAD_DESCRIPTOR__INIT;
		td.has_uuid = 1;
		td.uuid = t->nthreads + 1 + i;
		thd.has_pid = 1;
		thd.pid = (int32_t)pid;
		thd.has_tid = 1;
		thd.tid = (int32_t)extra[i];
		td.thread = &thd;
		p.track_descriptor = &td;
		p.has_trusted_packet_sequence_id = 1;
		p.trusted_packet_sequence_id = 1;
		rc = put_packet(f, &p, s, cap);
	}
	for (size_t i = 0; i < t->nlock_waits && rc == 0; i++) {
		const rva_lock_wait *w = &t->lock_waits[i];
		uint64_t wt = tid_track(t, extra, nextra, w->waiter);
		uint64_t ht = tid_track(t, extra, nextra, w->holder);
		if (wt && !(has[wt] & 1) &&
		    (rc = child_track(f, wt << 32 | 7, wt, "lock waits", -1, s, cap)) == 0)
			has[wt] |= 1;
		if (rc == 0 && ht && !(has[ht] & 2) &&
		    (rc = child_track(f, ht << 32 | 8, ht, "locks held", -1, s, cap)) == 0)
			has[ht] |= 2;
	}
	for (size_t i = 0; i < t->nlock_waits && rc == 0; i++) {
		const rva_lock_wait *w = &t->lock_waits[i];
		uint64_t wt = tid_track(t, extra, nextra, w->waiter);
		uint64_t ht = tid_track(t, extra, nextra, w->holder), flow = i + 1;
		int64_t from = w->start;
		if (!wt)
			continue;
		from = has[wt] & 4 && last[wt] > from ? last[wt] : from;
		if (w->end <= from)
			continue;
		if (ht) {
			Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
			Rvpf__TrackEvent te = RVPF__TRACK_EVENT__INIT;
			int64_t hm = w->holder_method;
			snprintf(name, sizeof(name), "%s in %s",
				 w->kind == RVA_LOCK_COND ? "signalled" : "lock held",
				 hm >= 0 && (uint64_t)hm < t->nmethods ? t->names[hm]
								       : "(unknown)");
			p.has_timestamp = 1;
			p.timestamp = (uint64_t)(from < 0 ? 0 : from);
			p.has_trusted_packet_sequence_id = 1;
			p.trusted_packet_sequence_id = 1;
			p.has_sequence_flags = 1;
			p.sequence_flags = 2;
			te.has_type = 1;
			te.type = 3;
			te.has_track_uuid = 1;
			te.track_uuid = ht << 32 | 8;
			te.name = name;
			te.n_flow_ids = 1;
			te.flow_ids = &flow;
			p.track_event = &te;
			rc = put_packet(f, &p, s, cap);
		}
		if (rc == 0) {
			Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
			Rvpf__TrackEvent te = RVPF__TRACK_EVENT__INIT;
			snprintf(name, sizeof(name), "lock wait (%s)", rva_lock_kind_name(w->kind));
			p.has_timestamp = 1;
			p.timestamp = (uint64_t)(from < 0 ? 0 : from);
			p.has_trusted_packet_sequence_id = 1;
			p.trusted_packet_sequence_id = 1;
			p.has_sequence_flags = 1;
			p.sequence_flags = 2;
			te.has_type = 1;
			te.type = 1;
			te.has_track_uuid = 1;
			te.track_uuid = wt << 32 | 7;
			te.name = name;
			if (ht) {
				te.n_terminating_flow_ids = 1;
				te.terminating_flow_ids = &flow;
			}
			p.track_event = &te;
			rc = put_packet(f, &p, s, cap);
		}
		if (rc == 0)
			rc = slice(f, 2, wt << 32 | 7, w->end, -1, s, cap);
		has[wt] |= 4;
		last[wt] = w->end;
	}
out:
	free(extra);
	free(has);
	free(last);
	return rc;
}

/* The process track and the "rearview" track's instant
 * (rva_export_perfetto_meta): what the trace is and where its anomaly is. */
/* The app's frames (t->frames): slices "frame" and "frame (late)" on child
 * track k = 9 "frames" of the first thread's track, in start order; a
 * frame starting before the one before it ended starts at that end (slices
 * of a track must not overlap). */
static int frame_tracks(FILE *f, const rva_trace *t, uint8_t **s, size_t *cap)
{
	const uint64_t track = (uint64_t)1 << 32 | 9;
	int64_t at = INT64_MIN;
	int rc;

	if (!t->nframes || !t->nthreads)
		return 0;
	if ((rc = child_track(f, track, 1, "frames", -1, s, cap)) < 0)
		return rc;
	for (size_t i = 0; i < t->nframes && rc == 0; i++) {
		const rva_frame *fr = &t->frames[i];
		int64_t b = fr->start > at ? fr->start : at, e = fr->end > b ? fr->end : b;

		rc = track_event(f, 1, track, b, -1, fr->late ? "frame (late)" : "frame", 0, s,
				 cap);
		if (rc == 0)
			rc = slice(f, 2, track, e, -1, s, cap);
		at = e;
	}
	return rc;
}

static int origin_tracks(FILE *f, const rva_trace *t, const rva_export_meta *meta, uint8_t **s,
			 size_t *cap)
{
	static const rva_export_meta none;
	const rva_export_meta *m = meta ? meta : &none;
	const char *key[4] = {"app", "version", "device", "model"};
	const char *val[4] = {m->app, m->version, m->device, m->model};
	char label[3][300], *labels[3];
	Rvpf__DebugAnnotation da[4], *dap[4];
	size_t nlabels = 0, nda = 0;
	int rc;

	if (!meta && !t->has_anomaly)
		return 0;
	for (int i = 1; i < 4; i++)
		if (val[i]) {
			snprintf(label[nlabels], sizeof label[nlabels], "%s %s", key[i], val[i]);
			labels[nlabels] = label[nlabels];
			nlabels++;
		}
	for (int i = 0; i < 4; i++)
		if (val[i]) {
			rvpf__debug_annotation__init(&da[nda]);
			da[nda].name = (char *)key[i];
			da[nda].string_value = (char *)val[i];
			dap[nda] = &da[nda];
			nda++;
		}
	{
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__TrackDescriptor td = RVPF__TRACK_DESCRIPTOR__INIT;
		Rvpf__ProcessDescriptor pd = RVPF__PROCESS_DESCRIPTOR__INIT;
		td.has_uuid = 1;
		td.uuid = RVA_PERFETTO_PROCESS_UUID;
		if (t->nthreads) {
			pd.has_pid = 1;
			pd.pid = (int32_t)t->threads[0].pid;
		}
		pd.process_name = (char *)m->app;
		pd.n_process_labels = nlabels;
		pd.process_labels = labels;
		td.process = &pd;
		p.track_descriptor = &td;
		p.has_trusted_packet_sequence_id = 1;
		p.trusted_packet_sequence_id = 1;
		if ((rc = put_packet(f, &p, s, cap)) < 0)
			return rc;
	}
	if ((rc = child_track(f, RVA_PERFETTO_MARK_UUID, RVA_PERFETTO_PROCESS_UUID, "rearview", -1,
			      s, cap)) < 0)
		return rc;
	Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
	Rvpf__TrackEvent te = RVPF__TRACK_EVENT__INIT;
	int64_t at = t->has_anomaly ? t->anomaly_ns : t->start;
	p.has_timestamp = 1;
	p.timestamp = (uint64_t)(at < 0 ? 0 : at);
	p.has_trusted_packet_sequence_id = 1;
	p.trusted_packet_sequence_id = 1;
	p.has_sequence_flags = 1;
	p.sequence_flags = 2;
	te.has_type = 1;
	te.type = 3;
	te.has_track_uuid = 1;
	te.track_uuid = RVA_PERFETTO_MARK_UUID;
	te.name = (char *)(!t->has_anomaly   ? "capture"
			   : t->anomaly_name ? t->anomaly_name
					     : "anomaly");
	te.n_debug_annotations = nda;
	te.debug_annotations = dap;
	p.track_event = &te;
	return put_packet(f, &p, s, cap);
}

int rva_export_perfetto(FILE *f, const rva_trace *t)
{
	return rva_export_perfetto_meta(f, t, NULL);
}

int rva_export_perfetto_meta(FILE *f, const rva_trace *t, const rva_export_meta *meta)
{
	uint8_t *scratch = NULL;
	size_t cap = 0;
	int rc = 0;
	int64_t *ends = NULL;
	Rvpf__EventName *names = NULL, **nptr = NULL;
	/* Track descriptors: uuid = thread index + 1. */
	for (size_t i = 0; i < t->nthreads && rc == 0; i++) {
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__TrackDescriptor td = RVPF__TRACK_DESCRIPTOR__INIT;
		Rvpf__ThreadDescriptor thd = RVPF__THREAD_DESCRIPTOR__INIT;
		td.has_uuid = 1;
		td.uuid = i + 1;
		thd.has_pid = 1;
		thd.pid = (int32_t)t->threads[i].pid;
		thd.has_tid = 1;
		thd.tid = (int32_t)t->threads[i].tid;
		thd.thread_name = t->threads[i].name;
		td.thread = &thd;
		p.track_descriptor = &td;
		p.has_trusted_packet_sequence_id = 1;
		p.trusted_packet_sequence_id = 1;
		rc = put_packet(f, &p, &scratch, &cap);
	}
	if (rc < 0)
		goto out_free;
	/* All names interned once, iid = method id + 1. */
	names = calloc(t->nmethods + 1, sizeof(*names));
	nptr = calloc(t->nmethods + 1, sizeof(*nptr));
	if (!names || !nptr) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < t->nmethods; i++) {
		rvpf__event_name__init(&names[i]);
		names[i].has_iid = 1;
		names[i].iid = i + 1;
		names[i].name = t->names[i];
		nptr[i] = &names[i];
	}
	{
		Rvpf__TracePacket p = RVPF__TRACE_PACKET__INIT;
		Rvpf__InternedData id = RVPF__INTERNED_DATA__INIT;
		id.n_event_names = t->nmethods;
		id.event_names = nptr;
		p.interned_data = &id;
		p.has_trusted_packet_sequence_id = 1;
		p.trusted_packet_sequence_id = 1;
		p.has_sequence_flags = 1;
		p.sequence_flags = 1;
		p.has_timestamp = 1;
		p.timestamp = (uint64_t)(t->start < 0 ? 0 : t->start);
		if ((rc = put_packet(f, &p, &scratch, &cap)) < 0)
			goto out_free;
	}
	for (size_t ti = 0; ti < t->nthreads && rc == 0; ti++) {
		const rva_thread *th = &t->threads[ti];
		free(ends);
		ends = malloc((th->ncalls + 1) * sizeof(*ends));
		if (!ends) {
			rc = -ENOMEM;
			break;
		}
		size_t n = 0;
		for (size_t i = 0; i <= th->ncalls && rc == 0; i++) {
			size_t d = i < th->ncalls ? th->calls[i].depth : 0;
			while (n > d && rc == 0)
				rc = slice(f, 2, ti + 1, ends[--n], -1, &scratch, &cap);
			if (i == th->ncalls || rc < 0)
				break;
			rc = slice(f, 1, ti + 1, th->calls[i].start, th->calls[i].method + 1,
				   &scratch, &cap);
			ends[n++] = th->calls[i].end;
		}
		if (rc == 0)
			rc = offcpu_tracks(f, th, ti, &scratch, &cap);
	}
	if (rc == 0)
		rc = lock_tracks(f, t, &scratch, &cap);
	if (rc == 0)
		rc = frame_tracks(f, t, &scratch, &cap);
	if (rc == 0)
		rc = origin_tracks(f, t, meta, &scratch, &cap);
out_free:
	free(ends);
	free(names);
	free(nptr);
	free(scratch);
	if (rc == 0 && ferror(f))
		rc = -EIO;
	return rc;
}
