/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/events.h — librvevents: report frames, input latency, focus,
 * thermal state and other anomalies to rearviewd's events.sock.
 *
 * For toolkits, compositors, input stacks and thermal services: one call per
 * event, and the library does the rest once — the framing
 * (rearview/frame.h, EventMessage of proto/rearview/event.proto), a lazy
 * connection on the first report, reconnection (at most one attempt per
 * second while the daemon is away), and sends that never block: when the
 * daemon is not there or the socket is full the event is dropped and
 * counted (rv_events_stats), so a UI thread is never stalled by Rearview.
 *
 * Socket: $RV_EVENTS_SOCKET if set, else /run/rearview/events.sock, unless
 * rv_events_set_path() names another.  The caller needs access to it
 * (device/README.md: uid 0, the daemon's uid, or the events group).
 *
 * Times are CLOCK_MONOTONIC nanoseconds (rv_events_now()).  A report whose
 * times cannot happen is refused with -EINVAL and not sent; rearviewd
 * applies the same rules and answers Error{MALFORMED}: a frame ending
 * before it starts or with a deadline before its start; an input not
 * ordered event ≤ dispatched ≤ handled ≤ presented; any time further than
 * RV_EVENTS_MAX_AHEAD_NS past now.
 *
 * Threads: every function may be called from any thread at any time (one
 * mutex, held for a non-blocking send of about 50 bytes).  After fork() the
 * child must call rv_events_reset() before reporting.
 *
 * Errors: functions return 0 when the event was handed to the kernel, or a
 * negative errno: -EINVAL (impossible values, nothing sent), -ENOTCONN (no
 * daemon; dropped), -EAGAIN (socket full; dropped), -ENOMEM.  Dropping is
 * normal operation: callers need not check, and must not retry in a loop.
 *
 * Link: pkg-config --cflags --libs rearview-events.
 */
#ifndef REARVIEW_EVENTS_H
#define REARVIEW_EVENTS_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How far ahead of now a reported time may lie (clock reads on different
 * CPUs, a compositor's predicted presentation): 1 s. */
#define RV_EVENTS_MAX_AHEAD_NS 1000000000ull

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t rv_events_now(void);

/* Uses `path` (copied; NULL: back to the default) from the next connection
 * on; closes the current one.  -ENAMETOOLONG if it does not fit a unix
 * socket address. */
int rv_events_set_path(const char *path);

/* Closes the connection (the next report reconnects at once) and forgets
 * the foreground and the app version.  Counters are kept. */
void rv_events_reset(void);

/* One rendered frame of the calling thread: it started at `start_ns`,
 * ended (was presented) at `end_ns`, and was due at `deadline_ns` (0: no
 * deadline; rearviewd then compares its length with the jank budget). */
int rv_frame(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns);
/* The same for thread `tid` of process `pid` (a compositor reporting for
 * its clients). */
int rv_frame_of(pid_t pid, pid_t tid, uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns);

/* One input event (touch, click, key) of the calling thread: it happened
 * at `event_ns` (the input device's timestamp), was dispatched to the app
 * at `dispatched_ns`, handled by it by `handled_ns` (0: unknown) and its
 * result presented at `presented_ns`.  rearviewd's touch detector fires
 * when presented − event exceeds its threshold and attributes the delay to
 * delivery (event → dispatched) or to the app (dispatched → presented). */
int rv_input(uint64_t event_ns, uint64_t dispatched_ns, uint64_t handled_ns, uint64_t presented_ns);
int rv_input_of(pid_t pid, pid_t tid, uint64_t event_ns, uint64_t dispatched_ns,
		uint64_t handled_ns, uint64_t presented_ns);

/* The focus moved to process `pid`, whose UI thread is `tid` (0: the
 * process's main thread).  Remembered and sent again after every
 * reconnection, so a restarted daemon knows the foreground at once. */
int rv_foreground(pid_t pid, pid_t tid);

/* The device entered thermal throttling (severity 0..100, detail: short
 * text, never user data, may be NULL).  rearviewd captures the most recent
 * foreground app. */
int rv_thermal(uint32_t severity, const char *detail);

/* An anomaly detected elsewhere, named `name` ("gpu_hang"), about thread
 * `tid` of `pid` (0, 0: the foreground app), severity 0..100. */
int rv_anomaly(const char *name, pid_t pid, pid_t tid, uint32_t severity, const char *detail);

/* A metric sample for rearviewd's correlation rules ("gpu_busy" 0.93). */
int rv_metric(const char *name, double value);

/* The calling process's app version (1..31 bytes of printable ASCII, no
 * space), e.g. "4.2.1": rearviewd counts this process's frames under it
 * in its per-app jank counts (else under version "").  Sent now and again
 * after every reconnection; a later call replaces it.  0, -EINVAL (bad
 * version: nothing sent or kept) or as rv_frame. */
int rv_app_version(const char *version);

struct rv_events_stats {
	uint64_t sent;	    /* handed to the kernel */
	uint64_t dropped;   /* not sent: no daemon, socket full, out of memory */
	uint64_t refused;   /* -EINVAL: impossible values */
	uint64_t connects;  /* successful connections, the first included */
	uint64_t errors_rx; /* Error frames rearviewd answered (read and dropped) */
};

/* A snapshot of the process-wide counters. */
void rv_events_stats(struct rv_events_stats *out);

#ifdef __cplusplus
}
#endif

#endif
