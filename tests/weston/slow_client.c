/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slow_client.c — rv_slow_client: a small traced Wayland client for the
 * Weston test (tests/integration/test_weston.c).  It maps one xdg_toplevel
 * drawn into wl_shm buffers, renders on every frame callback, and is slow on
 * purpose in named functions (slow_client_ui.c, instrumented):
 *
 *   rv_slow_client --control PATH [--frames N] [--slow-at N] [--slow-click]
 *
 * --control PATH  rearviewd's control.sock: librvtrace registers the
 *                 process (its main thread is the UI thread)
 * --frames N      exit after N frames (default 300) — or, while a slow burst
 *                 or slow click asked for has not run yet (the daemon traces
 *                 the client late on a loaded machine), after up to 5 N
 * --slow-at N     frames N..N+3 run slow_layout_pass (80 ms each), once
 *                 the UI thread is traced (so the jank is captured); 0 = never
 * --slow-click    a left-button press is answered by slow_click_handler
 *                 (450 ms) before the next frame
 * --presented F   asks wp_presentation feedback for every frame and writes
 *                 each presentation time the compositor reports to F, one
 *                 line of CLOCK_MONOTONIC ns (moved from the compositor's
 *                 presentation clock by the clocks' offset when it arrives)
 *
 * This file is NOT instrumented: waiting for the compositor is nobody's
 * self time.  The app itself sends nothing to events.sock — every frame,
 * click and the focus reach rearviewd through the compositor's module.
 * Exit status 0 after N frames, 1 on a setup or protocol error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/input-event-codes.h>
#include <wayland-client.h>

#include "rearview/trace.h"
#include "slow_client_ui.h"
#include "presentation-time-client-protocol.h"
#include "xdg-shell-client-protocol.h"

#define NBUF 3

struct buffer {
	struct wl_buffer *wb;
	uint32_t *px;
	bool busy;
};

struct app {
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct xdg_wm_base *wm;
	struct wl_seat *seat;
	struct wl_pointer *pointer;
	struct wl_surface *surface;
	struct xdg_surface *xsurface;
	struct xdg_toplevel *toplevel;
	struct wl_callback *frame_cb; /* the pending frame callback */
	struct buffer buf[NBUF];
	int width, height;
	bool configured, closed, slow_click, click_pending, click_handled;
	unsigned frame, frames, slow_at, slow_left, sum;
	bool slow_armed;
	bool stopping; /* no more frames: only the last feedback is awaited */
	struct wp_presentation *presentation;
	clockid_t pclock;
	FILE *presented;    /* --presented, NULL when not asked */
	unsigned feedbacks; /* outstanding */
};

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static void fb_sync_output(void *data, struct wp_presentation_feedback *f, struct wl_output *o)
{
}

static void fb_presented(void *data, struct wp_presentation_feedback *f, uint32_t sec_hi,
			 uint32_t sec_lo, uint32_t nsec, uint32_t refresh, uint32_t seq_hi,
			 uint32_t seq_lo, uint32_t flags)
{
	struct app *a = data;
	struct timespec p = {.tv_sec = (time_t)((uint64_t)sec_hi << 32 | sec_lo),
			     .tv_nsec = (long)nsec};
	int64_t off = 0, best = INT64_MAX;

	/* The offset CLOCK_MONOTONIC − the presentation clock: that clock read
	 * between two reads of CLOCK_MONOTONIC, the narrowest of three brackets
	 * (a preemption between two reads would skew it by milliseconds). */
	for (int i = 0; a->pclock != CLOCK_MONOTONIC && i < 3; i++) {
		struct timespec m0, c, m1;
		int64_t w;

		if (clock_gettime(CLOCK_MONOTONIC, &m0) < 0 || clock_gettime(a->pclock, &c) < 0 ||
		    clock_gettime(CLOCK_MONOTONIC, &m1) < 0)
			break;
		w = (int64_t)ts_ns(&m1) - (int64_t)ts_ns(&m0);
		if (w < best) {
			best = w;
			off = (int64_t)ts_ns(&m0) + w / 2 - (int64_t)ts_ns(&c);
		}
	}
	fprintf(a->presented, "%lld\n", (long long)((int64_t)ts_ns(&p) + off));
	wp_presentation_feedback_destroy(f);
	a->feedbacks--;
}

static void fb_discarded(void *data, struct wp_presentation_feedback *f)
{
	wp_presentation_feedback_destroy(f);
	((struct app *)data)->feedbacks--;
}

static const struct wp_presentation_feedback_listener feedback_listener = {
	fb_sync_output, fb_presented, fb_discarded};

static void presentation_clock(void *data, struct wp_presentation *p, uint32_t clk_id)
{
	((struct app *)data)->pclock = (clockid_t)clk_id;
}

static const struct wp_presentation_listener presentation_listener = {presentation_clock};

static void buffer_release(void *data, struct wl_buffer *wb)
{
	((struct buffer *)data)->busy = false;
}

static const struct wl_buffer_listener buffer_listener = {buffer_release};

static int make_buffers(struct app *a)
{
	size_t one = (size_t)a->width * (size_t)a->height * 4;
	int fd = memfd_create("rv-slow-client", MFD_CLOEXEC);
	struct wl_shm_pool *pool;
	uint8_t *base;

	if (fd < 0 || ftruncate(fd, (off_t)(one * NBUF)) < 0)
		return -1;
	base = mmap(NULL, one * NBUF, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		close(fd);
		return -1;
	}
	pool = wl_shm_create_pool(a->shm, fd, (int32_t)(one * NBUF));
	for (int i = 0; i < NBUF; i++) {
		a->buf[i].px = (uint32_t *)(void *)(base + one * (size_t)i);
		a->buf[i].wb =
			wl_shm_pool_create_buffer(pool, (int32_t)(one * (size_t)i), a->width,
						  a->height, a->width * 4, WL_SHM_FORMAT_XRGB8888);
		wl_buffer_add_listener(a->buf[i].wb, &buffer_listener, &a->buf[i]);
	}
	wl_shm_pool_destroy(pool);
	close(fd);
	return 0;
}

static void redraw(struct app *a);

static void frame_done(void *data, struct wl_callback *cb, uint32_t time)
{
	struct app *a = data;

	wl_callback_destroy(cb);
	a->frame_cb = NULL;
	if (!a->stopping)
		redraw(a);
}

static const struct wl_callback_listener frame_listener = {frame_done};

/* Whether every slow thing asked for has run (burst finished, click handled). */
static bool done_slow(const struct app *a)
{
	return (!a->slow_at || (a->slow_armed && !a->slow_left)) &&
	       (!a->slow_click || a->click_handled);
}

static void redraw(struct app *a)
{
	struct buffer *b = NULL;
	struct wl_callback *cb;
	bool slow = false;

	for (int i = 0; i < NBUF && !b; i++)
		if (!a->buf[i].busy)
			b = &a->buf[i];
	if (a->click_pending) {
		a->click_pending = false;
		a->click_handled = true;
		a->sum += handle_click(a->frame);
	}
	/* The slow burst waits until the daemon traces us, then runs once. */
	if (a->slow_at && !a->slow_armed && a->frame >= a->slow_at && rvt_is_tracing(0)) {
		a->slow_armed = true;
		a->slow_left = 4;
	}
	if (a->slow_left) {
		a->slow_left--;
		slow = true;
	}
	cb = wl_surface_frame(a->surface);
	wl_callback_add_listener(cb, &frame_listener, a);
	a->frame_cb = cb;
	if (b) {
		a->sum += draw_frame(b->px, a->width, a->height, a->frame, slow);
		b->busy = true;
		wl_surface_attach(a->surface, b->wb, 0, 0);
		wl_surface_damage_buffer(a->surface, 0, 0, a->width, a->height);
		if (a->presented && a->presentation) {
			wp_presentation_feedback_add_listener(
				wp_presentation_feedback(a->presentation, a->surface),
				&feedback_listener, a);
			a->feedbacks++;
		}
	}
	wl_surface_commit(a->surface);
	a->frame++;
}

static void xdg_configure(void *data, struct xdg_surface *xs, uint32_t serial)
{
	struct app *a = data;

	xdg_surface_ack_configure(xs, serial);
	if (!a->configured) {
		a->configured = true;
		redraw(a);
	}
}

static const struct xdg_surface_listener xdg_surface_listener = {xdg_configure};

static void toplevel_configure(void *data, struct xdg_toplevel *t, int32_t w, int32_t h,
			       struct wl_array *states)
{
}

static void toplevel_close(void *data, struct xdg_toplevel *t)
{
	((struct app *)data)->closed = true;
}

/* Bound at version 1: the later events (configure_bounds…) never come. */
static const struct xdg_toplevel_listener toplevel_listener = {.configure = toplevel_configure,
							       .close = toplevel_close};

static void wm_ping(void *data, struct xdg_wm_base *wm, uint32_t serial)
{
	xdg_wm_base_pong(wm, serial);
}

static const struct xdg_wm_base_listener wm_listener = {wm_ping};

static void p_enter(void *d, struct wl_pointer *p, uint32_t s, struct wl_surface *sf, wl_fixed_t x,
		    wl_fixed_t y)
{
}
static void p_leave(void *d, struct wl_pointer *p, uint32_t s, struct wl_surface *sf)
{
}
static void p_motion(void *d, struct wl_pointer *p, uint32_t t, wl_fixed_t x, wl_fixed_t y)
{
}
static void p_button(void *d, struct wl_pointer *p, uint32_t serial, uint32_t t, uint32_t button,
		     uint32_t state)
{
	struct app *a = d;

	if (a->slow_click && button == BTN_LEFT && state == WL_POINTER_BUTTON_STATE_PRESSED &&
	    rvt_is_tracing(0))
		a->click_pending = true;
}
static void p_axis(void *d, struct wl_pointer *p, uint32_t t, uint32_t axis, wl_fixed_t v)
{
}

/* wl_seat version 1: the pointer sends only these five events. */
static const struct wl_pointer_listener pointer_listener = {
	.enter = p_enter, .leave = p_leave, .motion = p_motion, .button = p_button, .axis = p_axis};

static void seat_caps(void *data, struct wl_seat *seat, uint32_t caps)
{
	struct app *a = data;

	if ((caps & WL_SEAT_CAPABILITY_POINTER) && !a->pointer) {
		a->pointer = wl_seat_get_pointer(seat);
		wl_pointer_add_listener(a->pointer, &pointer_listener, a);
	}
}

static void seat_name(void *data, struct wl_seat *seat, const char *name)
{
}

static const struct wl_seat_listener seat_listener = {seat_caps, seat_name};

static void global(void *data, struct wl_registry *r, uint32_t name, const char *iface,
		   uint32_t version)
{
	struct app *a = data;

	if (!strcmp(iface, wl_compositor_interface.name))
		a->compositor = wl_registry_bind(r, name, &wl_compositor_interface, 4);
	else if (!strcmp(iface, wl_shm_interface.name))
		a->shm = wl_registry_bind(r, name, &wl_shm_interface, 1);
	else if (!strcmp(iface, xdg_wm_base_interface.name)) {
		a->wm = wl_registry_bind(r, name, &xdg_wm_base_interface, 1);
		xdg_wm_base_add_listener(a->wm, &wm_listener, a);
	} else if (!strcmp(iface, wp_presentation_interface.name) && a->presented) {
		a->presentation = wl_registry_bind(r, name, &wp_presentation_interface, 1);
		wp_presentation_add_listener(a->presentation, &presentation_listener, a);
	} else if (!strcmp(iface, wl_seat_interface.name) && !a->seat) {
		a->seat = wl_registry_bind(r, name, &wl_seat_interface, 1);
		wl_seat_add_listener(a->seat, &seat_listener, a);
	}
}

static void global_remove(void *data, struct wl_registry *r, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {global, global_remove};

int main(int argc, char **argv)
{
	struct app a = {.width = 256, .height = 192, .frames = 300};
	const char *control = NULL;
	struct wl_display *dpy;
	struct wl_registry *reg;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--control") && i + 1 < argc)
			control = argv[++i];
		else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
			a.frames = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--slow-at") && i + 1 < argc)
			a.slow_at = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--slow-click"))
			a.slow_click = true;
		else if (!strcmp(argv[i], "--presented") && i + 1 < argc) {
			a.presented = fopen(argv[++i], "w");
			if (!a.presented) {
				perror("rv_slow_client: --presented");
				return 2;
			}
		} else {
			fprintf(stderr, "rv_slow_client: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	if ((rc = rvt_set_ui_thread(0)) < 0 || (control && (rc = rvt_control_start(control)) < 0)) {
		fprintf(stderr, "rv_slow_client: librvtrace: %s\n", strerror(-rc));
		return 1;
	}
	dpy = wl_display_connect(NULL);
	if (!dpy) {
		fprintf(stderr, "rv_slow_client: cannot connect to the Wayland display\n");
		return 1;
	}
	reg = wl_display_get_registry(dpy);
	wl_registry_add_listener(reg, &registry_listener, &a);
	wl_display_roundtrip(dpy);
	wl_display_roundtrip(dpy); /* the presentation clock */
	if (!a.compositor || !a.shm || !a.wm || (a.presented && !a.presentation) ||
	    make_buffers(&a) < 0) {
		fprintf(stderr, "rv_slow_client: compositor lacks wl_shm or xdg_wm_base\n");
		return 1;
	}
	a.surface = wl_compositor_create_surface(a.compositor);
	a.xsurface = xdg_wm_base_get_xdg_surface(a.wm, a.surface);
	xdg_surface_add_listener(a.xsurface, &xdg_surface_listener, &a);
	a.toplevel = xdg_surface_get_toplevel(a.xsurface);
	xdg_toplevel_add_listener(a.toplevel, &toplevel_listener, &a);
	xdg_toplevel_set_title(a.toplevel, "rv_slow_client");
	wl_surface_commit(a.surface);
	while (!a.closed && (a.frame < a.frames || (a.frame < 5 * a.frames && !done_slow(&a))))
		if (wl_display_dispatch(dpy) < 0) {
			fprintf(stderr, "rv_slow_client: display: %s\n", strerror(errno));
			return 1;
		}
	/* The last frames' feedback (bounded: a compositor answers each). */
	a.stopping = true;
	while (a.feedbacks && wl_display_dispatch(dpy) >= 0)
		;
	rvt_control_stop();
	/* Every proxy destroyed: the sanitizer build checks for leaks. */
	if (a.frame_cb)
		wl_callback_destroy(a.frame_cb);
	for (int i = 0; i < NBUF; i++)
		wl_buffer_destroy(a.buf[i].wb);
	munmap(a.buf[0].px, (size_t)a.width * (size_t)a.height * 4 * NBUF);
	xdg_toplevel_destroy(a.toplevel);
	xdg_surface_destroy(a.xsurface);
	wl_surface_destroy(a.surface);
	if (a.pointer)
		wl_pointer_destroy(a.pointer);
	if (a.seat)
		wl_seat_destroy(a.seat);
	if (a.presentation)
		wp_presentation_destroy(a.presentation);
	if (a.presented && fclose(a.presented) != 0) {
		perror("rv_slow_client: --presented");
		return 1;
	}
	xdg_wm_base_destroy(a.wm);
	wl_shm_destroy(a.shm);
	wl_compositor_destroy(a.compositor);
	wl_registry_destroy(reg);
	wl_display_disconnect(dpy);
	fprintf(stderr, "rv_slow_client: %u frames (%u)\n", a.frame, a.sum);
	return 0;
}
