/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox.c — the daemon's side of the capture-parsing worker (sandbox.h):
 * starting it, one request at a time over a socketpair, and treating its
 * death, silence or excess as the failure of that request only.
 *
 * The wire (native byte order: both ends are this executable):
 *   request  = struct sb_req, with SCM_RIGHTS of the capture descriptor
 *              and, when aux_len > 0, the descriptor holding aux_len bytes
 *              (the packed policy);
 *   answer   = struct sb_ans, then `len` bytes (a Summary, or the reason
 *              of a non-zero status as text);
 *   hello    = struct sb_ans with status SB_HELLO, the worker's first
 *              message, read before its first request is sent.
 *
 * Invariants:
 *  - a request is answered by the worker before the next one is sent; any
 *    failure kills and reaps the worker (sb->pid 0, sb->fd -1), so no late
 *    answer can be taken for the next request's;
 *  - nothing from the worker is trusted: the answer's length is checked
 *    against the caller's bound before anything is read into memory, and
 *    its status is mapped to a known set;
 *  - writes use MSG_NOSIGNAL: a dead worker is an error, not SIGPIPE.
 */
#include "sandbox.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sandbox_wire.h"

extern char **environ;

static void count(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

int rvd_sandbox_init(struct rvd_sandbox *sb, const char *name, const char *exe, unsigned timeout_ms)
{
	ssize_t n;

	memset(sb, 0, sizeof(*sb));
	sb->name = name;
	sb->timeout_ms = timeout_ms;
	sb->fd = -1;
	if (exe) {
		if (strlen(exe) >= sizeof(sb->exe))
			return -ENAMETOOLONG;
		snprintf(sb->exe, sizeof(sb->exe), "%s", exe);
		return 0;
	}
	n = readlink("/proc/self/exe", sb->exe, sizeof(sb->exe) - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(sb->exe) - 1)
		return -ENAMETOOLONG;
	sb->exe[n] = '\0';
	return 0;
}

/* Kills (when still running) and reaps the worker; logs how it ended.
 * The channel is open exactly while there is a worker (pid > 0). */
static void worker_end(struct rvd_sandbox *sb, bool kill_it)
{
	int st = 0;

	if (sb->pid <= 0)
		return;
	close(sb->fd);
	sb->fd = -1;
	if (kill_it)
		kill(sb->pid, SIGKILL);
	if (waitpid(sb->pid, &st, 0) == sb->pid && !kill_it) {
		if (WIFSIGNALED(st))
			rvd_warn("capture parser (%s) pid %d killed by signal %d", sb->name,
				 (int)sb->pid, WTERMSIG(st));
		else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
			rvd_warn("capture parser (%s) pid %d exited %d", sb->name, (int)sb->pid,
				 WEXITSTATUS(st));
	}
	sb->pid = 0;
}

static int worker_start(struct rvd_sandbox *sb)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	char *argv[] = {(char *)"rearviewd", (char *)RVD_SANDBOX_WORKER_ARG, NULL};
	int sv[2], child, rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* dup2 onto itself would keep close-on-exec: never hand over fd 3 as is. */
	child = sv[1] == RVD_SANDBOX_FD ? fcntl(sv[1], F_DUPFD_CLOEXEC, RVD_SANDBOX_FD + 1) : sv[1];
	if (child < 0) {
		rc = -errno;
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, child, RVD_SANDBOX_FD);
	/* The worker's signals do not depend on the starting thread's mask
	 * (the loop's, or a thread pool's) nor on what the daemon ignores:
	 * none blocked, every one at its default. */
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(&sb->pid, sb->exe, &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (child != sv[1])
		close(child);
	close(sv[1]);
	if (rc != 0) {
		close(sv[0]);
		sb->pid = 0;
		rvd_err("capture parser (%s): cannot start %s: %s", sb->name, sb->exe,
			strerror(rc));
		return -rc;
	}
	sb->fd = sv[0];
	sb->hello = true;
	count(&sb->spawns);
	rvd_info("capture parser (%s) started: pid %d", sb->name, (int)sb->pid);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Reads exactly `len` bytes before `deadline` (now_ms()).  0, -ETIMEDOUT,
 * -ECHILD (the worker closed its end: it died) or -errno. */
static int read_full(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = now_ms();
		ssize_t n;
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return errno == ECONNRESET ? -ECHILD : -errno;
		if (n == 0)
			return -ECHILD;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads the worker's hello (sandbox_wire.h).  0, -EPROTO (something
 * else came) or read_full's errors. */
static int read_hello(struct rvd_sandbox *sb, uint64_t deadline)
{
	struct sb_ans a;
	int rc = read_full(sb->fd, &a, sizeof(a), deadline);

	if (rc < 0)
		return rc;
	if (a.magic != SB_MAGIC || a.status != SB_HELLO || a.len != 0)
		return -EPROTO;
	sb->hello = false;
	return 0;
}

/* Sends the request with its descriptors. */
static int send_req(int fd, const struct sb_req *q, int capfd, int auxfd)
{
	int fds[2] = {capfd, auxfd};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)q, .iov_len = sizeof(*q)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf};
	size_t nfds = auxfd >= 0 ? 2 : 1;
	struct cmsghdr *c;
	ssize_t n;

	memset(u.buf, 0, sizeof(u.buf));
	msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EPIPE || errno == ECONNRESET ? -ECHILD : -errno;
	/* A stream socket with room for 32 bytes takes them in one piece. */
	return n == (ssize_t)sizeof(*q) ? 0 : -EIO;
}

/* The worker failed: counted, logged, killed and reaped. */
static int worker_failed(struct rvd_sandbox *sb, int rc, char *why, size_t whysz)
{
	const char *what = rc == -ETIMEDOUT  ? "did not answer in time"
			   : rc == -EMSGSIZE ? "answered too much"
			   : rc == -ECHILD   ? "crashed"
					     : strerror(-rc);

	count(&sb->failed);
	if (rc == -ETIMEDOUT)
		count(&sb->timeouts);
	else if (rc == -EMSGSIZE)
		count(&sb->oversized);
	else if (rc == -ECHILD)
		count(&sb->crashes);
	rvd_warn("capture parser (%s) pid %d %s: the capture is rejected", sb->name, (int)sb->pid,
		 what);
	snprintf(why, whysz, "capture parser %s", what);
	worker_end(sb, rc != -ECHILD);
	return rc;
}

/*
 * One request: op on `capfd` (len bytes) with `auxfd` (aux_len bytes, or
 * -1).  On status 0 *out (free()) receives the answer (at most max_out
 * bytes); on a non-zero status from the worker its text goes to `why`.
 */
static int request(struct rvd_sandbox *sb, uint32_t op, int capfd, size_t len, int auxfd,
		   size_t aux_len, size_t max_out, uint8_t **out, size_t *out_len, char *why,
		   size_t whysz)
{
	struct sb_req q = {.magic = SB_MAGIC, .op = op, .len = len, .aux_len = aux_len};
	struct sb_ans a;
	uint64_t deadline;
	uint8_t *buf = NULL;
	int rc;

	assert(whysz >= 1);
	*out = NULL;
	*out_len = 0;
	why[0] = '\0';
	count(&sb->requests);
	if (sb->pid <= 0 && (rc = worker_start(sb)) < 0) {
		snprintf(why, whysz, "capture parser cannot start: %s", strerror(-rc));
		count(&sb->failed);
		return rc;
	}
	deadline = now_ms() + sb->timeout_ms;
	if ((sb->hello && (rc = read_hello(sb, deadline)) < 0) ||
	    (rc = send_req(sb->fd, &q, capfd, auxfd)) < 0 ||
	    (rc = read_full(sb->fd, &a, sizeof(a), deadline)) < 0)
		return worker_failed(sb, rc, why, whysz);
	if (a.magic != SB_MAGIC || a.len > (a.status ? SB_WHY_MAX : max_out))
		return worker_failed(sb, -EMSGSIZE, why, whysz);
	if (a.len) {
		buf = malloc(a.len + 1);
		if (!buf) {
			/* The answer is still in the channel: start afresh. */
			worker_end(sb, true);
			snprintf(why, whysz, "%s", strerror(ENOMEM));
			return -ENOMEM;
		}
		if ((rc = read_full(sb->fd, buf, a.len, deadline)) < 0) {
			free(buf);
			return worker_failed(sb, rc, why, whysz);
		}
	}
	if (a.status != 0) {
		/* The worker's reason, as text: printable bytes only. */
		size_t n = a.len < whysz - 1 ? a.len : whysz - 1;

		for (size_t i = 0; i < n; i++)
			why[i] = buf[i] >= 0x20 && buf[i] < 0x7f ? (char)buf[i] : '?';
		why[n] = '\0';
		free(buf);
		/* Only the errors the parsers give; anything else is a refusal. */
		switch (a.status) {
		case -EBADMSG:
		case -EINVAL:
		case -E2BIG:
		case -ENOMEM:
		case -EACCES:
			return a.status;
		default:
			return -EBADMSG;
		}
	}
	*out = buf;
	*out_len = a.len;
	return 0;
}

int rvd_sandbox_start(struct rvd_sandbox *sb)
{
	return sb->pid > 0 ? 0 : worker_start(sb);
}

int rvd_sandbox_wait_ready(struct rvd_sandbox *sb, unsigned timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;
	struct pollfd pfd;
	int r, rc;

	if (sb->pid <= 0)
		return -ESRCH;
	if (!sb->hello)
		return 0;
	/* Nothing is read before the hello is there: a timeout leaves the
	 * channel as it was, for the first request to read it. */
	for (;;) {
		uint64_t now = now_ms();

		pfd = (struct pollfd){.fd = sb->fd, .events = POLLIN};
		r = poll(&pfd, 1, now >= deadline ? 0 : (int)(deadline - now));
		if (r > 0)
			break;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
	rc = read_hello(sb, now_ms() + sb->timeout_ms);
	if (rc < 0) {
		rvd_warn("capture parser (%s) pid %d did not start: %s", sb->name, (int)sb->pid,
			 rc == -ECHILD ? "it died" : strerror(-rc));
		worker_end(sb, rc != -ECHILD);
	}
	return rc;
}

int rvd_sandbox_check(struct rvd_sandbox *sb, int fd, size_t len, char *why, size_t whysz)
{
	uint8_t *out;
	size_t n;
	int rc = request(sb, SB_OP_CHECK, fd, len, -1, 0, 0, &out, &n, why, whysz);

	free(out);
	return rc;
}

int rvd_sandbox_summarize(struct rvd_sandbox *sb, int fd, size_t len, const uint8_t *policy,
			  size_t policy_len, size_t max_out, uint8_t **out, size_t *out_len,
			  char *err, size_t errsz)
{
	int aux = -1, rc;

	if (policy_len) {
		aux = memfd_create("rearview-policy", MFD_CLOEXEC);
		if (aux < 0 || write(aux, policy, policy_len) != (ssize_t)policy_len) {
			rc = aux < 0 ? -errno : -EIO;
			if (aux >= 0)
				close(aux);
			snprintf(err, errsz, "policy for the parser: %s", strerror(-rc));
			return rc;
		}
	}
	rc = request(sb, SB_OP_SUMMARY, fd, len, aux, policy_len, max_out, out, out_len, err,
		     errsz);
	if (aux >= 0)
		close(aux);
	return rc;
}

void rvd_sandbox_close(struct rvd_sandbox *sb)
{
	/* Idle between requests: nothing is lost by not waiting for it. */
	worker_end(sb, true);
}
