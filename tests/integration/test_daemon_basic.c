/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_basic.c — the real rearviewd, rvctl and rv_helper_app in a
 * temporary run directory: readiness, rvctl commands and errors, hostile
 * peers on each socket, SO_PEERCRED identity, foreground tracking, the
 * capture flow with a sealed memfd, consent, jank from events.sock, and a
 * clean SIGTERM shutdown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <grp.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "rearview/control.pb-c.h"
#include "rearview/event.pb-c.h"

/* The daemon's socket `name`, connected (the test fails otherwise). */
static int connect_sock(struct rvh *h, const char *name)
{
	int fd = rvh_connect(h, name);

	assert_true(fd >= 0);
	return fd;
}

/* Reads until the daemon closes; returns the Error code of the last frame
 * seen on `channel`, or -1 when no Error came before the close. */
static int read_until_closed(int fd, uint8_t channel)
{
	struct timeval tv = {RVH_GUARD_S, 0};
	int code = -1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		uint8_t *payload;
		size_t len;
		int rc = rv_frame_recv(fd, channel, RV_FRAME_MAX_DEFAULT, &payload, &len, NULL,
				       NULL);

		if (rc <= 0)
			break;
		if (channel == RV_CHANNEL_CONTROL) {
			Rearview__ControlMessage *m =
				rearview__control_message__unpack(NULL, len, payload);

			if (m && m->msg_case == REARVIEW__CONTROL_MESSAGE__MSG_ERROR)
				code = m->error->code;
			if (m)
				rearview__control_message__free_unpacked(m, NULL);
		} else if (channel == RV_CHANNEL_EVENT) {
			Rearview__EventMessage *m =
				rearview__event_message__unpack(NULL, len, payload);

			if (m && m->msg_case == REARVIEW__EVENT_MESSAGE__MSG_ERROR)
				code = m->error->code;
			if (m)
				rearview__event_message__free_unpacked(m, NULL);
		}
		free(payload);
	}
	close(fd);
	return code;
}

static void test_daemon_basic_status_and_consent_roundtrip(void **state)
{
	struct rvh *h = *state;
	char out[4096];

	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "--json status"), 0);
	assert_non_null(strstr(out, "\"consent\":\"local\""));
	assert_non_null(strstr(out, "\"processes\":[]"));
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "consent full"), 0);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "consent status"), 0);
	assert_string_equal(out, "full\n");
	/* Consent survives a restart (stored in the state dir). */
	assert_true(WIFEXITED(rvh_stop_daemon(h, SIGTERM)));
	assert_int_equal(rvh_start_daemon(h), 0);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "consent status"), 0);
	assert_string_equal(out, "full\n");
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "consent sometimes"), 2);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "show 12345"), 1);
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "capture 999999"), 1);
}

static void test_daemon_basic_not_running_clear_error(void **state)
{
	struct rvh *h = *state;
	char out[256];

	assert_int_equal(WEXITSTATUS(rvh_stop_daemon(h, SIGTERM)), 0);
	/* Clean shutdown removes the sockets. */
	assert_int_equal(access(h->run, F_OK), 0);
	{
		char path[200];

		snprintf(path, sizeof(path), "%s/admin.sock", h->run);
		assert_int_equal(access(path, F_OK), -1);
	}
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "status"), 3);
}

static int rvctl_as_nobody(struct rvh *h)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(99);
		execl(RV_BIN_DIR "/rvctl", "rvctl", "-r", h->run, "status", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_daemon_basic_unprivileged_admin_denied(void **state)
{
	struct rvh *h = *state;
	FILE *f;
	int rc;

	/* The run dir must be traversable for the check to reach the socket. */
	chmod(h->dir, 0755);
	chmod(h->run, 0755);
	/* Refused by the socket's file mode (0660, root)... */
	rc = rvctl_as_nobody(h);
	if (rc == 99)
		skip(); /* not root: cannot drop to another uid */
	assert_int_equal(rc, 4);
	/* ...and by rearviewd's own SO_PEERCRED check when the mode lets it through. */
	rvh_stop_daemon(h, SIGTERM);
	f = fopen(h->conf, "a");
	assert_non_null(f);
	fputs("[sockets]\nadmin_mode = 0666\n", f);
	fclose(f);
	assert_int_equal(rvh_start_daemon(h), 0);
	assert_int_equal(rvctl_as_nobody(h), 4);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "status"), 0);
}

static void test_daemon_basic_hostile_peers_disconnected_others_served(void **state)
{
	struct rvh *h = *state;
	static const uint8_t huge[8] = {0x52, 0x56, 1, 2, 0, 0, 0, 0x40}; /* 1 GiB */
	static const uint8_t newer[8] = {0x52, 0x56, 9, 2, 0, 0, 0, 0};
	static const uint8_t wrong_ch[8] = {0x52, 0x56, 1, 3, 0, 0, 0, 0};
	int quiet = connect_sock(h, "events.sock"); /* an idle peer that must survive */
	int fd;

	fd = connect_sock(h, "events.sock");
	assert_true(write(fd, "GET / HTTP/1.1\r\n\r\n", 18) == 18);
	assert_int_equal(read_until_closed(fd, RV_CHANNEL_EVENT), REARVIEW__ERROR__CODE__MALFORMED);

	fd = connect_sock(h, "events.sock");
	assert_true(write(fd, huge, sizeof(huge)) == sizeof(huge));
	assert_int_equal(read_until_closed(fd, RV_CHANNEL_EVENT), REARVIEW__ERROR__CODE__TOO_LARGE);

	fd = connect_sock(h, "events.sock");
	assert_true(write(fd, newer, sizeof(newer)) == sizeof(newer));
	assert_int_equal(read_until_closed(fd, RV_CHANNEL_EVENT),
			 REARVIEW__ERROR__CODE__UNSUPPORTED_VERSION);

	fd = connect_sock(h, "control.sock");
	assert_true(write(fd, wrong_ch, sizeof(wrong_ch)) == sizeof(wrong_ch));
	assert_int_equal(read_until_closed(fd, RV_CHANNEL_CONTROL),
			 REARVIEW__ERROR__CODE__MALFORMED);

	/* A frame whose payload is not a ControlMessage. */
	fd = connect_sock(h, "control.sock");
	{
		uint8_t junk[8 + 4] = {0x52, 0x56, 1, 1, 4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};

		assert_true(write(fd, junk, sizeof(junk)) == sizeof(junk));
	}
	assert_int_equal(read_until_closed(fd, RV_CHANNEL_CONTROL),
			 REARVIEW__ERROR__CODE__MALFORMED);

	/* Half a frame, then hang up. */
	fd = connect_sock(h, "admin.sock");
	assert_true(write(fd, huge, 5) == 5);
	close(fd);

	/* Everyone else is still served. */
	assert_int_equal(rvh_rvctl(h, NULL, 0, "status"), 0);
	{
		char c;
		ssize_t n = recv(quiet, &c, 1, MSG_DONTWAIT);

		assert_true(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
	}
	close(quiet);
}

static void test_daemon_basic_register_for_other_pid_denied(void **state)
{
	struct rvh *h = *state;
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__Register r = REARVIEW__REGISTER__INIT;
	Rearview__ThreadsChanged tc = REARVIEW__THREADS_CHANGED__INIT;
	int fd = connect_sock(h, "control.sock");

	r.pid = 1;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_REG;
	m.reg = &r;
	assert_int_equal(rv_frame_send(fd, RV_CHANNEL_CONTROL, &m.base, NULL, 0), 0);
	assert_int_equal(read_until_closed(fd, RV_CHANNEL_CONTROL), REARVIEW__ERROR__CODE__DENIED);

	/* Speaking before registering is refused too. */
	fd = connect_sock(h, "control.sock");
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_THREADS;
	m.threads = &tc;
	assert_int_equal(rv_frame_send(fd, RV_CHANNEL_CONTROL, &m.base, NULL, 0), 0);
	assert_int_equal(read_until_closed(fd, RV_CHANNEL_CONTROL), REARVIEW__ERROR__CODE__DENIED);
}

static void test_daemon_basic_foreground_traces_n_most_recent(void **state)
{
	struct rvh *h = *state;
	pid_t a = rvh_helper(h, NULL), b = rvh_helper(h, NULL), c = rvh_helper(h, NULL);
	Rearview__AdminResponse *r;
	const Rearview__ProcessStatus *pa, *pb, *pc;

	assert_true(rvh_wait_registered(h, a, true));
	assert_true(rvh_wait_registered(h, b, true));
	assert_true(rvh_wait_registered(h, c, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "foreground %d", (int)a), 0);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "foreground %d", (int)b), 0);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "foreground %d", (int)c), 0);
	r = rvh_status(h);
	pa = rvh_find_proc(r, a);
	pb = rvh_find_proc(r, b);
	pc = rvh_find_proc(r, c);
	assert_non_null(pa);
	assert_non_null(pb);
	assert_non_null(pc);
	/* N = 2: the two most recent (b, c) are traced, a was released. */
	assert_int_equal(pa->n_traced_tids, 0);
	assert_int_equal(pb->n_traced_tids, 1);
	assert_int_equal(pb->traced_tids[0], b);
	assert_int_equal(pc->n_traced_tids, 1);
	/* Buffer memory as reported by the processes (4096 each). */
	assert_int_equal(r->status->buffer_bytes, 3 * 4096);
	rearview__admin_response__free_unpacked(r, NULL);

	/* c exits: a is traced again. */
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	h->helpers[2] = 0;
	assert_true(rvh_wait_registered(h, c, false));
	r = rvh_status(h);
	pa = rvh_find_proc(r, a);
	assert_non_null(pa);
	assert_int_equal(pa->n_traced_tids, 1);
	rearview__admin_response__free_unpacked(r, NULL);
}

static char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_daemon_basic_capture_stored_and_acknowledged(void **state)
{
	struct rvh *h = *state;
	pid_t a = rvh_helper(h, NULL);
	Rearview__AdminResponse *r;
	const Rearview__CaptureInfo *ci;
	char out[4096], path[256], want[64];
	char *acks, *data;
	unsigned long tok_seq;
	int tok_pid;

	assert_true(rvh_wait_registered(h, a, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	r = rvh_captures(h);
	ci = r->captures->captures[0];
	/* consent local: kept on the device, never queued for upload. */
	{
		double until = rvh_now() + RVH_GUARD_S;

		while (strcmp(r->captures->captures[0]->state, "skipped") && rvh_now() < until) {
			rearview__admin_response__free_unpacked(r, NULL);
			rvh_sleep_ms(10);
			r = rvh_captures(h);
		}
		ci = r->captures->captures[0];
	}
	assert_string_equal(ci->state, "skipped");
	assert_string_equal(ci->reason, "consent_local");
	assert_int_equal(ci->anomaly->kind, REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL);
	assert_int_equal(ci->anomaly->pid, a);
	assert_int_equal(ci->anomaly->tid, a);
	assert_true(ci->size > 128); /* a header and more: a real capture */
	assert_true(ci->freeze_latency_ns > 0);
	rearview__admin_response__free_unpacked(r, NULL);

	/* The helper logged the ack; the spooled file holds its token. */
	snprintf(want, sizeof(want), "%d 1\n", (int)a);
	{
		double until = rvh_now() + RVH_GUARD_S;

		while (!((acks = slurp(h->acklog)) && strstr(acks, want)) && rvh_now() < until)
			rvh_sleep_ms(10);
	}
	assert_non_null(acks);
	assert_non_null(strstr(acks, want));
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "--json captures"), 0);
	assert_non_null(strstr(out, "\"state\":\"skipped\""));
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "show 1"), 0);
	assert_non_null(strstr(out, "manual"));
	{
		FILE *p;
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "ls %s/captures/c-*.rvc", h->state);
		p = popen(cmd, "r");
		assert_non_null(p);
		data = fgets(path, sizeof(path), p);
		pclose(p);
	}
	assert_non_null(data);
	path[strcspn(path, "\n")] = '\0';
	assert_int_equal(rvh_capture_token(path, &tok_pid, &tok_seq), 0);
	assert_int_equal(tok_pid, (int)a);
	assert_int_equal(tok_seq, 1);
	/* The status reports the latency of the last capture. */
	r = rvh_status(h);
	assert_true(r->status->last_freeze_latency_ns > 0);
	rearview__admin_response__free_unpacked(r, NULL);
}

static void test_daemon_basic_consent_off_captures_nothing(void **state)
{
	struct rvh *h = *state;
	pid_t a = rvh_helper(h, NULL);
	Rearview__AdminResponse *r;
	char out[64];

	assert_true(rvh_wait_registered(h, a, true));
	assert_int_equal(rvh_rvctl(h, out, sizeof(out), "consent off"), 0);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)a), 0);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	/* The refusal is synchronous: after one more round trip nothing is in flight. */
	r = rvh_captures(h);
	assert_non_null(r);
	assert_int_equal(r->captures->n_captures, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	/* Both anomalies reached the daemon and were refused; tracing is off too. */
	r = rvh_status(h);
	assert_int_equal(r->status->anomalies, 2);
	assert_int_equal(r->status->anomalies_not_captured, 2);
	assert_int_equal(rvh_find_proc(r, a)->n_traced_tids, 0);
	rearview__admin_response__free_unpacked(r, NULL);
}

static void test_daemon_basic_jank_from_events_captured_pending(void **state)
{
	struct rvh *h = *state;
	pid_t a = rvh_helper(h, NULL);
	Rearview__AdminResponse *r;
	const Rearview__CaptureInfo *ci;
	double until;

	assert_true(rvh_wait_registered(h, a, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "consent full"), 0);
	/* Two late frames, one on time, three late: exactly one jank (K = 3). */
	for (int i = 0; i < 2; i++)
		assert_int_equal(rvh_rvctl(h, NULL, 0, "event frame %d %d 40", (int)a, (int)a), 0);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event frame %d %d 5", (int)a, (int)a), 0);
	r = rvh_captures(h);
	assert_int_equal(r->captures->n_captures, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rvh_rvctl(h, NULL, 0, "event frame %d %d 40", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
	until = rvh_now() + RVH_GUARD_S;
	for (;;) {
		r = rvh_captures(h);
		ci = r->captures->captures[0];
		if (!strcmp(ci->state, "pending") || rvh_now() > until)
			break;
		rearview__admin_response__free_unpacked(r, NULL);
		rvh_sleep_ms(10);
	}
	assert_string_equal(ci->state, "pending");
	assert_int_equal(ci->anomaly->kind, REARVIEW__ANOMALY_KIND__ANOMALY_JANK);
	rearview__admin_response__free_unpacked(r, NULL);
	r = rvh_status(h);
	assert_int_equal(r->status->pending_uploads, 1);
	rearview__admin_response__free_unpacked(r, NULL);
}

static void test_daemon_basic_unsealed_memfd_refused(void **state)
{
	struct rvh *h = *state;
	pid_t bad = rvh_helper(h, "--no-seal", NULL);
	pid_t good = rvh_helper(h, NULL);
	Rearview__AdminResponse *r;
	bool found = false;

	assert_true(rvh_wait_registered(h, bad, true));
	assert_true(rvh_wait_registered(h, good, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)bad), 0);
	/* The offender is disconnected (and exits: no --reconnect)... */
	assert_true(rvh_wait_registered(h, bad, false));
	r = rvh_status(h);
	for (size_t i = 0; i < r->status->n_last_errors; i++)
		found |= strstr(r->status->last_errors[i], "not sealed") != NULL;
	assert_true(found);
	/* ...and nothing was stored, while the good peer is still served. */
	assert_non_null(rvh_find_proc(r, good));
	rearview__admin_response__free_unpacked(r, NULL);
	r = rvh_captures(h);
	assert_int_equal(r->captures->n_captures, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)good), 0);
	assert_int_equal(rvh_wait_captures(h, 1), 1);
}

static void test_daemon_basic_silent_process_disconnected(void **state)
{
	struct rvh *h = *state;
	pid_t mute;

	/* Restart with a short capture timeout. */
	rvh_stop_daemon(h, SIGTERM);
	{
		FILE *f = fopen(h->conf, "a");

		fputs("[capture]\ntimeout_ms = 200\n", f);
		fclose(f);
	}
	assert_int_equal(rvh_start_daemon(h), 0);
	mute = rvh_helper(h, "--silent", NULL);
	assert_true(rvh_wait_registered(h, mute, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "capture %d", (int)mute), 0);
	assert_true(rvh_wait_registered(h, mute, false));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "status"), 0);
}

/* The correlation window as long as the daemon allows (an hour): the
 * test's frames must fall inside it however long the machine takes to run
 * the rvctl calls that report them. */
static int setup_long_correlation(void **state)
{
	return rvh_fixture_setup_conf(state, "[correlation]\nwindow_ms = 3600000\n");
}

/* Waits for capture `n` (1-based count) and returns the list; caller frees. */
static Rearview__AdminResponse *nth_capture(struct rvh *h, size_t n)
{
	assert_true(rvh_wait_captures(h, n) >= n);
	return rvh_captures(h);
}

static void test_daemon_basic_touch_and_correlation_captured(void **state)
{
	struct rvh *h = *state;
	pid_t a = rvh_helper(h, NULL);
	Rearview__AdminResponse *r;
	const Rearview__Anomaly *an;

	assert_true(rvh_wait_registered(h, a, true));
	/* 100 ms delivery + 350 ms in the app: over 400 ms, the app's fault. */
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event touch %d %d 1000 1100 1450", (int)a, (int)a),
			 0);
	r = nth_capture(h, 1);
	an = r->captures->captures[0]->anomaly;
	assert_int_equal(an->kind, REARVIEW__ANOMALY_KIND__ANOMALY_TOUCH_LATENCY);
	assert_int_equal(an->touch_attribution, REARVIEW__TOUCH_ATTRIBUTION__TOUCH_ATTR_APP);
	rearview__admin_response__free_unpacked(r, NULL);

	/* Jank while gpu_busy is high becomes the correlated anomaly. */
	assert_int_equal(rvh_rvctl(h, NULL, 0, "event metric gpu_busy 0.95"), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rvh_rvctl(h, NULL, 0, "event frame %d %d 40", (int)a, (int)a), 0);
	r = nth_capture(h, 2);
	an = r->captures->captures[1]->anomaly;
	assert_int_equal(an->kind, REARVIEW__ANOMALY_KIND__ANOMALY_GENERIC);
	assert_string_equal(an->name, "gpu_busy_jank");
	rearview__admin_response__free_unpacked(r, NULL);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_daemon_basic_thermal_throttling_captures_foreground(void **state)
{
	struct rvh *h = *state;
	char zone[200], conf[300];
	Rearview__AdminResponse *r;
	FILE *f;
	pid_t a;

	snprintf(zone, sizeof(zone), "%s/thermal/thermal_zone0", h->dir);
	snprintf(conf, sizeof(conf), "%s/thermal", h->dir);
	assert_int_equal(mkdir(conf, 0755), 0);
	assert_int_equal(mkdir(zone, 0755), 0);
	put(zone, "temp", "40000\n");
	put(zone, "trip_point_0_type", "passive\n");
	put(zone, "trip_point_0_temp", "70000\n");
	rvh_stop_daemon(h, SIGTERM);
	f = fopen(h->conf, "a");
	assert_non_null(f);
	fprintf(f, "[thermal]\nsysfs_root = %s\npoll_ms = 20\n", conf);
	fclose(f);
	assert_int_equal(rvh_start_daemon(h), 0);
	a = rvh_helper(h, NULL);
	assert_true(rvh_wait_registered(h, a, true));
	assert_int_equal(rvh_rvctl(h, NULL, 0, "foreground %d", (int)a), 0);
	r = rvh_captures(h);
	assert_int_equal(r->captures->n_captures, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	put(zone, "temp", "75000\n");
	r = nth_capture(h, 1);
	assert_int_equal(r->captures->captures[0]->anomaly->kind,
			 REARVIEW__ANOMALY_KIND__ANOMALY_THERMAL);
	assert_int_equal(r->captures->captures[0]->anomaly->pid, a);
	rearview__admin_response__free_unpacked(r, NULL);
}

static void test_daemon_basic_second_daemon_refused_first_intact(void **state)
{
	struct rvh *h = *state;
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		execl(RV_BIN_DIR "/rearviewd", "rearviewd", "-c", h->conf, "-r", h->run, "-s",
		      h->state, (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	/* The running daemon keeps its sockets. */
	assert_int_equal(rvh_rvctl(h, NULL, 0, "status"), 0);
}

static void test_daemon_basic_foreign_tid_and_stray_fd_disconnected(void **state)
{
	struct rvh *h = *state;
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__Register r = REARVIEW__REGISTER__INIT;
	Rearview__ThreadsChanged tc = REARVIEW__THREADS_CHANGED__INIT;
	Rearview__ThreadInfo ti = REARVIEW__THREAD_INFO__INIT, *tis[1] = {&ti};
	Rearview__EventMessage e = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__MetricSample ms = REARVIEW__METRIC_SAMPLE__INIT;
	int fd = connect_sock(h, "control.sock");
	int devnull = open("/dev/null", O_RDONLY);
	char c;

	/* Registered for ourselves, then claiming pid 1's thread. */
	r.pid = getpid();
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_REG;
	m.reg = &r;
	assert_int_equal(rv_frame_send(fd, RV_CHANNEL_CONTROL, &m.base, NULL, 0), 0);
	assert_true(rvh_wait_registered(h, getpid(), true));
	ti.tid = 1;
	tc.threads = tis;
	tc.n_threads = 1;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_THREADS;
	m.threads = &tc;
	assert_int_equal(rv_frame_send(fd, RV_CHANNEL_CONTROL, &m.base, NULL, 0), 0);
	assert_true(rvh_wait_registered(h, getpid(), false));
	close(fd);

	/* A descriptor on events.sock is refused with the connection. */
	fd = connect_sock(h, "events.sock");
	ms.name = (char *)"gpu_busy";
	e.msg_case = REARVIEW__EVENT_MESSAGE__MSG_METRIC;
	e.metric = &ms;
	assert_true(devnull >= 0);
	assert_int_equal(rv_frame_send(fd, RV_CHANNEL_EVENT, &e.base, &devnull, 1), 0);
	close(devnull);
	{
		struct timeval tv = {RVH_GUARD_S, 0};

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		assert_int_equal(recv(fd, &c, 1, 0), 0);
	}
	close(fd);
	assert_int_equal(rvh_rvctl(h, NULL, 0, "status"), 0);
}

/* Connects to events.sock; returns the Error code if the daemon closes the
 * connection, -1 if it closes without one, -2 if it stays open (idle). */
static int read_until_closed_or_idle(struct rvh *h, int unused)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {0, 300000};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint8_t *payload;
	size_t len;
	int rc, code = -1;

	(void)unused;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.80s/events.sock", h->run);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -3;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	rc = rv_frame_recv(fd, RV_CHANNEL_EVENT, RV_FRAME_MAX_DEFAULT, &payload, &len, NULL, NULL);
	if (rc == -EAGAIN || rc == -EWOULDBLOCK) {
		close(fd);
		return -2;
	}
	if (rc == 1) {
		Rearview__EventMessage *m = rearview__event_message__unpack(NULL, len, payload);

		if (m && m->msg_case == REARVIEW__EVENT_MESSAGE__MSG_ERROR)
			code = m->error->code;
		if (m)
			rearview__event_message__free_unpacked(m, NULL);
		free(payload);
	}
	close(fd);
	return code;
}

static void test_daemon_basic_events_restricted_to_group(void **state)
{
	struct rvh *h = *state;
	FILE *f;
	pid_t pid;
	int st;

	chmod(h->dir, 0755);
	chmod(h->run, 0755);
	rvh_stop_daemon(h, SIGTERM);
	f = fopen(h->conf, "a");
	assert_non_null(f);
	/* Mode open to all, group "nogroup": only the daemon's check stands. */
	fputs("[sockets]\nevents_mode = 0666\nevents_group = 65533\n", f);
	fclose(f);
	assert_int_equal(rvh_start_daemon(h), 0);
	pid = fork();
	if (pid == 0) {
		gid_t g = 65533;
		int code;

		if (setgroups(1, &g) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(99);
		/* In the group (supplementary): admitted, the connection stays open. */
		code = read_until_closed_or_idle(h, 0);
		if (code != -2)
			_exit(10);
		_exit(0);
	}
	assert_true(pid > 0);
	waitpid(pid, &st, 0);
	if (WEXITSTATUS(st) == 99)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(99);
		/* Not in the group: Error{DENIED} and closed. */
		_exit(read_until_closed_or_idle(h, 0) == REARVIEW__ERROR__CODE__DENIED ? 0 : 10);
	}
	waitpid(pid, &st, 0);
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_daemon_basic_events_restricted_to_group,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_basic_foreign_tid_and_stray_fd_disconnected, rvh_fixture_setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_basic_second_daemon_refused_first_intact, rvh_fixture_setup,
			rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_status_and_consent_roundtrip,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_not_running_clear_error,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_unprivileged_admin_denied,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_basic_hostile_peers_disconnected_others_served,
			rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_register_for_other_pid_denied,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_foreground_traces_n_most_recent,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_capture_stored_and_acknowledged,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_consent_off_captures_nothing,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_jank_from_events_captured_pending,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_unsealed_memfd_refused,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_silent_process_disconnected,
						rvh_fixture_setup, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_daemon_basic_touch_and_correlation_captured,
						setup_long_correlation, rvh_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_daemon_basic_thermal_throttling_captures_foreground, rvh_fixture_setup,
			rvh_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
