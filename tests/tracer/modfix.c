/* SPDX-License-Identifier: Apache-2.0 */
/*
 * modfix.c — an instrumented shared library for the multi-module capture
 * test: its functions live far from the main program's method_base, so their
 * entries take two slots and their SYMBOLs name this module.
 */
int modfix_outer(int x);

__attribute__((noinline)) static int modfix_inner(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x + 2;
}

__attribute__((noinline)) int modfix_outer(int x)
{
	return modfix_inner(x) * 3;
}
