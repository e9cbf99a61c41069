/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon.c — rearviewd's core: the loop, the listeners and peers,
 * control.sock and events.sock, the tracing plan, the thermal poll, the
 * policy jobs and the lifecycle.  The capture flow (capture.c), admin.sock
 * (admin.c) and the uploader (upload.c) get the daemon's state only
 * through the tables envs_init builds; struct rvd_daemon is private here.
 *
 * Invariants:
 *  - the loop thread never blocks: socket I/O is non-blocking, sqlite,
 *    file writes, fsyncs and sysfs reads go to the work queue (spool.c,
 *    thermal work below);
 *  - a control peer speaks only for the pid SO_PEERCRED gave us: the first
 *    frame must be Register{pid = peer pid}, and every tid it names must be
 *    a task of that pid;
 *  - a control peer speaks only for an app its kernel identity owns
 *    (identity.h: uid, executable and unit read through a pidfd taken at
 *    accept, checked against the operator's app map); p->app_id and p->exe
 *    come from that check, never from the message alone;
 *  - the consent changes only through env_set_consent (called by admin.c's
 *    rvd_admin_set_consent for admin.sock and D-Bus alike), which tells the
 *    bus;
 *  - every accepted peer is on d->conns (nconns of them) until its close
 *    callback; listener i is polled by listen_poll[i] on listen_fd[i].
 */
#include "daemon.h"
#include "activate.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "anomaly.h"
#include "capture.h"
#include "conn.h"
#include "dbus.h"
#include "enforce.h"
#include "identity.h"
#include "jankcount.h"
#include "log.h"
#include "offcpu.h"
#include "registry.h"
#include "sandbox.h"
#include "summary.h"
#include "tracectl.h"
#include "upload.h"
#include "rearview/control.pb-c.h"
#include "rearview/event.pb-c.h"

enum { SOCK_CONTROL, SOCK_EVENTS, SOCK_ADMIN };

static const char *const sock_names[] = {"control.sock", "events.sock", "admin.sock"};
/* Their FileDescriptorName= in the .socket units (socket activation). */
static const char *const sock_fdnames[] = {"control", "events", "admin"};
static const uint8_t sock_channels[] = {RV_CHANNEL_CONTROL, RV_CHANNEL_EVENT, RV_CHANNEL_ADMIN};

/* Private: other files get functions and tables (admin.h, upload.h). */
/* Deadlines of the sandboxed parser, per capture: the checks are one hash
 * pass (1.7 ms for 32 MiB); a summary of the largest capture takes
 * seconds on a loaded machine.  Past them the worker is killed and the
 * capture refused (checks) or left without a summary. */
#define RVD_PARSE_CHECK_MS   10000
#define RVD_PARSE_SUMMARY_MS 120000
/* The jank counts' file in the state directory (written every [jank]
 * counts_flush_ms when they changed). */
#define JANK_FILE "jank.counts"
/* How long a start waits for its parser workers to be ready. */
#define RVD_PARSE_READY_MS 10000
/* With the worker's test hooks on (sandbox.h), this variable sets the
 * checks' deadline in ms: a test holds a check hung for as long as it
 * needs, whatever the machine's speed. */
#define RVD_PARSE_CHECK_MS_ENV "REARVIEWD_PARSER_CHECK_MS"

struct rvd_daemon {
	uv_loop_t *loop; /* borrowed */
	struct rvd_config cfg;
	struct rvd_config cfg_file; /* as configured; the policy's thresholds override cfg */
	struct rvd_enforce enf;
	struct rvd_seams seams;
	/* The sandboxed capture parsers: checks (capture.c, one check each
	 * at a time on the thread pool), summaries (the spool's job queue). */
	struct rvd_sandbox parse_check[RVD_CHECK_WORKERS], parse_summary;
	int lock_fd; /* RUN/rearviewd.lock, flock'd for our life; -1 */
	int listen_fd[3];
	bool activated[3]; /* listen_fd[i] came from systemd: its file is systemd's */
	uv_poll_t listen_poll[3];
	uv_signal_t sig_term, sig_int;
	uv_timer_t accept_backoff; /* out of descriptors: stop accepting for a while */
	uv_timer_t register_sweep; /* drops control peers that never register */
	uv_timer_t thermal_timer;
	uv_work_t thermal_work;
	struct rvd_thermal_snapshot thermal_snap;
	int thermal_status;
	bool thermal_busy, throttling;
	struct rvd_conn *conns;
	unsigned nconns;
	struct rvd_peer_limits limits[3]; /* per listener: admission in rvd_conn_admit */
	uint64_t next_conn_id;
	struct rvd_registry reg;
	struct rvd_spool spool;
	struct rvd_corr_state corr;
	int consent;
	uint64_t upload_policy_version; /* the policy the uploader last heard of */
	struct rvd_capture_flow cap;
	struct rvd_uploader *up;      /* NULL: no [upload] server_url */
	struct rvd_upload_env up_env; /* handed to the uploader */
	struct rvd_admin_env admin;   /* handed to admin.sock and D-Bus */
	struct rvd_dbus *bus;	      /* NULL: no system bus, or [dbus] enabled = no */
	struct rvd_app_map apps;      /* [identity] apps_dir, loaded at start */
	uint64_t identity_refused;    /* Registers refused for their app id */
	/* Frames and late frames per app and day, traced or not, written to
	 * <state_dir>/JANK_FILE every cfg.jank_counts_flush_ms when they
	 * changed, and sent to the server then (the uploader). */
	struct rvd_jank_counts jank;
	struct rvd_jank_pids jank_pids;
	uv_timer_t jank_timer;
	char last_errors[RVD_LAST_ERRORS][RVD_ERROR_LEN];
	unsigned nerrors;
	bool stopping, ready, listening;
	int exit_status;
};

static void note_error(struct rvd_daemon *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Keeps the first RVD_ERROR_LEN bytes of `msg` among the last errors and
 * logs all of it. */
static void note_error_text(struct rvd_daemon *d, const char *msg)
{
	char *slot = d->last_errors[d->nerrors % RVD_LAST_ERRORS];
	size_t n = strnlen(msg, sizeof(d->last_errors[0]) - 1);

	memcpy(slot, msg, n);
	slot[n] = '\0';
	d->nerrors++;
	rvd_warn("%s", msg);
}

static void note_error(struct rvd_daemon *d, const char *fmt, ...)
{
	char msg[RVD_ERROR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	note_error_text(d, msg);
}

/* ---- tracing plan ---------------------------------------------------------- */

static void trace_cb(struct rvd_process *p, pid_t tid, bool start, void *data)
{
	(void)data;
	rvd_tracectl_send(p, tid, start);
	if (start)
		p->traced_since_ns = uv_hrtime();
	/* The traced thread's perf events follow the plan (off-CPU records). */
	if (start || (p->offcpu && tid == rvd_offcpu_tid(p->offcpu)))
		rvd_offcpu_follow(&p->offcpu, start ? tid : 0);
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

		if (t->tracing && rvd_registry_adopt(&d->reg, p, t->tid, n)) {
			rvd_info("pid %d: took over tracing tid %d", (int)p->pid, (int)t->tid);
			rvd_offcpu_follow(&p->offcpu, t->tid);
		} else if (t->tracing || t->buffer_bytes)
			others = true;
	}
	if (others && !p->traced_tid) {
		rvd_tracectl_release_all(p);
		return;
	}
	for (size_t i = 0; others && i < p->nthreads; i++) {
		const struct rvd_thread *t = &p->threads[i];

		if (t->tid != p->traced_tid && (t->tracing || t->buffer_bytes))
			trace_cb(p, t->tid, false, d);
	}
}

/* At consent off, every process still reporting a ring is told to release
 * them all (again, until its report shows none: a report can lag). */
static void replan(struct rvd_daemon *d)
{
	bool off = d->consent == REARVIEW__CONSENT_LEVEL__CONSENT_OFF;

	for (struct rvd_process *p = d->reg.head; off && p; p = p->next)
		if (rvd_tracectl_holds_rings(p))
			rvd_tracectl_release_all(p);
	rvd_registry_plan(&d->reg, off ? 0 : d->cfg.traced_apps, trace_cb, d);
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
	/* Another document in force: its upload conditions may differ. */
	if (d->enf.policy_version != d->upload_policy_version) {
		d->upload_policy_version = d->enf.policy_version;
		rvd_upload_policy_changed(d->up);
	}
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

/* ---- control.sock ------------------------------------------------------------ */

/* Refuses a Register for its identity: counted, logged, and the peer
 * closed.  Returns -EPERM. */
static int refuse_identity(struct rvd_daemon *d, struct rvd_conn *c, const char *why)
{
	char msg[RVD_PATH_MAX + 256];

	d->identity_refused++;
	snprintf(msg, sizeof(msg), "pid %d (uid %u): Register refused: %s", (int)c->cred.pid,
		 (unsigned)c->cred.uid, why);
	note_error_text(d, msg);
	rvd_conn_send_error(c, REARVIEW__ERROR__CODE__DENIED, why);
	rvd_conn_close(c, "Register refused for its identity");
	return -EPERM;
}

/* Which app the peer speaks for, from its kernel identity: 0 with
 * *id and app_id filled, or -EPERM (refused, counted, closed). */
static int verify_identity(struct rvd_daemon *d, struct rvd_conn *c, const Rearview__Register *r,
			   struct rvd_identity *id, char *app_id, size_t cap)
{
	const char *declared = r->app && r->app->app_id ? r->app->app_id : NULL;
	char why[RVD_PATH_MAX + 128];
	enum rvd_app_verdict v;
	int rc;

	rc = rvd_identity_read(c->pidfd, &c->cred, id);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	if (rc < 0) {
		snprintf(why, sizeof(why), "identity unverifiable: %s",
			 rc == -ESRCH	? "the process that connected is gone"
			 : rc == -EPERM ? "its credentials changed since it connected"
					: strerror(-rc));
		return refuse_identity(d, c, why);
	}
	v = rvd_app_resolve(&d->apps, d->cfg.unlisted, id, declared, why, sizeof(why));
	if (v == RVD_APP_REFUSED)
		return refuse_identity(d, c, why);
	if (v == RVD_APP_QUALIFIED)
		rvd_info("pid %d: app id %s is not in the app map: speaking as %s", (int)id->pid,
			 declared && *declared ? declared : "(none declared)", why);
	assert(strlen(why) < cap);
	memcpy(app_id, why, strlen(why) + 1);
	return 0;
}

static int on_register(struct rvd_daemon *d, struct rvd_conn *c, const Rearview__Register *r)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__TraceConfig tc = REARVIEW__TRACE_CONFIG__INIT;
	struct rvd_identity id;
	char app_id[RVD_APP_ID_MAX];
	struct rvd_process *p;
	int err = 0, rc;

	if (r->pid != c->cred.pid) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__DENIED,
				    "a process speaks only for itself");
		rvd_conn_close(c, "Register for another pid");
		return -EPERM;
	}
	if ((rc = verify_identity(d, c, r, &id, app_id, sizeof(app_id))) < 0)
		return rc;
	p = rvd_registry_add(&d->reg, r->pid, &err);
	if (!p) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__BUSY, "already registered");
		rvd_conn_close(c, err == -EEXIST ? "pid already registered" : "out of memory");
		return err;
	}
	p->uid = c->cred.uid;
	p->conn = c;
	c->data = p;
	/* What the kernel said, not what the message said. */
	snprintf(p->exe, sizeof(p->exe), "%.127s", id.exe[0] ? id.exe : "?");
	snprintf(p->app_id, sizeof(p->app_id), "%s", app_id);
	/* The version its frames count under; an older tracer sends none, and
	 * one that is no printable token is ignored, not refused. */
	if (r->app && rvd_jankc_version_ok(r->app->version))
		snprintf(p->app_version, sizeof(p->app_version), "%s", r->app->version);
	rc = rvd_tracectl_set_threads(p, r->threads, r->n_threads);
	if (rc < 0) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__DENIED,
				    "thread list names foreign tids");
		rvd_conn_close(c, "Register names threads that are not its own");
		return rc;
	}
	rvd_info("pid %d registered (%s, uid %u, %zu threads)", (int)p->pid, p->app_id,
		 (unsigned)p->uid, p->nthreads);
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
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED,
				    "undecodable ControlMessage");
		rvd_conn_close(c, "undecodable ControlMessage");
		return -EBADMSG;
	}
	if (!p && m->msg_case != REARVIEW__CONTROL_MESSAGE__MSG_REG) {
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__DENIED, "Register first");
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
		rc = rvd_tracectl_set_threads(p, m->threads->threads, m->threads->n_threads);
		if (rc < 0)
			rvd_conn_close(c, "ThreadsChanged names threads that are not its own");
		else
			replan(d);
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE_READY:
		rc = rvd_capture_ready(&d->cap, c, p, m->capture_ready);
		if (rc < 0)
			rvd_conn_close(c, "bad CaptureReady");
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_ERROR:
		note_error(d, "pid %d reports error %d: %s", (int)p->pid, m->error->code,
			   m->error->message ? m->error->message : "");
		break;
	default:
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED, "unexpected message");
		rvd_conn_close(c, "unexpected control message");
		rc = -EBADMSG;
		break;
	}
free_msg:
	rearview__control_message__free_unpacked(m, NULL);
	return rc;
}

/* ---- events.sock (and admin-injected events) ----------------------------- */

/* Counts one frame of pid for its app (its registered id, else its
 * /proc comm) and version (as it declared it, else "") on today's UTC
 * day. */
static void count_frame(struct rvd_daemon *d, const struct rvd_process *p, pid_t pid, bool late)
{
	const char *app = p ? p->app_id : rvd_jankc_app_of(&d->jank_pids, pid);

	if (!app[0])
		return; /* the process is gone: nothing names it */
	rvd_jankc_add(&d->jank, app, p ? p->app_version : rvd_jankc_version_of(&d->jank_pids, pid),
		      rvd_jankc_day((int64_t)time(NULL)), late);
}

/* AppVersion from peer (0: an admin-injected event, trusted): a process
 * declares only its own version. */
static const char *app_version(struct rvd_daemon *d, const Rearview__AppVersion *v, pid_t peer)
{
	struct rvd_process *p;

	if (peer && v->pid != peer)
		return "AppVersion for another pid";
	if (!rvd_jankc_version_ok(v->version))
		return "AppVersion: 1..31 bytes of printable ASCII without space";
	if ((p = rvd_registry_find(&d->reg, v->pid))) {
		snprintf(p->app_version, sizeof(p->app_version), "%s", v->version);
		return NULL;
	}
	if (rvd_jankc_set_version(&d->jank_pids, v->pid, v->version) < 0)
		rvd_debug("AppVersion of pid %d: the process is gone", (int)v->pid);
	return NULL;
}

static void jank_saved_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	(void)sp;
	(void)id;
	(void)data;
	if (status < 0)
		rvd_warn("jank counts: writing %s: %s", JANK_FILE, strerror(-status));
}

/* Writes the counts (a spool settings job: tmp, fsync, rename) if they
 * changed since the last write. */
static void jank_flush(struct rvd_daemon *d)
{
	char buf[RVD_JANKC_FILE_MAX];
	long n;

	if (!d->jank.dirty || !d->spool.open)
		return;
	n = rvd_jankc_format(&d->jank, buf, sizeof(buf));
	assert(n > 0); /* RVD_JANKC_FILE_MAX always holds the table */
	if (rvd_spool_write_setting(&d->spool, JANK_FILE, buf, (size_t)n, jank_saved_cb, d) < 0) {
		rvd_warn("jank counts: out of memory writing %s", JANK_FILE);
		d->jank.dirty = true;
	}
}

static void jank_timer_cb(uv_timer_t *t)
{
	struct rvd_daemon *d = t->data;

	jank_flush(d);
	rvd_upload_jank(d->up);
}

/* Reads <state_dir>/JANK_FILE at start (before the loop runs); a damaged
 * file is reported and counting starts afresh. */
static void load_jank(struct rvd_daemon *d)
{
	char path[RVD_PATH_MAX + 16], err[128];
	char *buf = malloc(RVD_JANKC_FILE_MAX + 1);
	ssize_t n;
	int fd;

	rvd_jankc_init(&d->jank);
	if (!buf)
		return;
	snprintf(path, sizeof(path), "%s/%s", d->cfg.state_dir, JANK_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, RVD_JANKC_FILE_MAX + 1);
		close(fd);
		if (n > (ssize_t)RVD_JANKC_FILE_MAX)
			rvd_warn("%s: larger than %u bytes: ignored", path, RVD_JANKC_FILE_MAX);
		else if (n >= 0 && rvd_jankc_parse(&d->jank, buf, (size_t)n, err, sizeof(err)) < 0)
			rvd_warn("%s: ignored: %s", path, err);
	}
	free(buf);
}

/* Feeds one event from peer (its pid; 0: injected by an admin) to the
 * detectors.  NULL, or why its times cannot happen (then nothing is fed). */
static const char *handle_event(struct rvd_daemon *d, const Rearview__EventMessage *e, pid_t peer)
{
	struct rvd_jank_config jc = {d->cfg.jank_frames, d->cfg.jank_budget_ns};
	struct rvd_corr_config cc = {d->cfg.corr_metric, d->cfg.corr_threshold,
				     d->cfg.corr_window_ns};
	struct rvd_anomaly a, corr;
	struct rvd_process *p;
	const char *why;
	bool late;

	why = rvd_event_refusal(e, uv_hrtime());
	if (why)
		return why;
	switch (e->msg_case) {
	case REARVIEW__EVENT_MESSAGE__MSG_FRAME:
		p = rvd_registry_find(&d->reg, e->frame->pid);
		late = rvd_frame_late(e->frame->frame_start_ns, e->frame->frame_end_ns,
				      e->frame->frame_deadline_ns, jc.budget_ns);
		/* Every app's frames count, traced or not. */
		count_frame(d, p, e->frame->pid, late);
		if (!p) {
			rvd_debug("frame for unregistered pid %d", (int)e->frame->pid);
			return NULL;
		}
		rvd_frames_push(&p->frames,
				&(struct rvd_frame){.start_ns = e->frame->frame_start_ns,
						    .end_ns = e->frame->frame_end_ns,
						    .deadline_ns = e->frame->frame_deadline_ns,
						    .tid = (uint32_t)e->frame->tid,
						    .flags = late ? RVD_FRAME_LATE : 0});
		/* A frame with a deadline is late when it ends after it. */
		if (e->frame->frame_deadline_ns)
			jc.budget_ns = e->frame->frame_deadline_ns - e->frame->frame_start_ns;
		if (rvd_jank_feed(&jc, &p->jank, p->pid, e->frame->tid, e->frame->frame_start_ns,
				  e->frame->frame_end_ns, &a) != 1)
			return NULL;
		/* The correlated anomaly, when the metrics agree, replaces plain jank. */
		if (rvd_corr_check(&cc, &d->corr, &a, &corr) == 1)
			a = corr;
		rvd_capture_anomaly(&d->cap, &a);
		return NULL;
	case REARVIEW__EVENT_MESSAGE__MSG_TOUCH:
		if (rvd_touch_eval(d->cfg.touch_threshold_ns, e->touch->pid, e->touch->tid,
				   e->touch->detected_ns, e->touch->delivered_ns,
				   e->touch->responded_ns, &a) == 1)
			rvd_capture_anomaly(&d->cap, &a);
		return NULL;
	case REARVIEW__EVENT_MESSAGE__MSG_FOREGROUND:
		rvd_info("foreground: pid %d", (int)e->foreground->pid);
		rvd_registry_foreground(&d->reg, e->foreground->pid, e->foreground->ui_tid);
		replan(d);
		return NULL;
	case REARVIEW__EVENT_MESSAGE__MSG_METRIC:
		rvd_corr_sample(&cc, &d->corr, e->metric->name ? e->metric->name : "",
				e->metric->value,
				e->metric->monotonic_ns ? e->metric->monotonic_ns : uv_hrtime());
		return NULL;
	case REARVIEW__EVENT_MESSAGE__MSG_ANOMALY:
		if (rvd_anomaly_from_pb(e->anomaly, &a) < 0)
			return "invalid anomaly";
		rvd_capture_anomaly(&d->cap, &a);
		return NULL;
	case REARVIEW__EVENT_MESSAGE__MSG_APP_VERSION:
		return app_version(d, e->app_version, peer);
	default:
		return NULL;
	}
}

/* A report whose times cannot happen gets Error{MALFORMED} naming why; the
 * peer stays connected (one bad clock read is not an attack). */
static int on_event_frame(struct rvd_conn *c, const uint8_t *payload, uint32_t len)
{
	struct rvd_daemon *d = c->poll.loop->data;
	Rearview__EventMessage *e;
	const char *why;

	if (rvd_event_decode(payload, len, uv_hrtime(), &e, &why)) {
		rvd_conn_close(c, "undecodable EventMessage");
		return -EBADMSG;
	}
	if (!why)
		why = handle_event(d, e, c->cred.pid);
	rearview__event_message__free_unpacked(e, NULL);
	if (why) {
		rvd_debug("events peer pid %d: refused: %s", (int)c->cred.pid, why);
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED, why);
	}
	return 0;
}

/* ---- policy fetched by the uploader -------------------------------------- */

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
	else if (j->unchanged)
		rvd_info("policy version %" PRIu64 " already in force", d->enf.policy_version);
	else
		rvd_info("policy version %" PRIu64 " applied", d->enf.policy_version);
	rvd_enforce_job_free(j);
}

static int apply_policy(struct rvd_daemon *d, const uint8_t *doc, size_t len)
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

/* ---- the tables handed to admin.sock and the uploader --------------------- */

static struct rvd_conn *conn_by_id(void *ctx, uint64_t id)
{
	struct rvd_daemon *d = ctx;

	for (struct rvd_conn *c = d->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static int env_consent(void *ctx)
{
	return ((struct rvd_daemon *)ctx)->consent;
}

/* The one place the consent changes (admin.c's rvd_admin_set_consent,
 * whichever channel asked): every listener is told here. */
static void env_set_consent(void *ctx, int level)
{
	struct rvd_daemon *d = ctx;

	d->consent = level;
	rvd_dbus_consent_changed(d->bus);
}

static bool env_stopping(void *ctx)
{
	return ((struct rvd_daemon *)ctx)->stopping;
}

static void env_note_error(void *ctx, const char *msg)
{
	note_error(ctx, "%s", msg);
}

static void env_stats(void *ctx, struct rvd_admin_stats *st)
{
	struct rvd_daemon *d = ctx;
	unsigned ne = d->nerrors < RVD_LAST_ERRORS ? d->nerrors : RVD_LAST_ERRORS;

	st->last_freeze_latency_ns = d->cap.last_freeze_latency_ns;
	st->anomalies = d->cap.anomalies;
	st->anomalies_not_captured = d->cap.captures_dropped;
	st->identity_refused = d->identity_refused;
	st->parser_failures = __atomic_load_n(&d->parse_summary.failed, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < RVD_CHECK_WORKERS; i++)
		st->parser_failures += __atomic_load_n(&d->parse_check[i].failed, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < ne; k++)
		st->errors[k] = d->last_errors[(d->nerrors - ne + k) % RVD_LAST_ERRORS];
	st->nerrors = ne;
}

static void env_anomaly(void *ctx, const struct rvd_anomaly *a)
{
	rvd_capture_anomaly(&((struct rvd_daemon *)ctx)->cap, a);
}

static void env_event(void *ctx, const Rearview__EventMessage *e)
{
	const char *why = handle_event(ctx, e, 0);

	if (why)
		rvd_info("injected event refused: %s", why);
}

static void env_clear_jank(void *ctx)
{
	struct rvd_daemon *d = ctx;

	rvd_jankc_init(&d->jank);
	d->jank.dirty = true;
	jank_flush(d);
}

static void env_replan(void *ctx)
{
	replan(ctx);
}

static int env_enforce_submit(void *ctx, struct rvd_enforce_job *j, rvd_spool_cb cb)
{
	return enforce_submit(ctx, j, cb);
}

static void env_policy_changed(void *ctx)
{
	apply_thresholds(ctx);
}

static int env_apply_policy(void *ctx, const uint8_t *doc, size_t len)
{
	return apply_policy(ctx, doc, len);
}

static void env_release_reservation(void *ctx, int64_t reservation)
{
	release_reservation(ctx, reservation);
}

static void envs_init(struct rvd_daemon *d)
{
	struct rvd_capture_env ce = {
		.loop = d->loop,
		.cfg = &d->cfg,
		.reg = &d->reg,
		.spool = &d->spool,
		.enf = &d->enf,
		.seams = &d->seams,
		.consent = env_consent,
		.stopping = env_stopping,
		.note_error = env_note_error,
		.enforce_submit = env_enforce_submit,
		.policy_changed = env_policy_changed,
		.release_reservation = env_release_reservation,
		.parsers = d->parse_check,
		.nparsers = RVD_CHECK_WORKERS,
		.ctx = d,
	};

	rvd_capture_init(&d->cap, &ce);
	d->admin = (struct rvd_admin_env){
		.reg = &d->reg,
		.spool = &d->spool,
		.enf = &d->enf,
		.consent = env_consent,
		.set_consent = env_set_consent,
		.stats = env_stats,
		.note_error = env_note_error,
		.anomaly = env_anomaly,
		.event = env_event,
		.replan = env_replan,
		.enforce_submit = env_enforce_submit,
		.policy_changed = env_policy_changed,
		.conn_by_id = conn_by_id,
		.clear_jank = env_clear_jank,
		.ctx = d,
	};
	d->up_env = (struct rvd_upload_env){
		.loop = d->loop,
		.cfg = &d->cfg,
		.spool = &d->spool,
		.enf = &d->enf,
		.consent = env_consent,
		.stopping = env_stopping,
		.note_error = env_note_error,
		.apply_policy = env_apply_policy,
		.release_reservation = env_release_reservation,
		.jank = &d->jank,
		.ctx = d,
	};
}

static int on_admin_frame(struct rvd_conn *c, const uint8_t *payload, uint32_t len)
{
	struct rvd_daemon *d = c->poll.loop->data;

	return rvd_admin_frame(&d->admin, c, payload, len);
}

/* ---- peers and listeners ------------------------------------------------- */

static void stream_error_cb(struct rvd_conn *c, int err)
{
	if (err == -EPROTONOSUPPORT)
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__UNSUPPORTED_VERSION,
				    "unsupported version");
	else if (err == -EMSGSIZE)
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__TOO_LARGE, "frame too large");
	else
		rvd_conn_send_error(c, REARVIEW__ERROR__CODE__MALFORMED, rv_frame_strerror(err));
}

static void conn_closed_cb(struct rvd_conn *c)
{
	struct rvd_daemon *d = c->poll.loop->data;
	struct rvd_process *p = c->data;

	if (c->pidfd >= 0)
		close(c->pidfd);
	if (p) {
		rvd_info("pid %d unregistered", (int)p->pid);
		rvd_capture_forget(&d->cap, p->pid);
		/* Its pid may name another app next: not the cached comm. */
		rvd_jankc_forget(&d->jank_pids, p->pid);
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
	assert(d->nconns > 0);
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

static void register_sweep_cb(uv_timer_t *t)
{
	struct rvd_daemon *d = t->data;

	rvd_conn_drop_unregistered(d->conns, uv_now(d->loop), d->cfg.register_timeout_ms);
}

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

	assert(which >= 0 && which < 3 && d->listen_fd[which] >= 0);

	for (int round = 0; round < 16 && status == 0; round++) {
		struct rvd_conn *c;
		struct ucred cred = {0};
		int rc;
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
		rc = rvd_conn_admit(d->conns, fd, sock_channels[which], &d->limits[which], &cred);
		if (rc < 0) {
			rvd_warn("%s: refusing a peer (uid %u): %s", sock_names[which],
				 (unsigned)cred.uid,
				 rc == -ENOSPC	 ? "too many peers"
				 : rc == -EUSERS ? "too many peers of this uid"
						 : strerror(-rc));
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->id = ++d->next_conn_id;
		c->pidfd = -1;
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
		/* The connecting process itself, before its pid can be reused. */
		if (which == SOCK_CONTROL) {
			c->pidfd = rvd_identity_pidfd(fd, &c->cred);
			if (c->pidfd < 0)
				rvd_debug("control peer pid %d: no pidfd: %s", (int)c->cred.pid,
					  strerror(-c->pidfd));
		}
		if (!peer_allowed(d, c, which)) {
			rvd_conn_send_error(c, REARVIEW__ERROR__CODE__DENIED, "access denied");
			rvd_conn_close(c, "access denied");
		}
	}
}

/*
 * Takes RUN/rearviewd.lock (flock, our pid written in it) for the daemon's
 * life: only one rearviewd serves a run directory.  The lock goes with the
 * holder's last descriptor, so a daemon killed with SIGKILL releases it as
 * it exits; one killed a moment ago may still be exiting, hence a bounded
 * wait before another holder is called a running daemon.  Startup only,
 * before the loop runs.  0, -EADDRINUSE (logged), or another negative errno.
 */
#define LOCK_WAIT_MS 5000
#define LOCK_POLL_MS 20

static int take_lock(struct rvd_daemon *d)
{
	char path[RVD_PATH_MAX + 16], pid[24] = "";
	int fd, n;

	snprintf(path, sizeof(path), "%s/rearviewd.lock", d->cfg.run_dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		n = -errno;
		rvd_err("%s: %s", path, strerror(-n));
		return n;
	}
	for (unsigned waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += LOCK_POLL_MS) {
		struct timespec ts = {0, LOCK_POLL_MS * 1000000L};

		if (errno != EWOULDBLOCK && errno != EINTR) {
			n = -errno;
			rvd_err("%s: %s", path, strerror(-n));
			close(fd);
			return n;
		}
		if (waited >= LOCK_WAIT_MS) {
			n = (int)pread(fd, pid, sizeof(pid) - 1, 0);
			pid[n > 0 ? strcspn(pid, "\n") : 0] = '\0';
			rvd_err("%s: another rearviewd is running (pid %s)", d->cfg.run_dir,
				pid[0] ? pid : "?");
			close(fd);
			return -EADDRINUSE;
		}
		nanosleep(&ts, NULL);
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		rvd_warn("%s: cannot write our pid: %s", path, strerror(errno));
	d->lock_fd = fd;
	return 0;
}

/* Called with the run directory's lock held (take_lock): a socket file
 * left there is a dead daemon's, whatever still answers on it. */
static int bind_socket(struct rvd_daemon *d, int which, unsigned mode, gid_t gid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, rc;

	assert(d->lock_fd >= 0);
	rc = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", d->cfg.run_dir, sock_names[which]);
	if (rc < 0 || (size_t)rc >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
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

/* The three listeners: those systemd passed (socket activation: their
 * files, modes and groups are the .socket units'), the others created
 * here with the configured modes and groups. */
static int listen_sockets(struct rvd_daemon *d)
{
	const unsigned modes[] = {d->cfg.control_mode, d->cfg.events_mode, d->cfg.admin_mode};
	const gid_t gids[] = {(gid_t)-1, d->cfg.events_gid, d->cfg.settings_gid};
	int rc = rvd_activation_take(sock_fdnames, 3, d->listen_fd);

	if (rc < 0)
		return rc;
	for (int i = 0; i < 3; i++) {
		d->activated[i] = d->listen_fd[i] >= 0;
		if (d->activated[i])
			rvd_info("%s: passed by systemd (socket activation)", sock_names[i]);
		else if ((rc = bind_socket(d, i, modes[i], gids[i])) < 0)
			return rc;
	}
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
		rvd_capture_anomaly(&d->cap, &a);
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

/* The one place the spool tells of a change: captures and quota as D-Bus
 * shows them (coalesced there). */
static void spool_changed(void *ctx)
{
	struct rvd_daemon *d = ctx;

	rvd_dbus_spool_changed(d->bus);
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
			rvd_capture_gate(&d->cap, sp->recs[i].id);
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
			rvd_capture_summarize(&d->cap, &sp->recs[i]);
	d->ready = true;
	if (d->up)
		rvd_upload_start(d->up);
	rvd_info("ready: %zu captures in the spool, policy version %" PRIu64 ", quota left %u",
		 sp->nrecs, d->enf.policy_version, d->enf.quota_left);
	rvd_sd_notify("READY=1\nSTATUS=ready: listening, spool open");
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

/* The checks' deadline: RVD_PARSE_CHECK_MS, or the test's (see above). */
static unsigned parse_check_ms(void)
{
	const char *hooks = getenv(RVD_SANDBOX_TEST_ENV), *ms = getenv(RVD_PARSE_CHECK_MS_ENV);
	char *end;
	unsigned long v;

	if (!hooks || strcmp(hooks, "1") || !ms)
		return RVD_PARSE_CHECK_MS;
	errno = 0;
	v = strtoul(ms, &end, 10);
	if (errno || end == ms || *end || v == 0 || v > 24ul * 3600 * 1000)
		return RVD_PARSE_CHECK_MS;
	return (unsigned)v;
}

/*
 * Waits, before the sockets listen, until the parser workers started with
 * the daemon are confined and take requests (RVD_PARSE_READY_MS in all),
 * so that the first capture after a start is checked at once.  A worker
 * still starting then is waited for by its first request; one that died
 * is started again at it.
 */
static void parsers_wait_ready(struct rvd_daemon *d)
{
	struct rvd_sandbox *sb[RVD_CHECK_WORKERS + 1];
	uint64_t t0 = uv_hrtime(), until = t0 + RVD_PARSE_READY_MS * 1000000ull;
	unsigned ready = 0;

	for (unsigned i = 0; i < RVD_CHECK_WORKERS; i++)
		sb[i] = &d->parse_check[i];
	sb[RVD_CHECK_WORKERS] = &d->parse_summary;
	for (unsigned i = 0; i <= RVD_CHECK_WORKERS; i++) {
		uint64_t now = uv_hrtime();

		ready +=
			rvd_sandbox_wait_ready(
				sb[i], now < until ? (unsigned)((until - now) / 1000000u) : 0) == 0;
	}
	rvd_info("capture parsers: %u of %u ready in %" PRIu64 " ms", ready, RVD_CHECK_WORKERS + 1,
		 (uv_hrtime() - t0) / 1000000u);
}

int rvd_daemon_start(struct rvd_daemon *d, uv_loop_t *loop, const struct rvd_config *cfg)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->loop = loop;
	loop->data = d;
	d->cfg = *cfg;
	d->cfg_file = *cfg;
	envs_init(d);
	rvd_enforce_init(&d->enf, cfg->state_dir, cfg->policy_key);
	for (int i = 0; i < 3; i++)
		d->listen_fd[i] = -1;
	d->lock_fd = -1;
	rvd_registry_init(&d->reg);
	rvd_spool_init(&d->spool, loop, cfg->state_dir);
	rvd_spool_set_history(&d->spool, cfg->spool_history_rows);
	d->spool.changed = spool_changed;
	d->spool.changed_ctx = d;
	uv_signal_init(loop, &d->sig_term);
	uv_signal_init(loop, &d->sig_int);
	uv_timer_init(loop, &d->thermal_timer);
	uv_timer_init(loop, &d->accept_backoff);
	uv_timer_init(loop, &d->register_sweep);
	uv_timer_init(loop, &d->jank_timer);
	d->jank_timer.data = d;
	d->sig_term.data = d->sig_int.data = d->thermal_timer.data = d->accept_backoff.data = d;
	d->register_sweep.data = d;
	d->limits[SOCK_CONTROL] = (struct rvd_peer_limits){cfg->max_peers, cfg->max_peers_per_uid};
	d->limits[SOCK_EVENTS] =
		(struct rvd_peer_limits){cfg->max_events_peers, cfg->max_peers_per_uid};
	d->limits[SOCK_ADMIN] = (struct rvd_peer_limits){cfg->max_admin_peers, 0};
	uv_signal_start(&d->sig_term, signal_cb, SIGTERM);
	uv_signal_start(&d->sig_int, signal_cb, SIGINT);

	rc = 0;
	for (unsigned i = 0; i < RVD_CHECK_WORKERS && rc >= 0; i++)
		rc = rvd_sandbox_init(&d->parse_check[i], "check", NULL, parse_check_ms());
	if (rc < 0 ||
	    (rc = rvd_sandbox_init(&d->parse_summary, "summary", NULL, RVD_PARSE_SUMMARY_MS)) < 0) {
		rvd_err("capture parser: %s", strerror(-rc));
		goto fail;
	}
	rvd_summary_use_sandbox(&d->parse_summary);
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
	if ((rc = rvd_app_map_load(&d->apps, cfg->apps_dir)) < 0) {
		rvd_err("%s: the app map is refused (%s): not starting", cfg->apps_dir,
			strerror(-rc));
		goto fail;
	}
	rvd_info("app map %s: %zu rules; unlisted app ids are %s", cfg->apps_dir, d->apps.n,
		 cfg->unlisted == RVD_UNLISTED_REFUSE ? "refused" : "qualified with their uid");
	if ((rc = take_lock(d)) < 0)
		goto fail;
	load_jank(d);
	/* The parser workers start now, so the first captures after a start
	 * (a restart after a crash included) and the summaries the spool's
	 * recovery queues do not wait for them; one that cannot start is tried
	 * again at its first request.  The summary's is started before the
	 * spool's queue first runs, and used only there from then on. */
	for (unsigned i = 0; i < RVD_CHECK_WORKERS; i++)
		rvd_sandbox_start(&d->parse_check[i]);
	rvd_sandbox_start(&d->parse_summary);
	parsers_wait_ready(d);
	if ((rc = listen_sockets(d)) < 0)
		goto fail;
	for (int i = 0; i < 3; i++) {
		uv_poll_init(loop, &d->listen_poll[i], d->listen_fd[i]);
		uv_poll_start(&d->listen_poll[i], UV_READABLE, accept_cb);
	}
	d->listening = true;
	if (cfg->dbus_enabled && (rc = rvd_dbus_start(loop, &d->admin, &d->bus)) < 0)
		rvd_info("no system bus (%s): running without D-Bus", strerror(-rc));
	if (cfg->server_url[0]) {
		if ((rc = rvd_upload_new(&d->up_env, &d->up)) < 0) {
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
	/* A peer is dropped between 1 and 1.5 deadlines after it connected. */
	uv_timer_start(&d->register_sweep, register_sweep_cb, cfg->register_timeout_ms / 2 + 1,
		       cfg->register_timeout_ms / 2 + 1);
	uv_timer_start(&d->jank_timer, jank_timer_cb, cfg->jank_counts_flush_ms,
		       cfg->jank_counts_flush_ms);
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
	rvd_sd_notify("STOPPING=1\nSTATUS=stopping");
	for (int i = 0; i < 3; i++) {
		if (d->listen_fd[i] < 0)
			continue;
		if (d->listening)
			uv_close((uv_handle_t *)&d->listen_poll[i], NULL);
		/* uv_poll does not own the descriptor; closed after the handle, see release.
		 * A passed socket's file stays: systemd listens on it for the next start. */
		if (d->activated[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", d->cfg.run_dir, sock_names[i]);
		unlink(path);
	}
	uv_close((uv_handle_t *)&d->thermal_timer, NULL);
	uv_close((uv_handle_t *)&d->accept_backoff, NULL);
	uv_close((uv_handle_t *)&d->register_sweep, NULL);
	uv_close((uv_handle_t *)&d->jank_timer, NULL);
	jank_flush(d); /* queued before the spool's close job */
	rvd_dbus_stop(d->bus);
	rvd_upload_stop(d->up);
	rvd_capture_stop(&d->cap);
	for (struct rvd_conn *c = d->conns; c; c = c->next)
		rvd_conn_close(c, NULL);
	if (enforce_submit(d, rvd_enforce_job_new(&d->enf, RVD_ENF_CLOSE), NULL) < 0)
		rvd_err("policy: cannot close the ledger: out of memory");
	/* The close job runs after every queued spool job: nothing acknowledged is cut short. */
	if (rvd_spool_close(&d->spool, spool_closed_cb, d) < 0)
		spool_closed_cb(&d->spool, 0, 0, d);
}

struct rvd_daemon *rvd_daemon_new(void)
{
	return calloc(1, sizeof(struct rvd_daemon));
}

int rvd_daemon_exit_status(const struct rvd_daemon *d)
{
	return d->exit_status;
}

void rvd_daemon_free(struct rvd_daemon *d)
{
	if (!d)
		return;
	for (int i = 0; i < 3; i++)
		if (d->listen_fd[i] >= 0)
			close(d->listen_fd[i]);
	/* Last: the sockets are closed before another daemon may take over. */
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	rvd_registry_release(&d->reg);
	rvd_spool_release(&d->spool);
	rvd_upload_free(d->up);
	rvd_dbus_free(d->bus);
	rvd_app_map_free(&d->apps);
	rvd_summary_use_sandbox(NULL);
	for (unsigned i = 0; i < RVD_CHECK_WORKERS; i++)
		rvd_sandbox_close(&d->parse_check[i]);
	rvd_sandbox_close(&d->parse_summary);
	free(d);
}
