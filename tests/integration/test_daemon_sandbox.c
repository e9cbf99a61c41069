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
 * replaced; a hung check stalls nothing else (other apps' captures, admin
 * requests).  Every wait has a generous guard.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "capture.h" /* RVD_CHECK_WORKERS, RVD_CHECK_QUEUE_MAX */
#include "daemon_harness.h"

static int setup(void **state)
{
	setenv("REARVIEWD_PARSER_TEST_HOOKS", "1", 1);
	unsetenv("REARVIEWD_PARSER_CHECK_MS");
	return rvh_fixture_setup(state);
}

/* As setup, with the checks' deadline an hour: a hung check stays hung
 * until the test ends it, however slow the machine. */
static int setup_long_check(void **state)
{
	setenv("REARVIEWD_PARSER_TEST_HOOKS", "1", 1);
	setenv("REARVIEWD_PARSER_CHECK_MS", "3600000", 1);
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

/* Waits (guarded) until a helper logged an Ack: the daemon sends it once
 * the capture is durable, and the helper writes it down a moment later. */
static bool wait_acked(struct rvh *h)
{
	for (double until = rvh_now() + RVH_GUARD_S; rvh_now() < until; rvh_sleep_ms(10))
		if (access(h->acklog, F_OK) == 0)
			return true;
	return false;
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
	assert_true(wait_acked(h));
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

static size_t busy_workers(pid_t daemon, pid_t *pids, size_t max)
{
	pid_t w[8];
	size_t n = find_workers(daemon, w, 8), found = 0;

	for (size_t i = 0; i < n && found < max; i++) {
		char path[64], line[512];
		bool busy = false;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/maps", (int)w[i]);
		if (!(f = fopen(path, "r")))
			continue;
		while (!busy && fgets(line, sizeof(line), f))
			busy = strstr(line, "/memfd:rv-capture") != NULL;
		fclose(f);
		if (busy)
			pids[found++] = w[i];
	}
	return found;
}

/* Waits (guarded) until `n` workers check a capture; their pids. */
static bool wait_busy_workers(pid_t daemon, pid_t *pids, size_t n)
{
	for (double until = rvh_now() + RVH_GUARD_S; rvh_now() < until; rvh_sleep_ms(10))
		if (busy_workers(daemon, pids, n) == n)
			return true;
	return false;
}

static void test_daemon_sandbox_worker_confined(void **state)
{
	struct rvh *h = *state;
	char path[64];
	struct dirent *de;
	size_t nfds, nw;
	pid_t good, w, ws[8];
	DIR *d;

	/* A capture starts the checking worker. */
	good = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, good, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)good), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	/* Every worker (the daemon starts them at its start: two for checks,
	 * one for summaries), once it confined itself — before it reads a
	 * request, so the one that checked the capture had. */
	nw = find_workers(h->daemon, ws, 8);
	assert_true(nw >= 1);
	for (size_t i = 0; i < nw; i++) {
		w = ws[i];
		for (double until = rvh_now() + RVH_GUARD_S;
		     proc_status(w, "Seccomp:") != 2 && rvh_now() < until;)
			rvh_sleep_ms(10);
		assert_int_equal(proc_status(w, "Seccomp:"), 2); /* filter mode */
		assert_int_equal(proc_status(w, "NoNewPrivs:"), 1);
		if (geteuid() == 0)
			assert_true(proc_status(w, "Uid:") != 0);
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)w);
		d = opendir(path);
		assert_non_null(d);
		nfds = 0;
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

/*
 * The daemon does not wait for a check: while one app's capture hangs its
 * checking worker, another app registers, its capture is checked by the
 * other worker, stored and acknowledged, and admin requests are answered —
 * all before the hung check ends (it never does: the test kills its
 * worker, which then refuses only that capture).  With the check on the
 * loop thread the daemon answers nothing until the check's deadline, an
 * hour here, and the waits below fail at their guard.
 */
static void test_daemon_sandbox_hung_check_does_not_stall_the_daemon(void **state)
{
	struct rvh *h = *state;
	Rearview__AdminResponse *r;
	pid_t bad, good, hung = 0, w[4];
	char err[160];
	size_t n;

	bad = rvh_helper(h, "--not-a-capture", "--prefix", "RVD-TEST-HANG", NULL);
	assert_true(rvh_wait_registered(h, bad, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)bad), 0);
	/* The check is under way: a worker holds the capture. */
	assert_true(wait_busy_workers(h->daemon, &hung, 1));

	good = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, good, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)good), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	assert_true(wait_acked(h));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "status"), 0);
	/* ... all while the first check is still hung. */
	assert_true(alive(hung));
	assert_int_equal(parser_failures(h), 0);
	r = rvh_status(h);
	assert_non_null(r);
	assert_non_null(rvh_find_proc(r, bad));
	rearview__admin_response__free_unpacked(r, NULL);
	n = find_workers(h->daemon, w, 4);
	assert_true(n >= 2); /* the hung one, the one that checked (and a summary's) */

	/* The hung worker dies: only its capture is refused. */
	assert_int_equal(kill(hung, SIGKILL), 0);
	assert_true(rvh_wait_registered(h, bad, false));
	assert_true(last_error_has(h, "capture parser crashed", err, sizeof(err)));
	fprintf(stderr, "refused: %s\n", err);
	assert_int_equal(parser_failures(h), 1);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
}

/* Waits (guarded) until a last error contains `needle`. */
static bool wait_last_error(struct rvh *h, const char *needle)
{
	for (double until = rvh_now() + RVH_GUARD_S; rvh_now() < until; rvh_sleep_ms(10))
		if (last_error_has(h, needle, NULL, 0))
			return true;
	return false;
}

static uint64_t not_captured(struct rvh *h)
{
	Rearview__AdminResponse *r = rvh_status(h);
	uint64_t n;

	assert_non_null(r);
	n = r->status->anomalies_not_captured;
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

/*
 * The checks' queue is bounded: with every checking worker hung, the next
 * RVD_CHECK_QUEUE_MAX answers wait and one more is refused with BUSY — its
 * process stays registered, the refusal is counted and named — while the
 * daemon answers admin requests.  When the hung workers die, only their
 * captures are refused, and the waiting ones are checked and stored in
 * turn by new workers.
 */
static void test_daemon_sandbox_full_check_queue_refuses_busy(void **state)
{
	struct rvh *h = *state;
	pid_t hung[RVD_CHECK_WORKERS], app[RVD_CHECK_QUEUE_MAX + 1];
	Rearview__AdminResponse *r;
	char err[160];

	for (int i = 0; i < RVD_CHECK_WORKERS; i++) {
		pid_t bad = rvh_helper(h, "--not-a-capture", "--prefix", "RVD-TEST-HANG", NULL);

		assert_true(rvh_wait_registered(h, bad, true));
		assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)bad), 0);
	}
	assert_true(wait_busy_workers(h->daemon, hung, RVD_CHECK_WORKERS));
	for (int i = 0; i <= RVD_CHECK_QUEUE_MAX; i++) {
		app[i] = rvh_helper(h, NULL);
		assert_true(app[i] > 0);
		assert_true(rvh_wait_registered(h, app[i], true));
	}
	for (int i = 0; i <= RVD_CHECK_QUEUE_MAX; i++)
		assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)app[i]), 0);
	/* Seventeen answers for sixteen places: exactly one refused. */
	assert_true(wait_last_error(h, "every capture check is busy"));
	assert_true(last_error_has(h, "every capture check is busy", err, sizeof(err)));
	fprintf(stderr, "refused: %s\n", err);
	assert_int_equal(not_captured(h), 1);
	assert_int_equal(rvh_wait_captures(h, 0), 0); /* nothing stored yet */
	r = rvh_status(h);
	assert_non_null(r);
	for (int i = 0; i <= RVD_CHECK_QUEUE_MAX; i++)
		assert_non_null(rvh_find_proc(r, app[i])); /* BUSY keeps its process */
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(parser_failures(h), 0);

	/* The hung workers die: the queue drains through new ones. */
	for (int i = 0; i < RVD_CHECK_WORKERS; i++)
		assert_int_equal(kill(hung[i], SIGKILL), 0);
	assert_int_equal(rvh_wait_captures(h, RVD_CHECK_QUEUE_MAX), RVD_CHECK_QUEUE_MAX);
	assert_int_equal(parser_failures(h), RVD_CHECK_WORKERS);
	assert_int_equal(not_captured(h), 1);
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
		cmocka_unit_test_setup_teardown(
			test_daemon_sandbox_hung_check_does_not_stall_the_daemon, setup_long_check,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_sandbox_full_check_queue_refuses_busy,
						setup_long_check, rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
