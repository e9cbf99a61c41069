/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture_fixture.c — an instrumented workload (built with
 * -finstrument-functions) that the integration test traces with librvtrace
 * to produce a real capture: rvs_fixture_outer calls a cheap leaf and a hot
 * loop, so the hot loop has the largest self time by a wide margin.
 */
#include <stdint.h>

uint64_t rvs_fixture_cold_leaf(uint64_t x);
uint64_t rvs_fixture_hot_spin(uint64_t n);
uint64_t rvs_fixture_outer(int rounds);

__attribute__((noinline)) uint64_t rvs_fixture_cold_leaf(uint64_t x)
{
	return x * 2654435761u;
}

__attribute__((noinline)) uint64_t rvs_fixture_hot_spin(uint64_t n)
{
	volatile uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += i ^ (acc >> 3);
	return acc;
}

__attribute__((noinline)) uint64_t rvs_fixture_outer(int rounds)
{
	uint64_t s = 0;
	for (int i = 0; i < rounds; i++) {
		s += rvs_fixture_cold_leaf((uint64_t)i);
		s += rvs_fixture_hot_spin(200000);
	}
	return s;
}
