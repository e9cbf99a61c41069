/* SPDX-License-Identifier: Apache-2.0 */
/*
 * malloc_fix.c — an instrumented program that defines its own malloc,
 * calloc, realloc and free (forwarding to glibc's), as allocators built
 * with the program are: every caller of malloc in the process, librvtrace
 * included, runs the program's traced functions.  Its main thread, traced,
 * allocates exactly three times itself (mf_work), then starts a second
 * thread's tracing, captures that thread to argv[2] and itself to argv[1]
 * (librvtrace allocates for all of these on the main thread), then
 * allocates once more.  test_frames checks that the main thread's capture
 * holds the program's three mallocs and frees, and nothing of the tracer's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rearview/trace.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}

static volatile pid_t worker_tid;
static volatile int stop;

static void *worker(void *arg)
{
	(void)arg;
	worker_tid = (pid_t)syscall(SYS_gettid);
	while (!stop)
		usleep(1000);
	return NULL;
}

/* Where mf_work's blocks go before they are freed: seen from outside, so
 * no compiler removes the allocations (clang would). */
static char *volatile escaped;

__attribute__((noinline)) static void mf_work(void)
{
	for (int i = 0; i < 3; i++) {
		escaped = malloc(64);
		if (escaped) {
			memset(escaped, i, 64);
			free(escaped);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: malloc_fix MAIN_PATH WORKER_PATH\n");
		return 2;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL) != 0)
		return 1;
	while (worker_tid == 0)
		usleep(1000);
	int rc = rvt_start(0);
	if (rc == 0) {
		mf_work();
		rc = rvt_start(worker_tid);
	}
	if (rc == 0)
		rc = rvt_capture_to_path(worker_tid, argv[2]);
	if (rc == 0)
		rc = rvt_capture_to_path(0, argv[1]);
	mf_work(); /* after the capture: in the next ring, not in argv[1] */
	stop = 1;
	pthread_join(th, NULL);
	if (rc != 0)
		fprintf(stderr, "malloc_fix: %d\n", rc);
	return rc == 0 ? 0 : 1;
}
