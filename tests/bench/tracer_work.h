/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracer_work.h — Hubble's Listing 1 in C, built several ways by the tracer
 * benchmark (FX() names each copy).  `sum` is carried across calls so the
 * loop is not optimized away; the bench objects are compiled with
 * -fno-optimize-sibling-calls so the recursion stays ten real calls.
 */
__attribute__((noinline)) long FX(test)(int depth, int work, long sum)
{
	for (int i = 0; i < work; i++) {
		sum *= i - 1;
		sum /= i + 2;
	}
	if (depth > 1)
		return FX(test)(depth - 1, work, sum);
	return sum;
}
