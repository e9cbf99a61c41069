/* SPDX-License-Identifier: Apache-2.0 */
/*
 * campaign.h — the campaign endpoints of the JSON API (campaign.c) over
 * the campaign model (model/campaign.h).  Work thread only.
 */
#ifndef RVS_API_CAMPAIGN_H
#define RVS_API_CAMPAIGN_H

/* The campaign endpoints (app/routes.c's table; work thread; each fills c->q
 * always).  list: GET /api/v1/campaigns; create: POST /api/v1/campaigns
 * (create or, with "replace": true, replace; server/API.md); preview: POST
 * /api/v1/campaigns/preview; end: POST /api/v1/campaigns/{id}/end; none:
 * any other path under /api/v1/campaigns/ (404). */
struct rvs_call;
void rvs_campaigns_list(struct rvs_call *c);
void rvs_campaigns_create(struct rvs_call *c);
void rvs_campaigns_preview(struct rvs_call *c);
void rvs_campaigns_end(struct rvs_call *c);
void rvs_campaigns_none(struct rvs_call *c);

#endif
