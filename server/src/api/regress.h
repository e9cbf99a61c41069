/* SPDX-License-Identifier: Apache-2.0 */
/*
 * regress.h — the JSON API's regression endpoints (regress.c; app/routes.c's
 * table; work thread; each fills c->q always).
 */
#ifndef RVS_API_REGRESS_H
#define RVS_API_REGRESS_H

/* GET /api/v1/regressions: app plus a&b, or model (and version), or
 * week=1; limit.  GET /api/v1/regressions/runs: the stored automatic
 * comparisons. */
struct rvs_call;
void rvs_regress_api(struct rvs_call *c);
void rvs_regress_api_runs(struct rvs_call *c);

#endif
