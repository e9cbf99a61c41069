/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h — the server's counters and the /metrics page (metrics.c), in
 * Prometheus text exposition format.  struct rvs_metrics is only touched on
 * the loop thread, so it needs no atomics; work threads count into private
 * copies (a decode job's histogram) that the loop merges.
 */
#ifndef RVS_METRICS_H
#define RVS_METRICS_H

#include <stddef.h>
#include <stdint.h>

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

/* The webhook delivery passes' counters since the process started, for
 * /metrics (webhook.c counts them): POSTs answered 2xx, POSTs that failed,
 * deliveries given up (failed after max_attempts), and the pending
 * deliveries counted at the end of the last pass (0 before the first).
 * Any thread (atomics: the passes run on work threads). */
struct rvs_webhook_stats {
	uint64_t delivered, attempts_failed, given_up, pending;
};
void rvs_webhook_stats(struct rvs_webhook_stats *out);
/* One POST's outcome: delivered when ok, else a failed attempt, and a
 * delivery given up when given_up. */
void rvs_webhook_count(int ok, int given_up);
/* The pending deliveries at the end of a pass. */
void rvs_webhook_count_pending(uint64_t pending);

#endif
