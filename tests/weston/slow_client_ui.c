/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slow_client_ui.c — rv_slow_client's traced UI work (see slow_client_ui.h).
 * Built with -finstrument-functions; the time is spent in named functions
 * spinning on the clock, so the self time of a slow frame belongs to
 * slow_layout_pass and of a slow click to slow_click_handler (clock_gettime
 * is not instrumented).  Invariant: nothing here waits or sleeps.
 */
#include "slow_client_ui.h"

#include <time.h>

/* The clock and the spin are not traced methods: called millions of times
 * in a spin, they would fill the ring with their calls. */
__attribute__((no_instrument_function)) static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline, no_instrument_function)) static unsigned spin_ns(uint64_t ns)
{
	uint64_t until = mono_ns() + ns;
	unsigned x = 1;

	while (mono_ns() < until)
		x = x * 1103515245u + 12345u;
	return x;
}

__attribute__((noinline)) unsigned slow_layout_pass(unsigned index);
__attribute__((noinline)) unsigned slow_layout_pass(unsigned index)
{
	uint64_t until = mono_ns() + 80000000ull;
	unsigned x = index;

	/* The spinning is this function's own (self) time. */
	while (mono_ns() < until)
		x = x * 1103515245u + 12345u;
	return x;
}

__attribute__((noinline)) unsigned slow_click_handler(unsigned index);
__attribute__((noinline)) unsigned slow_click_handler(unsigned index)
{
	uint64_t until = mono_ns() + 450000000ull;
	unsigned x = index;

	while (mono_ns() < until)
		x = x * 1103515245u + 12345u;
	return x;
}

__attribute__((noinline)) static void paint_rows(uint32_t *px, int width, int height,
						 unsigned index)
{
	for (int y = 0; y < height; y++)
		for (int x = 0; x < width; x++)
			px[y * width + x] = 0xff000000u | ((x + index) & 0xff) << 8 | (y & 0xff);
}

unsigned draw_frame(uint32_t *px, int width, int height, unsigned index, bool slow)
{
	unsigned sum = slow ? slow_layout_pass(index) : spin_ns(100000);

	paint_rows(px, width, height, index);
	return sum;
}

unsigned handle_click(unsigned index)
{
	return slow_click_handler(index);
}
