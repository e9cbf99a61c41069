/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h — HTTP/1.1 request parsing (http.c) on top of the Debian
 * http-parser library: pure, no I/O, so the network layer and the fuzzer
 * drive the same code.
 */
#ifndef RVS_HTTP_H
#define RVS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <http_parser.h>

struct rvs_http_req {
	enum http_method method;
	char path[1024];   /* URL path, query removed; never decoded */
	char query[1024];  /* the query string after '?', never decoded; "" if none */
	char auth[512];	   /* Authorization header */
	char inm[256];	   /* If-None-Match header */
	char cookie[1024]; /* Cookie header (the web UI's session) */
	uint8_t *body;	   /* owned; freed by rvs_http_next/release */
	size_t body_len;
	int keep_alive;
	int expect_continue; /* "Expect: 100-continue" was sent */
};
struct rvs_http {
	http_parser p;
	struct rvs_http_req req;
	size_t max_header, max_body;
	size_t header_bytes, body_cap;
	int began;	  /* a request's first byte has arrived */
	int headers_done; /* the current request's headers are complete */
	int complete;	  /* a whole request is ready; parser paused */
	int status;	  /* on error: 400, 413, 431 or 501 */
	const char *reason;
	/* header being parsed */
	char field[32];
	size_t field_len;
	int field_over;
	int last_was_value;
	size_t url_len;
	int url_over;
	char expect[32]; /* the Expect header */
	char te[32];	 /* the Transfer-Encoding header */
	int te_seen;	 /* how many Transfer-Encoding headers */
	/* Header-block scan for obsolete line folding: state of the bytes
	 * before the blank line that ends the headers (see rvs_http_feed). */
	int scan_nl, scan_done, scan_began;
	char *target; /* buffer the current value goes to, or NULL */
	size_t target_cap;
};
void rvs_http_init(struct rvs_http *h, size_t max_header, size_t max_body);
void rvs_http_release(struct rvs_http *h);
/* Feeds plaintext.  Returns bytes consumed (stops after a complete request:
 * h->complete is then set) or -EPROTO with h->status/h->reason set. */
ssize_t rvs_http_feed(struct rvs_http *h, const char *data, size_t len);
/* Frees the finished request and readies the parser for the next one. */
void rvs_http_next(struct rvs_http *h);

#endif
