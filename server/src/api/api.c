/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.c — request routing, the device API handlers and per-device rate
 * limiting.
 *
 * On the loop thread a request is routed through route.c's table, its
 * bearer token hashed and rate limited (cheap, bounded work); everything
 * that touches sqlite, the blob store, a file or unpacks a protobuf body
 * runs in a job on the work queue (the entry's handler) and answers from
 * the after-work callback, which also updates the metrics.
 * Error bodies are rearview.Error messages (code + human reason).
 */
#include "api/api.h"
#include "blob/blob.h"
#include "model/campaign.h"
#include "http/reply.h"
#include "http/route.h"
#include "model/regress.h"
#include "model/webhook.h"
#include "model/users.h"
#include "model/retention.h"
#include "http/stream.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <mbedtls/platform_util.h>

#include "rearview/common.pb-c.h"
#include "rearview/policy.h"
#include "rearview/policy.pb-c.h"
#include "rearview/upload.pb-c.h"
#include "base/log.h"
#include "base/util.h"
#include "pipeline/payload.h"
#include "pipeline/upload.h"
#include "base/text.h"

#define N_BUCKETS 1024

struct bucket {
	uint8_t key[32];
	double tokens;
	uint64_t last_ms;
	int used;
	int known; /* a token that has authenticated (or was just issued) */
};

struct rvs_api {
	uv_loop_t *loop;
	const struct rvs_config *cfg;
	struct rvs_metrics *m;
	const struct rvs_store_ops *ops;
	struct rvs_store *store;
	const struct rvs_decoder *decoder;
	struct rvs_blobs *blobs; /* the blob store ([store] blobs; blob.h) */
	uint8_t *secret;
	size_t secret_len;
	unsigned inflight;
	/* Sign-ins whose password hash is being computed: at most
	 * cfg->login_hashers at once, so hashing never holds more of the work
	 * pool than that (API work keeps the rest). */
	unsigned logins_hashing;
	/* Exports loading or streaming, and trace pages: at most
	 * RVS_EXPORT_STREAMS, each with its trace in memory (an export also with
	 * a thread writing it, stream.c). */
	unsigned exports;
	int stopping;
	/* One decode job per queue partition at most (RVS_DECODE_LANES). */
	int decoding[RVS_DECODE_LANES], decode_again[RVS_DECODE_LANES];
	void (*cb)(void *, int);
	void *cb_arg;
	void (*stop_done)(void *);
	void *stop_arg;
	uv_work_t life;
	int life_rc;
	uint64_t start_depth;
	/* The served policy's version, read (not verified: devices verify) from
	 * policy_file when its mtime or size changes; guarded by policy_mu as
	 * several work threads ask for it. */
	pthread_mutex_t policy_mu;
	struct timespec policy_mtime;
	off_t policy_size;
	uint64_t policy_version;
	/* SHA-256 of DIR/api.token, the JSON API's bearer token; api_enabled
	 * is 0 when the file is missing (every /api/ request then gets 401). */
	uint8_t api_hash[32];
	int api_enabled;
	struct bucket buckets[N_BUCKETS];
	struct bucket peers[N_BUCKETS]; /* failed-auth budget per peer address */
	/* Enrolment budgets (issue 18 item 5): per peer address, and of the
	 * enrolment secret (charged by requests presenting it), both charged
	 * on the loop thread before the job is queued. */
	struct bucket enroll_peers[N_BUCKETS];
	struct bucket enroll_secret;
	/* Retention (cfg->retention_days > 0): a timer queues one pass at a time. */
	uv_timer_t retention_timer;
	int retention_on, retention_busy;
	uv_work_t retention_work;
	struct rvs_retention_stats retention_stats;
	/* Regression alerts (regress.h, webhook.h): a timer queues one pass
	 * (the automatic comparison, then the due webhook deliveries). */
	uv_timer_t regress_timer;
	int regress_on, regress_busy;
	uv_work_t regress_work;
	/* Decode wake-ups (PostgreSQL; store.h wake_*): the listener opened by
	 * start_work, its socket watched on the loop (wake_on), and the poll
	 * every cfg->decode_poll_s that stands in when no NOTIFY comes. */
	struct rvs_wake *wake, *wake_new; /* wake_new: a reopen's, until done */
	uv_poll_t wake_poll;
	int wake_on, wake_busy; /* wake_busy: a reopen is queued */
	uv_work_t wake_work;
	uv_timer_t decode_timer;
	int decode_timer_on;
};

/* How a job's answer is made: a device API message (enrolment and policy
 * with their own bookkeeping), a JSON API document, a web UI page. */
enum job_kind { JOB_DEVICE, JOB_ENROLL, JOB_POLICY, JOB_QUERY, JOB_WEB };

struct job {
	uv_work_t w;
	struct rvs_api *a;
	struct rvs_conn *conn;
	struct rvs_http_req *req;
	const struct rvs_route *route; /* the entry serving req */
	unsigned allow;		       /* nonzero: a web method no entry serves */
	const char *arg;	       /* the route's wildcard match in req->path */
	size_t arg_len;
	enum job_kind kind;
	uint8_t token_hash[32];
	/* results: the answer (every kind), and a device API refusal's
	 * metric and rearview.Error made into q when the job is done */
	struct rvs_query_resp q;
	int err;  /* enum rvs_err_reason + 1, 0 when none */
	int code; /* Rearview__Error__Code */
	char reason[192];
	int new_upload, duplicate;
	/* JOB_ENROLL: the device enrolled before; its old token's hash. */
	int reenrolled;
	uint8_t old_token_hash[32];
	uint64_t requeued; /* a symbols upload: traces queued to decode again */
	int login;	   /* a sign-in: charged up front, one of logins_hashing */
	/* JOB_QUERY with a bearer token other than api.token: token_hash is
	 * checked against the personal tokens on the work thread; user: its
	 * owner once found. */
	int personal;
	char user[64];
	int export_slot; /* an export: one of a->exports until it ends */
};

/* Retry-After of an upload refused over the weekly quota: an hour, by
 * when the device's 7-day window may have room again. */
#define QUOTA_RETRY_S 3600
/* Retry-After of a body the server had no memory to unpack (503). */
#define NOMEM_RETRY_S 30

static void decode_pump(struct rvs_api *a);
static void decode_start(struct rvs_api *a, unsigned part);

/* ---- responses ---------------------------------------------------------- */

static void respond_error(struct rvs_conn *c, int status, int code, const char *reason,
			  const struct rvs_header *hdrs, size_t nhdrs)
{
	struct rvs_query_resp r = {0};

	if (rvs_reply_pb_error(&r, status, code, reason)) {
		rvs_conn_respond(c, status, "text/plain", hdrs, nhdrs, reason, strlen(reason));
		return;
	}
	rvs_conn_respond(c, r.status, r.content_type, hdrs, nhdrs, r.body, r.len);
	free(r.body);
}

static void job_fail(struct job *j, int status, enum rvs_err_reason err, int code,
		     const char *reason)
{
	j->q.status = status;
	j->err = (int)err + 1;
	j->code = code;
	snprintf(j->reason, sizeof j->reason, "%s", reason);
}

/* A body rvs_upload_parse or rvs_skip_parse refused with rc: out of memory
 * is the server's trouble, 503 with Retry-After (the device keeps the
 * capture and sends it again; issue 18: it used to be 400 "malformed" and
 * the device dropped it); otherwise 400. */
static void parse_fail(struct job *j, int rc, const char *reason)
{
	if (rc == -ENOMEM) {
		job_fail(j, 503, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__BUSY, reason);
		snprintf(j->q.retry_after, sizeof j->q.retry_after, "%d", NOMEM_RETRY_S);
		return;
	}
	job_fail(j, 400, rc == -EBADMSG ? RVS_ERR_MALFORMED : RVS_ERR_BAD_REQUEST,
		 REARVIEW__ERROR__CODE__MALFORMED, reason);
}

/* ---- rate limiting (loop thread) ------------------------------------------ */

/* Token buckets in a bounded table keyed by 32 bytes (a token hash, or a
 * peer address zero-padded); the least recently used entry is recycled. */
static struct bucket *bucket_find(struct bucket *tab, const uint8_t key[32], double burst,
				  uint64_t now)
{
	struct bucket *oldest = &tab[0];
	for (int i = 0; i < N_BUCKETS; i++) {
		struct bucket *x = &tab[i];
		if (x->used && memcmp(x->key, key, 32) == 0)
			return x;
		if (!x->used || (oldest->used && x->last_ms < oldest->last_ms))
			oldest = x;
	}
	memset(oldest, 0, sizeof *oldest);
	memcpy(oldest->key, key, 32);
	oldest->used = 1;
	oldest->tokens = burst;
	oldest->last_ms = now;
	return oldest;
}

/* The entry for key, or NULL: never inserts or evicts. */
static struct bucket *bucket_peek(struct bucket *tab, const uint8_t key[32])
{
	for (int i = 0; i < N_BUCKETS; i++)
		if (tab[i].used && memcmp(tab[i].key, key, 32) == 0)
			return &tab[i];
	return NULL;
}

static void bucket_refill(struct bucket *b, double per_min, double burst, uint64_t now)
{
	b->tokens += (double)(now - b->last_ms) * per_min / 60000.0;
	if (b->tokens > burst)
		b->tokens = burst;
	b->last_ms = now;
}

static unsigned retry_after(const struct bucket *b, double per_min)
{
	unsigned s = (unsigned)ceil((1.0 - b->tokens) * 60.0 / per_min);
	return s ? s : 1;
}

static struct bucket *token_bucket(struct rvs_api *a, const uint8_t key[32])
{
	uint64_t now = uv_now(a->loop);
	struct bucket *b = bucket_find(a->buckets, key, a->cfg->upload_burst, now);
	bucket_refill(b, a->cfg->upload_rate_per_min, a->cfg->upload_burst, now);
	return b;
}

static struct bucket *peer_bucket(struct rvs_api *a, struct rvs_conn *c)
{
	uint8_t key[32] = {0};
	uint64_t now = uv_now(a->loop);
	struct bucket *b;
	rvs_conn_peer(c, key);
	b = bucket_find(a->peers, key, a->cfg->auth_fail_burst, now);
	bucket_refill(b, a->cfg->auth_fail_per_min, a->cfg->auth_fail_burst, now);
	return b;
}

/* A failed authentication from this peer spends one unit of its budget. */
static void charge_auth_failure(struct rvs_api *a, struct rvs_conn *c)
{
	struct bucket *b = peer_bucket(a, c);
	b->tokens = b->tokens >= 1.0 ? b->tokens - 1.0 : 0.0;
}

static void mark_known(struct rvs_api *a, const uint8_t key[32])
{
	token_bucket(a, key)->known = 1;
}

/* A re-enrolled device's new token starts with what is left of its old
 * token's upload budget, not a fresh burst: re-enrolling does not reset the
 * device's rate limit. */
static void inherit_budget(struct rvs_api *a, const uint8_t old[32], const uint8_t key[32])
{
	struct bucket *o = bucket_peek(a->buckets, old), *n;
	double left;
	if (!o)
		return;
	bucket_refill(o, a->cfg->upload_rate_per_min, a->cfg->upload_burst, uv_now(a->loop));
	left = o->tokens;
	n = token_bucket(a, key);
	if (left < n->tokens)
		n->tokens = left;
}

/* "Bearer <token>", token of [A-Za-z0-9_-]{16,128}. */
static int bearer_hash(const char *auth, uint8_t out[32])
{
	size_t n;
	if (strncasecmp(auth, "Bearer ", 7) != 0)
		return -EACCES;
	auth += 7;
	while (*auth == ' ')
		auth++;
	n = strspn(auth, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");
	if (n < 16 || n > 128 || auth[n] != '\0')
		return -EACCES;
	rvs_sha256(auth, n, out);
	return 0;
}

/* ---- work (work thread) --------------------------------------------------- */

static void do_enroll(struct job *j)
{
	struct rvs_api *a = j->a;
	Rearview__EnrollRequest *r;
	Rearview__EnrollResponse resp = REARVIEW__ENROLL_RESPONSE__INIT;
	struct rvs_device_rec d = {0};
	uint8_t raw[32], id[16];
	char token[4 + 64 + 1];
	int rc;

	r = rearview__enroll_request__unpack(NULL, j->req->body_len, j->req->body);
	if (!r) {
		job_fail(j, 400, RVS_ERR_MALFORMED, REARVIEW__ERROR__CODE__MALFORMED,
			 "malformed: body is not an EnrollRequest");
		return;
	}
	if (!r->enrollment_secret ||
	    !rvs_ct_equal(r->enrollment_secret, strlen(r->enrollment_secret), a->secret,
			  a->secret_len)) {
		job_fail(j, 403, RVS_ERR_FORBIDDEN, REARVIEW__ERROR__CODE__DENIED,
			 "enrolment secret does not match");
		goto free_req;
	}
	if (r->device &&
	    (!rvs_field_ok(r->device->device_id, 128) || !rvs_field_ok(r->device->model, 256) ||
	     !rvs_field_ok(r->device->os_build, 256) || !rvs_field_ok(r->device->arch, 64))) {
		job_fail(j, 400, RVS_ERR_BAD_REQUEST, REARVIEW__ERROR__CODE__MALFORMED,
			 "device field too long or not printable UTF-8");
		goto free_req;
	}
	if (rvs_random(raw, sizeof raw) || rvs_random(id, sizeof id)) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL,
			 "no randomness");
		goto free_req;
	}
	memcpy(token, "rvd_", 4);
	rvs_hex(raw, sizeof raw, token + 4);
	memcpy(d.device_id, "d-", 2);
	rvs_hex(id, sizeof id, d.device_id + 2);
	rvs_sha256(token, strlen(token), d.token_hash);
	memcpy(j->token_hash, d.token_hash, 32);
	if (r->device) {
		d.client_device_id = r->device->device_id;
		d.model = r->device->model;
		d.os_build = r->device->os_build;
		d.arch = r->device->arch;
	}
	rc = a->ops->device_add(a->store, &d);
	if (!rc && d.reenrolled) {
		j->reenrolled = 1;
		memcpy(j->old_token_hash, d.old_token_hash, 32);
	}
	if (rc) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL,
			 "storage error");
		goto free_req;
	}
	resp.device_token = token;
	resp.device_id = d.device_id;
	j->q.len = rearview__enroll_response__get_packed_size(&resp);
	j->q.body = malloc(j->q.len);
	if (!j->q.body) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL, "no memory");
		goto free_req;
	}
	rearview__enroll_response__pack(&resp, (uint8_t *)j->q.body);
	j->q.status = 200;
free_req:
	mbedtls_platform_zeroize(raw, sizeof raw);
	rearview__enroll_request__free_unpacked(r, NULL);
}

static int device_of(struct job *j, char device_id[40])
{
	int rc = j->a->ops->device_by_token(j->a->store, j->token_hash, device_id);
	if (rc == -ENOENT)
		job_fail(j, 401, RVS_ERR_UNAUTHORIZED, REARVIEW__ERROR__CODE__DENIED,
			 "unknown device token");
	else if (rc)
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL,
			 "storage error");
	return rc;
}

/* Work thread: the version of the policy GET /v1/policy serves, 0 if none. */
static uint64_t served_policy_version(struct rvs_api *a)
{
	struct stat st;
	uint64_t v;

	pthread_mutex_lock(&a->policy_mu);
	if (stat(a->cfg->policy_file, &st) < 0) {
		a->policy_version = 0;
		a->policy_size = -1;
	} else if (st.st_size != a->policy_size || st.st_mtim.tv_sec != a->policy_mtime.tv_sec ||
		   st.st_mtim.tv_nsec != a->policy_mtime.tv_nsec) {
		uint8_t *buf;
		size_t len;
		a->policy_version = 0;
		a->policy_size = st.st_size;
		a->policy_mtime = st.st_mtim;
		if (rvs_read_file(a->cfg->policy_file, 1 << 20, &buf, &len) == 0) {
			Rearview__SignedPolicy *sp =
				rearview__signed_policy__unpack(NULL, len, buf);
			Rearview__PolicyBody *b = sp ? rearview__policy_body__unpack(
							       NULL, sp->body.len, sp->body.data)
						     : NULL;
			if (b)
				a->policy_version = b->version;
			if (b)
				rearview__policy_body__free_unpacked(b, NULL);
			if (sp)
				rearview__signed_policy__free_unpacked(sp, NULL);
			free(buf);
		}
	}
	v = a->policy_version;
	pthread_mutex_unlock(&a->policy_mu);
	return v;
}

static void ack(struct job *j, const uint8_t upload_id[16], const char *trace_id, int duplicate)
{
	Rearview__UploadAck k = REARVIEW__UPLOAD_ACK__INIT;
	k.upload_id.data = (uint8_t *)upload_id;
	k.upload_id.len = 16;
	k.trace_id = (char *)trace_id;
	k.duplicate = duplicate;
	k.policy_version = served_policy_version(j->a);
	j->q.len = rearview__upload_ack__get_packed_size(&k);
	j->q.body = malloc(j->q.len);
	if (!j->q.body) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL, "no memory");
		return;
	}
	rearview__upload_ack__pack(&k, (uint8_t *)j->q.body);
	j->q.status = 200;
	j->duplicate = duplicate;
	j->new_upload = !duplicate;
}

static void do_upload(struct job *j)
{
	struct rvs_api *a = j->a;
	Rearview__UploadEnvelope *e;
	struct rvs_upload_rec u = {0};
	char device_id[40], trace_id[40], blob[65], reason[160];
	uint8_t d[32], *summary = NULL;
	uint64_t charged = 0;
	int rc;

	if (device_of(j, device_id))
		return;
	rc = rvs_upload_parse(j->req->body, j->req->body_len, &e, reason, sizeof reason);
	/* The envelope holds its own copy of the payload: drop the request's
	 * now, so a 64 MiB body is not held twice through the blob write.  The
	 * connection is parked until the response (body_len stays for metrics). */
	free(j->req->body);
	j->req->body = NULL;
	if (rc) {
		parse_fail(j, rc, reason);
		return;
	}
	/* The server's id is a function of (device, upload_id): a retry maps
	 * to the same trace even if it races the first delivery. */
	{
		uint8_t buf[40 + 16];
		size_t n = strlen(device_id);
		memcpy(buf, device_id, n);
		memcpy(buf + n, e->upload_id.data, 16);
		rvs_sha256(buf, n + 16, d);
		memcpy(u.trace_id, "t-", 2);
		rvs_hex(d, 16, u.trace_id + 2);
	}
	rc = a->ops->upload_find(a->store, device_id, e->upload_id.data, trace_id);
	if (rc == 0) {
		ack(j, e->upload_id.data, trace_id, 1);
		goto free_env;
	}
	if (rc != -ENOENT)
		goto storage_error;
	/* Defence in depth (issue 18 item 11): a device's ledger keeps it
	 * within the served policy's weekly quota; one that does not (modified,
	 * or its eviction raced an upload in flight) is refused here.  Manual
	 * captures are not charged.  429: a retry succeeds once the 7-day
	 * window has room, so an honest device at the window's edge loses
	 * nothing.  This count spares the blob write of an upload over quota;
	 * the rule itself is upload_add's, counted in the transaction that
	 * inserts (two parallel uploads at quota - 1 both passed this count). */
	if (!e->anomaly || e->anomaly->kind != REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL) {
		Rearview__PolicyBody *served = rvs_policy_served(a->cfg);

		u.weekly_quota = rvp_policy_weekly_quota(served ? served : rvp_policy_default());
		u.quota_since = (int64_t)time(NULL) - 7 * 86400;
		if (served)
			rearview__policy_body__free_unpacked(served, NULL);
		if (a->ops->uploads_charged(a->store, device_id, u.quota_since, &charged))
			goto storage_error;
		if (charged >= u.weekly_quota)
			goto over_quota;
	}
	if (e->payload.len) {
		if ((rc = a->blobs->ops->put(a->blobs, e->payload.data, e->payload.len, blob))) {
			rvs_log("error", "msg=\"blob write failed\" err=%d", rc);
			goto storage_error;
		}
		u.blob_sha256 = blob;
		u.blob_bytes = e->payload.len;
	}
	if (e->summary) {
		u.summary_len = rearview__summary__get_packed_size(e->summary);
		summary = malloc(u.summary_len ? u.summary_len : 1);
		if (!summary)
			goto storage_error;
		rearview__summary__pack(e->summary, summary);
		u.summary = summary;
	}
	u.device_id = device_id;
	memcpy(u.upload_id, e->upload_id.data, 16);
	if (e->app) {
		u.app_id = e->app->app_id;
		u.app_version = e->app->version;
		u.app_build_id = e->app->build_id.data;
		u.app_build_id_len = e->app->build_id.len;
	}
	if (e->device) {
		u.model = e->device->model;
		u.os_build = e->device->os_build;
	}
	u.campaign_id = e->campaign_id;
	if (e->anomaly) {
		u.anomaly_kind = e->anomaly->kind;
		u.severity = (int)e->anomaly->severity;
	}
	u.consent = e->consent;
	u.payload_kind = e->payload_kind;
	u.compression = e->compression;
	u.payload_size = e->payload_size;
	u.captured_realtime_ns = e->captured_realtime_ns;
	rc = a->ops->upload_add(a->store, &u);
	if (rc == -EEXIST &&
	    a->ops->upload_find(a->store, device_id, e->upload_id.data, trace_id) == 0) {
		ack(j, e->upload_id.data, trace_id, 1);
		goto free_env;
	}
	if (rc == -EDQUOT) {
		charged = u.weekly_quota; /* at least: counted in the insert's transaction */
		goto over_quota;
	}
	if (rc)
		goto storage_error;
	ack(j, e->upload_id.data, u.trace_id, 0);
	goto free_env;
over_quota:
	snprintf(reason, sizeof reason,
		 "weekly upload quota exhausted (%" PRIu64 " of %u in 7 days)", charged,
		 u.weekly_quota);
	job_fail(j, 429, RVS_ERR_RATE_LIMITED, REARVIEW__ERROR__CODE__BUSY, reason);
	snprintf(j->q.retry_after, sizeof j->q.retry_after, "%d", QUOTA_RETRY_S);
	goto free_env;
storage_error:
	job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL, "storage error");
free_env:
	free(summary);
	rearview__upload_envelope__free_unpacked(e, NULL);
}

/* POST /v1/skips: store a device's report of an anomaly it did not upload;
 * a retry with the same report_id answers duplicate = true. */
static void do_skip(struct job *j)
{
	Rearview__SkipReport *r;
	Rearview__SkipAck k = REARVIEW__SKIP_ACK__INIT;
	struct rvs_skip_rec rec = {0};
	char device_id[40], reason[160];
	int rc;

	if (device_of(j, device_id))
		return;
	rc = rvs_skip_parse(j->req->body, j->req->body_len, &r, reason, sizeof reason);
	if (rc) {
		parse_fail(j, rc, reason);
		return;
	}
	rec.device_id = device_id;
	memcpy(rec.report_id, r->report_id.data, 16);
	rec.reason = r->reason;
	rec.captured_realtime_ns = r->captured_realtime_ns;
	if (r->app) {
		rec.app_id = r->app->app_id;
		rec.app_version = r->app->version;
	}
	if (r->anomaly) {
		rec.anomaly_kind = r->anomaly->kind;
		rec.severity = (int)r->anomaly->severity;
	}
	rc = j->a->ops->skip_add(j->a->store, &rec);
	if (rc && rc != -EEXIST) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL,
			 "storage error");
		goto free_report;
	}
	k.report_id = r->report_id;
	k.duplicate = rc == -EEXIST;
	j->q.len = rearview__skip_ack__get_packed_size(&k);
	j->q.body = malloc(j->q.len ? j->q.len : 1);
	if (!j->q.body) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL, "no memory");
		goto free_report;
	}
	rearview__skip_ack__pack(&k, (uint8_t *)j->q.body);
	j->q.status = 200;
free_report:
	rearview__skip_report__free_unpacked(r, NULL);
}

/* True when an If-None-Match list names etag (or is "*"). */
static int etag_matches(const char *inm, const char *etag)
{
	size_t n = strlen(etag);
	const char *p = inm;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (p[0] == '*')
			return 1;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return 1;
		p = strchr(p, ',');
		if (!p)
			break;
	}
	return 0;
}

static void do_policy(struct job *j)
{
	char device_id[40], hex[65];
	uint8_t d[32], *policy = NULL;
	int rc;

	if (device_of(j, device_id))
		return;
	rc = rvs_read_file(j->a->cfg->policy_file, 1 << 20, &policy, &j->q.len);
	j->q.body = (char *)policy;
	if (rc == -ENOENT) {
		job_fail(j, 404, RVS_ERR_NOT_FOUND, REARVIEW__ERROR__CODE__NOT_FOUND,
			 "no policy published");
		return;
	}
	if (rc) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL,
			 "cannot read policy");
		return;
	}
	rvs_sha256(j->q.body, j->q.len, d);
	rvs_hex(d, 16, hex);
	snprintf(j->q.etag, sizeof j->q.etag, "\"%s\"", hex);
	if (j->req->inm[0] && etag_matches(j->req->inm, j->q.etag)) {
		free(j->q.body);
		j->q.body = NULL;
		j->q.len = 0;
		j->q.status = 304;
		return;
	}
	j->q.status = 200;
}

void rvs_api_enroll(struct rvs_call *c)
{
	do_enroll(c->ctx);
}

void rvs_api_upload(struct rvs_call *c)
{
	do_upload(c->ctx);
}

void rvs_api_skip(struct rvs_call *c)
{
	do_skip(c->ctx);
}

void rvs_api_policy(struct rvs_call *c)
{
	do_policy(c->ctx);
}

/* Work thread: the personal token of j (token_hash), its owner into
 * j->user; 0 when it may call j's route, else nonzero with j->q the 401
 * (charged to the peer when done), 403 naming the role needed, or 503. */
static int personal_auth(struct job *j)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char msg[64];
	int rc, role = 0;

	if (rvs_store_acquire(j->a->cfg->database, &ops, &st)) {
		rvs_query_set_error(&j->q, 503, "database unavailable");
		return -1;
	}
	rc = ops->token_auth(st, j->token_hash, (int64_t)time(NULL), j->user, &role);
	rvs_store_release(st);
	if (rc == -ENOENT) {
		rvs_query_set_error(&j->q, 401, "missing or bad API token");
		j->q.auth_failed = 1;
		return -1;
	}
	if (rc) {
		rvs_query_set_error(&j->q, 503, "database unavailable");
		return -1;
	}
	if (role < j->route->role) {
		snprintf(msg, sizeof msg, "this needs the %s role", rvs_role_name(j->route->role));
		rvs_query_set_error(&j->q, 403, msg);
		return -1;
	}
	return 0;
}

static void job_work(uv_work_t *w)
{
	struct job *j = w->data;
	struct rvs_call c = {.cfg = j->a->cfg,
			     .method = j->req->method == HTTP_GET    ? RVS_M_GET
				       : j->req->method == HTTP_POST ? RVS_M_POST
								     : 0,
			     .path = j->req->path,
			     .query = j->req->query,
			     .body = j->req->body,
			     .body_len = j->req->body_len,
			     .arg = j->arg,
			     .arg_len = j->arg_len,
			     .q = &j->q,
			     .ctx = j,
			     .user = j->kind != JOB_QUERY ? NULL
				     : j->personal	  ? j->user
							  : "api.token"};

	if (j->personal && personal_auth(j))
		return;
	rvs_route_run(j->req, j->route, j->allow, &c);
	/* Traces that arrived before these symbols are decoded again. */
	if (c.build_id[0] && j->a->ops->requeue_build_id(j->a->store, c.build_id, &j->requeued) < 0)
		rvs_log("error", "msg=\"requeue for symbols failed\" build_id=%s", c.build_id);
}

static void maybe_stop(struct rvs_api *a);

/* An export's slot is free again (its stream ended, or it never started). */
static void export_end(void *arg)
{
	struct rvs_api *a = arg;
	assert(a->exports > 0);
	a->exports--;
}

/* Answers j with its export streamed (taken), or 503 when no thread could
 * be started; the export slot is given back when the stream ends. */
static void respond_export(struct rvs_api *a, struct job *j, struct rvs_export *x,
			   const char *ctype, const struct rvs_header *h, size_t n)
{
	assert(j->export_slot);
	j->export_slot = 0;
	if (rvs_stream_export(a->loop, j->conn, x, ctype, h, n, export_end, a) == 0)
		return;
	export_end(a);
	rvs_log("error", "msg=\"cannot start an export\" path=%s", j->req->path);
	rvs_conn_respond(j->conn, 503, "text/plain; charset=utf-8", NULL, 0,
			 "export failed to start; retry\n", 30);
}

/* Sends j's answer, j->q, with the headers it lists: an export streamed
 * (taken), any other body copied and freed. */
static void send_reply(struct rvs_api *a, struct job *j)
{
	struct rvs_header h[RVS_REPLY_HEADERS];
	size_t n = rvs_reply_headers(&j->q, h);

	rvs_metrics_count_reply(a->m, j->route->family, j->q.status);

	if (j->q.stream)
		respond_export(a, j, j->q.stream, j->q.content_type, h, n);
	else if (j->export_slot)
		export_end(a);
	if (!j->q.stream)
		rvs_conn_respond(j->conn, j->q.status, j->q.content_type, h, n, j->q.body,
				 j->q.len);
	free(j->q.body);
}

/* The web UI's answer with its security headers; a failed login spends the
 * peer's failed-authentication budget like a bad token does. */
static void web_respond(struct rvs_api *a, struct job *j)
{
	struct rvs_query_resp *w = &j->q;

	a->m->login_hashes += w->hashed != 0;
	if (w->auth_failed) {
		a->m->errors[RVS_ERR_UNAUTHORIZED]++;
		if (!j->login) /* a sign-in paid before its hash ran */
			charge_auth_failure(a, j->conn);
	} else if (j->login) {
		/* The password was right (or the form never got to the hash):
		 * give the unit back. */
		struct bucket *b = peer_bucket(a, j->conn);
		b->tokens = b->tokens + 1.0 > a->cfg->auth_fail_burst ? a->cfg->auth_fail_burst
								      : b->tokens + 1.0;
	}
	w->cache = "no-store";
	w->browser = 1;
	send_reply(a, j);
}

static void job_done(uv_work_t *w, int status)
{
	struct job *j = w->data;
	struct rvs_api *a = j->a;
	struct rvs_metrics *m = a->m;

	a->inflight--;
	if (j->kind == JOB_WEB) {
		if (j->login) {
			assert(a->logins_hashing > 0);
			a->logins_hashing--;
		}
		web_respond(a, j);
		free(j);
		maybe_stop(a);
		return;
	}
	if (j->requeued) {
		rvs_log("info", "msg=\"re-symbolizing\" traces=%" PRIu64, j->requeued);
		m->decode_queue_depth += j->requeued;
		decode_pump(a);
	}
	if (j->kind == JOB_QUERY) {
		j->q.cache = "no-store";
		if (j->q.auth_failed) {
			a->m->errors[RVS_ERR_UNAUTHORIZED]++;
			charge_auth_failure(a, j->conn);
		}
		send_reply(a, j);
		free(j);
		maybe_stop(a);
		return;
	}
	if (j->kind != JOB_ENROLL) {
		if (j->q.status == 401)
			charge_auth_failure(a, j->conn);
		else if (j->q.status < 500)
			mark_known(a, j->token_hash);
	} else if (j->q.status == 200) {
		mark_known(a, j->token_hash);
		if (j->reenrolled)
			inherit_budget(a, j->old_token_hash, j->token_hash);
	}
	if (j->err) {
		m->errors[j->err - 1]++;
		if (j->q.status >= 500)
			rvs_log("error", "msg=\"request failed\" path=%s status=%d reason=\"%s\"",
				j->req->path, j->q.status, j->reason);
		/* The refusal replaces whatever body the job had made. */
		free(j->q.body);
		j->q.body = NULL;
		j->q.len = 0;
		j->q.cache = "no-store";
		if (rvs_reply_pb_error(&j->q, j->q.status, j->code, j->reason)) {
			struct rvs_header h[RVS_REPLY_HEADERS];
			respond_error(j->conn, j->q.status, j->code, j->reason, h,
				      rvs_reply_headers(&j->q, h));
		} else {
			send_reply(a, j);
		}
	} else {
		if (j->kind == JOB_POLICY) {
			j->q.cache = "no-cache";
			m->policy_fetches++;
		}
		if (j->kind == JOB_ENROLL)
			m->enrollments++;
		if (j->new_upload) {
			m->uploads++;
			m->upload_bytes += j->req->body_len;
			m->decode_queue_depth++;
		}
		if (j->duplicate)
			m->upload_duplicates++;
		j->q.content_type = RVS_REPLY_PB;
		send_reply(a, j);
	}
	if (j->new_upload)
		decode_pump(a);
	free(j);
	maybe_stop(a);
}

/* ---- the decode seam ------------------------------------------------------ */

/* cfg->decode_jobs within 1..RVS_DECODE_LANES (a zeroed config means 1). */
static unsigned decode_jobs(const struct rvs_api *a)
{
	unsigned n = a->cfg->decode_jobs;
	return n < 1 ? 1 : n > RVS_DECODE_LANES ? RVS_DECODE_LANES : n;
}

struct decode_job {
	uv_work_t w;
	struct rvs_api *a;
	unsigned part; /* the queue partition this job drains */
	uint64_t depth;
	int empty;	      /* the first dequeue found nothing: another decoder took it */
	struct rvs_hist hist; /* this job's decode times, merged on the loop */
	uint64_t failures[RVS_DECODE_FAIL_COUNT];
	struct rvs_decode_item items[RVS_DECODE_BATCH];
};

/* Drains the job's partition a batch at a time: the decoder indexes it, the
 * store records every outcome in one transaction (a crash in between only
 * decodes the batch again: indexing replaces a trace's rows). */
static void decode_work(uv_work_t *w)
{
	struct decode_job *dj = w->data;
	struct rvs_api *a = dj->a;
	struct rvs_decode_item *it = dj->items;
	int n;

	dj->empty = 1;
	while ((n = a->ops->decode_next_batch(a->store, dj->part, decode_jobs(a), it,
					      RVS_DECODE_BATCH)) > 0) {
		dj->empty = 0;
		/* The decoder reads a file: the local blob's own, or a
		 * temporary copy of a remote one, removed after the batch. */
		int is_temp[RVS_DECODE_BATCH] = {0};
		for (int i = 0; i < n; i++) {
			int rc = -ENOENT;
			if (it[i].blob_sha256[0] &&
			    (rc = rvs_blobs_file(a->blobs, it[i].blob_sha256, RVS_MAX_CAPTURE_BYTES,
						 it[i].path, sizeof it[i].path, &is_temp[i]))) {
				/* A path that does not exist: the decoder
				 * quarantines it as "blob unreadable". */
				rvs_log("error", "msg=\"blob fetch failed\" blob=%s err=%d",
					it[i].blob_sha256, rc);
				snprintf(it[i].path, sizeof it[i].path, "%s/unreadable-%s",
					 a->blobs->tmp_dir, it[i].blob_sha256);
			} else if (rc) {
				it[i].path[0] = '\0'; /* summary-only */
			}
		}
		a->decoder->decode(a->decoder->ctx, it, (size_t)n);
		for (int i = 0; i < n; i++)
			if (is_temp[i])
				unlink(it[i].path);
		for (int i = 0; i < n; i++) {
			rvs_hist_observe(&dj->hist, it[i].seconds);
			if (it[i].rc) {
				if (!it[i].reason[0])
					snprintf(it[i].reason, sizeof it[i].reason,
						 "decode failed");
				dj->failures[rvs_decode_fail_class(it[i].reason)]++;
			}
		}
		if (a->ops->decode_finish(a->store, it, (size_t)n))
			break;
	}
	if (a->ops->queue_depth(a->store, &dj->depth))
		dj->depth = 0;
}

static void decode_done_cb(uv_work_t *w, int status)
{
	struct decode_job *dj = w->data;
	struct rvs_api *a = dj->a;
	a->m->decode_queue_depth = dj->depth;
	a->m->decode_runs++;
	a->m->decode_empty_runs += (uint64_t)dj->empty;
	rvs_hist_merge(&a->m->decode_seconds, &dj->hist);
	for (int i = 0; i < RVS_DECODE_FAIL_COUNT; i++)
		a->m->decode_failures[i] += dj->failures[i];
	a->inflight--;
	a->decoding[dj->part] = 0;
	if (a->decode_again[dj->part] && !a->stopping) {
		a->decode_again[dj->part] = 0;
		decode_start(a, dj->part);
	}
	free(dj);
	maybe_stop(a);
}

static void decode_start(struct rvs_api *a, unsigned part)
{
	struct decode_job *dj;
	if (a->decoding[part]) {
		a->decode_again[part] = 1;
		return;
	}
	dj = calloc(1, sizeof *dj);
	if (!dj)
		return;
	dj->a = a;
	dj->part = part;
	dj->w.data = dj;
	a->decoding[part] = 1;
	a->inflight++;
	uv_queue_work(a->loop, &dj->w, decode_work, decode_done_cb);
}

/* Decodes run on cfg->decode_jobs work threads at once, each draining its
 * partition of the queue: a 32 MiB capture takes a core for a few hundred
 * ms, so one decoder would leave the second core idle. */
static void decode_pump(struct rvs_api *a)
{
	if (!a->decoder || a->stopping)
		return;
	for (unsigned p = 0; p < decode_jobs(a); p++)
		decode_start(a, p);
}

/* ---- routing (loop thread) ------------------------------------------------ */

static struct job *queue_job(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req,
			     const struct rvs_route *r, unsigned allow, const char *arg,
			     size_t arg_len, const uint8_t *hash)
{
	struct job *j = calloc(1, sizeof *j);
	if (!j) {
		respond_error(c, 503, REARVIEW__ERROR__CODE__BUSY, "out of memory", NULL, 0);
		return NULL;
	}
	j->a = a;
	j->conn = c;
	j->req = req;
	j->route = r;
	j->allow = allow;
	j->arg = arg;
	j->arg_len = arg_len;
	j->kind = r->family == RVS_FAMILY_WEB	 ? JOB_WEB
		  : r->family == RVS_FAMILY_API	 ? JOB_QUERY
		  : r->auth == RVS_AUTH_ENROLL	 ? JOB_ENROLL
		  : r->handler == rvs_api_policy ? JOB_POLICY
						 : JOB_DEVICE;
	if (hash)
		memcpy(j->token_hash, hash, 32);
	/* An API job with a token hash carries a personal token. */
	j->personal = j->kind == JOB_QUERY && hash;
	j->w.data = j;
	j->login = r->auth == RVS_AUTH_LOGIN && !allow;
	a->inflight++;
	uv_queue_work(a->loop, &j->w, job_work, job_done);
	return j;
}

static void api_json_error(struct rvs_api *a, struct rvs_conn *c, int status, const char *msg,
			   const struct rvs_header *h, size_t nh);

/* Trace loads at once are bounded (RVS_EXPORT_STREAMS): past it 503 with
 * Retry-After (JSON for the JSON API) and nonzero.  load: the request loads
 * a whole trace; family: its route's. */
static int admit_export(struct rvs_api *a, struct rvs_conn *c, int load,
			enum rvs_route_family family)
{
	struct rvs_header h = {"Retry-After", "1"};
	if (!load || a->exports < RVS_EXPORT_STREAMS)
		return 0;
	a->m->errors[RVS_ERR_RATE_LIMITED]++;
	if (family == RVS_FAMILY_API) {
		api_json_error(a, c, 503, "exports busy; retry in a second", &h, 1);
		return -EBUSY;
	}
	rvs_metrics_count_reply(a->m, family, 503);
	rvs_conn_respond(c, 503, "text/plain; charset=utf-8", &h, 1,
			 "exports busy; retry in a second\n", 32);
	return -EBUSY;
}

/* j (NULL when it could not be queued) holds an export slot if it is one. */
static void export_job(struct rvs_api *a, struct job *j, int load)
{
	if (!j || !load)
		return;
	j->export_slot = 1;
	a->exports++;
}

static void method_not_allowed(struct rvs_api *a, struct rvs_conn *c, const char *allow,
			       enum rvs_route_family family)
{
	struct rvs_header h = {"Allow", allow};
	char msg[64];

	a->m->errors[RVS_ERR_METHOD]++;
	snprintf(msg, sizeof msg, "method not allowed (allowed: %s)", allow);
	if (family == RVS_FAMILY_API)
		return api_json_error(a, c, 405, msg, &h, 1);
	rvs_metrics_count_reply(a->m, family, 405);
	respond_error(c, 405, REARVIEW__ERROR__CODE__UNSPECIFIED, "method not allowed", &h, 1);
}

/* Checks the bearer token's shape and charges the device's bucket; a token
 * not yet seen to authenticate also needs budget left on its peer address,
 * so guessing tokens cannot turn into unbounded database lookups.  Answers
 * 401 or 429 itself and returns nonzero then. */
static int admit(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req, uint8_t hash[32])
{
	struct rvs_header h[1];
	struct bucket *b, *p;
	char secs[16];

	if (bearer_hash(req->auth, hash)) {
		h[0] = (struct rvs_header){"WWW-Authenticate", "Bearer"};
		a->m->errors[RVS_ERR_UNAUTHORIZED]++;
		charge_auth_failure(a, c);
		respond_error(c, 401, REARVIEW__ERROR__CODE__DENIED, "missing or bad bearer token",
			      h, 1);
		return -1;
	}
	/* Peek first: a guessed token must not take (and evict) a table slot
	 * once its address has no budget left. */
	b = bucket_peek(a->buckets, hash);
	if (!b || !b->known) {
		p = peer_bucket(a, c);
		if (p->tokens < 1.0) {
			snprintf(secs, sizeof secs, "%u",
				 retry_after(p, a->cfg->auth_fail_per_min));
			h[0] = (struct rvs_header){"Retry-After", secs};
			a->m->errors[RVS_ERR_RATE_LIMITED]++;
			respond_error(c, 429, REARVIEW__ERROR__CODE__BUSY,
				      "too many failed authentications from this address", h, 1);
			return -1;
		}
	}
	b = token_bucket(a, hash);
	if (b->tokens < 1.0) {
		snprintf(secs, sizeof secs, "%u", retry_after(b, a->cfg->upload_rate_per_min));
		h[0] = (struct rvs_header){"Retry-After", secs};
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		respond_error(c, 429, REARVIEW__ERROR__CODE__BUSY, "rate limit exceeded", h, 1);
		return -1;
	}
	b->tokens -= 1.0;
	return 0;
}

/* Charges an enrolment to its peer address and, when it presents the
 * enrolment secret, to the secret's budget (a wrong secret spends only the
 * address's: it gets 403, and cannot exhaust the real secret's budget);
 * when a budget is spent answers 429 with Retry-After and returns nonzero.
 * Charged before the job runs, so parallel enrolments cannot pass together. */
static int admit_enroll(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req)
{
	Rearview__EnrollRequest *r;
	struct rvs_header h[1];
	uint8_t key[32] = {0};
	uint64_t now = uv_now(a->loop);
	struct bucket *p, *s = &a->enroll_secret;
	int presents_secret;
	char secs[16];

	rvs_conn_peer(c, key);
	p = bucket_find(a->enroll_peers, key, a->cfg->enroll_burst, now);
	bucket_refill(p, a->cfg->enroll_per_min, a->cfg->enroll_burst, now);
	if (p->tokens < 1.0) {
		snprintf(secs, sizeof secs, "%u", retry_after(p, a->cfg->enroll_per_min));
		h[0] = (struct rvs_header){"Retry-After", secs};
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		respond_error(c, 429, REARVIEW__ERROR__CODE__BUSY,
			      "too many enrolments from this address", h, 1);
		return -1;
	}
	r = rearview__enroll_request__unpack(NULL, req->body_len, req->body);
	presents_secret = r && r->enrollment_secret &&
			  rvs_ct_equal(r->enrollment_secret, strlen(r->enrollment_secret),
				       a->secret, a->secret_len);
	rearview__enroll_request__free_unpacked(r, NULL);
	if (presents_secret) {
		if (!s->used) {
			s->used = 1;
			s->tokens = a->cfg->enroll_secret_burst;
			s->last_ms = now;
		}
		bucket_refill(s, a->cfg->enroll_secret_per_min, a->cfg->enroll_secret_burst, now);
		if (s->tokens < 1.0) {
			snprintf(secs, sizeof secs, "%u",
				 retry_after(s, a->cfg->enroll_secret_per_min));
			h[0] = (struct rvs_header){"Retry-After", secs};
			a->m->errors[RVS_ERR_RATE_LIMITED]++;
			respond_error(c, 429, REARVIEW__ERROR__CODE__BUSY,
				      "too many enrolments with this secret", h, 1);
			return -1;
		}
		s->tokens -= 1.0;
	}
	p->tokens -= 1.0;
	return 0;
}

/* The JSON API's refusal on the loop thread: {"error": msg}, as its
 * endpoints answer (reply.h). */
static void api_json_error(struct rvs_api *a, struct rvs_conn *c, int status, const char *msg,
			   const struct rvs_header *h, size_t nh)
{
	struct rvs_query_resp r = {0};

	rvs_metrics_count_reply(a->m, RVS_FAMILY_API, status);
	rvs_query_set_error(&r, status, msg);
	rvs_conn_respond(c, r.status, r.content_type, h, nh, r.body, r.len);
	free(r.body);
}

/* The JSON API's tokens.  api.token (an admin's, so it passes route r's
 * role) is compared by hash in constant time on the loop thread (no
 * database): 0.  Any other well-formed bearer token may be a personal one:
 * 1 with its SHA-256 in hash, checked on the work thread (personal_auth).
 * Failures spend the peer's failed-authentication budget; once it is gone
 * every token but api.token gets 429, so tokens cannot be guessed quickly.
 * -1: answered. */
static int admit_api(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req,
		     const struct rvs_route *r, uint8_t hash[32])
{
	struct rvs_header h[1];
	struct bucket *p;
	char secs[16];
	int shaped = bearer_hash(req->auth, hash) == 0;

	assert(r->role >= RVS_ROLE_VIEWER && r->role <= RVS_ROLE_ADMIN);
	if (shaped && a->api_enabled && rvs_ct_equal(hash, 32, a->api_hash, 32))
		return 0;
	p = peer_bucket(a, c);
	if (p->tokens < 1.0) {
		snprintf(secs, sizeof secs, "%u", retry_after(p, a->cfg->auth_fail_per_min));
		h[0] = (struct rvs_header){"Retry-After", secs};
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		api_json_error(a, c, 429, "too many failed authentications", h, 1);
		return -1;
	}
	if (shaped)
		return 1;
	h[0] = (struct rvs_header){"WWW-Authenticate", "Bearer"};
	a->m->errors[RVS_ERR_UNAUTHORIZED]++;
	charge_auth_failure(a, c);
	api_json_error(a, c, 401, "missing or bad API token", h, 1);
	return -1;
}

void rvs_api_metrics(struct rvs_call *call)
{
	struct job *j = call->ctx;
	char *text;
	size_t len;

	if (rvs_metrics_render(j->a->m, &text, &len)) {
		respond_error(j->conn, 500, REARVIEW__ERROR__CODE__INTERNAL, "metrics", NULL, 0);
		return;
	}
	rvs_conn_respond(j->conn, 200, "text/plain; version=0.0.4", NULL, 0, text, len);
	free(text);
}

/* A sign-in: it shares the failed-authentication budget, so passwords
 * cannot be guessed faster than tokens.  Each attempt pays before its hash
 * runs (a right password gets the unit back), so parallel guesses cannot
 * all pass the check; and at most login_hashers hash at once. */
static void queue_login(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req,
			const struct rvs_route *r)
{
	struct bucket *b = peer_bucket(a, c);
	char secs[16];
	struct rvs_header h = {"Retry-After", secs};

	if (b->tokens < 1.0) {
		snprintf(secs, sizeof secs, "%u", retry_after(b, a->cfg->auth_fail_per_min));
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		rvs_conn_respond(c, 429, "text/plain; charset=utf-8", &h, 1,
				 "too many failed sign-ins; retry later\n", 38);
		return;
	}
	if (a->logins_hashing >= a->cfg->login_hashers) {
		snprintf(secs, sizeof secs, "1");
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		rvs_conn_respond(c, 503, "text/plain; charset=utf-8", &h, 1,
				 "sign-ins busy; retry in a second\n", 33);
		return;
	}
	b->tokens -= 1.0;
	if (queue_job(a, c, req, r, 0, NULL, 0, NULL))
		a->logins_hashing++;
	else
		b->tokens += 1.0;
}

void rvs_api_handle(void *ctx, struct rvs_conn *c, struct rvs_http_req *req)
{
	struct rvs_api *a = ctx;
	unsigned method = req->method == HTTP_GET    ? RVS_M_GET
			  : req->method == HTTP_POST ? RVS_M_POST
						     : 0;
	const struct rvs_route *r;
	const char *arg;
	size_t arg_len;
	unsigned allow;
	uint8_t hash[32];
	int load;

	r = rvs_route_find(method, req->path, &arg, &arg_len, &allow);
	if (a->stopping && r && r->family == RVS_FAMILY_API)
		return api_json_error(a, c, 503, "shutting down", NULL, 0);
	if (a->stopping) {
		respond_error(c, 503, REARVIEW__ERROR__CODE__BUSY, "shutting down", NULL, 0);
		return;
	}
	if (!r) {
		a->m->errors[RVS_ERR_NOT_FOUND]++;
		respond_error(c, 404, REARVIEW__ERROR__CODE__NOT_FOUND, "no such resource", NULL,
			      0);
		return;
	}
	/* The web UI answers its unserved methods itself, after the session
	 * check (web.c). */
	if (allow && r->family != RVS_FAMILY_WEB) {
		method_not_allowed(a, c, rvs_route_allow(allow), r->family);
		return;
	}
	if (r->thread == RVS_ON_LOOP) {
		struct job j = {.a = a, .conn = c, .req = req, .route = r};
		struct rvs_call call = {.cfg = a->cfg,
					.method = method,
					.path = req->path,
					.query = req->query,
					.arg = arg,
					.arg_len = arg_len,
					.ctx = &j};
		r->handler(&call);
		return;
	}
	load = !allow && (r->flags & RVS_ROUTE_TRACE_LOAD);
	switch (allow ? RVS_AUTH_NONE : r->auth) {
	case RVS_AUTH_ENROLL:
		if (admit_enroll(a, c, req) == 0)
			queue_job(a, c, req, r, 0, arg, arg_len, NULL);
		return;
	case RVS_AUTH_DEVICE:
		if (admit(a, c, req, hash) == 0)
			queue_job(a, c, req, r, 0, arg, arg_len, hash);
		return;
	case RVS_AUTH_API: {
		int who = admit_api(a, c, req, r, hash);
		if (who >= 0 && admit_export(a, c, load, r->family) == 0)
			export_job(a, queue_job(a, c, req, r, 0, arg, arg_len, who ? hash : NULL),
				   load);
		return;
	}
	case RVS_AUTH_LOGIN:
		queue_login(a, c, req, r);
		return;
	case RVS_AUTH_NONE:
	case RVS_AUTH_SESSION:
		if (admit_export(a, c, load, r->family) == 0)
			export_job(a, queue_job(a, c, req, r, allow, arg, arg_len, NULL), load);
		return;
	}
}

/* ---- lifecycle ------------------------------------------------------------ */

static void load_api_token(struct rvs_api *a)
{
	char path[600];
	uint8_t *tok = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/api.token", a->cfg->data_dir);
	if (rvs_read_file(path, 4096, &tok, &len)) {
		rvs_log("warn", "msg=\"no API token, /api/v1 disabled\" path=\"%s\"", path);
		return;
	}
	while (len && (tok[len - 1] == '\n' || tok[len - 1] == '\r'))
		len--;
	if (len >= 16) {
		rvs_sha256(tok, len, a->api_hash);
		a->api_enabled = 1;
	}
	mbedtls_platform_zeroize(tok, len);
	free(tok);
}

int rvs_api_new(uv_loop_t *loop, const struct rvs_config *cfg, struct rvs_metrics *m,
		const struct rvs_store_ops *ops, const struct rvs_decoder *decoder,
		struct rvs_api **out)
{
	struct rvs_api *a = calloc(1, sizeof *a);
	int rc;

	if (!a)
		return -ENOMEM;
	a->loop = loop;
	a->cfg = cfg;
	a->m = m;
	a->ops = ops;
	a->decoder = decoder;
	a->policy_size = -1;
	pthread_mutex_init(&a->policy_mu, NULL);
	rc = rvs_read_file(cfg->enroll_secret_file, 4096, &a->secret, &a->secret_len);
	if (rc) {
		rvs_log("error", "msg=\"cannot read enrolment secret\" path=\"%s\" err=%d",
			cfg->enroll_secret_file, rc);
		free(a);
		return rc;
	}
	while (a->secret_len &&
	       (a->secret[a->secret_len - 1] == '\n' || a->secret[a->secret_len - 1] == '\r'))
		a->secret_len--;
	if (a->secret_len < 16) {
		rvs_log("error", "msg=\"enrolment secret shorter than 16 bytes\"");
		free(a->secret);
		free(a);
		return -EINVAL;
	}
	if ((rc = rvs_blobs_open_config(cfg, &a->blobs))) {
		rvs_log("error", "msg=\"cannot open blob store\" err=%d", rc);
		free(a->secret);
		free(a);
		return rc;
	}
	rvs_log("info", "msg=\"blob store\" backend=%s", a->blobs->ops->name);
	load_api_token(a);
	*out = a;
	return 0;
}

static void start_work(uv_work_t *w)
{
	struct rvs_api *a = w->data;
	const struct rvs_store_ops *ops = NULL;
	uint64_t depth = 0;
	a->life_rc = rvs_store_acquire(a->cfg->database, &ops, &a->store);
	if (a->life_rc == 0 && ops != a->ops) {
		rvs_store_release(a->store);
		a->store = NULL;
		a->life_rc = -EINVAL;
	}
	if (a->life_rc == 0 && a->ops->queue_depth(a->store, &depth) == 0)
		a->start_depth = depth;
	if (a->life_rc == 0 && a->ops->wake_open && a->ops->wake_open(a->store, &a->wake)) {
		rvs_log("warn", "msg=\"no decode listener: polling the queue\" every_s=%u",
			(unsigned)a->cfg->decode_poll_s);
		a->wake = NULL;
	}
}

/* ---- decode wake-ups (PostgreSQL: LISTEN on the loop, the poll behind) ----
 *
 * The listener's socket is watched by a uv_poll on the loop rather than by
 * a thread blocked in select(): reading a notification never blocks (the
 * store reads only what arrived), it costs no thread nor lock, and the
 * wake-up lands on the loop, where decode_pump must run anyway. */

static void wake_closed(uv_handle_t *h)
{
	struct rvs_api *a = h->data;
	a->ops->wake_close(a->wake);
	a->wake = NULL;
}

static void wake_stop(struct rvs_api *a)
{
	if (!a->wake_on)
		return;
	a->wake_on = 0;
	uv_close((uv_handle_t *)&a->wake_poll, wake_closed);
}

static void wake_cb(uv_poll_t *h, int status, int events)
{
	struct rvs_api *a = h->data;
	int n = status < 0 ? -EIO : a->ops->wake_drain(a->wake);

	if (n > 0) {
		a->m->decode_wakeups++;
		decode_pump(a);
	} else if (n < 0) {
		rvs_log("warn", "msg=\"decode listener lost: polling the queue\" every_s=%u",
			(unsigned)a->cfg->decode_poll_s);
		wake_stop(a);
	}
}

/* Watches a->wake's socket; 0 or a libuv error (a->wake left as is). */
static int wake_watch(struct rvs_api *a)
{
	int rc;

	assert(a->wake && !a->wake_on);
	if ((rc = uv_poll_init(a->loop, &a->wake_poll, a->ops->wake_fd(a->wake))))
		return rc;
	a->wake_on = 1;
	a->wake_poll.data = a;
	return uv_poll_start(&a->wake_poll, UV_READABLE, wake_cb);
}

static void wake_reopen_work(uv_work_t *w)
{
	struct rvs_api *a = w->data;
	if (a->ops->wake_open(a->store, &a->wake_new))
		a->wake_new = NULL;
}

static void wake_reopen_done(uv_work_t *w, int status)
{
	struct rvs_api *a = w->data;

	a->wake_busy = 0;
	a->inflight--;
	if (a->wake_new && !a->stopping && !a->wake) {
		a->wake = a->wake_new;
		if (wake_watch(a) == 0) {
			rvs_log("info", "msg=\"decode listener back\"");
			decode_pump(a); /* what was queued while it was away */
		}
	} else {
		a->ops->wake_close(a->wake_new);
	}
	a->wake_new = NULL;
	maybe_stop(a);
}

/* The poll: the queue looked at, and a lost listener opened again (its
 * previous handle closed: a->wake NULL). */
static void decode_poll_tick(uv_timer_t *t)
{
	struct rvs_api *a = t->data;

	decode_pump(a);
	if (a->wake || a->wake_busy || a->stopping)
		return;
	a->wake_busy = 1;
	a->inflight++;
	a->wake_work.data = a;
	uv_queue_work(a->loop, &a->wake_work, wake_reopen_work, wake_reopen_done);
}

static void wake_start(struct rvs_api *a)
{
	uint64_t ms = (uint64_t)a->cfg->decode_poll_s * 1000;

	assert(a->ops->wake_open && !a->wake_on && !a->decode_timer_on);
	if (a->wake)
		wake_watch(a);
	if (uv_timer_init(a->loop, &a->decode_timer) == 0) {
		a->decode_timer_on = 1;
		a->decode_timer.data = a;
		uv_timer_start(&a->decode_timer, decode_poll_tick, ms, ms);
	}
}

/* ---- retention (timer on the loop, the pass on the work queue) ------------ */

static void retention_work(uv_work_t *w)
{
	struct rvs_api *a = w->data;
	int64_t cutoff = (int64_t)time(NULL) - (int64_t)(a->cfg->retention_days * 86400.0);
	rvs_retention_run(a->cfg->database, a->blobs, cutoff, &a->retention_stats);
}

static void retention_done(uv_work_t *w, int status)
{
	struct rvs_api *a = w->data;
	a->m->retention_runs++;
	a->m->retention_traces += a->retention_stats.traces;
	a->m->retention_blobs += a->retention_stats.blobs;
	a->retention_busy = 0;
	a->inflight--;
	maybe_stop(a);
}

static void retention_tick(uv_timer_t *t)
{
	struct rvs_api *a = t->data;
	if (a->retention_busy || a->stopping)
		return;
	a->retention_busy = 1;
	a->inflight++;
	a->retention_work.data = a;
	uv_queue_work(a->loop, &a->retention_work, retention_work, retention_done);
}

/* ---- regression alerts (timer on the loop, the pass on the work queue) ---- */

static void regress_work(uv_work_t *w)
{
	struct rvs_api *a = w->data;
	const struct rvs_config *c = a->cfg;
	struct rvs_regress_auto rc = {.min_traces = c->regress_min_traces,
				      .margin = c->regress_margin,
				      .alert_ratio = c->regress_alert_ratio,
				      .alert_q = c->regress_alert_q,
				      .base_url = c->public_url};
	struct rvs_webhook_cfg wc = {.secret_file = c->webhook_secret_file,
				     .max_attempts = c->webhook_max_attempts,
				     .backoff_ms = c->webhook_backoff_ms,
				     .timeout_ms = c->webhook_timeout_ms};
	char urls[sizeof c->webhook_urls], *save = NULL, *u;
	const char *list[16];
	size_t n = 0;

	snprintf(urls, sizeof urls, "%s", c->webhook_urls);
	for (u = strtok_r(urls, " \t,", &save); u && n < 16; u = strtok_r(NULL, " \t,", &save))
		list[n++] = u;
	rvs_regress_auto_pass(c->database, &rc, list, n, NULL);
	if (n)
		rvs_webhook_deliver_due(c->database, &wc, NULL);
}

static void regress_done(uv_work_t *w, int status)
{
	struct rvs_api *a = w->data;
	a->regress_busy = 0;
	a->inflight--;
	maybe_stop(a);
}

static void regress_tick(uv_timer_t *t)
{
	struct rvs_api *a = t->data;
	if (a->regress_busy || a->stopping)
		return;
	a->regress_busy = 1;
	a->inflight++;
	a->regress_work.data = a;
	uv_queue_work(a->loop, &a->regress_work, regress_work, regress_done);
}

static void start_done(uv_work_t *w, int status)
{
	struct rvs_api *a = w->data;
	a->m->decode_queue_depth = a->start_depth;
	a->cb(a->cb_arg, a->life_rc);
	if (a->life_rc == 0)
		decode_pump(a);
	if (a->life_rc == 0 && a->ops->wake_open)
		wake_start(a);
	if (a->life_rc == 0 && a->cfg->retention_days > 0 &&
	    uv_timer_init(a->loop, &a->retention_timer) == 0) {
		uint64_t ms = (uint64_t)a->cfg->retention_interval_s * 1000;
		a->retention_on = 1;
		a->retention_timer.data = a;
		uv_timer_start(&a->retention_timer, retention_tick, ms, ms);
	}
	if (a->life_rc == 0 && uv_timer_init(a->loop, &a->regress_timer) == 0) {
		a->regress_on = 1;
		a->regress_timer.data = a;
		uv_timer_start(&a->regress_timer, regress_tick, a->cfg->regress_interval_ms,
			       a->cfg->regress_interval_ms);
	}
}

void rvs_api_start(struct rvs_api *a, void (*ready)(void *, int), void *arg)
{
	a->cb = ready;
	a->cb_arg = arg;
	a->life.data = a;
	uv_queue_work(a->loop, &a->life, start_work, start_done);
}

static void stop_work(uv_work_t *w)
{
	struct rvs_api *a = w->data;
	rvs_store_release(a->store);
	a->store = NULL;
}

static void stop_done(uv_work_t *w, int status)
{
	struct rvs_api *a = w->data;
	a->stop_done(a->stop_arg);
}

static void maybe_stop(struct rvs_api *a)
{
	if (a->stopping != 1 || a->inflight)
		return;
	a->stopping = 2; /* the store closes once */
	a->life.data = a;
	uv_queue_work(a->loop, &a->life, stop_work, stop_done);
}

void rvs_api_stop(struct rvs_api *a, void (*done)(void *), void *arg)
{
	if (a->stopping)
		return;
	a->stopping = 1;
	if (a->retention_on) {
		a->retention_on = 0;
		uv_close((uv_handle_t *)&a->retention_timer, NULL);
	}
	if (a->regress_on) {
		a->regress_on = 0;
		uv_close((uv_handle_t *)&a->regress_timer, NULL);
	}
	wake_stop(a);
	if (a->decode_timer_on) {
		a->decode_timer_on = 0;
		uv_close((uv_handle_t *)&a->decode_timer, NULL);
	}
	a->stop_done = done;
	a->stop_arg = arg;
	maybe_stop(a);
}

void rvs_api_free(struct rvs_api *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->policy_mu);
	rvs_blobs_close(a->blobs);
	/* Opened but never watched (the start failed after start_work). */
	if (a->wake && a->ops->wake_close)
		a->ops->wake_close(a->wake);
	free(a->secret);
	free(a);
}
