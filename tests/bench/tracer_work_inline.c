/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_work_inline.c — Listing 1, inline build (see tracer_work.h). */
#define FX(n) inline_##n
long FX(test)(int depth, int work, long sum);
#include "tracer_work.h"
