/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timers.c — the periodic passes (timers.h).
 *
 * Invariants: one pass of each kind at a time (a tick while one runs does
 * nothing); each pass counts in the server's work (work.h) from its
 * queueing to its after-work; no pass is queued once stopping.
 */
#include "pipeline/timers.h"
#include "model/alerts.h"
#include "model/regress.h"
#include "model/retention.h"
#include "model/webhook.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rvs_timers {
	uv_loop_t *loop;
	const struct rvs_config *cfg;
	struct rvs_metrics *m;
	struct rvs_blobs *blobs;
	struct rvs_work *work;
	/* Retention (cfg->retention_days > 0): a timer queues one pass at a time. */
	uv_timer_t retention_timer;
	int retention_on, retention_busy;
	uv_work_t retention_work;
	struct rvs_retention_stats retention_stats;
	/* Regression alerts (regress.h, webhook.h): a timer queues one pass
	 * (the automatic comparison, then the due webhook deliveries). */
	uv_timer_t regress_timer;
	int regress_on, regress_busy;
	uv_work_t regress_work;
	/* The alert rules after indexing (rvs_timers_indexed): one pass at a
	 * time, starts RVS_ALERTS_GAP_MS apart at least (alerts_last: loop
	 * time of the last); an indexing meanwhile sets alerts_again, and the
	 * one-shot alerts_timer runs the pass when the gap is over. */
	uv_timer_t alerts_timer;
	int alerts_on, alerts_busy, alerts_ran, alerts_again;
	uint64_t alerts_last;
	uv_work_t alerts_work;
};

/* The automatic comparison (when ra is set), the alert rules, then the
 * due deliveries to c->webhook_urls (at most 16; none: nothing is sent). */
static void alert_passes(const struct rvs_config *c, const struct rvs_regress_auto *ra)
{
	struct rvs_webhook_cfg wc = {.secret_file = c->webhook_secret_file,
				     .max_attempts = c->webhook_max_attempts,
				     .backoff_ms = c->webhook_backoff_ms,
				     .timeout_ms = c->webhook_timeout_ms};
	char urls[sizeof c->webhook_urls], *save = NULL, *u;
	const char *list[16];
	size_t n = 0;

	snprintf(urls, sizeof urls, "%s", c->webhook_urls);
	for (u = strtok_r(urls, " \t,", &save); u && n < 16; u = strtok_r(NULL, " \t,", &save))
		list[n++] = u;
	if (ra)
		rvs_regress_auto_pass(c->database, ra, list, n, NULL);
	rvs_alerts_pass(c->database, (int64_t)time(NULL), c->public_url, list, n, NULL);
	if (n)
		rvs_webhook_deliver_due(c->database, &wc, NULL);
}

/* ---- retention (timer on the loop, the pass on the work queue) ------------ */

static void retention_work(uv_work_t *w)
{
	struct rvs_timers *a = w->data;
	int64_t cutoff = (int64_t)time(NULL) - (int64_t)(a->cfg->retention_days * 86400.0);
	rvs_retention_run(a->cfg->database, a->blobs, cutoff, &a->retention_stats);
}

static void retention_done(uv_work_t *w, int status)
{
	struct rvs_timers *a = w->data;
	a->m->retention_runs++;
	a->m->retention_traces += a->retention_stats.traces;
	a->m->retention_blobs += a->retention_stats.blobs;
	a->retention_busy = 0;
	rvs_work_done(a->work);
}

static void retention_tick(uv_timer_t *t)
{
	struct rvs_timers *a = t->data;
	if (a->retention_busy || a->work->stopping)
		return;
	a->retention_busy = 1;
	rvs_work_queue(a->work, a->loop, &a->retention_work, a, retention_work, retention_done);
}

/* ---- regression alerts (timer on the loop, the pass on the work queue) ---- */

static void regress_work(uv_work_t *w)
{
	struct rvs_timers *a = w->data;
	const struct rvs_config *c = a->cfg;
	struct rvs_regress_auto rc = {.min_traces = c->regress_min_traces,
				      .margin = c->regress_margin,
				      .alert_ratio = c->regress_alert_ratio,
				      .alert_q = c->regress_alert_q,
				      .base_url = c->public_url};

	alert_passes(c, &rc);
}

static void regress_done(uv_work_t *w, int status)
{
	struct rvs_timers *a = w->data;
	a->regress_busy = 0;
	rvs_work_done(a->work);
}

static void regress_tick(uv_timer_t *t)
{
	struct rvs_timers *a = t->data;
	if (a->regress_busy || a->work->stopping)
		return;
	a->regress_busy = 1;
	rvs_work_queue(a->work, a->loop, &a->regress_work, a, regress_work, regress_done);
}

/* ---- alert rules after indexing (the pass on the work queue) ------------- */

static void alerts_work(uv_work_t *w)
{
	struct rvs_timers *a = w->data;
	alert_passes(a->cfg, NULL);
}

static void alerts_schedule(struct rvs_timers *a);

static void alerts_done(uv_work_t *w, int status)
{
	struct rvs_timers *a = w->data;
	a->alerts_busy = 0;
	if (a->alerts_again)
		alerts_schedule(a);
	rvs_work_done(a->work);
}

static void alerts_tick(uv_timer_t *t)
{
	alerts_schedule(t->data);
}

/* Runs the pass now, or when the gap since the last is over, or after the
 * one running (alerts_again). */
static void alerts_schedule(struct rvs_timers *a)
{
	uint64_t now = uv_now(a->loop);

	if (!a->alerts_on || a->work->stopping)
		return;
	a->alerts_again = 1;
	if (a->alerts_busy || uv_is_active((uv_handle_t *)&a->alerts_timer))
		return;
	if (a->alerts_ran && now - a->alerts_last < RVS_ALERTS_GAP_MS) {
		uv_timer_start(&a->alerts_timer, alerts_tick,
			       RVS_ALERTS_GAP_MS - (now - a->alerts_last), 0);
		return;
	}
	a->alerts_again = 0;
	a->alerts_busy = a->alerts_ran = 1;
	a->alerts_last = now;
	rvs_work_queue(a->work, a->loop, &a->alerts_work, a, alerts_work, alerts_done);
}

void rvs_timers_indexed(void *arg)
{
	alerts_schedule(arg);
}

int rvs_timers_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *m,
		   struct rvs_blobs *blobs, struct rvs_work *work, struct rvs_timers **out)
{
	struct rvs_timers *t = calloc(1, sizeof *t);

	if (!t)
		return -ENOMEM;
	t->loop = loop;
	t->cfg = cfg;
	t->m = m;
	t->blobs = blobs;
	t->work = work;
	*out = t;
	return 0;
}

void rvs_timers_start(struct rvs_timers *a)
{
	if (a->cfg->retention_days > 0 && uv_timer_init(a->loop, &a->retention_timer) == 0) {
		uint64_t ms = (uint64_t)a->cfg->retention_interval_s * 1000;
		a->retention_on = 1;
		a->retention_timer.data = a;
		uv_timer_start(&a->retention_timer, retention_tick, ms, ms);
	}
	if (uv_timer_init(a->loop, &a->alerts_timer) == 0) {
		a->alerts_on = 1;
		a->alerts_timer.data = a;
	}
	if (uv_timer_init(a->loop, &a->regress_timer) == 0) {
		a->regress_on = 1;
		a->regress_timer.data = a;
		uv_timer_start(&a->regress_timer, regress_tick, a->cfg->regress_interval_ms,
			       a->cfg->regress_interval_ms);
	}
}

void rvs_timers_stop(struct rvs_timers *a)
{
	if (a->retention_on) {
		a->retention_on = 0;
		uv_close((uv_handle_t *)&a->retention_timer, NULL);
	}
	if (a->regress_on) {
		a->regress_on = 0;
		uv_close((uv_handle_t *)&a->regress_timer, NULL);
	}
	if (a->alerts_on) {
		a->alerts_on = 0;
		uv_close((uv_handle_t *)&a->alerts_timer, NULL);
	}
}

void rvs_timers_free(struct rvs_timers *t)
{
	free(t);
}
