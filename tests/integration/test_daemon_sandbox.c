/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_sandbox.c — the daemon's capture parser runs in a separate,
 * confined process (device/src/sandbox.h): a capture that crashes the
 * parser is refused and counted while the daemon survives and stores the
 * next capture; the parser cannot open a file; the worker process runs
 * with seccomp, no_new_privs, not as root, and holds no descriptor but its
 * channel and stderr.  Real rearviewd, rvctl and rv_helper_app
 * (daemon_harness.h), with the worker's test hooks on
 * (REARVIEWD_PARSER_TEST_HOOKS=1 in the daemon's environment: a capture
 * beginning with RVD-TEST-CRASH aborts the worker, one beginning with
 * RVD-TEST-OPEN makes it try to open /etc/passwd, RVD-TEST-HANG makes it
 * never answer, RVD-TEST-OVERSIZE makes it announce a 1 TiB answer): each
 * failure refuses only its capture, is counted, and the worker is
 * replaced.  Every wait has a generous guard.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"

static int setup(void **state)
{
	setenv("REARVIEWD_PARSER_TEST_HOOKS", "1", 1);
	return rvh_fixture_setup(state);
}

/* Whether one of the status' last errors contains `needle`; its text. */
static bool last_error_has(struct rvh *h, const char *needle, char *out, size_t cap)
{
	Rearview__AdminResponse *r = rvh_status(h);
	bool found = false;

	assert_non_null(r);
	for (size_t i = 0; i < r->status->n_last_errors && !found; i++) {
		if (strstr(r->status->last_errors[i], needle)) {
			found = true;
			if (out)
				snprintf(out, cap, "%s", r->status->last_errors[i]);
		}
	}
	rearview__admin_response__free_unpacked(r, NULL);
	return found;
}

static uint64_t parser_failures(struct rvh *h)
{
	Rearview__AdminResponse *r = rvh_status(h);
	uint64_t n;

	assert_non_null(r);
	n = r->status->parser_failures;
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

/* Starts a helper sending bytes that begin with `prefix`, asks the daemon
 * to capture it and waits until the daemon has dropped it (refused). */
static void hostile_capture(struct rvh *h, const char *prefix)
{
	pid_t bad = rvh_helper(h, "--not-a-capture", "--prefix", prefix, NULL);

	assert_true(rvh_wait_registered(h, bad, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)bad), 0);
	assert_true(rvh_wait_registered(h, bad, false));
}

static void test_daemon_sandbox_parser_crash_refused_daemon_survives(void **state)
{
	struct rvh *h = *state;
	char err[160];
	pid_t good;

	hostile_capture(h, "RVD-TEST-CRASH");
	assert_true(last_error_has(h, "capture parser crashed", err, sizeof(err)));
	fprintf(stderr, "refused: %s\n", err);
	assert_int_equal(parser_failures(h), 1);
	/* The daemon is alive and stores the next capture, through a new worker. */
	assert_int_equal(kill(h->daemon, 0), 0);
	assert_int_equal(waitpid(h->daemon, NULL, WNOHANG), 0);
	good = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, good, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)good), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	assert_int_equal(access(h->acklog, F_OK), 0);
	assert_int_equal(parser_failures(h), 1);
}

static void test_daemon_sandbox_parser_cannot_open_a_file(void **state)
{
	struct rvh *h = *state;
	char err[160];

	hostile_capture(h, "RVD-TEST-OPEN");
	assert_true(last_error_has(h, "open /etc/passwd:", err, sizeof(err)));
	fprintf(stderr, "worker: %s\n", err);
	assert_non_null(strstr(err, "open /etc/passwd: Permission denied"));
	if (geteuid() == 0)
		assert_null(strstr(err, "uid 0"));
	/* A refusal by the parser, not a failure of it. */
	assert_int_equal(parser_failures(h), 0);
}

/* The value of `key` ("Seccomp:") in /proc/PID/status, or -1. */
static long proc_status(pid_t pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

/* The daemon's children running as parser workers (the check's and, once
 * a summary was made, the summary's: the same command line) into
 * pids[0..max); their count. */
static size_t find_workers(pid_t daemon, pid_t *pids, size_t max)
{
	char path[64], buf[256];
	struct dirent *de;
	size_t found = 0;
	DIR *d = opendir("/proc");

	assert_non_null(d);
	while (found < max && (de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
		size_t n;
		FILE *f;

		if (pid <= 0 || proc_status(pid, "PPid:") != daemon)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		if (!(f = fopen(path, "r")))
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		/* argv[0] NUL argv[1] */
		if (n > strlen(buf) + 1 &&
		    !strcmp(buf + strlen(buf) + 1, "--capture-parser-worker"))
			pids[found++] = pid;
	}
	closedir(d);
	return found;
}

/* A parser worker of the daemon, or 0. */
static pid_t find_worker(pid_t daemon)
{
	pid_t w = 0;

	find_workers(daemon, &w, 1);
	return w;
}

static void test_daemon_sandbox_worker_confined(void **state)
{
	struct rvh *h = *state;
	char path[64];
	struct dirent *de;
	size_t nfds = 0;
	pid_t good, w;
	DIR *d;

	/* A capture starts the checking worker. */
	good = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, good, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)good), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	w = find_worker(h->daemon);
	assert_true(w > 0);
	assert_int_equal(proc_status(w, "Seccomp:"), 2); /* filter mode */
	assert_int_equal(proc_status(w, "NoNewPrivs:"), 1);
	if (geteuid() == 0)
		assert_true(proc_status(w, "Uid:") != 0);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)w);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		nfds++;
		/* Only stderr (the daemon's log) and the channel. */
		assert_true(!strcmp(de->d_name, "2") || !strcmp(de->d_name, "3"));
	}
	closedir(d);
	assert_true(nfds >= 1);
}

static bool alive(pid_t pid)
{
	return kill(pid, 0) == 0;
}

/* A good capture, stored: `n` captures in the spool once it is. */
static void stored_capture(struct rvh *h, size_t n)
{
	pid_t good = rvh_helper(h, NULL);

	assert_true(rvh_wait_registered(h, good, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)good), 0);
	assert_int_equal(rvh_wait_captures(h, n), n);
}

/* A worker that fails as `prefix` makes it is killed: the capture is
 * refused with `error`, counted in parser_failures, and the next capture
 * is stored by a new worker. */
static void worker_fails(struct rvh *h, const char *prefix, const char *error)
{
	char err[160];
	pid_t before[4], after[4];
	size_t nb, na, gone = 0, fresh = 0;

	stored_capture(h, 1);
	nb = find_workers(h->daemon, before, 4);
	assert_true(nb >= 1);
	hostile_capture(h, prefix);
	assert_true(last_error_has(h, error, err, sizeof(err)));
	fprintf(stderr, "refused: %s\n", err);
	assert_int_equal(parser_failures(h), 1);
	/* The failed worker was killed and reaped, not left behind. */
	for (size_t i = 0; i < nb; i++)
		gone += !alive(before[i]);
	assert_int_equal(gone, 1);
	stored_capture(h, 2);
	na = find_workers(h->daemon, after, 4);
	for (size_t i = 0; i < na; i++) {
		bool old = false;

		for (size_t j = 0; j < nb; j++)
			old |= after[i] == before[j];
		fresh += !old;
	}
	assert_true(fresh >= 1); /* a new checking worker */
	assert_int_equal(parser_failures(h), 1);
}

/* A worker that never answers: killed at the check's deadline (10 s). */
static void test_daemon_sandbox_parser_hang_refused_worker_restarted(void **state)
{
	worker_fails(*state, "RVD-TEST-HANG", "capture parser did not answer in time");
}

/* A worker announcing an answer larger than a check's (none). */
static void test_daemon_sandbox_parser_oversized_answer_refused_worker_restarted(void **state)
{
	worker_fails(*state, "RVD-TEST-OVERSIZE", "capture parser answered too much");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_daemon_sandbox_parser_crash_refused_daemon_survives, setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_sandbox_parser_cannot_open_a_file,
						setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_sandbox_worker_confined, setup,
						rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_sandbox_parser_hang_refused_worker_restarted, setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_sandbox_parser_oversized_answer_refused_worker_restarted, setup,
			rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
