/* SPDX-License-Identifier: Apache-2.0 */
/*
 * users.h — accounts with roles: the audit log's writer and the account,
 * password and token changes the web pages and the JSON API share
 * (users.c).  The role names are the store's (store.h).
 */
#ifndef RVS_USERS_H
#define RVS_USERS_H

#include <stdint.h>

#include "store/store.h"

/* PBKDF2-SHA256 iterations of an admin password (init), also spent on a
 * sign-in for an unknown user. */
#define RVS_ADMIN_PBKDF2_ITERATIONS 210000

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
 * password (the caller shows it once and zeroes it); the account's web
 * sessions are deleted (signed in with the old one).  0 or -errno.  Work
 * thread (blocks on the store and the hash); `passwd` and `init` run it
 * too. */
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
 * NEW") or "user.disable"/"user.enable" ("disabled OLD -> NEW"); a
 * disabled account's web sessions are deleted.  -EINVAL nothing to set or
 * a bad role, -EPERM actor disabling or demoting themself, -EBUSY that
 * would leave no enabled admin, -ENOENT no such account, else 0 or
 * -errno.  Work thread. */
int rvs_user_change(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
		    const char *name, int role, int disabled);

/* A new personal API token of account owner named name (1 to 64
 * characters): the token ("rvp_" and 48 random hex digits, shown once by
 * the caller, then zeroed) into tok, its id (the first 12 hex digits of
 * its SHA-256, which is all the store keeps) into id; audited as owner's
 * "token.create" (target the id, detail the name).  -EINVAL bad name,
 * -EDQUOT owner already holds max_live live (unrevoked) tokens, else 0 or
 * -errno.  Work thread. */
int rvs_token_make(const struct rvs_store_ops *ops, struct rvs_store *st, const char *owner,
		   const char *name, uint32_t max_live, char tok[53], char id[13]);

/* How many audit rows a page of the audit log shows by default, and at
 * most, newest first. */
#define RVS_AUDIT_PAGE	   200
#define RVS_AUDIT_PAGE_MAX 1000

/* An audit log page asked for (GET /api/v1/audit, the /audit page): the
 * filter and the strings it points at. */
struct rvs_audit_query {
	char actor[64], action[64];
	struct rvs_audit_filter f;
};

/* Parses query's actor, action (exact), since, until (rvs_param_time),
 * before (a row id: the page after it) and limit (default RVS_AUDIT_PAGE,
 * at most RVS_AUDIT_PAGE_MAX) into *q.  0, or -EINVAL with *bad the
 * parameter's name. */
int rvs_audit_query_parse(const char *query, struct rvs_audit_query *q, const char **bad);

#endif
