/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_identity.c — who may speak for an app on control.sock.  A
 * process of another user (rv_helper_app dropped to nobody with setresuid)
 * that declares an app id the operator's map gives to root is refused and
 * counted, and nothing of it is stored; the mapped identity is accepted
 * and its captures carry the mapped id; an unlisted id of another user is
 * qualified with its uid; a map anyone may write stops the daemon with a
 * line naming the file.  Real rearviewd, rvctl and processes in a mkdtemp
 * directory (daemon_harness.h); every wait has a generous guard.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"

#define HELPER RV_TBIN_DIR "/device/rv_helper_app"
#define NOBODY "65534"

/* The map: com.victim.app belongs to root running rv_helper_app. */
static char map_text[PATH_MAX + 128];

static const char *victim_map(void)
{
	char exe[PATH_MAX];

	if (!realpath(HELPER, exe))
		return NULL;
	snprintf(map_text, sizeof(map_text), "[com.victim.app]\nuser = root\nexe = %s\n", exe);
	return map_text;
}

static int setup_mapped(void **state)
{
	struct rvh *h = calloc(1, sizeof(*h));
	const char *map = victim_map();

	if (!h || !map || rvh_setup_apps(h, NULL, map, 0644) < 0) {
		fprintf(stderr, "rearviewd did not start\n");
		if (h)
			rvh_teardown(h);
		free(h);
		return -1;
	}
	/* nobody must reach run/control.sock through the 0700 mkdtemp dir. */
	if (chmod(h->dir, 0711) < 0) {
		rvh_teardown(h);
		free(h);
		return -1;
	}
	*state = h;
	return 0;
}

/* Dropping to another uid needs root: skipped, visibly, otherwise. */
#define NEED_ROOT()                 \
	do {                        \
		if (geteuid() != 0) \
			skip();     \
	} while (0)

/* Waits for a helper that the daemon turned away to exit; its output. */
static void helper_output(struct rvh *h, pid_t pid, unsigned idx, char *out, size_t cap)
{
	char path[200];
	FILE *f;
	size_t n;

	assert_int_equal(rvh_wait_exit(h, pid), 0);
	snprintf(path, sizeof(path), "%s/helper%u.out", h->dir, idx);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	fclose(f);
}

static bool daemon_log_has(struct rvh *h, const char *needle)
{
	char path[200], buf[65536];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/daemon.log", h->dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

static uint64_t identity_refused(struct rvh *h, size_t *nprocs)
{
	Rearview__AdminResponse *r = rvh_status(h);
	uint64_t n;

	assert_non_null(r);
	assert_int_equal(r->resp_case, REARVIEW__ADMIN_RESPONSE__RESP_STATUS);
	n = r->status->identity_refused;
	*nprocs = r->status->n_processes;
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

/* The reproducer: an unprivileged process registers as com.victim.app.
 * Same executable as the mapped one, another uid: refused, counted,
 * nothing registered, nothing stored. */
static void test_identity_other_uid_cannot_speak_for_mapped_app(void **state)
{
	struct rvh *h = *state;
	char out[4096];
	size_t nprocs = 99;
	unsigned idx = h->nhelpers;
	pid_t a = rvh_helper(h, "--as-uid", NOBODY, "--app-id", "com.victim.app", NULL);

	NEED_ROOT();

	assert_true(a > 0);
	helper_output(h, a, idx, out, sizeof(out));
	assert_non_null(strstr(out, "error 4")); /* Error{DENIED} */
	assert_int_equal(identity_refused(h, &nprocs), 1);
	assert_int_equal(nprocs, 0);
	assert_true(daemon_log_has(h, "com.victim.app belongs to another identity"));
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "status"), 0);
	assert_non_null(strstr(out, "identity refused:   1"));
	/* It cannot be asked for a capture, and the spool holds nothing. */
	assert_int_not_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 0), 0);
	assert_true(rvh_spool_files(h) == 0 || rvh_spool_files(h) == (size_t)-1);
}

/* The mapped identity, declaring its id or declaring none (as the tracer
 * does), speaks as com.victim.app and its capture is stored under it. */
static void test_identity_mapped_app_accepted(void **state)
{
	struct rvh *h = *state;
	pid_t a = rvh_helper(h, "--app-id", "com.victim.app", NULL);
	pid_t b = rvh_helper(h, NULL);
	Rearview__AdminResponse *r;
	const Rearview__ProcessStatus *ps;
	size_t nprocs;

	assert_true(a > 0 && b > 0);
	assert_true(rvh_wait_registered(h, a, true));
	assert_true(rvh_wait_registered(h, b, true));
	r = rvh_status(h);
	ps = rvh_find_proc(r, a);
	assert_non_null(ps);
	assert_string_equal(ps->app_id, "com.victim.app");
	assert_int_equal(ps->uid, 0);
	ps = rvh_find_proc(r, b);
	assert_non_null(ps);
	assert_string_equal(ps->app_id, "com.victim.app");
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(identity_refused(h, &nprocs), 0);

	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	r = rvh_captures(h);
	assert_non_null(r);
	assert_string_equal(r->captures->captures[0]->app_id, "com.victim.app");
	rearview__admin_response__free_unpacked(r, NULL);
}

/* Another user's unlisted id (declared, or its executable's name) is
 * qualified with its uid: it cannot pass for anyone else's. */
static void test_identity_unlisted_app_of_other_uid_is_qualified(void **state)
{
	struct rvh *h = *state;
	pid_t a = rvh_helper(h, "--as-uid", NOBODY, "--app-id", "com.other.app", NULL);
	pid_t b = rvh_helper(h, "--as-uid", NOBODY, NULL);
	Rearview__AdminResponse *r;
	const Rearview__ProcessStatus *ps;

	NEED_ROOT();

	assert_true(a > 0 && b > 0);
	assert_true(rvh_wait_registered(h, a, true));
	assert_true(rvh_wait_registered(h, b, true));
	r = rvh_status(h);
	ps = rvh_find_proc(r, a);
	assert_non_null(ps);
	assert_string_equal(ps->app_id, "com.other.app@uid" NOBODY);
	assert_int_equal(ps->uid, 65534);
	ps = rvh_find_proc(r, b);
	assert_non_null(ps);
	assert_string_equal(ps->app_id, "rv_helper_app@uid" NOBODY);
	rearview__admin_response__free_unpacked(r, NULL);

	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	r = rvh_captures(h);
	assert_non_null(r);
	assert_string_equal(r->captures->captures[0]->app_id, "com.other.app@uid" NOBODY);
	rearview__admin_response__free_unpacked(r, NULL);
}

/* A declared id in the daemon's own "@uid" form is not an app id. */
static void test_identity_qualified_form_cannot_be_declared(void **state)
{
	struct rvh *h = *state;
	char out[4096];
	size_t nprocs;
	unsigned idx = h->nhelpers;
	pid_t a = rvh_helper(h, "--as-uid", NOBODY, "--app-id", "rv_helper_app@uid0", NULL);

	NEED_ROOT();

	assert_true(a > 0);
	helper_output(h, a, idx, out, sizeof(out));
	assert_non_null(strstr(out, "error 4"));
	assert_int_equal(identity_refused(h, &nprocs), 1);
}

/* With unlisted = refuse, only mapped apps (and root) may register. */
static int setup_refuse(void **state)
{
	struct rvh *h = calloc(1, sizeof(*h));

	if (!h || rvh_setup_apps(h, "[identity]\nunlisted = refuse\n", victim_map(), 0644) < 0 ||
	    chmod(h->dir, 0711) < 0) {
		if (h)
			rvh_teardown(h);
		free(h);
		return -1;
	}
	*state = h;
	return 0;
}

static void test_identity_unlisted_refused_when_configured(void **state)
{
	struct rvh *h = *state;
	char out[4096];
	size_t nprocs;
	unsigned idx = h->nhelpers;
	pid_t a = rvh_helper(h, "--as-uid", NOBODY, "--app-id", "com.other.app", NULL);

	NEED_ROOT();

	assert_true(a > 0);
	helper_output(h, a, idx, out, sizeof(out));
	assert_non_null(strstr(out, "error 4"));
	assert_int_equal(identity_refused(h, &nprocs), 1);
	assert_true(daemon_log_has(h, "com.other.app is not in the app map"));
}

/* A harness the test starts itself (the daemon is expected not to);
 * whatever it leaves is torn down even when an assertion fails. */
static int setup_unstarted(void **state)
{
	struct rvh *h = calloc(1, sizeof(*h));

	if (!h)
		return -1;
	h->notify_fd = -1;
	*state = h;
	return 0;
}

static int teardown_unstarted(void **state)
{
	struct rvh *h = *state;

	if (h->dir[0])
		rvh_teardown(h);
	free(h);
	return 0;
}

/* A map file anyone can write is no map: the daemon does not start, and
 * says which file and why. */
static void test_identity_world_writable_map_refused(void **state)
{
	struct rvh *h = *state;
	char path[200];

	assert_int_equal(rvh_setup_apps(h, NULL, "[com.victim.app]\nuser = root\n", 0666), -1);
	snprintf(path, sizeof(path), "%s/test.conf: refused: writable by others", h->apps);
	assert_true(daemon_log_has(h, path));
}

/* A rule with only an executable proves nothing: refused at start. */
static void test_identity_exe_only_rule_refused(void **state)
{
	struct rvh *h = *state;

	assert_int_equal(rvh_setup_apps(h, NULL, "[com.victim.app]\nexe = /usr/bin/true\n", 0644),
			 -1);
	assert_true(daemon_log_has(h, "names no user and no unit"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity_other_uid_cannot_speak_for_mapped_app,
						setup_mapped, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_identity_mapped_app_accepted, setup_mapped,
						rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_identity_unlisted_app_of_other_uid_is_qualified, setup_mapped,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_identity_qualified_form_cannot_be_declared,
						setup_mapped, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_identity_unlisted_refused_when_configured,
						setup_refuse, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_identity_world_writable_map_refused,
						setup_unstarted, teardown_unstarted),
		cmocka_unit_test_setup_teardown(test_identity_exe_only_rule_refused,
						setup_unstarted, teardown_unstarted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
