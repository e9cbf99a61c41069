/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net.c — HTTPS connections on the libuv loop.
 *
 * Bytes flow: libuv read → c->in (ciphertext) → mbedTLS through the BIO
 * recv callback → c->pt (plaintext) → http.c.  mbedTLS writes through the
 * BIO send callback, which copies each record into a uv_write; no socket
 * call ever blocks.  Invariants:
 *   - one request per connection is in the handler at a time (busy); while
 *     busy the socket is not read, which bounds c->in, and the connection
 *     is not freed — a peer that leaves meanwhile is closed on respond;
 *   - one timer per connection: request_timeout while a handshake or a
 *     request is arriving (slowloris), idle_timeout between requests, none
 *     while the handler works, request_timeout again while lingering;
 *   - an error response ends the connection with close_notify, a FIN and a
 *     lingering read that discards, so the peer reads the response instead
 *     of a reset;
 *   - slowloris (issue 18 item 3): one peer address holds at most
 *     max_conns_per_addr open connections; past three quarters of
 *     max_connections a new handshake gets handshake_pressure_ms; at
 *     max_connections one connection is closed to admit the new one, the
 *     oldest idle or still handshaking of the address holding the most
 *     (pick_victim), never one from an address holding no more than the
 *     newcomer's: a flood from many addresses evicts itself, not a client
 *     in its handshake; at most ACCEPT_BURST connections are accepted per
 *     loop turn, so a flood cannot keep the loop in accept();
 *   - a streamed response (exports) stays busy until its last chunk; its
 *     source is pulled only while the connection's write buffers (c->held:
 *     queued, or written but not yet freed by their callback, which libuv
 *     runs on a later loop turn) hold at most STREAM_HIGH bytes, and a
 *     write completing pulls again, so the bytes a connection holds are
 *     bounded whatever the body's size and however fast the client reads;
 *     the timer runs (request_timeout) only while they are over, so a
 *     client that stops reading is dropped, one that waits for a slow
 *     source is not;
 *   - a whole body over STREAM_HIGH (rvs_conn_respond) is sent the same
 *     way, from a copy the connection owns, with its Content-Length: it is
 *     encrypted as the client reads, never truncated, and a slow reader
 *     delays only itself;
 *   - the next request is not read while the answers already sent hold
 *     more than STREAM_HIGH (c->drain_wait): a client that pipelines
 *     requests without reading the answers is paced, not cut off, and is
 *     dropped only when it reads nothing for request_timeout.
 */
#include "http/net.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <mbedtls/ssl_cache.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

/* A streamed body is pulled while at most this much waits to be written. */
#define STREAM_HIGH (256u << 10)
/* Connections accepted per loop turn at most.  libuv's listener callback
 * accepts until the backlog is empty; a flood that reconnects as fast as
 * it is closed keeps it non-empty, so without a bound the loop never gets
 * to the connections' reads (a client's handshake waits for ever) nor to
 * freeing the connections it closed (memory grows). */
#define ACCEPT_BURST 32
/* The plaintext handed to mbedTLS at a time from a whole body: one record. */
#define BODY_PIECE (16u << 10)

struct rvs_server {
	uv_loop_t *loop;
	uv_tcp_t listener;
	const struct rvs_config *cfg;
	struct rvs_metrics *m;
	rvs_handler_fn handler;
	void *ctx;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt crt;
	mbedtls_pk_context key;
	mbedtls_ssl_cache_context cache; /* session-id resumption for reconnecting devices */
	struct rvs_conn *conns;
	unsigned nconns;
	uint64_t accepted;	   /* connections admitted so far: the next one's seq */
	struct rvs_conn **by_peer; /* pick_victim's scratch, by_peer_cap entries */
	unsigned by_peer_cap;
	uv_prepare_t turn;	  /* each loop turn: the accept budget renewed */
	unsigned accepts_in_turn; /* accepted this turn, up to ACCEPT_BURST */
	int accept_deferred;	  /* the listener holds one not taken: on_turn takes it */
	int draining, listener_closed, turn_closed, done_called;
	void (*done)(void *);
	void *done_arg;
};

struct rvs_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_shutdown_t shutdown;
	struct rvs_server *srv;
	struct rvs_conn *prev, *next;
	mbedtls_ssl_context ssl;
	uint8_t *in;
	size_t in_len, in_off, in_cap;
	char pt[16384];
	size_t pt_len, pt_off;
	size_t held; /* bytes in this connection's wbufs: bio_send to on_write */
	struct rvs_http http;
	int handles;
	uint8_t peer[16];
	/* Loop time of the accept, then of the last bytes read once the
	 * handshake is done: a handshake trickled byte by byte stays old. */
	uint64_t last_ms;
	uint64_t seq; /* order of accept: breaks last_ms ties */
	unsigned handshake_done : 1, busy : 1, closing : 1, ending : 1, peer_gone : 1, in_drive : 1,
		continue_sent : 1, streaming : 1, chunked : 1, keep : 1, in_pump : 1,
		drain_wait : 1;
	struct rvs_body_src src; /* while streaming */
};

struct wbuf {
	uv_write_t req;
	size_t len;
	unsigned char data[];
};

static void drive(struct rvs_conn *c);
static void stream_pump(struct rvs_conn *c);
static void resume_reading(struct rvs_conn *c);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void check_drained(struct rvs_server *s)
{
	if (s->draining && s->listener_closed && s->turn_closed && s->nconns == 0 &&
	    !s->done_called && s->done) {
		s->done_called = 1;
		s->done(s->done_arg);
	}
}

static void on_handle_closed(uv_handle_t *h)
{
	struct rvs_conn *c = h->data;
	struct rvs_server *s = c->srv;

	if (--c->handles > 0)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	s->m->connections_open--;
	mbedtls_ssl_free(&c->ssl);
	rvs_http_release(&c->http);
	free(c->in);
	free(c);
	check_drained(s);
}

/* The streamed response's source is let go (exactly once). */
static void stream_release(struct rvs_conn *c)
{
	struct rvs_body_src src = c->src;
	assert(c->streaming);
	c->streaming = 0;
	memset(&c->src, 0, sizeof c->src);
	src.release(src.arg);
}

/* Closes the socket now; the connection is freed when both handles close. */
static void really_close(struct rvs_conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->streaming)
		stream_release(c);
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void on_timer(uv_timer_t *t)
{
	struct rvs_conn *c = t->data;
	if (c->busy && !c->streaming)
		return; /* a streaming client that stopped reading is dropped */
	if (!c->ending && c->http.began)
		c->srv->m->errors[RVS_ERR_TIMEOUT]++;
	if (!c->ending && !c->handshake_done)
		c->srv->m->errors[RVS_ERR_TIMEOUT]++;
	really_close(c);
}

static void arm(struct rvs_conn *c, uint32_t ms)
{
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct rvs_conn *c = req->data;
	/* Without a FIN sent there is nothing to linger for. */
	if (status < 0)
		really_close(c);
}

/* Ends the connection gracefully: close_notify, FIN, then reads and discards
 * until the peer closes or request_timeout passes (when linger), else closes. */
static void conn_end(struct rvs_conn *c, int linger)
{
	if (c->closing || c->ending)
		return;
	c->ending = 1;
	mbedtls_ssl_close_notify(&c->ssl);
	if (!linger) {
		really_close(c);
		return;
	}
	c->shutdown.data = c;
	if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
		really_close(c);
		return;
	}
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	arm(c, c->srv->cfg->request_timeout_ms);
}

static void on_write(uv_write_t *req, int status)
{
	struct rvs_conn *c = req->handle->data;
	struct wbuf *w = req->data;
	assert(c->held >= w->len);
	c->held -= w->len;
	free(w);
	if (c->drain_wait && !c->closing && c->held <= STREAM_HIGH) {
		c->drain_wait = 0;
		resume_reading(c);
		return;
	}
	if (!c->streaming || c->closing)
		return;
	if (status < 0) {
		really_close(c); /* the client left mid-body */
		return;
	}
	stream_pump(c);
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	struct rvs_conn *c = ctx;
	struct wbuf *w;
	uv_buf_t b;

	if (c->closing)
		return MBEDTLS_ERR_NET_SEND_FAILED;
	w = malloc(sizeof *w + len);
	if (!w)
		return MBEDTLS_ERR_NET_SEND_FAILED;
	memcpy(w->data, buf, len);
	w->len = len;
	w->req.data = w;
	b = uv_buf_init((char *)w->data, (unsigned)len);
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) < 0) {
		free(w);
		return MBEDTLS_ERR_NET_SEND_FAILED;
	}
	c->held += len;
	return (int)len;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	struct rvs_conn *c = ctx;
	size_t avail = c->in_len - c->in_off;

	if (avail == 0)
		return MBEDTLS_ERR_SSL_WANT_READ;
	if (len > avail)
		len = avail;
	memcpy(buf, c->in + c->in_off, len);
	c->in_off += len;
	return (int)len;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct rvs_conn *c = h->data;
	const size_t want = 16384;

	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	if (c->in_cap - c->in_len < want && c->in_off > 0) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	if (c->in_cap - c->in_len < want) {
		size_t cap = c->in_len + 4 * want;
		uint8_t *n = realloc(c->in, cap);
		if (!n) {
			*buf = uv_buf_init(NULL, 0);
			return;
		}
		c->in = n;
		c->in_cap = cap;
	}
	*buf = uv_buf_init((char *)c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct rvs_conn *c = st->data;

	if (nread == 0)
		return;
	if (nread < 0) {
		if (c->busy) {
			/* The handler still holds the request; close on respond. */
			c->peer_gone = 1;
			uv_read_stop(st);
			return;
		}
		really_close(c);
		return;
	}
	if (c->ending)
		return; /* lingering: discard */
	c->in_len += (size_t)nread;
	if (c->handshake_done)
		c->last_ms = uv_now(c->srv->loop);
	drive(c);
}

static const char *status_text(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 303:
		return "See Other";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 413:
		return "Payload Too Large";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return status < 500 ? "Error" : "Internal Server Error";
	}
}

static int ssl_write_all(struct rvs_conn *c, const void *data, size_t len)
{
	const unsigned char *p = data;
	while (len > 0) {
		int n = mbedtls_ssl_write(&c->ssl, p, len);
		if (n < 0)
			return n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The response head.  len: the body's length, or -1 for a streamed body
 * (chunked when keep, else delimited by the close). */
static int send_head(struct rvs_conn *c, int status, const char *ctype,
		     const struct rvs_header *hdrs, size_t nhdrs, ssize_t len, int keep)
{
	char head[2048];
	int n, w;

	n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nConnection: %s\r\n", status,
		     status_text(status), keep ? "keep-alive" : "close");
	if (status != 304) {
		if (len >= 0)
			w = snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zd\r\n",
				     len);
		else
			w = snprintf(head + n, sizeof head - (size_t)n, "%s",
				     keep ? "Transfer-Encoding: chunked\r\n" : "");
		n += w;
		if (ctype && (size_t)n < sizeof head) {
			w = snprintf(head + n, sizeof head - (size_t)n, "Content-Type: %s\r\n",
				     ctype);
			n += w;
		}
	}
	for (size_t i = 0; i < nhdrs && (size_t)n < sizeof head; i++) {
		w = snprintf(head + n, sizeof head - (size_t)n, "%s: %s\r\n", hdrs[i].name,
			     hdrs[i].value);
		n += w;
	}
	if ((size_t)n + 2 >= sizeof head)
		return -ENOBUFS;
	memcpy(head + n, "\r\n", 2);
	n += 2;
	return ssl_write_all(c, head, (size_t)n) ? -EIO : 0;
}

static int send_response(struct rvs_conn *c, int status, const char *ctype,
			 const struct rvs_header *hdrs, size_t nhdrs, const void *body, size_t len,
			 int keep)
{
	if (len > (size_t)SSIZE_MAX || send_head(c, status, ctype, hdrs, nhdrs, (ssize_t)len, keep))
		return -EIO;
	if (len && ssl_write_all(c, body, len))
		return -EIO;
	return 0;
}

static void error_response(struct rvs_conn *c)
{
	struct rvs_metrics *m = c->srv->m;
	int status = c->http.status ? c->http.status : 400;
	const char *reason = c->http.reason ? c->http.reason : "bad request";

	m->errors[status == 413	  ? RVS_ERR_TOO_LARGE
		  : status == 431 ? RVS_ERR_HEADER_TOO_LARGE
				  : RVS_ERR_BAD_REQUEST]++;
	if (send_response(c, status, "text/plain", NULL, 0, reason, strlen(reason), 0)) {
		really_close(c);
		return;
	}
	conn_end(c, 1);
}

static void dispatch(struct rvs_conn *c)
{
	c->busy = 1;
	uv_timer_stop(&c->timer);
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->srv->m->requests++;
	c->srv->handler(c->srv->ctx, c, &c->http.req);
}

void rvs_conn_peer(const struct rvs_conn *c, uint8_t key[16])
{
	memcpy(key, c->peer, 16);
}

size_t rvs_conn_held_bytes(const struct rvs_conn *c)
{
	return c->held;
}

static void response_done(struct rvs_conn *c, int keep);

/* A whole body sent as the client reads it (rvs_conn_respond): a copy the
 * connection owns, handed out BODY_PIECE bytes at a time. */
struct mem_body {
	size_t len, off;
	char data[];
};

static int mem_pull(void *arg, const void **buf, size_t *len)
{
	struct mem_body *b = arg;
	size_t n = b->len - b->off;

	if (n == 0)
		return 2;
	if (n > BODY_PIECE)
		n = BODY_PIECE;
	*buf = b->data + b->off;
	*len = n;
	b->off += n;
	return 1;
}

static void mem_release(void *arg)
{
	free(arg);
}

void rvs_conn_respond(struct rvs_conn *c, int status, const char *content_type,
		      const struct rvs_header *hdrs, size_t nhdrs, const void *body, size_t len)
{
	int keep = c->http.req.keep_alive && !c->srv->draining;
	struct mem_body *b;

	if (c->peer_gone) {
		c->busy = 0;
		really_close(c);
		return;
	}
	if (len <= STREAM_HIGH || status == 304) {
		c->busy = 0;
		if (send_response(c, status, content_type, hdrs, nhdrs, body, len, keep)) {
			really_close(c);
			return;
		}
		response_done(c, keep);
		return;
	}
	/* Too big to encrypt into the socket's queue at once: the client
	 * pulls it (stream_pump), with its length announced. */
	assert(c->busy && !c->streaming);
	if (len > (size_t)SSIZE_MAX || !(b = malloc(sizeof *b + len))) {
		rvs_log("error", "no memory for a response", "bytes=%zu", len);
		c->busy = 0;
		really_close(c);
		return;
	}
	memcpy(b->data, body, len);
	b->len = len;
	b->off = 0;
	c->streaming = 1;
	c->src = (struct rvs_body_src){mem_pull, mem_release, b};
	c->chunked = 0;
	c->keep = (unsigned)keep;
	if (send_head(c, status, content_type, hdrs, nhdrs, (ssize_t)len, keep)) {
		really_close(c);
		return;
	}
	stream_pump(c);
}

/* Reads and serves the next request (keep-alive). */
static void resume_reading(struct rvs_conn *c)
{
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	arm(c, c->srv->cfg->idle_timeout_ms);
	if (!c->in_drive)
		drive(c);
}

/* The current request is answered: on to the next one, or the end. */
static void response_done(struct rvs_conn *c, int keep)
{
	assert(!c->busy && !c->streaming);
	rvs_http_next(&c->http);
	c->continue_sent = 0;
	if (!keep) {
		conn_end(c, 1);
		return;
	}
	/* A client that pipelines requests but does not read the answers
	 * would make us queue them without bound: its next request waits
	 * until it has read them (on_write), for request_timeout at most. */
	if (c->held > STREAM_HIGH) {
		c->drain_wait = 1;
		arm(c, c->srv->cfg->request_timeout_ms);
		return;
	}
	resume_reading(c);
}

void rvs_conn_respond_stream(struct rvs_conn *c, int status, const char *content_type,
			     const struct rvs_header *hdrs, size_t nhdrs,
			     const struct rvs_body_src *src)
{
	/* Chunked needs HTTP/1.1; an HTTP/1.0 body ends with the connection. */
	int chunked = c->http.p.http_major == 1 && c->http.p.http_minor >= 1;
	int keep = chunked && c->http.req.keep_alive && !c->srv->draining;

	assert(c->busy && !c->streaming);
	c->streaming = 1;
	c->src = *src;
	c->chunked = (unsigned)chunked;
	c->keep = (unsigned)keep;
	if (c->peer_gone || send_head(c, status, content_type, hdrs, nhdrs, -1, keep)) {
		really_close(c);
		return;
	}
	stream_pump(c);
}

void rvs_conn_stream_wake(struct rvs_conn *c)
{
	if (c->streaming && !c->closing)
		stream_pump(c);
}

static int write_piece(struct rvs_conn *c, const void *buf, size_t len)
{
	char size[24];
	int n;

	if (!c->chunked)
		return ssl_write_all(c, buf, len);
	n = snprintf(size, sizeof size, "%zx\r\n", len);
	return ssl_write_all(c, size, (size_t)n) || ssl_write_all(c, buf, len) ||
	       ssl_write_all(c, "\r\n", 2);
}

/* Moves the source's pieces into the socket while its write queue has room
 * (STREAM_HIGH); ends the response after the last. */
static void stream_pump(struct rvs_conn *c)
{
	if (c->in_pump)
		return;
	c->in_pump = 1;
	while (c->streaming && !c->closing) {
		const void *buf = NULL;
		size_t len = 0;
		int r;

		/* Not the socket's write queue: a write the socket took at once
		 * leaves it, but its buffer stays until its callback, which
		 * runs only once this returns to the loop — with a fast client
		 * and a source always ready, the whole body would pile up. */
		if (c->held > STREAM_HIGH) {
			/* Full: the client must read within request_timeout;
			 * each completed write pulls again and re-arms. */
			arm(c, c->srv->cfg->request_timeout_ms);
			break;
		}
		uv_timer_stop(&c->timer); /* waiting for the source is no stall */
		r = c->src.pull(c->src.arg, &buf, &len);
		if (r == 0)
			break;
		if (r == 1) {
			assert(len > 0);
			if (write_piece(c, buf, len))
				really_close(c);
			continue;
		}
		stream_release(c);
		if (r < 0) {
			rvs_log("error", "streamed response failed", "err=%d", r);
			really_close(c); /* no last chunk: the client sees it cut */
			break;
		}
		if (c->chunked && ssl_write_all(c, "0\r\n\r\n", 5)) {
			really_close(c);
			break;
		}
		c->busy = 0;
		c->in_pump = 0;
		response_done(c, c->keep);
		return;
	}
	c->in_pump = 0;
}

static void drive(struct rvs_conn *c)
{
	if (c->closing || c->ending || c->busy || c->in_drive)
		return;
	c->in_drive = 1;
	if (!c->handshake_done) {
		int r = mbedtls_ssl_handshake(&c->ssl);
		if (r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE)
			goto out;
		if (r) {
			char err[128];
			mbedtls_strerror(r, err, sizeof err);
			rvs_log("info", "tls handshake failed", "err=\"%s\"", err);
			c->srv->m->errors[RVS_ERR_TLS]++;
			really_close(c);
			goto out;
		}
		c->handshake_done = 1;
		arm(c, c->srv->cfg->idle_timeout_ms);
	}
	while (!c->busy && !c->closing && !c->ending) {
		int n;
		if (c->pt_off < c->pt_len) {
			int began = c->http.began;
			ssize_t k =
				rvs_http_feed(&c->http, c->pt + c->pt_off, c->pt_len - c->pt_off);
			if (k < 0) {
				error_response(c);
				break;
			}
			c->pt_off += (size_t)k;
			if (!began && c->http.began)
				arm(c, c->srv->cfg->request_timeout_ms);
			/* The body is within limits (else the parser failed): tell a
			 * client waiting on Expect: 100-continue to send it. */
			if (c->http.headers_done && c->http.req.expect_continue &&
			    !c->http.complete && !c->continue_sent) {
				static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
				c->continue_sent = 1;
				if (ssl_write_all(c, cont, sizeof cont - 1)) {
					really_close(c);
					break;
				}
			}
			if (c->http.complete)
				dispatch(c);
			continue;
		}
		n = mbedtls_ssl_read(&c->ssl, (unsigned char *)c->pt, sizeof c->pt);
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE)
			break;
		if (n <= 0) {
			/* close_notify, EOF or a bad record: nothing more to answer. */
			really_close(c);
			break;
		}
		c->pt_len = (size_t)n;
		c->pt_off = 0;
	}
out:
	c->in_drive = 0;
}

static void on_rejected_closed(uv_handle_t *h)
{
	free(h);
}

/* The peer address of t as 16 bytes (IPv4 mapped into IPv6), zeros if unknown. */
static void peer_of(uv_tcp_t *t, uint8_t peer[16])
{
	struct sockaddr_storage sa;
	int salen = sizeof sa;
	if (uv_tcp_getpeername(t, (struct sockaddr *)&sa, &salen) != 0)
		return;
	if (sa.ss_family == AF_INET6) {
		memcpy(peer, &((struct sockaddr_in6 *)&sa)->sin6_addr, 16);
	} else if (sa.ss_family == AF_INET) {
		peer[10] = peer[11] = 0xff;
		memcpy(peer + 12, &((struct sockaddr_in *)&sa)->sin_addr, 4);
	}
}

/* Connections by peer address, then the oldest first (last_ms, then the
 * order of accept). */
static int by_peer_then_age(const void *a, const void *b)
{
	const struct rvs_conn *x = *(struct rvs_conn *const *)a, *y = *(struct rvs_conn *const *)b;
	int d = memcmp(x->peer, y->peer, 16);

	if (d)
		return d;
	if (x->last_ms != y->last_ms)
		return x->last_ms < y->last_ms ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int older(const struct rvs_conn *x, const struct rvs_conn *y)
{
	return x->last_ms < y->last_ms || (x->last_ms == y->last_ms && x->seq < y->seq);
}

/* At max_connections: the connection to close so that a new one from peer,
 * whose address already holds `same` of the live ones, may be admitted; NULL
 * when none may be.  Fair shares: a candidate is an address's oldest
 * connection that may be closed (no handler working on it, no answer
 * waiting to be read: idle between requests or still in its handshake);
 * the victim is the candidate of the address holding the most connections,
 * counted only when it holds more than the newcomer's address, or is that
 * address (a client replaces its own idle connection).  So a flood from
 * many addresses takes its slots from the busiest of them, and a client
 * holding one connection keeps it, handshake or not, while another address
 * holds two.  Ties go to the oldest candidate.  O(n log n), only when full. */
static struct rvs_conn *pick_victim(struct rvs_server *s, const uint8_t peer[16], unsigned live,
				    unsigned same)
{
	struct rvs_conn *x, *victim = NULL;
	unsigned n = 0, best = 0;

	if (s->by_peer_cap < live) {
		struct rvs_conn **v = realloc(s->by_peer, live * sizeof *v);
		if (!v)
			return NULL;
		s->by_peer = v;
		s->by_peer_cap = live;
	}
	for (x = s->conns; x; x = x->next)
		if (!x->closing)
			s->by_peer[n++] = x;
	assert(n == live);
	qsort(s->by_peer, n, sizeof *s->by_peer, by_peer_then_age);
	for (unsigned i = 0, j; i < n; i = j) {
		struct rvs_conn *oldest = NULL;
		int own = memcmp(s->by_peer[i]->peer, peer, 16) == 0;

		for (j = i; j < n && memcmp(s->by_peer[j]->peer, s->by_peer[i]->peer, 16) == 0; j++)
			if (!oldest && !s->by_peer[j]->busy && !s->by_peer[j]->drain_wait)
				oldest = s->by_peer[j];
		assert(!own || j - i == same);
		if (!oldest || (j - i <= same && !own))
			continue;
		if (j - i > best || (j - i == best && older(oldest, victim))) {
			best = j - i;
			victim = oldest;
		}
	}
	return victim;
}

/* Whether a new connection from peer may be admitted: not when its address
 * already holds max_conns_per_addr; at max_connections only by closing the
 * connection pick_victim names.  *live gets the connections open (not
 * closing) before it. */
static int admit_conn(struct rvs_server *s, const uint8_t peer[16], unsigned *live)
{
	struct rvs_conn *x, *victim;
	unsigned same = 0;

	*live = 0;
	for (x = s->conns; x; x = x->next) {
		if (x->closing)
			continue;
		++*live;
		if (memcmp(x->peer, peer, 16) == 0)
			same++;
	}
	if (same >= s->cfg->max_conns_per_addr)
		return 0;
	if (*live < s->cfg->max_connections)
		return 1;
	if (!(victim = pick_victim(s, peer, *live, same)))
		return 0;
	s->m->connections_evicted++;
	really_close(victim);
	--*live;
	return 1;
}

/* Takes the connection waiting on the listener. */
static void accept_one(struct rvs_server *s)
{
	uv_stream_t *ls = (uv_stream_t *)&s->listener;
	struct rvs_conn *c;
	unsigned live;

	if (s->draining) {
		uv_tcp_t *t = malloc(sizeof *t);
		if (!t)
			return;
		uv_tcp_init(s->loop, t);
		if (uv_accept(ls, (uv_stream_t *)t) == 0)
			s->m->errors[RVS_ERR_CONN_LIMIT]++;
		uv_close((uv_handle_t *)t, on_rejected_closed);
		return;
	}
	c = calloc(1, sizeof *c);
	if (!c)
		return;
	c->srv = s;
	uv_tcp_init(s->loop, &c->tcp);
	c->tcp.data = c;
	/* tcp is the first member: on_rejected_closed frees c. */
	if (uv_accept(ls, (uv_stream_t *)&c->tcp) < 0) {
		uv_close((uv_handle_t *)&c->tcp, on_rejected_closed);
		return;
	}
	peer_of(&c->tcp, c->peer);
	if (!admit_conn(s, c->peer, &live)) {
		s->m->errors[RVS_ERR_CONN_LIMIT]++;
		uv_close((uv_handle_t *)&c->tcp, on_rejected_closed);
		return;
	}
	assert(live < s->cfg->max_connections);
	c->last_ms = uv_now(s->loop);
	c->seq = s->accepted++;
	uv_timer_init(s->loop, &c->timer);
	c->timer.data = c;
	c->handles = 2;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	s->m->connections_total++;
	s->m->connections_open++;
	mbedtls_ssl_init(&c->ssl);
	rvs_http_init(&c->http, s->cfg->max_header_bytes, s->cfg->max_body_bytes);
	if (mbedtls_ssl_setup(&c->ssl, &s->conf) != 0) {
		really_close(c);
		return;
	}
	mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
	uv_tcp_nodelay(&c->tcp, 1);
	/* Under pressure a handshake gets the short deadline. */
	if ((uint64_t)live * 4 >= (uint64_t)s->cfg->max_connections * 3 &&
	    s->cfg->handshake_pressure_ms < s->cfg->request_timeout_ms)
		arm(c, s->cfg->handshake_pressure_ms);
	else
		arm(c, s->cfg->request_timeout_ms);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* Past ACCEPT_BURST this turn a connection is left on the listener: libuv
 * stops watching the listener until uv_accept, which on_turn calls on the
 * next turn, after this turn's reads and closes were done. */
static void on_connection(uv_stream_t *ls, int status)
{
	struct rvs_server *s = ls->data;

	if (status < 0)
		return;
	if (!s->draining && s->accepts_in_turn >= ACCEPT_BURST) {
		s->accept_deferred = 1;
		return;
	}
	s->accepts_in_turn++;
	accept_one(s);
}

static void on_turn(uv_prepare_t *p)
{
	struct rvs_server *s = p->data;

	s->accepts_in_turn = 0;
	if (s->accept_deferred && !s->draining) {
		s->accept_deferred = 0;
		s->accepts_in_turn++;
		accept_one(s);
	}
}

static void on_turn_closed(uv_handle_t *h)
{
	struct rvs_server *s = h->data;
	s->turn_closed = 1;
	check_drained(s);
}

/*
 * What the server offers: forward-secret AEAD suites only (AES-GCM and
 * ChaCha20-Poly1305 over ECDHE) — no CBC, no CCM-8, no Camellia, no static
 * RSA — and the groups X25519 then P-256 (P-384 for older clients), in the
 * server's order of preference.
 */
static const int tls_suites[] = {
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	0,
};
static const mbedtls_ecp_group_id tls_groups[] = {
	MBEDTLS_ECP_DP_CURVE25519,
	MBEDTLS_ECP_DP_SECP256R1,
	MBEDTLS_ECP_DP_SECP384R1,
	MBEDTLS_ECP_DP_NONE,
};

int rvs_server_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *metrics,
		   rvs_handler_fn handler, void *ctx, struct rvs_server **out)
{
	struct rvs_server *s = calloc(1, sizeof *s);
	struct sockaddr_storage addr;
	static const char pers[] = "rearview-server";
	int rc;

	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->cfg = cfg;
	s->m = metrics;
	s->handler = handler;
	s->ctx = ctx;
	mbedtls_entropy_init(&s->entropy);
	mbedtls_ctr_drbg_init(&s->drbg);
	mbedtls_ssl_config_init(&s->conf);
	mbedtls_x509_crt_init(&s->crt);
	mbedtls_pk_init(&s->key);
	mbedtls_ssl_cache_init(&s->cache);
	mbedtls_ssl_cache_set_max_entries(&s->cache, 1024);
	rc = -EINVAL;
	if (mbedtls_ctr_drbg_seed(&s->drbg, mbedtls_entropy_func, &s->entropy,
				  (const unsigned char *)pers, sizeof pers - 1))
		goto free_tls;
	if (mbedtls_x509_crt_parse_file(&s->crt, cfg->tls_cert)) {
		rvs_log("error", "cannot load certificate", "path=\"%s\"", cfg->tls_cert);
		goto free_tls;
	}
	if (mbedtls_pk_parse_keyfile(&s->key, cfg->tls_key, NULL)) {
		rvs_log("error", "cannot load key", "path=\"%s\"", cfg->tls_key);
		goto free_tls;
	}
	if (mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_SERVER,
					MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT))
		goto free_tls;
	/* TLS 1.2 only: Debian's mbedTLS 2.28 builds without its experimental
	 * TLS 1.3 (MBEDTLS_SSL_PROTO_TLS1_3_EXPERIMENTAL is off in config.h). */
	mbedtls_ssl_conf_min_version(&s->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
				     MBEDTLS_SSL_MINOR_VERSION_3);
	mbedtls_ssl_conf_ciphersuites(&s->conf, tls_suites);
	mbedtls_ssl_conf_curves(&s->conf, tls_groups);
	mbedtls_ssl_conf_rng(&s->conf, mbedtls_ctr_drbg_random, &s->drbg);
	if (mbedtls_ssl_conf_own_cert(&s->conf, &s->crt, &s->key))
		goto free_tls;
	mbedtls_ssl_conf_session_cache(&s->conf, &s->cache, mbedtls_ssl_cache_get,
				       mbedtls_ssl_cache_set);
	http_parser_set_max_header_size(cfg->max_header_bytes);

	if (uv_ip4_addr(cfg->listen_host, cfg->listen_port, (struct sockaddr_in *)&addr) &&
	    uv_ip6_addr(cfg->listen_host, cfg->listen_port, (struct sockaddr_in6 *)&addr)) {
		rc = -EINVAL;
		goto free_tls;
	}
	uv_tcp_init(loop, &s->listener);
	s->listener.data = s;
	if ((rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&addr, 0)) ||
	    (rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection))) {
		rvs_log("error", "cannot listen", "host=%s port=%d err=\"%s\"", cfg->listen_host,
			cfg->listen_port, uv_strerror(rc));
		/* The handle is closed by the caller's rvs_server_drain path. */
		s->draining = 1;
		uv_close((uv_handle_t *)&s->listener, NULL);
		goto free_tls;
	}
	uv_prepare_init(loop, &s->turn);
	s->turn.data = s;
	uv_prepare_start(&s->turn, on_turn);
	uv_unref((uv_handle_t *)&s->turn);
	*out = s;
	return 0;
free_tls:
	mbedtls_ssl_cache_free(&s->cache);
	mbedtls_pk_free(&s->key);
	mbedtls_x509_crt_free(&s->crt);
	mbedtls_ssl_config_free(&s->conf);
	mbedtls_ctr_drbg_free(&s->drbg);
	mbedtls_entropy_free(&s->entropy);
	if (s->draining) {
		/* The listener's close completes on the next loop turn; leak the
		 * small struct rather than free memory libuv still refers to. */
		return rc;
	}
	free(s);
	return rc;
}

int rvs_server_port(struct rvs_server *s)
{
	struct sockaddr_storage a;
	int len = sizeof a;
	if (uv_tcp_getsockname(&s->listener, (struct sockaddr *)&a, &len))
		return -1;
	if (a.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
	return ntohs(((struct sockaddr_in *)&a)->sin_port);
}

static void on_listener_closed(uv_handle_t *h)
{
	struct rvs_server *s = h->data;
	s->listener_closed = 1;
	check_drained(s);
}

void rvs_server_drain(struct rvs_server *s, void (*done)(void *), void *arg)
{
	if (s->draining)
		return;
	s->draining = 1;
	s->done = done;
	s->done_arg = arg;
	uv_close((uv_handle_t *)&s->listener, on_listener_closed);
	uv_close((uv_handle_t *)&s->turn, on_turn_closed);
	for (struct rvs_conn *c = s->conns; c; c = c->next)
		if (!c->busy && !c->drain_wait && !c->http.began)
			really_close(c);
	check_drained(s);
}

void rvs_server_free(struct rvs_server *s)
{
	if (!s)
		return;
	mbedtls_ssl_cache_free(&s->cache);
	mbedtls_pk_free(&s->key);
	mbedtls_x509_crt_free(&s->crt);
	mbedtls_ssl_config_free(&s->conf);
	mbedtls_ctr_drbg_free(&s->drbg);
	mbedtls_entropy_free(&s->entropy);
	free(s->by_peer);
	free(s);
}
