/*
 * demo_app.c — rearview-demo-app: a UI-like program for `make demo` and the
 * demo integration test.  Its main thread is the UI thread: a 60 Hz event
 * loop that renders frames (demo_ui.c, instrumented), answers scripted
 * touches and, every --slow-every frames, renders SLOW_BURST consecutive
 * frames through the slow list-item builder, so rearviewd's jank detector
 * (K = 3 frames over budget by default) fires once per burst; every
 * --slow-touch-every touches the touch handler blocks past the 400 ms
 * touch threshold.
 *
 * Every frame goes to rearviewd's events.sock as a FrameReport and every
 * touch as a TouchReport (detected / delivered / responded); the app
 * announces itself with a ForegroundChange at start.  The control thread
 * of librvtrace (rvt_control_start) registers the process on control.sock,
 * so the daemon can trace and capture the UI thread.
 *
 * This file is built WITHOUT -finstrument-functions: the idle wait between
 * frames and the event reporting are outside every traced method, so they
 * never count as anyone's self time.  Losing the events socket is not
 * fatal: the app keeps rendering and reconnects about once a second.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "demo_ui.h"
#include "rearview/event.pb-c.h"
#include "rearview/frame.h"
#include "rearview/trace.h"

#define FRAME_NS       16666667ull /* 60 Hz */
#define SLOW_BURST     4u	   /* slow frames in a row: one jank at K = 3 */
#define TOUCH_EVERY    90u	   /* a scripted touch every 1.5 s */
#define TOUCH_INPUT_NS 3000000ull  /* input stack → app delivery, simulated */
#define LIST_ITEMS     5u
#define RECONNECT_NS   1000000000ull
#define TRACED_WAIT_NS 20000000000ull

struct opts {
	const char *events;
	const char *control;
	unsigned long frames;
	unsigned long slow_every;
	unsigned long slow_touch_every;
	unsigned long seed;
	bool wait_traced;
	bool quiet;
};

struct events {
	const char *path;
	int fd;
	uint64_t next_try_ns;
	pid_t pid, tid;
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

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

static void events_send(struct events *ev, Rearview__EventMessage *m);

static void events_connect(struct events *ev)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__ForegroundChange fg = REARVIEW__FOREGROUND_CHANGE__INIT;
	uint64_t now = now_ns();
	int fd;

	if (ev->fd >= 0 || now < ev->next_try_ns)
		return;
	ev->next_try_ns = now + RECONNECT_NS;
	fd = connect_unix(ev->path);
	if (fd < 0)
		return;
	ev->fd = fd;
	fprintf(stderr, "demo-app: connected to %s\n", ev->path);
	/* Every (re)connection announces the app as the foreground. */
	fg.pid = ev->pid;
	fg.ui_tid = ev->tid;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_FOREGROUND;
	m.foreground = &fg;
	events_send(ev, &m);
}

static void events_send(struct events *ev, Rearview__EventMessage *m)
{
	int rc;

	if (ev->fd < 0)
		return;
	rc = rv_frame_send(ev->fd, RV_CHANNEL_EVENT, &m->base, NULL, 0);
	if (rc < 0) {
		fprintf(stderr, "demo-app: events.sock: %s; reconnecting\n", strerror(-rc));
		close(ev->fd);
		ev->fd = -1;
	}
}

static void report_frame(struct events *ev, uint64_t start, uint64_t end)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__FrameReport fr = REARVIEW__FRAME_REPORT__INIT;

	fr.pid = ev->pid;
	fr.tid = ev->tid;
	fr.frame_start_ns = start;
	fr.frame_end_ns = end;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_FRAME;
	m.frame = &fr;
	events_send(ev, &m);
}

static void report_touch(struct events *ev, uint64_t detected, uint64_t delivered,
			 uint64_t responded)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__TouchReport t = REARVIEW__TOUCH_REPORT__INIT;

	t.pid = ev->pid;
	t.tid = ev->tid;
	t.detected_ns = detected;
	t.delivered_ns = delivered;
	t.responded_ns = responded;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_TOUCH;
	m.touch = &t;
	events_send(ev, &m);
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
	      "                         [--wait-traced] [--quiet]\n"
	      "  --events PATH     rearviewd's events.sock (default /run/rearview/events.sock)\n"
	      "  --control PATH    control.sock (default: beside --events, else $RV_SOCKET)\n"
	      "  --frames N        frames to render, 0 = until SIGINT/SIGTERM (default 0)\n"
	      "  --slow-every N    a burst of 4 slow frames every N frames, 0 = never (600)\n"
	      "  --seed S          varies the touch script (default 1)\n"
	      "  --slow-touch-every N  every Nth touch blocks 450 ms, 0 = never (0)\n"
	      "  --wait-traced     no slow frame or touch until the UI thread is traced\n"
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
	struct events ev = {.fd = -1};
	char control[256];
	struct sigaction sa = {.sa_handler = on_signal};
	unsigned long touch_phase, touches = 0;
	unsigned slow_left = 0;
	bool burst_due = false;
	uint64_t next, traced_deadline;
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

	ev.path = o.events;
	ev.pid = getpid();
	ev.tid = gettid();
	if ((rc = rvt_set_ui_thread(0)) < 0)
		fprintf(stderr, "demo-app: rvt_set_ui_thread: %s\n", strerror(-rc));
	if ((rc = rvt_control_start(control)) < 0) {
		fprintf(stderr, "demo-app: rvt_control_start(%s): %s\n", control, strerror(-rc));
		return 1;
	}
	touch_phase = o.seed % TOUCH_EVERY;
	fprintf(stderr, "demo-app: pid %d, events %s, control %s, slow burst every %lu frames\n",
		(int)ev.pid, o.events, control, o.slow_every);

	next = now_ns();
	traced_deadline = next + TRACED_WAIT_NS;
	for (unsigned long f = 0; !stop_requested && (o.frames == 0 || f < o.frames); f++) {
		struct demo_frame fr = {.index = (unsigned)f, .items = LIST_ITEMS};
		uint64_t start, end, detected = 0, delivered = 0;

		events_connect(&ev);
		/* A burst is due at every multiple of --slow-every; --wait-traced
		 * holds it while the daemon has not started tracing us yet
		 * (bounded, so a missing daemon never hangs the app). */
		if (o.slow_every && f > 0 && f % o.slow_every == 0)
			burst_due = true;
		if (burst_due &&
		    (!o.wait_traced || rvt_is_tracing(0) || now_ns() >= traced_deadline)) {
			burst_due = false;
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
		    ++touches % o.slow_touch_every == 0) {
			fr.slow_touch = true;
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
		report_frame(&ev, start, end);
		if (fr.touch)
			report_touch(&ev, detected, delivered, end);

		next += FRAME_NS;
		if (next < end) /* a late frame: the next one starts at once */
			next = end;
		sleep_until(next);
	}
	rvt_control_stop();
	if (ev.fd >= 0)
		close(ev.fd);
	fprintf(stderr, "demo-app: done (%u)\n", sum);
	return 0;
}
