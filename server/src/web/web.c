/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web.c — the engineer web UI's core: routing, login, sessions, CSRF,
 * security headers, static assets and the page frame.
 *
 * Invariants:
 * - A session id is 32 random bytes (64 hex) that only the browser holds;
 *   the store keeps its SHA-256 with the admin name, a per-session CSRF token
 *   and an expiry.  The cookie is HttpOnly; Secure; SameSite=Strict; Path=/.
 * - Every POST carries a CSRF token that must match (constant time) the
 *   session's, or, for the login form (no session yet), the rv_login cookie
 *   set with the form (double submit); a POST without or with a wrong token
 *   gets 403 before anything changes.
 * - The password check is the PBKDF2 of util.c against the admins table
 *   written by `init`; failures are reported to the caller, which spends the
 *   peer address's failed-authentication budget (api.c).  A disabled
 *   account cannot sign in, and its sessions stop working at once: every
 *   request reads the account's role and disabled flag (users.h).
 * - A SESSION route runs only for a role at least its entry's (route.h);
 *   a lower one gets 403 naming the role needed, before anything changes.
 * - Every untrusted string reaches HTML through rvs_web_esc, and every
 *   attribute is double-quoted.  HTML pages carry a self-only CSP with no
 *   inline script or style, nosniff and X-Frame-Options: DENY.
 * - Static files are a fixed table (app.css, app.js) plus the speedscope
 *   build under RVS_WEB_DIR; a static path is checked character by character
 *   and never contains a ".." or hidden segment.
 */
#include "web/web.h"
#include "web/web_int.h"
#include "http/route.h"
#include "model/export.h"
#include "base/params.h"
#include "base/text.h"
#include "model/users.h"
#include "rearview/analysis.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>

#include "rearview/common.pb-c.h"
#include "base/util.h"

#define SESSION_TTL_S (12 * 3600)
#define LOGIN_TTL_S   3600

static const char CSP_HTML[] =
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
	" object-src 'self'; frame-src 'self'; frame-ancestors 'none'; base-uri 'none';"
	" form-action 'self'";
static const char HTML[] = "text/html; charset=utf-8";

/* ---- escaping ------------------------------------------------------------ */

void rvs_web_esc(FILE *f, const char *s)
{
	/* librvanalysis' escaper (its SVG flame graphs use it too): & < > " '
	 * as entities, control characters as U+FFFD; NULL writes nothing. */
	rva_xml_escape(f, s);
}

void rvs_web_urlenc(FILE *f, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' || *p == '~')
			fputc(*p, f);
		else
			fprintf(f, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
}

/* ---- queries ------------------------------------------------------------- */

char *web_query_without(const char *query, const char *const *keys)
{
	size_t n = query ? strlen(query) : 0, len = 0;
	char *out = malloc(n + 1);
	const char *p = query;

	if (!out)
		return NULL;
	while (p && *p) {
		const char *amp = strchr(p, '&');
		size_t plen = amp ? (size_t)(amp - p) : strlen(p);
		size_t klen = strcspn(p, "=&");
		int drop = 0;
		for (size_t k = 0; keys[k] && !drop; k++)
			drop = strlen(keys[k]) == klen && !memcmp(keys[k], p, klen);
		if (!drop && plen) {
			if (len)
				out[len++] = '&';
			memcpy(out + len, p, plen);
			len += plen;
		}
		p = amp ? amp + 1 : NULL;
	}
	out[len] = '\0';
	return out;
}

/* ---- responses ----------------------------------------------------------- */

static void set_body(struct rvs_query_resp *r, int status, const char *ctype, const char *s)
{
	rvs_reply_text(r, status, ctype, s);
}

void web_page_begin(struct web_ctx *c, const char *title)
{
	FILE *f = c->f;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	      "<link rel=\"stylesheet\" href=\"/static/app.css\">"
	      "<link rel=\"icon\" href=\"/static/favicon.svg\" type=\"image/svg+xml\">"
	      "<script src=\"/static/app.js\" defer></script><title>",
	      f);
	rvs_web_esc(f, title);
	fputs(" — Rearview</title></head><body>", f);
	if (c->user[0]) {
		fputs("<nav><a href=\"/traces\">Traces</a> <a href=\"/issues\">Issues</a>"
		      " <a href=\"/search\">Search</a>"
		      " <a href=\"/callers\">Callers</a>"
		      " <a href=\"/regressions\">Regressions</a> <a href=\"/alerts\">Alerts</a> <a "
		      "href=\"/aggregate\">Aggregate</a> <a href=\"/heatmap\">Heatmap</a>"
		      " <a href=\"/campaigns\">Campaigns</a> <a href=\"/fleet\">Fleet</a>"
		      " <a href=\"/tokens\">API tokens</a>",
		      f);
		if (c->role >= RVS_ROLE_ADMIN)
			fputs(" <a href=\"/users\">Users</a> <a href=\"/audit\">Audit</a>", f);
		fputs("<form class=\"logout\" method=\"post\" action=\"/logout\">", f);
		web_csrf_field(c);
		fputs("<span>", f);
		rvs_web_esc(f, c->user);
		fputs("</span> <button type=\"submit\">Log out</button></form></nav>", f);
	}
	fputs("<main><h1>", f);
	rvs_web_esc(f, title);
	fputs("</h1>", f);
}

void web_page_end(struct web_ctx *c, int status)
{
	fputs("</main></body></html>\n", c->f);
	c->r->status = status;
	c->r->content_type = HTML;
}

void web_error(struct web_ctx *c, int status, const char *msg)
{
	/* Discard whatever part of a page or direct body was written. */
	if (c->f)
		fclose(c->f);
	free(c->page);
	c->page = NULL;
	c->plen = 0;
	free(c->r->body);
	c->r->body = NULL;
	c->r->len = 0;
	c->r->csp = CSP_HTML;
	c->r->frame = "DENY";
	c->r->disposition[0] = '\0';
	c->f = open_memstream(&c->page, &c->plen);
	if (!c->f)
		return;
	web_page_begin(c, status == 404 ? "Not found" : "Error");
	fputs("<p class=\"error\">", c->f);
	rvs_web_esc(c->f, msg);
	fputs("</p>", c->f);
	web_page_end(c, status);
}

void web_redirect(struct web_ctx *c, const char *location)
{
	c->r->status = 303;
	c->r->content_type = HTML;
	snprintf(c->r->location, sizeof c->r->location, "%s", location);
}

void web_csrf_field(struct web_ctx *c)
{
	fprintf(c->f, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", c->csrf);
}

json_t *web_api(struct web_ctx *c, const char *path, const char *query, int *status)
{
	struct rvs_query_resp q;
	json_t *j = NULL;
	rvs_api_v1(c->cfg, 0, path, query, NULL, 0, &q);
	*status = q.status;
	if (q.body && q.content_type && strncmp(q.content_type, "application/json", 16) == 0)
		j = json_loadb(q.body, q.len, 0, NULL);
	free(q.body);
	rvs_export_free(q.stream);
	return j;
}

void web_version_lists(struct web_ctx *c, const char *app)
{
	char q[300] = "";
	int status;
	json_t *doc, *o, *v;
	size_t i, k;
	FILE *f = c->f;

	if (app && app[0]) {
		FILE *qf = fmemopen(q, sizeof q - 1, "w");
		if (!qf)
			return;
		fputs("app=", qf);
		rvs_web_urlenc(qf, app);
		fclose(qf);
	}
	doc = web_api(c, "/api/v1/versions", "", &status);
	if (!doc || status != 200) {
		json_decref(doc);
		return;
	}
	fputs("<datalist id=\"apps\">", f);
	json_array_foreach(json_object_get(doc, "apps"), i, o)
	{
		fputs("<option value=\"", f);
		web_field(c, o, "app_id");
		fputs("\">", f);
	}
	fputs("</datalist>", f);
	if (q[0]) {
		json_decref(doc);
		if (!(doc = web_api(c, "/api/v1/versions", q, &status)) || status != 200) {
			json_decref(doc);
			return;
		}
	}
	/* One option per version; several apps' same version once. */
	fputs("<datalist id=\"versions\">", f);
	json_t *seen = json_object();
	json_array_foreach(json_object_get(doc, "apps"), i, o)
		json_array_foreach(json_object_get(o, "versions"), k, v)
	{
		const char *s = json_string_value(v);
		if (!s || json_object_get(seen, s))
			continue;
		json_object_set_new(seen, s, json_true());
		fputs("<option value=\"", f);
		rvs_web_esc(f, s);
		fputs("\">", f);
	}
	fputs("</datalist>", f);
	json_decref(seen);
	json_decref(doc);
}

const char *web_list_of(const char *name)
{
	size_t n = strlen(name);
	if (strcmp(name, "app") == 0)
		return " list=\"apps\"";
	if (n >= 7 && strcmp(name + n - 7, "version") == 0)
		return " list=\"versions\"";
	return "";
}

void web_field(struct web_ctx *c, json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (json_is_string(v))
		rvs_web_esc(c->f, json_string_value(v));
	else if (json_is_integer(v))
		fprintf(c->f, "%lld", (long long)json_integer_value(v));
}

void web_ms(FILE *f, json_t *v)
{
	/* Medians come as reals (regress.c): any number, not only integers. */
	if (json_is_number(v) && isfinite(json_number_value(v)))
		fprintf(f, "%.3f", json_number_value(v) / 1e6);
	else
		fputs("–", f);
}

/* v with a comma every three digits. */
static void thousands(FILE *f, int64_t v)
{
	char d[32];
	int n = snprintf(d, sizeof d, "%lld", (long long)(v < 0 ? 0 : v));
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			fputc(',', f);
		fputc(d[i], f);
	}
}

void web_range(struct web_ctx *c, const char *id, int64_t first, size_t shown, int64_t total,
	       int capped)
{
	fprintf(c->f, "<p class=\"range\" id=\"range-%s\">", id);
	if (shown) {
		fputs("Rows ", c->f);
		thousands(c->f, first);
		fputs("–", c->f);
		thousands(c->f, first + (int64_t)shown - 1);
	} else {
		fputs("No rows", c->f);
	}
	fprintf(c->f, " of %s<b id=\"total-%s\">", capped ? "more than " : "", id);
	thousands(c->f, total);
	fputs("</b></p>", c->f);
}

int64_t web_first_row(const char *query)
{
	char v[32];
	int64_t n;
	if (rvs_query_param(query, "first", v, sizeof v) != 1 || rvs_parse_i64(v, &n) || n < 1)
		return 1;
	return n;
}

const char *web_kind_name(int kind)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&rearview__anomaly_kind__descriptor, kind);
	return v ? v->name : "?";
}

int web_trace_id(struct rvs_call *call, char id[40])
{
	if (call->arg_len >= 40) {
		web_error(call->ctx, 404, "no such trace");
		return -1;
	}
	memcpy(id, call->arg, call->arg_len);
	id[call->arg_len] = '\0';
	return 0;
}

/* ---- sessions ------------------------------------------------------------ */

/* The value of cookie name in a Cookie header, into out (hex only). */
static int cookie_get(const char *hdr, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);
	const char *p = hdr;
	while (*p) {
		size_t n;
		while (*p == ' ' || *p == ';')
			p++;
		n = strcspn(p, ";");
		if (n > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
			size_t vl = n - nl - 1;
			const char *v = p + nl + 1;
			if (vl + 1 > outsz || strspn(v, "0123456789abcdef") < vl)
				return 0;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return 1;
		}
		p += n;
	}
	return 0;
}

static int random_hex(char *out, size_t nbytes)
{
	uint8_t raw[32];
	if (nbytes > sizeof raw || rvs_random(raw, nbytes))
		return -EIO;
	rvs_hex(raw, nbytes, out);
	return 0;
}

/* Finds the live session named by the request's cookie. */
static int session_lookup(struct web_ctx *c)
{
	char id[65];
	uint8_t h[32];
	int rc, disabled = 0;

	if (!cookie_get(c->req->cookie, "rv_session", id, sizeof id) || strlen(id) != 64)
		return -ENOENT;
	rvs_sha256(id, 64, h);
	rc = c->ops->session_get(c->st, h, (int64_t)time(NULL), c->user, c->csrf);
	if (rc == 0)
		rc = c->ops->user_get(c->st, c->user, &c->role, &disabled);
	/* A disabled (or deleted) account's sessions stop at once. */
	if (rc == 0 && disabled)
		rc = -ENOENT;
	return rc == -ENOENT ? rc : rc ? -EIO : 0;
}

static int session_create(struct web_ctx *c, const char *user, char id[65])
{
	uint8_t h[32];
	int64_t now = (int64_t)time(NULL);

	if (random_hex(id, 32) || random_hex(c->csrf, 32))
		return -EIO;
	rvs_sha256(id, 64, h);
	return c->ops->session_put(c->st, h, user, c->csrf, now, now + SESSION_TTL_S) ? -EIO : 0;
}

static void session_delete(struct web_ctx *c)
{
	char id[65];
	uint8_t h[32];
	if (!cookie_get(c->req->cookie, "rv_session", id, sizeof id) || strlen(id) != 64)
		return;
	rvs_sha256(id, 64, h);
	c->ops->session_delete(c->st, h);
}

/* 0 when the admin's PBKDF2 hash matches password, -EACCES otherwise. */
static int password_ok(struct web_ctx *c, const char *user, const char *password, int *hashed)
{
	uint8_t got[32], salt[64], hash[32];
	size_t sl = sizeof salt;
	unsigned iter;
	int rc = c->ops->admin_get(c->st, user, &iter, salt, &sl, hash);

	if (rc == -ENOENT) {
		/* No such user: the same hash work as a real one, so the answer
		 * takes as long and says nothing about which names exist. */
		static const uint8_t dummy_salt[16] = {0};
		rvs_pbkdf2(password, dummy_salt, sizeof dummy_salt, RVS_ADMIN_PBKDF2_ITERATIONS,
			   got);
		*hashed = 1;
		return -EACCES;
	}
	if (rc == -EBADMSG || (rc == 0 && sl == 0))
		return -EACCES;
	if (rc)
		return -EIO;
	*hashed = 1;
	if (rvs_pbkdf2(password, salt, sl, iter, got) == 0 && rvs_ct_equal(got, 32, hash, 32))
		return 0;
	return -EACCES;
}

static void set_session_cookie(struct rvs_query_resp *r, int slot, const char *id, int ttl)
{
	snprintf(r->set_cookie[slot], sizeof r->set_cookie[slot],
		 "rv_session=%s; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=%d", id, ttl);
}

/* ---- login / logout ------------------------------------------------------- */

static void login_form(struct web_ctx *c, int status, const char *msg)
{
	char tok[65];
	if (random_hex(tok, 32))
		return web_error(c, 500, "no randomness");
	snprintf(c->r->set_cookie[1], sizeof c->r->set_cookie[1],
		 "rv_login=%s; HttpOnly; Secure; SameSite=Strict; Path=/login; Max-Age=%d", tok,
		 LOGIN_TTL_S);
	c->user[0] = '\0';
	web_page_begin(c, "Sign in");
	if (msg) {
		fputs("<p class=\"error\">", c->f);
		rvs_web_esc(c->f, msg);
		fputs("</p>", c->f);
	}
	fprintf(c->f,
		"<form method=\"post\" action=\"/login\" class=\"login\">"
		"<input type=\"hidden\" name=\"csrf\" value=\"%s\">"
		"<label>User <input name=\"user\" value=\"admin\" autocomplete=\"username\""
		" required></label>"
		"<label>Password <input type=\"password\" name=\"password\""
		" autocomplete=\"current-password\" required></label>"
		"<button type=\"submit\">Sign in</button></form>",
		tok);
	web_page_end(c, status);
}

static void login_post(struct web_ctx *c)
{
	char want[65], got[80], user[64], pw[256], id[65];
	int rc, disabled = 0;

	if (!cookie_get(c->req->cookie, "rv_login", want, sizeof want) || strlen(want) != 64 ||
	    rvs_query_param(c->form, "csrf", got, sizeof got) != 1 ||
	    !rvs_ct_equal(want, 64, got, strlen(got)))
		return web_error(c, 403, "missing or wrong CSRF token; reload the sign-in page");
	if (rvs_query_param(c->form, "user", user, sizeof user) != 1 ||
	    rvs_query_param(c->form, "password", pw, sizeof pw) != 1)
		return login_form(c, 400, "user and password are required");
	rc = password_ok(c, user, pw, &c->r->hashed);
	memset(pw, 0, sizeof pw);
	if (rc == 0 && (rc = c->ops->user_get(c->st, user, &c->role, &disabled)) == 0 && disabled)
		rc = -EACCES;
	if (rc == -EACCES) {
		c->r->auth_failed = 1;
		return login_form(c, 401, "wrong user or password");
	}
	if (rc || session_create(c, user, id))
		return web_error(c, 500, "cannot create a session");
	set_session_cookie(c->r, 0, id, SESSION_TTL_S);
	snprintf(c->r->set_cookie[1], sizeof c->r->set_cookie[1],
		 "rv_login=; HttpOnly; Secure; SameSite=Strict; Path=/login; Max-Age=0");
	web_redirect(c, "/traces");
}

/* ---- static assets --------------------------------------------------------- */

static const char APP_CSS[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}"
	"nav{background:#263238;padding:6px 12px;display:flex;gap:12px;align-items:center}"
	"nav a{color:#fff;text-decoration:none}nav .logout{margin-left:auto;color:#ccc}"
	"main{padding:8px 16px}table{border-collapse:collapse;margin:8px 0}"
	"td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}"
	".error{color:#b00020}.alert{color:#fff;background:#b00020;padding:4px}"
	".ok{color:#1b5e20}form.filters{display:flex;flex-wrap:wrap;gap:6px}"
	"form.filters label{display:flex;flex-direction:column;font-size:12px}"
	"code{word-break:break-all}.flame{width:100%;height:480px;border:1px solid #ccc}"
	".timeline{width:100%;border:1px solid #ccc}"
	".timeline rect.sel{stroke:#000;stroke-width:1}"
	"form.login{display:flex;flex-direction:column;max-width:280px;gap:8px}"
	"ul.jank-versions{margin:0;padding-left:1.2em;white-space:nowrap}";

/* Progressive enhancement only: every page works without it. */
static const char APP_JS[] =
	"'use strict';\n"
	"document.addEventListener('DOMContentLoaded',function(){\n"
	" var info=document.getElementById('tl-info');\n"
	" document.querySelectorAll('svg.timeline rect[data-name]').forEach(function(r){\n"
	"  r.addEventListener('click',function(){\n"
	"   document.querySelectorAll('svg.timeline rect.sel').forEach(function(x){"
	"x.classList.remove('sel');});\n"
	"   r.classList.add('sel');\n"
	"   if(info)info.textContent=r.getAttribute('data-name')+' — '+"
	"r.getAttribute('data-ms')+' ms';\n"
	"  });\n"
	" });\n"
	" document.querySelectorAll('select[data-autosubmit]').forEach(function(s){\n"
	"  s.addEventListener('change',function(){s.form.submit();});\n"
	" });\n"
	"});\n";

static const char FAVICON[] =
	"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
	"<rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#263238\"/>"
	"<rect x=\"2\" y=\"10\" width=\"12\" height=\"3\" fill=\"#ffb74d\"/>"
	"<rect x=\"4\" y=\"6\" width=\"7\" height=\"3\" fill=\"#e57373\"/></svg>";

/* The web assets' directory: $RVS_WEB_DIR, else share/rearview/web beside
 * the executable's bin/ (the installed tree; the build tree has a link
 * there), so no build path is compiled in.  0 or -ENOENT. */
static int web_dir(char *out, size_t n)
{
	const char *env = getenv("RVS_WEB_DIR");
	char exe[512], *slash;
	ssize_t k;

	if (env && *env)
		return snprintf(out, n, "%s", env) < (int)n ? 0 : -ENOENT;
	k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k <= 0 || (size_t)k >= sizeof exe - 1)
		return -ENOENT;
	exe[k] = '\0';
	if (!(slash = strrchr(exe, '/')))
		return -ENOENT;
	*slash = '\0';
	return snprintf(out, n, "%s/../share/rearview/web", exe) < (int)n ? 0 : -ENOENT;
}

static int static_path_ok(const char *p)
{
	if (!*p || strlen(p) > 200)
		return 0;
	for (const char *q = p; *q; q++) {
		char ch = *q;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '/'))
			return 0;
		/* no empty, hidden or parent segments */
		if ((q == p || q[-1] == '/') && (ch == '.' || ch == '/'))
			return 0;
	}
	return p[strlen(p) - 1] != '/';
}

static const char *ctype_of(const char *p)
{
	static const char *const map[][2] = {
		{".html", "text/html; charset=utf-8"},
		{".js", "text/javascript; charset=utf-8"},
		{".css", "text/css; charset=utf-8"},
		{".json", "application/json"},
		{".png", "image/png"},
		{".svg", "image/svg+xml"},
		{".txt", "text/plain; charset=utf-8"},
		{".wasm", "application/wasm"},
		{".map", "application/json"},
		{".ico", "image/x-icon"},
		{".ttf", "font/ttf"},
		{".woff2", "font/woff2"},
	};
	const char *dot = strrchr(p, '.');
	for (size_t i = 0; dot && i < sizeof map / sizeof map[0]; i++)
		if (strcmp(dot, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/* The speedscope build's own CSP: its bundled scripts, a WebAssembly module
 * (wasm-unsafe-eval, not unsafe-eval), inline styles, and the profile
 * fetched from this origin. */
static const char CSP_SPEEDSCOPE[] =
	"default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' "
	"'unsafe-inline';"
	" img-src 'self' data: blob:; connect-src 'self'; worker-src 'self' blob:;"
	" frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

static void serve_static(struct web_ctx *c, const char *p)
{
	char path[1000], dir[700];
	const char *ct;
	uint8_t *buf;
	size_t len;

	if (strcmp(p, "app.css") == 0)
		return set_body(c->r, 200, "text/css; charset=utf-8", APP_CSS);
	if (strcmp(p, "app.js") == 0)
		return set_body(c->r, 200, "text/javascript; charset=utf-8", APP_JS);
	if (strcmp(p, "timeline.js") == 0)
		return set_body(c->r, 200, "text/javascript; charset=utf-8", WEB_TIMELINE_JS);
	if (strcmp(p, "trend.js") == 0)
		return set_body(c->r, 200, "text/javascript; charset=utf-8", WEB_TREND_JS);
	if (strcmp(p, "heatmap.js") == 0)
		return set_body(c->r, 200, "text/javascript; charset=utf-8", WEB_HEATMAP_JS);
	if (strcmp(p, "favicon.svg") == 0)
		return set_body(c->r, 200, "image/svg+xml", FAVICON);
	if (strncmp(p, "speedscope/", 11) != 0 || !static_path_ok(p + 11) || !(ct = ctype_of(p)) ||
	    web_dir(dir, sizeof dir))
		return web_error(c, 404, "no such file");
	snprintf(path, sizeof path, "%s/speedscope/%s", dir, p + 11);
	if (rvs_read_file(path, 32u << 20, &buf, &len))
		return web_error(c, 404, "no such file");
	free(c->r->body);
	c->r->body = (char *)buf;
	c->r->len = len;
	c->r->status = 200;
	c->r->content_type = ct;
	c->r->csp = CSP_SPEEDSCOPE;
}

/* ---- routing ---------------------------------------------------------------- */

static int csrf_ok(struct web_ctx *c)
{
	char got[80];
	return rvs_query_param(c->form, "csrf", got, sizeof got) == 1 && c->csrf[0] &&
	       rvs_ct_equal(got, strlen(got), c->csrf, strlen(c->csrf));
}

/* ---- the endpoints (route.c's table) ----------------------------------------- */

void rvs_web_static(struct rvs_call *call)
{
	serve_static(call->ctx, call->arg);
}

void rvs_web_favicon(struct rvs_call *call)
{
	serve_static(call->ctx, "favicon.svg");
}

void rvs_web_login_form(struct rvs_call *call)
{
	login_form(call->ctx, 200, NULL);
}

void rvs_web_login(struct rvs_call *call)
{
	login_post(call->ctx);
}

void rvs_web_logout(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	session_delete(c);
	set_session_cookie(c->r, 0, "", 0);
	web_redirect(c, "/login");
}

void rvs_web_root(struct rvs_call *call)
{
	web_redirect(call->ctx, "/traces");
}

void rvs_web_not_found(struct rvs_call *call)
{
	web_error(call->ctx, 404, "no such page");
}

/* The session check of SESSION routes (a signed-out GET is sent to the
 * login page, a POST refused; a POST needs the session's CSRF token), the
 * web UI's answers to a method no route serves, then the handler. */
static void dispatch(struct web_ctx *c, const struct rvs_route *rt, unsigned allow,
		     struct rvs_call *call)
{
	int get = c->req->method == HTTP_GET, post = c->req->method == HTTP_POST;
	char bad[128], msg[160];

	assert(rt->family == RVS_FAMILY_WEB);
	if (rt->auth == RVS_AUTH_SESSION) {
		if (session_lookup(c)) {
			c->user[0] = '\0';
			c->csrf[0] = '\0';
			c->role = 0;
			if (post)
				return web_error(c, 403, "not signed in");
			return web_redirect(c, "/login");
		}
		assert(rt->role >= RVS_ROLE_VIEWER && rt->role <= RVS_ROLE_ADMIN);
		if (c->role < rt->role && !allow) {
			snprintf(msg, sizeof msg, "this needs the %s role",
				 rvs_role_name(rt->role));
			return web_error(c, 403, msg);
		}
		if (!get && !post)
			return web_error(c, 405, "method not allowed");
		if (post && !csrf_ok(c))
			return web_error(c, 403, "missing or wrong CSRF token");
	}
	if (allow && rt->handler == rvs_web_not_found)
		return web_error(c, 404, "no such page");
	if (allow)
		return post && rt->auth == RVS_AUTH_SESSION
			       ? web_error(c, 404, "no such form")
			       : web_error(c, 405, "method not allowed");
	if (rvs_route_params_check(rt, c->req->query, bad, sizeof bad)) {
		snprintf(msg, sizeof msg, "unknown parameter: %s", bad);
		return web_error(c, 400, msg);
	}
	call->ctx = c;
	rt->handler(call);
}

void rvs_web_handle(const struct rvs_config *cfg, const struct rvs_http_req *req,
		    const struct rvs_route *route, unsigned allow, struct rvs_call *call,
		    struct rvs_query_resp *r)
{
	struct web_ctx *c = calloc(1, sizeof *c);

	memset(r, 0, sizeof *r);
	r->csp = CSP_HTML;
	r->frame = "DENY";
	if (!c)
		return set_body(r, 503, "text/plain", "out of memory");
	c->cfg = cfg;
	c->req = req;
	c->r = r;
	if (req->body_len >= sizeof c->form) {
		free(c);
		return set_body(r, 413, "text/plain", "form too large");
	}
	if (req->body_len)
		memcpy(c->form, req->body, req->body_len);
	c->form[req->body_len] = '\0';
	if (rvs_store_acquire(cfg->database, &c->ops, &c->st)) {
		free(c);
		return set_body(r, 503, "text/plain", "database unavailable");
	}
	c->f = open_memstream(&c->page, &c->plen);
	if (c->f) {
		dispatch(c, route, allow, call);
		if (c->f)
			fclose(c->f);
	}
	/* A page, unless a handler answered with a body (or an export) of
	 * its own. */
	if (!r->body && !r->stream) {
		r->body = c->page;
		r->len = c->plen;
	} else {
		free(c->page);
	}
	rvs_store_release(c->st);
	memset(c->form, 0, sizeof c->form); /* it may hold a password */
	free(c);
	if (!r->status)
		set_body(r, 500, "text/plain", "internal error");
}
