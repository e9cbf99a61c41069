/* SPDX-License-Identifier: Apache-2.0 */
/*
 * users.h — the JSON API's accounts endpoints (users.c; app/routes.c's
 * table; work thread; each fills c->q always).
 */
#ifndef RVS_API_USERS_H
#define RVS_API_USERS_H

#include "model/users.h"

struct rvs_call;

/* Admin only.  GET /api/v1/users: the accounts.  GET /api/v1/audit: a page
 * of the audit log as rvs_audit_query_parse reads it, newest first, with
 * "next_before" when a next page may follow. */
void rvs_users_api(struct rvs_call *call);
void rvs_audit_api(struct rvs_call *call);
/* POST /api/v1/users?name=&role= (admin): a new account, 201 {"name",
 * "role", "password"} with its one-time password shown this once; 409
 * when it exists.  POST /api/v1/users/NAME?role=&disabled= (admin): sets
 * either or both, 200 {"name", "role", "disabled"}.  Parameters come in
 * the query string; a request with a body is refused (400). */
void rvs_users_api_create(struct rvs_call *call);
void rvs_users_api_change(struct rvs_call *call);

/* Personal API tokens, each account its own (viewer and up): GET
 * /api/v1/tokens and POST /api/v1/tokens/ID/revoke for the calling
 * token's owner (the legacy api.token has no tokens: 400).  Creations and
 * revocations are audited; a token is never stored, logged, listed or
 * shown again. */
void rvs_tokens_api(struct rvs_call *call);
void rvs_tokens_api_revoke(struct rvs_call *call);
/* POST /api/v1/tokens?name= (any account): a new personal token of the
 * caller, 201 {"id", "name", "token"}, the token shown this once (400 for
 * api.token, and for a request with a body). */
void rvs_tokens_api_create(struct rvs_call *call);

#endif
