/* SPDX-License-Identifier: Apache-2.0 */
/*
 * identity.h — who is speaking on control.sock, from the kernel, and which
 * app ids that identity may speak for.
 *
 * A peer's identity is its SO_PEERCRED uid/gid/pid (fixed at connect()),
 * the executable /proc/<pid>/exe names and the systemd system unit its
 * cgroup lies in, read while a pidfd proves the pid still names the process
 * that connected.  The operator's app map (NAME.conf files in apps.d, root-owned, not
 * writable by group or others) says which identity owns which app id; a
 * declared app id is accepted only where the identity owns it.  See
 * device/README.md, "Who may speak for an app".
 */
#ifndef RVD_IDENTITY_H
#define RVD_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "config.h"

#define RVD_APP_ID_MAX 64 /* with the NUL; = rvd_process.app_id */
#define RVD_UNIT_MAX   128
#define RVD_RULE_EACH  8 /* users, executables and units per rule */

/* One app id and the identities that own it: a peer matches when its uid
 * is one of `uids` (if any), its executable one of `exes` (if any) and its
 * unit one of `units` (if any).  Every rule names users or units: an
 * executable alone proves nothing (anyone may exec it). */
struct rvd_app_rule {
	char app_id[RVD_APP_ID_MAX];
	uid_t uids[RVD_RULE_EACH];
	unsigned nuids;
	char exes[RVD_RULE_EACH][RVD_PATH_MAX];
	unsigned nexes;
	char units[RVD_RULE_EACH][RVD_UNIT_MAX];
	unsigned nunits;
};

struct rvd_app_map {
	struct rvd_app_rule *rules; /* owned */
	size_t n;
};

/* What the kernel says about a control peer. */
struct rvd_identity {
	pid_t pid;
	uid_t uid; /* SO_PEERCRED's effective uid, = /proc's at the check */
	gid_t gid;
	char exe[RVD_PATH_MAX];	 /* /proc/<pid>/exe, " (deleted)" cut; "" unknown */
	char unit[RVD_UNIT_MAX]; /* the system unit ("foo.service"), "" none */
};

/* How rvd_app_resolve decided. */
enum rvd_app_verdict {
	RVD_APP_ACCEPTED,  /* the map gives the identity this id, or root named it */
	RVD_APP_QUALIFIED, /* unlisted: the id names its uid ("name@uid1000") */
	RVD_APP_REFUSED,   /* the id belongs to another identity, or is invalid */
};

/*
 * Loads every "*.conf" in `dir` (sorted by name) into `m` (emptied first).
 * A missing directory is an empty map (0).  The directory and each file
 * must be owned by root or this process's euid and writable by no one
 * else: otherwise -EPERM and nothing is loaded (the reason is logged, naming
 * the file).  A syntax error, an unknown key, an unknown user, a rule with
 * neither `user` nor `unit`, or an invalid app id: -EINVAL (logged).
 * -ENOMEM.  Format: README.md and deploy/rearviewd-apps.conf.example.
 */
int rvd_app_map_load(struct rvd_app_map *m, const char *dir);
void rvd_app_map_free(struct rvd_app_map *m);

/*
 * A pidfd for the process that connected on `sock`: SO_PEERPIDFD (Linux ≥
 * 6.5: the very process, however late we ask), else pidfd_open(cred->pid)
 * (a pid reused between connect() and now is caught by the uid check of
 * rvd_identity_read).  Returns the descriptor (close it) or a negative
 * errno (-ESRCH: the peer is gone).
 */
int rvd_identity_pidfd(int sock, const struct ucred *cred);

/*
 * Fills *id for the peer with credentials `cred` and pidfd `pidfd`: the
 * executable and unit are read from /proc/<pid>, then the pidfd must show
 * the process still alive (so what was read was that process's) and its
 * effective uid must still be cred->uid.  Returns 0, -ESRCH (exited, or
 * the pid now names another process), -EPERM (credentials changed since
 * connect), or another negative errno reading /proc.
 */
int rvd_identity_read(int pidfd, const struct ucred *cred, struct rvd_identity *id);

/*
 * The system unit of a /proc/<pid>/cgroup text: the first "*.service" or
 * "*.scope" component of the cgroup-v2 path (or of the name=systemd v1
 * hierarchy), "" for a process under user.slice (a user may name units
 * there as they like) or in no unit.  Writes at most `cap` bytes.
 */
void rvd_unit_from_cgroup(const char *text, char *unit, size_t cap);

/*
 * Decides which app id the peer `id` speaks for, given the id it declared
 * (NULL or "": none; then a rule the identity alone matches names it, else
 * its executable's base name).  Writes the app id (or, when refused, why)
 * into `out` (`cap` bytes).  `unlisted`: RVD_UNLISTED_* (config.h).  Loop thread; no
 * I/O.
 */
enum rvd_app_verdict rvd_app_resolve(const struct rvd_app_map *m, int unlisted,
				     const struct rvd_identity *id, const char *declared, char *out,
				     size_t cap);

/* True for a valid declared app id: 1–63 of [A-Za-z0-9._+-], starting
 * with a letter or digit ('@' and '/' stay the daemon's). */
bool rvd_app_id_valid(const char *s);

#endif
