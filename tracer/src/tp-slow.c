/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp-slow.c — the traced thread's rare paths inside a trace point: adopting
 * a newly published ring, reaching a segment's bound, and writing a CLOCK
 * record with the STACK record of the open frames (trace-inline.h describes
 * the protocol, FORMAT.md §1 the records).
 *
 * Invariants: runs only on the traced thread, inside a trace point that has
 * set busy (so no handler's trace point and no control-side handover reads
 * a half-updated state); no call, lock, allocation or system call.  On
 * x86-64 this file is compiled with -mgeneral-regs-only (tracer/lib.mk): the
 * inline-mode stubs in hooks-x86_64.S promise their callers that every
 * register survives and save only the general-purpose ones, so nothing here
 * may touch SSE/AVX state.
 *
 * This file is compiled without -finstrument-functions; nothing here traces.
 */
#include "tracer-int.h"

#include <assert.h>

int rvt__adopt(struct rvt__thread *t)
{
	/* Partner: the control side's release store of start (the ring's
	 * slots pointer, end_pos and wrapped were set before it). */
	uintptr_t s = atomic_load_explicit(&t->start, memory_order_acquire);
	if (s == 0)
		return 0;
	uintptr_t o = RVT__LD(t->seen);
	if (s != o) {
		/* The seqlock of trace-inline.h's DESIGN; partner: ring_end_locked
		 * in tracer.c. */
		RVT__ST(t->prev_ring, o);
		t->prev_cur = RVT__LD(t->cur);
		t->prev_wrapped = RVT__LD(t->wrapped);
		/* Release: whoever sees CHANGING sees prev_ring (ring_new's
		 * check that a shell is neither seen nor prev_ring). */
		atomic_store_explicit(&t->seen, RVT__SEEN_CHANGING, memory_order_release);
		struct rvt_ring *r = (struct rvt_ring *)s;
		t->base = r->slots;
		t->limit = r->slots + r->nslots;
		/* The first bound: the next multiple of step after end_pos. */
		assert(r->step > 0 && r->step <= r->nslots && r->end_pos < r->nslots);
		uint64_t b = (r->end_pos / r->step + 1) * r->step;
		t->step = (uintptr_t)(r->step * sizeof(uint64_t));
		t->bound = r->slots + (b < r->nslots ? b : r->nslots);
		t->method_base = rvt_method_base;
		t->shift = rvt_clock.shift;
		t->hi = UINT64_MAX; /* the ring starts with a CLOCK record */
		/* The shadow stack is the thread's (tracer.c): a capture's
		 * spare ring carries it on; a new start begins it empty. */
		if ((uintptr_t)r->shadow != t->sh_base || !r->carry_shadow) {
			t->sh_base = (uintptr_t)r->shadow;
			t->sh_end = t->sh_base + RVT_SHADOW_FRAMES * RVT_SHADOW_FRAME;
			t->sh_top = t->sh_base;
		}
		atomic_store_explicit(&t->cur, r->slots + r->end_pos, memory_order_release);
		atomic_store_explicit(&t->wrapped, r->wrapped, memory_order_release);
		atomic_store_explicit(&t->seen, s, memory_order_release);
	}
	return 1;
}

uint64_t *rvt__bound(struct rvt__thread *t, uint64_t *p)
{
	assert(p == t->bound);
	if (p == t->limit) {
		RVT__ST(t->wrapped, 1);
		p = t->base;
	}
	t->hi = UINT64_MAX; /* the next trace point writes CLOCK and STACK */
	uintptr_t room = (uintptr_t)(t->limit - p) * sizeof(uint64_t);
	t->bound = room > t->step ? (uint64_t *)((uintptr_t)p + t->step) : t->limit;
	return p;
}

/* Writes one slot at p; returns where the next one goes. */
static uint64_t *put(struct rvt__thread *t, uint64_t *p, uint64_t v)
{
	*p = v;
	if (++p == t->bound)
		p = rvt__bound(t, p);
	return p;
}

uint64_t rvt__clock(struct rvt__thread *t, uint64_t now)
{
	uint64_t ts = now << 32, *p = RVT__LD(t->cur);
	p = put(t, p, now);
	p = put(t, p, ts | RVT_SLOT_CLOCK);
	/* STACK (FORMAT.md §1): a FRAME pair per open frame the shadow holds,
	 * outermost first, as many as a quarter of a segment takes, then the
	 * count listed and the count open. */
	uintptr_t top = t->sh_top, known = top < t->sh_end ? top : t->sh_end;
	uint64_t open = (top - t->sh_base) / RVT_SHADOW_FRAME;
	uint64_t listed = (known - t->sh_base) / RVT_SHADOW_FRAME;
	uint64_t room = t->step / sizeof(uint64_t) / 4;
	uint64_t most = room > 2 ? (room - 2) / 2 : 0;
	if (listed > most)
		listed = most;
	const uintptr_t *f = (const uintptr_t *)t->sh_base;
	for (uint64_t i = 0; i < listed; i++) {
		/* The method value as the entry computed it (mod 2^64). */
		uintptr_t fn = f[2 * i + 1] + (uintptr_t)t->method_base;
		p = put(t, p, (uint64_t)fn - t->method_base);
		p = put(t, p, ts | RVT_SLOT_FRAME);
	}
	if (open > UINT32_MAX)
		open = UINT32_MAX;
	p = put(t, p, open << 32 | listed);
	p = put(t, p, ts | RVT_SLOT_STACK);
	RVT__ST(t->cur, p);
	t->hi = now >> 32;
	return now;
}
