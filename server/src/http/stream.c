/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.c — an export streamed to its client (stream.h).
 *
 * The producer thread runs the export writer (librvanalysis) on a FILE*
 * from fopencookie whose write callback fills RVS_STREAM_CHUNK-byte chunks
 * and queues them; the loop pulls them through net.c's rvs_body_src.
 * Invariants:
 *   - at most RVS_STREAM_QUEUE chunks are queued: the producer waits on the
 *     condition variable for room (backpressure from the socket, through
 *     net.c pulling only when its write queue has room), or for the
 *     connection's release, after which every write fails and the writer
 *     runs to its end without holding more memory;
 *   - `ended` is set once, by the producer, as its last act under the
 *     mutex; the loop joins the thread only after it saw `ended`, and frees
 *     the stream only when it is both ended and released;
 *   - conn is touched on the loop thread only, and is NULL after release.
 */
#include "http/stream.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct chunk {
	struct chunk *next;
	size_t len;
	char data[RVS_STREAM_CHUNK];
};

struct stream {
	pthread_mutex_t mu;
	pthread_cond_t room;
	/* under mu */
	struct chunk *head, *tail;
	unsigned queued;
	int ended, rc, cancelled;
	/* producer only */
	struct chunk *cur;
	struct rvs_export *x;
	/* loop only */
	uv_async_t async;
	pthread_t th;
	struct rvs_conn *conn;
	struct chunk *given; /* the chunk the connection is writing */
	int released, joined, closing, started;
	void (*done)(void *);
	void *done_arg;
};

/* ---- producer ----------------------------------------------------------- */

/* Queues s->cur; waits for room.  0, or -1 once the connection let go. */
static int push(struct stream *s)
{
	struct chunk *k = s->cur;
	pthread_mutex_lock(&s->mu);
	while (s->queued >= RVS_STREAM_QUEUE && !s->cancelled)
		pthread_cond_wait(&s->room, &s->mu);
	if (s->cancelled) {
		pthread_mutex_unlock(&s->mu);
		return -1;
	}
	s->cur = NULL;
	if (s->tail)
		s->tail->next = k;
	else
		s->head = k;
	s->tail = k;
	s->queued++;
	assert(s->queued <= RVS_STREAM_QUEUE);
	pthread_mutex_unlock(&s->mu);
	uv_async_send(&s->async);
	return 0;
}

static ssize_t cookie_write(void *arg, const char *buf, size_t len)
{
	struct stream *s = arg;
	size_t done = 0;

	while (done < len) {
		size_t n;
		if (!s->cur) {
			if (!(s->cur = malloc(sizeof *s->cur))) {
				errno = ENOMEM;
				return -1;
			}
			s->cur->next = NULL;
			s->cur->len = 0;
		}
		n = RVS_STREAM_CHUNK - s->cur->len;
		if (n > len - done)
			n = len - done;
		memcpy(s->cur->data + s->cur->len, buf + done, n);
		s->cur->len += n;
		done += n;
		if (s->cur->len == RVS_STREAM_CHUNK && push(s) < 0) {
			errno = EPIPE;
			return -1;
		}
	}
	return (ssize_t)len;
}

static void *producer(void *arg)
{
	struct stream *s = arg;
	cookie_io_functions_t io = {.write = cookie_write};
	FILE *f = fopencookie(s, "w", io);
	int rc = f ? rvs_export_write(s->x, f) : -ENOMEM;

	if (f && fclose(f) && rc == 0)
		rc = -EIO;
	if (rc == 0 && s->cur && s->cur->len && push(s) < 0)
		rc = -EPIPE;
	free(s->cur);
	s->cur = NULL;
	/* The trace goes as soon as the output is made. */
	rvs_export_free(s->x);
	s->x = NULL;
	pthread_mutex_lock(&s->mu);
	s->rc = rc;
	s->ended = 1;
	/* Under the mutex: once the loop sees `ended`, s is not touched. */
	uv_async_send(&s->async);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- loop side ------------------------------------------------------------ */

static void on_closed(uv_handle_t *h)
{
	struct stream *s = h->data;
	struct chunk *k, *next;

	for (k = s->head; k; k = next) {
		next = k->next;
		free(k);
	}
	free(s->given);
	rvs_export_free(s->x); /* the thread never started */
	pthread_cond_destroy(&s->room);
	pthread_mutex_destroy(&s->mu);
	if (s->started && s->done)
		s->done(s->done_arg);
	free(s);
}

/* Frees s once its thread ended and the connection let it go. */
static void maybe_free(struct stream *s)
{
	int ended;
	if (s->closing || !s->released)
		return;
	pthread_mutex_lock(&s->mu);
	ended = s->ended;
	pthread_mutex_unlock(&s->mu);
	if (!ended)
		return; /* its last async brings us back */
	if (!s->joined) {
		pthread_join(s->th, NULL);
		s->joined = 1;
	}
	s->closing = 1;
	uv_close((uv_handle_t *)&s->async, on_closed);
}

static void on_async(uv_async_t *a)
{
	struct stream *s = a->data;
	if (s->conn)
		rvs_conn_stream_wake(s->conn);
	maybe_free(s);
}

static int src_pull(void *arg, const void **buf, size_t *len)
{
	struct stream *s = arg;
	struct chunk *k;
	int r;

	free(s->given);
	s->given = NULL;
	pthread_mutex_lock(&s->mu);
	k = s->head;
	if (k) {
		s->head = k->next;
		if (!s->head)
			s->tail = NULL;
		s->queued--;
		pthread_cond_signal(&s->room);
		r = 1;
	} else if (s->ended) {
		r = s->rc < 0 ? s->rc : 2;
	} else {
		r = 0;
	}
	pthread_mutex_unlock(&s->mu);
	if (k) {
		assert(k->len > 0);
		s->given = k;
		*buf = k->data;
		*len = k->len;
	}
	return r;
}

static void src_release(void *arg)
{
	struct stream *s = arg;
	assert(!s->released);
	s->released = 1;
	s->conn = NULL;
	pthread_mutex_lock(&s->mu);
	s->cancelled = 1;
	pthread_cond_signal(&s->room);
	pthread_mutex_unlock(&s->mu);
	maybe_free(s);
}

int rvs_stream_export(uv_loop_t *loop, struct rvs_conn *c, struct rvs_export *x,
		      const char *content_type, const struct rvs_header *hdrs, size_t nhdrs,
		      void (*done)(void *arg), void *arg)
{
	struct stream *s = calloc(1, sizeof *s);
	struct rvs_body_src src;
	int rc;

	if (!s) {
		rvs_export_free(x);
		return -ENOMEM;
	}
	s->x = x;
	s->done = done;
	s->done_arg = arg;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->room, NULL);
	s->async.data = s;
	if ((rc = uv_async_init(loop, &s->async, on_async)) < 0) {
		rvs_export_free(x);
		pthread_cond_destroy(&s->room);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return -ENOMEM;
	}
	if ((rc = pthread_create(&s->th, NULL, producer, s)) != 0) {
		/* on_closed frees x; done is not called (not started). */
		s->released = s->closing = 1;
		uv_close((uv_handle_t *)&s->async, on_closed);
		return -EAGAIN;
	}
	s->started = 1;
	s->conn = c;
	src = (struct rvs_body_src){src_pull, src_release, s};
	rvs_conn_respond_stream(c, 200, content_type, hdrs, nhdrs, &src);
	return 0;
}
