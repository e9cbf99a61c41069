/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_control.c — the control thread against a small daemon played by the
 * test itself on a listening socket in a temporary directory: Register,
 * TraceConfig, StartTracing, a capture arriving as a sealed memfd, errors
 * reported in CaptureReady, ThreadsChanged, and reconnection; and the join
 * at load (RV_SOCKET set) giving way to the program's own call.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "fixture.h"
#include "rearview/control.pb-c.h"
#include "rearview/frame.h"
#include "rearview/trace.h"

static Rearview__ControlMessage *recv_msg(int s, int *fd)
{
	uint8_t *payload;
	size_t len;
	int fds[RV_FRAME_MAX_FDS];
	size_t nfds = RV_FRAME_MAX_FDS;
	assert_int_equal(rv_frame_recv(s, RV_CHANNEL_CONTROL, RV_FRAME_MAX_DEFAULT, &payload, &len,
				       fds, &nfds),
			 1);
	if (fd)
		*fd = nfds ? fds[0] : -1;
	else
		assert_int_equal(nfds, 0);
	ProtobufCMessage *m;
	assert_int_equal(rv_frame_unpack(&rearview__control_message__descriptor, payload, len, &m),
			 0);
	free(payload);
	return (Rearview__ControlMessage *)m;
}

static void send_msg(int s, Rearview__ControlMessage *m)
{
	assert_int_equal(rv_frame_send(s, RV_CHANNEL_CONTROL, &m->base, NULL, 0), 0);
}

static void free_msg(Rearview__ControlMessage *m)
{
	protobuf_c_message_free_unpacked(&m->base, NULL);
}

/* Skips ThreadsChanged updates until a message of `kind` arrives. */
static Rearview__ControlMessage *expect(int s, Rearview__ControlMessage__MsgCase kind, int *fd)
{
	for (;;) {
		Rearview__ControlMessage *m = recv_msg(s, fd);
		if (m->msg_case == kind)
			return m;
		assert_int_equal(m->msg_case, REARVIEW__CONTROL_MESSAGE__MSG_THREADS);
		free_msg(m);
	}
}

static int accept_one(int ls)
{
	int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	assert_true(c >= 0);
	return c;
}

static void test_control_daemon_session_start_capture_reconnect(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-ctl-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof(path), "%s/control.sock", dir);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 4), 0);

	int me = (int)syscall(SYS_gettid);
	assert_int_equal(setenv("RV_APP_VERSION", "5.6.7", 1), 0);
	assert_int_equal(rvt_control_start(path), 0);
	assert_int_equal(rvt_control_start(path), -EALREADY);
	int c = accept_one(ls);
	Rearview__ControlMessage *m = expect(c, REARVIEW__CONTROL_MESSAGE__MSG_REG, NULL);
	assert_int_equal(m->reg->pid, getpid());
	/* The version from RV_APP_VERSION; no app id (the daemon's to say). */
	assert_non_null(m->reg->app);
	assert_string_equal(m->reg->app->version, "5.6.7");
	assert_string_equal(m->reg->app->app_id, "");
	assert_int_equal(m->reg->format_version, RVT_FORMAT_VERSION);
	assert_true(m->reg->n_argv >= 1);
	int found = 0;
	for (size_t i = 0; i < m->reg->n_threads; i++)
		found |= m->reg->threads[i]->tid == me;
	assert_true(found);
	free_msg(m);

	Rearview__TraceConfig cfg = REARVIEW__TRACE_CONFIG__INIT;
	cfg.buffer_bytes = 65536;
	cfg.max_buffers = 2;
	Rearview__ControlMessage out = REARVIEW__CONTROL_MESSAGE__INIT;
	out.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CONFIG;
	out.config = &cfg;
	send_msg(c, &out);
	Rearview__StartTracing st = REARVIEW__START_TRACING__INIT;
	st.tid = me;
	out.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_START;
	out.start = &st;
	send_msg(c, &out);
	/* Threads lists also come when a thread registers (the control thread
	 * itself, at birth): wait for the one that shows this thread traced. */
	for (int traced = 0; !traced;) {
		m = expect(c, REARVIEW__CONTROL_MESSAGE__MSG_THREADS, NULL);
		for (size_t i = 0; i < m->threads->n_threads; i++)
			traced |= m->threads->threads[i]->tid == me &&
				  m->threads->threads[i]->tracing;
		free_msg(m);
	}
	assert_int_equal(rvt_is_tracing(0), 1);
	call_top(2);

	/* The request's anomaly travels into the capture (ANOMALY record). */
	Rearview__CaptureRequest cr = REARVIEW__CAPTURE_REQUEST__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
	an.severity = 77;
	an.monotonic_ns = 123456789012ull;
	an.detail = (char *)"3 frames over 16667 us";
	cr.request_id = 7;
	cr.tid = me;
	cr.anomaly = &an;
	out.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE;
	out.capture = &cr;
	send_msg(c, &out);
	int fd = -1;
	m = expect(c, REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE_READY, &fd);
	assert_int_equal(m->capture_ready->request_id, 7);
	assert_int_equal(m->capture_ready->error, 0);
	assert_true(fd >= 0);
	int seals = fcntl(fd, F_GET_SEALS);
	assert_true(seals & F_SEAL_WRITE);
	assert_true(seals & F_SEAL_SHRINK);
	assert_int_equal(write(fd, "x", 1), -1); /* the app cannot alter it */
	struct cu_capture cap;
	assert_int_equal(cu_parse_fd(fd, &cap), 0);
	assert_int_equal(cap.ring_slots, 65536 / 8);
	assert_true(cu_find_entry(&cap, "call_leaf", 0) >= 0);
	assert_true(cap.has_anomaly);
	assert_int_equal(cap.anomaly_kind, REARVIEW__ANOMALY_KIND__ANOMALY_JANK);
	assert_int_equal(cap.anomaly_severity, 77);
	assert_int_equal(cap.anomaly_monotonic_ns, 123456789012ull);
	assert_string_equal(cap.anomaly_name, "3 frames over 16667 us");
	assert_int_equal(m->capture_ready->size, (uint64_t)lseek(fd, 0, SEEK_END));
	cu_release(&cap);
	close(fd);
	free_msg(m);

	cr.request_id = 8;
	cr.tid = 1 << 22; /* no such thread */
	cr.anomaly = NULL;
	send_msg(c, &out);
	m = expect(c, REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE_READY, NULL);
	assert_int_equal(m->capture_ready->request_id, 8);
	assert_int_equal(m->capture_ready->error, -ESRCH);
	free_msg(m);

	/* The daemon restarts: the client comes back and registers again. */
	close(c);
	c = accept_one(ls);
	m = expect(c, REARVIEW__CONTROL_MESSAGE__MSG_REG, NULL);
	free_msg(m);
	assert_int_equal(rvt_set_ui_thread(0), 0);
	for (;;) {
		m = expect(c, REARVIEW__CONTROL_MESSAGE__MSG_THREADS, NULL);
		int ui = 0;
		for (size_t i = 0; i < m->threads->n_threads; i++)
			ui |= m->threads->threads[i]->tid == me && m->threads->threads[i]->is_ui;
		free_msg(m);
		if (ui)
			break;
	}
	rvt_control_stop();
	close(c);
	close(ls);
	assert_int_equal(rvt_stop(0, 1), 0);
	unlink(path);
	rmdir(dir);
	assert_int_equal(rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, 0), 0);
}

static int listen_at(const char *path)
{
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 4), 0);
	return ls;
}

/* The pid in the Register message of the next connection to ls (a guard
 * against a hang only: the connection is the event waited for). */
static int registered_pid(int ls)
{
	struct pollfd p = {ls, POLLIN, 0};
	assert_int_equal(poll(&p, 1, 60000), 1);
	int c = accept_one(ls);
	Rearview__ControlMessage *m = expect(c, REARVIEW__CONTROL_MESSAGE__MSG_REG, NULL);
	int pid = m->reg->pid;
	free_msg(m);
	close(c);
	return pid;
}

static const char *self_exe;

/* Runs this binary as `--join PATH` with RV_SOCKET=auto: librvtrace joins
 * `auto` at load, then the program calls rvt_control_start(PATH).  Returns
 * the child's pid; *rc gets what the call returned. */
static pid_t spawn_join(const char *autosock, const char *path, int *rc)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		setenv("RV_SOCKET", autosock, 1);
		execl(self_exe, self_exe, "--join", path, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[32] = "";
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	assert_true(n > 0);
	buf[n] = 0;
	char *end;
	*rc = (int)strtol(buf, &end, 10);
	assert_true(end != buf && *end == '\n');
	return pid;
}

static void test_control_join_at_load_gives_way_to_program(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-join-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char a[64], b[64];
	snprintf(a, sizeof(a), "%s/a.sock", dir);
	snprintf(b, sizeof(b), "%s/b.sock", dir);
	int la = listen_at(a), lb = listen_at(b), rc;

	/* The program names the socket it already joined: 0, one session. */
	pid_t pid = spawn_join(a, a, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(registered_pid(la), pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	/* Another socket: the connection moves there (0, not -EALREADY). */
	pid = spawn_join(a, b, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(registered_pid(lb), pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	close(la);
	close(lb);
	unlink(a);
	unlink(b);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	self_exe = argv[0];
	if (argc == 3 && strcmp(argv[1], "--join") == 0) {
		printf("%d\n", rvt_control_start(argv[2]));
		fflush(stdout);
		for (;;)
			pause(); /* killed by the test */
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_daemon_session_start_capture_reconnect),
		cmocka_unit_test(test_control_join_at_load_gives_way_to_program),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
