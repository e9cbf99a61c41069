/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — the one log line format of both services (rearview/common.h's
 * rvc_log): logfmt on stderr,
 *
 *     ts=2026-11-24T10:27:45.123Z level=info trace=t-… err=0 msg="decoded"
 *
 * ts is UTC with milliseconds; the event's key=value pairs as the caller
 * wrote them; msg last, quoted, with \ " and control characters escaped
 * (\n, \t, \xHH), so one call is always one line.
 *
 * Under systemd with stderr connected to the journal, a service starts
 * each line with the sd-daemon priority "<N>" (rvc_log_to_journal,
 * rvc_log_prefix), which journald strips and files the line under.
 *
 * Invariants: one line per call, written with a single write() so lines of
 * the loop thread and of work threads never interleave mid-line; the line
 * never exceeds RVC_LOG_LINE bytes (the fields, then the message, are cut).
 */
#include "rearview/common.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Appends s to line[n..cap-2] quoted and escaped; returns the new length,
 * leaving room for the closing quote and the newline. */
static size_t quote(char *line, size_t n, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
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

/* Appends at most max bytes of s to line at n; returns the new length. */
static size_t put(char *line, size_t n, size_t max, const char *s)
{
	size_t k = strlen(s);

	if (k > max)
		k = max;
	memcpy(line + n, s, k);
	return n + k;
}

void rvc_log(const char *level, const char *prefix, const char *fields, const char *msg)
{
	char line[RVC_LOG_LINE], when[32], head[96];
	struct timespec ts;
	struct tm tm;
	size_t n = 0;
	int h;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	h = snprintf(head, sizeof(head), "ts=%s.%03ldZ level=%s ", when, ts.tv_nsec / 1000000,
		     level);
	assert(h > 0 && (size_t)h < sizeof(head));
	/* Room is kept for the head, ` msg="` and the line's end. */
	n = put(line, n, 32, prefix ? prefix : "");
	n = put(line, n, sizeof(head), head);
	if (fields && *fields) {
		n = put(line, n, sizeof(line) - n - 16, fields);
		line[n++] = ' ';
	}
	n = put(line, n, 5, "msg=\"");
	n = quote(line, n, sizeof(line), msg);
	assert(n <= sizeof(line) - 2);
	line[n++] = '"';
	line[n++] = '\n';
	/* Best effort: a log line that cannot be written is dropped. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

int rvc_log_to_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	return js && sscanf(js, "%llu:%llu%c", &dev, &ino, &end) == 2 &&
	       fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

const char *rvc_log_prefix(const char *level, char out[4])
{
	char n = '7'; /* SD_DEBUG */

	if (!strcmp(level, "error"))
		n = '3'; /* SD_ERR */
	else if (!strcmp(level, "warn"))
		n = '4'; /* SD_WARNING */
	else if (!strcmp(level, "info"))
		n = '6'; /* SD_INFO */
	out[0] = '<';
	out[1] = n;
	out[2] = '>';
	out[3] = '\0';
	return out;
}
