/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alerts.h — the JSON API's webhook deliveries (alerts.c).
 */
#ifndef RVS_API_ALERTS_H
#define RVS_API_ALERTS_H

/* GET /api/v1/alerts: the deliveries, newest first (app/routes.c's table;
 * work thread; fills c->q always). */
struct rvs_call;
void rvs_webhook_api_list(struct rvs_call *c);

#endif
