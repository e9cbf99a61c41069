/* SPDX-License-Identifier: Apache-2.0 */
/*
 * campaign.c — the campaign endpoints of the JSON API (campaign.h) over the
 * campaign model (model/campaign.h): each change is validated, stored and
 * published there, then audited here as the caller's.
 */
#include "api/campaign.h"
#include "model/campaign.h"
#include "model/users.h"
#include "http/reply.h"
#include "http/route.h"
#include "store/store.h"
#include "base/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

static int status_of(int rc)
{
	switch (rc) {
	case 0:
		return 200;
	case -EINVAL:
		return 400;
	case -ENOENT:
		return 404;
	case -EEXIST:
	case -EAGAIN: /* a fleet-wide campaign not confirmed */
		return 409;
	default:
		return 500;
	}
}

/* The shared store for a campaign endpoint (release it after), or -1
 * after answering 503. */
static int open_rw(struct rvs_call *c, const struct rvs_store_ops **ops, struct rvs_store **st)
{
	if (rvs_store_acquire(c->cfg->database, ops, st)) {
		rvs_query_reply(c->q, 503, json_pack("{s:s}", "error", "database unavailable"));
		return -1;
	}
	return 0;
}

/* The body as a campaign object (caller json_decref), NULL if it is none. */
static json_t *spec_of(struct rvs_call *c)
{
	json_error_t je;
	return c->body_len <= RVS_CAMPAIGN_MAX_BODY
		       ? json_loadb((const char *)c->body, c->body_len, 0, &je)
		       : NULL;
}

/* Answers a change of campaign id: rc and err, or its new policy version. */
static void changed(struct rvs_call *c, int rc, const char *err, const char *id, uint64_t version)
{
	if (rc)
		return rvs_query_reply(
			c->q, status_of(rc),
			json_pack("{s:s}", "error", err[0] ? err : "storage or signing error"));
	rvs_query_reply(c->q, 200,
			json_pack("{s:s,s:I}", "id", id, "policy_version", (json_int_t)version));
}

void rvs_campaigns_list(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	json_t *doc;
	if (open_rw(c, &ops, &st))
		return;
	doc = rvs_campaigns_json(c->cfg, ops, st);
	rvs_store_release(st);
	rvs_query_reply(c->q, doc ? 200 : 500,
			doc ? doc : json_pack("{s:s}", "error", "query failed"));
}

void rvs_campaigns_create(struct rvs_call *c)
{
	char err[160] = "", id[80];
	uint64_t version = 0;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	json_t *spec;
	int rc;

	if (open_rw(c, &ops, &st))
		return;
	spec = spec_of(c);
	if (!spec) {
		snprintf(err, sizeof err, "body: a JSON campaign object of at most 64 KiB");
		rc = -EINVAL;
	} else {
		rc = rvs_campaign_save(c->cfg, ops, st, spec,
				       !json_is_true(json_object_get(spec, "replace")), &version,
				       err, sizeof err);
	}
	snprintf(id, sizeof id, "%s",
		 spec && json_is_string(json_object_get(spec, "id"))
			 ? json_string_value(json_object_get(spec, "id"))
			 : "");
	if (rc == 0) {
		char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
		rvs_audit(ops, st, c->user,
			  json_is_true(json_object_get(spec, "replace")) ? "campaign.update"
									 : "campaign.create",
			  id, text ? text : "");
		free(text);
	}
	json_decref(spec);
	rvs_store_release(st);
	changed(c, rc, err, id, version);
}

void rvs_campaigns_preview(struct rvs_call *c)
{
	struct rvs_campaign_preview p;
	char err[160] = "";
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	json_t *spec;
	int rc;

	if (open_rw(c, &ops, &st))
		return;
	if (!(spec = spec_of(c))) {
		rvs_store_release(st);
		return rvs_query_reply(c->q, 400,
				       json_pack("{s:s}", "error",
						 "body: a JSON campaign object of at most 64 KiB"));
	}
	rc = rvs_campaign_preview(ops, st, spec, &p, err, sizeof err);
	json_decref(spec);
	rvs_store_release(st);
	if (rc)
		return rvs_query_reply(c->q, status_of(rc), json_pack("{s:s}", "error", err));
	rvs_query_reply(c->q, 200,
			json_pack("{s:I,s:I,s:f,s:b,s:b,s:s}", "anomalies_last_week",
				  (json_int_t)p.anomalies, "devices", (json_int_t)p.devices,
				  "expected_after_sampling", p.expected, "fleet_wide", p.fleet_wide,
				  "truncated", p.truncated, "text", p.text));
}

void rvs_campaigns_end(struct rvs_call *c)
{
	char err[160] = "", id[80];
	uint64_t version = 0;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	int rc;

	if (!c->arg_len || c->arg_len > sizeof id - 2)
		return rvs_campaigns_none(c);
	if (open_rw(c, &ops, &st))
		return;
	memcpy(id, c->arg, c->arg_len);
	id[c->arg_len] = '\0';
	rc = rvs_campaign_end(c->cfg, ops, st, id, &version, err, sizeof err);
	if (rc == 0)
		rvs_audit(ops, st, c->user, "campaign.end", id, "");
	rvs_store_release(st);
	changed(c, rc, err, id, version);
}

void rvs_campaigns_none(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	if (open_rw(c, &ops, &st))
		return;
	rvs_store_release(st);
	rvs_query_reply(c->q, 404, json_pack("{s:s}", "error", "no such resource"));
}
