/*
 * locks.c — lock waits (issue 17): which lock a traced thread waited on, for
 * how long, and which thread held it.
 *
 * pthread_mutex_lock, pthread_rwlock_rdlock and pthread_rwlock_wrlock are
 * interposed.  Each first tries the lock (the try-lock's one atomic is what
 * the uncontended lock costs anyway) and returns when it got it: the
 * uncontended path records nothing and touches no shared memory of ours.
 * Only a contended lock of a *traced* thread (its rvt__tls.start set) is
 * recorded: the counter at the start, the holder's tid read from the lock,
 * then the real lock, then the counter at the end, into one slot of a
 * process-wide table of RVT_LOCK_WAITS entries (claimed with one atomic add,
 * the oldest overwritten).  A capture copies the captured thread's entries
 * (rvt_locks_collect) into LOCK_WAIT records (FORMAT.md).
 *
 * glibc ABI reliance (checked by the static asserts below and once at load
 * by locking a mutex and a rwlock and reading the owner back; when the check
 * fails no holder is reported, the waits still are): a normal, recursive,
 * errorcheck or adaptive mutex keeps its owner's tid in `__data.__owner`
 * (offset 8); a write-locked rwlock keeps its writer's tid in
 * `__data.__cur_writer` (offset 24).  Read-held rwlocks have no owner: the
 * holder is 0 (unknown).  The real functions are found with
 * dlsym(RTLD_NEXT) at load; a lock taken before that (another library's
 * constructor) looks them up first (the dynamic linker's own lock is not
 * an interposable pthread call).  A fully static program calls glibc's
 * __pthread_* names instead (see resolve()).
 *
 * Not seen: the mutex a pthread_cond_wait re-acquires (glibc takes it
 * internally, not through the interposable symbol), the timed and clock
 * variants of the locks, and a wait still in progress at the capture (it is
 * written when it ends).
 *
 * Invariants: no lock, allocation or system call between an interposer and
 * the real function; an entry's seq is odd while its one writer fills it
 * (taken by compare-and-swap from an even value), and a reader keeps a copy
 * only when seq was even and unchanged around it.
 */
#include "tracer-int.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

_Static_assert(offsetof(pthread_mutex_t, __data.__owner) == 8, "glibc mutex owner offset");
_Static_assert(offsetof(pthread_rwlock_t, __data.__cur_writer) == 24, "glibc rwlock writer offset");

typedef int (*mutex_fn)(pthread_mutex_t *m);
typedef int (*rwlock_fn)(pthread_rwlock_t *l);

/* The C library's blocking functions (dlsym RTLD_NEXT; the try-locks are
 * not interposed and called by name), set by resolve(); until
 * then each points to a lazy_* stub that resolves them first (a lock taken
 * by a constructor that ran before ours), so the path has no test. */
static int lazy_mutex_lock(pthread_mutex_t *m);
static int lazy_rdlock(pthread_rwlock_t *l);
static int lazy_wrlock(pthread_rwlock_t *l);
static _Atomic(mutex_fn) real_mutex_lock = lazy_mutex_lock;
static _Atomic(rwlock_fn) real_rdlock = lazy_rdlock;
static _Atomic(rwlock_fn) real_wrlock = lazy_wrlock;
static int owner_ok; /* the load-time check found the owner fields */

struct entry {
	_Atomic uint64_t seq;
	_Atomic uint64_t lock, start, end;
	_Atomic uint32_t kind, waiter, holder;
};

static struct entry table[RVT_LOCK_WAITS];
static _Atomic uint64_t claims;

static void record(uint32_t kind, const void *lock, pid_t holder, uint64_t start, uint64_t end)
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
	atomic_store_explicit(&e->seq, 2 * n + 2, memory_order_release);
}

static int traced(void)
{
	return RVT__LD(rvt__tls.start) != 0;
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
 * names are called, when the program is linked with
 * -Wl,-u,__pthread_mutex_lock,-u,__pthread_rwlock_rdlock,-u,__pthread_rwlock_wrlock
 * (weak: NULL otherwise, and in a dynamic program dlsym finds the next). */
extern int __pthread_mutex_lock(pthread_mutex_t *m) __attribute__((weak));
extern int __pthread_rwlock_rdlock(pthread_rwlock_t *l) __attribute__((weak));
extern int __pthread_rwlock_wrlock(pthread_rwlock_t *l) __attribute__((weak));

/* The next definition of `name`, or `own` (the C library's own name). */
static void *next(const char *name, void *own)
{
	void *p = dlsym(RTLD_NEXT, name);
	return p ? p : own;
}

static void resolve(void)
{
	mutex_fn ml = (mutex_fn)next("pthread_mutex_lock", (void *)__pthread_mutex_lock);
	rwlock_fn rd = (rwlock_fn)next("pthread_rwlock_rdlock", (void *)__pthread_rwlock_rdlock);
	rwlock_fn wr = (rwlock_fn)next("pthread_rwlock_wrlock", (void *)__pthread_rwlock_wrlock);
	if (!ml || !rd || !wr) {
		/* A static program not linked as said above. */
		static const char msg[] = "librvtrace: pthread lock functions not found\n";
		(void)!write(2, msg, sizeof(msg) - 1);
		abort();
	}
	atomic_store(&real_mutex_lock, ml);
	atomic_store(&real_rdlock, rd);
	atomic_store(&real_wrlock, wr);
}

static int lazy_mutex_lock(pthread_mutex_t *m)
{
	resolve();
	return RVT__LD(real_mutex_lock)(m);
}

static int lazy_rdlock(pthread_rwlock_t *l)
{
	resolve();
	return RVT__LD(real_rdlock)(l);
}

static int lazy_wrlock(pthread_rwlock_t *l)
{
	resolve();
	return RVT__LD(real_wrlock)(l);
}

/* The contended paths, out of line so the try-lock path saves no register. */
__attribute__((noinline)) static int mutex_contended(pthread_mutex_t *m)
{
	if (!traced())
		return RVT__LD(real_mutex_lock)(m);
	pid_t holder = mutex_owner(m);
	uint64_t start = rvt__counter();
	int rc = RVT__LD(real_mutex_lock)(m);
	record(RVT_LOCK_MUTEX, m, holder, start, rvt__counter());
	return rc;
}

__attribute__((noinline)) static int rwlock_contended(pthread_rwlock_t *l, int write)
{
	rwlock_fn lock = write ? RVT__LD(real_wrlock) : RVT__LD(real_rdlock);
	if (!traced())
		return lock(l);
	pid_t holder = rwlock_writer(l);
	uint64_t start = rvt__counter();
	int rc = lock(l);
	record(write ? RVT_LOCK_WRLOCK : RVT_LOCK_RDLOCK, l, holder, start, rvt__counter());
	return rc;
}

RVT_API int pthread_mutex_lock(pthread_mutex_t *m)
{
	int rc = pthread_mutex_trylock(m);
	/* Taken, or the error the lock would give too (EINVAL, EOWNERDEAD...). */
	return RVT__LIKELY(rc != EBUSY) ? rc : mutex_contended(m);
}

RVT_API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	return RVT__LIKELY(pthread_rwlock_tryrdlock(l) == 0) ? 0 : rwlock_contended(l, 0);
}

RVT_API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return RVT__LIKELY(pthread_rwlock_trywrlock(l) == 0) ? 0 : rwlock_contended(l, 1);
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
