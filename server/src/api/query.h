/* SPDX-License-Identifier: Apache-2.0 */
/*
 * query.h — the engineer JSON API /api/v1/… (server/API.md) over the
 * decoded-trace index.  Runs on a work thread; opens its own read-only
 * sqlite connection per request.  Every input from the request is bound as
 * an SQL parameter or checked against a fixed list; every string in the
 * output is JSON-escaped by jansson.
 */
#ifndef RVS_QUERY_H
#define RVS_QUERY_H

/* The pieces the JSON API shares with the web UI, in their own files;
 * included here too for the tests that use them through this header. */
#include "model/export.h"
#include "base/params.h"
#include "http/reply.h"
#include "pipeline/trace_load.h"

/* The JSON API's index endpoints (route.c's table; work thread): each
 * fills c->q always, with an error JSON body on failure.  traces,
 * signatures, weekly, skips: the lists; versions: GET /api/v1/versions
 * (each app's versions in the data, for the pickers); trace: GET /api/v1/traces/{id};
 * export: its export (streamed: c->q->stream); trace_none: another path
 * under /api/v1/traces/ (404); method: GET /api/v1/methods/{name}; none:
 * any other /api/v1/ path (404). */
struct rvs_call;
void rvs_query_traces(struct rvs_call *c);
void rvs_query_signatures(struct rvs_call *c);
void rvs_query_weekly(struct rvs_call *c);
void rvs_query_versions(struct rvs_call *c);
void rvs_query_skips(struct rvs_call *c);
void rvs_query_trace(struct rvs_call *c);
void rvs_query_export(struct rvs_call *c);
void rvs_query_trace_none(struct rvs_call *c);
void rvs_query_method(struct rvs_call *c);
void rvs_query_none(struct rvs_call *c);

/* The JSON API's GET endpoint for path through the route table (route.c),
 * with only database and blob_dir configured.  path: the request path (not decoded) starting with
 * "/api/v1/"; query: the raw query string.  Fills *r (always, with an error JSON body on failure).
 */
void rvs_query_handle(const char *database, const char *blob_dir, const char *path,
		      const char *query, struct rvs_query_resp *r);

#endif
