/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_offcpu.c — why the time went, end to end: the real rearviewd
 * (tests/device/daemon_harness.h) opens perf events on the thread it traces
 * in the real instrumented rearview-demo-app; a burst of slow frames makes
 * the jank detector capture it; the stored capture carries the daemon's
 * OFFCPU records, and `rvtrace why` splits the methods by what they did:
 * the slow list-item builder (a nanosleep: the thread blocks) mostly
 * off-CPU and blocked, the CPU-bound spin_work mostly on-CPU; the daemon's
 * local summary (`rvctl --json show`) carries the reasons, blocked first,
 * and the slow builder's inclusive time mostly off the CPU.  Shares are
 * compared with generous margins, never absolute times; when perf events
 * cannot be opened here (the daemon logs it) the test skips visibly.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"

/* `rvctl --json show` of the first capture once its summary is stored
 * (bounded wait), into out; 0 or -1. */
static int summary_of_first(struct rvh *h, char *out, size_t cap)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_captures(h);
		uint64_t id = r && r->captures && r->captures->n_captures
				      ? r->captures->captures[0]->id
				      : 0;

		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (id && rvh_rvctl(h, out, cap, "--json show %" PRIu64, id) == 0 &&
		    !strstr(out, "\"summary\":null"))
			return 0;
		rvh_sleep_ms(10);
	}
	return -1;
}

/* The on_cpu_ns (off = 0) or off_cpu_ns (off = 1) of `method` in the
 * summary's top_self. */
static unsigned long long split_of(const char *json, const char *method, int off)
{
	char key[128];
	const char *p;
	unsigned long long on_ns, off_ns;

	snprintf(key, sizeof(key), "{\"name\":\"%s\",", method);
	p = strstr(json, key);
	assert_non_null(p);
	p = strstr(p, "\"on_cpu_ns\":");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "\"on_cpu_ns\":%llu,\"off_cpu_ns\":%llu", &on_ns, &off_ns), 2);
	return off ? off_ns : on_ns;
}

static void test_daemon_offcpu_demo_capture_splits_blocked_and_cpu(void **state)
{
	struct rvh *h = *state;
	char cmd[512], file[256], out[4096];

	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);
	assert_true(rvh_run_demo_app(h) > 0);
	assert_true(rvh_wait_captures(h, 1) >= 1);
	snprintf(cmd, sizeof(cmd), "grep -c 'no off-CPU records' '%s/daemon.log'", h->dir);
	if (rvh_run_cmd(out, sizeof(out), cmd) == 0) {
		print_message("rearviewd could not open perf events here\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd), "find '%s' -name 'c-*.rvc' | head -n 1", h->dir);
	assert_int_equal(rvh_run_cmd(file, sizeof(file), cmd), 0);
	file[strcspn(file, "\n")] = '\0';
	assert_true(file[0] != '\0');

	snprintf(cmd, sizeof(cmd), "%s/rvtrace why build_list_item_slow '%s'", RV_BIN_DIR, file);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	print_message("%s", out);
	assert_null(strstr(out, "no off-CPU records"));
	assert_true(rvh_why_share(out, "off-CPU:") > 50);
	assert_true(rvh_why_share(out, "blocked:") > 50);
	assert_true(rvh_why_share(out, "blocked:") > rvh_why_share(out, "preempted:"));
	assert_non_null(strstr(out, "faults minor"));

	snprintf(cmd, sizeof(cmd), "%s/rvtrace why spin_work '%s'", RV_BIN_DIR, file);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	print_message("%s", out);
	assert_true(rvh_why_share(out, "blocked:") < 50);
	assert_true(rvh_why_share(out, "on-CPU:") > rvh_why_share(out, "blocked:"));

	/* The summary's columns and the JSON's reasons come from the same records. */
	snprintf(cmd, sizeof(cmd), "%s/rvtrace summary --json '%s'", RV_BIN_DIR, file);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	assert_non_null(strstr(out, "\"offcpu_reasons\":[{\"reason\":\"blocked\""));
	snprintf(cmd, sizeof(cmd), "%s/rvtrace summary '%s'", RV_BIN_DIR, file);
	assert_int_equal(rvh_run_cmd(out, sizeof(out), cmd), 0);
	assert_non_null(strstr(out, "off_cpu_incl"));

	/* The local summary (device/src/summary.c), computed at consent full
	 * from the capture the daemon enriched. */
	assert_int_equal(summary_of_first(h, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\"offcpu_reasons\":[{\"reason\":\"blocked\""));
	assert_true(split_of(out, "build_list_item_slow", 1) >
		    split_of(out, "build_list_item_slow", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_daemon_offcpu_demo_capture_splits_blocked_and_cpu, rvh_fixture_setup,
			rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
