/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symfix.c — an instrumented program for the server's symbolization test:
 * built with -finstrument-functions against librvtrace, then stripped
 * (objcopy --strip-all), so its captures name its functions only as
 * "symfix.stripped+0x…"; its debug file (objcopy --only-keep-debug) lets
 * the server name them.  Run with RV_TRACE=1 RV_TRACE_FILE=PATH.
 */
#include <stdio.h>

static __attribute__((noinline)) unsigned symfix_hot_leaf(unsigned x)
{
	volatile unsigned v = x;

	for (int i = 0; i < 2000; i++)
		v = v * 1103515245u + 12345u;
	return v;
}

static __attribute__((noinline)) unsigned symfix_outer(unsigned x)
{
	return symfix_hot_leaf(x) + 1;
}

int main(void)
{
	unsigned s = 0;

	for (unsigned i = 0; i < 200; i++)
		s += symfix_outer(i);
	printf("%u\n", s);
	return 0;
}
