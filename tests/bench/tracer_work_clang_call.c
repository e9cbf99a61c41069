/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_work_clang_call.c — Listing 1, clang_call build (see tracer_work.h). */
#define FX(n) clang_call_##n
long FX(test)(int depth, int work, long sum);
#include "tracer_work.h"
