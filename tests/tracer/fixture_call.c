/* SPDX-License-Identifier: Apache-2.0 */
/* fixture_call.c — the workload in call mode (-finstrument-functions). */
#define FX(n) call_##n
#include "fixture_body.h"
