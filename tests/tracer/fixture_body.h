/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fixture_body.h — instrumented workload shared by the call-mode and
 * inline-mode fixtures; FX(name) gives each copy its own function names.
 */
#include "fixture.h"
#include "rearview/trace.h"

__attribute__((noinline)) static int FX(leaf)(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) static int FX(middle)(int x)
{
	return FX(leaf)(x) * 2;
}

__attribute__((noinline)) int FX(top)(int depth)
{
	if (depth <= 0)
		return FX(middle)(depth);
	return FX(top)(depth - 1) + 1;
}

__attribute__((noinline)) void FX(spin)(volatile int *stop_flag, unsigned long *calls)
{
	while (!*stop_flag) {
		FX(top)(3);
		(*calls)++;
	}
}

/* Starts tracing its own thread from inside: its exit is that of a frame
 * begun before tracing did. */
__attribute__((noinline)) int FX(start_inside)(void)
{
	int rc = rvt_start(0);
	FX(leaf)(rc);
	return rc;
}

const void *const FX(functions)[3] = {(const void *)FX(top), (const void *)FX(middle),
				      (const void *)FX(leaf)};
