/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon_harness.h — shared by the rearviewd integration tests: runs the
 * real rearviewd in a mkdtemp() directory, waits for its sd_notify READY=1
 * on a private NOTIFY_SOCKET, talks to admin.sock in-process or through the
 * real rvctl, and starts rv_helper_app, the demo programs or any other
 * program as the daemon's neighbours (each reaped by rvh_teardown).  The
 * cmocka fixtures rvh_fixture_setup / rvh_fixture_teardown give a test a
 * started daemon as its state.  Every wait has a generous deadline that
 * only guards against hangs; nothing measures time.
 */
#ifndef RV_DAEMON_HARNESS_H
#define RV_DAEMON_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rearview/admin.pb-c.h"
#include "rearview/frame.h"

/* Failure guard for every wait: generous, since a sanitizer build on a busy
 * two-core machine can take tens of seconds to reach a state a quiet plain
 * build reaches in one (it only ever delays a failing test). */
#define RVH_GUARD_S 90

struct rvh {
	char dir[64];
	char run[128];
	char state[128];
	char conf[128];
	char notify[128];
	char acklog[128];
	char apps[128]; /* the daemon's [identity] apps_dir (the app map) */
	int notify_fd;
	/* NULL, or a command rearviewd and its arguments are appended to
	 * (NULL-terminated): a launcher such as the unit's sandbox. */
	const char *const *wrap;
	pid_t daemon;
	pid_t helpers[32];
	unsigned nhelpers;
};

static inline double rvh_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void rvh_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Starts rearviewd and waits for READY=1.  Returns 0 or -1. */
static inline int rvh_start_daemon(struct rvh *h)
{
	char buf[64];
	double until = rvh_now() + RVH_GUARD_S;

	h->daemon = fork();
	if (h->daemon < 0)
		return -1;
	if (h->daemon == 0) {
		char log[160];
		int fd;

		snprintf(log, sizeof(log), "%s/daemon.log", h->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		setenv("NOTIFY_SOCKET", h->notify, 1);
		if (h->wrap) {
			const char *tail[] = {RV_BIN_DIR "/rearviewd",
					      "-c",
					      h->conf,
					      "-r",
					      h->run,
					      "-s",
					      h->state,
					      "-v",
					      NULL};
			const char *argv[32];
			size_t n = 0;

			for (size_t i = 0; h->wrap[i] && n < 23; i++)
				argv[n++] = h->wrap[i];
			for (size_t i = 0; tail[i]; i++)
				argv[n++] = tail[i];
			argv[n] = NULL;
			execvp(argv[0], (char *const *)argv);
			_exit(127);
		}
		execl(RV_BIN_DIR "/rearviewd", "rearviewd", "-c", h->conf, "-r", h->run, "-s",
		      h->state, "-v", (char *)NULL);
		_exit(127);
	}
	while (rvh_now() < until) {
		ssize_t n = recv(h->notify_fd, buf, sizeof(buf) - 1, 0);

		if (n > 0) {
			buf[n] = '\0';
			if (strstr(buf, "READY=1"))
				return 0;
		}
		if (waitpid(h->daemon, NULL, WNOHANG) == h->daemon) {
			h->daemon = 0;
			return -1;
		}
	}
	return -1;
}

/*
 * Sets up a directory, a config (`extra` appended) and the notify socket,
 * without starting the daemon.  The daemon's app map is DIR/apps.d (never
 * the system's): with `apps` non-NULL it holds apps.d/test.conf with that
 * text and `apps_mode`.
 */
static inline int rvh_prepare_apps(struct rvh *h, const char *extra, const char *apps,
				   unsigned apps_mode)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {0, 200000};
	FILE *f;

	memset(h, 0, sizeof(*h));
	snprintf(h->dir, sizeof(h->dir), "/tmp/rvd-it-XXXXXX");
	if (!mkdtemp(h->dir))
		return -1;
	snprintf(h->run, sizeof(h->run), "%s/run", h->dir);
	snprintf(h->state, sizeof(h->state), "%s/state", h->dir);
	snprintf(h->conf, sizeof(h->conf), "%s/rearviewd.conf", h->dir);
	snprintf(h->notify, sizeof(h->notify), "%s/notify", h->dir);
	snprintf(h->acklog, sizeof(h->acklog), "%s/acks", h->dir);
	snprintf(h->apps, sizeof(h->apps), "%s/apps.d", h->dir);
	if (mkdir(h->apps, 0755) < 0 || chmod(h->apps, 0755) < 0)
		return -1;
	if (apps) {
		char path[200];

		snprintf(path, sizeof(path), "%s/test.conf", h->apps);
		f = fopen(path, "w");
		if (!f)
			return -1;
		fputs(apps, f);
		if (fclose(f) != 0 || chmod(path, apps_mode) < 0)
			return -1;
	}
	f = fopen(h->conf, "w");
	if (!f)
		return -1;
	fprintf(f, "[thermal]\npoll_ms = 0\n[identity]\napps_dir = %s\n%s", h->apps,
		extra ? extra : "");
	fclose(f);
	h->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", h->notify);
	if (h->notify_fd < 0 || bind(h->notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	setsockopt(h->notify_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return 0;
}

/* rvh_prepare_apps, then the daemon started (READY=1). */
static inline int rvh_setup_apps(struct rvh *h, const char *extra, const char *apps,
				 unsigned apps_mode)
{
	return rvh_prepare_apps(h, extra, apps, apps_mode) ? -1 : rvh_start_daemon(h);
}

static inline int rvh_setup(struct rvh *h, const char *extra)
{
	return rvh_setup_apps(h, extra, NULL, 0);
}

/* Sends `sig` to the daemon and reaps it.  Returns its wait status. */
static inline int rvh_stop_daemon(struct rvh *h, int sig)
{
	int status = -1;

	if (h->daemon <= 0)
		return -1;
	kill(h->daemon, sig);
	waitpid(h->daemon, &status, 0);
	h->daemon = 0;
	return status;
}

static inline void rvh_teardown(struct rvh *h)
{
	char cmd[128];

	for (unsigned i = 0; i < h->nhelpers; i++) {
		if (h->helpers[i] > 0) {
			kill(h->helpers[i], SIGKILL);
			waitpid(h->helpers[i], NULL, 0);
		}
	}
	rvh_stop_daemon(h, SIGKILL);
	if (h->notify_fd >= 0)
		close(h->notify_fd);
	if (getenv("RVH_KEEP")) {
		fprintf(stderr, "kept %s\n", h->dir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", h->dir);
}

/* cmocka fixtures: *state becomes a struct rvh with the daemon started on
 * a configuration with `conf` appended (NULL: the defaults); -1 (the daemon
 * did not start, nothing left behind) fails the test. */
static inline int rvh_fixture_setup_conf(void **state, const char *conf)
{
	struct rvh *h = calloc(1, sizeof(*h));

	if (!h || rvh_setup(h, conf) < 0) {
		fprintf(stderr, "rearviewd did not start\n");
		if (h)
			rvh_teardown(h);
		free(h);
		return -1;
	}
	*state = h;
	return 0;
}

static inline int rvh_fixture_setup(void **state)
{
	return rvh_fixture_setup_conf(state, NULL);
}

static inline int rvh_fixture_teardown(void **state)
{
	rvh_teardown(*state);
	free(*state);
	return 0;
}

/* A stream connection to the daemon's socket `name` (control.sock, …) in
 * RUN: the descriptor, or -1. */
static inline int rvh_connect(struct rvh *h, const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.80s/%.20s", h->run, name);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Runs the program `exe` with argv (argv[0] its name, NULL-terminated),
 * stdout and stderr appended to DIR/<log>; reaped by rvh_teardown unless
 * rvh_wait_exit saw it end.  Its pid, or -1. */
static inline pid_t rvh_spawn(struct rvh *h, const char *log, const char *exe, char *const argv[])
{
	char path[200];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", h->dir, log);
	pid = fork();
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(exe, argv);
		_exit(127);
	}
	if (pid > 0 && h->nhelpers < sizeof(h->helpers) / sizeof(h->helpers[0]))
		h->helpers[h->nhelpers++] = pid;
	return pid;
}

/* Waits (hang guard) for a program rvh_spawn started to exit: its exit
 * status, or -1 (killed by a signal, or still running at the guard). */
static inline int rvh_wait_exit(struct rvh *h, pid_t pid)
{
	double until = rvh_now() + RVH_GUARD_S;
	int st;

	while (rvh_now() < until) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			for (unsigned i = 0; i < h->nhelpers; i++)
				if (h->helpers[i] == pid)
					h->helpers[i] = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		rvh_sleep_ms(20);
	}
	return -1;
}

/* Runs a shell command line; its stdout into out (NUL-terminated, cap
 * bytes at most).  Its exit status, or -1. */
static inline int rvh_run_cmd(char *out, size_t cap, const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char drain[4096];
	size_t n;
	int st;

	if (!p)
		return -1;
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	/* The rest is read and dropped: a command whose output is longer than
	 * cap must still end by itself, not of SIGPIPE (exit 141). */
	while (fread(drain, 1, sizeof(drain), p) > 0)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Writes len bytes of data to dir/name, its path into path: 0 or -1. */
static inline int rvh_write_file(const char *dir, const char *name, const void *data, size_t len,
				 char *path, size_t cap)
{
	FILE *f;
	int rc;

	snprintf(path, cap, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	rc = fwrite(data, 1, len, f) == len ? 0 : -1;
	return fclose(f) == 0 ? rc : -1;
}

/* How many capture files the daemon's spool holds (STATE/captures), or
 * (size_t)-1 when it cannot be read. */
static inline size_t rvh_spool_files(struct rvh *h)
{
	char path[200];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/captures", h->state);
	d = opendir(path);
	if (!d)
		return (size_t)-1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Starts rv_helper_app with extra arguments (NULL-terminated). */
static inline pid_t rvh_helper(struct rvh *h, ...)
{
	char *argv[12], sock[160], out[160];
	va_list ap;
	int argc = 0;
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/control.sock", h->run);
	snprintf(out, sizeof(out), "%s/helper%u.out", h->dir, h->nhelpers);
	argv[argc++] = (char *)"rv_helper_app";
	argv[argc++] = sock;
	argv[argc++] = h->acklog;
	va_start(ap, h);
	while (argc < 11 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			close(fd);
		}
		execv(RV_TBIN_DIR "/device/rv_helper_app", argv);
		_exit(127);
	}
	if (pid > 0 && h->nhelpers < sizeof(h->helpers) / sizeof(h->helpers[0]))
		h->helpers[h->nhelpers++] = pid;
	return pid;
}

/* One admin request in-process.  Returns 0 with *out (free with
 * rearview__admin_response__free_unpacked), or a negative errno. */
/* The token rv_helper_app wrote into a spooled capture file: its
 * THREAD_NAME record "rvcap PID SEQ" (the file is a real capture; the
 * token is found by its bytes).  0, or -1 when the file has none. */
static inline int rvh_capture_token(const char *path, int *pid, unsigned long *seq)
{
	char buf[8192], *at;
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	at = memmem(buf, n, "rvcap ", 6);
	if (!at || sscanf(at, "rvcap %d %lu", pid, seq) != 2)
		return -1;
	return 0;
}

static inline int rvh_admin(struct rvh *h, Rearview__AdminRequest *q, Rearview__AdminResponse **out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint8_t *payload;
	size_t len;
	int fd, rc;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.90s/admin.sock", h->run);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = rv_frame_send(fd, RV_CHANNEL_ADMIN, &q->base, NULL, 0);
	if (rc == 0)
		rc = rv_frame_recv(fd, RV_CHANNEL_ADMIN, RV_FRAME_MAX_HARD, &payload, &len, NULL,
				   NULL);
	close(fd);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	*out = rearview__admin_response__unpack(NULL, len, payload);
	free(payload);
	return *out ? 0 : -EBADMSG;
}

static inline Rearview__AdminResponse *rvh_status(struct rvh *h)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_GET_STATUS;
	q.get_status = 1;
	if (rvh_admin(h, &q, &r) < 0)
		return NULL;
	return r;
}

static inline Rearview__AdminResponse *rvh_captures(struct rvh *h)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_LIST_CAPTURES;
	q.list_captures = 1;
	if (rvh_admin(h, &q, &r) < 0)
		return NULL;
	return r;
}

/* The registered process `pid` in a status, or NULL. */
static inline const Rearview__ProcessStatus *rvh_find_proc(const Rearview__AdminResponse *r,
							   pid_t pid)
{
	if (!r || r->resp_case != REARVIEW__ADMIN_RESPONSE__RESP_STATUS)
		return NULL;
	for (size_t i = 0; i < r->status->n_processes; i++)
		if (r->status->processes[i]->pid == pid)
			return r->status->processes[i];
	return NULL;
}

/* Waits until `pid` is registered (want=true) or gone (want=false). */
static inline bool rvh_wait_registered(struct rvh *h, pid_t pid, bool want)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_status(h);
		bool have = rvh_find_proc(r, pid) != NULL;

		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (have == want)
			return true;
		rvh_sleep_ms(10);
	}
	return false;
}

/* Waits until the spool lists at least `n` captures.  Returns the count. */
static inline size_t rvh_wait_captures(struct rvh *h, size_t n)
{
	double until = rvh_now() + RVH_GUARD_S;
	size_t have = 0;

	while (rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_captures(h);

		have = r && r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES
			       ? r->captures->n_captures
			       : 0;
		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (have >= n)
			return have;
		rvh_sleep_ms(10);
	}
	return have;
}

/* Runs rvctl with -r RUN and the arguments (a shell word list, no quoting
 * needed); its stdout goes to `out`.  Returns its exit status or -1. */
static inline __attribute__((format(printf, 4, 5))) int rvh_rvctl(struct rvh *h, char *out,
								  size_t cap, const char *fmt, ...)
{
	char args[256], cmd[512];
	size_t used = 0;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s/rvctl -r '%s' %s 2>>'%s/rvctl.err'", RV_BIN_DIR, h->run,
		 args, h->dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (out && cap) {
		used = fread(out, 1, cap - 1, p);
		out[used] = '\0';
	} else {
		char sink[256];

		while (fread(sink, 1, sizeof(sink), p) > 0)
			;
	}
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs the instrumented rearview-demo-app (RV_BIN_DIR) on the harness's
 * sockets for 200 frames with one slow burst at frame 100 (it waits until it
 * is traced), to completion; returns its pid or -1. */
static inline pid_t rvh_run_demo_app(struct rvh *h)
{
	char events[160];
	char *argv[] = {(char *)"rearview-demo-app",
			(char *)"--events",
			events,
			(char *)"--frames",
			(char *)"200",
			(char *)"--slow-every",
			(char *)"100",
			(char *)"--slow-touch-every",
			(char *)"0",
			(char *)"--wait-traced",
			(char *)"--quiet",
			NULL};
	pid_t pid;

	snprintf(events, sizeof(events), "%s/events.sock", h->run);
	pid = rvh_spawn(h, "app.log", RV_BIN_DIR "/rearview-demo-app", argv);
	if (pid < 0)
		return -1;
	/* Still running at the guard: rvh_teardown kills and reaps it. */
	if (rvh_wait_exit(h, pid) == 0)
		return pid;
	/* Failed: its log, for the test's output. */
	{
		char path[200], line[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s/app.log", h->dir);
		if ((f = fopen(path, "r"))) {
			while (fgets(line, sizeof(line), f))
				fprintf(stderr, "app.log: %s", line);
			fclose(f);
		}
	}
	return -1;
}

/* Waits until the daemon traces exactly one thread of `pid` (its main
 * thread, tid pid, when main_only).  false at the guard. */
static inline bool rvh_wait_traced(struct rvh *h, pid_t pid, bool main_only)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (rvh_now() < until) {
		Rearview__AdminResponse *r = rvh_status(h);
		const Rearview__ProcessStatus *p = rvh_find_proc(r, pid);
		bool traced =
			p && p->n_traced_tids == 1 && (!main_only || p->traced_tids[0] == pid);

		if (r)
			rearview__admin_response__free_unpacked(r, NULL);
		if (traced)
			return true;
		rvh_sleep_ms(10);
	}
	return false;
}

/* The percentage after `key` ("on-CPU: 12.000 (34.5%)") in the output of
 * `rvctl why`, or NAN when it is not there (every comparison with NAN is
 * false, so an assertion on a missing share fails). */
static inline double rvh_why_share(const char *out, const char *key)
{
	const char *p = strstr(out, key);
	double us, pct;

	if (!p || sscanf(p + strlen(key), " %lf (%lf%%)", &us, &pct) != 2)
		return NAN;
	return pct;
}

#endif
