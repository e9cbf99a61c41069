/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trend.h — the JSON API's trend endpoint (trend.c; app/routes.c's table;
 * work thread; fills c->q always): GET /api/v1/trend, a method's p50/p95
 * self and inclusive time per capture day or app version and its onset
 * (model/trend.h; API.md "Trend").
 */
#ifndef RVS_API_TREND_H
#define RVS_API_TREND_H

/* The newest traces a trend reads at most (the answer says "cut" when
 * there were more). */
#define RVS_TREND_MAX_TRACES 20000

struct rvs_call;
void rvs_trend_api(struct rvs_call *c);

#endif
