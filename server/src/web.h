/*
 * web.h — the engineer web UI (server/WEB.md): login, sessions, CSRF, and
 * HTML pages rendered from the same JSON documents the /api/v1/ API serves.
 * rvs_web_handle runs on a work thread (sqlite, PBKDF2, file reads);
 * rvs_web_path is a pure check used by the router on the loop thread.
 */
#ifndef RVS_WEB_H
#define RVS_WEB_H

#include <stdio.h>

#include "rvs.h"

struct rvs_web_resp {
	int status;
	const char *content_type; /* static */
	char *body;		  /* malloc'd; caller frees */
	size_t len;
	const char *csp;	 /* static Content-Security-Policy */
	const char *frame;	 /* static X-Frame-Options */
	char set_cookie[2][192]; /* "" when unused */
	char location[1100];	 /* redirect target, "" if none */
	char disposition[96];	 /* Content-Disposition, "" if none */
	int auth_failed;	 /* a login attempt failed: charge the peer's budget */
	int hashed;		 /* a password hash was computed (known user or not) */
	/* An export or flame graph: no body, this instead (query.h; owned by
	 * whoever holds the response: streamed to the client or freed). */
	struct rvs_export *stream;
};

/* 1 when path belongs to the web UI (and so not to the device or JSON API). */
int rvs_web_path(const char *path);
/* 1 when the request is a login attempt (rate limited by the caller). */
int rvs_web_is_login(const struct rvs_http_req *req);

/* Work thread: answers one UI request.  Fills *r always (an HTML error page
 * on failure).  Every HTML answer carries r->csp and X-Frame-Options. */
void rvs_web_handle(const struct rvs_config *cfg, const struct rvs_http_req *req,
		    struct rvs_web_resp *r);

/* ---- shared by web*.c --------------------------------------------------- */

/* Writes s HTML-escaped (& < > " ' and control characters): the one escaper
 * every untrusted string passes through, valid in text and quoted attributes. */
void rvs_web_esc(FILE *f, const char *s);
/* Writes s percent-encoded (all but unreserved characters), for URLs. */
void rvs_web_urlenc(FILE *f, const char *s);

#endif
