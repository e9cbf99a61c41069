/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_locks.c — lock waits (issue 17, locks.c): a traced UI thread waits
 * for a mutex (or rwlock) held by a traced worker inside slow_holder(); its
 * capture must carry the wait (LOCK_WAIT record), the holder's tid and
 * slow_holder as the holder's method, and ui_wait as the method that
 * waited — decoded by librvanalysis, as rvtrace does, and shown (summary
 * statistics and JSON, Chrome flow arrow, `why`).  An untraced thread's
 * contended wait records nothing.  The FORMAT.md worked example is encoded
 * and compared byte for byte, then decoded.
 *
 * The holder keeps the lock until the waiter is blocked in a futex call on
 * the lock itself (/proc/self/task/TID/syscall), polled with a generous
 * deadline: no fixed sleep.
 * Compiled with -finstrument-functions (the two threads' methods are traced).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/analysis.h"
#include "rearview/trace.h"
#include "tracer-int.h"

enum mode {
	MUTEX,	      /* a mutex */
	RWLOCK,	      /* a rwlock, written by the holder, read by the waiter */
	TIMED_MUTEX,  /* pthread_mutex_timedlock */
	TIMED_RWLOCK, /* pthread_rwlock_timedrdlock */
	COND,	      /* the waiter waits on a condition variable the holder signals */
};

struct scene {
	enum mode rw;
	int trace;
	pthread_mutex_t mu;
	pthread_rwlock_t rwl;
	pthread_cond_t cond;
	int ready; /* COND: under mu */
	pthread_t holder;
	_Atomic int holder_tid, waiter_tid;
	_Atomic int go_holder, go_waiter; /* the tracer started them */
	_Atomic int held, trying;
	int lock_rc;
};

/* Not traced: the holder's innermost method while it waits is slow_holder. */
__attribute__((no_instrument_function)) static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int is_rw(const struct scene *s)
{
	return s->rw == RWLOCK || s->rw == TIMED_RWLOCK;
}

/* Thread `tid` is blocked in a futex call on a word inside the `len` bytes
 * at `obj` (/proc/self/task/TID/syscall: the call's number and arguments
 * while it is blocked).  Its kernel state alone is not enough: asleep, it
 * may still be on its way to the lock (in the tracer's own bookkeeping). */
__attribute__((no_instrument_function)) static int futex_waits_on(int tid, const void *obj,
								  size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	long nr = -1;
	unsigned long uaddr = 0;
	int got = fscanf(f, "%ld %lx", &nr, &uaddr);
	fclose(f);
	return got == 2 && nr == SYS_futex && uaddr >= (uintptr_t)obj &&
	       uaddr < (uintptr_t)obj + len;
}

/* The kernel's state letter of thread `tid` ('R', 'S', ...), '?' unknown. */
__attribute__((no_instrument_function)) static char thread_state(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* The waiter sleeps on the scene's lock (or, asleep, on the condition
 * variable).  Nothing traced is called here: the holder's innermost method
 * while it polls must stay slow_holder. */
__attribute__((no_instrument_function)) static int waiter_asleep_on_lock(const struct scene *s)
{
	if (s->rw == COND)
		return thread_state(s->waiter_tid) == 'S';
	if (s->rw == RWLOCK || s->rw == TIMED_RWLOCK)
		return futex_waits_on(s->waiter_tid, &s->rwl, sizeof(s->rwl));
	return futex_waits_on(s->waiter_tid, &s->mu, sizeof(s->mu));
}

__attribute__((noinline)) static void slow_holder(struct scene *s)
{
	if (is_rw(s))
		assert_int_equal(pthread_rwlock_wrlock(&s->rwl), 0);
	else if (s->rw != COND)
		assert_int_equal(pthread_mutex_lock(&s->mu), 0);
	s->held = 1;
	/* Hold it (or wait to signal) until the waiter sleeps on it (60 s at
	 * most: a hang guard). */
	int64_t deadline = now_ns() + 60 * 1000000000ll;
	while (now_ns() < deadline && !(s->trying && waiter_asleep_on_lock(s)))
		sched_yield();
	if (is_rw(s)) {
		pthread_rwlock_unlock(&s->rwl);
	} else if (s->rw == COND) {
		pthread_mutex_lock(&s->mu);
		s->ready = 1;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->mu);
	} else {
		pthread_mutex_unlock(&s->mu);
	}
}

__attribute__((noinline)) static void ui_wait(struct scene *s)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	if (s->rw == COND) {
		pthread_mutex_lock(&s->mu);
		s->trying = 1;
		while (!s->ready && !s->lock_rc)
			s->lock_rc = pthread_cond_wait(&s->cond, &s->mu);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->trying = 1;
	switch (s->rw) {
	case MUTEX:
		s->lock_rc = pthread_mutex_lock(&s->mu);
		break;
	case TIMED_MUTEX:
		s->lock_rc = pthread_mutex_timedlock(&s->mu, &until);
		break;
	case RWLOCK:
		s->lock_rc = pthread_rwlock_rdlock(&s->rwl);
		break;
	default:
		s->lock_rc = pthread_rwlock_timedrdlock(&s->rwl, &until);
		break;
	}
	if (is_rw(s))
		pthread_rwlock_unlock(&s->rwl);
	else
		pthread_mutex_unlock(&s->mu);
}

static void *holder_main(void *arg)
{
	struct scene *s = arg;
	s->holder_tid = (int)syscall(SYS_gettid);
	while (!s->go_holder)
		sched_yield();
	slow_holder(s);
	return NULL;
}

static void *waiter_main(void *arg)
{
	struct scene *s = arg;
	s->waiter_tid = (int)syscall(SYS_gettid);
	while (!s->go_waiter || !s->held)
		sched_yield();
	ui_wait(s);
	/* Both exit through librvtrace's registry lock: one at a time, so
	 * this thread's capture holds only the wait under test. */
	pthread_join(s->holder, NULL);
	return NULL;
}

/* Runs the scene: the holder takes the lock, the waiter waits for it. */
static void run_scene(struct scene *s)
{
	pthread_mutex_init(&s->mu, NULL);
	pthread_rwlock_init(&s->rwl, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_t w;
	assert_int_equal(pthread_create(&s->holder, NULL, holder_main, s), 0);
	assert_int_equal(pthread_create(&w, NULL, waiter_main, s), 0);
	while (!s->holder_tid || !s->waiter_tid)
		sched_yield();
	if (s->trace) {
		assert_int_equal(rvt_start(s->holder_tid), 0);
		assert_int_equal(rvt_start(s->waiter_tid), 0);
	}
	s->go_holder = 1;
	s->go_waiter = 1;
	pthread_join(w, NULL);
	assert_int_equal(s->lock_rc, 0);
}

static const char *method_name(const rva_trace *t, int64_t id)
{
	return id >= 0 && (size_t)id < t->nmethods ? t->names[id] : "(unknown)";
}

static rva_trace *capture_decode(int tid)
{
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(tid, &size);
	assert_true(fd >= 0);
	uint8_t *buf = malloc(size);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, size, 0), (ssize_t)size);
	close(fd);
	rva_trace *t = NULL;
	rva_error err = {0};
	int rc = rva_capture_decode(buf, size, &t, &err);
	free(buf);
	if (rc)
		fail_msg("decode: %s", err.msg);
	return t;
}

/* What rvtrace shows of t's one wait: the per-method statistics, the
 * summary JSON field, the Chrome flow arrow and the `why` block. */
static void check_shown(const rva_trace *t, int holder, int cond)
{
	rva_lock_stat *st;
	size_t n;
	assert_int_equal(rva_lock_stats(t, &st, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(method_name(t, st[0].method), "ui_wait");
	assert_int_equal(st[0].waits, 1);
	assert_int_equal(st[0].top_holder, holder);
	assert_string_equal(method_name(t, st[0].top_holder_method), "slow_holder");
	assert_int_equal(st[0].top_holder_ns, st[0].total);
	int64_t ui = st[0].method;
	free(st);

	char *doc = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&doc, &len);
	assert_non_null(f);
	assert_int_equal(rva_summary_json(f, t, -1, 10), 0);
	fclose(f);
	assert_non_null(strstr(doc, "\"lock_waits\":[\n {\"method\":\"ui_wait\",\"waits\":1,"));
	assert_non_null(strstr(doc, "\"holder_method\":\"slow_holder\""));
	free(doc);

	f = open_memstream(&doc, &len);
	assert_non_null(f);
	assert_int_equal(rva_export_chrome(f, t), 0);
	fclose(f);
	char want[128];
	snprintf(want, sizeof(want), "{\"ph\":\"s\",\"cat\":\"lock\",\"name\":\"lock\",\"id\":1,");
	assert_non_null(strstr(doc, want));
	snprintf(want, sizeof(want), "\"tid\":%d", holder);
	assert_non_null(strstr(strstr(doc, "\"ph\":\"s\""), want));
	assert_non_null(strstr(doc, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"lock\""));
	assert_non_null(strstr(doc, cond ? "\"name\":\"signalled\"" : "\"name\":\"lock held\""));
	free(doc);

	f = open_memstream(&doc, &len);
	assert_non_null(f);
	assert_int_equal(rva_locks_why(f, t, (uint32_t)ui), 0);
	fclose(f);
	snprintf(want, sizeof(want), "%s by tid %d in slow_holder", cond ? "woken" : "held",
		 holder);
	assert_non_null(strstr(doc, want));
	free(doc);
}

static void check_wait(enum mode rw)
{
	struct scene s = {.rw = rw, .trace = 1};
	run_scene(&s);
	rva_trace *t = capture_decode(s.waiter_tid);
	size_t found = 0;
	for (size_t i = 0; i < t->nlock_waits; i++) {
		const rva_lock_wait *w = &t->lock_waits[i];
		const void *want_lock = rw == COND  ? (const void *)&s.cond
					: is_rw(&s) ? (const void *)&s.rwl
						    : (const void *)&s.mu;
		if (w->lock != (uint64_t)(uintptr_t)want_lock)
			continue;
		found++;
		assert_int_equal(w->kind, rw == COND  ? RVA_LOCK_COND
					  : is_rw(&s) ? RVA_LOCK_RDLOCK
						      : RVA_LOCK_MUTEX);
		assert_int_equal(w->waiter, s.waiter_tid);
		assert_int_equal(w->holder, s.holder_tid);
		assert_string_equal(method_name(t, w->holder_method), "slow_holder");
		assert_string_equal(method_name(t, w->waiter_method), "ui_wait");
		assert_true(w->end >= w->start);
	}
	assert_int_equal(found, 1);
	check_shown(t, s.holder_tid, rw == COND);
	rva_trace_free(t);
}

static void test_locks_contended_mutex_records_holder_and_method(void **state)
{
	(void)state;
	check_wait(MUTEX);
}

static void test_locks_contended_rwlock_records_writer_and_method(void **state)
{
	(void)state;
	check_wait(RWLOCK);
}

static void test_locks_contended_timedlock_records_holder_and_method(void **state)
{
	(void)state;
	check_wait(TIMED_MUTEX);
}

static void test_locks_contended_timed_rwlock_records_writer_and_method(void **state)
{
	(void)state;
	check_wait(TIMED_RWLOCK);
}

/* The condition variable's wait: the holder is the thread that signalled
 * it, its method the one it signalled from. */
static void test_locks_cond_wait_records_waker_and_method(void **state)
{
	(void)state;
	check_wait(COND);
}

static void test_locks_untraced_contended_records_nothing(void **state)
{
	(void)state;
	struct scene s = {.rw = 0, .trace = 0};
	run_scene(&s);
	struct rvt_lock_wait w[RVT_LOCK_WAITS];
	assert_int_equal(rvt_locks_collect(s.waiter_tid, 0, w, RVT_LOCK_WAITS), 0);
}

/* FORMAT.md "LOCK_WAIT, worked example": the record's 64 bytes. */
static const uint8_t example_record[64] = {
	0x0f, 0x00, 0x00, 0x00, 0x38, 0x00, 0x00, 0x00, /* type 15, length 56 */
	0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* mutex, both methods known */
	0x92, 0x10, 0x00, 0x00, 0x93, 0x10, 0x00, 0x00, /* waiter 4242, holder 4243 */
	0x40, 0x60, 0x55, 0x55, 0x55, 0x55, 0x00, 0x00, /* lock 0x555555556040 */
	0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* waiter method 0x1200 (main) */
	0x00, 0xd0, 0xaa, 0xaa, 0xaa, 0x29, 0x00, 0x00, /* holder method (work) */
	0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* start 0x2_00000003 */
	0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* end 0x2_00000007 */
};

static void test_locks_format_example_encodes_and_decodes(void **state)
{
	(void)state;
	/* FORMAT.md §2's worked example, plus the LOCK_WAIT. */
	uint64_t ring[8] = {0xfffffffe00001200ull, 0x000029aaaaaad000ull, 0x0000000200000001ull,
			    0x0000000800000000ull, 0x0000001000000000ull};
	static const uint8_t id0[] = {1, 2, 3, 4}, id1[] = {0xaa, 0xbb, 0xcc, 0xdd};
	struct rvt_module mods[2] = {{0, 0x555555554000ull, 0x555555554000ull, 0x555555559000ull,
				      id0, 4, "/usr/bin/example"},
				     {1, 0x7f0000000000ull, 0x7f0000000000ull, 0x7f0000003000ull,
				      id1, 4, "/usr/lib/libwork.so"}};
	struct rvt_symbol syms[2] = {{0x1200, 0x1200, 0, "main"},
				     {0x29aaaaaad000ull, 0x1000, 1, "work"}};
	struct rvt_lock_wait lw = {.kind = RVT_LOCK_MUTEX,
				   .flags = RVT_LOCK_HOLDER_METHOD | RVT_LOCK_WAITER_METHOD,
				   .waiter = 4242,
				   .holder = 4243,
				   .lock = 0x555555556040ull,
				   .waiter_method = 0x1200,
				   .holder_method = 0x29aaaaaad000ull,
				   .start = 0x200000003ull,
				   .end = 0x200000007ull};
	static const char cmd[] = "example\0--demo";
	struct rvt_capture_desc d = {.ref_counter = 0x200000010ull,
				     .ref_realtime_ns = 1763683200000000000ull,
				     .ref_monotonic_ns = 123456789000ull,
				     .counter_hz = 1000000000ull,
				     .arch = 1,
				     .pid = 4242,
				     .tid = 4242,
				     .method_base = 0x555555554000ull,
				     .ring_slots = 8,
				     .end_pos = 5,
				     .ring = ring,
				     .exe = "/usr/bin/example",
				     .cmdline = cmd,
				     .cmdline_len = sizeof(cmd),
				     .thread_name = "main",
				     .modules = mods,
				     .nmodules = 2,
				     .symbols = syms,
				     .nsymbols = 2,
				     .waits = &lw,
				     .nwaits = 1};
	uint8_t *buf;
	size_t len;
	assert_int_equal(rvt_capture_encode(&d, &buf, &len), 0);
	/* §2's file is 472 bytes: the record goes before CHECKSUM (440). */
	assert_int_equal(len, 472 + 64);
	assert_memory_equal(buf + 440, example_record, sizeof(example_record));
	rva_trace *t = NULL;
	rva_error err = {0};
	assert_int_equal(rva_capture_decode(buf, len, &t, &err), 0);
	free(buf);
	assert_int_equal(t->nlock_waits, 1);
	const rva_lock_wait *w = &t->lock_waits[0];
	assert_int_equal(w->kind, RVA_LOCK_MUTEX);
	assert_int_equal(w->waiter, 4242);
	assert_int_equal(w->holder, 4243);
	assert_int_equal(w->lock, 0x555555556040ull);
	assert_string_equal(method_name(t, w->waiter_method), "main");
	assert_string_equal(method_name(t, w->holder_method), "work");
	/* 13 and 9 ticks (ns) before the freeze at 123 456 789 000 ns. */
	assert_int_equal(w->start, 123456789000ll - 13);
	assert_int_equal(w->end, 123456789000ll - 9);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_locks_contended_mutex_records_holder_and_method),
		cmocka_unit_test(test_locks_contended_rwlock_records_writer_and_method),
		cmocka_unit_test(test_locks_contended_timedlock_records_holder_and_method),
		cmocka_unit_test(test_locks_contended_timed_rwlock_records_writer_and_method),
		cmocka_unit_test(test_locks_cond_wait_records_waker_and_method),
		cmocka_unit_test(test_locks_untraced_contended_records_nothing),
		cmocka_unit_test(test_locks_format_example_encodes_and_decodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
