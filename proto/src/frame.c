/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frame.c — the 8-byte frame header, stream reassembly and blocking
 * send/receive with descriptor passing (layout in rearview/frame.h and
 * proto/README.md).
 *
 * Invariants:
 *  - A header is validated (magic, version, channel, length ≤ max) before a
 *    single payload byte is buffered, so memory use is bounded by the
 *    receiver's limit, never by what a peer claims.
 *  - The reader's error is sticky: after a malformed frame the stream has no
 *    trustworthy boundary left, and the only safe action is to disconnect.
 */
#include "rearview/frame.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAGIC0 0x52 /* 'R' */
#define MAGIC1 0x56 /* 'V' */

static uint32_t clamp_max(uint32_t max)
{
	if (max == 0 || max > RV_FRAME_MAX_HARD)
		return RV_FRAME_MAX_HARD;
	return max;
}

void rv_frame_header_encode(uint8_t out[RV_FRAME_HEADER_SIZE], uint8_t channel, uint32_t length)
{
	out[0] = MAGIC0;
	out[1] = MAGIC1;
	out[2] = RV_FRAME_VERSION;
	out[3] = channel;
	out[4] = (uint8_t)length;
	out[5] = (uint8_t)(length >> 8);
	out[6] = (uint8_t)(length >> 16);
	out[7] = (uint8_t)(length >> 24);
}

int rv_frame_header_decode(const uint8_t *buf, size_t len, uint8_t channel, uint32_t max,
			   struct rv_frame_header *h)
{
	if (len < RV_FRAME_HEADER_SIZE)
		return -EAGAIN;
	if (buf[0] != MAGIC0 || buf[1] != MAGIC1)
		return -EBADMSG;
	h->version = buf[2];
	h->channel = buf[3];
	h->length = (uint32_t)buf[4] | (uint32_t)buf[5] << 8 | (uint32_t)buf[6] << 16 |
		    (uint32_t)buf[7] << 24;
	if (h->version != RV_FRAME_VERSION)
		return -EPROTONOSUPPORT;
	if (h->channel != channel)
		return -EPROTOTYPE;
	if (h->length > clamp_max(max))
		return -EMSGSIZE;
	return 0;
}

const char *rv_frame_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -EAGAIN:
		return "incomplete frame";
	case -EBADMSG:
		return "malformed frame";
	case -EPROTONOSUPPORT:
		return "unsupported protocol version";
	case -EPROTOTYPE:
		return "frame for another channel";
	case -EMSGSIZE:
		return "frame too large";
	case -ENOMEM:
		return "out of memory";
	default:
		return strerror(-err);
	}
}

int rv_frame_pack(uint8_t channel, const ProtobufCMessage *msg, uint32_t max, uint8_t **out,
		  size_t *out_len)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (n > clamp_max(max))
		return -EMSGSIZE;
	buf = malloc(RV_FRAME_HEADER_SIZE + n);
	if (!buf)
		return -ENOMEM;
	rv_frame_header_encode(buf, channel, (uint32_t)n);
	size_t packed = protobuf_c_message_pack(msg, buf + RV_FRAME_HEADER_SIZE);
	assert(packed == n);
	(void)packed;
	*out = buf;
	*out_len = RV_FRAME_HEADER_SIZE + n;
	return 0;
}

/* protobuf-c returns NULL both for bytes that do not decode and when an
 * allocation fails; this allocator (plain malloc/free, so the message is
 * still freed with a NULL allocator) records the second. */
struct unpack_alloc {
	ProtobufCAllocator a;
	int failed;
};

static void *unpack_alloc(void *data, size_t n)
{
	void *p = malloc(n);

	if (!p)
		((struct unpack_alloc *)data)->failed = 1;
	return p;
}

static void unpack_free(void *data, void *p)
{
	free(p);
}

int rv_frame_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *payload, size_t len,
		    ProtobufCMessage **out)
{
	struct unpack_alloc ua = {{unpack_alloc, unpack_free, NULL}, 0};
	ProtobufCMessage *m;

	ua.a.allocator_data = &ua;
	m = protobuf_c_message_unpack(desc, &ua.a, len, payload);
	if (!m)
		return ua.failed ? -ENOMEM : -EBADMSG;
	*out = m;
	return 0;
}

void rv_frame_reader_init(struct rv_frame_reader *r, uint8_t channel, uint32_t max)
{
	memset(r, 0, sizeof(*r));
	r->channel = channel;
	r->max = clamp_max(max);
}

void rv_frame_reader_release(struct rv_frame_reader *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Drops bytes already handed out, so the live data starts at buf[0]. */
static void reader_compact(struct rv_frame_reader *r)
{
	assert(r->consumed <= r->len && r->len <= r->cap);
	if (r->consumed == 0)
		return;
	memmove(r->buf, r->buf + r->consumed, r->len - r->consumed);
	r->len -= r->consumed;
	r->consumed = 0;
}

int rv_frame_reader_feed(struct rv_frame_reader *r, const void *data, size_t n)
{
	size_t limit = RV_FRAME_HEADER_SIZE + (size_t)r->max;

	if (r->error)
		return r->error;
	reader_compact(r);
	/*
	 * Holding more than one maximal frame is only possible if the peer
	 * pipelines faster than we consume; refuse rather than grow unbounded.
	 */
	if (r->len + n > 2 * limit)
		return r->error = -EMSGSIZE;
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		uint8_t *nb;

		while (cap < r->len + n)
			cap *= 2;
		if (cap > 2 * limit)
			cap = 2 * limit;
		nb = realloc(r->buf, cap);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	/* Bounded by the receiver's limit, never by what the peer claims. */
	assert(r->len <= r->cap && r->cap <= 2 * limit);
	return 0;
}

int rv_frame_reader_next(struct rv_frame_reader *r, const uint8_t **payload, uint32_t *len)
{
	struct rv_frame_header h;
	size_t avail;
	int rc;

	if (r->error)
		return r->error;
	avail = r->len - r->consumed;
	rc = rv_frame_header_decode(r->buf + r->consumed, avail, r->channel, r->max, &h);
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0)
		return r->error = rc;
	if (avail < RV_FRAME_HEADER_SIZE + (size_t)h.length)
		return 0;
	assert(h.length <= r->max);
	*payload = r->buf + r->consumed + RV_FRAME_HEADER_SIZE;
	*len = h.length;
	r->consumed += RV_FRAME_HEADER_SIZE + h.length;
	return 1;
}

int rv_frame_send(int sock, uint8_t channel, const ProtobufCMessage *msg, const int *fds,
		  size_t nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * RV_FRAME_MAX_FDS)];
	} ctl;
	uint8_t *frame;
	size_t len, off = 0;
	int rc;

	if (nfds > RV_FRAME_MAX_FDS)
		return -EINVAL;
	rc = rv_frame_pack(channel, msg, RV_FRAME_MAX_HARD, &frame, &len);
	if (rc < 0)
		return rc;
	while (off < len) {
		struct iovec iov = {.iov_base = frame + off, .iov_len = len - off};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n;

		/* Descriptors ride with the first sendmsg only. */
		if (off == 0 && nfds > 0) {
			struct cmsghdr *c;

			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out_free;
		}
		off += (size_t)n;
	}
	rc = 0;
out_free:
	free(frame);
	return rc;
}

/*
 * Reads exactly `want` bytes, collecting any descriptors into fds/nfds.
 * Returns `want`, a short count on end of stream, or a negative errno.
 */
static ssize_t read_full(int sock, uint8_t *dst, size_t want, int *fds, size_t cap, size_t *nfds)
{
	size_t got = 0;

	while (got < want) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int) * RV_FRAME_MAX_FDS)];
		} ctl;
		struct iovec iov = {.iov_base = dst + got, .iov_len = want - got};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf)};
		struct cmsghdr *c;
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			size_t k, cnt;

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (k = 0; k < cnt; k++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				if (fds && *nfds < cap)
					fds[(*nfds)++] = fd;
				else
					close(fd); /* more than the caller can take */
			}
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int rv_frame_recv(int sock, uint8_t channel, uint32_t max, uint8_t **payload, size_t *len, int *fds,
		  size_t *nfds)
{
	uint8_t hdr[RV_FRAME_HEADER_SIZE];
	struct rv_frame_header h;
	size_t cap = nfds ? *nfds : 0, got_fds = 0;
	uint8_t *body;
	ssize_t n;
	int rc;

	if (nfds)
		*nfds = 0;
	n = read_full(sock, hdr, sizeof(hdr), fds, cap, &got_fds);
	if (n < 0) {
		rc = (int)n;
		goto out_close_fds;
	}
	if (n == 0)
		return 0;
	if ((size_t)n < sizeof(hdr)) {
		rc = -EBADMSG;
		goto out_close_fds;
	}
	rc = rv_frame_header_decode(hdr, sizeof(hdr), channel, max, &h);
	if (rc < 0)
		goto out_close_fds;
	body = malloc(h.length ? h.length : 1);
	if (!body) {
		rc = -ENOMEM;
		goto out_close_fds;
	}
	n = read_full(sock, body, h.length, fds, cap, &got_fds);
	if (n < 0 || (size_t)n < h.length) {
		rc = n < 0 ? (int)n : -EBADMSG;
		free(body);
		goto out_close_fds;
	}
	*payload = body;
	*len = h.length;
	if (nfds)
		*nfds = got_fds;
	return 1;

out_close_fds:
	while (got_fds > 0)
		close(fds[--got_fds]);
	return rc;
}
