/*
 * daemon.c — rearviewd's event loop wiring: sockets, peers, detectors,
 * tracing plan, capture flow and spool hand-off.
 *
 * Invariants:
 *  - the loop thread never blocks: socket I/O is non-blocking, sqlite,
 *    file writes, fsyncs and sysfs reads go to the work queue (spool.c,
 *    thermal work below);
 *  - a control peer speaks only for the pid SO_PEERCRED gave us: the first
 *    frame must be Register{pid = peer pid}, and every tid it names must be
 *    a task of that pid;
 *  - at most one capture is in flight per process; each has a timer, and a
 *    process that does not answer in time is disconnected;
 *  - a capture is acknowledged to the process (Ack) only once the spool has
 *    made it durable.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "upload.h"
#include "rearview/admin.pb-c.h"
#include "summary.h"
#include "rearview/policy.h"
#include "rearview/control.pb-c.h"
#include "rearview/event.pb-c.h"

enum { SOCK_CONTROL, SOCK_EVENTS, SOCK_ADMIN };

static const char *const sock_names[] = {"control.sock", "events.sock", "admin.sock"};
static const uint8_t sock_channels[] = {RV_CHANNEL_CONTROL, RV_CHANNEL_EVENT, RV_CHANNEL_ADMIN};

struct rvd_pending_capture {
	struct rvd_pending_capture *next;
	struct rvd_daemon *d;
	uv_timer_t timer;
	uint64_t request_id;
	pid_t pid;
	uint64_t fired_ns; /* uv_hrtime() when the anomaly reached us */
	struct rvd_anomaly anomaly;
	char app_id[64];
	int64_t reservation; /* upload quota held for it; released if it fails */
	bool answered;
};

/* A store in flight: what to acknowledge once durable. */
struct store_ctx {
	struct rvd_daemon *d;
	pid_t pid;
	uint64_t request_id;
	int64_t reservation;
};

static void note_error(struct rvd_daemon *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note_error(struct rvd_daemon *d, const char *fmt, ...)
{
	char *slot = d->last_errors[d->nerrors % RVD_LAST_ERRORS];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(slot, sizeof(d->last_errors[0]), fmt, ap);
	va_end(ap);
	d->nerrors++;
	rvd_warn("%s", slot);
}

/* ---- readiness (sd_notify protocol, no libsystemd) ----------------------- */

static void notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd;

	if (!path || !*path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		rvd_warn("sd_notify %s: %s", state, strerror(errno));
	close(fd);
}

/* ---- anomaly ↔ protobuf --------------------------------------------------- */

static void anomaly_to_pb(const struct rvd_anomaly *a, Rearview__Anomaly *pb)
{
	rearview__anomaly__init(pb);
	pb->kind = (Rearview__AnomalyKind)a->kind;
	pb->severity = a->severity;
	pb->pid = a->pid;
	pb->tid = a->tid;
	pb->monotonic_ns = a->monotonic_ns;
	pb->focus_monotonic_ns = a->focus_ns;
	pb->touch_attribution = (Rearview__TouchAttribution)a->attribution;
	/* protobuf-c does not write through these pointers when packing. */
	pb->detail = (char *)a->detail;
	pb->name = (char *)a->name;
}

void rvd_daemon_anomaly_to_pb(const struct rvd_anomaly *a, Rearview__Anomaly *pb)
{
	anomaly_to_pb(a, pb);
}

static int anomaly_from_pb(const Rearview__Anomaly *pb, struct rvd_anomaly *a)
{
	memset(a, 0, sizeof(*a));
	if ((int)pb->kind < RVD_ANOMALY_JANK || (int)pb->kind > RVD_ANOMALY_MANUAL ||
	    pb->severity > 100 || pb->pid < 0 || pb->tid < 0)
		return -EINVAL;
	a->kind = pb->kind;
	a->severity = pb->severity;
	a->pid = pb->pid;
	a->tid = pb->tid;
	a->monotonic_ns = pb->monotonic_ns ? pb->monotonic_ns : uv_hrtime();
	a->focus_ns = pb->focus_monotonic_ns;
	a->attribution =
		(int)pb->touch_attribution <= RVD_TOUCH_APP ? (int)pb->touch_attribution : 0;
	snprintf(a->name, sizeof(a->name), "%s", pb->name ? pb->name : "");
	snprintf(a->detail, sizeof(a->detail), "%s", pb->detail ? pb->detail : "");
	return 0;
}

/* ---- tracing plan ---------------------------------------------------------- */

static void trace_cb(struct rvd_process *p, pid_t tid, bool start, void *data)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__StartTracing st = REARVIEW__START_TRACING__INIT;
	Rearview__StopTracing sp = REARVIEW__STOP_TRACING__INIT;
	struct rvd_conn *c = p->conn;

	(void)data;
	if (start) {
		st.tid = tid;
		m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_START;
		m.start = &st;
	} else {
		sp.tid = tid;
		sp.release_buffer = true;
		m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_STOP;
		m.stop = &sp;
	}
	rvd_info("pid %d: %s tracing tid %d", (int)p->pid, start ? "start" : "stop", (int)tid);
	if (c)
		rvd_conn_send(c, &m.base);
}

/* Tells `p` to stop every thread and unmap every ring it holds. */
static void release_all(struct rvd_process *p)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__StopTracing sp = REARVIEW__STOP_TRACING__INIT;

	sp.all_threads = true;
	sp.release_buffer = true;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_STOP;
	m.stop = &sp;
	rvd_info("pid %d: stop tracing and release every buffer", (int)p->pid);
	p->traced_tid = 0;
	if (p->conn)
		rvd_conn_send(p->conn, &m.base);
}

/*
 * A process that registers while it traces (it outlived a daemon restart)
 * is taken over: its traced UI thread counts against traced_apps as if it
 * had been planned here, with no foreground event needed.  Every other ring
 * it reports (consent off, no room, not its UI thread, or held untraced) is
 * released.
 */
static void adopt_or_release(struct rvd_daemon *d, struct rvd_process *p)
{
	unsigned n = d->consent == REARVIEW__CONSENT_LEVEL__CONSENT_OFF ? 0 : d->cfg.traced_apps;
	bool others = false;

	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rvd_thread *t = &p->threads[i];

		if (t->tracing && rvd_registry_adopt(&d->reg, p, t->tid, n))
			rvd_info("pid %d: took over tracing tid %d", (int)p->pid, (int)t->tid);
		else if (t->tracing || t->buffer_bytes)
			others = true;
	}
	if (others && !p->traced_tid) {
		release_all(p);
		return;
	}
	for (size_t i = 0; others && i < p->nthreads; i++) {
		const struct rvd_thread *t = &p->threads[i];

		if (t->tid != p->traced_tid && (t->tracing || t->buffer_bytes))
			trace_cb(p, t->tid, false, d);
	}
}

static void replan(struct rvd_daemon *d)
{
	unsigned n = d->consent == REARVIEW__CONSENT_LEVEL__CONSENT_OFF ? 0 : d->cfg.traced_apps;

	rvd_registry_plan(&d->reg, n, trace_cb, d);
}

/* ---- capture flow -------------------------------------------------------- */

static void pending_close_cb(uv_handle_t *h)
{
	free(h->data);
}

static void release_reservation(struct rvd_daemon *d, int64_t reservation);

static void pending_drop(struct rvd_daemon *d, struct rvd_pending_capture *pc)
{
	struct rvd_pending_capture **pp;

	release_reservation(d, pc->reservation);
	for (pp = &d->pending; *pp; pp = &(*pp)->next) {
		if (*pp == pc) {
			*pp = pc->next;
			break;
		}
	}
	uv_timer_stop(&pc->timer);
	uv_close((uv_handle_t *)&pc->timer, pending_close_cb);
}

static struct rvd_pending_capture *pending_find(struct rvd_daemon *d, pid_t pid,
						uint64_t request_id)
{
	for (struct rvd_pending_capture *pc = d->pending; pc; pc = pc->next)
		if (pc->pid == pid && (!request_id || pc->request_id == request_id))
			return pc;
	return NULL;
}

static void capture_timeout_cb(uv_timer_t *t)
{
	struct rvd_pending_capture *pc = t->data;
	struct rvd_daemon *d = pc->d;
	struct rvd_process *p = rvd_registry_find(&d->reg, pc->pid);

	note_error(d, "capture %" PRIu64 " of pid %d: no answer within %u ms", pc->request_id,
		   (int)pc->pid, d->cfg.capture_timeout_ms);
	pending_drop(d, pc);
	if (p && p->conn)
		rvd_conn_close(p->conn, "did not answer a capture request");
}

/* The loop-thread copies of the policy's detector thresholds. */
static void apply_thresholds(struct rvd_daemon *d)
{
	const struct rvd_thresholds *t = &d->enf.thr;

	d->cfg.jank_frames = t->jank_frames ? t->jank_frames : d->cfg_file.jank_frames;
	d->cfg.jank_budget_ns =
		t->frame_budget_us ? t->frame_budget_us * 1000ull : d->cfg_file.jank_budget_ns;
	d->cfg.touch_threshold_ns = t->touch_latency_ms ? t->touch_latency_ms * 1000000ull
							: d->cfg_file.touch_threshold_ns;
}

static void enforce_plain_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct rvd_daemon *d = sp->loop->data;

	if (status < 0 || j->status < 0)
		note_error(d, "policy: %s", strerror(-(status < 0 ? status : j->status)));
	rvd_enforce_done(j);
	apply_thresholds(d);
	rvd_enforce_job_free(j);
}

/* Queues a plain policy job (open, release, purge, close). */
static int enforce_submit(struct rvd_daemon *d, struct rvd_enforce_job *j, rvd_spool_cb cb)
{
	int rc;

	if (!j)
		return -ENOMEM;
	rc = rvd_spool_run(&d->spool, rvd_enforce_work, j, cb ? cb : enforce_plain_cb, j);
	if (rc < 0)
		rvd_enforce_job_free(j);
	return rc;
}

static void release_reservation(struct rvd_daemon *d, int64_t reservation)
{
	struct rvd_enforce_job *j;

	if (reservation <= 0)
		return;
	j = rvd_enforce_job_new(&d->enf, RVD_ENF_RELEASE);
	if (j)
		j->reservation = reservation;
	if (enforce_submit(d, j, NULL) < 0)
		note_error(d, "policy: releasing reservation %" PRId64 ": out of memory",
			   reservation);
}

void rvd_daemon_note_error(struct rvd_daemon *d, const char *msg)
{
	note_error(d, "%s", msg);
}

void rvd_daemon_release_reservation(struct rvd_daemon *d, int64_t reservation)
{
	release_reservation(d, reservation);
}

static void skipped_stored_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_daemon *d = data;

	(void)sp;
	if (status < 0)
		note_error(d, "spool: recording a skipped anomaly: %s", strerror(-status));
	else if (d->seams.pending)
		d->seams.pending(d->seams.ctx, id); /* its skip report is due */
}

static void capture_begin(struct rvd_daemon *d, const struct rvd_anomaly *a, int64_t reservation);

/* The policy decided: capture, or record skipped(reason) without a file. */
static void decide_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct rvd_daemon *d = sp->loop->data;
	struct rvd_process *p = rvd_registry_find(&d->reg, j->anomaly.pid);
	struct rvd_capture_rec meta;

	if (p && p->deciding)
		p->deciding--;
	rvd_enforce_done(j);
	apply_thresholds(d);
	if (status < 0 || j->status < 0) {
		note_error(d, "policy decision: %s", strerror(-(status < 0 ? status : j->status)));
		d->captures_dropped++;
	} else if (j->reason[0]) {
		rvd_info("anomaly not captured: %s", j->reason);
		d->captures_dropped++;
		memset(&meta, 0, sizeof(meta));
		meta.state = RVD_SPOOL_SKIPPED;
		snprintf(meta.reason, sizeof(meta.reason), "%s", j->reason);
		meta.anomaly = j->anomaly;
		snprintf(meta.app_id, sizeof(meta.app_id), "%s", j->app_id);
		if (!d->stopping && rvd_spool_store(sp, -1, 0, &meta, skipped_stored_cb, d) < 0)
			note_error(d, "spool: recording a skipped anomaly: out of memory");
	} else {
		capture_begin(d, &j->anomaly, j->reservation);
	}
	rvd_enforce_job_free(j);
}

void rvd_daemon_anomaly(struct rvd_daemon *d, const struct rvd_anomaly *a)
{
	struct rvd_enforce_job *j;
	const char *reason = NULL;
	struct rvd_process *p;
	struct rvd_anomaly an = *a;

	rvd_info("anomaly kind %d severity %u pid %d tid %d: %s%s%s", a->kind, a->severity,
		 (int)a->pid, (int)a->tid, a->name, a->name[0] ? " " : "", a->detail);
	if (d->stopping)
		return;
	d->anomalies++;
	if (d->consent == REARVIEW__CONSENT_LEVEL__CONSENT_OFF) {
		rvd_info("anomaly not captured: consent off");
		d->captures_dropped++;
		return;
	}
	if (d->seams.policy_allow && d->seams.policy_allow(d->seams.ctx, a, &reason) < 0) {
		rvd_info("anomaly not captured: %s", reason ? reason : "policy");
		d->captures_dropped++;
		return;
	}
	/* A system-wide anomaly (thermal) captures the foreground app. */
	if (an.pid == 0) {
		for (unsigned i = 0; i < RVD_MRU_MAX && d->reg.mru[i]; i++) {
			if (rvd_registry_find(&d->reg, d->reg.mru[i])) {
				an.pid = d->reg.mru[i];
				break;
			}
		}
	}
	p = an.pid ? rvd_registry_find(&d->reg, an.pid) : NULL;
	if (!p || !p->conn) {
		rvd_info("anomaly not captured: pid %d is not registered", (int)an.pid);
		d->captures_dropped++;
		return;
	}
	if (an.tid == 0)
		an.tid = p->traced_tid ? p->traced_tid : (p->ui_tid ? p->ui_tid : p->pid);
	if (pending_find(d, p->pid, 0) || p->deciding) {
		rvd_info("anomaly not captured: a capture of pid %d is in flight", (int)p->pid);
		d->captures_dropped++;
		return;
	}
	/*
	 * An explicit capture (rvctl, the capture API) is asked for by an admin:
	 * consent alone gates it.  Detector anomalies go through the ledger —
	 * debounce, campaigns, quota — on the work queue (it fsyncs).
	 */
	if (an.kind == RVD_ANOMALY_MANUAL) {
		capture_begin(d, &an, 0);
		return;
	}
	j = rvd_enforce_job_new(&d->enf, RVD_ENF_DECIDE);
	if (!j) {
		note_error(d, "policy decision: out of memory");
		d->captures_dropped++;
		return;
	}
	j->consent = d->consent;
	j->anomaly = an;
	snprintf(j->app_id, sizeof(j->app_id), "%.63s", p->app_id[0] ? p->app_id : p->exe);
	snprintf(j->item_id, sizeof(j->item_id), "a-%d-%" PRIu64, (int)p->pid, ++d->next_request);
	if (enforce_submit(d, j, decide_cb) < 0) {
		note_error(d, "policy decision: out of memory");
		d->captures_dropped++;
		return;
	}
	p->deciding++;
}

static void capture_begin(struct rvd_daemon *d, const struct rvd_anomaly *a, int64_t reservation)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__CaptureRequest cr = REARVIEW__CAPTURE_REQUEST__INIT;
	Rearview__Anomaly apb;
	struct rvd_pending_capture *pc;
	struct rvd_process *p = rvd_registry_find(&d->reg, a->pid);
	struct rvd_anomaly an = *a;

	if (d->stopping || !p || !p->conn || pending_find(d, a->pid, 0)) {
		rvd_info("anomaly not captured: pid %d is gone or busy", (int)a->pid);
		d->captures_dropped++;
		release_reservation(d, reservation);
		return;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc) {
		note_error(d, "capture: out of memory");
		release_reservation(d, reservation);
		return;
	}
	pc->d = d;
	pc->request_id = ++d->next_request;
	pc->pid = p->pid;
	pc->fired_ns = uv_hrtime();
	pc->anomaly = an;
	pc->reservation = reservation;
	snprintf(pc->app_id, sizeof(pc->app_id), "%s", p->app_id);
	uv_timer_init(d->loop, &pc->timer);
	pc->timer.data = pc;
	pc->next = d->pending;
	d->pending = pc;
	uv_timer_start(&pc->timer, capture_timeout_cb, d->cfg.capture_timeout_ms, 0);

	anomaly_to_pb(&an, &apb);
	cr.request_id = pc->request_id;
	cr.tid = an.tid;
	cr.anomaly = &apb;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE;
	m.capture = &cr;
	rvd_conn_send(p->conn, &m.base);
}

static void state_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_daemon *d = data;
	const struct rvd_capture_rec *r = rvd_spool_find(sp, id);

	if (status < 0) {
		note_error(d, "spool: state change of capture %" PRIu64 ": %s", id,
			   strerror(-status));
		return;
	}
	if (r && r->state == RVD_SPOOL_PENDING && d->seams.pending)
		d->seams.pending(d->seams.ctx, id);
}

/* captured → pending | skipped(reason), from the consent (and, later, policy). */
static void gate_stored(struct rvd_daemon *d, uint64_t id)
{
	int rc;

	if (d->consent >= REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY)
		rc = rvd_spool_set_state(&d->spool, id, RVD_SPOOL_PENDING, NULL, state_cb, d);
	else
		rc = rvd_spool_set_state(&d->spool, id, RVD_SPOOL_SKIPPED,
					 d->consent == REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL
						 ? "consent_local"
						 : "consent_off",
					 state_cb, d);
	if (rc < 0)
		note_error(d, "spool: capture %" PRIu64 ": %s", id, strerror(-rc));
}

static void summary_done_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_summary_job *j = data;

	if (status < 0 || j->status < 0)
		note_error(sp->loop->data, "summary of capture %" PRIu64 ": %s", j->id,
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
static void summarize(struct rvd_daemon *d, const struct rvd_capture_rec *r)
{
	struct rvd_summary_job *j;

	if (d->consent < REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY || !r->file[0] ||
	    r->has_summary || d->stopping)
		return;
	j = calloc(1, sizeof(*j));
	if (j) {
		j->sp = &d->spool;
		j->enf = &d->enf;
		j->id = r->id;
		snprintf(j->file, sizeof(j->file), "%s", r->file);
	}
	if (!j || rvd_spool_run(&d->spool, rvd_summary_work, j, summary_done_cb, j) < 0) {
		free(j);
		note_error(d, "summary of capture %" PRIu64 ": out of memory", r->id);
	}
}

static void store_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__Ack ack = REARVIEW__ACK__INIT;
	struct store_ctx *sc = data;
	struct rvd_daemon *d = sc->d;
	struct rvd_process *p = rvd_registry_find(&d->reg, sc->pid);

	if (status < 0) {
		note_error(d, "spool: storing capture of pid %d: %s", (int)sc->pid,
			   strerror(-status));
		release_reservation(d, sc->reservation);
		free(sc);
		return;
	}
	rvd_info("capture %" PRIu64 " of pid %d stored", id, (int)sc->pid);
	if (p && p->conn) {
		ack.request_id = sc->request_id;
		m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_ACK;
		m.ack = &ack;
		rvd_conn_send(p->conn, &m.base);
	}
	free(sc);
	if (d->seams.captured) {
		const struct rvd_capture_rec *r = rvd_spool_find(sp, id);

		if (r)
			d->seams.captured(d->seams.ctx, r);
	}
	if (rvd_spool_find(sp, id))
		summarize(d, rvd_spool_find(sp, id));
	gate_stored(d, id);
}

#define RVD_SEALS_REQUIRED (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static int on_capture_ready(struct rvd_daemon *d, struct rvd_conn *c, struct rvd_process *p,
			    const Rearview__CaptureReady *cr)
{
	struct rvd_pending_capture *pc = pending_find(d, p->pid, cr->request_id);
	struct rvd_capture_rec meta;
	struct store_ctx *sc;
	struct stat stb;
	uint64_t now = uv_hrtime();
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
		note_error(d, "pid %d: CaptureReady without a descriptor", (int)p->pid);
		pending_drop(d, pc);
		return -EBADMSG;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & RVD_SEALS_REQUIRED) != RVD_SEALS_REQUIRED ||
	    fstat(fd, &stb) < 0 || !S_ISREG(stb.st_mode) || (uint64_t)stb.st_size != cr->size ||
	    cr->size > d->cfg.capture_max_bytes) {
		note_error(d, "pid %d: capture %" PRIu64 " refused: %s", (int)p->pid,
			   cr->request_id,
			   seals < 0 ? "not a sealable memfd"
			   : (seals & RVD_SEALS_REQUIRED) != RVD_SEALS_REQUIRED
				   ? "memfd not sealed"
				   : "size mismatch or too large");
		close(fd);
		pending_drop(d, pc);
		return -EBADMSG;
	}
	memset(&meta, 0, sizeof(meta));
	meta.anomaly = pc->anomaly;
	meta.reservation = pc->reservation; /* committed when the upload is acknowledged */
	snprintf(meta.app_id, sizeof(meta.app_id), "%s", pc->app_id);
	/* Same clock (CLOCK_MONOTONIC) on both sides; fall back to what we saw. */
	if (cr->frozen_monotonic_ns >= pc->anomaly.monotonic_ns &&
	    cr->frozen_monotonic_ns - pc->anomaly.monotonic_ns < 60ull * 1000000000ull)
		meta.freeze_latency_ns = cr->frozen_monotonic_ns - pc->anomaly.monotonic_ns;
	else
		meta.freeze_latency_ns = now - pc->fired_ns;
	d->last_freeze_latency_ns = meta.freeze_latency_ns;
	sc = malloc(sizeof(*sc));
	if (!sc) {
		close(fd);
		pending_drop(d, pc);
		note_error(d, "capture: out of memory");
		return 0;
	}
	sc->d = d;
	sc->pid = p->pid;
	sc->request_id = cr->request_id;
	sc->reservation = pc->reservation;
	pc->reservation = 0; /* the stored capture holds it now */
	pending_drop(d, pc);
	if (rvd_spool_store(&d->spool, fd, cr->size, &meta, store_cb, sc) < 0) {
		release_reservation(d, sc->reservation);
		free(sc);
		note_error(d, "capture: spool refused the capture");
	}
	return 0;
}

/* ---- control.sock ------------------------------------------------------------ */

static bool tid_of(pid_t pid, pid_t tid)
{
	char path[64];

	if (tid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

static int set_threads(struct rvd_process *p, Rearview__ThreadInfo **ti, size_t n)
{
	struct rvd_thread *t;
	int rc;

	if (n > 4096)
		return -E2BIG;
	t = calloc(n ? n : 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!tid_of(p->pid, ti[i]->tid)) {
			free(t);
			return -EPERM;
		}
		t[i].tid = ti[i]->tid;
		t[i].is_ui = ti[i]->is_ui;
		t[i].tracing = ti[i]->tracing;
		t[i].buffer_bytes = ti[i]->buffer_bytes;
		snprintf(t[i].name, sizeof(t[i].name), "%s", ti[i]->name ? ti[i]->name : "");
	}
	rc = rvd_process_set_threads(p, t, n);
	free(t);
	return rc;
}

static int send_error(struct rvd_conn *c, int code, const char *msg);

static int on_register(struct rvd_daemon *d, struct rvd_conn *c, const Rearview__Register *r)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__TraceConfig tc = REARVIEW__TRACE_CONFIG__INIT;
	struct rvd_process *p;
	const char *base;
	int err = 0, rc;

	if (r->pid != c->cred.pid) {
		send_error(c, REARVIEW__ERROR__CODE__DENIED, "a process speaks only for itself");
		rvd_conn_close(c, "Register for another pid");
		return -EPERM;
	}
	p = rvd_registry_add(&d->reg, r->pid, &err);
	if (!p) {
		send_error(c, REARVIEW__ERROR__CODE__BUSY, "already registered");
		rvd_conn_close(c, err == -EEXIST ? "pid already registered" : "out of memory");
		return err;
	}
	p->uid = c->cred.uid;
	p->conn = c;
	c->data = p;
	snprintf(p->exe, sizeof(p->exe), "%s", r->exe ? r->exe : "");
	base = strrchr(p->exe, '/');
	if (r->app && r->app->app_id && *r->app->app_id)
		snprintf(p->app_id, sizeof(p->app_id), "%s", r->app->app_id);
	else
		snprintf(p->app_id, sizeof(p->app_id), "%.63s", base ? base + 1 : p->exe);
	rc = set_threads(p, r->threads, r->n_threads);
	if (rc < 0) {
		send_error(c, REARVIEW__ERROR__CODE__DENIED, "thread list names foreign tids");
		rvd_conn_close(c, "Register names threads that are not its own");
		return rc;
	}
	rvd_info("pid %d registered (%s, %zu threads)", (int)p->pid, p->app_id, p->nthreads);
	adopt_or_release(d, p);
	tc.buffer_bytes = d->cfg.buffer_bytes;
	tc.max_buffers = d->cfg.traced_apps;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CONFIG;
	m.config = &tc;
	rvd_conn_send(c, &m.base);
	replan(d);
	return 0;
}

static int on_control_frame(struct rvd_conn *c, const uint8_t *payload, uint32_t len)
{
	struct rvd_daemon *d = c->poll.loop->data;
	struct rvd_process *p = c->data;
	Rearview__ControlMessage *m = rearview__control_message__unpack(NULL, len, payload);
	int rc = 0;

	if (!m) {
		send_error(c, REARVIEW__ERROR__CODE__MALFORMED, "undecodable ControlMessage");
		rvd_conn_close(c, "undecodable ControlMessage");
		return -EBADMSG;
	}
	if (!p && m->msg_case != REARVIEW__CONTROL_MESSAGE__MSG_REG) {
		send_error(c, REARVIEW__ERROR__CODE__DENIED, "Register first");
		rvd_conn_close(c, "spoke before registering");
		rc = -EPERM;
		goto free_msg;
	}
	switch (m->msg_case) {
	case REARVIEW__CONTROL_MESSAGE__MSG_REG:
		if (p) {
			rvd_conn_close(c, "registered twice");
			rc = -EBADMSG;
			break;
		}
		rc = on_register(d, c, m->reg);
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_THREADS:
		rc = set_threads(p, m->threads->threads, m->threads->n_threads);
		if (rc < 0)
			rvd_conn_close(c, "ThreadsChanged names threads that are not its own");
		else
			replan(d);
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE_READY:
		rc = on_capture_ready(d, c, p, m->capture_ready);
		if (rc < 0)
			rvd_conn_close(c, "bad CaptureReady");
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_ERROR:
		note_error(d, "pid %d reports error %d: %s", (int)p->pid, m->error->code,
			   m->error->message ? m->error->message : "");
		break;
	default:
		send_error(c, REARVIEW__ERROR__CODE__MALFORMED, "unexpected message");
		rvd_conn_close(c, "unexpected control message");
		rc = -EBADMSG;
		break;
	}
free_msg:
	rearview__control_message__free_unpacked(m, NULL);
	return rc;
}

/* ---- events.sock (and admin-injected events) ----------------------------- */

static void handle_event(struct rvd_daemon *d, const Rearview__EventMessage *e)
{
	struct rvd_jank_config jc = {d->cfg.jank_frames, d->cfg.jank_budget_ns};
	struct rvd_corr_config cc = {d->cfg.corr_metric, d->cfg.corr_threshold,
				     d->cfg.corr_window_ns};
	struct rvd_anomaly a, corr;
	struct rvd_process *p;

	switch (e->msg_case) {
	case REARVIEW__EVENT_MESSAGE__MSG_FRAME:
		p = rvd_registry_find(&d->reg, e->frame->pid);
		if (!p) {
			rvd_debug("frame for unregistered pid %d", (int)e->frame->pid);
			return;
		}
		if (rvd_jank_feed(&jc, &p->jank, p->pid, e->frame->tid, e->frame->frame_start_ns,
				  e->frame->frame_end_ns, &a) != 1)
			return;
		/* The correlated anomaly, when the metrics agree, replaces plain jank. */
		if (rvd_corr_check(&cc, &d->corr, &a, &corr) == 1)
			a = corr;
		rvd_daemon_anomaly(d, &a);
		return;
	case REARVIEW__EVENT_MESSAGE__MSG_TOUCH:
		if (rvd_touch_eval(d->cfg.touch_threshold_ns, e->touch->pid, e->touch->tid,
				   e->touch->detected_ns, e->touch->delivered_ns,
				   e->touch->responded_ns, &a) == 1)
			rvd_daemon_anomaly(d, &a);
		return;
	case REARVIEW__EVENT_MESSAGE__MSG_FOREGROUND:
		rvd_info("foreground: pid %d", (int)e->foreground->pid);
		rvd_registry_foreground(&d->reg, e->foreground->pid, e->foreground->ui_tid);
		replan(d);
		return;
	case REARVIEW__EVENT_MESSAGE__MSG_METRIC:
		rvd_corr_sample(&cc, &d->corr, e->metric->name ? e->metric->name : "",
				e->metric->value,
				e->metric->monotonic_ns ? e->metric->monotonic_ns : uv_hrtime());
		return;
	case REARVIEW__EVENT_MESSAGE__MSG_ANOMALY:
		if (anomaly_from_pb(e->anomaly, &a) < 0) {
			rvd_info("events: invalid anomaly ignored");
			return;
		}
		rvd_daemon_anomaly(d, &a);
		return;
	default:
		return;
	}
}

static int on_event_frame(struct rvd_conn *c, const uint8_t *payload, uint32_t len)
{
	struct rvd_daemon *d = c->poll.loop->data;
	Rearview__EventMessage *e = rearview__event_message__unpack(NULL, len, payload);

	if (!e) {
		rvd_conn_close(c, "undecodable EventMessage");
		return -EBADMSG;
	}
	handle_event(d, e);
	rearview__event_message__free_unpacked(e, NULL);
	return 0;
}

/* ---- admin.sock ------------------------------------------------------------ */

static int admin_reply(struct rvd_conn *c, Rearview__AdminResponse *r)
{
	return rvd_conn_send(c, &r->base);
}

static int send_error(struct rvd_conn *c, int code, const char *msg)
{
	Rearview__Error err = REARVIEW__ERROR__INIT;
	Rearview__ControlMessage cm = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__AdminResponse ar = REARVIEW__ADMIN_RESPONSE__INIT;
	Rearview__EventMessage em = REARVIEW__EVENT_MESSAGE__INIT;

	err.code = (Rearview__Error__Code)code;
	err.message = (char *)msg;
	err.min_version = RV_FRAME_VERSION;
	err.max_version = RV_FRAME_VERSION;
	switch (c->channel) {
	case RV_CHANNEL_CONTROL:
		cm.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_ERROR;
		cm.error = &err;
		return rvd_conn_send(c, &cm.base);
	case RV_CHANNEL_ADMIN:
		ar.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_ERROR;
		ar.error = &err;
		return rvd_conn_send(c, &ar.base);
	default:
		em.msg_case = REARVIEW__EVENT_MESSAGE__MSG_ERROR;
		em.error = &err;
		return rvd_conn_send(c, &em.base);
	}
}

static void capture_to_pb(const struct rvd_capture_rec *r, Rearview__CaptureInfo *ci,
			  Rearview__Anomaly *apb)
{
	rearview__capture_info__init(ci);
	anomaly_to_pb(&r->anomaly, apb);
	ci->id = r->id;
	ci->state = (char *)rvd_spool_state_name(r->state);
	ci->reason = (char *)r->reason;
	ci->trace_id = (char *)r->trace_id;
	ci->anomaly = apb;
	ci->app_id = (char *)r->app_id;
	ci->size = r->size;
	ci->freeze_latency_ns = r->freeze_latency_ns;
}

static int admin_status(struct rvd_daemon *d, struct rvd_conn *c, Rearview__AdminResponse *resp)
{
	Rearview__Status st = REARVIEW__STATUS__INIT;
	Rearview__ProcessStatus *ps = NULL, **pps = NULL;
	int32_t *tids = NULL;
	char *errs[RVD_LAST_ERRORS];
	unsigned i = 0, n = d->reg.nprocs, ne;
	int rc;

	if (n) {
		ps = calloc(n, sizeof(*ps));
		pps = calloc(n, sizeof(*pps));
		tids = calloc(n, sizeof(*tids));
		if (!ps || !pps || !tids) {
			rc = send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
			goto free_arrays;
		}
	}
	for (struct rvd_process *p = d->reg.head; p && i < n; p = p->next, i++) {
		rearview__process_status__init(&ps[i]);
		ps[i].pid = p->pid;
		ps[i].exe = p->exe;
		if (p->traced_tid) {
			tids[i] = p->traced_tid;
			ps[i].traced_tids = &tids[i];
			ps[i].n_traced_tids = 1;
		}
		ps[i].buffer_bytes = rvd_process_buffer_bytes(p);
		st.buffer_bytes += ps[i].buffer_bytes;
		pps[i] = &ps[i];
	}
	st.consent = (Rearview__ConsentLevel)d->consent;
	st.processes = pps;
	st.n_processes = i;
	st.pending_uploads = rvd_spool_count(&d->spool, RVD_SPOOL_PENDING) +
			     rvd_spool_count(&d->spool, RVD_SPOOL_UPLOADING);
	st.last_freeze_latency_ns = d->last_freeze_latency_ns;
	st.anomalies = d->anomalies;
	st.anomalies_not_captured = d->captures_dropped;
	st.quota_left = d->enf.quota_left;
	st.policy_version = d->enf.policy_version;
	ne = d->nerrors < RVD_LAST_ERRORS ? d->nerrors : RVD_LAST_ERRORS;
	for (unsigned k = 0; k < ne; k++)
		errs[k] = d->last_errors[(d->nerrors - ne + k) % RVD_LAST_ERRORS];
	st.last_errors = errs;
	st.n_last_errors = ne;
	resp->resp_case = REARVIEW__ADMIN_RESPONSE__RESP_STATUS;
	resp->status = &st;
	rc = admin_reply(c, resp);
free_arrays:
	free(tids);
	free(pps);
	free(ps);
	return rc;
}

static int admin_captures(struct rvd_daemon *d, struct rvd_conn *c, Rearview__AdminResponse *resp)
{
	Rearview__CaptureList cl = REARVIEW__CAPTURE_LIST__INIT;
	size_t n = d->spool.nrecs;
	Rearview__CaptureInfo *ci = calloc(n ? n : 1, sizeof(*ci));
	Rearview__CaptureInfo **pci = calloc(n ? n : 1, sizeof(*pci));
	Rearview__Anomaly *an = calloc(n ? n : 1, sizeof(*an));
	int rc;

	if (!ci || !pci || !an) {
		rc = send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
		goto free_arrays;
	}
	for (size_t i = 0; i < n; i++) {
		capture_to_pb(&d->spool.recs[i], &ci[i], &an[i]);
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
	struct rvd_daemon *d;
	uint64_t conn_id;
	uint64_t request_id;
	int level;
	uint64_t *purged;
	size_t npurged;
};

static struct rvd_conn *conn_by_id(struct rvd_daemon *d, uint64_t id)
{
	for (struct rvd_conn *c = d->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static struct admin_wait *admin_wait_new(struct rvd_daemon *d, struct rvd_conn *c,
					 const Rearview__AdminResponse *resp)
{
	struct admin_wait *w = calloc(1, sizeof(*w));

	if (w) {
		w->d = d;
		w->conn_id = c->id;
		w->request_id = resp->request_id;
	}
	return w;
}

static void admin_wait_free(struct admin_wait *w)
{
	if (w)
		free(w->purged);
	free(w);
}

/* Submits a policy job whose callback answers the admin peer. */
static int admin_async(struct rvd_daemon *d, struct rvd_conn *c, Rearview__AdminResponse *resp,
		       struct rvd_enforce_job *j, struct admin_wait *w, rvd_spool_cb cb)
{
	if (!j || !w) {
		rvd_enforce_job_free(j);
		admin_wait_free(w);
		return send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	}
	j->data = w;
	if (enforce_submit(d, j, cb) < 0) {
		admin_wait_free(w);
		return send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	}
	return 0;
}

static void consent_purged_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct admin_wait *w = j->data;
	struct rvd_daemon *d = w->d;
	struct rvd_conn *c = conn_by_id(d, w->conn_id);
	Rearview__AdminResponse resp = REARVIEW__ADMIN_RESPONSE__INIT;
	Rearview__ConsentChange cc = REARVIEW__CONSENT_CHANGE__INIT;

	if (status < 0 || j->status < 0)
		note_error(d, "policy: releasing purged reservations: %s",
			   strerror(-(status < 0 ? status : j->status)));
	rvd_enforce_done(j);
	if (c) {
		resp.request_id = w->request_id;
		cc.level = (Rearview__ConsentLevel)w->level;
		cc.purged = w->purged;
		cc.n_purged = w->npurged;
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CONSENT;
		resp.consent = &cc;
		admin_reply(c, &resp);
	}
	admin_wait_free(w);
	rvd_enforce_job_free(j);
}

static void purge_done_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	if (status < 0)
		note_error(data, "spool: purging capture %" PRIu64 ": %s", id, strerror(-status));
}

/*
 * Consent lowered from `from` to `level`: every capture still holding a
 * file whose keeping or upload the new level forbids (rvp_consent_purge) is
 * purged; the ledger releases the matching reservations.  The answer goes
 * out after both, in job order, so the purge is durable when it is read.
 */
static int consent_lowered(struct rvd_daemon *d, struct rvd_conn *c, Rearview__AdminResponse *resp,
			   int from, int level)
{
	size_t n = d->spool.nrecs, k = 0, npurge;
	struct rvp_pending *items = calloc(n ? n : 1, sizeof(*items));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	uint64_t *ids = calloc(n ? n : 1, sizeof(*ids));
	struct admin_wait *w = admin_wait_new(d, c, resp);
	struct rvd_enforce_job *j = rvd_enforce_job_new(&d->enf, RVD_ENF_PURGE);
	int rc;

	if (!items || !idx || !ids || !w || !j) {
		rc = send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
		goto free_all;
	}
	for (size_t i = 0; i < n; i++) {
		const struct rvd_capture_rec *r = &d->spool.recs[i];

		if (!r->file[0])
			continue;
		items[k].item_id = r->file;
		if (r->state == RVD_SPOOL_CAPTURED || r->state == RVD_SPOOL_PENDING ||
		    r->state == RVD_SPOOL_UPLOADING)
			items[k].action = from == REARVIEW__CONSENT_LEVEL__CONSENT_FULL
						  ? RVP_ACT_UPLOAD_FULL
						  : RVP_ACT_UPLOAD_SUMMARY;
		else
			items[k].action = RVP_ACT_CAPTURE;
		ids[k++] = r->id;
	}
	npurge = rvp_consent_purge((rvp_consent)level, items, k, idx);
	for (size_t i = 0; i < npurge; i++) {
		uint64_t id = ids[idx[i]];

		if (rvd_spool_purge(&d->spool, id, "consent_purged", purge_done_cb, d) < 0) {
			note_error(d, "spool: purging capture %" PRIu64 ": out of memory", id);
			continue;
		}
		rvd_info("capture %" PRIu64 " purged: consent lowered", id);
		ids[w->npurged++] = id;
	}
	w->purged = ids;
	w->level = level;
	ids = NULL;
	j->consent = level;
	rc = admin_async(d, c, resp, j, w, consent_purged_cb);
	j = NULL;
	w = NULL;
free_all:
	rvd_enforce_job_free(j);
	admin_wait_free(w);
	free(ids);
	free(idx);
	free(items);
	return rc;
}

static int admin_consent(struct rvd_daemon *d, struct rvd_conn *c, Rearview__AdminResponse *resp,
			 int level)
{
	Rearview__ConsentChange cc = REARVIEW__CONSENT_CHANGE__INIT;
	int from = d->consent;
	char buf[8];
	int n;

	if (level < REARVIEW__CONSENT_LEVEL__CONSENT_OFF ||
	    level > REARVIEW__CONSENT_LEVEL__CONSENT_FULL)
		return send_error(c, REARVIEW__ERROR__CODE__MALFORMED, "unknown consent level");
	if (d->consent != level) {
		d->consent = level;
		n = snprintf(buf, sizeof(buf), "%d\n", level);
		if (rvd_spool_write_setting(&d->spool, "consent", buf, (size_t)n, consent_saved_cb,
					    d) < 0)
			note_error(d, "saving consent: out of memory");
		rvd_info("consent set to %d", level);
		if (level == REARVIEW__CONSENT_LEVEL__CONSENT_OFF)
			for (struct rvd_process *p = d->reg.head; p; p = p->next)
				release_all(p);
		replan(d);
		if (level < from)
			return consent_lowered(d, c, resp, from, level);
	}
	cc.level = (Rearview__ConsentLevel)d->consent;
	resp->resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CONSENT;
	resp->consent = &cc;
	return admin_reply(c, resp);
}

/* GET answers the SignedPolicy bytes; APPLY answers ok or the verification error. */
static void policy_answer_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct admin_wait *w = j->data;
	struct rvd_daemon *d = w->d;
	struct rvd_conn *c = conn_by_id(d, w->conn_id);
	Rearview__AdminResponse resp = REARVIEW__ADMIN_RESPONSE__INIT;
	char msg[128];

	if (status < 0)
		j->status = status;
	rvd_enforce_done(j);
	apply_thresholds(d);
	if (j->op == RVD_ENF_APPLY && j->verify == 0)
		rvd_info("policy version %" PRIu64 " applied", d->enf.policy_version);
	else if (j->op == RVD_ENF_APPLY)
		rvd_warn("pushed policy refused: %s", rvd_enforce_verify_name(j->verify));
	if (c) {
		resp.request_id = w->request_id;
		if (j->status < 0) {
			send_error(c, REARVIEW__ERROR__CODE__INTERNAL, strerror(-j->status));
		} else if (j->op == RVD_ENF_GET) {
			resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_POLICY;
			resp.policy.data = j->out;
			resp.policy.len = j->out_len;
			admin_reply(c, &resp);
		} else if (j->verify != 0) {
			snprintf(msg, sizeof(msg), "policy refused: %s",
				 rvd_enforce_verify_name(j->verify));
			send_error(c, REARVIEW__ERROR__CODE__UNSPECIFIED, msg);
		} else {
			resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
			resp.ok = true;
			admin_reply(c, &resp);
		}
	}
	admin_wait_free(w);
	rvd_enforce_job_free(j);
}

static void policy_fetched_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct rvd_daemon *d = sp->loop->data;

	if (status < 0)
		j->status = status;
	rvd_enforce_done(j);
	apply_thresholds(d);
	if (j->status < 0)
		note_error(d, "policy: applying a fetched policy: %s", strerror(-j->status));
	else if (j->verify != 0)
		note_error(d, "policy: fetched policy refused: %s",
			   rvd_enforce_verify_name(j->verify));
	else
		rvd_info("policy version %" PRIu64 " applied", d->enf.policy_version);
	rvd_enforce_job_free(j);
}

int rvd_daemon_apply_policy(struct rvd_daemon *d, const uint8_t *doc, size_t len)
{
	struct rvd_enforce_job *j = rvd_enforce_job_new(&d->enf, RVD_ENF_APPLY);

	if (!j || !len || !(j->doc = malloc(len))) {
		rvd_enforce_job_free(j);
		return -ENOMEM;
	}
	memcpy(j->doc, doc, len);
	j->len = len;
	return enforce_submit(d, j, policy_fetched_cb);
}

static int admin_push_policy(struct rvd_daemon *d, struct rvd_conn *c,
			     Rearview__AdminResponse *resp, const ProtobufCBinaryData *doc)
{
	struct rvd_enforce_job *j = rvd_enforce_job_new(&d->enf, RVD_ENF_APPLY);

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
	return admin_async(d, c, resp, j, admin_wait_new(d, c, resp), policy_answer_cb);
}

/* show/export of one capture: its summary read, or its file opened, on the
 * work queue in spool order (after any purge queued before it). */
struct capture_req {
	struct rvd_spool *sp;
	struct rvd_daemon *d;
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
		struct rvd_summary_job sj = {.sp = q->sp, .enf = &q->d->enf, .id = q->id};

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
	struct rvd_conn *c = conn_by_id(q->d, q->conn_id);
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
		send_error(c, REARVIEW__ERROR__CODE__NOT_FOUND, "no such capture");
	} else if (q->status < 0) {
		send_error(c, REARVIEW__ERROR__CODE__INTERNAL, strerror(-q->status));
	} else if (q->export) {
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CAPTURE_FILE;
		rc = rvd_conn_send_fd(c, &resp.base, q->fd);
		if (rc == -EBUSY || rc == -EAGAIN)
			send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "admin peer is busy");
	} else if (!(sum = rearview__summary__unpack(NULL, q->len, q->buf))) {
		send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "stored summary is damaged");
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
static int admin_show_export(struct rvd_daemon *d, struct rvd_conn *c,
			     Rearview__AdminResponse *resp, uint64_t id, bool export)
{
	const struct rvd_capture_rec *r = rvd_spool_find(&d->spool, id);
	Rearview__CaptureInfo ci;
	Rearview__Anomaly apb;
	struct capture_req *q;

	if (!r || d->consent <= REARVIEW__CONSENT_LEVEL__CONSENT_OFF ||
	    !strcmp(r->reason, "consent_purged") || (export && !r->file[0]))
		return send_error(c, REARVIEW__ERROR__CODE__NOT_FOUND, "no such capture");
	if (!export && !r->has_summary && !r->file[0]) {
		capture_to_pb(r, &ci, &apb);
		resp->resp_case = REARVIEW__ADMIN_RESPONSE__RESP_CAPTURE;
		resp->capture = &ci;
		return admin_reply(c, resp);
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	q->sp = &d->spool;
	q->d = d;
	q->conn_id = c->id;
	q->request_id = resp->request_id;
	q->id = id;
	q->export = export;
	q->compute = !export && !r->has_summary;
	q->fd = -1;
	snprintf(q->file, sizeof(q->file), "%s", r->file);
	if (rvd_spool_run(&d->spool, capture_req_work, q, capture_req_cb, q) < 0) {
		free(q);
		return send_error(c, REARVIEW__ERROR__CODE__INTERNAL, "out of memory");
	}
	return 0;
}

static int on_admin_frame(struct rvd_conn *c, const uint8_t *payload, uint32_t len)
{
	struct rvd_daemon *d = c->poll.loop->data;
	Rearview__AdminRequest *q = rearview__admin_request__unpack(NULL, len, payload);
	Rearview__AdminResponse resp = REARVIEW__ADMIN_RESPONSE__INIT;
	struct rvd_anomaly a;
	struct rvd_process *p;
	int rc = 0;

	if (!q) {
		send_error(c, REARVIEW__ERROR__CODE__MALFORMED, "undecodable AdminRequest");
		rvd_conn_close(c, "undecodable AdminRequest");
		return -EBADMSG;
	}
	resp.request_id = q->request_id;
	switch (q->req_case) {
	case REARVIEW__ADMIN_REQUEST__REQ_SET_CONSENT:
		rc = admin_consent(d, c, &resp, q->set_consent);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_GET_STATUS:
		rc = admin_status(d, c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_LIST_CAPTURES:
		rc = admin_captures(d, c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_SHOW_CAPTURE:
		rc = admin_show_export(d, c, &resp, q->show_capture, false);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_EXPORT_CAPTURE:
		rc = admin_show_export(d, c, &resp, q->export_capture, true);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_CAPTURE_PID:
		p = rvd_registry_find(&d->reg, q->capture_pid);
		if (!p) {
			rc = send_error(c, REARVIEW__ERROR__CODE__NOT_FOUND,
					"no registered process with that pid");
			break;
		}
		memset(&a, 0, sizeof(a));
		a.kind = RVD_ANOMALY_MANUAL;
		a.severity = 50;
		a.pid = p->pid;
		a.monotonic_ns = uv_hrtime();
		snprintf(a.detail, sizeof(a.detail), "rvctl capture");
		rvd_daemon_anomaly(d, &a);
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
		resp.ok = true;
		rc = admin_reply(c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_FOREGROUND_PID:
		rvd_info("foreground (admin): pid %d", (int)q->foreground_pid);
		rvd_registry_foreground(&d->reg, q->foreground_pid, 0);
		replan(d);
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
		resp.ok = true;
		rc = admin_reply(c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_EVENT:
		handle_event(d, q->event);
		resp.resp_case = REARVIEW__ADMIN_RESPONSE__RESP_OK;
		resp.ok = true;
		rc = admin_reply(c, &resp);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_GET_POLICY:
		rc = admin_async(d, c, &resp, rvd_enforce_job_new(&d->enf, RVD_ENF_GET),
				 admin_wait_new(d, c, &resp), policy_answer_cb);
		break;
	case REARVIEW__ADMIN_REQUEST__REQ_PUSH_POLICY:
		rc = admin_push_policy(d, c, &resp, &q->push_policy);
		break;
	default:
		rc = send_error(c, REARVIEW__ERROR__CODE__UNSPECIFIED,
				"not supported by this build of rearviewd");
		break;
	}
	rearview__admin_request__free_unpacked(q, NULL);
	return rc == -EPIPE ? rc : 0;
}

/* ---- peers and listeners ------------------------------------------------- */

static void stream_error_cb(struct rvd_conn *c, int err)
{
	if (err == -EPROTONOSUPPORT)
		send_error(c, REARVIEW__ERROR__CODE__UNSUPPORTED_VERSION, "unsupported version");
	else if (err == -EMSGSIZE)
		send_error(c, REARVIEW__ERROR__CODE__TOO_LARGE, "frame too large");
	else
		send_error(c, REARVIEW__ERROR__CODE__MALFORMED, rv_frame_strerror(err));
}

static void conn_closed_cb(struct rvd_conn *c)
{
	struct rvd_daemon *d = c->poll.loop->data;
	struct rvd_process *p = c->data;

	if (p) {
		struct rvd_pending_capture *pc;

		rvd_info("pid %d unregistered", (int)p->pid);
		while ((pc = pending_find(d, p->pid, 0)) != NULL)
			pending_drop(d, pc);
		rvd_registry_remove(&d->reg, p);
		if (!d->stopping)
			replan(d);
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		d->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	d->nconns--;
	free(c);
}

static bool in_group(const struct ucred *cr, int fd, gid_t gid)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (gid == (gid_t)-1)
		return false;
	if (cr->gid == gid)
		return true;
	/* Supplementary groups of the peer (Linux ≥ 4.13). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static bool peer_allowed(struct rvd_daemon *d, struct rvd_conn *c, int which)
{
	if (which == SOCK_CONTROL)
		return true; /* anyone may be traced; identity is checked per message */
	if (c->cred.uid == 0 || c->cred.uid == geteuid())
		return true;
	return in_group(&c->cred, c->fd,
			which == SOCK_ADMIN ? d->cfg.settings_gid : d->cfg.events_gid);
}

static void accept_cb(uv_poll_t *h, int status, int events);

static void accept_resume_cb(uv_timer_t *t)
{
	struct rvd_daemon *d = t->data;

	for (int i = 0; i < 3 && !d->stopping; i++)
		uv_poll_start(&d->listen_poll[i], UV_READABLE, accept_cb);
}

static void accept_cb(uv_poll_t *h, int status, int events)
{
	struct rvd_daemon *d = h->loop->data;
	int which = (int)(h - d->listen_poll);

	for (int round = 0; round < 16 && status == 0; round++) {
		struct rvd_conn *c;
		int fd = accept4(d->listen_fd[which], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* The listener stays readable: without a pause this would spin. */
				note_error(d, "%s: accept: %s; pausing accepts for 1 s",
					   sock_names[which], strerror(errno));
				for (int i = 0; i < 3; i++)
					uv_poll_stop(&d->listen_poll[i]);
				uv_timer_start(&d->accept_backoff, accept_resume_cb, 1000, 0);
			} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				rvd_warn("%s: accept: %s", sock_names[which], strerror(errno));
			}
			return;
		}
		if (d->nconns >= d->cfg.max_peers) {
			rvd_warn("%s: too many peers, refusing one", sock_names[which]);
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->id = ++d->next_conn_id;
		c->on_close = conn_closed_cb;
		c->on_stream_error = stream_error_cb;
		c->fds_allowed = which == SOCK_CONTROL;
		c->on_frame = which == SOCK_CONTROL  ? on_control_frame
			      : which == SOCK_EVENTS ? on_event_frame
						     : on_admin_frame;
		if (rvd_conn_start(c, d->loop, fd, sock_channels[which], d->cfg.max_frame) < 0) {
			free(c);
			continue;
		}
		c->next = d->conns;
		if (d->conns)
			d->conns->prev = c;
		d->conns = c;
		d->nconns++;
		if (!peer_allowed(d, c, which)) {
			send_error(c, REARVIEW__ERROR__CODE__DENIED, "access denied");
			rvd_conn_close(c, "access denied");
		}
	}
}

/* Refuses to start over a socket another rearviewd still answers on. */
static int bind_socket(struct rvd_daemon *d, int which, unsigned mode, gid_t gid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, rc;

	rc = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", d->cfg.run_dir, sock_names[which]);
	if (rc < 0 || (size_t)rc >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		rvd_err("%s: another rearviewd is running", sa.sun_path);
		return -EADDRINUSE;
	}
	close(fd);
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    chmod(sa.sun_path, mode) < 0 ||
	    (gid != (gid_t)-1 && chown(sa.sun_path, (uid_t)-1, gid) < 0)) {
		rc = -errno;
		rvd_err("%s: %s", sa.sun_path, strerror(-rc));
		close(fd);
		return rc;
	}
	d->listen_fd[which] = fd;
	return 0;
}

/* ---- thermal poll ------------------------------------------------------ */

static void thermal_work_cb(uv_work_t *w)
{
	struct rvd_daemon *d = w->data;

	d->thermal_status = rvd_thermal_read(d->cfg.thermal_root, &d->thermal_snap);
}

static void thermal_after_cb(uv_work_t *w, int status)
{
	struct rvd_daemon *d = w->data;
	struct rvd_anomaly a;

	d->thermal_busy = false;
	if (status < 0 || d->stopping)
		return;
	if (d->thermal_status < 0) {
		rvd_debug("thermal: %s", strerror(-d->thermal_status));
		return;
	}
	/* A distributed policy's trip replaces the zones' own trip points. */
	d->thermal_snap.trip_mc = d->enf.thr.thermal_trip_mc;
	if (rvd_thermal_feed(&d->throttling, &d->thermal_snap, uv_hrtime(), &a) == 1)
		rvd_daemon_anomaly(d, &a);
}

static void thermal_timer_cb(uv_timer_t *t)
{
	struct rvd_daemon *d = t->data;

	if (d->thermal_busy)
		return; /* the previous read is still running: skip a beat */
	d->thermal_busy = true;
	d->thermal_work.data = d;
	if (uv_queue_work(d->loop, &d->thermal_work, thermal_work_cb, thermal_after_cb) < 0)
		d->thermal_busy = false;
}

/* ---- lifecycle ----------------------------------------------------------- */

static void signal_cb(uv_signal_t *s, int signum)
{
	struct rvd_daemon *d = s->data;

	rvd_info("signal %d: shutting down", signum);
	rvd_daemon_stop(d);
}

static void spool_open_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_daemon *d = data;

	if (status < 0) {
		rvd_err("spool: cannot open %s: %s", sp->dir, strerror(-status));
		d->exit_status = 1;
		rvd_daemon_stop(d);
		return;
	}
	/* Captures stored before a crash but never gated go through the gate now. */
	for (size_t i = 0; i < sp->nrecs; i++)
		if (sp->recs[i].state == RVD_SPOOL_CAPTURED)
			gate_stored(d, sp->recs[i].id);
}

/* Runs after the spool opened (job order): then the daemon is ready. */
static void enforce_open_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_enforce_job *j = data;
	struct rvd_daemon *d = sp->loop->data;

	rvd_enforce_done(j);
	if (status < 0 || j->status < 0) {
		rvd_err("policy: cannot open the store or the ledger: %s",
			strerror(-(status < 0 ? status : j->status)));
		rvd_enforce_job_free(j);
		d->exit_status = 1;
		rvd_daemon_stop(d);
		return;
	}
	rvd_enforce_job_free(j);
	apply_thresholds(d);
	if (d->stopping || !sp->open)
		return;
	/* Captures whose summary a crash interrupted get it now. */
	for (size_t i = 0; i < sp->nrecs; i++)
		if (sp->recs[i].state == RVD_SPOOL_PENDING ||
		    sp->recs[i].state == RVD_SPOOL_CAPTURED)
			summarize(d, &sp->recs[i]);
	d->ready = true;
	if (d->up)
		rvd_upload_start(d->up);
	rvd_info("ready: %zu captures in the spool, policy version %" PRIu64 ", quota left %u",
		 sp->nrecs, d->enf.policy_version, d->enf.quota_left);
	notify("READY=1");
}

static int load_consent(struct rvd_daemon *d)
{
	char path[320], buf[16], *end;
	ssize_t n;
	long v;
	int fd;

	d->consent = d->cfg.consent_default;
	snprintf(path, sizeof(path), "%s/consent", d->cfg.state_dir);
	/* One tiny read at startup, before the loop runs. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	v = strtol(buf, &end, 10);
	if (end != buf && v >= REARVIEW__CONSENT_LEVEL__CONSENT_OFF &&
	    v <= REARVIEW__CONSENT_LEVEL__CONSENT_FULL)
		d->consent = (int)v;
	else
		rvd_warn("%s: ignoring a bad consent value", path);
	return 0;
}

int rvd_daemon_start(struct rvd_daemon *d, uv_loop_t *loop, const struct rvd_config *cfg)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->loop = loop;
	loop->data = d;
	d->cfg = *cfg;
	d->cfg_file = *cfg;
	rvd_enforce_init(&d->enf, cfg->state_dir, cfg->policy_key);
	for (int i = 0; i < 3; i++)
		d->listen_fd[i] = -1;
	rvd_registry_init(&d->reg);
	rvd_spool_init(&d->spool, loop, cfg->state_dir);
	uv_signal_init(loop, &d->sig_term);
	uv_signal_init(loop, &d->sig_int);
	uv_timer_init(loop, &d->thermal_timer);
	uv_timer_init(loop, &d->accept_backoff);
	d->sig_term.data = d->sig_int.data = d->thermal_timer.data = d->accept_backoff.data = d;
	uv_signal_start(&d->sig_term, signal_cb, SIGTERM);
	uv_signal_start(&d->sig_int, signal_cb, SIGINT);

	if ((mkdir(cfg->run_dir, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(cfg->state_dir, 0700) < 0 && errno != EEXIST)) {
		rc = -errno;
		rvd_err("creating directories: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = load_consent(d)) < 0) {
		rvd_err("reading consent: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = bind_socket(d, SOCK_CONTROL, cfg->control_mode, (gid_t)-1)) < 0 ||
	    (rc = bind_socket(d, SOCK_EVENTS, cfg->events_mode, cfg->events_gid)) < 0 ||
	    (rc = bind_socket(d, SOCK_ADMIN, cfg->admin_mode, cfg->settings_gid)) < 0)
		goto fail;
	for (int i = 0; i < 3; i++) {
		uv_poll_init(loop, &d->listen_poll[i], d->listen_fd[i]);
		uv_poll_start(&d->listen_poll[i], UV_READABLE, accept_cb);
	}
	d->listening = true;
	if (cfg->server_url[0]) {
		if ((rc = rvd_upload_new(d, &d->up)) < 0) {
			rvd_err("uploader: %s", strerror(-rc));
			goto fail;
		}
		d->seams.pending = rvd_upload_pending;
		d->seams.ctx = d->up;
	}
	if ((rc = rvd_spool_open(&d->spool, spool_open_cb, d)) < 0 ||
	    (rc = enforce_submit(d, rvd_enforce_job_new(&d->enf, RVD_ENF_OPEN), enforce_open_cb)) <
		    0)
		goto fail;
	if (cfg->thermal_poll_ms)
		uv_timer_start(&d->thermal_timer, thermal_timer_cb, cfg->thermal_poll_ms,
			       cfg->thermal_poll_ms);
	rvd_info("listening in %s, state in %s", cfg->run_dir, cfg->state_dir);
	return 0;
fail:
	d->exit_status = 1;
	rvd_daemon_stop(d);
	return rc;
}

static void spool_closed_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_daemon *d = data;

	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
}

void rvd_daemon_stop(struct rvd_daemon *d)
{
	char path[RVD_PATH_MAX + 16];

	if (d->stopping)
		return;
	d->stopping = true;
	notify("STOPPING=1");
	for (int i = 0; i < 3; i++) {
		if (d->listen_fd[i] < 0)
			continue;
		if (d->listening)
			uv_close((uv_handle_t *)&d->listen_poll[i], NULL);
		/* uv_poll does not own the descriptor; closed after the handle, see release. */
		snprintf(path, sizeof(path), "%s/%s", d->cfg.run_dir, sock_names[i]);
		unlink(path);
	}
	uv_close((uv_handle_t *)&d->thermal_timer, NULL);
	uv_close((uv_handle_t *)&d->accept_backoff, NULL);
	rvd_upload_stop(d->up);
	while (d->pending)
		pending_drop(d, d->pending);
	for (struct rvd_conn *c = d->conns; c; c = c->next)
		rvd_conn_close(c, NULL);
	if (enforce_submit(d, rvd_enforce_job_new(&d->enf, RVD_ENF_CLOSE), NULL) < 0)
		rvd_err("policy: cannot close the ledger: out of memory");
	/* The close job runs after every queued spool job: nothing acknowledged is cut short. */
	if (rvd_spool_close(&d->spool, spool_closed_cb, d) < 0)
		spool_closed_cb(&d->spool, 0, 0, d);
}

void rvd_daemon_release(struct rvd_daemon *d)
{
	for (int i = 0; i < 3; i++)
		if (d->listen_fd[i] >= 0)
			close(d->listen_fd[i]);
	rvd_registry_release(&d->reg);
	rvd_spool_release(&d->spool);
	rvd_upload_free(d->up);
	d->up = NULL;
}
