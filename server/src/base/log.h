/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — the server's log lines (log.c), in the one format of both
 * services (librvcommon's rvc_log): logfmt on stderr, one line per event,
 *     ts=2026-11-24T10:27:45.123Z level=info key=value… msg="…"
 * Under systemd with stderr on the journal each line starts with its
 * priority "<N>" (rvs_log_open).  Any thread; a line is written with one write, so threads never
 * interleave inside it.
 */
#ifndef RVS_LOG_H
#define RVS_LOG_H

/* Checks whether stderr is the journal (JOURNAL_STREAM names its device
 * and inode, as systemd sets it) and, if so, starts every line from now on
 * with its sd-daemon priority: "<3>" error, "<4>" warn, "<6>" info, which
 * journald strips and files the line under.  Once, in main, before any
 * other thread exists; without it lines are plain logfmt. */
void rvs_log_open(void);

/* Logs msg (plain text: quoted and escaped, always last) at level
 * ("error", "warn", "info") with the event's key=value pairs that fields
 * formats (printf; NULL for none; quote a value that may hold spaces:
 * path=\"%s\"). */
void rvs_log(const char *level, const char *msg, const char *fields, ...)
	__attribute__((format(printf, 3, 4)));

#endif
