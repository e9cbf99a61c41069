/* SPDX-License-Identifier: Apache-2.0 */
/*
 * openapi.h — the JSON API's OpenAPI 3.1 document (server/openapi.json),
 * compiled into the server (openapi.c) and served as it is.
 */
#ifndef RVS_API_OPENAPI_H
#define RVS_API_OPENAPI_H

#include <stddef.h>

/* The document's bytes (static, constant, NUL-terminated) and, in *len
 * when len is not NULL, their count without the NUL.  Never fails. */
const char *rvs_openapi_doc(size_t *len);

/* GET /api/v1/openapi.json: the document (app/routes.c's table; public;
 * work thread; fills c->q always: 200, or 503 when out of memory). */
struct rvs_call;
void rvs_openapi_get(struct rvs_call *c);

#endif
