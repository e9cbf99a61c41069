/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_work_empty_src.c — Listing 1, empty_src build (see tracer_work.h). */
#define FX(n) empty_##n
long FX(test)(int depth, int work, long sum);
#include "tracer_work.h"
