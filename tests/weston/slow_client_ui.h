/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slow_client_ui.h — the traced drawing of rv_slow_client (built with
 * -finstrument-functions): one frame into a shm pixel buffer, a layout pass
 * that is slow on purpose, a click handler that is slow on purpose.
 */
#ifndef RV_SLOW_CLIENT_UI_H
#define RV_SLOW_CLIENT_UI_H

#include <stdbool.h>
#include <stdint.h>

/* Draws frame `index` into `px` (width × height XRGB8888); when `slow`,
 * first runs slow_layout_pass (about 80 ms of CPU).  Returns a checksum so
 * the work is not optimized away. */
unsigned draw_frame(uint32_t *px, int width, int height, unsigned index, bool slow);

/* Answers a click: slow_click_handler, about 450 ms of CPU. */
unsigned handle_click(unsigned index);

#endif
