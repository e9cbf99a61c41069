/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.c — the /metrics page in Prometheus text exposition format.
 * The counters live in struct rvs_metrics and are only touched on the loop
 * thread, so they need no atomics.  Error answers are counted by route
 * family and status (rearview_error_replies_total); a family/status pair
 * appears once it has happened.  The webhook deliveries' counters are the
 * work threads' (rvs_webhook_count, atomics), read when rendering.
 */
#include "base/metrics.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const err_names[RVS_ERR_COUNT] = {
	[RVS_ERR_BAD_REQUEST] = "bad_request",	   [RVS_ERR_MALFORMED] = "malformed_protobuf",
	[RVS_ERR_UNAUTHORIZED] = "unauthorized",   [RVS_ERR_FORBIDDEN] = "forbidden",
	[RVS_ERR_TOO_LARGE] = "body_too_large",	   [RVS_ERR_HEADER_TOO_LARGE] = "header_too_large",
	[RVS_ERR_RATE_LIMITED] = "rate_limited",   [RVS_ERR_TIMEOUT] = "timeout",
	[RVS_ERR_NOT_FOUND] = "not_found",	   [RVS_ERR_METHOD] = "method_not_allowed",
	[RVS_ERR_INTERNAL] = "internal",	   [RVS_ERR_TLS] = "tls_handshake",
	[RVS_ERR_CONN_LIMIT] = "connection_limit",
};

static const double bucket_le[RVS_DECODE_BUCKETS - 1] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
							 0.5,	1,    2.5,   5,	   10};

void rvs_hist_observe(struct rvs_hist *h, double seconds)
{
	int i = 0;
	while (i < RVS_DECODE_BUCKETS - 1 && seconds > bucket_le[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum += seconds;
}

void rvs_hist_merge(struct rvs_hist *into, const struct rvs_hist *from)
{
	for (int i = 0; i < RVS_DECODE_BUCKETS; i++)
		into->bucket[i] += from->bucket[i];
	into->count += from->count;
	into->sum += from->sum;
}

static const struct {
	const char *prefix, *label;
} fail_classes[RVS_DECODE_FAIL_COUNT] = {
	[RVS_DECODE_FAIL_BLOB] = {"blob unreadable", "blob"},
	[RVS_DECODE_FAIL_ZSTD] = {"zstd:", "zstd"},
	[RVS_DECODE_FAIL_COMPRESSION] = {"unknown compression", "compression"},
	[RVS_DECODE_FAIL_CAPTURE] = {"capture:", "capture"},
	[RVS_DECODE_FAIL_INDEX] = {"index:", "index"},
	[RVS_DECODE_FAIL_OTHER] = {"", "other"},
};

/* Process-wide counters of the webhook delivery passes. */
static _Atomic uint64_t n_delivered, n_attempts_failed, n_given_up, n_pending;

void rvs_webhook_count(int ok, int given_up)
{
	if (ok)
		n_delivered++;
	else
		n_attempts_failed++;
	if (given_up)
		n_given_up++;
}

void rvs_webhook_count_pending(uint64_t pending)
{
	n_pending = pending;
}

void rvs_webhook_stats(struct rvs_webhook_stats *out)
{
	out->delivered = n_delivered;
	out->attempts_failed = n_attempts_failed;
	out->given_up = n_given_up;
	out->pending = n_pending;
}

enum rvs_decode_fail rvs_decode_fail_class(const char *reason)
{
	for (int i = 0; i < RVS_DECODE_FAIL_OTHER; i++)
		if (reason &&
		    strncmp(reason, fail_classes[i].prefix, strlen(fail_classes[i].prefix)) == 0)
			return (enum rvs_decode_fail)i;
	return RVS_DECODE_FAIL_OTHER;
}

/* The route families' label values, in enum rvs_route_family order. */
static const char *const family_names[RVS_METRIC_FAMILIES] = {"device", "api", "web"};

void rvs_metrics_count_reply(struct rvs_metrics *m, int family, int status)
{
	assert(family >= 0 && family < RVS_METRIC_FAMILIES);
	if (status >= 400 && status < 600)
		m->error_replies[family][status - 400]++;
}

const char *rvs_err_name(enum rvs_err_reason r)
{
	return (unsigned)r < RVS_ERR_COUNT ? err_names[r] : "unknown";
}

int rvs_metrics_render(const struct rvs_metrics *m, char **out, size_t *len)
{
	size_t cap = 16384, n = 0;
	uint64_t cum;
	char *buf = malloc(cap);
	int w;

	if (!buf)
		return -ENOMEM;
#define EMIT(...)                                            \
	do {                                                 \
		w = snprintf(buf + n, cap - n, __VA_ARGS__); \
		if (w < 0 || (size_t)w >= cap - n)           \
			goto overflow;                       \
		n += (size_t)w;                              \
	} while (0)
	EMIT("# HELP rearview_requests_total HTTP requests parsed.\n"
	     "# TYPE rearview_requests_total counter\nrearview_requests_total %" PRIu64 "\n",
	     m->requests);
	EMIT("# HELP rearview_uploads_total Uploads accepted (first delivery).\n"
	     "# TYPE rearview_uploads_total counter\nrearview_uploads_total %" PRIu64 "\n",
	     m->uploads);
	EMIT("# HELP rearview_upload_duplicates_total Retried uploads answered from storage.\n"
	     "# TYPE rearview_upload_duplicates_total counter\n"
	     "rearview_upload_duplicates_total %" PRIu64 "\n",
	     m->upload_duplicates);
	EMIT("# HELP rearview_upload_bytes_total Request body bytes of accepted uploads.\n"
	     "# TYPE rearview_upload_bytes_total counter\nrearview_upload_bytes_total %" PRIu64
	     "\n",
	     m->upload_bytes);
	EMIT("# HELP rearview_enrollments_total Devices enrolled.\n"
	     "# TYPE rearview_enrollments_total counter\nrearview_enrollments_total %" PRIu64 "\n",
	     m->enrollments);
	EMIT("# HELP rearview_policy_fetches_total Policy requests answered (200 or 304).\n"
	     "# TYPE rearview_policy_fetches_total counter\nrearview_policy_fetches_total %" PRIu64
	     "\n",
	     m->policy_fetches);
	EMIT("# HELP rearview_connections_total TCP connections accepted.\n"
	     "# TYPE rearview_connections_total counter\nrearview_connections_total %" PRIu64 "\n",
	     m->connections_total);
	EMIT("# HELP rearview_connections_evicted_total Idle connections closed to admit a new "
	     "one.\n"
	     "# TYPE rearview_connections_evicted_total "
	     "counter\nrearview_connections_evicted_total %" PRIu64 "\n",
	     m->connections_evicted);
	EMIT("# HELP rearview_connections_open Connections open now.\n"
	     "# TYPE rearview_connections_open gauge\nrearview_connections_open %" PRIu64 "\n",
	     m->connections_open);
	EMIT("# HELP rearview_decode_queue_depth Uploads waiting in state pending_decode.\n"
	     "# TYPE rearview_decode_queue_depth gauge\nrearview_decode_queue_depth %" PRIu64 "\n",
	     m->decode_queue_depth);
	EMIT("# HELP rearview_decode_wakeups_total Decode-queue notifications (PostgreSQL"
	     " NOTIFY) that woke this node's decoders.\n"
	     "# TYPE rearview_decode_wakeups_total counter\n"
	     "rearview_decode_wakeups_total %" PRIu64 "\n",
	     m->decode_wakeups);
	EMIT("# HELP rearview_errors_total Rejected requests and connections by reason.\n"
	     "# TYPE rearview_errors_total counter\n");
	for (int i = 0; i < RVS_ERR_COUNT; i++)
		EMIT("rearview_errors_total{reason=\"%s\"} %" PRIu64 "\n", err_names[i],
		     m->errors[i]);
	EMIT("# HELP rearview_decode_seconds Time to decode and index one upload.\n"
	     "# TYPE rearview_decode_seconds histogram\n");
	cum = 0;
	for (int i = 0; i < RVS_DECODE_BUCKETS; i++) {
		cum += m->decode_seconds.bucket[i];
		if (i < RVS_DECODE_BUCKETS - 1)
			EMIT("rearview_decode_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
			     bucket_le[i], cum);
		else
			EMIT("rearview_decode_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
	}
	EMIT("rearview_decode_seconds_sum %.6f\nrearview_decode_seconds_count %" PRIu64 "\n",
	     m->decode_seconds.sum, m->decode_seconds.count);
	EMIT("# HELP rearview_decode_failures_total Uploads quarantined by the decoder, by"
	     " reason.\n# TYPE rearview_decode_failures_total counter\n");
	for (int i = 0; i < RVS_DECODE_FAIL_COUNT; i++)
		EMIT("rearview_decode_failures_total{reason=\"%s\"} %" PRIu64 "\n",
		     fail_classes[i].label, m->decode_failures[i]);
	EMIT("# HELP rearview_decode_runs_total Decode jobs run (each drains its queue"
	     " partition).\n# TYPE rearview_decode_runs_total counter\n"
	     "rearview_decode_runs_total %" PRIu64 "\n",
	     m->decode_runs);
	EMIT("# HELP rearview_decode_empty_runs_total Decode jobs whose first dequeue found"
	     " nothing (another decoder, on this node or another, took the work).\n"
	     "# TYPE rearview_decode_empty_runs_total counter\n"
	     "rearview_decode_empty_runs_total %" PRIu64 "\n",
	     m->decode_empty_runs);
	EMIT("# HELP rearview_retention_runs_total Retention passes completed.\n"
	     "# TYPE rearview_retention_runs_total counter\n"
	     "rearview_retention_runs_total %" PRIu64 "\n",
	     m->retention_runs);
	EMIT("# HELP rearview_retention_deleted_traces_total Traces deleted for age.\n"
	     "# TYPE rearview_retention_deleted_traces_total counter\n"
	     "rearview_retention_deleted_traces_total %" PRIu64 "\n",
	     m->retention_traces);
	EMIT("# HELP rearview_retention_deleted_blobs_total Blobs deleted for age.\n"
	     "# TYPE rearview_retention_deleted_blobs_total counter\n"
	     "rearview_retention_deleted_blobs_total %" PRIu64 "\n",
	     m->retention_blobs);
	EMIT("# HELP rearview_login_hashes_total Sign-in password hashes computed (unknown"
	     " users included).\n# TYPE rearview_login_hashes_total counter\n"
	     "rearview_login_hashes_total %" PRIu64 "\n",
	     m->login_hashes);
	{
		struct rvs_webhook_stats wh;
		rvs_webhook_stats(&wh);
		EMIT("# HELP rearview_webhook_delivered_total Webhook deliveries POSTed and"
		     " answered 2xx.\n# TYPE rearview_webhook_delivered_total counter\n"
		     "rearview_webhook_delivered_total %" PRIu64 "\n",
		     wh.delivered);
		EMIT("# HELP rearview_webhook_attempts_failed_total Webhook POSTs that failed"
		     " (error or non-2xx answer).\n"
		     "# TYPE rearview_webhook_attempts_failed_total counter\n"
		     "rearview_webhook_attempts_failed_total %" PRIu64 "\n",
		     wh.attempts_failed);
		EMIT("# HELP rearview_webhook_given_up_total Webhook deliveries failed for good"
		     " (webhook_max_attempts spent).\n"
		     "# TYPE rearview_webhook_given_up_total counter\n"
		     "rearview_webhook_given_up_total %" PRIu64 "\n",
		     wh.given_up);
		EMIT("# HELP rearview_webhook_pending Webhook deliveries pending, as of the last"
		     " delivery pass.\n# TYPE rearview_webhook_pending gauge\n"
		     "rearview_webhook_pending %" PRIu64 "\n",
		     wh.pending);
	}
	EMIT("# HELP rearview_error_replies_total Error answers (status 400..599) by route"
	     " family (device, api, web) and status.\n"
	     "# TYPE rearview_error_replies_total counter\n");
	for (int f = 0; f < RVS_METRIC_FAMILIES; f++)
		for (int s = 0; s < 200; s++)
			if (m->error_replies[f][s])
				EMIT("rearview_error_replies_total{family=\"%s\",status=\"%d\"} "
				     "%" PRIu64 "\n",
				     family_names[f], 400 + s, m->error_replies[f][s]);
#undef EMIT
	*out = buf;
	*len = n;
	return 0;
overflow:
	free(buf);
	return -ENOBUFS;
}
