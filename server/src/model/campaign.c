/* SPDX-License-Identifier: Apache-2.0 */
/*
 * campaign.c — campaigns: validation, storage and publishing (campaign.h),
 * which the JSON API's endpoints (api/campaign.c), the web forms, the
 * fleet view and the device API's policy share.
 *
 * Invariants:
 * - A spec is validated field by field (bounded lists and strings, printable
 *   UTF-8 through rvs_field_ok, enum names from the protobuf descriptors)
 *   and stored normalized (campaign_json of the parsed form), so what the
 *   database holds always parses again.
 * - Each change and its publication happen in one store transaction
 *   (store.h's campaign_change: sqlite's write lock, PostgreSQL's advisory
 *   lock, serialize concurrent changes), so versions strictly increase and
 *   the published file always lists the campaigns the database says are
 *   active.  A failed signature or write rolls the change back.
 * - The new policy keeps every other setting of the one currently served
 *   (or librvpolicy's default when none), gets version = max(served,
 *   recorded) + 1, is checked with rvp_policy_validate, and is signed by
 *   rvs_policy_publish with the server's key — the document devices verify.
 */
#include "model/campaign.h"
#include "base/params.h"
#include "store/store.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <protobuf-c/protobuf-c.h>

#include "rearview/common.pb-c.h"
#include "rearview/policy.h"
#include "rearview/policy.pb-c.h"
#include "base/util.h"
#include "model/policy.h"
#include "base/text.h"

#define MAX_LIST      16
#define MAX_STR	      128
#define MAX_CAMPAIGNS 64

/* A parsed campaign; its strings are borrowed from spec, which it holds. */
struct camp {
	Rearview__Campaign c;
	Rearview__VersionRange vr, *vrp;
	char *pat[MAX_LIST], *models[MAX_LIST], *builds[MAX_LIST];
	Rearview__AnomalyKind kinds[MAX_LIST];
	json_t *spec;
};

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n >= 1 && n <= 64 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int str_list(json_t *spec, const char *key, char **out, size_t *n, char *err, size_t errlen)
{
	json_t *a = json_object_get(spec, key), *v;
	size_t i;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > MAX_LIST)
		return fail(err, errlen, "%s: a list of at most 16 strings", key);
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v) || !json_string_length(v) ||
		    !rvs_field_ok(json_string_value(v), MAX_STR))
			return fail(err, errlen, "%s: each entry a non-empty printable string",
				    key);
		out[(*n)++] = (char *)json_string_value(v);
	}
	return 0;
}

static int get_int(json_t *spec, const char *key, long long lo, long long hi, long long *out,
		   char *err, size_t errlen)
{
	json_t *v = json_object_get(spec, key);
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return fail(err, errlen, "%s: an integer out of range or of the wrong type", key);
	*out = json_integer_value(v);
	return 0;
}

/* A time member: unix seconds, or a string rvs_param_time takes (ISO 8601),
 * which becomes its seconds in spec (the stored spec holds numbers only). */
static int get_time(json_t *spec, const char *key, long long *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(spec, key);
	int64_t t;

	if (!json_is_string(v))
		return get_int(spec, key, 0, 1LL << 40, out, err, errlen);
	if (rvs_param_time(json_string_value(v), &t) || t > 1LL << 40)
		return fail(err, errlen,
			    "%s: unix seconds or an ISO 8601 date (2026-01-31, 2026-01-31T08:00Z)",
			    key);
	*out = t;
	json_object_set_new(spec, key, json_integer(t));
	return 0;
}

static int get_str(json_t *spec, const char *key, char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(spec, key);
	*out = (char *)protobuf_c_empty_string;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) ||
	    (json_string_length(v) && !rvs_field_ok(json_string_value(v), 64)))
		return fail(err, errlen, "%s: a printable string of at most 64 bytes", key);
	*out = (char *)json_string_value(v);
	return 0;
}

/* An enum given by its proto name or number; 0 (unspecified) is refused. */
static int get_enum(const ProtobufCEnumDescriptor *d, json_t *v, int *out)
{
	const ProtobufCEnumValue *e = NULL;
	if (json_is_string(v))
		e = protobuf_c_enum_descriptor_get_value_by_name(d, json_string_value(v));
	else if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 1000)
		e = protobuf_c_enum_descriptor_get_value(d, (int)json_integer_value(v));
	if (!e || e->value == 0)
		return -EINVAL;
	*out = e->value;
	return 0;
}

/* An anomaly kind of "kinds": a number, or a string rvs_param_kind takes
 * ("ANOMALY_JANK", "jank"); never UNSPECIFIED.  0 or -EINVAL. */
static int get_kind(json_t *v, int *out)
{
	int64_t k;

	if (!json_is_string(v))
		return get_enum(&rearview__anomaly_kind__descriptor, v, out);
	if (rvs_param_kind(json_string_value(v), &k) || k <= 0 || k >= 1000 ||
	    !protobuf_c_enum_descriptor_get_value(&rearview__anomaly_kind__descriptor, (int)k))
		return -EINVAL;
	*out = (int)k;
	return 0;
}

/* Parses spec into k (which takes a reference to spec).  0 or -EINVAL. */
static int camp_parse(json_t *spec, struct camp *k, char *err, size_t errlen)
{
	json_t *v, *kinds;
	long long x;
	size_t i;
	int e;

	memset(k, 0, sizeof *k);
	rearview__campaign__init(&k->c);
	rearview__version_range__init(&k->vr);
	if (!json_is_object(spec))
		return fail(err, errlen, "%s", "a campaign is a JSON object");
	k->spec = json_incref(spec);
	v = json_object_get(spec, "id");
	if (!json_is_string(v) || !id_ok(json_string_value(v)))
		return fail(err, errlen, "%s", "id: 1-64 characters of A-Z a-z 0-9 . _ -");
	k->c.id = (char *)json_string_value(v);
	if (get_int(spec, "priority", -1000, 1000, &x, err, errlen))
		return -EINVAL;
	k->c.priority = (int32_t)x;
	if (get_time(spec, "valid_from_s", &x, err, errlen))
		return -EINVAL;
	k->c.valid_from_s = (uint64_t)x;
	if (get_time(spec, "valid_until_s", &x, err, errlen))
		return -EINVAL;
	k->c.valid_until_s = (uint64_t)x;
	if (k->c.valid_until_s && k->c.valid_until_s <= k->c.valid_from_s)
		return fail(err, errlen, "%s", "valid_until_s must be after valid_from_s");
	if (str_list(spec, "app_patterns", k->pat, &k->c.n_app_patterns, err, errlen) ||
	    str_list(spec, "device_models", k->models, &k->c.n_device_models, err, errlen) ||
	    str_list(spec, "os_builds", k->builds, &k->c.n_os_builds, err, errlen))
		return -EINVAL;
	k->c.app_patterns = k->pat;
	k->c.device_models = k->models;
	k->c.os_builds = k->builds;
	if (get_str(spec, "app_version_min", &k->vr.min, err, errlen) ||
	    get_str(spec, "app_version_max", &k->vr.max, err, errlen))
		return -EINVAL;
	if (k->vr.min[0] || k->vr.max[0]) {
		if (k->vr.min[0] && k->vr.max[0] && rvp_version_cmp(k->vr.min, k->vr.max) > 0)
			return fail(err, errlen, "%s", "app_version_min is above app_version_max");
		k->vrp = &k->vr;
		k->c.app_versions = &k->vrp;
		k->c.n_app_versions = 1;
	}
	kinds = json_object_get(spec, "kinds");
	if (kinds && !json_is_null(kinds)) {
		if (!json_is_array(kinds) || json_array_size(kinds) > MAX_LIST)
			return fail(err, errlen, "%s", "kinds: a list of anomaly kind names");
		json_array_foreach(kinds, i, v)
		{
			if (get_kind(v, &e))
				return fail(err, errlen, "%s", "kinds: unknown anomaly kind");
			k->kinds[k->c.n_kinds++] = (Rearview__AnomalyKind)e;
		}
		k->c.kinds = k->kinds;
	}
	if (get_int(spec, "min_severity", 0, 100, &x, err, errlen))
		return -EINVAL;
	k->c.min_severity = (uint32_t)x;
	v = json_object_get(spec, "sample_probability");
	if (v && !json_is_null(v)) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
			return fail(err, errlen, "%s", "sample_probability: a number in [0, 1]");
		k->c.sample_probability = json_number_value(v);
	}
	v = json_object_get(spec, "upload_mode");
	if (v && !json_is_null(v)) {
		if (get_enum(&rearview__upload_mode__descriptor, v, &e))
			return fail(err, errlen, "%s",
				    "upload_mode: UPLOAD_FULL, UPLOAD_SUMMARY or "
				    "UPLOAD_SIGNATURE_STATS");
		k->c.upload_mode = (Rearview__UploadMode)e;
	}
	if (get_int(spec, "quota", 0, 100000, &x, err, errlen))
		return -EINVAL;
	k->c.quota = (uint32_t)x;
	return 0;
}

static void camp_release(struct camp *k)
{
	json_decref(k->spec);
	k->spec = NULL;
}

/* A JSON array of v[0..n), or NULL when out of memory (never a shorter
 * one: the normalized form is what the store keeps). */
static json_t *str_array(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i]))) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

/* The normalized JSON form of a parsed campaign: a spec that validates
 * again (so one that targets every app says all_apps). */
static json_t *campaign_json(const Rearview__Campaign *c)
{
	json_t *kinds = json_array(), *doc;
	const ProtobufCEnumValue *um = protobuf_c_enum_descriptor_get_value(
		&rearview__upload_mode__descriptor, c->upload_mode);
	for (size_t i = 0; i < c->n_kinds; i++) {
		const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(
			&rearview__anomaly_kind__descriptor, c->kinds[i]);
		if (kinds && json_array_append_new(kinds, json_string(e ? e->name : "?"))) {
			json_decref(kinds);
			kinds = NULL;
		}
	}
	doc = json_pack("{s:s,s:i,s:I,s:I,s:o,s:s,s:s,s:o,s:o,s:o,s:i,s:f,s:i}", "id", c->id,
			"priority", (int)c->priority, "valid_from_s", (json_int_t)c->valid_from_s,
			"valid_until_s", (json_int_t)c->valid_until_s, "app_patterns",
			str_array(c->app_patterns, c->n_app_patterns), "app_version_min",
			c->n_app_versions ? c->app_versions[0]->min : "", "app_version_max",
			c->n_app_versions ? c->app_versions[0]->max : "", "device_models",
			str_array(c->device_models, c->n_device_models), "os_builds",
			str_array(c->os_builds, c->n_os_builds), "kinds", kinds, "min_severity",
			(int)c->min_severity, "sample_probability", c->sample_probability, "quota",
			(int)c->quota);
	/* Set one by one, not json_pack's "s*", which omits a member whose
	 * string could not be allocated. */
	if (doc &&
	    ((c->upload_mode && um &&
	      json_object_set_new(doc, "upload_mode", json_string(um->name))) ||
	     (c->n_app_patterns == 0 && json_object_set_new(doc, "all_apps", json_true())))) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* The text the store keeps of a normalized spec, or NULL when out of
 * memory.  jansson's json_dumps can return a document missing a key when
 * an allocation inside it fails, so the text is read back and compared. */
static char *spec_text(const json_t *norm)
{
	char *text = norm ? json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_t *back = text ? json_loads(text, 0, NULL) : NULL;
	int same = back && json_equal(back, norm);

	json_decref(back);
	if (!same) {
		free(text);
		return NULL;
	}
	return text;
}

/* ---- publishing ------------------------------------------------------------ */

Rearview__PolicyBody *rvs_policy_served(const struct rvs_config *cfg)
{
	uint8_t *buf;
	size_t len;
	Rearview__SignedPolicy *sp;
	Rearview__PolicyBody *b = NULL;
	if (rvs_read_file(cfg->policy_file, 1 << 20, &buf, &len))
		return NULL;
	sp = rearview__signed_policy__unpack(NULL, len, buf);
	if (sp)
		b = rearview__policy_body__unpack(NULL, sp->body.len, sp->body.data);
	if (sp)
		rearview__signed_policy__free_unpacked(sp, NULL);
	free(buf);
	return b;
}

/* A change's publication: the active campaigns parsed, then the policy. */
struct pub {
	const struct rvs_config *cfg;
	struct camp *cs;
	Rearview__Campaign *ptrs[MAX_CAMPAIGNS];
	size_t n;
	int64_t now;
	uint64_t version; /* the published one */
	char *err;
	size_t errlen;
};

static int pub_spec(void *arg, const char *text, size_t len)
{
	struct pub *p = arg;
	json_t *spec;

	if (p->n == MAX_CAMPAIGNS)
		return fail(p->err, p->errlen, "%s", "too many active campaigns (at most 64)");
	spec = json_loadb(text, len, 0, NULL);
	if (!spec || camp_parse(spec, &p->cs[p->n], p->err, p->errlen)) {
		json_decref(spec);
		camp_release(&p->cs[p->n]);
		return -EIO;
	}
	json_decref(spec);
	p->ptrs[p->n] = &p->cs[p->n].c;
	p->n++;
	return 0;
}

/* Signs and writes a policy whose campaigns are the active ones. */
static int pub_policy(void *arg, uint64_t recorded, uint64_t *version)
{
	struct pub *p = arg;
	Rearview__PolicyBody *base = rvs_policy_served(p->cfg), body;
	int rc = 0;

	body = base ? *base : *rvp_policy_default();
	body.version = (recorded > body.version ? recorded : body.version) + 1;
	/* Keep the served policy's lifetime, counted from now. */
	if (body.expires_at_s && body.expires_at_s > body.issued_at_s)
		body.expires_at_s = (uint64_t)p->now + (body.expires_at_s - body.issued_at_s);
	else
		body.expires_at_s = 0;
	body.issued_at_s = (uint64_t)p->now;
	body.campaigns = p->ptrs;
	body.n_campaigns = p->n;
	if (rvp_policy_validate(&body)) {
		rc = fail(p->err, p->errlen, "%s", "the resulting policy does not validate");
	} else if (rvs_policy_publish(p->cfg, &body)) {
		snprintf(p->err, p->errlen, "cannot sign or write the policy");
		rc = -EIO;
	} else {
		*version = p->version = body.version;
	}
	if (base)
		rearview__policy_body__free_unpacked(base, NULL);
	return rc;
}

/* Applies change op to campaign id (spec: its normalized JSON, NULL to
 * end it) and publishes, in one store transaction (store.h's
 * campaign_change); -EEXIST and -ENOENT say why in err. */
static int publish(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
		   struct rvs_store *st, int op, const char *id, const char *spec,
		   const char *reason, uint64_t *version, char *err, size_t errlen)
{
	struct pub p = {.cfg = cfg, .now = (int64_t)time(NULL), .err = err, .errlen = errlen};
	struct rvs_publish_cb cb = {pub_spec, pub_policy, &p};
	int rc;

	if (!(p.cs = calloc(MAX_CAMPAIGNS, sizeof *p.cs)))
		return -ENOMEM;
	rc = ops->campaign_change(st, op, id, spec, reason, p.now, MAX_CAMPAIGNS + 1, &cb);
	if (rc == 0)
		*version = p.version;
	else if (rc == -EEXIST)
		snprintf(err, errlen, "a campaign with this id exists");
	else if (rc == -ENOENT)
		snprintf(err, errlen, "no active campaign with this id");
	else if (rc && rc != -EINVAL && rc != -ENOMEM)
		rc = -EIO;
	for (size_t i = 0; i < p.n; i++)
		camp_release(&p.cs[i]);
	free(p.cs);
	return rc;
}

/* ---- what an engineer must say explicitly (issue 18 item 10) ------------- */

static const char *const known_keys[] = {
	"id",
	"priority",
	"valid_from_s",
	"valid_until_s",
	"app_patterns",
	"all_apps",
	"device_models",
	"os_builds",
	"app_version_min",
	"app_version_max",
	"kinds",
	"min_severity",
	"sample_probability",
	"upload_mode",
	"quota",
	"replace",
	"confirm_fleet_wide",
};

/* Edit distance of two short keys (a typo has a small one). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];
	if (la >= 63 || lb >= 63)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof *prev);
	}
	return prev[lb];
}

/*
 * Input from an engineer (the JSON API and the web form), before it is
 * parsed: an unknown field is refused with its name (and the field it was
 * probably meant to be) instead of being ignored; "every app" and the share
 * of anomalies to collect must be said, never inferred from a missing
 * field.  Stored specs are not held to this (they were normalized).
 */
static int spec_strict(json_t *spec, char *err, size_t errlen)
{
	const char *key;
	json_t *v, *apps, *all;
	char unknown[160] = "";
	const char *hint = NULL, *hint_for = NULL;
	size_t nunk = 0, nap;

	if (!json_is_object(spec))
		return fail(err, errlen, "%s", "a campaign is a JSON object");
	json_object_foreach(spec, key, v)
	{
		size_t best = 3, k;
		const char *near = NULL;
		for (k = 0; k < sizeof known_keys / sizeof known_keys[0]; k++) {
			size_t d = edit_distance(key, known_keys[k]);
			if (d == 0)
				break;
			if (d < best) {
				best = d;
				near = known_keys[k];
			}
		}
		if (k < sizeof known_keys / sizeof known_keys[0])
			continue;
		if (nunk++ < 4)
			snprintf(unknown + strlen(unknown), sizeof unknown - strlen(unknown),
				 "%s%.40s", nunk > 1 ? ", " : "", key);
		if (near && !hint) {
			hint = near;
			hint_for = key;
		}
	}
	if (nunk)
		return hint ? fail(err, errlen, "unknown field%s: %s (did you mean %s for %.40s?)",
				   nunk > 1 ? "s" : "", unknown, hint, hint_for)
			    : fail(err, errlen, "unknown field%s: %s", nunk > 1 ? "s" : "",
				   unknown);
	apps = json_object_get(spec, "app_patterns");
	all = json_object_get(spec, "all_apps");
	if (all && !json_is_boolean(all))
		return fail(err, errlen, "%s", "all_apps: true or false");
	nap = json_is_array(apps) ? json_array_size(apps) : 0;
	if (nap == 0 && !json_is_true(all))
		return fail(err, errlen, "%s",
			    "app_patterns: name the apps this campaign collects from, or set "
			    "all_apps to true to collect from every app");
	if (nap > 0 && json_is_true(all))
		return fail(err, errlen, "%s", "all_apps is true but app_patterns names apps");
	v = json_object_get(spec, "sample_probability");
	if (!v || json_is_null(v))
		return fail(err, errlen, "%s",
			    "sample_probability: required — the share of matching anomalies to "
			    "collect, 1 for every one");
	if (json_is_number(v) && json_number_value(v) == 0)
		return fail(err, errlen, "%s",
			    "sample_probability: 0 would collect nothing — end the campaign to "
			    "stop collecting");
	return 0;
}

/* A campaign that matches every app on every device and version. */
static int fleet_wide(const Rearview__Campaign *c)
{
	return c->n_app_patterns == 0 && c->n_device_models == 0 && c->n_os_builds == 0 &&
	       c->n_app_versions == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define PREVIEW_MAX_ROWS 1000000

/* Counts last week's anomalies (uploads and skip reports) the campaign
 * would have matched, before sampling, and on how many devices. */
struct preview_acc {
	Rearview__Campaign all;
	struct rvs_campaign_preview *p;
	char **devs;
	size_t ndev, cap;
	int64_t now;
};

static int preview_row(void *arg, const struct rvs_anomaly_row *r)
{
	struct preview_acc *a = arg;
	struct rvp_event ev = {
		.item_id = "",
		.app_id = r->app_id,
		.app_version = r->app_version,
		.device_model = r->model,
		.os_build = r->os_build,
		.kind = (Rearview__AnomalyKind)r->kind,
		.severity = (uint32_t)r->severity,
	};
	if (++a->p->rows > PREVIEW_MAX_ROWS) {
		a->p->truncated = 1;
		return 1;
	}
	if (rvp_campaign_match(&a->all, &ev, a->now, 0) != RVP_ACCEPTED)
		return 0;
	a->p->anomalies++;
	if (a->ndev == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 64;
		char **nd = realloc(a->devs, nc * sizeof *nd);
		if (!nd)
			return -ENOMEM;
		a->devs = nd;
		a->cap = nc;
	}
	if (!(a->devs[a->ndev] = strdup(r->device_id ? r->device_id : "")))
		return -ENOMEM;
	a->ndev++;
	return 0;
}

static int preview(const struct rvs_store_ops *ops, struct rvs_store *st,
		   const Rearview__Campaign *c, struct rvs_campaign_preview *p)
{
	struct preview_acc a = {.all = *c, .p = p, .now = (int64_t)time(NULL)};
	int rc;

	memset(p, 0, sizeof *p);
	p->fleet_wide = fleet_wide(c);
	a.all.sample_probability = 1; /* before sampling */
	a.all.valid_from_s = a.all.valid_until_s = 0;
	rc = ops->anomalies_since(st, a.now - 7 * 86400, PREVIEW_MAX_ROWS + 1, preview_row, &a);
	if (a.ndev)
		qsort(a.devs, a.ndev, sizeof *a.devs, cmp_str);
	for (size_t i = 0; i < a.ndev; i++)
		p->devices += i == 0 || strcmp(a.devs[i], a.devs[i - 1]) != 0;
	for (size_t i = 0; i < a.ndev; i++)
		free(a.devs[i]);
	free(a.devs);
	p->expected = (double)p->anomalies * (c->sample_probability > 0 && c->sample_probability < 1
						      ? c->sample_probability
						      : 1.0);
	if (rc == -ENOMEM)
		return rc;
	return rc == 0 || rc == 1 ? 0 : -EIO;
}

static void preview_text(const struct rvs_campaign_preview *p, char *out, size_t len)
{
	snprintf(out, len,
		 "last week it would have matched %s%llu anomalies on %llu devices (about %.0f "
		 "after sampling)%s",
		 p->truncated ? "at least " : "", (unsigned long long)p->anomalies,
		 (unsigned long long)p->devices, p->expected,
		 p->fleet_wide ? "; it targets every app on every device" : "");
}

int rvs_campaign_preview(const struct rvs_store_ops *ops, struct rvs_store *st, json_t *spec,
			 struct rvs_campaign_preview *p, char *err, size_t errlen)
{
	struct camp k;
	int rc = spec_strict(spec, err, errlen);
	if (rc == 0)
		rc = camp_parse(spec, &k, err, errlen);
	if (rc == 0 && (rc = preview(ops, st, &k.c, p)))
		snprintf(err, errlen, "cannot read last week's anomalies");
	if (rc == 0)
		preview_text(p, p->text, sizeof p->text);
	camp_release(&k);
	return rc;
}

int rvs_campaign_normalize(const char *body, size_t len, char **out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *spec, *norm;
	struct camp k;
	int rc;

	*out = NULL;
	memset(&je, 0, sizeof je); /* json_loadb may fail without setting a code */
	if (len > RVS_CAMPAIGN_MAX_BODY)
		return fail(err, errlen, "%s", "a campaign is at most 64 KiB of JSON");
	spec = json_loadb(body, len, 0, &je);
	if (!spec) {
		/* jansson leaves the code unknown when an allocation fails
		 * where it records no error. */
		if (json_error_code(&je) == json_error_out_of_memory ||
		    json_error_code(&je) == json_error_unknown) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		return fail(err, errlen, "not JSON: %s", je.text);
	}
	memset(&k, 0, sizeof k);
	rc = spec_strict(spec, err, errlen);
	if (rc == 0)
		rc = camp_parse(spec, &k, err, errlen);
	if (rc == 0) {
		norm = campaign_json(&k.c);
		*out = spec_text(norm);
		json_decref(norm);
		if (!*out) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
		}
	}
	camp_release(&k);
	json_decref(spec);
	return rc;
}

int rvs_campaign_save(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
		      struct rvs_store *st, json_t *spec, int create, uint64_t *version, char *err,
		      size_t errlen)
{
	struct camp k;
	json_t *norm;
	char *text;
	char reason[128];
	int rc;

	memset(&k, 0, sizeof k);
	if ((rc = spec_strict(spec, err, errlen)) || (rc = camp_parse(spec, &k, err, errlen))) {
		camp_release(&k);
		return rc;
	}
	if (fleet_wide(&k.c) && !json_is_true(json_object_get(spec, "confirm_fleet_wide"))) {
		struct rvs_campaign_preview p;
		char what[200];
		if (preview(ops, st, &k.c, &p) == 0)
			preview_text(&p, what, sizeof what);
		else
			snprintf(what, sizeof what, "its reach could not be previewed");
		snprintf(err, errlen,
			 "a fleet-wide campaign needs confirm_fleet_wide set to true: %s", what);
		camp_release(&k);
		return -EAGAIN;
	}
	norm = campaign_json(&k.c);
	text = spec_text(norm);
	json_decref(norm);
	if (!text) {
		camp_release(&k);
		return -ENOMEM;
	}
	snprintf(reason, sizeof reason, "campaign %s %s", k.c.id, create ? "created" : "edited");
	rc = publish(cfg, ops, st, create ? RVS_CAMPAIGN_CREATE : RVS_CAMPAIGN_UPDATE, k.c.id, text,
		     reason, version, err, errlen);
	free(text);
	camp_release(&k);
	return rc;
}

int rvs_campaign_end(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
		     struct rvs_store *st, const char *id, uint64_t *version, char *err,
		     size_t errlen)
{
	char reason[128];

	if (!id_ok(id))
		return fail(err, errlen, "%s", "bad campaign id");
	snprintf(reason, sizeof reason, "campaign %s ended", id);
	return publish(cfg, ops, st, RVS_CAMPAIGN_END, id, NULL, reason, version, err, errlen);
}

static int campaign_row(void *arg, const char *spec, size_t len, int64_t created, int64_t updated,
			int64_t ended)
{
	json_t *o = json_loadb(spec, len, 0, NULL);
	if (!o)
		return 0;
	json_object_set_new(o, "created_at", json_integer(created));
	json_object_set_new(o, "updated_at", json_integer(updated));
	json_object_set_new(o, "ended_at", ended < 0 ? json_null() : json_integer(ended));
	json_object_set_new(o, "active", json_boolean(ended < 0));
	json_array_append_new(arg, o);
	return 0;
}

json_t *rvs_campaigns_json(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
			   struct rvs_store *st)
{
	json_t *arr = json_array();
	Rearview__PolicyBody *served;
	uint64_t v = 0;

	if (ops->campaigns_list(st, campaign_row, arr) || ops->policy_version(st, &v)) {
		json_decref(arr);
		return NULL;
	}
	/* The policy devices are served: the default published at start-up
	 * (version 1) is in no campaign change's row. */
	if ((served = rvs_policy_served(cfg))) {
		if (served->version > v)
			v = served->version;
		rearview__policy_body__free_unpacked(served, NULL);
	}
	return json_pack("{s:o,s:o}", "campaigns", arr, "policy_version",
			 v > 0 ? json_integer((json_int_t)v) : json_null());
}
