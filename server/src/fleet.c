/*
 * fleet.c — GET /api/v1/fleet (fleet.h).
 *
 * Read-only: its own read-only sqlite connection, fixed SQL, nothing from
 * the request reaches a query.  Quota use is each device's quota-charged
 * uploads (every anomaly kind but MANUAL) in the last 7 days against the
 * served policy's weekly quota (rvp_policy_weekly_quota, which falls back
 * to librvpolicy's default); manual captures are counted apart
 * (manual_7d), as the device's ledger does (issue 18 item 11).  Skip reasons come
 * from the `skips` table that POST /v1/skips fills when this build's schema
 * has it; without it the document says devices do not report them and
 * lists only what the server itself recorded (quarantine reasons).  No
 * figure is made up.
 */
#include "fleet.h"
#include "campaign_core.h"
#include "reply.h"
#include "route.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rearview/common.pb-c.h"
#include "rearview/policy.h"
#include "rearview/policy.pb-c.h"

#define MAX_DEVICES 500

static json_t *text_or_null(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	json_t *j = s ? json_string((const char *)s) : NULL;
	return j ? j : json_null();
}

static int devices(sqlite3 *db, uint32_t quota, json_t *doc)
{
	sqlite3_stmt *st;
	json_t *arr = json_array();
	int64_t week_ago = (int64_t)time(NULL) - 7 * 86400, at_quota = 0;
	int rc;

	json_object_set_new(doc, "devices", arr);
	if (sqlite3_prepare_v2(
		    db,
		    "SELECT d.device_id, d.model, d.os_build, d.arch, d.enrolled_at,"
		    " count(u.trace_id),"
		    " sum(u.received_at >= ?1 AND COALESCE(u.anomaly_kind, 0) != ?3),"
		    " max(u.received_at),"
		    " sum(u.received_at >= ?1 AND COALESCE(u.anomaly_kind, 0) = ?3)"
		    " FROM devices d LEFT JOIN uploads u ON u.device_id = d.device_id"
		    " GROUP BY d.device_id ORDER BY max(u.received_at) DESC, d.enrolled_at DESC"
		    " LIMIT ?2",
		    -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, week_ago);
	sqlite3_bind_int(st, 2, MAX_DEVICES);
	sqlite3_bind_int(st, 3, REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t last7 = sqlite3_column_int64(st, 6);
		if (quota && last7 >= quota)
			at_quota++;
		json_array_append_new(
			arr, json_pack("{s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:o,s:f}", "device_id",
				       text_or_null(st, 0), "model", text_or_null(st, 1),
				       "os_build", text_or_null(st, 2), "arch", text_or_null(st, 3),
				       "enrolled_at", (json_int_t)sqlite3_column_int64(st, 4),
				       "uploads", (json_int_t)sqlite3_column_int64(st, 5),
				       "uploads_7d", (json_int_t)last7, "manual_7d",
				       (json_int_t)sqlite3_column_int64(st, 8), "last_upload_at",
				       sqlite3_column_type(st, 7) == SQLITE_NULL
					       ? json_null()
					       : json_integer(sqlite3_column_int64(st, 7)),
				       "quota_used", quota ? (double)last7 / quota : 0.0));
	}
	sqlite3_finalize(st);
	json_object_set_new(doc, "devices_at_quota", json_integer(at_quota));
	return rc == SQLITE_DONE ? 0 : -1;
}

static int rows(sqlite3 *db, const char *sql, const char *const *keys, int nkeys, json_t *arr)
{
	sqlite3_stmt *st;
	int rc;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = json_object();
		for (int i = 0; i < nkeys; i++)
			json_object_set_new(o, keys[i],
					    sqlite3_column_type(st, i) == SQLITE_INTEGER
						    ? json_integer(sqlite3_column_int64(st, i))
						    : text_or_null(st, i));
		json_array_append_new(arr, o);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int has_table(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st;
	int found = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
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
	sqlite3 *db = NULL;
	int bad, reported;

	memset(r, 0, sizeof *r);
	if (served)
		rearview__policy_body__free_unpacked(served, NULL);
	if (sqlite3_open_v2(cfg->database, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		json_decref(weeks);
		json_decref(quarantine);
		json_decref(device_reasons);
		return rvs_query_reply(r, 503, json_pack("{s:s}", "error", "database unavailable"));
	}
	rvs_sqlite_busy(db, 5000);
	reported = has_table(db, "skips");
	doc = json_pack(
		"{s:i,s:o,s:o}", "weekly_quota", (int)quota, "uploads_per_week", weeks,
		"skip_reasons",
		json_pack("{s:b,s:s,s:o,s:o}", "reported_by_devices", reported, "note",
			  reported ? "Anomalies devices did not upload, by the reason they "
				     "reported (POST /v1/skips), and the server's own quarantine "
				     "reasons."
				   : "Devices do not report skip reasons to this server (it has "
				     "no skip reports table); only the server's own quarantine "
				     "reasons are shown.",
			  "device_reported", device_reasons, "server_quarantine", quarantine));
	bad = devices(db, quota, doc) ||
	      rows(db,
		   "SELECT date(received_at, 'unixepoch', '-6 days', 'weekday 1') AS week,"
		   " count(*), COALESCE(sum(blob_bytes), 0) FROM uploads GROUP BY week"
		   " ORDER BY week DESC LIMIT 26",
		   week_keys, 3, weeks) ||
	      rows(db,
		   "SELECT reason, count(*) FROM quarantine GROUP BY reason ORDER BY 2 DESC"
		   " LIMIT 50",
		   q_keys, 2, quarantine) ||
	      (reported && rows(db,
				"SELECT reason, count(*) FROM skips GROUP BY reason ORDER BY 2 DESC"
				" LIMIT 50",
				s_keys, 2, device_reasons));
	if (!bad) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM devices", -1, &st, NULL) ==
			    SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			json_object_set_new(doc, "device_count",
					    json_integer(sqlite3_column_int64(st, 0)));
		else
			bad = 1;
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
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
