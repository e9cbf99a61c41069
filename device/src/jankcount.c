/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jankcount.c — frames and late frames per (app, version, day) in a fixed
 * table (see jankcount.h).
 *
 * Invariants: rows[0..n) are in use, no two share (app, ver, day); at most
 * RVD_JANKC_APP_ROWS of them name an app other than RVD_JANKC_OTHER, and
 * every day is within RVD_JANKC_DAYS of c->newest, so the RVD_JANKC_DAYS
 * spare rows always hold each day's "other" row; late <= frames,
 * sent_frames <= frames and sent_late <= late in every row.
 */
#include "jankcount.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rvd_jankc_init(struct rvd_jank_counts *c)
{
	memset(c, 0, sizeof(*c));
}

uint32_t rvd_jankc_day(int64_t realtime_s)
{
	return realtime_s <= 0 ? 0 : (uint32_t)(realtime_s / 86400);
}

static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       strchr("._+:@/-", ch) != NULL;
}

/* src cut to cap - 1 bytes, other characters as '_'. */
static void clean_name(char *dst, size_t cap, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < cap; i++)
		dst[i] = name_char(src[i]) ? src[i] : '_';
	dst[i] = '\0';
}

static void remove_row(struct rvd_jank_counts *c, unsigned i)
{
	assert(i < c->n);
	c->rows[i] = c->rows[--c->n];
	memset(&c->rows[c->n], 0, sizeof(c->rows[0]));
}

/* Drops the rows of days more than RVD_JANKC_DAYS - 1 before c->newest. */
static void expire(struct rvd_jank_counts *c)
{
	for (unsigned i = 0; i < c->n;) {
		if (c->rows[i].day + RVD_JANKC_DAYS <= c->newest)
			remove_row(c, i);
		else
			i++;
	}
}

static int find(const struct rvd_jank_counts *c, const char *app, const char *ver, uint32_t day)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->rows[i].day == day && strcmp(c->rows[i].app, app) == 0 &&
		    strcmp(c->rows[i].ver, ver) == 0)
			return (int)i;
	return -1;
}

static unsigned named_rows(const struct rvd_jank_counts *c)
{
	unsigned k = 0;

	for (unsigned i = 0; i < c->n; i++)
		k += strcmp(c->rows[i].app, RVD_JANKC_OTHER) != 0;
	return k;
}

void rvd_jankc_add(struct rvd_jank_counts *c, const char *app, const char *ver, uint32_t day,
		   bool late)
{
	char a[RVD_JANKC_APP_MAX] = {0}, v[RVD_JANKC_VER_MAX] = {0};
	struct rvd_jank_row *r;
	int i;

	if (day > c->newest) {
		c->newest = day;
		expire(c);
	} else if (day + RVD_JANKC_DAYS <= c->newest) {
		c->dropped++;
		return;
	}
	clean_name(a, sizeof(a), app);
	clean_name(v, sizeof(v), ver);
	if (!a[0])
		snprintf(a, sizeof(a), "%s", RVD_JANKC_OTHER);
	i = find(c, a, v, day);
	if (i < 0 && strcmp(a, RVD_JANKC_OTHER) != 0 && named_rows(c) >= RVD_JANKC_APP_ROWS) {
		memset(a, 0, sizeof(a));
		memset(v, 0, sizeof(v));
		snprintf(a, sizeof(a), "%s", RVD_JANKC_OTHER);
		i = find(c, a, v, day);
	}
	if (i < 0) {
		/* The spare rows hold one "other" row per day kept. */
		assert(c->n < RVD_JANKC_ROWS);
		i = (int)c->n++;
		r = &c->rows[i];
		memset(r, 0, sizeof(*r));
		memcpy(r->app, a, sizeof(a));
		memcpy(r->ver, v, sizeof(v));
		r->day = day;
	}
	r = &c->rows[i];
	if (r->frames >= RVD_JANKC_MAX_FRAMES) {
		c->dropped++;
		return;
	}
	r->frames++;
	r->late += late;
	c->dirty = true;
}

long rvd_jankc_format(struct rvd_jank_counts *c, char *out, size_t cap)
{
	size_t len = 0;
	int k;

	k = snprintf(out, cap, "rvjank 1\n");
	if (k < 0 || (size_t)k >= cap)
		return -ENOSPC;
	len = (size_t)k;
	for (unsigned i = 0; i < c->n; i++) {
		const struct rvd_jank_row *r = &c->rows[i];

		k = snprintf(out + len, cap - len,
			     "%" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s %s\n",
			     r->day, r->frames, r->late, r->sent_frames, r->sent_late, r->app,
			     r->ver[0] ? r->ver : "-");
		if (k < 0 || (size_t)k >= cap - len)
			return -ENOSPC;
		len += (size_t)k;
	}
	c->dirty = false;
	return (long)len;
}

static bool valid_name(const char *s, size_t cap)
{
	size_t n = strlen(s);

	if (n == 0 || n >= cap)
		return false;
	if (strcmp(s, RVD_JANKC_OTHER) == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i]))
			return false;
	return true;
}

int rvd_jankc_parse(struct rvd_jank_counts *c, const char *buf, size_t len, char *err, size_t errsz)
{
	struct rvd_jank_counts t;
	char line[256], app[RVD_JANKC_APP_MAX + 1], ver[RVD_JANKC_VER_MAX + 1];
	size_t pos = 0, lineno = 0;
	unsigned named = 0;

	assert(errsz >= 1);
	rvd_jankc_init(&t);
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		struct rvd_jank_row *r;
		int used = 0;

		lineno++;
		if (n >= sizeof(line)) {
			snprintf(err, errsz, "line %zu: too long", lineno);
			return -EINVAL;
		}
		memcpy(line, buf + pos, n);
		line[n] = '\0';
		pos += n + (nl != NULL);
		if (memchr(line, '\0', n)) {
			snprintf(err, errsz, "line %zu: a NUL byte", lineno);
			return -EINVAL;
		}
		if (lineno == 1) {
			if (strcmp(line, "rvjank 1") != 0) {
				snprintf(err, errsz, "not a jank counts file (header \"%.20s\")",
					 line);
				return -EINVAL;
			}
			continue;
		}
		if (t.n >= RVD_JANKC_ROWS) {
			snprintf(err, errsz, "more than %u rows", RVD_JANKC_ROWS);
			return -EINVAL;
		}
		r = &t.rows[t.n];
		if (sscanf(line,
			   "%" SCNu32 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			   " %64s %32s%n",
			   &r->day, &r->frames, &r->late, &r->sent_frames, &r->sent_late, app, ver,
			   &used) != 7 ||
		    (size_t)used != n) {
			snprintf(err, errsz,
				 "line %zu: not \"day frames late sent_frames "
				 "sent_late app version\"",
				 lineno);
			return -EINVAL;
		}
		if (r->frames > RVD_JANKC_MAX_FRAMES || r->late > r->frames ||
		    r->sent_frames > r->frames || r->sent_late > r->late || r->day == 0) {
			snprintf(err, errsz, "line %zu: impossible counts", lineno);
			return -EINVAL;
		}
		if (!valid_name(app, RVD_JANKC_APP_MAX) ||
		    (strcmp(ver, "-") != 0 && !valid_name(ver, RVD_JANKC_VER_MAX))) {
			snprintf(err, errsz, "line %zu: a bad app id or version", lineno);
			return -EINVAL;
		}
		memcpy(r->app, app, strlen(app) + 1);
		if (strcmp(ver, "-") != 0)
			memcpy(r->ver, ver, strlen(ver) + 1);
		if (find(&t, r->app, r->ver, r->day) >= 0) {
			snprintf(err, errsz, "line %zu: a duplicate row", lineno);
			return -EINVAL;
		}
		named += strcmp(r->app, RVD_JANKC_OTHER) != 0;
		if (named > RVD_JANKC_APP_ROWS) {
			snprintf(err, errsz, "more than %u named apps", RVD_JANKC_APP_ROWS);
			return -EINVAL;
		}
		if (r->day > t.newest)
			t.newest = r->day;
		t.n++;
	}
	if (lineno == 0) {
		snprintf(err, errsz, "empty");
		return -EINVAL;
	}
	expire(&t);
	*c = t;
	return 0;
}

static bool row_due(const struct rvd_jank_row *r)
{
	return r->frames != r->sent_frames || r->late != r->sent_late;
}

bool rvd_jankc_due(const struct rvd_jank_counts *c)
{
	for (unsigned i = 0; i < c->n; i++)
		if (row_due(&c->rows[i]))
			return true;
	return false;
}

unsigned rvd_jankc_snapshot(const struct rvd_jank_counts *c, struct rvd_jank_row *out, unsigned max)
{
	unsigned k = 0;

	for (unsigned i = 0; i < c->n && k < max; i++)
		if (row_due(&c->rows[i]))
			out[k++] = c->rows[i];
	return k;
}

void rvd_jankc_acked(struct rvd_jank_counts *c, const struct rvd_jank_row *rows, unsigned n,
		     uint32_t today)
{
	for (unsigned k = 0; k < n; k++) {
		int i = find(c, rows[k].app, rows[k].ver, rows[k].day);

		/* Gone meanwhile, or gone and counted afresh (the clock went
		 * back to a day already sent): nothing to mark. */
		if (i < 0 || rows[k].frames > c->rows[i].frames || rows[k].late > c->rows[i].late)
			continue;
		c->rows[i].sent_frames = rows[k].frames;
		c->rows[i].sent_late = rows[k].late;
	}
	for (unsigned i = 0; i < c->n;) {
		if (c->rows[i].day < today && !row_due(&c->rows[i]))
			remove_row(c, i);
		else
			i++;
	}
	c->dirty = true;
}

const char *rvd_jankc_app_of(struct rvd_jank_pids *pc, pid_t pid)
{
	char path[40], buf[16];
	unsigned slot;
	ssize_t n;
	int fd;

	for (unsigned i = 0; i < RVD_JANKC_PIDS; i++)
		if (pc->pid[i] == pid && pid > 0)
			return pc->app[i];
	if (pid <= 0)
		return "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return "";
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	slot = pc->next++ % RVD_JANKC_PIDS;
	pc->pid[slot] = pid;
	memcpy(pc->app[slot], buf, sizeof(buf));
	pc->ver[slot][0] = '\0';
	return pc->app[slot];
}

const char *rvd_jankc_version_of(const struct rvd_jank_pids *pc, pid_t pid)
{
	for (unsigned i = 0; i < RVD_JANKC_PIDS; i++)
		if (pc->pid[i] == pid && pid > 0)
			return pc->ver[i];
	return "";
}

bool rvd_jankc_version_ok(const char *ver)
{
	size_t n = ver ? strlen(ver) : 0;

	if (n == 0 || n >= RVD_JANKC_VER_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ver[i] <= ' ' || ver[i] > '~')
			return false;
	return true;
}

int rvd_jankc_set_version(struct rvd_jank_pids *pc, pid_t pid, const char *ver)
{
	assert(rvd_jankc_version_ok(ver));
	if (!rvd_jankc_app_of(pc, pid)[0])
		return -ESRCH;
	for (unsigned i = 0; i < RVD_JANKC_PIDS; i++)
		if (pc->pid[i] == pid) {
			memcpy(pc->ver[i], ver, strlen(ver) + 1);
			return 0;
		}
	return -ESRCH; /* not reached: app_of just cached it */
}

void rvd_jankc_forget(struct rvd_jank_pids *pc, pid_t pid)
{
	for (unsigned i = 0; i < RVD_JANKC_PIDS; i++)
		if (pc->pid[i] == pid)
			pc->pid[i] = 0;
}
