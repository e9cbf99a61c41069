/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web.h — the engineer web UI (server/WEB.md): login, sessions, CSRF, and
 * HTML pages rendered from the same JSON documents the /api/v1/ API serves.
 * rvs_web_handle runs on a work thread (sqlite, PBKDF2, file reads);
 * its endpoints are entries of route.c's table.
 */
#ifndef RVS_WEB_H
#define RVS_WEB_H

#include <stdio.h>

#include "http/reply.h"
#include "http/http.h"
#include "base/config.h"

struct rvs_route;
struct rvs_call;

/* Work thread: answers one UI request, route (family RVS_FAMILY_WEB) as
 * rvs_route_find found it with allow (nonzero: the method is not served):
 * the session check of SESSION routes, then route's handler with call.
 * Fills *r always (an HTML error page on failure).  Every HTML answer
 * carries r->csp and X-Frame-Options. */
void rvs_web_handle(const struct rvs_config *cfg, const struct rvs_http_req *req,
		    const struct rvs_route *route, unsigned allow, struct rvs_call *call,
		    struct rvs_query_resp *r);

/* The web UI's endpoints (route.c's table): call->ctx is web.c's request
 * context, set by rvs_web_handle; each fills the response.  static:
 * /static/{file}; favicon; login_form and login: GET and POST /login;
 * logout; root: "/" (to /traces); traces, trace (/traces/{id}),
 * trace_export, trace_flame (its export and flame graph, streamed),
 * trace_none (other paths under /traces/: 404); signatures; campaigns and
 * campaigns_post: /campaigns; campaign and campaign_post:
 * /campaigns/{rest}; fleet; method and method_post: /methods/{name} and
 * /methods/{name}/alert. */
void rvs_web_static(struct rvs_call *call);
void rvs_web_favicon(struct rvs_call *call);
void rvs_web_login_form(struct rvs_call *call);
void rvs_web_login(struct rvs_call *call);
void rvs_web_logout(struct rvs_call *call);
void rvs_web_root(struct rvs_call *call);
void rvs_web_traces(struct rvs_call *call);
void rvs_web_trace(struct rvs_call *call);
void rvs_web_trace_export(struct rvs_call *call);
void rvs_web_trace_flame(struct rvs_call *call);
void rvs_web_trace_none(struct rvs_call *call);
/* GET /traces/{id}/timeline.json?from=&to=&width= (the zoomable
 * timeline's level of detail, JSON; a bad parameter is a 400 naming it)
 * and GET /traces/{id}/butterfly?method= (HTML), both from the cache of
 * decoded traces (web_timeline.c). */
void rvs_web_trace_timeline(struct rvs_call *call);
void rvs_web_trace_butterfly(struct rvs_call *call);
void rvs_web_signatures(struct rvs_call *call);
void rvs_web_campaigns(struct rvs_call *call);
void rvs_web_campaigns_post(struct rvs_call *call);
void rvs_web_campaign(struct rvs_call *call);
void rvs_web_campaign_post(struct rvs_call *call);
void rvs_web_fleet(struct rvs_call *call);
/* GET /trend: a method's time per capture day or app version, its onset
 * and the brush that makes aggregate sets of a range (web_trend.c). */
void rvs_web_trend(struct rvs_call *call);
/* GET /alerts: the alert rules on trends with their current value, state
 * (ok, or firing since) and last delivery (web_alerts.c). */
void rvs_web_alerts(struct rvs_call *call);
/* GET /heatmap: an app's or issue's anomalies per time received and
 * duration, each cell a link to its merged flame graph; GET /heaviest: the
 * captures of an aggregate's set where one frame is heaviest, each a link
 * to its timeline at the anomaly (web_heatmap.c). */
void rvs_web_heatmap(struct rvs_call *call);
void rvs_web_heaviest(struct rvs_call *call);
/* GET /regressions: what got slower (web_regress.c). */
void rvs_web_regressions(struct rvs_call *call);
void rvs_web_method(struct rvs_call *call);
void rvs_web_method_post(struct rvs_call *call);
/* Any other path outside the device API and the JSON API: the HTML 404
 * page (no session needed; any method). */
void rvs_web_not_found(struct rvs_call *call);

/* The aggregate pages (web_agg.c; session-authenticated, call->ctx is
 * web.c's context): GET /aggregate and GET /aggregate/diff, their filter
 * form, flame graph and top-down / bottom-up tables. */
void rvs_web_aggregate(struct rvs_call *c);
void rvs_web_aggregate_diff(struct rvs_call *c);

/* Writes the flame graph SVG of doc, an /api/v1/aggregate reply (diff 0)
 * or an /api/v1/aggregate/diff reply (diff 1), to f.  A diff's node is
 * shaded by its method's self-time test in regress, an /api/v1/regressions
 * reply comparing the same two sets (NULL when none applies): class
 * "n slower" (red) or "n faster" (blue), saturated by |Cliff's delta|, when
 * its q is below the reply's alpha; "n same" (grey) when not, when the
 * method is not in the reply, or when regress is NULL.  link (NULL: none):
 * the /regressions page of that comparison, each frame whose method the
 * reply lists a link to its row there (link#m-METHOD, URL-encoded).  Names are escaped.
 * diff 0 reads no regress; its link (NULL: none) is the /heaviest page of
 * the set with its filters ("/heaviest?QUERY"): each frame below an app's
 * root links there with &node=ID&frame=METHOD.  Any thread. */
struct json_t;
void rvs_agg_flame_svg(FILE *f, struct json_t *doc, int diff, struct json_t *regress,
		       const char *link);

/* The accounts pages (web_users.c).  Admin only: GET /users, the
 * accounts and the forms to change a role or disable/enable; POST
 * /users/NAME, one change (form fields role=…, or disabled=0/1; audited);
 * GET /audit, the newest audit rows.  POST /users (admin): a new account
 * (form name=…, role=…), its one-time password shown once on the page
 * answered; 409 when it exists; POST /users/NAME with reset=1: a new
 * one-time password, shown the same way.  Every account: GET /tokens, its
 * personal API tokens and the forms; POST /tokens (form name=…), a new
 * token shown once on the page answered; POST /tokens/ID/revoke. */
void rvs_web_users(struct rvs_call *call);
void rvs_web_users_post(struct rvs_call *call);
void rvs_web_user_post(struct rvs_call *call);
void rvs_web_audit(struct rvs_call *call);
void rvs_web_tokens(struct rvs_call *call);
void rvs_web_tokens_post(struct rvs_call *call);

/* The pages /issues, /search and /callers (web_search.c; signed in): HTML
 * renderings of the JSON API's GET /api/v1/issues, /api/v1/search and
 * /api/v1/aggregate/callers. */
void rvs_web_issues(struct rvs_call *c);
void rvs_web_search(struct rvs_call *c);
void rvs_web_callers(struct rvs_call *c);

/* ---- shared by web*.c --------------------------------------------------- */

/* Writes s HTML-escaped (& < > " ' and control characters): the one escaper
 * every untrusted string passes through, valid in text and quoted attributes. */
void rvs_web_esc(FILE *f, const char *s);
/* Writes s percent-encoded (all but unreserved characters), for URLs. */
void rvs_web_urlenc(FILE *f, const char *s);

#endif
