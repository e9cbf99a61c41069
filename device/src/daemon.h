/*
 * daemon.h — rearviewd's core: the libuv loop, the three sockets, the
 * registry, the detectors, the capture flow and the spool.
 *
 * Seams for the parts built elsewhere (struct rvd_seams): a policy decision
 * before each capture, a local summary after a capture is stored, and an
 * upload kick when a capture becomes pending.  With no seam installed the
 * daemon applies consent only: off → nothing captured; local → stored and
 * skipped(consent_local); summary/full → pending.
 */
#ifndef RVD_DAEMON_H
#define RVD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "conn.h"
#include "detect.h"
#include "enforce.h"
#include "registry.h"
#include "spool.h"
#include "rearview/common.pb-c.h"

struct rvd_daemon;

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

#define RVD_LAST_ERRORS 8

struct rvd_pending_capture;
struct rvd_uploader;

struct rvd_daemon {
	uv_loop_t *loop; /* borrowed */
	struct rvd_config cfg;
	struct rvd_config cfg_file; /* as configured; the policy's thresholds override cfg */
	struct rvd_enforce enf;
	struct rvd_seams seams;
	int listen_fd[3];
	uv_poll_t listen_poll[3];
	uv_signal_t sig_term, sig_int;
	uv_timer_t accept_backoff; /* out of descriptors: stop accepting for a while */
	uv_timer_t thermal_timer;
	uv_work_t thermal_work;
	struct rvd_thermal_snapshot thermal_snap;
	int thermal_status;
	bool thermal_busy, throttling;
	struct rvd_conn *conns;
	unsigned nconns;
	uint64_t next_conn_id;
	struct rvd_registry reg;
	struct rvd_spool spool;
	struct rvd_corr_state corr;
	int consent;
	uint64_t next_request;
	struct rvd_pending_capture *pending;
	struct rvd_uploader *up; /* NULL: no [upload] server_url */
	uint64_t last_freeze_latency_ns;
	uint64_t captures_dropped;
	uint64_t anomalies;
	char last_errors[RVD_LAST_ERRORS][128];
	unsigned nerrors;
	bool stopping, ready, listening;
	int exit_status;
};

/*
 * Creates the run and state directories, binds the sockets, loads the
 * consent setting and starts opening the spool; readiness is signalled
 * (NOTIFY_SOCKET) once the spool is open.  Returns 0 or a negative errno
 * (logged); on failure everything started is undone by rvd_daemon_stop and
 * running the loop.
 */
int rvd_daemon_start(struct rvd_daemon *d, uv_loop_t *loop, const struct rvd_config *cfg);

/* Begins a clean shutdown: closes the sockets and every peer, waits for
 * the spool.  The loop returns when everything is closed.  Idempotent. */
void rvd_daemon_stop(struct rvd_daemon *d);

/* Frees what outlives the loop.  After uv_run returned. */
void rvd_daemon_release(struct rvd_daemon *d);

/* Entry point for one anomaly from any detector: policy, then capture. */
void rvd_daemon_anomaly(struct rvd_daemon *d, const struct rvd_anomaly *a);

/* Records `msg` among the last errors (rvctl status) and logs it. */
void rvd_daemon_note_error(struct rvd_daemon *d, const char *msg);

/* Gives an unused policy quota reservation back (a work-queue job). */
void rvd_daemon_release_reservation(struct rvd_daemon *d, int64_t reservation);

/* Verifies and applies a SignedPolicy (copied) through the same enforce job
 * as an admin push; the outcome is logged and refusals noted as errors.
 * Returns 0 once queued, or -ENOMEM. */
int rvd_daemon_apply_policy(struct rvd_daemon *d, const uint8_t *doc, size_t len);

/* The wire form of an anomaly; strings are borrowed from `a`. */
void rvd_daemon_anomaly_to_pb(const struct rvd_anomaly *a, Rearview__Anomaly *pb);

#endif
