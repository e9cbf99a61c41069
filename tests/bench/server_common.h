/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_common.h — what the rearview-server benchmarks share: a server in
 * a temporary directory (the real binary, `init` then `--config`), curl
 * handles pointed at it, a clock and percentiles.
 */
#ifndef RVSB_COMMON_H
#define RVSB_COMMON_H

#include <stddef.h>
#include <sys/types.h>

#include <curl/curl.h>

struct rvsb {
	char dir[64];		  /* the temporary directory (removed by rvsb_stop) */
	char data[128];		  /* the server's data dir inside it */
	char ca[160];		  /* the CA certificate clients trust */
	char secret[128];	  /* the enrolment secret */
	char api_token[128];	  /* bearer token of /api/v1/ */
	char admin_password[128]; /* the web UI's "admin" (init's or, on PostgreSQL,
				   * rvsb_start's passwd output; "" if not found) */
	char db[512];		  /* the store's dsn: sqlite file or PostgreSQL URI */
	int port;
	pid_t pid;
};

/* Makes the temporary directory and runs `rearview-server init` in it;
 * b->db names the database the store switch picks (store_env.h);
 * b->admin_password the password init printed.
 * 0 or -1. */
int rvsb_init(struct rvsb *b);
/* Appends extra_conf (INI lines, may be NULL) plus a port-0 listener and
 * lifted rate limits to the config and starts the server; waits until it
 * listens.  The server's stderr goes to $RVS_BENCH_LOG when set, and
 * $RVS_BENCH_CONF (INI lines) is appended to the config.  $RVS_BENCH_BIN
 * names another server binary (side-by-side runs).  0 or -1. */
int rvsb_start(struct rvsb *b, const char *extra_conf);
/* SIGTERM, wait, remove the directory.  0 when the server exited cleanly. */
int rvsb_stop(struct rvsb *b);
/* Points h at https://127.0.0.1:port/path trusting the CA; discards the body. */
void rvsb_curl(const struct rvsb *b, CURL *h, const char *path);
/* A curl write callback appending to a NUL-terminated RVSB_TEXT_MAX-byte
 * buffer (its userdata); what does not fit is dropped. */
#define RVSB_TEXT_MAX 16384
size_t rvsb_append_text(char *p, size_t sz, size_t n, void *buf);
double rvsb_now(void); /* monotonic seconds */
/* Sorts v[0..n) and returns its p-th percentile (0 when n is 0). */
double rvsb_pct(double *v, size_t n, double p);

#endif
