/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capbuild.h — builds Rearview capture files byte by byte from
 * tracer/FORMAT.md, independently of any writer, for the decoder tests,
 * the fuzz corpus and the benchmark.  Header-only, test use.
 */
#ifndef RVTRACE_CAPBUILD_H
#define RVTRACE_CAPBUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct capbuf {
	uint8_t *b;
	size_t len, cap;
	size_t nslots;
} capbuf;

static inline void cb_put(capbuf *c, const void *p, size_t n)
{
	if (c->len + n > c->cap) {
		size_t cap = c->cap ? c->cap : 1024;
		while (cap < c->len + n)
			cap *= 2;
		c->b = realloc(c->b, cap);
		if (!c->b)
			abort();
		c->cap = cap;
	}
	if (n) /* p may be NULL with nothing to copy */
		memcpy(c->b + c->len, p, n);
	c->len += n;
}

static inline void cb_u64at(capbuf *c, size_t off, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		c->b[off + i] = (uint8_t)(v >> (8 * i));
}

static inline void cb_u32at(capbuf *c, size_t off, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		c->b[off + i] = (uint8_t)(v >> (8 * i));
}

static inline void cb_u16at(capbuf *c, size_t off, uint16_t v)
{
	c->b[off] = (uint8_t)v;
	c->b[off + 1] = (uint8_t)(v >> 8);
}

/* Header with the clock; slots and records follow; cb_finish patches the
 * geometry. */
static inline void cb_header(capbuf *c, uint64_t ref, uint64_t hz, uint8_t shift, uint64_t mono,
			     uint64_t base, uint32_t flags)
{
	static const uint8_t magic[8] = {'R', 'V', 'C', 'A', 'P', 0, '\r', '\n'};
	uint8_t z[128] = {0};
	c->len = 0;
	c->nslots = 0;
	cb_put(c, z, sizeof(z));
	memcpy(c->b, magic, 8);
	cb_u16at(c, 8, 1);
	cb_u16at(c, 10, 128);
	cb_u32at(c, 12, flags);
	cb_u64at(c, 16, ref);
	cb_u64at(c, 24, 1700000000000000000ull);
	cb_u64at(c, 32, mono);
	cb_u64at(c, 40, hz);
	c->b[48] = shift;
	c->b[49] = 1;
	cb_u32at(c, 52, 42);
	cb_u32at(c, 56, 43);
	cb_u64at(c, 64, base);
	cb_u64at(c, 104, 128);
}

static inline void cb_slot(capbuf *c, uint64_t v)
{
	uint8_t s[8];
	for (int i = 0; i < 8; i++)
		s[i] = (uint8_t)(v >> (8 * i));
	cb_put(c, s, 8);
	c->nslots++;
}

static inline void cb_entry(capbuf *c, uint64_t value, uint32_t ts)
{
	if (value < (1ull << 32)) {
		cb_slot(c, (uint64_t)ts << 32 | value);
	} else {
		cb_slot(c, value);
		cb_slot(c, (uint64_t)ts << 32 | 1);
	}
}

static inline void cb_exit(capbuf *c, uint32_t ts)
{
	cb_slot(c, (uint64_t)ts << 32);
}

/* Call after the last slot, before records. */
static inline void cb_end_slots(capbuf *c)
{
	cb_u64at(c, 72, c->nslots < 8 ? 8 : c->nslots);
	cb_u64at(c, 88, c->nslots);
	cb_u64at(c, 96, c->nslots);
	cb_u64at(c, 112, 128 + 8 * c->nslots);
}

static inline void cb_record(capbuf *c, uint16_t type, const void *v, uint32_t len)
{
	uint8_t h[8] = {
		(uint8_t)type,	      (uint8_t)(type >> 8), 0, 0, (uint8_t)len, (uint8_t)(len >> 8),
		(uint8_t)(len >> 16), (uint8_t)(len >> 24)};
	static const uint8_t pad[8] = {0};
	cb_put(c, h, 8);
	if (len)
		cb_put(c, v, len);
	cb_put(c, pad, (8 - len % 8) % 8);
}

static inline void cb_symbol(capbuf *c, uint64_t value, uint64_t off, uint32_t mod,
			     const char *name)
{
	uint8_t r[24 + 256];
	size_t n = strlen(name);
	for (int i = 0; i < 8; i++) {
		r[i] = (uint8_t)(value >> (8 * i));
		r[8 + i] = (uint8_t)(off >> (8 * i));
	}
	for (int i = 0; i < 4; i++) {
		r[16 + i] = (uint8_t)(mod >> (8 * i));
		r[20 + i] = (uint8_t)(n >> (8 * i));
	}
	memcpy(r + 24, name, n);
	cb_record(c, 5, r, (uint32_t)(24 + n));
}

static inline void cb_module(capbuf *c, uint32_t index, uint64_t start, uint64_t end,
			     const char *path)
{
	uint8_t r[32 + 256] = {0};
	size_t n = strlen(path);
	for (int i = 0; i < 4; i++)
		r[i] = (uint8_t)(index >> (8 * i));
	for (int i = 0; i < 8; i++) {
		r[16 + i] = (uint8_t)(start >> (8 * i));
		r[24 + i] = (uint8_t)(end >> (8 * i));
	}
	memcpy(r + 32, path, n);
	cb_record(c, 4, r, (uint32_t)(32 + n));
}

static inline void cb_anomaly(capbuf *c, uint32_t kind, uint64_t mono, const char *name)
{
	uint8_t r[16 + 256] = {0};
	size_t n = strlen(name);
	r[0] = (uint8_t)kind;
	for (int i = 0; i < 8; i++)
		r[8 + i] = (uint8_t)(mono >> (8 * i));
	memcpy(r + 16, name, n);
	cb_record(c, 6, r, (uint32_t)(16 + n));
}

/* A MUTED record (type 10) for `value`, muted at `counter` / `mono` ns,
 * followed by its MUTED_CALLERS record (type 17) naming one caller with
 * share_ppm of its self time. */
static inline void cb_muted(capbuf *c, uint64_t value, uint64_t counter, uint64_t mono,
			    uint64_t caller, uint32_t share_ppm)
{
	uint8_t m[40] = {0}, mc[24] = {0};
	for (int i = 0; i < 8; i++) {
		m[i] = mc[i] = (uint8_t)(value >> (8 * i));
		m[8 + i] = (uint8_t)(counter >> (8 * i));
		m[16 + i] = (uint8_t)(mono >> (8 * i));
		mc[8 + i] = (uint8_t)(caller >> (8 * i));
	}
	for (int i = 0; i < 4; i++)
		mc[16 + i] = (uint8_t)(share_ppm >> (8 * i));
	cb_record(c, 10, m, sizeof(m));
	cb_record(c, 17, mc, sizeof(mc));
}

/* Appends END and patches file_size. */
static inline void cb_finish(capbuf *c)
{
	cb_record(c, 0xffff, NULL, 0);
	cb_u64at(c, 120, c->len);
}

/* tracer/FORMAT.md's off-CPU worked example (tid 43, 1 GHz, monotonic =
 * counter: times are ns): the OFFCPU and THREAD_COUNTERS values, byte for
 * byte (after each record's 8-byte header). */
static const uint8_t cb_offcpu_value[80] = {
	0x2b, 0,    0, 0, 3, 0, 0, 0,				    /* tid 43, 3 intervals */
	0x28, 0x23, 0, 0, 0, 0, 0, 0, 0x10, 0x27, 0, 0, 0, 0, 0, 0, /* 9000 .. 10000 */
	1,    0,    0, 0, 0, 0, 0, 0,				    /* preempted */
	0x08, 0x52, 0, 0, 0, 0, 0, 0, 0x68, 0xbf, 0, 0, 0, 0, 0, 0, /* 21000 .. 49000 */
	2,    0,    0, 0, 0, 0, 0, 0,				    /* blocked */
	0xe8, 0xfd, 0, 0, 0, 0, 0, 0, 0x70, 0x11, 1, 0, 0, 0, 0, 0, /* 65000 .. 70000 */
	2,    0,    0, 0, 0, 0, 0, 0,				    /* blocked */
};
static const uint8_t cb_counters_value[80] = {
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

/* The whole example capture, finished: `main` 1000–99000 → `spin`
 * 2000–12000 (preempted 9000–10000), `read_pipe` 20000–50000 (blocked
 * 21000–49000), `touch_pages` 60000–80000 (blocked 65000–70000), the
 * counters, and a LOCK_WAIT: read_pipe waited 21000–49000 for mutex
 * 0x5555deadbee0 held by tid 44 in `flush_log`; `frames` (72 bytes) as
 * a FRAMES record when not NULL. */
static inline void cb_offcpu_example_frames(capbuf *c, const uint8_t *frames)
{
	static const uint8_t lock[56] = {
		1,    0,    0,	  0,	3,    0,    0, 0, /* mutex, both methods known */
		0x2b, 0,    0,	  0,	0x2c, 0,    0, 0, /* waiter 43, holder 44 */
		0xe0, 0xbe, 0xad, 0xde, 0x55, 0x55, 0, 0, /* lock 0x5555deadbee0 */
		0x20, 0x10, 0,	  0,	0,    0,    0, 0, /* waiter method read_pipe */
		0x40, 0x10, 0,	  0,	0,    0,    0, 0, /* holder method flush_log */
		0x08, 0x52, 0,	  0,	0,    0,    0, 0, /* start 21000 */
		0x68, 0xbf, 0,	  0,	0,    0,    0, 0, /* end 49000 */
	};
	cb_header(c, 100000, 1000000000, 0, 100000, 0x400000, 0);
	cb_entry(c, 0x1000, 1000);
	cb_entry(c, 0x1010, 2000);
	cb_exit(c, 12000);
	cb_entry(c, 0x1020, 20000);
	cb_exit(c, 50000);
	cb_entry(c, 0x1030, 60000);
	cb_exit(c, 80000);
	cb_exit(c, 99000);
	cb_end_slots(c);
	cb_symbol(c, 0x1000, 0x1000, 0, "main");
	cb_symbol(c, 0x1010, 0x1010, 0, "spin");
	cb_symbol(c, 0x1020, 0x1020, 0, "read_pipe");
	cb_symbol(c, 0x1030, 0x1030, 0, "touch_pages");
	cb_symbol(c, 0x1040, 0x1040, 0, "flush_log");
	cb_record(c, 15, lock, sizeof(lock));
	cb_record(c, 12, cb_offcpu_value, sizeof(cb_offcpu_value));
	cb_record(c, 13, cb_counters_value, sizeof(cb_counters_value));
	if (frames)
		cb_record(c, 14, frames, 72);
	cb_finish(c);
}

static inline void cb_offcpu_example(capbuf *c)
{
	cb_offcpu_example_frames(c, NULL);
}

/* tracer/FORMAT.md's FRAMES worked example, the value after the header: tid
 * 42's frames 1000–17000 (no deadline, on time) and 20000–60000 (due at
 * 36666, late). */
static const uint8_t cb_frames_value[72] = {
	2,    0,    0, 0, 0, 0, 0, 0,				    /* 2 frames */
	0xe8, 0x03, 0, 0, 0, 0, 0, 0, 0x68, 0x42, 0, 0, 0, 0, 0, 0, /* 1000 .. 17000 */
	0,    0,    0, 0, 0, 0, 0, 0, 0x2a, 0,	  0, 0, 0, 0, 0, 0, /* tid 42, on time */
	0x20, 0x4e, 0, 0, 0, 0, 0, 0, 0x60, 0xea, 0, 0, 0, 0, 0, 0, /* 20000 .. 60000 */
	0x3a, 0x8f, 0, 0, 0, 0, 0, 0, 0x2a, 0,	  0, 0, 1, 0, 0, 0, /* due 36666, late */
};

/* The off-CPU example with the FRAMES example's record too. */
static inline void cb_frames_example(capbuf *c)
{
	cb_offcpu_example_frames(c, cb_frames_value);
}

/* The benchmarks' synthetic capture: about `slots` slots of nested calls
 * over 64 methods named "com.example.Service.methodNN(int)", 1 in 16
 * entries a two-slot value, the counter wrapping every 4.3 s.  Program-like
 * (method m calls one of 2 fixed callees, depth <= 12, so hot paths repeat
 * as in real code), or with random_graph any of 64 callees at any depth up
 * to 24 (nearly every chain distinct: the worst case).  Records may follow;
 * cb_finish ends the file. */
static inline void cb_program(capbuf *c, size_t slots, int random_graph)
{
	uint32_t stack[32];
	uint64_t t = 1ull << 32, rng = 88172645463325252ull;
	unsigned depth = 0;

	cb_header(c, 0, 1000000000, 0, 1000000000000ull, 0x400000, 0);
	while (c->nslots < slots - 2) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		t += 20 + (rng & 63);
		unsigned maxd = random_graph ? 24 : 12;
		int enter = depth == 0 || (depth < maxd && (rng >> 8) % 100 < 50);
		if (enter && c->nslots < slots - 4) {
			uint64_t m = random_graph ? (rng >> 20) % 64
				     : depth == 0
					     ? 0
					     : (stack[depth - 1] * 7 + 1 + (rng >> 20) % 2) % 64;
			stack[depth] = (uint32_t)m;
			uint64_t v = (rng >> 30) % 16 == 0 ? 0xffffff0000000000ull + 16 * m
							   : 0x1000 + 16 * m;
			cb_entry(c, v, (uint32_t)t);
			depth++;
		} else if (depth) {
			cb_exit(c, (uint32_t)t);
			depth--;
		} else {
			break;
		}
	}
	cb_u64at(c, 16, t + 10);
	cb_end_slots(c);
	for (unsigned m = 0; m < 64; m++) {
		char name[64];
		snprintf(name, sizeof(name), "com.example.Service.method%02u(int)", m);
		cb_symbol(c, 0x1000 + 16 * m, 0x1000 + 16 * m, 0, name);
	}
}

/* Calls sharing timestamps by the hundred, as a coarse clock gives them
 * (1 GHz, monotonic = counter: times are ns): `main` 1000–3000000 →
 * `layout` 10000–1001000, in which at 10000 itself 100 zero-length `noop`
 * and `measure` calls alternate (measure's fast path, measure last), then
 * `measure` 10000–1001000 (991000 ns, the only call with a length of it);
 * `draw` 1001000–1501000 begins where layout ends; `idle`
 * 1501000–2500000.  Self times: measure 991000, draw 500000, idle 999000,
 * layout 0, noop 0, main 509000.
 * An anomaly "jank" (ANOMALY_JANK) at 1200000. */
static inline void cb_ties_example(capbuf *c)
{
	cb_header(c, 3000010, 1000000000, 0, 3000010, 0x400000, 0);
	cb_entry(c, 0x1000, 1000);
	cb_entry(c, 0x1010, 10000);
	for (int i = 0; i < 100; i++) {
		cb_entry(c, 0x1020, 10000);
		cb_exit(c, 10000);
		cb_entry(c, 0x1030, 10000);
		cb_exit(c, 10000);
	}
	cb_entry(c, 0x1030, 10000);
	cb_exit(c, 1001000);
	cb_exit(c, 1001000);
	cb_entry(c, 0x1040, 1001000);
	cb_exit(c, 1501000);
	cb_entry(c, 0x1050, 1501000);
	cb_exit(c, 2500000);
	cb_exit(c, 3000000);
	cb_end_slots(c);
	cb_symbol(c, 0x1000, 0x1000, 0, "main");
	cb_symbol(c, 0x1010, 0x1010, 0, "layout");
	cb_symbol(c, 0x1020, 0x1020, 0, "noop");
	cb_symbol(c, 0x1030, 0x1030, 0, "measure");
	cb_symbol(c, 0x1040, 0x1040, 0, "draw");
	cb_symbol(c, 0x1050, 0x1050, 0, "idle");
	cb_anomaly(c, 1, 1200000, "jank");
	cb_finish(c);
}

#endif
