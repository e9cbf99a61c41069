/* SPDX-License-Identifier: Apache-2.0 */
/*
 * route.h — the server's route table (the application's, app/routes.c,
 * handed in: rvs_route_table_set) and its dispatcher (route.c).
 *
 * Every endpoint — device API, JSON API (/api/v1/…, campaigns, fleet,
 * symbols) and web UI — is one entry: its path pattern, the methods it
 * serves, its authentication class, the thread that runs it, its handler
 * and the least role a caller needs (store.h's enum rvs_role).  The API
 * gate (api/gate.c) routes every request through rvs_route_find on the
 * loop thread (authentication, rate limits, the 404/405 answers of each
 * family) and runs the handler where the entry says.  The table is
 * constant; every function here is pure and safe on any thread.
 */
#ifndef RVS_ROUTE_H
#define RVS_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "http/reply.h"
#include "http/http.h"
#include "base/config.h"
#include "store/store.h"

/* Methods, as a set. */
#define RVS_M_GET  1u
#define RVS_M_POST 2u

/* Who may call an endpoint; the loop thread checks it (api.c) except
 * SESSION, which needs the database and is checked by web.c. */
enum rvs_route_auth {
	RVS_AUTH_NONE,	  /* anyone (metrics, static assets, the login form) */
	RVS_AUTH_ENROLL,  /* the enrolment secret, charged per address and secret */
	RVS_AUTH_DEVICE,  /* a device's bearer token, rate limited per device */
	RVS_AUTH_API,	  /* the JSON API token */
	RVS_AUTH_LOGIN,	  /* a sign-in: the failed-authentication budget */
	RVS_AUTH_SESSION, /* a web session (and CSRF token for POST) */
};

/* Where the handler runs. */
enum rvs_route_thread {
	RVS_ON_LOOP, /* cheap, bounded, touches no file or database */
	RVS_ON_WORK, /* a job on the libuv work queue */
};

/* Which family answers an unknown method (and so the error's form): the
 * device API and the JSON API answer 405 with Allow as a rearview.Error on
 * the loop thread, the web UI with an HTML page after its session check. */
enum rvs_route_family { RVS_FAMILY_DEVICE, RVS_FAMILY_API, RVS_FAMILY_WEB };

/* The entry loads a whole trace into memory (an export, a flame graph, the
 * web trace page): bounded by RVS_EXPORT_STREAMS at once. */
#define RVS_ROUTE_TRACE_LOAD 1u
/* The entry serves a path only when no other entry matches it at all (with
 * any method): the web UI's 404 for every other path. */
#define RVS_ROUTE_FALLBACK 2u

/* One call of a handler.  arg/arg_len: what the pattern's wildcard matched
 * (see rvs_route_find), NUL-terminated only for a trailing "**".  q: the
 * answer (reply.h), the one response type of every family (the API
 * family's handlers fill it always; the device API's through its job).
 * ctx: the family's own state (device API: api.c's job; web UI: web.c's
 * context). */
struct rvs_call {
	const struct rvs_config *cfg;
	unsigned method; /* RVS_M_*, 0 for any other method */
	const char *path, *query;
	const uint8_t *body;
	size_t body_len;
	const char *arg;
	size_t arg_len;
	struct rvs_query_resp *q;
	void *ctx;
	/* A symbols upload: the build-id stored, "" if none. */
	char build_id[129];
	/* Who calls, for the audit log (users.h): the JSON API's caller
	 * ("api.token" for the legacy token); NULL for the other families. */
	const char *user;
};

struct rvs_route {
	/* Literal characters; "*" matches a run of characters other than '/'
	 * (possibly empty); a trailing "**" matches the rest of the path. */
	const char *pattern;
	unsigned methods; /* RVS_M_* */
	enum rvs_route_auth auth;
	enum rvs_route_thread thread;
	enum rvs_route_family family;
	unsigned flags; /* RVS_ROUTE_* */
	/* The query parameters the endpoint accepts, NULL-terminated (a lone
	 * "*" accepts any: the catch-all 404 entries); NULL when it takes
	 * none.  The dispatcher refuses any other before the handler runs. */
	const char *const *params;
	void (*handler)(struct rvs_call *c);
	/* The least role (enum rvs_role) a SESSION or API caller needs; 0
	 * for the other classes.  The legacy api.token is an admin's. */
	int role;
};

/* Finds the route of a request: the first entry whose pattern matches path
 * and which serves method (*allow = 0); else, when some entries match path,
 * the first of them with *allow = the union of their methods (the method is
 * not allowed); else the same among the RVS_ROUTE_FALLBACK entries; else
 * NULL (no such resource).  *arg and *arg_len: the first
 * wildcard's match in path. */
const struct rvs_route *rvs_route_find(unsigned method, const char *path, const char **arg,
				       size_t *arg_len, unsigned *allow);

/* 0 when every parameter name in query (decoded) is one rt->params lists;
 * else -EINVAL with the first unknown name (decoded, truncated to fit) in
 * bad[0..cap).  query may be NULL or "". */
int rvs_route_params_check(const struct rvs_route *rt, const char *query, char *bad, size_t cap);

/* The Allow header's value for a set of methods (static). */
const char *rvs_route_allow(unsigned methods);

/* Work thread: runs route rt (as rvs_route_find found it for req, with
 * allow) for call, whose q gets the answer: a web UI entry through the web
 * UI's session check (rvs_web_handle), which also answers a method it does
 * not serve and an unknown parameter (an HTML 400); any other entry's
 * handler (allow must be 0: the loop thread answered the 405), after
 * refusing an unknown parameter (400 {"error": "unknown parameter: NAME"},
 * a rearview.Error for the device API). */
struct rvs_http_req;
void rvs_route_run(const struct rvs_http_req *req, const struct rvs_route *rt, unsigned allow,
		   struct rvs_call *call);

/* The application's routes: the table, in order, and how a web UI entry
 * (family RVS_FAMILY_WEB) runs — through the web UI's session check
 * (web.h's rvs_web_handle), which fills r always.  The application, which
 * sees every endpoint, hands it to the dispatcher, which sees only this:
 * app/routes.c does so when the program is loaded (a constructor), before
 * main runs and before any test calls the dispatcher. */
struct rvs_route_table {
	const struct rvs_route *routes;
	size_t n;
	void (*web)(const struct rvs_config *cfg, const struct rvs_http_req *req,
		    const struct rvs_route *route, unsigned allow, struct rvs_call *call,
		    struct rvs_query_resp *r);
};
/* Sets the table every function below dispatches through (t and its
 * entries are constant and outlive the process's dispatching).  Once, at
 * load, before any thread. */
void rvs_route_table_set(const struct rvs_route_table *t);

/* Work thread: runs fn(ops, st, call's query, call's answer) on the shared
 * store of call's database (rvs_store_acquire), or answers 503 {"error":
 * "database unavailable"}: the JSON API's read endpoints. */
void rvs_call_with_store(struct rvs_call *call,
			 void (*fn)(const struct rvs_store_ops *ops, struct rvs_store *st,
				    const char *query, struct rvs_query_resp *r));

/* Work thread: runs the JSON API (family API) endpoint serving path with
 * method for the web pages and tests; fills *r always (404/405 as JSON
 * when no endpoint serves it, 400 for an unknown parameter).  Symbols stored are not requeued. */
void rvs_api_v1(const struct rvs_config *cfg, int post, const char *path, const char *query,
		const uint8_t *body, size_t len, struct rvs_query_resp *r);

#endif
