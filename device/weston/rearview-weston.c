/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview-weston.c — a Weston 10 module that feeds rearviewd's detectors
 * from the compositor, for any Wayland client, through librvevents
 * (rearview/events.h).  Loaded with
 *   weston --modules=/usr/lib/…/rearview-weston.so
 * (or `modules=` in weston.ini's [core]); configured by weston.ini's
 * [rearview] section (device/README.md).
 *
 * What it reports, per client (pid from wl_client_get_credentials; the UI
 * thread is taken to be the main thread, tid = pid, the Wayland thread of
 * every common toolkit):
 *  - frames, from presentation: a frame ends when the content a client
 *    committed is presented — the output's presentation timestamp
 *    (weston_output.frame_time, set by weston_output_finish_frame, the time
 *    wp_presentation feedback reports to clients) of the first repaint that
 *    painted the surface after the commit.  A surface is painted in a
 *    repaint when its output's frame_signal fires (the renderer emits it:
 *    pixman or GL; Weston's noop renderer emits none, so a compositor
 *    running it reports no frames); the presentation is read at the
 *    output's next frame_signal (finish_frame always comes first) or, when
 *    no repaint follows, from a timer one refresh period later.  A frame
 *    starts at the surface's previous presentation while it animates (the
 *    commit before asked for a frame callback: the client was drawing frame
 *    after frame), else at the commit; it is due one refresh period after a
 *    previous presentation (half a period of slack for timestamp jitter: it
 *    missed a vblank when it ends later), or two after a commit (the next
 *    repaint, then its vblank).  Times are moved from the compositor's
 *    presentation clock to CLOCK_MONOTONIC.  rv_frame_of(pid, pid, start,
 *    presented, deadline);
 *  - input latency: a pointer button press or a touch down (compositor
 *    bindings, which do not consume the event) on a client's surface is an
 *    input with the device's timestamp, dispatched now; the next commit of
 *    that surface presents the answer: rv_input_of(…, handled 0, commit);
 *  - focus: a surface activated (keyboard focus, compositor activate
 *    signal) → rv_foreground(pid, pid); a compositor with no keyboard
 *    (headless, kiosk devices without one) never activates, so a client's
 *    surface mapped for the first time is reported as foreground too (in
 *    kiosk-shell the newest mapped client is the one on screen).
 *
 * Test-only switches, never to be set on a device (a headless compositor
 * has no input devices, hence no seat):
 *  - [rearview] test-seat=true: the module creates a seat ("rearview-test",
 *    with a pointer) — kiosk-shell maps and activates no surface on a
 *    compositor without a seat;
 *  - [rearview] test-click-every-ms=N (implies test-seat; default 0, off):
 *    every N ms the module presses and releases that seat's left button at
 *    the middle of the focused client's surface, through libweston's
 *    notify_* functions, so the input path can be exercised headless.
 *
 * Invariants:
 *  - every listener is removed before its struct is freed: a surface's
 *    state is freed on the surface's destroy signal, the module's on the
 *    compositor's destroy signal;
 *  - the compositor thread is never blocked: librvevents drops instead.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libweston/config-parser.h>
#include <libweston/libweston.h>
#include <linux/input-event-codes.h>
#include <wayland-server-core.h>
#include <weston/weston.h>

#include "rearview/events.h"

/* wl_list_for_each (wayland-util.h) casts a char * to the container type:
 * fine for these structs, but clang's -Wcast-align flags every use. */
#pragma GCC diagnostic ignored "-Wcast-align"

/* libweston's seat and input entry points for backends
 * (libweston/backend.h, not installed; exported by libweston-10): used only
 * by the test-only click switch. */
void weston_seat_init(struct weston_seat *seat, struct weston_compositor *ec,
		      const char *seat_name);
int weston_seat_init_pointer(struct weston_seat *seat);
void weston_seat_release(struct weston_seat *seat);
void notify_pointer_frame(struct weston_seat *seat);
void notify_motion_absolute(struct weston_seat *seat, const struct timespec *time, double x,
			    double y);
void notify_button(struct weston_seat *seat, const struct timespec *time, int32_t button,
		   enum wl_pointer_button_state state);

#define DEFAULT_REFRESH_MHZ 60000
#define RING		    32

struct rv_module {
	struct weston_compositor *ec;
	struct wl_listener destroy;
	struct wl_listener create_surface;
	struct wl_listener output_created;
	struct wl_list outputs; /* struct rv_output.link */
	struct wl_listener activate;
	struct wl_list surfaces; /* struct rv_surface.link */
	struct weston_binding *button_binding, *touch_binding;
	/* test-only click */
	struct weston_seat test_seat;
	bool want_test_seat, test_seat_ready;
	struct wl_event_source *click_timer;
	int click_every_ms;
	struct weston_surface *focus; /* the foreground client's surface */
	pid_t fg_pid;		      /* the last foreground reported */
};

/* An output whose repaints the module follows (frame_signal). */
struct rv_output {
	struct rv_module *m;
	struct weston_output *output;
	struct wl_list link;
	struct wl_listener frame;
	struct wl_listener destroy;
	struct wl_event_source *timer; /* reads a presentation no repaint follows */
	unsigned timer_tries;
	/* Its presentations as seen (each repaint is followed by one before
	 * the next): the count, the newest RING times (CLOCK_MONOTONIC ns,
	 * stamps[seq % RING]) and the shortest interval between two of them. */
	struct timespec seen;
	uint64_t seq;
	uint64_t stamps[RING];
	uint64_t cadence;
};

struct rv_surface {
	struct rv_module *m;
	struct weston_surface *surface;
	struct wl_list link;
	struct wl_listener commit;
	struct wl_listener destroy;
	pid_t pid;
	bool was_mapped;
	bool animating;	       /* the last commit asked for a frame callback */
	bool was_animating;    /* ... and the commit before it */
	uint64_t new_commit;   /* CLOCK_MONOTONIC ns of a commit not painted yet, 0: none */
	bool commit_animating; /* the surface animated before that commit */
	/* Painted in a repaint of `painted_on`, awaiting its presentation:
	 * presented once that output's frame_time differs from painted_stamp. */
	struct rv_output *painted_on;
	struct timespec painted_stamp;
	uint64_t painted_commit;
	bool painted_animating;
	uint64_t last_present;	   /* CLOCK_MONOTONIC ns of its last presentation, 0: none */
	struct rv_output *last_on; /* ... on that output, its presentation number there */
	uint64_t last_seq;
	uint64_t input_event, input_dispatched; /* an input awaiting its answer */
};

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static pid_t client_pid(struct weston_surface *s)
{
	struct wl_client *c;
	pid_t pid = 0;
	uid_t uid;
	gid_t gid;

	if (!s || !s->resource)
		return 0;
	c = wl_resource_get_client(s->resource);
	wl_client_get_credentials(c, &pid, &uid, &gid);
	return pid;
}

static struct rv_surface *find_surface(struct rv_module *m, struct weston_surface *s)
{
	struct rv_surface *rs;

	wl_list_for_each(rs, &m->surfaces, link) if (rs->surface == s) return rs;
	return NULL;
}

/* Surface `s` of client `pid` has the focus: reported when the client
 * changes (not a repeat: kiosk-shell re-activates on every click). */
static void set_foreground(struct rv_module *m, struct weston_surface *s, pid_t pid)
{
	if (pid <= 0 || pid == getpid())
		return;
	m->focus = s;
	if (pid == m->fg_pid)
		return;
	m->fg_pid = pid;
	rv_foreground(pid, pid);
}

static void on_commit(struct wl_listener *l, void *data)
{
	struct rv_surface *rs = wl_container_of(l, rs, commit);
	struct weston_surface *s = rs->surface;
	uint64_t now = rv_events_now();
	bool mapped = weston_surface_is_mapped(s);

	if (!rs->pid)
		return;
	if (mapped && !rs->was_mapped) {
		set_foreground(rs->m, s, rs->pid);
	}
	rs->was_mapped = mapped;
	/* New content (damage to show): a frame, ended by its presentation. */
	if (mapped && pixman_region32_not_empty(&s->damage)) {
		rs->new_commit = now;
		rs->commit_animating = rs->animating;
	}
	if (rs->input_event) {
		rv_input_of(rs->pid, rs->pid, rs->input_event, rs->input_dispatched, 0, now);
		rs->input_event = 0;
	}
	rs->animating = !wl_list_empty(&s->frame_callback_list);
}

/* The offset CLOCK_MONOTONIC − clk now, in ns: clk read between two reads
 * of CLOCK_MONOTONIC, three times, keeping the narrowest bracket, so that
 * being preempted between two reads (milliseconds on a loaded machine)
 * does not skew it.  0, or -1 when a clock cannot be read. */
static int clock_offset_ns(clockid_t clk, int64_t *off)
{
	int64_t best = INT64_MAX;

	for (int i = 0; i < 3; i++) {
		struct timespec m0, c, m1;
		int64_t w;

		if (clock_gettime(CLOCK_MONOTONIC, &m0) < 0 || clock_gettime(clk, &c) < 0 ||
		    clock_gettime(CLOCK_MONOTONIC, &m1) < 0)
			return -1;
		w = (int64_t)ts_ns(&m1) - (int64_t)ts_ns(&m0);
		if (w < best) {
			best = w;
			*off = (int64_t)ts_ns(&m0) + w / 2 - (int64_t)ts_ns(&c);
		}
	}
	return 0;
}

/* CLOCK_MONOTONIC ns of `ts`, a time on the compositor's presentation clock
 * (CLOCK_MONOTONIC_RAW with the headless backend's software clock): moved
 * by the two clocks' offset now. */
static uint64_t presentation_mono(const struct weston_compositor *ec, const struct timespec *ts)
{
	int64_t off = 0;

	if (ec->presentation_clock == CLOCK_MONOTONIC ||
	    clock_offset_ns(ec->presentation_clock, &off) < 0)
		return ts_ns(ts);
	return off < 0 && (uint64_t)-off > ts_ns(ts) ? 0 : (uint64_t)((int64_t)ts_ns(ts) + off);
}

static uint64_t output_period_ns(const struct weston_output *o)
{
	int32_t mhz = o->current_mode && o->current_mode->refresh > 0 ? o->current_mode->refresh
								      : DEFAULT_REFRESH_MHZ;

	return 1000000000000ull / (uint64_t)mhz;
}

/* The content rs painted on ro was presented: ro's newest presentation. */
static void report_presented(struct rv_surface *rs, struct rv_output *ro)
{
	uint64_t period = output_period_ns(ro->output), presented = ro->stamps[ro->seq % RING];
	uint64_t start, deadline, cadence = ro->cadence;

	if (rs->painted_animating && rs->last_present && rs->last_present < presented) {
		/* Drawing frame after frame: due at the output's next
		 * presentation after the previous one — the next vblank, half a
		 * period of slack, or (an output presenting slower than its
		 * refresh, like the headless backend's) its own cadence, up to
		 * two periods — and never after a presentation that went out
		 * without it. */
		if (cadence < period)
			cadence = period;
		if (cadence > 2 * period)
			cadence = 2 * period;
		start = rs->last_present;
		deadline = start + period + cadence / 2;
		if (rs->last_on == ro && ro->seq - rs->last_seq > 1 &&
		    ro->seq - rs->last_seq < RING &&
		    ro->stamps[(rs->last_seq + 1) % RING] < deadline)
			deadline = ro->stamps[(rs->last_seq + 1) % RING];
	} else {
		/* The first after a pause: its repaint, then that vblank. */
		start = rs->painted_commit;
		deadline = start + 2 * period;
	}
	if (presented < start) /* the clocks' offset moved a few ns */
		presented = start;
	if (deadline < start)
		deadline = start;
	rv_frame_of(rs->pid, rs->pid, start, presented, deadline);
	rs->last_present = presented;
	rs->last_on = ro;
	rs->last_seq = ro->seq;
	rs->painted_on = NULL;
}

/* Notes ro's presentation when its frame_time moved since last seen. */
static void observe_presentation(struct rv_output *ro)
{
	const struct timespec *now = &ro->output->frame_time;
	uint64_t shortest = UINT64_MAX;

	if (now->tv_sec == ro->seen.tv_sec && now->tv_nsec == ro->seen.tv_nsec)
		return;
	ro->seen = *now;
	ro->seq++;
	ro->stamps[ro->seq % RING] = presentation_mono(ro->m->ec, now);
	for (uint64_t k = 1; k < RING && k < ro->seq; k++) {
		uint64_t a = ro->stamps[(ro->seq - k) % RING],
			 b = ro->stamps[(ro->seq - k + 1) % RING];

		if (b > a && b - a < shortest)
			shortest = b - a;
	}
	ro->cadence = shortest == UINT64_MAX ? 0 : shortest;
}

/* Reports every surface painted on ro whose content has been presented
 * since (the output's frame_time moved); returns how many still wait. */
static unsigned resolve_presented(struct rv_output *ro)
{
	struct rv_surface *rs;
	unsigned waiting = 0;

	observe_presentation(ro);
	wl_list_for_each(rs, &ro->m->surfaces, link)
	{
		if (rs->painted_on != ro)
			continue;
		if (ro->seen.tv_sec == rs->painted_stamp.tv_sec &&
		    ro->seen.tv_nsec == rs->painted_stamp.tv_nsec)
			waiting++;
		else
			report_presented(rs, ro);
	}
	return waiting;
}

/* A repaint of ro: earlier paints are presented by now; surfaces with new
 * content on ro are painted in this one. */
static void on_output_frame(struct wl_listener *l, void *data)
{
	struct rv_output *ro = wl_container_of(l, ro, frame);
	struct rv_surface *rs;
	bool painted = false;

	resolve_presented(ro);
	wl_list_for_each(rs, &ro->m->surfaces, link)
	{
		if (!rs->new_commit || rs->surface->output != ro->output ||
		    !weston_surface_is_mapped(rs->surface))
			continue;
		rs->painted_on = ro;
		rs->painted_stamp = ro->output->frame_time;
		rs->painted_commit = rs->new_commit;
		rs->painted_animating = rs->commit_animating;
		rs->new_commit = 0;
		painted = true;
	}
	if (painted && ro->timer) {
		ro->timer_tries = 0;
		wl_event_source_timer_update(ro->timer,
					     (int)(output_period_ns(ro->output) / 1000000) + 2);
	}
}

/* No repaint followed a paint: its presentation is read here. */
static int on_output_timer(void *data)
{
	struct rv_output *ro = data;
	struct rv_surface *rs;

	if (resolve_presented(ro) == 0)
		return 0;
	if (++ro->timer_tries < 8) {
		wl_event_source_timer_update(ro->timer,
					     (int)(output_period_ns(ro->output) / 1000000) + 2);
		return 0;
	}
	wl_list_for_each(rs, &ro->m->surfaces, link) if (rs->painted_on == ro) rs->painted_on =
		NULL;
	return 0;
}

static void output_free(struct rv_output *ro)
{
	struct rv_surface *rs;

	wl_list_for_each(rs, &ro->m->surfaces, link)
	{
		if (rs->painted_on == ro)
			rs->painted_on = NULL;
		if (rs->last_on == ro)
			rs->last_on = NULL;
	}
	if (ro->timer)
		wl_event_source_remove(ro->timer);
	wl_list_remove(&ro->frame.link);
	wl_list_remove(&ro->destroy.link);
	wl_list_remove(&ro->link);
	free(ro);
}

static void on_output_destroy(struct wl_listener *l, void *data)
{
	struct rv_output *ro = wl_container_of(l, ro, destroy);

	output_free(ro);
}

static void follow_output(struct rv_module *m, struct weston_output *o)
{
	struct rv_output *ro;

	wl_list_for_each(ro, &m->outputs, link) if (ro->output == o) return;
	ro = calloc(1, sizeof(*ro));
	if (!ro)
		return;
	ro->m = m;
	ro->output = o;
	ro->timer = wl_event_loop_add_timer(wl_display_get_event_loop(m->ec->wl_display),
					    on_output_timer, ro);
	ro->frame.notify = on_output_frame;
	wl_signal_add(&o->frame_signal, &ro->frame);
	ro->destroy.notify = on_output_destroy;
	wl_signal_add(&o->destroy_signal, &ro->destroy);
	wl_list_insert(&m->outputs, &ro->link);
}

static void on_output_created(struct wl_listener *l, void *data)
{
	struct rv_module *m = wl_container_of(l, m, output_created);

	follow_output(m, data);
}

static void surface_free(struct rv_surface *rs)
{
	if (rs->m->focus == rs->surface)
		rs->m->focus = NULL;
	wl_list_remove(&rs->commit.link);
	wl_list_remove(&rs->destroy.link);
	wl_list_remove(&rs->link);
	free(rs);
}

static void on_surface_destroy(struct wl_listener *l, void *data)
{
	struct rv_surface *rs = wl_container_of(l, rs, destroy);

	surface_free(rs);
}

static void on_create_surface(struct wl_listener *l, void *data)
{
	struct rv_module *m = wl_container_of(l, m, create_surface);
	struct weston_surface *s = data;
	struct rv_surface *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return;
	rs->m = m;
	rs->surface = s;
	rs->pid = client_pid(s);
	/* The compositor's own surfaces (shell panels it draws) are not
	 * clients' frames. */
	if (rs->pid == getpid())
		rs->pid = 0;
	rs->commit.notify = on_commit;
	wl_signal_add(&s->commit_signal, &rs->commit);
	rs->destroy.notify = on_surface_destroy;
	wl_signal_add(&s->destroy_signal, &rs->destroy);
	wl_list_insert(&m->surfaces, &rs->link);
}

static void on_activate(struct wl_listener *l, void *data)
{
	struct rv_module *m = wl_container_of(l, m, activate);
	const struct weston_surface_activation_data *ad = data;

	if (ad && ad->surface)
		set_foreground(m, ad->surface, client_pid(ad->surface));
}

/* An input on `s` at the device's time `t`. */
static void input_on(struct rv_module *m, struct weston_surface *s, const struct timespec *t)
{
	struct rv_surface *rs;
	uint64_t now = rv_events_now(), at;

	rs = s ? find_surface(m, s) : NULL;
	if (!rs || !rs->pid)
		return;
	at = t ? ts_ns(t) : now;
	rs->input_event = at <= now ? at : now;
	rs->input_dispatched = now;
}

static void on_button(struct weston_pointer *p, const struct timespec *t, uint32_t button,
		      void *data)
{
	if (p->button_count == 1 && p->focus)
		input_on(data, p->focus->surface, t);
}

static void on_touch(struct weston_touch *t, const struct timespec *time, void *data)
{
	if (t->num_tp == 1 && t->focus)
		input_on(data, t->focus->surface, time);
}

/* Test-only: one click at the middle of the focused surface (on top in
 * kiosk-shell). */
static int on_click_timer(void *data)
{
	struct rv_module *m = data;
	struct weston_view *v;
	struct timespec now;

	wl_event_source_timer_update(m->click_timer, m->click_every_ms);
	if (!m->focus || wl_list_empty(&m->focus->views))
		return 0;
	v = wl_container_of(m->focus->views.next, v, surface_link);
	weston_compositor_get_time(&now);
	notify_motion_absolute(&m->test_seat, &now, v->geometry.x + m->focus->width / 2.0,
			       v->geometry.y + m->focus->height / 2.0);
	notify_pointer_frame(&m->test_seat);
	notify_button(&m->test_seat, &now, BTN_LEFT, WL_POINTER_BUTTON_STATE_PRESSED);
	notify_pointer_frame(&m->test_seat);
	notify_button(&m->test_seat, &now, BTN_LEFT, WL_POINTER_BUTTON_STATE_RELEASED);
	notify_pointer_frame(&m->test_seat);
	return 0;
}

static void on_compositor_destroy(struct wl_listener *l, void *data)
{
	struct rv_module *m = wl_container_of(l, m, destroy);
	struct rv_surface *rs, *tmp;
	struct rv_output *ro, *otmp;

	wl_list_for_each_safe(ro, otmp, &m->outputs, link) output_free(ro);
	wl_list_for_each_safe(rs, tmp, &m->surfaces, link) surface_free(rs);
	if (m->click_timer)
		wl_event_source_remove(m->click_timer);
	if (m->test_seat_ready)
		weston_seat_release(&m->test_seat);
	wl_list_remove(&m->destroy.link);
	wl_list_remove(&m->create_surface.link);
	wl_list_remove(&m->output_created.link);
	wl_list_remove(&m->activate.link);
	free(m);
}

static void read_config(struct rv_module *m)
{
	struct weston_config *cfg = wet_get_config(m->ec);
	struct weston_config_section *sec =
		cfg ? weston_config_get_section(cfg, "rearview", NULL, NULL) : NULL;
	char *path = NULL;

	if (!sec)
		return;
	if (weston_config_section_get_string(sec, "events-socket", &path, NULL) == 0 && path)
		rv_events_set_path(path);
	free(path);
	weston_config_section_get_int(sec, "test-click-every-ms", &m->click_every_ms, 0);
	weston_config_section_get_bool(sec, "test-seat", &m->want_test_seat, false);
	if (m->click_every_ms > 0)
		m->want_test_seat = true;
}

WL_EXPORT int wet_module_init(struct weston_compositor *ec, int *argc, char *argv[])
{
	struct rv_module *m = calloc(1, sizeof(*m));
	struct weston_output *o;

	if (!m)
		return -1;

	m->ec = ec;
	wl_list_init(&m->surfaces);
	wl_list_init(&m->outputs);
	read_config(m);
	m->destroy.notify = on_compositor_destroy;
	wl_signal_add(&ec->destroy_signal, &m->destroy);
	m->create_surface.notify = on_create_surface;
	wl_signal_add(&ec->create_surface_signal, &m->create_surface);
	m->output_created.notify = on_output_created;
	wl_signal_add(&ec->output_created_signal, &m->output_created);
	wl_list_for_each(o, &ec->output_list, link) follow_output(m, o);
	m->activate.notify = on_activate;
	wl_signal_add(&ec->activate_signal, &m->activate);
	m->button_binding = weston_compositor_add_button_binding(ec, BTN_LEFT, 0, on_button, m);
	m->touch_binding = weston_compositor_add_touch_binding(ec, 0, on_touch, m);
	if (m->want_test_seat) {
		weston_seat_init(&m->test_seat, ec, "rearview-test");
		weston_seat_init_pointer(&m->test_seat);
		m->test_seat_ready = true;
	}
	if (m->click_every_ms > 0) {
		m->click_timer = wl_event_loop_add_timer(wl_display_get_event_loop(ec->wl_display),
							 on_click_timer, m);
		if (m->click_timer)
			wl_event_source_timer_update(m->click_timer, m->click_every_ms);
	}
	weston_log("rearview: reporting frames, input and focus to rearviewd%s\n",
		   m->click_every_ms > 0 ? " (TEST seat and clicks on)"
		   : m->want_test_seat	 ? " (TEST seat on)"
					 : "");
	return 0;
}
