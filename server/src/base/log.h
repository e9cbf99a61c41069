/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — the server's log lines on stderr, one logfmt line per event:
 *     ts=2026-11-24T10:27:45.123Z level=info key=value… msg="…"
 * Any thread; a line is written with one write, so threads never
 * interleave inside it.
 */
#ifndef RVS_LOG_H
#define RVS_LOG_H

void rvs_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
