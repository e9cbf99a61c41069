/* SPDX-License-Identifier: Apache-2.0 */
/*
 * regress.c — the JSON API's "what got slower?" endpoints (regress.h):
 * GET /api/v1/regressions, a comparison computed by the model
 * (model/regress.h's rvs_regress_run), and GET /api/v1/regressions/runs,
 * the stored automatic comparisons.
 *
 * Invariants: a request names exactly one comparison (a and b, model and
 * maybe version, or week=1), else 400; every read goes through the store's
 * regress_* operations on the shared store, which bind every value.
 */
#include "api/regress.h"
#include "model/regress.h"
#include "store/store.h"
#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"
#include "base/config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define LIMIT_MAX 500
#define LIMIT_DEF 50

void rvs_regress_api(struct rvs_call *c)
{
	char app[256], a[128], b[128], model[128], version[128], week[8];
	int ha, hb, hm, hv, hw;
	int64_t limit;
	struct rvs_regress_req q = {.app = app, .limit = LIMIT_DEF};
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	json_t *doc = NULL;
	int rc;

	if (rvs_query_param(c->query, "app", app, sizeof app) != 1 || !app[0])
		return rvs_query_set_error(c->q, 400, "app is required");
	ha = rvs_query_param(c->query, "a", a, sizeof a);
	hb = rvs_query_param(c->query, "b", b, sizeof b);
	hm = rvs_query_param(c->query, "model", model, sizeof model);
	hv = rvs_query_param(c->query, "version", version, sizeof version);
	hw = rvs_query_param(c->query, "week", week, sizeof week);
	if (ha < 0 || hb < 0 || hm < 0 || hv < 0 || hw < 0)
		return rvs_query_set_error(c->q, 400,
					   ha < 0   ? "bad value for parameter: a"
					   : hb < 0 ? "bad value for parameter: b"
					   : hm < 0 ? "bad value for parameter: model"
					   : hv < 0 ? "bad value for parameter: version"
						    : "bad value for parameter: week");
	/* An empty field (the web form sends every field) is an absent one. */
	ha = ha == 1 && a[0];
	hb = hb == 1 && b[0];
	hm = hm == 1 && model[0];
	hv = hv == 1 && version[0];
	hw = hw == 1 && week[0];
	if (rvs_param_limit(c->query, LIMIT_DEF, LIMIT_MAX, &limit))
		return rvs_query_set_error(c->q, 400, "bad limit");
	q.limit = (size_t)limit;
	if (ha == 1 && hb == 1 && hm != 1 && hw != 1 && hv != 1) {
		if (!strcmp(a, b))
			return rvs_query_set_error(c->q, 400, "a and b are the same version");
		q.mode = RVS_REGRESS_VERSIONS;
		q.a = a;
		q.b = b;
	} else if (hm == 1 && ha != 1 && hb != 1 && hw != 1) {
		q.mode = RVS_REGRESS_MODEL;
		q.model = model;
		q.version = hv == 1 ? version : NULL;
	} else if (hw == 1 && !strcmp(week, "1") && ha != 1 && hb != 1 && hm != 1 && hv != 1) {
		q.mode = RVS_REGRESS_WEEK;
		q.now = (int64_t)time(NULL);
	} else {
		return rvs_query_set_error(c->q, 400,
					   "give a and b (versions), or model (and version),"
					   " or week=1");
	}
	if (rvs_store_regress_open(c->cfg->database, &ops, &st, &d))
		return rvs_query_set_error(c->q, 503, "database unavailable");
	rc = rvs_regress_run(ops, d, &q, &doc);
	rvs_store_regress_close(ops, st, d);
	if (rc == -ENOENT && doc) {
		json_object_set_new(doc, "error", json_string("a side has no decoded trace"));
		return rvs_query_reply(c->q, 404, doc);
	}
	if (rc) {
		json_decref(doc);
		return rvs_query_set_error(c->q, rc == -ENOMEM ? 503 : 500, "comparison failed");
	}
	rvs_query_reply(c->q, 200, doc);
}

static int run_json(void *arg, const struct rvs_regress_run_row *r)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:I}", "app_id", r->app,
			      "version_a", r->version_a, "version_b", r->version_b, "traces_a",
			      (json_int_t)r->traces_a, "traces_b", (json_int_t)r->traces_b,
			      "computed_at", (json_int_t)r->computed_at, "top_method",
			      r->top_method ? json_string(r->top_method) : json_null(), "top_ratio",
			      r->top_method && r->has_ratio ? json_real(r->top_ratio) : json_null(),
			      "top_delta", r->top_method ? json_real(r->top_delta) : json_null(),
			      "top_q", r->top_method ? json_real(r->top_q) : json_null(), "alerted",
			      (json_int_t)r->alerted);
	return o && json_array_append_new(arg, o) == 0 ? 0 : -ENOMEM;
}

void rvs_regress_api_runs(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	json_t *rows = json_array();
	int rc;

	if (!rows || rvs_store_regress_open(c->cfg->database, &ops, &st, &d)) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	rc = ops->regress_runs_list(d, 500, run_json, rows);
	rvs_store_regress_close(ops, st, d);
	if (rc) {
		json_decref(rows);
		return rvs_query_set_error(c->q, rc == -ENOMEM ? 503 : 500, "database error");
	}
	rvs_query_reply(c->q, 200, json_pack("{s:o}", "runs", rows));
}
