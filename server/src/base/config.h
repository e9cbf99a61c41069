/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h — the server's configuration (config.c): the INI file's
 * [server] section, loaded once at start and read-only after.
 */
#ifndef RVS_CONFIG_H
#define RVS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* Retention when the config does not say (issue 18: bounded by default). */
#define RVS_DEFAULT_RETENTION_DAYS 90

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
	/* The work one page of a chain or substring search may do before it
	 * answers with a cursor (0: the built-in 400 ms). */
	uint32_t search_budget_ms;
	/* The rows one such page may scan (0: the built-in 400,000). */
	uint32_t search_budget_rows;
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
	/* Live personal API tokens one account may hold; creating one more
	 * is refused (409) until one is revoked. */
	uint32_t max_tokens_per_user;
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
	uint32_t decode_poll_s;	       /* how often an idle node looks at the queue
					* without a wake-up (30) */
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

#endif
