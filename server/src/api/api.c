/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.c — the server's request side made, started and stopped (api.h): the
 * enrolment secret, the blob store and the JSON API's token read at
 * creation; the store opened on the work queue at start, then the decode
 * lanes (pipeline/lanes.h) and the periodic passes (pipeline/timers.h)
 * started; at stop, nothing new queued and the store closed on the work
 * queue once no job is in flight.  Requests go through the gate (gate.c).
 * Loop thread only.
 */
#include "api/api_int.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/platform_util.h>

static void maybe_stop(void *arg);

static void load_api_token(struct rvs_api *a)
{
	char path[600];
	uint8_t *tok = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/api.token", a->cfg->data_dir);
	if (rvs_read_file(path, 4096, &tok, &len)) {
		rvs_log("warn", "no API token, /api/v1 disabled", "path=\"%s\"", path);
		return;
	}
	while (len && (tok[len - 1] == '\n' || tok[len - 1] == '\r'))
		len--;
	if (len >= 16) {
		rvs_sha256(tok, len, a->api_hash);
		a->api_enabled = 1;
	}
	mbedtls_platform_zeroize(tok, len);
	free(tok);
}

int rvs_api_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *m,
		const struct rvs_store_ops *ops, const struct rvs_decoder *decoder,
		struct rvs_api **out)
{
	struct rvs_api *a = calloc(1, sizeof *a);
	int rc;

	if (!a)
		return -ENOMEM;
	a->loop = loop;
	a->cfg = cfg;
	a->m = m;
	a->ops = ops;
	a->policy_size = -1;
	pthread_mutex_init(&a->policy_mu, NULL);
	rc = rvs_read_file(cfg->enroll_secret_file, 4096, &a->secret, &a->secret_len);
	if (rc) {
		rvs_log("error", "cannot read enrolment secret", "path=\"%s\" err=%d",
			cfg->enroll_secret_file, rc);
		free(a);
		return rc;
	}
	while (a->secret_len &&
	       (a->secret[a->secret_len - 1] == '\n' || a->secret[a->secret_len - 1] == '\r'))
		a->secret_len--;
	if (a->secret_len < 16) {
		rvs_log("error", "enrolment secret shorter than 16 bytes", NULL);
		free(a->secret);
		free(a);
		return -EINVAL;
	}
	if ((rc = rvs_blobs_open_config(cfg, &a->blobs))) {
		rvs_log("error", "cannot open blob store", "err=%d", rc);
		free(a->secret);
		free(a);
		return rc;
	}
	rvs_log("info", "blob store", "backend=%s", a->blobs->ops->name);
	a->work.idle = maybe_stop;
	a->work.arg = a;
	if ((rc = rvs_lanes_new(loop, cfg, m, ops, decoder, a->blobs, &a->work, &a->lanes)) ||
	    (rc = rvs_timers_new(loop, cfg, m, a->blobs, &a->work, &a->timers))) {
		rvs_lanes_free(a->lanes);
		rvs_blobs_close(a->blobs);
		free(a->secret);
		free(a);
		return rc;
	}
	/* The alert rules are evaluated after indexing too (rate-limited). */
	rvs_lanes_on_indexed(a->lanes, rvs_timers_indexed, a->timers);
	load_api_token(a);
	*out = a;
	return 0;
}

static void start_work(uv_work_t *w)
{
	struct rvs_api *a = w->data;
	const struct rvs_store_ops *ops = NULL;
	uint64_t depth = 0;
	a->life_rc = rvs_store_acquire(a->cfg->database, &ops, &a->store);
	if (a->life_rc == 0 && ops != a->ops) {
		rvs_store_release(a->store);
		a->store = NULL;
		a->life_rc = -EINVAL;
	}
	if (a->life_rc == 0 && a->ops->queue_depth(a->store, &depth) == 0)
		a->start_depth = depth;
	if (a->life_rc == 0)
		rvs_lanes_open(a->lanes, a->store);
}

static void start_done(uv_work_t *w, int status)
{
	struct rvs_api *a = w->data;
	a->m->decode_queue_depth = a->start_depth;
	a->cb(a->cb_arg, a->life_rc);
	if (a->life_rc == 0) {
		rvs_lanes_start(a->lanes);
		rvs_timers_start(a->timers);
	}
}

void rvs_api_start(struct rvs_api *a, void (*ready)(void *, int), void *arg)
{
	a->cb = ready;
	a->cb_arg = arg;
	a->life.data = a;
	uv_queue_work(a->loop, &a->life, start_work, start_done);
}

static void stop_work(uv_work_t *w)
{
	struct rvs_api *a = w->data;
	rvs_store_release(a->store);
	a->store = NULL;
}

static void stop_done(uv_work_t *w, int status)
{
	struct rvs_api *a = w->data;
	a->stop_done(a->stop_arg);
}

/* The server's work's idle callback (work.h): once stopping and with no
 * job in flight, the store is closed on the work queue, once. */
static void maybe_stop(void *arg)
{
	struct rvs_api *a = arg;

	if (a->work.stopping != 1 || a->work.inflight)
		return;
	a->work.stopping = 2; /* the store closes once */
	a->life.data = a;
	uv_queue_work(a->loop, &a->life, stop_work, stop_done);
}

void rvs_api_stop(struct rvs_api *a, void (*done)(void *), void *arg)
{
	if (a->work.stopping)
		return;
	a->work.stopping = 1;
	rvs_timers_stop(a->timers);
	rvs_lanes_stop(a->lanes);
	a->stop_done = done;
	a->stop_arg = arg;
	maybe_stop(a);
}

void rvs_api_free(struct rvs_api *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->policy_mu);
	rvs_blobs_close(a->blobs);
	rvs_lanes_free(a->lanes);
	rvs_timers_free(a->timers);
	free(a->secret);
	free(a);
}
