/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.c — the device API's handlers (api.h: POST /v1/enroll, POST
 * /v1/uploads, POST /v1/skips, POST /v1/jank, GET /v1/policy), each a job's work on a
 * work thread (api_int.h), answered by the gate from the job's after-work.
 *
 * Everything in a body is untrusted (pipeline/upload.h checks it).  A
 * refusal sets the job's metric, rearview.Error code and human reason
 * (job_fail), which the gate makes into the answer; an upload is
 * acknowledged only once the store has it durable (store.h).
 */
#include "api/api_int.h"
#include "base/log.h"
#include "base/text.h"
#include "base/util.h"
#include "model/campaign.h"
#include "pipeline/payload.h"
#include "pipeline/upload.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <mbedtls/platform_util.h>

#include "rearview/common.pb-c.h"
#include "rearview/policy.h"
#include "rearview/policy.pb-c.h"
#include "rearview/upload.pb-c.h"

/* Retry-After of an upload refused over the weekly quota: an hour, by
 * when the device's 7-day window may have room again. */
#define QUOTA_RETRY_S 3600
/* Retry-After of a body the server had no memory to unpack (503). */
#define NOMEM_RETRY_S 30
/* Retry-After of a request refused because the store or the blob store
 * is down for the moment (503): a PostgreSQL restart takes seconds. */
#define STORE_RETRY_S 10

static void job_fail(struct job *j, int status, enum rvs_err_reason err, int code,
		     const char *reason)
{
	j->q.status = status;
	j->err = (int)err + 1;
	j->code = code;
	snprintf(j->reason, sizeof j->reason, "%s", reason);
}

/* A store or blob call failed with rc.  A transient error (store.h:
 * the database restarting, unreachable, out of connections, busy or out of
 * space) is 503 with Retry-After: nothing was stored, and the same request
 * succeeds once the store is back (every device write is idempotent by
 * its key), so the device keeps what it sent and retries with backoff.
 * Anything else is 500. */
static void store_fail(struct job *j, int rc)
{
	if (rvs_store_transient(rc)) {
		job_fail(j, 503, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__BUSY,
			 "storage unavailable, try again later");
		snprintf(j->q.retry_after, sizeof j->q.retry_after, "%d", STORE_RETRY_S);
		return;
	}
	job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL, "storage error");
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
		store_fail(j, rc);
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
		store_fail(j, rc);
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
		if ((rc = a->ops->uploads_charged(a->store, device_id, u.quota_since, &charged)))
			goto storage_error;
		if (charged >= u.weekly_quota)
			goto over_quota;
	}
	if (e->payload.len) {
		if ((rc = a->blobs->ops->put(a->blobs, e->payload.data, e->payload.len, blob))) {
			rvs_log("error", "blob write failed", "err=%d", rc);
			goto storage_error;
		}
		u.blob_sha256 = blob;
		u.blob_bytes = e->payload.len;
	}
	if (e->summary) {
		u.summary_len = rearview__summary__get_packed_size(e->summary);
		summary = malloc(u.summary_len ? u.summary_len : 1);
		if (!summary) {
			rc = -ENOMEM;
			goto storage_error;
		}
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
	u.weight = rvs_selection_weight(e->selection, &u.weight_exact);
	if (e->selection) {
		u.sel_kind = e->selection->kind;
		u.sel_p = e->selection->probability;
		u.sel_seen = e->selection->candidates_seen;
		u.sel_taken = e->selection->candidates_taken;
		if (!u.campaign_id || !*u.campaign_id)
			u.campaign_id = e->selection->campaign_id;
	}
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
	store_fail(j, rc);
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
		store_fail(j, rc);
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

/* POST /v1/jank: store a device's frames and late frames per app,
 * version and day, each replacing the stored count (a retry never
 * doubles); acknowledged once durable. */
static void do_jank(struct job *j)
{
	Rearview__JankReport *r;
	Rearview__JankAck k = REARVIEW__JANK_ACK__INIT;
	struct rvs_jank_rec rows[RVS_JANK_MAX_COUNTS];
	char device_id[40], reason[200];
	int rc;

	if (device_of(j, device_id))
		return;
	rc = rvs_jank_parse(j->req->body, j->req->body_len, (int64_t)(time(NULL) / 86400), &r,
			    reason, sizeof reason);
	if (rc) {
		parse_fail(j, rc, reason);
		return;
	}
	for (size_t i = 0; i < r->n_counts; i++)
		rows[i] = (struct rvs_jank_rec){
			r->counts[i]->app_id, r->counts[i]->app_version, (int64_t)r->counts[i]->day,
			(int64_t)r->counts[i]->frames, (int64_t)r->counts[i]->late};
	rc = j->a->ops->jank_put(j->a->store, device_id, rows, r->n_counts);
	if (rc) {
		store_fail(j, rc);
		goto free_report;
	}
	k.stored = (uint32_t)r->n_counts;
	j->q.len = rearview__jank_ack__get_packed_size(&k);
	j->q.body = malloc(j->q.len ? j->q.len : 1);
	if (!j->q.body) {
		job_fail(j, 500, RVS_ERR_INTERNAL, REARVIEW__ERROR__CODE__INTERNAL, "no memory");
		goto free_report;
	}
	rearview__jank_ack__pack(&k, (uint8_t *)j->q.body);
	j->q.status = 200;
free_report:
	rearview__jank_report__free_unpacked(r, NULL);
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

void rvs_api_jank(struct rvs_call *c)
{
	do_jank(c->ctx);
}

void rvs_api_policy(struct rvs_call *c)
{
	do_policy(c->ctx);
}
