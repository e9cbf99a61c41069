/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_workload.c — the instrumented program the ingest bench traces
 * (built with -finstrument-functions) to fill a whole ring with a call tree
 * shaped like an app's: a loop over a few handlers, each calling helpers
 * and leaves of unequal cost, so the capture has distinct methods, chains
 * and a clear hot spot.
 */
#include <stdint.h>

uint64_t rvs_bench_workload(uint64_t iterations);

__attribute__((noinline)) static uint64_t leaf_hash(uint64_t x)
{
	return x * 2654435761u;
}

__attribute__((noinline)) static uint64_t leaf_mix(uint64_t x)
{
	return (x ^ (x >> 7)) + 0x9e3779b9u;
}

__attribute__((noinline)) static uint64_t leaf_spin(uint64_t x)
{
	volatile uint64_t acc = x;
	for (int i = 0; i < 40; i++)
		acc += (uint64_t)i ^ (acc >> 3);
	return acc;
}

__attribute__((noinline)) static uint64_t helper_parse(uint64_t x)
{
	return leaf_hash(x) + leaf_mix(x + 1);
}

__attribute__((noinline)) static uint64_t helper_layout(uint64_t x)
{
	return leaf_mix(x) + leaf_spin(x);
}

__attribute__((noinline)) static uint64_t handle_input(uint64_t x)
{
	return helper_parse(x) + leaf_hash(x);
}

__attribute__((noinline)) static uint64_t handle_frame(uint64_t x)
{
	return helper_layout(x) + helper_parse(x >> 1);
}

__attribute__((noinline)) uint64_t rvs_bench_workload(uint64_t iterations)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < iterations; i++)
		s += (i & 3) ? handle_input(i) : handle_frame(i);
	return s;
}
