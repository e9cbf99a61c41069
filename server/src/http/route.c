/* SPDX-License-Identifier: Apache-2.0 */
/*
 * route.c — the route table: every endpoint of the server in one place
 * (route.h), and the dispatcher that matches a request against it.
 *
 * Invariants: the table is constant and ordered — the first entry matching
 * both path and method serves the request, so specific patterns come
 * before the catch-all entries of their family (the "/api/v1/" and
 * "/traces/" prefixes) that give that family's 404; the web UI's 404 for
 * every other path is a fallback, tried only when no other entry matches.
 * Matching reads only its arguments.  Each entry lists every query
 * parameter its handler (and, for a web page, the API it forwards to)
 * reads: the dispatcher refuses any other, so none is silently ignored.
 */
#include "http/route.h"
#include "base/params.h"
#include "model/agg.h"
#include "api/api.h"
#include "api/campaign.h"
#include "api/fleet.h"
#include "api/query.h"
#include "model/search.h"
#include "model/regress.h"
#include "api/symbols.h"
#include "model/users.h"
#include "web/web.h"
#include "model/webhook.h"

#include "rearview/common.pb-c.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
#define AGG_FILTERS \
	"app", "version", "model", "campaign", "method", "chain", "kind", "since", "until"
#define AGG_SIDE(s)                                                                       \
#s ".app", #s ".version", #s ".model", #s ".campaign", #s ".method", #s ".chain", \
		#s ".kind", #s ".since", #s ".until"
#define AGG_DIFF_PARAMS AGG_FILTERS, AGG_SIDE(a), AGG_SIDE(b)
#define ISSUES_PARAMS	"app", "version", "kind", "weeks", "limit"
#define SEARCH_PARAMS	"chain", "caller", "callee", "contains", "app", "version", "cursor", "limit"
#define REGRESS_PARAMS	"app", "a", "b", "model", "version", "week", "limit"
#define METHOD_PARAMS	"app", "version", "limit"

static const struct rvs_route routes[] = {
	/* The device API (server/API.md) and the scraper's metrics. */
	DEV("/metrics", GET, NONE, LOOP, NULL, rvs_api_metrics),
	DEV("/v1/enroll", POST, ENROLL, WORK, NULL, rvs_api_enroll),
	DEV("/v1/uploads", POST, DEVICE, WORK, NULL, rvs_api_upload),
	DEV("/v1/skips", POST, DEVICE, WORK, NULL, rvs_api_skip),
	DEV("/v1/policy", GET, DEVICE, WORK, NULL, rvs_api_policy),
	/* The JSON API: symbols, campaigns, fleet, the index. */
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
	API("/api/v1/traces", GET, 0, P(TRACES_PARAMS), rvs_query_traces),
	API("/api/v1/traces/*", GET, LOAD, P("why"), rvs_query_trace), /* its "why" */
	API("/api/v1/traces/*/export", GET, LOAD, P("format"), rvs_query_export),
	API("/api/v1/traces/**", GET, 0, ANY_PARAM, rvs_query_trace_none),
	API("/api/v1/signatures", GET, 0, P("limit"), rvs_query_signatures),
	API("/api/v1/signatures/weekly", GET, 0, P("since", "signatures"), rvs_query_weekly),
	API("/api/v1/skips", GET, 0, P("since", "until", "app", "limit"), rvs_query_skips),
	API("/api/v1/methods/**", GET, 0, P(METHOD_PARAMS), rvs_query_method),
	API("/api/v1/aggregate", GET, 0, P(AGG_FILTERS), rvs_agg_api),
	API("/api/v1/aggregate/diff", GET, 0, P(AGG_DIFF_PARAMS), rvs_agg_api_diff),
	API("/api/v1/issues", GET, 0, P(ISSUES_PARAMS), rvs_search_issues),
	API("/api/v1/search", GET, 0, P(SEARCH_PARAMS), rvs_search_chains),
	API("/api/v1/regressions", GET, 0, P(REGRESS_PARAMS), rvs_regress_api),
	API("/api/v1/regressions/runs", GET, 0, NULL, rvs_regress_api_runs),
	API("/api/v1/alerts", GET, 0, NULL, rvs_webhook_api_list),
	API_AS(ADMIN, "/api/v1/users", GET, 0, NULL, rvs_users_api),
	API_AS(ADMIN, "/api/v1/users", POST, 0, P("name", "role"), rvs_users_api_create),
	API_AS(ADMIN, "/api/v1/users/*", POST, 0, P("role", "disabled"), rvs_users_api_change),
	API_AS(ADMIN, "/api/v1/audit", GET, 0, NULL, rvs_audit_api),
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
	WEB("/traces", GET, SESSION, 0, P(TRACES_PARAMS, "from", "to"), rvs_web_traces),
	WEB("/traces/*", GET, SESSION, LOAD, NULL, rvs_web_trace),
	WEB("/traces/*/export", GET, SESSION, LOAD, P("format"), rvs_web_trace_export),
	WEB("/traces/*/flame.svg", GET, SESSION, LOAD, NULL, rvs_web_trace_flame),
	WEB("/traces/*/timeline.json", GET, SESSION, LOAD, P("from", "to", "width"),
	    rvs_web_trace_timeline),
	WEB("/traces/*/butterfly", GET, SESSION, LOAD, P("method"), rvs_web_trace_butterfly),
	WEB("/traces/**", GET, SESSION, 0, ANY_PARAM, rvs_web_trace_none),
	WEB("/signatures", GET, SESSION, 0, P("limit"), rvs_web_signatures),
	WEB("/issues", GET, SESSION, 0, P(ISSUES_PARAMS), rvs_web_issues),
	WEB("/search", GET, SESSION, 0, P(SEARCH_PARAMS), rvs_web_search),
	WEB("/campaigns", GET, SESSION, 0, NULL, rvs_web_campaigns),
	WEB_AS(AUTHOR, "/campaigns", POST, SESSION, 0, NULL, rvs_web_campaigns_post),
	WEB("/campaigns/**", GET, SESSION, 0, NULL, rvs_web_campaign),
	WEB_AS(AUTHOR, "/campaigns/**", POST, SESSION, 0, NULL, rvs_web_campaign_post),
	WEB("/fleet", GET, SESSION, 0, NULL, rvs_web_fleet),
	WEB("/aggregate", GET, SESSION, 0, P(AGG_FILTERS), rvs_web_aggregate),
	WEB("/aggregate/diff", GET, SESSION, 0, P(AGG_DIFF_PARAMS), rvs_web_aggregate_diff),
	WEB("/methods/**", GET, SESSION, 0, P(METHOD_PARAMS), rvs_web_method),
	WEB_AS(AUTHOR, "/methods/**", POST, SESSION, 0, NULL, rvs_web_method_post),
	WEB("/regressions", GET, SESSION, 0, P(REGRESS_PARAMS), rvs_web_regressions),
	WEB_AS(ADMIN, "/users", GET, SESSION, 0, NULL, rvs_web_users),
	WEB_AS(ADMIN, "/users", POST, SESSION, 0, NULL, rvs_web_users_post),
	WEB_AS(ADMIN, "/users/*", POST, SESSION, 0, NULL, rvs_web_user_post),
	WEB_AS(ADMIN, "/audit", GET, SESSION, 0, NULL, rvs_web_audit),
	WEB("/tokens", GET, SESSION, 0, NULL, rvs_web_tokens),
	WEB("/tokens", POST, SESSION, 0, NULL, rvs_web_tokens_post),
	WEB("/tokens/**", POST, SESSION, 0, NULL, rvs_web_tokens_post),
	/* Any path no entry above matches is the web UI's HTML 404 (a POST
	 * too: the dispatcher answers it, web.c), not a protobuf download. */
	WEB("/**", GET, NONE, RVS_ROUTE_FALLBACK, ANY_PARAM, rvs_web_not_found),
};

#define N_ROUTES (sizeof routes / sizeof routes[0])

/* /metrics counts error answers by family (rvs.h). */
_Static_assert(RVS_FAMILY_WEB + 1 == RVS_METRIC_FAMILIES, "one metrics row per route family");

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

	/* The ordinary entries (k < N), then, when none matched the path, the
	 * fallbacks (k >= N). */
	for (size_t k = 0; k < 2 * N_ROUTES; k++) {
		size_t i = k % N_ROUTES;
		int fallback = k >= N_ROUTES;
		const char *a = NULL;
		size_t n = 0;
		if (fallback && first)
			break;
		if (!(routes[i].flags & RVS_ROUTE_FALLBACK) != !fallback ||
		    !match(routes[i].pattern, path, &a, &n))
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

int rvs_route_params_check(const struct rvs_route *rt, const char *query, char *bad, size_t cap)
{
	const char *p = query;

	assert(cap > 0);
	while (p && *p) {
		size_t len = strcspn(p, "&"), klen = strcspn(p, "=&");
		char name[128];
		int known = 0;

		if (klen && rvs_url_decode(p, klen, 1, name, sizeof name) == 0)
			for (const char *const *k = rt->params; k && *k && !known; k++)
				known = strcmp(*k, "*") == 0 || strcmp(*k, name) == 0;
		else if (klen)
			snprintf(name, sizeof name, "%.*s", (int)(klen < 64 ? klen : 64), p);
		if (klen && !known) {
			snprintf(bad, cap, "%s", name);
			return -EINVAL;
		}
		p += len;
		if (*p)
			p++;
	}
	return 0;
}

/* 1 when call's query has a parameter rt does not take: call->q holds the
 * refusal in the form of rt's family (JSON for the API). */
static int refuse_params(const struct rvs_route *rt, struct rvs_call *call)
{
	char bad[128], msg[160];

	if (!rvs_route_params_check(rt, call->query, bad, sizeof bad))
		return 0;
	snprintf(msg, sizeof msg, "unknown parameter: %s", bad);
	if (rt->family == RVS_FAMILY_DEVICE)
		rvs_reply_pb_error(call->q, 400, REARVIEW__ERROR__CODE__MALFORMED, msg);
	else
		rvs_query_set_error(call->q, 400, msg);
	return 1;
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
	if (!refuse_params(rt, call))
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
	if (!refuse_params(rt, &c))
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
