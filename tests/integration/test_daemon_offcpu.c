/*
 * test_daemon_offcpu.c — why the time went, end to end: the real rearviewd
 * (tests/device/daemon_harness.h) opens perf events on the thread it traces
 * in the real instrumented rearview-demo-app; a burst of slow frames makes
 * the jank detector capture it; the stored capture carries the daemon's
 * OFFCPU records, and `rvtrace why` splits the methods by what they did:
 * the slow list-item builder (a nanosleep: the thread blocks) mostly
 * off-CPU and blocked, the CPU-bound spin_work mostly on-CPU.  Shares are
 * compared with generous margins, never absolute times; when perf events
 * cannot be opened here (the daemon logs it) the test skips visibly.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"

static int setup(void **state)
{
	struct rvh *h = calloc(1, sizeof(*h));

	if (!h || rvh_setup(h, NULL) < 0) {
		fprintf(stderr, "rearviewd did not start\n");
		free(h);
		return -1;
	}
	*state = h;
	return 0;
}

static int teardown(void **state)
{
	rvh_teardown(*state);
	free(*state);
	return 0;
}

/* Runs a shell command; its stdout into out (NUL-terminated).  Exit status
 * or -1. */
static int run(char *out, size_t cap, const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t n;
	int st;

	if (!p)
		return -1;
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The percentage after `key` ("on-CPU: 12.000 (34.5%)") in `why`'s output. */
static double share(const char *out, const char *key)
{
	const char *p = strstr(out, key);
	double us, pct;

	assert_non_null(p);
	assert_int_equal(sscanf(p + strlen(key), " %lf (%lf%%)", &us, &pct), 2);
	return pct;
}

static void test_daemon_offcpu_demo_capture_splits_blocked_and_cpu(void **state)
{
	struct rvh *h = *state;
	char cmd[512], file[256], out[4096];

	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);
	assert_true(rvh_run_demo_app(h) > 0);
	assert_true(rvh_wait_captures(h, 1) >= 1);
	snprintf(cmd, sizeof(cmd), "grep -c 'no off-CPU records' '%s/daemon.log'", h->dir);
	if (run(out, sizeof(out), cmd) == 0) {
		print_message("rearviewd could not open perf events here\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd), "find '%s' -name 'c-*.rvc' | head -n 1", h->dir);
	assert_int_equal(run(file, sizeof(file), cmd), 0);
	file[strcspn(file, "\n")] = '\0';
	assert_true(file[0] != '\0');

	snprintf(cmd, sizeof(cmd), "%s/rvtrace why build_list_item_slow '%s'", RV_BIN_DIR, file);
	assert_int_equal(run(out, sizeof(out), cmd), 0);
	print_message("%s", out);
	assert_null(strstr(out, "no off-CPU records"));
	assert_true(share(out, "off-CPU:") > 50);
	assert_true(share(out, "blocked:") > 50);
	assert_true(share(out, "blocked:") > share(out, "preempted:"));
	assert_non_null(strstr(out, "faults minor"));

	snprintf(cmd, sizeof(cmd), "%s/rvtrace why spin_work '%s'", RV_BIN_DIR, file);
	assert_int_equal(run(out, sizeof(out), cmd), 0);
	print_message("%s", out);
	assert_true(share(out, "blocked:") < 50);
	assert_true(share(out, "on-CPU:") > share(out, "blocked:"));

	/* The summary's columns and the JSON's reasons come from the same records. */
	snprintf(cmd, sizeof(cmd), "%s/rvtrace summary --json '%s'", RV_BIN_DIR, file);
	assert_int_equal(run(out, sizeof(out), cmd), 0);
	assert_non_null(strstr(out, "\"offcpu_reasons\":[{\"reason\":\"blocked\""));
	snprintf(cmd, sizeof(cmd), "%s/rvtrace summary '%s'", RV_BIN_DIR, file);
	assert_int_equal(run(out, sizeof(out), cmd), 0);
	assert_non_null(strstr(out, "off_cpu_incl"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_daemon_offcpu_demo_capture_splits_blocked_and_cpu, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
