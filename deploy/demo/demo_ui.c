/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo_ui.c — the demo app's UI thread work, built with
 * -finstrument-functions so librvtrace records every call below.
 *
 * One frame is a small call tree:
 *   demo_render_frame → handle_input → dispatch_touch → apply_touch_slow
 *                     → layout_pass → measure_item ×N
 *                                   → build_list_item ×N → bind_item_text
 *                                                        → build_list_item_slow
 *                     → draw_frame → draw_item ×N
 * A slow touch (every --slow-touch-every touches) goes through
 * apply_touch_slow, which blocks the UI thread for 450 ms: one long frame
 * (no jank at K = 3) but a touch answered past the 400 ms threshold.
 * Normal frames cost tens of microseconds.  On a slow frame every list item
 * goes through build_list_item_slow, which loads the item's thumbnail
 * synchronously on the UI thread (a blocking wait, simulated with
 * nanosleep so the demo does not burn the shared CPU), pushing the frame
 * far over its 16.7 ms budget.  Its time is self time: nothing it calls is
 * instrumented.  Every function is noinline so the call tree survives -O2.
 */
#include "demo_ui.h"

#include <time.h>

#define NOINLINE __attribute__((noinline))

/*
 * Per slow item: the five items of a frame make it at least 85 ms, over four
 * 16.7 ms budgets, so rearviewd grades the jank at the top of its scale
 * (severity 100: ≥ 4x the budget) however the machine schedules the sleeps.
 * An odd count puts the middle of a slow frame — the anomaly's focus — in
 * the middle of the third item's load, 8 ms from either edge, not on the
 * few microseconds between two loads (with four items it sat there, and
 * sleeps that overslept unevenly moved it off the slow builder).
 */
#define SLOW_ITEM_NS 17000000L
/* A slow touch: past rearviewd's 400 ms touch threshold on its own. */
#define SLOW_TOUCH_NS 450000000L

static NOINLINE unsigned spin_work(unsigned seed, unsigned rounds)
{
	volatile unsigned x = seed;

	for (unsigned i = 0; i < rounds; i++)
		x = x * 1103515245u + 12345u;
	return x;
}

/* A touch handler that blocks the UI thread: it "saves the scroll position"
 * synchronously, so the touch is answered long after it was delivered. */
NOINLINE unsigned apply_touch_slow(unsigned frame);
NOINLINE unsigned apply_touch_slow(unsigned frame)
{
	struct timespec ts = {0, SLOW_TOUCH_NS};

	while (nanosleep(&ts, &ts) != 0)
		;
	return frame * 17u;
}

static NOINLINE unsigned dispatch_touch(unsigned frame, bool slow)
{
	unsigned v = spin_work(frame, 200);

	if (slow)
		v += apply_touch_slow(frame);
	return v;
}

static NOINLINE unsigned handle_input(const struct demo_frame *f)
{
	return f->touch ? dispatch_touch(f->index, f->slow_touch) : 0;
}

static NOINLINE unsigned measure_item(unsigned i)
{
	return spin_work(i, 50);
}

static NOINLINE unsigned bind_item_text(unsigned i)
{
	return spin_work(i + 7, 40);
}

/* The slow list-item builder: a synchronous thumbnail load on the UI thread. */
NOINLINE unsigned build_list_item_slow(unsigned i);
NOINLINE unsigned build_list_item_slow(unsigned i)
{
	struct timespec ts = {0, SLOW_ITEM_NS};

	while (nanosleep(&ts, &ts) != 0)
		;
	return i * 31u;
}

static NOINLINE unsigned build_list_item(unsigned i, bool slow)
{
	unsigned v = bind_item_text(i);

	if (slow)
		v += build_list_item_slow(i);
	return v;
}

static NOINLINE unsigned layout_pass(const struct demo_frame *f)
{
	unsigned v = 0;

	for (unsigned i = 0; i < f->items; i++) {
		v += measure_item(i);
		v += build_list_item(i, f->slow);
	}
	return v;
}

static NOINLINE unsigned draw_item(unsigned i)
{
	return spin_work(i + 3, 60);
}

static NOINLINE unsigned draw_frame(const struct demo_frame *f)
{
	unsigned v = 0;

	for (unsigned i = 0; i < f->items; i++)
		v += draw_item(i);
	return v;
}

unsigned demo_render_frame(const struct demo_frame *f)
{
	return handle_input(f) + layout_pass(f) + draw_frame(f);
}
