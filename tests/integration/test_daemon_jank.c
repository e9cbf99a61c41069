/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_jank.c — the jank rate of an app that is not traced, from
 * its frames to the fleet: a real rearview-server (`init`, HTTPS on a port
 * it picks), a real rearviewd uploading to it, and rv_jank_app — never
 * registered on control.sock — reporting frames with exact deadlines
 * through librvevents.  Checked through the server's own JSON API (GET
 * /api/v1/fleet/jank) and the daemon's counts file:
 *  - with consent off the counts are written on the device and nothing
 *    reaches the server;
 *  - at consent summary the app shows its exact frames and late frames,
 *    one device, no traces, `traced: false`;
 *  - a second upload of the same day replaces the day's count (never
 *    doubles), also across a kill -9 of the daemon;
 *  - frames before the app declares a version (as an older librvevents)
 *    count under "", those after under its version (rv_app_version), and
 *    the fleet splits the app's counts by version;
 *  - rvctl delete-all clears the counts, in the file and in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "upload_harness.h"

static char g_top[64];
static struct server g_s;
static struct rvh g_h;
static bool g_h_live;
static pid_t g_app;
static FILE *g_app_in, *g_app_out;

static void app_stop(void)
{
	if (g_app_in)
		fclose(g_app_in);
	if (g_app_out)
		fclose(g_app_out);
	g_app_in = g_app_out = NULL;
	if (g_app > 0) {
		kill(g_app, SIGKILL);
		waitpid(g_app, NULL, 0);
	}
	g_app = 0;
}

static int per_test_teardown(void **state)
{
	(void)state;
	app_stop();
	if (g_h_live)
		rvh_teardown(&g_h);
	g_h_live = false;
	server_stop(&g_s);
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(g_top, sizeof(g_top), "/tmp/rvd-jank-XXXXXX");
	if (!mkdtemp(g_top))
		return -1;
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	curl_global_cleanup();
	if (getenv("RVH_KEEP"))
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_top);
	return run_quiet(cmd) == 0 ? 0 : -1;
}

/* Starts rv_jank_app on the daemon's events.sock, with pipes to its stdin
 * and from its stdout. */
static void app_start(void)
{
	char sock[200];
	int in[2], out[2];

	snprintf(sock, sizeof(sock), "%s/events.sock", g_h.run);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	g_app = fork();
	assert_true(g_app >= 0);
	if (g_app == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(RV_TBIN_DIR "/integration/rv_jank_app", "rv_jank_app", sock, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	g_app_in = fdopen(in[1], "w");
	g_app_out = fdopen(out[0], "r");
	assert_non_null(g_app_in);
	assert_non_null(g_app_out);
}

/* n frames, the last `late` of them late; returns once they are sent. */
static void app_frames(unsigned n, unsigned late)
{
	char line[64], want[32];

	fprintf(g_app_in, "%u %u\n", n, late);
	fflush(g_app_in);
	assert_non_null(fgets(line, sizeof(line), g_app_out));
	snprintf(want, sizeof(want), "sent %u\n", n);
	assert_string_equal(line, want);
}

/* Waits until the daemon's counts file has the line of rv_jank_app at
 * `version` ("-": none) with `counts` ("frames late sent_frames
 * sent_late"). */
static bool wait_counts_file_of(const char *counts, const char *version)
{
	char path[200], buf[8192], want[96];
	double until = rvh_now() + RVH_GUARD_S;

	snprintf(path, sizeof(path), "%s/jank.counts", g_h.state);
	snprintf(want, sizeof(want), " %s rv_jank_app %s", counts, version);
	while (rvh_now() < until) {
		read_file(path, buf, sizeof(buf));
		if (strstr(buf, want))
			return true;
		rvh_sleep_ms(20);
	}
	fprintf(stderr, "counts file %s: no \"%s\" in:\n%s\n", path, want, buf);
	return false;
}

/* wait_counts_file_of for the version-less row (a client that declares none). */
static bool wait_counts_file(const char *counts)
{
	return wait_counts_file_of(counts, "-");
}

/* The app declares its version; librvevents answers 0. */
static void app_version(const char *version)
{
	char line[64];

	fprintf(g_app_in, "v %s\n", version);
	fflush(g_app_in);
	assert_non_null(fgets(line, sizeof(line), g_app_out));
	assert_string_equal(line, "version 0\n");
}

/* The fleet's row of rv_jank_app (a new reference, NULL: none). */
static json_t *fleet_row(void)
{
	struct body b;
	json_t *doc, *apps, *row = NULL;
	size_t i;

	assert_int_equal(server_get(&g_s, "/api/v1/fleet/jank?days=2", true, &b), 200);
	doc = json_loads(b.buf, 0, NULL);
	assert_non_null(doc);
	apps = json_object_get(doc, "apps");
	assert_true(json_is_array(apps));
	json_array_foreach(apps, i, row)
	{
		if (!strcmp(json_string_value(json_object_get(row, "app_id")), "rv_jank_app")) {
			json_incref(row);
			break;
		}
		row = NULL;
	}
	json_decref(doc);
	return row;
}

static json_int_t field(const json_t *row, const char *key)
{
	const json_t *v = json_object_get(row, key);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

/* Waits until the fleet shows rv_jank_app with `frames` frames, then
 * checks its late frames, devices, traces and `traced: false`. */
static void wait_fleet(json_int_t frames, json_int_t late)
{
	double until = rvh_now() + RVH_GUARD_S;
	json_t *row = NULL;

	while (rvh_now() < until) {
		row = fleet_row();
		if (row && field(row, "frames") == frames)
			break;
		json_decref(row);
		row = NULL;
		rvh_sleep_ms(20);
	}
	if (!row)
		fail_msg("the fleet never showed rv_jank_app with %lld frames", (long long)frames);
	assert_int_equal(field(row, "late"), late);
	assert_int_equal(field(row, "devices"), 1);
	assert_int_equal(field(row, "traces"), 0);
	assert_true(json_is_false(json_object_get(row, "traced")));
	assert_true(json_real_value(json_object_get(row, "jank_rate")) ==
		    (double)late / (double)frames);
	json_decref(row);
}

static void test_daemon_jank_untraced_app_reaches_fleet_with_consent_only(void **state)
{
	char conf[1400], ca[200], out[512];
	json_t *row;

	(void)state;
	assert_int_equal(server_setup(&g_s, g_top, "s1"), 0);
	assert_int_equal(server_start(&g_s, 0), 0);
	snprintf(ca, sizeof(ca), "%s/ca.crt", g_s.dir);
	upload_conf(conf, sizeof(conf), &g_s, ca);
	/* The later consent_default wins; counts written every 100 ms. */
	snprintf(conf + strlen(conf), sizeof(conf) - strlen(conf),
		 "[capture]\nconsent_default = off\n[jank]\ncounts_flush_ms = 100\n");
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, conf), 0);
	app_start();

	/* Consent off: counted and written on the device, nothing sent.  Once
	 * enrolled with the policy fetched (version 1 applied), the server
	 * sees no request at all over two flush ticks — each writes the file
	 * and asks the uploader in the same step — and holds no counts. */
	{
		double until = rvh_now() + RVH_GUARD_S;
		long before;

		for (;;) {
			Rearview__AdminResponse *st = rvh_status(&g_h);
			bool done = st && st->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_STATUS &&
				    st->status->policy_version == 1;

			if (st)
				rearview__admin_response__free_unpacked(st, NULL);
			if (done)
				break;
			assert_true(rvh_now() < until);
			rvh_sleep_ms(20);
		}
		before = metric(&g_s, "rearview_requests_total");
		assert_true(before > 0);
		app_frames(40, 7);
		assert_true(wait_counts_file("40 7 0 0"));
		app_frames(1, 0);
		assert_true(wait_counts_file("41 7 0 0"));
		/* The only requests since: this test's own /metrics reads. */
		assert_int_equal(metric(&g_s, "rearview_requests_total"), before + 1);
		row = fleet_row();
		assert_null(row);
	}

	/* Summary: the counts leave, exact. */
	assert_int_equal(rvh_rvctl(&g_h, out, sizeof(out), "consent summary"), 0);
	wait_fleet(41, 7);
	assert_true(wait_counts_file("41 7 41 7"));

	/* More frames the same day: the day's total replaces the stored one. */
	app_frames(10, 3);
	wait_fleet(51, 10);
	assert_true(wait_counts_file("51 10 51 10"));

	/* kill -9 after the acknowledged counts were written: the restarted
	 * daemon counts on from them, and the same day is replaced again. */
	assert_true(WIFSIGNALED(rvh_stop_daemon(&g_h, SIGKILL)));
	assert_int_equal(rvh_start_daemon(&g_h), 0);
	app_frames(5, 5);
	wait_fleet(56, 15);
	assert_true(wait_counts_file("56 15 56 15"));

	/* Until now the app declared no version (as an older librvevents):
	 * its frames counted under "".  Declared, the next frames count under
	 * its version, on the device and in the fleet's per-version split. */
	app_version("3.1.4");
	app_frames(4, 1);
	wait_fleet(60, 16);
	assert_true(wait_counts_file_of("4 1 4 1", "3.1.4"));
	assert_true(wait_counts_file("56 15 56 15"));
	row = fleet_row();
	assert_non_null(row);
	{
		json_t *vs = json_object_get(row, "versions"), *v0, *v1;
		assert_int_equal(json_array_size(vs), 2);
		v0 = json_array_get(vs, 0); /* most frames first */
		v1 = json_array_get(vs, 1);
		assert_string_equal(json_string_value(json_object_get(v0, "version")), "");
		assert_int_equal(field(v0, "frames"), 56);
		assert_int_equal(field(v0, "late"), 15);
		assert_string_equal(json_string_value(json_object_get(v1, "version")), "3.1.4");
		assert_int_equal(field(v1, "frames"), 4);
		assert_int_equal(field(v1, "late"), 1);
	}
	json_decref(row);

	/* rvctl delete-all forgets the counts: the file holds no row of the
	 * app any more, and the next frames count from zero (the server's
	 * copy of the day is then replaced by 2 frames, not 6). */
	assert_int_equal(rvh_rvctl(&g_h, out, sizeof(out), "delete-all"), 0);
	assert_non_null(strstr(out, "deleted\n"));
	{
		char path[200], buf[8192];
		double until = rvh_now() + RVH_GUARD_S;

		snprintf(path, sizeof(path), "%s/jank.counts", g_h.state);
		for (;;) {
			read_file(path, buf, sizeof(buf));
			if (!strstr(buf, "rv_jank_app"))
				break;
			if (rvh_now() >= until)
				fail_msg("jank.counts still counts rv_jank_app:\n%s", buf);
			rvh_sleep_ms(20);
		}
		assert_non_null(strstr(buf, "rvjank 1"));
	}
	app_frames(2, 0);
	wait_fleet(58, 15);
	assert_true(wait_counts_file_of("2 0 2 0", "3.1.4"));
}

/* The traced path: a process's Register declares its version (app.version)
 * and its frames count under it; a process whose Register carries none (an
 * older tracer) registers as before and counts under "" ("-" in the
 * file).  Frames are injected for each pid through rvctl. */
static void test_daemon_jank_register_version_old_and_new_clients(void **state)
{
	char out[512], path[200], buf[8192], want[160], app[64];
	pid_t pid_new, pid_old;
	bool seen_new = false, seen_old = false;
	double until;

	(void)state;
	g_h_live = true;
	assert_int_equal(rvh_setup(&g_h, "[jank]\ncounts_flush_ms = 100\n"), 0);
	pid_new = rvh_helper(&g_h, "--app-version", "7.7.7", (char *)NULL);
	pid_old = rvh_helper(&g_h, (char *)NULL);
	assert_true(pid_new > 0 && pid_old > 0);
	assert_true(rvh_wait_registered(&g_h, pid_new, true));
	assert_true(rvh_wait_registered(&g_h, pid_old, true));
	{
		Rearview__AdminResponse *st = rvh_status(&g_h);
		const Rearview__ProcessStatus *ps = rvh_find_proc(st, pid_new);
		assert_non_null(ps);
		snprintf(app, sizeof(app), "%s", ps->app_id);
		ps = rvh_find_proc(st, pid_old);
		assert_non_null(ps);
		assert_string_equal(ps->app_id, app); /* same program, same app */
		rearview__admin_response__free_unpacked(st, NULL);
	}
	assert_int_equal(rvh_rvctl(&g_h, out, sizeof(out), "event frame %d %d 5", (int)pid_new,
				   (int)pid_new),
			 0);
	assert_int_equal(rvh_rvctl(&g_h, out, sizeof(out), "event frame %d %d 5", (int)pid_old,
				   (int)pid_old),
			 0);
	snprintf(path, sizeof(path), "%s/jank.counts", g_h.state);
	until = rvh_now() + RVH_GUARD_S;
	while (!(seen_new && seen_old) && rvh_now() < until) {
		read_file(path, buf, sizeof(buf));
		snprintf(want, sizeof(want), " 1 0 0 0 %s 7.7.7", app);
		seen_new = strstr(buf, want) != NULL;
		snprintf(want, sizeof(want), " 1 0 0 0 %s -", app);
		seen_old = strstr(buf, want) != NULL;
		if (!(seen_new && seen_old))
			rvh_sleep_ms(20);
	}
	if (!(seen_new && seen_old))
		fail_msg("jank.counts lacks %s at 7.7.7 or at no version:\n%s", app, buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			test_daemon_jank_untraced_app_reaches_fleet_with_consent_only,
			per_test_teardown),
		cmocka_unit_test_teardown(test_daemon_jank_register_version_old_and_new_clients,
					  per_test_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
