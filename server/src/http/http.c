/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c — HTTP/1.1 request parsing on top of the Debian http-parser library.
 *
 * Pure and synchronous (no I/O) so that the network layer and the fuzzer
 * drive the same code.  Invariants: at most one request is held at a time;
 * after on_message_complete the parser is paused, so bytes of a pipelined
 * next request stay with the caller until rvs_http_next().  Limits: the sum
 * of URL, header names and values never exceeds max_header (431), the body
 * never exceeds max_body (413, checked against Content-Length before any
 * body byte is buffered and again for chunked bodies).
 */

#include "http/http.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static struct rvs_http *H(http_parser *p)
{
	return p->data;
}

static int fail(struct rvs_http *h, int status, const char *reason)
{
	h->status = status;
	h->reason = reason;
	return -1;
}

static int count_header(struct rvs_http *h, size_t len)
{
	h->header_bytes += len;
	if (h->header_bytes > h->max_header)
		return fail(h, 431, "request header too large");
	return 0;
}

static int on_message_begin(http_parser *p)
{
	H(p)->began = 1;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct rvs_http *h = H(p);
	if (count_header(h, len))
		return -1;
	if (h->url_len + len >= sizeof h->req.path) {
		h->url_over = 1;
		return 0;
	}
	memcpy(h->req.path + h->url_len, at, len);
	h->url_len += len;
	h->req.path[h->url_len] = '\0';
	return 0;
}

static void pick_target(struct rvs_http *h)
{
	h->target = NULL;
	if (h->field_over)
		return;
	h->field[h->field_len] = '\0';
	if (strcasecmp(h->field, "authorization") == 0) {
		h->target = h->req.auth;
		h->target_cap = sizeof h->req.auth;
	} else if (strcasecmp(h->field, "if-none-match") == 0) {
		h->target = h->req.inm;
		h->target_cap = sizeof h->req.inm;
	} else if (strcasecmp(h->field, "cookie") == 0) {
		h->target = h->req.cookie;
		h->target_cap = sizeof h->req.cookie;
	} else if (strcasecmp(h->field, "expect") == 0) {
		h->target = h->expect;
		h->target_cap = sizeof h->expect;
	} else if (strcasecmp(h->field, "transfer-encoding") == 0) {
		h->te_seen++;
		h->target = h->te;
		h->target_cap = sizeof h->te;
	}
	if (h->target)
		h->target[0] = '\0';
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct rvs_http *h = H(p);
	if (count_header(h, len))
		return -1;
	if (h->last_was_value) {
		h->field_len = 0;
		h->field_over = 0;
		h->last_was_value = 0;
	}
	if (h->field_len + len >= sizeof h->field)
		h->field_over = 1;
	else {
		memcpy(h->field + h->field_len, at, len);
		h->field_len += len;
	}
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct rvs_http *h = H(p);
	size_t cur;
	if (count_header(h, len))
		return -1;
	if (!h->last_was_value) {
		h->last_was_value = 1;
		pick_target(h);
	}
	if (!h->target)
		return 0;
	cur = strlen(h->target);
	if (cur + len >= h->target_cap)
		return fail(h, 431, "header value too long");
	memcpy(h->target + cur, at, len);
	h->target[cur + len] = '\0';
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct rvs_http *h = H(p);
	char *q;

	if (h->url_over)
		return fail(h, 431, "request target too long");
	if (p->upgrade)
		return fail(h, 501, "upgrade not supported");
	/* HTTP/0.9 request lines (no version) and anything but 1.x. */
	if (p->http_major != 1)
		return fail(h, 505, "HTTP version not supported");
	/* Only exactly `chunked`: other codings, lists and repeated headers are
	 * how requests get smuggled past a proxy that reads them otherwise. */
	if (h->te_seen > 1 || (h->te_seen && strcasecmp(h->te, "chunked") != 0))
		return fail(h, 501, "Transfer-Encoding other than chunked not supported");
	/* The query string is kept apart for the JSON API; fragments never
	 * arrive.  Both fit: query is as large as path. */
	q = strchr(h->req.path, '?');
	h->req.query[0] = '\0';
	if (q) {
		snprintf(h->req.query, sizeof h->req.query, "%s", q + 1);
		*q = '\0';
	}
	h->req.method = (enum http_method)p->method;
	h->req.expect_continue = strcasecmp(h->expect, "100-continue") == 0;
	h->headers_done = 1;
	if (p->content_length != ULLONG_MAX && p->content_length > 0) {
		if (p->content_length > h->max_body)
			return fail(h, 413, "request body too large");
		/* Reserve up to 1 MiB now and grow as bytes really arrive, so a
		 * client that only announces a large body costs little. */
		h->body_cap = p->content_length < (1u << 20) ? (size_t)p->content_length : 1u << 20;
		h->req.body = malloc(h->body_cap);
		if (!h->req.body)
			return fail(h, 503, "out of memory");
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct rvs_http *h = H(p);
	if (h->req.body_len + len > h->max_body)
		return fail(h, 413, "request body too large");
	if (h->req.body_len + len > h->body_cap) {
		/* Chunked: grow geometrically, never past max_body. */
		size_t cap = h->body_cap ? h->body_cap * 2 : 16384;
		uint8_t *nb;
		while (cap < h->req.body_len + len)
			cap *= 2;
		if (cap > h->max_body)
			cap = h->max_body;
		nb = realloc(h->req.body, cap);
		if (!nb)
			return fail(h, 503, "out of memory");
		h->req.body = nb;
		h->body_cap = cap;
	}
	memcpy(h->req.body + h->req.body_len, at, len);
	h->req.body_len += len;
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct rvs_http *h = H(p);
	h->complete = 1;
	h->req.keep_alive = http_should_keep_alive(p);
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

static void reset_request(struct rvs_http *h)
{
	free(h->req.body);
	memset(&h->req, 0, sizeof h->req);
	h->header_bytes = 0;
	h->body_cap = 0;
	h->began = 0;
	h->headers_done = 0;
	h->expect[0] = '\0';
	h->te[0] = '\0';
	h->te_seen = 0;
	h->scan_nl = 0;
	h->scan_done = 0;
	h->scan_began = 0;
	h->complete = 0;
	h->field_len = 0;
	h->field_over = 0;
	h->last_was_value = 0;
	h->url_len = 0;
	h->url_over = 0;
	h->target = NULL;
}

void rvs_http_init(struct rvs_http *h, size_t max_header, size_t max_body)
{
	memset(h, 0, sizeof *h);
	http_parser_init(&h->p, HTTP_REQUEST);
	h->p.data = h;
	h->max_header = max_header;
	h->max_body = max_body;
}

void rvs_http_release(struct rvs_http *h)
{
	free(h->req.body);
	h->req.body = NULL;
}

ssize_t rvs_http_feed(struct rvs_http *h, const char *data, size_t len)
{
	size_t n;
	enum http_errno e;

	if (h->status)
		return -EPROTO;
	if (h->complete)
		return 0;
	/* Obsolete header line folding (a line starting with SP or HT inside the
	 * header block) is refused (RFC 9112 §5.2): http-parser would join it
	 * to the previous value.  The scan stops at the blank line. */
	for (size_t i = 0; i < len && !h->scan_done; i++) {
		char c = data[i];
		if (h->scan_nl && (c == ' ' || c == '\t')) {
			h->status = 400;
			h->reason = "obsolete header line folding";
			return -EPROTO;
		}
		if (h->scan_nl && (c == '\r' || c == '\n') && h->scan_began)
			h->scan_done = 1;
		if (c == '\n')
			h->scan_nl = 1;
		else if (c != '\r')
			h->scan_nl = 0;
		if (c != '\r' && c != '\n')
			h->scan_began = 1;
	}
	n = http_parser_execute(&h->p, &settings, data, len);
	e = HTTP_PARSER_ERRNO(&h->p);
	if (e == HPE_PAUSED)
		return (ssize_t)n;
	if (e != HPE_OK) {
		if (!h->status) {
			h->status = e == HPE_HEADER_OVERFLOW ? 431 : 400;
			h->reason = http_errno_description(e);
		}
		return -EPROTO;
	}
	return (ssize_t)n;
}

void rvs_http_next(struct rvs_http *h)
{
	reset_request(h);
	http_parser_pause(&h->p, 0);
}
