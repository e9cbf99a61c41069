/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_show.c — local summaries, `rvctl show` and `rvctl export` end
 * to end: the real rearviewd (tests/device/daemon_harness.h) and the real
 * instrumented rearview-demo-app in a temporary directory.  One burst of
 * slow frames makes the jank detector capture the app; the daemon
 * summarizes the capture on its work queue before it becomes pending;
 * `rvctl show ID --json` must name the slow list-item builder as the top
 * self-time method; `rvctl export` must write files that `rvtrace info`
 * accepts; unknown ids, purged captures and bad formats fail clearly.
 * Every wait is a hang guard only.
 */
#include <dirent.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "daemon_harness.h"

/* Waits until the only capture is in `state` (a pending one's summary is
 * stored before that); returns its id, or 0. */
static uint64_t only_capture_in(struct rvh *h, const char *state)
{
	double until = rvh_now() + RVH_GUARD_S;
	uint64_t id = 0;

	if (rvh_wait_captures(h, 1) != 1)
		return 0;
	while (!id && rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_captures(h);

		if (r && r->captures->n_captures == 1 &&
		    !strcmp(r->captures->captures[0]->state, state))
			id = r->captures->captures[0]->id;
		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (!id)
			rvh_sleep_ms(10);
	}
	return id;
}

/* One jank capture at `consent`: full → pending, local → skipped. */
static uint64_t capture_at(struct rvh *h, const char *consent)
{
	uint64_t id;

	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent %s", consent), 0);
	assert_true(rvh_run_demo_app(h) > 0);
	id = only_capture_in(h, strcmp(consent, "local") ? "pending" : "skipped");
	assert_true(id > 0);
	return id;
}

/* The only capture file in the daemon's spool lists `method` among the
 * functions the tracer muted at run time (`rvtrace summary --json`). */
static bool capture_says_muted(struct rvh *h, const char *method)
{
	char dir[200], cmd[600], out[16384], want[200];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/captures", h->state);
	d = opendir(dir);
	if (!d)
		return false;
	snprintf(want, sizeof(want), "{\"method\":\"%s\",", method);
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(cmd, sizeof(cmd), "%s/rvtrace summary --json '%s/%s' 2>/dev/null",
			 RV_BIN_DIR, dir, de->d_name);
		if (rvh_run_cmd(out, sizeof(out), cmd) == 0) {
			const char *muted = strstr(out, "\"muted\":[");

			found = muted && strstr(muted, want);
		}
	}
	closedir(d);
	return found;
}

static uint64_t capture_slow_burst(struct rvh *h)
{
	return capture_at(h, "full");
}

/* Exit status of `rvtrace info FILE`. */
static int rvtrace_info(const char *file)
{
	char cmd[400];
	int st;

	snprintf(cmd, sizeof(cmd), "%s/rvtrace info '%s' >/dev/null 2>&1", RV_BIN_DIR, file);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* The last line rvctl wrote to stderr contains `want`. */
static bool rvctl_said(struct rvh *h, const char *want)
{
	char path[160], buf[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/rvctl.err", h->dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, want) != NULL;
}

/*
 * `longest` holds the slow path demo_render_frame > layout_pass >
 * build_list_item > build_list_item_slow.  The tracer's budget (mute.c)
 * mutes the callers too when the demo's frames are cheap against their trace
 * points (a loaded machine, a small budget); a muted function's frames fold
 * into its caller, so the chain may skip it — but only a function the
 * capture says it muted.
 */
static bool slow_chain_found(struct rvh *h, const char *longest)
{
	static const char *const callers[] = {"demo_render_frame", "layout_pass",
					      "build_list_item"};
	const unsigned n_callers = sizeof(callers) / sizeof(callers[0]);

	for (unsigned keep = 0; keep < 1u << n_callers; keep++) {
		char want[200];
		size_t n = (size_t)snprintf(want, sizeof(want), "{\"frames\":[");
		bool ok = true;

		for (unsigned i = 0; i < n_callers; i++)
			if (keep & (1u << i))
				n += (size_t)snprintf(want + n, sizeof(want) - n, "\"%s\",",
						      callers[i]);
		snprintf(want + n, sizeof(want) - n, "\"build_list_item_slow\"]");
		if (!strstr(longest, want))
			continue;
		for (unsigned i = 0; i < n_callers && ok; i++)
			if (!(keep & (1u << i)))
				ok = capture_says_muted(h, callers[i]);
		if (ok)
			return true;
	}
	return false;
}

static void test_daemon_show_jank_capture_summary_slow_function_on_top(void **state)
{
	struct rvh *h = *state;
	char out[16384];
	uint64_t id = capture_slow_burst(h);

	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "--json show %" PRIu64, id), 0);
	/* The capture's metadata and its summary, the slow builder first. */
	assert_non_null(strstr(out, "\"kind\":\"jank\""));
	assert_non_null(strstr(out, "\"top_self\":[{\"name\":\"build_list_item_slow\""));
	/* A jank fires after the late frame, when the UI thread is usually
	 * between frames: the chain at that instant may be empty; the slow
	 * path is the longest-running chain. */
	assert_non_null(strstr(out, "\"chains_at_anomaly\":["));
	/* Among the longest-running chains; not necessarily first: on a loaded
	 * machine a preempted frame can outlast the slow one. */
	const char *longest = strstr(out, "\"longest_chains\":[");
	assert_non_null(longest);
	if (!slow_chain_found(h, longest))
		fail_msg("the slow path is not among the longest chains: %s", longest);
	assert_null(strstr(out, "\"summary\":null"));

	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "show %" PRIu64, id), 0);
	assert_non_null(strstr(out, "anomaly:"));
	assert_non_null(strstr(out, "top self time:"));
	assert_non_null(strstr(out, "chain at the anomaly:"));
	assert_non_null(strstr(out, "build_list_item_slow"));
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void test_daemon_show_export_every_format_rvtrace_accepts(void **state)
{
	struct rvh *h = *state;
	/* format, extension, whether rvtrace imports it back */
	static const struct {
		const char *fmt, *ext;
		bool importable;
	} fmts[] = {
		{"perfetto", "pftrace", true}, {"chrome", "json", true},
		{"folded", "folded", true},    {"android", "trace", true},
		{"nanoscope", "txt", true},    {"speedscope", "speedscope.json", false},
		{"svg", "svg", false},
	};
	char path[200], out[256];
	uint64_t id = capture_slow_burst(h);

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(path, sizeof(path), "%s/export.%s", h->dir, fmts[i].ext);
		/* Both option orders are accepted. */
		assert_int_equal(rvh_rvctl(h, out, sizeof(out),
					   i % 2 ? "export %1$" PRIu64 " -o %2$s --format %3$s"
						 : "export %1$" PRIu64 " --format %3$s -o %2$s",
					   id, path, fmts[i].fmt),
				 0);
		assert_true(file_size(path) > 0);
		if (fmts[i].importable)
			assert_int_equal(rvtrace_info(path), 0);
	}
	/* A format rvtrace does not have: usage error, nothing written. */
	snprintf(path, sizeof(path), "%s/export.bad", h->dir);
	assert_int_equal(
		rvh_rvctl(h, out, sizeof(out), "export %" PRIu64 " --format xml -o %s", id, path),
		2);
	assert_false(file_exists(path));
}

static void test_daemon_show_missing_id_not_found_exit_1(void **state)
{
	struct rvh *h = *state;
	char out[256], path[200];

	snprintf(path, sizeof(path), "%s/never", h->dir);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "show 4242"), 1);
	assert_true(rvctl_said(h, "no such capture"));
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "export 4242 --format folded -o %s", path),
			 1);
	assert_false(file_exists(path));
}

static void test_daemon_show_consent_off_purged_not_found(void **state)
{
	struct rvh *h = *state;
	char out[256], path[200];
	uint64_t id = capture_slow_burst(h);

	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "consent off"), 0);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "show %" PRIu64, id), 1);
	assert_true(rvctl_said(h, "no such capture"));
	snprintf(path, sizeof(path), "%s/purged.json", h->dir);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "export %" PRIu64 " --format chrome -o %s",
				   id, path),
			 1);
	assert_false(file_exists(path));
}

/* At consent local nothing is summarized when stored; `show` makes the
 * summary then (it never leaves the device) and keeps it. */
static void test_daemon_show_consent_local_summary_made_on_show(void **state)
{
	struct rvh *h = *state;
	char out[16384];
	uint64_t id = capture_at(h, "local");

	for (int i = 0; i < 2; i++) {
		assert_int_equal(rvh_rvctl(h, out, sizeof(out), "--json show %" PRIu64, id), 0);
		assert_non_null(strstr(out, "\"reason\":\"consent_local\""));
		assert_non_null(strstr(out, "\"top_self\":[{\"name\":\"build_list_item_slow\""));
	}
}

/* Whether the spool row `id` holds a summary (read-only, beside the
 * running daemon: WAL lets readers in). */
static bool has_summary_row(const char *db_path, uint64_t id)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	bool have = false;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT summary IS NOT NULL FROM captures WHERE id=?", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
		have = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return have;
}

/* A daemon killed after storing a capture but before its summary was
 * stored: the row has no summary (the state a crash leaves, made here with
 * sqlite on the stopped daemon's spool); the next start recomputes it. */
static void test_daemon_show_killed_before_summary_recomputed_at_start(void **state)
{
	struct rvh *h = *state;
	char db_path[200], out[16384];
	uint64_t id = capture_slow_burst(h);
	double until;
	sqlite3 *db;

	rvh_stop_daemon(h, SIGKILL);
	snprintf(db_path, sizeof(db_path), "%s/spool.db", h->state);
	assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE captures SET summary=NULL", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_changes(db), 1);
	sqlite3_close(db);

	assert_int_equal(rvh_start_daemon(h), 0);
	/* Watched in the database, not through `show` (which would make the
	 * summary itself). */
	until = rvh_now() + RVH_GUARD_S;
	while (!has_summary_row(db_path, id) && rvh_now() < until)
		rvh_sleep_ms(20);
	assert_true(has_summary_row(db_path, id));
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "--json show %" PRIu64, id), 0);
	assert_non_null(strstr(out, "\"top_self\":[{\"name\":\"build_list_item_slow\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_daemon_show_jank_capture_summary_slow_function_on_top,
			rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_show_export_every_format_rvtrace_accepts, rvh_fixture_setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_show_missing_id_not_found_exit_1,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_show_consent_off_purged_not_found,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_show_killed_before_summary_recomputed_at_start,
			rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_show_consent_local_summary_made_on_show,
						rvh_fixture_setup, rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
