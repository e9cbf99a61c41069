/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet.h — the fleet overview's data (GET /api/v1/fleet): devices, uploads
 * per week, quota use against the served policy, and what the server knows
 * about skipped work.  Work thread only.
 */
#ifndef RVS_FLEET_H
#define RVS_FLEET_H

#include "http/reply.h"
#include "base/config.h"

/* Fills *r with the fleet document (server/API.md "Fleet") always. */
void rvs_fleet_api(const struct rvs_config *cfg, struct rvs_query_resp *r);

/* GET /api/v1/fleet (route.c's table): rvs_fleet_api into c->q. */
struct rvs_call;
void rvs_fleet_get(struct rvs_call *c);

/* Fills *r with the jank-per-app document (server/API.md "Jank per app")
 * for `query` (days, limit) at unix time now: the apps of the last `days`
 * UTC days by jank rate, highest first; 400 for a bad parameter, 503 /
 * 500 when the database fails. */
void rvs_fleet_jank_api(const struct rvs_config *cfg, const char *query, int64_t now,
			struct rvs_query_resp *r);
/* GET /api/v1/fleet/jank: rvs_fleet_jank_api into c->q. */
void rvs_fleet_jank_get(struct rvs_call *c);

#endif
