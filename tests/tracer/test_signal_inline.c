/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_signal_inline.c — test_signal.c built in inline mode (tracer/lib.mk):
 * the same signal storms, stops and exits with the workers running the
 * inline-mode fixture and the instrumented handler's own trace points
 * inlined (on x86-64, the register-preserving stubs).
 */
#define RVT_TEST_INLINE 1
#include "test_signal.c"
