/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lanes.h — the decode lanes (lanes.c): cfg->decode_jobs jobs at most on
 * the work queue, each draining its partition of the store's decode queue
 * through the decoder (decoder.h), and, on a backend with them (store.h's
 * wake_*), the decode wake-ups: a listener watched on the loop and a poll
 * behind it.  Loop thread, but rvs_lanes_open.
 */
#ifndef RVS_LANES_H
#define RVS_LANES_H

#include <uv.h>

#include "base/config.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "pipeline/decoder.h"
#include "pipeline/work.h"
#include "store/store.h"

struct rvs_lanes;

/* The lanes of the store ops (opened later: rvs_lanes_open) over blobs,
 * decoding with decoder (NULL: none, nothing is decoded), counting their
 * jobs in work and their outcomes in m.  Everything is borrowed and must
 * outlive the lanes.  0 or -ENOMEM. */
int rvs_lanes_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *m,
		  const struct rvs_store_ops *ops, const struct rvs_decoder *decoder,
		  struct rvs_blobs *blobs, struct rvs_work *work, struct rvs_lanes **out);
/* Work thread, once the store is open: the store the lanes drain, and its
 * decode listener opened where the backend has one (a failure is logged:
 * the poll stands in). */
void rvs_lanes_open(struct rvs_lanes *l, struct rvs_store *store);
/* Starts decoding what is queued, the listener's watch and the poll. */
void rvs_lanes_start(struct rvs_lanes *l);
/* Queues a decode job on every lane that has none (one that has one runs
 * again after it): new uploads, requeued traces.  A no-op without a
 * decoder or once stopping. */
void rvs_lanes_pump(struct rvs_lanes *l);
/* cb(arg) on the loop thread after each decode job that indexed
 * something (the alert rules' evaluation after indexing: timers.h's
 * rvs_timers_indexed).  Set before rvs_lanes_start; cb NULL: none. */
void rvs_lanes_on_indexed(struct rvs_lanes *l, void (*cb)(void *arg), void *arg);
/* Closes the listener's watch and the poll's timer (their handles close
 * on the loop). */
void rvs_lanes_stop(struct rvs_lanes *l);
/* Frees the lanes after the loop ran their handles' close; a listener
 * opened but never watched is closed.  NULL is a no-op. */
void rvs_lanes_free(struct rvs_lanes *l);

#endif
