/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wrap_check.c — wrap-around with one- and two-slot entries straddling the
 * wrap point, for any pair of trace points (wrap_check.h).  Keys on both
 * sides of method_base give one- and two-slot entries; a 16-slot ring wraps
 * constantly.  Compiled for x86-64 (test_ring) and aarch64 (aarch64_smoke).
 */
#include "wrap_check.h"

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "capture_util.h"
#include "rearview/trace.h"
#include "tracer-int.h"

void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site);

/* The keys of the open hook frames: an exit names its function, as an
 * instrumented function's does (x86-64 checks it, trace-inline.h). */
static const void *hook_keys[256];
static unsigned hook_depth;

static void hook_enter(const void *key)
{
	hook_keys[hook_depth++ % 256] = key;
	__cyg_profile_func_enter((void *)(uintptr_t)key, NULL);
}

static void hook_exit(void)
{
	const void *key = hook_depth ? hook_keys[--hook_depth % 256] : NULL;
	__cyg_profile_func_exit((void *)(uintptr_t)key, NULL);
}

const struct wc_points wc_manual = {rvt_enter, rvt_exit};
const struct wc_points wc_hooks = {hook_enter, hook_exit};

struct wev {
	int entry;
	uint64_t value;
};

static int fail(char *why, size_t len, int phase, const char *what)
{
	snprintf(why, len, "phase %d: %s", phase, what);
	rvt_stop(0, 1);
	rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, 0);
	return -1;
}

int wc_check_wrap(const struct wc_points *p, char *why, size_t len)
{
	if (rvt_set_config(16 * 8, 0) != 0)
		return fail(why, len, -1, "rvt_set_config");
	const char *far_key = (const char *)(uintptr_t)0x1000; /* below base: two slots */
	for (int phase = 0; phase < 40; phase++) {
		if (rvt_start(0) != 0)
			return fail(why, len, phase, "rvt_start");
		struct wev w[200];
		size_t nw = 0, slots = 0;
		uint64_t near = 0x10000 + (uint64_t)phase * 16;
		for (int k = 0; k < phase % 7; k++) {
			p->enter((const void *)(uintptr_t)(rvt_method_base + near));
			w[nw++] = (struct wev){1, near};
		}
		for (int k = 0; k < 9 + phase; k++) {
			if (k % 3 == 0) {
				p->enter(far_key);
				w[nw++] = (struct wev){1, (uint64_t)(uintptr_t)far_key -
								  rvt_method_base};
				slots++;
			} else if (k % 3 == 1) {
				p->enter((const void *)(uintptr_t)(rvt_method_base + near + 8));
				w[nw++] = (struct wev){1, near + 8};
			} else {
				p->exit();
				w[nw++] = (struct wev){0, 0};
			}
		}
		if (rvt_stop(0, 0) != 0)
			return fail(why, len, phase, "rvt_stop");
		uint64_t size = 0;
		int fd = rvt_capture_to_memfd(0, &size);
		if (fd < 0)
			return fail(why, len, phase, "capture");
		struct cu_capture c;
		int rc = cu_parse_fd(fd, &c);
		close(fd);
		if (rc != 0)
			return fail(why, len, phase, "capture does not parse");
		slots += nw;
		int ok = c.nevents > 0 && c.nevents <= nw;
		if (ok && slots >= 16 && !(c.flags & 1u))
			ok = 0;
		size_t off = ok ? nw - c.nevents : 0;
		for (size_t k = 0; ok && k < c.nevents; k++)
			ok = c.events[k].entry == w[off + k].entry &&
			     c.events[k].value == w[off + k].value;
		cu_release(&c);
		if (!ok)
			return fail(why, len, phase, "decoded events differ from those written");
		if (rvt_stop(0, 1) != 0)
			return fail(why, len, phase, "rvt_stop(release)");
	}
	return rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, 0) == 0
		       ? 0
		       : fail(why, len, 40, "rvt_set_config");
}
