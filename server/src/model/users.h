/* SPDX-License-Identifier: Apache-2.0 */
/*
 * users.h — accounts with roles (issue 16, "more than one engineer"):
 * the role names, the audit log's writer, and the admin's users and audit
 * pages and endpoints (users.c).
 */
#ifndef RVS_USERS_H
#define RVS_USERS_H

#include <stdint.h>

#include "store/store.h"

/* PBKDF2-SHA256 iterations of an admin password (init), also spent on a
 * sign-in for an unknown user. */
#define RVS_ADMIN_PBKDF2_ITERATIONS 210000

/* The stored and shown name of role (enum rvs_role): "viewer", "author"
 * (campaign author) or "admin"; NULL for any other value.  Pure. */
const char *rvs_role_name(int role);
/* The role named s (rvs_role_name's names), 0 when none.  Pure. */
int rvs_role_parse(const char *s);

/* Appends a row to the audit log of st at the current time: actor did
 * action (a short verb, e.g. "campaign.create") to target, detail (small:
 * the before/after values; never a secret).  A failure is logged and
 * returned (0 or -errno); the change it records has already happened.
 * Work thread (blocks on the store). */
int rvs_audit(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
	      const char *action, const char *target, const char *detail);

/* A new random password (20 characters of an unambiguous alphabet) for
 * account user, created (an enabled admin) if missing, else keeping its
 * role and state: its PBKDF2 hash stored in st, the password itself into
 * password (the caller shows it once and zeroes it).  0 or -errno.  Work
 * thread (blocks on the store and the hash).  Defined in init.c, which
 * `passwd` and `init` run. */
int rvs_user_set_password(const struct rvs_store_ops *ops, struct rvs_store *st, const char *user,
			  char password[21]);

/* Whether s is an account name: 1 to 63 of [A-Za-z0-9._-].  Pure. */
int rvs_user_name_ok(const char *s);

/* Creates account name (rvs_user_name_ok) with role (enum rvs_role) and a
 * new one-time password into password (the caller shows it once and
 * zeroes it), audited as actor's "user.create" (detail: the role).
 * -EINVAL bad name or role, -EEXIST the account exists, else 0 or -errno.
 * Work thread (blocks on the store and the hash). */
int rvs_user_create(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
		    const char *name, int role, char password[21]);

/* Sets account name's role (when role > 0) and disabled flag (when
 * disabled >= 0), each audited as actor's "user.role" (detail "OLD ->
 * NEW") or "user.disable"/"user.enable" ("disabled OLD -> NEW").
 * -EINVAL nothing to set or a bad role, -EPERM actor disabling or
 * demoting themself, -ENOENT no such account, else 0 or -errno.  Work
 * thread. */
int rvs_user_change(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
		    const char *name, int role, int disabled);

/* A new personal API token of account owner named name (1 to 64
 * characters): the token ("rvp_" and 48 random hex digits, shown once by
 * the caller, then zeroed) into tok, its id (the first 12 hex digits of
 * its SHA-256, which is all the store keeps) into id; audited as owner's
 * "token.create" (target the id, detail the name).  -EINVAL bad name,
 * else 0 or -errno.  Work thread. */
int rvs_token_make(const struct rvs_store_ops *ops, struct rvs_store *st, const char *owner,
		   const char *name, char tok[53], char id[13]);

/* How many audit rows the page and the endpoint show, newest first. */
#define RVS_AUDIT_PAGE 200

struct rvs_call;
/* Route handlers (route.c), admin only.  GET /users: the accounts and the
 * forms to change a role or disable/enable; POST /users/NAME: one change
 * (form fields role=…, or disabled=0/1; audited).  GET /audit: the newest
 * audit rows.  GET /api/v1/users and /api/v1/audit: the same as JSON. */
void rvs_web_users(struct rvs_call *call);
/* POST /users (admin): a new account (form name=…, role=…), its one-time
 * password shown once on the page answered; 409 when it exists.  POST
 * /users/NAME with reset=1: a new one-time password, shown the same way. */
void rvs_web_users_post(struct rvs_call *call);
void rvs_web_user_post(struct rvs_call *call);
void rvs_web_audit(struct rvs_call *call);
void rvs_users_api(struct rvs_call *call);
void rvs_audit_api(struct rvs_call *call);
/* POST /api/v1/users?name=&role= (admin): a new account, 201 {"name",
 * "role", "password"} with its one-time password shown this once; 409
 * when it exists.  POST /api/v1/users/NAME?role=&disabled= (admin): sets
 * either or both, 200 {"name", "role", "disabled"}.  Parameters come in
 * the query string; a request with a body is refused (400). */
void rvs_users_api_create(struct rvs_call *call);
void rvs_users_api_change(struct rvs_call *call);

/* Personal API tokens, each account its own (viewer and up).  GET
 * /tokens: the signed-in account's tokens and the forms; POST /tokens
 * (form name=…): a new token, shown once on the page answered; POST
 * /tokens/ID/revoke: revokes one.  GET /api/v1/tokens and POST
 * /api/v1/tokens/ID/revoke: the same for the calling token's owner (the
 * legacy api.token has no tokens: 400).  Creations and revocations are
 * audited; a token is never stored, logged, listed or shown again. */
void rvs_web_tokens(struct rvs_call *call);
void rvs_web_tokens_post(struct rvs_call *call);
void rvs_tokens_api(struct rvs_call *call);
void rvs_tokens_api_revoke(struct rvs_call *call);
/* POST /api/v1/tokens?name= (any account): a new personal token of the
 * caller, 201 {"id", "name", "token"}, the token shown this once (400 for
 * api.token, and for a request with a body). */
void rvs_tokens_api_create(struct rvs_call *call);

#endif
