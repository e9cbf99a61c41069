/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cross_app.c — the traced program of tests/deploy/test_cross.sh, built for
 * aarch64 against the cross-built librvtrace and run under qemu-user.  Its
 * call counts are exact: cross_outer(N) calls cross_mid N times, each of
 * which calls cross_leaf 10 times (main 1, cross_outer 1, cross_mid N,
 * cross_leaf 10 N); the result it prints lets the test check the program
 * itself ran right.
 */
#include <stdio.h>
#include <stdlib.h>

int cross_leaf(int x);
int cross_mid(int x);
int cross_outer(int n);

__attribute__((noinline)) int cross_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int cross_mid(int x)
{
	int s = 0;

	for (int i = 0; i < 10; i++)
		s += cross_leaf(x + i);
	return s;
}

__attribute__((noinline)) int cross_outer(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += cross_mid(i);
	return s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 100;

	printf("%d\n", cross_outer(n));
	return 0;
}
