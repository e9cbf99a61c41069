/*
 * sparse.c — sparse time (issue 14, lever 5; experimental, opt-in): the time
 * mode setting (rvt_set_time_mode(), RV_TRACE_TIME) and the ticker thread
 * that makes the first event after any gap of a millisecond or more read
 * the clock.  The trace point's side is in trace-inline.h ("Sparse time"),
 * the slots' in FORMAT.md §1.
 *
 * Invariants:
 * - rvt_time_k is 0 (exact) or 2..RVT_SPARSE_K_MAX; only rings mapped after
 *   a change take it (ring_new in tracer.c), so a ring never mixes modes.
 * - At most one ticker runs per process (ticker_pid under ticker_lock); it
 *   is started whenever the mode is sparse and this process has none (a
 *   fork child starts its own at its next rvt_start()), and it ends when
 *   the mode is exact and no thread traces into a sparse ring any more.
 * - The ticker never touches a thread's state but through rvt_sparse_tick()
 *   (registry lock held, one plain store per thread).
 *
 * This file is compiled without -finstrument-functions; nothing here traces.
 */
#include "tracer-int.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How often the ticker forces a stamp (FORMAT.md §1, Sparse time). */
#define TICK_NS (RVT_SPARSE_TICK_US * 1000L)

static pthread_mutex_t ticker_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t ticker_pid; /* the process whose ticker runs; 0: none */

static void *ticker(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec nap = {0, TICK_NS};
		nanosleep(&nap, NULL);
		unsigned n = rvt_sparse_tick();
		pthread_mutex_lock(&ticker_lock);
		int done = n == 0 && atomic_load(&rvt_time_k) <= 1;
		if (done)
			ticker_pid = 0;
		pthread_mutex_unlock(&ticker_lock);
		if (done)
			return NULL;
	}
}

int rvt_sparse_ticker_start(void)
{
	if (atomic_load(&rvt_time_k) <= 1)
		return 0;
	int rc = 0;
	pthread_mutex_lock(&ticker_lock);
	pid_t self = getpid();
	if (ticker_pid != self) {
		pthread_attr_t a;
		pthread_t th;
		rc = -pthread_attr_init(&a);
		if (rc == 0) {
			pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
			rc = -rvt_pthread_create_untraced(&th, &a, ticker, NULL);
			pthread_attr_destroy(&a);
		}
		if (rc == 0)
			ticker_pid = self;
	}
	pthread_mutex_unlock(&ticker_lock);
	return rc;
}

int rvt_set_time_mode(unsigned k)
{
	if (k > RVT_SPARSE_K_MAX)
		return -EINVAL;
	int rc = rvt_init();
	if (rc)
		return rc;
	atomic_store(&rvt_time_k, k > 1 ? k : 0);
	assert(atomic_load(&rvt_time_k) != 1); /* 0 (exact) or 2..K_MAX */
	return rvt_sparse_ticker_start();
}

unsigned rvt_time_mode(void)
{
	return atomic_load(&rvt_time_k);
}

void rvt_sparse_env(void)
{
	const char *e = getenv("RV_TRACE_TIME");
	if (!e || !*e || strcmp(e, "exact") == 0)
		return;
	unsigned long k = RVT_SPARSE_K_DEFAULT;
	int ok = strncmp(e, "sparse", 6) == 0 && (e[6] == '\0' || e[6] == ':');
	if (ok && e[6] == ':') {
		char *end;
		errno = 0;
		k = strtoul(e + 7, &end, 10);
		ok = !errno && end != e + 7 && !*end && k >= 2 && k <= RVT_SPARSE_K_MAX;
	}
	if (!ok) {
		rvt_say("rearview: RV_TRACE_TIME=%s not understood (exact, sparse or sparse:K with "
			"K "
			"from 2 to %u); exact time kept",
			e, RVT_SPARSE_K_MAX);
		return;
	}
	atomic_store(&rvt_time_k, (unsigned)k);
}
