/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_int.h — private to the API's request side (api.c, gate.c,
 * device.c): the server's API state and a request's job on the work queue.
 * The lifecycle (api.c) makes and stops the state; the gate (gate.c)
 * admits requests, queues their jobs and answers them; the device API
 * (device.c) runs a job's enrolment, upload, skip report or policy fetch.
 * Loop thread, but a job's handler, which runs on a work thread.
 */
#ifndef RVS_API_INT_H
#define RVS_API_INT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include <uv.h>

#include "api/api.h"
#include "base/config.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "http/net.h"
#include "http/ratelimit.h"
#include "http/reply.h"
#include "http/route.h"
#include "pipeline/lanes.h"
#include "pipeline/timers.h"
#include "pipeline/work.h"
#include "store/store.h"

struct rvs_api {
	uv_loop_t *loop;
	const struct rvs_config *cfg;
	struct rvs_metrics *m;
	const struct rvs_store_ops *ops;
	struct rvs_store *store;
	struct rvs_blobs *blobs; /* the blob store ([store] blobs; blob.h) */
	uint8_t *secret;
	size_t secret_len;
	/* Sign-ins whose password hash is being computed: at most
	 * cfg->login_hashers at once, so hashing never holds more of the work
	 * pool than that (API work keeps the rest). */
	unsigned logins_hashing;
	/* Exports loading or streaming, and trace pages: at most
	 * RVS_EXPORT_STREAMS, each with its trace in memory (an export also with
	 * a thread writing it, stream.c). */
	unsigned exports;
	/* Every job on the work queue (requests, decodes, passes) counts here,
	 * and stopping is the server's (work.h). */
	struct rvs_work work;
	struct rvs_lanes *lanes;   /* the decode lanes and their wake-ups */
	struct rvs_timers *timers; /* retention and regression alerts */
	void (*cb)(void *, int);
	void *cb_arg;
	void (*stop_done)(void *);
	void *stop_arg;
	uv_work_t life;
	int life_rc;
	uint64_t start_depth;
	/* The served policy's version, read (not verified: devices verify) from
	 * policy_file when its mtime or size changes; guarded by policy_mu as
	 * several work threads ask for it. */
	pthread_mutex_t policy_mu;
	struct timespec policy_mtime;
	off_t policy_size;
	uint64_t policy_version;
	/* SHA-256 of DIR/api.token, the JSON API's bearer token; api_enabled
	 * is 0 when the file is missing (every /api/ request then gets 401). */
	uint8_t api_hash[32];
	int api_enabled;
	struct rvs_bucket buckets[RVS_BUCKETS];
	struct rvs_bucket peers[RVS_BUCKETS]; /* failed-auth budget per peer address */
	/* Enrolment budgets (issue 18 item 5): per peer address, and of the
	 * enrolment secret (charged by requests presenting it), both charged
	 * on the loop thread before the job is queued. */
	struct rvs_bucket enroll_peers[RVS_BUCKETS];
	struct rvs_bucket enroll_secret;
};

/* How a job's answer is made: a device API message (enrolment and policy
 * with their own bookkeeping), a JSON API document, a web UI page. */
enum job_kind { JOB_DEVICE, JOB_ENROLL, JOB_POLICY, JOB_QUERY, JOB_WEB };

struct job {
	uv_work_t w;
	struct rvs_api *a;
	struct rvs_conn *conn;
	struct rvs_http_req *req;
	const struct rvs_route *route; /* the entry serving req */
	unsigned allow;		       /* nonzero: a web method no entry serves */
	const char *arg;	       /* the route's wildcard match in req->path */
	size_t arg_len;
	enum job_kind kind;
	uint8_t token_hash[32];
	/* results: the answer (every kind), and a device API refusal's
	 * metric and rearview.Error made into q when the job is done */
	struct rvs_query_resp q;
	int err;  /* enum rvs_err_reason + 1, 0 when none */
	int code; /* Rearview__Error__Code */
	char reason[192];
	int new_upload, duplicate;
	/* JOB_ENROLL: the device enrolled before; its old token's hash. */
	int reenrolled;
	uint8_t old_token_hash[32];
	uint64_t requeued; /* a symbols upload: traces queued to decode again */
	int login;	   /* a sign-in: charged up front, one of logins_hashing */
	/* JOB_QUERY with a bearer token other than api.token: token_hash is
	 * checked against the personal tokens on the work thread; user: its
	 * owner once found. */
	int personal;
	char user[64];
	int export_slot; /* an export: one of a->exports until it ends */
};

#endif
