/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/frame.h — framing of protobuf messages on Rearview's local sockets.
 *
 * Every message on control.sock, events.sock and admin.sock travels as one
 * frame: an 8-byte header followed by a serialized protobuf.  The layout is
 * fixed forever (proto/README.md has the byte table and a worked example):
 *
 *   OFFSET SIZE DESCRIPTION
 *   0      2    magic "RV" (0x52 0x56)
 *   2      1    protocol version (RV_FRAME_VERSION)
 *   3      1    channel (enum rv_channel); a frame for another socket is refused
 *   4      4    payload length, little-endian, ≤ the receiver's maximum
 *   8      n    payload: one serialized ControlMessage / EventMessage / AdminRequest …
 *
 * File descriptors (a sealed capture memfd) ride in SCM_RIGHTS ancillary data
 * of the sendmsg() that carries the frame's header.
 *
 * Errors are negative errno values, described by rv_frame_strerror():
 *   -EAGAIN           more bytes are needed (a partial header)
 *   -EBADMSG          bad magic, a payload that is not the expected protobuf,
 *                     or a stream that ended inside a frame
 *   -EPROTONOSUPPORT  a protocol version this side does not speak
 *   -EPROTOTYPE       a frame meant for another channel
 *   -EMSGSIZE         a payload longer than the receiver's maximum
 */
#ifndef REARVIEW_FRAME_H
#define REARVIEW_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RV_FRAME_HEADER_SIZE 8u
#define RV_FRAME_VERSION     1u
/* Default payload limit: messages are small; captures travel as memfds. */
#define RV_FRAME_MAX_DEFAULT (1u << 20)
/* No receiver may raise its limit above this. */
#define RV_FRAME_MAX_HARD (16u << 20)
/* At most this many descriptors ride with one frame. */
#define RV_FRAME_MAX_FDS 4u

/* Which socket a frame belongs to.  On-wire codes: fixed forever. */
enum rv_channel {
	RV_CHANNEL_CONTROL = 1, /* traced process ↔ daemon, ControlMessage */
	RV_CHANNEL_EVENT = 2,	/* anomaly source → daemon, EventMessage */
	RV_CHANNEL_ADMIN = 3,	/* rvctl ↔ daemon, AdminRequest/AdminResponse */
};

struct rv_frame_header {
	uint8_t version;
	uint8_t channel;
	uint32_t length;
};

/* Writes the 8-byte header for a payload of `length` bytes into `out`. */
void rv_frame_header_encode(uint8_t out[RV_FRAME_HEADER_SIZE], uint8_t channel, uint32_t length);

/*
 * Parses a header from the first `len` bytes of `buf`, accepting only
 * `channel` and payloads of at most `max` bytes (clamped to RV_FRAME_MAX_HARD).
 * Returns 0 and fills `h`, or -EAGAIN / -EBADMSG / -EPROTONOSUPPORT /
 * -EPROTOTYPE / -EMSGSIZE.  On -EPROTONOSUPPORT `h` is still filled, so the
 * caller can report the version it saw.
 */
int rv_frame_header_decode(const uint8_t *buf, size_t len, uint8_t channel, uint32_t max,
			   struct rv_frame_header *h);

/* A short, static description of a negative errno returned by this API. */
const char *rv_frame_strerror(int err);

/*
 * Serializes `msg` into one complete frame in a new buffer.  On success
 * *out (caller frees with free()) holds *out_len bytes.  Returns 0, -EMSGSIZE
 * when the payload exceeds `max`, or -ENOMEM.
 */
int rv_frame_pack(uint8_t channel, const ProtobufCMessage *msg, uint32_t max, uint8_t **out,
		  size_t *out_len);

/*
 * Decodes a payload as a message of type `desc`.  On success *out is owned by
 * the caller, freed with protobuf_c_message_free_unpacked(*out, NULL).
 * Returns 0, -EBADMSG, or -ENOMEM when an allocation failed.
 */
int rv_frame_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *payload, size_t len,
		    ProtobufCMessage **out);

/*
 * Reassembles frames from a byte stream (for event-loop readers).  Storage is
 * caller-owned: rv_frame_reader_init() then rv_frame_reader_release().  The
 * buffer never grows beyond one header plus `max` payload bytes, so a hostile
 * peer cannot make it allocate more.
 */
struct rv_frame_reader {
	uint8_t *buf;
	size_t len;	 /* bytes held */
	size_t cap;	 /* bytes allocated */
	size_t consumed; /* bytes of `buf` already returned to the caller */
	uint32_t max;
	uint8_t channel;
	int error; /* sticky: once a stream is bad, it stays bad */
};

void rv_frame_reader_init(struct rv_frame_reader *r, uint8_t channel, uint32_t max);
void rv_frame_reader_release(struct rv_frame_reader *r);

/*
 * Appends `n` received bytes.  Returns 0, the reader's sticky error, or
 * -ENOMEM.  Bytes beyond what the next frame can hold are kept for later
 * frames, but never more than one maximal frame at a time (-EMSGSIZE past that).
 */
int rv_frame_reader_feed(struct rv_frame_reader *r, const void *data, size_t n);

/*
 * Returns 1 and points *payload and *len at the next complete frame's payload
 * (valid until the next call on `r`), 0 when more bytes are needed, or a
 * negative errno (sticky) when the stream is malformed.
 */
int rv_frame_reader_next(struct rv_frame_reader *r, const uint8_t **payload, uint32_t *len);

/*
 * Blocking helpers for simple clients (the tracer's control thread, rvctl) on
 * a connected stream socket.  Both retry on EINTR.
 *
 * rv_frame_send(): packs `msg` and writes the whole frame; `fds` (borrowed,
 * at most RV_FRAME_MAX_FDS) ride with it.  Returns 0 or a negative errno.
 *
 * rv_frame_recv(): reads one frame.  Returns 1 with *payload (caller frees
 * with free()) of *len bytes; 0 on a clean end of stream before a frame began;
 * a negative errno otherwise (-EBADMSG when the stream ends inside a frame).
 * Received descriptors are stored in `fds` (capacity *nfds on entry, count
 * on return; pass NULL to close any that arrive).
 */
int rv_frame_send(int sock, uint8_t channel, const ProtobufCMessage *msg, const int *fds,
		  size_t nfds);
int rv_frame_recv(int sock, uint8_t channel, uint32_t max, uint8_t **payload, size_t *len, int *fds,
		  size_t *nfds);

#ifdef __cplusplus
}
#endif
#endif
