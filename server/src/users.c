/*
 * users.c — accounts with roles: the role names, the audit log's writer,
 * and the JSON API's users, audit and personal-token endpoints (the web
 * pages are web_users.c).
 *
 * Invariants: a role is one of enum rvs_role, stored by its name; only an
 * admin reaches these handlers (route.c's entries, checked by web.c and
 * api.c); every change a handler makes is audited after it succeeds; no
 * password or token hash is read or shown here.
 */
#include "users.h"
#include "reply.h"
#include "route.h"
#include "rvs.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

static const char *const ROLE_NAMES[] = {NULL, "viewer", "author", "admin"};

const char *rvs_role_name(int role)
{
	return role >= RVS_ROLE_VIEWER && role <= RVS_ROLE_ADMIN ? ROLE_NAMES[role] : NULL;
}

int rvs_role_parse(const char *s)
{
	for (int r = RVS_ROLE_VIEWER; s && r <= RVS_ROLE_ADMIN; r++)
		if (strcmp(s, ROLE_NAMES[r]) == 0)
			return r;
	return 0;
}

int rvs_audit(const struct rvs_store_ops *ops, struct rvs_store *st, const char *actor,
	      const char *action, const char *target, const char *detail)
{
	int rc;

	assert(action && *action);
	rc = ops->audit_add(st, (int64_t)time(NULL), actor ? actor : "", action,
			    target ? target : "", detail ? detail : "");
	if (rc)
		rvs_log("error", "msg=\"audit log write failed\" action=%s rc=%d", action, rc);
	return rc;
}

/* ---- JSON ------------------------------------------------------------------ */

static int user_json(void *arg, const char *name, int role, int disabled, int64_t created)
{
	json_t *o = json_pack("{s:s, s:s, s:b, s:I}", "name", name, "role", rvs_role_name(role),
			      "disabled", disabled, "created_at", (json_int_t)created);
	return o ? json_array_append_new(arg, o) : -ENOMEM;
}

static int audit_json(void *arg, const struct rvs_audit_row *r)
{
	json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:s, s:s}", "id", (json_int_t)r->id, "at",
			      (json_int_t)r->at, "actor", r->actor, "action", r->action, "target",
			      r->target, "detail", r->detail);
	return o ? json_array_append_new(arg, o) : -ENOMEM;
}

/* Fills *rows by scan (users or audit) on the store of cfg; 0 or -errno. */
static int scan_json(const struct rvs_config *cfg, int audit, json_t **rows)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	int rc;

	if (!(*rows = json_array()))
		return -ENOMEM;
	if ((rc = rvs_store_acquire(cfg->database, &ops, &st)))
		return rc;
	rc = audit ? ops->audit_list(st, RVS_AUDIT_PAGE, audit_json, *rows)
		   : ops->users_list(st, user_json, *rows);
	rvs_store_release(st);
	return rc;
}

static void list_api(struct rvs_call *c, int audit)
{
	json_t *rows = NULL;
	if (scan_json(c->cfg, audit, &rows)) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	rvs_query_reply(c->q, 200, json_pack("{s:o}", audit ? "audit" : "users", rows));
}

void rvs_users_api(struct rvs_call *c)
{
	list_api(c, 0);
}

void rvs_audit_api(struct rvs_call *c)
{
	list_api(c, 1);
}

/* ---- personal API tokens: the JSON API ------------------------------------ */

static int token_json(void *arg, const char *id, const char *name, int64_t created,
		      int64_t last_used, int64_t revoked)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:o, s:o}", "id", id, "name", name, "created_at",
			      (json_int_t)created, "last_used",
			      last_used >= 0 ? json_integer(last_used) : json_null(), "revoked_at",
			      revoked >= 0 ? json_integer(revoked) : json_null());
	return o ? json_array_append_new(arg, o) : -ENOMEM;
}

/* The store of c for a personal token's call: 0, or answered. */
static int token_caller(struct rvs_call *c, const struct rvs_store_ops **ops, struct rvs_store **st)
{
	if (!c->user || strcmp(c->user, "api.token") == 0) {
		rvs_query_set_error(c->q, 400, "api.token is no account's: it has no tokens");
		return -1;
	}
	if (rvs_store_acquire(c->cfg->database, ops, st)) {
		rvs_query_set_error(c->q, 503, "database unavailable");
		return -1;
	}
	return 0;
}

void rvs_tokens_api(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	json_t *rows = json_array();
	int rc;

	if (!rows)
		return rvs_query_set_error(c->q, 503, "out of memory");
	if (token_caller(c, &ops, &st)) {
		json_decref(rows);
		return;
	}
	rc = ops->tokens_list(st, c->user, token_json, rows);
	rvs_store_release(st);
	if (rc) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	rvs_query_reply(c->q, 200, json_pack("{s:o}", "tokens", rows));
}

void rvs_tokens_api_revoke(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char id[13];
	int rc;

	if (c->arg_len != 12)
		return rvs_query_set_error(c->q, 404, "no such token");
	if (token_caller(c, &ops, &st))
		return;
	snprintf(id, sizeof id, "%.12s", c->arg);
	rc = ops->token_revoke(st, c->user, id, (int64_t)time(NULL));
	if (rc == 0)
		rvs_audit(ops, st, c->user, "token.revoke", id, "");
	rvs_store_release(st);
	if (rc == -ENOENT)
		return rvs_query_set_error(c->q, 404, "no such live token of yours");
	if (rc)
		return rvs_query_set_error(c->q, 503, "database unavailable");
	rvs_query_reply(c->q, 200, json_pack("{s:s, s:b}", "id", id, "revoked", 1));
}
