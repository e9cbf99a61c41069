/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device_dbus.c — libFuzzer target: org.rearview.Daemon1 (device/src/dbus.c)
 * driven with hostile calls over a real D-Bus connection.  Each input is
 * one session on a private sd-bus pair (a socketpair, the daemon's end a
 * server with sd_bus_set_server, both authenticated by libsystemd), so
 * every argument goes through libsystemd's own marshalling and the
 * daemon's vtable, no mock: method calls with right and wrong signatures,
 * property Get/GetAll/Set of known and unknown names, introspection,
 * unknown members, senders chosen by the input; the peer answers the
 * daemon's polkit CheckAuthorization as the input says (yes, no,
 * challenge, an error, a reply of the wrong type).  Behind the handlers
 * run the real admin.c, spool and policy ledger (in a temporary directory,
 * tmpfs when there is one).
 *
 * What must hold, checked after every session (a trap otherwise):
 *  - every call is answered (a return or an error) while the connection
 *    stands;
 *  - polkit is asked about the caller's own name and for the method's own
 *    action, and a SetConsent or DeleteAllData succeeds only after polkit
 *    said yes: the consent never changes without a yes;
 *  - Consent reads as one of the four names.
 *
 * The byte format (each op takes what it needs; missing bytes are 0):
 *   [0]    consent at the start: off, local, summary, full (% 4)
 *   [1]    the caller's unique name, ":1.<byte>"
 *   then   ops: a byte picks the op ((b & 0x7f) % 12: 0-1 SetConsent, 2
 *          SetConsent with wrong arguments, 3 DeleteAllData, 4-5 Get, 6
 *          GetAll, 7 Set, 8 Introspect, 9 an unknown member, 10 polkit's
 *          next answers, 11 a Consent change signal; with 0x80 the calls so
 *          far are answered before the next op), the next bytes its
 *          arguments (each call first takes its allow-interactive byte).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <unistd.h>
#include <uv.h>

#include "admin.h"
#include "dbus.h"
#include "enforce.h"
#include "log.h"
#include "registry.h"
#include "spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POLKIT_PATH	 "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_INTERFACE "org.freedesktop.PolicyKit1.Authority"
#define PROPS		 "org.freedesktop.DBus.Properties"
#define MAX_OPS		 64
#define PUMP_ROUNDS	 200000 /* rounds of at most 1 ms of waiting each */

#define CHECK(c)                                                                             \
	do {                                                                                 \
		if (!(c)) {                                                                  \
			fprintf(stderr, "device_dbus: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			__builtin_trap();                                                    \
		}                                                                            \
	} while (0)

/* What lives across sessions: the loop, the spool and ledger, the env. */
static struct {
	bool ready;
	uv_loop_t loop;
	char dir[80];
	struct rvd_registry reg;
	struct rvd_spool spool;
	struct rvd_enforce enf;
	struct rvd_admin_env env;
	int consent;
	unsigned consent_changes;
	/* The last session's figures, for the replay and torture tests. */
	unsigned calls, answered, errors, changes_ok, authorized;
	/* Allocation-failure runs (tests/torture/test_device_dbus.c): a failure
	 * inside libsystemd on either end is an error answer or a dropped
	 * connection, not a broken invariant; calls give up after
	 * call_timeout_us so a lost answer ends the session. */
	bool torture;
	uint64_t call_timeout_us;
} g;

/* One session's input and bookkeeping. */
struct sess {
	const uint8_t *p, *end;
	sd_bus *cli;
	struct rvd_dbus *b;
	unsigned outstanding; /* calls not answered yet */
	unsigned calls, answered, errors;
	int start;	      /* the consent at the start */
	unsigned changes;     /* g.consent_changes at the start */
	unsigned changes_ok;  /* SetConsent / DeleteAllData answered with success */
	unsigned authorized;  /* polkit yes given */
	uint8_t polkit_mode;  /* how the next CheckAuthorization is answered */
	char sender[64];      /* the sender of every call */
	bool asked_consent;   /* a SetConsent was sent (polkit may be asked) */
	bool asked_delete;    /* a DeleteAllData was sent */
	bool sender_mismatch; /* polkit was asked about someone else, or for
			       * an action no call needs */
};

static uint8_t take(struct sess *s)
{
	return s->p < s->end ? *s->p++ : 0;
}

/* Up to `max` bytes of input as a NUL-terminated string in buf. */
static const char *take_str(struct sess *s, char *buf, size_t max)
{
	size_t n = take(s) % max, i;

	for (i = 0; i < n && s->p < s->end; i++)
		buf[i] = (char)*s->p++;
	buf[i] = '\0';
	return buf;
}

/* ---- the daemon's environment (as daemon.c gives it) ---------------------- */

static int env_consent(void *ctx)
{
	(void)ctx;
	return g.consent;
}

static void env_set_consent(void *ctx, int level)
{
	(void)ctx;
	g.consent = level;
	g.consent_changes++;
}

static void env_note_error(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

static void env_replan(void *ctx)
{
	(void)ctx;
}

static void enforce_plain_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	(void)sp;
	(void)status;
	(void)id;
	rvd_enforce_done(data);
	rvd_enforce_job_free(data);
}

static int env_enforce_submit(void *ctx, struct rvd_enforce_job *j, rvd_spool_cb cb)
{
	int rc;

	(void)ctx;
	if (!j)
		return -ENOMEM;
	rc = rvd_spool_run(&g.spool, rvd_enforce_work, j, cb ? cb : enforce_plain_cb, j);
	if (rc < 0)
		rvd_enforce_job_free(j);
	return rc;
}

static void env_policy_changed(void *ctx)
{
	(void)ctx;
}

static void flag_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	(void)sp;
	(void)id;
	*(int *)data = status < 0 ? status : 1;
}

/* Runs the loop until *flag is set (a spool callback). */
static void wait_flag(int *flag)
{
	while (!*flag)
		uv_run(&g.loop, UV_RUN_ONCE);
}

static void noop_work(void *arg)
{
	(void)arg;
}

/* Every spool job queued so far has run (jobs run in order). */
static void spool_drain(void)
{
	int done = 0;

	/* An armed allocation failure fails one call only: ask again. */
	while (rvd_spool_run(&g.spool, noop_work, NULL, flag_cb, &done) < 0)
		CHECK(g.torture);
	wait_flag(&done);
}

static void global_setup(void)
{
	static const char *const apps[] = {"com.example.one", "org.example.two", "x"};
	struct rvd_enforce_job *j;
	int done = 0;
	struct stat st;

	rvd_log_set_level(RVD_LOG_ERR);
	snprintf(g.dir, sizeof(g.dir), "%s/rv-fuzz-dbus-XXXXXX",
		 stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp");
	CHECK(mkdtemp(g.dir) != NULL);
	CHECK(uv_loop_init(&g.loop) == 0);
	rvd_registry_init(&g.reg);
	rvd_spool_init(&g.spool, &g.loop, g.dir);
	CHECK(rvd_spool_open(&g.spool, flag_cb, &done) == 0);
	wait_flag(&done);
	CHECK(done == 1);
	rvd_enforce_init(&g.enf, g.dir, NULL);
	j = rvd_enforce_job_new(&g.enf, RVD_ENF_OPEN);
	CHECK(j != NULL);
	CHECK(env_enforce_submit(NULL, j, NULL) == 0);
	/* A few rows for the Captures and Counts properties. */
	for (size_t i = 0; i < sizeof(apps) / sizeof(apps[0]); i++) {
		struct rvd_capture_rec meta;

		memset(&meta, 0, sizeof(meta));
		meta.state = RVD_SPOOL_SKIPPED;
		snprintf(meta.reason, sizeof(meta.reason), "%s", i ? "quota" : "consent_local");
		snprintf(meta.app_id, sizeof(meta.app_id), "%s", apps[i]);
		meta.anomaly.kind = (int)i;
		done = 0;
		CHECK(rvd_spool_store(&g.spool, -1, 0, &meta, flag_cb, &done) == 0);
		wait_flag(&done);
	}
	spool_drain();
	g.env = (struct rvd_admin_env){
		.reg = &g.reg,
		.spool = &g.spool,
		.enf = &g.enf,
		.consent = env_consent,
		.set_consent = env_set_consent,
		.note_error = env_note_error,
		.replan = env_replan,
		.enforce_submit = env_enforce_submit,
		.policy_changed = env_policy_changed,
	};
	g.ready = true;
}

/* ---- the peer: polkit's side ------------------------------------------------ */

/* CheckAuthorization((sa{sv})sa{ss}us) answered as the input says. */
static int polkit_check(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct sess *s = userdata;
	const char *kind = NULL, *key = NULL, *name = NULL, *action = NULL;
	sd_bus_message *reply = NULL;
	int r;

	r = sd_bus_message_enter_container(m, 'r', "sa{sv}");
	if (r >= 0)
		r = sd_bus_message_read(m, "s", &kind);
	if (r >= 0)
		r = sd_bus_message_read(m, "a{sv}", 1, &key, "s", &name);
	if (r >= 0)
		r = sd_bus_message_exit_container(m);
	if (r >= 0)
		r = sd_bus_message_read(m, "s", &action);
	if (r < 0 && g.torture)
		return r;
	CHECK(r >= 0); /* the daemon's own request decodes */
	CHECK(!strcmp(kind, "system-bus-name") && !strcmp(key, "name"));
	if (strcmp(name, s->sender) ||
	    !((s->asked_consent && !strcmp(action, "org.rearview.consent.set")) ||
	      (s->asked_delete && !strcmp(action, "org.rearview.data.delete"))))
		s->sender_mismatch = true;
	switch (s->polkit_mode % 6) {
	case 0:
		s->authorized++;
		return sd_bus_reply_method_return(m, "(bba{ss})", 1, 0, 0);
	case 1:
		return sd_bus_reply_method_return(m, "(bba{ss})", 0, 0, 1, "k", "v");
	case 2:
		return sd_bus_reply_method_return(m, "(bba{ss})", 0, 1, 0);
	case 3:
		return sd_bus_error_set_const(err, "org.freedesktop.PolicyKit1.Error.Failed", "no");
	case 4: /* a reply of the wrong type */
		r = sd_bus_message_new_method_return(m, &reply);
		if (r >= 0)
			r = sd_bus_message_append(reply, "s", "yes");
		if (r >= 0)
			r = sd_bus_send(NULL, reply, NULL);
		sd_bus_message_unref(reply);
		return r;
	default: /* (bb) without the details */
		r = sd_bus_message_new_method_return(m, &reply);
		if (r >= 0)
			r = sd_bus_message_append(reply, "(bb)", 1, 1);
		if (r >= 0)
			r = sd_bus_send(NULL, reply, NULL);
		sd_bus_message_unref(reply);
		return r;
	}
}

/* The peer's one method, taken by a filter: no object tree on the client
 * (libsystemd 252 asserts in bus_free when an object vtable could not be
 * added for want of memory, which the torture test would reach). */
static int polkit_filter(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r;

	(void)err;
	if (!sd_bus_message_is_method_call(m, POLKIT_INTERFACE, "CheckAuthorization") ||
	    strcmp(sd_bus_message_get_path(m), POLKIT_PATH))
		return 0;
	r = polkit_check(m, userdata, &e);
	if (sd_bus_error_is_set(&e))
		sd_bus_reply_method_error(m, &e);
	else if (r < 0)
		sd_bus_reply_method_errno(m, r, NULL);
	sd_bus_error_free(&e);
	return 1;
}

/* ---- the client's calls ------------------------------------------------------- */

struct call {
	struct sess *s;
	bool privileged;
	char member[32], prop[32];
};

static int reply_cb(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct call *c = userdata;
	struct sess *s = c->s;
	const char *v = NULL;

	(void)ret_error;
	s->outstanding--;
	s->answered++;
	if (sd_bus_message_is_method_error(m, NULL)) {
		s->errors++;
	} else {
		if (c->privileged)
			s->changes_ok++;
		if (!strcmp(c->member, "Get") && !strcmp(c->prop, "Consent") &&
		    sd_bus_message_read(m, "v", "s", &v) >= 0)
			CHECK(!strcmp(v, "off") || !strcmp(v, "local") || !strcmp(v, "summary") ||
			      !strcmp(v, "full"));
	}
	free(c);
	return 0;
}

/* Sends `m` (taken) and expects one answer. */
static void call_send(struct sess *s, sd_bus_message *m, bool privileged, const char *member,
		      const char *prop)
{
	struct call *c = calloc(1, sizeof(*c));

	if (!c) {
		CHECK(g.torture); /* the harness's own allocation failed: no call */
		sd_bus_message_unref(m);
		return;
	}
	c->s = s;
	c->privileged = privileged;
	snprintf(c->member, sizeof(c->member), "%s", member);
	snprintf(c->prop, sizeof(c->prop), "%s", prop ? prop : "");
	if (sd_bus_call_async(s->cli, NULL, m, reply_cb, c, g.call_timeout_us) < 0)
		free(c);
	else
		s->outstanding++, s->calls++;
	sd_bus_message_unref(m);
}

static sd_bus_message *new_call(struct sess *s, const char *path, const char *iface,
				const char *member)
{
	sd_bus_message *m = NULL;

	if (sd_bus_message_new_method_call(s->cli, &m, NULL, path, iface, member) < 0)
		return NULL;
	/* A direct connection has no bus to stamp senders: the client names
	 * itself, as a bus would (a unique name). */
	if (sd_bus_message_set_sender(m, s->sender) < 0 ||
	    sd_bus_message_set_allow_interactive_authorization(m, take(s) & 1) < 0)
		m = sd_bus_message_unref(m);
	return m;
}

static const char *const prop_names[] = {"Consent", "QuotaLeft", "Counts", "Captures", "Nope"};

static void op(struct sess *s, uint8_t o)
{
	char buf[64], name[64];
	sd_bus_message *m;
	const char *pn;

	unsigned k = (o & 0x7fu) % 12;
	bool own_path, own_iface;

	switch (k) {
	case 0: /* SetConsent(s) */
	case 1:
		if (!(m = new_call(s, RVD_DBUS_PATH, RVD_DBUS_INTERFACE, "SetConsent")))
			return;
		if (k == 0) {
			static const char *const levels[] = {"off", "local", "summary", "full"};
			uint8_t b = take(s);

			pn = b < 128 ? levels[b % 4] : take_str(s, buf, sizeof(buf));
		} else {
			pn = take_str(s, buf, sizeof(buf));
		}
		if (sd_bus_message_append(m, "s", pn) < 0) {
			sd_bus_message_unref(m);
			return;
		}
		s->asked_consent = true;
		call_send(s, m, true, "SetConsent", NULL);
		return;
	case 2: /* SetConsent with the wrong arguments */
		if (!(m = new_call(s, RVD_DBUS_PATH, RVD_DBUS_INTERFACE, "SetConsent")))
			return;
		switch (take(s) % 4) {
		case 0:
			sd_bus_message_append(m, "i", 3);
			break;
		case 1:
			sd_bus_message_append(m, "ss", "full", "full");
			break;
		case 2:
			sd_bus_message_append(m, "as", 2, "full", "off");
			break;
		default:
			break; /* none */
		}
		call_send(s, m, false, "SetConsent", NULL);
		return;
	case 3: /* DeleteAllData, sometimes with an argument it does not take */
		if (!(m = new_call(s, RVD_DBUS_PATH, RVD_DBUS_INTERFACE, "DeleteAllData")))
			return;
		if (take(s) & 1) {
			sd_bus_message_append(m, "s", "all");
			call_send(s, m, false, "DeleteAllData", NULL);
			return;
		}
		s->asked_delete = true;
		call_send(s, m, true, "DeleteAllData", NULL);
		return;
	case 4: /* Get */
	case 5:
		if (!(m = new_call(s, RVD_DBUS_PATH, PROPS, "Get")))
			return;
		pn = k == 4 ? prop_names[take(s) % 5] : take_str(s, name, sizeof(name));
		if (sd_bus_message_append(m, "ss",
					  take(s) & 1 ? RVD_DBUS_INTERFACE
						      : take_str(s, buf, sizeof(buf)),
					  pn) < 0) {
			sd_bus_message_unref(m);
			return;
		}
		call_send(s, m, false, "Get", pn);
		return;
	case 6: /* GetAll */
		if (!(m = new_call(s, RVD_DBUS_PATH, PROPS, "GetAll")))
			return;
		if (sd_bus_message_append(m, "s",
					  take(s) & 1 ? RVD_DBUS_INTERFACE
						      : take_str(s, buf, sizeof(buf))) < 0) {
			sd_bus_message_unref(m);
			return;
		}
		call_send(s, m, false, "GetAll", NULL);
		return;
	case 7: /* Set: every property is read-only */
		if (!(m = new_call(s, RVD_DBUS_PATH, PROPS, "Set")))
			return;
		pn = prop_names[take(s) % 5];
		if (sd_bus_message_append(m, "ssv", RVD_DBUS_INTERFACE, pn, "s", "full") < 0) {
			sd_bus_message_unref(m);
			return;
		}
		call_send(s, m, false, "Set", pn);
		return;
	case 8: /* Introspect, of the object or a path below or beside it */
		if (!(m = new_call(s, take(s) & 1 ? RVD_DBUS_PATH : "/org/rearview",
				   "org.freedesktop.DBus.Introspectable", "Introspect")))
			return;
		call_send(s, m, false, "Introspect", NULL);
		return;
	case 9: /* an unknown member, interface or path chosen by the input */
		snprintf(name, sizeof(name), "%s", take_str(s, buf, 32));
		own_path = take(s) & 1;
		own_iface = take(s) & 1;
		if (!(m = new_call(s, own_path ? RVD_DBUS_PATH : "/x",
				   own_iface ? RVD_DBUS_INTERFACE : "org.example.Nope",
				   name[0] ? name : "Nope")))
			return;
		call_send(s, m, false, name, NULL);
		return;
	case 10: /* how polkit answers from now on */
		s->polkit_mode = take(s);
		return;
	default: /* a consent change told from another channel */
		rvd_dbus_consent_changed(s->b);
		return;
	}
}

/* Runs both ends until every call is answered or the connection ended. */
static void pump(struct sess *s)
{
	for (unsigned round = 0; s->outstanding; round++) {
		struct pollfd pfd;
		int r;

		CHECK(round < PUMP_ROUNDS); /* a call left unanswered */
		while ((r = sd_bus_process(s->cli, NULL)) > 0)
			;
		if (r < 0)
			return; /* the daemon dropped the connection */
		if (!s->outstanding)
			return;
		uv_run(&g.loop, UV_RUN_NOWAIT);
		pfd.fd = sd_bus_get_fd(s->cli);
		pfd.events = (short)sd_bus_get_events(s->cli);
		poll(&pfd, 1, 1);
	}
}

/* Opens session `s` over a new connection pair, the object exported on
 * the daemon's end.  0, or a negative errno (only under allocation
 * failure). */
static int sess_open(struct sess *s, const uint8_t *data, size_t size)
{
	sd_bus *srv = NULL;
	sd_id128_t id;
	int sv[2], r;

	*s = (struct sess){.p = data, .end = data + size};
	if (!g.ready)
		global_setup();
	g.consent = REARVIEW__CONSENT_LEVEL__CONSENT_OFF + take(s) % 4;
	s->start = g.consent;
	s->changes = g.consent_changes;
	snprintf(s->sender, sizeof(s->sender), ":1.%u", (unsigned)take(s));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	CHECK(sd_id128_randomize(&id) == 0);
	if ((r = sd_bus_new(&srv)) < 0 || (r = sd_bus_set_fd(srv, sv[0], sv[0])) < 0 ||
	    (r = sd_bus_set_server(srv, 1, id)) < 0 || (r = sd_bus_start(srv)) < 0) {
		if (srv)
			sd_bus_close_unref(srv); /* closes sv[0] once it holds it */
		else
			close(sv[0]);
		close(sv[1]);
		return r;
	}
	if ((r = sd_bus_new(&s->cli)) < 0 || (r = sd_bus_set_fd(s->cli, sv[1], sv[1])) < 0 ||
	    (r = sd_bus_start(s->cli)) < 0 ||
	    (r = sd_bus_add_filter(s->cli, NULL, polkit_filter, s)) < 0) {
		if (s->cli)
			sd_bus_close_unref(s->cli);
		else
			close(sv[1]);
		sd_bus_close_unref(srv);
		return r;
	}
	if ((r = rvd_dbus_start_bus(&g.loop, &g.env, srv, &s->b)) < 0) {
		sd_bus_close_unref(s->cli);
		return r;
	}
	return 0;
}

/* Runs the rest of the input as calls, until each is answered or the
 * connection ended. */
static void sess_run(struct sess *s)
{
	for (unsigned n = 0; n < MAX_OPS && s->p < s->end; n++) {
		uint8_t o = take(s);

		op(s, o);
		if (o & 0x80)
			pump(s); /* otherwise calls pile up, answered in any order */
	}
	pump(s);
}

/* Ends the session and checks what must hold. */
static void sess_close(struct sess *s)
{
	rvd_dbus_stop(s->b);
	spool_drain(); /* calls handed to admin.c end before b is freed */
	uv_run(&g.loop, UV_RUN_NOWAIT);
	rvd_dbus_free(s->b);
	sd_bus_flush_close_unref(s->cli);

	g.calls = s->calls;
	g.answered = s->answered;
	g.errors = s->errors;
	g.changes_ok = s->changes_ok;
	g.authorized = s->authorized;
	CHECK(!s->sender_mismatch);
	CHECK(s->changes_ok <= s->authorized);
	if (!s->authorized)
		CHECK(g.consent == s->start && g.consent_changes == s->changes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sess s;

	CHECK(sess_open(&s, data, size) == 0);
	sess_run(&s);
	sess_close(&s);
	return 0;
}
