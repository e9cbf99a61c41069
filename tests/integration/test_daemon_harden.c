/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_harden.c — issue 18 hardening of rearviewd, each case with
 * the reproducer's numbers: idle control.sock peers cannot lock out
 * admin.sock (item 1: 256 idle peers made `rvctl status` fail), a uid's
 * share of control.sock is bounded, and a peer that never registers is
 * dropped.  Real rearviewd and rvctl in a mkdtemp directory
 * (daemon_harness.h); every wait has a generous guard, nothing is timed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "rearview/event.pb-c.h"
#include "rearview/policy.h"

/* 256 peers fit on control.sock; none registers during the test. */
static int setup_flood(void **state)
{
	return rvh_fixture_setup_conf(state, "[sockets]\nmax_peers = 256\nmax_peers_per_uid = 0\n"
					     "register_timeout_ms = 600000\n");
}

static int setup_per_uid(void **state)
{
	return rvh_fixture_setup_conf(
		state, "[sockets]\nmax_peers_per_uid = 4\nregister_timeout_ms = 600000\n");
}

static int setup_deadline(void **state)
{
	return rvh_fixture_setup_conf(state, "[sockets]\nregister_timeout_ms = 100\n");
}

/* The daemon's socket `name`, connected (the test fails otherwise). */
static int connect_sock(struct rvh *h, const char *name)
{
	int fd = rvh_connect(h, name);

	assert_true(fd >= 0);
	return fd;
}

/* True when the daemon closes `fd` (EOF) within the guard. */
static bool closed_by_daemon(int fd)
{
	struct timeval tv = {RVH_GUARD_S, 0};
	char b;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return recv(fd, &b, 1, 0) == 0;
}

/* Item 1: 256 idle connections to control.sock (the old shared limit) and
 * admin.sock still answers `rvctl status` and events.sock still admits. */
static void test_daemon_harden_256_idle_control_peers_admin_still_answers(void **state)
{
	struct rvh *h = *state;
	int fds[256], extra, efd;
	char out[4096];
	Rearview__AdminResponse *r;

	for (int i = 0; i < 256; i++)
		fds[i] = connect_sock(h, "control.sock");
	/* The 257th is refused, so the daemon has accepted all 256 before. */
	extra = connect_sock(h, "control.sock");
	assert_true(closed_by_daemon(extra));
	close(extra);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "status"), 0);
	assert_non_null(strstr(out, "consent"));
	r = rvh_status(h);
	assert_non_null(r);
	assert_int_equal(r->resp_case, REARVIEW__ADMIN_RESPONSE__RESP_STATUS);
	rearview__admin_response__free_unpacked(r, NULL);
	efd = connect_sock(h, "events.sock");
	r = rvh_status(h);
	assert_non_null(r);
	rearview__admin_response__free_unpacked(r, NULL);
	close(efd);
	for (int i = 0; i < 256; i++)
		close(fds[i]);
}

/* Item 1: with max_peers_per_uid = 4, a 5th idle connection of the same
 * uid is refused while the socket has room; admin.sock still answers. */
static void test_daemon_harden_fifth_peer_of_one_uid_refused(void **state)
{
	struct rvh *h = *state;
	int fds[5];
	Rearview__AdminResponse *r;
	pid_t pid;

	for (int i = 0; i < 4; i++)
		fds[i] = connect_sock(h, "control.sock");
	/* The admin round trip orders us after the daemon accepted the four. */
	r = rvh_status(h);
	assert_non_null(r);
	rearview__admin_response__free_unpacked(r, NULL);
	fds[4] = connect_sock(h, "control.sock");
	assert_true(closed_by_daemon(fds[4]));
	for (int i = 0; i < 5; i++)
		close(fds[i]);
	/* Their slots come back once they are gone. */
	pid = rvh_helper(h, "--reconnect", NULL);
	assert_true(pid > 0);
	assert_true(rvh_wait_registered(h, pid, true));
}

/* Item 1: a control peer that never registers is dropped after
 * register_timeout_ms (100 here); a registered one stays. */
static void test_daemon_harden_unregistered_peer_dropped_registered_kept(void **state)
{
	struct rvh *h = *state;
	pid_t pid = rvh_helper(h, NULL);
	int fd;

	assert_true(pid > 0);
	assert_true(rvh_wait_registered(h, pid, true));
	fd = connect_sock(h, "control.sock");
	assert_true(closed_by_daemon(fd));
	close(fd);
	assert_true(rvh_wait_registered(h, pid, true));
}

/* Item 12: `rvctl foreground 999999` (no such process) and a touch that
 * is answered before it is detected (300, 100, 200 ms) exit 1, not 0; a
 * registered pid and an ordered touch are still accepted. */
static void test_daemon_harden_foreground_999999_and_backwards_touch_refused(void **state)
{
	struct rvh *h = *state;
	pid_t pid = rvh_helper(h, NULL);

	assert_true(pid > 0);
	assert_true(rvh_wait_registered(h, pid, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "foreground 999999"), 1);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event touch %d %d 300 100 200", (int)pid, (int)pid),
			 1);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event touch %d %d 100 300 200", (int)pid, (int)pid),
			 1);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "foreground %d", (int)pid), 0);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event touch %d %d 100 150 200", (int)pid, (int)pid),
			 0);
}

/* Item 12: an unsealed memfd in CaptureReady gets Error{MALFORMED} (code
 * 2) before the disconnect, as device/README.md promises. */
static void test_daemon_harden_unsealed_capture_answered_with_error(void **state)
{
	struct rvh *h = *state;
	pid_t bad = rvh_helper(h, "--no-seal", NULL);
	char path[200], out[512] = "";
	size_t n;
	FILE *f;

	assert_true(rvh_wait_registered(h, bad, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)bad), 0);
	assert_true(rvh_wait_registered(h, bad, false));
	/* The helper exits after the close: its output is complete. */
	assert_int_equal(waitpid(bad, NULL, 0), bad);
	h->helpers[0] = 0;
	snprintf(path, sizeof(path), "%s/helper0.out", h->dir);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	assert_non_null(strstr(out, "error 2\n"));
}

/* Item 12: a sealed memfd of the right size that is not a capture (no
 * RVCAP header, no checksum) gets Error{MALFORMED} before the disconnect,
 * and nothing is spooled: no capture row, no file, no Ack. */
static void test_daemon_harden_not_a_capture_refused_nothing_spooled(void **state)
{
	struct rvh *h = *state;
	pid_t bad = rvh_helper(h, "--not-a-capture", NULL);
	Rearview__AdminResponse *r;
	char path[200], out[512] = "";
	size_t n;
	FILE *f;

	assert_true(rvh_wait_registered(h, bad, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)bad), 0);
	assert_true(rvh_wait_registered(h, bad, false));
	assert_int_equal(waitpid(bad, NULL, 0), bad);
	h->helpers[0] = 0;
	snprintf(path, sizeof(path), "%s/helper0.out", h->dir);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	assert_non_null(strstr(out, "error 2\n"));
	r = rvh_captures(h);
	assert_non_null(r);
	assert_int_equal(r->captures->n_captures, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(access(h->acklog, F_OK), -1);
	r = rvh_status(h);
	assert_non_null(r);
	for (n = 0; n < r->status->n_last_errors; n++)
		if (strstr(r->status->last_errors[n], "not a capture (bad magic)"))
			break;
	assert_true(n < r->status->n_last_errors);
	rearview__admin_response__free_unpacked(r, NULL);
}

/* Sends one EventMessage on `fd`; returns the Error code the daemon
 * answers within 2 s (a guard: a valid event gets no answer), or -1. */
static int event_answer(int fd, Rearview__EventMessage *m)
{
	struct timeval tv = {2, 0};
	Rearview__EventMessage *r;
	uint8_t *payload;
	size_t len;
	int code = -1;

	assert_int_equal(rv_frame_send(fd, RV_CHANNEL_EVENT, &m->base, NULL, 0), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (rv_frame_recv(fd, RV_CHANNEL_EVENT, RV_FRAME_MAX_DEFAULT, &payload, &len, NULL, NULL) !=
	    1)
		return -1;
	r = rearview__event_message__unpack(NULL, len, payload);
	free(payload);
	assert_non_null(r);
	assert_int_equal(r->msg_case, REARVIEW__EVENT_MESSAGE__MSG_ERROR);
	code = r->error->code;
	rearview__event_message__free_unpacked(r, NULL);
	return code;
}

/* Issue 17: on events.sock a touch handled before it was delivered, one
 * presented before it happened, and a frame ending an hour from now each
 * get Error{MALFORMED}; the peer stays connected (a metric after them is
 * accepted silently and the next bad one is still answered). */
static void test_daemon_harden_impossible_event_times_answered_with_error(void **state)
{
	struct rvh *h = *state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	Rearview__EventMessage m = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__TouchReport t = REARVIEW__TOUCH_REPORT__INIT;
	Rearview__FrameReport fr = REARVIEW__FRAME_REPORT__INIT;
	Rearview__MetricSample ms = REARVIEW__METRIC_SAMPLE__INIT;
	struct timespec now;
	uint64_t ns;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.90s/events.sock", h->run);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	t.pid = t.tid = 1;
	t.detected_ns = ns - 300000000;
	t.delivered_ns = ns - 200000000;
	t.handled_ns = ns - 250000000;
	t.responded_ns = ns - 100000000;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_TOUCH;
	m.touch = &t;
	assert_int_equal(event_answer(fd, &m), REARVIEW__ERROR__CODE__MALFORMED);
	t.handled_ns = 0;
	t.responded_ns = ns - 400000000;
	assert_int_equal(event_answer(fd, &m), REARVIEW__ERROR__CODE__MALFORMED);
	ms.name = (char *)"gpu_busy";
	ms.value = 0.5;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_METRIC;
	m.metric = &ms;
	assert_int_equal(rv_frame_send(fd, RV_CHANNEL_EVENT, &m.base, NULL, 0), 0);
	fr.pid = fr.tid = 1;
	fr.frame_start_ns = ns;
	fr.frame_end_ns = ns + 3600000000000ull;
	m.msg_case = REARVIEW__EVENT_MESSAGE__MSG_FRAME;
	m.frame = &fr;
	assert_int_equal(event_answer(fd, &m), REARVIEW__ERROR__CODE__MALFORMED);
	close(fd);
}

/* A policy signed with a fresh key: the daemon's config (consent full,
 * the public key, `extra`) and the signed document's path. */
struct signed_setup {
	char keydir[32];
	char doc[200];
};

static void sign_policy(struct signed_setup *ss, const Rearview__PolicyBody *body, char *conf,
			size_t cap, const char *extra)
{
	char *priv = NULL, *pub = NULL, path[200];
	uint8_t *doc = NULL;
	size_t len;
	FILE *f;

	snprintf(ss->keydir, sizeof(ss->keydir), "/tmp/rvd-key-XXXXXX");
	assert_non_null(mkdtemp(ss->keydir));
	assert_int_equal(rvp_keygen(&priv, &pub), 0);
	snprintf(path, sizeof(path), "%s/policy.pub", ss->keydir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(pub, f);
	fclose(f);
	assert_int_equal(rvp_policy_sign(body, priv, &doc, &len), 0);
	snprintf(ss->doc, sizeof(ss->doc), "%s/p.policy", ss->keydir);
	f = fopen(ss->doc, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(doc, 1, len, f), len);
	fclose(f);
	snprintf(conf, cap, "[capture]\nconsent_default = full\n[policy]\npublic_key = %s\n%s",
		 path, extra ? extra : "");
	free(priv);
	free(pub);
	free(doc);
}

/* The state of capture row `i` once it is not `unwanted`; "" on timeout. */
static void wait_state(struct rvh *h, size_t i, const char *unwanted, char *state, size_t cap,
		       char *reason, size_t rcap)
{
	double until = rvh_now() + RVH_GUARD_S;

	state[0] = reason[0] = '\0';
	while (rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_captures(h);
		bool done = false;

		if (r && r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES &&
		    r->captures->n_captures > i &&
		    strcmp(r->captures->captures[i]->state, unwanted) != 0 &&
		    strcmp(r->captures->captures[i]->state, "captured") != 0) {
			snprintf(state, cap, "%s", r->captures->captures[i]->state);
			snprintf(reason, rcap, "%s", r->captures->captures[i]->reason);
			done = true;
		}
		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (done)
			return;
		rvh_sleep_ms(10);
	}
}

/* Item 11: quota 1, selection most-severe: a severity-30 jank, then a
 * severity-90 one — the 30 is dropped as skipped(replaced_by_more_severe)
 * (both used to upload), the 90 stays pending. */
static void test_daemon_harden_quota1_most_severe_30_then_90_drops_30(void **state)
{
	Rearview__PolicyBody body = REARVIEW__POLICY_BODY__INIT;
	struct signed_setup ss;
	char conf[600], st[32], reason[64], cmd[300];
	struct rvh h;
	pid_t a;

	(void)state;
	body.version = 1;
	body.issued_at_s = (uint64_t)time(NULL);
	body.weekly_quota = 1;
	body.selection = REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE;
	sign_policy(&ss, &body, conf, sizeof(conf), NULL);
	assert_int_equal(rvh_setup(&h, conf), 0);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "push-policy %s", ss.doc), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d 30", (int)a, (int)a), 0);
	wait_state(&h, 0, "", st, sizeof(st), reason, sizeof(reason));
	assert_string_equal(st, "pending");
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d 90", (int)a, (int)a), 0);
	wait_state(&h, 1, "", st, sizeof(st), reason, sizeof(reason));
	assert_string_equal(st, "pending");
	wait_state(&h, 0, "pending", st, sizeof(st), reason, sizeof(reason));
	assert_string_equal(st, "skipped");
	assert_string_equal(reason, "replaced_by_more_severe");
	rvh_teardown(&h);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ss.keydir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_daemon_harden_256_idle_control_peers_admin_still_answers, setup_flood,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_harden_fifth_peer_of_one_uid_refused,
						setup_per_uid, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_harden_unregistered_peer_dropped_registered_kept,
			setup_deadline, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_harden_foreground_999999_and_backwards_touch_refused,
			rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test(test_daemon_harden_quota1_most_severe_30_then_90_drops_30),
		cmocka_unit_test_setup_teardown(
			test_daemon_harden_impossible_event_times_answered_with_error,
			rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_harden_not_a_capture_refused_nothing_spooled, rvh_fixture_setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_harden_unsealed_capture_answered_with_error, rvh_fixture_setup,
			rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
