/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/trace-inline.h — the trace point, for inline mode.
 *
 * Force-include it into every translation unit of an instrumented program
 * (gcc: `-finstrument-functions -include rearview/trace-inline.h`) and gcc
 * inlines __cyg_profile_func_enter/exit into each function body instead of
 * calling librvtrace's out-of-line hooks (call mode).  Both modes run the
 * same algorithm (rvt__trace_point() below; on x86-64 and aarch64 the
 * hand-written hooks follow it slot for slot) and write identical slots
 * (FORMAT.md §1).
 *
 * Transparency: a force-included header comes before the file's first line,
 * so whatever it does happens to every program built through rvcc.  This
 * one therefore includes no header and defines no feature macro (a source's
 * own `#define _GNU_SOURCE` or config.h still decides what the C library
 * declares), and it is written in the common subset of every dialect gcc
 * and clang accept — C89 with GNU keywords spelled with underscores
 * (__inline__, __asm__, __attribute__((__x__))), block comments only, the
 * compiler's predefined types (__UINT64_TYPE__, __UINTPTR_TYPE__) and
 * __atomic built-ins instead of <stdint.h> and <stdatomic.h>, declarations
 * before statements, no variadic macro — and in C++.  It is a system header
 * (#pragma GCC system_header) so that no warning option a build turns on can
 * make a configure probe answer differently; tests/rvcc checks it is clean
 * under strict warnings all the same (RVT__CHECK_WARNINGS drops the pragma).
 * Every name it adds starts with rvt__, RVT__ or RVT_, or is one of gcc's
 * instrumentation hooks; what it defines in the program (the gate, below)
 * is hidden, so the program exports nothing new.
 *
 * The per-thread state below is librvtrace's internal ABI (names start with
 * rvt__); it may change between library versions, so rebuild inline-mode
 * programs with the matching library.
 *
 * Protocol (Hubble Fig. 4, without a signal).  One word is shared:
 *   start  0 = off; otherwise the address of the ring the thread must trace
 *          into.  Written only by the control side (release).
 * Everything else belongs to the thread.  `busy` is 1 while a trace point
 * (or the adoption of a ring inside one) touches the ring or the fields
 * below; the control side only reads it.  A trace point nested in a signal
 * handler that interrupted a trace point sees busy and is dropped, so it
 * can never tear an entry or misplace the end position.  busy is 2 while
 * librvtrace's own code runs on the thread (an allocation of the tracer's
 * is no call of the program's): trace points are dropped the same way, and
 * the control side, which waits for a 1 to end, need not wait for a 2 —
 * the next trace point's store of 1 comes after it (DESIGN).  No read-modify-
 * write, lock, call or system call on the path; the shared words are read
 * and written only atomically (the compiler's __atomic built-ins, which C11
 * atomics are made of), relaxed but for `busy = 0` (release) and the
 * adoption's load of `start` (acquire).
 *
 * DESIGN — why a handover needs no signal (asymmetric Dekker, membarrier).
 * The control side (tracer.c, handover_locked()) stores the new `start`
 * (0 to stop, or a fresh ring to capture and continue), then runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), then loads `busy` (acquire)
 * until it reads no 1.  A trace point stores busy = 1, then (after a compiler-
 * only fence) loads `start` again and compares it with `seen`, the ring it
 * writes into.  The membarrier puts a full fence into the thread's
 * instruction stream at some point M while the syscall runs: if M comes
 * before the thread's store of busy = 1, its load of start comes after M and
 * sees the new value (it adopts the new ring, or stops); if M comes after
 * that load, the store of busy = 1 precedes M and the control side's load
 * after the syscall sees it, and waits for the trace point's release store
 * busy = 0, which orders every slot and `cur` before it.  Either way, once
 * the control side has read busy == 0 after the barrier, no trace point
 * writes the old ring again.  Reading 2 means the same: the thread is in
 * librvtrace's own code, which writes no slot, and the 2 was still there
 * after M, so the next trace point's store of 1, and its load of start,
 * come after M.  A thread blocked in a system call is not
 * running: the barrier costs it nothing and interrupts nothing.  A trace
 * point that finds start changed adopts the new ring (rvt__adopt) and writes
 * its event there, so a capture that switches rings loses no call.
 *
 * The old ring's end: the thread may adopt the new ring at any moment, even
 * while the control side reads, so adoption is a small seqlock: rvt__adopt
 * saves where it left the old ring in prev_ring/prev_cur/prev_wrapped, sets
 * seen = RVT__SEEN_CHANGING, rewrites cur and wrapped (release), then
 * publishes seen = the new ring (release).  The control side (ring_end_locked
 * in tracer.c) reads seen (acquire): the old ring → it reads cur and wrapped
 * (acquire) and accepts them only if seen is still the old ring afterwards
 * (had it read an adoption's store, that store's release would make the
 * earlier seen = CHANGING visible); CHANGING → it waits; anything else → the
 * thread left the old ring (prev_* say where, if prev_ring is it) or never
 * entered it.  Only the control side, under its lock, changes start, so the
 * thread adopts at most once while it reads.
 *
 * ThreadSanitizer does not model membarrier; it does not need to: the data
 * handed over (slots, cur, wrapped) is ordered by the release store of
 * busy = 0 and the control side's acquire load of it, and a new ring by the
 * release store of start and the adoption's acquire load.  The tsan build
 * uses the portable C trace point (hooks.c) with these same atomics.
 *
 * Exact time (FORMAT.md §1): `hi` is the high word (counter >> shift) >> 32
 * of the last slot written; when the counter's high word differs, the trace
 * point first writes a CLOCK record (rvt__clock) carrying the full value.
 * Adopting a ring and reaching a bound (wrapping included) set hi = ~0, so
 * every ring, every lap and every segment of it starts with one.
 *
 * Shadow stack (unwind.c, the STACK record): inside the busy window, after
 * its slot, an entry stores the frame {sp, v} — `sp` the instrumented
 * function's stack pointer, `v` its method value — at sh_top when sh_top <
 * sh_end and advances sh_top by one frame (two words) either way; an exit
 * steps sh_top back by one frame unless it is at sh_base.  So (sh_top -
 * sh_base) / 16 is the number of frames entered and still open, and the
 * frames below min(sh_top, sh_end) are theirs, outermost first — what the
 * longjmp / exception / thread-exit interposers unwind by, what the STACK
 * record lists (FORMAT.md §1) and what the budget reads to know whether a
 * muted function still has a frame open (mute.c).  An exit that finds
 * sh_top at sh_base closes a frame entered before tracing began (or whose
 * entry was lost): it writes an EXIT_OF pair naming `fn` before its exit
 * slot, so the frame is named although its entry is not in the ring.  The
 * shadow belongs to the thread (one per registry record, tracer.c), not to
 * a ring: a capture's switch to a spare ring keeps it (the ring says
 * carry_shadow), a start after tracing was off begins it empty.  Private to
 * the thread.
 *
 * Exit check (x86-64, hooks-x86_64.S): an exit names its function (inline
 * mode passes it to rvt__inl_exit in %rax, call mode has it as the hook's
 * first argument), and the hand-written exit writes its slot and pops only
 * when the innermost recorded frame is that function's.  Otherwise the
 * function's entry was not recorded (its call sites were muted at run time,
 * mute.c): the exit writes nothing — unless the exiting function's stack
 * pointer lies above the innermost frame's, when the frames above it lost
 * their exits (an entry recorded just before its exit sites were muted)
 * and rvt__exit_repair (tp-slow.c) closes them first.  An exit that finds
 * no recorded frame open (rvt__exit_outer) writes its EXIT_OF pair and slot
 * only if its stack pointer lies above every frame known to have been
 * entered since tracing began: above the outermost recorded frame last
 * pushed (the stale frame at sh_base) and above the last such exit
 * (sh_floor); a muted function called from a frame entered before tracing
 * lies below one of them and writes nothing.  So entries and exits stay
 * paired whatever was muted when; frames past the shadow's capacity (and
 * the C trace point below, which no muted site reaches) exit unchecked.
 *
 * Segments (FORMAT.md §1, STACK): a trace point compares its slot pointer
 * with `bound`, not with the ring's end `limit`: bound is the next multiple
 * of `step` bytes from the ring's base (limit at most), a divisor of the
 * ring's segment.  Reaching it (rvt__bound) wraps at limit and sets hi = ~0,
 * so the next trace point calls rvt__clock: at a segment's start its CLOCK
 * record comes first and carries the STACK record of the frames open there
 * (every segment of a ring begins with the names of the frames open at its
 * start, at no cost to the common path); at a bound inside a segment it
 * writes nothing unless the counter's high word changed, and times the
 * thread for the trace budget (librvtrace's rvt__wake).
 */
#ifndef REARVIEW_TRACE_INLINE_H
#define REARVIEW_TRACE_INLINE_H

/* Indented, as -Wtraditional asks of a #pragma; a traditional preprocessor
 * (-traditional-cpp, which leaves __STDC__ undefined) knows no #pragma and
 * reads only directives whose # is in the first column. */
#if defined(__STDC__) && !defined(RVT__CHECK_WARNINGS)
/* clang-format off */
 #pragma GCC system_header
/* clang-format on */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The compiler's own fixed-width types (what <stdint.h> is made of);
 * __extension__: a 32-bit target's 64-bit type is long long, which C89
 * does not have. */
__extension__ typedef __UINT64_TYPE__ rvt__u64;
typedef __UINTPTR_TYPE__ rvt__uptr;

#define RVT__NOTRACE __attribute__((__no_instrument_function__))
/* gnu_inline + always_inline: always inlined, never emitted out of line. */
#define RVT__ALWAYS __attribute__((__gnu_inline__, __always_inline__, __no_instrument_function__))

/* The words marked "shared" are only ever accessed through these (or the
 * __atomic built-ins directly): relaxed by default, acquire and release
 * where the protocol above says so. */
struct rvt__thread {
	rvt__uptr start;      /* shared, see above */
	rvt__u64 hi;	      /* high word of the last slot's counter */
	rvt__u64 *cur;	      /* shared: next slot to write */
	rvt__uptr seen;	      /* shared: the ring cur/base/limit belong to */
	int busy;	      /* shared: 1 a trace point writes, 2 librvtrace's code runs */
	int wrapped;	      /* shared: cur has wrapped at least once */
	rvt__u64 *base;	      /* first slot of the ring */
	rvt__u64 *limit;      /* one past the last slot */
	rvt__u64 method_base; /* FORMAT.md method_base */
	unsigned shift;	      /* FORMAT.md timestamp shift */
	rvt__uptr sh_top;     /* shadow stack: next frame (may pass sh_end) */
	rvt__uptr sh_base;    /* shadow stack: first frame */
	rvt__uptr sh_end;     /* shadow stack: one past the last frame */
	rvt__u64 *bound;      /* where the slot pointer stops next (<= limit) */
	rvt__uptr step;	      /* bytes between two bounds */
	/* Where the thread left its previous ring when it last adopted one
	 * (DESIGN): read by the control side after seeing seen change. */
	rvt__uptr prev_ring; /* shared */
	rvt__u64 *prev_cur;
	int prev_wrapped;
	/* Exits with no recorded frame open (Exit check): no frame entered
	 * before tracing began lies below this stack pointer. */
	rvt__uptr sh_floor;
};

/* `seen` while rvt__adopt rewrites the thread's ring fields (no ring is at
 * address 1). */
#define RVT__SEEN_CHANGING ((rvt__uptr)1)

extern __thread struct rvt__thread rvt__tls __attribute__((__tls_model__("initial-exec")));

/* `start` with this bit set: the same ring, but every trace point takes the
 * adoption path, where the budget learns which call site calls which hook
 * for which function (mute.c).  Rings are 8-byte aligned. */
#define RVT__START_LEARN ((rvt__uptr)1)

/* With busy set: adopts the ring published in `start` (without
 * RVT__START_LEARN) if it is not `seen`; returns 0 if tracing must not go on
 * (start is 0). */
__attribute__((__visibility__("default"))) int rvt__adopt(struct rvt__thread *t);
/* A module's gate (x86-64 inline mode, "The gate" below): its constructor
 * hands it to librvtrace, which sets it to whether some thread traces, and
 * its destructor takes it back. */
__attribute__((__visibility__("default"))) void rvt__gate_register(unsigned char *gate);
__attribute__((__visibility__("default"))) void rvt__gate_unregister(unsigned char *gate);
/* With busy set: writes a CLOCK record for `now` (counter >> shift) and the
 * STACK record of the open frames, sets hi; returns `now`. */
__attribute__((__visibility__("default"))) rvt__u64 rvt__clock(struct rvt__thread *t, rvt__u64 now);
/* With busy set: the slot pointer `p` reached t->bound; wraps at the ring's
 * end, schedules a CLOCK and STACK for the next trace point and sets the
 * next bound.  Returns where the next slot goes. */
__attribute__((__visibility__("default"))) rvt__u64 *rvt__bound(struct rvt__thread *t, rvt__u64 *p);

#define RVT__LD(x)	  __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RVT__ST(x, v)	  __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define RVT__LD_ACQ(x)	  __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define RVT__ST_REL(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define RVT__LIKELY(x)	  __builtin_expect(!!(x), 1)
#define RVT__UNLIKELY(x)  __builtin_expect(!!(x), 0)

/* The counter the trace point reads: x86-64's TSC, aarch64's virtual
 * counter; elsewhere CLOCK_MONOTONIC_RAW where the includer has <time.h>
 * (librvtrace).  Without one there is no inline trace point: the program
 * calls librvtrace's hooks (call mode). */
#if defined(__x86_64__) || defined(__aarch64__) || defined(CLOCK_MONOTONIC_RAW)
#define RVT__HAVE_COUNTER 1
#endif

#ifdef RVT__HAVE_COUNTER
extern __inline__ RVT__ALWAYS rvt__u64 rvt__counter(void);
extern __inline__ RVT__ALWAYS rvt__u64 rvt__counter(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	rvt__u64 v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (rvt__u64)ts.tv_sec * 1000000000u + (rvt__u64)ts.tv_nsec;
#endif
}
#endif

/* The stack pointer of the function this is inlined into. */
extern __inline__ RVT__ALWAYS rvt__uptr rvt__sp(void);
extern __inline__ RVT__ALWAYS rvt__uptr rvt__sp(void)
{
	rvt__uptr sp;
#if defined(__x86_64__)
	__asm__("movq %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
	__asm__("mov %0, sp" : "=r"(sp));
#else
	sp = (rvt__uptr)__builtin_frame_address(0);
#endif
	return sp;
}

/* The stack pointer a manual (rvt_enter) frame records on the shadow
 * stack: above any jump target, so only its runtime unwinds it. */
#define RVT_MANUAL_FRAME_SP (~(rvt__uptr)0)

#ifdef RVT__HAVE_COUNTER
/*
 * One trace point: an entry of `fn` when `entry`, else an exit of `fn` (0
 * when unknown); `sp` is the instrumented function's stack pointer (entries
 * only; see Shadow stack).
 * The hot branch (tracing off) is one TLS load and a compare (the C trace
 * point: RVT_INLINE_PORTABLE, ThreadSanitizer, aarch64; x86-64's inline
 * stubs check the module's gate first, below).
 */
extern __inline__ RVT__ALWAYS void rvt__trace_point(const void *fn, int entry, rvt__uptr sp);
extern __inline__ RVT__ALWAYS void rvt__trace_point(const void *fn, int entry, rvt__uptr sp)
{
	struct rvt__thread *t = &rvt__tls;
	rvt__uptr s, top;
	rvt__u64 now, ts, v, *p, *bound;
	if (RVT__LIKELY(RVT__LD(t->start) == 0))
		return;
	if (RVT__UNLIKELY(RVT__LD(t->busy)))
		return; /* nested in a signal handler that interrupted a trace point */
	RVT__ST(t->busy, 1);
	/* Partner: the control side's membarrier in handover_locked() (DESIGN). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s = RVT__LD(t->start);
	if (RVT__UNLIKELY(s != RVT__LD(t->seen) || s == 0) && !rvt__adopt(t)) {
		RVT__ST(t->busy, 0);
		return; /* stopped since the first load */
	}
	now = rvt__counter() >> t->shift;
	if (RVT__UNLIKELY((now >> 32) != t->hi))
		rvt__clock(t, now);
	ts = now << 32;
	p = RVT__LD(t->cur);
	bound = t->bound; /* read after rvt__clock, which may move it */
	v = 0;
	top = t->sh_top;
	if (entry) {
		v = (rvt__uptr)fn;
		v -= t->method_base;
		if (RVT__LIKELY((v >> 32) == 0)) {
			*p = ts | v;
		} else {
			*p = v;
			if (RVT__UNLIKELY(++p == bound)) {
				p = rvt__bound(t, p);
				bound = t->bound;
			}
			*p = ts | 1u;
		}
	} else if (RVT__UNLIKELY(top == t->sh_base) && fn) {
		/* No traced frame is open: an EXIT_OF pair (marker 6) names the
		 * frame this exit closes; the shadow stays empty. */
		v = (rvt__uptr)fn;
		*p = v - t->method_base;
		if (++p == bound) {
			p = rvt__bound(t, p);
			bound = t->bound;
		}
		*p = ts | 6u;
		if (++p == bound) {
			p = rvt__bound(t, p);
			bound = t->bound;
		}
		*p = ts;
		top += 2 * sizeof(rvt__uptr); /* undone by the pop below */
	} else {
		*p = ts;
	}
	if (RVT__UNLIKELY(++p == bound))
		p = rvt__bound(t, p);
	if (entry) {
		if (RVT__LIKELY(top < t->sh_end)) {
			((rvt__uptr *)top)[0] = sp;
			((rvt__uptr *)top)[1] = v;
		}
		t->sh_top = top + 2 * sizeof(rvt__uptr);
	} else if (RVT__LIKELY(top != t->sh_base)) {
		t->sh_top = top - 2 * sizeof(rvt__uptr);
	}
	RVT__ST(t->cur, p);
	/* Partner: the control side's acquire load of busy (DESIGN). */
	RVT__ST_REL(t->busy, 0);
}
#endif

/*
 * On x86-64 (not under ThreadSanitizer, which must see the accesses) the
 * inlined part of a trace point is only the off check, in two steps, and a
 * traced thread calls librvtrace's rvt__inl_enter/exit (hooks-x86_64.S),
 * which write the slot and preserve every register but %r11.
 *
 *   gate   `cmpb $0, rvt__gate(%rip); jne` — the module's gate, a byte of
 *          its own (below), is 0 while no thread of the process traces:
 *          an untraced process pays one load, compare and branch per trace
 *          point, with no TLS access, register or GOT load.
 *   check  (out of line, reached only through an open gate) the thread's
 *          own switch: `movq rvt__tls@gottpoff(%rip), %r11; cmpq $0,
 *          %fs:(%r11); jne` to the call — clobbering only the flags and
 *          %r11, which the stub may clobber too.
 *
 * The instrumented function therefore needs no extra register or spill for
 * its trace points.  The call first steps below the x86-64 red zone, which
 * the function may be using since the compiler sees no call.  The budget
 * (mute.c) mutes a trace point by turning its gate's `jne` into a `jb`.
 *
 * The gate.  Every translation unit's first trace point defines, once
 * (.ifndef), a COMDAT group `rvt__gate` that the linker keeps once per
 * executable or shared library: the byte rvt__gate, and a constructor and
 * destructor (in .init_array/.fini_array) that hand its address to
 * librvtrace (rvt__gate_register/unregister, tracer.c), which opens every
 * registered gate while some thread traces and closes them when none does.
 * The byte is a hidden symbol and the constructor's labels are the
 * assembler's own: the module exports nothing new.  A module registered
 * with a library that has no room for its gate has the gate opened for good
 * (the check alone then decides, as before).  The module's constructors
 * that run before the gate's record nothing, even in a process that traces
 * from its start.
 * Define RVT_INLINE_PORTABLE to inline the whole C trace point instead.
 */
#if defined(__SANITIZE_THREAD__)
#define RVT__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RVT__TSAN 1
#endif
#endif
#if defined(__x86_64__) && !defined(RVT__TSAN) && !defined(RVT_INLINE_PORTABLE)
#define RVT__INLINE_STUBS 1
#endif

#if !defined(RVT_NO_INLINE_HOOKS) && defined(RVT__HAVE_COUNTER)
void __cyg_profile_func_enter(void *fn, void *call_site) RVT__NOTRACE;
void __cyg_profile_func_exit(void *fn, void *call_site) RVT__NOTRACE;
#ifdef RVT__INLINE_STUBS
#ifdef __clang__
#define RVT__COLD_LABEL
#else
#define RVT__COLD_LABEL __attribute__((__cold__))
#endif
/* The gate's definitions (see above), each emitted once per translation
 * unit (.ifndef), each template under the 509 characters C90 promises: the
 * byte, by the gate check; its constructor and destructor, with their
 * .init_array/.fini_array entries, by the check's out-of-line part (no code
 * there: they go to sections of their own).  endbr64 is a no-op where
 * indirect branch tracking is off or unknown. */
#define RVT__GATE_BYTE                                                     \
	".ifndef rvt__gate\n\t"                                            \
	".pushsection .bss.rvt__gate,\"awG\",@nobits,rvt__gate,comdat\n\t" \
	".globl rvt__gate\n\t"                                             \
	".hidden rvt__gate\n"                                              \
	"rvt__gate: .zero 1\n\t"                                           \
	".popsection\n\t"                                                  \
	".endif\n\t"
#define RVT__GATE_HOOKS                                                     \
	".ifndef .Lrvt__gate_init\n"                                        \
	".pushsection .text.rvt__gate,\"axG\",@progbits,rvt__gate,comdat\n" \
	".Lrvt__gate_init:endbr64\n"                                        \
	"leaq rvt__gate(%%rip),%%rdi\n"                                     \
	"jmp rvt__gate_register@PLT\n"                                      \
	".Lrvt__gate_fini:endbr64\n"                                        \
	"leaq rvt__gate(%%rip),%%rdi\n"                                     \
	"jmp rvt__gate_unregister@PLT\n"                                    \
	".section .init_array,\"awG\",@init_array,rvt__gate,comdat\n"       \
	".balign 8\n"                                                       \
	".quad .Lrvt__gate_init\n"                                          \
	".section .fini_array,\"awG\",@fini_array,rvt__gate,comdat\n"       \
	".balign 8\n"                                                       \
	".quad .Lrvt__gate_fini\n"                                          \
	".popsection\n"                                                     \
	".endif"
/* Jumps to the label `open` when the module's gate is open.
 * (No # or ## in these macros: -traditional-cpp has neither.) */
#define RVT__IF_GATE_GOTO_OPEN                                      \
	__asm__ goto(RVT__GATE_BYTE "cmpb $0, rvt__gate(%%rip)\n\t" \
				    "jne %l[open]"                  \
		     :                                              \
		     :                                              \
		     : "cc"                                         \
		     : open)
/* The gate's constructor and destructor (no instruction here). */
#define RVT__GATE_HOOKS_HERE __asm__ __volatile__(RVT__GATE_HOOKS : :)
/* Jumps to the label `on` when the calling thread is traced (start != 0). */
#define RVT__IF_TRACED_GOTO_ON                                  \
	__asm__ goto("movq rvt__tls@gottpoff(%%rip), %%r11\n\t" \
		     "cmpq $0, %%fs:(%%r11)\n\t"                \
		     "jne %l[on]"                               \
		     :                                          \
		     :                                          \
		     : "r11", "cc"                              \
		     : on)
/* Around the call to librvtrace's stub: below the red zone and back. */
#define RVT__BELOW_RED_ZONE "leaq -128(%%rsp), %%rsp\n\t"
#define RVT__ABOVE_RED_ZONE "\n\tleaq 128(%%rsp), %%rsp"

/* gnu_inline: inlined everywhere, never emitted; librvtrace has the symbol.
 * The entry passes the function to rvt__inl_enter in %rax. */
extern __inline__ RVT__ALWAYS void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	RVT__IF_GATE_GOTO_OPEN;
	return;
open:
	RVT__COLD_LABEL;
	RVT__GATE_HOOKS_HERE;
	RVT__IF_TRACED_GOTO_ON;
	return;
on:
	RVT__COLD_LABEL;
	__asm__ __volatile__(RVT__BELOW_RED_ZONE "call rvt__inl_enter@PLT" RVT__ABOVE_RED_ZONE
			     :
			     : "a"(fn)
			     : "r11", "memory", "cc");
}

extern __inline__ RVT__ALWAYS void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	RVT__IF_GATE_GOTO_OPEN;
	return;
open:
	RVT__COLD_LABEL;
	RVT__GATE_HOOKS_HERE;
	RVT__IF_TRACED_GOTO_ON;
	return;
on:
	RVT__COLD_LABEL;
	__asm__ __volatile__(RVT__BELOW_RED_ZONE "call rvt__inl_exit@PLT" RVT__ABOVE_RED_ZONE
			     :
			     : "a"(fn)
			     : "r11", "memory", "cc");
}
#else
/* gnu_inline: inlined everywhere, never emitted; librvtrace has the symbol. */
extern __inline__ RVT__ALWAYS void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	rvt__trace_point(fn, 1, rvt__sp());
}

extern __inline__ RVT__ALWAYS void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	rvt__trace_point(fn, 0, 0);
}
#endif
#endif

#ifdef __cplusplus
}
#endif
#endif
