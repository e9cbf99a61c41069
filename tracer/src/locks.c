/* SPDX-License-Identifier: Apache-2.0 */
/*
 * locks.c — lock waits (issue 17): which lock or condition variable a traced
 * thread waited on, for how long, and which thread held it (or woke it).
 *
 * pthread_mutex_lock / timedlock / clocklock and pthread_rwlock_rdlock /
 * wrlock and their timed and clock variants are interposed.  Each first
 * tries the lock (the try-lock's one atomic is what the uncontended lock
 * costs anyway) and returns when it got it: the uncontended path records
 * nothing and touches no shared memory of ours.  Only a contended lock of a
 * *traced* thread (its rvt__tls.start set) is recorded: the counter at the
 * start, the holder's tid read from the lock, then the real lock (a timed
 * one may give up: the wait is recorded all the same), then the counter at
 * the end, into one slot of a process-wide table of RVT_LOCK_WAITS entries
 * (claimed with one atomic add, the oldest overwritten).  A capture copies
 * the captured thread's entries (rvt_locks_collect) into LOCK_WAIT records
 * (FORMAT.md).
 *
 * Condition variables: pthread_cond_wait / timedwait / clockwait of a
 * traced thread is recorded whole (kind RVT_LOCK_COND), from the call to
 * its return with the mutex re-acquired: glibc re-takes the mutex inside,
 * not through an interposable symbol, so the wait for the signal and the
 * wait for the mutex after it cannot be told apart from here.  The holder
 * is the thread that woke it: pthread_cond_signal / broadcast, when the
 * condition variable has waiters (glibc's `__wrefs` >> 3; none: nothing is
 * done but that load), notes its tid and the counter in a small table of
 * RVT_WAKERS entries hashed by the condition variable's address; the waiter
 * takes that note when it names its condition variable and is later than
 * its wait's start (best effort: two signallers of one condition variable
 * at once may mix their notes; a slot shared by two condition variables
 * keeps the later).  The holder's method is then looked up at the signal,
 * a lock holder's at the wait's start (`at`).
 *
 * glibc ABI reliance (checked by the static asserts below and once at load
 * by locking a mutex and a rwlock and reading the owner back; when the check
 * fails no holder is reported, the waits still are): a normal, recursive,
 * errorcheck or adaptive mutex keeps its owner's tid in `__data.__owner`
 * (offset 8); a write-locked rwlock keeps its writer's tid in
 * `__data.__cur_writer` (offset 24); a condition variable counts its waiters
 * in `__data.__wrefs` >> 3 (offset 36).  Read-held rwlocks have no owner:
 * the holder is 0 (unknown).  The real functions are found with
 * dlsym(RTLD_NEXT) at load (the condition variable's with dlvsym at
 * GLIBC_2.3.2 first: x86-64's plain dlsym may give the 2.2.5 compatibility
 * version); a lock taken before that (another library's constructor) looks
 * them up first (the dynamic linker's own lock is not an interposable
 * pthread call).  When librvtrace comes after the C library in the lookup
 * order — an instrumented shared library brought it into a program that
 * does not link it — RTLD_NEXT finds nothing; the C library's own
 * definitions are taken then (the program calls those directly anyway, so
 * its lock waits are not recorded there).  A fully static program calls
 * glibc's __pthread_* names instead (see resolve()).
 *
 * Not seen: a wait still in progress at the capture (it is written when it
 * ends), the waker of a condition variable signalled by a futex or another
 * library's own code, and which part of a condition variable wait was the
 * mutex's.
 *
 * Invariants: no lock, allocation or system call between an interposer and
 * the real function, except the waker's gettid when a signal has waiters;
 * an entry's seq is odd while its one writer fills it (taken by
 * compare-and-swap from an even value), and a reader keeps a copy only when
 * seq was even and unchanged around it; a waker note's cond is 0 while it is
 * written.
 */
#include "tracer-int.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

_Static_assert(offsetof(pthread_mutex_t, __data.__owner) == 8, "glibc mutex owner offset");
_Static_assert(offsetof(pthread_rwlock_t, __data.__cur_writer) == 24, "glibc rwlock writer offset");
_Static_assert(offsetof(pthread_cond_t, __data.__wrefs) == 36, "glibc cond waiter count offset");

typedef const struct timespec *abstime;

/* The C library's blocking functions (dlsym RTLD_NEXT; the try-locks are
 * not interposed and called by name), set by resolve(); until then each
 * points to a lazy_* stub that resolves them first (a lock taken by a
 * constructor that ran before ours), so the path has no test. */
#define REAL(name, params, args)       \
	static int lazy_##name params; \
	static int(*real_##name) params = lazy_##name;
#define LAZY(name, params, args)                  \
	static int lazy_##name params             \
	{                                         \
		resolve();                        \
		return RVT__LD(real_##name) args; \
	}
#define FUNCS(X)                                                                             \
	X(mutex_lock, (pthread_mutex_t * m), (m))                                            \
	X(mutex_timedlock, (pthread_mutex_t * m, abstime t), (m, t))                         \
	X(mutex_clocklock, (pthread_mutex_t * m, clockid_t k, abstime t), (m, k, t))         \
	X(rdlock, (pthread_rwlock_t * l), (l))                                               \
	X(wrlock, (pthread_rwlock_t * l), (l))                                               \
	X(timedrdlock, (pthread_rwlock_t * l, abstime t), (l, t))                            \
	X(timedwrlock, (pthread_rwlock_t * l, abstime t), (l, t))                            \
	X(clockrdlock, (pthread_rwlock_t * l, clockid_t k, abstime t), (l, k, t))            \
	X(clockwrlock, (pthread_rwlock_t * l, clockid_t k, abstime t), (l, k, t))            \
	X(cond_wait, (pthread_cond_t * c, pthread_mutex_t * m), (c, m))                      \
	X(cond_timedwait, (pthread_cond_t * c, pthread_mutex_t * m, abstime t), (c, m, t))   \
	X(cond_clockwait, (pthread_cond_t * c, pthread_mutex_t * m, clockid_t k, abstime t), \
	  (c, m, k, t))                                                                      \
	X(cond_signal, (pthread_cond_t * c), (c))                                            \
	X(cond_broadcast, (pthread_cond_t * c), (c))
FUNCS(REAL)

static int owner_ok; /* the load-time check found the owner fields */

struct entry {
	_Atomic uint64_t seq;
	_Atomic uint64_t lock, start, end, at;
	_Atomic uint32_t kind, waiter, holder;
};

static struct entry table[RVT_LOCK_WAITS];
static _Atomic uint64_t claims;

/* The last wake-up of a condition variable with waiters (see the top). */
#define RVT_WAKERS 64u
struct waker {
	_Atomic uint64_t cond, at;
	_Atomic uint32_t tid;
};
static struct waker wakers[RVT_WAKERS];

static void record(uint32_t kind, const void *lock, pid_t holder, uint64_t start, uint64_t end,
		   uint64_t at)
{
	uint64_t n = atomic_fetch_add_explicit(&claims, 1, memory_order_relaxed);
	struct entry *e = &table[n % RVT_LOCK_WAITS];
	/* One writer per entry: one still filling it (a table's worth of
	 * waits ago) keeps it, and this wait is dropped. */
	uint64_t old = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if ((old & 1) ||
	    !atomic_compare_exchange_strong_explicit(&e->seq, &old, 2 * n + 1, memory_order_relaxed,
						     memory_order_relaxed))
		return;
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->kind, kind, memory_order_relaxed);
	atomic_store_explicit(&e->waiter, (uint32_t)rvt_gettid(), memory_order_relaxed);
	atomic_store_explicit(&e->holder, (uint32_t)holder, memory_order_relaxed);
	atomic_store_explicit(&e->lock, (uint64_t)(uintptr_t)lock, memory_order_relaxed);
	atomic_store_explicit(&e->start, start, memory_order_relaxed);
	atomic_store_explicit(&e->end, end, memory_order_relaxed);
	atomic_store_explicit(&e->at, at, memory_order_relaxed);
	atomic_store_explicit(&e->seq, 2 * n + 2, memory_order_release);
}

static int traced(void)
{
	return RVT__LD(rvt__tls.start) != 0;
}

/* rvt_locks_own's marks: filled from the front, never cleared. */
static const void *own_locks[4];

void rvt_locks_own(const void *lock)
{
	for (size_t i = 0; i < sizeof own_locks / sizeof own_locks[0]; i++) {
		const void *none = NULL;
		if (__atomic_compare_exchange_n(&own_locks[i], &none, lock, 0, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED) ||
		    none == lock)
			return;
	}
	assert(!"more of librvtrace's own locks than own_locks holds");
}

/* Whether lock is one of librvtrace's own (rvt_locks_own); only a
 * contended lock asks. */
static int own(const void *lock)
{
	for (size_t i = 0; i < sizeof own_locks / sizeof own_locks[0]; i++) {
		const void *l = __atomic_load_n(&own_locks[i], __ATOMIC_ACQUIRE);
		if (!l)
			return 0;
		if (l == lock)
			return 1;
	}
	return 0;
}

static pid_t mutex_owner(const pthread_mutex_t *m)
{
	return owner_ok ? __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) : 0;
}

static pid_t rwlock_writer(const pthread_rwlock_t *l)
{
	return owner_ok ? (pid_t)__atomic_load_n(&l->__data.__cur_writer, __ATOMIC_RELAXED) : 0;
}

/* A fully static program has no RTLD_NEXT: there the C library's own
 * names are called, when the program is linked with -Wl,-u,NAME for each
 * (tracer/lib.mk, aarch64_smoke.elf; weak: NULL otherwise, and in a dynamic
 * program dlsym finds the next). */
extern int __pthread_mutex_lock(pthread_mutex_t *m) __attribute__((weak));
extern int __pthread_mutex_timedlock(pthread_mutex_t *m, abstime t) __attribute__((weak));
extern int __pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t k, abstime t)
	__attribute__((weak));
extern int __pthread_rwlock_rdlock(pthread_rwlock_t *l) __attribute__((weak));
extern int __pthread_rwlock_wrlock(pthread_rwlock_t *l) __attribute__((weak));
extern int ___pthread_rwlock_timedrdlock(pthread_rwlock_t *l, abstime t) __attribute__((weak));
extern int ___pthread_rwlock_timedwrlock(pthread_rwlock_t *l, abstime t) __attribute__((weak));
extern int ___pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t k, abstime t)
	__attribute__((weak));
extern int ___pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t k, abstime t)
	__attribute__((weak));
extern int __pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) __attribute__((weak));
extern int __pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, abstime t)
	__attribute__((weak));
extern int __pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, abstime t)
	__attribute__((weak));
extern int __pthread_cond_signal(pthread_cond_t *c) __attribute__((weak));
extern int __pthread_cond_broadcast(pthread_cond_t *c) __attribute__((weak));

/* `name` (at `version` first, when given) in `handle`, or NULL. */
static void *lookup(void *handle, const char *name, const char *version)
{
	void *p = version ? dlvsym(handle, name, version) : NULL;
	return p ? p : dlsym(handle, name);
}

/* True when `p` is in librvtrace itself (or cannot be placed). */
static int ours(void *p)
{
	Dl_info a, b;
	return !dladdr(p, &a) || !dladdr((void *)ours, &b) || a.dli_fbase == b.dli_fbase;
}

void *rvt_next_fn(const char *name, const char *version)
{
	void *p = lookup(RTLD_NEXT, name, version);
	if (!p) {
		p = lookup(RTLD_DEFAULT, name, version);
		p = p && !ours(p) ? p : NULL;
	}
	return p;
}

/* rvt_next_fn(), else `own` (a static program's __pthread_* name); aborts
 * only when there is neither (a static program not linked as said above). */
static void *next(const char *name, const char *version, void *own)
{
	void *p = rvt_next_fn(name, version);
	p = p ? p : own;
	if (!p) {
		static const char msg[] =
			"librvtrace: pthread lock functions not found (a static "
			"program links the C library's __pthread_* names with -Wl,-u)\n";
		(void)!write(2, msg, sizeof(msg) - 1);
		abort();
	}
	return p;
}

#define SET(name, sym, version, own) \
	__atomic_store_n(&real_##name, next(sym, version, (void *)(own)), __ATOMIC_SEQ_CST)

static void resolve(void)
{
	SET(mutex_lock, "pthread_mutex_lock", NULL, __pthread_mutex_lock);
	SET(mutex_timedlock, "pthread_mutex_timedlock", NULL, __pthread_mutex_timedlock);
	SET(mutex_clocklock, "pthread_mutex_clocklock", NULL, __pthread_mutex_clocklock);
	SET(rdlock, "pthread_rwlock_rdlock", NULL, __pthread_rwlock_rdlock);
	SET(wrlock, "pthread_rwlock_wrlock", NULL, __pthread_rwlock_wrlock);
	SET(timedrdlock, "pthread_rwlock_timedrdlock", NULL, ___pthread_rwlock_timedrdlock);
	SET(timedwrlock, "pthread_rwlock_timedwrlock", NULL, ___pthread_rwlock_timedwrlock);
	SET(clockrdlock, "pthread_rwlock_clockrdlock", NULL, ___pthread_rwlock_clockrdlock);
	SET(clockwrlock, "pthread_rwlock_clockwrlock", NULL, ___pthread_rwlock_clockwrlock);
	SET(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2", __pthread_cond_wait);
	SET(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2", __pthread_cond_timedwait);
	SET(cond_clockwait, "pthread_cond_clockwait", NULL, __pthread_cond_clockwait);
	SET(cond_signal, "pthread_cond_signal", "GLIBC_2.3.2", __pthread_cond_signal);
	SET(cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2", __pthread_cond_broadcast);
}

FUNCS(LAZY)

/* The contended paths, out of line so the try-lock path saves no register.
 * `rc` is the real lock's result, computed between the two counter reads. */
#define CONTENDED(kind, lock, holder, call)                              \
	do {                                                             \
		if (!traced() || own(lock))                              \
			return call;                                     \
		pid_t h = (holder);                                      \
		uint64_t start = rvt__counter();                         \
		int rc = call;                                           \
		record((kind), (lock), h, start, rvt__counter(), start); \
		return rc;                                               \
	} while (0)

__attribute__((noinline)) static int mutex_contended(pthread_mutex_t *m)
{
	CONTENDED(RVT_LOCK_MUTEX, m, mutex_owner(m), RVT__LD(real_mutex_lock)(m));
}

__attribute__((noinline)) static int mutex_timed_contended(pthread_mutex_t *m, clockid_t k,
							   abstime t, int clock)
{
	CONTENDED(RVT_LOCK_MUTEX, m, mutex_owner(m),
		  clock ? RVT__LD(real_mutex_clocklock)(m, k, t)
			: RVT__LD(real_mutex_timedlock)(m, t));
}

__attribute__((noinline)) static int rwlock_contended(pthread_rwlock_t *l, int write)
{
	CONTENDED(write ? RVT_LOCK_WRLOCK : RVT_LOCK_RDLOCK, l, rwlock_writer(l),
		  write ? RVT__LD(real_wrlock)(l) : RVT__LD(real_rdlock)(l));
}

/* A timed or clock rwlock: `clock` says which; `write` which lock. */
__attribute__((noinline)) static int rwlock_timed_contended(pthread_rwlock_t *l, int write,
							    clockid_t k, abstime t, int clock)
{
	CONTENDED(write ? RVT_LOCK_WRLOCK : RVT_LOCK_RDLOCK, l, rwlock_writer(l),
		  clock	  ? (write ? RVT__LD(real_clockwrlock)(l, k, t)
				   : RVT__LD(real_clockrdlock)(l, k, t))
		  : write ? RVT__LD(real_timedwrlock)(l, t)
			  : RVT__LD(real_timedrdlock)(l, t));
}

RVT_API int pthread_mutex_lock(pthread_mutex_t *m)
{
	int rc = pthread_mutex_trylock(m);
	/* Taken, or the error the lock would give too (EINVAL, EOWNERDEAD...). */
	return RVT__LIKELY(rc != EBUSY) ? rc : mutex_contended(m);
}

RVT_API int pthread_mutex_timedlock(pthread_mutex_t *m, abstime t)
{
	int rc = pthread_mutex_trylock(m);
	return RVT__LIKELY(rc != EBUSY) ? rc : mutex_timed_contended(m, CLOCK_REALTIME, t, 0);
}

RVT_API int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t k, abstime t)
{
	int rc = pthread_mutex_trylock(m);
	return RVT__LIKELY(rc != EBUSY) ? rc : mutex_timed_contended(m, k, t, 1);
}

RVT_API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	return RVT__LIKELY(pthread_rwlock_tryrdlock(l) == 0) ? 0 : rwlock_contended(l, 0);
}

RVT_API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return RVT__LIKELY(pthread_rwlock_trywrlock(l) == 0) ? 0 : rwlock_contended(l, 1);
}

RVT_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, abstime t)
{
	return RVT__LIKELY(pthread_rwlock_tryrdlock(l) == 0)
		       ? 0
		       : rwlock_timed_contended(l, 0, CLOCK_REALTIME, t, 0);
}

RVT_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, abstime t)
{
	return RVT__LIKELY(pthread_rwlock_trywrlock(l) == 0)
		       ? 0
		       : rwlock_timed_contended(l, 1, CLOCK_REALTIME, t, 0);
}

RVT_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t k, abstime t)
{
	return RVT__LIKELY(pthread_rwlock_tryrdlock(l) == 0)
		       ? 0
		       : rwlock_timed_contended(l, 0, k, t, 1);
}

RVT_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t k, abstime t)
{
	return RVT__LIKELY(pthread_rwlock_trywrlock(l) == 0)
		       ? 0
		       : rwlock_timed_contended(l, 1, k, t, 1);
}

static struct waker *waker_of(const void *c)
{
	/* Fibonacci hashing of the address: the top 6 bits of the product. */
	return &wakers[((uint64_t)(uintptr_t)c * 0x9e3779b97f4a7c15u) >> 58];
}
_Static_assert(RVT_WAKERS == 64u, "waker_of keeps 6 bits");

/* A signal or broadcast of `c`, which has waiters: notes who and when. */
__attribute__((noinline)) static void note_waker(const pthread_cond_t *c)
{
	struct waker *w = waker_of(c);
	atomic_store_explicit(&w->cond, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&w->tid, (uint32_t)rvt_gettid(), memory_order_relaxed);
	atomic_store_explicit(&w->at, rvt__counter(), memory_order_relaxed);
	atomic_store_explicit(&w->cond, (uint64_t)(uintptr_t)c, memory_order_release);
}

static int has_waiters(const pthread_cond_t *c)
{
	return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;
}

/* A traced thread's wait on `c` began at `start` and returned now. */
__attribute__((noinline)) static void cond_waited(const pthread_cond_t *c, uint64_t start)
{
	uint64_t end = rvt__counter();
	struct waker *w = waker_of(c);
	uint64_t cond = atomic_load_explicit(&w->cond, memory_order_acquire);
	uint32_t tid = atomic_load_explicit(&w->tid, memory_order_relaxed);
	uint64_t at = atomic_load_explicit(&w->at, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	int ok = cond == (uint64_t)(uintptr_t)c &&
		 atomic_load_explicit(&w->cond, memory_order_relaxed) == cond && at >= start &&
		 at <= end;
	record(RVT_LOCK_COND, c, ok ? (pid_t)tid : 0, start, end, ok ? at : start);
}

RVT_API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (RVT__LIKELY(!traced()))
		return RVT__LD(real_cond_wait)(c, m);
	uint64_t start = rvt__counter();
	int rc = RVT__LD(real_cond_wait)(c, m);
	cond_waited(c, start);
	return rc;
}

RVT_API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, abstime t)
{
	if (RVT__LIKELY(!traced()))
		return RVT__LD(real_cond_timedwait)(c, m, t);
	uint64_t start = rvt__counter();
	int rc = RVT__LD(real_cond_timedwait)(c, m, t);
	cond_waited(c, start);
	return rc;
}

RVT_API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, abstime t)
{
	if (RVT__LIKELY(!traced()))
		return RVT__LD(real_cond_clockwait)(c, m, k, t);
	uint64_t start = rvt__counter();
	int rc = RVT__LD(real_cond_clockwait)(c, m, k, t);
	cond_waited(c, start);
	return rc;
}

RVT_API int pthread_cond_signal(pthread_cond_t *c)
{
	if (RVT__UNLIKELY(has_waiters(c)))
		note_waker(c);
	return RVT__LD(real_cond_signal)(c);
}

RVT_API int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (RVT__UNLIKELY(has_waiters(c)))
		note_waker(c);
	return RVT__LD(real_cond_broadcast)(c);
}

__attribute__((constructor)) static void locks_init(void)
{
	resolve();
	/* The ABI check: both owner fields must name the calling thread. */
	pid_t self = rvt_gettid();
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	int ok = RVT__LD(real_mutex_lock)(&m) == 0 && m.__data.__owner == self;
	pthread_mutex_unlock(&m);
	ok = ok && RVT__LD(real_wrlock)(&l) == 0 && (pid_t)l.__data.__cur_writer == self;
	pthread_rwlock_unlock(&l);
	owner_ok = ok;
}

size_t rvt_locks_collect(pid_t waiter, uint64_t shift, struct rvt_lock_wait *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < RVT_LOCK_WAITS && n < cap; i++) {
		struct entry *e = &table[i];
		uint64_t s = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (s == 0 || (s & 1))
			continue;
		struct rvt_lock_wait w = {
			.kind = atomic_load_explicit(&e->kind, memory_order_relaxed),
			.waiter = atomic_load_explicit(&e->waiter, memory_order_relaxed),
			.holder = atomic_load_explicit(&e->holder, memory_order_relaxed),
			.lock = atomic_load_explicit(&e->lock, memory_order_relaxed),
			.start = atomic_load_explicit(&e->start, memory_order_relaxed) >> shift,
			.end = atomic_load_explicit(&e->end, memory_order_relaxed) >> shift,
			.holder_at = atomic_load_explicit(&e->at, memory_order_relaxed) >> shift,
		};
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e->seq, memory_order_relaxed) != s)
			continue; /* rewritten while read */
		if (w.waiter != (uint32_t)waiter)
			continue;
		assert(w.end >= w.start);
		out[n++] = w;
	}
	return n;
}
