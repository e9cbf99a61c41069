/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — the server's log lines (log.h): the fields formatted here, the
 * line written by librvcommon's rvc_log, as the daemon's are.
 * Thread-safe: nothing here keeps state.
 */
#include "base/log.h"
#include "rearview/common.h"

#include <stdarg.h>
#include <stdio.h>

void rvs_log(const char *level, const char *msg, const char *fields, ...)
{
	char kv[RVC_LOG_LINE];
	va_list ap;

	kv[0] = '\0';
	if (fields) {
		va_start(ap, fields);
		vsnprintf(kv, sizeof kv, fields, ap);
		va_end(ap);
	}
	rvc_log(level, NULL, kv, msg);
}
