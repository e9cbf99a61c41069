/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo_app.c — rearview-demo-app: a UI-like program for `make demo` and the
 * demo integration test.  Its main thread is the UI thread: a 60 Hz event
 * loop that renders frames (demo_ui.c, instrumented), answers scripted
 * touches and, every --slow-every frames, renders SLOW_BURST consecutive
 * frames through the slow list-item builder, so rearviewd's jank detector
 * (K = 3 frames over budget by default) fires once per burst; every
 * --slow-touch-every touches the touch handler blocks past the 400 ms
 * touch threshold.  With --hold FILE, the first slow burst or touch is the
 * last until FILE exists (or HOLD_MAX_NS passed): the demo's end-to-end
 * run creates it once the daemon took the thermal capture, so its story
 * (jank, thermal, then the quota's end) is the same on a loaded machine.
 *
 * Every frame goes to rearviewd's events.sock as a FrameReport and every
 * touch as a TouchReport (detected / delivered / handled / responded)
 * through librvevents (rearview/events.h: rv_frame, rv_input); the app
 * announces itself with rv_foreground at start, which the library repeats
 * on every reconnection.  The control thread
 * of librvtrace (rvt_control_start) registers the process on control.sock,
 * so the daemon can trace and capture the UI thread.
 *
 * This file is built WITHOUT -finstrument-functions: the idle wait between
 * frames and the event reporting are outside every traced method, so they
 * never count as anyone's self time.  Losing the events socket is not
 * fatal: the app keeps rendering and librvevents reconnects about once a
 * second, dropping (and counting) what it cannot send meanwhile.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "demo_ui.h"
#include "rearview/events.h"
#include "rearview/trace.h"

#define FRAME_NS       16666667ull /* 60 Hz */
#define SLOW_BURST     4u	   /* slow frames in a row: one jank at K = 3 */
#define TOUCH_EVERY    90u	   /* a scripted touch every 1.5 s */
#define TOUCH_INPUT_NS 3000000ull  /* input stack → app delivery, simulated */
#define LIST_ITEMS     5u
#define TRACED_WAIT_NS 20000000000ull
#define HOLD_MAX_NS    120000000000ull /* --hold never hangs the app for good */

struct opts {
	const char *events;
	const char *control;
	unsigned long frames;
	unsigned long slow_every;
	unsigned long slow_touch_every;
	unsigned long seed;
	const char *hold;
	bool wait_traced;
	bool quiet;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t at_ns)
{
	struct timespec ts = {(time_t)(at_ns / 1000000000ull), (long)(at_ns % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
	       !stop_requested)
		;
}

static int parse_ulong(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || end == s || *end || s[0] == '-') ? -1 : 0;
}

static void usage(FILE *f)
{
	fputs("usage: rearview-demo-app [--events PATH] [--control PATH] [--frames N]\n"
	      "                         [--slow-every N] [--seed S] [--slow-touch-every N]\n"
	      "                         [--wait-traced] [--hold FILE] [--quiet]\n"
	      "  --events PATH     rearviewd's events.sock (default /run/rearview/events.sock)\n"
	      "  --control PATH    control.sock (default: beside --events, else $RV_SOCKET)\n"
	      "  --frames N        frames to render, 0 = until SIGINT/SIGTERM (default 0)\n"
	      "  --slow-every N    a burst of 4 slow frames every N frames, 0 = never (600)\n"
	      "  --seed S          varies the touch script (default 1)\n"
	      "  --slow-touch-every N  every Nth touch blocks 450 ms, 0 = never (0)\n"
	      "  --wait-traced     no slow frame or touch until the UI thread is traced\n"
	      "  --hold FILE       after the first slow burst or touch, no other until FILE\n"
	      "                    exists (at most 120 s)\n"
	      "  --quiet           no per-burst messages\n",
	      f);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"events", required_argument, NULL, 'e'},
		{"control", required_argument, NULL, 'c'},
		{"frames", required_argument, NULL, 'f'},
		{"slow-every", required_argument, NULL, 's'},
		{"seed", required_argument, NULL, 'S'},
		{"slow-touch-every", required_argument, NULL, 'T'},
		{"wait-traced", no_argument, NULL, 'w'},
		{"hold", required_argument, NULL, 'H'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct opts){.events = "/run/rearview/events.sock", .slow_every = 600, .seed = 1};
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'e':
			o->events = optarg;
			break;
		case 'c':
			o->control = optarg;
			break;
		case 'f':
			if (parse_ulong(optarg, &o->frames) < 0)
				goto bad;
			break;
		case 's':
			if (parse_ulong(optarg, &o->slow_every) < 0)
				goto bad;
			break;
		case 'S':
			if (parse_ulong(optarg, &o->seed) < 0)
				goto bad;
			break;
		case 'T':
			if (parse_ulong(optarg, &o->slow_touch_every) < 0)
				goto bad;
			break;
		case 'w':
			o->wait_traced = true;
			break;
		case 'H':
			o->hold = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			goto bad;
		}
	}
	if (optind == argc)
		return 0;
bad:
	usage(stderr);
	return -1;
}

/* Whether --hold keeps the app well-behaved now: after its first slow
 * burst or touch (misbehaved), until the hold file exists or the deadline. */
static bool held(const struct opts *o, bool misbehaved, uint64_t deadline)
{
	if (!o->hold || !misbehaved)
		return false;
	return access(o->hold, F_OK) != 0 && now_ns() < deadline;
}

/* control.sock beside events.sock, unless given. */
static int control_path(const struct opts *o, char *buf, size_t len)
{
	const char *slash;

	if (o->control) {
		snprintf(buf, len, "%s", o->control);
		return 0;
	}
	slash = strrchr(o->events, '/');
	if (!slash)
		return snprintf(buf, len, "control.sock") < (int)len ? 0 : -1;
	return snprintf(buf, len, "%.*s/control.sock", (int)(slash - o->events), o->events) <
			       (int)len
		       ? 0
		       : -1;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct rv_events_stats est;
	pid_t pid = getpid();
	char control[256];
	struct sigaction sa = {.sa_handler = on_signal};
	unsigned long touch_phase, touches = 0;
	unsigned slow_left = 0;
	bool burst_due = false, misbehaved = false;
	uint64_t next, traced_deadline, hold_deadline = 0;
	unsigned sum = 0;
	int rc;

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	if (control_path(&o, control, sizeof(control)) < 0) {
		fputs("demo-app: control socket path too long\n", stderr);
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if ((rc = rv_events_set_path(o.events)) < 0) {
		fprintf(stderr, "demo-app: --events %s: %s\n", o.events, strerror(-rc));
		return 2;
	}
	if ((rc = rvt_set_ui_thread(0)) < 0)
		fprintf(stderr, "demo-app: rvt_set_ui_thread: %s\n", strerror(-rc));
	if ((rc = rvt_control_start(control)) < 0) {
		fprintf(stderr, "demo-app: rvt_control_start(%s): %s\n", control, strerror(-rc));
		return 1;
	}
	touch_phase = o.seed % TOUCH_EVERY;
	fprintf(stderr, "demo-app: pid %d, events %s, control %s, slow burst every %lu frames\n",
		(int)pid, o.events, control, o.slow_every);
	/* The UI thread is this one; librvevents repeats it after reconnects. */
	rv_foreground(pid, gettid());

	next = now_ns();
	traced_deadline = next + TRACED_WAIT_NS;
	for (unsigned long f = 0; !stop_requested && (o.frames == 0 || f < o.frames); f++) {
		struct demo_frame fr = {.index = (unsigned)f, .items = LIST_ITEMS};
		uint64_t start, end, detected = 0, delivered = 0;

		/* A burst is due at every multiple of --slow-every; --wait-traced
		 * holds it while the daemon has not started tracing us yet
		 * (bounded, so a missing daemon never hangs the app). */
		if (o.slow_every && f > 0 && f % o.slow_every == 0)
			burst_due = true;
		if (burst_due &&
		    (!o.wait_traced || rvt_is_tracing(0) || now_ns() >= traced_deadline) &&
		    !held(&o, misbehaved, hold_deadline)) {
			burst_due = false;
			if (!misbehaved)
				hold_deadline = now_ns() + HOLD_MAX_NS;
			misbehaved = true;
			slow_left = SLOW_BURST;
			if (!o.quiet)
				fprintf(stderr,
					"demo-app: frame %lu: slow list items for %u frames\n", f,
					SLOW_BURST);
		}
		fr.slow = slow_left > 0;
		if (slow_left)
			slow_left--;
		fr.touch = f % TOUCH_EVERY == touch_phase;
		if (fr.touch && o.slow_touch_every &&
		    (!o.wait_traced || rvt_is_tracing(0) || now_ns() >= traced_deadline) &&
		    !held(&o, misbehaved, hold_deadline) && ++touches % o.slow_touch_every == 0) {
			fr.slow_touch = true;
			if (!misbehaved)
				hold_deadline = now_ns() + HOLD_MAX_NS;
			misbehaved = true;
			if (!o.quiet)
				fprintf(stderr, "demo-app: frame %lu: slow touch handler\n", f);
		}

		start = now_ns();
		if (fr.touch) {
			delivered = start;
			detected = start > TOUCH_INPUT_NS ? start - TOUCH_INPUT_NS : 0;
		}
		sum += demo_render_frame(&fr);
		end = now_ns();
		rv_frame(start, end, 0);
		if (fr.touch)
			rv_input(detected, delivered, end, end);

		next += FRAME_NS;
		if (next < end) /* a late frame: the next one starts at once */
			next = end;
		sleep_until(next);
	}
	rvt_control_stop();
	rv_events_stats(&est);
	fprintf(stderr, "demo-app: done (%u); events sent %llu, dropped %llu\n", sum,
		(unsigned long long)est.sent, (unsigned long long)est.dropped);
	return 0;
}
