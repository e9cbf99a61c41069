/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture.h — rearviewd's capture flow: an anomaly → consent → seams →
 * policy decision (a spool job) → CaptureRequest to the process → its
 * CaptureReady memfd checked → spool (durable) → Ack → local summary →
 * gate (pending, or skipped(consent_local)).
 *
 * The daemon owns a struct rvd_capture_flow and hands it its state as
 * struct rvd_capture_env: the registry, spool and enforcer through their
 * own headers, everything else through functions; capture.c never sees
 * struct rvd_daemon.  Loop thread only.
 */
#ifndef RVD_CAPTURE_H
#define RVD_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "config.h"
#include "conn.h"
#include "detect.h"
#include "enforce.h"
#include "registry.h"

struct rvd_sandbox;
#include "spool.h"
#include "rearview/control.pb-c.h"

/*
 * Seams for the parts built elsewhere: a policy decision before each
 * capture, a local summary after a capture is stored, and an upload kick
 * when a capture becomes pending.  With no seam installed the flow applies
 * consent only: off → nothing captured; local → stored and
 * skipped(consent_local); summary/full → pending.
 */
struct rvd_seams {
	/* Before a capture: return 0 to capture, or a negative errno and set
	 * *reason (static string) to skip. */
	int (*policy_allow)(void *ctx, const struct rvd_anomaly *a, const char **reason);
	/* After a capture is durable (librvtrace analysis: local summary). */
	void (*captured)(void *ctx, const struct rvd_capture_rec *rec);
	/* A capture became pending, or a skipped row was stored (libcurl
	 * uploader: an upload or a skip report is due). */
	void (*pending)(void *ctx, uint64_t id);
	void *ctx;
};

/* What the flow uses of the daemon.  Pointers borrowed, outliving the flow;
 * every function is called on the loop thread with `ctx`. */
struct rvd_capture_env {
	uv_loop_t *loop;
	const struct rvd_config *cfg; /* capture timeout and size, tracing */
	struct rvd_registry *reg;
	struct rvd_spool *spool;
	struct rvd_enforce *enf;       /* read by summary jobs on the spool's queue */
	const struct rvd_seams *seams; /* read at each use: may be installed later */
	/* The consent level (Rearview__ConsentLevel). */
	int (*consent)(void *ctx);
	/* True once the daemon is shutting down: nothing new starts. */
	bool (*stopping)(void *ctx);
	/* Records `msg` (copied) among the last errors and logs it. */
	void (*note_error)(void *ctx, const char *msg);
	/* Queues policy job `j` (taken, freed on failure) on the spool's queue;
	 * `cb` runs on the loop after it.  Returns 0 or a negative errno. */
	int (*enforce_submit)(void *ctx, struct rvd_enforce_job *j, rvd_spool_cb cb);
	/* A policy job finished: refresh the copies of the policy's thresholds. */
	void (*policy_changed)(void *ctx);
	/* Gives an unused policy quota reservation back (a spool job). */
	void (*release_reservation)(void *ctx, int64_t reservation);
	/* The sandboxed parsers that check captures (sandbox.h), `nparsers`
	 * of them, each used by one check at a time on the libuv thread pool;
	 * NULL/0: checked in this process, one at a time (unit tests). */
	struct rvd_sandbox *parsers;
	unsigned nparsers;
	void *ctx;
};

/* Checking workers the daemon runs, and how many captures may wait for
 * one beyond them; a capture arriving when that many wait is refused
 * (BUSY), not queued: the memory they pin (sealed memfds of at most
 * [capture] max_bytes each) stays bounded whatever the apps send. */
#define RVD_CHECK_WORKERS   2
#define RVD_CHECK_QUEUE_MAX 16

struct rvd_pending_capture;
struct rvd_check;

/* Caller-owned; the counters are read by the daemon (rvctl status). */
struct rvd_capture_flow {
	struct rvd_capture_env env;
	struct rvd_pending_capture *pending; /* requests sent, not answered yet */
	/* Answers being checked (running: on a worker) or waiting for a worker
	 * (FIFO, at most RVD_CHECK_QUEUE_MAX). */
	struct rvd_check *checks_running, *waiting_head, *waiting_tail;
	unsigned nwaiting;
	uint32_t parser_busy; /* bit i: env.parsers[i] runs a check */
	uint64_t next_request;
	uint64_t last_freeze_latency_ns;
	uint64_t captures_dropped; /* anomalies not captured */
	uint64_t anomalies;	   /* anomalies seen */
};

/* Starts an idle flow over `env` (copied).  Never fails. */
void rvd_capture_init(struct rvd_capture_flow *f, const struct rvd_capture_env *env);

/* Entry point for one anomaly from any detector, events.sock or rvctl:
 * consent, seams, policy (MANUAL: consent only), then a CaptureRequest. */
void rvd_capture_anomaly(struct rvd_capture_flow *f, const struct rvd_anomaly *a);

/*
 * Process `p` on control peer `c` answered CaptureReady `cr`; its memfd is
 * taken from `c`.  A sealed, sized answer is handed to a checking worker
 * (or queued for one) and the call returns at once: the loop carries on
 * while the capture is checked, and stores it (then acknowledges it) or
 * refuses it (Error MALFORMED, the peer disconnected) when the check ends.
 * Returns 0 (handed over, refused because every worker is busy and the
 * queue is full — Error BUSY, the peer kept — or a late answer ignored),
 * or -EBADMSG when the answer breaks the protocol (no descriptor, not
 * sealed, wrong size): the caller disconnects the peer.
 */
int rvd_capture_ready(struct rvd_capture_flow *f, struct rvd_conn *c, struct rvd_process *p,
		      const Rearview__CaptureReady *cr);

/* Process `pid` is gone: its captures in flight are dropped. */
void rvd_capture_forget(struct rvd_capture_flow *f, pid_t pid);

/* Shutdown: every capture in flight is dropped (timers closed); checks
 * waiting for a worker are dropped, running ones end with their worker's
 * deadline and are then dropped (nothing is stored). */
void rvd_capture_stop(struct rvd_capture_flow *f);

/* A stored capture (state captured) goes pending or skipped(consent_*),
 * from the consent; used after a crash for rows never gated. */
void rvd_capture_gate(struct rvd_capture_flow *f, uint64_t id);

/* Queues the local summary of stored capture `r` when the consent lets
 * summaries leave the device and it has none yet (a spool job). */
void rvd_capture_summarize(struct rvd_capture_flow *f, const struct rvd_capture_rec *r);

#endif
