/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timers.h — the server's periodic passes (timers.c): retention (every
 * cfg->retention_interval_s when cfg->retention_days > 0) and the
 * regression alerts (the automatic comparison, the alert rules on trends
 * (model/alerts.h), then the due webhook
 * deliveries, every cfg->regress_interval_ms): a timer on the loop queues
 * one pass at a time on the work queue.  Loop thread only.
 */
#ifndef RVS_TIMERS_H
#define RVS_TIMERS_H

#include <uv.h>

#include "base/config.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "pipeline/work.h"

struct rvs_timers;

/* The passes over cfg->database and blobs, counting their jobs in work and
 * their outcomes in m (everything borrowed, outliving the timers).  0 or
 * -ENOMEM. */
int rvs_timers_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *m,
		   struct rvs_blobs *blobs, struct rvs_work *work, struct rvs_timers **out);
/* Starts the timers (retention only when cfg->retention_days > 0). */
void rvs_timers_start(struct rvs_timers *t);
/* After indexing (lanes.h's rvs_lanes_on_indexed; arg the timers): queues
 * a pass of the alert rules (then the due deliveries) unless one runs or
 * one started less than RVS_ALERTS_GAP_MS ago, so a stream of uploads
 * costs at most one evaluation of the rules per gap. */
#define RVS_ALERTS_GAP_MS 10000
void rvs_timers_indexed(void *arg);
/* Closes the timers (their handles close on the loop); a pass running
 * finishes. */
void rvs_timers_stop(struct rvs_timers *t);
/* Frees the timers after the loop ran their handles' close.  NULL is a
 * no-op. */
void rvs_timers_free(struct rvs_timers *t);

#endif
