/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lanes.c — the decode lanes and their wake-ups (lanes.h).
 *
 * Invariants: at most one decode job per queue partition (decoding[]),
 * and one that is asked to run while it runs runs again once after it
 * (decode_again[]); every job counts in the server's work (work.h) from
 * its queueing to its after-work; nothing new is queued once stopping.
 *
 * Transient failures (store.h: the database restarting, refusing
 * connections, a full disk; the blob store unreachable) never quarantine:
 * an upload whose blob cannot be fetched now, or whose decode the store
 * deferred (rc -EAGAIN), is recorded as such and stays queued; a job that
 * met one stops draining its partition, and the lanes look at the queue
 * again after a backoff (retry_timer: 1 s doubling to 30 s, back to 1 s
 * after a run without one), so a database that is down is not hammered.
 * Recording a batch's outcome (decode_finish) is itself retried with
 * backoff for about 13 s; should it still fail, the batch is decoded again
 * (indexing replaces a trace's rows: no double count).
 */
#include "pipeline/lanes.h"
#include "pipeline/payload.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The backoff of the queue's look after a transient failure. */
#define RETRY_MIN_MS 1000 /* past PostgreSQL's 1 s hold-off of a released item */
#define RETRY_MAX_MS 30000
/* decode_finish's attempts after a transient failure: 100 ms doubling to
 * 3.2 s, about 13 s in all. */
#define FINISH_ATTEMPTS 9

struct rvs_lanes {
	uv_loop_t *loop;
	const struct rvs_config *cfg;
	struct rvs_metrics *m;
	const struct rvs_store_ops *ops;
	struct rvs_store *store;
	const struct rvs_decoder *decoder;
	struct rvs_blobs *blobs;
	struct rvs_work *work;
	/* One decode job per queue partition at most (RVS_DECODE_LANES). */
	int decoding[RVS_DECODE_LANES], decode_again[RVS_DECODE_LANES];
	/* Decode wake-ups (PostgreSQL; store.h wake_*): the listener opened by
	 * rvs_lanes_open, its socket watched on the loop (wake_on), and the
	 * poll every cfg->decode_poll_s that stands in when no NOTIFY comes. */
	struct rvs_wake *wake, *wake_new; /* wake_new: a reopen's, until done */
	uv_poll_t wake_poll;
	int wake_on, wake_busy; /* wake_busy: a reopen is queued */
	uv_work_t wake_work;
	uv_timer_t decode_timer;
	int decode_timer_on;
	/* The queue looked at again after a transient failure (see above). */
	uv_timer_t retry_timer;
	int retry_on;
	uint64_t retry_ms;
	/* rvs_lanes_on_indexed's hook. */
	void (*indexed)(void *arg);
	void *indexed_arg;
};

static void decode_start(struct rvs_lanes *a, unsigned part);

/* cfg->decode_jobs within 1..RVS_DECODE_LANES (a zeroed config means 1). */
static unsigned decode_jobs(const struct rvs_lanes *a)
{
	unsigned n = a->cfg->decode_jobs;
	return n < 1 ? 1 : n > RVS_DECODE_LANES ? RVS_DECODE_LANES : n;
}

struct decode_job {
	uv_work_t w;
	struct rvs_lanes *a;
	unsigned part; /* the queue partition this job drains */
	uint64_t depth;
	int empty;	      /* the first dequeue found nothing: another decoder took it */
	int deferred;	      /* a transient failure: look at the queue again later */
	struct rvs_hist hist; /* this job's decode times, merged on the loop */
	uint64_t failures[RVS_DECODE_FAIL_COUNT];
	struct rvs_decode_item items[RVS_DECODE_BATCH];
};

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The decoder on it[0..n), but for the items already deferred (rc
 * -EAGAIN: their blob could not be fetched now), in runs between them. */
static void decode_runs(const struct rvs_decoder *dec, struct rvs_decode_item *it, int n)
{
	for (int i = 0, j; i < n; i = j + 1) {
		for (j = i; j < n && it[j].rc != -EAGAIN; j++)
			;
		if (j > i)
			dec->decode(dec->ctx, it + i, (size_t)(j - i));
	}
}

/* decode_finish, retried with backoff while its failure is transient;
 * 0 or its last -errno. */
static int finish(struct rvs_lanes *a, const struct rvs_decode_item *it, int n)
{
	int rc = 0;

	for (int k = 0; k < FINISH_ATTEMPTS; k++) {
		if (k)
			sleep_ms(100L << (k < 6 ? k - 1 : 5));
		if (!rvs_store_transient(rc = a->ops->decode_finish(a->store, it, (size_t)n)))
			break;
		rvs_log("warn", "decode outcome not recorded: retrying", "attempt=%d err=%d", k + 1,
			rc);
	}
	return rc;
}

/* Drains the job's partition a batch at a time: the decoder indexes it, the
 * store records every outcome in one transaction (a crash in between only
 * decodes the batch again: indexing replaces a trace's rows).  A batch
 * with a deferred item, or a transient failure of the queue itself, ends
 * the job: the retry timer brings it back. */
static void decode_work(uv_work_t *w)
{
	struct decode_job *dj = w->data;
	struct rvs_lanes *a = dj->a;
	struct rvs_decode_item *it = dj->items;
	int n;

	dj->empty = 1;
	while ((n = a->ops->decode_next_batch(a->store, dj->part, decode_jobs(a), it,
					      RVS_DECODE_BATCH)) > 0) {
		dj->empty = 0;
		/* The decoder reads a file: the local blob's own, or a
		 * temporary copy of a remote one, removed after the batch. */
		int is_temp[RVS_DECODE_BATCH] = {0};
		for (int i = 0; i < n; i++) {
			int rc = -ENOENT;
			it[i].rc = 0;
			if (it[i].blob_sha256[0] &&
			    (rc = rvs_blobs_file(a->blobs, it[i].blob_sha256, RVS_MAX_CAPTURE_BYTES,
						 it[i].path, sizeof it[i].path, &is_temp[i]))) {
				rvs_log("error", "blob fetch failed", "blob=%s err=%d",
					it[i].blob_sha256, rc);
				if (rvs_store_transient(rc)) {
					/* The blob store is away: not the upload's fault. */
					snprintf(it[i].reason, sizeof it[i].reason,
						 "blob store unavailable: %s", strerror(-rc));
					it[i].rc = -EAGAIN;
					it[i].seconds = 0;
					continue;
				}
				/* A path that does not exist: the decoder
				 * quarantines it as "blob unreadable". */
				snprintf(it[i].path, sizeof it[i].path, "%s/unreadable-%s",
					 a->blobs->tmp_dir, it[i].blob_sha256);
			} else if (rc) {
				it[i].path[0] = '\0'; /* summary-only */
			}
		}
		decode_runs(a->decoder, it, n);
		for (int i = 0; i < n; i++)
			if (is_temp[i])
				unlink(it[i].path);
		for (int i = 0; i < n; i++) {
			if (it[i].rc == -EAGAIN) {
				dj->deferred = 1;
				continue;
			}
			rvs_hist_observe(&dj->hist, it[i].seconds);
			if (it[i].rc) {
				if (!it[i].reason[0])
					snprintf(it[i].reason, sizeof it[i].reason,
						 "decode failed");
				dj->failures[rvs_decode_fail_class(it[i].reason)]++;
			}
		}
		if (finish(a, it, n)) {
			dj->deferred = 1;
			break;
		}
		if (dj->deferred)
			break;
	}
	if (n < 0 && rvs_store_transient(n))
		dj->deferred = 1;
	if (a->ops->queue_depth(a->store, &dj->depth))
		dj->depth = 0;
}

static void retry_tick(uv_timer_t *t)
{
	rvs_lanes_pump(t->data);
}

static void decode_done_cb(uv_work_t *w, int status)
{
	struct decode_job *dj = w->data;
	struct rvs_lanes *a = dj->a;
	a->m->decode_queue_depth = dj->depth;
	a->m->decode_runs++;
	a->m->decode_empty_runs += (uint64_t)dj->empty;
	rvs_hist_merge(&a->m->decode_seconds, &dj->hist);
	for (int i = 0; i < RVS_DECODE_FAIL_COUNT; i++)
		a->m->decode_failures[i] += dj->failures[i];
	a->decoding[dj->part] = 0;
	if (dj->deferred && a->retry_on && !a->work->stopping) {
		if (!uv_is_active((uv_handle_t *)&a->retry_timer)) {
			uv_timer_start(&a->retry_timer, retry_tick, a->retry_ms, 0);
			a->retry_ms =
				a->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : a->retry_ms * 2;
		}
	} else if (!dj->deferred && !dj->empty) {
		a->retry_ms = RETRY_MIN_MS;
	}
	if (a->decode_again[dj->part] && !a->work->stopping) {
		a->decode_again[dj->part] = 0;
		decode_start(a, dj->part);
	}
	if (!dj->empty && a->indexed && !a->work->stopping)
		a->indexed(a->indexed_arg);
	free(dj);
	rvs_work_done(a->work);
}

void rvs_lanes_on_indexed(struct rvs_lanes *l, void (*cb)(void *arg), void *arg)
{
	l->indexed = cb;
	l->indexed_arg = arg;
}

static void decode_start(struct rvs_lanes *a, unsigned part)
{
	struct decode_job *dj;
	if (a->decoding[part]) {
		a->decode_again[part] = 1;
		return;
	}
	dj = calloc(1, sizeof *dj);
	if (!dj)
		return;
	dj->a = a;
	dj->part = part;
	a->decoding[part] = 1;
	rvs_work_queue(a->work, a->loop, &dj->w, dj, decode_work, decode_done_cb);
}

/* Decodes run on cfg->decode_jobs work threads at once, each draining its
 * partition of the queue: a 32 MiB capture takes a core for a few hundred
 * ms, so one decoder would leave the second core idle. */
void rvs_lanes_pump(struct rvs_lanes *a)
{
	if (!a->decoder || a->work->stopping)
		return;
	for (unsigned p = 0; p < decode_jobs(a); p++)
		decode_start(a, p);
}

/* ---- decode wake-ups (PostgreSQL: LISTEN on the loop, the poll behind) ----
 *
 * The listener's socket is watched by a uv_poll on the loop rather than by
 * a thread blocked in select(): reading a notification never blocks (the
 * store reads only what arrived), it costs no thread nor lock, and the
 * wake-up lands on the loop, where decode_pump must run anyway. */

static void wake_closed(uv_handle_t *h)
{
	struct rvs_lanes *a = h->data;
	a->ops->wake_close(a->wake);
	a->wake = NULL;
}

static void wake_stop(struct rvs_lanes *a)
{
	if (!a->wake_on)
		return;
	a->wake_on = 0;
	uv_close((uv_handle_t *)&a->wake_poll, wake_closed);
}

static void wake_cb(uv_poll_t *h, int status, int events)
{
	struct rvs_lanes *a = h->data;
	int n = status < 0 ? -EIO : a->ops->wake_drain(a->wake);

	if (n > 0) {
		a->m->decode_wakeups++;
		rvs_lanes_pump(a);
	} else if (n < 0) {
		rvs_log("warn", "decode listener lost: polling the queue", "every_s=%u",
			(unsigned)a->cfg->decode_poll_s);
		wake_stop(a);
	}
}

/* Watches a->wake's socket; 0 or a libuv error (a->wake left as is). */
static int wake_watch(struct rvs_lanes *a)
{
	int rc;

	assert(a->wake && !a->wake_on);
	if ((rc = uv_poll_init(a->loop, &a->wake_poll, a->ops->wake_fd(a->wake))))
		return rc;
	a->wake_on = 1;
	a->wake_poll.data = a;
	return uv_poll_start(&a->wake_poll, UV_READABLE, wake_cb);
}

static void wake_reopen_work(uv_work_t *w)
{
	struct rvs_lanes *a = w->data;
	if (a->ops->wake_open(a->store, &a->wake_new))
		a->wake_new = NULL;
}

static void wake_reopen_done(uv_work_t *w, int status)
{
	struct rvs_lanes *a = w->data;

	a->wake_busy = 0;
	if (a->wake_new && !a->work->stopping && !a->wake) {
		a->wake = a->wake_new;
		if (wake_watch(a) == 0) {
			rvs_log("info", "decode listener back", NULL);
			rvs_lanes_pump(a); /* what was queued while it was away */
		}
	} else {
		a->ops->wake_close(a->wake_new);
	}
	a->wake_new = NULL;
	rvs_work_done(a->work);
}

/* The poll: the queue looked at, and (PostgreSQL) a lost listener opened
 * again (its previous handle closed: a->wake NULL). */
static void decode_poll_tick(uv_timer_t *t)
{
	struct rvs_lanes *a = t->data;

	rvs_lanes_pump(a);
	if (a->wake || a->wake_busy || a->work->stopping || !a->ops->wake_open)
		return;
	a->wake_busy = 1;
	rvs_work_queue(a->work, a->loop, &a->wake_work, a, wake_reopen_work, wake_reopen_done);
}

static void wake_start(struct rvs_lanes *a)
{
	uint64_t ms = (uint64_t)a->cfg->decode_poll_s * 1000;

	assert(!a->wake_on && !a->decode_timer_on);
	if (a->wake)
		wake_watch(a);
	if (uv_timer_init(a->loop, &a->decode_timer) == 0) {
		a->decode_timer_on = 1;
		a->decode_timer.data = a;
		uv_timer_start(&a->decode_timer, decode_poll_tick, ms, ms);
	}
}

int rvs_lanes_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *m,
		  const struct rvs_store_ops *ops, const struct rvs_decoder *decoder,
		  struct rvs_blobs *blobs, struct rvs_work *work, struct rvs_lanes **out)
{
	struct rvs_lanes *l = calloc(1, sizeof *l);

	if (!l)
		return -ENOMEM;
	l->loop = loop;
	l->cfg = cfg;
	l->m = m;
	l->ops = ops;
	l->decoder = decoder;
	l->blobs = blobs;
	l->work = work;
	l->retry_ms = RETRY_MIN_MS;
	*out = l;
	return 0;
}

void rvs_lanes_open(struct rvs_lanes *a, struct rvs_store *store)
{
	a->store = store;
	if (a->ops->wake_open && a->ops->wake_open(a->store, &a->wake)) {
		rvs_log("warn", "no decode listener: polling the queue", "every_s=%u",
			(unsigned)a->cfg->decode_poll_s);
		a->wake = NULL;
	}
}

void rvs_lanes_start(struct rvs_lanes *a)
{
	if (uv_timer_init(a->loop, &a->retry_timer) == 0) {
		a->retry_on = 1;
		a->retry_timer.data = a;
	}
	rvs_lanes_pump(a);
	/* The poll on sqlite too: it finds what another process queued (the
	 * operator's requeue). */
	wake_start(a);
}

void rvs_lanes_stop(struct rvs_lanes *a)
{
	wake_stop(a);
	if (a->retry_on) {
		a->retry_on = 0;
		uv_close((uv_handle_t *)&a->retry_timer, NULL);
	}
	if (a->decode_timer_on) {
		a->decode_timer_on = 0;
		uv_close((uv_handle_t *)&a->decode_timer, NULL);
	}
}

void rvs_lanes_free(struct rvs_lanes *a)
{
	if (!a)
		return;
	/* Opened but never watched (the start failed after rvs_lanes_open). */
	if (a->wake && a->ops->wake_close)
		a->ops->wake_close(a->wake);
	free(a);
}
