/* SPDX-License-Identifier: Apache-2.0 */
/* fixture_inline.c — the workload in inline mode (trace-inline.h included). */
#define FX(n) inl_##n
#include "fixture_body.h"
