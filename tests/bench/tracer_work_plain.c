/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_work_plain.c — Listing 1, plain build (see tracer_work.h). */
#define FX(n) plain_##n
long FX(test)(int depth, int work, long sum);
#include "tracer_work.h"
