/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_weston.c — rearview-weston.so end to end: a real Weston 10
 * (headless backend, kiosk-shell) loads the module, which reports to a real
 * rearviewd (tests/device/daemon_harness.h) the frames, clicks and focus of
 * real Wayland clients: Debian's weston-simple-shm (well behaved) and
 * rv_slow_client (tests/weston/, traced with librvtrace, slow on purpose in
 * named functions).  Neither client talks to events.sock: everything the
 * detectors see comes from the compositor.
 *
 *  - jank: four 80 ms frames of rv_slow_client → a JANK capture of its
 *    process whose top self time is slow_layout_pass;
 *  - click: the module's test-only switch ([rearview] test-click-every-ms,
 *    libweston's notify_button on a seat it creates: headless Weston has no
 *    input devices; every test sets test-seat, as kiosk-shell maps nothing
 *    on a compositor without a seat) clicks the client, whose handler takes 450 ms → a
 *    TOUCH_LATENCY capture attributed to the app, slow_click_handler on top.
 *
 * Skips visibly when weston is not installed or does not start headless.
 * Every wait is a hang guard only.
 */
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "daemon_harness.h"

#define WESTON_BIN "/usr/bin/weston"
#define SIMPLE_SHM "/usr/bin/weston-simple-shm"

struct wt {
	struct rvh h;
	char xdg[160];
	char display[32];
	pid_t weston, shm, client;
};

/* Starts argv[0] on the test's display, output to `log`; with `runtime`
 * (weston, loading the module) a sanitizer build's runtime is preloaded and
 * weston's own leaks are not this test's. */
static pid_t spawn(struct wt *t, const char *log, char *const argv[], bool runtime)
{
	char path[200];
	pid_t pid = fork();

	if (pid == 0) {
		int fd;

		snprintf(path, sizeof(path), "%s/%s", t->h.dir, log);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		setenv("XDG_RUNTIME_DIR", t->xdg, 1);
		setenv("WAYLAND_DISPLAY", t->display, 1);
		if (runtime && *RV_WESTON_PRELOAD) {
			setenv("LD_PRELOAD", RV_WESTON_PRELOAD, 1);
			setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Starts weston with the module; 0, or -1 when it cannot run here. */
static int start_weston(struct wt *t, int click_every_ms)
{
	char conf[200], module[PATH_MAX + 40], confarg[220], sockarg[64], sock[220];
	double until = rvh_now() + RVH_GUARD_S;
	FILE *f;

	if (access(WESTON_BIN, X_OK) < 0 || !realpath(RV_LIB_DIR "/rearview-weston.so", module)) {
		fprintf(stderr, "weston or the module is not installed: skipped\n");
		return -1;
	}
	/* A sanitizer build's module needs the sanitizer runtime in weston. */
	if (*RV_WESTON_PRELOAD && RV_WESTON_PRELOAD[0] != '/') {
		fprintf(stderr, "no sanitizer runtime to preload into weston (%s): skipped\n",
			RV_WESTON_PRELOAD);
		return -1;
	}
	memmove(module + 10, module, strlen(module) + 1);
	memcpy(module, "--modules=", 10);
	snprintf(t->xdg, sizeof(t->xdg), "%s/xdg", t->h.dir);
	snprintf(t->display, sizeof(t->display), "rv-weston-%d", (int)getpid());
	if (mkdir(t->xdg, 0700) < 0)
		return -1;
	snprintf(conf, sizeof(conf), "%s/weston.ini", t->h.dir);
	f = fopen(conf, "w");
	if (!f)
		return -1;
	fprintf(f, "[core]\nshell=kiosk-shell.so\n\n[rearview]\nevents-socket=%s/events.sock\n",
		t->h.run);
	/* Test-only: a seat (kiosk-shell maps nothing without one, and
	 * headless Weston has none), and the module's clicks. */
	fprintf(f, "test-seat=true\n");
	if (click_every_ms)
		fprintf(f, "test-click-every-ms=%d\n", click_every_ms);
	fclose(f);
	snprintf(confarg, sizeof(confarg), "--config=%s", conf);
	snprintf(sockarg, sizeof(sockarg), "--socket=%s", t->display);
	{
		char *argv[] = {(char *)WESTON_BIN,
				confarg,
				(char *)"--backend=headless-backend.so",
				sockarg,
				(char *)"--idle-time=0",
				module,
				NULL};

		t->weston = spawn(t, "weston.log", argv, true);
	}
	snprintf(sock, sizeof(sock), "%s/%s", t->xdg, t->display);
	while (rvh_now() < until) {
		if (waitpid(t->weston, NULL, WNOHANG) == t->weston) {
			fprintf(stderr, "weston exited at start (%s/weston.log): skipped\n",
				t->h.dir);
			t->weston = 0;
			return -1;
		}
		if (access(sock, F_OK) == 0)
			return 0;
		rvh_sleep_ms(20);
	}
	return -1;
}

static int setup_with(void **state, int click_every_ms)
{
	struct wt *t = calloc(1, sizeof(*t));

	if (!t || rvh_setup(&t->h, NULL) < 0) {
		fprintf(stderr, "rearviewd did not start\n");
		free(t);
		return -1;
	}
	*state = t;
	if (rvh_rvctl(&t->h, NULL, 0, "consent full") != 0)
		return -1;
	if (start_weston(t, click_every_ms) < 0)
		t->weston = 0;
	return 0;
}

static int setup_jank(void **state)
{
	return setup_with(state, 0);
}

static int setup_click(void **state)
{
	return setup_with(state, 1500);
}

static void reap(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGTERM);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static int teardown(void **state)
{
	struct wt *t = *state;

	reap(&t->client);
	reap(&t->shm);
	reap(&t->weston);
	rvh_teardown(&t->h);
	free(t);
	return 0;
}

/* Waits until the daemon's log has a line containing the formatted text. */
__attribute__((format(printf, 2, 3))) static bool daemon_log_has(struct wt *t, const char *fmt, ...)
{
	double until = rvh_now() + RVH_GUARD_S;
	char want[128], path[200], *buf = malloc(1 << 22);
	bool found = false;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/daemon.log", t->h.dir);
	while (buf && !found && rvh_now() < until) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, (1 << 22) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		found = strstr(buf, want) != NULL;
		if (!found)
			rvh_sleep_ms(20);
	}
	free(buf);
	return found;
}

/* Runs weston-simple-shm, then rv_slow_client with `extra` to completion.
 * Returns the client's pid (exited 0) or -1. */
static pid_t run_clients(struct wt *t, const char *extra)
{
	char control[200];
	double until = rvh_now() + RVH_GUARD_S;
	int st;

	/* weston-simple-shm first, mapped (the module reported it as the
	 * foreground) before our client maps on top of it. */
	if (access(SIMPLE_SHM, X_OK) == 0) {
		char *argv[] = {(char *)SIMPLE_SHM, NULL};

		t->shm = spawn(t, "simple-shm.log", argv, false);
		if (!daemon_log_has(t, "foreground: pid %d\"", (int)t->shm))
			return -1;
	}
	snprintf(control, sizeof(control), "%s/control.sock", t->h.run);
	{
		char *argv[] = {(char *)RV_TBIN_DIR "/weston/rv_slow_client",
				(char *)"--control",
				control,
				(char *)"--frames",
				(char *)"600",
				(char *)extra,
				(char *)(strcmp(extra, "--slow-at") ? NULL : "60"),
				NULL};

		t->client = spawn(t, "client.log", argv, false);
	}
	while (rvh_now() < until) {
		if (waitpid(t->client, &st, WNOHANG) == t->client) {
			pid_t pid = t->client;

			t->client = 0;
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? pid : -1;
		}
		rvh_sleep_ms(20);
	}
	return -1;
}

/* The id of the first pending capture of `kind`, or 0. */
static uint64_t wait_capture(struct wt *t, int kind, pid_t pid)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_captures(&t->h);
		uint64_t id = 0;

		for (size_t i = 0; r && i < r->captures->n_captures && !id; i++) {
			const Rearview__CaptureInfo *c = r->captures->captures[i];

			if (c->anomaly && (int)c->anomaly->kind == kind && c->anomaly->pid == pid &&
			    !strcmp(c->state, "pending"))
				id = c->id;
		}
		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (id)
			return id;
		rvh_sleep_ms(50);
	}
	return 0;
}

static void test_weston_slow_client_jank_captured_slow_layout_pass_on_top(void **state)
{
	struct wt *t = *state;
	char out[16384], want[64];
	pid_t pid;
	uint64_t id;

	if (!t->weston)
		skip();
	pid = run_clients(t, "--slow-at");
	assert_true(pid > 0);
	id = wait_capture(t, REARVIEW__ANOMALY_KIND__ANOMALY_JANK, pid);
	assert_true(id > 0);
	assert_int_equal(rvh_rvctl(&t->h, out, sizeof(out), "--json show %" PRIu64, id), 0);
	snprintf(want, sizeof(want), "\"pid\":%d,\"tid\":%d,", (int)pid, (int)pid);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "\"top_self\":[{\"name\":\"slow_layout_pass\""));
	/* The unmodified well-behaved client's frames reached the detectors
	 * too (it is not traced: the daemon has no process to capture). */
	if (t->shm > 0)
		assert_true(daemon_log_has(t, "frame for unregistered pid %d\"", (int)t->shm));
}

static void test_weston_slow_click_touch_latency_app_slow_click_handler_on_top(void **state)
{
	struct wt *t = *state;
	char out[16384], want[64];
	pid_t pid;
	uint64_t id;

	if (!t->weston)
		skip();
	pid = run_clients(t, "--slow-click");
	assert_true(pid > 0);
	id = wait_capture(t, REARVIEW__ANOMALY_KIND__ANOMALY_TOUCH_LATENCY, pid);
	assert_true(id > 0);
	assert_int_equal(rvh_rvctl(&t->h, out, sizeof(out), "--json show %" PRIu64, id), 0);
	snprintf(want, sizeof(want), "\"pid\":%d,\"tid\":%d,", (int)pid, (int)pid);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "\"attribution\":\"app\""));
	assert_non_null(strstr(out, "\"top_self\":[{\"name\":\"slow_click_handler\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_weston_slow_client_jank_captured_slow_layout_pass_on_top, setup_jank,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_weston_slow_click_touch_latency_app_slow_click_handler_on_top,
			setup_click, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
