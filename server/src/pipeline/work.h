/* SPDX-License-Identifier: Apache-2.0 */
/*
 * work.h — the jobs a server has on the libuv work queue, counted in one
 * place by everyone who queues them (the API gate's requests, the decode
 * lanes, the timers' passes), so that the server stops only once none is
 * in flight.  Loop thread only.
 */
#ifndef RVS_WORK_H
#define RVS_WORK_H

#include <assert.h>

#include <uv.h>

struct rvs_work {
	unsigned inflight; /* jobs queued and not yet done (their after-work ran) */
	/* 0 running; 1 stopping: nothing new is queued, the owner stops once
	 * inflight is 0; 2 the owner is closing its store. */
	int stopping;
	/* Called after each job is done (inflight lowered): the owner checks
	 * whether it may stop now. */
	void (*idle)(void *arg);
	void *arg;
};

/* Queues req, whose data becomes data, on loop's work queue: one more of
 * w's jobs.  uv_queue_work's result. */
static inline int rvs_work_queue(struct rvs_work *w, uv_loop_t *loop, uv_work_t *req, void *data,
				 uv_work_cb work, uv_after_work_cb done)
{
	w->inflight++;
	req->data = data;
	return uv_queue_work(loop, req, work, done);
}

/* One of w's jobs is done (the last thing its after-work does): the owner
 * may stop now. */
static inline void rvs_work_done(struct rvs_work *w)
{
	assert(w->inflight > 0);
	w->inflight--;
	w->idle(w->arg);
}

#endif
