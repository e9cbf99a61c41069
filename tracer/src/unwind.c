/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind.c — keeps the recorded call stack true across non-local exits:
 * longjmp and its relatives, C++ exceptions caught by code whose cleanups
 * write no exits (clang's -finstrument-functions-after-inlining), and thread
 * exit (pthread_exit, cancellation).
 *
 * Every trace point keeps a shadow stack of the open frames (stack pointer
 * and method value) off the ring (trace-inline.h, "Shadow stack").  The
 * stack grows down, so when control lands in a frame whose stack pointer is
 * `sp`, every shadow frame whose recorded stack pointer is below `sp` is
 * gone.  rvt_unwind_below()
 * writes one ordinary exit slot (current time) for each of them and pops
 * them, so the ring stays a well-formed sequence and the decoder needs no
 * help for these cases:
 *   - longjmp, _longjmp, siglongjmp, __longjmp_chk are interposed: the target
 *     is the stack pointer saved in the jmp_buf (glibc mangles it; the key is
 *     found once, by calling the real _setjmp at a known stack pointer at two
 *     depths — if the two disagree, jumps are not followed);
 *   - the C++ and C personality routines (__gxx_personality_v0,
 *     __gcc_personality_v0) are interposed: when the real one has a frame's
 *     landing pad run — a cleanup (destructors) or a handler — every frame
 *     below that frame's stack pointer (the unwinder's CFA of the frame
 *     below it) is gone before the landing pad's code runs, so a destructor
 *     called there nests under its own frame.  gcc's instrumented frames
 *     write their exits in cleanups of their own and are gone already;
 *     clang's (-finstrument-functions-after-inlining) write none;
 *   - __cxa_begin_catch is interposed: the catching frame's stack pointer is
 *     the interposer's CFA (frames gcc already closed are no longer there);
 *   - at thread exit (the key destructor, tracer.c) every open frame is closed.
 * What cannot be known: frames past the shadow stack's capacity
 * (RVT_SHADOW_FRAMES) when the target lies inside them (they stay open), and
 * jumps to another stack (target below the current stack pointer: ignored).
 * A fully static program must be linked with
 * -Wl,--undefined=__libc_siglongjmp (its jumps go there; __longjmp_chk's
 * stack check is then skipped).
 * The decoder repairs what reaches it unbalanced (FORMAT.md §2, "Repair").
 *
 * Invariants: runs on the traced thread; touches the ring and the shadow only
 * with `busy` set after checking start == seen (as a trace point does), so a
 * handover cannot tear it; no lock, allocation or system call on the
 * path from an interposer to the real function once initialised.
 *
 * This file is compiled without -finstrument-functions and without
 * _FORTIFY_SOURCE (which would rename longjmp to __longjmp_chk here).
 */
#undef _FORTIFY_SOURCE
#include "tracer-int.h"

#include <assert.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unwind.h>

typedef void (*jump_fn)(struct __jmp_buf_tag *env, int val);
typedef void *(*catch_fn)(void *exc);
typedef _Unwind_Reason_Code (*personality_fn)(int version, _Unwind_Action actions,
					      _Unwind_Exception_Class cls,
					      struct _Unwind_Exception *exc,
					      struct _Unwind_Context *ctx);

/* The C library's entries, found at load (or at first use, for a jump made
 * by a constructor that ran before ours). */
static _Atomic(jump_fn) real_longjmp, real__longjmp, real_siglongjmp, real_longjmp_chk;
/* A fully static program has no RTLD_NEXT: there the C library's own entry
 * (not exported by libc.so, so NULL in a dynamic program) is called, when
 * the program is linked with -Wl,--undefined=__libc_siglongjmp. */
extern void __libc_siglongjmp(struct __jmp_buf_tag *env, int val) __attribute__((weak));
static _Atomic(catch_fn) real_begin_catch;
static _Atomic(personality_fn) real_gxx_personality, real_gcc_personality;
static uintptr_t jb_key;
static int jb_ok; /* jb_key was found consistently */

void rvt_unwind_below(uintptr_t limit)
{
	struct rvt__thread *t = &rvt__tls;
	/* The trace point's own protocol (trace-inline.h, DESIGN): busy first,
	 * then start read again; a new ring is adopted, a stop honoured. */
	if (RVT__LD(t->start) == 0 || RVT__LD(t->busy))
		return;
	RVT__ST(t->busy, 1);
	/* Partner: the control side's membarrier in handover_locked(). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uintptr_t s = RVT__LD(t->start);
	if ((s != RVT__LD(t->seen) || s == 0) && !rvt__adopt(t)) {
		RVT__ST_REL(t->busy, 0);
		return;
	}
	uintptr_t top = t->sh_top;
	uintptr_t known = top < t->sh_end ? top : t->sh_end;
	uintptr_t keep = known;
	while (keep > t->sh_base && ((const uintptr_t *)keep)[-2] < limit)
		keep -= RVT_SHADOW_FRAME;
	if (keep == known)
		keep = top; /* nothing recorded is gone: frames past the end are unknown */
	assert(keep >= t->sh_base && keep <= top);
	if (keep < top) {
		uint64_t now = rvt__counter() >> t->shift;
		if ((now >> 32) != t->hi)
			rvt__clock(t, now);
		uint64_t ts = now << 32;
		uint64_t *p = RVT__LD(t->cur);
		for (uintptr_t w = keep; w < top; w += RVT_SHADOW_FRAME) {
			*p = ts;
			if (++p == t->bound)
				p = rvt__bound(t, p);
		}
		t->sh_top = keep;
		RVT__ST(t->cur, p);
	}
	/* Partner: the control side's acquire load of busy (DESIGN). */
	RVT__ST_REL(t->busy, 0);
}

/* glibc's jmp_buf: the saved stack pointer's word and its demangling. */
#if defined(__x86_64__)
#define JB_SP 6
static uintptr_t jb_demangle(uintptr_t v)
{
	return ((v >> 17) | (v << 47)) ^ jb_key;
}
static uintptr_t jb_key_of(uintptr_t mangled, uintptr_t sp)
{
	return ((mangled >> 17) | (mangled << 47)) ^ sp;
}
#elif defined(__aarch64__)
#define JB_SP 13
static uintptr_t jb_demangle(uintptr_t v)
{
	return v ^ jb_key;
}
static uintptr_t jb_key_of(uintptr_t mangled, uintptr_t sp)
{
	return mangled ^ sp;
}
#endif

#ifdef JB_SP
/* The key of the jmp_buf saved here; `pad` moves this frame down. */
__attribute__((noinline)) static uintptr_t calibrate(volatile char *pad)
{
	jmp_buf jb;
	uintptr_t sp = rvt__sp();
	if (_setjmp(jb) != 0)
		abort(); /* never jumped to */
	pad[0] = 0;
	return jb_key_of((uintptr_t)jb[0].__jmpbuf[JB_SP], sp);
}

__attribute__((noinline)) static uintptr_t calibrate_deeper(void)
{
	volatile char pad[4096];
	return calibrate(pad);
}
#endif

/* The stack pointer a jump to `env` lands at, or 0 when unknown. */
static uintptr_t jump_target(struct __jmp_buf_tag *env)
{
#ifdef JB_SP
	if (jb_ok)
		return jb_demangle((uintptr_t)env[0].__jmpbuf[JB_SP]);
#else
	(void)env;
#endif
	return 0;
}

__attribute__((constructor)) static void unwind_init(void)
{
	atomic_store(&real_longjmp, (jump_fn)dlsym(RTLD_NEXT, "longjmp"));
	atomic_store(&real__longjmp, (jump_fn)dlsym(RTLD_NEXT, "_longjmp"));
	atomic_store(&real_siglongjmp, (jump_fn)dlsym(RTLD_NEXT, "siglongjmp"));
	atomic_store(&real_longjmp_chk, (jump_fn)dlsym(RTLD_NEXT, "__longjmp_chk"));
#ifdef JB_SP
	volatile char pad[1];
	jb_key = calibrate(pad);
	jb_ok = calibrate_deeper() == jb_key;
#endif
}

__attribute__((noreturn)) static void jump(_Atomic(jump_fn) *slot, const char *name,
					   struct __jmp_buf_tag *env, int val)
{
	uintptr_t target = jump_target(env);
	if (target > rvt__sp())
		rvt_unwind_below(target);
	jump_fn real = atomic_load_explicit(slot, memory_order_relaxed);
	if (!real) {
		real = (jump_fn)dlsym(RTLD_NEXT, name);
		atomic_store_explicit(slot, real, memory_order_relaxed);
	}
	if (!real)
		real = __libc_siglongjmp;
	if (!real) {
		/* Only a fully static program gets here (see above). */
		fprintf(stderr,
			"librvtrace: %s: the C library's is not found (static link: add "
			"-Wl,--undefined=__libc_siglongjmp)\n",
			name);
		abort();
	}
	real(env, val);
	__builtin_unreachable();
}

RVT_API void longjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(&real_longjmp, "longjmp", env, val);
}

RVT_API void _longjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(&real__longjmp, "_longjmp", env, val);
}

RVT_API void siglongjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(&real_siglongjmp, "siglongjmp", env, val);
}

RVT_API void __longjmp_chk(struct __jmp_buf_tag env[1], int val);
void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
{
	jump(&real_longjmp_chk, "__longjmp_chk", env, val);
}

RVT_API void *__cxa_begin_catch(void *exc);
void *__cxa_begin_catch(void *exc)
{
	rvt_unwind_below((uintptr_t)__builtin_dwarf_cfa());
	catch_fn real = atomic_load_explicit(&real_begin_catch, memory_order_relaxed);
	if (!real) {
		real = (catch_fn)dlsym(RTLD_NEXT, "__cxa_begin_catch");
		if (!real) {
			fprintf(stderr,
				"librvtrace: __cxa_begin_catch: the C++ runtime's is not found\n");
			abort();
		}
		atomic_store_explicit(&real_begin_catch, real, memory_order_relaxed);
	}
	return real(exc);
}

/* The next definition of a personality routine (the C++ or C runtime's):
 * after this object in the search order, else in the library that defines
 * it when that was loaded later or is not in the global scope. */
static personality_fn next_personality(_Atomic(personality_fn) *slot, const char *name,
				       const char *lib)
{
	personality_fn real = atomic_load_explicit(slot, memory_order_relaxed);
	if (!real) {
		real = (personality_fn)dlsym(RTLD_NEXT, name);
		void *h = real ? NULL : dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			real = (personality_fn)dlsym(h, name);
			dlclose(h); /* still loaded: NOLOAD found it so */
		}
		if (!real) {
			fprintf(stderr, "librvtrace: %s: the runtime's is not found\n", name);
			abort();
		}
		atomic_store_explicit(slot, real, memory_order_relaxed);
	}
	return real;
}

/* The real personality decided: in the cleanup phase, INSTALL_CONTEXT means
 * this frame's landing pad runs next, with the stack pointer it had at the
 * call that unwound — the CFA of the frame below it, which the unwinder
 * holds while it examines this one.  Shadow frames below it are gone. */
static _Unwind_Reason_Code landing(_Unwind_Reason_Code rc, _Unwind_Action actions,
				   struct _Unwind_Context *ctx)
{
	if (rc == _URC_INSTALL_CONTEXT && (actions & _UA_CLEANUP_PHASE))
		rvt_unwind_below((uintptr_t)_Unwind_GetCFA(ctx));
	return rc;
}

RVT_API _Unwind_Reason_Code __gxx_personality_v0(int version, _Unwind_Action actions,
						 _Unwind_Exception_Class cls,
						 struct _Unwind_Exception *exc,
						 struct _Unwind_Context *ctx);
_Unwind_Reason_Code __gxx_personality_v0(int version, _Unwind_Action actions,
					 _Unwind_Exception_Class cls, struct _Unwind_Exception *exc,
					 struct _Unwind_Context *ctx)
{
	personality_fn real =
		next_personality(&real_gxx_personality, "__gxx_personality_v0", "libstdc++.so.6");
	return landing(real(version, actions, cls, exc, ctx), actions, ctx);
}

RVT_API _Unwind_Reason_Code __gcc_personality_v0(int version, _Unwind_Action actions,
						 _Unwind_Exception_Class cls,
						 struct _Unwind_Exception *exc,
						 struct _Unwind_Context *ctx);
_Unwind_Reason_Code __gcc_personality_v0(int version, _Unwind_Action actions,
					 _Unwind_Exception_Class cls, struct _Unwind_Exception *exc,
					 struct _Unwind_Context *ctx)
{
	personality_fn real =
		next_personality(&real_gcc_personality, "__gcc_personality_v0", "libgcc_s.so.1");
	return landing(real(version, actions, cls, exc, ctx), actions, ctx);
}
