/* SPDX-License-Identifier: Apache-2.0 */
/* dlfix.c — an instrumented library that test_ring opens, calls and closes
 * with dlopen()/dlclose() before it captures: dlfix_outer → dlfix_inner. */
#define NI __attribute__((noinline))

static volatile int sink;

NI void dlfix_inner(int x);
NI int dlfix_outer(int x);

NI void dlfix_inner(int x)
{
	sink += x;
}

NI int dlfix_outer(int x)
{
	dlfix_inner(x);
	return x + 1;
}
