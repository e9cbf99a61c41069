/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_harness.h — a private PostgreSQL 15 server for one test program.
 *
 * pgh_start: a temporary directory owned by the `postgres` user (initdb
 * refuses root; as non-root the caller's own user runs it), initdb -A trust,
 * pg_ctl start listening only on a Unix socket in that directory (port
 * number picked free by bind(0), listen_addresses=''), then pg_isready
 * polled until it answers (generous deadline).  pgh_fresh_db creates an
 * empty database and gives its libpq URI.  pgh_stop stops the server
 * (fast mode) and removes the directory.  No system service, no fixed port.
 * Header-only (static functions): include it in one test file.
 *
 * Errors: pgh_start returns -ENOENT when the PostgreSQL binaries or the
 * postgres user are missing (the caller skips, visibly), -EIO when the
 * server did not start (h->why says which step); pgh_fresh_db 0 or -EIO.
 * Not thread-safe: call from the test's main thread.
 */
#ifndef RV_PG_HARNESS_H
#define RV_PG_HARNESS_H

#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define PGH_BIN "/usr/lib/postgresql/15/bin"

struct pgh {
	char dir[64];  /* the temporary directory: data/, the socket, log */
	int port;      /* names the socket only: nothing listens on TCP */
	int started;   /* pg_ctl start succeeded: pgh_stop stops it */
	char why[256]; /* what failed, for the skip or failure message */
	unsigned ndbs; /* databases made by pgh_fresh_db */
};

/* Runs cmd (a shell command line) as the postgres user when root. */
static int pgh_sh(const struct pgh *h, const char *cmd)
{
	char line[1024];

	if (geteuid() == 0)
		snprintf(line, sizeof line,
			 "runuser -u postgres -- sh -c '%s' >>%s/harness.log 2>&1", cmd, h->dir);
	else
		snprintf(line, sizeof line, "sh -c '%s' >>%s/harness.log 2>&1", cmd, h->dir);
	return system(line) == 0 ? 0 : -EIO;
}

/* A TCP port number nobody holds now (bind to port 0, read it back). */
static int pgh_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int pgh_start(struct pgh *h)
{
	char cmd[768];
	struct passwd *pw = geteuid() == 0 ? getpwnam("postgres") : NULL;

	memset(h, 0, sizeof *h);
	if (access(PGH_BIN "/initdb", X_OK) || access(PGH_BIN "/pg_ctl", X_OK)) {
		snprintf(h->why, sizeof h->why,
			 "no PostgreSQL 15 in " PGH_BIN " (apt-get install postgresql-15)");
		return -ENOENT;
	}
	if (geteuid() == 0 && !pw) {
		snprintf(h->why, sizeof h->why, "no postgres user (postgresql-15 creates it)");
		return -ENOENT;
	}
	snprintf(h->dir, sizeof h->dir, "/tmp/rvs-pg-XXXXXX");
	if (!mkdtemp(h->dir) || (pw && chown(h->dir, pw->pw_uid, pw->pw_gid))) {
		snprintf(h->why, sizeof h->why, "temporary directory: %s", strerror(errno));
		return -EIO;
	}
	if ((h->port = pgh_free_port()) < 0) {
		snprintf(h->why, sizeof h->why, "no free port");
		return -EIO;
	}
	/* --no-sync: the test cluster need not survive power loss (the
	 * server's own fsync and synchronous_commit stay on). */
	snprintf(cmd, sizeof cmd, PGH_BIN "/initdb -D %s/data -A trust -U postgres --no-sync",
		 h->dir);
	if (pgh_sh(h, cmd)) {
		snprintf(h->why, sizeof h->why, "initdb failed (%s/harness.log)", h->dir);
		return -EIO;
	}
	snprintf(cmd, sizeof cmd,
		 PGH_BIN "/pg_ctl -D %s/data -l %s/server.log -w -t 120 -o \"-p %d -k %s"
			 " -c listen_addresses=\\\"\\\"\" start",
		 h->dir, h->dir, h->port, h->dir);
	if (pgh_sh(h, cmd)) {
		snprintf(h->why, sizeof h->why, "pg_ctl start failed (%s/server.log)", h->dir);
		return -EIO;
	}
	h->started = 1;
	snprintf(cmd, sizeof cmd, PGH_BIN "/pg_isready -q -h %s -p %d", h->dir, h->port);
	for (time_t end = time(NULL) + 120; pgh_sh(h, cmd);) {
		const struct timespec tick = {0, 50 * 1000 * 1000};
		if (time(NULL) > end) {
			snprintf(h->why, sizeof h->why, "pg_isready: no answer in 120 s");
			return -EIO;
		}
		nanosleep(&tick, NULL);
	}
	return 0;
}

/* The URI of database db on h's server. */
static void pgh_uri(const struct pgh *h, const char *db, char *out, size_t len)
{
	snprintf(out, len, "postgresql://postgres@/%s?host=%s&port=%d", db, h->dir, h->port);
}

/* Creates an empty database; its URI into uri. */
static int pgh_fresh_db(struct pgh *h, char *uri, size_t len)
{
	char admin[256], sql[64], name[32];
	PGconn *pg;
	PGresult *r;
	int rc;

	pgh_uri(h, "postgres", admin, sizeof admin);
	snprintf(name, sizeof name, "t%u", ++h->ndbs);
	snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
	pg = PQconnectdb(admin);
	r = PQexec(pg, sql);
	rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -EIO;
	if (rc)
		snprintf(h->why, sizeof h->why, "%s", PQerrorMessage(pg));
	PQclear(r);
	PQfinish(pg);
	pgh_uri(h, name, uri, len);
	return rc;
}

static void pgh_stop(struct pgh *h)
{
	char cmd[512];

	if (h->started) {
		snprintf(cmd, sizeof cmd, PGH_BIN "/pg_ctl -D %s/data -m fast -w stop", h->dir);
		pgh_sh(h, cmd);
		h->started = 0;
	}
	if (h->dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "pg_harness: could not remove %s\n", h->dir);
		h->dir[0] = 0;
	}
}

#endif
