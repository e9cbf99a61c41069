/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_work_clang_plain.c — Listing 1, clang_plain build (see tracer_work.h). */
#define FX(n) clang_plain_##n
long FX(test)(int depth, int work, long sum);
#include "tracer_work.h"
