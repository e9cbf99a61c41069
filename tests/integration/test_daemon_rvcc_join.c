/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_rvcc_join.c — a program built through rvcc joins rearviewd
 * with no source change: rv_rvcc_join_app (rvcc_join_app.c, no Rearview
 * header or call) runs with RV_SOCKET naming the real daemon's control
 * socket (tests/device/daemon_harness.h); it must register, and once
 * `rvctl foreground` names it, a capture the daemon takes must hold its
 * join_app_tick calls.  Every wait is for the event itself under the
 * harness's generous guard; a capture taken before tracing reached the
 * thread is simply followed by another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"

/* Starts the app with RV_SOCKET set; *in gets its stdin (closing it ends
 * the app). */
static pid_t start_app(struct rvh *h, int *in)
{
	char sock[160], out[160];
	int p[2];
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/control.sock", h->run);
	snprintf(out, sizeof(out), "%s/app.out", h->dir);
	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(p[0], 0);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		close(p[0]);
		close(p[1]);
		setenv("RV_SOCKET", sock, 1);
		execl(RV_TBIN_DIR "/integration/rv_rvcc_join_app", "rv_rvcc_join_app",
		      (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	*in = p[1];
	return pid;
}

/* Whether any capture in the daemon's state holds `method` (rvtrace
 * summary of each). */
static bool captured(struct rvh *h, const char *method)
{
	char cmd[512], line[512];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "find '%s' -name 'c-*.rvc' -exec %s/rvtrace summary {} \\; 2>/dev/null", h->state,
		 RV_BIN_DIR);
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		size_t n = strlen(line), m = strlen(method);
		found |= n > m && line[n - m - 1] == ' ' && strcmp(line + n - m, method) == 0;
	}
	pclose(p);
	return found;
}

static void test_daemon_rvcc_built_program_joins_and_is_captured(void **state)
{
	struct rvh h;
	int in = -1, st;
	pid_t app;
	size_t taken = 0;
	bool found = false;
	double until;

	(void)state;
	assert_int_equal(rvh_setup(&h, NULL), 0);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "consent full"), 0);
	app = start_app(&h, &in);
	assert_true(app > 0);
	/* Registered: the program joined by itself. */
	assert_true(rvh_wait_registered(&h, app, true));
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "foreground %d", (int)app), 0);
	until = rvh_now() + RVH_GUARD_S;
	while (!found && rvh_now() < until) {
		if (rvh_rvctl(&h, NULL, 0, "capture %d", (int)app) == 0 &&
		    rvh_wait_captures(&h, taken + 1) > taken)
			taken++;
		found = captured(&h, "join_app_tick");
		if (!found)
			rvh_sleep_ms(20);
	}
	print_message("%zu capture(s) taken\n", taken);
	close(in);
	assert_int_equal(waitpid(app, &st, 0), app);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rvh_teardown(&h);
	assert_true(found);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_daemon_rvcc_built_program_joins_and_is_captured),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
