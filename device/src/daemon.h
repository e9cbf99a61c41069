/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon.h — rearviewd's core: the libuv loop, the three sockets, the
 * registry, the detectors, the capture flow (capture.h, with its seams)
 * and the spool.  struct rvd_daemon is private to daemon.c: main.c gets
 * these functions, admin.c, capture.c and upload.c get tables.
 */
#ifndef RVD_DAEMON_H
#define RVD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

struct rvd_daemon;

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

#endif
