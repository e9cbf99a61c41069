/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload.h — rearviewd's uploader: enrolment, capture uploads and policy
 * fetches against rearview-server's device API (server/API.md), through
 * libcurl's multi interface driven by the daemon's libuv loop.
 *
 * Installed by rvd_daemon_start when [upload] server_url is set; without
 * it captures simply stay pending.  The loop thread never blocks: curl only
 * runs from socket and timer callbacks, compression and the policy checks
 * run on the work queue.
 */
#ifndef RVD_UPLOAD_H
#define RVD_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "enforce.h"
#include "spool.h"

struct rvd_uploader;

/*
 * What the uploader uses of the daemon, handed in (it never sees struct
 * rvd_daemon).  The pointers are borrowed and outlive the uploader; the
 * spool and the enforcer are used through their own headers (the enforcer
 * only inside spool jobs, except policy_version read on the loop).  Every
 * function is called on the loop thread with `ctx`.
 */
struct rvd_upload_env {
	uv_loop_t *loop;
	const struct rvd_config *cfg;
	struct rvd_spool *spool;
	struct rvd_enforce *enf;
	/* The consent level (Rearview__ConsentLevel). */
	int (*consent)(void *ctx);
	/* True once the daemon is shutting down: nothing new starts. */
	bool (*stopping)(void *ctx);
	/* Records `msg` (copied) among the last errors and logs it. */
	void (*note_error)(void *ctx, const char *msg);
	/* Verifies and applies a fetched SignedPolicy (copied) as an admin push
	 * would; the outcome is logged.  Returns 0 once queued, or -ENOMEM. */
	int (*apply_policy)(void *ctx, const uint8_t *doc, size_t len);
	/* Gives an unused policy quota reservation back (a spool job). */
	void (*release_reservation)(void *ctx, int64_t reservation);
	/* The per-app frame counts (loop thread; NULL: none to send), sent on
	 * rvd_upload_jank and marked as sent on the server's ack. */
	struct rvd_jank_counts *jank;
	void *ctx;
};

/*
 * Creates the uploader over `env` (copied; its configuration: env->cfg) and
 * reads the stored device token and the enrolment secret (small files,
 * before the loop runs).  Nothing is sent before rvd_upload_start.  *out is
 * freed with rvd_upload_free.  Returns 0 or -ENOMEM.
 */
int rvd_upload_new(const struct rvd_upload_env *env, struct rvd_uploader **out);

/* The daemon is ready (spool open, policy loaded): enrol if needed, fetch
 * the policy, upload what is pending.  Idempotent. */
void rvd_upload_start(struct rvd_uploader *u);

/* The pending seam (struct rvd_seams): capture `id` became pending. */
void rvd_upload_pending(void *u, uint64_t id);

/* A new policy is in force (pushed, fetched or loaded): what its network
 * conditions held back (unmetered_only) is looked at again.  Loop thread;
 * NULL is a no-op. */
void rvd_upload_policy_changed(struct rvd_uploader *u);

/* Abandons requests in flight (their rows stay uploading and go back to
 * pending at the next start, under the same upload id) and closes every
 * handle.  The loop returns once they are closed.  NULL is a no-op. */
/* The jank counts are due to be sent: sends those that changed since the
 * server last stored them, once enrolled and consent is summary or full
 * (as skip reports).  NULL u is a no-op. */
void rvd_upload_jank(struct rvd_uploader *u);

void rvd_upload_stop(struct rvd_uploader *u);

/* After the loop returned.  NULL is a no-op. */
void rvd_upload_free(struct rvd_uploader *u);

#endif
