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
#include "detect.h"
#include "spool.h"

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

/* A stopped daemon, or NULL when out of memory.  Freed with
 * rvd_daemon_free. */
struct rvd_daemon *rvd_daemon_new(void);

/*
 * Creates the run and state directories, binds the sockets, loads the
 * consent setting and starts opening the spool; readiness is signalled
 * (NOTIFY_SOCKET) once the spool is open.  Returns 0 or a negative errno
 * (logged); on failure everything started is undone by rvd_daemon_stop and
 * running the loop.  Once per daemon; `cfg` is copied.
 */
int rvd_daemon_start(struct rvd_daemon *d, uv_loop_t *loop, const struct rvd_config *cfg);

/* Begins a clean shutdown: closes the sockets and every peer, waits for
 * the spool.  The loop returns when everything is closed.  Idempotent. */
void rvd_daemon_stop(struct rvd_daemon *d);

/* 0 after a clean run; 1 when starting, the spool or the policy store
 * failed.  After uv_run returned. */
int rvd_daemon_exit_status(const struct rvd_daemon *d);

/* Frees what outlives the loop, and `d`.  After rvd_daemon_start and
 * uv_run returned.  NULL is a no-op. */
void rvd_daemon_free(struct rvd_daemon *d);

/* Entry point for one anomaly from any detector: policy, then capture.
 * Loop thread. */
void rvd_daemon_anomaly(struct rvd_daemon *d, const struct rvd_anomaly *a);

#endif
