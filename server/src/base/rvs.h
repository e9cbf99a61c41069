/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvs.h — rearview-server's private interfaces, shared by its source files.
 *
 * Threading model: one libuv loop thread owns every connection, the metrics
 * and the rate limiter; sqlite, blob writes, protobuf unpacking and file
 * reads run on the libuv work queue (uv_queue_work).  Functions marked
 * "work thread" must never be called on the loop thread and vice versa.
 */
#ifndef RVS_H
#define RVS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include <http_parser.h>

/* ---- logging (log.c) ---------------------------------------------------- */
/* Structured one-line logs on stderr: ts=… level=… msg="…" then key=value. */
void rvs_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- small crypto helpers (util.c) -------------------------------------- */
void rvs_sha256(const void *data, size_t len, uint8_t out[32]);
void rvs_hex(const uint8_t *in, size_t len, char *out); /* out: 2*len+1 bytes */
int rvs_random(void *buf, size_t len);			/* getrandom; 0 or -errno */
int rvs_ct_equal(const void *a, size_t alen, const void *b, size_t blen);
int rvs_pbkdf2(const char *pw, const uint8_t *salt, size_t saltlen, unsigned iter, uint8_t out[32]);
/* Reads a whole regular file (at most max bytes) into *out (caller frees),
 * NUL-terminated; a file that shrinks while read is -EIO. */
int rvs_read_file(const char *path, size_t max, uint8_t **out, size_t *len);

/* Requests that load a whole trace at once — exports (GET .../export, the
 * flame graph) loading or streaming, and the web UI's trace page (its
 * timeline) — so the server holds at most this many decoded traces for
 * requests; more get 503 with Retry-After.  Each holds its trace in memory and
 * streams its output (stream.h: a few chunks, never the whole output; issue
 * 18 item 2: a 40 MB trace of 10 M tiny calls made a 770 MB Chrome export). */
#define RVS_EXPORT_STREAMS 2
/* Allocations from this size up are mappings of their own (main.c). */
#define RVS_MMAP_THRESHOLD (1u << 20)
/* rvc_write_file_atomic (rearview/common.h): temp file in the same dir,
 * fsync, rename, directory fsync. */
int rvs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* ---- metrics (metrics.c; loop thread only) ------------------------------ */
enum rvs_err_reason {
	RVS_ERR_BAD_REQUEST,
	RVS_ERR_MALFORMED,
	RVS_ERR_UNAUTHORIZED,
	RVS_ERR_FORBIDDEN,
	RVS_ERR_TOO_LARGE,
	RVS_ERR_HEADER_TOO_LARGE,
	RVS_ERR_RATE_LIMITED,
	RVS_ERR_TIMEOUT,
	RVS_ERR_NOT_FOUND,
	RVS_ERR_METHOD,
	RVS_ERR_INTERNAL,
	RVS_ERR_TLS,
	RVS_ERR_CONN_LIMIT,
	RVS_ERR_COUNT
};
/* Decode-time histogram (Prometheus buckets, seconds, last bucket +Inf).
 * Work threads fill a private one per job; the loop thread adds it into
 * struct rvs_metrics with rvs_hist_merge. */
#define RVS_DECODE_BUCKETS 12
struct rvs_hist {
	uint64_t bucket[RVS_DECODE_BUCKETS]; /* not cumulative; rendered cumulative */
	uint64_t count;
	double sum;
};
void rvs_hist_observe(struct rvs_hist *h, double seconds);
void rvs_hist_merge(struct rvs_hist *into, const struct rvs_hist *from);

/* Why the decoder quarantined an upload (metrics label). */
enum rvs_decode_fail {
	RVS_DECODE_FAIL_BLOB,	     /* blob unreadable */
	RVS_DECODE_FAIL_ZSTD,	     /* corrupt, truncated or too large */
	RVS_DECODE_FAIL_COMPRESSION, /* unknown compression */
	RVS_DECODE_FAIL_CAPTURE,     /* librvanalysis refused the capture */
	RVS_DECODE_FAIL_INDEX,	     /* sqlite */
	RVS_DECODE_FAIL_OTHER,
	RVS_DECODE_FAIL_COUNT
};
/* The class of a decoder's reason text (decode.c writes "zstd: …" etc.). */
enum rvs_decode_fail rvs_decode_fail_class(const char *reason);

/* The route families error answers are counted by (route.h). */
#define RVS_METRIC_FAMILIES 3

struct rvs_metrics {
	uint64_t requests;
	uint64_t uploads;
	uint64_t upload_duplicates;
	uint64_t upload_bytes;
	uint64_t enrollments;
	uint64_t policy_fetches;
	uint64_t connections_total;
	uint64_t connections_evicted; /* idle ones closed to admit a new one at the limit */
	uint64_t connections_open;
	uint64_t decode_queue_depth;
	uint64_t errors[RVS_ERR_COUNT];
	struct rvs_hist decode_seconds;			 /* decodes that ran, ok or failed */
	uint64_t decode_failures[RVS_DECODE_FAIL_COUNT]; /* quarantined, by reason */
	uint64_t decode_wakeups;    /* PostgreSQL: NOTIFYs that woke this node's decoders */
	uint64_t decode_runs;	    /* decode jobs run (one drains a queue partition) */
	uint64_t decode_empty_runs; /* of them, found nothing on their first dequeue */
	uint64_t retention_runs;
	uint64_t retention_traces; /* traces deleted by retention */
	uint64_t retention_blobs;  /* blob files deleted by retention */
	uint64_t login_hashes;	   /* sign-in password hashes computed */
	/* Error answers (status 400..599) by route family (enum
	 * rvs_route_family: device API, JSON API, web UI) and status - 400. */
	uint64_t error_replies[RVS_METRIC_FAMILIES][200];
};
const char *rvs_err_name(enum rvs_err_reason r);
/* Counts an answer with status in m->error_replies when it is an error
 * (400..599; anything else is not counted).  family: an enum
 * rvs_route_family.  Loop thread. */
void rvs_metrics_count_reply(struct rvs_metrics *m, int family, int status);
/* Renders Prometheus text exposition into a heap buffer (caller frees). */
int rvs_metrics_render(const struct rvs_metrics *m, char **out, size_t *len);

/* ---- HTTP request parsing (http.c; pure, no I/O) ------------------------- */
struct rvs_http_req {
	enum http_method method;
	char path[1024];   /* URL path, query removed; never decoded */
	char query[1024];  /* the query string after '?', never decoded; "" if none */
	char auth[512];	   /* Authorization header */
	char inm[256];	   /* If-None-Match header */
	char cookie[1024]; /* Cookie header (the web UI's session) */
	uint8_t *body;	   /* owned; freed by rvs_http_next/release */
	size_t body_len;
	int keep_alive;
	int expect_continue; /* "Expect: 100-continue" was sent */
};
struct rvs_http {
	http_parser p;
	struct rvs_http_req req;
	size_t max_header, max_body;
	size_t header_bytes, body_cap;
	int began;	  /* a request's first byte has arrived */
	int headers_done; /* the current request's headers are complete */
	int complete;	  /* a whole request is ready; parser paused */
	int status;	  /* on error: 400, 413, 431 or 501 */
	const char *reason;
	/* header being parsed */
	char field[32];
	size_t field_len;
	int field_over;
	int last_was_value;
	size_t url_len;
	int url_over;
	char expect[32]; /* the Expect header */
	char te[32];	 /* the Transfer-Encoding header */
	int te_seen;	 /* how many Transfer-Encoding headers */
	/* Header-block scan for obsolete line folding: state of the bytes
	 * before the blank line that ends the headers (see rvs_http_feed). */
	int scan_nl, scan_done, scan_began;
	char *target; /* buffer the current value goes to, or NULL */
	size_t target_cap;
};
void rvs_http_init(struct rvs_http *h, size_t max_header, size_t max_body);
void rvs_http_release(struct rvs_http *h);
/* Feeds plaintext.  Returns bytes consumed (stops after a complete request:
 * h->complete is then set) or -EPROTO with h->status/h->reason set. */
ssize_t rvs_http_feed(struct rvs_http *h, const char *data, size_t len);
/* Frees the finished request and readies the parser for the next one. */
void rvs_http_next(struct rvs_http *h);

/* ---- upload envelope validation (upload.c; work thread or fuzzer) ------- */
struct Rearview__UploadEnvelope;
/* Unpacks and validates an UploadEnvelope.  On success *out is set (free with
 * rearview__upload_envelope__free_unpacked(*out, NULL)); on failure returns
 * -EBADMSG (malformed) or -EINVAL and writes a human reason into reason, or
 * -ENOMEM when memory ran out unpacking it (not the device's fault: the API
 * answers 503 with Retry-After and the device sends it again). */
int rvs_upload_parse(const uint8_t *buf, size_t len, struct Rearview__UploadEnvelope **out,
		     char *reason, size_t reasonlen);
/* Checks an untrusted string field: bounded length, UTF-8, no control chars. */
int rvs_field_ok(const char *s, size_t max);
struct ProtobufCAllocator;
/* Fills *a for protobuf-c's unpack of an untrusted body: malloc and free
 * (so free_unpacked(x, NULL) frees what it made), and *failed (set to 0
 * here) becomes 1 when an allocation fails, which tells an unpack that ran
 * out of memory from a malformed body.  Thread-safe. */
void rvs_pb_allocator(struct ProtobufCAllocator *a, int *failed);
/* Test seam for the allocation failure above: when nonzero, the
 * allocation that counts it down to 0 fails (1: the next one). */
extern _Atomic unsigned long rvs_pb_alloc_fail_in;

/* ---- skip report validation (skips.c; work thread or fuzzer) ------------- */
struct Rearview__SkipReport;
/* Unpacks and validates a SkipReport, like rvs_upload_parse: *out to be
 * freed with rearview__skip_report__free_unpacked(*out, NULL); -EBADMSG or
 * -EINVAL with a human reason, -ENOMEM out of memory. */
int rvs_skip_parse(const uint8_t *buf, size_t len, struct Rearview__SkipReport **out, char *reason,
		   size_t reasonlen);

/* ---- blob store (blob_local.c; work thread; blob.h: the interface) ----- */
/* Content-addressed: DIR/ab/abcdef… named by the SHA-256 of the content. */
int rvs_blob_put(const char *dir, const void *data, size_t len, char hex_out[65]);
int rvs_blob_path(const char *dir, const char *hex, char *out, size_t outlen);
/* Retention when the config does not say (issue 18: bounded by default). */
#define RVS_DEFAULT_RETENTION_DAYS 90

/* The largest capture the server inflates (bytes): an upload declaring more
 * is refused, and inflating stops at the size the upload declared.  Devices
 * spool captures of at most 64 MiB. */
#define RVS_MAX_CAPTURE_BYTES (256ull << 20)
/* PBKDF2-SHA256 iterations of an admin password (init), also spent on a
 * sign-in for an unknown user. */
#define RVS_ADMIN_PBKDF2_ITERATIONS 210000

struct rvs_blob_sweep_stats {
	uint64_t temps;	  /* temporary files of unfinished writes removed */
	uint64_t orphans; /* blobs no upload references, removed */
};
/* Walks DIR and unlinks the regular files at least min_age_s old that are
 * leftovers of an unfinished write (not named like a blob, or in DIR/tmp)
 * and, when `referenced` is given, the blobs it says nobody references
 * (it returns 1 referenced, 0 not, <0 error — which stops the walk).
 * Symlinks and directories are never touched.  *out (may be NULL) gets the
 * counts.  0 or a negative errno. */
int rvs_blob_sweep(const char *dir, int64_t min_age_s,
		   int (*referenced)(const char *hex, void *arg), void *arg,
		   struct rvs_blob_sweep_stats *out);

/* ---- storage interface (store.h has the function table) ----------------- */

/* ---- configuration (config.c) -------------------------------------------- */
struct rvs_config {
	char listen_host[64];
	int listen_port;
	char data_dir[512];
	char tls_cert[512];
	char tls_key[512];
	char enroll_secret_file[512];
	char policy_file[512];
	char database[512];
	char blob_dir[512];
	char port_file[512];
	uint64_t max_body_bytes;
	uint32_t max_header_bytes;
	uint32_t max_connections;
	uint32_t request_timeout_ms;
	uint32_t idle_timeout_ms;
	double upload_rate_per_min;
	uint32_t upload_burst;
	uint32_t auth_fail_per_min; /* refill of a peer address's failed-auth budget */
	uint32_t auth_fail_burst;
	/* Enrolments allowed per peer address and per enrolment secret
	 * (burst, refill per minute); more get 429 with Retry-After. */
	uint32_t enroll_per_min, enroll_burst;
	uint32_t enroll_secret_per_min, enroll_secret_burst;
	/* Connections one peer address may hold at once; past three quarters of
	 * max_connections a new connection's TLS handshake must finish within
	 * handshake_pressure_ms (not request_timeout_ms), and at the limit the
	 * connection idle the longest is closed to admit the new one. */
	uint32_t max_conns_per_addr;
	uint32_t handshake_pressure_ms;
	/* Sign-ins hashing their password at once (each holds a work thread for
	 * the PBKDF2); more get 503 with Retry-After. */
	uint32_t login_hashers;
	char symbols_dir[512]; /* the symbol store (symbols.h) */
	/* [store] blobs: "s3://BUCKET/PREFIX" or a directory; "" is blob_dir.
	 * The S3 backend's settings (blob.h's rvs_blob_s3_config). */
	char blobs[512];
	char s3_endpoint[256], s3_region[64], s3_access_key[128], s3_secret_file[512];
	double retention_days;	       /* traces older than this are deleted; 0 keeps all */
	uint32_t retention_interval_s; /* how often the retention job runs */
	uint32_t decode_jobs;	       /* decodes at once, 1..RVS_DECODE_LANES (api.h); default
					* rvs_default_decode_jobs() */
	uint32_t decode_lease_s;       /* PostgreSQL: how long a node's decode lease lasts
					* before another node may take the upload (300) */
	uint32_t decode_poll_s;	       /* PostgreSQL: how often an idle node looks at the
					* queue without a wake-up (30) */
	/* Regression alerts (regress.h, webhook.h; README.md "Regression
	 * alerts"): the automatic comparison's timer and bar, the webhook URLs
	 * (space-separated) with their HMAC key file and retry schedule. */
	uint32_t regress_interval_ms, regress_min_traces;
	double regress_margin, regress_alert_ratio, regress_alert_q;
	char webhook_urls[1024], webhook_secret_file[512], public_url[256];
	uint32_t webhook_max_attempts, webhook_backoff_ms, webhook_timeout_ms;
	/* The decoded traces the web UI keeps (model_cache.h), MiB; 0 keeps
	 * none.  Counts toward the server's memory bound. */
	uint32_t trace_cache_mb;
};
/* Loads an INI file; relative paths are resolved against data_dir.
 * 0, -ENOENT (unreadable), -EINVAL (bad content), -ENAMETOOLONG or -ENOMEM,
 * with a human reason in err. */
int rvs_config_load(const char *path, struct rvs_config *cfg, char *err, size_t errlen);
/* decode_jobs when the config does not say: 2 on a machine with two or more
 * online CPUs, else 1 — two decodes plus the uploads' blob writes and the
 * store fit the default libuv pool of 4 threads (server/BENCHMARKS.md). */
unsigned rvs_default_decode_jobs(void);

/* ---- init (init.c): the operator's commands ------------------------------- */
/* Host names a server certificate may carry besides localhost/127.0.0.1. */
#define RVS_MAX_HOSTNAMES 8
/* 0 when name is an IPv4/IPv6 address or a DNS name (labels of letters,
 * digits and '-', 1..63 each, 253 in all; a leading "*." allowed), else
 * -EINVAL. */
int rvs_hostname_check(const char *name);
/* `rearview-server init DIR [--hostname NAME]...`: creates DIR's keys, CA,
 * server certificate (for localhost, 127.0.0.1 and names), secrets, sqlite
 * database with the admin account, and configuration; prints the admin
 * password once.  -EEXIST when DIR has a configuration, -EINVAL for a bad
 * name, -E2BIG past RVS_MAX_HOSTNAMES, else 0 or -errno. */
int rvs_init_dir(const char *dir, const char *const *names, size_t nnames);
/* `rearview-server cert`: a new key and certificate (localhost, 127.0.0.1
 * and names) signed by data_dir/ca.key, written over cfg->tls_key then
 * cfg->tls_cert (each atomically; a crash between the two leaves a pair
 * the server refuses at start: run the command again).  Devices keep
 * trusting ca.crt.  0, -EINVAL (no or bad name), -ENOENT (no CA key). */
int rvs_init_cert(const struct rvs_config *cfg, const char *const *names, size_t nnames);
/* `rearview-server passwd`: a new random password for web account `user`
 * (created if missing), stored as a PBKDF2 hash in cfg's database (either
 * backend) and printed once.  0 or -errno. */
int rvs_init_passwd(const struct rvs_config *cfg, const char *user);
/* policy_pub.c: when cfg->policy_file is missing, publishes librvpolicy's
 * default policy as version 1, signed with DIR/policy-signing.key.  0 when
 * published or already present, else a negative errno (logged). */
int rvs_policy_publish_default(const struct rvs_config *cfg);
/* Signs body with DIR/policy-signing.key and writes it to policy_file
 * atomically (work thread).  0 or a negative errno (logged). */
struct Rearview__PolicyBody;
int rvs_policy_publish(const struct rvs_config *cfg, const struct Rearview__PolicyBody *body);

#endif
