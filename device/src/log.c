/*
 * log.c — leveled logging to stderr.  One line per call, written with a
 * single write() so lines from the loop thread and work-queue threads never
 * interleave mid-line.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int log_level = RVD_LOG_INFO;

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

void rvd_log(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "<%d>rearviewd: ", level);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* Best effort: a log line that cannot be written is dropped. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
