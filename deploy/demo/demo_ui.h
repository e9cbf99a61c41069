/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo_ui.h — the demo app's instrumented UI work (demo_ui.c), called once
 * per frame by the uninstrumented event loop in demo_app.c.
 */
#ifndef RV_DEMO_UI_H
#define RV_DEMO_UI_H

#include <stdbool.h>

/* What one frame has to do. */
struct demo_frame {
	unsigned index;	 /* frame number, from 0 */
	bool touch;	 /* a scripted touch arrived before this frame */
	bool slow_touch; /* ...and its handler blocks the UI thread */
	bool slow;	 /* take the slow list-item path (Hubble's case study) */
	unsigned items;	 /* visible list items */
};

/* Renders one frame: input → layout (measure, build list items) → draw.
 * Returns a checksum of the work so the compiler cannot drop it. */
unsigned demo_render_frame(const struct demo_frame *f);

#endif
