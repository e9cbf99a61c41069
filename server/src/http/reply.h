/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reply.h — the server's one response type and its helpers (reply.c).
 *
 * Every endpoint family answers through struct rvs_query_resp: the device
 * API (protobuf messages, rearview.Error), the JSON API (JSON documents and
 * {"error": …}), the web UI (HTML pages, redirects, cookies) and the
 * exports (streamed, struct rvs_export).  A handler fills one on a work
 * thread; api.c sends it from the loop thread with the headers
 * rvs_reply_headers lists.  The helpers touch only the response they are
 * given and are safe on any thread.
 */
#ifndef RVS_REPLY_H
#define RVS_REPLY_H

#include <stddef.h>
#include <stdint.h>

/* An export ready to be written: a loaded trace and its format (query.c). */
struct rvs_export;
struct rvs_header;

struct rvs_query_resp {
	int status;
	const char *content_type; /* static */
	char *body;		  /* malloc'd; whoever holds the response frees it */
	size_t len;
	/* A 200 export has no body but this (owned; the caller streams it with
	 * rvs_export_write or frees it with rvs_export_free): exports are
	 * written to the client while they are made, never whole in memory
	 * (issue 18 item 2: a 770 MB Chrome export of 10 M tiny calls). */
	struct rvs_export *stream;
	/* Headers, each left out when NULL or "".  The sender (api.c) sets
	 * cache and browser by family; the handlers set the rest. */
	const char *cache;	 /* static Cache-Control */
	int browser;		 /* a web UI answer: the browser-hardening headers */
	char etag[72];		 /* ETag (device policy) */
	const char *csp;	 /* static Content-Security-Policy */
	const char *frame;	 /* static X-Frame-Options */
	char set_cookie[2][192]; /* Set-Cookie (web sessions) */
	char location[1100];	 /* redirect target */
	char disposition[96];	 /* Content-Disposition for exports */
	char retry_after[16];	 /* Retry-After of a refusal */
	/* Not headers: what the sender charges (web sign-ins). */
	int auth_failed; /* a login attempt failed: charge the peer's budget */
	int hashed;	 /* a password hash was computed (known user or not) */
};

/* The most headers rvs_reply_headers lists. */
#define RVS_REPLY_HEADERS 13

/* Fills h (room for RVS_REPLY_HEADERS) with r's headers, in a fixed order
 * (ETag, Cache-Control, the browser set, Content-Security-Policy,
 * X-Frame-Options, Set-Cookie, Location, Content-Disposition, Retry-After)
 * and returns how many.  h points into r: valid while r is. */
size_t rvs_reply_headers(const struct rvs_query_resp *r, struct rvs_header *h);

/* Fills *r with doc as compact JSON (status; doc's reference is taken; NULL
 * gives a 500 {"error": "out of memory"}).  r->body must not hold a body. */
struct json_t;
void rvs_query_reply(struct rvs_query_resp *r, int status, struct json_t *doc);

/* *r becomes {"error": msg} with status (JSON).  r->body must not hold a
 * body. */
void rvs_query_set_error(struct rvs_query_resp *r, int status, const char *msg);

/* *r becomes a copy of the string s with status and content type ctype
 * (static); an empty body when the copy cannot be made.  r->body must not
 * hold a body. */
void rvs_reply_text(struct rvs_query_resp *r, int status, const char *ctype, const char *s);

/* *r becomes the device API's rearview.Error (code: a Rearview__Error__Code,
 * reason: its human text) with status; as text/plain reason when the
 * message would exceed 512 bytes.  0, or -ENOMEM with r unchanged.
 * r->body must not hold a body. */
int rvs_reply_pb_error(struct rvs_query_resp *r, int status, int code, const char *reason);

/* The device API's content type for protobuf bodies. */
#define RVS_REPLY_PB "application/x-protobuf"

#endif
