/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mute_fix.h — test_mute's fixture functions (mute_fix.c), once per mode:
 * mc_ call mode, mi_ inline mode.
 */
#ifndef RVT_TEST_MUTE_FIX_H
#define RVT_TEST_MUTE_FIX_H

#include <stdatomic.h>

#define MUTE_FIX_DECLARE(p)                    \
	extern _Atomic int p##hold, p##inside; \
	int p##tiny(int x);                    \
	long p##hot_loop(long n);              \
	int p##rare(int x);                    \
	int p##outer(int x);

MUTE_FIX_DECLARE(mc_)
MUTE_FIX_DECLARE(mi_)

#endif
