/* SPDX-License-Identifier: Apache-2.0 */
/*
 * control.c — the process's one trace control thread: a client of the
 * daemon's control socket (proto/rearview/control.proto, framed by
 * rearview/frame.h).
 *
 * It connects, sends Register (pid, exe, argv, threads, the UI thread, the
 * capture format version), then blocks in poll() on the socket and a wake
 * pipe — no timers while idle.  Commands: TraceConfig, StartTracing,
 * StopTracing, CaptureRequest (answered by CaptureReady with the sealed memfd
 * in SCM_RIGHTS, or with `error` set and no fd).  ThreadsChanged goes out when
 * threads register or the UI thread changes.  A lost connection is retried
 * with backoff (100 ms doubling to 5 s), waiting on the wake pipe so
 * rvt_control_stop() is immediate; the first failure to connect is said once
 * on stderr, the retries are quiet.  Register carries what the process is
 * tracing, so a restarted daemon takes it over; StopTracing.all_threads
 * releases every ring.
 *
 * Joining without a call: at load, when there is a daemon to join — RV_SOCKET
 * names a socket (even one not there yet: the daemon may start later), or,
 * without it, the daemon's default socket exists — the control thread is
 * started as rvt_control_start(NULL) would (RV_SOCKET=off: never).  So a
 * program built with rvcc, or given librvtrace by LD_PRELOAD, is followed by
 * the daemon with no source change, as rvlua is; without a daemon nothing
 * starts and no thread exists.  A program's own rvt_control_start() call
 * still wins: to the same socket it returns 0 (the thread is the program's
 * from then on), to another it replaces the automatic connection.
 *
 * Invariants: only this thread touches the socket; the wake pipe is the only
 * way other threads talk to it; the thread is library code, never traced;
 * ctl_auto is set only while ctl_running is.
 */
#include "tracer-int.h"

#include "rearview/control.pb-c.h"
#include "rearview/frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/rearview/control.sock"
#define MAX_THREADS    256

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t ctl_thread;
static int ctl_running;
static int ctl_auto; /* the running thread was started at load, not asked for */
static int wake_pipe[2] = {-1, -1};
static char ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static int send_msg(int sock, Rearview__ControlMessage *m, const int *fds, size_t nfds)
{
	return rv_frame_send(sock, RV_CHANNEL_CONTROL, &m->base, fds, nfds);
}

/* Fills `out` (n entries) from the registry; returns the count. */
static size_t thread_infos(Rearview__ThreadInfo *out, Rearview__ThreadInfo **ptrs,
			   struct rvt_thread_info *snap, size_t n)
{
	size_t k = rvt_threads_snapshot(snap, n);
	for (size_t i = 0; i < k; i++) {
		rearview__thread_info__init(&out[i]);
		out[i].tid = snap[i].tid;
		out[i].name = snap[i].name;
		out[i].is_ui = snap[i].is_ui != 0;
		out[i].tracing = snap[i].tracing != 0;
		out[i].buffer_bytes = snap[i].buffer_bytes;
		ptrs[i] = &out[i];
	}
	return k;
}

static int send_register(int sock)
{
	static struct rvt_thread_info snap[MAX_THREADS];
	static Rearview__ThreadInfo ti[MAX_THREADS];
	static Rearview__ThreadInfo *tp[MAX_THREADS];
	Rearview__Register reg;
	rearview__register__init(&reg);
	reg.pid = getpid();
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	reg.exe = exe;
	reg.format_version = RVT_FORMAT_VERSION;
	/* The app's version, when its environment says it: rearviewd counts
	 * the process's frames under it (the app id is the daemon's to say). */
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	const char *version = getenv("RV_APP_VERSION");
	if (version && *version) {
		app.version = (char *)version;
		reg.app = &app;
	}
	/* argv from /proc/self/cmdline: NUL-separated. */
	char cmd[8192];
	char *argv[64];
	size_t argc = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t cl = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (cl > 0) {
		cmd[cl] = '\0';
		for (char *p = cmd; p < cmd + cl && argc < 64; p += strlen(p) + 1)
			argv[argc++] = p;
	}
	reg.argv = argv;
	reg.n_argv = argc;
	reg.n_threads = thread_infos(ti, tp, snap, MAX_THREADS);
	reg.threads = tp;
	Rearview__ControlMessage m;
	rearview__control_message__init(&m);
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_REG;
	m.reg = &reg;
	return send_msg(sock, &m, NULL, 0);
}

static int send_threads(int sock)
{
	static struct rvt_thread_info snap[MAX_THREADS];
	static Rearview__ThreadInfo ti[MAX_THREADS];
	static Rearview__ThreadInfo *tp[MAX_THREADS];
	Rearview__ThreadsChanged tc;
	rearview__threads_changed__init(&tc);
	tc.n_threads = thread_infos(ti, tp, snap, MAX_THREADS);
	tc.threads = tp;
	Rearview__ControlMessage m;
	rearview__control_message__init(&m);
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_THREADS;
	m.threads = &tc;
	return send_msg(sock, &m, NULL, 0);
}

static int do_capture(int sock, const Rearview__CaptureRequest *req)
{
	uint64_t size = 0, frozen = 0;
	const Rearview__Anomaly *a = req->anomaly;
	struct rvt_anomaly an;
	if (a) {
		/* A generic anomaly has a name; the others a short detail. */
		an.kind = (uint32_t)a->kind;
		an.severity = a->severity;
		an.monotonic_ns = a->focus_monotonic_ns ? a->focus_monotonic_ns : a->monotonic_ns;
		an.name = a->name && *a->name ? a->name : a->detail;
	}
	int fd = rvt_capture_frozen_memfd(req->tid, a ? &an : NULL, &size, &frozen);
	Rearview__CaptureReady cr;
	rearview__capture_ready__init(&cr);
	cr.request_id = req->request_id;
	cr.tid = req->tid;
	Rearview__ControlMessage m;
	rearview__control_message__init(&m);
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE_READY;
	m.capture_ready = &cr;
	if (fd < 0) {
		cr.error = fd;
		return send_msg(sock, &m, NULL, 0);
	}
	cr.size = size;
	cr.frozen_monotonic_ns = frozen;
	int rc = send_msg(sock, &m, &fd, 1);
	close(fd);
	return rc;
}

/* Handles one command; returns 0 or a negative errno (drop the connection). */
static int handle(int sock, const uint8_t *payload, size_t len)
{
	ProtobufCMessage *pm;
	int rc = rv_frame_unpack(&rearview__control_message__descriptor, payload, len, &pm);
	if (rc)
		return rc;
	Rearview__ControlMessage *m = (Rearview__ControlMessage *)pm;
	switch (m->msg_case) {
	case REARVIEW__CONTROL_MESSAGE__MSG_CONFIG:
		rvt_set_config((size_t)m->config->buffer_bytes, m->config->max_buffers);
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_START:
		if (rvt_start(m->start->tid ? m->start->tid : -1) == 0)
			rc = send_threads(sock);
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_STOP:
		if (m->stop->all_threads) {
			rvt_release_all();
			rc = send_threads(sock);
		} else if (rvt_stop(m->stop->tid ? m->stop->tid : -1, m->stop->release_buffer) ==
			   0) {
			rc = send_threads(sock);
		}
		break;
	case REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE:
		rc = do_capture(sock, m->capture);
		break;
	default:
		break; /* unknown or daemon-bound messages: ignore */
	}
	protobuf_c_message_free_unpacked(pm, NULL);
	return rc;
}

static int connect_to(const char *path)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = -errno;
		close(s);
		return e;
	}
	return s;
}

/* Drains the wake pipe; returns 1 if asked to quit. */
static int drain_wake(int *threads_changed)
{
	char buf[64];
	int quit = 0;
	ssize_t n;
	while ((n = read(wake_pipe[0], buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == 'q')
				quit = 1;
			else
				*threads_changed = 1;
		}
	return quit;
}

static void *control_main(void *arg)
{
	(void)arg;
	/* Never take the tracer's stop signal or the app's signals here. */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	int backoff_ms = 100;
	int said = 0;
	for (;;) {
		int sock = connect_to(ctl_path);
		if (sock < 0 && !said) {
			rvt_say("rearview: cannot reach the daemon at %s (%s); retrying quietly",
				ctl_path, strerror(-sock));
			said = 1;
		}
		if (sock < 0) {
			struct pollfd w = {wake_pipe[0], POLLIN, 0};
			if (poll(&w, 1, backoff_ms) > 0) {
				int tc = 0;
				if (drain_wake(&tc))
					return NULL;
			}
			backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
			continue;
		}
		backoff_ms = 100;
		int rc = send_register(sock);
		while (rc == 0) {
			struct pollfd p[2] = {{sock, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
			if (poll(p, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			if (p[1].revents) {
				int tc = 0;
				if (drain_wake(&tc)) {
					close(sock);
					return NULL;
				}
				if (tc)
					rc = send_threads(sock);
			}
			if (rc == 0 && p[0].revents) {
				uint8_t *payload;
				size_t len;
				int r = rv_frame_recv(sock, RV_CHANNEL_CONTROL,
						      RV_FRAME_MAX_DEFAULT, &payload, &len, NULL,
						      NULL);
				if (r <= 0)
					break; /* closed or broken: reconnect */
				rc = handle(sock, payload, len);
				free(payload);
			}
		}
		close(sock);
	}
}

static void control_notify_threads(void);
static void control_atfork_child(void);
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

/* The tracer core knows nothing of the control thread: it is told here whom
 * to wake when the thread set changes, and fork gets our own child handler
 * (run after the core's, which registered first). */
static void install_hooks(void)
{
	rvt_set_threads_changed_hook(control_notify_threads);
	pthread_atfork(NULL, NULL, control_atfork_child);
}

/* rvt_control_start(); `automatic`: the call at load (see the top). */
static int control_start(const char *socket_path, int automatic)
{
	int rc = rvt_init();
	if (rc)
		return rc;
	pthread_once(&hooks_once, install_hooks);
	const char *path = socket_path;
	if (!path)
		path = getenv("RV_SOCKET");
	if (!path || !*path || strcmp(path, "off") == 0)
		path = DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(ctl_path))
		return -ENAMETOOLONG;
	for (;;) {
		pthread_mutex_lock(&ctl_lock);
		if (!ctl_running)
			break;
		if (automatic || !ctl_auto) {
			pthread_mutex_unlock(&ctl_lock);
			return -EALREADY;
		}
		if (strcmp(ctl_path, path) == 0) {
			ctl_auto = 0; /* the program's own from now on */
			pthread_mutex_unlock(&ctl_lock);
			return 0;
		}
		pthread_mutex_unlock(&ctl_lock);
		rvt_control_stop(); /* the automatic one, for the program's socket */
	}
	memcpy(ctl_path, path, strlen(path) + 1);
	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		rc = -errno;
		goto out_unlock;
	}
	rc = -rvt_pthread_create_untraced(&ctl_thread, NULL, control_main, NULL);
	if (rc) {
		close(wake_pipe[0]);
		close(wake_pipe[1]);
		wake_pipe[0] = wake_pipe[1] = -1;
		goto out_unlock;
	}
	ctl_running = 1;
	ctl_auto = automatic;
out_unlock:
	pthread_mutex_unlock(&ctl_lock);
	return rc;
}

int rvt_control_start(const char *socket_path)
{
	return control_start(socket_path, 0);
}

/* At load: joins the daemon when there is one (see the top). */
__attribute__((constructor)) static void control_join_at_load(void)
{
	const char *env = getenv("RV_SOCKET");

	rvt_locks_own(&ctl_lock);
	if (env && strcmp(env, "off") == 0)
		return;
	if ((env && *env) || access(DEFAULT_SOCKET, F_OK) == 0)
		control_start(NULL, 1);
}

static void wake(char c)
{
	if (wake_pipe[1] >= 0) {
		ssize_t n = write(wake_pipe[1], &c, 1);
		(void)n; /* a full pipe already holds a wake-up */
	}
}

static void control_notify_threads(void)
{
	pthread_mutex_lock(&ctl_lock);
	if (ctl_running)
		wake('t');
	pthread_mutex_unlock(&ctl_lock);
}

void rvt_control_stop(void)
{
	pthread_mutex_lock(&ctl_lock);
	if (!ctl_running) {
		pthread_mutex_unlock(&ctl_lock);
		return;
	}
	wake('q');
	pthread_t th = ctl_thread;
	ctl_running = 0;
	ctl_auto = 0;
	pthread_mutex_unlock(&ctl_lock);
	pthread_join(th, NULL);
	close(wake_pipe[0]);
	close(wake_pipe[1]);
	wake_pipe[0] = wake_pipe[1] = -1;
}

/* The child of a fork has no control thread; it may start its own. */
static void control_atfork_child(void)
{
	pthread_mutex_init(&ctl_lock, NULL);
	if (ctl_running) {
		close(wake_pipe[0]);
		close(wake_pipe[1]);
		wake_pipe[0] = wake_pipe[1] = -1;
		ctl_running = 0;
		ctl_auto = 0;
	}
}
