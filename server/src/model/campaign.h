/* SPDX-License-Identifier: Apache-2.0 */
/*
 * campaign.h — campaigns (policy.proto's Campaign) kept in the store and
 * published: every create, edit or end signs and writes a new policy
 * version (policy_pub.c) whose campaigns are the active ones.  Work thread
 * only.  A campaign's wire form, in the database, the JSON API and the web
 * forms, is one JSON object (server/API.md "Campaigns").  The model the
 * campaigns endpoints (api/campaign.h), the web UI, the fleet view and the
 * device API's policy share; defined in campaign.c.  ops/st: a store
 * (rvs_store_acquire), used for the call only.
 */
#ifndef RVS_MODEL_CAMPAIGN_H
#define RVS_MODEL_CAMPAIGN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/config.h"
#include "store/store.h"

/* Creates (create = 1; -EEXIST if the id exists) or replaces (create = 0;
 * -ENOENT if absent or ended) the campaign described by spec, then
 * publishes.  *version gets the published policy version.  -EINVAL with a
 * human reason in err for a bad spec (an unknown field, no app_patterns
 * without all_apps, no sample_probability or 0); -EAGAIN when the campaign
 * targets every app on every device and spec lacks "confirm_fleet_wide":
 * true (err then says what it would have matched last week); -EIO for
 * storage or signing errors. */
int rvs_campaign_save(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
		      struct rvs_store *st, json_t *spec, int create, uint64_t *version, char *err,
		      size_t errlen);
/* The largest campaign body the API and the forms read. */
#define RVS_CAMPAIGN_MAX_BODY 65536
/* Parses body[0..len) (untrusted JSON, at most RVS_CAMPAIGN_MAX_BODY)
 * as a campaign spec and validates it as rvs_campaign_save does, without a
 * store: *out gets the normalized text save would store (compact, sorted
 * keys; free() it), which parses again to itself.  0; -EINVAL with a
 * human reason in err (not JSON, an unknown field, a bad value); -ENOMEM
 * (*out NULL).  The fleet-wide confirmation needs a store and is not
 * checked here. */
int rvs_campaign_normalize(const char *body, size_t len, char **out, char *err, size_t errlen);
/* What a campaign would have collected: last week's anomalies (uploads and
 * skip reports) it matches before sampling, on how many devices, and about
 * how many after sampling; whether it targets every app on every device. */
struct rvs_campaign_preview {
	uint64_t anomalies, devices, rows;
	double expected;
	int fleet_wide;
	int truncated;	/* more than a million rows last week: counts are lower bounds */
	char text[200]; /* the same, in a sentence */
};
/* Validates spec as rvs_campaign_save does and previews it (nothing is
 * stored).  0, -EINVAL with err, -EIO, -ENOMEM. */
int rvs_campaign_preview(const struct rvs_store_ops *ops, struct rvs_store *st, json_t *spec,
			 struct rvs_campaign_preview *p, char *err, size_t errlen);
/* Ends campaign id (kept, marked ended) and publishes without it. */
int rvs_campaign_end(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
		     struct rvs_store *st, const char *id, uint64_t *version, char *err,
		     size_t errlen);
/* GET /api/v1/campaigns: {"policy_version": N|null, "campaigns": [...]},
 * each campaign its spec plus created_at, updated_at, ended_at, active;
 * policy_version the greater of the served policy file's (cfg's
 * policy_file) and the last campaign change's, null when neither.  NULL
 * on a storage error. */
json_t *rvs_campaigns_json(const struct rvs_config *cfg, const struct rvs_store_ops *ops,
			   struct rvs_store *st);
/* The body of the policy now served (unverified: it is the server's own
 * file), or NULL when there is none or it does not decode.  Free with
 * rearview__policy_body__free_unpacked(b, NULL). */
struct Rearview__PolicyBody *rvs_policy_served(const struct rvs_config *cfg);

#endif
