/*
 * users.h — accounts with roles (issue 16, "more than one engineer"):
 * the role names, the audit log's writer, and the admin's users and audit
 * pages and endpoints (users.c).
 */
#ifndef RVS_USERS_H
#define RVS_USERS_H

#include <stdint.h>

#include "store.h"

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

#endif
