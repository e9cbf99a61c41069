/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet.c — GET /api/v1/fleet (fleet.h).
 *
 * Read-only, through the store (store.h: fleet_devices, fleet_groups,
 * device_count) of the process's shared handle on the database; nothing
 * from the request reaches a query.  Quota use is each device's quota-charged
 * uploads (every anomaly kind but MANUAL) in the last 7 days against the
 * served policy's weekly quota (rvp_policy_weekly_quota, which falls back
 * to librvpolicy's default); manual captures are counted apart
 * (manual_7d), as the device's ledger does (issue 18 item 11).  Skip
 * reasons come from the `skips` table that POST /v1/skips fills (every
 * schema the store opens has it), beside the reasons the server itself
 * recorded (quarantine).  No figure is made up.
 *
 * GET /api/v1/fleet/jank ranks apps by jank rate over a window of UTC
 * days from the counts devices report for every app, traced or not (POST
 * /v1/jank, the jank_counts table), beside the app's uploads in the same
 * window: an app with none is `traced: false`; each app lists its versions
 * (at most JANK_VERSIONS_MAX, most frames first; "" unknown).
 */
#include "api/fleet.h"
#include "model/campaign.h"
#include "http/reply.h"
#include "base/params.h"
#include "base/text.h"
#include "http/route.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rearview/common.pb-c.h"
#include "rearview/policy.h"
#include "rearview/policy.pb-c.h"

#define MAX_DEVICES 500

static json_t *text_or_null(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;
	return j ? j : json_null();
}

struct devices_acc {
	json_t *arr;
	uint32_t quota;
	int64_t at_quota;
};

static int device_row(void *arg, const struct rvs_fleet_device *d)
{
	struct devices_acc *a = arg;
	if (a->quota && d->charged_since >= a->quota)
		a->at_quota++;
	json_array_append_new(
		a->arr,
		json_pack("{s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:o,s:f}", "device_id",
			  text_or_null(d->device_id), "model", text_or_null(d->model), "os_build",
			  text_or_null(d->os_build), "arch", text_or_null(d->arch), "enrolled_at",
			  (json_int_t)d->enrolled_at, "uploads", (json_int_t)d->uploads,
			  "uploads_7d", (json_int_t)d->charged_since, "manual_7d",
			  (json_int_t)d->manual_since, "last_upload_at",
			  d->has_last_upload ? json_integer(d->last_upload_at) : json_null(),
			  "quota_used", a->quota ? (double)d->charged_since / a->quota : 0.0));
	return 0;
}

static int devices(const struct rvs_store_ops *ops, struct rvs_store *st, uint32_t quota,
		   json_t *doc)
{
	struct devices_acc a = {json_array(), quota, 0};
	int64_t week_ago = (int64_t)time(NULL) - 7 * 86400;
	int rc;

	json_object_set_new(doc, "devices", a.arr);
	rc = ops->fleet_devices(st, week_ago, REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL, MAX_DEVICES,
				device_row, &a);
	json_object_set_new(doc, "devices_at_quota", json_integer(a.at_quota));
	return rc ? -1 : 0;
}

/* One counted group into an array of objects: {keys[0]: key, keys[1]: n}
 * and, with a third key, keys[2]: bytes. */
struct rows_acc {
	const char *const *keys;
	int nkeys;
	json_t *arr;
};

static int group_row(void *arg, const char *key, int64_t n, int64_t bytes)
{
	struct rows_acc *a = arg;
	json_t *o = json_object();
	json_object_set_new(o, a->keys[0], text_or_null(key));
	json_object_set_new(o, a->keys[1], json_integer(n));
	if (a->nkeys > 2)
		json_object_set_new(o, a->keys[2], json_integer(bytes));
	json_array_append_new(a->arr, o);
	return 0;
}

static int rows(const struct rvs_store_ops *ops, struct rvs_store *st, int group,
		const char *const *keys, int nkeys, json_t *arr)
{
	struct rows_acc a = {keys, nkeys, arr};
	return ops->fleet_groups(st, group, group_row, &a) ? -1 : 0;
}

void rvs_fleet_api(const struct rvs_config *cfg, struct rvs_query_resp *r)
{
	static const char *const week_keys[] = {"week", "uploads", "bytes"};
	static const char *const q_keys[] = {"reason", "traces"};
	static const char *const s_keys[] = {"reason", "anomalies"};
	Rearview__PolicyBody *served = rvs_policy_served(cfg);
	uint32_t quota = rvp_policy_weekly_quota(served ? served : rvp_policy_default());
	json_t *doc, *weeks = json_array(), *quarantine = json_array();
	json_t *device_reasons = json_array();
	const struct rvs_store_ops *ops;
	struct rvs_store *st = NULL;
	uint64_t ndevices = 0;
	int bad;

	memset(r, 0, sizeof *r);
	if (served)
		rearview__policy_body__free_unpacked(served, NULL);
	if (rvs_store_acquire(cfg->database, &ops, &st)) {
		json_decref(weeks);
		json_decref(quarantine);
		json_decref(device_reasons);
		return rvs_query_reply(r, 503, json_pack("{s:s}", "error", "database unavailable"));
	}
	doc = json_pack("{s:i,s:o,s:o}", "weekly_quota", (int)quota, "uploads_per_week", weeks,
			"skip_reasons",
			json_pack("{s:b,s:s,s:o,s:o}", "reported_by_devices", 1, "note",
				  "Anomalies devices did not upload, by the reason they "
				  "reported (POST /v1/skips), and the server's own quarantine "
				  "reasons.",
				  "device_reported", device_reasons, "server_quarantine",
				  quarantine));
	bad = devices(ops, st, quota, doc) || rows(ops, st, RVS_FLEET_WEEKS, week_keys, 3, weeks) ||
	      rows(ops, st, RVS_FLEET_QUARANTINE, q_keys, 2, quarantine) ||
	      rows(ops, st, RVS_FLEET_SKIPS, s_keys, 2, device_reasons);
	if (!bad) {
		if (ops->device_count(st, &ndevices) == 0)
			json_object_set_new(doc, "device_count",
					    json_integer((json_int_t)ndevices));
		else
			bad = 1;
	}
	rvs_store_release(st);
	if (bad) {
		json_decref(doc);
		return rvs_query_reply(r, 500, json_pack("{s:s}", "error", "query failed"));
	}
	rvs_query_reply(r, 200, doc);
}

void rvs_fleet_get(struct rvs_call *c)
{
	rvs_fleet_api(c->cfg, c->q);
}

/* ---- GET /api/v1/fleet/jank ----------------------------------------------- */

#define JANK_DAYS_DEF  7
#define JANK_DAYS_MAX  366
#define JANK_LIMIT_DEF 100
#define JANK_LIMIT_MAX 500

static int jank_row(void *arg, const struct rvs_jank_app_row *r)
{
	json_t *o = json_pack(
		"{s:o,s:I,s:I,s:f,s:I,s:I,s:b}", "app_id", text_or_null(r->app_id), "frames",
		(json_int_t)r->frames, "late", (json_int_t)r->late, "jank_rate",
		r->frames > 0 ? (double)r->late / (double)r->frames : 0.0, "devices",
		(json_int_t)r->devices, "traces", (json_int_t)r->traces, "traced", r->traces > 0);

	return o ? json_array_append_new(arg, o) : -1;
}

/* (app, version) rows read for the versions at most, and versions kept
 * per app (the most frames first). */
#define JANK_VERSION_ROWS 20000
#define JANK_VERSIONS_MAX 20

/* One (app, version) row into its app's "versions" (arg: the shown apps
 * by id, each with its "versions" array). */
static int jank_version_row(void *arg, const char *app, const char *version, int64_t frames,
			    int64_t late)
{
	json_t *o = json_object_get(arg, app ? app : ""), *vs = json_object_get(o, "versions");

	if (!vs || json_array_size(vs) >= JANK_VERSIONS_MAX)
		return 0; /* an app not shown, or its versions are all there */
	return json_array_append_new(
		vs, json_pack("{s:s,s:I,s:I,s:f}", "version", version ? version : "", "frames",
			      (json_int_t)frames, "late", (json_int_t)late, "jank_rate",
			      frames > 0 ? (double)late / (double)frames : 0.0));
}

void rvs_fleet_jank_api(const struct rvs_config *cfg, const char *query, int64_t now,
			struct rvs_query_resp *r)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st = NULL;
	int64_t days = JANK_DAYS_DEF, limit, today = now / 86400;
	char buf[24];
	json_t *apps;
	int rc;

	memset(r, 0, sizeof *r);
	rc = rvs_query_param(query, "days", buf, sizeof buf);
	if (rc < 0 ||
	    (rc == 1 && buf[0] && (rvs_parse_i64(buf, &days) || days < 1 || days > JANK_DAYS_MAX)))
		return rvs_query_set_error(r, 400, "days must be an integer in 1..366");
	if (rvs_param_limit(query, JANK_LIMIT_DEF, JANK_LIMIT_MAX, &limit))
		return rvs_query_set_error(r, 400, "bad limit");
	if (rvs_store_acquire(cfg->database, &ops, &st))
		return rvs_query_reply(r, 503, json_pack("{s:s}", "error", "database unavailable"));
	apps = json_array();
	rc = ops->jank_by_app(st, today - days + 1, today, limit, jank_row, apps);
	if (!rc) {
		/* Each shown app's versions, as the devices counted them. */
		json_t *by_id = json_object(), *o;
		size_t i;
		json_array_foreach(apps, i, o)
		{
			const char *id = json_string_value(json_object_get(o, "app_id"));
			json_object_set_new(o, "versions", json_array());
			json_object_set(by_id, id ? id : "", o);
		}
		rc = ops->jank_versions(st, today - days + 1, today, JANK_VERSION_ROWS,
					jank_version_row, by_id);
		json_decref(by_id);
	}
	rvs_store_release(st);
	if (rc) {
		json_decref(apps);
		return rvs_query_reply(r, 500, json_pack("{s:s}", "error", "query failed"));
	}
	rvs_query_reply(r, 200,
			json_pack("{s:I,s:I,s:I,s:o}", "days", (json_int_t)days, "from_day",
				  (json_int_t)(today - days + 1), "to_day", (json_int_t)today,
				  "apps", apps));
}

void rvs_fleet_jank_get(struct rvs_call *c)
{
	rvs_fleet_jank_api(c->cfg, c->query, (int64_t)time(NULL), c->q);
}
