/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alerts.c — GET /api/v1/alerts (alerts.h): the webhook deliveries
 * (model/webhook.h), newest first, read through the store's
 * webhook_list on the shared store; and the alert rules on trends
 * (model/alerts.h): listed by any reader, added and deleted by an admin,
 * each change audited after it succeeded.
 */
#include "api/alerts.h"
#include "model/alerts.h"
#include "model/users.h"
#include "model/webhook.h"
#include "store/store.h"
#include "http/reply.h"
#include "http/route.h"
#include "base/config.h"
#include "base/text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define DELIVERY_MAX 200 /* rows GET /api/v1/alerts lists */

static int delivery_json(void *arg, const struct rvs_webhook_row *r)
{
	json_t *o = json_pack(
		"{s:I,s:s,s:s,s:s,s:I,s:o,s:o,s:I,s:I,s:o,s:s}", "id", (json_int_t)r->id, "url",
		r->url, "event", r->event, "state", r->state, "attempts", (json_int_t)r->attempts,
		"last_status", r->last_status ? json_integer(r->last_status) : json_null(),
		"last_error", r->last_error ? json_string(r->last_error) : json_null(),
		"next_try_ms", (json_int_t)r->next_try_ms, "created_at", (json_int_t)r->created_at,
		"delivered_at", r->delivered_at >= 0 ? json_integer(r->delivered_at) : json_null(),
		"body", r->body);
	return o && json_array_append_new(arg, o) == 0 ? 0 : -ENOMEM;
}

void rvs_webhook_api_list(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *db;
	json_t *rows = json_array();
	int rc;

	if (!rows || rvs_store_regress_open(c->cfg->database, &ops, &st, &db)) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	rc = ops->webhook_list(db, DELIVERY_MAX, delivery_json, rows);
	rvs_store_regress_close(ops, st, db);
	if (rc) {
		json_decref(rows);
		return rvs_query_set_error(c->q, rc == -ENOMEM ? 503 : 500, "database error");
	}
	rvs_query_reply(c->q, 200, json_pack("{s:o}", "deliveries", rows));
}

void rvs_alert_rules_api_list(struct rvs_call *c)
{
	json_t *rules;
	int rc = rvs_alert_rules_json(c->cfg->database, &rules);

	if (rc)
		return rvs_query_set_error(c->q, rc == -ENOMEM || rc == -EIO ? 503 : 500,
					   "database error");
	rvs_query_reply(c->q, 200, json_pack("{s:o}", "rules", rules));
}

/* The store's rule connection and the shared store for the audit row. */
static int open_rules(struct rvs_call *c, const struct rvs_store_ops **ops, struct rvs_store **st,
		      struct rvs_regress_db **db)
{
	if (rvs_store_regress_open(c->cfg->database, ops, st, db)) {
		rvs_query_set_error(c->q, 503, "database unavailable");
		return -1;
	}
	return 0;
}

void rvs_alert_rules_api_create(struct rvs_call *c)
{
	struct rvs_alert_spec s;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *db;
	json_error_t je;
	json_t *body = c->body_len <= 65536 ? json_loadb((const char *)c->body, c->body_len, 0, &je)
					    : NULL;
	json_t *spec;
	char err[200] = "body: a JSON rule object of at most 64 KiB", idtxt[24], *text;
	int64_t id = 0;
	int rc;

	if (!body || rvs_alert_spec_parse(body, RVS_ALERT_NEW, &s, err, sizeof err)) {
		json_decref(body);
		return rvs_query_set_error(c->q, 400, err);
	}
	json_decref(body);
	if (!(spec = rvs_alert_spec_json(&s)) ||
	    !(text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS))) {
		json_decref(spec);
		return rvs_query_set_error(c->q, 503, "out of memory");
	}
	json_decref(spec);
	if (open_rules(c, &ops, &st, &db)) {
		free(text);
		return;
	}
	rc = ops->alert_rule_add(db,
				 &(struct rvs_alert_rule_row){.name = s.name,
							      .spec = text,
							      .created_by = c->user ? c->user : "",
							      .created_at = (int64_t)time(NULL)},
				 RVS_ALERT_RULES_MAX, &id);
	if (!rc) {
		snprintf(idtxt, sizeof idtxt, "%" PRId64, id);
		rvs_audit(ops, st, c->user, "alert_rule.create", idtxt, text);
	}
	rvs_store_regress_close(ops, st, db);
	free(text);
	if (rc == -ENOSPC)
		return rvs_query_set_error(c->q, 409, "too many alert rules (at most 200)");
	if (rc)
		return rvs_query_set_error(c->q, 503, "database error");
	rvs_query_reply(c->q, 200, json_pack("{s:I}", "id", (json_int_t)id));
}

void rvs_alert_rules_api_delete(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *db;
	char idtxt[24];
	int64_t id;
	int rc;

	if (!c->arg_len || c->arg_len >= sizeof idtxt)
		return rvs_query_set_error(c->q, 404, "no such alert rule");
	memcpy(idtxt, c->arg, c->arg_len);
	idtxt[c->arg_len] = '\0';
	if (rvs_parse_i64(idtxt, &id) || id <= 0)
		return rvs_query_set_error(c->q, 404, "no such alert rule");
	if (open_rules(c, &ops, &st, &db))
		return;
	rc = ops->alert_rule_delete(db, id);
	if (!rc)
		rvs_audit(ops, st, c->user, "alert_rule.delete", idtxt, "");
	rvs_store_regress_close(ops, st, db);
	if (rc == -ENOENT)
		return rvs_query_set_error(c->q, 404, "no such alert rule");
	if (rc)
		return rvs_query_set_error(c->q, 503, "database error");
	rvs_query_reply(c->q, 200, json_pack("{s:I,s:b}", "id", (json_int_t)id, "deleted", 1));
}
