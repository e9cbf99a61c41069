/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mute_fix.h — the instrumented functions of test_mute and test_mute_race
 * (mute_fix.c), once per mode: mc_ call mode, mi_ inline mode, ml_ late mode
 * (rvcc's GCC plugin; MUTE_LATE where the build has it).
 */
#ifndef RVT_TEST_MUTE_FIX_H
#define RVT_TEST_MUTE_FIX_H

#include <stdatomic.h>

/* Functions of the family: each becomes hot in its own phase. */
#define MF_FAMILY 16

#define MUTE_FIX_DECLARE(p)                              \
	extern _Atomic int p##hold, p##inside;           \
	extern _Atomic int p##host_in, p##host_go;       \
	int p##tiny(int x);                              \
	long p##hot_loop(long n);                        \
	int p##rare(int x);                              \
	int p##outer(int x);                             \
	long p##big(long n);                             \
	int p##dense(int x);                             \
	long p##dense_loop(long n);                      \
	long p##host(long n);                            \
	int p##leaf(int x);                              \
	int p##shift(int x);                             \
	long p##shift_loop(long n, unsigned pad);        \
	int p##inner(int x);                             \
	long p##inner_loop(long n);                      \
	long p##drive(long rounds, long n);              \
	int p##rec(int depth, int x);                    \
	long p##phase_loop(int k, long n);               \
	extern int (*const p##family[MF_FAMILY])(int x); \
	extern const char *const p##family_names[MF_FAMILY];

MUTE_FIX_DECLARE(mc_)
MUTE_FIX_DECLARE(mi_)
MUTE_FIX_DECLARE(ml_)

#endif
