/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — leveled logging to stderr in the one log format of both
 * services (librvcommon's rvc_log, which rearview-server writes too):
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
 * Invariants: one line per call, written with a single write() (rvc_log)
 * so lines from the loop thread and work-queue threads never interleave
 * mid-line; the message is cut to RVD_LOG_LINE bytes before escaping.
 */
#include "log.h"
#include "rearview/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <systemd/sd-daemon.h>

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
	log_journal = rvc_log_to_journal();
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

void rvd_log(int level, const char *fmt, ...)
{
	char msg[RVD_LOG_LINE], prio[4];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rvc_log(level_name(level), log_journal ? rvc_log_prefix(level_name(level), prio) : NULL,
		NULL, msg);
}

/* ---- readiness (sd_notify) ------------------------------------------------- */

void rvd_sd_notify(const char *state)
{
	int rc = sd_notify(0, state);

	if (rc < 0)
		rvd_warn("sd_notify %s: %s", state, strerror(-rc));
}
