/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3_harness.h — a real S3 server for one test program: npm s3rver (pinned
 * in tests/server/s3rver/package.json, installed under build/s3rver; the
 * path comes in RVS_S3RVER) run by node in a temporary directory, on a port
 * the kernel picks (port 0, read back from its "listening on" banner), with
 * bucket `bucket` created, and the access key S3RVER whose secret (S3RVER)
 * is in DIR/secret (mode 0600, as the server requires).
 *
 * s3h_start: 1 when it runs, -1 when node or s3rver is missing or it did
 * not start (printed; the caller skips visibly).  s3h_stop: SIGTERM, wait,
 * remove the directory; 0 or -1.  Header-only (static functions): include it
 * in one test file.  Not thread-safe.
 */
#ifndef RV_S3_HARNESS_H
#define RV_S3_HARNESS_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct s3h {
	pid_t pid;
	char dir[64], endpoint[64], secret[96];
	int up; /* 1 running, 0 not tried, -1 unavailable */
};

static int s3h_start(struct s3h *s, const char *bucket)
{
	int out[2];
	char buf[512] = "";
	size_t got = 0;
	time_t deadline;

	memset(s, 0, sizeof *s);
	s->up = -1;
	if (access(RVS_S3RVER, R_OK) != 0 || system("command -v node >/dev/null 2>&1") != 0)
		return -1;
	snprintf(s->dir, sizeof s->dir, "/tmp/rvs-s3-XXXXXX");
	if (!mkdtemp(s->dir) || pipe(out) < 0)
		return -1;
	snprintf(s->secret, sizeof s->secret, "%s/secret", s->dir);
	int fd = open(s->secret, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "S3RVER\n", 7) != 7 || close(fd) < 0)
		return -1;
	if ((s->pid = fork()) == 0) {
		char data[80];
		snprintf(data, sizeof data, "%s/data", s->dir);
		mkdir(data, 0700);
		dup2(out[1], 1);
		close(out[0]);
		execlp("node", "node", RVS_S3RVER, "-d", data, "-a", "127.0.0.1", "-p", "0",
		       "--silent", "--configure-bucket", bucket, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	/* Wait for "S3rver listening on 127.0.0.1:PORT" (generous deadline). */
	deadline = time(NULL) + 60;
	while (time(NULL) < deadline && got < sizeof buf - 1 &&
	       !(strstr(buf, "listening on ") && strchr(strstr(buf, "listening on "), '\n'))) {
		struct pollfd p = {out[0], POLLIN, 0};
		if (poll(&p, 1, 1000) <= 0)
			continue;
		ssize_t n = read(out[0], buf + got, sizeof buf - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	close(out[0]);
	const char *at = strstr(buf, "listening on ");
	const char *colon = at ? strrchr(at, ':') : NULL;
	if (!colon || (int)strtol(colon + 1, NULL, 10) <= 0) {
		int status = 0;
		kill(s->pid, SIGTERM);
		waitpid(s->pid, &status, 0);
		s->pid = 0;
		fprintf(stderr, "s3rver did not start (status %d): %s\n", status, buf);
		return -1;
	}
	snprintf(s->endpoint, sizeof s->endpoint, "http://127.0.0.1:%d",
		 (int)strtol(colon + 1, NULL, 10));
	s->up = 1;
	return 1;
}

static int s3h_stop(struct s3h *s)
{
	char cmd[128];

	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	if (s->dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
		if (system(cmd) != 0)
			return -1;
		s->dir[0] = '\0';
	}
	return 0;
}

#endif
