/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_users.c — the web UI's accounts pages: the admin's users (roles,
 * disabling) and audit log, and every account's personal API tokens.
 *
 * Invariants: web.c's dispatcher has checked the session, its CSRF token
 * and the route's role before a handler here runs; every change is audited
 * (users.h) after it succeeds; no password or token hash is read or shown.
 * A personal token is "rvp_" and 48 random hex digits, shown once on the
 * page that made it; the store keeps its SHA-256 and an id (the first 12
 * hex digits of that hash).
 */
#include "web/web.h"
#include "web/web_int.h"
#include "base/params.h"
#include "http/route.h"
#include "model/users.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- pages ----------------------------------------------------------------- */

static int user_row(void *arg, const char *name, int role, int disabled, int64_t created)
{
	struct web_ctx *c = arg;
	FILE *f = c->f;

	(void)created;
	fputs("<tr><td>", f);
	rvs_web_esc(f, name);
	fprintf(f, "</td><td>%s</td><td>%s</td><td>", rvs_role_name(role),
		disabled ? "disabled" : "enabled");
	fputs("<form method=\"post\" action=\"/users/", f);
	rvs_web_urlenc(f, name);
	fputs("\">", f);
	web_csrf_field(c);
	fputs("<select name=\"role\">", f);
	for (int r = RVS_ROLE_VIEWER; r <= RVS_ROLE_ADMIN; r++)
		fprintf(f, "<option%s>%s</option>", r == role ? " selected" : "", rvs_role_name(r));
	fputs("</select><button type=\"submit\">Set role</button></form><form method=\"post\""
	      " action=\"/users/",
	      f);
	rvs_web_urlenc(f, name);
	fputs("\">", f);
	web_csrf_field(c);
	fprintf(f,
		"<input type=\"hidden\" name=\"disabled\" value=\"%d\">"
		"<button type=\"submit\">%s</button></form>",
		!disabled, disabled ? "Enable" : "Disable");
	fputs("<form method=\"post\" action=\"/users/", f);
	rvs_web_urlenc(f, name);
	fputs("\">", f);
	web_csrf_field(c);
	fputs("<input type=\"hidden\" name=\"reset\" value=\"1\">"
	      "<button type=\"submit\">Reset password</button></form></td></tr>",
	      f);
	return 0;
}

/* The users page; user and password: an account whose new password is
 * shown this once (or NULL). */
static void users_page(struct web_ctx *c, const char *user, const char *password)
{
	web_page_begin(c, "Users");
	if (user) {
		fputs("<p class=\"password\">New password of ", c->f);
		rvs_web_esc(c->f, user);
		fprintf(c->f,
			" (shown once; only its hash is stored): <code "
			"id=\"new-password\">%s</code>"
			"</p>",
			password);
	}
	fputs("<form method=\"post\" action=\"/users\">", c->f);
	web_csrf_field(c);
	fputs("<label>New account <input name=\"name\" required maxlength=\"63\"></label>"
	      "<select name=\"role\"><option>viewer</option><option>author</option>"
	      "<option>admin</option></select><button type=\"submit\">Create</button></form>"
	      "<table id=\"users\"><tr><th>User</th><th>Role</th><th>State</th>"
	      "<th>Change</th></tr>",
	      c->f);
	if (c->ops->users_list(c->st, user_row, c))
		return web_error(c, 500, "storage error");
	fputs("</table>", c->f);
	web_page_end(c, 200);
}

void rvs_web_users(struct rvs_call *call)
{
	users_page(call->ctx, NULL, NULL);
}

void rvs_web_users_post(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	char name[64], v[16], pw[21];
	int role, rc;

	if (rvs_query_param(c->form, "name", name, sizeof name) != 1 || !rvs_user_name_ok(name))
		return web_error(c, 400, "a name of 1 to 63 letters, digits, '.', '_' or '-'");
	if (rvs_query_param(c->form, "role", v, sizeof v) != 1 || !(role = rvs_role_parse(v)))
		return web_error(c, 400, "role must be viewer, author or admin");
	rc = rvs_user_create(c->ops, c->st, c->user, name, role, pw);
	if (rc == -EEXIST)
		return web_error(c, 409, "that account exists; reset its password instead");
	if (rc)
		return web_error(c, 500, "cannot create the account");
	users_page(c, name, pw);
	memset(pw, 0, sizeof pw);
}

void rvs_web_user_post(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	char name[64], v[16];
	int role = 0, disabled = -1, old_role, old_disabled, rc;

	if (rvs_url_decode(call->arg, call->arg_len, 0, name, sizeof name) || !*name)
		return web_error(c, 400, "bad user name");
	if (rvs_query_param(c->form, "role", v, sizeof v) == 1 && !(role = rvs_role_parse(v)))
		return web_error(c, 400, "role must be viewer, author or admin");
	if (rvs_query_param(c->form, "disabled", v, sizeof v) == 1) {
		if (strcmp(v, "0") && strcmp(v, "1"))
			return web_error(c, 400, "disabled must be 0 or 1");
		disabled = v[0] == '1';
	}
	if (rvs_query_param(c->form, "reset", v, sizeof v) == 1 && strcmp(v, "1") == 0) {
		char pw[21];
		rc = c->ops->user_get(c->st, name, &old_role, &old_disabled);
		if (rc == -ENOENT)
			return web_error(c, 404, "no such user");
		if (rc || rvs_user_set_password(c->ops, c->st, name, pw))
			return web_error(c, 500, "cannot reset the password");
		rvs_audit(c->ops, c->st, c->user, "user.reset_password", name, "");
		users_page(c, name, pw);
		memset(pw, 0, sizeof pw);
		return;
	}
	switch (rvs_user_change(c->ops, c->st, c->user, name, role, disabled)) {
	case 0:
		break;
	case -EINVAL:
		return web_error(c, 400, "role, disabled or reset is required");
	case -EPERM:
		return web_error(c, 400, "an admin cannot disable or demote themself");
	case -EBUSY:
		return web_error(c, 409, "the last enabled admin cannot be disabled or demoted");
	case -ENOENT:
		return web_error(c, 404, "no such user");
	default:
		return web_error(c, 500, "storage error");
	}
	web_redirect(c, "/users");
}

/* The audit page's rows; the id of the last one into *last. */
struct audit_page {
	FILE *f;
	int64_t last;
	size_t n;
};

static int audit_row(void *arg, const struct rvs_audit_row *r)
{
	struct audit_page *pg = arg;
	FILE *f = pg->f;
	char when[32];
	time_t t = (time_t)r->at;
	struct tm tm;

	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
	fprintf(f, "<tr><td>%s</td><td>", when);
	rvs_web_esc(f, r->actor);
	fputs("</td><td>", f);
	rvs_web_esc(f, r->action);
	fputs("</td><td>", f);
	rvs_web_esc(f, r->target);
	fputs("</td><td>", f);
	rvs_web_esc(f, r->detail);
	fputs("</td></tr>", f);
	pg->last = r->id;
	pg->n++;
	return 0;
}

/* A text input of the audit page's filter form. */
static void audit_input(struct web_ctx *c, const char *name, const char *label, const char *value)
{
	fprintf(c->f, "<label>%s <input name=\"%s\" value=\"", label, name);
	rvs_web_esc(c->f, value);
	fputs("\"></label> ", c->f);
}

/* GET /audit: a page of the audit log (newest first), filtered by actor,
 * action and time as GET /api/v1/audit is, with a link to the next page. */
void rvs_web_audit(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	struct rvs_audit_query q;
	struct audit_page pg = {c->f, 0, 0};
	char since[64] = "", until[64] = "", msg[96];
	const char *bad;
	int64_t total = 0, first = web_first_row(c->req->query);
	char *rows = NULL;
	size_t rows_len = 0;
	FILE *tmp;

	if (rvs_audit_query_parse(c->req->query, &q, &bad)) {
		snprintf(msg, sizeof msg, "bad value for parameter: %s", bad);
		return web_error(c, 400, msg);
	}
	rvs_query_param(c->req->query, "since", since, sizeof since);
	rvs_query_param(c->req->query, "until", until, sizeof until);
	web_page_begin(c, "Audit log");
	fputs("<form id=\"audit-filter\" method=\"get\" action=\"/audit\">", c->f);
	audit_input(c, "actor", "Who", q.actor);
	audit_input(c, "action", "What", q.action);
	audit_input(c, "since", "From (UTC)", since);
	audit_input(c, "until", "Until (UTC)", until);
	fputs("<button type=\"submit\">Filter</button> <a href=\"/audit\">Clear</a></form>", c->f);
	if (c->ops->audit_total(c->st, &q.f, RVS_LIST_TOTAL_CAP + 1, &total))
		return web_error(c, 500, "storage error");
	tmp = open_memstream(&rows, &rows_len);
	if (!tmp)
		return web_error(c, 500, "out of memory");
	pg.f = tmp;
	if (c->ops->audit_list(c->st, &q.f, audit_row, &pg)) {
		fclose(tmp);
		free(rows);
		return web_error(c, 500, "storage error");
	}
	fclose(tmp);
	web_range(c, "audit", first, pg.n, total > RVS_LIST_TOTAL_CAP ? RVS_LIST_TOTAL_CAP : total,
		  total > RVS_LIST_TOTAL_CAP);
	fputs("<table id=\"audit\"><tr><th>When</th><th>Who</th><th>What</th><th>Target</th>"
	      "<th>Detail</th></tr>",
	      c->f);
	fwrite(rows, 1, rows_len, c->f);
	free(rows);
	fputs("</table>", c->f);
	if (pg.n && pg.n == q.f.limit) {
		fputs("<p><a id=\"next\" rel=\"next\" href=\"/audit?", c->f);
		if (q.f.actor) {
			fputs("actor=", c->f);
			rvs_web_urlenc(c->f, q.actor);
			fputs("&amp;", c->f);
		}
		if (q.f.action) {
			fputs("action=", c->f);
			rvs_web_urlenc(c->f, q.action);
			fputs("&amp;", c->f);
		}
		if (since[0]) {
			fputs("since=", c->f);
			rvs_web_urlenc(c->f, since);
			fputs("&amp;", c->f);
		}
		if (until[0]) {
			fputs("until=", c->f);
			rvs_web_urlenc(c->f, until);
			fputs("&amp;", c->f);
		}
		fprintf(c->f, "limit=%zu&amp;before=%lld&amp;first=%lld\">Older →</a></p>",
			q.f.limit, (long long)pg.last, (long long)(first + (int64_t)pg.n));
	}
	web_page_end(c, 200);
}

/* ---- personal API tokens -------------------------------------------------- */

static int token_row(void *arg, const char *id, const char *name, int64_t created,
		     int64_t last_used, int64_t revoked)
{
	struct web_ctx *c = arg;
	FILE *f = c->f;

	fputs("<tr><td>", f);
	rvs_web_esc(f, id);
	fputs("</td><td>", f);
	rvs_web_esc(f, name);
	fprintf(f, "</td><td>%lld</td><td>", (long long)created);
	if (last_used >= 0)
		fprintf(f, "%lld", (long long)last_used);
	else
		fputs("never", f);
	fputs("</td><td>", f);
	if (revoked >= 0) {
		fprintf(f, "revoked %lld", (long long)revoked);
	} else {
		fputs("<form method=\"post\" action=\"/tokens/", f);
		rvs_web_esc(f, id);
		fputs("/revoke\">", f);
		web_csrf_field(c);
		fputs("<button type=\"submit\">Revoke</button></form>", f);
	}
	fputs("</td></tr>", f);
	return 0;
}

/* The tokens page; made: a token just made, shown this once (or NULL). */
static void tokens_page(struct web_ctx *c, const char *made)
{
	web_page_begin(c, "API tokens");
	if (made)
		fprintf(c->f,
			"<p class=\"token\">Your new token (shown once; only its hash is"
			" stored): <code id=\"new-token\">%s</code></p>",
			made);
	fputs("<form method=\"post\" action=\"/tokens\">", c->f);
	web_csrf_field(c);
	fputs("<label>Name <input name=\"name\" required maxlength=\"64\"></label>"
	      "<button type=\"submit\">New token</button></form>"
	      "<table id=\"tokens\"><tr><th>Id</th><th>Name</th><th>Created</th>"
	      "<th>Last used</th><th>State</th></tr>",
	      c->f);
	if (c->ops->tokens_list(c->st, c->user, token_row, c))
		return web_error(c, 500, "storage error");
	fputs("</table>", c->f);
	web_page_end(c, 200);
}

void rvs_web_tokens(struct rvs_call *call)
{
	tokens_page(call->ctx, NULL);
}

void rvs_web_tokens_post(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	char name[65], tok[53], id[13];
	const char *rest = call->arg;
	size_t n = call->arg_len;

	if (n == 0) {
		if (rvs_query_param(c->form, "name", name, sizeof name) != 1 || !*name)
			return web_error(c, 400, "a token needs a name (at most 64 characters)");
		switch (rvs_token_make(c->ops, c->st, c->user, name, c->cfg->max_tokens_per_user,
				       tok, id)) {
		case 0:
			break;
		case -EDQUOT:
			return web_error(c, 409,
					 "you hold as many live tokens as allowed"
					 " (max_tokens_per_user): revoke one first");
		default:
			return web_error(c, 500, "cannot make a token");
		}
		tokens_page(c, tok);
		memset(tok, 0, sizeof tok);
		return;
	}
	/* The route is "/tokens/" and the rest: rest is "ID/revoke". */
	if (n != 12 + 7 || memcmp(rest + 12, "/revoke", 7) != 0)
		return web_error(c, 404, "no such form");
	snprintf(id, sizeof id, "%.12s", rest);
	switch (c->ops->token_revoke(c->st, c->user, id, (int64_t)time(NULL))) {
	case 0:
		rvs_audit(c->ops, c->st, c->user, "token.revoke", id, "");
		return web_redirect(c, "/tokens");
	case -ENOENT:
		return web_error(c, 404, "no such live token of yours");
	default:
		return web_error(c, 500, "storage error");
	}
}
