/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_service.c — the real rearviewd as systemd runs it: readiness
 * and stopping on a real NOTIFY_SOCKET (sd_notify).  Every wait is for the
 * event itself, with the harness's generous guard.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <poll.h>

#include <cmocka.h>

#include "daemon_harness.h"

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
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_daemon_service_stopping_notified,
						rvh_fixture_setup, rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
