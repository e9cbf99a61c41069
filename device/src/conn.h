/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn.h — one peer on a daemon socket: non-blocking unix stream socket
 * watched with uv_poll, frames reassembled with rv_frame_reader, received
 * descriptors (SCM_RIGHTS) queued in arrival order.
 *
 * Why uv_poll + recvmsg instead of uv_pipe in IPC mode: a capture memfd must
 * be tied to the CaptureReady frame it travels with.  Reading the socket
 * ourselves gives us each recvmsg's control data next to the exact bytes it
 * came with, lets us use MSG_CMSG_CLOEXEC and detect MSG_CTRUNC, and keeps
 * one code path for all three sockets (libuv's IPC mode would also accept
 * descriptors on events.sock and admin.sock, where we refuse them).
 */
#ifndef RVD_CONN_H
#define RVD_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include <protobuf-c/protobuf-c.h>

#include "rearview/frame.h"

struct rvd_conn;

/* A complete frame.  Returns 0 to go on, or a negative errno to disconnect
 * (the handler has logged why).  The handler may take descriptors with
 * rvd_conn_take_fd(). */
typedef int (*rvd_conn_frame_cb)(struct rvd_conn *c, const uint8_t *payload, uint32_t len);
/* The connection is gone (after uv_close); free per-peer state here. */
typedef void (*rvd_conn_close_cb)(struct rvd_conn *c);
/* The stream is malformed (rv_frame_* error); a last reply may be sent. */
typedef void (*rvd_conn_error_cb)(struct rvd_conn *c, int err);

#define RVD_CONN_MAX_OUT (4u << 20) /* a peer that stops reading is dropped */

struct rvd_conn {
	struct rvd_conn *next, *prev; /* the daemon's list */
	uv_poll_t poll;
	int fd;
	uint8_t channel;
	bool closing;
	bool fds_allowed;
	struct ucred cred;
	struct rv_frame_reader rd;
	int fds[RV_FRAME_MAX_FDS];
	unsigned nfds;
	uint8_t *out; /* unsent bytes */
	size_t out_len, out_off;
	rvd_conn_frame_cb on_frame;
	rvd_conn_close_cb on_close;
	rvd_conn_error_cb on_stream_error; /* optional */
	void *data;			   /* per-peer state, owned by the callbacks */
	uint64_t id;
	uint64_t started_ms; /* uv_now() at rvd_conn_start */
	int pidfd;	     /* control.sock: the peer's pidfd until it registers; else -1 */
};

/* How many peers a socket admits: in all, and from one uid (0: no per-uid
 * limit).  Peers already closing are not counted. */
struct rvd_peer_limits {
	uint32_t max;
	uint32_t max_per_uid;
};

/* Takes `fd` (an accepted socket); reads SO_PEERCRED; starts polling.
 * Returns 0 or a negative errno (fd closed). */
int rvd_conn_start(struct rvd_conn *c, uv_loop_t *loop, int fd, uint8_t channel, uint32_t max);

/* Frames and queues `msg`.  Returns 0, or a negative errno (the connection
 * is then being closed). */
int rvd_conn_send(struct rvd_conn *c, const ProtobufCMessage *msg);

/* Frames `msg` and sends it with descriptor `fd` (borrowed: the caller
 * closes it) in SCM_RIGHTS of the first bytes.  Only with nothing queued
 * (-EBUSY otherwise: the descriptor must ride with this frame's first
 * byte); -EAGAIN when the socket takes nothing now; other negative errnos
 * close the connection. */
int rvd_conn_send_fd(struct rvd_conn *c, const ProtobufCMessage *msg, int fd);

/* Sends the channel's Error message (ControlMessage, AdminResponse or
 * EventMessage .error) with `code` (Rearview__Error__Code) and `msg`
 * (borrowed), advertising this build's frame version as min and max.
 * Returns what rvd_conn_send returns.  Loop thread. */
int rvd_conn_send_error(struct rvd_conn *c, int code, const char *msg);

/* Removes and returns the oldest received descriptor, or -1. */
int rvd_conn_take_fd(struct rvd_conn *c);

/*
 * Decides whether the socket `channel` admits one more peer connected on
 * `fd` (accepted, not yet started), given the live peers on `list` (linked
 * by next) and `lim`.  Fills *cred from SO_PEERCRED.  Returns 0, -ENOSPC
 * when the socket is full, -EUSERS when the peer's uid holds its share, or
 * the getsockopt errno.  Loop thread; O(peers).
 */
int rvd_conn_admit(const struct rvd_conn *list, int fd, uint8_t channel,
		   const struct rvd_peer_limits *lim, struct ucred *cred);

/*
 * Closes every peer on `list` on the control channel that has not
 * registered (data still NULL) `deadline_ms` after it connected, as of
 * `now_ms` (uv_now).  Returns how many were closed.  Loop thread.
 */
unsigned rvd_conn_drop_unregistered(struct rvd_conn *list, uint64_t now_ms, uint64_t deadline_ms);

/* Logs `why` and closes; on_close runs later from uv_close.  Idempotent. */
void rvd_conn_close(struct rvd_conn *c, const char *why);

#endif
