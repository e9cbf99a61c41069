/* SPDX-License-Identifier: Apache-2.0 */
/* wrap_check.h — the wrap-around check shared by test_ring and aarch64_smoke. */
#ifndef RVT_TEST_WRAP_CHECK_H
#define RVT_TEST_WRAP_CHECK_H
#include <stddef.h>

/* A pair of trace points to drive: the manual API or the call-mode hooks. */
struct wc_points {
	void (*enter)(const void *key);
	void (*exit)(void);
};
extern const struct wc_points wc_manual; /* rvt_enter / rvt_exit */
extern const struct wc_points wc_hooks;	 /* __cyg_profile_func_enter / exit */

/*
 * Traces one- and two-slot entries and exits through `p` into a 16-slot ring
 * for 40 phases of the wrap point and checks each capture decodes into a
 * suffix of what was written (and says it wrapped once it must have).
 * Returns 0, or -1 with a reason in why[len].  Leaves the buffer size at the
 * default.
 */
int wc_check_wrap(const struct wc_points *p, char *why, size_t len);
#endif
