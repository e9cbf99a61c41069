/* SPDX-License-Identifier: Apache-2.0 */
/*
 * identity.c — a control peer's identity from the kernel and the
 * operator's app map (see identity.h).
 *
 * Invariants:
 *  - an identity is read only through a pidfd taken for the connecting
 *    process, and is trusted only if that pidfd still shows the process
 *    alive after every /proc read (a reused pid is never read as the peer);
 *  - the map is loaded only from files no one but root (or the daemon's
 *    own user) can write; an unsafe file refuses the whole map;
 *  - every rule names users or units (load refuses others), so no rule is
 *    satisfied by an executable path alone;
 *  - a declared id is never '@'- or '/'-qualified: "name@uidN" is written
 *    only by rvd_app_resolve, for the uid that asked.
 */
#include "identity.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* asm-generic/socket.h, Linux 6.5 */
#endif

#define MAP_MAX_RULES 4096 /* bounds what a map directory may cost */

bool rvd_app_id_valid(const char *s)
{
	size_t n = 0;

	if (!s ||
	    !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
		return false;
	for (; *s; s++, n++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == '+'))
			return false;
	}
	return n < RVD_APP_ID_MAX;
}

void rvd_app_map_free(struct rvd_app_map *m)
{
	free(m->rules);
	m->rules = NULL;
	m->n = 0;
}

/* ---- the map ------------------------------------------------------------- */

struct map_load {
	struct rvd_app_map *m;
	const char *path;
	size_t first; /* this file's first rule */
	int error;
};

static struct rvd_app_rule *rule_for(struct map_load *ld, const char *section)
{
	struct rvd_app_map *m = ld->m;
	struct rvd_app_rule *r;

	/* Consecutive lines of one section extend the same rule. */
	if (m->n > ld->first && !strcmp(m->rules[m->n - 1].app_id, section))
		return &m->rules[m->n - 1];
	if (m->n >= MAP_MAX_RULES)
		return NULL;
	r = realloc(m->rules, (m->n + 1) * sizeof(*r));
	if (!r)
		return NULL;
	m->rules = r;
	r = &m->rules[m->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->app_id, sizeof(r->app_id), "%s", section);
	return r;
}

static int parse_user(const char *v, uid_t *out)
{
	struct passwd pw, *res = NULL;
	char buf[4096], *end;
	unsigned long u;

	if (getpwnam_r(v, &pw, buf, sizeof(buf), &res) == 0 && res) {
		*out = res->pw_uid;
		return 0;
	}
	errno = 0;
	u = strtoul(v, &end, 10);
	if (errno || *v < '0' || *v > '9' || *end || u >= (unsigned long)(uid_t)-1)
		return -EINVAL;
	*out = (uid_t)u;
	return 0;
}

static int map_line(struct map_load *ld, const char *section, const char *key, const char *v)
{
	struct rvd_app_rule *r;

	if (!rvd_app_id_valid(section))
		return -EINVAL;
	r = rule_for(ld, section);
	if (!r)
		return -ENOMEM;
	if (!strcmp(key, "user")) {
		if (r->nuids >= RVD_RULE_EACH || parse_user(v, &r->uids[r->nuids]) < 0)
			return -EINVAL;
		r->nuids++;
		return 0;
	}
	if (!strcmp(key, "exe")) {
		if (r->nexes >= RVD_RULE_EACH || v[0] != '/' || strlen(v) >= RVD_PATH_MAX)
			return -EINVAL;
		snprintf(r->exes[r->nexes++], RVD_PATH_MAX, "%s", v);
		return 0;
	}
	if (!strcmp(key, "unit")) {
		if (r->nunits >= RVD_RULE_EACH || !*v || strchr(v, '/') ||
		    strlen(v) >= RVD_UNIT_MAX)
			return -EINVAL;
		snprintf(r->units[r->nunits++], RVD_UNIT_MAX, "%s", v);
		return 0;
	}
	return -ENOENT;
}

static int map_line_cb(void *user, const char *section, const char *key, const char *v)
{
	struct map_load *ld = user;
	int rc = map_line(ld, section, key, v);

	if (rc == -ENOENT)
		rvd_err("%s: unknown key [%s] %s", ld->path, section, key);
	else if (rc == -ENOMEM)
		rvd_err("%s: too many rules (at most %d in all)", ld->path, MAP_MAX_RULES);
	else if (rc < 0 && !rvd_app_id_valid(section))
		rvd_err("%s: '[%s]' is not an app id (1-63 of A-Z a-z 0-9 . _ - +)", ld->path,
			section);
	else if (rc < 0)
		rvd_err("%s: bad value for [%s] %s: '%s'", ld->path, section, key, v);
	if (rc < 0 && !ld->error)
		ld->error = rc == -ENOMEM ? -ENOMEM : -EINVAL;
	return 1;
}

/* Owned by root or us, writable by no one else.  0, or -EPERM (logged). */
static int safe_owner(const char *path, const struct stat *st)
{
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		rvd_err("%s: refused: owned by uid %u, not root (anyone owning the app map "
			"could speak for any app)",
			path, (unsigned)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		rvd_err("%s: refused: writable by %s (mode %03o); the app map must be "
			"writable by its owner only",
			path, st->st_mode & S_IWOTH ? "others" : "its group",
			(unsigned)(st->st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

static int conf_name(const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	return de->d_name[0] != '.' && n > 5 && !strcmp(de->d_name + n - 5, ".conf");
}

static int load_file(struct rvd_app_map *m, int dfd, const char *dir, const char *name)
{
	char path[RVD_PATH_MAX + 256];
	struct map_load ld = {m, path, m->n, 0};
	struct stat st;
	FILE *f;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		rvd_err("%s: %s", path, strerror(-rc));
		return rc == -ELOOP ? -EPERM : rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rvd_err("%s: refused: not a regular file", path);
		close(fd);
		return -EPERM;
	}
	if ((rc = safe_owner(path, &st)) < 0) {
		close(fd);
		return rc;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	rc = ini_parse_file(f, map_line_cb, &ld);
	fclose(f);
	if (rc > 0) {
		rvd_err("%s:%d: syntax error", path, rc);
		return -EINVAL;
	}
	if (rc < 0)
		return -ENOMEM;
	if (ld.error)
		return ld.error;
	for (size_t i = ld.first; i < m->n; i++) {
		if (!m->rules[i].nuids && !m->rules[i].nunits) {
			rvd_err("%s: [%s] names no user and no unit: an executable alone "
				"proves nothing (anyone may run it)",
				path, m->rules[i].app_id);
			return -EINVAL;
		}
	}
	return 0;
}

int rvd_app_map_load(struct rvd_app_map *m, const char *dir)
{
	struct dirent **names = NULL;
	struct stat st;
	int dfd, n, rc = 0;

	rvd_app_map_free(m);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		rvd_err("%s: %s", dir, strerror(-rc));
		return rc;
	}
	if (fstat(dfd, &st) < 0 || (rc = safe_owner(dir, &st)) < 0) {
		close(dfd);
		return rc < 0 ? rc : -EIO;
	}
	n = scandirat(dfd, ".", &names, conf_name, alphasort);
	if (n < 0) {
		rc = -errno;
		rvd_err("%s: %s", dir, strerror(-rc));
		close(dfd);
		return rc;
	}
	for (int i = 0; i < n; i++) {
		if (rc == 0)
			rc = load_file(m, dfd, dir, names[i]->d_name);
		free(names[i]);
	}
	free(names);
	close(dfd);
	if (rc < 0)
		rvd_app_map_free(m);
	return rc;
}

/* ---- the peer ------------------------------------------------------------ */

int rvd_identity_pidfd(int sock, const struct ucred *cred)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
		return pidfd;
	if (errno != ENOPROTOOPT && errno != EINVAL)
		return -errno; /* ESRCH: the peer is already gone */
	pidfd = pidfd_open(cred->pid, 0);
	return pidfd >= 0 ? pidfd : -errno;
}

void rvd_unit_from_cgroup(const char *text, char *unit, size_t cap)
{
	const char *path = NULL, *line = text;

	assert(cap > 0);
	unit[0] = '\0';
	/* cgroup v2's "0::/path" wins over v1's "N:name=systemd:/path". */
	while (line && *line) {
		if (!strncmp(line, "0::", 3)) {
			path = line + 3;
			break;
		}
		const char *c1 = strchr(line, ':');

		if (c1 && !strncmp(c1 + 1, "name=systemd:", 13))
			path = c1 + 14;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	if (!path || *path != '/' || !strncmp(path, "/user.slice", 11))
		return;
	while (*path == '/') {
		const char *start = ++path;
		size_t n = strcspn(start, "/\n");

		if ((n > 8 && !memcmp(start + n - 8, ".service", 8)) ||
		    (n > 6 && !memcmp(start + n - 6, ".scope", 6))) {
			if (n < cap)
				snprintf(unit, cap, "%.*s", (int)n, start);
			return;
		}
		path = start + n;
	}
}

/* Reads at most cap-1 bytes of `name` in the directory `dfd`, NUL-ended. */
static ssize_t read_small(int dfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static bool pidfd_alive(int pidfd)
{
	struct pollfd pf = {.fd = pidfd, .events = POLLIN};

	/* A pidfd turns readable when its process exits. */
	return poll(&pf, 1, 0) == 0;
}

int rvd_identity_read(int pidfd, const struct ucred *cred, struct rvd_identity *id)
{
	char dir[32], buf[4096], *at;
	unsigned long ruid, euid;
	ssize_t n;
	int dfd, rc = 0;

	memset(id, 0, sizeof(*id));
	id->pid = cred->pid;
	id->uid = cred->uid;
	id->gid = cred->gid;
	if (pidfd < 0 || !pidfd_alive(pidfd))
		return -ESRCH;
	snprintf(dir, sizeof(dir), "/proc/%d", (int)cred->pid);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = readlinkat(dfd, "exe", id->exe, sizeof(id->exe) - 1);
	if (n > 0) {
		id->exe[n] = '\0';
		/* A binary replaced by an upgrade still runs as the path it had. */
		if (n > 10 && !strcmp(id->exe + n - 10, " (deleted)"))
			id->exe[n - 10] = '\0';
	} else {
		id->exe[0] = '\0'; /* kernel threads, or not ours to read */
	}
	if (read_small(dfd, "cgroup", buf, sizeof(buf)) > 0)
		rvd_unit_from_cgroup(buf, id->unit, sizeof(id->unit));
	n = read_small(dfd, "status", buf, sizeof(buf));
	at = n > 0 ? strstr(buf, "\nUid:") : NULL;
	if (!at || sscanf(at, "\nUid: %lu %lu", &ruid, &euid) != 2)
		rc = n < 0 ? (int)n : -EIO;
	else if (euid != (unsigned long)cred->uid)
		rc = -EPERM;
	close(dfd);
	/* Still the process that connected: everything above was read from it. */
	if (!pidfd_alive(pidfd))
		return -ESRCH;
	return rc;
}

/* ---- the decision -------------------------------------------------------- */

static bool rule_matches(const struct rvd_app_rule *r, const struct rvd_identity *id)
{
	bool ok;

	ok = !r->nuids;
	for (unsigned i = 0; !ok && i < r->nuids; i++)
		ok = r->uids[i] == id->uid;
	if (!ok)
		return false;
	ok = !r->nexes;
	for (unsigned i = 0; !ok && i < r->nexes; i++)
		ok = id->exe[0] && !strcmp(r->exes[i], id->exe);
	if (!ok)
		return false;
	ok = !r->nunits;
	for (unsigned i = 0; !ok && i < r->nunits; i++)
		ok = id->unit[0] && !strcmp(r->units[i], id->unit);
	return ok;
}

/* The executable's base name as an app id: other bytes become '_'. */
static void exe_name(const struct rvd_identity *id, char *out, size_t cap)
{
	const char *base = strrchr(id->exe, '/');
	size_t k = 0;

	base = base ? base + 1 : id->exe;
	if (!*base)
		base = "unknown";
	for (; base[k] && k + 1 < cap; k++) {
		char c = base[k];

		out[k] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					 (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+'
				 ? c
				 : '_';
	}
	out[k] = '\0';
	if (!((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= 'A' && out[0] <= 'Z') ||
	      (out[0] >= '0' && out[0] <= '9')))
		out[0] = 'x';
}

enum rvd_app_verdict rvd_app_resolve(const struct rvd_app_map *m, int unlisted,
				     const struct rvd_identity *id, const char *declared, char *out,
				     size_t cap)
{
	char name[RVD_APP_ID_MAX];
	const struct rvd_app_rule *only = NULL;
	bool listed = false;
	size_t matches = 0;

	if (declared && *declared) {
		if (!rvd_app_id_valid(declared)) {
			snprintf(out, cap, "'%.63s' is not a valid app id", declared);
			return RVD_APP_REFUSED;
		}
		snprintf(name, sizeof(name), "%s", declared);
	} else {
		/* Nothing declared (the tracer declares nothing): the one rule
		 * this identity matches names it. */
		for (size_t i = 0; i < m->n; i++)
			if (rule_matches(&m->rules[i], id) &&
			    (!only || strcmp(only->app_id, m->rules[i].app_id))) {
				only = &m->rules[i];
				matches++;
			}
		if (matches == 1) {
			snprintf(out, cap, "%s", only->app_id);
			return RVD_APP_ACCEPTED;
		}
		exe_name(id, name, sizeof(name));
	}
	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->rules[i].app_id, name))
			continue;
		listed = true;
		if (rule_matches(&m->rules[i], id)) {
			snprintf(out, cap, "%s", name);
			return RVD_APP_ACCEPTED;
		}
	}
	if (listed) {
		snprintf(out, cap,
			 "app id %s belongs to another identity (peer uid %u, exe %s, unit %s)",
			 name, (unsigned)id->uid, id->exe[0] ? id->exe : "?",
			 id->unit[0] ? id->unit : "none");
		return RVD_APP_REFUSED;
	}
	/* Unlisted.  Root could write the map itself: its word is taken. */
	if (id->uid == 0) {
		snprintf(out, cap, "%s", name);
		return RVD_APP_ACCEPTED;
	}
	if (unlisted == RVD_UNLISTED_REFUSE) {
		snprintf(out, cap, "app id %s is not in the app map (peer uid %u, exe %s)", name,
			 (unsigned)id->uid, id->exe[0] ? id->exe : "?");
		return RVD_APP_REFUSED;
	}
	/* "name@uidN" fits in 63: the name gives way. */
	snprintf(out, cap, "%.*s@uid%u", (int)(RVD_APP_ID_MAX - 1 - 14), name, (unsigned)id->uid);
	return RVD_APP_QUALIFIED;
}
