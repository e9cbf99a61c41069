/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_fix.c — see unwind_fix.h.  UF_PREFIX names the build (uc_, ui_,
 * uf_); every function is noinline and does work after its call, so each
 * is a real frame with its own trace points.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include "unwind_fix.h"

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define P(n)	   CAT(UF_PREFIX, n)
#define NI	   __attribute__((noinline))

static jmp_buf jb;
static sigjmp_buf sjb;
static volatile int sink;

void P(leaf)(int kind);
void P(d)(int kind);
void P(c)(int kind);
void P(b)(int kind);
void P(a)(int kind);
void P(after_inner)(void);
void P(after)(void);

NI void P(leaf)(int kind)
{
	sink++;
	switch (kind) {
	case UF_LONGJMP:
		longjmp(jb, 1);
	case UF__LONGJMP:
		_longjmp(jb, 1);
	case UF_SIGLONGJMP:
		siglongjmp(sjb, 1);
	case UF_PTHREAD_EXIT:
		pthread_exit(NULL);
	case UF_SIGNAL:
		raise(SIGUSR2);
		break;
	default:
		for (;;)
			pause();
	}
}

NI void P(d)(int kind)
{
	P(leaf)(kind);
	sink++;
}

NI void P(c)(int kind)
{
	P(d)(kind);
	sink++;
}

NI void P(b)(int kind)
{
	P(c)(kind);
	sink++;
}

NI void P(a)(int kind)
{
	P(b)(kind);
	sink++;
}

void P(on_signal)(int sig);
NI void P(on_signal)(int sig)
{
	(void)sig;
	sink++;
	siglongjmp(sjb, 1);
}

NI void P(after_inner)(void)
{
	sink++;
}

NI void P(after)(void)
{
	P(after_inner)();
	sink++;
}

void P(deep)(int n);
NI void P(deep)(int n)
{
	if (n == 0)
		P(leaf)(UF_LONGJMP);
	else
		P(deep)(n - 1);
	sink++;
}

void P(deep_top)(int n);
NI void P(deep_top)(int n)
{
	if (setjmp(jb) == 0)
		P(deep)(n);
	P(after)();
}

NI void P(top)(int kind)
{
	if (kind == UF_SIGLONGJMP || kind == UF_SIGNAL) {
		if (sigsetjmp(sjb, 1) == 0)
			P(a)(kind);
	} else if (kind == UF__LONGJMP) {
		if (_setjmp(jb) == 0)
			P(a)(kind);
	} else if (setjmp(jb) == 0) {
		P(a)(kind);
	}
	P(after)();
}
