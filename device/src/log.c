/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — leveled logging to stderr in logfmt, the shape rearview-server
 * writes (server/src/util.c rvs_log):
 *
 *     ts=2026-11-24T10:27:45.123Z level=info msg="pid 42 registered (app, 3 threads)"
 *
 * ts is UTC with milliseconds; level is error, warn, info or debug; msg is
 * the formatted message, quoted, with \ " and control characters escaped
 * (\n, \t, \xHH), so one call is always one line.  When stderr is the
 * journal (systemd sets JOURNAL_STREAM to its device:inode) each line is
 * prefixed with the sd-daemon priority "<N>", which journald strips and
 * files the line under; anywhere else (a terminal, a file) the line is
 * plain logfmt.
 *
 * Invariants: one line per call, written with a single write() so lines
 * from the loop thread and work-queue threads never interleave mid-line;
 * the line never exceeds RVD_LOG_LINE bytes (the message is truncated).
 */
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RVD_LOG_LINE 1024

static int log_level = RVD_LOG_INFO;
static int log_journal; /* stderr is the journal: "<N>" prefixes */

void rvd_log_set_level(int level)
{
	log_level = level;
}

int rvd_log_get_level(void)
{
	return log_level;
}

int rvd_log_level_parse(const char *s)
{
	if (!strcmp(s, "err") || !strcmp(s, "error"))
		return RVD_LOG_ERR;
	if (!strcmp(s, "warn") || !strcmp(s, "warning"))
		return RVD_LOG_WARN;
	if (!strcmp(s, "info"))
		return RVD_LOG_INFO;
	if (!strcmp(s, "debug"))
		return RVD_LOG_DEBUG;
	return -EINVAL;
}

void rvd_log_open(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	log_journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
		      fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
		      (unsigned long long)st.st_ino == ino;
}

static const char *level_name(int level)
{
	switch (level) {
	case RVD_LOG_ERR:
		return "error";
	case RVD_LOG_WARN:
		return "warn";
	case RVD_LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

/* Appends msg to line[n..cap-2] quoted and escaped; returns the new length,
 * leaving room for the closing quote and the newline. */
static size_t quote(char *line, size_t n, size_t cap, const char *msg)
{
	static const char hex[] = "0123456789abcdef";

	for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
		char esc[4];
		size_t k = 0;

		if (*p == '"' || *p == '\\') {
			esc[k++] = '\\';
			esc[k++] = (char)*p;
		} else if (*p == '\n') {
			esc[k++] = '\\';
			esc[k++] = 'n';
		} else if (*p == '\t') {
			esc[k++] = '\\';
			esc[k++] = 't';
		} else if (*p < 0x20 || *p == 0x7f) {
			esc[k++] = '\\';
			esc[k++] = 'x';
			esc[k++] = hex[*p >> 4];
			esc[k++] = hex[*p & 15];
		} else {
			esc[k++] = (char)*p;
		}
		if (n + k > cap - 2)
			break;
		memcpy(line + n, esc, k);
		n += k;
	}
	return n;
}

void rvd_log(int level, const char *fmt, ...)
{
	char line[RVD_LOG_LINE], msg[RVD_LOG_LINE], when[32], prio[8] = "";
	struct timespec ts;
	struct tm tm;
	va_list ap;
	size_t n;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	if (log_journal)
		snprintf(prio, sizeof(prio), "<%d>", level);
	n = (size_t)snprintf(line, sizeof(line), "%sts=%s.%03ldZ level=%s msg=\"", prio, when,
			     ts.tv_nsec / 1000000, level_name(level));
	assert(n < sizeof(line) - 2);
	n = quote(line, n, sizeof(line), msg);
	assert(n <= sizeof(line) - 2);
	line[n++] = '"';
	line[n++] = '\n';
	/* Best effort: a log line that cannot be written is dropped. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

/* ---- readiness (the sd_notify protocol) ----------------------------------- */

void rvd_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd;

	if (!path || !*path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		rvd_warn("sd_notify %s: %s", state, strerror(errno));
	close(fd);
}
