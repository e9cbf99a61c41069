/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alerts.h — the JSON API's webhook deliveries and alert rules (alerts.c;
 * the rules: model/alerts.h).
 */
#ifndef RVS_API_ALERTS_H
#define RVS_API_ALERTS_H

/* GET /api/v1/alerts: the deliveries, newest first (app/routes.c's table;
 * work thread; fills c->q always). */
struct rvs_call;
void rvs_webhook_api_list(struct rvs_call *c);
/* GET /api/v1/alert-rules: every rule with its state, value and last
 * delivery. */
void rvs_alert_rules_api_list(struct rvs_call *c);
/* POST /api/v1/alert-rules (admin): adds the rule the JSON body holds
 * (400 with the reason when it is not one; 409 past RVS_ALERT_RULES_MAX);
 * audited as "alert_rule.create". */
void rvs_alert_rules_api_create(struct rvs_call *c);
/* POST /api/v1/alert-rules/{id}/delete (admin): 404 when there is no such
 * rule; audited as "alert_rule.delete". */
void rvs_alert_rules_api_delete(struct rvs_call *c);

#endif
