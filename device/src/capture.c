/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture.c — the capture flow (see capture.h): from an anomaly to a
 * durable, acknowledged, gated capture.
 *
 * Invariants:
 *  - at most one capture is in flight per process (a policy decision
 *    queued: p->deciding, a CaptureRequest sent, or its answer checked);
 *    a request has a timer, and a process that does not answer in time is
 *    disconnected;
 *  - a capture is stored only when it is one: sealed, sized, and its header
 *    and checksum verify (capcheck.c, in a sandboxed worker on the libuv
 *    thread pool: the loop never waits for a check); at most
 *    RVD_CHECK_WORKERS checks run and RVD_CHECK_QUEUE_MAX wait, any
 *    further answer is refused (BUSY);
 *  - a capture is acknowledged to the process (Ack) only once the spool has
 *    made it durable;
 *  - a policy quota reservation is held by exactly one owner — the
 *    pending capture, then its check, then the store in flight, then the
 *    spool row — and is released when the capture fails or is dropped;
 *  - a capture is pending only once its local summary is durable (the
 *    summary job is queued before the gate's state change);
 *  - OFFCPU / THREAD_COUNTERS records (offcpu.c) are added only to a capture
 *    of the thread the process's perf events watch, FRAMES (frames.c) to any
 *    capture of a process that reported frames, into a new sealed memfd
 *    with a new checksum; when that fails the capture is stored as sent.
 */
#include "capture.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anomaly.h"
#include "capcheck.h"
#include "caprec.h"
#include "frames.h"
#include "log.h"
#include "offcpu.h"
#include "sandbox.h"
#include "summary.h"
#include "rearview/common.pb-c.h"
#include "rearview/upload.pb-c.h"

struct rvd_pending_capture {
	struct rvd_pending_capture *next;
	struct rvd_capture_flow *f;
	uv_timer_t timer;
	uint64_t request_id;
	pid_t pid;
	uint64_t fired_ns; /* uv_hrtime() when the anomaly reached us */
	struct rvd_anomaly anomaly;
	char app_id[64];
	int64_t reservation; /* upload quota held for it; released if it fails */
	struct rvd_selection sel;
	bool answered;
};

/*
 * A capture answered, sealed and sized, being checked or waiting for a
 * checking worker: what the flow needs afterwards, copied (its process
 * may be gone by then).  Owns the memfd and the quota reservation.
 */
struct rvd_check {
	struct rvd_check *next;
	struct rvd_capture_flow *f;
	uv_work_t work;
	struct rvd_sandbox *parser; /* the worker it runs on; NULL: in process */
	int slot;		    /* bit of f->parser_busy while running */
	int fd;
	uint64_t size;
	pid_t pid;
	uint64_t request_id;
	uint64_t freeze_latency_ns;
	uint64_t answered_ns; /* uv_hrtime() when its CaptureReady arrived */
	struct rvd_anomaly anomaly;
	char app_id[64];
	int64_t reservation;
	struct rvd_selection sel;
	bool dropped; /* stopping: nothing to store, the reservation released */
	int rc;	      /* the check's result (thread pool) */
	char why[128];
};

static int check_slot(const struct rvd_capture_flow *f);
static bool check_find(const struct rvd_capture_flow *f, pid_t pid);
static void check_submit(struct rvd_capture_flow *f, struct rvd_check *ck);

/* A store in flight: what to acknowledge once durable. */
struct store_ctx {
	struct rvd_capture_flow *f;
	pid_t pid;
	uint64_t request_id;
	int64_t reservation;
	uint64_t answered_ns; /* uv_hrtime() when its CaptureReady arrived */
};

static void note_error(struct rvd_capture_flow *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The daemon keeps the first 128 bytes of each error. */
static void note_error(struct rvd_capture_flow *f, const char *fmt, ...)
{
	char msg[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	f->env.note_error(f->env.ctx, msg);
}

static void pending_close_cb(uv_handle_t *h)
{
	free(h->data);
}

static void pending_drop(struct rvd_capture_flow *f, struct rvd_pending_capture *pc)
{
	struct rvd_pending_capture **pp;

	f->env.release_reservation(f->env.ctx, pc->reservation);
	for (pp = &f->pending; *pp; pp = &(*pp)->next) {
		if (*pp == pc) {
			*pp = pc->next;
			break;
		}
	}
	uv_timer_stop(&pc->timer);
	uv_close((uv_handle_t *)&pc->timer, pending_close_cb);
}

static struct rvd_pending_capture *pending_find(struct rvd_capture_flow *f, pid_t pid,
						uint64_t request_id)
{
	for (struct rvd_pending_capture *pc = f->pending; pc; pc = pc->next)
		if (pc->pid == pid && (!request_id || pc->request_id == request_id))
			return pc;
	return NULL;
}

static void capture_timeout_cb(uv_timer_t *t)
{
	struct rvd_pending_capture *pc = t->data;
	struct rvd_capture_flow *f = pc->f;
	struct rvd_process *p = rvd_registry_find(f->env.reg, pc->pid);

	note_error(f, "capture %" PRIu64 " of pid %d: no answer within %u ms", pc->request_id,
		   (int)pc->pid, f->env.cfg->capture_timeout_ms);
	pending_drop(f, pc);
	if (p && p->conn)
		rvd_conn_close(p->conn, "did not answer a capture request");
}

static void skipped_stored_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_capture_flow *f = data;

	(void)sp;
	if (status < 0)
		note_error(f, "spool: recording a skipped anomaly: %s", strerror(-status));
	else if (f->env.seams->pending)
		f->env.seams->pending(f->env.seams->ctx, id); /* its skip report is due */
}

static void capture_begin(struct rvd_capture_flow *f, const struct rvd_anomaly *a,
			  int64_t reservation, const struct rvd_selection *sel);

static void replaced_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_capture_flow *f = data;

	if (status < 0) {
		note_error(f, "spool: dropping replaced capture %" PRIu64 ": %s", id,
			   strerror(-status));
		return;
	}
	rvd_info("capture %" PRIu64 " replaced by a more severe one", id);
	if (f->env.seams->pending)
		f->env.seams->pending(f->env.seams->ctx, id); /* its skip report is due */
}

/*
 * Most-severe selection made room for a new capture by dropping the ledger
 * reservation `res` of a less severe one (issue 18 item 11: with quota 1, a
 * severity-30 and then a severity-90 jank both uploaded).  Its capture is
 * not uploaded: a stored one becomes skipped(replaced_by_more_severe)
 * without its file, one still being captured is dropped.  The reservation
 * is gone from the ledger, so it is not released again.
 */
static void drop_replaced(struct rvd_capture_flow *f, int64_t res)
{
	const struct rvd_capture_rec *r = rvd_spool_find_reservation(f->env.spool, res);

	for (struct rvd_pending_capture *pc = f->pending; !r && pc; pc = pc->next) {
		if (pc->reservation == res) {
			pc->reservation = 0;
			rvd_info("capture %" PRIu64 " of pid %d replaced by a more severe one",
				 pc->request_id, (int)pc->pid);
			pending_drop(f, pc);
			return;
		}
	}
	if (!r) {
		note_error(f, "policy replaced reservation %" PRId64 ": no such capture", res);
		return;
	}
	if (r->state == RVD_SPOOL_UPLOADING || r->state == RVD_SPOOL_UPLOADED ||
	    r->state == RVD_SPOOL_SKIPPED) {
		if (r->state == RVD_SPOOL_UPLOADING)
			note_error(f, "capture %" PRIu64 " replaced while its upload is in flight",
				   r->id);
		return;
	}
	if (rvd_spool_purge(f->env.spool, r->id, "replaced_by_more_severe", replaced_cb, f) < 0)
		note_error(f, "spool: dropping replaced capture %" PRIu64 ": out of memory", r->id);
}

/* The policy decided: capture, or record skipped(reason) without a file. */
static void decide_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct rvd_capture_flow *f = j->data;
	struct rvd_process *p = rvd_registry_find(f->env.reg, j->anomaly.pid);
	struct rvd_capture_rec meta;

	if (p && p->deciding)
		p->deciding--;
	rvd_enforce_done(j);
	f->env.policy_changed(f->env.ctx);
	if (status == 0 && j->status == 0 && j->evicted_reservation > 0)
		drop_replaced(f, j->evicted_reservation);
	if (status < 0 || j->status < 0) {
		note_error(f, "policy decision: %s", strerror(-(status < 0 ? status : j->status)));
		f->captures_dropped++;
	} else if (j->reason[0]) {
		rvd_info("anomaly not captured: %s", j->reason);
		f->captures_dropped++;
		memset(&meta, 0, sizeof(meta));
		meta.state = RVD_SPOOL_SKIPPED;
		snprintf(meta.reason, sizeof(meta.reason), "%s", j->reason);
		meta.anomaly = j->anomaly;
		snprintf(meta.app_id, sizeof(meta.app_id), "%s", j->app_id);
		if (!f->env.stopping(f->env.ctx) &&
		    rvd_spool_store(sp, -1, 0, &meta, skipped_stored_cb, f) < 0)
			note_error(f, "spool: recording a skipped anomaly: out of memory");
	} else {
		capture_begin(f, &j->anomaly, j->reservation, &j->sel);
	}
	rvd_enforce_job_free(j);
}

void rvd_capture_anomaly(struct rvd_capture_flow *f, const struct rvd_anomaly *a)
{
	struct rvd_enforce_job *j;
	const char *reason = NULL;
	struct rvd_process *p;
	struct rvd_anomaly an = *a;

	rvd_info("anomaly kind %d severity %u pid %d tid %d: %s%s%s", a->kind, a->severity,
		 (int)a->pid, (int)a->tid, a->name, a->name[0] ? " " : "", a->detail);
	if (f->env.stopping(f->env.ctx))
		return;
	f->anomalies++;
	if (f->env.consent(f->env.ctx) == REARVIEW__CONSENT_LEVEL__CONSENT_OFF) {
		rvd_info("anomaly not captured: consent off");
		f->captures_dropped++;
		return;
	}
	if (f->env.seams->policy_allow &&
	    f->env.seams->policy_allow(f->env.seams->ctx, a, &reason) < 0) {
		rvd_info("anomaly not captured: %s", reason ? reason : "policy");
		f->captures_dropped++;
		return;
	}
	/* A system-wide anomaly (thermal) captures the foreground app. */
	if (an.pid == 0) {
		for (unsigned i = 0; i < RVD_MRU_MAX && f->env.reg->mru[i]; i++) {
			if (rvd_registry_find(f->env.reg, f->env.reg->mru[i])) {
				an.pid = f->env.reg->mru[i];
				break;
			}
		}
	}
	p = an.pid ? rvd_registry_find(f->env.reg, an.pid) : NULL;
	if (!p || !p->conn) {
		rvd_info("anomaly not captured: pid %d is not registered", (int)an.pid);
		f->captures_dropped++;
		return;
	}
	if (an.tid == 0)
		an.tid = p->traced_tid ? p->traced_tid : (p->ui_tid ? p->ui_tid : p->pid);
	if (pending_find(f, p->pid, 0) || p->deciding || check_find(f, p->pid)) {
		rvd_info("anomaly not captured: a capture of pid %d is in flight", (int)p->pid);
		f->captures_dropped++;
		return;
	}
	/*
	 * An explicit capture (rvctl, the capture API) is asked for by an admin:
	 * consent alone gates it.  Detector anomalies go through the ledger —
	 * debounce, campaigns, quota — on the work queue (it fsyncs).
	 */
	if (an.kind == RVD_ANOMALY_MANUAL) {
		static const struct rvd_selection manual = {
			.kind = REARVIEW__SELECTION_KIND__SELECTION_MANUAL, .probability = 1.0};
		capture_begin(f, &an, 0, &manual);
		return;
	}
	j = rvd_enforce_job_new(f->env.enf, RVD_ENF_DECIDE);
	if (!j) {
		note_error(f, "policy decision: out of memory");
		f->captures_dropped++;
		return;
	}
	j->consent = f->env.consent(f->env.ctx);
	j->anomaly = an;
	snprintf(j->app_id, sizeof(j->app_id), "%.63s", p->app_id[0] ? p->app_id : p->exe);
	snprintf(j->item_id, sizeof(j->item_id), "a-%d-%" PRIu64, (int)p->pid, ++f->next_request);
	j->data = f;
	if (f->env.enforce_submit(f->env.ctx, j, decide_cb) < 0) {
		note_error(f, "policy decision: out of memory");
		f->captures_dropped++;
		return;
	}
	p->deciding++;
}

static void capture_begin(struct rvd_capture_flow *f, const struct rvd_anomaly *a,
			  int64_t reservation, const struct rvd_selection *sel)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__CaptureRequest cr = REARVIEW__CAPTURE_REQUEST__INIT;
	Rearview__Anomaly apb;
	struct rvd_pending_capture *pc;
	struct rvd_process *p = rvd_registry_find(f->env.reg, a->pid);
	struct rvd_anomaly an = *a;

	if (f->env.stopping(f->env.ctx) || !p || !p->conn || pending_find(f, a->pid, 0) ||
	    check_find(f, a->pid)) {
		rvd_info("anomaly not captured: pid %d is gone or busy", (int)a->pid);
		f->captures_dropped++;
		f->env.release_reservation(f->env.ctx, reservation);
		return;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc) {
		note_error(f, "capture: out of memory");
		f->env.release_reservation(f->env.ctx, reservation);
		return;
	}
	pc->f = f;
	pc->request_id = ++f->next_request;
	pc->pid = p->pid;
	pc->fired_ns = uv_hrtime();
	pc->anomaly = an;
	pc->reservation = reservation;
	pc->sel = *sel;
	snprintf(pc->app_id, sizeof(pc->app_id), "%s", p->app_id);
	uv_timer_init(f->env.loop, &pc->timer);
	pc->timer.data = pc;
	pc->next = f->pending;
	f->pending = pc;
	uv_timer_start(&pc->timer, capture_timeout_cb, f->env.cfg->capture_timeout_ms, 0);

	rvd_anomaly_to_pb(&an, &apb);
	cr.request_id = pc->request_id;
	cr.tid = an.tid;
	cr.anomaly = &apb;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE;
	m.capture = &cr;
	rvd_conn_send(p->conn, &m.base);
}

static void state_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_capture_flow *f = data;
	const struct rvd_capture_rec *r = rvd_spool_find(sp, id);

	if (status < 0) {
		note_error(f, "spool: state change of capture %" PRIu64 ": %s", id,
			   strerror(-status));
		return;
	}
	if (r && r->state == RVD_SPOOL_PENDING && f->env.seams->pending)
		f->env.seams->pending(f->env.seams->ctx, id);
}

/* captured → pending | skipped(reason), from the consent (and, later, policy). */
void rvd_capture_gate(struct rvd_capture_flow *f, uint64_t id)
{
	int rc;

	if (f->env.consent(f->env.ctx) >= REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY)
		rc = rvd_spool_set_state(f->env.spool, id, RVD_SPOOL_PENDING, NULL, state_cb, f);
	else
		rc = rvd_spool_set_state(f->env.spool, id, RVD_SPOOL_SKIPPED,
					 f->env.consent(f->env.ctx) ==
							 REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL
						 ? "consent_local"
						 : "consent_off",
					 state_cb, f);
	if (rc < 0)
		note_error(f, "spool: capture %" PRIu64 ": %s", id, strerror(-rc));
}

static void summary_done_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_summary_job *j = data;

	if (status < 0 || j->status < 0)
		note_error(j->data, "summary of capture %" PRIu64 ": %s", j->id,
			   status < 0 ? strerror(-status) : j->err);
	else
		rvd_spool_note_summary(sp, j->id);
	free(j);
}

/*
 * Queues the local summary of a stored capture when the consent lets
 * summaries leave the device (summary/full) and it has none yet.  A spool
 * job: it runs before the capture's gate (queued after it), so a capture
 * is pending only once its summary is durable, and the policy store it
 * reads the signature models from is used by one thread at a time.
 */
void rvd_capture_summarize(struct rvd_capture_flow *f, const struct rvd_capture_rec *r)
{
	struct rvd_summary_job *j;

	if (f->env.consent(f->env.ctx) < REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY || !r->file[0] ||
	    r->has_summary || f->env.stopping(f->env.ctx))
		return;
	j = calloc(1, sizeof(*j));
	if (j) {
		j->data = f;
		j->sp = f->env.spool;
		j->enf = f->env.enf;
		j->id = r->id;
		snprintf(j->file, sizeof(j->file), "%s", r->file);
	}
	if (!j || rvd_spool_run(f->env.spool, rvd_summary_work, j, summary_done_cb, j) < 0) {
		free(j);
		note_error(f, "summary of capture %" PRIu64 ": out of memory", r->id);
	}
}

/* An evicted capture is durable as skipped(spool_full): its quota
 * reservation goes back and the uploader may report the skip. */
static void evicted_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_capture_flow *f = data;
	const struct rvd_capture_rec *r = rvd_spool_find(sp, id);

	if (status < 0) {
		note_error(f, "spool: evicting capture %" PRIu64 ": %s", id, strerror(-status));
		return;
	}
	rvd_info("capture %" PRIu64 " evicted: spool over its bounds", id);
	if (r && r->reservation > 0)
		f->env.release_reservation(f->env.ctx, r->reservation);
	if (f->env.seams->pending)
		f->env.seams->pending(f->env.seams->ctx, id);
}

static void store_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__Ack ack = REARVIEW__ACK__INIT;
	struct store_ctx *sc = data;
	struct rvd_capture_flow *f = sc->f;
	struct rvd_process *p = rvd_registry_find(f->env.reg, sc->pid);

	if (status < 0) {
		note_error(f, "spool: storing capture of pid %d: %s", (int)sc->pid,
			   strerror(-status));
		f->env.release_reservation(f->env.ctx, sc->reservation);
		free(sc);
		return;
	}
	rvd_info("capture %" PRIu64 " of pid %d stored (%" PRIu64 " ms after its answer)", id,
		 (int)sc->pid, (uv_hrtime() - sc->answered_ns) / 1000000u);
	if (p && p->conn) {
		ack.request_id = sc->request_id;
		m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_ACK;
		m.ack = &ack;
		rvd_conn_send(p->conn, &m.base);
	}
	free(sc);
	if (f->env.seams->captured) {
		const struct rvd_capture_rec *r = rvd_spool_find(sp, id);

		if (r)
			f->env.seams->captured(f->env.seams->ctx, r);
	}
	if (rvd_spool_find(sp, id))
		rvd_capture_summarize(f, rvd_spool_find(sp, id));
	rvd_capture_gate(f, id);
	if (rvd_spool_evict(sp, f->env.cfg->spool_max_bytes, f->env.cfg->spool_max_files,
			    "spool_full", evicted_cb, f) < 0)
		note_error(f, "spool: evicting old captures: out of memory");
}

#define RVD_SEALS_REQUIRED (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/*
 * The daemon's part of a capture of p: the traced thread's off-CPU
 * intervals and counters (offcpu.c) when the capture is of that thread,
 * and p's frames from when its tracing was asked for to the freeze
 * (frames.c), inserted into a copy of the verified capture in `*fd`
 * (`*size` bytes).  On success *fd / *size are the new sealed memfd (the
 * old one closed); on any failure they are unchanged and the reason is
 * logged.  Costs a snapshot of the perf ring, one copy and one XXH3 pass
 * of the capture (device/BENCHMARKS.md).
 */
static void add_daemon_records(struct rvd_capture_flow *f, struct rvd_process *p, int *fd,
			       uint64_t *size)
{
	struct rvd_offcpu_window w;
	uint64_t t0 = uv_hrtime(), freeze;
	const uint8_t *cap;
	uint32_t tid;
	uint8_t *out = NULL, *recs = NULL;
	size_t len = 0, nrecs = 0, nw = 0;
	long nfr = 0;
	int rc, nfd = -1;

	memset(&w, 0, sizeof(w));
	if (!p->offcpu && !p->frames.n)
		return;
	cap = mmap(NULL, (size_t)*size, PROT_READ, MAP_SHARED, *fd, 0);
	if (cap == MAP_FAILED)
		return;
	memcpy(&tid, cap + 56, 4);    /* header: the captured thread */
	memcpy(&freeze, cap + 32, 8); /* header: ref_monotonic_ns */
	if (p->offcpu && rvd_offcpu_snapshot(p->offcpu, &w) == 0 && (pid_t)tid == w.tid)
		nw = 1;
	rc = -ENOMEM;
	recs = malloc(rvd_offcpu_records_len(&w, nw) + rvd_frames_record_max(&p->frames));
	if (recs) {
		nrecs = rvd_offcpu_records(&w, nw, recs);
		nfr = rvd_frames_record(&p->frames, p->traced_since_ns, freeze, recs + nrecs,
					rvd_frames_record_max(&p->frames));
		assert(nfr >= 0);
		nrecs += (size_t)nfr;
		rc = nrecs ? rvd_caprec_insert(cap, (size_t)*size, recs, nrecs, &out, &len)
			   : -ESRCH;
	}
	munmap((void *)cap, (size_t)*size);
	if (rc == 0 && len > f->env.cfg->capture_max_bytes)
		rc = -EFBIG;
	if (rc == 0) {
		errno = 0;
		nfd = memfd_create("rearview-capture", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (nfd < 0 || write(nfd, out, len) != (ssize_t)len ||
		    fcntl(nfd, F_ADD_SEALS, RVD_SEALS_REQUIRED) < 0) {
			rc = errno ? -errno : -EIO;
			if (nfd >= 0)
				close(nfd);
			nfd = -1;
		}
	}
	if (nfd >= 0) {
		rvd_info("pid %d: %zu off-CPU intervals and %zu frames added to the capture "
			 "(+%zu bytes, %" PRIu64 " us)",
			 (int)p->pid, nw ? w.n : 0, nfr ? ((size_t)nfr - 16) / RVD_FRAME_ITEM : 0,
			 len - (size_t)*size, (uv_hrtime() - t0) / 1000);
		close(*fd);
		*fd = nfd;
		*size = len;
	} else if (rc != -ESRCH) {
		rvd_warn("pid %d: off-CPU and frame records not added: %s", (int)p->pid,
			 strerror(-rc));
	}
	free(out);
	free(recs);
	rvd_offcpu_window_release(&w);
}

int rvd_capture_ready(struct rvd_capture_flow *f, struct rvd_conn *c, struct rvd_process *p,
		      const Rearview__CaptureReady *cr)
{
	struct rvd_pending_capture *pc = pending_find(f, p->pid, cr->request_id);
	struct rvd_check *ck;
	struct stat stb;
	uint64_t now = uv_hrtime();
	const char *why;
	int fd = rvd_conn_take_fd(c);
	int seals;

	if (!pc) {
		if (fd >= 0)
			close(fd);
		rvd_info("pid %d: CaptureReady for unknown request %" PRIu64, (int)p->pid,
			 cr->request_id);
		return 0; /* a late answer after a timeout is not an offence */
	}
	if (fd < 0) {
		note_error(f, "pid %d: CaptureReady without a descriptor", (int)p->pid);
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED,
				    "CaptureReady without a descriptor");
		pending_drop(f, pc);
		return -EBADMSG;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & RVD_SEALS_REQUIRED) != RVD_SEALS_REQUIRED ||
	    fstat(fd, &stb) < 0 || !S_ISREG(stb.st_mode) || (uint64_t)stb.st_size != cr->size ||
	    cr->size > f->env.cfg->capture_max_bytes) {
		why = seals < 0 ? "not a sealable memfd"
		      : (seals & RVD_SEALS_REQUIRED) != RVD_SEALS_REQUIRED
			      ? "memfd not sealed"
			      : "size mismatch or too large";

		note_error(f, "pid %d: capture %" PRIu64 " refused: %s", (int)p->pid,
			   cr->request_id, why);
		/* The Error device/README.md promises before the disconnect. */
		rvd_conn_send_error(c,
				    cr->size > f->env.cfg->capture_max_bytes
					    ? REARVIEW__ERROR__CODE__TOO_LARGE
					    : REARVIEW__ERROR__CODE__MALFORMED,
				    why);
		close(fd);
		pending_drop(f, pc);
		return -EBADMSG;
	}
	assert(cr->size <= f->env.cfg->capture_max_bytes && pc->pid == p->pid);
	/* Sealed and sized, but is it a capture?  Nothing else is stored,
	 * acknowledged or uploaded.  The bytes are any app's: a sandboxed
	 * worker reads them, off the loop; its failure refuses this capture
	 * only. */
	if (f->nwaiting >= RVD_CHECK_QUEUE_MAX && check_slot(f) < 0) {
		f->captures_dropped++;
		note_error(f, "pid %d: capture %" PRIu64 " refused: every capture check is busy",
			   (int)p->pid, cr->request_id);
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__BUSY,
				    "every capture check is busy; try again later");
		close(fd);
		pending_drop(f, pc);
		return 0;
	}
	ck = calloc(1, sizeof(*ck));
	if (!ck) {
		close(fd);
		pending_drop(f, pc);
		note_error(f, "capture: out of memory");
		return 0;
	}
	ck->f = f;
	ck->fd = fd;
	ck->size = cr->size;
	ck->pid = p->pid;
	ck->request_id = cr->request_id;
	ck->anomaly = pc->anomaly;
	ck->sel = pc->sel;
	snprintf(ck->app_id, sizeof(ck->app_id), "%s", pc->app_id);
	/* Same clock (CLOCK_MONOTONIC) on both sides; fall back to what we saw. */
	if (cr->frozen_monotonic_ns >= pc->anomaly.monotonic_ns &&
	    cr->frozen_monotonic_ns - pc->anomaly.monotonic_ns < 60ull * 1000000000ull)
		ck->freeze_latency_ns = cr->frozen_monotonic_ns - pc->anomaly.monotonic_ns;
	else
		ck->freeze_latency_ns = now - pc->fired_ns;
	ck->answered_ns = now;
	ck->reservation = pc->reservation; /* the check holds it now */
	pc->reservation = 0;
	pending_drop(f, pc);
	check_submit(f, ck);
	return 0;
}

/* ---- the capture check, off the loop -------------------------------------- */

/* A free checking slot (a worker, or the one in-process slot), or -1. */
static int check_slot(const struct rvd_capture_flow *f)
{
	unsigned n = f->env.nparsers ? f->env.nparsers : 1;

	assert(n <= 32);
	for (unsigned i = 0; i < n; i++)
		if (!(f->parser_busy & (1u << i)))
			return (int)i;
	return -1;
}

/* Whether a capture of `pid` is being checked or waits for a check. */
static bool check_find(const struct rvd_capture_flow *f, pid_t pid)
{
	for (const struct rvd_check *ck = f->checks_running; ck; ck = ck->next)
		if (ck->pid == pid)
			return true;
	for (const struct rvd_check *ck = f->waiting_head; ck; ck = ck->next)
		if (ck->pid == pid)
			return true;
	return false;
}

/* The thread pool's side: the only part that reads the capture's bytes
 * (through the worker); touches nothing but `ck`. */
static void check_work_cb(uv_work_t *w)
{
	struct rvd_check *ck = w->data;
	const char *why;

	if (ck->parser) {
		ck->rc = rvd_sandbox_check(ck->parser, ck->fd, (size_t)ck->size, ck->why,
					   sizeof(ck->why));
		return;
	}
	ck->rc = rvd_capcheck_fd(ck->fd, (size_t)ck->size, &why);
	if (ck->rc < 0)
		snprintf(ck->why, sizeof(ck->why), "%s", why ? why : strerror(-ck->rc));
}

static void check_after_cb(uv_work_t *w, int status);

/* Starts `ck` on free slot `slot`. */
static void check_run(struct rvd_capture_flow *f, struct rvd_check *ck, int slot)
{
	int rc;

	ck->slot = slot;
	ck->parser = f->env.nparsers ? &f->env.parsers[slot] : NULL;
	f->parser_busy |= 1u << slot;
	ck->next = f->checks_running;
	f->checks_running = ck;
	ck->work.data = ck;
	rc = uv_queue_work(f->env.loop, &ck->work, check_work_cb, check_after_cb);
	/* uv_queue_work fails only without a work callback. */
	assert(rc == 0);
	(void)rc;
}

/* Hands `ck` to a free worker, or queues it (the caller checked room). */
static void check_submit(struct rvd_capture_flow *f, struct rvd_check *ck)
{
	int slot = check_slot(f);

	if (slot >= 0) {
		check_run(f, ck, slot);
		return;
	}
	assert(f->nwaiting < RVD_CHECK_QUEUE_MAX);
	ck->next = NULL;
	if (f->waiting_tail)
		f->waiting_tail->next = ck;
	else
		f->waiting_head = ck;
	f->waiting_tail = ck;
	f->nwaiting++;
}

static void check_free(struct rvd_capture_flow *f, struct rvd_check *ck)
{
	f->env.release_reservation(f->env.ctx, ck->reservation);
	if (ck->fd >= 0)
		close(ck->fd);
	free(ck);
}

/* The check ended: the capture is stored, or refused to its process. */
static void check_done(struct rvd_capture_flow *f, struct rvd_check *ck)
{
	struct rvd_process *p = rvd_registry_find(f->env.reg, ck->pid);
	struct rvd_capture_rec meta;
	struct store_ctx *sc;
	uint64_t size = ck->size;

	rvd_debug("pid %d: capture %" PRIu64 " checked %" PRIu64 " ms after its answer: %s",
		  (int)ck->pid, ck->request_id, (uv_hrtime() - ck->answered_ns) / 1000000u,
		  ck->rc < 0 ? "refused" : "a capture");
	if (ck->dropped || f->env.stopping(f->env.ctx)) {
		check_free(f, ck);
		return;
	}
	if (ck->rc < 0) {
		note_error(f, "pid %d: capture %" PRIu64 " refused: %s", (int)ck->pid,
			   ck->request_id, ck->why[0] ? ck->why : strerror(-ck->rc));
		if (p && p->conn) {
			rvd_conn_send_error(p->conn, REARVIEW__ERROR__CODE__MALFORMED, ck->why);
			rvd_conn_close(p->conn, "bad CaptureReady");
		}
		check_free(f, ck);
		return;
	}
	/* The process may be gone: its capture is still stored, unacknowledged. */
	if (p)
		add_daemon_records(f, p, &ck->fd, &size);
	memset(&meta, 0, sizeof(meta));
	meta.anomaly = ck->anomaly;
	meta.reservation = ck->reservation; /* committed when the upload is acknowledged */
	meta.sel = ck->sel;
	meta.freeze_latency_ns = ck->freeze_latency_ns;
	snprintf(meta.app_id, sizeof(meta.app_id), "%s", ck->app_id);
	f->last_freeze_latency_ns = meta.freeze_latency_ns;
	sc = malloc(sizeof(*sc));
	if (!sc) {
		note_error(f, "capture: out of memory");
		check_free(f, ck);
		return;
	}
	sc->f = f;
	sc->pid = ck->pid;
	sc->request_id = ck->request_id;
	sc->answered_ns = ck->answered_ns;
	sc->reservation = ck->reservation; /* the store in flight holds it now */
	ck->reservation = 0;
	if (rvd_spool_store(f->env.spool, ck->fd, size, &meta, store_cb, sc) < 0) {
		f->env.release_reservation(f->env.ctx, sc->reservation);
		free(sc);
		note_error(f, "capture: spool refused the capture");
	} else {
		ck->fd = -1; /* the spool's now */
	}
	check_free(f, ck);
}

static void check_after_cb(uv_work_t *w, int status)
{
	struct rvd_check *ck = w->data, **pp, *next;
	struct rvd_capture_flow *f = ck->f;

	(void)status; /* never cancelled */
	for (pp = &f->checks_running; *pp != ck; pp = &(*pp)->next)
		assert(*pp);
	*pp = ck->next;
	f->parser_busy &= ~(1u << ck->slot);
	/* A worker that failed was ended: its successor starts now, from the
	 * loop, not at the next check on the thread pool. */
	if (ck->parser && ck->parser->pid <= 0 && !f->env.stopping(f->env.ctx))
		rvd_sandbox_start(ck->parser);
	if (f->waiting_head && !f->env.stopping(f->env.ctx)) {
		next = f->waiting_head;
		f->waiting_head = next->next;
		if (!f->waiting_head)
			f->waiting_tail = NULL;
		f->nwaiting--;
		check_run(f, next, ck->slot);
	}
	check_done(f, ck);
}

void rvd_capture_init(struct rvd_capture_flow *f, const struct rvd_capture_env *env)
{
	*f = (struct rvd_capture_flow){.env = *env};
}

void rvd_capture_forget(struct rvd_capture_flow *f, pid_t pid)
{
	struct rvd_pending_capture *pc;

	while ((pc = pending_find(f, pid, 0)) != NULL)
		pending_drop(f, pc);
}

void rvd_capture_stop(struct rvd_capture_flow *f)
{
	struct rvd_check *ck;

	while (f->pending)
		pending_drop(f, f->pending);
	while ((ck = f->waiting_head) != NULL) {
		f->waiting_head = ck->next;
		check_free(f, ck);
	}
	f->waiting_tail = NULL;
	f->nwaiting = 0;
	/* Running checks end with their worker; their reservations go back now,
	 * while the ledger still takes jobs. */
	for (ck = f->checks_running; ck; ck = ck->next) {
		f->env.release_reservation(f->env.ctx, ck->reservation);
		ck->reservation = 0;
		ck->dropped = true;
	}
}
