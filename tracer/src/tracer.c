/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracer.c — librvtrace's core: the clock, ring buffers, the thread registry
 * and the control side of the start/stop protocol (trace-inline.h explains
 * the shared word and, under DESIGN, the handover without a signal).
 *
 * Invariants:
 * - Only the traced thread writes its ring slots, cur, base, limit, bound,
 *   step, seen, hi, wrapped and its shadow stack, and only inside a trace
 *   point (busy = 1).  The control
 *   side touches a ring before it publishes it in start (release), and after
 *   a handover (handover_locked()) has taken it away from the thread.
 * - A ring shell (struct rvt_ring) that a live thread's `seen` or
 *   `prev_ring` points at is never reused for another ring (ring_new()), so
 *   a published ring is never mistaken for one the thread adopted before.
 * - The registry mutex guards the records; it is never taken on the trace
 *   point path nor in a signal handler.
 * - A record's `t` points into a live thread's TLS: the thread's key
 *   destructor marks the record exited (under the mutex) before the TLS goes.
 * - At most max_buffers rings are mapped at a time, frozen ones included.
 *
 * This file is compiled without -finstrument-functions; nothing here traces.
 */
#include "tracer-int.h"
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <elf.h>
#include <link.h>

RVT_API __thread struct rvt__thread rvt__tls __attribute__((tls_model("initial-exec")));

struct rvt_clock rvt_clock;
uint64_t rvt_method_base;

struct rec {
	pid_t tid;
	struct rvt__thread *t; /* NULL once the thread exited */
	struct rvt_ring *ring; /* owned; NULL when none */
	int tracing;
	int is_ui;
	int resume;	   /* stopped by a capture that found no spare: restart */
	uintptr_t *shadow; /* the thread's shadow stack (trace-inline.h), owned;
			    * NULL until it first traces, freed when it exits */
	char name[32];
};

static struct rvt_mu reg_lock = RVT_MU_INIT;
static struct rec *recs;
static size_t nrecs, caprecs;
static unsigned live_rings;
static size_t cfg_buffer_bytes = RVT_DEFAULT_BUFFER_BYTES;
static unsigned cfg_max_buffers = RVT_DEFAULT_MAX_BUFFERS;
static struct rvt_ring *shells; /* unused ring shells, linked by next */
static pthread_key_t exit_key;
static int initialised;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_error;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static void (*_Atomic threads_changed)(void);

void rvt_set_threads_changed_hook(void (*fn)(void))
{
	atomic_store(&threads_changed, fn);
}

static void notify_threads_changed(void)
{
	void (*fn)(void) = atomic_load(&threads_changed);
	if (fn)
		fn();
}

pid_t rvt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- clock ---------------------------------------------------------------- */

#if defined(__x86_64__)
static uint64_t mono_raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

#if defined(__x86_64__)
/* The counter and CLOCK_MONOTONIC_RAW read together when the clock was
 * first measured: rvt_clock_hz() measures the rate again against them over
 * the whole run.  Written once under clock_once; 0 when the rate is exact
 * (CPUID) and needs no anchor. */
static uint64_t anchor_counter, anchor_ns;

/* The counter and CLOCK_MONOTONIC_RAW at one instant: the clock read between
 * two counter reads, taken again (up to 8 times) while the two are more than
 * 2^15 ticks (~13 µs at 2.4 GHz) apart — a preemption between the reads would
 * otherwise skew the rate by its length. */
static void pair_read(uint64_t *counter, uint64_t *ns)
{
	for (int i = 0; i < 8; i++) {
		uint64_t a = rvt__counter();
		*ns = mono_raw_ns();
		uint64_t b = rvt__counter();
		*counter = a + (b - a) / 2;
		if (b - a < (1u << 15))
			return;
	}
}
#endif

static void clock_measure(void)
{
#if defined(__x86_64__)
	/* The kernel does not export the TSC rate to user space on most
	 * machines (the perf mmap page's time_mult is 0 on a KVM guest).  CPUID
	 * leaf 0x15 gives it on recent Intel parts (crystal × ratio); otherwise
	 * (AMD, most VMs) a first estimate comes from a 50 µs spin against
	 * CLOCK_MONOTONIC_RAW — enough to choose the shift — and rvt_clock_hz()
	 * refines it at each capture over the time since.  Sleeping 10 ms here
	 * instead cost every traced process 10 ms at start (issue 14: all of a
	 * short zstd run's overhead). */
	unsigned a = 0, b = 0, c = 0, d = 0;
	if (__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid_count(0x15, 0, a, b, c, d);
		if (a && b && c) {
			rvt_clock.hz = (uint64_t)c * b / a;
			rvt_clock.arch = 1;
			goto shift;
		}
	}
	uint64_t t0, c0, t1, c1;
	pair_read(&c0, &t0);
	do
		pair_read(&c1, &t1);
	while (t1 - t0 < 50 * 1000);
	anchor_counter = c0;
	anchor_ns = t0;
	rvt_clock.hz = (uint64_t)((unsigned __int128)(c1 - c0) * 1000000000u / (t1 - t0));
	rvt_clock.arch = 1;
#elif defined(__aarch64__)
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	rvt_clock.hz = f ? f : 1000000000u;
	rvt_clock.arch = 2;
#else
	rvt_clock.hz = 1000000000u;
	rvt_clock.arch = 3;
#endif
#if defined(__x86_64__)
shift:;
#endif
	/* FORMAT.md: the smallest shift for which 2^32 ticks span ≥ 180 s.
	 * RV_TRACE_CLOCK_SHIFT (0..31) overrides it, so that tests see the
	 * shifted counter wrap within seconds. */
	unsigned s = 0;
	while (s < 31 && ((uint64_t)1 << (32 + s)) < rvt_clock.hz * 180u)
		s++;
	const char *e = getenv("RV_TRACE_CLOCK_SHIFT");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);
		if (!*end && v <= 31)
			s = (unsigned)v;
	}
	rvt_clock.shift = s;
}

int rvt_clock_init(void)
{
	pthread_once(&clock_once, clock_measure);
	return 0;
}

uint64_t rvt_clock_hz(void)
{
	rvt_clock_init();
#if defined(__x86_64__)
	if (anchor_ns) {
		uint64_t c1, t1;
		pair_read(&c1, &t1);
		/* Past 20 ms the spread of the two reads (tens of ns) is below
		 * 10 kHz of any TSC rate; before that the start estimate stands. */
		if (t1 - anchor_ns >= 20 * 1000 * 1000) {
			uint64_t hz = (uint64_t)((unsigned __int128)(c1 - anchor_counter) *
						 1000000000u / (t1 - anchor_ns));
			/* Round to 10 kHz, so that captures of one process agree. */
			return (hz + 5000) / 10000 * 10000;
		}
	}
#endif
	return rvt_clock.hz;
}

/* The main executable's lowest mapping (FORMAT.md method_base). */
static int find_base(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uint64_t lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			uint64_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			a &= ~(uint64_t)(getpagesize() - 1);
			if (a < lo)
				lo = a;
		}
	*(uint64_t *)arg = lo == UINT64_MAX ? 0 : lo;
	return 1; /* the first entry is the main program */
}

/* ---- rings ---------------------------------------------------------------- */

/* 1 if a live thread's `seen` or `prev_ring` is r (the rings it last
 * adopted and left). */
static int shell_seen_locked(const struct rvt_ring *r)
{
	for (size_t i = 0; i < nrecs; i++) {
		struct rvt__thread *t = recs[i].t;
		if (t &&
		    (RVT__LD_ACQ(t->seen) == (uintptr_t)r || RVT__LD(t->prev_ring) == (uintptr_t)r))
			return 1;
	}
	return 0;
}

/* `bytes` of anonymous memory aligned to RVT_RING_CHUNK when at least
 * that large (the slack of a larger mapping unmapped), or MAP_FAILED. */
static void *ring_map(size_t bytes)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	if (bytes < RVT_RING_CHUNK)
		return mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
	size_t span = bytes + RVT_RING_CHUNK;
	uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (m == MAP_FAILED)
		return m;
	uintptr_t a = ((uintptr_t)m + RVT_RING_CHUNK - 1) & ~(uintptr_t)(RVT_RING_CHUNK - 1);
	uint8_t *at = (uint8_t *)a;
	if (at > m)
		munmap(m, (size_t)(at - m));
	if (m + span > at + bytes)
		munmap(at + bytes, (size_t)(m + span - (at + bytes)));
	return at;
}

/*
 * Maps a new ring; `spare` allows one above the limit (a capture's spare,
 * while the frozen ring awaits its write).  The shell is a fresh one or an
 * unused one no live thread has as `seen` or `prev_ring` (such a thread
 * would take the new ring for its old one: skip adopting it, or take its
 * prev_* for the new ring's end).  NULL at the limit or when out of memory.
 */
static struct rvt_ring *ring_new(int spare)
{
	if (live_rings >= cfg_max_buffers + (spare ? 1u : 0u))
		return NULL;
	struct rvt_ring *r = NULL, **pp = &shells;
	while (*pp && shell_seen_locked(*pp))
		pp = &(*pp)->next;
	if (*pp) {
		r = *pp;
		*pp = r->next;
		memset(r, 0, sizeof(*r));
	} else {
		r = calloc(1, sizeof(*r));
	}
	if (!r)
		return NULL;
	r->nslots = cfg_buffer_bytes / 8;
	r->map_bytes = r->nslots * 8;
	/* Segments (trace-inline.h): 64 to a ring, of at least 512 slots. */
	r->step = r->nslots / 64 > 512 ? r->nslots / 64 : r->nslots < 512 ? r->nslots : 512;
	/* MAP_NORESERVE and no pre-faulting: pages become resident as written
	 * (or a chunk ahead of the writer, rvt_ring_fill_ahead).  Aligned to
	 * a chunk, so that each can be one huge page. */
	void *m = ring_map(r->map_bytes);
	if (m == MAP_FAILED) {
		r->next = shells;
		shells = r;
		return NULL;
	}
	static uint64_t seq;
	r->slots = m;
	r->seq = ++seq;
	live_rings++;
	return r;
}

static void ring_free(struct rvt_ring *r)
{
	if (!r)
		return;
	munmap(r->slots, r->map_bytes);
	r->slots = NULL;
	r->next = shells;
	shells = r;
	live_rings--;
}

/* 0: MADV_POPULATE_WRITE works here; 1: it does not (Linux < 5.14). */
static _Atomic int fill_refused;
/* 1: fill with huge pages, 0: with small ones, -1: not known yet. */
static _Atomic int fill_huge = -1;

/* 1 when asking for a huge page cannot stall in compaction: THP's defrag
 * setting (the bracketed word of /sys/kernel/mm/transparent_hugepage/defrag)
 * is "defer" or "never".  Under "madvise" (Debian's default), "always" and
 * "defer+madvise" a madvised fault with no free huge page compacts memory
 * first: 5.5 ms for a 2 MiB chunk on our VM against 0.6 ms for its small
 * pages (tracer/BENCHMARKS.md), all of it the program's CPU time. */
static int huge_cheap(void)
{
	char b[128];
	int fd = open("/sys/kernel/mm/transparent_hugepage/defrag", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	return strstr(b, "[defer]") != NULL || strstr(b, "[never]") != NULL;
}

void rvt_ring_fill_ahead(struct rvt_ring *r, uint64_t cur, int wrapped)
{
	uintptr_t base = (uintptr_t)r->slots, end = base + r->map_bytes;
	uintptr_t pos = base + cur * sizeof(uint64_t);
	/* The chunk after the one the writer is in, once it is half-way
	 * through that one (a thread that writes little gets nothing ahead). */
	uintptr_t next = (pos | (RVT_RING_CHUNK - 1)) + 1;
	if (wrapped || r->map_bytes < RVT_RING_CHUNK || next + RVT_RING_CHUNK > end ||
	    next - pos > RVT_RING_CHUNK / 2 || r->filled >= next + RVT_RING_CHUNK ||
	    atomic_load(&fill_refused))
		return;
	/* A huge page where the kernel gives them for the asking without
	 * compacting memory first (huge_cheap); the writer's own faults
	 * elsewhere stay small pages. */
	if (atomic_load(&fill_huge) < 0)
		atomic_store(&fill_huge, huge_cheap());
	if (atomic_load(&fill_huge))
		(void)madvise((void *)next, RVT_RING_CHUNK, MADV_HUGEPAGE);
	if (madvise((void *)next, RVT_RING_CHUNK, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
		atomic_store(&fill_refused, 1);
	r->filled = next + RVT_RING_CHUNK;
}

/* ---- shadow stacks ------------------------------------------------------- */

/* Each frame: its stack pointer, then its method value (trace-inline.h). */
#define SHADOW_BYTES (RVT_SHADOW_FRAMES * RVT_SHADOW_FRAME)

/* The record's shadow stack, mapped once (MAP_NORESERVE: pages as deep as
 * the thread's calls go).  0 or -ENOMEM. */
static int shadow_get_locked(struct rec *r)
{
	if (r->shadow)
		return 0;
	void *sh = mmap(NULL, SHADOW_BYTES, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh == MAP_FAILED)
		return -ENOMEM;
	r->shadow = sh;
	return 0;
}

static void shadow_free(struct rec *r)
{
	if (r->shadow)
		munmap(r->shadow, SHADOW_BYTES);
	r->shadow = NULL;
}

/* ---- registry ------------------------------------------------------------- */

static struct rec *find_rec(pid_t tid)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].tid == tid)
			return &recs[i];
	return NULL;
}

static void thread_name_of(pid_t tid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
}

/*
 * A clean record for a live thread `tid`: the record of an exited thread with
 * the same (reused) tid, or an emptied one, is recycled (its ring is freed),
 * else one is appended.  NULL when out of memory.
 */
static struct rec *rec_slot_locked(pid_t tid)
{
	struct rec *r = NULL;
	for (size_t i = 0; i < nrecs && !r; i++)
		if (!recs[i].t && (recs[i].tid == tid || recs[i].tid == 0))
			r = &recs[i];
	if (!r) {
		if (nrecs == caprecs) {
			size_t nc = caprecs ? caprecs * 2 : 16;
			struct rec *n = realloc(recs, nc * sizeof(*n));
			if (!n)
				return NULL;
			recs = n;
			caprecs = nc;
		}
		r = &recs[nrecs++];
		r->ring = NULL;
		r->shadow = NULL;
	}
	ring_free(r->ring);
	shadow_free(r); /* a recycled record's thread has exited */
	memset(r, 0, sizeof(*r));
	r->tid = tid;
	return r;
}

/* At the buffer limit, the ring of an exited thread nobody captured goes
 * first: live threads matter more.  Returns 1 if one was freed. */
static int reclaim_exited_locked(void)
{
	for (size_t i = 0; i < nrecs; i++)
		if (!recs[i].t && recs[i].ring) {
			ring_free(recs[i].ring);
			recs[i].ring = NULL;
			recs[i].tid = 0; /* empty: recycled by rec_slot_locked() */
			return 1;
		}
	return 0;
}

static int register_locked(void)
{
	pid_t tid = rvt_gettid();
	struct rec *r = find_rec(tid);
	if (r && r->t)
		return tid;
	r = rec_slot_locked(tid);
	if (!r)
		return -ENOMEM;
	r->t = &rvt__tls;
	thread_name_of(tid, r->name, sizeof(r->name));
	pthread_setspecific(exit_key, r->t);
	return tid;
}

/*
 * Sets old->end_pos and old->wrapped to where thread t left ring `old`, after
 * a handover took it away: the reader side of the seqlock in trace-inline.h's
 * DESIGN (partner: rvt__adopt).  The thread may adopt its new ring at any
 * moment meanwhile, but only once.
 */
static void ring_end_locked(struct rvt__thread *t, struct rvt_ring *old)
{
	for (;;) {
		uintptr_t s = RVT__LD_ACQ(t->seen);
		if (s == RVT__SEEN_CHANGING) {
			sched_yield(); /* an adoption is under way */
			continue;
		}
		if (s == (uintptr_t)old) {
			uint64_t *cur = RVT__LD_ACQ(t->cur);
			int w = RVT__LD_ACQ(t->wrapped);
			if (RVT__LD(t->seen) != s)
				continue; /* adopted meanwhile: prev_* now say it */
			old->end_pos = (uint64_t)(cur - old->slots);
			old->wrapped = w;
		} else if (RVT__LD(t->prev_ring) == (uintptr_t)old) {
			old->end_pos = (uint64_t)(t->prev_cur - old->slots);
			old->wrapped = t->prev_wrapped;
		} /* else it never entered `old`: its end_pos stands */
		return;
	}
}

/* ---- the gates (trace-inline.h, "The gate") ------------------------------- */

/* Every inline-mode module's gate byte, registered by the module's
 * constructor and unregistered by its destructor (so a dlclose'd module's
 * byte is never written).  All are open (1) while some thread traces and
 * closed (0) while none does; a gate that found no room is opened for good.
 * Only the trace points read them (a plain load: a thread that sees a
 * change late records from a little later or stops a little later, which
 * a start or stop is anyway).  Lock order: reg_lock before gate_lock. */
#define GATES_MAX 1024u
static struct rvt_mu gate_lock = RVT_MU_INIT;
static unsigned char *gates[GATES_MAX];
static size_t ngates;
static unsigned char gates_open; /* under gate_lock */
static unsigned gates_gen;	 /* under gate_lock: changes of the list */

void rvt__gate_register(unsigned char *gate)
{
	unsigned char v = 1; /* no room: open for good */
	rvt_mu_lock(&gate_lock);
	if (ngates < GATES_MAX) {
		gates[ngates++] = gate;
		gates_gen++;
		v = gates_open;
	}
	__atomic_store_n(gate, v, __ATOMIC_RELAXED);
	rvt_mu_unlock(&gate_lock);
	if (v)
		rvt_mute_module_added();
}

void rvt__gate_unregister(unsigned char *gate)
{
	rvt_mu_lock(&gate_lock);
	for (size_t i = 0; i < ngates; i++)
		if (gates[i] == gate) {
			gates[i] = gates[--ngates];
			gates_gen++;
			break;
		}
	rvt_mu_unlock(&gate_lock);
}

size_t rvt_gates_list(uintptr_t *out, size_t max, unsigned *gen)
{
	size_t n = 0;
	rvt_mu_lock(&gate_lock);
	for (size_t i = 0; i < ngates && n < max; i++)
		out[n++] = (uintptr_t)gates[i];
	*gen = gates_gen;
	rvt_mu_unlock(&gate_lock);
	return n;
}

static void gates_set(unsigned char open)
{
	rvt_mu_lock(&gate_lock);
	if (gates_open != open) {
		gates_open = open;
		for (size_t i = 0; i < ngates; i++)
			__atomic_store_n(gates[i], open, __ATOMIC_RELAXED);
	}
	rvt_mu_unlock(&gate_lock);
}

/* Under reg_lock: closes the gates when no thread traces any more. */
static void gates_update_locked(void)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].tracing && recs[i].t)
			return;
	gates_set(0);
}

/*
 * Moves r's thread from its ring (r->ring) to `next` (NULL: stops it) — the
 * control side of trace-inline.h's DESIGN — and records the old ring's end
 * position.  On return no trace point of the thread writes the old ring
 * again.  Returns 0, -EDEADLK (the calling thread is r's and is inside one of
 * its own trace points: a signal handler) or -ETIMEDOUT (a trace point did
 * not end within 2 s); on error nothing changed.
 */
static int handover_locked(struct rec *r, struct rvt_ring *next)
{
	struct rvt__thread *t = r->t;
	assert(t && r->tracing);
	uintptr_t prev = RVT__LD(t->start);
	/* Partner: the acquire load of start in rvt__adopt (the new ring's
	 * slots and end_pos are set). */
	RVT__ST_REL(t->start, (uintptr_t)next);
	int rc = 0;
	if (r->tid == rvt_gettid()) {
		/* Our own trace points run in program order: only a handler that
		 * interrupted one could find busy = 1 (2 is this very call's
		 * librvtrace code: no trace point). */
		if (RVT__LD_ACQ(t->busy) == 1)
			rc = -EDEADLK;
	} else {
		/* Partner: the signal fence between busy = 1 and the load of start
		 * in every trace point (trace-inline.h, DESIGN). */
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
			rc = -errno;
		/* Partner of the acquire: the trace point's release of busy = 0,
		 * which orders its slots and cur before it.  RVT_BUSY_OWN is no
		 * trace point (trace-inline.h, DESIGN): nothing to wait for. */
		uint64_t deadline = 0;
		for (unsigned i = 0; rc == 0 && RVT__LD_ACQ(t->busy) == 1; i++) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
			if (i == 0)
				deadline = ns + 2000000000u;
			else if (ns > deadline)
				rc = -ETIMEDOUT;
			if (i < 64) {
				sched_yield();
			} else {
				struct timespec nap = {0, 20000};
				nanosleep(&nap, NULL);
			}
		}
	}
	if (rc) {
		RVT__ST(t->start, prev);
		return rc;
	}
	if (r->ring)
		ring_end_locked(t, r->ring);
	return 0;
}

/* Stops r's thread if tracing; returns 0 with the ring's end_pos valid. */
static int stop_locked(struct rec *r)
{
	r->resume = 0;
	if (!r->tracing)
		return 0;
	if (!r->t) {
		r->tracing = 0; /* exited: stopped in its destructor */
		return 0;
	}
	int rc = handover_locked(r, NULL);
	if (rc)
		return rc;
	r->tracing = 0;
	return 0;
}

/* A new ring (see ring_new), at the limit after taking an exited
 * thread's. */
static struct rvt_ring *ring_get_locked(int spare)
{
	struct rvt_ring *g = ring_new(spare);
	if (!g && live_rings >= cfg_max_buffers && reclaim_exited_locked())
		g = ring_new(spare);
	return g;
}

/*
 * Starts r's thread.  `lost_from` (NULL: none): the shifted counter from
 * which events were lost (a capture found no spare ring); a new ring then
 * begins with a CLOCK record and a LOSS record up to now (FORMAT.md §1).
 */
static int start_locked(struct rec *r, const uint64_t *lost_from)
{
	if (!r->t)
		return -ESRCH;
	if (r->tracing)
		return 0;
	rvt_clock_init();
	if (shadow_get_locked(r))
		return -ENOMEM;
	if (!r->ring) {
		/* A resumption replaces the frozen ring just unmapped, so it may
		 * take the spare's allowance: the count is never above what it
		 * was before the capture. */
		r->ring = ring_get_locked(lost_from != NULL);
		if (!r->ring)
			return live_rings >= cfg_max_buffers ? -ENOBUFS : -ENOMEM;
		if (lost_from && r->ring->nslots >= 4) {
			uint64_t now = rvt__counter() >> rvt_clock.shift;
			uint64_t *sl = r->ring->slots;
			sl[0] = now;
			sl[1] = now << 32 | RVT_SLOT_CLOCK;
			sl[2] = *lost_from;
			sl[3] = now << 32 | RVT_SLOT_LOSS;
			r->ring->end_pos = 4;
		}
	}
	/* A start after tracing was off begins the shadow stack empty. */
	r->ring->shadow = r->shadow;
	r->ring->carry_shadow = 0;
	gates_set(1); /* before start: the thread's trace points reach the check */
	/* Partner: the acquire load of start in rvt__adopt. */
	RVT__ST_REL(r->t->start, (uintptr_t)r->ring);
	r->tracing = 1;
	return 0;
}

static void on_thread_exit(void *arg)
{
	struct rvt__thread *t = arg;
	rvt_mu_lock(&reg_lock);
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].t == t) {
			if (recs[i].tracing) {
				/* pthread_exit or cancellation left frames open. */
				rvt_unwind_below(UINTPTR_MAX);
				/* Our own handover: this thread is in no trace point. */
				if (handover_locked(&recs[i], NULL) == 0)
					recs[i].tracing = 0;
			}
			recs[i].resume = 0;
			recs[i].t = NULL;
			/* Nobody uses the shadow stack of a thread that is gone. */
			shadow_free(&recs[i]);
			if (!recs[i].ring) { /* nothing to capture: forget it */
				recs[i] = recs[--nrecs];
			}
			break;
		}
	gates_update_locked();
	rvt_mu_unlock(&reg_lock);
}

/* ---- fork ----------------------------------------------------------------- */

static void atfork_prepare(void)
{
	rvt_mu_lock(&reg_lock);
}

static void atfork_parent(void)
{
	rvt_mu_unlock(&reg_lock);
}

/* The child has one thread and starts untraced with no buffers. */
static void atfork_child(void)
{
	struct rvt__thread *t = &rvt__tls;
	RVT__ST(t->start, 0);
	RVT__ST(t->seen, 0);
	RVT__ST(t->prev_ring, 0);
	RVT__ST(t->busy, 0);
	for (size_t i = 0; i < nrecs; i++) {
		ring_free(recs[i].ring);
		shadow_free(&recs[i]);
	}
	nrecs = 0;
	live_rings = 0;
	/* No thread of the child traces; a gate_lock some other thread of
	 * the parent held is free here. */
	gate_lock = (struct rvt_mu)RVT_MU_INIT;
	gates_set(0);
	rvt_runtime_atfork_child();
	/* The child is a new process for membarrier: register it again. */
	syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
	/* atfork_prepare's lock is held by this, the child's only thread. */
	register_locked();
	rvt_mu_unlock(&reg_lock);
}

/* ---- init ----------------------------------------------------------------- */

static void do_init(void)
{
	uint64_t base = 0;
	dl_iterate_phdr(find_base, &base);
	rvt_method_base = base;
	rvt_devmode_env(&cfg_buffer_bytes, &cfg_max_buffers);
	/* The handover's barrier (trace-inline.h, DESIGN); no signal. */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
		init_error = -ENOSYS;
		return;
	}
	if (pthread_key_create(&exit_key, on_thread_exit) != 0) {
		init_error = -EAGAIN;
		return;
	}
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	initialised = 1;
}

int rvt_init(void)
{
	pthread_once(&init_once, do_init);
	return init_error;
}

__attribute__((constructor)) static void rvt_ctor(void)
{
	if (rvt_init() != 0)
		return;
	rvt_mu_lock(&reg_lock);
	register_locked();
	rvt_mu_unlock(&reg_lock);
	rvt_devmode_start();
}

/* ---- public control API ------------------------------------------------- */

static int thread_register(void)
{
	int rc = rvt_init();
	if (rc)
		return rc;
	rvt_mu_lock(&reg_lock);
	int known = find_rec(rvt_gettid()) != NULL;
	rc = register_locked();
	rvt_mu_unlock(&reg_lock);
	if (rc > 0 && !known)
		notify_threads_changed();
	return rc;
}

int rvt_set_config(size_t buffer_bytes, unsigned max_buffers)
{
	if (buffer_bytes &&
	    (buffer_bytes < RVT_MIN_BUFFER_BYTES || (uint64_t)buffer_bytes > RVT_MAX_BUFFER_BYTES))
		return -EINVAL;
	rvt_mu_lock(&reg_lock);
	if (buffer_bytes)
		cfg_buffer_bytes = buffer_bytes & ~(size_t)7;
	if (max_buffers)
		cfg_max_buffers = max_buffers;
	rvt_mu_unlock(&reg_lock);
	return 0;
}

static int start_tid(pid_t tid)
{
	int rc = rvt_init();
	if (rc)
		return rc;
	rvt_clock_init(); /* the first call measures the TSC: not under the lock */
	rvt_mu_lock(&reg_lock);
	if (tid == 0) {
		rc = register_locked();
		tid = rc;
	}
	struct rec *r = rc < 0 ? NULL : find_rec(tid);
	if (r && !r->t)
		r = NULL;
	rc = r ? start_locked(r, NULL) : (rc < 0 ? rc : -ESRCH);
	rvt_mu_unlock(&reg_lock);
	if (rc == 0)
		rvt_mute_tracing_started();
	return rc;
}

void rvt_rings_view(void (*fn)(void *arg, const struct rvt_ring_view *v), void *arg)
{
	rvt_mu_lock(&reg_lock);
	for (size_t i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];
		if (!r->tracing || !r->t || !r->ring ||
		    __atomic_load_n(&r->t->seen, __ATOMIC_SEQ_CST) != (uintptr_t)r->ring)
			continue;
		struct rvt__thread *t = r->t;
		uint64_t *cur = RVT__LD(t->cur);
		if (cur < r->ring->slots || cur > r->ring->slots + r->ring->nslots)
			continue;
		struct rvt_ring_view v = {
			.tid = r->tid,
			.slots = r->ring->slots,
			.nslots = r->ring->nslots,
			.cur = (uint64_t)(cur - r->ring->slots),
			.wrapped = RVT__LD(t->wrapped),
			.busy = RVT__LD(t->busy),
			.sh_base = RVT__LD(t->sh_base),
			.sh_top = RVT__LD(t->sh_top),
			.sh_end = RVT__LD(t->sh_end),
			.ring = r->ring,
		};
		/* The shadow is the record's (its mapping outlives the thread's
		 * use of it); anything else is a ring switch in flight. */
		if (v.sh_base != (uintptr_t)r->shadow)
			v.sh_base = v.sh_top = v.sh_end = 0;
		fn(arg, &v);
	}
	rvt_mu_unlock(&reg_lock);
}

size_t rvt_tracing_threads(void)
{
	size_t n = 0;
	rvt_mu_lock(&reg_lock);
	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].tracing && recs[i].t;
	rvt_mu_unlock(&reg_lock);
	return n;
}

void rvt_learning(int on)
{
	rvt_mu_lock(&reg_lock);
	for (size_t i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];
		if (!r->tracing || !r->t || !r->ring)
			continue;
		/* Only the ring the registry gave it: a handover in flight, or
		 * a stop, leaves the word alone (it clears the mark anyway). */
		uintptr_t ring = (uintptr_t)r->ring, want = on ? ring | RVT__START_LEARN : ring;
		uintptr_t have = on ? ring : ring | RVT__START_LEARN;
		__atomic_compare_exchange_n(&r->t->start, &have, want, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	}
	rvt_mu_unlock(&reg_lock);
}

static int stop_tid(pid_t tid, int release)
{
	if (rvt_init())
		return -ESRCH;
	rvt_mu_lock(&reg_lock);
	struct rec *r = find_rec(tid ? tid : rvt_gettid());
	int rc = r ? stop_locked(r) : -ESRCH;
	if (rc == 0 && release && r->ring) {
		ring_free(r->ring);
		r->ring = NULL;
		if (!r->t)
			*r = recs[--nrecs];
	}
	gates_update_locked();
	rvt_mu_unlock(&reg_lock);
	return rc;
}

static int release_all(void)
{
	if (rvt_init())
		return -ESRCH;
	int rc = 0;
	rvt_mu_lock(&reg_lock);
	for (size_t i = 0; i < nrecs;) {
		struct rec *r = &recs[i];
		int e = stop_locked(r);
		if (e) {
			rc = rc ? rc : e;
			i++;
			continue;
		}
		ring_free(r->ring);
		r->ring = NULL;
		if (!r->t)
			*r = recs[--nrecs]; /* exited: forget it, look at the moved one */
		else
			i++;
	}
	assert(rc != 0 || live_rings == 0);
	gates_update_locked();
	rvt_mu_unlock(&reg_lock);
	return rc;
}

int rvt_is_tracing(pid_t tid)
{
	rvt_mu_lock(&reg_lock);
	struct rec *r = find_rec(tid ? tid : rvt_gettid());
	int on = r && r->tracing;
	rvt_mu_unlock(&reg_lock);
	return on;
}

static int set_ui_thread(pid_t tid)
{
	rvt_mu_lock(&reg_lock);
	struct rec *r = find_rec(tid ? tid : rvt_gettid());
	if (r && !r->t)
		r = NULL;
	if (r)
		for (size_t i = 0; i < nrecs; i++)
			recs[i].is_ui = &recs[i] == r;
	rvt_mu_unlock(&reg_lock);
	if (r)
		notify_threads_changed();
	return r ? 0 : -ESRCH;
}

/* Every thread of the process (/proc/self/task), registered or not. */
static size_t threads_snapshot(struct rvt_thread_info *out, size_t cap)
{
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && n < cap && (e = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].tid = (pid_t)tid;
		thread_name_of((pid_t)tid, out[n].name, sizeof(out[n].name));
		n++;
	}
	if (d)
		closedir(d);
	rvt_mu_lock(&reg_lock);
	for (size_t k = 0; k < n; k++) {
		struct rec *r = find_rec(out[k].tid);
		if (!r || !r->t)
			continue;
		out[k].is_ui = r->is_ui;
		out[k].tracing = r->tracing;
		out[k].buffer_bytes = r->ring ? r->ring->map_bytes : 0;
	}
	rvt_mu_unlock(&reg_lock);
	return n;
}

void rvt_enter(const void *key)
{
	/* A manual frame is its runtime's to unwind (rvt_exit_n): the stack
	 * pointer it records is above every jump target, so librvtrace's
	 * longjmp and exception handling never closes it a second time. */
	rvt__trace_point(key, 1, RVT_MANUAL_FRAME_SP);
}

void rvt_exit(void)
{
	rvt__trace_point(0, 0, 0);
}

/* ---- capture ------------------------------------------------------------- */

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Freezes r's ring into *f.  A tracing thread is handed over to a spare ring
 * at the freeze, so it loses no event; with no spare to be had it is stopped
 * (r->resume) and capture_to_buffer() restarts it, marking the loss.  On
 * success the caller owns f->ring (free it with ring_free under the lock).
 */
static int freeze_locked(struct rec *r, struct rvt_frozen *f)
{
	if (!r->ring)
		return -ENODATA;
	struct rvt_ring *spare = NULL;
	if (r->tracing && r->t) {
		spare = ring_get_locked(1);
		if (spare) { /* the thread's open frames go on with it */
			spare->shadow = r->shadow;
			spare->carry_shadow = 1;
		}
		int rc = handover_locked(r, spare);
		if (rc) {
			ring_free(spare);
			return rc;
		}
		if (!spare) {
			r->tracing = 0;
			r->resume = 1;
		}
	}
	memset(f, 0, sizeof(*f));
	f->ref_counter = rvt__counter();
	f->ref_realtime_ns = clock_ns(CLOCK_REALTIME);
	f->ref_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	f->pid = getpid();
	f->tid = r->tid;
	if (r->t) /* names are often set after the thread registered */
		thread_name_of(r->tid, r->name, sizeof(r->name));
	memcpy(f->thread_name, r->name, sizeof(f->thread_name));
	f->ring = r->ring;
	r->ring = spare;
	return 0;
}

/* After `t`, modulo the 32-bit timestamp wrap (FORMAT.md §1: within 90 s). */
static int ts_after(uint32_t ts, uint32_t t)
{
	return (int32_t)(ts - t) > 0;
}

/*
 * The innermost method value open in ring `g` (its slots before `end`, all
 * of them when `wrapped`) at the shifted counter `at`: its frames entered at
 * or before `at` and not exited by then, decoding backwards (FORMAT.md §1);
 * past the entries, a STACK record names the frames open before them.  0
 * when there is none.
 */
static uint64_t open_method_in(const struct rvt_ring *g, uint64_t end, int wrapped, uint64_t at)
{
	if (end > g->nslots)
		return 0;
	uint64_t count = wrapped ? g->nslots : end;
#define SLOT(k) \
	__atomic_load_n(&g->slots[(end + g->nslots - 1 - (k)) % g->nslots], __ATOMIC_RELAXED)
	uint64_t depth = 0;
	for (uint64_t k = 0; k < count; k++) {
		uint64_t sl = SLOT(k);
		uint32_t low = (uint32_t)sl, ts = (uint32_t)(sl >> 32);
		uint64_t value = low;
		if (low != 0 && low <= RVT_SLOT_MARKER_MAX) {
			if (++k == count)
				break; /* its first half is gone */
			value = SLOT(k);
			if (low == RVT_SLOT_STACK && !ts_after(ts, (uint32_t)at)) {
				/* value: open << 32 | listed FRAME pairs before it. */
				uint64_t listed = (uint32_t)value;
				if (depth >= listed || k + 2 * listed >= count)
					return 0;
				return SLOT(k + 2 * (depth + 1));
			}
			if (low != RVT_SLOT_PAIR)
				continue; /* CLOCK, LOSS, FRAME, EXIT_OF (its exit counted),
					     reserved */
		}
		if (ts_after(ts, (uint32_t)at))
			continue; /* written after `at`: says nothing about it */
		if (low == 0)
			depth++;
		else if (depth == 0)
			return value;
		else
			depth--;
	}
#undef SLOT
	return 0;
}

/*
 * open_method_in() for thread `tid`'s current ring.  A live thread's ring is
 * read while it writes it: the slots are single 64-bit stores, its end is
 * read as ring_end_locked() does, and a slot overwritten meanwhile can only
 * make the answer unknown or stale, never out of bounds.  0 when the thread
 * or its ring is not there.
 */
static uint64_t open_method_locked(pid_t tid, uint64_t at)
{
	struct rec *r = find_rec(tid);
	if (!r || !r->ring)
		return 0;
	const struct rvt_ring *g = r->ring;
	uint64_t end = g->end_pos;
	int wrapped = g->wrapped;
	if (r->t && r->tracing) {
		struct rvt__thread *t = r->t;
		uintptr_t s = RVT__LD_ACQ(t->seen);
		if (s != (uintptr_t)g)
			return 0; /* not adopted yet, or changing */
		uint64_t *cur = RVT__LD_ACQ(t->cur);
		wrapped = RVT__LD_ACQ(t->wrapped);
		if (RVT__LD(t->seen) != s)
			return 0;
		end = (uint64_t)(cur - g->slots);
	}
	return open_method_in(g, end, wrapped, at);
}

static int cmp_wait_start(const void *a, const void *b)
{
	const struct rvt_lock_wait *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The lock waits of `f`'s thread still known, in order of start, with the
 * method that waited (from the frozen ring) and the holder's method where
 * the holder is traced (or was, and its ring is still here).  NULL when
 * none. */
static struct rvt_lock_wait *lock_waits_locked(const struct rvt_frozen *f, size_t *n)
{
	*n = 0;
	struct rvt_lock_wait *w = malloc(RVT_LOCK_WAITS * sizeof(*w));
	if (!w)
		return NULL; /* the capture goes without them */
	*n = rvt_locks_collect(f->tid, rvt_clock.shift, w, RVT_LOCK_WAITS);
	qsort(w, *n, sizeof(*w), cmp_wait_start);
	for (size_t i = 0; i < *n; i++) {
		w[i].waiter_method =
			open_method_in(f->ring, f->ring->end_pos, f->ring->wrapped, w[i].start);
		if (w[i].waiter_method)
			w[i].flags |= RVT_LOCK_WAITER_METHOD;
		if (w[i].holder)
			w[i].holder_method = open_method_locked((pid_t)w[i].holder, w[i].holder_at);
		if (w[i].holder_method)
			w[i].flags |= RVT_LOCK_HOLDER_METHOD;
	}
	if (*n == 0) {
		free(w);
		return NULL;
	}
	return w;
}

static int capture_to_buffer(pid_t tid, const struct rvt_anomaly *anomaly, uint8_t **out,
			     size_t *len, uint64_t *frozen_ns)
{
	int rc = rvt_init();
	if (rc)
		return rc;
	struct rvt_frozen f;
	rvt_mu_lock(&reg_lock);
	tid = tid ? tid : rvt_gettid();
	struct rec *r = find_rec(tid);
	rc = r ? freeze_locked(r, &f) : -ESRCH;
	if (rc == 0 && r && !r->t && !r->ring)
		*r = recs[--nrecs];
	struct rvt_lock_wait *waits = rc == 0 ? lock_waits_locked(&f, &f.nwaits) : NULL;
	rvt_mu_unlock(&reg_lock);
	if (rc)
		return rc;
	f.anomaly = anomaly;
	f.waits = waits;
	rc = rvt_capture_build(&f, out, len);
	free(waits);
	if (frozen_ns)
		*frozen_ns = f.ref_monotonic_ns;
	rvt_mu_lock(&reg_lock);
	ring_free((struct rvt_ring *)f.ring);
	/* No spare was had: resume now that the frozen ring is gone, unless
	 * the thread was stopped or exited meanwhile. */
	r = find_rec(tid);
	if (r && r->resume && r->t) {
		r->resume = 0;
		uint64_t from = f.ref_counter >> rvt_clock.shift;
		start_locked(r, &from);
	}
	rvt_mu_unlock(&reg_lock);
	return rc;
}

static int capture_to_path(pid_t tid, const char *path)
{
	if (!path || !*path)
		return -EINVAL;
	uint8_t *buf;
	size_t len;
	int rc = capture_to_buffer(tid, NULL, &buf, &len, NULL);
	if (rc)
		return rc;
	rc = rvt_output_write(path, buf, len);
	free(buf);
	return rc;
}

static int capture_memfd(pid_t tid, const struct rvt_anomaly *anomaly, uint64_t *size,
			 uint64_t *frozen_ns)
{
	uint8_t *buf;
	size_t len;
	int rc = capture_to_buffer(tid, anomaly, &buf, &len, frozen_ns);
	if (rc)
		return rc;
	int fd = memfd_create("rearview-capture", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = -errno;
		goto out_buf;
	}
	rc = rvc_write_all(fd, buf, len);
	if (rc == 0 &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
		rc = -errno;
	if (rc == 0 && lseek(fd, 0, SEEK_SET) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		goto out_buf;
	}
	if (size)
		*size = len;
	rc = fd;
out_buf:
	free(buf);
	return rc;
}

int rvt_capture_to_memfd(pid_t tid, uint64_t *size)
{
	return rvt_capture_frozen_memfd(tid, NULL, size, NULL);
}

int rvt_capture_default(void)
{
	return rvt_devmode_capture_all();
}

/* ---- the API as librvtrace's own code -------------------------------------
 * What these do on a traced thread — allocate, read /proc, build a capture —
 * is not the program's: its trace points are dropped meanwhile
 * (rvt_own_begin), so a program's own traced malloc or stdio never shows
 * the tracer's calls as its own. */

int rvt_thread_register(void)
{
	int own = rvt_own_begin();
	int rc = thread_register();
	rvt_own_end(own);
	return rc;
}

int rvt_start(pid_t tid)
{
	int own = rvt_own_begin();
	int rc = start_tid(tid);
	rvt_own_end(own);
	return rc;
}

int rvt_stop(pid_t tid, int release)
{
	int own = rvt_own_begin();
	int rc = stop_tid(tid, release);
	rvt_own_end(own);
	return rc;
}

int rvt_release_all(void)
{
	int own = rvt_own_begin();
	int rc = release_all();
	rvt_own_end(own);
	return rc;
}

int rvt_set_ui_thread(pid_t tid)
{
	int own = rvt_own_begin();
	int rc = set_ui_thread(tid);
	rvt_own_end(own);
	return rc;
}

size_t rvt_threads_snapshot(struct rvt_thread_info *out, size_t cap)
{
	int own = rvt_own_begin();
	size_t rc = threads_snapshot(out, cap);
	rvt_own_end(own);
	return rc;
}

int rvt_capture_to_path(pid_t tid, const char *path)
{
	int own = rvt_own_begin();
	int rc = capture_to_path(tid, path);
	rvt_own_end(own);
	return rc;
}

int rvt_capture_frozen_memfd(pid_t tid, const struct rvt_anomaly *anomaly, uint64_t *size,
			     uint64_t *frozen_ns)
{
	int own = rvt_own_begin();
	int rc = capture_memfd(tid, anomaly, size, frozen_ns);
	rvt_own_end(own);
	return rc;
}

/* hooks-x86_64.S hard-codes these offsets. */
_Static_assert(offsetof(struct rvt__thread, start) == 0, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, hi) == 8, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, cur) == 16, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, seen) == 24, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, busy) == 32, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, wrapped) == 36, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, base) == 40, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, limit) == 48, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, method_base) == 56, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, shift) == 64, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, sh_top) == 72, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, sh_base) == 80, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, sh_end) == 88, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, bound) == 96, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, step) == 104, "asm offsets");
