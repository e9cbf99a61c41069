/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbus.c — org.rearview.Daemon1 on the system bus (dbus.h), with sd-bus
 * driven by the daemon's libuv loop.
 *
 * Reading (Consent, QuotaLeft, Captures) is open to every local user;
 * SetConsent and DeleteAllData are decided by polkit: each call is parked
 * (its message referenced) while an asynchronous CheckAuthorization for the
 * caller's bus name runs, then either refused with polkit's answer or handed
 * to admin.c (rvd_admin_set_consent / rvd_admin_delete_all), and answered
 * once that is durable.  When polkit cannot be asked the call is refused:
 * nothing is changed without polkit's yes.
 *
 * Invariants:
 *  - loop thread only; no blocking call: the bus descriptor is polled for
 *    exactly sd_bus_get_events(), its next timeout runs on `timer`, and
 *    every outgoing message is left to sd_bus_process (events refreshed
 *    after each send);
 *  - sd_bus_process is never re-entered and the bus is never dropped from
 *    inside one of its callbacks (`dispatching`);
 *  - QuotaLeft, Counts and Captures changes are coalesced:
 *    rvd_dbus_spool_changed only arms `coalesce` (once), which emits one
 *    PropertiesChanged for them at most every COALESCE_MS, however many
 *    captures moved; it carries the small values (QuotaLeft, Counts: four
 *    entries) and only names Captures in invalidated_properties
 *    (EMITS_INVALIDATION), so a signal's size does not grow with the
 *    spool — a client that wants the list asks for it;
 *  - every parked call is on `calls` from its method handler until it is
 *    answered (or, when stopping, dropped); `b` outlives them all (freed
 *    after the loop returned, when the spool ran every job).
 */
#include "dbus.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#include "config.h"
#include "log.h"

#define POLKIT_NAME	 "org.freedesktop.PolicyKit1"
#define POLKIT_PATH	 "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_INTERFACE "org.freedesktop.PolicyKit1.Authority"
#define ACTION_CONSENT	 "org.rearview.consent.set"
#define ACTION_DELETE	 "org.rearview.data.delete"
#define COALESCE_MS	 100

enum call_op { OP_SET_CONSENT, OP_DELETE_ALL };

/* A SetConsent or DeleteAllData call waiting for polkit, then for admin.c. */
struct dbus_call {
	struct rvd_dbus *b;
	sd_bus_message *msg; /* the method call; NULL once dropped at stop */
	sd_bus_slot *check;  /* the CheckAuthorization in flight, or NULL */
	enum call_op op;
	int level; /* OP_SET_CONSENT */
	struct dbus_call *prev, *next;
};

struct rvd_dbus {
	uv_loop_t *loop;
	struct rvd_admin_env *env; /* borrowed */
	sd_bus *bus;		   /* NULL once dropped or stopped */
	uv_poll_t poll;
	uv_timer_t timer;
	uv_timer_t coalesce; /* armed while a spool change waits to be signalled */
	bool handles;	     /* poll and timer initialised (closed at stop) */
	bool dispatching;
	bool stopped;
	struct dbus_call *calls;
};

static const char *const consent_names[] = {
	[REARVIEW__CONSENT_LEVEL__CONSENT_OFF] = "off",
	[REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL] = "local",
	[REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY] = "summary",
	[REARVIEW__CONSENT_LEVEL__CONSENT_FULL] = "full",
};

static const char *consent_name(int level)
{
	if (level < REARVIEW__CONSENT_LEVEL__CONSENT_OFF ||
	    level > REARVIEW__CONSENT_LEVEL__CONSENT_FULL)
		return "off";
	return consent_names[level];
}

static const char *anomaly_name(const struct rvd_anomaly *a)
{
	switch (a->kind) {
	case RVD_ANOMALY_JANK:
		return "jank";
	case RVD_ANOMALY_TOUCH:
		return "touch_latency";
	case RVD_ANOMALY_THERMAL:
		return "thermal";
	case RVD_ANOMALY_MANUAL:
		return "manual";
	default:
		return a->name[0] ? a->name : "generic";
	}
}

/* The caller's unique name for the log: a direct connection has none. */
static const char *sender_of(sd_bus_message *m)
{
	const char *s = sd_bus_message_get_sender(m);

	return s ? s : "(no sender)";
}

/* ---- the loop glue -------------------------------------------------------- */

static void events_update(struct rvd_dbus *b);

static void call_unlink(struct dbus_call *c)
{
	struct rvd_dbus *b = c->b;

	if (c->prev)
		c->prev->next = c->next;
	else
		b->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void call_free(struct dbus_call *c)
{
	call_unlink(c);
	sd_bus_slot_unref(c->check);
	sd_bus_message_unref(c->msg);
	free(c);
}

static void handles_close(struct rvd_dbus *b)
{
	if (!b->handles)
		return;
	b->handles = false;
	uv_close((uv_handle_t *)&b->poll, NULL);
	uv_close((uv_handle_t *)&b->timer, NULL);
	uv_close((uv_handle_t *)&b->coalesce, NULL);
}

/* Drops the connection (lost, or stopping): parked polkit checks are
 * dropped; calls already handed to admin.c finish unanswered. */
static void bus_drop(struct rvd_dbus *b)
{
	struct dbus_call *c, *next;

	assert(!b->dispatching);
	handles_close(b);
	for (c = b->calls; c; c = next) {
		next = c->next;
		if (c->check) {
			call_free(c);
		} else {
			c->msg = sd_bus_message_unref(c->msg);
		}
	}
	if (b->bus) {
		sd_bus_close(b->bus);
		b->bus = sd_bus_unref(b->bus);
	}
}

static void pump(struct rvd_dbus *b)
{
	int r;

	assert(!b->dispatching);
	if (!b->bus)
		return;
	b->dispatching = true;
	do
		r = sd_bus_process(b->bus, NULL);
	while (r > 0);
	b->dispatching = false;
	if (r < 0) {
		rvd_warn("system bus: %s; continuing without D-Bus", strerror(-r));
		bus_drop(b);
		return;
	}
	events_update(b);
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	pump(h->data);
}

static void timer_cb(uv_timer_t *t)
{
	pump(t->data);
}

/* Polls for what sd-bus waits for, and arms its next timeout. */
static void events_update(struct rvd_dbus *b)
{
	struct timespec ts;
	uint64_t until, now;
	int ev, uv_ev = 0, r;

	if (!b->bus || !b->handles)
		return;
	ev = sd_bus_get_events(b->bus);
	if (ev < 0) {
		if (!b->dispatching) {
			rvd_warn("system bus: %s; continuing without D-Bus", strerror(-ev));
			bus_drop(b);
		}
		return;
	}
	if (ev & POLLIN)
		uv_ev |= UV_READABLE;
	if (ev & POLLOUT)
		uv_ev |= UV_WRITABLE;
	uv_poll_start(&b->poll, uv_ev, poll_cb);
	r = sd_bus_get_timeout(b->bus, &until);
	if (r < 0 || until == UINT64_MAX) {
		uv_timer_stop(&b->timer);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	uv_timer_start(&b->timer, timer_cb, until > now ? (until - now + 999) / 1000 : 0, 0);
}

/* ---- answers --------------------------------------------------------------- */

static void call_done(void *data, int level, const uint64_t *purged, size_t npurged)
{
	struct dbus_call *c = data;
	struct rvd_dbus *b = c->b;
	int r;

	(void)level;
	(void)purged;
	(void)npurged;
	if (c->msg && b->bus) {
		r = sd_bus_reply_method_return(c->msg, NULL);
		if (r < 0)
			rvd_warn("system bus: answering %s: %s", sd_bus_message_get_member(c->msg),
				 strerror(-r));
	}
	call_free(c);
	events_update(b);
}

static void call_refuse(struct dbus_call *c, const char *name, const char *msg)
{
	struct rvd_dbus *b = c->b;

	rvd_info("system bus: %s from %s refused: %s", sd_bus_message_get_member(c->msg),
		 sender_of(c->msg), msg);
	sd_bus_reply_method_errorf(c->msg, name, "%s", msg);
	call_free(c);
	events_update(b);
}

/* polkit answered CheckAuthorization: (bba{ss}) is_authorized, is_challenge. */
static int check_reply_cb(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct dbus_call *c = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	int authorized = 0, challenge = 0, r;

	(void)ret_error;
	c->check = sd_bus_slot_unref(c->check);
	if (e) {
		call_refuse(c, SD_BUS_ERROR_ACCESS_DENIED, "polkit could not be asked");
		rvd_warn("system bus: polkit: %s: %s", e->name, e->message ? e->message : "");
		return 0;
	}
	r = sd_bus_message_enter_container(m, 'r', "bba{ss}");
	if (r >= 0)
		r = sd_bus_message_read(m, "bb", &authorized, &challenge);
	if (r < 0) {
		call_refuse(c, SD_BUS_ERROR_ACCESS_DENIED, "polkit's answer did not decode");
		return 0;
	}
	if (!authorized) {
		call_refuse(c,
			    challenge ? SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED
				      : SD_BUS_ERROR_ACCESS_DENIED,
			    challenge ? "polkit: authentication required"
				      : "polkit: not authorized");
		return 0;
	}
	rvd_info("system bus: %s from %s authorised by polkit", sd_bus_message_get_member(c->msg),
		 sender_of(c->msg));
	r = c->op == OP_SET_CONSENT ? rvd_admin_set_consent(c->b->env, c->level, call_done, c)
				    : rvd_admin_delete_all(c->b->env, call_done, c);
	if (r < 0)
		call_refuse(c, SD_BUS_ERROR_NO_MEMORY, strerror(-r));
	return 0;
}

/* Parks method call `m` and asks polkit whether its sender may `action`. */
static int check_start(struct rvd_dbus *b, sd_bus_message *m, enum call_op op, int level,
		       const char *action, sd_bus_error *err)
{
	struct dbus_call *c = calloc(1, sizeof(*c));
	uint32_t flags = sd_bus_message_get_allow_interactive_authorization(m) > 0 ? 1 : 0;
	int r;

	if (!c)
		return -ENOMEM;
	c->b = b;
	c->op = op;
	c->level = level;
	r = sd_bus_call_method_async(sd_bus_message_get_bus(m), &c->check, POLKIT_NAME, POLKIT_PATH,
				     POLKIT_INTERFACE, "CheckAuthorization", check_reply_cb, c,
				     "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s",
				     sd_bus_message_get_sender(m), action, 0, flags, "");
	if (r < 0) {
		free(c);
		return sd_bus_error_set_errnof(err, -r, "asking polkit: %s", strerror(-r));
	}
	c->msg = sd_bus_message_ref(m);
	c->next = b->calls;
	if (b->calls)
		b->calls->prev = c;
	b->calls = c;
	return 1; /* answered later */
}

/* ---- the interface ---------------------------------------------------------- */

static int method_set_consent(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	const char *s;
	int level, r;

	r = sd_bus_message_read(m, "s", &s);
	if (r < 0)
		return r;
	level = rvd_config_consent_parse(s);
	if (level < 0)
		return sd_bus_error_setf(err, SD_BUS_ERROR_INVALID_ARGS,
					 "consent must be off, local, summary or full");
	return check_start(userdata, m, OP_SET_CONSENT, level, ACTION_CONSENT, err);
}

static int method_delete_all(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	return check_start(userdata, m, OP_DELETE_ALL, 0, ACTION_DELETE, err);
}

static int prop_consent(sd_bus *bus, const char *path, const char *interface, const char *property,
			sd_bus_message *reply, void *userdata, sd_bus_error *err)
{
	struct rvd_dbus *b = userdata;

	return sd_bus_message_append(reply, "s", consent_name(b->env->consent(b->env->ctx)));
}

static int prop_quota_left(sd_bus *bus, const char *path, const char *interface,
			   const char *property, sd_bus_message *reply, void *userdata,
			   sd_bus_error *err)
{
	struct rvd_dbus *b = userdata;

	return sd_bus_message_append(reply, "u", b->env->enf->quota_left);
}

/* (id, app, anomaly, state, reason): what a person may see, no trace content. */
static int prop_captures(sd_bus *bus, const char *path, const char *interface, const char *property,
			 sd_bus_message *reply, void *userdata, sd_bus_error *err)
{
	struct rvd_dbus *b = userdata;
	const struct rvd_spool *sp = b->env->spool;
	int r = sd_bus_message_open_container(reply, 'a', "(tssss)");

	for (size_t i = 0; r >= 0 && i < sp->nrecs; i++) {
		const struct rvd_capture_rec *c = &sp->recs[i];

		r = sd_bus_message_append(reply, "(tssss)", c->id, c->app_id,
					  anomaly_name(&c->anomaly), rvd_spool_state_name(c->state),
					  c->reason);
	}
	return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* The panel's totals: sent (uploaded, deleted rows included), waiting
 * (pending or uploading), kept (on the device only: captured, or skipped
 * at consent local), skipped (any other reason, deleted rows included). */
static int prop_counts(sd_bus *bus, const char *path, const char *interface, const char *property,
		       sd_bus_message *reply, void *userdata, sd_bus_error *err)
{
	struct rvd_dbus *b = userdata;
	const struct rvd_spool *sp = b->env->spool;
	uint64_t sent = sp->retired[RVD_SPOOL_UPLOADED], skipped = sp->retired[RVD_SPOOL_SKIPPED];
	uint64_t waiting = 0, kept = 0;

	for (size_t i = 0; i < sp->nrecs; i++) {
		const struct rvd_capture_rec *c = &sp->recs[i];

		switch (c->state) {
		case RVD_SPOOL_UPLOADED:
			sent++;
			break;
		case RVD_SPOOL_PENDING:
		case RVD_SPOOL_UPLOADING:
			waiting++;
			break;
		case RVD_SPOOL_CAPTURED:
			kept++;
			break;
		default:
			if (!strcmp(c->reason, "consent_local"))
				kept++;
			else
				skipped++;
		}
	}
	/* Saturated: a u32 on the bus. */
#define U32(x) ((uint32_t)((x) > UINT32_MAX ? UINT32_MAX : (x)))
	return sd_bus_message_append(reply, "a{su}", 4, "sent", U32(sent), "waiting", U32(waiting),
				     "kept", U32(kept), "skipped", U32(skipped));
#undef U32
}

static const sd_bus_vtable daemon_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Consent", "s", prop_consent, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("QuotaLeft", "u", prop_quota_left, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Counts", "a{su}", prop_counts, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Captures", "a(tssss)", prop_captures, 0,
			SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
	SD_BUS_METHOD_WITH_ARGS("SetConsent", SD_BUS_ARGS("s", level), SD_BUS_NO_RESULT,
				method_set_consent, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("DeleteAllData", "", "", method_delete_all, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END,
};

static int name_reply_cb(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)userdata;
	(void)ret_error;
	if (e)
		rvd_warn("system bus: cannot own %s (%s): reachable by unique name only",
			 RVD_DBUS_NAME, e->message ? e->message : e->name);
	else
		rvd_info("system bus: %s ready", RVD_DBUS_NAME);
	return 0;
}

/* ---- lifecycle --------------------------------------------------------------- */

int rvd_dbus_start_bus(uv_loop_t *loop, struct rvd_admin_env *env, sd_bus *bus,
		       struct rvd_dbus **out)
{
	struct rvd_dbus *b = calloc(1, sizeof(*b));
	int r, fd;

	*out = NULL;
	if (!b) {
		sd_bus_unref(bus);
		return -ENOMEM;
	}
	b->loop = loop;
	b->env = env;
	b->bus = bus;
	if ((r = sd_bus_add_object_vtable(b->bus, NULL, RVD_DBUS_PATH, RVD_DBUS_INTERFACE,
					  daemon_vtable, b)) < 0 ||
	    (sd_bus_is_bus_client(b->bus) > 0 &&
	     (r = sd_bus_request_name_async(b->bus, NULL, RVD_DBUS_NAME, 0, name_reply_cb, b)) <
		     0) ||
	    (fd = r = sd_bus_get_fd(b->bus)) < 0)
		goto fail;
	if ((r = uv_poll_init(loop, &b->poll, fd)) < 0) {
		r = -EIO;
		goto fail;
	}
	uv_timer_init(loop, &b->timer);
	uv_timer_init(loop, &b->coalesce);
	b->poll.data = b->timer.data = b->coalesce.data = b;
	b->handles = true;
	events_update(b);
	*out = b;
	return 0;
fail:
	sd_bus_unref(b->bus);
	free(b);
	return r;
}

int rvd_dbus_start(uv_loop_t *loop, struct rvd_admin_env *env, struct rvd_dbus **out)
{
	sd_bus *bus = NULL;
	int r;

	*out = NULL;
	r = sd_bus_open_system_with_description(&bus, "rearviewd");
	if (r < 0)
		return r;
	return rvd_dbus_start_bus(loop, env, bus, out);
}

void rvd_dbus_consent_changed(struct rvd_dbus *b)
{
	int r;

	if (!b || !b->bus)
		return;
	r = sd_bus_emit_properties_changed(b->bus, RVD_DBUS_PATH, RVD_DBUS_INTERFACE, "Consent",
					   NULL);
	if (r < 0)
		rvd_warn("system bus: PropertiesChanged: %s", strerror(-r));
	events_update(b);
}

static void coalesce_cb(uv_timer_t *h)
{
	struct rvd_dbus *b = h->data;
	int r;

	assert(!b->dispatching);
	if (!b->bus)
		return;
	r = sd_bus_emit_properties_changed(b->bus, RVD_DBUS_PATH, RVD_DBUS_INTERFACE, "QuotaLeft",
					   "Counts", "Captures", NULL);
	if (r < 0)
		rvd_warn("system bus: PropertiesChanged: %s", strerror(-r));
	events_update(b);
}

void rvd_dbus_spool_changed(struct rvd_dbus *b)
{
	if (!b || !b->bus || !b->handles || uv_is_active((uv_handle_t *)&b->coalesce))
		return;
	uv_timer_start(&b->coalesce, coalesce_cb, COALESCE_MS, 0);
}

void rvd_dbus_stop(struct rvd_dbus *b)
{
	if (!b || b->stopped)
		return;
	b->stopped = true;
	bus_drop(b);
}

void rvd_dbus_free(struct rvd_dbus *b)
{
	if (!b)
		return;
	assert(!b->bus && !b->handles);
	while (b->calls)
		call_free(b->calls);
	free(b);
}
