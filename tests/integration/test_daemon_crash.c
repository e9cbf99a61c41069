/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_crash.c — kill -9 rearviewd at random instants while a
 * traced process (rv_helper_app --reconnect) answers captures, restart it,
 * and check the spool's promise: every capture the daemon acknowledged is
 * present exactly once, the index and the capture files agree, and no
 * capture is left half-way (captured) after recovery.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"

#define ROUNDS	   30
#define MAX_TOKENS 4096

struct token {
	int pid;
	unsigned long seq;
};

static void capture_now(struct rvh *h, pid_t pid)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_CAPTURE_PID;
	q.capture_pid = pid;
	/* The daemon may be killed under us: failures are expected here. */
	if (rvh_admin(h, &q, &r) == 0)
		rearview__admin_response__free_unpacked(r, NULL);
}

static size_t read_acks(const char *path, struct token *t, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (!f)
		return 0;
	while (n < cap && fscanf(f, "%d %lu", &t[n].pid, &t[n].seq) == 2)
		n++;
	fclose(f);
	return n;
}

static size_t read_files(const char *capdir, struct token *t, size_t cap)
{
	DIR *d = opendir(capdir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL && n < cap) {
		char path[512];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", capdir, de->d_name);
		assert_int_equal(rvh_capture_token(path, &t[n].pid, &t[n].seq), 0);
		n++;
	}
	closedir(d);
	return n;
}

static void test_daemon_crash_kill9_keeps_acknowledged_captures_once(void **state)
{
	static struct token acks[MAX_TOKENS], files[MAX_TOKENS];
	struct rvh h;
	Rearview__AdminResponse *r;
	size_t nacks, nfiles;
	char capdir[200];
	pid_t app;
	double until;

	srand((unsigned)getpid());
	assert_int_equal(rvh_setup(&h, "[capture]\nconsent_default = full\n"), 0);
	app = rvh_helper(&h, "--reconnect", NULL);
	for (int round = 0; round < ROUNDS; round++) {
		int shots = 1 + rand() % 4;

		assert_true(rvh_wait_registered(&h, app, true));
		for (int i = 0; i < shots; i++) {
			capture_now(&h, app);
			rvh_sleep_ms((unsigned)(rand() % 8));
		}
		rvh_sleep_ms((unsigned)(rand() % 10));
		rvh_stop_daemon(&h, SIGKILL);
		assert_int_equal(rvh_start_daemon(&h), 0);
	}
	/* One last capture that runs to completion. */
	assert_true(rvh_wait_registered(&h, app, true));
	nacks = read_acks(h.acklog, acks, MAX_TOKENS);
	capture_now(&h, app);
	until = rvh_now() + RVH_GUARD_S;
	while (read_acks(h.acklog, acks, MAX_TOKENS) == nacks && rvh_now() < until)
		rvh_sleep_ms(10);
	kill(app, SIGTERM);
	waitpid(app, NULL, 0);
	h.helpers[0] = 0;

	nacks = read_acks(h.acklog, acks, MAX_TOKENS);
	snprintf(capdir, sizeof(capdir), "%s/captures", h.state);
	nfiles = read_files(capdir, files, MAX_TOKENS);
	print_message("%zu acknowledged, %zu files after %d kills\n", nacks, nfiles, ROUNDS);
	assert_true(nacks >= 1);
	/* Exactly once: no two files hold the same capture... */
	for (size_t i = 0; i < nfiles; i++)
		for (size_t k = i + 1; k < nfiles; k++)
			assert_false(files[i].pid == files[k].pid && files[i].seq == files[k].seq);
	/* ...and every acknowledged capture is among them. */
	for (size_t i = 0; i < nacks; i++) {
		bool found = false;

		for (size_t k = 0; k < nfiles && !found; k++)
			found = files[k].pid == acks[i].pid && files[k].seq == acks[i].seq;
		if (!found)
			fail_msg("acknowledged capture %d/%lu lost", acks[i].pid, acks[i].seq);
	}
	/* The index lists exactly the files, each pending once recovery re-gated it. */
	until = rvh_now() + RVH_GUARD_S;
	for (;;) {
		bool settled = true;

		r = rvh_captures(&h);
		assert_non_null(r);
		for (size_t i = 0; i < r->captures->n_captures; i++)
			settled &= !strcmp(r->captures->captures[i]->state, "pending");
		if (settled || rvh_now() > until)
			break;
		rearview__admin_response__free_unpacked(r, NULL);
		rvh_sleep_ms(10);
	}
	assert_int_equal(r->captures->n_captures, nfiles);
	for (size_t i = 0; i < r->captures->n_captures; i++) {
		assert_string_equal(r->captures->captures[i]->state, "pending");
		for (size_t k = i + 1; k < r->captures->n_captures; k++)
			assert_true(r->captures->captures[i]->id != r->captures->captures[k]->id);
	}
	rearview__admin_response__free_unpacked(r, NULL);
	assert_true(WIFEXITED(rvh_stop_daemon(&h, SIGTERM)));
	rvh_teardown(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_daemon_crash_kill9_keeps_acknowledged_captures_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
