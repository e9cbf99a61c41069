/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dbus.c — rearviewd's org.rearview.Daemon1 (device/src/dbus.c) on a
 * private system bus, with a real polkitd deciding every change.
 *
 * The fixture (started once, on the first test that needs it) is:
 *  - a private dbus-daemon with a system-bus configuration written to a
 *    temporary directory: the stock system bus's default policy plus the
 *    files the packages install, the real polkit bus policy and ours
 *    (deploy/dbus/org.rearview.Daemon1.conf), so the bus policy is tested
 *    too; DBUS_SYSTEM_BUS_ADDRESS names it for rearviewd and the clients;
 *  - the real Debian polkitd on that bus.  polkitd reads its actions and
 *    rules only from system paths (/usr/share/polkit-1/actions,
 *    /etc/polkit-1/rules.d, /usr/share/polkit-1/rules.d) and has no option
 *    to read others, so it runs in its own mount namespace (`unshare -m`,
 *    root) where those three directories are bind mounts of the test's:
 *    the actions directory holds only deploy/dbus/org.rearview.policy, the
 *    rules directory one rule saying root may; the host's files are never
 *    touched.  Nothing stands in for polkit: every answer is polkitd's.
 * The authorised caller is root (the test's rule); the unauthorised one is
 * a child that drops to `nobody` before connecting: no rule for it and no
 * login session, so the .policy's allow_any (auth_admin) applies and
 * polkitd refuses.  Without dbus-daemon, polkitd or mount namespaces every
 * case is a visible cmocka skip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>

#include "daemon_harness.h"

#define NAME  "org.rearview.Daemon1"
#define PATH  "/org/rearview/Daemon1"
#define IFACE "org.rearview.Daemon1"

static struct {
	bool tried, ok;
	char why[256];
	char dir[64];
	pid_t bus, polkitd;
} fx;

static __attribute__((format(printf, 2, 3))) int write_file(const char *path, const char *fmt, ...)
{
	va_list ap;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f);
}

/* Whether `name` has an owner on the bus, asking with a fresh connection. */
static bool name_owned(const char *name)
{
	sd_bus_message *reply = NULL;
	sd_bus *bus = NULL;
	int has = 0, r = sd_bus_open_system(&bus);

	if (r >= 0)
		r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
				       "org.freedesktop.DBus", "NameHasOwner", NULL, &reply, "s",
				       name);
	if (r >= 0)
		r = sd_bus_message_read(reply, "b", &has);
	sd_bus_message_unref(reply);
	sd_bus_flush_close_unref(bus);
	return r >= 0 && has;
}

static bool wait_name(const char *name, pid_t owner)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		if (name_owned(name))
			return true;
		if (owner > 0 && waitpid(owner, NULL, WNOHANG) == owner)
			return false;
		rvh_sleep_ms(20);
	}
	return false;
}

static pid_t spawn(const char *log, const char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The private bus and polkitd, once; false (with fx.why) when they cannot run here. */
static bool fixture(void)
{
	char path[160], sock[128], addr[160], log[160], script[1024];

	if (fx.tried)
		return fx.ok;
	fx.tried = true;
	if (access("/usr/bin/dbus-daemon", X_OK) || access("/usr/lib/polkit-1/polkitd", X_OK) ||
	    access("/usr/bin/unshare", X_OK)) {
		snprintf(fx.why, sizeof(fx.why), "dbus-daemon, polkitd or unshare not installed");
		return false;
	}
	if (geteuid() != 0 || system("unshare -m true 2>/dev/null") != 0) {
		snprintf(fx.why, sizeof(fx.why), "no mount namespace for polkitd (needs root)");
		return false;
	}
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/rvd-dbus-XXXXXX");
	if (!mkdtemp(fx.dir) || chmod(fx.dir, 0755) < 0)
		return false;
	/* polkitd reads these as its own user. */
	snprintf(path, sizeof(path), "%s/actions", fx.dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/rules", fx.dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/norules", fx.dir);
	mkdir(path, 0755);
	snprintf(script, sizeof(script), "cp '%s/deploy/dbus/org.rearview.policy' '%s/actions/'",
		 RV_SRC_DIR, fx.dir);
	if (system(script) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/rules/50-rearview-test.rules", fx.dir);
	write_file(
		path,
		"polkit.addRule(function(action, subject) {\n"
		"    if (action.id.indexOf(\"org.rearview.\") == 0 && subject.user == \"root\")\n"
		"        return polkit.Result.YES;\n"
		"});\n");
	snprintf(sock, sizeof(sock), "%s/system_bus_socket", fx.dir);
	snprintf(path, sizeof(path), "%s/bus.conf", fx.dir);
	write_file(
		path,
		"<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration "
		"1.0//EN\"\n \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
		"<busconfig>\n<type>system</type>\n<listen>unix:path=%s</listen>\n"
		"<auth>EXTERNAL</auth>\n"
		"<policy context=\"default\">\n<allow user=\"*\"/>\n<deny own=\"*\"/>\n"
		"<deny send_type=\"method_call\"/>\n<allow send_type=\"signal\"/>\n"
		"<allow send_requested_reply=\"true\" send_type=\"method_return\"/>\n"
		"<allow send_requested_reply=\"true\" send_type=\"error\"/>\n"
		"<allow receive_type=\"method_call\"/>\n<allow receive_type=\"method_return\"/>\n"
		"<allow receive_type=\"error\"/>\n<allow receive_type=\"signal\"/>\n"
		"<allow send_destination=\"org.freedesktop.DBus\" "
		"send_interface=\"org.freedesktop.DBus\"/>\n"
		"<allow send_destination=\"org.freedesktop.DBus\" "
		"send_interface=\"org.freedesktop.DBus.Introspectable\"/>\n"
		"<allow send_destination=\"org.freedesktop.DBus\" "
		"send_interface=\"org.freedesktop.DBus.Properties\"/>\n"
		"</policy>\n"
		"<include>/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf</include>\n"
		"<include>%s/deploy/dbus/org.rearview.Daemon1.conf</include>\n</busconfig>\n",
		sock, RV_SRC_DIR);
	snprintf(log, sizeof(log), "%s/bus.log", fx.dir);
	{
		char cfg[200];
		const char *argv[] = {"dbus-daemon", "--nofork", cfg, NULL};

		snprintf(cfg, sizeof(cfg), "--config-file=%s", path);
		fx.bus = spawn(log, argv);
	}
	snprintf(addr, sizeof(addr), "unix:path=%s", sock);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", addr, 1);
	if (fx.bus < 0 || !wait_name("org.freedesktop.DBus", fx.bus)) {
		snprintf(fx.why, sizeof(fx.why), "the private dbus-daemon did not start (%s)", log);
		return false;
	}
	snprintf(script, sizeof(script),
		 "mount --bind '%1$s/actions' /usr/share/polkit-1/actions && "
		 "mount --bind '%1$s/rules' /etc/polkit-1/rules.d && "
		 "mount --bind '%1$s/norules' /usr/share/polkit-1/rules.d && "
		 "exec /usr/lib/polkit-1/polkitd",
		 fx.dir);
	snprintf(log, sizeof(log), "%s/polkitd.log", fx.dir);
	{
		const char *argv[] = {"unshare", "-m", "sh", "-c", script, NULL};

		fx.polkitd = spawn(log, argv);
	}
	if (fx.polkitd < 0 || !wait_name("org.freedesktop.PolicyKit1", fx.polkitd)) {
		snprintf(fx.why, sizeof(fx.why), "polkitd did not start on the private bus (%s)",
			 log);
		return false;
	}
	fx.ok = true;
	return true;
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	if (fx.polkitd > 0) {
		kill(fx.polkitd, SIGTERM);
		waitpid(fx.polkitd, NULL, 0);
	}
	if (fx.bus > 0) {
		kill(fx.bus, SIGTERM);
		waitpid(fx.bus, NULL, 0);
	}
	if (fx.dir[0] && !getenv("RVH_KEEP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", fx.dir);
	}
	return 0;
}

/* Stops the daemon and waits until the bus has let its name go. */
static void stop(struct rvh *h)
{
	double until = rvh_now() + RVH_GUARD_S;

	rvh_teardown(h);
	while (name_owned(NAME) && rvh_now() < until)
		rvh_sleep_ms(20);
}

/* The test's daemon; stopped by teardown() even when the test failed. */
static struct rvh cur;
static bool cur_up;

/* A daemon on the private bus, once it owns its name. */
static struct rvh *start(const char *extra)
{
	if (!fixture()) {
		fprintf(stderr, "skipped: %s\n", fx.why);
		skip();
	}
	assert_false(name_owned(NAME));
	cur_up = true;
	assert_int_equal(rvh_setup(&cur, extra), 0);
	assert_true(wait_name(NAME, cur.daemon));
	return &cur;
}

static int teardown(void **state)
{
	(void)state;
	if (cur_up)
		stop(&cur);
	cur_up = false;
	return 0;
}

/* Calls `method` (signature "s" with `arg`, or none) as the test (root).
 * Returns 0, or -1 with the error name copied to `err`. */
static int call(const char *method, const char *arg, char *err, size_t cap)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus *bus = NULL;
	int r;

	assert_true(sd_bus_open_system(&bus) >= 0);
	r = arg ? sd_bus_call_method(bus, NAME, PATH, IFACE, method, &e, NULL, "s", arg)
		: sd_bus_call_method(bus, NAME, PATH, IFACE, method, &e, NULL, "");
	if (r < 0 && err)
		snprintf(err, cap, "%s", e.name ? e.name : strerror(-r));
	sd_bus_error_free(&e);
	sd_bus_flush_close_unref(bus);
	return r < 0 ? -1 : 0;
}

/* The same call from a child that dropped to nobody first: 0 when it
 * succeeded, 1 when refused with AccessDenied or
 * InteractiveAuthorizationRequired, 2 otherwise. */
static int call_as_nobody(const char *method, const char *arg)
{
	struct passwd *pw = getpwnam("nobody");
	int st;
	pid_t pid;

	assert_non_null(pw);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[128] = "";

		if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
			_exit(3);
		if (call(method, arg, err, sizeof(err)) == 0)
			_exit(0);
		fprintf(stderr, "as nobody: %s: %s\n", method, err);
		_exit(!strcmp(err, SD_BUS_ERROR_ACCESS_DENIED) ||
				      !strcmp(err, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED)
			      ? 1
			      : 2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The Consent property, read as the test. */
static void get_consent(char *out, size_t cap)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus *bus = NULL;
	char *v = NULL;

	assert_true(sd_bus_open_system(&bus) >= 0);
	assert_true(sd_bus_get_property_string(bus, NAME, PATH, IFACE, "Consent", &e, &v) >= 0);
	snprintf(out, cap, "%s", v);
	free(v);
	sd_bus_error_free(&e);
	sd_bus_flush_close_unref(bus);
}

/* `rvctl consent status`, the admin.sock view. */
static void rvctl_consent(struct rvh *h, char *out, size_t cap)
{
	assert_int_equal(rvh_rvctl(h, out, cap, "consent status"), 0);
	out[strcspn(out, "\n")] = '\0';
}

static void test_dbus_set_consent_authorised_changes_it(void **state)
{
	struct rvh *h;
	char v[128];

	(void)state;
	h = start("[capture]\nconsent_default = local\n");
	get_consent(v, sizeof(v));
	assert_string_equal(v, "local");
	assert_int_equal(call("SetConsent", "full", NULL, 0), 0);
	get_consent(v, sizeof(v));
	assert_string_equal(v, "full");
	rvctl_consent(h, v, sizeof(v));
	assert_string_equal(v, "full");
	/* rvctl's change is seen on the bus too: the two never disagree. */
	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent summary"), 0);
	get_consent(v, sizeof(v));
	assert_string_equal(v, "summary");
	/* A word that is no level is refused before polkit is asked. */
	assert_int_equal(call("SetConsent", "everything", v, sizeof(v)), -1);
	assert_string_equal(v, SD_BUS_ERROR_INVALID_ARGS);
}

static void test_dbus_set_consent_unauthorised_refused_by_polkit(void **state)
{
	struct rvh *h;
	char v[128];

	(void)state;
	h = start("[capture]\nconsent_default = full\n");
	assert_int_equal(call_as_nobody("SetConsent", "off"), 1);
	assert_int_equal(call_as_nobody("DeleteAllData", NULL), 1);
	get_consent(v, sizeof(v));
	assert_string_equal(v, "full");
	rvctl_consent(h, v, sizeof(v));
	assert_string_equal(v, "full");
}

/* PropertiesChanged on `mon` carrying Consent = `want`, within the guard. */
static bool wait_consent_signal(sd_bus *mon, const char *want)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		sd_bus_message *m = NULL;
		bool seen = false;
		int r = sd_bus_process(mon, &m);

		if (r < 0)
			return false;
		if (m &&
		    sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties",
					     "PropertiesChanged") &&
		    !strcmp(sd_bus_message_get_path(m), PATH)) {
			const char *iface, *key, *val;

			assert_true(sd_bus_message_read(m, "s", &iface) >= 0);
			assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") >= 0);
			while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
				assert_true(sd_bus_message_read(m, "s", &key) >= 0);
				if (!strcmp(key, "Consent")) {
					assert_true(sd_bus_message_read(m, "v", "s", &val) >= 0);
					seen = !strcmp(val, want);
				} else {
					assert_true(sd_bus_message_skip(m, "v") >= 0);
				}
				assert_true(sd_bus_message_exit_container(m) >= 0);
			}
		}
		sd_bus_message_unref(m);
		if (seen)
			return true;
		if (r == 0)
			sd_bus_wait(mon, 200000);
	}
	return false;
}

static void test_dbus_consent_change_signalled_to_second_client(void **state)
{
	struct rvh *h;
	sd_bus *mon = NULL;

	(void)state;
	h = start("[capture]\nconsent_default = local\n");
	assert_true(sd_bus_open_system(&mon) >= 0);
	assert_true(sd_bus_match_signal(mon, NULL, NAME, PATH, "org.freedesktop.DBus.Properties",
					"PropertiesChanged", NULL, NULL) >= 0);
	/* The match is in place once a round trip through the bus is done. */
	assert_true(sd_bus_call_method(mon, "org.freedesktop.DBus", "/org/freedesktop/DBus",
				       "org.freedesktop.DBus", "GetId", NULL, NULL, "") >= 0);
	/* From the bus … */
	assert_int_equal(call("SetConsent", "full", NULL, 0), 0);
	assert_true(wait_consent_signal(mon, "full"));
	/* … and from admin.sock. */
	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent off"), 0);
	assert_true(wait_consent_signal(mon, "off"));
	sd_bus_flush_close_unref(mon);
}

/* Waits until `n` captures are listed and none is still being captured. */
static void wait_pending(struct rvh *h, size_t n)
{
	double until = rvh_now() + RVH_GUARD_S;

	for (;;) {
		Rearview__AdminResponse *r = rvh_captures(h);
		size_t pending = 0;

		assert_non_null(r);
		for (size_t i = 0; i < r->captures->n_captures; i++)
			pending += !strcmp(r->captures->captures[i]->state, "pending");
		rearview__admin_response__free_unpacked(r, NULL);
		if (pending == n)
			return;
		assert_true(rvh_now() < until);
		rvh_sleep_ms(10);
	}
}

/* The Captures property: how many rows, and how many in `state`/`reason`. */
static void bus_captures(size_t *rows, const char *state, const char *reason, size_t *match)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	sd_bus *bus = NULL;
	uint64_t id;
	const char *app, *anomaly, *st, *why;

	*rows = *match = 0;
	assert_true(sd_bus_open_system(&bus) >= 0);
	assert_true(sd_bus_get_property(bus, NAME, PATH, IFACE, "Captures", &e, &reply,
					"a(tssss)") >= 0);
	assert_true(sd_bus_message_enter_container(reply, 'a', "(tssss)") >= 0);
	while (sd_bus_message_read(reply, "(tssss)", &id, &app, &anomaly, &st, &why) > 0) {
		(*rows)++;
		assert_string_equal(anomaly, "jank");
		*match += !strcmp(st, state) && !strcmp(why, reason);
	}
	sd_bus_message_unref(reply);
	sd_bus_error_free(&e);
	sd_bus_flush_close_unref(bus);
}

/* What the PropertiesChanged signals read from `mon` so far carried. */
struct sigstat {
	size_t signals;		/* PropertiesChanged of the daemon's object */
	size_t capture_entries; /* Captures rows carried as a value, over all */
	size_t capture_bytes;	/* their id and string bytes, over all */
	size_t invalidated;	/* signals naming Captures in invalidated_properties */
	uint32_t counts_sum;	/* the last Counts value carried: the sum of its entries */
	bool counts_seen;
};

/* Reads one PropertiesChanged into `ss` (the message is at its start). */
static void read_changed(sd_bus_message *m, struct sigstat *ss)
{
	const char *iface, *key, *app, *anomaly, *st, *why, *name;
	uint64_t id;

	ss->signals++;
	assert_true(sd_bus_message_read(m, "s", &iface) >= 0);
	assert_true(sd_bus_message_enter_container(m, 'a', "{sv}") >= 0);
	while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
		assert_true(sd_bus_message_read(m, "s", &key) >= 0);
		if (!strcmp(key, "Captures")) {
			assert_true(sd_bus_message_enter_container(m, 'v', "a(tssss)") >= 0);
			assert_true(sd_bus_message_enter_container(m, 'a', "(tssss)") >= 0);
			while (sd_bus_message_read(m, "(tssss)", &id, &app, &anomaly, &st, &why) >
			       0) {
				ss->capture_entries++;
				ss->capture_bytes += sizeof(id) + strlen(app) + strlen(anomaly) +
						     strlen(st) + strlen(why);
			}
			assert_true(sd_bus_message_exit_container(m) >= 0);
			assert_true(sd_bus_message_exit_container(m) >= 0);
		} else if (!strcmp(key, "Counts")) {
			uint32_t v;

			ss->counts_sum = 0;
			ss->counts_seen = true;
			assert_true(sd_bus_message_enter_container(m, 'v', "a{su}") >= 0);
			assert_true(sd_bus_message_enter_container(m, 'a', "{su}") >= 0);
			while (sd_bus_message_read(m, "{su}", &name, &v) > 0)
				ss->counts_sum += v;
			assert_true(sd_bus_message_exit_container(m) >= 0);
			assert_true(sd_bus_message_exit_container(m) >= 0);
		} else {
			assert_true(sd_bus_message_skip(m, "v") >= 0);
		}
		assert_true(sd_bus_message_exit_container(m) >= 0);
	}
	assert_true(sd_bus_message_exit_container(m) >= 0);
	assert_true(sd_bus_message_enter_container(m, 'a', "s") >= 0);
	while (sd_bus_message_read(m, "s", &name) > 0)
		ss->invalidated += !strcmp(name, "Captures");
}

/* Reads the signals `mon` has until `until_counts` (when non-zero) is the
 * sum of the last Counts carried, or, with 0, until none is queued. */
static bool read_signals(sd_bus *mon, struct sigstat *ss, uint32_t until_counts)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		sd_bus_message *m = NULL;
		int r = sd_bus_process(mon, &m);

		if (r < 0)
			return false;
		if (m &&
		    sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties",
					     "PropertiesChanged") &&
		    !strcmp(sd_bus_message_get_path(m), PATH))
			read_changed(m, ss);
		sd_bus_message_unref(m);
		if (until_counts && ss->counts_seen && ss->counts_sum == until_counts)
			return true;
		if (r == 0) {
			if (!until_counts)
				return true;
			sd_bus_wait(mon, 200000);
		}
	}
	return false;
}

/* A connection that receives the daemon's PropertiesChanged. */
static sd_bus *monitor(void)
{
	sd_bus *mon = NULL;

	assert_true(sd_bus_open_system(&mon) >= 0);
	assert_true(sd_bus_match_signal(mon, NULL, NAME, PATH, "org.freedesktop.DBus.Properties",
					"PropertiesChanged", NULL, NULL) >= 0);
	/* The match is in place once a round trip through the bus is done. */
	assert_true(sd_bus_call_method(mon, "org.freedesktop.DBus", "/org/freedesktop/DBus",
				       "org.freedesktop.DBus", "GetId", NULL, NULL, "") >= 0);
	return mon;
}

/* Each capture arriving is signalled: Counts with its new value (every
 * capture counted once, in some state), Captures invalidated. */
static void test_dbus_capture_arriving_signalled_to_second_client(void **state)
{
	struct sigstat ss = {0};
	struct rvh *h;
	sd_bus *mon;
	pid_t a;

	(void)state;
	h = start("[capture]\nconsent_default = full\n");
	mon = monitor();
	a = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, a, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_true(read_signals(mon, &ss, 1));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_true(read_signals(mon, &ss, 2));
	assert_true(ss.invalidated >= 1);
	sd_bus_flush_close_unref(mon);
}

/*
 * 40 anomalies, one after the other (each waited for in the Captures
 * property, read with Get): the PropertiesChanged signals a client gets
 * meanwhile never carry the capture list (entries and bytes counted over
 * every signal: 0), only name it as invalidated, while Get still answers
 * every row.  Re-sending the whole list on every change made the signals
 * grow with the spool (1 + 2 + … + 40 rows).
 */
static void test_dbus_captures_changes_do_not_resend_the_list(void **state)
{
	struct sigstat ss = {0};
	struct rvh *h;
	size_t rows, match;
	sd_bus *mon;
	pid_t a;

	(void)state;
	h = start("[capture]\nconsent_default = full\n");
	mon = monitor();
	a = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, a, true));
	for (size_t i = 1; i <= 40; i++) {
		double until = rvh_now() + RVH_GUARD_S;

		assert_int_equal(rvh_rvctl(h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
		for (;;) {
			bus_captures(&rows, "", "", &match);
			if (rows == i)
				break;
			assert_true(rvh_now() < until);
			rvh_sleep_ms(10);
		}
		assert_true(read_signals(mon, &ss, 0));
	}
	fprintf(stderr,
		"40 captures: %zu signals carried %zu Captures entries (%zu bytes), "
		"%zu invalidations\n",
		ss.signals, ss.capture_entries, ss.capture_bytes, ss.invalidated);
	assert_int_equal(ss.capture_entries, 0);
	assert_int_equal(ss.capture_bytes, 0);
	/* The last change reaches the client (Counts counts all 40). */
	assert_true(read_signals(mon, &ss, 40));
	assert_int_equal(ss.capture_entries, 0);
	assert_true(ss.invalidated >= 1);
	sd_bus_flush_close_unref(mon);
}

static void test_dbus_delete_all_data_removes_pending_and_files(void **state)
{
	Rearview__AdminResponse *r;
	struct rvh *h;
	size_t rows, match;
	char v[128];
	pid_t a;

	(void)state;
	h = start("[capture]\nconsent_default = full\n");
	a = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, a, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 2), 2);
	wait_pending(h, 2);
	assert_int_equal(rvh_spool_files(h), 2);
	bus_captures(&rows, "pending", "", &match);
	assert_int_equal(rows, 2);
	assert_int_equal(match, 2);
	/* The call returns once the purge is durable. */
	assert_int_equal(call("DeleteAllData", NULL, NULL, 0), 0);
	assert_int_equal(rvh_spool_files(h), 0);
	bus_captures(&rows, "skipped", "deleted_by_user", &match);
	assert_int_equal(rows, 2);
	assert_int_equal(match, 2);
	/* rvctl agrees: nothing pending, reservations given back, consent kept. */
	r = rvh_status(h);
	assert_non_null(r);
	assert_int_equal(r->status->pending_uploads, 0);
	assert_int_equal(r->status->quota_left, 3);
	rearview__admin_response__free_unpacked(r, NULL);
	rvctl_consent(h, v, sizeof(v));
	assert_string_equal(v, "full");
	get_consent(v, sizeof(v));
	assert_string_equal(v, "full");
}

/* Runs `cmd` through sh with its output in `log`; waits for it within the
 * guard (killed after).  Returns its exit status or -1. */
static int run_logged(const char *cmd, const char *log)
{
	double until = rvh_now() + RVH_GUARD_S;
	const char *argv[] = {"sh", "-c", cmd, NULL};
	pid_t pid = spawn(log, argv);
	int st;

	while (pid > 0 && rvh_now() < until) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		rvh_sleep_ms(50);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

static bool file_has(const char *path, const char *needle)
{
	char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

/*
 * The panel under Weston's headless backend (an 800×480 output, as on a
 * 7-inch kiosk; pixman renders, so every frame completes and GTK keeps
 * drawing): rearview-settings in its self-test mode clicks its own widgets
 * — full consent, then "Delete everything collected" and the confirmation
 * — and saves a PNG of each state into build/screenshots/ (rendered by
 * GSK from its widget tree: weston-screenshooter gave blank images of the
 * headless output).  The default desktop shell, not kiosk-shell: under
 * kiosk-shell.so GTK's frame clock stopped after the first frame here, so
 * later states were never laid out or restyled.
 */
static void test_dbus_panel_toggle_and_delete_change_the_daemon(void **state)
{
	char xdg[96], cmd[1024], log[160], wlog[160], path[256], v[128];
	const char *shots = RV_BIN_DIR "/../screenshots";
	const char *names[] = {"settings-1-start", "settings-2-full", "settings-3-confirm",
			       "settings-4-deleted"};
	struct stat sb;
	struct rvh *h;
	pid_t a, weston;

	(void)state;
	if (access("/usr/bin/weston", X_OK) || access(RV_BIN_DIR "/rearview-settings", X_OK)) {
		fprintf(stderr, "skipped: weston or rearview-settings missing\n");
		skip();
	}
	h = start("[capture]\nconsent_default = local\n");
	/* One capture kept on the device (consent local keeps its file). */
	a = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, a, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	for (double until = rvh_now() + RVH_GUARD_S; rvh_spool_files(h) != 1 && rvh_now() < until;)
		rvh_sleep_ms(10);
	assert_int_equal(rvh_spool_files(h), 1);

	snprintf(xdg, sizeof(xdg), "%s/xdg", h->dir);
	assert_int_equal(mkdir(xdg, 0700), 0);
	snprintf(wlog, sizeof(wlog), "%s/weston.log", h->dir);
	snprintf(cmd, sizeof(cmd),
		 "XDG_RUNTIME_DIR='%s' exec weston --backend=headless-backend.so --use-pixman "
		 "--width=800 --height=480 --socket=rv-settings "
		 "--idle-time=0",
		 xdg);
	{
		const char *argv[] = {"sh", "-c", cmd, NULL};

		weston = spawn(wlog, argv);
	}
	assert_true(weston > 0);
	snprintf(path, sizeof(path), "%s/rv-settings", xdg);
	for (double until = rvh_now() + RVH_GUARD_S; access(path, F_OK) && rvh_now() < until;)
		rvh_sleep_ms(20);
	assert_int_equal(access(path, F_OK), 0);

	mkdir(RV_BIN_DIR "/..", 0755);
	mkdir(shots, 0755);
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s.png", shots, names[i]);
		unlink(path);
	}
	snprintf(log, sizeof(log), "%s/settings.log", h->dir);
	/* In the sanitizer build LeakSanitizer would report GTK's and
	 * fontconfig's process-lifetime caches at the panel's exit: leak
	 * checking is off for the panel only (ASan itself stays on). */
	snprintf(cmd, sizeof(cmd),
		 "XDG_RUNTIME_DIR='%s' WAYLAND_DISPLAY=rv-settings GDK_BACKEND=wayland "
		 "GSK_RENDERER=cairo DBUS_SESSION_BUS_ADDRESS=\"$DBUS_SYSTEM_BUS_ADDRESS\" "
		 "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" "
		 "REARVIEW_SETTINGS_SELFTEST='%s' exec '%s/rearview-settings'",
		 xdg, shots, RV_BIN_DIR);
	assert_int_equal(run_logged(cmd, log), 0);
	kill(weston, SIGTERM);
	waitpid(weston, NULL, 0);
	assert_true(file_has(log, "selftest: consent=local"));
	/* The counts shown as it opened: the kept capture, from the Captures
	 * property the proxy holds. */
	assert_true(file_has(log,
			     "selftest: counts=Sent: 0    Waiting to be sent: 0    Kept on this "
			     "device: 1"));
	assert_true(file_has(log, "selftest: consent=full"));
	assert_true(file_has(log, "selftest: done"));
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s.png", shots, names[i]);
		assert_int_equal(stat(path, &sb), 0);
		assert_true(sb.st_size > 10000); /* a blank window is ~3 KB */
	}
	/* The daemon followed the panel, and rvctl agrees. */
	get_consent(v, sizeof(v));
	assert_string_equal(v, "full");
	rvctl_consent(h, v, sizeof(v));
	assert_string_equal(v, "full");
	assert_int_equal(rvh_spool_files(h), 0);
}

/* The installed interface file (deploy/dbus/org.rearview.Daemon1.xml) names
 * every member the daemon exports, with the same types: a settings app
 * written from the file alone talks to the real thing. */
static void test_dbus_interface_file_matches_daemon(void **state)
{
	static const char *const members[] = {
		"<property name=\"Consent\" type=\"s\" access=\"read\"",
		"<property name=\"QuotaLeft\" type=\"u\" access=\"read\"",
		"<property name=\"Counts\" type=\"a{su}\" access=\"read\"",
		"<property name=\"Captures\" type=\"a(tssss)\" access=\"read\"",
		"<method name=\"SetConsent\"",
		"<arg type=\"s\" name=\"level\" direction=\"in\"",
		"<method name=\"DeleteAllData\"",
	};
	static const char *const file_members[] = {
		"<property name=\"Consent\" type=\"s\" access=\"read\"",
		"<property name=\"QuotaLeft\" type=\"u\" access=\"read\"",
		"<property name=\"Counts\" type=\"a{su}\" access=\"read\"",
		"<property name=\"Captures\" type=\"a(tssss)\" access=\"read\"",
		"<method name=\"SetConsent\"",
		"<arg name=\"level\" type=\"s\" direction=\"in\"",
		"<method name=\"DeleteAllData\"",
	};
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	sd_bus *bus = NULL;
	const char *xml;
	char path[256];

	(void)state;
	start("");
	assert_true(sd_bus_open_system(&bus) >= 0);
	assert_true(sd_bus_call_method(bus, NAME, PATH, "org.freedesktop.DBus.Introspectable",
				       "Introspect", &e, &reply, "") >= 0);
	assert_true(sd_bus_message_read(reply, "s", &xml) >= 0);
	snprintf(path, sizeof(path), "%s/deploy/dbus/org.rearview.Daemon1.xml", RV_SRC_DIR);
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		if (!strstr(xml, members[i]))
			fprintf(stderr, "daemon lacks %s\n", members[i]);
		assert_non_null(strstr(xml, members[i]));
		assert_true(file_has(path, file_members[i]));
	}
	/* Every property signals its changes, in both: none says it does not. */
	{
		const char *no = "EmitsChangedSignal\" value=\"false\"";
		const char *at = strstr(xml, "<interface name=\"org.rearview.Daemon1\">");

		assert_non_null(at);
		assert_null(strstr(at, no));
		assert_false(file_has(path, no));
	}
	sd_bus_message_unref(reply);
	sd_bus_error_free(&e);
	sd_bus_flush_close_unref(bus);
}

/* [dbus] enabled = false: the daemon runs on its sockets alone and never
 * appears on the bus (it is ready, so it would have asked by then). */
static void test_dbus_disabled_by_config_stays_off_the_bus(void **state)
{
	char v[128];

	(void)state;
	if (!fixture()) {
		fprintf(stderr, "skipped: %s\n", fx.why);
		skip();
	}
	assert_false(name_owned(NAME));
	cur_up = true;
	assert_int_equal(rvh_setup(&cur, "[dbus]\nenabled = false\n"), 0);
	rvctl_consent(&cur, v, sizeof(v));
	assert_string_equal(v, "local");
	assert_false(name_owned(NAME));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_dbus_set_consent_authorised_changes_it, teardown),
		cmocka_unit_test_teardown(test_dbus_set_consent_unauthorised_refused_by_polkit,
					  teardown),
		cmocka_unit_test_teardown(test_dbus_consent_change_signalled_to_second_client,
					  teardown),
		cmocka_unit_test_teardown(test_dbus_capture_arriving_signalled_to_second_client,
					  teardown),
		cmocka_unit_test_teardown(test_dbus_captures_changes_do_not_resend_the_list,
					  teardown),
		cmocka_unit_test_teardown(test_dbus_delete_all_data_removes_pending_and_files,
					  teardown),
		cmocka_unit_test_teardown(test_dbus_panel_toggle_and_delete_change_the_daemon,
					  teardown),
		cmocka_unit_test_teardown(test_dbus_interface_file_matches_daemon, teardown),
		cmocka_unit_test_teardown(test_dbus_disabled_by_config_stays_off_the_bus, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
