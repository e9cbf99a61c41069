/* SPDX-License-Identifier: Apache-2.0 */
/*
 * users.c — accounts with roles: the audit log's writer and the account,
 * password and token changes the web pages (web/web_users.c) and the JSON
 * API (api/users.c) share.
 *
 * Invariants: a role is one of enum rvs_role, stored by its name
 * (store.h's rvs_role_name); every change is audited after it succeeds; no
 * password hash or token hash is read or shown here, and a one-time
 * password or a new token is handed to the caller once, never stored or
 * logged.
 */
#include "model/users.h"
#include "base/log.h"
#include "base/params.h"
#include "base/text.h"
#include "base/util.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <mbedtls/platform_util.h>

int rvs_audit(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
	      const char *action, const char *target, const char *detail)
{
	int rc;

	assert(action && *action);
	rc = ops->audit_add(st, (int64_t)time(NULL), actor ? actor : "", action,
			    target ? target : "", detail ? detail : "");
	if (rc)
		rvs_log("error", "audit log write failed", "action=%s rc=%d", action, rc);
	return rc;
}

int rvs_user_set_password(const struct rvs_store_ops *ops, struct rvs_store *st, const char *user,
			  char password[21])
{
	uint8_t salt[16], hash[32];
	int rc;

	if ((rc = rvs_random_word(password, 20)) || (rc = rvs_random(salt, sizeof salt)) ||
	    (rc = rvs_pbkdf2(password, salt, sizeof salt, RVS_ADMIN_PBKDF2_ITERATIONS, hash)))
		return rc;
	rc = ops->admin_put(st, user, RVS_ADMIN_PBKDF2_ITERATIONS, salt, sizeof salt, hash);
	mbedtls_platform_zeroize(hash, sizeof hash);
	/* Whoever signed in with the old password is signed out. */
	return rc ? rc : ops->sessions_delete_user(st, user);
}

/* ---- changes shared by the web pages and the JSON API ---------------------- */

int rvs_audit_query_parse(const char *query, struct rvs_audit_query *q, const char **bad)
{
	static const char *const names[] = {"since", "until", "before"};
	int64_t limit;
	char v[64];
	int rc;

	memset(q, 0, sizeof *q);
	*bad = "actor";
	if ((rc = rvs_query_param(query, "actor", q->actor, sizeof q->actor)) < 0)
		return -EINVAL;
	q->f.actor = rc && q->actor[0] ? q->actor : NULL;
	*bad = "action";
	if ((rc = rvs_query_param(query, "action", q->action, sizeof q->action)) < 0)
		return -EINVAL;
	q->f.action = rc && q->action[0] ? q->action : NULL;
	for (int i = 0; i < 3; i++) {
		int64_t t;
		*bad = names[i];
		if ((rc = rvs_query_param(query, names[i], v, sizeof v)) < 0)
			return -EINVAL;
		if (!rc || !v[0])
			continue;
		if (i < 2 ? rvs_param_time(v, &t) : rvs_parse_i64(v, &t) || t < 1)
			return -EINVAL;
		if (i == 0)
			q->f.since = t, q->f.has_since = 1;
		else if (i == 1)
			q->f.until = t, q->f.has_until = 1;
		else
			q->f.before_id = t;
	}
	*bad = "limit";
	if (rvs_param_limit(query, RVS_AUDIT_PAGE, RVS_AUDIT_PAGE_MAX, &limit))
		return -EINVAL;
	q->f.limit = (size_t)limit;
	*bad = NULL;
	return 0;
}

int rvs_user_name_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n < 64 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789._-") == n;
}

int rvs_user_create(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
		    const char *name, int role, char password[21])
{
	int old_role, old_disabled, rc;

	assert(name && password);
	if (!rvs_user_name_ok(name) || !rvs_role_name(role))
		return -EINVAL;
	rc = ops->user_get(st, name, &old_role, &old_disabled);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	if ((rc = rvs_user_set_password(ops, st, name, password)) ||
	    (rc = ops->user_set(st, name, role, -1))) {
		memset(password, 0, 21);
		return rc;
	}
	rvs_audit(ops, st, actor, "user.create", name, rvs_role_name(role));
	return 0;
}

/* users_list's rows: counts the enabled admins. */
static int count_admins(void *arg, const char *name, int role, int disabled, int64_t created)
{
	*(int *)arg += role == RVS_ROLE_ADMIN && !disabled;
	return 0;
}

int rvs_user_change(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
		    const char *name, int role, int disabled)
{
	char detail[96];
	int old_role, old_disabled, admins = 0, rc;

	assert(name);
	if ((!role && disabled < 0) || (role && !rvs_role_name(role)) || disabled > 1)
		return -EINVAL;
	if (actor && strcmp(name, actor) == 0 &&
	    (disabled == 1 || (role && role != RVS_ROLE_ADMIN)))
		return -EPERM;
	if ((rc = ops->user_get(st, name, &old_role, &old_disabled)))
		return rc;
	/* Whoever asks (the legacy api.token too), the last enabled admin
	 * stays one. */
	if (old_role == RVS_ROLE_ADMIN && !old_disabled &&
	    (disabled == 1 || (role && role != RVS_ROLE_ADMIN))) {
		if ((rc = ops->users_list(st, count_admins, &admins)))
			return rc;
		if (admins <= 1)
			return -EBUSY;
	}
	rc = ops->user_set(st, name, role, disabled);
	/* A disabled account's sessions end now: enabling it again must not
	 * revive them. */
	if (!rc && disabled == 1)
		rc = ops->sessions_delete_user(st, name);
	if (rc)
		return rc;
	if (role) {
		snprintf(detail, sizeof detail, "%s -> %s", rvs_role_name(old_role),
			 rvs_role_name(role));
		rvs_audit(ops, st, actor, "user.role", name, detail);
	}
	if (disabled >= 0) {
		snprintf(detail, sizeof detail, "disabled %d -> %d", old_disabled, disabled);
		rvs_audit(ops, st, actor, disabled ? "user.disable" : "user.enable", name, detail);
	}
	return 0;
}

/* tokens_list's rows: counts the live ones. */
static int count_live(void *arg, const char *id, const char *name, int64_t created,
		      int64_t last_used, int64_t revoked)
{
	*(uint32_t *)arg += revoked < 0;
	return 0;
}

int rvs_token_make(const struct rvs_store_ops *ops, struct rvs_store *st, const char *owner,
		   const char *name, uint32_t max_live, char tok[53], char id[13])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[24], h[32];
	uint32_t live = 0;
	int rc;

	assert(owner && name && tok && id);
	if (!*name || strlen(name) > 64)
		return -EINVAL;
	if ((rc = ops->tokens_list(st, owner, count_live, &live)))
		return rc;
	if (live >= max_live)
		return -EDQUOT;
	if ((rc = rvs_random(raw, sizeof raw)))
		return rc;
	memcpy(tok, "rvp_", 4);
	for (size_t i = 0; i < sizeof raw; i++) {
		tok[4 + 2 * i] = hex[raw[i] >> 4];
		tok[5 + 2 * i] = hex[raw[i] & 15];
	}
	tok[52] = '\0';
	rvs_sha256(tok, 52, h);
	for (size_t i = 0; i < 6; i++) {
		id[2 * i] = hex[h[i] >> 4];
		id[2 * i + 1] = hex[h[i] & 15];
	}
	id[12] = '\0';
	rc = ops->token_add(st, id, h, owner, name, (int64_t)time(NULL));
	memset(raw, 0, sizeof raw);
	if (rc == 0)
		rvs_audit(ops, st, owner, "token.create", id, name);
	else
		memset(tok, 0, 53);
	return rc;
}
