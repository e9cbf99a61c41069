/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp-slow.c — the traced thread's rare paths inside a trace point: adopting
 * a newly published ring and writing a CLOCK record (trace-inline.h
 * describes the protocol, FORMAT.md §1 the record).
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

int rvt__adopt(struct rvt__thread *t)
{
	/* Partner: the control side's release store of start (the ring's
	 * slots pointer, end_pos and wrapped were set before it). */
	uintptr_t s = RVT__LD_ACQ(t->start);
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
		RVT__ST_REL(t->seen, RVT__SEEN_CHANGING);
		struct rvt_ring *r = (struct rvt_ring *)s;
		t->base = r->slots;
		t->limit = r->slots + r->nslots;
		t->method_base = rvt_method_base;
		t->shift = rvt_clock.shift;
		t->hi = UINT64_MAX; /* the ring starts with a CLOCK record */
		/* The shadow stack is the thread's (tracer.c): a capture's
		 * spare ring carries it on; a new start begins it empty. */
		if ((uintptr_t)r->shadow != t->sh_base || !r->carry_shadow) {
			t->sh_base = (uintptr_t)r->shadow;
			t->sh_end = t->sh_base + RVT_SHADOW_WORDS * sizeof(uintptr_t);
			t->sh_top = t->sh_base;
		}
		RVT__ST_REL(t->cur, r->slots + r->end_pos);
		RVT__ST_REL(t->wrapped, r->wrapped);
		RVT__ST_REL(t->seen, s);
	}
	return 1;
}

/* Advances a slot pointer, wrapping at the ring's end. */
static uint64_t *next_slot(struct rvt__thread *t, uint64_t *p)
{
	if (++p == t->limit) {
		RVT__ST(t->wrapped, 1);
		p = t->base;
	}
	return p;
}

uint64_t rvt__clock(struct rvt__thread *t, uint64_t now)
{
	uint64_t *p = RVT__LD(t->cur);
	*p = now;
	p = next_slot(t, p);
	*p = now << 32 | RVT_SLOT_CLOCK;
	RVT__ST(t->cur, next_slot(t, p));
	t->hi = now >> 32;
	return now;
}
