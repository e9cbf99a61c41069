/* SPDX-License-Identifier: Apache-2.0 */
/*
 * helper_app.c — a stand-in traced process for rearviewd's integration
 * tests: connects to control.sock, registers its main thread as the UI
 * thread, and answers each CaptureRequest with a sealed memfd holding a
 * real capture (tracer/FORMAT.md, built with tests/rvtrace/capbuild.h and
 * checksummed: the daemon verifies it) of one method call, whose
 * THREAD_NAME record is "rvcap PID SEQ" — this process and a per-process
 * sequence number, the "token".  When the
 * daemon acknowledges a capture, the token is appended (and fsync'd) to the
 * ack log, so a test can check that every acknowledged capture is in the
 * spool exactly once.
 *
 *   rv_helper_app CONTROL_SOCK ACK_LOG [--reconnect] [--no-seal] [--silent]
 *                 [--pid N] [--not-a-capture] [--app-id ID] [--as-uid N]
 *                 [--prefix BYTES] [--app-version V]
 *
 * --reconnect  keep reconnecting (daemon restarts) until killed
 * --no-seal    send an unsealed memfd (the daemon must refuse it)
 * --silent     never answer a CaptureRequest
 * --pid N      register as pid N (the daemon must refuse it)
 * --not-a-capture  send sealed bytes that are not a capture (refused)
 * --prefix BYTES   with --not-a-capture: the bytes begin with BYTES (the
 *              daemon's parser test hooks, sandbox.h, act on them)
 * --app-id ID  declare app id ID in Register (the daemon checks it)
 * --app-version V  declare app version V in Register (without it, as an
 *              older tracer, no version)
 * --as-uid N   drop to uid N and gid N (setresuid/setresgid, no
 *              supplementary groups) before connecting: a process of
 *              another user
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "capbuild.h"
#include "rearview/control.pb-c.h"
#include "rearview/frame.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

static const bool stop;
static bool no_seal, silent, not_a_capture;
static const char *prefix = "";
static long fake_pid;
static const char *app_id, *app_version;
static unsigned long seq;

struct sent {
	uint64_t request_id;
	unsigned long token;
};
static struct sent sent[64];
static unsigned nsent;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_register(int fd)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__Register r = REARVIEW__REGISTER__INIT;
	Rearview__ThreadInfo ti = REARVIEW__THREAD_INFO__INIT, *tis[1] = {&ti};
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;

	r.pid = fake_pid ? (int32_t)fake_pid : getpid();
	r.exe = (char *)"rv_helper_app";
	ti.tid = getpid();
	ti.name = (char *)"main";
	ti.is_ui = true;
	ti.buffer_bytes = 4096;
	r.threads = tis;
	r.n_threads = 1;
	if (app_id || app_version) {
		app.app_id = (char *)(app_id ? app_id : "");
		app.version = (char *)(app_version ? app_version : "");
		r.app = &app;
	}
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_REG;
	m.reg = &r;
	return rv_frame_send(fd, RV_CHANNEL_CONTROL, &m.base, NULL, 0);
}

/* The capture's bytes: one call of one method, the token as the thread
 * name, CHECKSUM and END; or, with --not-a-capture, the token and filler. */
static void build_capture(capbuf *c, const char *token)
{
	uint8_t sum[16] = {1};
	uint64_t h;

	if (not_a_capture) {
		char body[4096];

		memset(body, 'x', sizeof(body));
		c->len = 0;
		cb_put(c, prefix, strlen(prefix));
		cb_put(c, token, strlen(token));
		cb_put(c, body, sizeof(body));
		return;
	}
	cb_header(c, 1000, 1000000000, 0, now_ns(), 0x400000, 4);
	cb_entry(c, 0x1000, 10);
	cb_exit(c, 900);
	cb_end_slots(c);
	cb_record(c, 3, token, (uint32_t)strlen(token));
	cb_symbol(c, 0x1000, 0x1000, 0xffffffffu, "rv_helper_app_answer");
	/* file_size as it will be: this record (24) and END (8) follow. */
	cb_u64at(c, 120, c->len + 24 + 8);
	h = XXH3_64bits(c->b, c->len);
	for (int i = 0; i < 8; i++)
		sum[8 + i] = (uint8_t)(h >> (8 * i));
	cb_record(c, 8, sum, sizeof(sum));
	cb_finish(c);
}

static int answer_capture(int fd, const Rearview__CaptureRequest *cr)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__CaptureReady ready = REARVIEW__CAPTURE_READY__INIT;
	capbuf cap = {0};
	char token[64];
	int mfd, rc;

	mfd = memfd_create("rv-capture", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return -errno;
	seq++;
	snprintf(token, sizeof(token), "rvcap %d %lu\n", (int)getpid(), seq);
	build_capture(&cap, token);
	if (write(mfd, cap.b, cap.len) != (ssize_t)cap.len) {
		free(cap.b);
		close(mfd);
		return -EIO;
	}
	ready.size = cap.len;
	free(cap.b);
	if (!no_seal &&
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		close(mfd);
		return -errno;
	}
	ready.request_id = cr->request_id;
	ready.tid = cr->tid;
	ready.frozen_monotonic_ns = now_ns();
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE_READY;
	m.capture_ready = &ready;
	sent[nsent % 64].request_id = cr->request_id;
	sent[nsent % 64].token = seq;
	nsent++;
	rc = rv_frame_send(fd, RV_CHANNEL_CONTROL, &m.base, &mfd, 1);
	close(mfd);
	return rc;
}

static void log_ack(const char *path, uint64_t request_id)
{
	char line[64];
	int fd, n;

	for (unsigned i = 0; i < 64 && i < nsent; i++) {
		if (sent[i].request_id != request_id)
			continue;
		n = snprintf(line, sizeof(line), "%d %lu\n", (int)getpid(), sent[i].token);
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return;
		if (write(fd, line, (size_t)n) == n)
			fsync(fd);
		close(fd);
		sent[i].request_id = 0;
		return;
	}
}

/* One session on one connection.  Returns when the connection ends. */
static void session(int fd, const char *acklog)
{
	if (send_register(fd) < 0)
		return;
	/* Request ids restart with each daemon: forget the previous session's. */
	memset(sent, 0, sizeof(sent));
	nsent = 0;
	while (!stop) {
		Rearview__ControlMessage *m;
		uint8_t *payload;
		size_t len;

		if (rv_frame_recv(fd, RV_CHANNEL_CONTROL, RV_FRAME_MAX_DEFAULT, &payload, &len,
				  NULL, NULL) <= 0)
			return;
		m = rearview__control_message__unpack(NULL, len, payload);
		free(payload);
		if (!m)
			return;
		if (m->msg_case == REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE && !silent)
			answer_capture(fd, m->capture);
		else if (m->msg_case == REARVIEW__CONTROL_MESSAGE__MSG_ACK)
			log_ack(acklog, m->ack->request_id);
		else if (m->msg_case == REARVIEW__CONTROL_MESSAGE__MSG_START)
			printf("start %d\n", m->start->tid);
		else if (m->msg_case == REARVIEW__CONTROL_MESSAGE__MSG_STOP)
			printf("stop %d %d\n", m->stop->tid, m->stop->release_buffer);
		else if (m->msg_case == REARVIEW__CONTROL_MESSAGE__MSG_ERROR)
			printf("error %d\n", m->error->code);
		fflush(stdout);
		rearview__control_message__free_unpacked(m, NULL);
	}
}

int main(int argc, char **argv)
{
	bool reconnect = false;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: rv_helper_app CONTROL_SOCK ACK_LOG [options]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--reconnect"))
			reconnect = true;
		else if (!strcmp(argv[i], "--no-seal"))
			no_seal = true;
		else if (!strcmp(argv[i], "--not-a-capture"))
			not_a_capture = true;
		else if (!strcmp(argv[i], "--prefix") && i + 1 < argc)
			prefix = argv[++i];
		else if (!strcmp(argv[i], "--silent"))
			silent = true;
		else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			fake_pid = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--app-id") && i + 1 < argc)
			app_id = argv[++i];
		else if (!strcmp(argv[i], "--app-version") && i + 1 < argc)
			app_version = argv[++i];
		else if (!strcmp(argv[i], "--as-uid") && i + 1 < argc) {
			long id = strtol(argv[++i], NULL, 10);

			if (setgroups(0, NULL) < 0 ||
			    setresgid((gid_t)id, (gid_t)id, (gid_t)id) < 0 ||
			    setresuid((uid_t)id, (uid_t)id, (uid_t)id) < 0) {
				perror("rv_helper_app: dropping to another uid");
				return 2;
			}
		}
	}
	/* SIGTERM keeps its default action: rv_frame_recv retries on EINTR. */
	signal(SIGPIPE, SIG_IGN);
	do {
		fd = connect_to(argv[1]);
		if (fd < 0) {
			if (!reconnect)
				return 1;
			usleep(20000);
			continue;
		}
		session(fd, argv[2]);
		close(fd);
		printf("disconnected\n");
		fflush(stdout);
	} while (reconnect && !stop);
	return 0;
}
