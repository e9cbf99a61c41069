/* SPDX-License-Identifier: Apache-2.0 */
/*
 * route.c — the dispatcher (route.h): a request matched against the
 * application's route table (handed in: rvs_route_table_set), its query
 * parameters checked against the entry's, and the entry's handler run.
 *
 * Invariants: the table is constant and ordered — the first entry matching
 * both path and method serves the request; the fallback entries are tried
 * only when no other entry matches the path.  Matching reads only its
 * arguments.  The dispatcher refuses any query parameter its entry does not
 * list, so none is silently ignored.
 */
#include "http/route.h"
#include "base/metrics.h"
#include "base/params.h"

#include "rearview/common.pb-c.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define ANY (RVS_M_GET | RVS_M_POST)

/* The application's table (app/routes.c sets it at load). */
static const struct rvs_route_table *table;

void rvs_route_table_set(const struct rvs_route_table *t)
{
	assert(t && t->routes && t->n && t->web);
	table = t;
}

/* /metrics counts error answers by family (metrics.h). */
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
	const struct rvs_route *routes;
	size_t nroutes;

	assert(table);
	routes = table->routes;
	nroutes = table->n;
	for (size_t k = 0; k < 2 * nroutes; k++) {
		size_t i = k % nroutes;
		int fallback = k >= nroutes;
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
	return methods == ANY ? "GET, POST" : methods == RVS_M_GET ? "GET" : "POST";
}

void rvs_route_run(const struct rvs_http_req *req, const struct rvs_route *rt, unsigned allow,
		   struct rvs_call *call)
{
	if (rt->family == RVS_FAMILY_WEB)
		return table->web(call->cfg, req, rt, allow, call, call->q);
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

void rvs_call_with_store(struct rvs_call *c,
			 void (*fn)(const struct rvs_store_ops *ops, struct rvs_store *st,
				    const char *query, struct rvs_query_resp *r))
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;

	if (rvs_store_acquire(c->cfg->database, &ops, &st))
		return rvs_query_set_error(c->q, 503, "database unavailable");
	fn(ops, st, c->query, c->q);
	rvs_store_release(st);
}
