/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — the server's log lines (log.c), in the one format of both
 * services (librvcommon's rvc_log): logfmt on stderr, one line per event,
 *     ts=2026-11-24T10:27:45.123Z level=info key=value… msg="…"
 * Any thread; a line is written with one write, so threads never
 * interleave inside it.
 */
#ifndef RVS_LOG_H
#define RVS_LOG_H

/* Logs msg (plain text: quoted and escaped, always last) at level
 * ("error", "warn", "info") with the event's key=value pairs that fields
 * formats (printf; NULL for none; quote a value that may hold spaces:
 * path=\"%s\"). */
void rvs_log(const char *level, const char *msg, const char *fields, ...)
	__attribute__((format(printf, 3, 4)));

#endif
