/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reply.c — the one response type's helpers (reply.h): JSON documents and
 * errors, plain bodies, the device API's rearview.Error, and the header
 * list every family's answer is sent with.
 *
 * Invariants: a helper sets status, content type and body together, so a
 * response never carries a body of another content type; a body is
 * malloc'd (NULL only when empty); JSON goes through jansson, which
 * escapes every string.
 */
#include "http/reply.h"
#include "http/net.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rearview/common.pb-c.h"

static const char JSON_TYPE[] = "application/json";

/* The largest rearview.Error sent as protobuf; a longer one goes as text. */
#define PB_ERROR_MAX 512

size_t rvs_reply_headers(const struct rvs_query_resp *r, struct rvs_header *h)
{
	size_t n = 0;

	if (r->etag[0])
		h[n++] = (struct rvs_header){"ETag", r->etag};
	if (r->cache)
		h[n++] = (struct rvs_header){"Cache-Control", r->cache};
	if (r->browser) {
		h[n++] = (struct rvs_header){"X-Content-Type-Options", "nosniff"};
		h[n++] = (struct rvs_header){"Referrer-Policy", "same-origin"};
		/* The web UI is served over HTTPS only: browsers must never
		 * try HTTP. */
		h[n++] = (struct rvs_header){"Strict-Transport-Security", "max-age=31536000"};
	}
	if (r->csp)
		h[n++] = (struct rvs_header){"Content-Security-Policy", r->csp};
	if (r->frame)
		h[n++] = (struct rvs_header){"X-Frame-Options", r->frame};
	for (int i = 0; i < 2; i++)
		if (r->set_cookie[i][0])
			h[n++] = (struct rvs_header){"Set-Cookie", r->set_cookie[i]};
	if (r->location[0])
		h[n++] = (struct rvs_header){"Location", r->location};
	if (r->disposition[0])
		h[n++] = (struct rvs_header){"Content-Disposition", r->disposition};
	if (r->retry_after[0])
		h[n++] = (struct rvs_header){"Retry-After", r->retry_after};
	assert(n <= RVS_REPLY_HEADERS);
	return n;
}

static void set_json(struct rvs_query_resp *r, int status, json_t *doc)
{
	r->status = status;
	r->content_type = JSON_TYPE;
	r->body = json_dumps(doc, JSON_COMPACT);
	r->len = r->body ? strlen(r->body) : 0;
	json_decref(doc);
	if (!r->body) {
		r->status = 500;
		r->body = strdup("{\"error\":\"out of memory\"}");
		r->len = r->body ? strlen(r->body) : 0;
	}
}

void rvs_query_reply(struct rvs_query_resp *r, int status, struct json_t *doc)
{
	if (!doc)
		return rvs_query_set_error(r, 500, "out of memory");
	set_json(r, status, doc);
}

void rvs_query_set_error(struct rvs_query_resp *r, int status, const char *msg)
{
	set_json(r, status, json_pack("{s:s}", "error", msg));
}

void rvs_reply_text(struct rvs_query_resp *r, int status, const char *ctype, const char *s)
{
	r->status = status;
	r->content_type = ctype;
	r->body = strdup(s);
	r->len = r->body ? strlen(r->body) : 0;
}

int rvs_reply_pb_error(struct rvs_query_resp *r, int status, int code, const char *reason)
{
	Rearview__Error e = REARVIEW__ERROR__INIT;
	size_t n;
	int text;
	uint8_t *b;

	e.code = code;
	e.message = (char *)reason;
	n = rearview__error__get_packed_size(&e);
	if ((text = n > PB_ERROR_MAX))
		n = strlen(reason);
	if (!(b = malloc(n ? n : 1)))
		return -ENOMEM;
	if (text)
		memcpy(b, reason, n);
	else
		rearview__error__pack(&e, b);
	r->status = status;
	r->content_type = text ? "text/plain" : RVS_REPLY_PB;
	r->body = (char *)b;
	r->len = n;
	return 0;
}
