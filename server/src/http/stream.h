/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stream.h — exports written to the client while they are made (issue 18
 * item 2): one producer thread per export writes through a FILE* into a
 * bounded queue of chunks that the connection pulls (net.h's
 * rvs_body_src), so an export's memory is its trace plus a few chunks,
 * whatever the size of the output.  Loop thread only.
 */
#ifndef RVS_STREAM_H
#define RVS_STREAM_H

#include <uv.h>

#include "http/net.h"
#include "model/export.h"

/* Bytes of one chunk, and how many chunks may wait for the connection
 * before the producer blocks: at most (STREAM_QUEUE + 1) * STREAM_CHUNK
 * bytes of output are held per export besides the socket's queue. */
#define RVS_STREAM_CHUNK (64u << 10)
#define RVS_STREAM_QUEUE 4

/* Starts writing export x (taken: freed whatever happens) on a thread of its
 * own and answers c with it: status 200, content_type, hdrs (copied).  done
 * (may be NULL) is called with arg on the loop thread once the export's
 * thread has ended and the connection let it go, that is when its memory
 * is freed.  0; -ENOMEM or -EAGAIN (no thread: nothing was sent, done is
 * not called, the caller answers c). */
int rvs_stream_export(uv_loop_t *loop, struct rvs_conn *c, struct rvs_export *x,
		      const char *content_type, const struct rvs_header *hdrs, size_t nhdrs,
		      void (*done)(void *arg), void *arg);

#endif
