/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net.h — the HTTPS listener: libuv TCP, mbedTLS over in-memory BIO
 * callbacks, HTTP/1.1 keep-alive through http.c.  Loop thread only.
 */
#ifndef RVS_NET_H
#define RVS_NET_H

#include <uv.h>

#include "base/metrics.h"
#include "http/http.h"
#include "base/config.h"

struct rvs_server;
struct rvs_conn;

/* Called on the loop thread with a complete request.  The request (and its
 * body) stay valid, and the connection stays open, until the handler calls
 * rvs_conn_respond() exactly once — synchronously or from a later callback. */
typedef void (*rvs_handler_fn)(void *ctx, struct rvs_conn *c, struct rvs_http_req *req);

struct rvs_header {
	const char *name;
	const char *value;
};

/* Loads the certificate and key, binds and listens.  Errors: negative errno
 * (-EINVAL for an unreadable certificate or key, libuv's for bind). */
int rvs_server_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *metrics,
		   rvs_handler_fn handler, void *ctx, struct rvs_server **out);
/* The bound TCP port (useful with port 0). */
int rvs_server_port(struct rvs_server *s);
/* Stops accepting, closes idle connections, lets in-flight requests finish
 * (their responses carry Connection: close), then calls done. */
void rvs_server_drain(struct rvs_server *s, void (*done)(void *), void *arg);
/* Frees a drained server (after done has been called).  NULL is a no-op. */
void rvs_server_free(struct rvs_server *s);

/* A 16-byte key for the peer's address (IPv4 mapped into IPv6 form). */
void rvs_conn_peer(const struct rvs_conn *c, uint8_t key[16]);

/* The bytes c's writes hold now: waiting in the socket's write queue, or
 * written and not yet released (libuv runs a write's callback, which frees
 * it, on a later turn of the loop). */
size_t rvs_conn_held_bytes(const struct rvs_conn *c);

/* Sends the response to the connection's current request.  body is copied.
 * A body over 256 KiB is encrypted and written as the client reads it
 * (with its Content-Length, as rvs_conn_respond_stream paces a stream), so
 * a slow reader gets every byte, and the connection holds the copy plus at
 * most ~256 KiB of records; a client that reads nothing for
 * request_timeout_ms is dropped. */
void rvs_conn_respond(struct rvs_conn *c, int status, const char *content_type,
		      const struct rvs_header *hdrs, size_t nhdrs, const void *body, size_t len);

/* A response body made while it is sent (rvs_conn_respond_stream).  Both
 * functions are called on the loop thread only. */
struct rvs_body_src {
	/* The next piece of the body: 1 with *buf and *len (len > 0; the source
	 * keeps the memory, valid until its next pull or release); 0 when
	 * none is ready yet (the source calls rvs_conn_stream_wake once one
	 * is, or once it ended); 2 at the end of a complete body; a negative
	 * errno when the body failed (the response is then cut short). */
	int (*pull)(void *arg, const void **buf, size_t *len);
	/* The connection is done with the source — the body ended, failed,
	 * or the client left or stalled: called exactly once, possibly from
	 * within rvs_conn_respond_stream; no rvs_conn_stream_wake after it. */
	void (*release)(void *arg);
	void *arg;
};

/* Answers the current request with the head now and a body pulled from src
 * while the client reads it: Transfer-Encoding: chunked (an HTTP/1.0
 * client gets the body delimited by the connection's close).  Backpressure:
 * src is pulled only while c's writes hold at most 256 KiB
 * (rvs_conn_held_bytes), so the connection holds a bounded amount whatever
 * the body's size and however fast the client reads; a client that takes
 * nothing for request_timeout_ms is dropped.  A
 * body that fails midway ends the connection without the last chunk, so
 * the client sees it incomplete.  The headers are copied. */
void rvs_conn_respond_stream(struct rvs_conn *c, int status, const char *content_type,
			     const struct rvs_header *hdrs, size_t nhdrs,
			     const struct rvs_body_src *src);
/* The source of c's streamed response has a piece ready or has ended: pull
 * it (when the socket has room).  A no-op when c streams nothing. */
void rvs_conn_stream_wake(struct rvs_conn *c);

#endif
