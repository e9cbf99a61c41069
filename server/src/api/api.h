/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.h — the device API (POST /v1/enroll, POST /v1/uploads, GET /v1/policy)
 * and /metrics, on top of net.h and store.h.  Loop thread only; the storage
 * and file work it starts runs on the libuv work queue.
 */
#ifndef RVS_API_H
#define RVS_API_H

#include <uv.h>

#include "pipeline/decoder.h"
#include "http/net.h"
#include "store/store.h"

/* Requests that load a whole trace at once — exports (GET .../export, the
 * flame graph) loading or streaming, and the web UI's trace page (its
 * timeline) — so the server holds at most this many decoded traces for
 * requests; more get 503 with Retry-After.  Each holds its trace in memory
 * and streams its output (stream.h: a few chunks, never the whole output:
 * a 40 MB trace of 10 M tiny calls made a 770 MB Chrome export). */
#define RVS_EXPORT_STREAMS 2

struct rvs_api;

/* Reads the enrolment secret; the store is opened by rvs_api_start. */
int rvs_api_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *m,
		const struct rvs_store_ops *ops, const struct rvs_decoder *decoder,
		struct rvs_api **out);
/* Opens the store on the work queue; calls ready(arg, 0 or -errno) on the loop. */
void rvs_api_start(struct rvs_api *a, void (*ready)(void *, int), void *arg);
/* Closes the store on the work queue once no job is in flight, then calls done. */
void rvs_api_stop(struct rvs_api *a, void (*done)(void *), void *arg);
void rvs_api_free(struct rvs_api *a);
/* The device API's endpoints (route.c's table): call->ctx is api.c's job.
 * metrics: GET /metrics, answered on the loop thread; enroll, upload, skip,
 * policy: POST /v1/enroll, /v1/uploads, /v1/skips and GET /v1/policy, on a
 * work thread, answered from the job's after-work callback. */
struct rvs_call;
void rvs_api_metrics(struct rvs_call *call);
void rvs_api_enroll(struct rvs_call *call);
void rvs_api_upload(struct rvs_call *call);
void rvs_api_skip(struct rvs_call *call);
/* POST /v1/jank: a device's frames and late frames per app and day. */
void rvs_api_jank(struct rvs_call *call);
void rvs_api_policy(struct rvs_call *call);

/* The rvs_handler_fn for net.h: routes every request through route.c's
 * table (loop thread). */
void rvs_api_handle(void *ctx, struct rvs_conn *c, struct rvs_http_req *req);

#endif
