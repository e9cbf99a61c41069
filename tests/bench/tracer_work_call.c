/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_work_call.c — Listing 1, call build (see tracer_work.h). */
#define FX(n) call_##n
long FX(test)(int depth, int work, long sum);
#include "tracer_work.h"
