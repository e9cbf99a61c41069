/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.c — librvevents (rearview/events.h): reports to rearviewd's
 * events.sock from any thread, never blocking.
 *
 * Invariants:
 *  - one process-wide state `G`, every field read and written under G.mu;
 *  - the socket is non-blocking; a frame is either queued whole in `out` or
 *    dropped, so the stream never holds part of a frame followed by the
 *    next one: bytes leave `out` in order, and a frame that does not fit
 *    what is left of RVE_OUT_MAX is counted as dropped;
 *  - at most one connection attempt per RVE_RETRY_NS while the daemon is
 *    away (the first report, a reset or a lost connection try at once);
 *  - whatever the daemon answers (only Error frames on this channel) is
 *    read and counted on each report, so its queue towards us never grows.
 */
#include "rearview/events.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rearview/event.pb-c.h"
#include "rearview/frame.h"

#define RVE_DEFAULT_PATH "/run/rearview/events.sock"
#define RVE_RETRY_NS	 1000000000ull
#define RVE_OUT_MAX	 16384u

static struct {
	pthread_mutex_t mu;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool path_set;
	int fd;
	uint64_t next_try_ns;
	uint8_t out[RVE_OUT_MAX];
	size_t out_len;
	struct rv_frame_reader rd;
	bool rd_init;
	pid_t fg_pid, fg_tid;
	char version[32]; /* rv_app_version's, "" when none */
	struct rv_events_stats st;
} G = {.mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

uint64_t rv_events_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pid_t self_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Under G.mu. */
static void drop_connection(void)
{
	if (G.fd >= 0)
		close(G.fd);
	G.fd = -1;
	G.out_len = 0;
	if (G.rd_init)
		rv_frame_reader_release(&G.rd);
	G.rd_init = false;
}

int rv_events_set_path(const char *path)
{
	if (path && strlen(path) >= sizeof(G.path))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&G.mu);
	drop_connection();
	G.path_set = path != NULL;
	if (path)
		memcpy(G.path, path, strlen(path) + 1);
	G.next_try_ns = 0;
	pthread_mutex_unlock(&G.mu);
	return 0;
}

void rv_events_reset(void)
{
	pthread_mutex_lock(&G.mu);
	drop_connection();
	G.next_try_ns = 0;
	G.fg_pid = G.fg_tid = 0;
	G.version[0] = '\0';
	pthread_mutex_unlock(&G.mu);
}

void rv_events_stats(struct rv_events_stats *out)
{
	pthread_mutex_lock(&G.mu);
	*out = G.st;
	pthread_mutex_unlock(&G.mu);
}

/* Under G.mu: writes what `out` holds without blocking.  0, or a negative
 * errno when the connection is lost (then closed). */
static int flush_out(void)
{
	size_t off = 0;
	int rc = 0;

	while (off < G.out_len) {
		ssize_t n = send(G.fd, G.out + off, G.out_len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				rc = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (rc < 0) {
		drop_connection();
		return rc;
	}
	memmove(G.out, G.out + off, G.out_len - off);
	G.out_len -= off;
	return 0;
}

/* Under G.mu: reads and counts the daemon's answers (Error frames). */
static void drain_replies(void)
{
	uint8_t buf[1024];
	const uint8_t *payload;
	uint32_t len;

	while (G.fd >= 0) {
		ssize_t n = recv(G.fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0 || rv_frame_reader_feed(&G.rd, buf, (size_t)n) < 0) {
			/* The daemon went away: reconnect at once. */
			drop_connection();
			G.next_try_ns = 0;
			return;
		}
		while (rv_frame_reader_next(&G.rd, &payload, &len) == 1)
			G.st.errors_rx++;
	}
}

/* Under G.mu: queues one frame whole, or returns -EAGAIN / -ENOMEM. */
static int queue_frame(const Rearview__EventMessage *m)
{
	uint8_t *frame;
	size_t len;
	int rc = rv_frame_pack(RV_CHANNEL_EVENT, &m->base, RV_FRAME_MAX_DEFAULT, &frame, &len);

	if (rc < 0)
		return rc;
	if (len > RVE_OUT_MAX - G.out_len) {
		free(frame);
		return -EAGAIN;
	}
	memcpy(G.out + G.out_len, frame, len);
	G.out_len += len;
	free(frame);
	return 0;
}

static void foreground_msg(Rearview__EventMessage *m, Rearview__ForegroundChange *fg, pid_t pid,
			   pid_t tid)
{
	rearview__foreground_change__init(fg);
	fg->pid = pid;
	fg->ui_tid = tid ? tid : pid;
	m->msg_case = REARVIEW__EVENT_MESSAGE__MSG_FOREGROUND;
	m->foreground = fg;
}

static void version_msg(Rearview__EventMessage *m, Rearview__AppVersion *v, const char *version)
{
	rearview__app_version__init(v);
	v->pid = getpid();
	v->version = (char *)version;
	m->msg_case = REARVIEW__EVENT_MESSAGE__MSG_APP_VERSION;
	m->app_version = v;
}

/* Under G.mu: connects when due; then re-announces the foreground and the
 * app version. */
static void ensure_connected(uint64_t now)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = G.path_set ? G.path : getenv("RV_EVENTS_SOCKET");
	int fd;

	if (G.fd >= 0 || now < G.next_try_ns)
		return;
	G.next_try_ns = now + RVE_RETRY_NS;
	if (!path || !*path)
		path = RVE_DEFAULT_PATH;
	if (strlen(path) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* A unix stream connect completes at once or fails (EAGAIN: the
	 * listener's backlog is full — try later, never wait). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return;
	}
	G.fd = fd;
	G.out_len = 0;
	rv_frame_reader_init(&G.rd, RV_CHANNEL_EVENT, RV_FRAME_MAX_DEFAULT);
	G.rd_init = true;
	G.st.connects++;
	if (G.fg_pid) {
		Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
		Rearview__ForegroundChange fg;

		foreground_msg(&m, &fg, G.fg_pid, G.fg_tid);
		if (queue_frame(&m) == 0)
			G.st.sent++;
	}
	if (G.version[0]) {
		Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
		Rearview__AppVersion v;

		version_msg(&m, &v, G.version);
		if (queue_frame(&m) == 0)
			G.st.sent++;
	}
}

/* Sends one message: connect if due, drain answers, queue, flush. */
static int send_msg(const Rearview__EventMessage *m)
{
	uint64_t now = rv_events_now();
	int rc;

	pthread_mutex_lock(&G.mu);
	ensure_connected(now);
	if (G.fd >= 0) {
		drain_replies();
		ensure_connected(now);
	}
	if (G.fd < 0) {
		rc = -ENOTCONN;
	} else if ((rc = queue_frame(m)) == 0 && (rc = flush_out()) < 0) {
		/* Lost while sending: the next report reconnects at once. */
		G.next_try_ns = now;
		rc = -ENOTCONN;
	}
	if (rc == 0)
		G.st.sent++;
	else
		G.st.dropped++;
	assert(G.out_len <= RVE_OUT_MAX);
	pthread_mutex_unlock(&G.mu);
	return rc;
}

static int refuse(void)
{
	pthread_mutex_lock(&G.mu);
	G.st.refused++;
	pthread_mutex_unlock(&G.mu);
	return -EINVAL;
}

static bool ahead(uint64_t t, uint64_t now)
{
	return t > now && t - now > RV_EVENTS_MAX_AHEAD_NS;
}

int rv_frame_of(pid_t pid, pid_t tid, uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__FrameReport fr = REARVIEW__FRAME_REPORT__INIT;
	uint64_t now = rv_events_now();

	if (pid <= 0 || tid < 0 || end_ns < start_ns || (deadline_ns && deadline_ns < start_ns) ||
	    ahead(end_ns, now) || ahead(deadline_ns, now + RV_EVENTS_MAX_AHEAD_NS))
		return refuse();
	fr.pid = pid;
	fr.tid = tid ? tid : pid;
	fr.frame_start_ns = start_ns;
	fr.frame_end_ns = end_ns;
	fr.frame_deadline_ns = deadline_ns;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_FRAME;
	m.frame = &fr;
	return send_msg(&m);
}

int rv_frame(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns)
{
	return rv_frame_of(getpid(), self_tid(), start_ns, end_ns, deadline_ns);
}

int rv_input_of(pid_t pid, pid_t tid, uint64_t event_ns, uint64_t dispatched_ns,
		uint64_t handled_ns, uint64_t presented_ns)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__TouchReport t = REARVIEW__TOUCH_REPORT__INIT;
	uint64_t now = rv_events_now();

	if (pid <= 0 || tid < 0 || dispatched_ns < event_ns || presented_ns < dispatched_ns ||
	    (handled_ns && (handled_ns < dispatched_ns || handled_ns > presented_ns)) ||
	    ahead(presented_ns, now))
		return refuse();
	t.pid = pid;
	t.tid = tid ? tid : pid;
	t.detected_ns = event_ns;
	t.delivered_ns = dispatched_ns;
	t.handled_ns = handled_ns;
	t.responded_ns = presented_ns;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_TOUCH;
	m.touch = &t;
	return send_msg(&m);
}

int rv_input(uint64_t event_ns, uint64_t dispatched_ns, uint64_t handled_ns, uint64_t presented_ns)
{
	return rv_input_of(getpid(), self_tid(), event_ns, dispatched_ns, handled_ns, presented_ns);
}

int rv_foreground(pid_t pid, pid_t tid)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__ForegroundChange fg;

	if (pid <= 0 || tid < 0)
		return refuse();
	pthread_mutex_lock(&G.mu);
	G.fg_pid = pid;
	G.fg_tid = tid;
	pthread_mutex_unlock(&G.mu);
	foreground_msg(&m, &fg, pid, tid);
	return send_msg(&m);
}

static int send_anomaly(Rearview__AnomalyKind kind, const char *name, pid_t pid, pid_t tid,
			uint32_t severity, const char *detail)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__Anomaly a = REARVIEW__ANOMALY__INIT;

	if (severity > 100 || pid < 0 || tid < 0)
		return refuse();
	a.kind = kind;
	a.severity = severity;
	a.pid = pid;
	a.tid = tid;
	a.monotonic_ns = rv_events_now();
	a.name = (char *)(name ? name : "");
	a.detail = (char *)(detail ? detail : "");
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_ANOMALY;
	m.anomaly = &a;
	return send_msg(&m);
}

int rv_thermal(uint32_t severity, const char *detail)
{
	return send_anomaly(REARVIEW__ANOMALY_KIND__ANOMALY_THERMAL, "", 0, 0, severity, detail);
}

int rv_anomaly(const char *name, pid_t pid, pid_t tid, uint32_t severity, const char *detail)
{
	if (!name || !*name)
		return refuse();
	return send_anomaly(REARVIEW__ANOMALY_KIND__ANOMALY_GENERIC, name, pid, tid, severity,
			    detail);
}

int rv_metric(const char *name, double value)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__MetricSample s = REARVIEW__METRIC_SAMPLE__INIT;

	if (!name || !*name || value != value)
		return refuse();
	s.name = (char *)name;
	s.value = value;
	s.monotonic_ns = rv_events_now();
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_METRIC;
	m.metric = &s;
	return send_msg(&m);
}

int rv_app_version(const char *version)
{
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__AppVersion v;
	size_t n = version ? strlen(version) : 0;

	if (n == 0 || n >= sizeof(G.version))
		return refuse();
	for (size_t i = 0; i < n; i++)
		if (version[i] <= ' ' || version[i] > '~')
			return refuse();
	pthread_mutex_lock(&G.mu);
	memcpy(G.version, version, n + 1);
	pthread_mutex_unlock(&G.mu);
	version_msg(&m, &v, version);
	return send_msg(&m);
}
