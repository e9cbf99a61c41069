/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes.c — the route table: every endpoint of the server in one place,
 * handed to the dispatcher (http/route.h) when the program is loaded.
 *
 * Invariants: the table is constant and ordered — the first entry matching
 * both path and method serves the request, so specific patterns come
 * before the catch-all entries of their family (the "/api/v1/" and
 * "/traces/" prefixes) that give that family's 404; the web UI's 404 for
 * every other path is a fallback, tried only when no other entry matches.
 * Each entry lists every query parameter its handler (and, for a web page,
 * the API it forwards to) reads: the dispatcher refuses any other, so none
 * is silently ignored.  This file is the application's: it sees every
 * endpoint family, and the dispatcher (http/) sees only the table.
 */
#include "app/routes.h"
#include "http/route.h"
#include "api/aggregate.h"
#include "api/aggregate_pprof.h"
#include "api/alerts.h"
#include "api/api.h"
#include "api/campaign.h"
#include "api/fleet.h"
#include "api/openapi.h"
#include "api/query.h"
#include "api/regress.h"
#include "api/search.h"
#include "api/symbols.h"
#include "api/trend.h"
#include "api/heatmap.h"
#include "api/users.h"
#include "web/web.h"
#include "model/users.h"

#define GET  RVS_M_GET
#define POST RVS_M_POST
#define ANY  (RVS_M_GET | RVS_M_POST)
#define LOAD RVS_ROUTE_TRACE_LOAD
#define DEV(p, m, auth, thr, ps, h)                                                 \
	{                                                                           \
		p, m, RVS_AUTH_##auth, RVS_ON_##thr, RVS_FAMILY_DEVICE, 0, ps, h, 0 \
	}
/* API and WEB entries need a viewer; API_AS and WEB_AS name a higher role. */
#define API_AS(role, p, m, f, ps, h)                                                       \
	{                                                                                  \
		p, m, RVS_AUTH_API, RVS_ON_WORK, RVS_FAMILY_API, f, ps, h, RVS_ROLE_##role \
	}
#define API(p, m, f, ps, h) API_AS(VIEWER, p, m, f, ps, h)
/* A JSON API entry anyone may call (no token, no role). */
#define API_PUBLIC(p, m, ps, h)                                               \
	{                                                                     \
		p, m, RVS_AUTH_NONE, RVS_ON_WORK, RVS_FAMILY_API, 0, ps, h, 0 \
	}
#define WEB_AS(role, p, m, auth, f, ps, h)                                        \
	{                                                                         \
		p, m, RVS_AUTH_##auth, RVS_ON_WORK, RVS_FAMILY_WEB, f, ps, h,     \
			RVS_AUTH_##auth == RVS_AUTH_SESSION ? RVS_ROLE_##role : 0 \
	}
#define WEB(p, m, auth, f, ps, h) WEB_AS(VIEWER, p, m, auth, f, ps, h)
/* A parameter list. */
#define P(...) ((const char *const[]){__VA_ARGS__, NULL})
/* Any parameter (the catch-all 404 entries: the path is what is wrong). */
#define ANY_PARAM P("*")
/* The filters of /api/v1/traces (query.c, search.c's sorted lists). */
#define TRACE_FILTERS                                                                    \
	"app", "version", "model", "os_build", "kind", "min_severity", "since", "until", \
		"signature", "method"
#define TRACES_PARAMS TRACE_FILTERS, "cursor", "limit", "sort", "issue"
/* The filters of an aggregate (agg.c), and a diff's sides of them. */
#define AGG_FILTERS                                                                              \
	"app", "version", "model", "campaign", "method", "chain", "kind", "since", "until",      \
		"issue", "dur_min", "dur_max", "except_since", "except_until", "except_dur_min", \
		"except_dur_max"
#define AGG_SIDE(s)                                                                              \
#s ".app", #s ".version", #s ".model", #s ".campaign", #s ".method", #s ".chain",        \
		#s ".kind", #s ".since", #s ".until", #s ".issue", #s ".dur_min", #s ".dur_max", \
		#s ".except_since", #s ".except_until", #s ".except_dur_min", #s ".except_dur_max"
#define AGG_DIFF_PARAMS AGG_FILTERS, AGG_SIDE(a), AGG_SIDE(b)
#define ISSUES_PARAMS	"app", "version", "kind", "weeks", "limit"
#define SEARCH_PARAMS	"chain", "caller", "callee", "contains", "app", "version", "cursor", "limit"
#define REGRESS_PARAMS	"app", "a", "b", "model", "version", "week", "limit"
#define METHOD_PARAMS	"app", "version", "limit"
#define TREND_PARAMS	"method", "app", "model", "issue", "kind", "by"
#define HEATMAP_PARAMS	"app", "issue", "kind", "from", "to", "bucket"

static const struct rvs_route table[] = {
	/* The device API (server/API.md) and the scraper's metrics. */
	DEV("/metrics", GET, NONE, LOOP, NULL, rvs_api_metrics),
	DEV("/v1/enroll", POST, ENROLL, WORK, NULL, rvs_api_enroll),
	DEV("/v1/uploads", POST, DEVICE, WORK, NULL, rvs_api_upload),
	DEV("/v1/skips", POST, DEVICE, WORK, NULL, rvs_api_skip),
	DEV("/v1/jank", POST, DEVICE, WORK, NULL, rvs_api_jank),
	DEV("/v1/policy", GET, DEVICE, WORK, NULL, rvs_api_policy),
	/* The JSON API (server/openapi.json describes it): symbols, campaigns,
	 * fleet, the index. */
	API_PUBLIC("/api/v1/openapi.json", GET, NULL, rvs_openapi_get),
	API("/api/v1/symbols", GET, 0, NULL, rvs_symbols_list),
	API_AS(AUTHOR, "/api/v1/symbols", POST, 0, NULL, rvs_symbols_put),
	API("/api/v1/symbols/**", GET, 0, P("offset"), rvs_symbols_get),
	API("/api/v1/symbols/**", POST, 0, NULL, rvs_symbols_refuse),
	API("/api/v1/campaigns", GET, 0, NULL, rvs_campaigns_list),
	API_AS(AUTHOR, "/api/v1/campaigns", POST, 0, NULL, rvs_campaigns_create),
	API_AS(AUTHOR, "/api/v1/campaigns/preview", POST, 0, NULL, rvs_campaigns_preview),
	API_AS(AUTHOR, "/api/v1/campaigns/*/end", POST, 0, NULL, rvs_campaigns_end),
	API("/api/v1/campaigns/**", ANY, 0, ANY_PARAM, rvs_campaigns_none),
	API("/api/v1/fleet", GET, 0, NULL, rvs_fleet_get),
	API("/api/v1/fleet/jank", GET, 0, P("days", "limit"), rvs_fleet_jank_get),
	API("/api/v1/traces", GET, 0, P(TRACES_PARAMS), rvs_query_traces),
	API("/api/v1/traces/*", GET, LOAD, P("why"), rvs_query_trace), /* its "why" */
	API("/api/v1/traces/*/export", GET, LOAD, P("format"), rvs_query_export),
	API("/api/v1/traces/**", GET, 0, ANY_PARAM, rvs_query_trace_none),
	API("/api/v1/signatures", GET, 0, P("limit", "offset"), rvs_query_signatures),
	API("/api/v1/signatures/weekly", GET, 0, P("since", "signatures"), rvs_query_weekly),
	API("/api/v1/versions", GET, 0, P("app"), rvs_query_versions),
	API("/api/v1/skips", GET, 0, P("since", "until", "app", "limit"), rvs_query_skips),
	API("/api/v1/methods/**", GET, 0, P(METHOD_PARAMS), rvs_query_method),
	API("/api/v1/aggregate", GET, 0, P(AGG_FILTERS, "weighted"), rvs_agg_api),
	API("/api/v1/aggregate/diff", GET, 0, P(AGG_DIFF_PARAMS, "weighted"), rvs_agg_api_diff),
	API("/api/v1/aggregate/pprof", GET, 0, P(AGG_FILTERS), rvs_agg_api_pprof),
	API("/api/v1/aggregate/diff/pprof", GET, 0, P(AGG_DIFF_PARAMS, "side"),
	    rvs_agg_api_diff_pprof),
	API("/api/v1/aggregate/callers", GET, 0, P(AGG_FILTERS, "of"), rvs_agg_api_callers),
	API("/api/v1/aggregate/heaviest", GET, 0, P(AGG_FILTERS, "node", "by", "limit"),
	    rvs_agg_api_heaviest),
	API("/api/v1/issues", GET, 0, P(ISSUES_PARAMS), rvs_search_issues),
	API("/api/v1/search", GET, 0, P(SEARCH_PARAMS), rvs_search_chains),
	API("/api/v1/regressions", GET, 0, P(REGRESS_PARAMS), rvs_regress_api),
	API("/api/v1/regressions/runs", GET, 0, NULL, rvs_regress_api_runs),
	API("/api/v1/trend", GET, 0, P(TREND_PARAMS), rvs_trend_api),
	API("/api/v1/heatmap", GET, 0, P(HEATMAP_PARAMS), rvs_heatmap_api),
	API("/api/v1/alerts", GET, 0, NULL, rvs_webhook_api_list),
	API("/api/v1/alert-rules", GET, 0, NULL, rvs_alert_rules_api_list),
	API_AS(ADMIN, "/api/v1/alert-rules", POST, 0, NULL, rvs_alert_rules_api_create),
	API_AS(ADMIN, "/api/v1/alert-rules/*/delete", POST, 0, NULL, rvs_alert_rules_api_delete),
	API_AS(ADMIN, "/api/v1/users", GET, 0, NULL, rvs_users_api),
	API_AS(ADMIN, "/api/v1/users", POST, 0, P("name", "role"), rvs_users_api_create),
	API_AS(ADMIN, "/api/v1/users/*", POST, 0, P("role", "disabled"), rvs_users_api_change),
	API_AS(ADMIN, "/api/v1/audit", GET, 0,
	       P("actor", "action", "since", "until", "before", "limit"), rvs_audit_api),
	API("/api/v1/tokens", GET, 0, NULL, rvs_tokens_api),
	API("/api/v1/tokens", POST, 0, P("name"), rvs_tokens_api_create),
	API("/api/v1/tokens/*/revoke", POST, 0, NULL, rvs_tokens_api_revoke),
	API("/api/v1/**", GET, 0, ANY_PARAM, rvs_query_none),
	API("/api/**", GET, 0, ANY_PARAM, rvs_query_none),
	/* The web UI (server/WEB.md). */
	WEB("/static/**", GET, NONE, 0, NULL, rvs_web_static),
	WEB("/favicon.ico", GET, NONE, 0, NULL, rvs_web_favicon),
	WEB("/login", GET, NONE, 0, NULL, rvs_web_login_form),
	WEB("/login", POST, LOGIN, 0, NULL, rvs_web_login),
	WEB("/logout", POST, SESSION, 0, NULL, rvs_web_logout),
	WEB("/", GET, SESSION, 0, NULL, rvs_web_root),
	WEB("/traces", GET, SESSION, 0, P(TRACES_PARAMS, "from", "to", "first"), rvs_web_traces),
	WEB("/traces/*", GET, SESSION, LOAD, P("focus", "method"), rvs_web_trace),
	WEB("/traces/*/export", GET, SESSION, LOAD, P("format"), rvs_web_trace_export),
	WEB("/traces/*/flame.svg", GET, SESSION, LOAD, NULL, rvs_web_trace_flame),
	WEB("/traces/*/timeline.json", GET, SESSION, LOAD, P("from", "to", "width"),
	    rvs_web_trace_timeline),
	WEB("/traces/*/butterfly", GET, SESSION, LOAD, P("method"), rvs_web_trace_butterfly),
	WEB("/traces/**", GET, SESSION, 0, ANY_PARAM, rvs_web_trace_none),
	WEB("/signatures", GET, SESSION, 0, P("limit", "offset"), rvs_web_signatures),
	WEB("/issues", GET, SESSION, 0, P(ISSUES_PARAMS), rvs_web_issues),
	WEB("/search", GET, SESSION, 0, P(SEARCH_PARAMS), rvs_web_search),
	WEB("/callers", GET, SESSION, 0, P(AGG_FILTERS, "of"), rvs_web_callers),
	WEB("/campaigns", GET, SESSION, 0, NULL, rvs_web_campaigns),
	WEB_AS(AUTHOR, "/campaigns", POST, SESSION, 0, NULL, rvs_web_campaigns_post),
	WEB("/campaigns/**", GET, SESSION, 0, NULL, rvs_web_campaign),
	WEB_AS(AUTHOR, "/campaigns/**", POST, SESSION, 0, NULL, rvs_web_campaign_post),
	WEB("/fleet", GET, SESSION, 0, NULL, rvs_web_fleet),
	WEB("/aggregate", GET, SESSION, 0, P(AGG_FILTERS, "range_since", "range_until"),
	    rvs_web_aggregate),
	WEB("/heatmap", GET, SESSION, 0, P(HEATMAP_PARAMS), rvs_web_heatmap),
	WEB("/heaviest", GET, SESSION, 0, P(AGG_FILTERS, "node", "by", "limit", "frame"),
	    rvs_web_heaviest),
	WEB("/aggregate/diff", GET, SESSION, 0, P(AGG_DIFF_PARAMS), rvs_web_aggregate_diff),
	WEB("/methods/**", GET, SESSION, 0, P(METHOD_PARAMS), rvs_web_method),
	WEB_AS(AUTHOR, "/methods/**", POST, SESSION, 0, NULL, rvs_web_method_post),
	WEB("/regressions", GET, SESSION, 0, P(REGRESS_PARAMS), rvs_web_regressions),
	WEB("/trend", GET, SESSION, 0, P(TREND_PARAMS), rvs_web_trend),
	WEB("/alerts", GET, SESSION, 0, NULL, rvs_web_alerts),
	WEB_AS(ADMIN, "/users", GET, SESSION, 0, NULL, rvs_web_users),
	WEB_AS(ADMIN, "/users", POST, SESSION, 0, NULL, rvs_web_users_post),
	WEB_AS(ADMIN, "/users/*", POST, SESSION, 0, NULL, rvs_web_user_post),
	WEB_AS(ADMIN, "/audit", GET, SESSION, 0,
	       P("actor", "action", "since", "until", "before", "limit", "first"), rvs_web_audit),
	WEB("/tokens", GET, SESSION, 0, NULL, rvs_web_tokens),
	WEB("/tokens", POST, SESSION, 0, NULL, rvs_web_tokens_post),
	WEB("/tokens/**", POST, SESSION, 0, NULL, rvs_web_tokens_post),
	/* Any path no entry above matches is the web UI's HTML 404 (a POST
	 * too: the dispatcher answers it, web.c), not a protobuf download. */
	WEB("/**", GET, NONE, RVS_ROUTE_FALLBACK, ANY_PARAM, rvs_web_not_found),
};

static const struct rvs_route_table routes = {
	.routes = table,
	.n = sizeof table / sizeof table[0],
	.web = rvs_web_handle,
};

const struct rvs_route_table *rvs_app_routes(void)
{
	return &routes;
}

/* Hands the table to the dispatcher when the program is loaded: before
 * main, and before a test that links the server's objects calls the
 * dispatcher (rvs_api_v1, rvs_route_find). */
__attribute__((constructor)) static void routes_register(void)
{
	rvs_route_table_set(&routes);
}
