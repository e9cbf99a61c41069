/*
 * tracer.c — librvtrace's core: the clock, ring buffers, the thread registry
 * and the control side of the start/stop protocol (trace-inline.h explains
 * the two shared words).
 *
 * Invariants:
 * - Only the traced thread (or its signal handler) writes its ring slots,
 *   cur, base, limit and wrapped.  The control side touches a ring only after
 *   it has seen stop ≥ 2 with acquire order, and before it publishes start
 *   with release order.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	char name[32];
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec *recs;
static size_t nrecs, caprecs;
static unsigned live_rings;
static size_t cfg_buffer_bytes = RVT_DEFAULT_BUFFER_BYTES;
static unsigned cfg_max_buffers = RVT_DEFAULT_MAX_BUFFERS;
static int stop_signal;
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

static void clock_measure(void)
{
#if defined(__x86_64__)
	/* The kernel does not export the TSC rate.  CPUID leaf 0x15 gives it on
	 * recent Intel parts (crystal × ratio); otherwise (AMD, most VMs) it is
	 * measured against CLOCK_MONOTONIC_RAW over ~10 ms. */
	unsigned a = 0, b = 0, c = 0, d = 0;
	if (__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid_count(0x15, 0, a, b, c, d);
		if (a && b && c) {
			rvt_clock.hz = (uint64_t)c * b / a;
			rvt_clock.arch = 1;
			goto shift;
		}
	}
	uint64_t t0 = mono_raw_ns(), c0 = rvt__counter();
	struct timespec nap = {0, 10 * 1000 * 1000};
	while (nanosleep(&nap, &nap) == -1 && errno == EINTR)
		;
	uint64_t c1 = rvt__counter(), t1 = mono_raw_ns();
	uint64_t dns = t1 - t0, dc = c1 - c0;
	rvt_clock.hz = dns ? (uint64_t)((unsigned __int128)dc * 1000000000u / dns) : 1000000000u;
	/* Round to 10 kHz: the measurement is not finer than that. */
	rvt_clock.hz = (rvt_clock.hz + 5000) / 10000 * 10000;
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
	/* FORMAT.md: the smallest shift for which 2^32 ticks span ≥ 180 s. */
	unsigned s = 0;
	while (s < 31 && ((uint64_t)1 << (32 + s)) < rvt_clock.hz * 180u)
		s++;
	rvt_clock.shift = s;
}

int rvt_clock_init(void)
{
	pthread_once(&clock_once, clock_measure);
	return 0;
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

/* ---- the thread side ---------------------------------------------------- */

/* Remote registration handshake (register_remote_locked()). */
static _Atomic(pid_t) reg_want;
static _Atomic(struct rvt__thread *) reg_got;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	int saved = errno;
	/* A registration request from rvt_start(tid) for a thread that never
	 * registered itself: publish this thread's state and arm the exit
	 * destructor.  glibc's pthread_setspecific() for the first 32 keys is a
	 * plain store into the thread descriptor (register_remote_locked()
	 * refuses other keys), so it is safe here. */
	pid_t want = atomic_load_explicit(&reg_want, memory_order_acquire);
	if (want != 0 && want == rvt_gettid()) {
		pthread_setspecific(exit_key, &rvt__tls);
		atomic_store_explicit(&reg_got, &rvt__tls, memory_order_release);
	}
	/* If a trace point is mid-write, it sees stop == 1 as its last step. */
	rvt__stop_slow(&rvt__tls);
	errno = saved;
}

/* ---- rings ---------------------------------------------------------------- */

static struct rvt_ring *ring_new(void)
{
	if (live_rings >= cfg_max_buffers)
		return NULL;
	struct rvt_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->nslots = cfg_buffer_bytes / 8;
	r->map_bytes = r->nslots * 8;
	/* MAP_NORESERVE and no pre-faulting: pages become resident as written. */
	void *m = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		free(r);
		return NULL;
	}
	r->slots = m;
	/* The shadow stack likewise: pages as deep as the thread's calls go. */
	void *sh = mmap(NULL, RVT_SHADOW_WORDS * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh == MAP_FAILED) {
		munmap(m, r->map_bytes);
		free(r);
		return NULL;
	}
	r->shadow = sh;
	live_rings++;
	return r;
}

static void ring_free(struct rvt_ring *r)
{
	if (!r)
		return;
	munmap(r->slots, r->map_bytes);
	munmap(r->shadow, RVT_SHADOW_WORDS * sizeof(uintptr_t));
	free(r);
	live_rings--;
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
	}
	ring_free(r->ring);
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
 * Registers thread `tid` of this process that never called into the library:
 * it is signalled and its handler publishes its per-thread state.  Returns
 * the new record or NULL (not our thread, it exited, or it blocks the
 * signal for a second).
 */
static struct rec *register_remote_locked(pid_t tid)
{
	if (tid <= 0 || (unsigned)exit_key >= 32)
		return NULL;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	if (access(path, F_OK) != 0)
		return NULL;
	atomic_store_explicit(&reg_got, NULL, memory_order_relaxed);
	atomic_store_explicit(&reg_want, tid, memory_order_release);
	struct rvt__thread *t = NULL;
	if (syscall(SYS_tgkill, getpid(), tid, stop_signal) == 0)
		for (int i = 0; i < 10000 && !t; i++) {
			t = atomic_load_explicit(&reg_got, memory_order_acquire);
			struct timespec nap = {0, i < 50 ? 20000 : 100000};
			if (!t)
				nanosleep(&nap, NULL);
		}
	atomic_store_explicit(&reg_want, 0, memory_order_release);
	if (!t)
		return NULL;
	struct rec *r = rec_slot_locked(tid);
	if (!r)
		return NULL;
	r->t = t;
	thread_name_of(tid, r->name, sizeof(r->name));
	return r;
}

/* Waits (lock held) for the thread of `r` to publish its end position. */
static int request_stop_locked(struct rec *r)
{
	struct rvt__thread *t = r->t;
	if (!t)
		return 0; /* exited: stopped in its destructor */
	if (atomic_load_explicit(&t->stop, memory_order_acquire) >= 2)
		return 0;
	RVT__ST(t->stop, 1);
	if (r->tid == rvt_gettid()) {
		rvt__stop_slow(t);
		return 0;
	}
	pid_t pid = getpid();
	for (int i = 0; i < 100000; i++) {
		if (i % 1000 == 0) /* once, then every ~100 ms if masked */
			syscall(SYS_tgkill, pid, r->tid, stop_signal);
		if (atomic_load_explicit(&t->stop, memory_order_acquire) >= 2)
			return 0;
		struct timespec nap = {0, i < 50 ? 20000 : 100000};
		nanosleep(&nap, NULL);
		if (i > 10000)
			break;
	}
	return -ETIMEDOUT;
}

/* Stops r's thread if tracing; returns 0 with the ring's end_pos valid. */
static int stop_locked(struct rec *r)
{
	if (!r->tracing)
		return 0;
	int rc = request_stop_locked(r);
	if (rc)
		return rc;
	r->tracing = 0;
	return 0;
}

static int start_locked(struct rec *r)
{
	if (!r->t)
		return -ESRCH;
	if (r->tracing)
		return 0;
	rvt_clock_init();
	if (!r->ring) {
		r->ring = ring_new();
		if (!r->ring && live_rings >= cfg_max_buffers && reclaim_exited_locked())
			r->ring = ring_new();
		if (!r->ring)
			return live_rings >= cfg_max_buffers ? -ENOBUFS : -ENOMEM;
	}
	RVT__ST(r->t->stop, 0);
	atomic_store_explicit(&r->t->start, (uintptr_t)r->ring, memory_order_release);
	r->tracing = 1;
	return 0;
}

static void on_thread_exit(void *arg)
{
	struct rvt__thread *t = arg;
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].t == t) {
			if (recs[i].tracing) {
				/* pthread_exit or cancellation left frames open. */
				rvt_unwind_below(UINTPTR_MAX);
				RVT__ST(t->stop, 1);
				rvt__stop_slow(t);
				recs[i].tracing = 0;
			}
			recs[i].t = NULL;
			if (!recs[i].ring) { /* nothing to capture: forget it */
				recs[i] = recs[--nrecs];
			}
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}

/* ---- fork ----------------------------------------------------------------- */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

/* The child has one thread and starts untraced with no buffers. */
static void atfork_child(void)
{
	struct rvt__thread *t = &rvt__tls;
	RVT__ST(t->start, 0);
	RVT__ST(t->stop, 0);
	RVT__ST(t->seen, 0);
	RVT__ST(t->busy, 0);
	for (size_t i = 0; i < nrecs; i++)
		ring_free(recs[i].ring);
	nrecs = 0;
	live_rings = 0;
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_lock(&reg_lock);
	register_locked();
	pthread_mutex_unlock(&reg_lock);
}

/* ---- init ----------------------------------------------------------------- */

static void do_init(void)
{
	uint64_t base = 0;
	dl_iterate_phdr(find_base, &base);
	rvt_method_base = base;
	rvt_devmode_env(&cfg_buffer_bytes, &cfg_max_buffers);
	/* The first real-time signal nobody has a handler for. */
	stop_signal = 0;
	for (int s = SIGRTMIN + 6; s <= SIGRTMAX - 2 && !stop_signal; s++) {
		struct sigaction old;
		if (sigaction(s, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
			stop_signal = s;
	}
	if (!stop_signal) {
		init_error = -ENOSYS;
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_stop_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(stop_signal, &sa, NULL) != 0) {
		init_error = -errno;
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
	pthread_mutex_lock(&reg_lock);
	register_locked();
	pthread_mutex_unlock(&reg_lock);
	rvt_devmode_start();
}

/* ---- public control API ------------------------------------------------- */

int rvt_thread_register(void)
{
	int rc = rvt_init();
	if (rc)
		return rc;
	pthread_mutex_lock(&reg_lock);
	int known = find_rec(rvt_gettid()) != NULL;
	rc = register_locked();
	pthread_mutex_unlock(&reg_lock);
	if (rc > 0 && !known)
		notify_threads_changed();
	return rc;
}

int rvt_set_config(size_t buffer_bytes, unsigned max_buffers)
{
	if (buffer_bytes &&
	    (buffer_bytes < RVT_MIN_BUFFER_BYTES || (uint64_t)buffer_bytes > RVT_MAX_BUFFER_BYTES))
		return -EINVAL;
	pthread_mutex_lock(&reg_lock);
	if (buffer_bytes)
		cfg_buffer_bytes = buffer_bytes & ~(size_t)7;
	if (max_buffers)
		cfg_max_buffers = max_buffers;
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

int rvt_start(pid_t tid)
{
	int rc = rvt_init();
	if (rc)
		return rc;
	rvt_clock_init(); /* the first call measures the TSC: not under the lock */
	pthread_mutex_lock(&reg_lock);
	if (tid == 0) {
		rc = register_locked();
		tid = rc;
	}
	struct rec *r = rc < 0 ? NULL : find_rec(tid);
	if ((!r || !r->t) && rc >= 0 && tid != rvt_gettid()) {
		struct rec *nr = register_remote_locked(tid);
		if (nr)
			r = nr;
	}
	rc = r ? start_locked(r) : (rc < 0 ? rc : -ESRCH);
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

int rvt_stop(pid_t tid, int release)
{
	if (rvt_init())
		return -ESRCH;
	pthread_mutex_lock(&reg_lock);
	struct rec *r = find_rec(tid ? tid : rvt_gettid());
	int rc = r ? stop_locked(r) : -ESRCH;
	if (rc == 0 && release && r->ring) {
		ring_free(r->ring);
		r->ring = NULL;
		if (!r->t)
			*r = recs[--nrecs];
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

int rvt_release_all(void)
{
	if (rvt_init())
		return -ESRCH;
	int rc = 0;
	pthread_mutex_lock(&reg_lock);
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
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

int rvt_is_tracing(pid_t tid)
{
	pthread_mutex_lock(&reg_lock);
	struct rec *r = find_rec(tid ? tid : rvt_gettid());
	int on = r && r->tracing;
	pthread_mutex_unlock(&reg_lock);
	return on;
}

int rvt_set_ui_thread(pid_t tid)
{
	pthread_mutex_lock(&reg_lock);
	struct rec *r = find_rec(tid ? tid : rvt_gettid());
	if ((!r || !r->t) && tid)
		r = register_remote_locked(tid);
	if (r)
		for (size_t i = 0; i < nrecs; i++)
			recs[i].is_ui = &recs[i] == r;
	pthread_mutex_unlock(&reg_lock);
	if (r)
		notify_threads_changed();
	return r ? 0 : -ESRCH;
}

/* Every thread of the process (/proc/self/task), registered or not. */
size_t rvt_threads_snapshot(struct rvt_thread_info *out, size_t cap)
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
	pthread_mutex_lock(&reg_lock);
	for (size_t k = 0; k < n; k++) {
		struct rec *r = find_rec(out[k].tid);
		if (!r || !r->t)
			continue;
		out[k].is_ui = r->is_ui;
		out[k].tracing = r->tracing;
		out[k].buffer_bytes = r->ring ? r->ring->map_bytes : 0;
	}
	pthread_mutex_unlock(&reg_lock);
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
 * Freezes r's ring into *f and, if the thread was tracing, swaps a fresh ring
 * in so it resumes at once.  On success the caller owns f->ring (free it with
 * ring_free under the lock).
 */
static int freeze_locked(struct rec *r, struct rvt_frozen *f)
{
	if (!r->ring)
		return -ENODATA;
	int was = r->tracing;
	int rc = stop_locked(r);
	if (rc)
		return rc;
	memset(f, 0, sizeof(*f));
	f->ref_counter = rvt__counter();
	f->ref_realtime_ns = clock_ns(CLOCK_REALTIME);
	f->ref_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	f->pid = getpid();
	f->tid = r->tid;
	memcpy(f->thread_name, r->name, sizeof(f->thread_name));
	f->ring = r->ring;
	r->ring = NULL;
	if (was && r->t) {
		/* The frozen ring still counts: this may fail at the limit, and
		 * then the thread stays stopped until the flush is done. */
		if (start_locked(r) != 0)
			r->tracing = 0;
	}
	return 0;
}

static int capture_to_buffer(pid_t tid, const struct rvt_anomaly *anomaly, uint8_t **out,
			     size_t *len, uint64_t *frozen_ns)
{
	int rc = rvt_init();
	if (rc)
		return rc;
	struct rvt_frozen f;
	pthread_mutex_lock(&reg_lock);
	struct rec *r = find_rec(tid ? tid : rvt_gettid());
	rc = r ? freeze_locked(r, &f) : -ESRCH;
	if (rc == 0 && r && !r->t && !r->ring)
		*r = recs[--nrecs];
	pthread_mutex_unlock(&reg_lock);
	if (rc)
		return rc;
	f.anomaly = anomaly;
	rc = rvt_capture_build(&f, out, len);
	if (frozen_ns)
		*frozen_ns = f.ref_monotonic_ns;
	pthread_mutex_lock(&reg_lock);
	ring_free((struct rvt_ring *)f.ring);
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

int rvt_capture_to_path(pid_t tid, const char *path)
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

int rvt_capture_frozen_memfd(pid_t tid, const struct rvt_anomaly *anomaly, uint64_t *size,
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

/* hooks-x86_64.S hard-codes these offsets. */
_Static_assert(offsetof(struct rvt__thread, start) == 0, "asm offsets");
_Static_assert(offsetof(struct rvt__thread, stop) == 8, "asm offsets");
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
