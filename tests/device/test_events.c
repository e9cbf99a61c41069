/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_events.c — librvevents (rearview/events.h) against a fake daemon: a
 * listening unix socket in a mkdtemp directory whose peer is read with
 * rv_frame_recv and decoded as EventMessage.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/event.pb-c.h"
#include "rearview/events.h"
#include "rearview/frame.h"

struct fake {
	char dir[64];
	char path[96];
	int lfd;
	int cfd;
};

static int listen_at(struct fake *f)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	unlink(f->path);
	if (bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(f->lfd, 8) < 0)
		return -1;
	return 0;
}

static int setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/rvevents.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/events.sock", f->dir);
	f->cfd = -1;
	assert_int_equal(listen_at(f), 0);
	assert_int_equal(rv_events_set_path(f->path), 0);
	rv_events_reset();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fake *f = *state;

	rv_events_reset();
	if (f->cfd >= 0)
		close(f->cfd);
	if (f->lfd >= 0)
		close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* The next message the library sent (accepting its connection first). */
static Rearview__EventMessage *next_msg(struct fake *f)
{
	uint8_t *payload;
	size_t len;
	Rearview__EventMessage *m;

	if (f->cfd < 0)
		f->cfd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(f->cfd >= 0);
	assert_int_equal(rv_frame_recv(f->cfd, RV_CHANNEL_EVENT, RV_FRAME_MAX_DEFAULT, &payload,
				       &len, NULL, NULL),
			 1);
	m = rearview__event_message__unpack(NULL, len, payload);
	free(payload);
	assert_non_null(m);
	return m;
}

static void test_events_frame_sent_with_deadline_and_caller_ids(void **state)
{
	struct fake *f = *state;
	uint64_t now = rv_events_now();
	Rearview__EventMessage *m;

	assert_int_equal(rv_frame(now - 30000000, now - 1000, now - 13000000), 0);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_FRAME);
	assert_int_equal(m->frame->pid, getpid());
	assert_int_equal(m->frame->tid, gettid());
	assert_int_equal(m->frame->frame_start_ns, now - 30000000);
	assert_int_equal(m->frame->frame_end_ns, now - 1000);
	assert_int_equal(m->frame->frame_deadline_ns, now - 13000000);
	rearview__event_message__free_unpacked(m, NULL);
	assert_int_equal(rv_input_of(42, 43, now - 500000000, now - 400000000, now - 2000, now), 0);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_TOUCH);
	assert_int_equal(m->touch->pid, 42);
	assert_int_equal(m->touch->tid, 43);
	assert_int_equal(m->touch->detected_ns, now - 500000000);
	assert_int_equal(m->touch->delivered_ns, now - 400000000);
	assert_int_equal(m->touch->handled_ns, now - 2000);
	assert_int_equal(m->touch->responded_ns, now);
	rearview__event_message__free_unpacked(m, NULL);
	assert_int_equal(rv_thermal(60, "hot"), 0);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_ANOMALY);
	assert_int_equal(m->anomaly->kind, REARVIEW__ANOMALY_KIND__ANOMALY_THERMAL);
	assert_int_equal(m->anomaly->severity, 60);
	rearview__event_message__free_unpacked(m, NULL);
	assert_int_equal(rv_anomaly("gpu_hang", 42, 43, 70, NULL), 0);
	m = next_msg(f);
	assert_int_equal(m->anomaly->kind, REARVIEW__ANOMALY_KIND__ANOMALY_GENERIC);
	assert_string_equal(m->anomaly->name, "gpu_hang");
	rearview__event_message__free_unpacked(m, NULL);
	assert_int_equal(rv_metric("gpu_busy", 0.5), 0);
	m = next_msg(f);
	assert_string_equal(m->metric->name, "gpu_busy");
	rearview__event_message__free_unpacked(m, NULL);
}

static void test_events_impossible_times_refused_nothing_sent(void **state)
{
	struct fake *f = *state;
	uint64_t now = rv_events_now();
	struct rv_events_stats before, after;
	Rearview__EventMessage *m;

	rv_events_stats(&before);
	/* Frame ending before it starts; deadline before the start. */
	assert_int_equal(rv_frame(now, now - 1, 0), -EINVAL);
	assert_int_equal(rv_frame(now - 10, now, now - 20), -EINVAL);
	/* handled < dispatched; presented < event; dispatched < event. */
	assert_int_equal(rv_input(now - 100, now - 50, now - 60, now), -EINVAL);
	assert_int_equal(rv_input(now - 100, now - 100, 0, now - 200), -EINVAL);
	assert_int_equal(rv_input(now - 100, now - 200, 0, now), -EINVAL);
	/* Far future (an hour ahead). */
	assert_int_equal(rv_input(now, now, 0, now + 3600000000000ull), -EINVAL);
	assert_int_equal(rv_frame(now, now + 3600000000000ull, 0), -EINVAL);
	assert_int_equal(rv_thermal(101, NULL), -EINVAL);
	assert_int_equal(rv_anomaly("", 1, 1, 10, NULL), -EINVAL);
	rv_events_stats(&after);
	assert_int_equal(after.refused - before.refused, 9);
	assert_int_equal(after.sent, before.sent);
	/* The first thing on the wire is what comes next. */
	assert_int_equal(rv_metric("marker", 1), 0);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_METRIC);
	rearview__event_message__free_unpacked(m, NULL);
}

static void test_events_no_daemon_dropped_and_counted(void **state)
{
	struct rv_events_stats before, after;
	uint64_t now = rv_events_now();

	(void)state;
	assert_int_equal(rv_events_set_path("/nonexistent/rv/events.sock"), 0);
	rv_events_stats(&before);
	assert_int_equal(rv_frame(now - 10, now, 0), -ENOTCONN);
	assert_int_equal(rv_frame(now - 10, now, 0), -ENOTCONN);
	rv_events_stats(&after);
	assert_int_equal(after.dropped - before.dropped, 2);
	assert_int_equal(after.connects, before.connects);
}

/* The daemon restarts: the next report after the loss reconnects, and the
 * foreground is announced again before it. */
/* The daemon restarts (its socket closed and listened on again), then a
 * metric "after" is reported: the loss is seen on this report (reconnected
 * at once), or on the write itself (then the next one reconnects). */
static void restart_and_report(struct fake *f)
{
	int rc;

	close(f->cfd);
	f->cfd = -1;
	close(f->lfd);
	assert_int_equal(listen_at(f), 0);
	rc = rv_metric("after", 2);
	if (rc < 0) {
		assert_int_equal(rc, -ENOTCONN);
		assert_int_equal(rv_metric("after", 2), 0);
	}
}

static void test_events_reconnects_and_reannounces_foreground(void **state)
{
	struct fake *f = *state;
	uint64_t now = rv_events_now();
	Rearview__EventMessage *m;

	assert_int_equal(rv_foreground(1234, 1235), 0);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_FOREGROUND);
	rearview__event_message__free_unpacked(m, NULL);
	restart_and_report(f);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_FOREGROUND);
	assert_int_equal(m->foreground->pid, 1234);
	assert_int_equal(m->foreground->ui_tid, 1235);
	rearview__event_message__free_unpacked(m, NULL);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_METRIC);
	assert_string_equal(m->metric->name, "after");
	rearview__event_message__free_unpacked(m, NULL);
	(void)now;
}

/* rv_app_version: a version that is no printable token is refused and
 * nothing is sent; a good one goes as AppVersion{own pid, version} and is
 * said again after a reconnection (after the foreground, before what
 * follows). */
static void test_events_app_version_sent_and_reannounced(void **state)
{
	struct fake *f = *state;
	Rearview__EventMessage *m;
	struct rv_events_stats st0, st;

	rv_events_stats(&st0); /* the counters are the process's, kept across tests */
	assert_int_equal(rv_app_version(NULL), -EINVAL);
	assert_int_equal(rv_app_version(""), -EINVAL);
	assert_int_equal(rv_app_version("1.0 beta"), -EINVAL);
	assert_int_equal(rv_app_version("1.0\n"), -EINVAL);
	assert_int_equal(rv_app_version("0123456789012345678901234567890123"), -EINVAL);
	rv_events_stats(&st);
	assert_int_equal(st.sent, st0.sent);
	assert_int_equal(st.refused, st0.refused + 5);
	assert_int_equal(rv_app_version("4.2.1-rc1"), 0);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_APP_VERSION);
	assert_int_equal(m->app_version->pid, getpid());
	assert_string_equal(m->app_version->version, "4.2.1-rc1");
	rearview__event_message__free_unpacked(m, NULL);
	restart_and_report(f);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_APP_VERSION);
	assert_string_equal(m->app_version->version, "4.2.1-rc1");
	rearview__event_message__free_unpacked(m, NULL);
	m = next_msg(f);
	assert_int_equal(m->msg_case, REARVIEW__EVENT_MESSAGE__MSG_METRIC);
	rearview__event_message__free_unpacked(m, NULL);
}

/* A daemon that does not read: reports are dropped (-EAGAIN) instead of
 * blocking, and what reached the socket is whole frames only. */
static void test_events_full_socket_drops_whole_frames_never_blocks(void **state)
{
	struct fake *f = *state;
	uint64_t now = rv_events_now();
	struct rv_events_stats st;
	unsigned sent = 0, dropped = 0, got = 0;

	for (int i = 0; i < 200000 && dropped < 100; i++) {
		int rc = rv_frame_of(7, 7, now - 100, now, 0);

		if (rc == 0)
			sent++;
		else if (rc == -EAGAIN)
			dropped++;
		else
			fail_msg("unexpected %d", rc);
	}
	assert_true(dropped >= 100);
	rv_events_stats(&st);
	assert_true(st.dropped >= dropped);
	/* Drain: every byte that arrived is whole frames, at least as many
	 * as the sends that succeeded minus what the library still holds. */
	f->cfd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(f->cfd >= 0);
	rv_events_reset(); /* closes our end: the reader sees the end */
	for (;;) {
		uint8_t *payload;
		size_t len;
		Rearview__EventMessage *m;
		int rc = rv_frame_recv(f->cfd, RV_CHANNEL_EVENT, RV_FRAME_MAX_DEFAULT, &payload,
				       &len, NULL, NULL);

		if (rc == 0)
			break;
		assert_int_equal(rc, 1);
		m = rearview__event_message__unpack(NULL, len, payload);
		free(payload);
		assert_non_null(m);
		assert_int_equal(m->frame->pid, 7);
		rearview__event_message__free_unpacked(m, NULL);
		got++;
	}
	assert_true(got > 0 && got <= sent);
}

struct worker {
	unsigned ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 500; i++) {
		uint64_t now = rv_events_now();

		if (rv_frame_of(9, 9, now - 10, now, 0) == 0)
			w->ok++;
	}
	return NULL;
}

struct reader {
	int lfd;
	unsigned got;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	int fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
	uint8_t *payload;
	size_t len;

	if (fd < 0)
		return NULL;
	while (rv_frame_recv(fd, RV_CHANNEL_EVENT, RV_FRAME_MAX_DEFAULT, &payload, &len, NULL,
			     NULL) == 1) {
		Rearview__EventMessage *m = rearview__event_message__unpack(NULL, len, payload);

		free(payload);
		if (!m)
			break;
		if (m->msg_case == REARVIEW__EVENT_MESSAGE__MSG_FRAME && m->frame->pid == 9)
			r->got++;
		rearview__event_message__free_unpacked(m, NULL);
	}
	close(fd);
	return NULL;
}

/* Four threads report at once: every report is either delivered whole or
 * counted as dropped, never interleaved. */
static void test_events_four_threads_frames_whole(void **state)
{
	struct fake *f = *state;
	struct worker w[4] = {{0}};
	struct reader r = {.lfd = f->lfd};
	pthread_t th[4], rt;
	unsigned ok = 0;

	assert_int_equal(pthread_create(&rt, NULL, reader_main, &r), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ok += w[i].ok;
	}
	/* Reports that stayed queued in the library are lost at the reset;
	 * everything the reader decoded was sent whole. */
	rv_events_reset();
	pthread_join(rt, NULL);
	assert_true(ok > 0);
	assert_true(r.got <= ok);
	assert_true(r.got > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_events_frame_sent_with_deadline_and_caller_ids,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_impossible_times_refused_nothing_sent,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_no_daemon_dropped_and_counted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_events_reconnects_and_reannounces_foreground,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_app_version_sent_and_reannounced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_events_full_socket_drops_whole_frames_never_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_four_threads_frames_whole, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
