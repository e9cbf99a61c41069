/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alerts.h — alert rules on trends (alerts.c): "p95 self of X in app A
 * above N ms for 2 days", "captures of app B up 50 % week over week".
 * A rule is a metric, a condition and a threshold; each evaluation at a
 * time `now` reads the trend's rows through the store (trend_read, capped
 * at RVS_ALERT_MAX_ROWS traces; alert_counts, one row per day) and the
 * rule's state moves ok → firing or firing → ok only on a decision with
 * data, each move queuing one signed webhook delivery (webhook.h) per
 * URL in the same transaction — so an episode alerts once, and its end
 * once, however many passes (or nodes) evaluate it.
 *
 * Days are UTC capture days (as trend.h's); the evaluation day is now's.
 *  - above / below (K = days): the metric of each of the K days ending
 *    with the evaluation day; firing when every one is over (under) the
 *    threshold, ok when any day with data is not; when a day has no
 *    traces and none contradicts, there is no decision (the state stays).
 *  - up / down (W = days, 7 for week over week): the metric over the W
 *    days ending with the evaluation day against the W days before; the
 *    value is the change in per cent, (current / previous − 1) × 100;
 *    firing when it is ≥ threshold (up) or ≤ −threshold (down); no
 *    decision when either window has no traces (time metrics) or the
 *    previous one has no captures (captures).
 * Metrics: self_p50, self_p95, incl_p50, incl_p95 of a method (ms, nearest
 * rank, trend.h's rvs_trend_pct; a window's figure pools its traces) and
 * captures (per day for above / below; the window's total for up / down),
 * and jank_rate of an app (late frames / frames in per cent, from the
 * counts devices send for every app, traced or not — store.h's
 * jank_app_days; a day or window without frames has no figure).
 * A weighted rule (the default for new rules of every metric but
 * jank_rate, which counts frames, not captures) decides on the figures
 * weighted by each capture's selection weight (1/p of the campaign that
 * took it): the time metrics are trend.h's rvs_trend_wpct of the same
 * traces, captures the sum of their weights (the captures the fleet is
 * estimated to have had).  The unweighted figure is computed beside it
 * either way; a rule stored before rules had the field reads as
 * unweighted.
 *
 * Work thread only (the store blocks).  No HTTP.
 */
#ifndef RVS_ALERTS_H
#define RVS_ALERTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store/store.h"

#define RVS_ALERT_RULES_MAX 200	  /* rules a server holds */
#define RVS_ALERT_MAX_ROWS  20000 /* traces one evaluation reads at most */
#define RVS_ALERT_DAYS_MAX  31	  /* K or W at most */
#define RVS_ALERT_FIELD	    320	  /* a name, method, app or model, with its NUL */

enum rvs_alert_metric {
	RVS_ALERT_SELF_P50,
	RVS_ALERT_SELF_P95,
	RVS_ALERT_INCL_P50,
	RVS_ALERT_INCL_P95,
	RVS_ALERT_CAPTURES,
	RVS_ALERT_JANK_RATE,
};
enum rvs_alert_cond { RVS_ALERT_ABOVE, RVS_ALERT_BELOW, RVS_ALERT_UP, RVS_ALERT_DOWN };

/* A validated rule ("" in method, app, model: not set). */
struct rvs_alert_spec {
	char name[RVS_ALERT_FIELD];
	enum rvs_alert_metric metric;
	enum rvs_alert_cond cond;
	char method[RVS_ALERT_FIELD], app[RVS_ALERT_FIELD], model[RVS_ALERT_FIELD];
	int has_kind;
	int64_t kind;
	double threshold; /* ms, captures per day, per cent of frames late
			   * (jank_rate), or per cent change (up / down) */
	unsigned days;	  /* K (above / below) or W (up / down), 1..RVS_ALERT_DAYS_MAX */
	int weighted;	  /* decide on the selection-weighted figures (never jank_rate) */
};

/* Where a rule's JSON comes from: a new rule defaults to weighted (but
 * jank_rate); a stored one without the field predates it and reads as
 * unweighted, as it was evaluated when stored. */
enum rvs_alert_origin { RVS_ALERT_NEW, RVS_ALERT_STORED };

/* One evaluation. */
struct rvs_alert_eval {
	int decided; /* 0: not enough data; the state stays */
	int firing;  /* when decided */
	int has_value;
	double value;		  /* the evaluation day's figure, or the change (per cent) */
	double current, previous; /* up / down: the two windows' figures */
	/* The same figures unweighted (equal to the above for an unweighted
	 * rule); has_value_unweighted 0 when they give none. */
	int has_value_unweighted;
	double value_unweighted, current_unweighted, previous_unweighted;
	/* The traces read whose weight is an estimate (a quota's censoring
	 * selection) or unknown (an upload without a selection, counted as 1);
	 * a weighted value is exact only when both are 0. */
	int64_t n_estimated, n_unknown;
	int64_t day; /* the evaluation day (unix s / 86400) */
	int cut;     /* the trend read was capped: older traces left out */
};

/* The rule JSON o as a spec: name (required), metric, condition,
 * threshold, method (required for the time metrics), app, model, kind,
 * days (default 2 for above / below, 7 for up / down), weighted (true or
 * false; refused true for jank_rate; when absent: from RVS_ALERT_NEW true
 * but for jank_rate, from RVS_ALERT_STORED false).  0, or -EINVAL with the
 * reason in err (cap bytes). */
int rvs_alert_spec_parse(json_t *o, enum rvs_alert_origin from, struct rvs_alert_spec *s, char *err,
			 size_t cap);

/* The spec as JSON, every field named (new reference, NULL on -ENOMEM). */
json_t *rvs_alert_spec_json(const struct rvs_alert_spec *s);

/* Evaluates s at now (unix s) on the store (st for trend_read, d for
 * alert_counts).  0 or the store's -errno. */
int rvs_alert_evaluate(const struct rvs_store_ops *ops, struct rvs_store *st,
		       struct rvs_regress_db *d, const struct rvs_alert_spec *s, int64_t now,
		       struct rvs_alert_eval *e);

/* What one pass did. */
struct rvs_alert_pass_stats {
	unsigned rules, decided, fired, resolved, errors;
};

/* Evaluates every rule of database at now and records each outcome (the
 * store's alert_rule_update): a move queues its alert to each of the
 * nurls urls (event "alert.firing" or "alert.resolved"; the body names
 * the rule, value, whether it is weighted, the unweighted value beside
 * it and whether the value is exact, threshold, unit, day and a link
 * under base_url).
 * *out may be NULL.  0 or the store's -errno (a rule that fails is
 * counted and the others still run). */
int rvs_alerts_pass(const char *database, int64_t now, const char *base_url,
		    const char *const *urls, size_t nurls, struct rvs_alert_pass_stats *out);

/* Every rule of database with its state and last delivery as a JSON array
 * (new reference in *out).  0, -ENOMEM or the store's -errno. */
int rvs_alert_rules_json(const char *database, json_t **out);

#endif
