/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_demo_thermal.c — the real rearviewd (tests/device/daemon_harness.h)
 * polling the fake sysfs tree of the real rearview-demo-thermal, with the
 * real rearview-demo-app in the foreground: one throttling episode must
 * give one THERMAL capture of the app, and the tree must end cooled down.
 * Every wait is a hang guard only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"

/* Runs argv[0] from RV_BIN_DIR with stdout+stderr to DIR/<log>. */
static pid_t spawn(struct rvh *h, const char *log, char *const argv[])
{
	char exe[200];

	snprintf(exe, sizeof(exe), "%s/%s", RV_BIN_DIR, argv[0]);
	return rvh_spawn(h, log, exe, argv);
}

static long read_long_file(const char *dir, const char *rel)
{
	char path[300], buf[32];
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

static void test_demo_thermal_one_episode_one_thermal_capture(void **state)
{
	struct rvh *h = *state;
	char root[160], events[160];
	char *app_argv[] = {(char *)"rearview-demo-app",
			    (char *)"--events",
			    events,
			    (char *)"--frames",
			    (char *)"0",
			    (char *)"--slow-every",
			    (char *)"0",
			    NULL};
	char *th_argv[] = {(char *)"rearview-demo-thermal",
			   (char *)"--root",
			   root,
			   (char *)"--start",
			   (char *)"60000",
			   (char *)"--trip",
			   (char *)"63000",
			   (char *)"--interval",
			   (char *)"50",
			   (char *)"--hold",
			   (char *)"6",
			   (char *)"--cycles",
			   (char *)"1",
			   NULL};
	Rearview__AdminResponse *r;
	FILE *f;
	pid_t app, th;

	snprintf(root, sizeof(root), "%s/thermal", h->dir);
	snprintf(events, sizeof(events), "%s/events.sock", h->run);
	rvh_stop_daemon(h, SIGTERM);
	f = fopen(h->conf, "a");
	assert_non_null(f);
	fprintf(f, "[thermal]\nsysfs_root = %s\npoll_ms = 20\n", root);
	fclose(f);
	assert_int_equal(rvh_start_daemon(h), 0);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);

	app = spawn(h, "app.log", app_argv);
	assert_true(app > 0);
	assert_true(rvh_wait_traced(h, app, false));
	th = spawn(h, "thermal.log", th_argv);
	assert_true(th > 0);
	assert_int_equal(rvh_wait_exit(h, th), 0);

	assert_int_equal(rvh_wait_captures(h, 1), 1);
	r = rvh_captures(h);
	assert_non_null(r);
	assert_int_equal(r->captures->n_captures, 1);
	assert_int_equal(r->captures->captures[0]->anomaly->kind,
			 REARVIEW__ANOMALY_KIND__ANOMALY_THERMAL);
	assert_int_equal(r->captures->captures[0]->anomaly->pid, app);
	rearview__admin_response__free_unpacked(r, NULL);
	/* The episode ended: cooled to the start, cooling device released. */
	assert_int_equal(read_long_file(root, "thermal_zone0/temp"), 60000);
	assert_int_equal(read_long_file(root, "cooling_device0/cur_state"), 0);
	assert_int_equal(read_long_file(root, "thermal_zone0/trip_point_0_temp"), 63000);
}

static void test_demo_thermal_bad_arguments_usage_error(void **state)
{
	struct rvh *h = *state;
	char root[160];
	char *trip_below[] = {(char *)"rearview-demo-thermal",
			      (char *)"--root",
			      root,
			      (char *)"--start",
			      (char *)"70000",
			      (char *)"--trip",
			      (char *)"60000",
			      NULL};
	char *garbage[] = {(char *)"rearview-demo-thermal",
			   (char *)"--root",
			   root,
			   (char *)"--step",
			   (char *)"12x",
			   NULL};
	char *no_root[] = {(char *)"rearview-demo-thermal", NULL};

	snprintf(root, sizeof(root), "%s/thermal", h->dir);
	assert_int_equal(rvh_wait_exit(h, spawn(h, "bad.log", trip_below)), 2);
	assert_int_equal(rvh_wait_exit(h, spawn(h, "bad.log", garbage)), 2);
	assert_int_equal(rvh_wait_exit(h, spawn(h, "bad.log", no_root)), 2);
	/* Nothing was created. */
	assert_int_equal(access(root, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_demo_thermal_one_episode_one_thermal_capture,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_demo_thermal_bad_arguments_usage_error,
						rvh_fixture_setup, rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
