/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_service.c — the real rearviewd as systemd runs it:
 *  - readiness and stopping on a real NOTIFY_SOCKET (sd_notify);
 *  - socket activation: systemd-socket-activate (systemd's own launcher)
 *    creates control.sock, events.sock and admin.sock, starts the daemon
 *    on the first connection and passes them by name (LISTEN_FDS,
 *    LISTEN_PID, LISTEN_FDNAMES); an app registers through them;
 *  - the shipped unit's sandbox: rearviewd run by rv_unit_sandbox under
 *    deploy/rearviewd.service.in's capabilities and system-call filter, as
 *    an unprivileged user, still writes off-CPU records for the demo app
 *    (another user's process); without the unit's CAP_PERFMON it cannot;
 *  - conf.d: a drop-in in rearviewd.conf.d/ overrides the file;
 *  - the shipped example config's groups, on a system the shipped sysusers
 *    snippet was applied to (a private /etc/group in a mount namespace):
 *    a user in rearview-events reports on events.sock, one in
 *    rearview-settings uses rvctl, a user in neither is refused both.
 * Every wait is for the event itself, with the harness's generous guard.
 */
#include <grp.h>
#include <linux/perf_event.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <poll.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "rearview/event.pb-c.h"

/* Fixtures for the tests that prepare and start the daemon themselves:
 * the state is a struct rvh nothing started yet, torn down (daemon and
 * helpers killed, directory removed) even when the test failed. */
static int own_setup(void **state)
{
	struct rvh *h = calloc(1, sizeof(*h));

	if (!h)
		return -1;
	h->notify_fd = -1;
	*state = h;
	return 0;
}

static int own_teardown(void **state)
{
	struct rvh *h = *state;

	if (h->dir[0])
		rvh_teardown(h);
	free(h);
	return 0;
}

/* Reads the daemon's notifications until one has the line `want`; all
 * read are appended to seen[cap].  Fails after the guard. */
static void wait_notify(struct rvh *h, const char *want, char *seen, size_t cap)
{
	double until = rvh_now() + RVH_GUARD_S;
	char buf[1024];

	while (rvh_now() < until) {
		ssize_t n = recv(h->notify_fd, buf, sizeof(buf) - 1, 0);

		if (n <= 0)
			continue; /* SO_RCVTIMEO: look at the clock again */
		buf[n] = '\0';
		snprintf(seen + strlen(seen), cap - strlen(seen), "%s\n", buf);
		for (char *save, *l = strtok_r(buf, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save))
			if (!strcmp(l, want))
				return;
	}
	fail_msg("no %s from the daemon (seen: %s)", want, seen);
}

/* The harness waited for READY=1; SIGTERM brings STOPPING=1 (with a
 * STATUS=) before the daemon exits 0. */
static void test_daemon_service_stopping_notified(void **state)
{
	struct rvh *h = *state;
	char seen[2048] = "";
	int st;

	kill(h->daemon, SIGTERM);
	wait_notify(h, "STOPPING=1", seen, sizeof(seen));
	assert_non_null(strstr(seen, "STATUS=stopping"));
	assert_int_equal(waitpid(h->daemon, &st, 0), h->daemon);
	h->daemon = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Whether program is on PATH. */
static bool have(const char *program)
{
	char cmd[128], out[256];

	snprintf(cmd, sizeof(cmd), "command -v %s", program);
	return rvh_run_cmd(out, sizeof(out), cmd) == 0;
}

/* Whether daemon.log holds `text`. */
static bool log_has(struct rvh *h, const char *text)
{
	char cmd[512], out[64];

	snprintf(cmd, sizeof(cmd), "grep -qF -- '%s' '%s/daemon.log'", text, h->dir);
	return rvh_run_cmd(out, sizeof(out), cmd) == 0;
}

/* Connects to control.sock once it exists (bounded), then exits: under
 * systemd-socket-activate the first connection is what starts the daemon. */
static pid_t first_connection(struct rvh *h)
{
	pid_t pid = fork();

	if (pid == 0) {
		double until = rvh_now() + RVH_GUARD_S;

		while (rvh_now() < until) {
			int fd = rvh_connect(h, "control.sock");

			if (fd >= 0) {
				close(fd);
				_exit(0);
			}
			rvh_sleep_ms(10);
		}
		_exit(1);
	}
	return pid;
}

static void test_daemon_service_socket_activation_serves_app(void **state)
{
	char ctl[160], ev[160], adm[160], env[200];
	const char *wrap[12];
	struct rvh *h = *state;
	struct stat st;
	pid_t poke, app;
	int status;

	if (!have("systemd-socket-activate")) {
		print_message("systemd-socket-activate (package systemd) is missing\n");
		skip();
	}
	assert_int_equal(rvh_prepare_apps(h, NULL, NULL, 0), 0);
	assert_int_equal(mkdir(h->run, 0755), 0);
	snprintf(ctl, sizeof(ctl), "--listen=%s/control.sock", h->run);
	snprintf(ev, sizeof(ev), "--listen=%s/events.sock", h->run);
	snprintf(adm, sizeof(adm), "--listen=%s/admin.sock", h->run);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", h->notify);
	wrap[0] = "systemd-socket-activate";
	wrap[1] = ctl;
	wrap[2] = ev;
	wrap[3] = adm;
	wrap[4] = "--fdname=control:events:admin";
	wrap[5] = "-E";
	wrap[6] = env;
	wrap[7] = NULL;
	h->wrap = wrap;
	poke = first_connection(h);
	assert_true(poke > 0);
	assert_int_equal(rvh_start_daemon(h), 0);
	assert_int_equal(waitpid(poke, &status, 0), poke);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The daemon listens on the passed sockets, not on sockets of its own. */
	assert_true(log_has(h, "control.sock: passed by systemd"));
	assert_true(log_has(h, "events.sock: passed by systemd"));
	assert_true(log_has(h, "admin.sock: passed by systemd"));

	/* An app registers on control.sock; admin.sock answers (rvh_status). */
	app = rvh_helper(h, NULL);
	assert_true(app > 0);
	assert_true(rvh_wait_registered(h, app, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "status"), 0);
	/* events.sock takes a connection. */
	status = rvh_connect(h, "events.sock");
	assert_true(status >= 0);
	close(status);

	/* The socket files are the launcher's: a clean stop leaves them. */
	assert_true(WIFEXITED(rvh_stop_daemon(h, SIGTERM)));
	snprintf(ctl, sizeof(ctl), "%s/control.sock", h->run);
	assert_int_equal(stat(ctl, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	rvh_teardown(h);
}

/* Whether this process may open a context-switch perf event on itself:
 * when not, the kernel here has no perf events at all and the sandbox
 * test has nothing to compare against. */
static bool perf_events_here(void)
{
	struct perf_event_attr a = {.type = PERF_TYPE_SOFTWARE,
				    .size = sizeof(a),
				    .config = PERF_COUNT_SW_DUMMY,
				    .context_switch = 1,
				    .exclude_kernel = 1,
				    .disabled = 1};
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

/* The field `key` ("Uid:", "CapEff:", "Seccomp:") of /proc/PID/status. */
static void proc_field(pid_t pid, const char *key, char *out, size_t cap)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "awk '$1 == \"%s\" { print $2 }' /proc/%d/status", key,
		 (int)pid);
	assert_int_equal(rvh_run_cmd(out, cap, cmd), 0);
	out[strcspn(out, "\n")] = '\0';
}

/* Runs rearviewd under `unit`'s sandbox as nobody, the demo app (as root:
 * another user) through a jank capture; returns whether the daemon wrote
 * off-CPU records for it (false: it logged that it could not). */
static bool sandboxed_offcpu(struct rvh *h, const char *unit, uint64_t cap_eff)
{
	const char *wrap[] = {RV_TBIN_DIR "/device/rv_unit_sandbox", unit, "nobody", NULL};
	struct passwd *pw = getpwnam("nobody");
	char out[4096], cmd[512], file[256];
	unsigned long long eff;

	assert_non_null(pw);
	assert_int_equal(rvh_prepare_apps(h, NULL, NULL, 0), 0);
	/* The daemon's directories are its user's, as the unit's are. */
	assert_int_equal(chmod(h->dir, 0755), 0);
	assert_int_equal(chmod(h->notify, 0666), 0);
	assert_int_equal(mkdir(h->run, 0755), 0);
	assert_int_equal(mkdir(h->state, 0700), 0);
	assert_int_equal(chown(h->run, pw->pw_uid, pw->pw_gid), 0);
	assert_int_equal(chown(h->state, pw->pw_uid, pw->pw_gid), 0);
	h->wrap = wrap;
	assert_int_equal(rvh_start_daemon(h), 0);

	/* The sandbox is on the daemon itself. */
	proc_field(h->daemon, "Uid:", out, sizeof(out));
	assert_int_equal(strtoul(out, NULL, 10), pw->pw_uid);
	proc_field(h->daemon, "CapEff:", out, sizeof(out));
	eff = strtoull(out, NULL, 16);
	assert_int_equal(eff, cap_eff);
	proc_field(h->daemon, "Seccomp:", out, sizeof(out));
	assert_string_equal(out, "2");
	proc_field(h->daemon, "NoNewPrivs:", out, sizeof(out));
	assert_string_equal(out, "1");

	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);
	assert_true(rvh_run_demo_app(h) > 0);
	assert_true(rvh_wait_captures(h, 1) >= 1);
	if (log_has(h, "no off-CPU records"))
		return false;
	snprintf(cmd, sizeof(cmd), "find '%s' -name 'c-*.rvc' | head -n 1", h->dir);
	assert_int_equal(rvh_run_cmd(file, sizeof(file), cmd), 0);
	file[strcspn(file, "\n")] = '\0';
	assert_true(file[0] != '\0');
	snprintf(cmd, sizeof(cmd), "%s/rvtrace why build_list_item_slow '%s'", RV_BIN_DIR, file);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	print_message("%s", out);
	return !strstr(out, "no off-CPU records") && rvh_why_share(out, "off-CPU:") > 50;
}

static bool sandbox_possible(void)
{
	if (geteuid() != 0) {
		print_message("the sandbox test switches users: it needs root\n");
		return false;
	}
	if (!have("systemd-analyze")) {
		print_message("systemd-analyze (package systemd) is missing\n");
		return false;
	}
	if (!perf_events_here()) {
		print_message("no perf events in this kernel: nothing to compare\n");
		return false;
	}
	return true;
}

/* The shipped unit: CAP_PERFMON alone (CapEff bit 38), @system-service
 * plus perf_event_open; off-CPU records for another user's app. */
static void test_daemon_service_unit_sandbox_keeps_offcpu_records(void **state)
{
	struct rvh *h = *state;

	if (!sandbox_possible())
		skip();
	assert_true(sandboxed_offcpu(h, RV_SRC_DIR "/deploy/rearviewd.service.in",
				     1ull << 38 /* CAP_PERFMON */));
	rvh_teardown(h);
}

/* The same unit without CAP_PERFMON: perf_event_open on another user's
 * thread is refused (the capability is what the unit needs, whatever
 * kernel.perf_event_paranoid says) and the daemon says so. */
static void test_daemon_service_unit_without_perfmon_loses_offcpu_records(void **state)
{
	char unit[128], cmd[512], out[64];
	struct rvh *h = *state;
	int fd;

	if (!sandbox_possible())
		skip();
	snprintf(unit, sizeof(unit), "/tmp/rvd-unit-XXXXXX");
	fd = mkstemp(unit);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "sed -e 's/^CapabilityBoundingSet=.*/CapabilityBoundingSet=/' "
		 "-e 's/^AmbientCapabilities=.*/AmbientCapabilities=/' '%s' > '%s'",
		 RV_SRC_DIR "/deploy/rearviewd.service.in", unit);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	assert_false(sandboxed_offcpu(h, unit, 0));
	unlink(unit);
	rvh_teardown(h);
}

/* rearviewd.conf.d/NAME.conf is read after rearviewd.conf, the later file
 * winning: control.sock gets the last drop-in's mode. */
static void test_daemon_service_conf_d_dropin_overrides_file(void **state)
{
	char d[160], path[200];
	struct rvh *h = *state;
	struct stat st;
	FILE *f;

	assert_int_equal(rvh_prepare_apps(h, "[sockets]\ncontrol_mode = 0666\n", NULL, 0), 0);
	snprintf(d, sizeof(d), "%s.d", h->conf);
	assert_int_equal(mkdir(d, 0755), 0);
	snprintf(path, sizeof(path), "%s/10-first.conf", d);
	assert_non_null(f = fopen(path, "w"));
	fputs("[sockets]\ncontrol_mode = 0660\n", f);
	assert_int_equal(fclose(f), 0);
	snprintf(path, sizeof(path), "%s/20-second.conf", d);
	assert_non_null(f = fopen(path, "w"));
	fputs("[sockets]\ncontrol_mode = 0600\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rvh_start_daemon(h), 0);
	snprintf(path, sizeof(path), "%s/control.sock", h->run);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	rvh_teardown(h);
}

/* As uid/gid 65534 with `group` as its only supplementary group (none
 * when (gid_t)-1): connects to events.sock and, with junk, sends a frame
 * header of 0xff bytes (bad magic: all the daemon reads before it answers,
 * so nothing is left unread when it closes); returns the code of the first Error the daemon
 * answers — DENIED, which a refused peer gets at once, or a framing error
 * for junk it read — or -EACCES when the socket file's mode and group
 * refuse the connection before the daemon sees it.  (A refused peer sends nothing: the daemon
 * closes on it, and unread bytes would turn its DENIED into a reset.) */
static int events_answer_as(struct rvh *h, gid_t group, bool junk)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct timeval tv = {RVH_GUARD_S, 0};
		uint8_t bytes[RV_FRAME_HEADER_SIZE], *payload;
		size_t len;
		int fd, code = 200;

		if (setgroups(group == (gid_t)-1 ? 0 : 1, &group) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			_exit(99);
		if ((fd = rvh_connect(h, "events.sock")) < 0)
			_exit(errno == EACCES ? 96 : 98);
		memset(bytes, 0xff, sizeof(bytes));
		if (junk)
			(void)!send(fd, bytes, sizeof(bytes), MSG_NOSIGNAL);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (rv_frame_recv(fd, RV_CHANNEL_EVENT, RV_FRAME_MAX_DEFAULT, &payload, &len, NULL,
				  NULL) == 1) {
			Rearview__EventMessage *m =
				rearview__event_message__unpack(NULL, len, payload);

			if (m && m->msg_case == REARVIEW__EVENT_MESSAGE__MSG_ERROR)
				code = m->error->code;
			rearview__event_message__free_unpacked(m, NULL);
		}
		_exit(code < 98 ? code : 97);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) < 97);
	return WEXITSTATUS(st) == 96 ? -EACCES : WEXITSTATUS(st);
}

/* `rvctl status` as uid/gid 65534 in `group` (none: (gid_t)-1); its exit
 * status. */
static int rvctl_as(struct rvh *h, gid_t group)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		if (setgroups(group == (gid_t)-1 ? 0 : 1, &group) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			_exit(99);
		execl(RV_BIN_DIR "/rvctl", "rvctl", "-r", h->run, "status", (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* The gid of `name` in the group file at path. */
static gid_t gid_in(const char *path, const char *name)
{
	FILE *f = fopen(path, "r");
	struct group *g;
	gid_t gid = (gid_t)-1;

	assert_non_null(f);
	while ((g = fgetgrent(f)) != NULL)
		if (!strcmp(g->gr_name, name))
			gid = g->gr_gid;
	fclose(f);
	assert_true(gid != (gid_t)-1);
	return gid;
}

static void test_daemon_service_example_config_groups_admit_their_members(void **state)
{
	char root[160], cmd[1024], out[512], path[200], mount[512];
	const char *wrap[8];
	gid_t events, settings;
	struct rvh *h = *state;
	struct stat st;

	if (geteuid() != 0 || !have("systemd-sysusers") || !have("unshare")) {
		print_message("needs root, systemd-sysusers and unshare (util-linux)\n");
		skip();
	}
	assert_int_equal(rvh_prepare_apps(h, "[dbus]\nenabled = false\n", NULL, 0), 0);
	assert_int_equal(chmod(h->dir, 0755), 0);
	/* This system's accounts plus what the shipped snippet adds. */
	snprintf(root, sizeof(root), "%s/root", h->dir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/etc' && cp /etc/passwd /etc/group '%s/etc/' && "
		 "(cp /etc/shadow /etc/gshadow '%s/etc/' 2>/dev/null || true) && "
		 "systemd-sysusers --root='%s' '%s/deploy/rearview.sysusers' 2>&1",
		 root, root, root, root, RV_SRC_DIR);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	snprintf(path, sizeof(path), "%s/etc/group", root);
	events = gid_in(path, "rearview-events");
	settings = gid_in(path, "rearview-settings");
	/* The shipped example, as a drop-in over the harness's file. */
	snprintf(cmd, sizeof(cmd),
		 "mkdir '%s.d' && cp '%s/deploy/rearviewd.conf.example' '%s.d/50-example.conf'",
		 h->conf, RV_SRC_DIR, h->conf);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	/* The daemon alone sees that group file. */
	snprintf(mount, sizeof(mount), "mount --bind '%s' /etc/group && exec \"$0\" \"$@\"", path);
	wrap[0] = "unshare";
	wrap[1] = "-m";
	wrap[2] = "sh";
	wrap[3] = "-c";
	wrap[4] = mount;
	wrap[5] = NULL;
	h->wrap = wrap;
	assert_int_equal(rvh_start_daemon(h), 0);
	assert_int_equal(chmod(h->run, 0755), 0);

	/* The sockets carry the groups, with the example's modes. */
	snprintf(path, sizeof(path), "%s/events.sock", h->run);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_gid, events);
	assert_int_equal(st.st_mode & 0777, 0660);
	snprintf(path, sizeof(path), "%s/admin.sock", h->run);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_gid, settings);

	/* A compositor's user in rearview-events: its bytes are read (a framing
	 * error, not a refusal); a user not in it: refused by the socket's mode. */
	assert_int_equal(events_answer_as(h, events, true), REARVIEW__ERROR__CODE__MALFORMED);
	assert_int_equal(events_answer_as(h, (gid_t)-1, false), -EACCES);
	assert_int_equal(events_answer_as(h, settings, false), -EACCES);
	/* The settings panel's user in rearview-settings: rvctl works. */
	assert_int_equal(rvctl_as(h, settings), 0);
	assert_int_not_equal(rvctl_as(h, (gid_t)-1), 0);
	rvh_teardown(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_daemon_service_stopping_notified,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_service_socket_activation_serves_app,
						own_setup, own_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_service_unit_sandbox_keeps_offcpu_records, own_setup,
			own_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_service_unit_without_perfmon_loses_offcpu_records, own_setup,
			own_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_service_conf_d_dropin_overrides_file,
						own_setup, own_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_service_example_config_groups_admit_their_members, own_setup,
			own_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
