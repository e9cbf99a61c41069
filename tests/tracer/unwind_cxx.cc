// SPDX-License-Identifier: Apache-2.0
// unwind_cxx.cc — see unwind_fix.h: an int thrown through five instrumented
// frames, one holding an object whose instrumented destructor runs in the
// unwinding (its cleanup), and caught; UF_PREFIX names the build (gx_ g++,
// cl_ clang++).
#include "unwind_fix.h"

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define P(n)	   CAT(UF_PREFIX, n)
#define NI	   __attribute__((noinline))

static volatile int sink;

extern "C" {
void P(x_leaf)(int v);
void P(x_d)(int v);
void P(x_c)(int v);
void P(x_b)(int v);
void P(x_a)(int v);
void P(x_after)(void);
void P(x_cleanup)(void);

NI void P(x_leaf)(int v)
{
	sink++;
	if (v >= 0)
		throw v;
}

NI void P(x_d)(int v)
{
	P(x_leaf)(v);
	sink++;
}

NI void P(x_cleanup)(void)
{
	sink++;
}
}

// Its destructor runs in x_c's landing pad when the exception passes.
struct P(guard) {
	NI ~P(guard)()
	{
		P(x_cleanup)();
	}
};

extern "C" {
NI void P(x_c)(int v)
{
	P(guard) g;
	P(x_d)(v);
	sink++;
}

NI void P(x_b)(int v)
{
	P(x_c)(v);
	sink++;
}

NI void P(x_a)(int v)
{
	P(x_b)(v);
	sink++;
}

NI void P(x_after)(void)
{
	sink++;
}

NI int P(x_top)(int v)
{
	int r = -1;
	try {
		P(x_a)(v);
	} catch (int e) {
		r = e;
	}
	P(x_after)();
	return r;
}
}
