/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload.c — the uploader (see upload.h): uploads with an idempotent id,
 * skip reports, backoff, the requests, and the uploader's lifecycle, all on
 * the daemon's loop.  Enrolment and policy fetches are in enroll.c, the
 * streaming compression in compress.c; the daemon is reached only through
 * the handed-in struct rvd_upload_env.
 *
 * libcurl runs through its multi socket interface on the loop (curl_uv.c):
 * curl_multi_socket_action runs only from socket and timer callbacks —
 * never a perform loop.  The easy handles use HTTPS only, verify the peer
 * and the host against the configured CA file.
 *
 * One upload goes
 *     pending ─(policy network check, a spool job)─→ uploading (durable)
 *       ─(zstd + envelope on the work queue)─→ POST /v1/uploads
 *       ─→ 200 UploadAck: commit the quota reservation, then uploaded(trace_id)
 *       ─→ 408/429/5xx/transport error: back to pending, backoff
 *       ─→ 400 "unknown compression" to the shuffled form (a server older
 *          than it): back to pending, sent as plain zstd from then on
 *       ─→ other 4xx: skipped(rejected_<code>), reservation released
 * The upload id was stored with the row when the capture was stored, so a
 * retry — also after kill -9 — carries the same id and the server answers
 * the original trace_id (exactly once).  The commit is queued before the
 * state change: a crash between them re-sends, gets the duplicate ack, and
 * commits again (idempotent).
 *
 * Invariants: at most cfg.max_in_flight captures are between "picked" and
 * "done" (busy[]); while the retry timer runs nothing new starts; every
 * request (struct req) is on exactly one of: a spool job, the work queue,
 * the multi handle.  After rvd_upload_stop those finish by freeing
 * themselves without side effects.
 */
#include "upload_int.h"

#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "anomaly.h"
#include "compress.h"
#include "curl_uv.h"
#include "log.h"
#include "rearview/analysis.h"
#include "rearview/policy.h"
#include "rearview/upload.pb-c.h"

static void req_unlink(struct rvd_uploader *u, struct req *r)
{
	for (struct req **pp = &u->reqs; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	curl_multi_remove_handle(u->cu.multi, r->easy);
}

/* ---- uploads ----------------------------------------------------------------- */

static bool is_busy(const struct rvd_uploader *u, uint64_t id)
{
	for (unsigned i = 0; i < u->nbusy; i++)
		if (u->busy[i] == id)
			return true;
	return false;
}

static void unbusy(struct rvd_uploader *u, uint64_t id)
{
	for (unsigned i = 0; i < u->nbusy; i++) {
		if (u->busy[i] == id) {
			u->busy[i] = u->busy[--u->nbusy];
			return;
		}
	}
}

/* The end of one upload attempt: the capture is no longer ours. */
static void upload_finish(struct req *r, bool kick_next)
{
	struct rvd_uploader *u = r->u;

	unbusy(u, r->id);
	rvd_up_req_free(r);
	if (kick_next)
		rvd_up_kick(u);
}

static void requeued_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct req *r = data;

	(void)sp;
	(void)id;
	if (status < 0 && !r->u->stopping)
		rvd_up_error(r->u, "upload: capture %" PRIu64 " back to pending: %s", r->id,
			     strerror(-status));
	/* The retry timer started before this spool job ran and may have fired
	 * already, finding the capture still busy: kick again (a no-op while
	 * the timer runs), or the capture would wait for some other event. */
	upload_finish(r, true);
}

/* A retryable failure: back to pending (same upload id), then backoff. */
static void upload_retry(struct req *r, long retry_after_s)
{
	struct rvd_uploader *u = r->u;

	rvd_up_backoff(u, retry_after_s);
	if (rvd_spool_set_state(u->env.spool, r->id, RVD_SPOOL_PENDING, NULL, requeued_cb, r) < 0)
		upload_finish(r, false);
}

static void rejected_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct req *r = data;

	(void)sp;
	(void)id;
	if (status < 0)
		rvd_up_error(r->u, "upload: recording a rejection: %s", strerror(-status));
	else
		r->u->env.release_reservation(r->u->env.ctx, r->rec.reservation);
	upload_finish(r, true);
}

static void uploaded_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct req *r = data;
	struct rvd_uploader *u = r->u;

	(void)sp;
	(void)id;
	if (status < 0) {
		/* Stays uploading until the next start re-sends it (a duplicate then). */
		rvd_up_error(u, "upload: recording capture %" PRIu64 " uploaded: %s", r->id,
			     strerror(-status));
	} else {
		rvd_info("capture %" PRIu64 " uploaded as %s", r->id, r->rec.trace_id);
	}
	upload_finish(r, true);
}

/* Worker (spool job order, so the ledger is ours): the acknowledged
 * upload's quota reservation now counts as uploaded. */
static void commit_work(void *arg)
{
	struct req *r = arg;
	struct rvd_enforce *e = r->u->env.enf;
	struct rvp_time now;
	int rc;

	if (!e->ledger || r->rec.reservation <= 0)
		return;
	if ((rc = rvp_time_now(&now)) == 0)
		rc = rvp_ledger_commit(e->ledger, r->rec.reservation, &now);
	if (rc < 0 && rc != -ENOENT)
		rvd_warn("upload: committing reservation %" PRId64 ": %s", r->rec.reservation,
			 strerror(-rc));
}

static void upload_acked(struct req *r)
{
	struct rvd_uploader *u = r->u;
	Rearview__UploadAck *ack = rearview__upload_ack__unpack(NULL, r->resp_len, r->resp);
	int rc;

	if (!ack || ack->upload_id.len != sizeof(r->rec.upload_id) ||
	    memcmp(ack->upload_id.data, r->rec.upload_id, sizeof(r->rec.upload_id)) != 0 ||
	    !ack->trace_id || !ack->trace_id[0] ||
	    strlen(ack->trace_id) >= sizeof(r->rec.trace_id)) {
		if (ack)
			rearview__upload_ack__free_unpacked(ack, NULL);
		rvd_up_msg(u, "upload: capture %" PRIu64 ": malformed acknowledgement", r->id);
		upload_retry(r, 0);
		return;
	}
	u->attempt = 0;
	snprintf(r->rec.trace_id, sizeof(r->rec.trace_id), "%s", ack->trace_id);
	if (ack->policy_version > u->env.enf->policy_version &&
	    ack->policy_version != u->hinted_version) {
		u->hinted_version = ack->policy_version;
		rvd_up_fetch_policy(u);
	}
	rearview__upload_ack__free_unpacked(ack, NULL);
	/* Commit first: a crash before the state change re-sends and re-commits. */
	if (rvd_spool_run(u->env.spool, commit_work, r, NULL, NULL) < 0 ||
	    (rc = rvd_spool_set_uploaded(u->env.spool, r->id, r->rec.trace_id, uploaded_cb, r)) <
		    0) {
		rvd_up_error(u, "upload: capture %" PRIu64 ": cannot record the acknowledgement",
			     r->id);
		upload_finish(r, true);
	}
}

static void upload_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http)
{
	char msg[96], reason[32];
	curl_off_t retry_after = 0;

	if (cc != CURLE_OK) {
		rvd_up_msg(u, "upload: capture %" PRIu64 ": %s", r->id,
			   r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc));
		upload_retry(r, 0);
		return;
	}
	if (http == 200) {
		upload_acked(r);
		return;
	}
	rvd_up_error_message(r, msg, sizeof(msg));
	if (http == 408 || http == 429 || http >= 500 || http == 401) {
		curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after);
		rvd_up_msg(u, "upload: capture %" PRIu64 ": HTTP %ld: %s", r->id, http, msg);
		if (http == 401)
			u->token[0] = '\0'; /* enrol again at the next attempt */
		upload_retry(r, (long)retry_after);
		return;
	}
	/* A server older than the shuffled form (upload.proto
	 * COMPRESSION_ZSTD_SHUFFLED) refuses it as an unknown compression: the
	 * same capture (same upload id: nothing was stored) goes again as plain
	 * zstd, and so does every later one until the daemon restarts. */
	if (http == 400 && r->shuffled && strstr(msg, "unknown compression")) {
		u->plain_zstd = true;
		rvd_up_msg(u,
			   "upload: capture %" PRIu64 ": the server does not take the shuffled"
			   " form; sending plain zstd",
			   r->id);
		upload_retry(r, 0);
		return;
	}
	/* The server will never take this one: say why, and stop trying. */
	rvd_up_error(u, "upload: capture %" PRIu64 " rejected: HTTP %ld: %s", r->id, http, msg);
	snprintf(reason, sizeof(reason), "rejected_%ld", http);
	if (rvd_spool_set_state(u->env.spool, r->id, RVD_SPOOL_SKIPPED, reason, rejected_cb, r) < 0)
		upload_finish(r, true);
}

/*
 * Worker: the envelope.  With consent full the capture file is streamed
 * through zstd straight into the request body: the envelope's other
 * fields are packed first (their size is known), the compressed bytes go
 * after a gap for that header plus the payload field's tag and length, and
 * the header is then written into the gap — so the compressed payload
 * exists once, and the uncompressed capture never in memory.  Field order
 * does not matter to protobuf parsers.
 */
static void build_work(uv_work_t *w)
{
	struct req *r = w->data;
	struct rvd_uploader *u = r->u;
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__DeviceInfo di;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__Anomaly an;
	Rearview__Selection sel = REARVIEW__SELECTION__INIT;
	struct utsname un;
	struct stat stb;
	rva_shuffler *sh = NULL;
	int fd, rc;

	rvd_anomaly_to_pb(&r->rec.anomaly, &an);
	rvd_up_device_info(&di, &un, u->device_id);
	app.app_id = r->rec.app_id;
	e.upload_id.data = r->rec.upload_id;
	e.upload_id.len = sizeof(r->rec.upload_id);
	e.envelope_version = 1;
	e.device = &di;
	e.app = &app;
	e.anomaly = &an;
	e.consent = (Rearview__ConsentLevel)r->consent;
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_NONE;
	/* How the policy chose it: the fleet weighs it by 1/probability. */
	if (r->rec.sel.kind) {
		sel.campaign_id = r->rec.sel.campaign;
		sel.kind = (Rearview__SelectionKind)r->rec.sel.kind;
		sel.probability = r->rec.sel.probability;
		sel.candidates_seen = r->rec.sel.seen;
		sel.candidates_taken = r->rec.sel.taken;
		e.selection = &sel;
		e.campaign_id = r->rec.sel.campaign;
	}
	/* The local summary rides along (at consent summary it is the content). */
	if (r->summary &&
	    !(e.summary = rearview__summary__unpack(NULL, r->summary_len, r->summary)))
		rvd_warn("upload: capture %" PRIu64 ": stored summary unreadable, sent without",
			 r->id);
	if (r->consent < REARVIEW__CONSENT_LEVEL__CONSENT_FULL || !r->rec.file[0]) {
		r->body_len = rearview__upload_envelope__get_packed_size(&e);
		r->body = r->body_mem = malloc(r->body_len ? r->body_len : 1);
		if (!r->body)
			r->status = -ENOMEM;
		else
			rearview__upload_envelope__pack(&e, r->body);
		goto free_summary;
	}
	fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &stb) < 0) {
		r->status = -errno;
		if (fd >= 0)
			close(fd);
		goto free_summary;
	}
	/* The shuffled form compresses several times smaller than the plain
	 * capture (device/BENCHMARKS.md); a file whose header does not lay out
	 * a slot area (never one the daemon spooled) goes as it is, and so does
	 * everything once the server has refused the shuffled form. */
	rc = r->plain ? -EINVAL : rva_shuffler_new(fd, (uint64_t)stb.st_size, &sh);
	r->shuffled = sh != NULL;
	if (rc < 0 && rc != -EINVAL) {
		r->status = rc;
		close(fd);
		goto free_summary;
	}
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.compression = sh ? REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED
			   : REARVIEW__COMPRESSION__COMPRESSION_ZSTD;
	e.payload_size = (uint64_t)stb.st_size;
	e.captured_realtime_ns =
		(uint64_t)stb.st_mtim.tv_sec * 1000000000ull + (uint64_t)stb.st_mtim.tv_nsec;
	rc = rvd_compress_envelope(&e, fd, sh, u->env.cfg->zstd_level, (uint64_t)stb.st_size,
				   &r->body_mem, &r->body, &r->body_len);
	rva_shuffler_free(sh);
	close(fd);
	if (rc < 0)
		r->status = rc;
free_summary:
	if (e.summary)
		rearview__summary__free_unpacked(e.summary, NULL);
}

static void build_done(uv_work_t *w, int status)
{
	struct req *r = w->data;
	struct rvd_uploader *u = r->u;

	if (u->stopping) {
		upload_finish(r, false);
		return;
	}
	if (status < 0 || r->status < 0) {
		rvd_up_msg(u, "upload: preparing capture %" PRIu64 ": %s", r->id,
			   strerror(-(status < 0 ? status : r->status)));
		upload_retry(r, 0);
		return;
	}
	if (rvd_up_req_send(u, r, "/v1/uploads", true) < 0) {
		rvd_up_msg(u, "upload: cannot start the request");
		upload_retry(r, 0);
	}
}

static void uploading_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct req *r = data;
	struct rvd_uploader *u = r->u;
	const struct rvd_capture_rec *rec;

	(void)id;
	rec = rvd_spool_find(sp, r->id);
	if (u->stopping || status < 0 || !rec || rec->state != RVD_SPOOL_UPLOADING) {
		if (status < 0 && !u->stopping)
			rvd_up_error(u, "upload: capture %" PRIu64 ": %s", r->id,
				     strerror(-status));
		upload_finish(r, false);
		return;
	}
	r->rec = *rec;
	snprintf(r->path, sizeof(r->path), "%s/captures/%s", sp->dir, rec->file);
	r->work.data = r;
	if (uv_queue_work(u->env.loop, &r->work, build_work, build_done) < 0)
		upload_retry(r, 0);
}

/* Worker (spool job order: the policy store is ours): may the upload start
 * on this network under the current policy? */
static void conditions_work(void *arg)
{
	struct req *r = arg;
	struct rvd_uploader *u = r->u;
	struct rvd_enforce *e = u->env.enf;
	const Rearview__PolicyBody *b = rvp_policy_default();
	enum rvp_reason why;
	struct rvp_time now;

	if (e->store && rvp_time_now(&now) == 0)
		b = rvp_store_current(e->store, now.wall_s, NULL);
	r->allowed = rvp_upload_conditions_ok(b, u->env.cfg->upload_metered, &why);
	/* Its local summary travels in the envelope (the only content at
	 * consent "summary").  Read here: the spool's database is this job's. */
	if (r->allowed == 1 &&
	    rvd_spool_get_summary(u->env.spool, r->id, &r->summary, &r->summary_len) < 0) {
		r->summary = NULL;
		r->summary_len = 0;
	}
}

static void conditions_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct req *r = data;
	struct rvd_uploader *u = r->u;

	(void)id;
	if (u->stopping || status < 0) {
		upload_finish(r, false);
		return;
	}
	if (r->allowed != 1) {
		/* Stays pending, no retry timer: the next capture or a fetched
		 * policy looks again (one check each, so no loop). */
		if (!u->net_blocked)
			rvd_up_error(u, "upload: waiting for an unmetered network (policy)");
		u->net_blocked = true;
		upload_finish(r, false);
		return;
	}
	u->net_blocked = false;
	if (rvd_spool_set_state(sp, r->id, RVD_SPOOL_UPLOADING, NULL, uploading_cb, r) < 0)
		upload_finish(r, false);
}

static void begin_upload(struct rvd_uploader *u, uint64_t id)
{
	struct req *r = calloc(1, sizeof(*r));

	if (!r)
		return;
	r->u = u;
	r->kind = REQ_UPLOAD;
	r->id = id;
	r->consent = u->env.consent(u->env.ctx);
	r->plain = u->plain_zstd;
	assert(u->nbusy < MAX_BUSY && !is_busy(u, id));
	u->busy[u->nbusy++] = id;
	if (rvd_spool_run(u->env.spool, conditions_work, r, conditions_cb, r) < 0)
		upload_finish(r, false);
}

/* ---- skip reports --------------------------------------------------------- */

static void skip_reported_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_uploader *u = data;

	(void)sp;
	u->reporting = false;
	if (status < 0 && !u->stopping)
		rvd_up_error(u, "skip report: recording %" PRIu64 " as reported: %s", id,
			     strerror(-status));
	else
		rvd_up_kick(u);
}

static void skip_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http)
{
	Rearview__SkipAck *ack = NULL;
	char msg[96];
	curl_off_t retry_after = 0;

	if (cc == CURLE_OK && http == 200)
		ack = rearview__skip_ack__unpack(NULL, r->resp_len, r->resp);
	if (ack && ack->report_id.len == sizeof(r->rec.upload_id) &&
	    memcmp(ack->report_id.data, r->rec.upload_id, sizeof(r->rec.upload_id)) == 0) {
		u->attempt = 0;
	} else if (cc != CURLE_OK || http == 200 || http == 401 || http == 408 || http == 429 ||
		   http >= 500) {
		/* Retryable (a malformed ack too): the same report id next time. */
		if (ack)
			rearview__skip_ack__free_unpacked(ack, NULL);
		if (cc != CURLE_OK)
			snprintf(msg, sizeof(msg), "%.95s",
				 r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc));
		else
			rvd_up_error_message(r, msg, sizeof(msg));
		rvd_up_msg(u, "skip report %" PRIu64 ": HTTP %ld: %s", r->id, http, msg);
		if (http == 401)
			u->token[0] = '\0';
		curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after);
		u->reporting = false;
		rvd_up_backoff(u, (long)retry_after);
		return;
	} else {
		/* The server will never take it: do not send it forever. */
		rvd_up_error_message(r, msg, sizeof(msg));
		rvd_up_error(u, "skip report %" PRIu64 " rejected: HTTP %ld: %s", r->id, http, msg);
	}
	if (ack)
		rearview__skip_ack__free_unpacked(ack, NULL);
	if (rvd_spool_set_skip_reported(u->env.spool, r->id, skip_reported_cb, u) < 0)
		u->reporting = false;
}

/* Sends the skip report of skipped row `rec` (small: built on the loop). */
static void begin_skip_report(struct rvd_uploader *u, const struct rvd_capture_rec *rec)
{
	Rearview__SkipReport k = REARVIEW__SKIP_REPORT__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__Anomaly an;
	struct req *r = calloc(1, sizeof(*r));

	if (!r)
		return;
	r->u = u;
	r->kind = REQ_SKIP;
	r->id = rec->id;
	r->rec = *rec;
	rvd_anomaly_to_pb(&r->rec.anomaly, &an);
	app.app_id = r->rec.app_id;
	k.report_id.data = r->rec.upload_id;
	k.report_id.len = sizeof(r->rec.upload_id);
	k.app = &app;
	k.anomaly = &an;
	k.reason = r->rec.reason;
	r->body_len = rearview__skip_report__get_packed_size(&k);
	r->body = malloc(r->body_len ? r->body_len : 1);
	if (!r->body) {
		rvd_up_req_free(r);
		return;
	}
	rearview__skip_report__pack(&k, r->body);
	if (rvd_up_req_send(u, r, "/v1/skips", true) < 0) {
		rvd_up_msg(u, "skip report: cannot start the request");
		rvd_up_req_free(r);
		return;
	}
	u->reporting = true;
}

void rvd_up_kick(struct rvd_uploader *u)
{
	const struct rvd_config *cfg = u->env.cfg;
	struct rvd_spool *sp = u->env.spool;
	unsigned max = cfg->max_in_flight < MAX_BUSY ? cfg->max_in_flight : MAX_BUSY;

	if (!u->started || u->stopping || u->env.stopping(u->env.ctx) || !sp->open ||
	    uv_is_active((uv_handle_t *)&u->retry_timer))
		return;
	if (!u->token[0]) {
		if (!u->enrolling)
			rvd_up_enroll(u);
		return;
	}
	if (u->env.consent(u->env.ctx) < REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY)
		return;
	for (size_t i = 0; i < sp->nrecs && u->nbusy < max; i++) {
		const struct rvd_capture_rec *rec = &sp->recs[i];

		if (rec->state == RVD_SPOOL_PENDING && !is_busy(u, rec->id))
			begin_upload(u, rec->id);
	}
	/* Skip reports, one at a time, after the uploads. */
	for (size_t i = 0; i < sp->nrecs && !u->reporting; i++)
		if (rvd_spool_awaits_report(&sp->recs[i]))
			begin_skip_report(u, &sp->recs[i]);
	rvd_up_jank_kick(u);
}

/* The progress callback of u->cu: the transfers that finished. */
static void check_multi_info(void *ctx)
{
	struct rvd_uploader *u = ctx;
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(u->cu.multi, &left)) != NULL) {
		struct req *r = NULL;
		long http = 0;
		CURLcode cc;

		if (m->msg != CURLMSG_DONE)
			continue;
		cc = m->data.result;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		assert(r && r->u == u && r->easy == m->easy_handle);
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &http);
		if (r->resp_overflow && cc == CURLE_OK)
			cc = CURLE_WRITE_ERROR;
		req_unlink(u, r);
		switch (r->kind) {
		case REQ_ENROLL:
			rvd_up_enroll_done(u, r, cc, http);
			rvd_up_req_free(r);
			break;
		case REQ_POLICY:
			rvd_up_policy_done(u, r, cc, http);
			rvd_up_req_free(r);
			break;
		case REQ_UPLOAD:
			/* r lives on through the spool jobs that record the outcome. */
			upload_done(u, r, cc, http);
			break;
		case REQ_SKIP:
			skip_done(u, r, cc, http);
			rvd_up_req_free(r);
			break;
		case REQ_JANK:
			rvd_up_jank_done(u, r, cc, http);
			rvd_up_req_free(r);
			break;
		}
	}
}

/* ---- lifecycle --------------------------------------------------------------- */

int rvd_upload_new(const struct rvd_upload_env *env, struct rvd_uploader **out)
{
	struct rvd_uploader *u = calloc(1, sizeof(*u));
	int rc;

	if (!u)
		return -ENOMEM;
	u->env = *env;
	u->kick = rvd_up_kick;
	if (rvd_curl_uv_init(&u->cu, env->loop, check_multi_info, u) < 0) {
		free(u);
		return -ENOMEM;
	}
	uv_timer_init(env->loop, &u->retry_timer);
	uv_timer_init(env->loop, &u->policy_timer);
	u->retry_timer.data = u->policy_timer.data = u;
	if (env->cfg->enrollment_secret_file[0]) {
		rc = rvd_up_read_small(env->cfg->enrollment_secret_file, u->secret,
				       sizeof(u->secret));
		if (rc < 0)
			rvd_warn("uploader: %s: %s", env->cfg->enrollment_secret_file,
				 strerror(-rc));
	}
	rvd_up_load_token(u);
	*out = u;
	return 0;
}

void rvd_upload_start(struct rvd_uploader *u)
{
	if (!u || u->started || u->stopping)
		return;
	u->started = true;
	rvd_info("uploader: %s, %s", u->env.cfg->server_url,
		 u->token[0] ? "enrolled" : "enrolling");
	if (u->env.cfg->policy_interval_s)
		uv_timer_start(&u->policy_timer, rvd_up_policy_timer_cb,
			       (uint64_t)u->env.cfg->policy_interval_s * 1000,
			       (uint64_t)u->env.cfg->policy_interval_s * 1000);
	rvd_up_fetch_policy(u);
	rvd_up_kick(u);
}

void rvd_upload_pending(void *ctx, uint64_t id)
{
	(void)id;
	rvd_up_kick(ctx);
}

/* Issue 18 item 12: a pushed policy lifting unmetered_only left uploads
 * waiting until a restart (only a fetched one cleared net_blocked). */
void rvd_upload_policy_changed(struct rvd_uploader *u)
{
	if (!u)
		return;
	u->net_blocked = false;
	rvd_up_kick(u);
}

void rvd_upload_jank(struct rvd_uploader *u)
{
	if (!u)
		return;
	u->jank_wanted = true;
	rvd_up_kick(u);
}

void rvd_upload_stop(struct rvd_uploader *u)
{
	if (!u || u->stopping)
		return;
	u->stopping = true;
	rvd_curl_uv_stop(&u->cu);
	uv_close((uv_handle_t *)&u->retry_timer, NULL);
	uv_close((uv_handle_t *)&u->policy_timer, NULL);
	while (u->reqs) {
		struct req *r = u->reqs;

		req_unlink(u, r);
		if (r->kind == REQ_UPLOAD)
			unbusy(u, r->id);
		rvd_up_req_free(r);
	}
	rvd_curl_uv_release(&u->cu);
}

void rvd_upload_free(struct rvd_uploader *u)
{
	if (!u)
		return;
	rvd_curl_uv_release(&u->cu);
	explicit_bzero(u->secret, sizeof(u->secret));
	explicit_bzero(u->token, sizeof(u->token));
	free(u);
}
