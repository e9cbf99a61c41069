/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracer_work_inline_c.c — Listing 1, inline build with the portable C trace
 * point inlined whole (RVT_INLINE_PORTABLE: what x86-64 used before the
 * stubs, and what other architectures use), for the side-by-side comparison.
 */
#define FX(n) inline_c_##n
long FX(test)(int depth, int work, long sum);
#include "tracer_work.h"
