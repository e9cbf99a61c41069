/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — leveled logging to stderr for rearviewd, in logfmt, the same
 * shape as rearview-server's lines:
 *     ts=2026-11-24T10:27:45.123Z level=info msg="…"
 * Under systemd, with stderr connected to the journal, each line also
 * starts with the sd-daemon priority prefix "<N>" (stripped by journald,
 * which files the line at that priority).  Any thread.
 */
#ifndef RVD_LOG_H
#define RVD_LOG_H

enum rvd_log_level {
	RVD_LOG_ERR = 3,
	RVD_LOG_WARN = 4,
	RVD_LOG_INFO = 6,
	RVD_LOG_DEBUG = 7,
};

/* The most verbose level printed; RVD_LOG_INFO until changed. */
void rvd_log_set_level(int level);
int rvd_log_get_level(void);

/* Parses "err", "warn", "info", "debug".  Returns the level or -EINVAL. */
int rvd_log_level_parse(const char *s);

/* Checks whether stderr is the journal (JOURNAL_STREAM names its device and
 * inode) and, if so, prefixes lines with "<N>" from now on.  Once, before
 * any other thread exists. */
void rvd_log_open(void);

/* Logs one line at `level` (enum rvd_log_level) when it is not more verbose
 * than the current level; the message is truncated to fit 1 KiB. */
void rvd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sends `state` ("READY=1", "STOPPING=1", "STATUS=…", newline-separated)
 * to systemd's NOTIFY_SOCKET with libsystemd's sd_notify(3); nothing when
 * it is unset.  A failure is logged as a warning, never fatal. */
void rvd_sd_notify(const char *state);

#define rvd_err(...)   rvd_log(RVD_LOG_ERR, __VA_ARGS__)
#define rvd_warn(...)  rvd_log(RVD_LOG_WARN, __VA_ARGS__)
#define rvd_info(...)  rvd_log(RVD_LOG_INFO, __VA_ARGS__)
#define rvd_debug(...) rvd_log(RVD_LOG_DEBUG, __VA_ARGS__)

#endif
