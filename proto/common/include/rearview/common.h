/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/common.h — librvcommon, the helpers every component shares: whole
 * reads and writes on a descriptor, the one atomic file write, the sqlite
 * result code → errno mapping, the JSON string escaper and every program's
 * --version.
 *
 * Internal: the library is static (build/lib/librvcommon.a), never installed,
 * and its objects are built with hidden visibility, so librvtrace.so carries
 * the copy it needs without exporting it.  Each function lives in its own
 * object group (io.o, atomic.o, json.o, sqlite.o): a program pulls in only
 * what it calls (librvtrace never sees sqlite).
 *
 * Errors are negative errno values; no function here allocates anything the
 * caller must free, keeps state between calls, or is unsafe to call from
 * several threads at once (on distinct descriptors / paths).
 */
#ifndef REARVIEW_COMMON_H
#define REARVIEW_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes all `len` bytes of `buf` to `fd`, retrying on EINTR and after
 * partial writes.  Returns 0, or -errno of the failing write() (the file
 * offset then reflects what was written).  `len` 0 writes nothing. */
int rvc_write_all(int fd, const void *buf, size_t len);

/* Reads exactly `len` bytes from `fd` into `buf`, retrying on EINTR and
 * after partial reads.  Returns 0, -EIO when end of file comes before `len`
 * bytes (a short read is an error, never a silent truncation), or -errno of
 * the failing read().  `buf`'s contents are unspecified after a failure. */
int rvc_read_all(int fd, void *buf, size_t len);

/* As rvc_read_all(), with pread() from offset `off`; the file offset of
 * `fd` is left alone, so threads may share the descriptor. */
int rvc_pread_all(int fd, void *buf, size_t len, uint64_t off);

/* Reads the whole regular file `path` (at most `max` bytes) into a new
 * buffer *out (caller frees), NUL-terminated, *len its size.  0, -errno of
 * open or a short read (-EIO), -EINVAL (not a regular file), -EFBIG (larger
 * than max), -ENOMEM. */
int rvc_read_file(const char *path, size_t max, uint8_t **out, size_t *len);

/* fsync()s the directory `dir`, making the entries created, renamed or
 * removed in it durable.  Returns 0 or -errno (open or fsync). */
int rvc_fsync_dir(const char *dir);

/* Fills the temporary file `fd` for rvc_write_file_atomic_fn(): writes the
 * whole content (any number of writes; the descriptor may be dup()ed, but
 * the callback must not close `fd` itself).  Returns 0 or a negative errno,
 * which aborts the write. */
typedef int (*rvc_fill_fn)(int fd, void *arg);

/* Replaces the regular file `path` atomically and durably with `len` bytes of
 * `buf`: a reader sees the old content or the new one, never a mix, and
 * after a 0 return the new content survives a crash.  Steps: a temporary
 * file "<path>.tmp.XXXXXX" in the same directory (mkostemp, O_CLOEXEC, an
 * unpredictable name: nothing else's file is ever truncated or followed),
 * fchmod to `mode` exactly (the umask is not applied), rvc_write_all,
 * fsync, close (checked), rename over `path`, fsync of the directory.
 *
 * `path` names a regular file (existing or not); a symbolic link at `path`
 * is replaced by the file, not followed.  Returns 0, -ENAMETOOLONG,
 * -ENOMEM, or -errno of the failing step.  On any failure before the rename
 * the temporary file is removed and `path` is untouched; when only the final
 * directory fsync fails the new file is in place but may not survive a
 * crash, and that error is returned.  A crash mid-call can leave a
 * "<path>.tmp.*" file behind.  Blocks on disk I/O: keep it off event loops.
 * Thread-safe for distinct paths; concurrent writers of one path each
 * succeed and the last rename wins. */
int rvc_write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode);

/* As rvc_write_file_atomic(), for a writer that streams: `fill(fd, arg)`
 * writes the content into the temporary file; its negative return aborts
 * (temporary file removed, `path` untouched) and is returned. */
int rvc_write_file_atomic_fn(const char *path, mode_t mode, rvc_fill_fn fill, void *arg);

/* Writes `s` to `f` as a JSON string with its quotes: '"' and '\\' are
 * backslash-escaped, bytes below 0x20 become \u00XX, every other byte is
 * copied as is (UTF-8, valid or not, passes through unchanged).  NULL is
 * written as "".  Errors are left in `f`'s error indicator (ferror). */
void rvc_json_str(FILE *f, const char *s);

/* The longest log line rvc_log writes (bytes, its newline included). */
#define RVC_LOG_LINE 2048

/* Writes one log line to stderr, the one format of both services (logfmt):
 *     ts=2026-11-24T10:27:45.123Z level=info key=value … msg="…"
 * ts is UTC with milliseconds; level a name ("error", "warn", "info",
 * "debug"); fields (NULL or "" for none) the event's key=value pairs as
 * the caller formatted them; msg the message, always last, quoted with \
 * " and control characters escaped (\n, \t, \xHH), so one call is one
 * line.  prefix (NULL for none) goes before it all: the daemon's "<N>"
 * journald priority.  One write(): lines of concurrent threads never
 * interleave.  A line longer than RVC_LOG_LINE is cut (its fields, then
 * its message).  Any thread; best effort (a failed write is dropped). */
void rvc_log(const char *level, const char *prefix, const char *fields, const char *msg);

/* The most drop-in files rvc_conf_dropins takes from one directory. */
#define RVC_CONF_DROPINS_MAX 256

/* Calls fn(file, ctx) for each "*.conf" in the drop-in directory of the
 * configuration file `path` ("<path>.d/", e.g. /etc/rearview/rearviewd.conf.d/),
 * in byte order of the names (strcmp: "10-a.conf" before "20-b.conf"), so
 * that read after `path` the later file's value wins.  Names starting with
 * "." and entries that are not regular files are skipped; a missing
 * directory has no drop-ins.  Stops at the first fn that returns non-zero.
 * Returns 0, fn's value, -E2BIG for more than RVC_CONF_DROPINS_MAX files
 * (none is read then), -ENOMEM, or -errno when the directory cannot be
 * read. */
int rvc_conf_dropins(const char *path, int (*fn)(const char *file, void *ctx), void *ctx);

/* 1 when stderr is the journal: JOURNAL_STREAM (which systemd sets for a
 * service whose stderr is connected to journald) names stderr's device and
 * inode as "DEV:INO"; 0 otherwise (unset, malformed, or another stream, as
 * when the service's stderr was redirected).  A line to the journal then
 * starts with its sd-daemon(3) priority, rvc_log_prefix(). */
int rvc_log_to_journal(void);

/* The sd-daemon(3) priority prefix of a level name into out[4]: "<3>"
 * (SD_ERR) for "error", "<4>" (SD_WARNING) for "warn", "<6>" (SD_INFO) for
 * "info", "<7>" (SD_DEBUG) for "debug" and any other name; returns out. */
const char *rvc_log_prefix(const char *level, char out[4]);

/* The negative errno for an sqlite3 result code, primary or extended (the
 * extended code's low byte is its primary code, so SQLITE_BUSY_SNAPSHOT
 * maps as SQLITE_BUSY):
 *   SQLITE_OK, SQLITE_ROW, SQLITE_DONE → 0
 *   SQLITE_NOMEM → -ENOMEM        SQLITE_BUSY, SQLITE_LOCKED → -EBUSY
 *   SQLITE_CANTOPEN → -ENOENT     SQLITE_READONLY, SQLITE_PERM → -EACCES
 *   SQLITE_FULL → -ENOSPC         SQLITE_CONSTRAINT → -EEXIST
 *   anything else → -EIO
 * Lives in its own object and uses sqlite3.h's constants only: it needs no
 * libsqlite3 at link time. */
int rvc_sqlite_errno(int rc);

/* `PROGRAM --version`: prints "PROGRAM (Rearview) VERSION" and the licence
 * line to stdout, VERSION being the build's one version (the top Makefile's
 * RV_VERSION, which also names the packages and the shared libraries).
 * Returns the exit status for main(): 0, or 1 when stdout could not be
 * written (closed, full). */
int rvc_print_version(const char *program);

#ifdef __cplusplus
}
#endif

#endif
