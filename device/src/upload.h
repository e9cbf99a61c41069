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

#include <stdint.h>

struct rvd_daemon;
struct rvd_uploader;

/*
 * Creates the uploader of `d` (its configuration: d->cfg) and reads the
 * stored device token and the enrolment secret (small files, before the
 * loop runs).  Nothing is sent before rvd_upload_start.  *out is freed with
 * rvd_upload_free.  Returns 0 or -ENOMEM.
 */
int rvd_upload_new(struct rvd_daemon *d, struct rvd_uploader **out);

/* The daemon is ready (spool open, policy loaded): enrol if needed, fetch
 * the policy, upload what is pending.  Idempotent. */
void rvd_upload_start(struct rvd_uploader *u);

/* The pending seam (struct rvd_seams): capture `id` became pending. */
void rvd_upload_pending(void *u, uint64_t id);

/* Abandons requests in flight (their rows stay uploading and go back to
 * pending at the next start, under the same upload id) and closes every
 * handle.  The loop returns once they are closed.  NULL is a no-op. */
void rvd_upload_stop(struct rvd_uploader *u);

/* After the loop returned.  NULL is a no-op. */
void rvd_upload_free(struct rvd_uploader *u);

#endif
