/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mute_fix.c — the instrumented functions of test_mute, built twice: in call
 * mode (MF_PREFIX mc_) and in rvcc's inline mode (mi_).  tiny() is hot and
 * short; tiny(-1) instead waits inside until `hold` is cleared, so a thread
 * can be inside the function while it is muted; rare() is never hot.
 */
#include "mute_fix.h"

#include <sched.h>

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define F(n)	   CAT(MF_PREFIX, n)

_Atomic int F(hold), F(inside);

__attribute__((noinline)) int F(tiny)(int x)
{
	if (x < 0) {
		atomic_store(&F(inside), 1);
		while (atomic_load(&F(hold)))
			sched_yield();
		return 0;
	}
	return x * 3 + 1;
}

__attribute__((noinline)) long F(hot_loop)(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += F(tiny)((int)(i & 1023));
	return s;
}

__attribute__((noinline)) int F(rare)(int x)
{
	return x + 7;
}

__attribute__((noinline)) int F(outer)(int x)
{
	return F(tiny)(x) + 1;
}
