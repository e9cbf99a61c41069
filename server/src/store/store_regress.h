/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_regress.h — the records of the store's regression and webhook
 * delivery operations (store.h's "regressions and webhook deliveries"
 * block): what regress.c and webhook.c read and write through the store.
 * Plain data; strings are borrowed (valid during the call or callback).
 */
#ifndef RVS_STORE_REGRESS_H
#define RVS_STORE_REGRESS_H

#include <stdint.h>

/* A connection of its own for regress.c and webhook.c (one per pass or
 * request), opened on a store by regress_open. */
struct rvs_regress_db;

/* Which two sets of an app's decoded traces (duration_ns not NULL) are
 * compared: VERSIONS: side A app_version = a, B = b; MODEL: B the traces
 * of model, A the others (version NULL or one version narrows both); WEEK:
 * B received in [now - 7 d, now), A the 7 days before. */
enum rvs_cmp_mode { RVS_CMP_VERSIONS, RVS_CMP_MODEL, RVS_CMP_WEEK };
struct rvs_cmp_sides {
	const char *app;
	enum rvs_cmp_mode mode;
	const char *a, *b, *model, *version;
	int64_t now; /* unix s */
};

/* One row of regress_sides: part RVS_CMP_TRACE gives a trace of either side
 * (trace_id, side 0 = A / 1 = B); RVS_CMP_METHOD one trace_methods row of
 * those traces (key the method, self_ns, incl_ns); RVS_CMP_CHAIN one 'top'
 * trace_chains row (key the signature, chain its text; a NULL time is 0). */
enum { RVS_CMP_TRACE, RVS_CMP_METHOD, RVS_CMP_CHAIN };
struct rvs_cmp_row {
	int part;
	const char *trace_id;
	int side;
	const char *key, *chain;
	int64_t self_ns, incl_ns;
};

/* One stored automatic comparison (regress_runs). */
struct rvs_regress_run_row {
	const char *app, *version_a, *version_b;
	int64_t traces_a, traces_b, computed_at;
	const char *top_method; /* NULL: no method row (top_* are NULL then) */
	double top_ratio;	/* valid when has_ratio (a median of 0 in A: NULL) */
	int has_ratio;
	double top_delta, top_q;
	int alerted;	    /* 0/1 */
	const char *result; /* the comparison's JSON; NULL in regress_runs_list's rows */
};

/* A webhook delivery to queue (webhook_enqueue, regress_run_put). */
struct rvs_webhook_new {
	const char *url, *event, *body;
	int64_t now_ms; /* due then; created_at is its second */
};

/* One webhook_deliveries row. */
struct rvs_webhook_row {
	int64_t id;
	const char *url, *event, *body;
	const char *state;	/* "pending", "delivered" or "failed" */
	uint32_t attempts;	/* POSTs made */
	int64_t last_status;	/* HTTP status of the last attempt; 0: NULL */
	const char *last_error; /* NULL: NULL */
	int64_t next_try_ms, created_at;
	int64_t delivered_at; /* unix s; -1: NULL */
};

/* One alert rule (alert_rules; model/alerts.h): its spec is the JSON text
 * the model validated; the rest is the state its evaluations keep. */
struct rvs_alert_rule_row {
	int64_t id;
	const char *name, *spec, *created_by;
	int64_t created_at;
	const char *state; /* "ok" or "firing" */
	int64_t since;	   /* unix s the state began; -1: never evaluated */
	double value;	   /* the last evaluation's value, when has_value */
	int has_value;
	int64_t evaluated_at; /* unix s; -1: never */
	/* alert_rules_list only: the rule's last delivery (webhook_deliveries),
	 * delivery_id -1 when none. */
	int64_t delivery_id;
	const char *delivery_state; /* NULL when none */
	int64_t delivery_status;    /* last HTTP status; 0: none */
	int64_t delivered_at;	    /* unix s; -1: not (yet) */
};

#endif
