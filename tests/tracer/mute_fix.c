/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mute_fix.c — the instrumented functions of test_mute and test_mute_race,
 * built in call mode (MF_PREFIX mc_), in rvcc's inline mode (mi_) and,
 * where the build has rvcc's GCC plugin, in its late mode (ml_: only the
 * functions left out of line are traced, so mix()'s copies of tiny() are
 * not).  tiny() is hot and short (and has inlined copies: mix() inlines
 * it twice); tiny(-1) instead waits inside until `hold` is cleared, so a
 * thread can be inside the function while it is muted; rare() is never
 * hot; big() is called less often but takes most of the time (its self
 * time must keep it traced); dense() does ~100 ns of work a call (a
 * few ticks of the shifted counter: its share of its caller's time can be
 * measured) and dense_loop() does nothing but call it, so it has much of the self time
 * yet its trace points cost far more than the budget (it must be muted all
 * the same); host() is short and hot, then one long frame of it calls
 * leaf(); rec() recurses with tiny() at every level;
 * shift() moves from most of shift_loop()'s self time to a tenth of it;
 * drive() calls inner_loop(), which calls inner() (dense()'s twin), and
 * works a little itself between the calls: inner()'s only caller is
 * inner_loop(), whose calls a window of the budget begins inside;
 * the family's functions are each hot in one phase of phase_loop(), and
 * one call in 8192 blocks inside for 3 ms (so frames are open across the
 * mutes of test_mute_race, longer than a mute takes).
 */
#include "mute_fix.h"

#include <sched.h>
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define F(n)	   CAT(MF_PREFIX, n)
#define STR2(x)	   #x
#define STR(x)	   STR2(x)

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

/* Inlined into its callers: gcc instruments each inlined copy. */
static inline int F(mix)(int x)
{
	return F(tiny)(x) ^ (x >> 2);
}

__attribute__((noinline)) long F(hot_loop)(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i & 1 ? F(mix)((int)(i & 1023)) : F(tiny)((int)(i & 511));
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

__attribute__((noinline)) long F(big)(long n)
{
	volatile long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i;
	return s;
}

/* ~100 ns of work the compiler cannot fold (no trace point of its own). */
static inline __attribute__((always_inline, no_instrument_function)) int F(work)(int x, unsigned k)
{
	volatile unsigned s = (unsigned)x;
	for (unsigned i = 0; i < 96; i++)
		s = s * k + i;
	return (int)(s & 0x7fffffff);
}

__attribute__((noinline)) int F(dense)(int x)
{
	return F(work)(x, 31);
}

__attribute__((noinline)) int F(leaf)(int x)
{
	return F(work)(x, 33);
}

__attribute__((noinline)) long F(dense_loop)(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += F(dense)((int)i);
	return s;
}

/* host(n < 0) returns at once (hot and short: the budget mutes it);
 * host(n >= 0) is a long-lived frame: it says it is inside (host_in),
 * waits for host_go, then calls leaf() (dense()'s twin) until host_go is
 * cleared: a muted function's frame, open since before its mute, in which
 * a callee becomes hot. */
_Atomic int F(host_in), F(host_go);

__attribute__((noinline)) long F(host)(long n)
{
	if (n < 0)
		return n;
	atomic_store(&F(host_in), 1);
	while (!atomic_load(&F(host_go)))
		sched_yield();
	long s = 0;
	while (atomic_load(&F(host_go)))
		s += F(leaf)((int)(s & 1023));
	return s;
}

__attribute__((noinline)) int F(rec)(int depth, int x)
{
	if (depth <= 0)
		return F(tiny)(x);
	return F(rec)(depth - 1, x + 1) + F(tiny)(x);
}

/* shift_loop(n, pad) calls shift() (dense()'s twin) n times and does `pad`
 * rounds of its own work after each call: with pad 0 shift() has nearly all
 * of the loop's self time, with pad 1000 about a tenth (a phase that comes
 * after the mute: the budget's rechecks must follow it). */
__attribute__((noinline)) int F(shift)(int x)
{
	return F(work)(x, 29);
}

__attribute__((noinline)) long F(shift_loop)(long n, unsigned pad)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		volatile unsigned p = (unsigned)i;
		s += F(shift)((int)i);
		for (unsigned k = 0; k < pad; k++)
			p = p * 37u + k;
		s += p & 1;
	}
	return s;
}

__attribute__((noinline)) int F(inner)(int x)
{
	return F(work)(x, 27);
}

__attribute__((noinline)) long F(inner_loop)(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += F(inner)((int)i);
	return s;
}

/* rounds calls of inner_loop(n), with ~a tenth of their time of its own
 * after each */
__attribute__((noinline)) long F(drive)(long rounds, long n)
{
	long s = 0;
	for (long r = 0; r < rounds; r++) {
		volatile unsigned p = (unsigned)r;
		s += F(inner_loop)(n);
		for (long k = 0; k < n * 10; k++)
			p = p * 37u + (unsigned)k;
		s += p & 1;
	}
	return s;
}

/* clang-format reflows the macro calls below differently on each pass. */
/* clang-format off */
#define FAM(i)                                                                  \
	__attribute__((noinline)) static int F(fam##i)(int x)                   \
	{                                                                       \
		if ((x & 8191) == 7) {                                          \
			struct timespec ts = {0, 3000000};                      \
			nanosleep(&ts, NULL);                                   \
		}                                                               \
		return x * (i + 3) + 1;                                         \
	}
FAM(0) FAM(1) FAM(2) FAM(3) FAM(4) FAM(5) FAM(6) FAM(7)
FAM(8) FAM(9) FAM(10) FAM(11) FAM(12) FAM(13) FAM(14) FAM(15)

int (*const F(family)[MF_FAMILY])(int x) = {
	F(fam0), F(fam1), F(fam2),  F(fam3),  F(fam4),  F(fam5),  F(fam6),  F(fam7),
	F(fam8), F(fam9), F(fam10), F(fam11), F(fam12), F(fam13), F(fam14), F(fam15)};

#define N(i) STR(F(fam##i))
const char *const F(family_names)[MF_FAMILY] = {N(0), N(1), N(2),  N(3),  N(4),  N(5),
						N(6), N(7), N(8),  N(9),  N(10), N(11),
						N(12), N(13), N(14), N(15)};
/* clang-format on */

/* One phase: function k of the family n times (rec() now and then). */
__attribute__((noinline)) long F(phase_loop)(int k, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		s += F(family)[k]((int)i);
		if ((i & 4095) == 0)
			s += F(rec)(4, (int)i);
	}
	return s;
}
