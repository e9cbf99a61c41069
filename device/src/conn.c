/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn.c — peer connections on rearviewd's unix sockets (see conn.h).
 *
 * Invariants:
 *  - a closing connection never dispatches another frame and never writes;
 *  - received descriptors are closed unless a handler takes them; a peer
 *    that sends descriptors where none are allowed, more than
 *    RV_FRAME_MAX_FDS outstanding, or truncated control data is dropped;
 *  - per readable event at most RVD_READS_PER_EVENT recvmsg calls, so one
 *    chatty peer cannot starve the others;
 *  - admission (rvd_conn_admit) counts live peers per socket and per uid, so
 *    one socket's or one user's peers never use up another's slots
 *    (issue 18 item 1: 256 idle control.sock peers locked out admin.sock);
 *  - a control peer that has not registered within the deadline is dropped
 *    (rvd_conn_drop_unregistered).
 */
#include "conn.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rearview/admin.pb-c.h"
#include "rearview/control.pb-c.h"
#include "rearview/event.pb-c.h"

#define RVD_READS_PER_EVENT 8
#define RVD_READ_CHUNK	    65536

static const char *channel_name(uint8_t ch)
{
	switch (ch) {
	case RV_CHANNEL_CONTROL:
		return "control";
	case RV_CHANNEL_EVENT:
		return "events";
	case RV_CHANNEL_ADMIN:
		return "admin";
	default:
		return "?";
	}
}

static void close_cb(uv_handle_t *h)
{
	struct rvd_conn *c = h->data;

	close(c->fd);
	for (unsigned i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
	rv_frame_reader_release(&c->rd);
	free(c->out);
	c->out = NULL;
	if (c->on_close)
		c->on_close(c);
}

void rvd_conn_close(struct rvd_conn *c, const char *why)
{
	if (c->closing)
		return;
	c->closing = true;
	if (why && !strcmp(why, "closed by peer"))
		rvd_debug("%s peer pid %d: closed by peer", channel_name(c->channel),
			  (int)c->cred.pid);
	else if (why)
		rvd_info("%s peer pid %d uid %u: disconnected: %s", channel_name(c->channel),
			 (int)c->cred.pid, (unsigned)c->cred.uid, why);
	uv_poll_stop(&c->poll);
	uv_close((uv_handle_t *)&c->poll, close_cb);
}

int rvd_conn_take_fd(struct rvd_conn *c)
{
	int fd;

	if (!c->nfds)
		return -1;
	fd = c->fds[0];
	memmove(&c->fds[0], &c->fds[1], (c->nfds - 1) * sizeof(c->fds[0]));
	c->nfds--;
	return fd;
}

static int update_events(struct rvd_conn *c);

static void flush_out(struct rvd_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			rvd_conn_close(c, strerror(errno));
			return;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	update_events(c);
}

/* Reassembles and dispatches every complete frame held. */
static void dispatch(struct rvd_conn *c)
{
	const uint8_t *payload;
	uint32_t len;
	int rc;

	while (!c->closing && (rc = rv_frame_reader_next(&c->rd, &payload, &len)) == 1) {
		if (c->on_frame(c, payload, len) < 0)
			rvd_conn_close(c, NULL);
	}
	if (!c->closing && rc < 0) {
		if (c->on_stream_error)
			c->on_stream_error(c, rc);
		rvd_conn_close(c, rv_frame_strerror(rc));
	}
}

static void read_some(struct rvd_conn *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * RV_FRAME_MAX_FDS)];
	} ctl;
	uint8_t buf[RVD_READ_CHUNK];

	for (int round = 0; round < RVD_READS_PER_EVENT && !c->closing; round++) {
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {0};
		struct cmsghdr *cm;
		ssize_t n;
		int rc;

		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				rvd_conn_close(c, strerror(errno));
			return;
		}
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t k;
			int *fds;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			fds = (int *)(void *)CMSG_DATA(cm);
			for (size_t i = 0; i < k; i++) {
				if (!c->fds_allowed || c->nfds == RV_FRAME_MAX_FDS) {
					close(fds[i]);
					rvd_conn_close(c, c->fds_allowed ? "too many descriptors"
									 : "unexpected descriptor");
					continue;
				}
				c->fds[c->nfds++] = fds[i];
			}
		}
		if (c->closing)
			return;
		if (mh.msg_flags & MSG_CTRUNC) {
			rvd_conn_close(c, "truncated control data");
			return;
		}
		if (n == 0) {
			rvd_conn_close(c, c->rd.len > c->rd.consumed
						  ? "end of stream inside a frame"
						  : "closed by peer");
			return;
		}
		rc = rv_frame_reader_feed(&c->rd, buf, (size_t)n);
		if (rc < 0 && rc != -ENOMEM) {
			/* Let dispatch() report the sticky stream error. */
			dispatch(c);
			return;
		}
		if (rc < 0) {
			rvd_conn_close(c, "out of memory");
			return;
		}
		dispatch(c);
		if ((size_t)n < sizeof(buf))
			return;
	}
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
	struct rvd_conn *c = h->data;

	if (status < 0) {
		rvd_conn_close(c, uv_strerror(status));
		return;
	}
	if (events & UV_WRITABLE)
		flush_out(c);
	if (!c->closing && (events & (UV_READABLE | UV_DISCONNECT)))
		read_some(c);
}

static int update_events(struct rvd_conn *c)
{
	int ev = UV_READABLE | UV_DISCONNECT;
	int rc;

	if (c->closing)
		return 0;
	if (c->out_len > c->out_off)
		ev |= UV_WRITABLE;
	rc = uv_poll_start(&c->poll, ev, poll_cb);
	if (rc < 0)
		rvd_conn_close(c, uv_strerror(rc));
	return rc;
}

int rvd_conn_start(struct rvd_conn *c, uv_loop_t *loop, int fd, uint8_t channel, uint32_t max)
{
	socklen_t sl = sizeof(c->cred);
	int rc;

	c->fd = fd;
	c->channel = channel;
	c->started_ms = uv_now(loop);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &sl) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = uv_poll_init(loop, &c->poll, fd);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	c->poll.data = c;
	rv_frame_reader_init(&c->rd, channel, max);
	/* From here on a failure closes through uv_close and on_close. */
	update_events(c);
	return 0;
}

int rvd_conn_send(struct rvd_conn *c, const ProtobufCMessage *msg)
{
	uint8_t *frame;
	size_t len;
	int rc;

	if (c->closing)
		return -EPIPE;
	rc = rv_frame_pack(c->channel, msg, RV_FRAME_MAX_HARD, &frame, &len);
	if (rc < 0)
		return rc;
	if (c->out_len - c->out_off + len > RVD_CONN_MAX_OUT) {
		free(frame);
		rvd_conn_close(c, "peer does not read its replies");
		return -ENOBUFS;
	}
	if (c->out_off == c->out_len) {
		free(c->out);
		c->out = frame;
		c->out_len = len;
		c->out_off = 0;
	} else {
		uint8_t *nb = realloc(c->out, c->out_len + len);

		if (!nb) {
			free(frame);
			rvd_conn_close(c, "out of memory");
			return -ENOMEM;
		}
		memcpy(nb + c->out_len, frame, len);
		free(frame);
		c->out = nb;
		c->out_len += len;
	}
	flush_out(c);
	return c->closing ? -EPIPE : 0;
}

int rvd_conn_send_fd(struct rvd_conn *c, const ProtobufCMessage *msg, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh = {0};
	struct cmsghdr *cm;
	struct iovec iov;
	uint8_t *frame;
	size_t len;
	ssize_t n;
	int rc;

	if (c->closing)
		return -EPIPE;
	if (c->out_off != c->out_len)
		return -EBUSY;
	rc = rv_frame_pack(c->channel, msg, RV_FRAME_MAX_HARD, &frame, &len);
	if (rc < 0)
		return rc;
	memset(&ctl, 0, sizeof(ctl));
	iov.iov_base = frame;
	iov.iov_len = len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		rc = -errno;
		free(frame);
		if (rc != -EAGAIN && rc != -EWOULDBLOCK)
			rvd_conn_close(c, strerror(-rc));
		return rc == -EWOULDBLOCK ? -EAGAIN : rc;
	}
	/* The descriptor went with the first byte; the rest queues as usual. */
	free(c->out);
	c->out = frame;
	c->out_len = len;
	c->out_off = (size_t)n;
	flush_out(c);
	return c->closing ? -EPIPE : 0;
}

int rvd_conn_send_error(struct rvd_conn *c, int code, const char *msg)
{
	Rearview__Error err = REARVIEW__ERROR__INIT;
	Rearview__ControlMessage cm = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__AdminResponse ar = REARVIEW__ADMIN_RESPONSE__INIT;
	Rearview__EventMessage em = REARVIEW__EVENT_MESSAGE__INIT;

	err.code = (Rearview__Error__Code)code;
	err.message = (char *)msg;
	err.min_version = RV_FRAME_VERSION;
	err.max_version = RV_FRAME_VERSION;
	switch (c->channel) {
	case RV_CHANNEL_CONTROL:
		cm.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_ERROR;
		cm.error = &err;
		return rvd_conn_send(c, &cm.base);
	case RV_CHANNEL_ADMIN:
		ar.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_ERROR;
		ar.error = &err;
		return rvd_conn_send(c, &ar.base);
	default:
		em.msg_case = REARVIEW__EVENT_MESSAGE__MSG_ERROR;
		em.error = &err;
		return rvd_conn_send(c, &em.base);
	}
}

int rvd_conn_admit(const struct rvd_conn *list, int fd, uint8_t channel,
		   const struct rvd_peer_limits *lim, struct ucred *cred)
{
	socklen_t sl = sizeof(*cred);
	uint32_t on_socket = 0, of_uid = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &sl) < 0)
		return -errno;
	for (const struct rvd_conn *c = list; c; c = c->next) {
		if (c->closing || c->channel != channel)
			continue;
		on_socket++;
		if (c->cred.uid == cred->uid)
			of_uid++;
	}
	assert(of_uid <= on_socket);
	if (on_socket >= lim->max)
		return -ENOSPC;
	if (lim->max_per_uid && of_uid >= lim->max_per_uid)
		return -EUSERS;
	return 0;
}

unsigned rvd_conn_drop_unregistered(struct rvd_conn *list, uint64_t now_ms, uint64_t deadline_ms)
{
	unsigned n = 0;

	for (struct rvd_conn *c = list; c; c = c->next) {
		if (c->closing || c->channel != RV_CHANNEL_CONTROL || c->data ||
		    now_ms - c->started_ms < deadline_ms)
			continue;
		rvd_conn_close(c, "did not register in time");
		n++;
	}
	return n;
}
