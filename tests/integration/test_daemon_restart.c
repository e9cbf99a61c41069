/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_restart.c — a real rearviewd is killed (SIGKILL) and restarted
 * while a real traced program (rearview-demo-app, librvtrace's control
 * thread) runs: the restarted daemon takes the program's tracing over with
 * no foreground event and can capture it; consent set to off then makes the
 * program unmap its rings (its reported buffers drop to 0 and its VmSize
 * shrinks by at least the ring).  Only one rearviewd serves a run
 * directory, and a socket a dead one left (one still being torn down,
 * right after SIGKILL, still answers connect()) never stops a restart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "daemon_harness.h"

/* The demo app on the harness's control socket, with an events socket that
 * never exists: it sends no foreground event of its own. */
static pid_t start_app(struct rvh *h)
{
	char control[160], events[160];
	char *argv[] = {(char *)"rearview-demo-app",
			(char *)"--events",
			events,
			(char *)"--control",
			control,
			(char *)"--frames",
			(char *)"0",
			(char *)"--slow-every",
			(char *)"0",
			(char *)"--quiet",
			NULL};

	snprintf(control, sizeof(control), "%s/control.sock", h->run);
	snprintf(events, sizeof(events), "%s/no-events.sock", h->dir);
	return rvh_spawn(h, "app.log", RV_BIN_DIR "/rearview-demo-app", argv);
}

/* Waits until the daemon reports `pid` traced (tid pid, buffer held) or,
 * with want=false, holding no buffer and traced by nobody. */
static bool wait_traced(struct rvh *h, pid_t pid, bool want)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_status(h);
		const Rearview__ProcessStatus *ps = rvh_find_proc(r, pid);
		bool traced = ps && ps->n_traced_tids == 1 && ps->traced_tids[0] == pid &&
			      ps->buffer_bytes > 0;
		bool released = ps && ps->n_traced_tids == 0 && ps->buffer_bytes == 0;

		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (want ? traced : released)
			return true;
		rvh_sleep_ms(20);
	}
	return false;
}

/* VmSize of `pid` in bytes (/proc/PID/status), or 0. */
static unsigned long long vm_size(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* The buffer bytes the daemon reports for `pid`. */
static uint64_t reported_bytes(struct rvh *h, pid_t pid)
{
	Rearview__AdminResponse *r = rvh_status(h);
	const Rearview__ProcessStatus *ps = rvh_find_proc(r, pid);
	uint64_t b = ps ? ps->buffer_bytes : 0;

	if (r)
		rearview__admin_response__free_unpacked(r, NULL);
	return b;
}

static void test_daemon_restart_sigkill_app_taken_over_then_released(void **state)
{
	struct rvh *h = *state;
	pid_t app = start_app(h);

	assert_true(app > 0);
	assert_true(rvh_wait_registered(h, app, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "foreground %d", (int)app), 0);
	assert_true(wait_traced(h, app, true));

	/* The daemon dies without a word; a new one knows nothing of the app. */
	rvh_stop_daemon(h, SIGKILL);
	assert_int_equal(rvh_start_daemon(h), 0);
	assert_true(rvh_wait_registered(h, app, true));
	/* Taken over with no foreground event, and capturable. */
	assert_true(wait_traced(h, app, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)app), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	{
		Rearview__AdminResponse *r = rvh_captures(h);

		assert_non_null(r);
		assert_int_equal(r->resp_case, REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES);
		assert_string_equal(r->captures->captures[0]->app_id, "rearview-demo-app");
		assert_true(r->captures->captures[0]->size > 128);
		rearview__admin_response__free_unpacked(r, NULL);
	}

	/* Consent off: the app stops and unmaps every ring — its address
	 * space shrinks by at least the ring it reported (the daemon's 32 MiB
	 * default dwarfs anything the demo allocates meanwhile). */
	uint64_t ring = reported_bytes(h, app);
	unsigned long long before = vm_size(app);

	assert_true(ring >= (1u << 20));
	assert_true(before > ring);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent off"), 0);
	assert_true(wait_traced(h, app, false));
	assert_true(before - vm_size(app) >= ring);
	/* Still registered, and a daemon restart at consent off takes nothing
	 * over. */
	rvh_stop_daemon(h, SIGKILL);
	assert_int_equal(rvh_start_daemon(h), 0);
	assert_true(rvh_wait_registered(h, app, true));
	assert_true(wait_traced(h, app, false));
}

/* A listener on RUN/control.sock that is not a live rearviewd (what a
 * daemon killed a moment ago leaves while the kernel tears it down): the
 * restart takes the run directory over instead of refusing it. */
static void test_daemon_restart_leftover_listener_not_a_running_daemon(void **state)
{
	struct rvh *h = *state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	Rearview__AdminResponse *r;
	int fd;

	assert_int_not_equal(rvh_stop_daemon(h, SIGKILL), -1);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.90s/control.sock", h->run);
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(rvh_start_daemon(h), 0);
	r = rvh_status(h);
	assert_non_null(r);
	rearview__admin_response__free_unpacked(r, NULL);
	close(fd);
}

/* A second rearviewd on a run directory a live one serves refuses, names
 * the running one's pid, and leaves its sockets alone. */
static void test_daemon_restart_second_daemon_refused(void **state)
{
	struct rvh *h = *state;
	struct rvh second = *h;
	char want[64], log[200], buf[65536];
	Rearview__AdminResponse *r;
	size_t n;
	FILE *f;

	second.daemon = 0;
	assert_int_equal(rvh_start_daemon(&second), -1);
	snprintf(log, sizeof(log), "%s/daemon.log", h->dir);
	f = fopen(log, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	snprintf(want, sizeof(want), "another rearviewd is running (pid %d)", (int)h->daemon);
	assert_non_null(strstr(buf, want));
	r = rvh_status(h);
	assert_non_null(r);
	assert_int_equal(r->resp_case, REARVIEW__ADMIN_RESPONSE__RESP_STATUS);
	rearview__admin_response__free_unpacked(r, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_daemon_restart_sigkill_app_taken_over_then_released, rvh_fixture_setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_restart_leftover_listener_not_a_running_daemon,
			rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_restart_second_daemon_refused,
						rvh_fixture_setup, rvh_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
