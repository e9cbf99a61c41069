/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin.h — rearviewd's admin.sock protocol (AdminRequest → AdminResponse,
 * proto/rearview/admin.proto): consent, status, capture list, show/export,
 * manual captures, foreground, injected events, policy get/push.
 *
 * The daemon hands in its state as struct rvd_admin_env (a function table
 * and the registry, spool and enforcer it owns); admin.c never sees struct
 * rvd_daemon.  Everything here runs on the loop thread.
 */
#ifndef RVD_ADMIN_H
#define RVD_ADMIN_H

#include <stdint.h>
#include <sys/types.h>

#include "conn.h"
#include "detect.h"
#include "enforce.h"
#include "registry.h"
#include "spool.h"
#include "rearview/admin.pb-c.h"
#include "rearview/event.pb-c.h"

#define RVD_LAST_ERRORS 8   /* errors kept for `rvctl status` */
#define RVD_ERROR_LEN	128 /* bytes kept of each, NUL included */

/* The daemon's counters for Status, filled by rvd_admin_env.stats. */
struct rvd_admin_stats {
	uint64_t last_freeze_latency_ns;
	uint64_t anomalies;
	uint64_t anomalies_not_captured;
	uint64_t identity_refused; /* Registers refused: the app id is not the peer's */
	uint64_t parser_failures;  /* the sandboxed parser crashed, timed out, overflowed */
	/* The last errors, oldest first; borrowed until the loop runs again. */
	const char *errors[RVD_LAST_ERRORS];
	unsigned nerrors; /* <= RVD_LAST_ERRORS */
};

/*
 * What admin.sock reads and changes.  The pointers are borrowed and outlive
 * every admin peer; `ctx` is passed back to each function.  Every function
 * runs on the loop thread.
 */
struct rvd_admin_env {
	struct rvd_registry *reg;
	struct rvd_spool *spool;
	struct rvd_enforce *enf; /* read by summary jobs on the spool's queue */
	/* The consent level (Rearview__ConsentLevel). */
	int (*consent)(void *ctx);
	/* Records a new consent level in memory (saving it is admin.c's job)
	 * and tells the daemon's listeners (D-Bus PropertiesChanged). */
	void (*set_consent)(void *ctx, int level);
	/* Fills the Status counters and last errors. */
	void (*stats)(void *ctx, struct rvd_admin_stats *out);
	/* Records `msg` (copied) among the last errors and logs it. */
	void (*note_error)(void *ctx, const char *msg);
	/* One anomaly, as from a detector (rvctl capture: kind MANUAL). */
	void (*anomaly)(void *ctx, const struct rvd_anomaly *a);
	/* An EventMessage injected through admin.sock, as if on events.sock. */
	void (*event)(void *ctx, const Rearview__EventMessage *e);
	/* The registry's foreground changed: re-plan which threads are traced. */
	void (*replan)(void *ctx);
	/* Queues policy job `j` (taken, freed on failure) on the spool's queue;
	 * `cb` runs on the loop after it.  Returns 0 or a negative errno. */
	int (*enforce_submit)(void *ctx, struct rvd_enforce_job *j, rvd_spool_cb cb);
	/* A policy job finished: the daemon refreshes its copies of the
	 * policy's thresholds. */
	void (*policy_changed)(void *ctx);
	/* The peer with connection id `id`, or NULL when it has left. */
	struct rvd_conn *(*conn_by_id)(void *ctx, uint64_t id);
	/* Forgets every per-app jank count, in memory and in the state
	 * directory's counts file (queued on the spool before what follows).
	 * NULL: there are none. */
	void (*clear_jank)(void *ctx);
	void *ctx;
};

/* The reason a capture deleted with rvd_admin_delete_all is skipped for. */
#define RVD_REASON_DELETED "deleted_by_user"

/*
 * Told on the loop thread once a consent change or a deletion is durable
 * (its purges committed, their quota reservations released): `level` is
 * the consent in force, `purged` (borrowed for the call) the `npurged`
 * capture ids purged.  Failures on the way are in the last errors.
 */
typedef void (*rvd_admin_done_fn)(void *data, int level, const uint64_t *purged, size_t npurged);

/*
 * The one consent change, for every channel (admin.sock, D-Bus): records
 * `level` (env->set_consent, which tells every listener), saves it, re-plans
 * tracing and, when it is lowered, purges what the new level forbids (the
 * captures' files, their reservations).  `done(data, …)` runs once, after
 * the purge is durable — before this returns when nothing waits.  Returns
 * 0 (done will run or has run) or -EINVAL for an unknown level (nothing
 * changed, done not run).  Loop thread.
 */
int rvd_admin_set_consent(struct rvd_admin_env *env, int level, rvd_admin_done_fn done, void *data);

/*
 * Deletes everything collected (D-Bus DeleteAllData, rvctl delete-all):
 * the per-app jank counts, and the purge lowering consent to off makes —
 * every capture file and summary, the pending captures' reservations —
 * with consent unchanged; the rows stay, as
 * skipped(RVD_REASON_DELETED) without files.  `done` as above, never before
 * this returns.  Returns 0, or -ENOMEM (nothing changed, done not run).
 * Loop thread.
 */
int rvd_admin_delete_all(struct rvd_admin_env *env, rvd_admin_done_fn done, void *data);

/*
 * The admin peer `c` sent one frame (`payload`, `len` bytes, unverified).
 * Answers it now or, for requests that wait on a job, later.  Returns 0 to
 * keep the peer, or -EPIPE when it could not be written to (it is being
 * closed); an undecodable request is answered with Error{MALFORMED}, the
 * peer closed and -EBADMSG returned.  `env` must outlive every peer.
 */
int rvd_admin_frame(struct rvd_admin_env *env, struct rvd_conn *c, const uint8_t *payload,
		    uint32_t len);

#endif
