/*
 * tp-slow.c — the traced thread's rare paths out of a trace point: adopting
 * a newly published ring and running its side of a stop (trace-inline.h
 * describes the protocol).
 *
 * Invariants: runs only on the traced thread or in its signal handler; no
 * call, lock, allocation or system call.  On x86-64 this file is compiled
 * with -mgeneral-regs-only (tracer/lib.mk): the inline-mode stubs in
 * hooks-x86_64.S promise their callers that every register survives and save
 * only the general-purpose ones, so nothing here may touch SSE/AVX state.
 *
 * This file is compiled without -finstrument-functions; nothing here traces.
 */
#include "tracer-int.h"

/* Takes the ring published in start.  Runs on the traced thread. */
int rvt__adopt(struct rvt__thread *t)
{
	if (RVT__LD(t->busy))
		return 0;
	RVT__ST(t->busy, 1);
	atomic_signal_fence(memory_order_seq_cst);
	uintptr_t s = atomic_load_explicit(&t->start, memory_order_acquire);
	if (s != 0 && s != RVT__LD(t->seen)) {
		struct rvt_ring *r = (struct rvt_ring *)s;
		t->base = r->slots;
		t->limit = r->slots + r->nslots;
		t->method_base = rvt_method_base;
		t->shift = rvt_clock.shift;
		t->sh_base = (uintptr_t)r->shadow;
		t->sh_end = t->sh_base + RVT_SHADOW_WORDS * sizeof(uintptr_t);
		t->sh_top = t->sh_base;
		RVT__ST(t->cur, r->slots + r->end_pos);
		RVT__ST(t->wrapped, r->wrapped);
		RVT__ST(t->seen, s);
	}
	atomic_signal_fence(memory_order_seq_cst);
	RVT__ST(t->busy, 0);
	return s != 0;
}

/* The thread's side of a stop: record the end, clear start, publish stop.
 * Caller guarantees no trace point of this thread is mid-write. */
static void thread_finish_stop(struct rvt__thread *t)
{
	uintptr_t s = atomic_load_explicit(&t->start, memory_order_acquire);
	if (s != 0 && s != RVT__LD(t->seen)) {
		RVT__ST(t->busy, 0);
		rvt__adopt(t);
		RVT__ST(t->busy, 1);
	}
	uint64_t end = 0;
	struct rvt_ring *r = (struct rvt_ring *)RVT__LD(t->seen);
	if (r) {
		end = (uint64_t)(RVT__LD(t->cur) - t->base);
		r->end_pos = end;
		r->wrapped = RVT__LD(t->wrapped);
	}
	RVT__ST(t->seen, 0);
	RVT__ST(t->start, 0);
	atomic_store_explicit(&t->stop, end + 2, memory_order_release);
}

void rvt__stop_slow(struct rvt__thread *t)
{
	if (RVT__LD(t->busy))
		return;
	RVT__ST(t->busy, 1);
	atomic_signal_fence(memory_order_seq_cst);
	if (RVT__LD(t->stop) == 1)
		thread_finish_stop(t);
	atomic_signal_fence(memory_order_seq_cst);
	RVT__ST(t->busy, 0);
}
