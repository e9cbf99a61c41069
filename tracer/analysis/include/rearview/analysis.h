/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/analysis.h — librvanalysis: one in-memory model for every trace
 * input (Rearview captures, folded stacks), the analyses run on it, and the
 * exporters.  Prefix rva_.
 *
 * Model.  A trace holds a method table (interned names, ids 0..n-1) and
 * threads.  Each thread is its call tree stored in pre-order: calls[] is
 * sorted by entry, each call carries its depth, so the parent of call i is
 * the nearest earlier call with depth one less.  Times are nanoseconds on
 * one clock per trace; for aggregate-only inputs (folded stacks) `weighted`
 * is set and the "times" are cumulative sample weights laid end to end.
 *
 * Errors.  Fallible functions return 0 (or a count / an id) on success and a
 * negative errno on failure; functions taking an rva_error fill its message.
 * Nothing here exits or prints except the explicit FILE * writers.
 *
 * Threads.  The library has no global state: different traces may be used
 * on different threads at once, and a finished trace may be read (analysed,
 * exported) by several threads concurrently; building or appending to a
 * trace needs exclusive access.  Decoding is CPU work: never call it on an
 * event-loop thread (use the libuv work queue).
 */
#ifndef REARVIEW_ANALYSIS_H
#define REARVIEW_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A human-readable reason for the last failure of a call that takes one. */
typedef struct rva_error {
	char msg[256];
} rva_error;

/* One call.  end >= start.  depth 0 is a root. */
typedef struct rva_call {
	uint32_t method;
	uint32_t depth;
	int64_t start;
	int64_t end;
} rva_call;

/* Why a thread was off the CPU (FORMAT.md, OFFCPU record). */
enum { RVA_OFF_PREEMPTED = 1, RVA_OFF_BLOCKED = 2, RVA_OFF_NREASONS = 3 };

/* An interval in which the thread was off the CPU, on the calls' clock. */
typedef struct rva_offcpu {
	int64_t from, to; /* from <= to */
	uint32_t reason;  /* RVA_OFF_* */
} rva_offcpu;

/* A thread's counters (FORMAT.md, THREAD_COUNTERS): totals from `since` to
 * `at`, and the switch-outs in the window [window, at) by reason. */
typedef struct rva_tcounters {
	int64_t since, at, window;
	uint64_t task_clock_ns, minor_faults, major_faults, switches;
	uint64_t voluntary, involuntary;
} rva_tcounters;

typedef struct rva_thread {
	uint32_t pid;
	uint32_t tid;
	char *name;	 /* owned; may be NULL */
	rva_call *calls; /* owned; pre-order */
	size_t ncalls;
	/* Builder state, private to the library. */
	size_t cap;
	uint32_t *stack; /* indices into calls of the open frames */
	size_t sdepth;
	size_t scap;
	int64_t last_ts;
	/* Thread-CPU time (inputs with two clocks, e.g. Android dual-clock
	 * traces): NULL, or per call the CPU ns spent in it, children included
	 * (cpu[i] for calls[i]).  Calls keep the wall clock as their timeline. */
	int64_t *cpu;	  /* owned */
	size_t cpucap;	  /* private */
	int64_t last_cpu; /* private */
	/* Captures with OFFCPU records: the off-CPU intervals (sorted, not
	 * overlapping; owned) and the counters (owned, NULL when none). */
	rva_offcpu *offcpu;
	size_t noffcpu;
	rva_tcounters *counters;
	int64_t *offpre; /* private: prefix sums, RVA_OFF_NREASONS per interval + 1 */
} rva_thread;

/* A method of a capture that the device could not name: shown as
 * "module+0xoffset", symbolizable later from the module's debug file. */
typedef struct rva_unresolved {
	uint32_t method;       /* method id */
	uint8_t build_id[64];  /* GNU build-id of its module */
	uint32_t build_id_len; /* 0: the module has none */
	uint64_t elf_offset;   /* address - the module's load bias: the ELF
				* virtual address a symbol table names */
} rva_unresolved;

/* A function a capture's program left untraced at build time (rvcc's
 * `.rearview_untraced`, FORMAT.md UNTRACED record): its time is in its
 * callers' self time. */
typedef struct rva_untraced {
	char *rule; /* owned: "threshold", "never", ... */
	char *name; /* owned */
} rva_untraced;

/* Callers a muted function's time is apportioned to, at most. */
#define RVA_MUTED_CALLERS 4u

/* A function the tracer muted at run time (FORMAT.md MUTED record): no call
 * of it is recorded after `ns`, its time is in its callers' self time —
 * in caller[k]'s at the share share_ppm[k] of that caller's self time,
 * as the tracer measured when it muted it (MUTED_CALLERS record;
 * rva_muted_self). */
typedef struct rva_muted {
	uint32_t method;		       /* method id (its name: names[method]) */
	int64_t ns;			       /* when, on the calls' clock */
	uint64_t rate;			       /* calls per second observed on one thread */
	uint32_t median_ns;		       /* median duration observed */
	uint32_t ncallers;		       /* 0: not known where its time went */
	uint32_t caller[RVA_MUTED_CALLERS];    /* method ids */
	uint32_t share_ppm[RVA_MUTED_CALLERS]; /* <= 1000000 */
	/* The part of caller[k]'s calls' time at or after `ns`, ppm, where bit
	 * k of after_known is set (a capture's decoder measures it from the
	 * calls); else rva_muted_self takes the part of the trace's span. */
	uint32_t after_ppm[RVA_MUTED_CALLERS];
	uint32_t after_known;
} rva_muted;

enum { RVA_CHECKSUM_NONE = 0, RVA_CHECKSUM_VERIFIED = 1 };

#define RVA_MAX_SKIPPED 16

/* A lock wait of a capture's thread (LOCK_WAIT record, tracer/FORMAT.md):
 * the thread `waiter` waited from `start` to `end` for the lock at `lock`,
 * held by thread `holder` — for RVA_LOCK_COND, a condition variable wait
 * (with the mutex's re-acquisition), `holder` the thread that signalled it
 * and `holder_method` its method then. */
typedef struct rva_lock_wait {
	uint32_t kind;		 /* RVA_LOCK_MUTEX, _RDLOCK, _WRLOCK, _COND */
	uint32_t waiter, holder; /* tids; holder 0: unknown */
	uint64_t lock;		 /* the lock's address in the traced process */
	int64_t waiter_method;	 /* method id that waited; -1 unknown */
	int64_t holder_method;	 /* method id the holder was in at start; -1 unknown */
	int64_t start, end;	 /* the calls' clock */
} rva_lock_wait;

/* A frame the app reported (FRAMES record, tracer/FORMAT.md): rendered
 * from `start` to `end` on the calls' clock, due at `deadline` (0: none);
 * late when it missed its deadline, or, without one, the daemon's jank
 * budget. */
typedef struct rva_frame {
	int64_t start, end; /* start <= end */
	int64_t deadline;   /* 0: none */
	uint32_t tid;	    /* the thread that reported it */
	uint32_t late;	    /* 1: a slow frame */
} rva_frame;

/* Frames a reader keeps from one capture (FORMAT.md limits). */
#define RVA_MAX_FRAMES 65536u

#define RVA_LOCK_MUTEX	1u
#define RVA_LOCK_RDLOCK 2u
#define RVA_LOCK_WRLOCK 3u
#define RVA_LOCK_COND	4u

typedef struct rva_trace {
	char **names; /* method names, owned; names[id] */
	size_t nmethods;
	rva_thread *threads; /* owned */
	size_t nthreads;
	int weighted;	    /* 1: times are sample weights, not ns */
	int64_t start;	    /* earliest call start (valid after rva_trace_finish) */
	int64_t end;	    /* latest call end */
	const char *format; /* static string naming the input format */
	int has_anomaly;
	int64_t anomaly_ns; /* same clock as the calls */
	char *anomaly_name; /* owned; may be NULL */
	uint64_t dropped;   /* events ignored as damage (unmatched, torn) */
	uint64_t repaired;  /* frames the decoder supplied: exits with no entry
			     * got an "(unknown caller)" frame (FORMAT.md §1) */
	/* Captures only: places where the exits do not match the entries —
	 * the tracer's own record of the open frames (STACK, EXIT_OF) differs
	 * from what the slots replay to, or an exit matches no frame open;
	 * nonzero also sets `warning`.  Frames after such a place may nest
	 * wrongly. */
	uint64_t unbalanced;
	/* Captures only: spans in which the tracer lost events (LOSS records,
	 * FORMAT.md §1: no spare ring at a capture), their total length and the
	 * first one, on the calls' clock. */
	uint64_t lost_spans;
	int64_t lost_ns, lost_first_start, lost_first_end;
	int has_cpu; /* some thread carries thread-CPU time (cpu != NULL) */
	/* Captures only: the methods named "module+0xoffset" (no SYMBOL name),
	 * with what a symbolizer needs; owned. */
	rva_unresolved *unresolved;
	size_t nunresolved;
	/* Captures only: the thread's lock waits, in record order; owned. */
	rva_lock_wait *lock_waits;
	size_t nlock_waits;
	/* Captures only: the app's frames overlapping the calls' span, by
	 * start; owned. */
	rva_frame *frames;
	size_t nframes;
	/* Captures only: RVA_CHECKSUM_VERIFIED when the file's CHECKSUM record
	 * matched (a mismatch is refused), RVA_CHECKSUM_NONE when it has none
	 * (written before checksums, or not a capture). */
	int checksum;
	/* Static string, NULL when none: damage the decoder accepted and a
	 * reader must be told of (e.g. a capture salvaged without its END). */
	const char *warning;
	/* Events of the input that map to no call, skipped on purpose (not
	 * damage, unlike dropped): per kind a static label, a plural noun
	 * ("counter (C) events")
	 * and a count, in the importer's order (rva_skip_count). */
	struct {
		const char *what;
		uint64_t n;
	} skipped[RVA_MAX_SKIPPED];
	size_t nskipped;

	/* Captures only: what the tracer left out, owned (see rva_untraced_note).
	 * untraced_truncated: some module's list was cut (its size bound). */
	rva_untraced *untraced;
	size_t nuntraced;
	int untraced_truncated;
	rva_muted *muted;
	size_t nmuted;
	/* private */
	uint32_t *hash;
	size_t hcap;
	size_t ncap;
	size_t tcap;
	size_t name_bytes;
} rva_trace;

/* ---- building (used by every importer; usable by callers too) ---- */

/* The length of the native function name name[0..len) without the
 * suffixes compilers give the copies and parts they make of one function:
 * gcc's clones (`.isra.N`, `.constprop.N`, `.localalias`, `.lto_priv.N`)
 * and split parts (`.part.N`, `.cold`, `.cold.N`), clang's (`.llvm.N`,
 * `.specialized.N`), also demangled (`f(int) [clone .isra.0]`), any number
 * of them.  A build's clone of f is f in every view, so that builds that
 * clone differently compare by the same names.  Never 0 for len > 0. */
size_t rva_native_name_len(const char *name, size_t len);

/* Gives method `id` a new name (copied), e.g. a symbolizer's: 0, -EINVAL
 * (id out of range, or another method already has that name — the trace's
 * names stay unique), -ENOMEM.  Call before computing chains or
 * signatures. */
int rva_method_rename(rva_trace *t, uint32_t id, const char *name);

/* Adds n to the count of skipped events of kind `what` (a static string,
 * kept, compared by content): 0, or -E2BIG past RVA_MAX_SKIPPED kinds. */
int rva_skip_count(rva_trace *t, const char *what, uint64_t n);

/* The line every view prints when `t` has untraced or muted functions:
 * "self time includes untraced callees (…)", naming the count left out at
 * build time and the muted functions (the first few), into buf (len bytes,
 * NUL-terminated, cut to fit).  Returns 1 when there is such a line, 0 (buf
 * empty) when not.  Thread-safe on a trace nobody modifies. */
int rva_untraced_note(const rva_trace *t, char *buf, size_t len);

/* Allocate an empty trace; NULL on ENOMEM.  Caller frees with rva_trace_free. */
rva_trace *rva_trace_new(void);
void rva_trace_free(rva_trace *t); /* NULL is a no-op */

/* Intern a method name of len bytes (need not be NUL-terminated).
 * Returns its id (>= 0), -ENOMEM, or -E2BIG (name > 64 KiB, > 16 Mi methods,
 * or more than 256 MiB of names in total). */
int64_t rva_method_intern(rva_trace *t, const char *name, size_t len);

/* The id of an interned name, or -ENOENT. */
int64_t rva_method_find(const rva_trace *t, const char *name);

/* Add a thread; returns its index or -ENOMEM.  name may be NULL. */
int64_t rva_thread_add(rva_trace *t, uint32_t pid, uint32_t tid, const char *name);

/* Find a thread by tid, adding it when absent.  Returns its index. */
int64_t rva_thread_get(rva_trace *t, uint32_t pid, uint32_t tid);

/* Enter `method` on thread `th` at ts.  Timestamps going backwards are
 * clamped to the thread's last timestamp.  0 or -ENOMEM / -EINVAL. */
int rva_enter(rva_trace *t, size_t th, uint32_t method, int64_t ts);

#define RVA_ANY_METHOD UINT32_MAX
/* Exit at ts.  method RVA_ANY_METHOD pops the innermost frame.  A named
 * method that is open deeper in the stack closes the frames above it at the
 * same time first (AndroScope's dummy exits); a method not open at all, or an
 * exit on an empty stack, is counted in t->dropped and ignored. */
int rva_exit(rva_trace *t, size_t th, uint32_t method, int64_t ts);

/* rva_enter / rva_exit with the thread's CPU clock at that moment too
 * (cpu_ts in ns, clamped to never go backwards on a thread): the calls of
 * the thread then carry their CPU time in th->cpu and t->has_cpu is set.
 * Plain rva_enter / rva_exit on such a thread reuse its last CPU time. */
int rva_enter_cpu(rva_trace *t, size_t th, uint32_t method, int64_t ts, int64_t cpu_ts);
int rva_exit_cpu(rva_trace *t, size_t th, uint32_t method, int64_t ts, int64_t cpu_ts);

/* Close every still-open frame at end_ts (INT64_MIN: at the thread's last
 * timestamp) and compute t->start / t->end.  Call once after building. */
void rva_trace_finish(rva_trace *t, int64_t end_ts);

/* Append src's threads (calls copied, method ids remapped by name) to a
 * finished dst, for analysing a set of traces as one (e.g. diff of two sets).
 * -EINVAL when one is weighted and the other is not; -ENOMEM. */
int rva_trace_append(rva_trace *dst, const rva_trace *src);

/* Gives thread `th` of a finished trace its off-CPU intervals (copied;
 * sorted by `from` and clipped so none overlaps the one before; one that
 * holds a call's entry or exit cut to its longest part without any — a
 * thread traces only while it runs, the two clocks differ by some µs; an
 * unknown reason counts as blocked) and, with `counters` not NULL, its counters
 * (copied).  Each call's thread-CPU time (th->cpu) becomes its inclusive
 * time minus its overlap with the intervals, and t->has_cpu is set: every
 * method splits into on-CPU and off-CPU time.  O(calls × log calls).
 * 0, -EINVAL (th out of range), -ENOMEM (the thread unchanged). */
int rva_offcpu_set(rva_trace *t, size_t th, const rva_offcpu *iv, size_t n,
		   const rva_tcounters *counters);

/* The off-CPU time of thread `th` inside [from, to): the total, and per
 * reason into by_reason[RVA_OFF_NREASONS] when not NULL (index 0 unused,
 * 0).  0 for a thread without intervals.  O(log intervals). */
int64_t rva_offcpu_overlap(const rva_thread *th, int64_t from, int64_t to, int64_t *by_reason);

/* The part of [from, to) that thread `th`'s switch records cannot speak
 * for: what lies before its window (THREAD_COUNTERS window_ns) when the
 * daemon's ring lost older switches — its counters count more switches
 * than the window holds (voluntary + involuntary).  0 when nothing was
 * lost or the thread has no counters; such time is neither on- nor off-CPU
 * as far as the records know.  Any thread; O(1). */
int64_t rva_offcpu_unknown(const rva_thread *th, int64_t from, int64_t to);

/* The off-CPU time of a trace for one reason. */
typedef struct rva_offcpu_reason {
	uint32_t reason;  /* RVA_OFF_* */
	const char *name; /* static: "preempted", "blocked" */
	int64_t ns;	  /* summed over the threads, inside [t->start, t->end) */
} rva_offcpu_reason;

/* Every reason's off-CPU time into out[RVA_OFF_NREASONS - 1], largest
 * first (ties in RVA_OFF_* order; 0 ns for a trace without intervals), as
 * the summary's "offcpu_reasons" and the trace page list them.  Returns the
 * count (RVA_OFF_NREASONS - 1).  Reads t only. */
size_t rva_offcpu_reasons(const rva_trace *t, rva_offcpu_reason *out);

/* 1 when some thread of `t` has off-CPU intervals or counters, else 0. */
int rva_trace_has_offcpu(const rva_trace *t);

/* 1 when the Rearview capture in buf[0..len) has an OFFCPU or
 * THREAD_COUNTERS record (a quick walk of the records, nothing verified;
 * 0 for anything else), e.g. to choose the full model over a streamed
 * summary.  Pure, any thread. */
int rva_capture_has_offcpu(const uint8_t *buf, size_t len);

/* ---- per-method statistics ---- */

typedef struct rva_mstat {
	uint64_t calls;
	int64_t incl;	  /* inclusive; a recursive call inside itself counts once */
	int64_t self;	  /* with est_self */
	int64_t cpu_incl; /* the same in thread-CPU ns when t->has_cpu, else 0 */
	int64_t cpu_self;
	/* The part of `self` that is an estimate (rva_muted_self): > 0 a muted
	 * function's time taken out of its callers' self times (calls may be
	 * 0), < 0 what was taken out of a caller's; 0 measured. */
	int64_t est_self;
} rva_mstat;

/* Statistics of every method (array of t->nmethods, caller frees with free),
 * the self times with t's muted functions' estimates (est_self).  0 or
 * -ENOMEM. */
int rva_method_stats(const rva_trace *t, rva_mstat **out);

/* The line `rvtrace summary` and `report` print under a table whose self
 * times hold estimates, which they mark `~`.  It says when the share was
 * measured: a function is muted in the first milliseconds of a phase, and
 * the tracer measures its share again now and then (a recheck every few
 * hundred milliseconds of CPU); a phase between two may differ
 * (tests/bench/real/estimate.py, tracer/BENCHMARKS.md). */
#define RVA_EST_LINE                                                                \
	"~ estimated: a muted function's share of its callers' self time, as the "  \
	"tracer measured it at the mute and in its rechecks since (a phase it did " \
	"not sample may differ)"

/* Takes the estimates out of n statistics again (self less est_self,
 * est_self 0): the measured self times, e.g. for a fleet's sums. */
void rva_mstat_measured(rva_mstat *st, size_t n);

/* Estimates where t's muted functions' time went (rva_muted's callers and
 * shares, FORMAT.md MUTED_CALLERS): self[0..t->nmethods) the measured self
 * times, est[0..t->nmethods) gets what moves — each muted function takes
 * its share of each caller's self time from the moment it was muted on
 * (rva_muted.after_ppm: the part of the caller's calls' time after it, its
 * self time assumed spread evenly over each call; where that is not known,
 * the part of the trace's span after it), newest muted first; > 0 into a
 * muted function, < 0 out of a caller, no self time below 0.  Nothing for
 * a weighted trace.  0 or -ENOMEM (est all 0). */
int rva_muted_self(const rva_trace *t, const int64_t *self, int64_t *est);

/* Fill ids[0..n) with the method ids of the n largest self times (ties by
 * id); returns n = min(max, methods with calls or an estimated self time
 * above 0). */
size_t rva_top_self(const rva_trace *t, const rva_mstat *st, uint32_t *ids, size_t max);

/* ---- time windows and chains ---- */

/* A new trace holding the calls overlapping [from, to), clipped to it
 * (without CPU times: they cannot be clipped).  NULL on ENOMEM.  Caller frees with rva_trace_free.
 */
rva_trace *rva_trace_slice(const rva_trace *t, int64_t from, int64_t to);

/* The chain running on thread th at ts (root first): method ids into
 * out[0..max).  Returns the chain depth (may exceed max: then truncated). */
size_t rva_chain_at(const rva_trace *t, size_t th, int64_t ts, uint32_t *out, size_t max);

/* Normalize a method name for signatures: a module path before "+0x" is cut
 * to its basename (lib.so+0x12 stays), other hex addresses of 5+ digits
 * become "0x?", " (deleted)" is dropped.  Writes a NUL-terminated string,
 * truncated to outsz; returns the untruncated length. */
size_t rva_normalize_name(const char *in, char *out, size_t outsz);

/* Stable 64-bit FNV-1a over the normalized names of chain[0..n), each name
 * followed by ';'.  The same chain gives the same value on every device. */
uint64_t rva_signature(const rva_trace *t, const uint32_t *chain, size_t n);

/* A distinct call path with its totals. */
/* Frames a chain keeps (rva_chain.methods): the innermost ones, so chains
 * take memory linear in their number, not in the sum of their depths (issue
 * 18 item 2: 1 M nested calls). */
#define RVA_CHAIN_MAX_FRAMES 512

typedef struct rva_chain {
	uint64_t signature; /* of the whole path */
	uint32_t *methods;  /* owned by the rva_chains, root first: the path's
			     * innermost nmethods frames */
	size_t depth;	    /* frames on the path */
	size_t nmethods;    /* in methods: depth, at most RVA_CHAIN_MAX_FRAMES */
	uint64_t calls;	    /* calls of the deepest frame on this path */
	int64_t self;	    /* self time of the deepest frame, summed */
	int64_t incl;	    /* inclusive time of the deepest frame, summed */
} rva_chain;

typedef struct rva_chains {
	rva_chain *v;
	size_t n;
	uint32_t *pool;
} rva_chains;

/* The distinct call paths of every thread with the most self time (the
 * "longest-running chains"; slice first for a window), at most max of them
 * (0 = all), sorted by self time descending then signature.  0 or -ENOMEM.
 * Release with rva_chains_release. */
int rva_chains_collect(const rva_trace *t, size_t max, rva_chains *out);
void rva_chains_release(rva_chains *c);

/* ---- signature patterns ("performance bug models") ---- */

/* A pattern matches a call whose chain (root .. the call) contains the names
 * in order (not necessarily adjacent; fnmatch globs), the last name matching
 * the call itself, and whose duration is >= min_ns. */
typedef struct rva_pattern {
	const char *const *names;
	size_t n;
	int64_t min_ns;
} rva_pattern;

typedef struct rva_match {
	size_t thread;
	size_t call; /* index into threads[thread].calls */
} rva_match;

/* Up to max matches into out; returns the total number of matches. */
size_t rva_pattern_match(const rva_trace *t, const rva_pattern *p, rva_match *out, size_t max);

/* ---- views ---- */

/* Merged top-down call tree: nodes[0] is a synthetic root (method
 * UINT32_MAX); children linked by first_child / next_sibling (0 = none). */
typedef struct rva_tnode {
	uint32_t method;
	uint32_t first_child;
	uint32_t next_sibling;
	uint32_t parent;
	uint64_t calls;
	int64_t incl;
	int64_t self;
} rva_tnode;

typedef struct rva_tree {
	rva_tnode *nodes;
	size_t n;
	size_t cap;
} rva_tree;

/* Build the merged tree of thread th, or of all threads (th = SIZE_MAX). */
int rva_tree_build(const rva_trace *t, size_t th, rva_tree *out);

/* Method of the node standing for everything below a capped tree's depth. */
#define RVA_TREE_CUT (UINT32_MAX - 1)
/* rva_tree_build cut at maxdepth frames: the calls deeper than that are one
 * child node (method RVA_TREE_CUT) of their ancestor at maxdepth, whose
 * self and inclusive times are all the time they took and calls their
 * number.  Nodes are the distinct paths of at most maxdepth frames, so a
 * trace of 1 M nested calls makes maxdepth + 1 nodes (issue 18 item 2);
 * the walk's stack is the trace's depth.  0, -ENOMEM, -E2BIG. */
int rva_tree_build_capped(const rva_trace *t, size_t th, size_t maxdepth, rva_tree *out);
void rva_tree_release(rva_tree *tr);

/* rva_chains_collect over an already built merged tree of t. */
int rva_chains_from_tree(const rva_trace *t, const rva_tree *tr, size_t max, rva_chains *out);

/* Text call tree; nodes below pct % of the root total are omitted. */
int rva_tree_print(FILE *f, const rva_trace *t, const rva_tree *tr, double pct);

/* Bottom-up: the callers of `method` with the inclusive time (recursion
 * once) and calls they account for.  caller UINT32_MAX = called as a root. */
typedef struct rva_caller {
	uint32_t caller;
	uint64_t calls;
	int64_t incl;
} rva_caller;

/* *out (caller frees) sorted by incl descending; returns the count or
 * -ENOMEM. */
int64_t rva_callers(const rva_trace *t, uint32_t method, rva_caller **out);

/* Diff by method name: self-time delta b − a. */
typedef struct rva_delta {
	const char *name; /* borrowed from a or b */
	int64_t self_a;
	int64_t self_b;
	int64_t delta;
	uint64_t calls_a;
	uint64_t calls_b;
} rva_delta;

/* *out (caller frees) sorted by |delta| descending; returns the count. */
int64_t rva_diff(const rva_trace *a, const rva_trace *b, rva_delta **out);

/* Writes the summary JSON document (schema "rvtrace.summary.v1", see
 * tracer/RVTRACE.md) of t: top ntop methods by self time, the chains at the
 * anomaly (or at the end), the top ntop chains.  window >= 0 restricts the
 * tables to the last `window` (ns, or samples) before the anomaly / end.
 * 0, -ENOMEM or -EIO. */
int rva_summary_json(FILE *f, const rva_trace *t, int64_t window, size_t ntop);

/* ---- filters (filter.c): what every rvtrace view may be narrowed to ---- */

/* A set of filters, as uftrace's -F/-N/-H/-D/-t/--tid; opaque.  An empty
 * one keeps everything. */
typedef struct rva_filter rva_filter;

enum {
	RVA_FILTER_INCLUDE = 0, /* keep only these calls and what they call */
	RVA_FILTER_EXCLUDE = 1, /* drop these calls and what they call */
	RVA_FILTER_HIDE = 2,	/* drop these calls, keep what they call */
};

/* A new empty filter (caller frees with rva_filter_free), NULL on ENOMEM. */
rva_filter *rva_filter_new(void);
void rva_filter_free(rva_filter *f); /* NULL is a no-op */

/* Adds a function pattern of `kind` (RVA_FILTER_*).  A pattern selects the
 * methods whose name equals it and, when it holds a regular-expression
 * character (one of . ? * + - ^ $ | ( ) [ ] { } \), those whose name the
 * POSIX extended regular expression matches anywhere (anchor with ^ and
 * $), as uftrace's default matching.  0, -EINVAL (empty pattern, unknown
 * kind, or a regular expression that does not compile: err says why),
 * -ENOMEM. */
int rva_filter_add(rva_filter *f, int kind, const char *pattern, rva_error *err);

/* Keeps only calls less than max_depth levels below a root of the filtered
 * tree (1: roots only; 0: no limit). */
void rva_filter_depth(rva_filter *f, uint64_t max_depth);

/* Keeps only calls lasting at least min (the trace's unit: ns, or samples
 * for a weighted trace); negative: no limit. */
void rva_filter_min_duration(rva_filter *f, int64_t min);

/* Keeps only the threads of the tids given (called once per tid; none
 * given: every thread).  0 or -ENOMEM. */
int rva_filter_tid(rva_filter *f, uint32_t tid);

/* 1 when f (may be NULL) would drop anything, else 0. */
int rva_filter_active(const rva_filter *f);

/* 1 when a pattern of `kind` selects `name`, else 0. */
int rva_filter_matches(const rva_filter *f, int kind, const char *name);

/* The next pattern of f, from index *iter on, that selects no method of t
 * (e.g. to warn that a filter keeps nothing), *iter advanced past it; NULL
 * when there is none.  Start with *iter = 0.  Borrowed from f. */
const char *rva_filter_unused(const rva_filter *f, const rva_trace *t, size_t *iter);

/* Filters a finished trace in place: a call an exclude pattern selects
 * goes with its subtree, as do calls shorter than the minimum duration or
 * deeper than the depth limit; with include patterns only the calls at or
 * below a selected call stay (the outermost one a root); a call a hide
 * pattern selects goes alone, its callees moving up to its caller; threads
 * not selected by tid go.  Kept calls get their depth among kept calls, so
 * a dropped call's time becomes its kept caller's self time; CPU times
 * stay with their calls; start / end become the kept calls' span (unchanged
 * when none is kept).  O(calls + methods × patterns), memory the depth.
 * 0, or -ENOMEM (t then partly filtered: free it). */
int rva_trace_filter(rva_trace *t, const rva_filter *f);

/* ---- practitioner views (views.c): report, focus graph, replay ---- */

/* A method's figures for `rvtrace report`. */
typedef struct rva_rstat {
	uint64_t calls;
	int64_t total;		    /* inclusive, a recursive call inside itself once */
	int64_t self;		    /* self time */
	int64_t sum;		    /* every call's own duration, recursive ones too */
	int64_t min, max;	    /* of one call's duration */
	int64_t self_min, self_max; /* of one call's self time */
	int64_t est_self;	    /* the part of self that is an estimate (rva_mstat) */
} rva_rstat;

/* Figures of every method on thread th (SIZE_MAX: all threads) into *out
 * (t->nmethods entries, caller frees); methods without calls are zero but
 * for a muted function's estimated self time (rva_muted_self; min and max
 * stay measured).  0 or -ENOMEM. */
int rva_report_stats(const rva_trace *t, size_t th, rva_rstat **out);

/* Sort keys of rva_report_order: numbers largest first, names in byte
 * order.  AVG / MIN / MAX are of a call's duration (sum / calls, min, max),
 * or of its self time (self / calls, self_min, self_max) with by_self. */
enum {
	RVA_SORT_TOTAL,
	RVA_SORT_SELF,
	RVA_SORT_CALLS,
	RVA_SORT_AVG,
	RVA_SORT_MIN,
	RVA_SORT_MAX,
	RVA_SORT_NAME,
};

/* The ids of the methods with calls, ordered by keys[0..nkeys) in turn,
 * then by name, into ids (room for t->nmethods); returns their count. */
size_t rva_report_order(const rva_trace *t, const rva_rstat *st, const int *keys, size_t nkeys,
			int by_self, uint32_t *ids);

/* Prints the report table of thread th (SIZE_MAX: all) — Total time, Self
 * time, Calls, then Avg / Min / Max of a call's total time (by_self: of
 * its self time), Function — ordered by keys, at most `top` rows (0: all).
 * Times in adaptive units (us, ms, s; samples for a weighted trace).
 * 0, -ENOMEM or -EIO. */
int rva_report_print(FILE *f, const rva_trace *t, size_t th, const int *keys, size_t nkeys,
		     int by_self, size_t top);

/* A distinct call path leading to a focused method (root first). */
typedef struct rva_backtrace {
	uint32_t *methods; /* the innermost nmethods frames (owned by rva_focus) */
	size_t nmethods;   /* at most RVA_CHAIN_MAX_FRAMES */
	size_t depth;	   /* frames on the whole path */
	uint64_t calls;	   /* outermost calls of the method on this path */
	int64_t incl;	   /* their time */
} rva_backtrace;

/* The call graph below one method: every outermost call of it (a call of
 * it inside itself is part of the graph) merged into one tree whose node 1
 * is the method, its callees below it down to `maxdepth` levels (1: its
 * direct callees; deeper calls are left out, their time still in the
 * inclusive time above them, and `cut` is set), and the distinct paths that
 * lead to it, most time first. */
typedef struct rva_focus {
	uint32_t method; /* the focused method; UINT32_MAX: the whole tree */
	rva_tree graph;	 /* nodes[0] synthetic; nodes[1] the method (n > 1) */
	int cut;	 /* some calls lay deeper than maxdepth */
	size_t maxdepth;
	rva_backtrace *bt;
	size_t nbt;
	uint32_t *pool;
} rva_focus;

/* Builds the focus of `method` (a method id of t) over every thread, or
 * with method UINT32_MAX the whole merged tree (its roots under node 0,
 * maxdepth levels of them; no backtraces).  Memory: the merged tree of t
 * while building, then the focus.  0, -ENOMEM, -E2BIG.  Release with
 * rva_focus_release. */
int rva_focus_build(const rva_trace *t, uint32_t method, size_t maxdepth, rva_focus *out);
void rva_focus_release(rva_focus *fc); /* zeroes *fc; safe on a zeroed one */

/* Prints a focus as `uftrace graph` does: the backtraces, then the graph,
 * one line per node "TIME : (CALLS) NAME", children by time, branches
 * drawn with "+-" and "|".  0, -ENOMEM or -EIO. */
int rva_focus_print(FILE *f, const rva_trace *t, const rva_focus *fc);

/* Columns of rva_replay_print. */
enum { RVA_REPLAY_DURATION = 1, RVA_REPLAY_TID = 2, RVA_REPLAY_ELAPSED = 4 };

/* Prints every thread's calls in time order as `uftrace replay` does: a
 * call with callees as "name() {" at its start and a closing brace with
 * the name in a comment and the duration at its end, a call without callees
 * as "name();" with its duration ("()" left out of names that have a
 * parenthesis already); the threads merged by time (ties: the lower thread
 * index first); the anomaly a comment line before the first line after it.
 * fields: RVA_REPLAY_* columns.  Indentation stops growing at 256 levels
 * (deeper lines carry their depth in brackets), so every line is bounded.
 * 0, -ENOMEM or -EIO. */
int rva_replay_print(FILE *f, const rva_trace *t, unsigned fields);

/* ---- inputs ---- */

typedef enum rva_format {
	RVA_FMT_UNKNOWN = 0,
	RVA_FMT_CAPTURE,   /* Rearview .rvt (tracer/FORMAT.md) */
	RVA_FMT_FOLDED,	   /* folded stacks */
	RVA_FMT_NANOSCOPE, /* Nanoscope text */
	RVA_FMT_CHROME,	   /* Chrome Trace Event JSON */
	RVA_FMT_ANDROID,   /* Android .trace v1-3 and streaming 0xF2/0xF3 */
	RVA_FMT_PERFETTO,  /* Perfetto protobuf trace */
	RVA_FMT_PPROF,	   /* pprof profile.proto (gzip'd as written) */
} rva_format;

/* Guess the format of a buffer from its first bytes. */
rva_format rva_detect(const uint8_t *buf, size_t len);

/* Decode a Rearview capture (tracer/FORMAT.md) held in buf.  On success *out
 * (caller frees) holds one thread, the symbolized method table, the anomaly
 * if any; times are CLOCK_MONOTONIC ns.  -EINVAL (bad header / records),
 * -E2BIG (limits), -ENOMEM, with err filled. */
int rva_capture_decode(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* Streaming summary of a capture: the same decoding as rva_capture_decode,
 * but calls are aggregated as they close instead of stored, so memory is
 * proportional to distinct methods, distinct chains and depth (plus 1 bit
 * per slot while decoding).  trace holds the method table, the thread with
 * no calls, the anomaly and start/end; stats[nmethods] and tree are as
 * rva_method_stats and rva_tree_build would give on the decoded model.  A
 * capture with OFFCPU / THREAD_COUNTERS records: trace's thread holds them
 * (rva_offcpu_set, has_cpu set) and stats' cpu_incl / cpu_self are the
 * times less each call's overlap with the intervals, which, unlike the
 * model's, are not cut where they hold a call's entry or exit (the calls
 * are not kept). */
typedef struct rva_summary {
	rva_trace *trace;
	rva_mstat *stats;
	rva_tree tree;
	/* A capture with CPU data (trace->has_cpu from OFFCPU /
	 * THREAD_COUNTERS records): tree_off[i] is the time tree node i's
	 * calls spent off the CPU, inside their inclusive time (its on-CPU
	 * inclusive time is tree.nodes[i].incl less it; its own self part is
	 * it less its children's); tree_off[0], the synthetic root's, is its
	 * children's summed.  NULL without CPU data.  Owned. */
	int64_t *tree_off;
	uint32_t *anomaly_chain; /* method ids running at the anomaly, root first,
				  * exactly as rva_chain_at on the decoded model
				  * (frames entered or exited at that very time
				  * included); NULL when the capture has no
				  * ANOMALY record */
	size_t anomaly_depth;
	uint32_t *end_chain; /* no ANOMALY record: the chain at trace->end, as
			      * rva_chain_at on the model; NULL when there is
			      * an anomaly, or when the clock is not one whose
			      * rate divides 10^9 within 2^52 ns of the freeze
			      * (then the end is known only after decoding) */
	size_t end_depth;
} rva_summary;

int rva_capture_summarize(const uint8_t *buf, size_t len, rva_summary *out, rva_error *err);
void rva_summary_release(rva_summary *s); /* zeroes *s; safe on a zeroed one */

/* Writes the rva_summary_json document (window < 0) of a streaming summary:
 * the same bytes as rva_summary_json on the decoded model, except when the
 * capture has no ANOMALY record and end_chain is NULL: "chains_at_anomaly"
 * is then empty (the model gives the chain at the end; decode it when that
 * is needed).  0, -ENOMEM or -EIO. */
int rva_summary_json_from(FILE *f, const rva_summary *s, size_t ntop);

/* ---- the shuffled transport form (tracer/FORMAT.md §3) ---- */

/* A capture as it travels to the server (Compression COMPRESSION_ZSTD_
 * SHUFFLED, then zstd): the same bytes and length, but its slot area is
 * transposed in blocks of RVA_SHUFFLE_BLOCK slots so that byte k of every
 * slot of a block stands together.  Only the header's magic, slot_count and
 * slots_offset are read; the rest of the capture is not checked (decode it
 * for that). */
#define RVA_SHUFFLE_BLOCK 8192u

/* The form of the capture cap[0..len) into out[0..len) (caller's, not
 * overlapping cap).  0, or -EINVAL when the header's magic is wrong or its
 * slot area does not lie within len. */
int rva_shuffle_buf(const uint8_t *cap, size_t len, uint8_t *out);

/* Streaming encoder over a capture file: reads the form of the size bytes
 * of fd (from offset 0, by pread; fd stays the caller's and is not moved)
 * one block at a time, whatever the capture's size.  new: 0, -EINVAL (not a
 * capture, as rva_shuffle_buf), -ENOMEM or -errno; *out freed with
 * rva_shuffler_free (NULL is a no-op).  read: bytes written into buf
 * (≤ n), 0 once all size bytes were read, -EIO when the file is shorter
 * than size, or -errno. */
typedef struct rva_shuffler rva_shuffler;
int rva_shuffler_new(int fd, uint64_t size, rva_shuffler **out);
ssize_t rva_shuffler_read(rva_shuffler *s, uint8_t *buf, size_t n);
void rva_shuffler_free(rva_shuffler *s);

/* Streaming decoder into a buffer: the form, written in pieces of any size,
 * comes out as the capture in out[0..cap) (borrowed; must outlive the
 * unshuffler).  new: 0 or -ENOMEM; free with rva_unshuffler_free (NULL is a
 * no-op).  write: 0, -E2BIG (more than cap bytes), -EINVAL (the header is
 * not a capture's or its slot area does not fit cap); errors are sticky.
 * finish: the capture's length in *len, or -EINVAL when the form ended
 * inside the header or the slot area (truncated), or the sticky error. */
typedef struct rva_unshuffler rva_unshuffler;
int rva_unshuffler_new(uint8_t *out, size_t cap, rva_unshuffler **u);
int rva_unshuffler_write(rva_unshuffler *u, const uint8_t *p, size_t n);
int rva_unshuffler_finish(rva_unshuffler *u, size_t *len);
void rva_unshuffler_free(rva_unshuffler *u);

/* Writes s to f escaped for XML and HTML text and quoted attributes: & < >
 * " ' as entities, control characters as &#xFFFD;.  NULL writes nothing. */
void rva_xml_escape(FILE *f, const char *s);

/* ---- progress ---- */

/* Progress of a long decode or import: bytes of input processed so far, of
 * total (the input's length; for a capture, its file_size field, which may
 * be less).  done never decreases; the first call has done 0 and, on
 * success, the last has done == total.  Calls are bounded by the input size
 * (at most 3 + 2 per 2 MiB of capture slots; importers of other formats
 * report only the start and the end), never one per event, so the callback
 * may print.
 * It runs on the calling thread and must not touch the trace being built. */
typedef void (*rva_progress_fn)(void *arg, uint64_t done, uint64_t total);
typedef struct rva_progress {
	rva_progress_fn fn;
	void *arg;
} rva_progress;

/* rva_capture_decode, rva_capture_summarize, rva_import and rva_import_file
 * reporting progress to p (NULL: none).  rva_import_file_progress reports
 * the decoding only, not the reading of the file. */
int rva_capture_decode_progress(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err,
				const rva_progress *p);
int rva_capture_summarize_progress(const uint8_t *buf, size_t len, rva_summary *out, rva_error *err,
				   const rva_progress *p);
int rva_import_progress(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err,
			const rva_progress *p);
int rva_import_file_progress(const char *path, rva_trace **out, rva_error *err,
			     const rva_progress *p);

/* Reads a whole file of at most 1 GiB into *buf (caller frees; not
 * NUL-terminated), its size in *len.  0, -EFBIG, -ENOMEM or -errno. */
int rva_file_read(const char *path, uint8_t **buf, size_t *len, rva_error *err);

/* Folded stacks (UTF-8 or UTF-16 with BOM, LF or CRLF); malformed lines are
 * skipped and counted in dropped.  The result is weighted. */
int rva_folded_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* pprof profile.proto (plain; rva_import inflates gzip'd ones): samples as
 * aggregated stacks of synthetic calls lasting the sample values, on one
 * thread named "pprof <type>/<unit>" after the sample type used (the
 * profile's default, else its last).  Times (ns … s) give a trace in ns,
 * other units a weighted trace.  -EINVAL when buf is not a profile. */
int rva_pprof_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* Nanoscope text: "<ns>:<name>" enters (a leading '+' is allowed), "<ns>:POP"
 * exits; one thread. */
int rva_nanoscope_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* Android method trace (SOURCES.md §7.1-7.2): key section + data, a bare
 * data section, or ART streaming.  Wall clock when there are two; µs → ns.
 * Exits of frames entered before tracing open those frames at the thread's
 * first timestamp; a file whose data section is unreadable imports as its
 * thread list with dropped = 1. */
int rva_android_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* Chrome Trace Event JSON, array or object form; truncated arrays are
 * repaired; B/E and X slices become calls (µs → ns), other phases skipped. */
int rva_chrome_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* Perfetto protobuf: SLICE_BEGIN/SLICE_END track events (inline or
 * interned names), one thread per track (counter tracks are none), sorted
 * by time; instants and counters skipped.  -EINVAL when no packet parses. */
int rva_perfetto_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* Detect and import buf.  -EPROTONOSUPPORT for an unknown format. */
int rva_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err);

/* Compressed input (inflate.c): gzip or zstd by magic bytes. */
enum { RVA_COMPRESSED_NONE = 0, RVA_COMPRESSED_GZIP = 1, RVA_COMPRESSED_ZSTD = 2 };
/* Which compression buf starts with (RVA_COMPRESSED_*). */
int rva_compression_of(const uint8_t *buf, size_t len);
/* Inflates zstd frames in[0..len) (every frame; any content size) into a
 * new heap buffer *out (caller frees) of *outlen bytes, at most max bytes
 * whatever the frames declare: one buffer of the declared size when the
 * first frame declares it (no realloc copies of a large capture), else
 * grown geometrically.  0, -EINVAL (not zstd, damaged or truncated),
 * -E2BIG (past max), -ENOMEM; *out NULL on error.  Any thread.  The one
 * bounded zstd inflater of the tree (rva_decompress's zstd, the server's
 * payloads). */
int rva_unzstd(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen);
/* Inflates a gzip (every member) or zstd (every frame) buffer into a new
 * heap buffer *out (caller frees) of *outlen bytes, refusing once it would
 * pass max bytes, whatever the input declares.  0, -EFBIG (past max),
 * -EINVAL (damaged or truncated; err says which), -ENOMEM. */
int rva_decompress(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *outlen,
		   rva_error *err);

/* Read a whole file (at most 1 GiB) and import it. */
int rva_import_file(const char *path, rva_trace **out, rva_error *err);

/* ---- outputs ---- */

/* Call depth the folded, pprof and SVG exports draw: what lies deeper is
 * folded into one "[deeper frames truncated]" frame (folded, pprof) or not
 * drawn and noted (SVG), so an export's size is linear in the trace, never
 * quadratic in its depth (issue 18 item 2, issue 20: 1 M nested calls). */
#define RVA_EXPORT_MAX_DEPTH 512
#define RVA_TRUNCATED_FRAME  "[deeper frames truncated]"

/* Folded stacks: one line per distinct path, most self time first, self
 * time in µs (weights for a weighted trace), names with ';' and newlines
 * replaced by '_'.  Paths deeper than RVA_EXPORT_MAX_DEPTH end in
 * RVA_TRUNCATED_FRAME, which carries the self time of everything below.
 * Memory linear in the merged tree.  0, -ENOMEM, -EIO. */
int rva_export_folded(FILE *f, const rva_trace *t);

/* pprof (gzip'd profile.proto, pprof.c): one sample per node of the call
 * tree cut at RVA_EXPORT_MAX_DEPTH levels (rva_tree_build_capped) with
 * values wall nanoseconds of self time and calls (or samples for weighted
 * traces), leaf first; a path cut there ends in an RVA_TRUNCATED_FRAME
 * leaf carrying everything below, so no stack exceeds
 * RVA_EXPORT_MAX_DEPTH + 1 frames and the sums over all samples are the
 * trace's totals.  Memory: the capped tree and the packed profile.  0,
 * -E2BIG (more than 2^24 methods), -ENOMEM, -EIO. */
int rva_export_pprof(FILE *f, const rva_trace *t);

/* A call tree given node by node, for rva_export_pprof_tree: node i has
 * name[i] and parent[i] (< i; -1 for a root) and the values
 * values[i * nvalues .. + nvalues) of the sample types types[k] = {type,
 * unit} (e.g. {"wall", "nanoseconds"}; the first is the default).  All
 * borrowed. */
#define RVA_PPROF_MAX_VALUES 4
typedef struct rva_pprof_tree {
	size_t n, nvalues;
	const char *const *name;
	const int64_t *parent;
	const int64_t *values;
	const char *const (*types)[2];
} rva_pprof_tree;

/* pprof (gzip'd profile.proto) of a call tree, e.g. a fleet aggregate: one
 * sample per node with a non-zero value (values may be negative, as in a
 * difference of two profiles), its stack leaf first; one Function and one
 * Location per distinct name.  0, -EINVAL (a parent not before its child,
 * nvalues outside 1..RVA_PPROF_MAX_VALUES, more than 2^24 nodes),
 * -ENOMEM, -EIO. */
int rva_export_pprof_tree(FILE *f, const rva_pprof_tree *tr);

/* Chrome Trace Event JSON, object form (traceEvents, displayTimeUnit "ns"):
 * per thread a thread_name M event and its calls in the order of a
 * pre-order walk, each call with a length a complete event ("ph":"X", ts,
 * dur), each zero-length call a B and an E event side by side: an order
 * that survives a viewer's stable sort by ts (at equal ts callers come
 * first and are no shorter, as readers that sort X events longest first
 * expect; speedscope, which queues begins and ends apart, opens each
 * zero-length call before it closes it; RVTRACE.md "Outputs").  ts and dur
 * in µs since the trace start (t->start), written exactly: an integer or
 * three decimals.  A trace with an anomaly gets a global instant event
 * ("ph":"i","s":"g","cat":"anomaly") named after it.  Threads with off-CPU
 * intervals or counters get X slices "off-CPU (preempted|blocked)" (cat
 * "offcpu") and counter events ("ph":"C") "switch-outs tid N", "page
 * faults tid N", "task-clock tid N" (tracer/RVTRACE.md); lock waits come
 * with their flow arrows (rva_locks_chrome).  Memory constant.  0 or
 * -EIO. */
int rva_export_chrome(FILE *f, const rva_trace *t);

/* ---- lock waits (captures' LOCK_WAIT records; tracer/analysis/locks.c) ---- */

/* The lock waits of one method that waited. */
typedef struct rva_lock_stat {
	int64_t method;		   /* method id that waited; -1 unknown */
	uint64_t waits;		   /* how many waits */
	int64_t total;		   /* time waited, the trace's unit */
	uint32_t top_holder;	   /* holder tid it waited for longest; 0 unknown */
	int64_t top_holder_method; /* that holder's method id; -1 unknown */
	int64_t top_holder_ns;	   /* time waited for that holder in that method */
} rva_lock_stat;

/* Per method that waited, longest total first: *out (caller frees; NULL
 * when none) of *n.  0 or -ENOMEM.  Reads t only. */
int rva_lock_stats(const rva_trace *t, rva_lock_stat **out, size_t *n);
/* `rvtrace summary`'s section "lock waits by method" (the ntop first rows);
 * prints nothing when t has no lock waits.  0, -ENOMEM or -EIO. */
int rva_locks_print(FILE *f, const rva_trace *t, size_t ntop);
/* The summary JSON's field: `,"lock_waits":[...]` (tracer/RVTRACE.md),
 * nothing when t has no lock waits.  0, -ENOMEM or -EIO. */
int rva_locks_json(FILE *f, const rva_trace *t, size_t ntop);
/* `why METHOD`'s block: every wait of `method` (an id of t), its lock and
 * holder; nothing when it never waited.  0 or -EIO. */
int rva_locks_why(FILE *f, const rva_trace *t, uint32_t method);
/* Chrome JSON events of the lock waits, each preceded by a comma unless
 * *first (then cleared): the wait on the waiter's track, the hold on the
 * holder's and a flow arrow from the holder to the waiter; times in µs
 * relative to t0 (the export's origin, rva_export_chrome).  0 or -EIO. */
int rva_locks_chrome(FILE *f, const rva_trace *t, int64_t t0, int *first);

/* Nanoscope text of thread th (enters "<ns>:<name>", exits "<ns>:POP"). */
int rva_export_nanoscope(FILE *f, const rva_trace *t, size_t th);

/* Perfetto protobuf: a TrackDescriptor per thread (uuid = index + 1), one
 * interning packet (iid = method id + 1), BEGIN/END TrackEvents.  A thread
 * with off-CPU intervals or counters gets child tracks of its track (uuid
 * (index + 1) << 32 | k): k = 1 "thread state", slices "Running",
 * "Runnable (preempted)", "Blocked (sleeping)"; counter tracks (TYPE_COUNTER
 * events) k = 2 "switch-outs: blocked", 3 "switch-outs: preempted" (the
 * intervals so far), and from its counters 4 "minor faults", 5 "major
 * faults", 6 "task-clock" (ns): 0 at `since`, the totals at `at`.
 * Lock waits (t->lock_waits): the i-th wait is a slice "lock wait (KIND)"
 * on child track k = 7 "lock waits" of the waiter's thread track, which
 * ends flow i + 1 (terminating_flow_ids); with the holder known, the flow
 * begins at an instant "lock held in METHOD" ("signalled in METHOD" for a
 * condition variable) at the wait's start on child track k = 8 "locks
 * held" of the holder's; a tid no thread has gets a thread track, uuid
 * nthreads + 1 + its rank among such tids.  The app's frames
 * (t->frames) are slices "frame" / "frame (late)" on child track k = 9
 * "frames" of the first thread's track (a frame overlapping the one before
 * starts at its end).  0, -ENOMEM, -EIO. */
int rva_export_perfetto(FILE *f, const rva_trace *t);

/* Where a trace came from, as exports state it; every member may be NULL
 * (unknown).  Borrowed. */
typedef struct rva_export_meta {
	const char *app, *version, *device, *model;
} rva_export_meta;

/* rva_export_perfetto, and the trace's origin and anomaly: with meta not
 * NULL or an anomaly (t->has_anomaly), a process track (uuid
 * RVA_PERFETTO_PROCESS_UUID; ProcessDescriptor pid of the first thread,
 * process_name the app, process_labels "version V", "device D", "model
 * M") that the thread tracks join by pid, and a child track "rearview"
 * (RVA_PERFETTO_MARK_UUID) holding an instant (TYPE_INSTANT) at the
 * anomaly, named after it, or without one an instant "capture" at the
 * trace's start; the instant's debug annotations carry app, version,
 * device and model (those known).  0, -ENOMEM, -EIO. */
#define RVA_PERFETTO_PROCESS_UUID 0xffffffff00000001ull
#define RVA_PERFETTO_MARK_UUID	  0xffffffff00000002ull
int rva_export_perfetto_meta(FILE *f, const rva_trace *t, const rva_export_meta *meta);

/* speedscope JSON, one evented profile per thread with calls (unit
 * nanoseconds, or "none" for a weighted trace). */
int rva_export_speedscope(FILE *f, const rva_trace *t);

/* Android .trace v3, non-streaming, clock=dual (both clocks carry the wall
 * time), 14-byte records in time order, thread ids 1..n, method ids
 * (id + 1) << 2; every method line has non-empty class, name, signature
 * and source columns ("pkg.Class.m(sig)", "ns::C::m(args)", "module+0x1f",
 * "module!sym" split at the last '.', the last "::", the module; other
 * names get class "native"; no signature: "()V"; source "unknown").
 * Times are µs since the first event. -E2BIG over 65535 threads. */
int rva_export_android(FILE *f, const rva_trace *t);

/* Frames an SVG flame graph draws at most (whole levels, top down). */
#define RVA_SVG_MAX_FRAMES 20000u

/* Self-contained interactive SVG flame graph of all threads (click to zoom,
 * search, tooltips); names are XML-escaped.  title may be NULL.  Level of
 * detail: frames narrower than a pixel are merged into their parents, and
 * at most RVA_SVG_MAX_FRAMES frames in at most RVA_EXPORT_MAX_DEPTH levels
 * are drawn; the graph says how deep the trace went and how many frames it
 * merged ("truncated" and "merged" notes).  Memory linear in the tree of
 * paths up to the depth cap (rva_tree_build_capped).  0, -ENOMEM, -EIO. */
int rva_export_svg(FILE *f, const rva_trace *t, const char *title);

#ifdef __cplusplus
}
#endif
#endif
