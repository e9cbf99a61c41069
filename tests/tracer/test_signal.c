/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_signal.c — stopping threads that cannot reach a trace point, and
 * signals landing in the middle of trace points.  This file is itself built
 * with -finstrument-functions, so the SIGUSR1 handler is an instrumented
 * signal handler that interrupts instrumented code.  test_signal_inline.c
 * builds it again in inline mode, against the inline-mode fixture (FIX).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "fixture.h"
#include "rearview/trace.h"

/* The fixture the workers run: call mode here, inline mode when built as
 * test_signal_inline. */
#ifdef RVT_TEST_INLINE
#define FIX(n)	   inl_##n
#define FIXNAME(n) "inl_" #n
#else
#define FIX(n)	   call_##n
#define FIXNAME(n) "call_" #n
#endif

struct worker {
	pthread_t th;
	_Atomic int tid;
	volatile int stop;
	unsigned long calls;
	int pipe[2];
	int mode; /* 0 spin, 1 block in read(), 2 trace itself then exit */
};

static _Atomic unsigned long handled;

__attribute__((noinline)) static int in_handler(int x)
{
	return x * 3;
}

static void on_usr1(int sig)
{
	(void)sig;
	/* A two-slot manual entry (key below method_base) inside the handler. */
	rvt_enter((const void *)(uintptr_t)0x1000);
	in_handler(1);
	rvt_exit();
	handled++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	if (w->mode == 3) { /* never calls librvtrace: started by tid */
		w->tid = (int)syscall(SYS_gettid);
		char c;
		while (read(w->pipe[0], &c, 1) < 0 && errno == EINTR)
			;
		FIX(top)(2);
		return NULL;
	}
	assert_true(rvt_thread_register() > 0);
	if (w->mode == 2) {
		assert_int_equal(rvt_start(0), 0);
		FIX(top)(2);
		w->tid = (int)syscall(SYS_gettid);
		return NULL; /* exits while traced */
	}
	w->tid = (int)syscall(SYS_gettid);
	if (w->mode == 1) {
		char c;
		while (read(w->pipe[0], &c, 1) < 0 && errno == EINTR)
			;
		return NULL;
	}
	FIX(spin)(&w->stop, &w->calls);
	return NULL;
}

static void worker_start(struct worker *w, int mode)
{
	memset(w, 0, sizeof(*w));
	w->mode = mode;
	assert_int_equal(pipe(w->pipe), 0);
	assert_int_equal(pthread_create(&w->th, NULL, worker_main, w), 0);
	while (w->tid == 0) {
		struct timespec n = {0, 1000000};
		nanosleep(&n, NULL);
	}
}

static void worker_join(struct worker *w)
{
	w->stop = 1;
	ssize_t n = write(w->pipe[1], "x", 1);
	(void)n;
	pthread_join(w->th, NULL);
	close(w->pipe[0]);
	close(w->pipe[1]);
}

/* rvt_capture_to_memfd and rvt_stop may answer -ETIMEDOUT when a trace
 * point of the thread did not end within 2 s (trace.h), which a loaded
 * machine can cause by descheduling the thread mid-signal-storm; nothing
 * changed then, so the test tries again (a hang guard, not a timing
 * assertion: any other error fails). */
static int capture_retrying(pid_t tid, uint64_t *size)
{
	int fd, tries = 0;
	while ((fd = rvt_capture_to_memfd(tid, size)) == -ETIMEDOUT && ++tries < 30)
		;
	return fd;
}

static int stop_retrying(pid_t tid, int release)
{
	int rc, tries = 0;
	while ((rc = rvt_stop(tid, release)) == -ETIMEDOUT && ++tries < 30)
		;
	return rc;
}

/* Every slot decodes, and exits never outnumber what nesting allows. */
static void check_capture(pid_t tid, int expect_chain)
{
	uint64_t size;
	int fd = capture_retrying(tid, &size);
	assert_true(fd >= 0);
	struct cu_capture c;
	assert_int_equal(cu_parse_fd(fd, &c), 0);
	close(fd);
	assert_int_equal(c.tid, (uint32_t)tid);
	static const char *const known[] = {FIXNAME(top),  FIXNAME(middle), FIXNAME(leaf),
					    FIXNAME(spin), "in_handler",    "on_usr1"};
	for (size_t i = 0; i < c.nevents; i++) {
		/* A late or torn write shows as time going backwards... */
		if (i > 0)
			assert_true(c.events[i].ts >= c.events[i - 1].ts);
		if (!c.events[i].entry || c.events[i].value == 0x1000 - c.method_base)
			continue;
		/* ...or as a value that is no function. */
		const char *n = cu_name(&c, c.events[i].value);
		assert_non_null(n);
		int ok = 0;
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			ok |= strcmp(n, known[k]) == 0;
		if (!ok)
			fail_msg("unexpected function '%s' value %#llx", n,
				 (unsigned long long)c.events[i].value);
	}
	if (expect_chain)
		assert_true(cu_find_entry(&c, FIXNAME(leaf), 0) >= 0);
	cu_release(&c);
}

static void *storm_main(void *arg)
{
	struct worker *w = arg;
	struct timespec n = {0, 20000};
	while (!w->stop) {
		syscall(SYS_tgkill, getpid(), w->tid, SIGUSR1);
		nanosleep(&n, NULL);
	}
	return NULL;
}

static void test_signal_storm_during_start_stop_keeps_slots_whole(void **state)
{
	(void)state;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	struct worker w;
	worker_start(&w, 0);
	pthread_t storm;
	assert_int_equal(pthread_create(&storm, NULL, storm_main, &w), 0);
	assert_int_equal(rvt_set_config(4096, 0), 0); /* small rings wrap often */
	for (int i = 0; i < 150; i++) {
		assert_int_equal(rvt_start(w.tid), 0);
		unsigned long before = *(volatile unsigned long *)&w.calls;
		/* Two more iterations: one whole call_top(3) ran traced. */
		while (*(volatile unsigned long *)&w.calls < before + 2) {
			struct timespec n = {0, 100000};
			nanosleep(&n, NULL);
		}
		if (i % 3 == 0) {
			check_capture(w.tid, 1); /* freeze + swap while it runs */
		} else {
			assert_int_equal(stop_retrying(w.tid, 0), 0);
			check_capture(w.tid, 1);
		}
	}
	assert_int_equal(stop_retrying(w.tid, 1), 0);
	worker_join(&w);
	pthread_join(storm, NULL);
	assert_true(handled > 0);
	assert_int_equal(rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, 0), 0);
	signal(SIGUSR1, SIG_DFL);
}

static void test_signal_stop_thread_blocked_in_read_completes(void **state)
{
	(void)state;
	struct worker w;
	worker_start(&w, 1);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rvt_start(w.tid), 0);
		/* It never reaches a trace point: only the signal can stop it. */
		assert_int_equal(rvt_stop(w.tid, 0), 0);
		assert_int_equal(rvt_is_tracing(w.tid), 0);
	}
	check_capture(w.tid, 0);
	assert_int_equal(rvt_stop(w.tid, 1), 0);
	worker_join(&w);
}

static void test_signal_thread_exit_while_traced_keeps_buffer(void **state)
{
	(void)state;
	struct worker w;
	worker_start(&w, 2);
	pthread_join(w.th, NULL);
	close(w.pipe[0]);
	close(w.pipe[1]);
	assert_int_equal(rvt_is_tracing(w.tid), 0);
	check_capture(w.tid, 1);
	/* Captured and gone: the record went with it. */
	assert_int_equal(rvt_start(w.tid), -ESRCH);
}

static void test_signal_exited_thread_ring_yields_to_live_thread_at_limit(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_config(0, 1), 0);
	struct worker w;
	worker_start(&w, 2);
	pthread_join(w.th, NULL); /* exited while traced: holds the only ring */
	close(w.pipe[0]);
	close(w.pipe[1]);
	assert_int_equal(rvt_start(0), 0); /* reclaims it */
	uint64_t size;
	assert_true(rvt_capture_to_memfd(w.tid, &size) < 0);
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(rvt_set_config(0, RVT_DEFAULT_MAX_BUFFERS), 0);
}

static void test_signal_thread_that_never_called_in_started_by_tid_is_traced(void **state)
{
	(void)state;
	struct worker w;
	worker_start(&w, 3);
	/* Registered at birth (pthread_create is interposed): no signal. */
	assert_int_equal(rvt_start(w.tid), 0);
	assert_int_equal(rvt_is_tracing(w.tid), 1);
	ssize_t n = write(w.pipe[1], "x", 1);
	assert_int_equal(n, 1);
	pthread_join(w.th, NULL); /* it ran call_top(2) traced, then exited */
	close(w.pipe[0]);
	close(w.pipe[1]);
	check_capture(w.tid, 1);
	assert_int_equal(rvt_start(w.tid), -ESRCH);
}

int main(void)
{
	/* check_capture asks for the hot leaf's entries: the budget, on by
	 * default, would mute it (this test is about signals; test_mute and
	 * test_mute_race race muting against captures). */
	rvt_set_mute("off");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signal_storm_during_start_stop_keeps_slots_whole),
		cmocka_unit_test(test_signal_stop_thread_blocked_in_read_completes),
		cmocka_unit_test(test_signal_thread_exit_while_traced_keeps_buffer),
		cmocka_unit_test(test_signal_thread_that_never_called_in_started_by_tid_is_traced),
		cmocka_unit_test(test_signal_exited_thread_ring_yields_to_live_thread_at_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
