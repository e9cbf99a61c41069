/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/trace-runtime.h — the inline half of a runtime integration
 * (trace.h, "Runtime integrations"): the test a VM's call and return paths
 * make before calling rvt_enter() / rvt_exit() / rvt_exit_n(), so an
 * untraced thread pays one thread-local load and a branch per frame and the
 * VM does no other work (naming a function, walking its frames) unless the
 * thread is traced.
 *
 * It reads librvtrace's internal per-thread word (trace-inline.h): rebuild
 * the runtime with the matching library, as for inline mode.
 */
#ifndef REARVIEW_TRACE_RUNTIME_H
#define REARVIEW_TRACE_RUNTIME_H

#ifndef REARVIEW_TRACE_INLINE_H
#define RVT_NO_INLINE_HOOKS 1
#endif
#include "trace-inline.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Non-zero when the calling thread is, or is about to start, tracing: only
 * then do rvt_enter() and rvt_exit() record anything.  A false non-zero (a
 * stop in flight) only costs a call that records nothing.  Async-signal-safe.
 */
static inline RVT__NOTRACE int rvt_thread_active(void)
{
	return RVT__UNLIKELY(RVT__LD(rvt__tls.start) != 0);
}

/*
 * Non-zero when `key`, a key from rvt_key_new() (never any other value: the
 * key's first word is read), has been muted: the tracer found its calls on
 * one thread too frequent and too short (RV_TRACE_MUTE, trace.h; issue 14's
 * budget) and the capture has a MUTED record for it.  A VM then records
 * neither the entry of a new frame of that function nor, later, its exit
 * (it remembers per frame whether the entry was recorded), so the ring stays
 * balanced; frames entered before the mute still end with rvt_exit().  One
 * relaxed load; once set, a key stays muted.  Async-signal-safe.
 */
static inline RVT__NOTRACE int rvt_key_muted(const void *key)
{
	return RVT__UNLIKELY(__atomic_load_n((const uint32_t *)key, __ATOMIC_RELAXED) != 0);
}

/* Addresses the budget muted (runtime.c): a bloom filter of 4096 bits the
 * inline test reads, then the exact list behind it. */
#define RVT__ADDR_BLOOM_WORDS 64u
extern __attribute__((visibility("default"))) uint64_t rvt__addr_bloom[RVT__ADDR_BLOOM_WORDS];
__attribute__((visibility("default"))) int rvt__addr_muted_slow(const void *fn);

static inline RVT__NOTRACE unsigned rvt__addr_hash(const void *fn)
{
	return (unsigned)(((uint64_t)(uintptr_t)fn * UINT64_C(0x9e3779b97f4a7c15)) >> 52);
}

/*
 * Non-zero when the native function `fn`, which the runtime traces by its
 * address, has been muted by the tracer's budget (only after
 * rvt_runtime_checks_addresses(), trace.h): a frame started now records
 * neither entry nor exit, like a muted key's (rvt_key_muted()).  One
 * relaxed load and a bit test while `fn` is not muted; once muted it stays
 * muted.  Async-signal-safe.
 */
static inline RVT__NOTRACE int rvt_addr_muted(const void *fn)
{
	unsigned h = rvt__addr_hash(fn);
	uint64_t w = __atomic_load_n(&rvt__addr_bloom[h >> 6], __ATOMIC_ACQUIRE);
	if (RVT__LIKELY(!(w >> (h & 63) & 1)))
		return 0;
	return rvt__addr_muted_slow(fn);
}

/*
 * rvt_enter() and rvt_exit() inlined into the caller: the same slots without
 * the call, for a VM's hottest paths (rvlua: ~4.7 instead of ~5.7 ns per
 * event on a call-bound script, tracer/BENCHMARKS.md "rvlua").  Same rules as
 * rvt_enter() / rvt_exit(); a few dozen bytes of code per use, so call them
 * after rvt_thread_active() in a rarely taken branch.
 */
static inline __attribute__((always_inline)) RVT__NOTRACE void rvt_enter_inline(const void *key)
{
	rvt__trace_point(key, 1, RVT_MANUAL_FRAME_SP);
}

static inline __attribute__((always_inline)) RVT__NOTRACE void rvt_exit_inline(void)
{
	rvt__trace_point(0, 0, 0);
}

#ifdef __cplusplus
}
#endif
#endif
