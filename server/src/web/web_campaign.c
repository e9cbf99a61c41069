/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_campaign.c — the campaign pages (list, create, edit, end) and the
 * fleet overview.
 *
 * Pages render the /api/v1/campaigns and /api/v1/fleet documents.  Forms
 * post (CSRF-checked by web.c before they get here) a flat form that is
 * turned into the same JSON spec the JSON API takes and saved through
 * rvs_campaign_save, so both paths validate and publish identically.
 */
#include "web/web.h"
#include "base/text.h"
#include "web/web_int.h"
#include "http/route.h"
#include "model/campaign.h"
#include "base/params.h"
#include "model/users.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <protobuf-c/protobuf-c.h>

#include "rearview/common.pb-c.h"
#include "rearview/policy.pb-c.h"

/* ---- form → JSON spec --------------------------------------------------------- */

/* "a, b,c" → ["a","b","c"] (empty entries dropped). */
static json_t *comma_list(const char *v)
{
	json_t *a = json_array();
	char part[256];
	while (*v) {
		size_t n = strcspn(v, ",");
		const char *s = v;
		while (n && *s == ' ') {
			s++;
			n--;
		}
		while (n && s[n - 1] == ' ')
			n--;
		if (n && n < sizeof part) {
			memcpy(part, s, n);
			part[n] = '\0';
			json_array_append_new(a, json_string(part));
		}
		v += strcspn(v, ",");
		if (*v == ',')
			v++;
	}
	return a;
}

/* Every value of a repeated form field (checkboxes), decoded. */
static json_t *multi(const char *form, const char *name)
{
	json_t *a = json_array();
	size_t nl = strlen(name);
	const char *p = form;
	while (p && *p) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		char v[64];
		if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=' &&
		    rvs_url_decode(p + nl + 1, len - nl - 1, 1, v, sizeof v) == 0)
			json_array_append_new(a, json_string(v));
		p = amp ? amp + 1 : NULL;
	}
	return a;
}

/* The form as a spec; -EINVAL with err for a number or date that does not
 * parse. */
static int form_spec(const char *form, const char *id, json_t **out, char *err, size_t errlen)
{
	static const char *const ints[] = {"priority", "min_severity", "quota"};
	static const char *const times[] = {"valid_from_s", "valid_until_s"};
	static const char *const strs[] = {"app_version_min", "app_version_max", "upload_mode"};
	static const char *const lists[] = {"app_patterns", "device_models", "os_builds"};
	json_t *spec = json_object();
	char v[2048], *end;

	if (id)
		json_object_set_new(spec, "id", json_string(id));
	else if (rvs_query_param(form, "id", v, sizeof v) == 1)
		json_object_set_new(spec, "id", json_string(v));
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		int64_t x;
		if (rvs_query_param(form, ints[i], v, sizeof v) != 1 || !v[0])
			continue;
		if (rvs_parse_i64(v, &x)) {
			snprintf(err, errlen, "%s: not an integer", ints[i]);
			json_decref(spec);
			return -EINVAL;
		}
		json_object_set_new(spec, ints[i], json_integer(x));
	}
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		int64_t t;
		if (rvs_query_param(form, times[i], v, sizeof v) != 1 || !v[0])
			continue;
		if (rvs_param_time(v, &t)) {
			snprintf(err, errlen, "%s: not a date (YYYY-MM-DDTHH:MM, UTC)", times[i]);
			json_decref(spec);
			return -EINVAL;
		}
		json_object_set_new(spec, times[i], json_integer(t));
	}
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if (rvs_query_param(form, strs[i], v, sizeof v) == 1 && v[0])
			json_object_set_new(spec, strs[i], json_string(v));
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
		if (rvs_query_param(form, lists[i], v, sizeof v) == 1)
			json_object_set_new(spec, lists[i], comma_list(v));
	if (rvs_query_param(form, "all_apps", v, sizeof v) == 1 && strcmp(v, "1") == 0)
		json_object_set_new(spec, "all_apps", json_true());
	if (rvs_query_param(form, "confirm_fleet_wide", v, sizeof v) == 1 && strcmp(v, "1") == 0)
		json_object_set_new(spec, "confirm_fleet_wide", json_true());
	if (rvs_query_param(form, "sample_probability", v, sizeof v) == 1 && v[0]) {
		double d;
		errno = 0;
		d = strtod(v, &end);
		if (errno || *end || end == v) {
			snprintf(err, errlen, "sample_probability: not a number");
			json_decref(spec);
			return -EINVAL;
		}
		json_object_set_new(spec, "sample_probability", json_real(d));
	}
	json_object_set_new(spec, "kinds", multi(form, "kinds"));
	*out = spec;
	return 0;
}

/* ---- rendering ------------------------------------------------------------------ */

/* A campaign time as a date-and-time field (UTC, minutes): o's member key
 * (empty when 0, unbounded), or dflt for a new campaign.  form_spec reads
 * it back with rvs_param_time, which also takes unix seconds. */
static void time_input(struct web_ctx *c, json_t *o, const char *key, const char *label,
		       long long dflt)
{
	time_t t = (time_t)(o ? json_integer_value(json_object_get(o, key)) : dflt);
	struct tm tm;
	char v[32] = "";

	if (t > 0 && gmtime_r(&t, &tm))
		strftime(v, sizeof v, "%Y-%m-%dT%H:%M", &tm);
	fprintf(c->f,
		"<label>%s (UTC) <input type=\"datetime-local\" name=\"%s\" value=\"%s\">"
		"</label>",
		label, key, v);
}

static void list_value(struct web_ctx *c, json_t *o, const char *key)
{
	json_t *a = json_object_get(o, key), *v;
	size_t i;
	json_array_foreach(a, i, v)
	{
		if (i)
			fputs(", ", c->f);
		rvs_web_esc(c->f, json_string_value(v));
	}
}

static int has_string(json_t *a, const char *s)
{
	json_t *v;
	size_t i;
	json_array_foreach(a, i, v) if (json_is_string(v) &&
					strcmp(json_string_value(v), s) == 0) return 1;
	return 0;
}

/* The create (edit = 0) or edit form, prefilled from o (NULL: empty). */
static void campaign_form(struct web_ctx *c, json_t *o, int edit)
{
	const ProtobufCEnumDescriptor *kd = &rearview__anomaly_kind__descriptor;
	const ProtobufCEnumDescriptor *ud = &rearview__upload_mode__descriptor;
	const char *mode = o ? json_string_value(json_object_get(o, "upload_mode")) : NULL;
	long long now = (long long)time(NULL);

	fputs("<form class=\"campaign\" method=\"post\" action=\"/campaigns", c->f);
	if (edit) {
		fputs("/", c->f);
		rvs_web_urlenc(c->f, json_string_value(json_object_get(o, "id")));
	}
	fputs("\">", c->f);
	web_csrf_field(c);
	if (!edit) {
		fputs("<label>Id <input name=\"id\" required pattern=\"[A-Za-z0-9._\\-]{1,64}\""
		      " value=\"",
		      c->f);
		if (o)
			web_field(c, o, "id");
		fputs("\"></label>", c->f);
	}
#define TEXT(key, label)                                                            \
	do {                                                                        \
		fprintf(c->f, "<label>%s <input name=\"%s\" value=\"", label, key); \
		if (o)                                                              \
			web_field(c, o, key);                                       \
		fputs("\"></label>", c->f);                                         \
	} while (0)
#define LIST(key, label)                                                                        \
	do {                                                                                    \
		fprintf(c->f, "<label>%s (comma separated) <input name=\"%s\" value=\"", label, \
			key);                                                                   \
		if (o)                                                                          \
			list_value(c, o, key);                                                  \
		fputs("\"></label>", c->f);                                                     \
	} while (0)
	TEXT("priority", "Priority");
	time_input(c, o, "valid_from_s", "Valid from", now);
	time_input(c, o, "valid_until_s", "Valid until", now + 30 * 86400);
	LIST("app_patterns", "App patterns");
	/* Every app is a choice made here, never what an empty list means. */
	fprintf(c->f,
		"<label><input type=\"checkbox\" name=\"all_apps\" value=\"1\"%s> Every app"
		" (leave App patterns empty)</label>",
		o && (json_is_true(json_object_get(o, "all_apps")) ||
		      (edit && json_array_size(json_object_get(o, "app_patterns")) == 0))
			? " checked"
			: "");
	TEXT("app_version_min", "App version min");
	TEXT("app_version_max", "App version max");
	LIST("device_models", "Device models");
	LIST("os_builds", "OS builds");
	fputs("<fieldset><legend>Anomaly kinds</legend>", c->f);
	for (unsigned i = 0; i < kd->n_values; i++) {
		if (!kd->values[i].value)
			continue;
		fprintf(c->f,
			"<label><input type=\"checkbox\" name=\"kinds\" value=\"%s\"%s> %s</label>",
			kd->values[i].name,
			o && has_string(json_object_get(o, "kinds"), kd->values[i].name)
				? " checked"
				: "",
			kd->values[i].name);
	}
	fputs("</fieldset>", c->f);
	TEXT("min_severity", "Min severity (0-100)");
	fputs("<label>Sample probability (0-1) <input name=\"sample_probability\" value=\"", c->f);
	if (o && json_is_number(json_object_get(o, "sample_probability")))
		fprintf(c->f, "%g", json_number_value(json_object_get(o, "sample_probability")));
	else if (!o)
		fputs("1", c->f); /* shown, so collecting every anomaly is seen and chosen */
	fputs("\"></label><label>Upload mode <select name=\"upload_mode\"><option value=\"\">"
	      "policy default</option>",
	      c->f);
	for (unsigned i = 0; i < ud->n_values; i++) {
		if (!ud->values[i].value)
			continue;
		fprintf(c->f, "<option value=\"%s\"%s>%s</option>", ud->values[i].name,
			mode && strcmp(mode, ud->values[i].name) == 0 ? " selected" : "",
			ud->values[i].name);
	}
	fputs("</select></label>", c->f);
	TEXT("quota", "Quota per device per 7 days (0 = weekly quota only)");
#undef TEXT
#undef LIST
	fputs("<label><input type=\"checkbox\" name=\"confirm_fleet_wide\" value=\"1\"> I"
	      " confirm: this campaign may target every app on every device</label>",
	      c->f);
	fprintf(c->f,
		"<button type=\"submit\" name=\"preview\" value=\"1\">Preview</button>"
		"<button type=\"submit\">%s</button></form>",
		edit ? "Save and publish" : "Create and publish");
}

static void id_link(struct web_ctx *c, json_t *o)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	fputs("<a href=\"/campaigns/", c->f);
	rvs_web_urlenc(c->f, id ? id : "");
	fputs("\">", c->f);
	web_field(c, o, "id");
	fputs("</a>", c->f);
}

static void end_form(struct web_ctx *c, json_t *o)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	if (!json_is_true(json_object_get(o, "active")))
		return;
	fputs("<form method=\"post\" action=\"/campaigns/", c->f);
	rvs_web_urlenc(c->f, id ? id : "");
	fputs("/end\">", c->f);
	web_csrf_field(c);
	fputs("<button type=\"submit\">End</button></form>", c->f);
}

static const struct web_col CAMPAIGN_COLS[] = {
	{"Id", "id", COL_CUSTOM, id_link},	 {"State", "state", COL_TEXT, NULL},
	{"Priority", "priority", COL_NUM, NULL}, {"Apps", "app_patterns", COL_LIST, NULL},
	{"Kinds", "kinds", COL_LIST, NULL},	 {"Mode", "upload_mode", COL_TEXT, NULL},
	{"Quota", "quota", COL_NUM, NULL},	 {"", "", COL_CUSTOM, end_form},
};

/* The list and the new-campaign form (prefilled from `form_o` when not
 * NULL); `msg` above them, an error (400) or a preview (200). */
static void campaigns_page(struct web_ctx *c, const char *msg, int is_error, json_t *form_o)
{
	int status;
	json_t *doc = web_api(c, "/api/v1/campaigns", "", &status), *arr, *o;
	size_t i;

	if (!doc || status != 200) {
		json_decref(doc);
		return web_error(c, 500, "query failed");
	}
	web_page_begin(c, "Campaigns");
	if (msg) {
		fputs(is_error ? "<p class=\"error\" id=\"form-error\">"
			       : "<p class=\"preview\" id=\"preview\">",
		      c->f);
		rvs_web_esc(c->f, msg);
		fputs("</p>", c->f);
	}
	fputs("<p>Published policy version: <b id=\"policy-version\">", c->f);
	web_field(c, doc, "policy_version");
	fputs("</b>. Every change below signs and publishes a new version; devices pick it up "
	      "at their next GET /v1/policy.</p>",
	      c->f);
	arr = json_object_get(doc, "campaigns");
	json_array_foreach(arr, i, o) json_object_set_new(
		o, "state",
		json_string(json_is_true(json_object_get(o, "active")) ? "active" : "ended"));
	web_table(c, "campaigns", CAMPAIGN_COLS, sizeof CAMPAIGN_COLS / sizeof CAMPAIGN_COLS[0],
		  arr);
	fputs("<h2>New campaign</h2>", c->f);

	campaign_form(c, form_o, 0);
	json_decref(doc);
	web_page_end(c, msg && is_error ? 400 : 200);
}

void web_campaigns_page(struct web_ctx *c, const char *msg)
{
	campaigns_page(c, msg, 1, NULL);
}

void web_campaign_page(struct web_ctx *c, const char *id)
{
	int status;
	json_t *doc = web_api(c, "/api/v1/campaigns", "", &status), *arr, *o, *found = NULL;
	size_t i;

	if (!doc || status != 200) {
		json_decref(doc);
		return web_error(c, 500, "query failed");
	}
	arr = json_object_get(doc, "campaigns");
	json_array_foreach(arr, i, o) if (strcmp(json_string_value(json_object_get(o, "id")), id) ==
					  0) found = o;
	if (!found) {
		json_decref(doc);
		return web_error(c, 404, "no such campaign");
	}
	web_page_begin(c, id);
	if (json_is_true(json_object_get(found, "active"))) {
		campaign_form(c, found, 1);
	} else {
		fputs("<p>This campaign has ended; it is no longer in the published policy.</p>",
		      c->f);
	}
	json_decref(doc);
	web_page_end(c, 200);
}

/* The Preview button: what the form's campaign would have matched last
 * week, shown above the form filled as it was sent; nothing is published. */
static void campaign_preview(struct web_ctx *c, const char *id)
{
	struct rvs_campaign_preview p;
	char err[240] = "";
	json_t *spec = NULL;
	int rc = form_spec(c->form, *id ? id : NULL, &spec, err, sizeof err);
	if (rc == 0 && (rc = rvs_campaign_preview(c->ops, c->st, spec, &p, err, sizeof err)) == 0)
		snprintf(err, sizeof err, "Preview: %s.", p.text);
	if (*id) {
		web_page_begin(c, id);
		fputs(rc ? "<p class=\"error\" id=\"form-error\">"
			 : "<p class=\"preview\" id=\"preview\">",
		      c->f);
		rvs_web_esc(c->f, err);
		fputs("</p>", c->f);
		campaign_form(c, spec, 1);
		web_page_end(c, rc ? 400 : 200);
	} else {
		campaigns_page(c, err, rc != 0, spec);
	}
	json_decref(spec);
}

/* POST /campaigns (create), /campaigns/{id} (edit), /campaigns/{id}/end. */
void web_campaign_post(struct web_ctx *c, const char *rest)
{
	char err[160] = "", id[80];
	uint64_t version;
	json_t *spec = NULL;
	size_t n = strlen(rest);
	int rc;

	char want[8];
	if (rvs_query_param(c->form, "preview", want, sizeof want) == 1 && strcmp(want, "1") == 0 &&
	    !strchr(rest, '/'))
		return campaign_preview(c, rest);
	if (!*rest) {
		if ((rc = form_spec(c->form, NULL, &spec, err, sizeof err)) == 0)
			rc = rvs_campaign_save(c->cfg, c->ops, c->st, spec, 1, &version, err,
					       sizeof err);
	} else if (n > 4 && strcmp(rest + n - 4, "/end") == 0 && n - 4 < sizeof id) {
		snprintf(id, sizeof id, "%.*s", (int)(n - 4), rest);
		rc = rvs_campaign_end(c->cfg, c->ops, c->st, id, &version, err, sizeof err);
	} else if (n < sizeof id && !strchr(rest, '/')) {
		if ((rc = form_spec(c->form, rest, &spec, err, sizeof err)) == 0)
			rc = rvs_campaign_save(c->cfg, c->ops, c->st, spec, 0, &version, err,
					       sizeof err);
	} else {
		return web_error(c, 404, "no such form");
	}
	if (rc == 0) {
		char *text = spec ? json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		rvs_audit(c->ops, c->st, c->user,
			  !*rest ? "campaign.create"
			  : spec ? "campaign.update"
				 : "campaign.end",
			  spec ? json_string_value(json_object_get(spec, "id")) : id,
			  text ? text : "");
		free(text);
	}
	json_decref(spec);
	if (rc == -EINVAL || rc == -EEXIST || rc == -EAGAIN)
		return web_campaigns_page(c, err);
	if (rc == -ENOENT)
		return web_error(c, 404, err[0] ? err : "no such campaign");
	if (rc)
		return web_error(c, 500, err[0] ? err : "cannot publish the policy");
	web_redirect(c, "/campaigns");
}

/* ---- /fleet ------------------------------------------------------------------------ */

static const struct web_col WEEK_COLS[] = {
	{"Week of", "week", COL_TEXT, NULL},
	{"Uploads", "uploads", COL_NUM, NULL},
	{"Bytes", "bytes", COL_NUM, NULL},
};
static const struct web_col DEVICE_COLS[] = {
	{"Device", "device_id", COL_TEXT, NULL},
	{"Model", "model", COL_TEXT, NULL},
	{"OS build", "os_build", COL_TEXT, NULL},
	{"Uploads", "uploads", COL_NUM, NULL},
	{"Last 7 days", "uploads_7d", COL_NUM, NULL},
	{"Manual (7 days)", "manual_7d", COL_NUM, NULL},
	{"Quota used", "quota_used", COL_PCT, NULL},
};
static const struct web_col SKIP_COLS[] = {
	{"Reason reported by devices", "reason", COL_TEXT, NULL},
	{"Anomalies not uploaded", "anomalies", COL_NUM, NULL},
};
static const struct web_col QUARANTINE_COLS[] = {
	{"Server quarantine reason", "reason", COL_TEXT, NULL},
	{"Traces", "traces", COL_NUM, NULL},
};

/* "yes", or a mark on an app that janks with no trace to look at yet. */
static void traced_cell(struct web_ctx *c, json_t *o)
{
	fputs(json_is_true(json_object_get(o, "traced"))
		      ? "yes"
		      : "<span class=\"untraced\" title=\"no upload of this app in the window\">"
			"no traces yet</span>",
	      c->f);
}

/* The app's versions as the devices counted them (most frames first, at
 * most the API's 20): each its jank rate, late frames and frames, on one
 * line; "" is a process that declared no version.  Version names are the
 * devices' and reach the page escaped, also in the data attribute. */
static void versions_cell(struct web_ctx *c, json_t *o)
{
	json_t *vs = json_object_get(o, "versions"), *v;
	size_t i;

	if (!json_array_size(vs)) {
		fputs("<i>none counted</i>", c->f);
		return;
	}
	fputs("<ul class=\"jank-versions\">", c->f);
	json_array_foreach(vs, i, v)
	{
		const char *name = json_string_value(json_object_get(v, "version"));
		fputs("<li data-version=\"", c->f);
		rvs_web_esc(c->f, name ? name : "");
		fputs("\"><span class=\"version\">", c->f);
		if (name && name[0])
			rvs_web_esc(c->f, name);
		else
			fputs("<i>no version declared</i>", c->f);
		fprintf(c->f,
			"</span>: <span class=\"rate\">%.1f%%</span> (<span class=\"late\">%" PRId64
			"</span> late of <span class=\"frames\">%" PRId64 "</span>)</li>",
			100.0 * json_number_value(json_object_get(v, "jank_rate")),
			(int64_t)json_integer_value(json_object_get(v, "late")),
			(int64_t)json_integer_value(json_object_get(v, "frames")));
	}
	fputs("</ul>", c->f);
}

static const struct web_col JANK_COLS[] = {
	{"App", "app_id", COL_TEXT, NULL},
	{"Jank rate", "jank_rate", COL_PCT, NULL},
	{"Late frames", "late", COL_NUM, NULL},
	{"Frames", "frames", COL_NUM, NULL},
	{"Devices", "devices", COL_NUM, NULL},
	{"Traces", "traces", COL_NUM, NULL},
	{"Traced", "traced", COL_CUSTOM, traced_cell},
	{"Versions: jank rate (late of frames)", "versions", COL_CUSTOM, versions_cell},
};

/* Apps by jank rate over the last 7 days, traced or not (GET
 * /api/v1/fleet/jank). */
static void fleet_jank_section(struct web_ctx *c)
{
	int status;
	json_t *doc = web_api(c, "/api/v1/fleet/jank", "days=7", &status);

	fputs("<h2>Jank per app (last 7 days, traced or not)</h2><p>Frames and late frames "
	      "devices counted for every app that draws, whether or not it is traced, "
	      "highest jank rate first; an app with no upload in the window is marked "
	      "<i>no traces yet</i>. Each app's versions (most frames first) have their own "
	      "rates.</p>",
	      c->f);
	if (!doc || status != 200)
		fputs("<p id=\"jank-error\">The jank counts could not be read.</p>", c->f);
	else
		web_table(c, "jank", JANK_COLS, sizeof JANK_COLS / sizeof JANK_COLS[0],
			  json_object_get(doc, "apps"));
	json_decref(doc);
}

void web_fleet_page(struct web_ctx *c)
{
	int status;
	json_t *doc = web_api(c, "/api/v1/fleet", "", &status), *skip;

	if (!doc || status != 200) {
		json_decref(doc);
		return web_error(c, 500, "query failed");
	}
	web_page_begin(c, "Fleet");
	fputs("<p>Enrolled devices: <b id=\"device-count\">", c->f);
	web_field(c, doc, "device_count");
	fputs("</b>. Weekly upload quota (served policy): ", c->f);
	web_field(c, doc, "weekly_quota");
	fputs(" per device; devices at quota now: ", c->f);
	web_field(c, doc, "devices_at_quota");
	fputs(".</p>", c->f);
	fleet_jank_section(c);
	fputs("<h2>Uploads per week</h2>", c->f);
	web_table(c, "weeks", WEEK_COLS, sizeof WEEK_COLS / sizeof WEEK_COLS[0],
		  json_object_get(doc, "uploads_per_week"));
	fputs("<h2>Devices and quota use</h2>", c->f);
	web_table(c, "devices", DEVICE_COLS, sizeof DEVICE_COLS / sizeof DEVICE_COLS[0],
		  json_object_get(doc, "devices"));
	skip = json_object_get(doc, "skip_reasons");
	fputs("<h2>Skip reasons</h2><p id=\"skip-note\">", c->f);
	web_field(c, skip, "note");
	fputs("</p>", c->f);
	if (json_is_true(json_object_get(skip, "reported_by_devices")))
		web_table(c, "device-skips", SKIP_COLS, sizeof SKIP_COLS / sizeof SKIP_COLS[0],
			  json_object_get(skip, "device_reported"));
	web_table(c, "quarantine", QUARANTINE_COLS,
		  sizeof QUARANTINE_COLS / sizeof QUARANTINE_COLS[0],
		  json_object_get(skip, "server_quarantine"));
	json_decref(doc);
	web_page_end(c, 200);
}

/* ---- the endpoints (app/routes.c's table) of these pages ---------------- */

void rvs_web_campaigns(struct rvs_call *call)
{
	web_campaigns_page(call->ctx, NULL);
}

void rvs_web_campaigns_post(struct rvs_call *call)
{
	web_campaign_post(call->ctx, "");
}

void rvs_web_campaign(struct rvs_call *call)
{
	web_campaign_page(call->ctx, call->arg);
}

void rvs_web_campaign_post(struct rvs_call *call)
{
	web_campaign_post(call->ctx, call->arg);
}

void rvs_web_fleet(struct rvs_call *call)
{
	web_fleet_page(call->ctx);
}
