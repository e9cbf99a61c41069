/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_blocking.c — stopping and capturing never disturb the traced thread
 * (issue 21, item 1).  Ten threads, each blocked in a different call
 * (epoll_wait, poll, ppoll, select, nanosleep, sleep, read on a pipe,
 * pthread_cond_wait, sem_wait, futex), are captured while traced, stopped,
 * captured again and restarted 100 times; each call must then return
 * exactly what it returns untraced: the byte, the ready descriptor, the
 * predicate, 0 for the sleeps — never EINTR, never a shortened sleep (the
 * remaining time is not written, sleep() returns 0).  The sleepers sleep
 * again and again until released, each sleep checked, so they are asleep
 * through every stop and capture however long those take.  The stop
 * latency is printed, not asserted.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "rearview/trace.h"

enum kind { EPOLL, POLL, PPOLL, SELECT, NANOSLEEP, SLEEP, READ, CONDWAIT, SEMWAIT, FUTEX, NKIND };
static const char *const kind_name[NKIND] = {"epoll_wait", "poll",  "ppoll", "select",
					     "nanosleep",  "sleep", "read",  "pthread_cond_wait",
					     "sem_wait",   "futex"};

struct blocker {
	enum kind kind;
	pthread_t th;
	_Atomic int tid;
	_Atomic int go;
	_Atomic int released; /* the sleepers: no more sleeps */
	int pipe[2];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int predicate;
	sem_t sem;
	_Atomic uint32_t word;
	/* What the call returned. */
	long rc;
	int err;
	int detail; /* the byte read, the ready fd, the predicate, ... */
	struct timespec rem;
};

static void *blocker_main(void *arg)
{
	struct blocker *b = arg;
	b->tid = (int)syscall(SYS_gettid);
	while (!b->go)
		sched_yield();
	call_top(1); /* something in the ring */
	errno = 0;
	switch (b->kind) {
	case EPOLL: {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = b->pipe[0]};
		epoll_ctl(ep, EPOLL_CTL_ADD, b->pipe[0], &ev);
		struct epoll_event out = {0};
		b->rc = epoll_wait(ep, &out, 1, -1);
		b->err = errno;
		b->detail = out.data.fd;
		close(ep);
		break;
	}
	case POLL: {
		struct pollfd p = {b->pipe[0], POLLIN, 0};
		b->rc = poll(&p, 1, -1);
		b->err = errno;
		b->detail = p.revents;
		break;
	}
	case PPOLL: {
		struct pollfd p = {b->pipe[0], POLLIN, 0};
		b->rc = ppoll(&p, 1, NULL, NULL);
		b->err = errno;
		b->detail = p.revents;
		break;
	}
	case SELECT: {
		fd_set r;
		FD_ZERO(&r);
		FD_SET(b->pipe[0], &r);
		b->rc = select(b->pipe[0] + 1, &r, NULL, NULL, NULL);
		b->err = errno;
		b->detail = FD_ISSET(b->pipe[0], &r);
		break;
	}
	case NANOSLEEP:
		do {
			struct timespec d = {0, 500000000};
			b->rem.tv_sec = -1; /* written only when interrupted */
			b->rc = nanosleep(&d, &b->rem);
			b->err = errno;
		} while (b->rc == 0 && b->rem.tv_sec == -1 && !b->released);
		break;
	case SLEEP:
		do
			b->rc = sleep(1); /* the seconds left if interrupted */
		while (b->rc == 0 && !b->released);
		b->err = errno;
		break;
	case READ: {
		char ch = 0;
		b->rc = read(b->pipe[0], &ch, 1);
		b->err = errno;
		b->detail = ch;
		break;
	}
	case CONDWAIT:
		pthread_mutex_lock(&b->mu);
		b->rc = pthread_cond_wait(&b->cv, &b->mu); /* once: no loop */
		b->detail = b->predicate;
		pthread_mutex_unlock(&b->mu);
		break;
	case SEMWAIT:
		b->rc = sem_wait(&b->sem);
		b->err = errno;
		break;
	case FUTEX:
		b->rc = syscall(SYS_futex, &b->word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		b->err = errno;
		b->detail = (int)b->word;
		break;
	default:
		break;
	}
	return NULL;
}

/* 1 once thread tid sleeps in the kernel (state S in /proc). */
static int blocked(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void release(struct blocker *b)
{
	switch (b->kind) {
	case CONDWAIT:
		pthread_mutex_lock(&b->mu);
		b->predicate = 1;
		pthread_cond_signal(&b->cv);
		pthread_mutex_unlock(&b->mu);
		break;
	case SEMWAIT:
		sem_post(&b->sem);
		break;
	case FUTEX:
		b->word = 1;
		syscall(SYS_futex, &b->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		break;
	case NANOSLEEP:
	case SLEEP:
		b->released = 1; /* the sleep under way is the last */
		break;
	default:
		assert_int_equal(write(b->pipe[1], "x", 1), 1);
		break;
	}
}

static void check(const struct blocker *b)
{
	const char *n = kind_name[b->kind];
	switch (b->kind) {
	case EPOLL:
		if (b->rc != 1 || b->detail != b->pipe[0])
			fail_msg("%s returned %ld (errno %d), fd %d", n, b->rc, b->err, b->detail);
		break;
	case POLL:
	case PPOLL:
		if (b->rc != 1 || !(b->detail & POLLIN))
			fail_msg("%s returned %ld (errno %d), revents %#x", n, b->rc, b->err,
				 b->detail);
		break;
	case SELECT:
		if (b->rc != 1 || !b->detail)
			fail_msg("%s returned %ld (errno %d)", n, b->rc, b->err);
		break;
	case NANOSLEEP:
		if (b->rc != 0 || b->rem.tv_sec != -1)
			fail_msg("%s returned %ld (errno %d), %ld s left", n, b->rc, b->err,
				 (long)b->rem.tv_sec);
		break;
	case SLEEP:
		if (b->rc != 0)
			fail_msg("%s returned %ld: cut short", n, b->rc);
		break;
	case READ:
		if (b->rc != 1 || b->detail != 'x')
			fail_msg("%s returned %ld (errno %d)", n, b->rc, b->err);
		break;
	case CONDWAIT:
		if (b->rc != 0 || b->detail != 1)
			fail_msg("%s returned %ld before the predicate was set", n, b->rc);
		break;
	case SEMWAIT:
		if (b->rc != 0)
			fail_msg("%s returned %ld (errno %d)", n, b->rc, b->err);
		break;
	case FUTEX:
		if (b->rc != 0 || b->detail != 1)
			fail_msg("%s returned %ld (errno %d) before the wake", n, b->rc, b->err);
		break;
	default:
		break;
	}
}

static void test_blocking_calls_return_as_untraced_across_100_stops_and_captures(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_config(65536, 3 * NKIND), 0);
	struct blocker *bs = calloc(NKIND, sizeof(*bs));
	assert_non_null(bs);
	for (int k = 0; k < NKIND; k++) {
		struct blocker *b = &bs[k];
		b->kind = (enum kind)k;
		assert_int_equal(pipe(b->pipe), 0);
		pthread_mutex_init(&b->mu, NULL);
		pthread_cond_init(&b->cv, NULL);
		sem_init(&b->sem, 0, 0);
		assert_int_equal(pthread_create(&b->th, NULL, blocker_main, b), 0);
		while (b->tid == 0)
			sched_yield();
		assert_int_equal(rvt_start(b->tid), 0);
		b->go = 1;
	}
	for (int k = 0; k < NKIND; k++)
		while (!blocked(bs[k].tid))
			sched_yield();
	uint64_t worst = 0;
	for (int i = 0; i < 100; i++)
		for (int k = 0; k < NKIND; k++) {
			pid_t tid = bs[k].tid;
			int fd = rvt_capture_to_memfd(tid, NULL); /* switch rings */
			assert_true(fd >= 0);
			close(fd);
			uint64_t t0 = now_ns();
			assert_int_equal(rvt_stop(tid, 0), 0);
			uint64_t dt = now_ns() - t0;
			worst = dt > worst ? dt : worst;
			fd = rvt_capture_to_memfd(tid, NULL);
			assert_true(fd >= 0);
			close(fd);
			assert_int_equal(rvt_start(tid), 0);
		}
	printf("stop of a blocked thread: worst %.3f ms over %d stops\n", (double)worst / 1e6,
	       100 * NKIND);
	for (int k = 0; k < NKIND; k++)
		release(&bs[k]);
	for (int k = 0; k < NKIND; k++) {
		pthread_join(bs[k].th, NULL);
		check(&bs[k]);
		assert_int_equal(rvt_stop(bs[k].tid, 1), 0);
		close(bs[k].pipe[0]);
		close(bs[k].pipe[1]);
		sem_destroy(&bs[k].sem);
	}
	free(bs);
	assert_int_equal(rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, RVT_DEFAULT_MAX_BUFFERS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_blocking_calls_return_as_untraced_across_100_stops_and_captures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
