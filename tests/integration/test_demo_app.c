/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_demo_app.c — the real rearviewd (tests/device/daemon_harness.h) and
 * the real rearview-demo-app in a temporary directory.  The app announces
 * itself as foreground on events.sock, is traced through control.sock,
 * reports its frames, and takes the slow list-item path for one burst of
 * frames; rearviewd's jank detector must capture it, and the capture file
 * in the spool, decoded with librvanalysis, must show the slow list-item
 * builder as the top self-time method, and the frames rearviewd wrote into
 * it (FRAMES) must hold the slow burst, marked late.  Every wait is a hang
 * guard only.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "rearview/analysis.h"

/* Starts rearview-demo-app on the harness's sockets; its output to app.log. */
static pid_t start_app(struct rvh *h, const char *frames, const char *slow_every,
		       const char *slow_touch_every)
{
	char events[160];
	char *argv[] = {(char *)"rearview-demo-app",
			(char *)"--events",
			events,
			(char *)"--frames",
			(char *)frames,
			(char *)"--slow-every",
			(char *)slow_every,
			(char *)"--slow-touch-every",
			(char *)slow_touch_every,
			(char *)"--wait-traced",
			(char *)"--quiet",
			NULL};

	snprintf(events, sizeof(events), "%s/events.sock", h->run);
	return rvh_spawn(h, "app.log", RV_BIN_DIR "/rearview-demo-app", argv);
}

/* The path of the only capture file in the spool, or "" if not exactly one. */
static void only_capture_file(struct rvh *h, char *out, size_t cap)
{
	char dir[200];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	out[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/captures", h->state);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len > 4 && !strcmp(de->d_name + len - 4, ".rvc") && n++ == 0)
			snprintf(out, cap, "%s/%s", dir, de->d_name);
	}
	closedir(d);
	if (n != 1)
		out[0] = '\0';
}

/* The top self-time method of the only capture file in the spool. */
static void assert_top_self(struct rvh *h, const char *want)
{
	char file[300];
	rva_trace *t = NULL;
	rva_mstat *st = NULL;
	rva_error err;
	uint32_t top;

	only_capture_file(h, file, sizeof(file));
	assert_true(file[0] != '\0');
	if (rva_import_file(file, &t, &err) != 0)
		fail_msg("decoding %s failed", file);
	assert_true(t->nthreads >= 1);
	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(rva_top_self(t, st, &top, 1), 1);
	assert_true(top < t->nmethods);
	assert_string_equal(t->names[top], want);
	free(st);
	rva_trace_free(t);
}

/*
 * The only capture's FRAMES (tracer/FORMAT.md): the app's frames around the
 * jank, each marked by the daemon's rule (no deadline: late when over the
 * 16.7 ms budget), at least `slow` of them from the slow burst (>= 85 ms)
 * and marked late, one of them holding the anomaly's focus (the middle of
 * the worst late frame), all overlapping the calls.
 */
static void assert_frames(struct rvh *h, size_t slow)
{
	const int64_t budget = 16666000; /* [detect] jank_budget_us default */
	size_t late = 0, burst = 0, focus = 0;
	char file[300];
	rva_trace *t = NULL;
	rva_error err;

	only_capture_file(h, file, sizeof(file));
	assert_true(file[0] != '\0');
	if (rva_import_file(file, &t, &err) != 0)
		fail_msg("decoding %s failed", file);
	print_message("capture holds %zu frames\n", t->nframes);
	assert_true(t->nframes > slow);
	for (size_t i = 0; i < t->nframes; i++) {
		const rva_frame *f = &t->frames[i];
		int64_t d = f->end - f->start;

		assert_int_equal(f->tid, t->threads[0].tid);
		assert_int_equal(f->deadline, 0);
		assert_true(f->end >= t->start && f->start <= t->end);
		assert_true(i == 0 || f->start >= t->frames[i - 1].start);
		if (f->late) {
			assert_true(d > budget);
			late++;
		} else {
			assert_true(d <= budget);
		}
		if (d >= 85000000) {
			assert_true(f->late);
			burst++;
			if (t->anomaly_ns >= f->start && t->anomaly_ns <= f->end)
				focus++;
		}
	}
	assert_true(burst >= slow && late >= burst);
	assert_int_equal(focus, 1);
	rva_trace_free(t);
}

/* Waits until the only capture is pending; returns the list (caller frees). */
static Rearview__AdminResponse *only_capture_pending(struct rvh *h)
{
	double until = rvh_now() + RVH_GUARD_S;
	Rearview__AdminResponse *r;

	assert_int_equal(rvh_wait_captures(h, 1), 1);
	for (;;) {
		r = rvh_captures(h);
		assert_non_null(r);
		assert_int_equal(r->captures->n_captures, 1);
		if (!strcmp(r->captures->captures[0]->state, "pending") || rvh_now() > until)
			break;
		rearview__admin_response__free_unpacked(r, NULL);
		rvh_sleep_ms(10);
	}
	assert_string_equal(r->captures->captures[0]->state, "pending");
	return r;
}

static void test_demo_app_slow_touch_latency_captured_handler_on_top(void **state)
{
	struct rvh *h = *state;
	Rearview__AdminResponse *r;
	const Rearview__Anomaly *an;
	pid_t app;

	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);
	/* Touches at frames 1, 91, 181 (seed 1); the 2nd one traced is slow. */
	app = start_app(h, "200", "0", "2");
	assert_true(app > 0);
	assert_true(rvh_wait_traced(h, app, true));
	assert_int_equal(rvh_wait_exit(h, app), 0);
	r = only_capture_pending(h);
	an = r->captures->captures[0]->anomaly;
	assert_int_equal(an->kind, REARVIEW__ANOMALY_KIND__ANOMALY_TOUCH_LATENCY);
	/* 3 ms of delivery against 450 ms in the handler: the app's fault. */
	assert_int_equal(an->touch_attribution, REARVIEW__TOUCH_ATTRIBUTION__TOUCH_ATTR_APP);
	assert_int_equal(an->pid, app);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_top_self(h, "apply_touch_slow");
}

static void test_demo_app_slow_burst_jank_captured_slow_builder_on_top(void **state)
{
	struct rvh *h = *state;
	Rearview__AdminResponse *r;
	const Rearview__CaptureInfo *ci;
	char out[4096];
	pid_t app;

	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);
	/* 200 frames at 60 Hz; one burst of slow frames at frame 100. */
	app = start_app(h, "200", "100", "0");
	assert_true(app > 0);
	/* Traced because the app itself reported ForegroundChange. */
	assert_true(rvh_wait_traced(h, app, true));
	assert_int_equal(rvh_wait_exit(h, app), 0);

	r = only_capture_pending(h);
	ci = r->captures->captures[0];
	assert_int_equal(ci->anomaly->kind, REARVIEW__ANOMALY_KIND__ANOMALY_JANK);
	assert_int_equal(ci->anomaly->pid, app);
	assert_int_equal(ci->anomaly->tid, app);
	/* Slow frames are ≥ 85 ms, over 4x the 16.7 ms budget: the top grade. */
	assert_int_equal(ci->anomaly->severity, 100);
	assert_string_equal(ci->app_id, "rearview-demo-app");
	rearview__admin_response__free_unpacked(r, NULL);

	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "--json captures"), 0);
	assert_non_null(strstr(out, "\"kind\":\"jank\""));
	assert_non_null(strstr(out, "\"state\":\"pending\""));
	assert_top_self(h, "build_list_item_slow");
	/* The detector fires at the 3rd late frame of the burst. */
	assert_frames(h, 3);
}

static void test_demo_app_no_slow_path_traced_nothing_captured(void **state)
{
	struct rvh *h = *state;
	Rearview__AdminResponse *r;
	pid_t app;

	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);
	app = start_app(h, "90", "0", "0");
	assert_true(app > 0);
	assert_true(rvh_wait_traced(h, app, true));
	assert_int_equal(rvh_wait_exit(h, app), 0);
	/* The app left: its registration goes, with no anomaly on the way. */
	assert_true(rvh_wait_registered(h, app, false));
	r = rvh_status(h);
	assert_non_null(r);
	assert_int_equal(r->status->anomalies, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	r = rvh_captures(h);
	assert_non_null(r);
	assert_int_equal(r->captures->n_captures, 0);
	rearview__admin_response__free_unpacked(r, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_demo_app_slow_burst_jank_captured_slow_builder_on_top,
			rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_demo_app_slow_touch_latency_captured_handler_on_top, rvh_fixture_setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_demo_app_no_slow_path_traced_nothing_captured,
						rvh_fixture_setup, rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
