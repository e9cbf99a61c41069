/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin.c — the admin.sock protocol (admin.h): one AdminRequest in, one
 * AdminResponse (or Error) out, for rvctl; and the one consent change and
 * purge every channel uses (rvd_admin_set_consent, rvd_admin_delete_all:
 * admin.sock and D-Bus, dbus.c).
 *
 * The daemon's state is reached only through the handed-in struct
 * rvd_admin_env: the registry, spool and enforcer through their own public
 * headers, everything else (consent, counters, last errors, anomalies,
 * events, the tracing plan, policy jobs, peers by id) through its functions.
 *
 * Invariants:
 *  - loop thread only, except capture_req_work (the spool's work queue);
 *  - an answer that waits for a work-queue job (consent lowered, policy
 *    get/push, show/export) finds its peer again by connection id: the peer
 *    may have left, and then nothing is sent;
 *  - a consent change or deletion is told (rvd_admin_done_fn) only after
 *    the purge it causes is durable (that job is queued after the purge
 *    jobs), exactly once;
 *  - a frame the peer sends never takes the daemon down: only a write error
 *    (-EPIPE) disconnects.
 */
#include "admin.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anomaly.h"
#include "log.h"
#include "summary.h"
#include "rearview/policy.h"

static void note_error(struct rvd_admin_env *env, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The daemon's last errors keep RVD_ERROR_LEN bytes of each. */
static void note_error(struct rvd_admin_env *env, const char *fmt, ...)
{
	char msg[RVD_ERROR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	env->note_error(env->ctx, msg);
}

/* An injected event whose timestamps can happen: a touch detected ≤
 * delivered ≤ responded, a frame that starts before it ends (issue 18 item
 * 12: `rvctl event touch` with a response before the touch was accepted). */
static bool event_plausible(const Rearview__EventMessage *e)
{
	if (!e)
		return false;
	switch (e->msg_case) {
	case REARVIEW__EVENT_MESSAGE__MSG_TOUCH:
		return e->touch->detected_ns <= e->touch->delivered_ns &&
		       e->touch->delivered_ns <= e->touch->responded_ns;
	case REARVIEW__EVENT_MESSAGE__MSG_FRAME:
		return e->frame->frame_start_ns <= e->frame->frame_end_ns;
	default:
		return true;
	}
}

static int admin_reply(struct rvd_conn *c, Rearview__AdminResponse *r)
{
	return rvd_conn_send(c, &r->base);
}

static void capture_to_pb(const struct rvd_capture_rec *r, Rearview__CaptureInfo *ci,
			  Rearview__Anomaly *apb)
{
	rearview__capture_info__init(ci);
	rvd_anomaly_to_pb(&r->anomaly, apb);
	ci->id = r->id;
	ci->state = (char *)rvd_spool_state_name(r->state);
	ci->reason = (char *)r->reason;
	ci->trace_id = (char *)r->trace_id;
	ci->anomaly = apb;
	ci->app_id = (char *)r->app_id;
	ci->size = r->size;
	ci->freeze_latency_ns = r->freeze_latency_ns;
}

static int admin_status(struct rvd_admin_env *env, struct rvd_conn *c,
			Rearview__AdminResponse *resp)
{
	Rearview__Status st = REARVIEW__STATUS__INIT;
	Rearview__ProcessStatus *ps = NULL, **pps = NULL;
	int32_t *tids = NULL;
	struct rvd_admin_stats ds;
	unsigned i = 0, n = env->reg->nprocs;
	int rc;

	if (n) {
		ps = calloc(n, sizeof(*ps));
		pps = calloc(n, sizeof(*pps));
		tids = calloc(n, sizeof(*tids));
		if (!ps || !pps || !tids) {
			rc = rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL,
						 "out of memory");
			goto free_arrays;
		}
	}
	for (struct rvd_process *p = env->reg->head; p && i < n; p = p->next, i++) {
		rearview__process_status__init(&ps[i]);
		ps[i].pid = p->pid;
		ps[i].exe = p->exe;
		ps[i].app_id = p->app_id;
		ps[i].uid = p->uid;
		if (p->traced_tid) {
			tids[i] = p->traced_tid;
			ps[i].traced_tids = &tids[i];
			ps[i].n_traced_tids = 1;
		}
		ps[i].buffer_bytes = rvd_process_buffer_bytes(p);
		st.buffer_bytes += ps[i].buffer_bytes;
		pps[i] = &ps[i];
	}
	env->stats(env->ctx, &ds);
	st.consent = (Rearview__ConsentLevel)env->consent(env->ctx);
	st.processes = pps;
	st.n_processes = i;
	st.pending_uploads = rvd_spool_count(env->spool, RVD_SPOOL_PENDING) +
			     rvd_spool_count(env->spool, RVD_SPOOL_UPLOADING);
	st.last_freeze_latency_ns = ds.last_freeze_latency_ns;
	st.anomalies = ds.anomalies;
	st.anomalies_not_captured = ds.anomalies_not_captured;
	st.parser_failures = ds.parser_failures;
	st.identity_refused = ds.identity_refused;
	st.quota_left = env->enf->quota_left;
	st.device_weekly_captures = env->enf->device_weekly_captures;
	st.app_weekly_captures = env->enf->app_weekly_captures;
	st.captures_this_week = env->enf->captures_week;
	st.policy_version = env->enf->policy_version;
	assert(ds.nerrors <= RVD_LAST_ERRORS);
	st.last_errors = (char **)ds.errors;
	st.n_last_errors = ds.nerrors;
	resp->resp_case = REARVIEW__ADMIN_RESPONSE__RESP_STATUS;
	resp->status = &st;
	rc = admin_reply(c, resp);
free_arrays:
	free(tids);
	free(pps);
	free(ps);
	return rc;
}

static int admin_captures(struct rvd_admin_env *env, struct rvd_conn *c,
			  Rearview__AdminResponse *resp)
{
	Rearview__CaptureList cl = REARVIEW__CAPTURE_LIST__INIT;
	size_t n = env->spool->nrecs;
	Rearview__CaptureInfo *ci = calloc(n ? n : 1, sizeof(*ci));
	Rearview__CaptureInfo **pci = calloc(n ? n : 1, sizeof(*pci));
	Rearview__Anomaly *an = calloc(n ? n : 1, sizeof(*an));
	int rc;

	if (!ci || !pci || !an) {
		rc = rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
		goto free_arrays;
	}
	for (size_t i = 0; i < n; i++) {
		capture_to_pb(&env->spool->recs[i], &ci[i], &an[i]);
		pci[i] = &ci[i];
	}
	cl.captures = pci;
	cl.n_captures = n;
	resp->resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES;
	resp->captures = &cl;
	rc = admin_reply(c, resp);
free_arrays:
	free(an);
	free(pci);
	free(ci);
	return rc;
}

static void consent_saved_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	if (status < 0)
		note_error(data, "saving consent: %s", strerror(-status));
}

/* An admin request answered after a policy job: the peer may be gone by then. */
struct admin_wait {
	struct rvd_admin_env *env;
	uint64_t conn_id;
	uint64_t request_id;
};

static struct admin_wait *admin_wait_new(struct rvd_admin_env *env, struct rvd_conn *c,
					 const Rearview__AdminResponse *resp)
{
	struct admin_wait *w = calloc(1, sizeof(*w));

	if (w) {
		w->env = env;
		w->conn_id = c->id;
		w->request_id = resp->request_id;
	}
	return w;
}

/* Submits a policy job whose callback answers the admin peer. */
static int admin_async(struct rvd_admin_env *env, struct rvd_conn *c, Rearview__AdminResponse *resp,
		       struct rvd_enforce_job *j, struct admin_wait *w, rvd_spool_cb cb)
{
	if (!j || !w) {
		rvd_enforce_job_free(j);
		free(w);
		return rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	}
	j->data = w;
	if (env->enforce_submit(env->ctx, j, cb) < 0) {
		free(w);
		return rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	}
	return 0;
}

/* A purge in progress: what to tell whoever asked once it is durable. */
struct purge_run {
	struct rvd_admin_env *env;
	rvd_admin_done_fn done;
	void *data;
	int level; /* the consent in force afterwards */
	uint64_t *purged;
	size_t npurged;
};

static void purge_done_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	if (status < 0)
		note_error(data, "spool: purging capture %" PRIu64 ": %s", id, strerror(-status));
}

/* The ledger released the purged captures' reservations: the purge is
 * durable (its spool jobs ran before this one). */
static void purge_released_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct purge_run *p = j->data;

	if (status < 0 || j->status < 0)
		note_error(p->env, "policy: releasing purged reservations: %s",
			   strerror(-(status < 0 ? status : j->status)));
	rvd_enforce_done(j);
	p->done(p->data, p->level, p->purged, p->npurged);
	free(p->purged);
	free(p);
	rvd_enforce_job_free(j);
}

/*
 * The one purge, for a consent lowered from `from` to `rule` and for
 * DeleteAllData (`rule` off, consent unchanged): every capture still
 * holding a file whose keeping or upload `rule` forbids (rvp_consent_purge)
 * is purged as skipped(reason); the ledger releases the matching
 * reservations.  `done` runs after both, in job order, so the purge is
 * durable when it is told.  Returns 0, or -ENOMEM before anything changed.
 */
static int purge_start(struct rvd_admin_env *env, int from, int rule, const char *reason,
		       rvd_admin_done_fn done, void *data)
{
	size_t n = env->spool->nrecs, k = 0, npurge;
	struct rvp_pending *items = calloc(n ? n : 1, sizeof(*items));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	uint64_t *ids = calloc(n ? n : 1, sizeof(*ids));
	struct purge_run *p = calloc(1, sizeof(*p));
	struct rvd_enforce_job *j = rvd_enforce_job_new(env->enf, RVD_ENF_PURGE);
	int rc = -ENOMEM;

	if (!items || !idx || !ids || !p || !j)
		goto free_all;
	for (size_t i = 0; i < n; i++) {
		const struct rvd_capture_rec *r = &env->spool->recs[i];

		if (!r->file[0])
			continue;
		items[k].item_id = r->file;
		/* Lowered to summary, a capture not yet sending goes as its
		 * summary (the uploader reads the consent when it starts; the
		 * ledger downgrades its reservation): issue 18 item 12, full →
		 * summary discarded them.  One already sending its full trace
		 * is purged. */
		if (r->state == RVD_SPOOL_UPLOADING)
			items[k].action = from == REARVIEW__CONSENT_LEVEL__CONSENT_FULL
						  ? RVP_ACT_UPLOAD_FULL
						  : RVP_ACT_UPLOAD_SUMMARY;
		else if (r->state == RVD_SPOOL_CAPTURED || r->state == RVD_SPOOL_PENDING)
			items[k].action = RVP_ACT_UPLOAD_SUMMARY;
		else
			items[k].action = RVP_ACT_CAPTURE;
		ids[k++] = r->id;
	}
	npurge = rvp_consent_purge((rvp_consent)rule, items, k, idx);
	for (size_t i = 0; i < npurge; i++) {
		uint64_t id = ids[idx[i]];

		if (rvd_spool_purge(env->spool, id, reason, purge_done_cb, env) < 0) {
			note_error(env, "spool: purging capture %" PRIu64 ": out of memory", id);
			continue;
		}
		rvd_info("capture %" PRIu64 " purged: %s", id, reason);
		ids[p->npurged++] = id;
	}
	p->env = env;
	p->done = done;
	p->data = data;
	p->level = env->consent(env->ctx);
	p->purged = ids;
	ids = NULL;
	j->consent = rule;
	j->data = p;
	rc = env->enforce_submit(env->ctx, j, purge_released_cb);
	j = NULL; /* freed by enforce_submit on failure */
	if (rc < 0) {
		/* The purges are queued: tell the caller now rather than never. */
		note_error(env, "policy: releasing purged reservations: out of memory");
		done(data, p->level, p->purged, p->npurged);
		free(p->purged);
		free(p);
		rc = 0;
	}
	p = NULL;
free_all:
	rvd_enforce_job_free(j);
	free(p);
	free(ids);
	free(idx);
	free(items);
	return rc;
}

int rvd_admin_set_consent(struct rvd_admin_env *env, int level, rvd_admin_done_fn done, void *data)
{
	int from = env->consent(env->ctx);
	char buf[8];
	int n;

	if (level < REARVIEW__CONSENT_LEVEL__CONSENT_OFF ||
	    level > REARVIEW__CONSENT_LEVEL__CONSENT_FULL)
		return -EINVAL;
	if (from == level) {
		done(data, level, NULL, 0);
		return 0;
	}
	env->set_consent(env->ctx, level);
	assert(env->consent(env->ctx) == level);
	n = snprintf(buf, sizeof(buf), "%d\n", level);
	if (rvd_spool_write_setting(env->spool, "consent", buf, (size_t)n, consent_saved_cb, env) <
	    0)
		note_error(env, "saving consent: out of memory");
	rvd_info("consent set to %d", level);
	env->replan(env->ctx);
	if (level < from && purge_start(env, from, level, "consent_purged", done, data) == 0)
		return 0;
	if (level < from)
		note_error(env, "purging after consent lowered: out of memory");
	done(data, level, NULL, 0);
	return 0;
}

int rvd_admin_delete_all(struct rvd_admin_env *env, rvd_admin_done_fn done, void *data)
{
	rvd_info("deleting all collected data");
	if (env->clear_jank)
		env->clear_jank(env->ctx);
	return purge_start(env, env->consent(env->ctx), REARVIEW__CONSENT_LEVEL__CONSENT_OFF,
			   RVD_REASON_DELETED, done, data);
}

/* admin.sock's consent answer, once the change is durable. */
static void consent_answer(void *data, int level, const uint64_t *purged, size_t npurged)
{
	struct admin_wait *w = data;
	struct rvd_conn *c = w->env->conn_by_id(w->env->ctx, w->conn_id);
	Rearview__AdminResponse resp = REARVIEW__ADMIN_RESPONSE__INIT;
	Rearview__ConsentChange cc = REARVIEW__CONSENT_CHANGE__INIT;

	if (c) {
		resp.request_id = w->request_id;
		cc.level = (Rearview__ConsentLevel)level;
		cc.purged = (uint64_t *)purged;
		cc.n_purged = npurged;
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CONSENT;
		resp.consent = &cc;
		admin_reply(c, &resp);
	}
	free(w);
}

/* rvctl delete-all: answered as a consent change (the level unchanged,
 * the captures purged) once the deletion is durable. */
static int admin_delete_all(struct rvd_admin_env *env, struct rvd_conn *c,
			    Rearview__AdminResponse *resp)
{
	struct admin_wait *w = admin_wait_new(env, c, resp);

	if (!w || rvd_admin_delete_all(env, consent_answer, w) < 0) {
		free(w);
		return rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	}
	return 0;
}

static int admin_consent(struct rvd_admin_env *env, struct rvd_conn *c,
			 Rearview__AdminResponse *resp, int level)
{
	struct admin_wait *w = admin_wait_new(env, c, resp);
	int rc;

	if (!w)
		return rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	rc = rvd_admin_set_consent(env, level, consent_answer, w);
	if (rc == 0)
		return 0;
	free(w);
	return rc == -EINVAL
		       ? rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED,
					     "unknown consent level")
		       : rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
}

/* GET answers the SignedPolicy bytes; APPLY answers ok or the verification error. */
static void policy_answer_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct admin_wait *w = j->data;
	struct rvd_admin_env *env = w->env;
	struct rvd_conn *c = env->conn_by_id(env->ctx, w->conn_id);
	Rearview__AdminResponse resp = REARVIEW__ADMIN_RESPONSE__INIT;
	char msg[128];

	if (status < 0)
		j->status = status;
	rvd_enforce_done(j);
	env->policy_changed(env->ctx);
	if (j->op == RVD_ENF_APPLY && j->verify == 0)
		rvd_info("policy version %" PRIu64 " applied", env->enf->policy_version);
	else if (j->op == RVD_ENF_APPLY)
		rvd_warn("pushed policy refused: %s", rvd_enforce_verify_name(j->verify));
	if (c) {
		resp.request_id = w->request_id;
		if (j->status < 0) {
			rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL,
					    strerror(-j->status));
		} else if (j->op == RVD_ENF_GET) {
			resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_POLICY;
			resp.policy.data = j->out;
			resp.policy.len = j->out_len;
			admin_reply(c, &resp);
		} else if (j->verify != 0) {
			snprintf(msg, sizeof(msg), "policy refused: %s",
				 rvd_enforce_verify_name(j->verify));
			rvd_conn_send_error(c, REARVIEW__ERROR__CODE__UNSPECIFIED, msg);
		} else {
			resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
			resp.ok = true;
			admin_reply(c, &resp);
		}
	}
	free(w);
	rvd_enforce_job_free(j);
}

static int admin_push_policy(struct rvd_admin_env *env, struct rvd_conn *c,
			     Rearview__AdminResponse *resp, const ProtobufCBinaryData *doc)
{
	struct rvd_enforce_job *j = rvd_enforce_job_new(env->enf, RVD_ENF_APPLY);

	if (j && doc->len) {
		j->doc = malloc(doc->len);
		if (!j->doc) {
			rvd_enforce_job_free(j);
			j = NULL;
		} else {
			memcpy(j->doc, doc->data, doc->len);
			j->len = doc->len;
		}
	}
	return admin_async(env, c, resp, j, admin_wait_new(env, c, resp), policy_answer_cb);
}

/* show/export of one capture: its summary read, or its file opened, on the
 * work queue in spool order (after any purge queued before it). */
struct capture_req {
	struct rvd_spool *sp;
	struct rvd_admin_env *env;
	uint64_t conn_id;
	uint64_t request_id;
	uint64_t id;
	bool export;
	bool compute; /* show of a capture without a summary: make it first */
	char file[48];
	/* results */
	int status;
	bool computed; /* a summary was made and stored */
	uint8_t *buf;  /* show: the serialized Summary */
	size_t len;
	int fd; /* export: the capture file, read-only */
};

static void capture_req_work(void *arg)
{
	struct capture_req *q = arg;
	char path[400];

	if (q->compute) {
		struct rvd_summary_job sj = {.sp = q->sp, .enf = q->env->enf, .id = q->id};

		snprintf(sj.file, sizeof(sj.file), "%s", q->file);
		rvd_summary_work(&sj);
		q->computed = sj.status == 0;
	}
	if (!q->export) {
		q->status = rvd_spool_get_summary(q->sp, q->id, &q->buf, &q->len);
		return;
	}
	snprintf(path, sizeof(path), "%s/captures/%s", q->sp->dir, q->file);
	q->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	q->status = q->fd < 0 ? -errno : 0;
}

static void capture_req_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct capture_req *q = data;
	struct rvd_conn *c = q->env->conn_by_id(q->env->ctx, q->conn_id);
	Rearview__AdminResponse resp = REARVIEW__ADMIN_RESPONSE__INIT;
	Rearview__Summary *sum = NULL;
	int rc;

	Rearview__CaptureInfo ci;
	Rearview__Anomaly apb;
	const struct rvd_capture_rec *r = rvd_spool_find(sp, q->id);

	if (status < 0)
		q->status = status;
	if (q->computed)
		rvd_spool_note_summary(sp, q->id);
	resp.request_id = q->request_id;
	if (!c) {
		/* the peer left */
	} else if (q->compute && !q->computed && q->status == -ENOENT && r) {
		/* No summary could be made (the capture does not decode): its
		 * metadata alone. */
		capture_to_pb(r, &ci, &apb);
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CAPTURE;
		resp.capture = &ci;
		admin_reply(c, &resp);
	} else if (q->status == -ENOENT) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__NOT_FOUND, "no such capture");
	} else if (q->status < 0) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, strerror(-q->status));
	} else if (q->export) {
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CAPTURE_FILE;
		rc = rvd_conn_send_fd(c, &resp.base, q->fd);
		if (rc == -EBUSY || rc == -EAGAIN)
			rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL,
					    "admin peer is busy");
	} else if (!(sum = rearview__summary__unpack(NULL, q->len, q->buf))) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL,
				    "stored summary is damaged");
	} else {
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_SUMMARY;
		resp.summary = sum;
		admin_reply(c, &resp);
	}
	if (sum)
		rearview__summary__free_unpacked(sum, NULL);
	if (q->fd >= 0)
		close(q->fd);
	free(q->buf);
	free(q);
}

/*
 * show_capture: the summary — computed and stored now, on the work queue,
 * for a capture kept without one (consent local, or stored before the
 * consent allowed summaries) — else, when none can be made or the capture
 * has no file, the CaptureInfo.
 * export_capture: the file's descriptor in SCM_RIGHTS with an empty
 * capture_file.  A purged capture (or any at consent off) is not found.
 */
static int admin_show_export(struct rvd_admin_env *env, struct rvd_conn *c,
			     Rearview__AdminResponse *resp, uint64_t id, bool export)
{
	const struct rvd_capture_rec *r = rvd_spool_find(env->spool, id);
	Rearview__CaptureInfo ci;
	Rearview__Anomaly apb;
	struct capture_req *q;

	if (!r || env->consent(env->ctx) <= REARVIEW__CONSENT_LEVEL__CONSENT_OFF ||
	    !strcmp(r->reason, "consent_purged") || !strcmp(r->reason, RVD_REASON_DELETED) ||
	    (export && !r->file[0]))
		return rvd_conn_send_error(c, REARVIEW__ERROR__CODE__NOT_FOUND, "no such capture");
	if (!export && !r->has_summary && !r->file[0]) {
		capture_to_pb(r, &ci, &apb);
		resp->resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CAPTURE;
		resp->capture = &ci;
		return admin_reply(c, resp);
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	q->sp = env->spool;
	q->env = env;
	q->conn_id = c->id;
	q->request_id = resp->request_id;
	q->id = id;
	q->export = export;
	q->compute = !export && !r->has_summary;
	q->fd = -1;
	snprintf(q->file, sizeof(q->file), "%s", r->file);
	if (rvd_spool_run(env->spool, capture_req_work, q, capture_req_cb, q) < 0) {
		free(q);
		return rvd_conn_send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	}
	return 0;
}

int rvd_admin_frame(struct rvd_admin_env *env, struct rvd_conn *c, const uint8_t *payload,
		    uint32_t len)
{
	Rearview__AdminRequest *q = rearview__admin_request__unpack(NULL, len, payload);
	Rearview__AdminResponse resp = REARVIEW__ADMIN_RESPONSE__INIT;
	struct rvd_anomaly a;
	struct rvd_process *p;
	int rc = 0;

	if (!q) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED,
				    "undecodable AdminRequest");
		rvd_conn_close(c, "undecodable AdminRequest");
		return -EBADMSG;
	}
	resp.request_id = q->request_id;
	switch (q->req_case) {
	case REARVIEW__ADMIN_REQUEST__REQ_SET_CONSENT:
		rc = admin_consent(env, c, &resp, q->set_consent);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_DELETE_ALL:
		rc = admin_delete_all(env, c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_GET_STATUS:
		rc = admin_status(env, c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_LIST_CAPTURES:
		rc = admin_captures(env, c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_SHOW_CAPTURE:
		rc = admin_show_export(env, c, &resp, q->show_capture, false);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_EXPORT_CAPTURE:
		rc = admin_show_export(env, c, &resp, q->export_capture, true);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_CAPTURE_PID:
		p = rvd_registry_find(env->reg, q->capture_pid);
		if (!p) {
			rc = rvd_conn_send_error(c, REARVIEW__ERROR__CODE__NOT_FOUND,
						 "no registered process with that pid");
			break;
		}
		memset(&a, 0, sizeof(a));
		a.kind = RVD_ANOMALY_MANUAL;
		a.severity = 50;
		a.pid = p->pid;
		a.monotonic_ns = uv_hrtime();
		snprintf(a.detail, sizeof(a.detail), "rvctl capture");
		env->anomaly(env->ctx, &a);
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
		resp.ok = true;
		rc = admin_reply(c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_FOREGROUND_PID:
		/* Issue 18 item 12: `rvctl foreground 999999` was accepted. */
		if (!rvd_registry_find(env->reg, q->foreground_pid)) {
			rc = rvd_conn_send_error(c, REARVIEW__ERROR__CODE__NOT_FOUND,
						 "no registered process with that pid");
			break;
		}
		rvd_info("foreground (admin): pid %d", (int)q->foreground_pid);
		rvd_registry_foreground(env->reg, q->foreground_pid, 0);
		env->replan(env->ctx);
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
		resp.ok = true;
		rc = admin_reply(c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_EVENT:
		if (!event_plausible(q->event)) {
			rc = rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED,
						 "impossible event: timestamps out of order");
			break;
		}
		env->event(env->ctx, q->event);
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
		resp.ok = true;
		rc = admin_reply(c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_GET_POLICY:
		rc = admin_async(env, c, &resp, rvd_enforce_job_new(env->enf, RVD_ENF_GET),
				 admin_wait_new(env, c, &resp), policy_answer_cb);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_PUSH_POLICY:
		rc = admin_push_policy(env, c, &resp, &q->push_policy);
		break;
	default:
		rc = rvd_conn_send_error(c, REARVIEW__ERROR__CODE__UNSPECIFIED,
					 "not supported by this build of rearviewd");
		break;
	}
	rearview__admin_request__free_unpacked(q, NULL);
	return rc == -EPIPE ? rc : 0;
}
