/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracer_locks.c — the uncontended lock's cost with and without librvtrace
 * (issue 17: its pthread_mutex_lock / rwlock interposers try the lock first).
 * Takes and releases one mutex and one rwlock (write) N times (argv[1],
 * default 1 000 000), then the same with pthread_mutex_timedlock and
 * pthread_rwlock_timedwrlock, then signals and broadcasts a condition
 * variable without waiters N times, on a thread that is not traced; built twice, plain and
 * linked with librvtrace (RVT_LINKED), to be counted under callgrind
 * (tracer/BENCHMARKS.md, "Lock interposers").  Prints nothing on success.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#ifdef RVT_LINKED
#include "rearview/trace.h"
#endif

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
#ifdef RVT_LINKED
	if (rvt_is_tracing(0) < 0) /* pulls librvtrace in */
		return 1;
#endif
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	for (long i = 0; i < n; i++) {
		pthread_rwlock_wrlock(&l);
		pthread_rwlock_unlock(&l);
	}
	struct timespec until = {.tv_sec = 0x7fffffff};
	for (long i = 0; i < n; i++) {
		pthread_mutex_timedlock(&m, &until);
		pthread_mutex_unlock(&m);
	}
	for (long i = 0; i < n; i++) {
		pthread_rwlock_timedwrlock(&l, &until);
		pthread_rwlock_unlock(&l);
	}
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	for (long i = 0; i < n; i++) {
		pthread_cond_signal(&c);
		pthread_cond_broadcast(&c);
	}
	return 0;
}
