/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_worker.c — the capture-parsing worker (sandbox.h): rearviewd
 * started again with RVD_SANDBOX_WORKER_ARG.  It confines itself, then
 * answers one request at a time on fd 3 (sandbox_wire.h).
 *
 * Invariants:
 *  - nothing is read from a request before the confinement is complete:
 *    descriptors other than 2 and 3 closed, root dropped to nobody,
 *    no_new_privs, the seccomp filter loaded;
 *  - each request's descriptors are mapped and closed at once, so the
 *    worker never holds more than its channel and stderr between requests;
 *  - an answer is at most what the daemon accepts; a reason is cut to
 *    SB_WHY_MAX bytes.
 */
#include "sandbox.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

#include "capcheck.h"
#include "rearview/sanitizer.h"
#include "sandbox_wire.h"
#include "summary.h"
#include "rearview/policy.pb-c.h"

/* Address space of the worker: the largest capture mapped, the summary's
 * aggregates and the policy, with room (a limit a sender cannot raise). */
#define WORKER_AS_LIMIT (3ull << 30)

static bool test_hooks;

static __attribute__((noreturn)) void die(const char *what, int err)
{
	/* stderr is the daemon's log. */
	dprintf(2, "rearviewd capture parser: %s: %s\n", what, strerror(err));
	_exit(1);
}

/* Root → nobody (its uid and gid, no supplementary groups); others keep
 * their uid, which holds no more than the daemon's. */
static void drop_privileges(void)
{
	struct passwd *pw;
	uid_t uid = 65534;
	gid_t gid = 65534;

	/* Capabilities the daemon's unit grants (ambient CAP_PERFMON survives
	 * the exec) are not the parser's: none left, whatever the uid. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		die("clearing ambient capabilities", errno);
	if (geteuid() != 0 && getuid() != 0) {
		struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct none[2];

		memset(none, 0, sizeof(none));

		if (syscall(SYS_capset, &hdr, none) < 0)
			die("dropping capabilities", errno);
		return;
	}
	if ((pw = getpwnam("nobody")) != NULL) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	endpwent();
	if (setgroups(0, NULL) < 0)
		die("setgroups", errno);
	if (setresgid(gid, gid, gid) < 0)
		die("setresgid", errno);
	if (setresuid(uid, uid, uid) < 0)
		die("setresuid", errno);
	if (setuid(0) == 0 || geteuid() == 0)
		die("still root after setresuid", EPERM);
}

/* Kill on anything not listed; calls that name a path fail with EACCES
 * (a library probing a file goes on without it). */
static void load_filter(void)
{
	static const int allow[] = {
		SCMP_SYS(read),
		SCMP_SYS(write),
		SCMP_SYS(readv),
		SCMP_SYS(writev),
		SCMP_SYS(recvmsg),
		SCMP_SYS(sendmsg),
		SCMP_SYS(recvfrom),
		SCMP_SYS(sendto),
		SCMP_SYS(getuid),
		SCMP_SYS(geteuid),
		SCMP_SYS(getgid),
		SCMP_SYS(getegid),
		SCMP_SYS(mmap),
		SCMP_SYS(munmap),
		SCMP_SYS(mremap),
		SCMP_SYS(mprotect),
		SCMP_SYS(brk),
		SCMP_SYS(madvise),
		SCMP_SYS(close),
		SCMP_SYS(exit),
		SCMP_SYS(exit_group),
		SCMP_SYS(rt_sigreturn),
		SCMP_SYS(rt_sigprocmask),
		SCMP_SYS(rt_sigaction),
		SCMP_SYS(getpid),
		SCMP_SYS(gettid),
		SCMP_SYS(clock_gettime),
		SCMP_SYS(futex),
		SCMP_SYS(getrandom),
		SCMP_SYS(restart_syscall),
		SCMP_SYS(sysinfo), /* glibc's qsort sizes its buffer */
		SCMP_SYS(sched_yield),
		SCMP_SYS(uname),
	};
	static const int refuse[] = {
		SCMP_SYS(open),	      SCMP_SYS(openat),	   SCMP_SYS(openat2),	 SCMP_SYS(creat),
		SCMP_SYS(stat),	      SCMP_SYS(lstat),	   SCMP_SYS(newfstatat), SCMP_SYS(statx),
		SCMP_SYS(access),     SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(readlink),
		SCMP_SYS(readlinkat), SCMP_SYS(fstat),
	};
	/* KILL_PROCESS needs API level 3, which libseccomp learns with the
	 * seccomp() call; under a service manager's filter that refuses that
	 * call (systemd's @system-service does) the level reads lower: then
	 * KILL, the same for a single thread. */
	scmp_filter_ctx ctx =
		seccomp_init(seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL);
	/* prlimit64's third argument, the new limit: NULL. */
	const struct scmp_arg_cmp no_new_limit = {
		.arg = 2, .op = SCMP_CMP_EQ, .datum_a = 0, .datum_b = 0};
	const struct scmp_arg_cmp self = {
		.arg = 0, .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)getpid(), .datum_b = 0};
	struct sock_filter prog[512];
	struct sock_fprog fprog = {.filter = prog};
	ssize_t n = -1;
	int rc = ctx ? 0 : -EINVAL, mfd = -1;

	for (size_t i = 0; rc == 0 && i < sizeof(allow) / sizeof(allow[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow[i], 0);
	for (size_t i = 0; rc == 0 && i < sizeof(refuse) / sizeof(refuse[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), refuse[i], 0);
	/* Reading a limit (no new one given) is harmless; setting one is not. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, no_new_limit);
	/* abort() signals itself; no other process (a non-root daemon's uid is
	 * the worker's: it must not reach the daemon). */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, self);
	/*
	 * Loaded with prctl(PR_SET_SECCOMP), not seccomp(): the program is
	 * exported to a memfd and read back.  prctl is what a service
	 * manager's filter allows (seccomp() is not in @system-service).
	 */
	if (rc == 0 && (mfd = memfd_create("rearview-filter", MFD_CLOEXEC)) < 0)
		rc = -errno;
	if (rc == 0)
		rc = seccomp_export_bpf(ctx, mfd);
	if (rc == 0 && (n = pread(mfd, prog, sizeof(prog), 0)) <= 0)
		rc = n < 0 ? -errno : -EIO;
	if (mfd >= 0)
		close(mfd);
	seccomp_release(ctx);
	if (rc == 0 && (n % (ssize_t)sizeof(prog[0]) || (size_t)n == sizeof(prog)))
		rc = -E2BIG;
	if (rc < 0)
		die("seccomp filter", -rc);
	fprog.len = (unsigned short)(n / (ssize_t)sizeof(prog[0]));
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0)
		die("PR_SET_SECCOMP", errno);
}

static void confine(int fd)
{
	struct rlimit as = {WORKER_AS_LIMIT, WORKER_AS_LIMIT};

	if (fd != RVD_SANDBOX_FD)
		die("channel", EBADF);
	/* Every descriptor but stderr and the channel. */
	close(0);
	close(1);
	if (close_range(RVD_SANDBOX_FD + 1, ~0u, 0) < 0)
		die("close_range", errno);
	test_hooks = getenv(RVD_SANDBOX_TEST_ENV) && !strcmp(getenv(RVD_SANDBOX_TEST_ENV), "1");
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	drop_privileges();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs", errno);
	prctl(PR_SET_DUMPABLE, 0);
#if !RV_ASAN
	/* AddressSanitizer reserves terabytes of shadow: no limit under it. */
	if (setrlimit(RLIMIT_AS, &as) < 0)
		die("RLIMIT_AS", errno);
#else
	(void)as;
#endif
	load_filter();
}

static int write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void answer(int fd, int status, const void *buf, size_t len)
{
	struct sb_ans a = {.magic = SB_MAGIC, .status = status, .len = len};

	if (write_full(fd, &a, sizeof(a)) < 0 || (len && write_full(fd, buf, len) < 0))
		_exit(0); /* the daemon is gone */
}

static void answer_text(int fd, int status, const char *text)
{
	size_t n = strlen(text);

	answer(fd, status, text, n < SB_WHY_MAX ? n : SB_WHY_MAX);
}

/* Test hooks (RVD_SANDBOX_TEST_ENV): true when one handled the request. */
static bool test_hook(int fd, const uint8_t *cap, size_t len)
{
	static const char crash[] = "RVD-TEST-CRASH", open_[] = "RVD-TEST-OPEN",
			  hang[] = "RVD-TEST-HANG", big[] = "RVD-TEST-OVERSIZE";
	char text[160];
	int f;

	if (!test_hooks)
		return false;
	if (len >= sizeof(crash) - 1 && !memcmp(cap, crash, sizeof(crash) - 1))
		abort(); /* a parser bug, as the daemon sees one */
	if (len >= sizeof(hang) - 1 && !memcmp(cap, hang, sizeof(hang) - 1)) {
		/* A parser stuck in a loop: it never answers, and waits on its
		 * channel (read is allowed) until the daemon kills it. */
		uint8_t c;

		while (read(fd, &c, 1) != 0)
			;
		_exit(0);
	}
	if (len >= sizeof(big) - 1 && !memcmp(cap, big, sizeof(big) - 1)) {
		/* An answer announcing more than any request's bound. */
		struct sb_ans a = {.magic = SB_MAGIC, .status = 0, .len = 1ull << 40};

		if (write_full(fd, &a, sizeof(a)) < 0)
			_exit(0);
		return true;
	}
	if (len < sizeof(open_) - 1 || memcmp(cap, open_, sizeof(open_) - 1))
		return false;
	f = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	snprintf(text, sizeof(text), "open /etc/passwd: %s; uid %u",
		 f >= 0 ? "opened" : strerror(errno), (unsigned)getuid());
	if (f >= 0)
		close(f);
	answer_text(fd, -EACCES, text);
	return true;
}

static void serve(int fd, const struct sb_req *q, int capfd, int auxfd)
{
	const uint8_t *cap = MAP_FAILED, *aux = MAP_FAILED;
	Rearview__PolicyBody *policy = NULL;
	uint8_t *out = NULL;
	size_t out_len = 0;
	char err[SB_WHY_MAX];
	const char *why = NULL;
	int rc;

	if (q->len)
		cap = mmap(NULL, q->len, PROT_READ, MAP_SHARED | MAP_POPULATE, capfd, 0);
	if (auxfd >= 0 && q->aux_len)
		aux = mmap(NULL, q->aux_len, PROT_READ, MAP_PRIVATE, auxfd, 0);
	close(capfd);
	if (auxfd >= 0)
		close(auxfd);
	if (cap == MAP_FAILED || (q->aux_len && aux == MAP_FAILED)) {
		answer_text(fd, -EINVAL, "capture cannot be mapped");
		goto out;
	}
	/* Reads past the memfd's end fault: the mapping is only q->len long,
	 * and a sealed memfd cannot shrink under it. */
	if (test_hook(fd, cap, q->len))
		goto out;
	switch (q->op) {
	case SB_OP_CHECK:
		rc = rvd_capcheck_buf(cap, q->len, &why);
		if (rc < 0)
			answer_text(fd, rc, why ? why : "not a capture");
		else
			answer(fd, 0, NULL, 0);
		break;
	case SB_OP_SUMMARY:
		if (q->aux_len &&
		    !(policy = rearview__policy_body__unpack(NULL, q->aux_len, aux))) {
			answer_text(fd, -EINVAL, "policy does not decode");
			break;
		}
		err[0] = '\0';
		rc = rvd_summary_build(cap, q->len, policy, RVD_SUMMARY_TOP, &out, &out_len, err,
				       sizeof(err));
		if (rc < 0)
			answer_text(fd, rc, err[0] ? err : "summary failed");
		else
			answer(fd, 0, out, out_len);
		break;
	default:
		answer_text(fd, -EINVAL, "unknown request");
	}
out:
	if (policy)
		rearview__policy_body__free_unpacked(policy, NULL);
	free(out);
	if (cap != MAP_FAILED)
		munmap((void *)cap, q->len);
	if (aux != MAP_FAILED)
		munmap((void *)aux, q->aux_len);
}

void rvd_sandbox_worker_main(int fd)
{
	confine(fd);
	{
		/* Confined and ready: the daemon may wait for this at its start. */
		const struct sb_ans hello = {.magic = SB_MAGIC, .status = SB_HELLO, .len = 0};

		if (write_full(fd, &hello, sizeof(hello)) < 0)
			_exit(0);
	}
	for (;;) {
		int fds[2] = {-1, -1};
		union {
			char buf[CMSG_SPACE(sizeof(fds))];
			struct cmsghdr align;
		} u;
		struct sb_req q;
		struct iovec iov = {.iov_base = &q, .iov_len = sizeof(q)};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf)};
		struct cmsghdr *c;
		ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0); /* the daemon closed the channel */
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

				memcpy(fds, CMSG_DATA(c), (k < 2 ? k : 2) * sizeof(int));
			}
		}
		if (n != (ssize_t)sizeof(q) || q.magic != SB_MAGIC || fds[0] < 0 ||
		    (msg.msg_flags & MSG_CTRUNC) || (q.aux_len && fds[1] < 0))
			_exit(1); /* not our daemon speaking */
		serve(fd, &q, fds[0], q.aux_len ? fds[1] : -1);
		if (!q.aux_len && fds[1] >= 0)
			close(fds[1]);
	}
}
