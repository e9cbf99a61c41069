/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracer-int.h — librvtrace's private parts: rings, the thread registry, the
 * capture writer and the symbol tables.  Not installed.
 */
#ifndef RVT_TRACER_INT_H
#define RVT_TRACER_INT_H

#define RVT_NO_INLINE_HOOKS 1
#include "rearview/trace-inline.h"
#include "rearview/trace.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#define RVT_HIDDEN __attribute__((visibility("hidden")))

/* A ring buffer (FORMAT.md §1).  end_pos and wrapped are the control
 * side's: set before it publishes the ring in `start` (the thread resumes
 * there) and after a handover (the thread's cur and wrapped at its end).
 * `next` links unused shells (tracer.c, ring_new()). */
struct rvt_ring {
	uint64_t *slots;
	/* The traced thread's shadow stack (RVT_SHADOW_FRAMES frames), borrowed
	 * from its registry record; carry_shadow: the thread keeps its shadow
	 * frames when it adopts this ring (a capture's spare), else it begins
	 * it empty.  Set by the control side before it publishes the ring. */
	uintptr_t *shadow;
	int carry_shadow;
	uint64_t nslots;
	uint64_t step; /* slots per segment (trace-inline.h, Segments) */
	uint64_t end_pos;
	int wrapped;
	size_t map_bytes;
	struct rvt_ring *next;
	uint64_t seq;	  /* rings made before this one, + 1 (memory is reused) */
	uintptr_t filled; /* budget thread: end of what rvt_ring_fill_ahead filled */
	/* The budget's wake (rvt__wake): set by the traced thread at each
	 * bound (tp-slow.c), read and cleared by the budget thread (mute.c).
	 * Zero in a new ring. */
	uint64_t clock_hi;	    /* traced thread: hi of the last CLOCK written */
	uint64_t wake_mark;	    /* traced thread: the counter at the last bound */
	_Atomic uint64_t wake_fast; /* 1: a stretch under the threshold since
				     * the budget last read it */
	_Atomic uint64_t wake_tps;  /* budget: this ring's threshold (as
				     * rvt__wake.tps; 0: rvt__wake.tps) */
};

/* Slots between two bounds at most (rvt_ring.step is a multiple of it or
 * smaller): the traced thread reaches a bound (tp-slow.c) that often, which
 * is where it times itself for the budget's wake.  A CLOCK and STACK are
 * written only at a segment's start or when the counter's high word
 * changed. */
#define RVT_BOUND_SLOTS 8192u

/*
 * The budget's wake (mute.c, tp-slow.c).  At every bound a traced thread
 * compares the counter ticks (>> shift) since its previous bound with the
 * threshold: fewer than `slots × tps / 65536` ticks of wall time means its
 * trace points took more than the budget of even its CPU time (which is at
 * most the wall time).  Then it marks its ring's wake_fast and,
 * when the budget thread sleeps wanting a wake (`word` 1) and the counter
 * is past `not_before`, takes the word (exchange to 0) and wakes it with
 * one FUTEX_WAKE: a new hot phase is looked at within a bound, not at the
 * next timed look.  tps 0: no wake (no budget, or its cost not measured).
 */
struct rvt_wake {
	_Atomic uint32_t word;
	_Atomic uint64_t tps;	     /* ticks per slot at the budget, 16.16 */
	_Atomic uint64_t not_before; /* counter >> shift */
};
RVT_HIDDEN extern struct rvt_wake rvt__wake;

/* Shadow stack capacity in frames (trace-inline.h; deeper frames are counted
 * but not kept) and the bytes of one frame: its stack pointer, then its
 * method value. */
#define RVT_SHADOW_FRAMES 4096u
#define RVT_SHADOW_FRAME  (2u * sizeof(uintptr_t))

/* An x86-64 exit (busy set) found another function's frame innermost while
 * its own stack pointer `sp` lies above that frame's: writes an exit slot
 * (now) for, and pops, every frame recorded below `sp`.  Returns 1 when the
 * innermost frame is then method `value`'s (the caller checks again and
 * writes this exit), 0 when the exit must write nothing more — it did what
 * rvt__exit_outer() does when no frame is left (tp-slow.c). */
RVT_HIDDEN int rvt__exit_repair(struct rvt__thread *t, uint64_t value, uintptr_t sp);

/* An x86-64 exit (busy set) of method `value` at stack pointer `sp` found
 * no recorded frame open: writes its EXIT_OF pair and exit slot if its
 * frame was entered before tracing began, nothing if it was entered since
 * (its entry muted; trace-inline.h, Exit check; tp-slow.c). */
RVT_HIDDEN void rvt__exit_outer(struct rvt__thread *t, uint64_t value, uintptr_t sp);

/* An x86-64 hook's adoption path (start != seen): with RVT__START_LEARN in
 * start, first notes that the hook call returning to `ret` is an entry
 * (`entry`) or exit of function `fn` (tp-slow.c); then rvt__adopt(). */
RVT_HIDDEN int rvt__adopt_at(struct rvt__thread *t, uintptr_t fn, uintptr_t ret, int entry);

/* The learned hook calls, one per call: the first at index `from` or after
 * into *fn, *ret (the call's return address) and *exit; returns the index
 * to go on from, 0 when there is none.  Any thread (tp-slow.c). */
RVT_HIDDEN size_t rvt_learned(size_t from, uintptr_t *fn, uintptr_t *ret, int *exit);

/* Sets (on) or clears RVT__START_LEARN in the start word of every thread
 * tracing into a ring (tracer.c): while set, their trace points report
 * their call sites (rvt_learned()). */
RVT_HIDDEN void rvt_learning(int on);

/* Writes an exit slot for, and pops, every shadow frame of the calling
 * thread whose stack pointer is below `limit` (UINTPTR_MAX: all of them);
 * nothing when the thread is not tracing.  Runs on the traced thread, not
 * inside a trace point (unwind.c). */
RVT_HIDDEN void rvt_unwind_below(uintptr_t limit);

/* busy while librvtrace's own code runs on a thread (trace-inline.h). */
#define RVT_BUSY_OWN 2

/* Until rvt_own_end(), the calling thread runs librvtrace's own code: its
 * trace points are dropped (busy = RVT_BUSY_OWN), so what the library calls
 * on a traced thread — malloc, which may be the program's own traced
 * allocator, stdio, libelf, a resolver — never appears in its trace.  Nests
 * (an inner call keeps the outer state); returns what rvt_own_end() takes.
 * A handover of the thread does not wait for it (trace-inline.h, DESIGN). */
static inline int rvt_own_begin(void)
{
	int prev = RVT__LD(rvt__tls.busy);
	if (prev == 0)
		RVT__ST(rvt__tls.busy, RVT_BUSY_OWN);
	return prev;
}

static inline void rvt_own_end(int prev)
{
	if (prev == 0) {
		assert(RVT__LD(rvt__tls.busy) == RVT_BUSY_OWN);
		/* Release, as a trace point's end. */
		RVT__ST_REL(rvt__tls.busy, 0);
	}
}

/* Marker codes in a slot's low word (FORMAT.md §1): the slot before holds
 * a 64-bit value.  7..15 are reserved (no function lies in the ELF header). */
#define RVT_SLOT_PAIR	    1u /* entry of a method value ≥ 2^32 */
#define RVT_SLOT_CLOCK	    2u /* the full shifted counter */
#define RVT_SLOT_LOSS	    3u /* events lost since this shifted counter value */
#define RVT_SLOT_FRAME	    4u /* an open frame's method value (a STACK's) */
#define RVT_SLOT_STACK	    5u /* frames open << 32 | FRAME pairs before it */
#define RVT_SLOT_EXIT_OF    6u /* the exit slot after it closes this method */
#define RVT_SLOT_MARKER_MAX 15u

/* The process-wide clock parameters (FORMAT.md header). */
struct rvt_clock {
	uint64_t hz;
	unsigned shift;
	uint8_t arch;
};

/* A frozen ring plus what the capture header needs. */
/* The anomaly a capture was taken for (FORMAT.md, ANOMALY record): what the
 * daemon's CaptureRequest said, so the capture itself tells a reader where
 * the chain "at the anomaly" is. */
struct rvt_anomaly {
	uint32_t kind, severity;
	uint64_t monotonic_ns; /* CLOCK_MONOTONIC when it fired */
	const char *name;      /* may be NULL */
};

/* A lock wait of the captured thread (locks.c; FORMAT.md, LOCK_WAIT). */
struct rvt_lock_wait {
	uint32_t kind;		 /* RVT_LOCK_* */
	uint32_t flags;		 /* RVT_LOCK_*_METHOD: that method is known */
	uint32_t waiter, holder; /* tids; holder 0: unknown */
	uint64_t lock;		 /* the lock's address */
	uint64_t waiter_method;	 /* the method that waited (innermost open) */
	uint64_t holder_method;	 /* method value open in the holder at holder_at */
	uint64_t start, end;	 /* full shifted counters (FORMAT.md §1) */
	uint64_t holder_at;	 /* when to look the holder's method up: a lock's
				  * start, a condition variable's wake-up */
};

#define RVT_LOCK_MUTEX	       1u
#define RVT_LOCK_RDLOCK	       2u
#define RVT_LOCK_WRLOCK	       3u
#define RVT_LOCK_COND	       4u /* a condition variable wait; holder: the waker */
#define RVT_LOCK_HOLDER_METHOD 1u
#define RVT_LOCK_WAITER_METHOD 2u
/* Lock waits kept process-wide, the oldest overwritten. */
#define RVT_LOCK_WAITS 256u

/* The C library's `name` (at `version` first, when given) that librvtrace's
 * interposer of it calls: the next definition after librvtrace
 * (RTLD_NEXT), else the first one when it is not librvtrace's own
 * (librvtrace loaded after the C library: an instrumented library in a
 * program that does not link librvtrace); NULL when there is none (a
 * static program).  locks.c. */
RVT_HIDDEN void *rvt_next_fn(const char *name, const char *version);

/* Marks lock as one of librvtrace's own mutexes (the registry's, the
 * control thread's, the started-threads table's): a thread that waits for
 * one waits in the tracer, not in the program, so no LOCK_WAIT is recorded
 * for it (the control thread holds the registry lock while a program thread
 * exits).  At most four; called from the defining file's constructor.
 * locks.c. */
RVT_HIDDEN void rvt_locks_own(const void *lock);
/* Copies into `out` (at most `cap`) the completed waits of thread `waiter`
 * still in the table, their counters shifted right by `shift`; holder_method,
 * waiter_method and flags are 0.  Any thread; lock-free; returns the count. */
RVT_HIDDEN size_t rvt_locks_collect(pid_t waiter, uint64_t shift, struct rvt_lock_wait *out,
				    size_t cap);

struct rvt_frozen {
	const struct rvt_ring *ring;
	const struct rvt_lock_wait *waits; /* borrowed */
	size_t nwaits;
	uint64_t ref_counter, ref_realtime_ns, ref_monotonic_ns;
	pid_t pid, tid;
	char thread_name[32];
	const struct rvt_anomaly *anomaly; /* borrowed, NULL when none */
};

/* Everything the file encoder needs; plain data so tests can build one. */
struct rvt_module {
	uint32_t index;
	uint64_t load_bias, start, end;
	const uint8_t *build_id;
	uint32_t build_id_len;
	const char *path;
};

struct rvt_symbol {
	uint64_t value;
	uint64_t offset;
	uint32_t module; /* 0xffffffff unknown */
	const char *name;
};

/* Callers a MUTED function's time is apportioned to, at most. */
#define RVT_MUTED_CALLERS 4u

/* A function muted at run time (mute.c; FORMAT.md, MUTED record). */
struct rvt_muted {
	uint64_t value;	       /* method value */
	uint64_t counter;      /* hardware counter when its call sites were nops */
	uint64_t monotonic_ns; /* CLOCK_MONOTONIC then */
	uint64_t rate;	       /* observed calls per second on one thread */
	uint32_t median_ns;    /* observed median duration */
	uint32_t sites;	       /* call sites turned into nops; 0: a runtime key (flag set) */
	/* Where its time goes now (FORMAT.md, MUTED_CALLERS record): the
	 * callers whose self time absorbs it, largest share first, and the
	 * share of each one's self time (ppm, counted as if muted already)
	 * that was this function's in the budget's window; ncallers 0: none
	 * seen. */
	uint32_t ncallers;
	uint32_t share_ppm[RVT_MUTED_CALLERS];
	uint64_t caller[RVT_MUTED_CALLERS];
};

/* At most this many functions are muted in a process. */
#define RVT_MUTED_MAX 256u

/* One module's `.rearview_untraced` section (FORMAT.md, UNTRACED record). */
struct rvt_untraced {
	const char *path;
	const char *text; /* "rule name\n" lines */
	size_t text_len;
	int truncated; /* the section was longer than RVT_UNTRACED_MAX */
};
/* Bytes of one module's section a capture carries at most. */
#define RVT_UNTRACED_MAX 60000u

struct rvt_capture_desc {
	uint32_t flags;
	uint64_t ref_counter, ref_realtime_ns, ref_monotonic_ns;
	uint64_t counter_hz;
	uint8_t shift, arch;
	uint32_t pid, tid;
	uint64_t method_base;
	uint64_t ring_slots, start_pos, end_pos;
	const uint64_t *ring; /* ring_slots slots; the file holds start..end */
	const char *exe;
	const char *cmdline; /* cmdline_len bytes, each argument NUL-terminated */
	size_t cmdline_len;
	const char *thread_name;
	const struct rvt_module *modules;
	size_t nmodules;
	const struct rvt_symbol *symbols;
	size_t nsymbols;
	const struct rvt_anomaly *anomaly;   /* NULL: no ANOMALY record */
	const struct rvt_untraced *untraced; /* one UNTRACED record each */
	size_t nuntraced;
	const struct rvt_muted *muted; /* one MUTED record each */
	size_t nmuted;
	const struct rvt_lock_wait *waits; /* LOCK_WAIT records */
	size_t nwaits;
};

#define RVT_CAP_WRAPPED 1u
/* Set by every writer of this library: a verified CHECKSUM record is required. */
#define RVT_CAP_CHECKSUMMED   4u
#define RVT_CAP_HEADER	      128u
#define RVT_REC_EXE	      1u
#define RVT_REC_CMDLINE	      2u
#define RVT_REC_THREAD	      3u
#define RVT_REC_MODULE	      4u
#define RVT_REC_SYMBOL	      5u
#define RVT_REC_ANOMALY	      6u
#define RVT_REC_CHECKSUM      8u
#define RVT_REC_UNTRACED      9u
#define RVT_REC_MUTED	      10u
#define RVT_REC_LOCK_WAIT     15u
#define RVT_REC_MUTED_CALLERS 17u
#define RVT_REC_END	      0xffffu
/* CHECKSUM algorithms (FORMAT.md). */
#define RVT_CHECKSUM_XXH3_64 1u

/* Number of slots from start_pos to end_pos in a ring of `n` slots. */
RVT_HIDDEN uint64_t rvt_capture_slot_count(uint64_t n, uint64_t start_pos, uint64_t end_pos,
					   int wrapped);

/* Encodes `d` into a new heap buffer (*out, caller frees) of *len bytes.
 * Returns 0 or -ENOMEM / -EINVAL. */
RVT_HIDDEN int rvt_capture_encode(const struct rvt_capture_desc *d, uint8_t **out, size_t *len);

/* Builds a complete capture of `f` (symbols and metadata included) into a heap
 * buffer.  Returns 0 or a negative errno. */
RVT_HIDDEN int rvt_capture_build(const struct rvt_frozen *f, uint8_t **out, size_t *len);

/* Symbol tables: one SYMBOL per value of `values` (n, sorted, unique) and
 * the MODULEs holding them; all storage is owned by `st`, released with
 * rvt_symtab_release().  Returns 0 or -ENOMEM. */
struct rvt_symtab {
	struct rvt_module *modules;
	size_t nmodules;
	struct rvt_symbol *symbols;
	size_t nsymbols;
	char *strings; /* owns every string the two arrays point at */
	size_t strings_len, strings_cap;
	uint8_t *ids;
	size_t ids_len, ids_cap;
};
RVT_HIDDEN int rvt_symtab_build(struct rvt_symtab *st, const uint64_t *values, size_t n,
				uint64_t method_base);
RVT_HIDDEN void rvt_symtab_release(struct rvt_symtab *st);

RVT_HIDDEN extern struct rvt_clock rvt_clock;
RVT_HIDDEN extern uint64_t rvt_method_base;
RVT_HIDDEN int rvt_clock_init(void);
/* The counter's rate in Hz for a capture header: the start estimate,
 * refined against CLOCK_MONOTONIC_RAW over the time since the clock was first
 * measured (x86-64 without CPUID 0x15).  Any thread; never blocks. */
RVT_HIDDEN uint64_t rvt_clock_hz(void);
RVT_HIDDEN pid_t rvt_gettid(void);

/* ---- bare.c: a helper thread glibc does not know, and what it may share ---- */

/* A system call made with the syscall instruction (x86-64; elsewhere
 * syscall() with errno restored): its result or a negative errno, errno
 * untouched.  Inline, so a trace point may make one without a call (the
 * budget's wake, tp-slow.c). */
static inline long rvt_sys(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall"
			 : "+a"(nr)
			 : "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return nr;
#else
	int saved = errno;
	long rc = syscall(nr, a, b, c, d);
	if (rc == -1) {
		rc = -errno;
		errno = saved;
	}
	return rc;
#endif
}

/* librvtrace's own lock: a futex word, never glibc's, so a bare thread
 * (rvt_bare_start) may share it with the program's threads.  Zero is free
 * (RVT_MU_INIT, or zero after a fork in the child that holds it). */
struct rvt_mu {
	_Atomic uint32_t v;
};
#define RVT_MU_INIT \
	{           \
		0   \
	}
RVT_HIDDEN void rvt_mu_lock(struct rvt_mu *m);
RVT_HIDDEN void rvt_mu_unlock(struct rvt_mu *m);

/* No module is unmapped while this is held: dlclose() (interposed,
 * symbols.c) holds it around the real one (its outermost call on a thread:
 * a destructor may dlclose too), and the budget thread while it reads
 * modules' code and headers and patches them (mute.c).  rvt_modules_gen
 * changes at every such dlclose.  Lock order: before gate_lock; never
 * taken under the registry lock. */
RVT_HIDDEN extern struct rvt_mu rvt_modules_mu;
RVT_HIDDEN extern _Atomic unsigned rvt_modules_gen;

/* Sorts base[0..n) of `size` bytes each by cmp, stably: a merge sort whose
 * scratch is a mapping of its own (no malloc, unlike glibc's qsort), linear
 * on input already in order; a heapsort in place (not stable) when no
 * mapping can be had or an element is over 64 bytes.  For the bare thread. */
RVT_HIDDEN void rvt_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Starts fn(arg) on a thread made with clone() alone, which glibc does not
 * count (so the process stays single-threaded to it), with every signal
 * blocked, its own TLS (zero), its own file table (empty but for
 * rvt_bare_mem_fd), a 256 KiB stack and no privilege (its ids the real
 * ones, or nobody's for root; no capability); when fn returns the thread
 * exits.  What it may call is narrow (bare.c's top).  Returns once the
 * thread runs fn: 0, or a negative errno (-ENOSYS: not x86-64 glibc, or a
 * kernel without close_range; -EPERM: it could not give up its
 * privileges): the caller then starts a pthread.  One at a time (the
 * caller serialises). */
RVT_HIDDEN int rvt_bare_start(void (*fn)(void *), void *arg);

/* On the bare thread: its descriptor of /proc/self/mem, opened read-write
 * before it gave up its privileges, in its own file table (so valid on it
 * alone; it stays open for the thread's life).  -1 on any other thread, or
 * when the file was refused (a process that is not dumpable). */
RVT_HIDDEN int rvt_bare_mem_fd(void);

/* Manual-key resolver (trace.h; symbols.c), read by the capture builder. */
RVT_HIDDEN int rvt_resolve_key(uint64_t addr, char *buf, size_t len);

/* Called (outside the registry lock) when a thread registers or the UI
 * thread changes; the control thread installs it when it starts, so the core
 * never calls into control.c.  NULL: nobody listens. */
RVT_HIDDEN void rvt_set_threads_changed_hook(void (*fn)(void));

/* Stops every thread and unmaps every ring of the process (exited threads'
 * included).  Returns 0, or the first rvt_stop() error (-ETIMEDOUT) with
 * the rings of the threads that did stop released. */
RVT_HIDDEN int rvt_release_all(void);

/* Registry snapshot for the control thread. */
struct rvt_thread_info {
	pid_t tid;
	int is_ui, tracing;
	uint64_t buffer_bytes;
	char name[32];
};
RVT_HIDDEN size_t rvt_threads_snapshot(struct rvt_thread_info *out, size_t cap);
/* Freezes tid's ring into a sealed memfd holding a capture (with an ANOMALY
 * record when `anomaly` is not NULL); returns the fd or a negative errno. */
RVT_HIDDEN int rvt_capture_frozen_memfd(pid_t tid, const struct rvt_anomaly *anomaly,
					uint64_t *size, uint64_t *frozen_ns);

/* ---- run-time muting (mute.c) ---- */

/* What the budget sees of one thread tracing into a ring it has adopted:
 * `cur` is the index of its next slot, read once; the thread goes on
 * writing meanwhile.  sh_base..sh_top is its shadow stack (0s while a ring
 * switch is in flight), read as of the call: top may be past end (frames
 * counted, not kept). */
struct rvt_ring_view {
	pid_t tid;
	const uint64_t *slots;
	uint64_t nslots, cur;
	int wrapped;
	int busy; /* inside a trace point as of the call */
	uintptr_t sh_base, sh_top, sh_end;
	struct rvt_ring *ring; /* its wake fields (rvt__wake) */
};

/* Rings are mapped aligned to chunks of this size (tracer.c), each of which
 * can be one huge page. */
#define RVT_RING_CHUNK ((size_t)2 << 20)

/* Budget thread, from rvt_rings_view's callback (the ring stays mapped):
 * once the writer (`cur`, the view's) is half-way through a chunk, makes
 * the next one resident — as one huge page where asking for one cannot stall
 * in compaction (THP defrag "defer" or "never"), else as small pages — unless
 * the ring wrapped or that chunk was filled already.  A first write to a
 * fresh page costs the writer a page fault (2–14 µs on a virtual machine,
 * 5–30 ns an event); a huge page filled ahead costs a fifth of it per byte,
 * and not on the traced thread.  Memory: at most one chunk beyond what was written,
 * and only for a thread that wrote half a chunk. */
RVT_HIDDEN void rvt_ring_fill_ahead(struct rvt_ring *r, uint64_t cur, int wrapped);

/* Copies the addresses of up to `max` registered gates (trace-inline.h, "The
 * gate") into out[] and returns how many: each lies in the inline-mode
 * module it was registered by.  *gen: a number that changes whenever a gate
 * is registered or unregistered.  Takes the gates' lock (an rvt_mu:
 * callable from the bare budget thread). */
RVT_HIDDEN size_t rvt_gates_list(uintptr_t *out, size_t max, unsigned *gen);

/* Threads that trace now, whether or not they wrote into their ring yet
 * (rvt_rings_view shows only those that did).  Takes the registry lock. */
RVT_HIDDEN size_t rvt_tracing_threads(void);

/* Calls fn(arg, view) under the registry lock for every thread tracing into
 * a ring it has adopted.  fn reads the slots and the shadow stack with
 * relaxed atomic loads (the thread writes them meanwhile; the mappings stay
 * while the lock is held) and must not call back into the registry
 * (tracer.c). */
RVT_HIDDEN void rvt_rings_view(void (*fn)(void *arg, const struct rvt_ring_view *v), void *arg);

/* Tracing started on some thread: starts the mute thread when muting is on
 * (RV_TRACE_MUTE; first call reads it).  Any thread but a traced one inside
 * a trace point; never under the registry lock. */
RVT_HIDDEN void rvt_mute_tracing_started(void);

/* A module registered its gate while some thread traces (tracer.c): wakes
 * the budget thread if it sleeps, so that it scans the module now (mute.c,
 * prescan), while the program starts, rather than at the look that finds
 * its first hot phase.  Any thread; no lock held; a FUTEX_WAKE at most. */
RVT_HIDDEN void rvt_mute_module_added(void);

/* Copies up to `cap` muted functions (oldest first) into out; returns the
 * count.  Lock-free: any thread. */
RVT_HIDDEN size_t rvt_mute_list(struct rvt_muted *out, size_t cap);

/* Mutes `key` if it is one from rvt_key_new() (sets the flag
 * rvt_key_muted() reads; runtime.c) and returns 0, else -ENOENT.  Takes the
 * key lock: not in a trace point or signal handler. */
RVT_HIDDEN int rvt_key_mute(const void *key);

/* In a fork's child (tracer.c's atfork handler): the key lock is free (the
 * budget thread, which may have held it, is not in the child). */
RVT_HIDDEN void rvt_runtime_atfork_child(void);

/* Tests: the budget writes code with mprotect (on 1) instead of through
 * /proc/self/mem, as where that file is refused (mute.c, patch_apply). */
RVT_HIDDEN void rvt__mute_poke_protect(int on);

/* Tests: 1 once /proc/self/mem was refused to the budget (it writes code
 * with mprotect from then on); 0 before, and where it cannot patch. */
RVT_HIDDEN int rvt__mute_by_mprotect(void);

/* How many muted functions still have live exit sites (a thread had a
 * frame of theirs open when last looked at).  Any thread (mute.c). */
RVT_HIDDEN size_t rvt_mute_pending(void);

/* Tests: how many times the budget thread has woken to look (mute.c). */
RVT_HIDDEN uint64_t rvt_mute_wakeups(void);

/* Tests: how many rechecks the budget thread has made (mute.c: a muted
 * function's share measured again with its sites reopened for a moment);
 * *cost_ns (when not NULL) what they cost together. */
RVT_HIDDEN uint64_t rvt_mute_rechecks(uint64_t *cost_ns);

/* Tests: while `on` is 1, a recheck keeps its functions' sites open (its
 * window does not end) until it is set to 0 again (mute.c). */
RVT_HIDDEN void rvt__mute_recheck_hold(int on);

/* Tests: how many functions a recheck has reopened right now; 0 between
 * rechecks and where the budget cannot mute (mute.c). */
RVT_HIDDEN unsigned rvt__mute_recheck_open(void);

/* Mutes the native function `fn` for a runtime that traces it by address
 * (rvt_addr_muted(), trace-runtime.h): 0, or -ENOENT (no runtime said it
 * checks addresses), -ENOSPC (RVT_MUTED_MAX reached).  The budget thread
 * only (runtime.c). */
RVT_HIDDEN int rvt_addr_mute(const void *fn);

/* The `.rearview_untraced` sections of every loaded module (read from the
 * modules' files once and kept); *out points into storage the module owns
 * until the process exits.  Returns the count (0 when none or on error). */
RVT_HIDDEN size_t rvt_untraced_sections(const struct rvt_untraced **out);

/* ---- developer mode (devmode.c) ---- */

/* Prints one line (a trailing newline is added) on stderr in one write.
 * Any thread; not in a signal handler. */
RVT_HIDDEN void rvt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads the developer-mode environment once (from the library's init):
 * *buffer_bytes and *max_buffers hold the defaults and get RV_TRACE_BUFFER
 * and RV_TRACE_MAX_BUFFERS (or the raised limit of RV_TRACE=all); every
 * setting it cannot honour is said on stderr and the default kept. */
RVT_HIDDEN void rvt_devmode_env(size_t *buffer_bytes, unsigned *max_buffers);

/* From the library constructor, after the main thread registered: starts
 * the threads the settings name and arms the at-exit and fork handlers. */
RVT_HIDDEN void rvt_devmode_start(void);

/* Captures every thread holding a ring to the expanded RV_TRACE_FILE; a
 * failure is said on stderr.  Returns 0, or -ENOENT when it is unset. */
RVT_HIDDEN int rvt_devmode_capture_all(void);

/* Before an exec (exec.c): writes what exit would (every thread holding a
 * ring, to RV_TRACE_FILE) when this process writes captures. */
RVT_HIDDEN void rvt_devmode_before_exec(void);

/* Expands `pat` (%p, %t, %e, %%) into out[len].  Returns 0, -ENAMETOOLONG
 * or -EINVAL (empty). */
RVT_HIDDEN int rvt_output_name(const char *pat, pid_t pid, pid_t tid, char *out, size_t len);

/* Writes buf to `path` without ever replacing what is not a regular file:
 * a new name or a regular file atomically (temporary + fsync + rename), a
 * FIFO or character device through (opened O_WRONLY), /dev/stdout,
 * /dev/stderr, /dev/fd/N to the descriptor, a symlink by its resolved
 * target.  Returns 0, -EISDIR, -EINVAL (another kind of file: refused), or
 * the errno of the failing call. */
RVT_HIDDEN int rvt_output_write(const char *path, const void *buf, size_t len);

/* pthread_create() without developer mode's tracing of new threads, for the
 * library's own threads.  Returns 0 or a positive errno like it. */
RVT_HIDDEN int rvt_pthread_create_untraced(pthread_t *th, const pthread_attr_t *attr,
					   void *(*fn)(void *), void *arg);

#endif
