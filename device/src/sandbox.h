/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox.h — the daemon's capture parsing in a separate, unprivileged,
 * seccomp-confined worker process.  The bytes a capture holds come from
 * any local app; the checks (capcheck.h) and the local summary (summary.h)
 * that read them run in the worker, so a bug in a parser reaches neither
 * the daemon's keys and tokens, nor its spool, nor its sockets.
 *
 * The worker is the daemon's own executable started again (posix_spawn of
 * /proc/self/exe with RVD_SANDBOX_WORKER_ARG): a fresh image, none of the
 * daemon's memory.  Before it reads anything it closes every descriptor
 * but its channel (fd 3) and stderr (the daemon's log, for crash
 * reports), drops to `nobody` when it runs as root (setgroups, setresgid,
 * setresuid), sets no_new_privs and installs a seccomp filter (libseccomp)
 * that kills it on any system call but read/write/recvmsg/sendmsg, memory
 * management, close and exit (open/stat-like calls fail with EACCES).
 * It then says hello (sb_ans status SB_HELLO) and answers one request at
 * a time: a capture descriptor (and, for a
 * summary, the policy's bytes in a second one) in, a status and a bounded
 * answer out.  It is started at the first request (or before, by
 * rvd_sandbox_start) and started again after it died.
 *
 * A worker that crashes, does not answer within the deadline, or answers
 * more than the caller's bound is killed and reaped; the request fails
 * with -ECHILD, -ETIMEDOUT or -EMSGSIZE and is counted — for the caller a
 * capture it must reject, never a failure of its own.
 *
 * One struct rvd_sandbox is used by one thread at a time (the daemon has
 * one for the loop thread's capture checks and one for the summaries on
 * the spool's job queue); its counters may be read from any thread.
 */
#ifndef RVD_SANDBOX_H
#define RVD_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* argv[1] that makes rearviewd the worker (main.c). */
#define RVD_SANDBOX_WORKER_ARG "--capture-parser-worker"

/*
 * With this variable set to 1 in the daemon's environment, the worker
 * honours test hooks: a capture beginning with "RVD-TEST-CRASH" makes it
 * abort, one beginning with "RVD-TEST-OPEN" makes it try to open
 * /etc/passwd and answer the result ("open /etc/passwd: <error>; uid N"),
 * one beginning with "RVD-TEST-HANG" makes it never answer, and one
 * beginning with "RVD-TEST-OVERSIZE" makes it announce an answer of 1 TiB.
 * Read once at the worker's start; never set by the shipped unit.
 */
#define RVD_SANDBOX_TEST_ENV "REARVIEWD_PARSER_TEST_HOOKS"

struct rvd_sandbox {
	char exe[256];	     /* the executable started as the worker */
	const char *name;    /* "check", "summary": for the log */
	unsigned timeout_ms; /* per request */
	pid_t pid;	     /* the worker, or 0 */
	int fd;		     /* our end of its channel, or -1 */
	bool hello;	     /* the worker's hello (it is confined) not read yet */
	/* Counters (relaxed atomics): requests made, workers started, and the
	 * failures of the worker — crashed (died), timed out, answered too
	 * much — each also counted in `failed`. */
	uint64_t requests, spawns, failed, crashes, timeouts, oversized;
};

/* Prepares `sb` (no process yet).  `exe` NULL: this program
 * (/proc/self/exe resolved now, so an upgrade in place keeps the worker in
 * step with the daemon that started).  Returns 0 or -errno. */
int rvd_sandbox_init(struct rvd_sandbox *sb, const char *name, const char *exe,
		     unsigned timeout_ms);

/*
 * Starts the worker now, unless one runs, so that the next request does
 * not wait for its start-up (exec, linking, confinement: 0.1–0.4 s on a
 * loaded machine).  By the thread that uses `sb`.  Returns 0 or -errno
 * (logged; the next request tries again).
 */
int rvd_sandbox_start(struct rvd_sandbox *sb);

/*
 * Waits up to `timeout_ms` for the started worker to say it has confined
 * itself and reads requests (its hello: the first thing it sends).  By
 * the thread that uses `sb`.  Returns 0 (ready), -ETIMEDOUT (still
 * starting: it is kept, and its first request waits for the hello within
 * that request's deadline), -ESRCH (no worker), or the worker's failure
 * (-ECHILD: it died, and was reaped; -EPROTO: it said something else, and
 * was killed) — its next request starts a new one.
 */
int rvd_sandbox_wait_ready(struct rvd_sandbox *sb, unsigned timeout_ms);

/*
 * The checks of rvd_capcheck_buf (capcheck.h) on the first `len` bytes of
 * `fd` (not taken; its offset unused), in the worker.  Returns 0, -EBADMSG
 * with `why` (a copy, NUL-terminated in whysz >= 1 bytes) naming the
 * fault, or a failure of the worker (-ECHILD, -ETIMEDOUT, -EMSGSIZE, or
 * -errno when it cannot be started or reached) with `why` saying so.
 */
int rvd_sandbox_check(struct rvd_sandbox *sb, int fd, size_t len, char *why, size_t whysz);

/*
 * rvd_summary_build (summary.h) on the first `len` bytes of `fd` in the
 * worker, with the signature models of the policy packed in
 * policy[0..policy_len) (a rearview.PolicyBody; NULL/0: none).  On success
 * *out (free()) holds *out_len bytes of a rearview.Summary, at most
 * `max_out`.  Errors as rvd_summary_build's (err says why) or the
 * worker's failures as for rvd_sandbox_check.
 */
int rvd_sandbox_summarize(struct rvd_sandbox *sb, int fd, size_t len, const uint8_t *policy,
			  size_t policy_len, size_t max_out, uint8_t **out, size_t *out_len,
			  char *err, size_t errsz);

/* Ends the worker (its channel closed, the process reaped). */
void rvd_sandbox_close(struct rvd_sandbox *sb);

/*
 * The worker's side: confines itself (see above) and serves requests on
 * descriptor `fd` until it is closed.  Never returns; exits 0 at the end
 * of its channel, 1 when it cannot confine itself.
 */
__attribute__((noreturn)) void rvd_sandbox_worker_main(int fd);

#endif
