/*
 * query.h — the engineer JSON API /api/v1/… (server/API.md) over the
 * decoded-trace index.  Runs on a work thread; opens its own read-only
 * sqlite connection per request.  Every input from the request is bound as
 * an SQL parameter or checked against a fixed list; every string in the
 * output is JSON-escaped by jansson.
 */
#ifndef RVS_QUERY_H
#define RVS_QUERY_H

#include <stddef.h>
#include <stdio.h>

#include "reply.h"

/* The JSON API's index endpoints (route.c's table; work thread): each
 * fills c->q always, with an error JSON body on failure.  traces,
 * signatures, weekly, skips: the lists; trace: GET /api/v1/traces/{id};
 * export: its export (streamed: c->q->stream); trace_none: another path
 * under /api/v1/traces/ (404); method: GET /api/v1/methods/{name}; none:
 * any other /api/v1/ path (404). */
struct rvs_call;
void rvs_query_traces(struct rvs_call *c);
void rvs_query_signatures(struct rvs_call *c);
void rvs_query_weekly(struct rvs_call *c);
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

/* Percent-decodes in[0..n) into out (NUL-terminated).  '+' is a space in
 * queries (plus_space).  -EINVAL for bad escapes or an embedded NUL, -E2BIG
 * when it does not fit. */
int rvs_url_decode(const char *in, size_t n, int plus_space, char *out, size_t outsz);

/* Work thread: loads and decodes the stored capture of trace id (the blob
 * of a decoded upload, or of one queued again to be re-symbolized), read
 * from cfg's blob store (rvs_blobs_open_config).  *out
 * is freed with rva_trace_free.  -ENOENT when the id is malformed or the
 * trace has no decoded capture, -EIO when the database or blob cannot be
 * read, -EBADMSG when it does not decode. */
struct rva_trace;
struct rvs_config;
int rvs_query_load_trace(const struct rvs_config *cfg, const char *id, struct rva_trace **out);

/* Any thread: writes the export x to out (its whole body).  0, -ENOMEM,
 * -EIO (a failed write of out: the client went away), -E2BIG (the trace
 * does not fit the format). */
int rvs_export_write(const struct rvs_export *x, FILE *out);
/* Frees x and its trace.  NULL is a no-op.  Any thread. */
void rvs_export_free(struct rvs_export *x);

/* The percent-decoded value of parameter name in an application/
 * x-www-form-urlencoded string (a query or a form body): 1 found, 0 absent,
 * -EINVAL for a bad escape or one that does not fit outsz. */
int rvs_query_param(const char *query, const char *name, char *out, size_t outsz);

#endif
