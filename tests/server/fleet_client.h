/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_client.h — what the multi-node tests (test_fleet.c, test_chaos.c)
 * do as devices and operators of real rearview-server nodes: a POST over
 * TLS with libcurl, a real librvtrace capture of the instrumented fixture
 * (capture_fixture.c) compressed as a device sends it, and node B given
 * node A's keys and secrets.  No cmocka here: failures are return values.
 */
#ifndef RVS_FLEET_CLIENT_H
#define RVS_FLEET_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* A response body, cut at 8 KiB, and its Retry-After in seconds (0 when
 * the answer had none). */
struct fc_buf {
	uint8_t b[8192];
	size_t n;
	long retry_after;
};

/* A libcurl write callback appending to the struct fc_buf u (what does not
 * fit is dropped). */
size_t fc_collect(char *p, size_t sz, size_t n, void *u);

/* POSTs body (protobuf) to https://127.0.0.1:port/path, trusting ca, with
 * a bearer token unless NULL; the HTTP status, 0 when no answer (60 s at
 * most).  Safe on any thread once curl_global_init ran. */
long fc_post(int port, const char *ca, const char *path, const char *token, const uint8_t *body,
	     size_t len, struct fc_buf *out);

/* A real capture (256 KiB ring) of the fixture traced in this process,
 * written through dir/fixture.rvt and zstd-compressed (level 3): made on
 * the first call, then the same bytes; NULL when it could not be made.
 * *rawlen: its uncompressed size.  Not thread-safe. */
const uint8_t *fc_capture(const char *dir, size_t *zlen, size_t *rawlen);

/* Copies a fleet's shared files (CA and its key, the server certificate
 * and key, enrolment secret, API token, policy signing keys) from data
 * directory `from` to `to`.  0 or -1. */
int fc_copy_keys(const char *from, const char *to);

#endif
