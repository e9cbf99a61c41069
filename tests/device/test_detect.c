/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_detect.c — the pure detectors (jank, touch, thermal, correlation),
 * the thermal sysfs reader on a fake tree, the registry's tracing plan, the
 * spool state machine and the configuration parser.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "detect.h"
#include "registry.h"
#include "spool.h"

#define MS 1000000ull

static const struct rvd_jank_config jank_cfg = {3, 16 * MS};

static void test_jank_k_late_frames_fires_once(void **state)
{
	struct rvd_jank_state st = {0};
	struct rvd_anomaly a;
	uint64_t t = 1000 * MS;

	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 10, 11, t, t + 20 * MS, &a), 0);
	/* The worst frame is the middle one: the anomaly is about its middle. */
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 10, 11, t + 20 * MS, t + 80 * MS, &a), 0);
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 10, 11, t + 80 * MS, t + 120 * MS, &a), 1);
	assert_int_equal(a.kind, RVD_ANOMALY_JANK);
	assert_int_equal(a.pid, 10);
	assert_int_equal(a.tid, 11);
	assert_int_equal(a.monotonic_ns, t + 120 * MS);
	assert_int_equal(a.focus_ns, t + 50 * MS);
	assert_true(a.severity > 0 && a.severity <= 100);
	/* The count restarts: the next late frame alone does not fire. */
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 10, 11, t, t + 40 * MS, &a), 0);
}

static void test_jank_on_time_frame_resets_count(void **state)
{
	struct rvd_jank_state st = {0};
	struct rvd_anomaly a;

	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 0, 20 * MS, &a), 0);
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 0, 20 * MS, &a), 0);
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 0, 10 * MS, &a), 0);
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 0, 20 * MS, &a), 0);
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 0, 20 * MS, &a), 0);
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 0, 20 * MS, &a), 1);
	/* Exactly at the budget is on time. */
	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 0, 16 * MS, &a), 0);
	assert_int_equal(st.late, 0);
}

static void test_jank_backwards_frame_rejected(void **state)
{
	struct rvd_jank_state st = {0};
	struct rvd_anomaly a;

	assert_int_equal(rvd_jank_feed(&jank_cfg, &st, 1, 1, 50, 10, &a), -EINVAL);
}

static void test_touch_over_threshold_attributed(void **state)
{
	struct rvd_anomaly a;

	/* 401 ms total, 300 in delivery: the runtime's fault. */
	assert_int_equal(rvd_touch_eval(400 * MS, 5, 6, 0, 300 * MS, 401 * MS, &a), 1);
	assert_int_equal(a.kind, RVD_ANOMALY_TOUCH);
	assert_int_equal(a.attribution, RVD_TOUCH_DELIVERY);
	/* 500 ms total, 450 in the app. */
	assert_int_equal(rvd_touch_eval(400 * MS, 5, 6, 0, 50 * MS, 500 * MS, &a), 1);
	assert_int_equal(a.attribution, RVD_TOUCH_APP);
	/* Fired when answered; about the middle of the app's handling. */
	assert_int_equal(a.monotonic_ns, 500 * MS);
	assert_int_equal(a.focus_ns, 275 * MS);
	assert_int_equal(a.pid, 5);
	assert_int_equal(a.tid, 6);
}

static void test_touch_within_threshold_silent(void **state)
{
	struct rvd_anomaly a;

	assert_int_equal(rvd_touch_eval(400 * MS, 5, 6, 0, 100 * MS, 400 * MS, &a), 0);
	assert_int_equal(rvd_touch_eval(400 * MS, 5, 6, 100, 50, 400 * MS, &a), -EINVAL);
	assert_int_equal(rvd_touch_eval(400 * MS, 5, 6, 0, 500 * MS, 400 * MS, &a), -EINVAL);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_thermal_fake_sysfs_enter_throttling_fires(void **state)
{
	char root[] = "/tmp/rvd-thermal-XXXXXX", zone[600], cool[600];
	struct rvd_thermal_snapshot s;
	struct rvd_anomaly a;
	bool thr = false;

	assert_non_null(mkdtemp(root));
	snprintf(zone, sizeof(zone), "%s/thermal_zone0", root);
	snprintf(cool, sizeof(cool), "%s/cooling_device0", root);
	assert_int_equal(mkdir(zone, 0755), 0);
	assert_int_equal(mkdir(cool, 0755), 0);
	write_file(zone, "temp", "45000\n");
	write_file(zone, "trip_point_0_type", "active\n");
	write_file(zone, "trip_point_0_temp", "40000\n");
	write_file(zone, "trip_point_1_type", "passive\n");
	write_file(zone, "trip_point_1_temp", "80000\n");
	write_file(cool, "cur_state", "0\n");

	assert_int_equal(rvd_thermal_read(root, &s), 0);
	assert_int_equal(s.nzones, 1);
	assert_int_equal(s.temp_mc[0], 45000);
	assert_int_equal(s.passive_mc[0], 80000);
	assert_int_equal(s.ncooling, 1);
	assert_int_equal(rvd_thermal_feed(&thr, &s, 1, &a), 0);

	write_file(zone, "temp", "81000\n");
	assert_int_equal(rvd_thermal_read(root, &s), 0);
	assert_int_equal(rvd_thermal_feed(&thr, &s, 2, &a), 1);
	assert_int_equal(a.kind, RVD_ANOMALY_THERMAL);
	/* Staying throttled does not fire again. */
	assert_int_equal(rvd_thermal_feed(&thr, &s, 3, &a), 0);

	/* Cooled down, then a cooling device kicks in: fires again. */
	write_file(zone, "temp", "50000\n");
	assert_int_equal(rvd_thermal_read(root, &s), 0);
	assert_int_equal(rvd_thermal_feed(&thr, &s, 4, &a), 0);
	write_file(cool, "cur_state", "2\n");
	assert_int_equal(rvd_thermal_read(root, &s), 0);
	assert_int_equal(rvd_thermal_feed(&thr, &s, 5, &a), 1);

	/* Garbage in a file is skipped, not trusted. */
	write_file(cool, "cur_state", "hot\n");
	assert_int_equal(rvd_thermal_read(root, &s), 0);
	assert_int_equal(s.ncooling, 0);

	snprintf(zone, sizeof(zone), "rm -rf '%s'", root);
	assert_int_equal(system(zone), 0);
}

static void test_thermal_missing_root_empty(void **state)
{
	struct rvd_thermal_snapshot s;

	assert_int_equal(rvd_thermal_read("/nonexistent/rvd/thermal", &s), 0);
	assert_int_equal(s.nzones, 0);
	assert_false(rvd_thermal_is_throttling(&s));
}

static void test_corr_jank_with_high_metric_fires(void **state)
{
	struct rvd_corr_config cc = {"gpu_busy", 0.8, 1000 * MS};
	struct rvd_corr_state st = {0};
	struct rvd_anomaly jank = {.kind = RVD_ANOMALY_JANK, .pid = 3, .monotonic_ns = 5000 * MS};
	struct rvd_anomaly out;

	assert_int_equal(rvd_corr_check(&cc, &st, &jank, &out), 0);
	rvd_corr_sample(&cc, &st, "cpu_busy", 0.99, 4900 * MS);
	assert_int_equal(rvd_corr_check(&cc, &st, &jank, &out), 0);
	rvd_corr_sample(&cc, &st, "gpu_busy", 0.5, 4900 * MS);
	assert_int_equal(rvd_corr_check(&cc, &st, &jank, &out), 0);
	rvd_corr_sample(&cc, &st, "gpu_busy", 0.9, 4900 * MS);
	assert_int_equal(rvd_corr_check(&cc, &st, &jank, &out), 1);
	assert_int_equal(out.kind, RVD_ANOMALY_GENERIC);
	assert_string_equal(out.name, "gpu_busy_jank");
	assert_int_equal(out.pid, 3);
	/* A stale sample does not count. */
	rvd_corr_sample(&cc, &st, "gpu_busy", 0.9, 3000 * MS);
	assert_int_equal(rvd_corr_check(&cc, &st, &jank, &out), 0);
}

struct plan_log {
	int n;
	pid_t tid[16];
	bool start[16];
};

static void plan_cb(struct rvd_process *p, pid_t tid, bool start, void *data)
{
	struct plan_log *l = data;

	l->tid[l->n] = tid;
	l->start[l->n] = start;
	l->n++;
}

static void test_registry_plan_traces_n_most_recent(void **state)
{
	struct rvd_registry reg;
	struct plan_log log = {0};
	struct rvd_process *a, *b, *c;
	int err;

	rvd_registry_init(&reg);
	a = rvd_registry_add(&reg, 100, &err);
	b = rvd_registry_add(&reg, 200, &err);
	c = rvd_registry_add(&reg, 300, &err);
	assert_non_null(a);
	assert_null(rvd_registry_add(&reg, 100, &err));
	assert_int_equal(err, -EEXIST);
	c->ui_tid = 301;

	rvd_registry_foreground(&reg, 100, 0);
	rvd_registry_foreground(&reg, 200, 0);
	assert_int_equal(rvd_registry_plan(&reg, 2, plan_cb, &log), 2);
	assert_int_equal(a->traced_tid, 100);
	assert_int_equal(b->traced_tid, 200);
	assert_int_equal(c->traced_tid, 0);

	/* 300 comes to the front: 100 (least recent) is stopped before 300 starts. */
	log.n = 0;
	rvd_registry_foreground(&reg, 300, 0);
	assert_int_equal(rvd_registry_plan(&reg, 2, plan_cb, &log), 2);
	assert_int_equal(log.n, 2);
	assert_false(log.start[0]);
	assert_int_equal(log.tid[0], 100);
	assert_true(log.start[1]);
	assert_int_equal(log.tid[1], 301);
	assert_int_equal(a->traced_tid, 0);

	/* Unregistering frees a slot for the next most recent. */
	log.n = 0;
	rvd_registry_remove(&reg, c);
	assert_int_equal(rvd_registry_plan(&reg, 2, plan_cb, &log), 1);
	assert_int_equal(a->traced_tid, 100);

	/* N = 0 (consent off) stops everything. */
	assert_int_equal(rvd_registry_plan(&reg, 0, plan_cb, &log), 2);
	assert_int_equal(a->traced_tid, 0);
	assert_int_equal(b->traced_tid, 0);
	rvd_registry_release(&reg);
}

static void test_registry_adopt_counts_against_n_then_plan_keeps_it(void **state)
{
	struct rvd_registry reg;
	struct plan_log log = {0};
	struct rvd_process *a, *b, *c;
	int err;

	rvd_registry_init(&reg);
	a = rvd_registry_add(&reg, 100, &err);
	b = rvd_registry_add(&reg, 200, &err);
	c = rvd_registry_add(&reg, 300, &err);
	rvd_registry_foreground(&reg, 100, 0);
	assert_int_equal(rvd_registry_plan(&reg, 2, plan_cb, &log), 1);

	/* 200 still traces its thread 201 from before a restart: taken over,
	 * and the plan then changes nothing. */
	assert_true(rvd_registry_adopt(&reg, b, 201, 2));
	assert_int_equal(b->traced_tid, 201);
	assert_int_equal(b->ui_tid, 201);
	log.n = 0;
	assert_int_equal(rvd_registry_plan(&reg, 2, plan_cb, &log), 0);
	/* No room left for 300; nor at N = 0; nor twice. */
	assert_false(rvd_registry_adopt(&reg, c, 300, 2));
	assert_false(rvd_registry_adopt(&reg, c, 300, 0));
	assert_false(rvd_registry_adopt(&reg, b, 201, 3));
	/* A process whose UI thread is another one is not taken over. */
	c->ui_tid = 302;
	assert_false(rvd_registry_adopt(&reg, c, 301, 3));
	assert_int_equal(c->traced_tid, 0);
	/* A later foreground event supersedes the takeover as usual. */
	rvd_registry_foreground(&reg, 300, 0);
	log.n = 0;
	assert_int_equal(rvd_registry_plan(&reg, 2, plan_cb, &log), 2);
	assert_int_equal(log.tid[0], 201);
	assert_false(log.start[0]);
	assert_int_equal(log.tid[1], 302);
	assert_int_equal(a->traced_tid, 100);
	rvd_registry_release(&reg);
}

static void test_registry_buffer_bytes_summed(void **state)
{
	struct rvd_registry reg;
	struct rvd_thread t[2] = {{.tid = 7, .is_ui = true, .buffer_bytes = 4096},
				  {.tid = 8, .buffer_bytes = 1000}};
	struct rvd_process *p;
	int err;

	rvd_registry_init(&reg);
	p = rvd_registry_add(&reg, 7, &err);
	assert_int_equal(rvd_process_set_threads(p, t, 2), 0);
	assert_int_equal(rvd_process_buffer_bytes(p), 5096);
	assert_int_equal(p->ui_tid, 7);
	rvd_registry_release(&reg);
}

static void test_spool_transitions_follow_state_machine(void **state)
{
	assert_true(rvd_spool_transition_ok(RVD_SPOOL_CAPTURED, RVD_SPOOL_PENDING));
	assert_true(rvd_spool_transition_ok(RVD_SPOOL_CAPTURED, RVD_SPOOL_SKIPPED));
	assert_true(rvd_spool_transition_ok(RVD_SPOOL_PENDING, RVD_SPOOL_UPLOADING));
	assert_true(rvd_spool_transition_ok(RVD_SPOOL_UPLOADING, RVD_SPOOL_UPLOADED));
	assert_true(rvd_spool_transition_ok(RVD_SPOOL_UPLOADING, RVD_SPOOL_PENDING));
	assert_false(rvd_spool_transition_ok(RVD_SPOOL_CAPTURED, RVD_SPOOL_UPLOADED));
	assert_false(rvd_spool_transition_ok(RVD_SPOOL_PENDING, RVD_SPOOL_UPLOADED));
	assert_false(rvd_spool_transition_ok(RVD_SPOOL_UPLOADED, RVD_SPOOL_PENDING));
	assert_false(rvd_spool_transition_ok(RVD_SPOOL_SKIPPED, RVD_SPOOL_PENDING));
	assert_string_equal(rvd_spool_state_name(RVD_SPOOL_SKIPPED), "skipped");
}

static void test_config_file_overrides_and_rejects_typos(void **state)
{
	char path[] = "/tmp/rvd-conf-XXXXXX";
	struct rvd_config c;
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	fputs("[daemon]\nrun_dir = /tmp/x\n[jank]\nframes = 5\nbudget_us = 8000\n"
	      "[tracing]\ntraced_apps = 4\n[capture]\nconsent_default = full\n",
	      f);
	fclose(f);
	rvd_config_defaults(&c);
	assert_int_equal(c.traced_apps, 2);
	assert_int_equal(rvd_config_load(&c, path), 0);
	assert_string_equal(c.run_dir, "/tmp/x");
	assert_int_equal(c.jank_frames, 5);
	assert_int_equal(c.jank_budget_ns, 8000000);
	assert_int_equal(c.traced_apps, 4);
	assert_int_equal(c.consent_default, 4);

	f = fopen(path, "w");
	fputs("[jank]\nframez = 5\n", f);
	fclose(f);
	assert_int_equal(rvd_config_load(&c, path), -EINVAL);
	f = fopen(path, "w");
	fputs("[jank]\nframes = -1\n[tracing]\nbuffer_bytes = 12abc\n", f);
	fclose(f);
	assert_int_equal(rvd_config_load(&c, path), -EINVAL);
	unlink(path);
	assert_int_equal(rvd_config_load(&c, path), -ENOENT);
}

/* Drop-ins: rearviewd.conf.d/NAME.conf after the file, in name order, the
 * later value winning; a typo in one is an error; other names are not read. */
static void test_config_dropins_in_name_order_later_wins(void **state)
{
	char dir[] = "/tmp/rvd-confd-XXXXXX", path[64], d[80], cmd[128];
	struct rvd_config c;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rearviewd.conf", dir);
	snprintf(d, sizeof(d), "%s/rearviewd.conf.d", dir);
	assert_int_equal(mkdir(d, 0755), 0);
	f = fopen(path, "w");
	fputs("[jank]\nframes = 5\n[tracing]\ntraced_apps = 4\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/20-late.conf", d);
	f = fopen(cmd, "w");
	fputs("[jank]\nframes = 9\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/10-early.conf", d);
	f = fopen(cmd, "w");
	fputs("[jank]\nframes = 7\n[sockets]\nevents_mode = 0640\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/99-off.conf.disabled", d);
	f = fopen(cmd, "w");
	fputs("[jank]\nframez = 1\n", f);
	fclose(f);
	rvd_config_defaults(&c);
	assert_int_equal(rvd_config_load(&c, path), 0);
	assert_int_equal(c.jank_frames, 9);
	assert_int_equal(c.traced_apps, 4);
	assert_int_equal(c.events_mode, 0640);

	snprintf(cmd, sizeof(cmd), "%s/30-typo.conf", d);
	f = fopen(cmd, "w");
	fputs("[jank]\nframez = 1\n", f);
	fclose(f);
	assert_int_equal(rvd_config_load(&c, path), -EINVAL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jank_k_late_frames_fires_once),
		cmocka_unit_test(test_jank_on_time_frame_resets_count),
		cmocka_unit_test(test_jank_backwards_frame_rejected),
		cmocka_unit_test(test_touch_over_threshold_attributed),
		cmocka_unit_test(test_touch_within_threshold_silent),
		cmocka_unit_test(test_thermal_fake_sysfs_enter_throttling_fires),
		cmocka_unit_test(test_thermal_missing_root_empty),
		cmocka_unit_test(test_corr_jank_with_high_metric_fires),
		cmocka_unit_test(test_registry_plan_traces_n_most_recent),
		cmocka_unit_test(test_registry_adopt_counts_against_n_then_plan_keeps_it),
		cmocka_unit_test(test_registry_buffer_bytes_summed),
		cmocka_unit_test(test_spool_transitions_follow_state_machine),
		cmocka_unit_test(test_config_file_overrides_and_rejects_typos),
		cmocka_unit_test(test_config_dropins_in_name_order_later_wins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
