/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp-slow.c — the traced thread's rare paths inside a trace point: adopting
 * a newly published ring, reaching a segment's bound, writing a CLOCK
 * record with the STACK record of the open frames, and an exit that finds
 * another frame or none innermost (trace-inline.h describes the protocol
 * and the exit check, FORMAT.md §1 the records).
 *
 * Invariants: runs only on the traced thread, inside a trace point that has
 * set busy (so no handler's trace point and no control-side handover reads
 * a half-updated state); no call, lock or allocation, and no system call
 * but the budget's wake (rvt__wake in tracer-int.h: one FUTEX_WAKE made
 * with the syscall instruction, so errno is untouched, at most once per
 * sleep of the budget thread and 1 ms apart).  On
 * x86-64 this file is compiled with -mgeneral-regs-only (tracer/lib.mk): the
 * inline-mode stubs in hooks-x86_64.S promise their callers that every
 * register survives and save only the general-purpose ones, so nothing here
 * may touch SSE/AVX state.
 *
 * This file is compiled without -finstrument-functions; nothing here traces.
 */
#include "tracer-int.h"

#include <assert.h>
#include <linux/futex.h>
#include <sys/syscall.h>

struct rvt_wake rvt__wake;

int rvt__adopt(struct rvt__thread *t)
{
	/* Partner: the control side's release store of start (the ring's
	 * slots pointer, end_pos and wrapped were set before it). */
	uintptr_t s = RVT__LD_ACQ(t->start) & ~RVT__START_LEARN;
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
		/* Bounds every `sub` slots, a divisor of step of at most
		 * RVT_BOUND_SLOTS (when step has one): a segment's start is one
		 * of them.  The first: the next one after end_pos. */
		assert(r->step > 0 && r->step <= r->nslots && r->end_pos < r->nslots);
		uint64_t sub = r->step;
		while (sub > RVT_BOUND_SLOTS && sub % 2 == 0)
			sub /= 2;
		uint64_t b = (r->end_pos / sub + 1) * sub;
		t->step = (uintptr_t)(sub * sizeof(uint64_t));
		r->clock_hi = UINT64_MAX; /* the ring starts with a CLOCK record */
		r->wake_mark = 0;
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
			/* No frame recorded yet, none known to be entered since
			 * (rvt__exit_outer). */
			if (t->sh_base)
				((uintptr_t *)t->sh_base)[0] = 0;
			t->sh_floor = 0;
		}
		RVT__ST_REL(t->cur, r->slots + r->end_pos);
		RVT__ST_REL(t->wrapped, r->wrapped);
		RVT__ST_REL(t->seen, s);
	}
	return 1;
}

/* ---- call sites the budget learns (mute.c) ---- */

/* (return address, function, exit) of the hook calls seen while `start`
 * carried RVT__START_LEARN: an open-addressed table, entries claimed by a
 * compare-and-swap of `ret` and then filled; never emptied (a site is
 * learned once). */
#define LEARNED 8192u
static struct {
	_Atomic uintptr_t ret, fn;
	_Atomic int exit;
} learned[LEARNED];

static void learn(uintptr_t fn, uintptr_t ret, int entry)
{
	unsigned h = (unsigned)((ret * UINT64_C(0x9e3779b97f4a7c15)) >> 51) & (LEARNED - 1);
	for (unsigned k = 0; k < 16; k++) {
		unsigned i = (h + k) & (LEARNED - 1);
		uintptr_t r = atomic_load_explicit(&learned[i].ret, memory_order_relaxed);
		if (r == ret)
			return;
		if (r == 0 && atomic_compare_exchange_strong(&learned[i].ret, &r, ret)) {
			atomic_store_explicit(&learned[i].exit, !entry, memory_order_relaxed);
			atomic_store_explicit(&learned[i].fn, fn, memory_order_release);
			return;
		}
		if (r == ret)
			return;
	}
}

int rvt__adopt_at(struct rvt__thread *t, uintptr_t fn, uintptr_t ret, int entry)
{
	if (RVT__LD(t->start) & RVT__START_LEARN)
		learn(fn, ret, entry);
	return rvt__adopt(t);
}

size_t rvt_learned(size_t from, uintptr_t *fn, uintptr_t *ret, int *exit)
{
	for (size_t i = from; i < LEARNED; i++) {
		uintptr_t f = atomic_load_explicit(&learned[i].fn, memory_order_acquire);
		if (!f)
			continue;
		*fn = f;
		*ret = atomic_load_explicit(&learned[i].ret, memory_order_relaxed);
		*exit = atomic_load_explicit(&learned[i].exit, memory_order_relaxed);
		return i + 1;
	}
	return 0;
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

/* At a bound `slots` after the previous one, counter `now`: wakes the
 * budget when they came faster than its threshold (rvt__wake). */
static void wake_check(struct rvt_ring *r, uint64_t now, uint64_t slots)
{
	uint64_t was = r->wake_mark;
	r->wake_mark = now;
	uint64_t tps = atomic_load_explicit(&r->wake_tps, memory_order_relaxed);
	if (!tps)
		tps = atomic_load_explicit(&rvt__wake.tps, memory_order_relaxed);
	if (!was || !tps || now <= was || now - was >= (slots * tps) >> 16)
		return;
	atomic_store_explicit(&r->wake_fast, 1, memory_order_relaxed);
#if defined(__x86_64__)
	if (now >= atomic_load_explicit(&rvt__wake.not_before, memory_order_relaxed) &&
	    atomic_load_explicit(&rvt__wake.word, memory_order_relaxed) == 1 &&
	    atomic_exchange(&rvt__wake.word, 0) == 1)
		rvt_sys(SYS_futex, (long)&rvt__wake.word, FUTEX_WAKE_PRIVATE, 1, 0);
#endif
}

uint64_t rvt__clock(struct rvt__thread *t, uint64_t now)
{
	uint64_t ts = now << 32, *p = RVT__LD(t->cur);
	struct rvt_ring *r = (struct rvt_ring *)RVT__LD(t->seen);
	assert((uintptr_t)r > RVT__SEEN_CHANGING);
	uint64_t pos = (uint64_t)(p - t->base), sub = t->step / sizeof(uint64_t);
	if (pos % sub == 0) {
		/* A bound: the budget's wake; inside a segment, a CLOCK only
		 * when the high word changed. */
		wake_check(r, now, sub);
		if (pos % r->step != 0 && (now >> 32) == r->clock_hi) {
			t->hi = now >> 32;
			return now;
		}
	}
	r->clock_hi = now >> 32;
	p = put(t, p, now);
	p = put(t, p, ts | RVT_SLOT_CLOCK);
	/* STACK (FORMAT.md §1): a FRAME pair per open frame the shadow holds,
	 * outermost first, as many as a quarter of a segment takes, then the
	 * count listed and the count open. */
	uintptr_t top = t->sh_top, known = top < t->sh_end ? top : t->sh_end;
	uint64_t open = (top - t->sh_base) / RVT_SHADOW_FRAME;
	uint64_t listed = (known - t->sh_base) / RVT_SHADOW_FRAME;
	uint64_t room = r->step / 4;
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

void rvt__exit_outer(struct rvt__thread *t, uint64_t value, uintptr_t sp)
{
	assert(t->sh_top == t->sh_base);
	/* The frame at sh_base, popped, is the outermost recorded last (0 when
	 * none was since the shadow began): every frame entered before tracing
	 * and still open lies above it (trace-inline.h, Exit check).  A manual
	 * frame's stack pointer says nothing of the machine stack. */
	uintptr_t last = ((const uintptr_t *)t->sh_base)[0];
	/* Below either: entered since tracing began, its entry not recorded. */
	if (sp < t->sh_floor || (last != RVT_MANUAL_FRAME_SP && sp <= last))
		return;
	t->sh_floor = sp + 1; /* its callers lie above it */
	uint64_t now = rvt__counter() >> t->shift;
	if ((now >> 32) != t->hi)
		rvt__clock(t, now);
	uint64_t ts = now << 32, *p = RVT__LD(t->cur);
	p = put(t, p, value);
	p = put(t, p, ts | RVT_SLOT_EXIT_OF);
	p = put(t, p, ts);
	RVT__ST(t->cur, p);
}

int rvt__exit_repair(struct rvt__thread *t, uint64_t value, uintptr_t sp)
{
	uintptr_t top = t->sh_top;
	assert(top > t->sh_base && top <= t->sh_end);
	uint64_t now = rvt__counter() >> t->shift;
	/* The function returned past these frames: they are gone. */
	while (top > t->sh_base && ((const uintptr_t *)top)[-2] < sp) {
		t->sh_top = top; /* a STACK record still lists the frame */
		if ((now >> 32) != t->hi)
			rvt__clock(t, now); /* also the first of a new segment */
		RVT__ST(t->cur, put(t, RVT__LD(t->cur), now << 32));
		top -= RVT_SHADOW_FRAME;
	}
	t->sh_top = top;
	if (top == t->sh_base) {
		rvt__exit_outer(t, value, sp);
		return 0;
	}
	return ((const uintptr_t *)top)[-1] == (uintptr_t)value;
}
