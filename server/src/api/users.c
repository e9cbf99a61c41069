/* SPDX-License-Identifier: Apache-2.0 */
/*
 * users.c — the JSON API's accounts endpoints (users.h): users, the audit
 * log and personal API tokens, over the account model (model/users.h).
 *
 * Invariants: only an admin reaches the users and audit handlers, any
 * account its own tokens (app/routes.c's entries, checked by the API gate);
 * every change is audited (by the model) after it succeeds; no password
 * hash or token hash is read or shown here, and a one-time password or a
 * new token is answered once, never stored or logged.
 */
#include "api/users.h"
#include "model/users.h"
#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"
#include "base/config.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

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

/* Fills *rows by scan (users, or the audit rows f selects) on the store of
 * cfg; 0 or -errno. */
static int scan_json(const struct rvs_config *cfg, const struct rvs_audit_filter *f, json_t **rows)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	int rc;

	if (!(*rows = json_array()))
		return -ENOMEM;
	if ((rc = rvs_store_acquire(cfg->database, &ops, &st)))
		return rc;
	rc = f ? ops->audit_list(st, f, audit_json, *rows) : ops->users_list(st, user_json, *rows);
	rvs_store_release(st);
	return rc;
}

void rvs_users_api(struct rvs_call *c)
{
	json_t *rows = NULL;
	if (scan_json(c->cfg, NULL, &rows)) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	rvs_query_reply(c->q, 200, json_pack("{s:o}", "users", rows));
}

void rvs_audit_api(struct rvs_call *c)
{
	struct rvs_audit_query q;
	const char *bad;
	json_t *rows = NULL, *doc;
	int64_t total = 0;
	char msg[64];
	size_t n;

	if (rvs_audit_query_parse(c->query, &q, &bad)) {
		snprintf(msg, sizeof msg, "bad value for parameter: %s", bad);
		return rvs_query_set_error(c->q, 400, msg);
	}
	if (scan_json(c->cfg, &q.f, &rows)) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	n = json_array_size(rows);
	/* The rows the filter selects, counted up to the cap. */
	{
		const struct rvs_store_ops *ops;
		struct rvs_store *st;
		int rc = rvs_store_acquire(c->cfg->database, &ops, &st);
		if (!rc) {
			rc = ops->audit_total(st, &q.f, RVS_LIST_TOTAL_CAP + 1, &total);
			rvs_store_release(st);
		}
		if (rc) {
			json_decref(rows);
			return rvs_query_set_error(c->q, 503, "database unavailable");
		}
	}
	doc = json_pack("{s:o,s:I,s:b}", "audit", rows, "total",
			(json_int_t)(total > RVS_LIST_TOTAL_CAP ? RVS_LIST_TOTAL_CAP : total),
			"total_capped", total > RVS_LIST_TOTAL_CAP);
	if (doc && n && n == q.f.limit)
		json_object_set_new(doc, "next_before",
				    json_copy(json_object_get(json_array_get(rows, n - 1), "id")));
	rvs_query_reply(c->q, 200, doc);
}

/* Refuses a change whose request has a body (its parameters are in the
 * query string, so a body would be silently ignored): 0, or answered. */
static int no_body(struct rvs_call *c)
{
	if (c->body_len == 0)
		return 0;
	rvs_query_set_error(c->q, 400, "this endpoint takes query parameters, not a body");
	return -1;
}

/* A role parameter of c's query: 0 absent, -1 answered (400), or the role. */
static int role_param(struct rvs_call *c)
{
	char v[16];
	int role, rc = rvs_query_param(c->query, "role", v, sizeof v);

	if (rc == 0)
		return 0;
	if (rc < 0 || !(role = rvs_role_parse(v))) {
		rvs_query_set_error(c->q, 400, "bad value for parameter: role");
		return -1;
	}
	return role;
}

/* The store of c for a change: 0, or answered. */
static int change_store(struct rvs_call *c, const struct rvs_store_ops **ops, struct rvs_store **st)
{
	if (rvs_store_acquire(c->cfg->database, ops, st)) {
		rvs_query_set_error(c->q, 503, "database unavailable");
		return -1;
	}
	return 0;
}

void rvs_users_api_create(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char name[64], pw[21];
	int role, rc;

	if (no_body(c))
		return;
	if (rvs_query_param(c->query, "name", name, sizeof name) != 1 || !rvs_user_name_ok(name))
		return rvs_query_set_error(c->q, 400,
					   "bad value for parameter: name (1 to 63 letters, digits,"
					   " '.', '_' or '-')");
	if ((role = role_param(c)) <= 0) {
		if (role == 0)
			rvs_query_set_error(c->q, 400, "missing parameter: role");
		return;
	}
	if (change_store(c, &ops, &st))
		return;
	rc = rvs_user_create(ops, st, c->user, name, role, pw);
	rvs_store_release(st);
	if (rc == -EEXIST)
		return rvs_query_set_error(c->q, 409, "that account exists");
	if (rc)
		return rvs_query_set_error(c->q, 503, "cannot create the account");
	rvs_query_reply(c->q, 201,
			json_pack("{s:s, s:s, s:s}", "name", name, "role", rvs_role_name(role),
				  "password", pw));
	memset(pw, 0, sizeof pw);
}

void rvs_users_api_change(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char name[64], v[8];
	int role, disabled = -1, rc;

	if (no_body(c))
		return;
	if (rvs_url_decode(c->arg, c->arg_len, 0, name, sizeof name) || !rvs_user_name_ok(name))
		return rvs_query_set_error(c->q, 404, "no such user");
	if ((role = role_param(c)) < 0)
		return;
	rc = rvs_query_param(c->query, "disabled", v, sizeof v);
	if (rc == 1 && (!strcmp(v, "0") || !strcmp(v, "1")))
		disabled = v[0] == '1';
	else if (rc != 0)
		return rvs_query_set_error(c->q, 400, "bad value for parameter: disabled (0 or 1)");
	if (!role && disabled < 0)
		return rvs_query_set_error(c->q, 400, "missing parameter: role or disabled");
	if (change_store(c, &ops, &st))
		return;
	rc = rvs_user_change(ops, st, c->user, name, role, disabled);
	if (rc == 0)
		rc = ops->user_get(st, name, &role, &disabled);
	rvs_store_release(st);
	if (rc == -EPERM)
		return rvs_query_set_error(c->q, 400, "an admin cannot disable or demote themself");
	if (rc == -EBUSY)
		return rvs_query_set_error(c->q, 409,
					   "the last enabled admin cannot be disabled or demoted");
	if (rc == -ENOENT)
		return rvs_query_set_error(c->q, 404, "no such user");
	if (rc)
		return rvs_query_set_error(c->q, 503, "database unavailable");
	rvs_query_reply(c->q, 200,
			json_pack("{s:s, s:s, s:b}", "name", name, "role", rvs_role_name(role),
				  "disabled", disabled));
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

void rvs_tokens_api_create(struct rvs_call *c)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char name[65], tok[53], id[13];
	int rc;

	if (no_body(c))
		return;
	rc = rvs_query_param(c->query, "name", name, sizeof name);
	if (rc != 1 || !*name)
		return rvs_query_set_error(c->q, 400,
					   rc == 0 ? "missing parameter: name"
						   : "bad value for parameter: name (1 to 64"
						     " characters)");
	if (token_caller(c, &ops, &st))
		return;
	rc = rvs_token_make(ops, st, c->user, name, c->cfg->max_tokens_per_user, tok, id);
	rvs_store_release(st);
	if (rc == -EDQUOT)
		return rvs_query_set_error(c->q, 409,
					   "you hold as many live tokens as allowed"
					   " (max_tokens_per_user): revoke one first");
	if (rc)
		return rvs_query_set_error(c->q, 503, "cannot make a token");
	rvs_query_reply(c->q, 201,
			json_pack("{s:s, s:s, s:s}", "id", id, "name", name, "token", tok));
	memset(tok, 0, sizeof tok);
}
