/* SPDX-License-Identifier: Apache-2.0 */
/*
 * torture.c — the allocation hook behind torture.h.  This file defines
 * malloc, calloc, realloc, strdup and strndup for the whole test process,
 * so allocations from product code, libc internals (stdio, open_memstream),
 * jansson, protobuf-c, mbedTLS and sqlite3 all pass through it.
 *
 * Each definition forwards to the real allocator: AddressSanitizer's
 * (__interceptor_malloc …, weak references resolved only in a sanitized
 * build, so LeakSanitizer still sees every block) or else glibc's
 * (__libc_malloc …).  free() is not defined here: the real one matches both.
 * strdup and strndup are defined because ASan intercepts them directly,
 * without calling malloc.  The aligned allocators (posix_memalign,
 * aligned_alloc) are not hooked: nothing under test uses them.
 *
 * RV_TORTURE_BACKTRACE=N in the environment prints where the injected
 * failure of allocation N happens (to find who ignores it: the addresses go
 * to addr2line -f -e BINARY).
 *
 * Invariants: disarmed (target == 0) every call forwards unchanged; armed,
 * exactly the allocation whose 1-based count equals target returns NULL
 * with errno = ENOMEM and sets `fired`; the counter is atomic because
 * libraries may allocate from their own threads.
 */
#include <errno.h>
#include <execinfo.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "torture.h"

extern void *__interceptor_malloc(size_t n) __attribute__((weak));
extern void *__interceptor_calloc(size_t k, size_t n) __attribute__((weak));
extern void *__interceptor_realloc(void *p, size_t n) __attribute__((weak));
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t k, size_t n);
extern void *__libc_realloc(void *p, size_t n);

/* Calls with at most TORTURE_EXHAUSTIVE allocations have every one failed
 * in turn.  Longer ones (mbedTLS's bignum arithmetic allocates thousands of
 * times in one signature check, all through the same error path) have their
 * first and last TORTURE_EDGE failed, and between those a geometric sample:
 * each step 1/TORTURE_EDGE of the way so far. */
#define TORTURE_EXHAUSTIVE 2000ul
#define TORTURE_EDGE	   64ul
/* Upper bound on allocations per call: a torture input that needs more is
 * too big and should be made smaller. */
#define TORTURE_MAX_POINTS 1000000ul

static atomic_ulong target;
static atomic_ulong armed; /* the last n armed, kept after disarming */
static atomic_ulong count;
static atomic_int fired;

/* 1 when this allocation is the one that must fail. */
static int should_fail(void)
{
	unsigned long t = atomic_load_explicit(&target, memory_order_relaxed);

	if (t == 0)
		return 0;
	if (atomic_fetch_add_explicit(&count, 1, memory_order_relaxed) + 1 != t)
		return 0;
	atomic_store(&fired, 1);
	const char *bt = getenv("RV_TORTURE_BACKTRACE");
	if (bt && strtoul(bt, NULL, 10) == t) {
		void *pcs[32];

		fprintf(stderr, "torture: allocation %lu fails here:\n", t);
		backtrace_symbols_fd(pcs, backtrace(pcs, 32), 2);
	}
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	if (should_fail())
		return NULL;
	return __interceptor_malloc ? __interceptor_malloc(n) : __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	if (should_fail())
		return NULL;
	return __interceptor_calloc ? __interceptor_calloc(k, n) : __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	if (should_fail())
		return NULL;
	return __interceptor_realloc ? __interceptor_realloc(p, n) : __libc_realloc(p, n);
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

void torture_arm(unsigned long n)
{
	atomic_store(&target, 0);
	atomic_store(&count, 0);
	atomic_store(&fired, 0);
	if (n)
		atomic_store(&armed, n);
	atomic_store(&target, n);
}

unsigned long torture_point(void)
{
	return atomic_load(&armed);
}

int torture_disarm(void)
{
	atomic_store(&target, 0);
	return atomic_load(&fired);
}

/* The allocation point after n, for a call that made `total` allocations
 * when none failed. */
static unsigned long next_point(unsigned long n, unsigned long total)
{
	unsigned long step;

	if (total <= TORTURE_EXHAUSTIVE || n < TORTURE_EDGE || n + TORTURE_EDGE >= total)
		return n + 1;
	step = n / TORTURE_EDGE;
	return n + step < total - TORTURE_EDGE ? n + step : total - TORTURE_EDGE;
}

unsigned long torture_run(torture_fn fn, void *arg, int want)
{
	unsigned long total, tried = 0;
	int rc;

	/* A clean run counts the allocations (ULONG_MAX is never reached). */
	torture_arm(ULONG_MAX);
	rc = fn(arg);
	total = atomic_load(&count);
	torture_disarm();
	if (rc != 0)
		fail_msg("the call fails with no allocation failing: %d", rc);
	if (total > TORTURE_MAX_POINTS)
		fail_msg("%lu allocations: make the torture input smaller", total);
	for (unsigned long n = 1;; n = next_point(n, total)) {
		int hit;

		torture_arm(n);
		rc = fn(arg);
		hit = torture_disarm();
		if (!hit) {
			if (rc != 0)
				fail_msg("allocation %lu armed, none failed, but the call returned "
					 "%d",
					 n, rc);
			return tried;
		}
		tried++;
		if (rc > 0 || (rc < 0 && want != 0 && rc != want))
			fail_msg("allocation %lu failed; the call returned %d, want 0 or %d", n, rc,
				 want);
	}
}
