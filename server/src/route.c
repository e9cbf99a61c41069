/*
 * route.c — the route table: every endpoint of the server in one place
 * (route.h), and the dispatcher that matches a request against it.
 *
 * Invariants: the table is constant and ordered — the first entry matching
 * both path and method serves the request, so specific patterns come
 * before the catch-all entries of their family (the "/api/v1/" and "/traces/" prefixes)
 * that give that family's 404.  Matching reads only its arguments.
 */
#include "route.h"
#include "agg.h"
#include "api.h"
#include "campaign.h"
#include "fleet.h"
#include "query.h"
#include "search.h"
#include "regress.h"
#include "symbols.h"
#include "users.h"
#include "web.h"
#include "webhook.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define GET  RVS_M_GET
#define POST RVS_M_POST
#define ANY  (RVS_M_GET | RVS_M_POST)
#define LOAD RVS_ROUTE_TRACE_LOAD
#define DEV(p, m, auth, thr, h)                                                 \
	{                                                                       \
		p, m, RVS_AUTH_##auth, RVS_ON_##thr, RVS_FAMILY_DEVICE, 0, h, 0 \
	}
/* API and WEB entries need a viewer; API_AS and WEB_AS name a higher role. */
#define API_AS(role, p, m, f, h)                                                       \
	{                                                                              \
		p, m, RVS_AUTH_API, RVS_ON_WORK, RVS_FAMILY_API, f, h, RVS_ROLE_##role \
	}
#define API(p, m, f, h) API_AS(VIEWER, p, m, f, h)
#define WEB_AS(role, p, m, auth, f, h)                                            \
	{                                                                         \
		p, m, RVS_AUTH_##auth, RVS_ON_WORK, RVS_FAMILY_WEB, f, h,         \
			RVS_AUTH_##auth == RVS_AUTH_SESSION ? RVS_ROLE_##role : 0 \
	}
#define WEB(p, m, auth, f, h) WEB_AS(VIEWER, p, m, auth, f, h)

static const struct rvs_route routes[] = {
	/* The device API (server/API.md) and the scraper's metrics. */
	DEV("/metrics", GET, NONE, LOOP, rvs_api_metrics),
	DEV("/v1/enroll", POST, ENROLL, WORK, rvs_api_enroll),
	DEV("/v1/uploads", POST, DEVICE, WORK, rvs_api_upload),
	DEV("/v1/skips", POST, DEVICE, WORK, rvs_api_skip),
	DEV("/v1/policy", GET, DEVICE, WORK, rvs_api_policy),
	/* The JSON API: symbols, campaigns, fleet, the index. */
	API("/api/v1/symbols", GET, 0, rvs_symbols_list),
	API_AS(AUTHOR, "/api/v1/symbols", POST, 0, rvs_symbols_put),
	API("/api/v1/symbols/**", GET, 0, rvs_symbols_get),
	API("/api/v1/symbols/**", POST, 0, rvs_symbols_refuse),
	API("/api/v1/campaigns", GET, 0, rvs_campaigns_list),
	API_AS(AUTHOR, "/api/v1/campaigns", POST, 0, rvs_campaigns_create),
	API_AS(AUTHOR, "/api/v1/campaigns/preview", POST, 0, rvs_campaigns_preview),
	API_AS(AUTHOR, "/api/v1/campaigns/*/end", POST, 0, rvs_campaigns_end),
	API("/api/v1/campaigns/**", ANY, 0, rvs_campaigns_none),
	API("/api/v1/fleet", GET, 0, rvs_fleet_get),
	API("/api/v1/traces", GET, 0, rvs_query_traces),
	API("/api/v1/traces/*", GET, 0, rvs_query_trace),
	API("/api/v1/traces/*/export", GET, LOAD, rvs_query_export),
	API("/api/v1/traces/**", GET, 0, rvs_query_trace_none),
	API("/api/v1/signatures", GET, 0, rvs_query_signatures),
	API("/api/v1/signatures/weekly", GET, 0, rvs_query_weekly),
	API("/api/v1/skips", GET, 0, rvs_query_skips),
	API("/api/v1/methods/**", GET, 0, rvs_query_method),
	API("/api/v1/aggregate", GET, 0, rvs_agg_api),
	API("/api/v1/aggregate/diff", GET, 0, rvs_agg_api_diff),
	API("/api/v1/issues", GET, 0, rvs_search_issues),
	API("/api/v1/search", GET, 0, rvs_search_chains),
	API("/api/v1/regressions", GET, 0, rvs_regress_api),
	API("/api/v1/regressions/runs", GET, 0, rvs_regress_api_runs),
	API("/api/v1/alerts", GET, 0, rvs_webhook_api_list),
	API_AS(ADMIN, "/api/v1/users", GET, 0, rvs_users_api),
	API_AS(ADMIN, "/api/v1/audit", GET, 0, rvs_audit_api),
	API("/api/v1/tokens", GET, 0, rvs_tokens_api),
	API("/api/v1/tokens/*/revoke", POST, 0, rvs_tokens_api_revoke),
	API("/api/v1/**", GET, 0, rvs_query_none),
	/* The web UI (server/WEB.md). */
	WEB("/static/**", GET, NONE, 0, rvs_web_static),
	WEB("/favicon.ico", GET, NONE, 0, rvs_web_favicon),
	WEB("/login", GET, NONE, 0, rvs_web_login_form),
	WEB("/login", POST, LOGIN, 0, rvs_web_login),
	WEB("/logout", POST, SESSION, 0, rvs_web_logout),
	WEB("/", GET, SESSION, 0, rvs_web_root),
	WEB("/traces", GET, SESSION, 0, rvs_web_traces),
	WEB("/traces/*", GET, SESSION, LOAD, rvs_web_trace),
	WEB("/traces/*/export", GET, SESSION, LOAD, rvs_web_trace_export),
	WEB("/traces/*/flame.svg", GET, SESSION, LOAD, rvs_web_trace_flame),
	WEB("/traces/**", GET, SESSION, 0, rvs_web_trace_none),
	WEB("/signatures", GET, SESSION, 0, rvs_web_signatures),
	WEB("/issues", GET, SESSION, 0, rvs_web_issues),
	WEB("/search", GET, SESSION, 0, rvs_web_search),
	WEB("/campaigns", GET, SESSION, 0, rvs_web_campaigns),
	WEB_AS(AUTHOR, "/campaigns", POST, SESSION, 0, rvs_web_campaigns_post),
	WEB("/campaigns/**", GET, SESSION, 0, rvs_web_campaign),
	WEB_AS(AUTHOR, "/campaigns/**", POST, SESSION, 0, rvs_web_campaign_post),
	WEB("/fleet", GET, SESSION, 0, rvs_web_fleet),
	WEB("/aggregate", GET, SESSION, 0, rvs_web_aggregate),
	WEB("/aggregate/diff", GET, SESSION, 0, rvs_web_aggregate_diff),
	WEB("/methods/**", GET, SESSION, 0, rvs_web_method),
	WEB_AS(AUTHOR, "/methods/**", POST, SESSION, 0, rvs_web_method_post),
	WEB("/regressions", GET, SESSION, 0, rvs_web_regressions),
	WEB_AS(ADMIN, "/users", GET, SESSION, 0, rvs_web_users),
	WEB_AS(ADMIN, "/users", POST, SESSION, 0, rvs_web_users_post),
	WEB_AS(ADMIN, "/users/*", POST, SESSION, 0, rvs_web_user_post),
	WEB_AS(ADMIN, "/audit", GET, SESSION, 0, rvs_web_audit),
	WEB("/tokens", GET, SESSION, 0, rvs_web_tokens),
	WEB("/tokens", POST, SESSION, 0, rvs_web_tokens_post),
	WEB("/tokens/**", POST, SESSION, 0, rvs_web_tokens_post),
};

/* 1 when path matches pattern; *arg and *arg_len: the first wildcard's match. */
static int match(const char *pat, const char *path, const char **arg, size_t *arg_len)
{
	int captured = 0;

	while (*pat) {
		if (pat[0] == '*' && pat[1] == '*') {
			assert(pat[2] == '\0');
			if (!captured) {
				*arg = path;
				*arg_len = strlen(path);
			}
			return 1;
		}
		if (*pat == '*') {
			size_t n = strcspn(path, "/");
			if (!captured) {
				*arg = path;
				*arg_len = n;
				captured = 1;
			}
			path += n;
			pat++;
			continue;
		}
		if (*pat != *path)
			return 0;
		pat++;
		path++;
	}
	return *path == '\0';
}

const struct rvs_route *rvs_route_find(unsigned method, const char *path, const char **arg,
				       size_t *arg_len, unsigned *allow)
{
	const struct rvs_route *first = NULL;
	const char *first_arg = NULL;
	size_t first_len = 0;
	unsigned methods = 0;

	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const char *a = NULL;
		size_t n = 0;
		if (!match(routes[i].pattern, path, &a, &n))
			continue;
		if (routes[i].methods & method) {
			*arg = a;
			*arg_len = n;
			*allow = 0;
			return &routes[i];
		}
		if (!first) {
			first = &routes[i];
			first_arg = a;
			first_len = n;
		}
		methods |= routes[i].methods;
	}
	*arg = first_arg;
	*arg_len = first_len;
	*allow = methods;
	return first;
}

const char *rvs_route_allow(unsigned methods)
{
	assert(methods && !(methods & ~(unsigned)ANY));
	return methods == ANY ? "GET, POST" : methods == GET ? "GET" : "POST";
}

void rvs_route_run(const struct rvs_http_req *req, const struct rvs_route *rt, unsigned allow,
		   struct rvs_call *call)
{
	if (rt->family == RVS_FAMILY_WEB)
		return rvs_web_handle(call->cfg, req, rt, allow, call, call->q);
	assert(!allow);
	rt->handler(call);
}

void rvs_api_v1(const struct rvs_config *cfg, int post, const char *path, const char *query,
		const uint8_t *body, size_t len, struct rvs_query_resp *r)
{
	struct rvs_call c = {.cfg = cfg,
			     .method = post ? RVS_M_POST : RVS_M_GET,
			     .path = path,
			     .query = query,
			     .body = body,
			     .body_len = len,
			     .q = r};
	unsigned allow;
	const struct rvs_route *rt = rvs_route_find(c.method, path, &c.arg, &c.arg_len, &allow);

	memset(r, 0, sizeof *r);
	if (!rt || rt->family != RVS_FAMILY_API)
		return rvs_query_set_error(r, 404, "no such resource");
	if (allow)
		return rvs_query_set_error(r, 405, "method not allowed");
	rt->handler(&c);
}

void rvs_query_handle(const char *database, const char *blob_dir, const char *path,
		      const char *query, struct rvs_query_resp *r)
{
	static const struct rvs_config zero;
	struct rvs_config cfg = zero;

	snprintf(cfg.database, sizeof cfg.database, "%s", database);
	snprintf(cfg.blob_dir, sizeof cfg.blob_dir, "%s", blob_dir);
	rvs_api_v1(&cfg, 0, path, query, NULL, 0, r);
}
