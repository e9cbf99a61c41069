/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_protocol.c — the Fig. 4 start/stop protocol: thousands of start, stop
 * and capture cycles against a thread running hot (run under ThreadSanitizer
 * by `make tsan`), and the handover's wait checked deterministically: a stop
 * published while a trace point is writing completes only when that trace
 * point ends, at the end position it published.
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
#include "rearview/trace-inline.h"
#include "rearview/trace.h"

struct hot {
	pthread_t th;
	_Atomic int tid;
	_Atomic int stop;
	_Atomic unsigned long calls;
};

static void *hot_main(void *arg)
{
	struct hot *h = arg;
	rvt_thread_register();
	h->tid = (int)syscall(SYS_gettid);
	while (!h->stop) {
		call_top(2);
		inl_top(1);
		h->calls++;
	}
	return NULL;
}

static void test_protocol_start_stop_cycles_while_hot_stay_consistent(void **state)
{
	(void)state;
	struct hot h;
	memset(&h, 0, sizeof(h));
	assert_int_equal(pthread_create(&h.th, NULL, hot_main, &h), 0);
	while (h.tid == 0)
		sched_yield();
	assert_int_equal(rvt_set_config(8192, 0), 0);
	for (int i = 0; i < 2000; i++) {
		assert_int_equal(rvt_start(h.tid), 0);
		if (i % 2)
			sched_yield();
		if (i % 100 == 0) {
			uint64_t size;
			int fd = rvt_capture_to_memfd(h.tid, &size);
			assert_true(fd >= 0);
			struct cu_capture c;
			assert_int_equal(cu_parse_fd(fd, &c), 0);
			for (size_t k = 1; k < c.nevents; k++)
				assert_true(c.events[k].ts >= c.events[k - 1].ts);
			cu_release(&c);
			close(fd);
		}
		assert_int_equal(rvt_stop(h.tid, i % 10 == 0), 0);
		assert_int_equal(rvt_is_tracing(h.tid), 0);
	}
	h.stop = 1;
	pthread_join(h.th, NULL);
	assert_true(h.calls > 0);
	assert_int_equal(rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, 0), 0);
}

struct stopper {
	pid_t tid;
	_Atomic int done;
	int rc;
};

static void *stopper_main(void *arg)
{
	struct stopper *st = arg;
	st->rc = rvt_stop(st->tid, 0);
	st->done = 1;
	return NULL;
}

static void test_protocol_handover_waits_for_trace_point_in_flight(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	call_top(0);
	struct rvt__thread *t = &rvt__tls;
	/* Pretend a trace point of this thread is mid-write. */
	uint64_t *cur = __atomic_load_n(&t->cur, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->busy, 1, __ATOMIC_SEQ_CST);
	struct stopper st = {.tid = (pid_t)syscall(SYS_gettid)};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stopper_main, &st), 0);
	/* The stop is published, but cannot complete while busy is set. */
	while (__atomic_load_n(&t->start, __ATOMIC_SEQ_CST) != 0)
		sched_yield();
	assert_int_equal(st.done, 0);
	/* The trace point "writes" its slot and ends. */
	*cur = 0;
	__atomic_store_n(&t->cur, cur + 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->busy, 0, __ATOMIC_SEQ_CST);
	pthread_join(th, NULL);
	assert_int_equal(st.rc, 0);
	assert_int_equal(rvt_is_tracing(0), 0);
	/* The end recorded is the one the trace point published. */
	uint64_t size;
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	struct cu_capture c;
	assert_int_equal(cu_parse_fd(fd, &c), 0);
	close(fd);
	assert_int_equal(c.end_pos, (uint64_t)(cur + 1 - t->base));
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

static void test_protocol_nested_trace_point_in_busy_window_is_dropped(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	struct rvt__thread *t = &rvt__tls;
	call_top(0);
	uint64_t *cur = __atomic_load_n(&t->cur, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->busy, 1,
			 __ATOMIC_SEQ_CST); /* as if a handler interrupted a trace point */
	call_top(0);
	assert_ptr_equal(__atomic_load_n(&t->cur, __ATOMIC_SEQ_CST), cur);
	__atomic_store_n(&t->busy, 0, __ATOMIC_SEQ_CST);
	call_top(0);
	assert_ptr_not_equal(__atomic_load_n(&t->cur, __ATOMIC_SEQ_CST), cur);
	assert_int_equal(rvt_stop(0, 1), 0);
}

struct shortlived {
	_Atomic int tid;
	_Atomic int go;
};

static void *shortlived_main(void *arg)
{
	struct shortlived *sl = arg;
	sl->tid = (int)syscall(SYS_gettid);
	while (!sl->go)
		sched_yield();
	for (int i = 0; i < 50; i++)
		call_top(1);
	return NULL; /* exits, maybe in the middle of a handover */
}

static void test_protocol_handover_racing_thread_exit_stays_consistent(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_config(8192, 0), 0);
	for (int i = 0; i < 300; i++) {
		struct shortlived sl = {0};
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, shortlived_main, &sl), 0);
		while (sl.tid == 0)
			sched_yield();
		assert_int_equal(rvt_start(sl.tid), 0); /* registered at birth */
		sl.go = 1;
		/* Capture and stop while it runs and exits: each either happens
		 * before the exit or finds the buffer the exit left. */
		int fd = rvt_capture_to_memfd(sl.tid, NULL);
		if (fd >= 0) {
			struct cu_capture c;
			assert_int_equal(cu_parse_fd(fd, &c), 0);
			for (size_t k = 1; k < c.nevents; k++)
				assert_true(c.events[k].ts >= c.events[k - 1].ts);
			cu_release(&c);
			close(fd);
		} else {
			assert_int_equal(fd, -ESRCH);
		}
		int rc = rvt_stop(sl.tid, i % 2);
		assert_true(rc == 0 || rc == -ESRCH);
		pthread_join(th, NULL);
		rc = rvt_stop(sl.tid, 1); /* forget what is left */
		assert_true(rc == 0 || rc == -ESRCH);
	}
	assert_int_equal(rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, 0), 0);
}

int main(void)
{
	/* The protocol, not the budget: call_top() is hot in the first test, and
	 * the budget (on by default) would mute it, so that the later tests'
	 * calls of it wrote nothing. */
	rvt_set_mute("off");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_protocol_start_stop_cycles_while_hot_stay_consistent),
		cmocka_unit_test(test_protocol_handover_waits_for_trace_point_in_flight),
		cmocka_unit_test(test_protocol_nested_trace_point_in_busy_window_is_dropped),
		cmocka_unit_test(test_protocol_handover_racing_thread_exit_stays_consistent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
