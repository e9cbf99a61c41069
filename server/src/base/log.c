/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — the server's log lines (log.h): the fields formatted here, the
 * line written by librvcommon's rvc_log, as the daemon's are; with the
 * sd-daemon priority "<N>" first when stderr is the journal.
 * Thread-safe: the one state, whether stderr is the journal, is set by
 * rvs_log_open before any other thread exists.
 */
#include "base/log.h"
#include "rearview/common.h"

#include <stdarg.h>
#include <stdio.h>

static int log_journal;

void rvs_log_open(void)
{
	log_journal = rvc_log_to_journal();
}

void rvs_log(const char *level, const char *msg, const char *fields, ...)
{
	char kv[RVC_LOG_LINE], prio[4];
	va_list ap;

	kv[0] = '\0';
	if (fields) {
		va_start(ap, fields);
		vsnprintf(kv, sizeof kv, fields, ap);
		va_end(ap);
	}
	rvc_log(level, log_journal ? rvc_log_prefix(level, prio) : NULL, kv, msg);
}
