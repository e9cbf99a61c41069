/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jankcount.h — frames and late frames per (app id, app version, UTC day)
 * of every app that sends FrameReports, traced or not: the fleet's jank
 * rate per app.  Counts only — no names beyond the app id, no time finer
 * than the day.
 *
 * Memory is a fixed table (struct rvd_jank_counts, no allocation): at most
 * RVD_JANKC_APP_ROWS (app, version, day) rows; apps beyond them are counted
 * in that day's RVD_JANKC_OTHER row (RVD_JANKC_DAYS rows are kept for those).
 * Days older than RVD_JANKC_DAYS before the newest are dropped, sent or not.
 *
 * The table is persisted as a small text file (rvd_jankc_format /
 * rvd_jankc_parse) through the spool's durable settings write; the parser
 * refuses a hostile or damaged file as a whole.
 *
 * Loop thread only (the daemon's); no global state.
 */
#ifndef RVD_JANKCOUNT_H
#define RVD_JANKCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RVD_JANKC_DAYS	   8u  /* days kept: today and the 7 before */
#define RVD_JANKC_APP_ROWS 56u /* rows of named apps */
#define RVD_JANKC_ROWS	   (RVD_JANKC_APP_ROWS + RVD_JANKC_DAYS)
#define RVD_JANKC_APP_MAX  64u /* bytes of an app id, NUL included */
#define RVD_JANKC_VER_MAX  32u /* bytes of a version, NUL included */
#define RVD_JANKC_OTHER	   "(other)"
/* Frames counted per row per day at most (a 1 kHz display all day is 86.4
 * M): what the server also refuses above. */
#define RVD_JANKC_MAX_FRAMES 1000000000ull
/* The persisted file's size at most (rvd_jankc_format never writes more). */
#define RVD_JANKC_FILE_MAX (RVD_JANKC_ROWS * 160u + 64u)

struct rvd_jank_row {
	char app[RVD_JANKC_APP_MAX]; /* "" only in unused rows */
	char ver[RVD_JANKC_VER_MAX]; /* "" when unknown */
	uint32_t day;		     /* days since 1970-01-01 UTC */
	uint64_t frames, late;	     /* late <= frames */
	/* What the server acknowledged last for this row (it replaces the
	 * row's counts with what is sent, so a retry never doubles). */
	uint64_t sent_frames, sent_late;
};

struct rvd_jank_counts {
	struct rvd_jank_row rows[RVD_JANKC_ROWS];
	unsigned n;	  /* rows in use, rows[0..n) */
	uint32_t newest;  /* the newest day seen (0: none) */
	uint64_t dropped; /* frames not counted: a day too old */
	bool dirty;	  /* changed since the last rvd_jankc_format */
};

void rvd_jankc_init(struct rvd_jank_counts *c);

/* The UTC day of a CLOCK_REALTIME time in seconds. */
uint32_t rvd_jankc_day(int64_t realtime_s);

/*
 * Counts one frame (late or not) of `app` (NUL-terminated, cut to
 * RVD_JANKC_APP_MAX - 1 bytes; characters other than [A-Za-z0-9._+:@/-]
 * become '_'), version `ver` (NULL or "" unknown, treated the same way) on
 * `day`.  A new day drops the rows more than RVD_JANKC_DAYS - 1 days older;
 * a frame of such an old day is only counted in c->dropped.  A new app when
 * the named rows are full goes to the day's RVD_JANKC_OTHER row.  O(rows),
 * no allocation.
 */
void rvd_jankc_add(struct rvd_jank_counts *c, const char *app, const char *ver, uint32_t day,
		   bool late);

/*
 * The table as text into out[0..cap): a header line "rvjank 1" then one
 * line per row "day frames late sent_frames sent_late app version" (version
 * "-" when unknown).  Clears c->dirty.  Returns the length, or -ENOSPC when
 * cap is short (RVD_JANKC_FILE_MAX is always enough).
 */
long rvd_jankc_format(struct rvd_jank_counts *c, char *out, size_t cap);

/*
 * Replaces *c with the table in buf[0..len) (rvd_jankc_format's text).  A
 * file that does not parse — a bad header, too many rows, a count above
 * RVD_JANKC_MAX_FRAMES, late above frames, sent above counted, a bad name,
 * a duplicate row — is refused whole: -EINVAL, *c untouched, err (errsz >=
 * 1) says why.
 */
int rvd_jankc_parse(struct rvd_jank_counts *c, const char *buf, size_t len, char *err,
		    size_t errsz);

/* Whether any row changed since the server last acknowledged it. */
bool rvd_jankc_due(const struct rvd_jank_counts *c);

/*
 * Copies into out[0..max) the rows that changed since their last
 * acknowledgement (what an upload sends).  Returns how many.
 */
unsigned rvd_jankc_snapshot(const struct rvd_jank_counts *c, struct rvd_jank_row *out,
			    unsigned max);

/*
 * The server stored the n rows of a snapshot: each row still in the table
 * remembers those counts as sent; a row of a day before `today` whose
 * counts are all sent is removed.  Marks the table dirty.
 */
void rvd_jankc_acked(struct rvd_jank_counts *c, const struct rvd_jank_row *rows, unsigned n,
		     uint32_t today);

/*
 * The app id of a process that never registered: the name in
 * /proc/<pid>/comm, remembered in a small cache (RVD_JANKC_PIDS pids, the
 * oldest replaced) so a frame costs no read.  "" when the process is gone.
 */
#define RVD_JANKC_PIDS 32u
struct rvd_jank_pids {
	pid_t pid[RVD_JANKC_PIDS];
	char app[RVD_JANKC_PIDS][16];
	char ver[RVD_JANKC_PIDS][RVD_JANKC_VER_MAX]; /* its AppVersion, "" none */
	unsigned next;
};
const char *rvd_jankc_app_of(struct rvd_jank_pids *pc, pid_t pid);
/* The version that never-registered `pid` said it runs (AppVersion on
 * events.sock), "" when it said none or is not in the cache. */
const char *rvd_jankc_version_of(const struct rvd_jank_pids *pc, pid_t pid);
/* Remembers `ver` (rvd_jankc_version_ok) as `pid`'s version, caching its
 * name as rvd_jankc_app_of does.  0, or -ESRCH when the process is gone. */
int rvd_jankc_set_version(struct rvd_jank_pids *pc, pid_t pid, const char *ver);
/* Whether `ver` is an app version a peer may declare: 1..RVD_JANKC_VER_MAX - 1
 * bytes of printable ASCII without space. */
bool rvd_jankc_version_ok(const char *ver);
/* Forgets `pid` (it exited). */
void rvd_jankc_forget(struct rvd_jank_pids *pc, pid_t pid);

#endif
