/* SPDX-License-Identifier: Apache-2.0 */
/*
 * torture.h — allocation-failure ("torture") testing, curl's model: a call
 * is run again and again with the 1st, 2nd, 3rd … allocation failing, until
 * a run in which no allocation fails.  Every failing run must end cleanly:
 * no crash, a negative errno (or the complete result, when a library
 * absorbed the failure), nothing leaked (LeakSanitizer checks that in the
 * sanitizer stage of `make check`).
 *
 * The hook lives in the test binary (tests/torture/torture.c defines malloc,
 * calloc, realloc, strdup and strndup over the real allocator), so product
 * code needs none.  It is armed only inside torture_run(): everything else
 * in a test allocates normally.  Not thread-safe to arm from two threads.
 */
#ifndef RV_TORTURE_H
#define RV_TORTURE_H

#include <stddef.h>

/* The call under test: 0 on success (having released what it made), or a
 * negative errno.  `arg` is borrowed from the caller of torture_run(). */
typedef int (*torture_fn)(void *arg);

/*
 * Makes the n-th allocation counted from now (n >= 1) fail with ENOMEM;
 * every other allocation succeeds.  n = 0 disarms.
 */
void torture_arm(unsigned long n);

/* Disarms; returns 1 when the armed failure happened since torture_arm(). */
int torture_disarm(void);

/* The n of the last torture_arm(n), for messages (RV_TORTURE_BACKTRACE=n). */
unsigned long torture_point(void);

/*
 * Runs fn(arg) once with no failure (it must return 0; this counts its
 * allocations), then with allocation n failing for n = 1, 2, … until a run
 * in which the n-th allocation is never reached; that last run must return
 * 0.  A call making more than 2000 allocations has its first and last 64
 * failed and a geometric sample of those between (torture.c says why).
 * A run in which the failure happened must return a negative errno (exactly
 * `want` when that is nonzero, e.g. -ENOMEM), or 0 when the failure was
 * absorbed (glibc's qsort falls back to sorting in place): fn must then
 * check that its result is the complete one.  Fails
 * the cmocka test otherwise, naming n and the return value.  Returns the
 * number of allocation failures tried (the caller asserts it is > 0, so a hook
 * that stopped working fails the test instead of passing it).
 */
unsigned long torture_run(torture_fn fn, void *arg, int want);

#endif
