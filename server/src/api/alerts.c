/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alerts.c — GET /api/v1/alerts (alerts.h): the webhook deliveries
 * (model/webhook.h), newest first, read through the store's
 * webhook_list on the shared store.
 */
#include "api/alerts.h"
#include "model/webhook.h"
#include "store/store.h"
#include "http/reply.h"
#include "http/route.h"
#include "base/config.h"

#include <errno.h>

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
