/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_harness.h — a PostgreSQL 15 server for one test program: the test
 * run's shared cluster when there is one, else a private one.
 *
 * pgh_start: when RVT_PG_HOST and RVT_PG_PORT name the run's cluster (the
 * runner's, tests/with-pg.sh: one cluster for a whole `make check`), it
 * only checks that the cluster answers.  Otherwise it makes a private one:
 * a temporary directory under /tmp owned by the `postgres` user (initdb
 * refuses root; as non-root the caller's own user runs it; the tree the
 * test runs from may be one `postgres` cannot enter), initdb -A trust,
 * pg_ctl start listening only on a Unix socket in that directory (port
 * number picked free by bind(0), listen_addresses=''), then pg_isready
 * polled until it answers (generous deadline).  pgh_fresh_db creates an
 * empty database, named after this process so that programs sharing the
 * cluster never meet, and gives its libpq URI.  pgh_migrated_db gives one
 * with the server's schema already in place: a copy (CREATE DATABASE …
 * TEMPLATE, a file copy: about a third of a migration's cost) of the
 * cluster's template PGH_TEMPLATE, which the first program to ask makes
 * under an advisory lock (programs sharing the cluster wait for it rather
 * than make it twice) by running the server's own `migrate` on it
 * (RVS_BIN) and then marks a template closed to connections; a program
 * that cannot make it (no RVS_BIN, the binary not built, migrate failed)
 * says why once on stderr and gets empty databases, which the store
 * migrates as it opens them: the same schema, only slower.  Tests of the
 * migrations themselves use pgh_fresh_db.  pgh_stop drops this
 * process's databases from a shared cluster, or stops a private server
 * (fast mode) and removes its directory.  No system service, no TCP port.
 * Header-only (static functions; those not every includer calls are
 * inline): include it in one test file.
 *
 * Errors: pgh_start returns -ENOENT when the PostgreSQL binaries or the
 * postgres user are missing (the caller skips, visibly), -EIO when the
 * server did not start or the shared one does not answer (h->why says
 * which step); pgh_fresh_db and pgh_migrated_db 0 or -EIO.
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
	char dir[160]; /* the socket's directory (a private server's: data/, log) */
	int port;      /* names the socket only: nothing listens on TCP */
	int started;   /* pg_ctl start succeeded: pgh_stop stops it */
	int shared;    /* the run's cluster: pgh_stop drops databases only */
	pid_t owner;   /* the process that made the databases */
	char tag[40];  /* their names' stem: this process and its start */
	char why[256]; /* what failed, for the skip or failure message */
	unsigned ndbs; /* databases made by pgh_fresh_db and pgh_migrated_db */
	int tmpl;      /* PGH_TEMPLATE: 0 not looked for yet, 1 ready, -1 none */
};

/* The cluster's migrated template database (pgh_migrated_db) and the
 * pg_advisory_lock key under which it is made ("rvtmpl"). */
#define PGH_TEMPLATE	  "rvt_migrated"
#define PGH_TEMPLATE_LOCK "125853085036652"

/* Runs cmd (a shell command line) as the postgres user when root, from /
 * (the test's own working directory may be closed to that user). */
static int pgh_sh(const struct pgh *h, const char *cmd)
{
	char line[1024];

	if (geteuid() == 0)
		snprintf(line, sizeof line,
			 "cd / && runuser -u postgres -- sh -c '%s' >>%s/harness.log 2>&1", cmd,
			 h->dir);
	else
		snprintf(line, sizeof line, "sh -c '%s' >>%s/harness.log 2>&1", cmd, h->dir);
	return system(line) == 0 ? 0 : -EIO;
}

/* The URI of database db on h's server: 0, or -ENAMETOOLONG when it does
 * not fit in len bytes. */
static int pgh_uri(const struct pgh *h, const char *db, char *out, size_t len)
{
	int n = snprintf(out, len, "postgresql://postgres@/%s?host=%s&port=%d", db, h->dir,
			 h->port);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Runs one statement as the postgres user on h's server: 0 or -EIO (the
 * server's message in h->why). */
static int pgh_admin(struct pgh *h, const char *sql)
{
	char admin[384];
	PGconn *pg;
	PGresult *r;
	int rc;

	if (pgh_uri(h, "postgres", admin, sizeof admin)) {
		snprintf(h->why, sizeof h->why, "the server's socket path is too long");
		return -EIO;
	}
	pg = PQconnectdb(admin);
	r = PQexec(pg, sql);
	rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -EIO;
	if (rc)
		snprintf(h->why, sizeof h->why, "%s", PQerrorMessage(pg));
	PQclear(r);
	PQfinish(pg);
	return rc;
}

/* The run's cluster (RVT_PG_HOST, RVT_PG_PORT): 1 and h set to it when the
 * variables name one that answers; 0 when they are unset; -EIO when it
 * does not answer. */
static int pgh_attach(struct pgh *h)
{
	const char *host = getenv("RVT_PG_HOST"), *port = getenv("RVT_PG_PORT");
	char admin[384];

	if (!host || !*host || !port || !*port)
		return 0;
	if ((size_t)snprintf(h->dir, sizeof h->dir, "%s", host) >= sizeof h->dir) {
		snprintf(h->why, sizeof h->why, "RVT_PG_HOST is too long");
		return -EIO;
	}
	h->port = (int)strtol(port, NULL, 10);
	if (pgh_uri(h, "postgres", admin, sizeof admin) || PQping(admin) != PQPING_OK) {
		snprintf(h->why, sizeof h->why,
			 "the run's PostgreSQL (RVT_PG_HOST, RVT_PG_PORT) does not answer");
		h->dir[0] = 0;
		return -EIO;
	}
	h->shared = 1;
	h->owner = getpid();
	snprintf(h->tag, sizeof h->tag, "t%ld_%lx", (long)h->owner, (long)time(NULL));
	return 1;
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
	switch (pgh_attach(h)) {
	case 1:
		return 0;
	case 0:
		break;
	default:
		return -EIO;
	}
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
	/* --no-sync and fsync=off: a test cluster need not survive power
	 * loss (what a test observes does not change; durability across power
	 * loss is test_durable's, on sqlite), as tests/with-pg.sh's. */
	snprintf(cmd, sizeof cmd, PGH_BIN "/initdb -D %s/data -A trust -U postgres --no-sync",
		 h->dir);
	if (pgh_sh(h, cmd)) {
		snprintf(h->why, sizeof h->why, "initdb failed (%s/harness.log)", h->dir);
		return -EIO;
	}
	snprintf(cmd, sizeof cmd,
		 PGH_BIN "/pg_ctl -D %s/data -l %s/server.log -w -t 120 -o \"-p %d -k %s"
			 " -c listen_addresses=\\\"\\\" -c fsync=off\" start",
		 h->dir, h->dir, h->port, h->dir);
	if (pgh_sh(h, cmd)) {
		snprintf(h->why, sizeof h->why, "pg_ctl start failed (%s/server.log)", h->dir);
		return -EIO;
	}
	h->started = 1;
	h->owner = getpid();
	snprintf(h->tag, sizeof h->tag, "t");
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

/* Creates database h->tag_N (as `CREATE DATABASE name` followed by with,
 * e.g. a TEMPLATE clause); its URI into uri. */
static int pgh_create(struct pgh *h, const char *with, char *uri, size_t len)
{
	char sql[192], name[64];
	int rc;

	snprintf(name, sizeof name, "%s_%u", h->tag, ++h->ndbs);
	snprintf(sql, sizeof sql, "CREATE DATABASE %s%s", name, with);
	if ((rc = pgh_admin(h, sql)))
		return rc;
	if (pgh_uri(h, name, uri, len)) {
		snprintf(h->why, sizeof h->why, "the URI of %s does not fit in %zu bytes", name,
			 len);
		return -EIO;
	}
	return 0;
}

/* Creates an empty database; its URI into uri. */
static int pgh_fresh_db(struct pgh *h, char *uri, size_t len)
{
	return pgh_create(h, "", uri, len);
}

/* Runs sql on the open connection pg: 0, or -EIO (the server's message in
 * h->why). */
static inline int pgh_exec(struct pgh *h, PGconn *pg, const char *sql)
{
	PGresult *r = PQexec(pg, sql);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK
			 ? 0
			 : -EIO;

	if (rc)
		snprintf(h->why, sizeof h->why, "%s: %s", sql, PQerrorMessage(pg));
	PQclear(r);
	return rc;
}

#ifdef RVS_BIN
/* Runs the server's `migrate` (RVS_BIN) on database db of h's server, with
 * a configuration of its own in a temporary directory: 0, or -EIO (the
 * start of what it printed in h->why). */
static inline int pgh_run_migrate(struct pgh *h, const char *db)
{
	char dir[] = "/tmp/rvt-migrate-XXXXXX", path[64], uri[384], cmd[768];
	FILE *f;
	int rc = -EIO;

	if (!mkdtemp(dir)) {
		snprintf(h->why, sizeof h->why, "temporary directory: %s", strerror(errno));
		return -EIO;
	}
	snprintf(path, sizeof path, "%s/migrate.conf", dir);
	if (pgh_uri(h, db, uri, sizeof uri) == 0 && (f = fopen(path, "w"))) {
		fprintf(f, "[server]\ndata_dir = %s\ndatabase = %s\n", dir, uri);
		if (fclose(f) == 0) {
			snprintf(cmd, sizeof cmd, "'%s' migrate --config %s >%s/out 2>&1", RVS_BIN,
				 path, dir);
			rc = system(cmd) == 0 ? 0 : -EIO;
		}
	}
	if (rc) {
		size_t n = 0;

		snprintf(path, sizeof path, "%s/out", dir);
		snprintf(h->why, sizeof h->why, "%s migrate failed: ", RVS_BIN);
		if ((f = fopen(path, "r"))) {
			n = strlen(h->why);
			n += fread(h->why + n, 1, sizeof h->why - 1 - n, f);
			h->why[n] = 0;
			fclose(f);
		}
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "pg_harness: could not remove %s\n", dir);
	return rc;
}
#endif

/* Makes h's cluster's PGH_TEMPLATE unless it is there (the first program
 * to get the advisory lock makes it; the others wait for the lock, then
 * find it marked a template): 0, or -EIO (h->why says why).  The answer is
 * kept in h->tmpl: one attempt per program. */
static inline int pgh_template(struct pgh *h)
{
	if (h->tmpl)
		return h->tmpl > 0 ? 0 : -EIO;
#ifndef RVS_BIN
	snprintf(h->why, sizeof h->why, "this program has no RVS_BIN to run `migrate` with");
	h->tmpl = -1;
#else
	char admin[384];
	PGconn *pg;
	PGresult *r;
	int rc = -EIO, ready;

	if (pgh_uri(h, "postgres", admin, sizeof admin) == 0) {
		pg = PQconnectdb(admin);
		if (PQstatus(pg) != CONNECTION_OK)
			snprintf(h->why, sizeof h->why, "%s", PQerrorMessage(pg));
		else if (!(rc = pgh_exec(h, pg,
					 "SELECT pg_advisory_lock(" PGH_TEMPLATE_LOCK ")"))) {
			r = PQexec(pg, "SELECT 1 FROM pg_database WHERE datname = '" PGH_TEMPLATE
				       "' AND datistemplate");
			ready = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
			PQclear(r);
			/* A template is marked only once migrated: an unmarked one
			 * is what a killed maker left. */
			if (!ready &&
			    !(rc = pgh_exec(h, pg, "DROP DATABASE IF EXISTS " PGH_TEMPLATE)) &&
			    !(rc = pgh_exec(h, pg, "CREATE DATABASE " PGH_TEMPLATE)) &&
			    !(rc = pgh_run_migrate(h, PGH_TEMPLATE)))
				rc = pgh_exec(h, pg,
					      "ALTER DATABASE " PGH_TEMPLATE
					      " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false");
		}
		PQfinish(pg); /* ends the session: releases the lock */
	}
	h->tmpl = rc ? -1 : 1;
	if (!rc)
		return 0;
#endif
	fprintf(stderr,
		"pg_harness: no migrated template (%s); empty databases instead, which "
		"the store migrates as it opens them\n",
		h->why);
	return -EIO;
}

/* Creates a database with the server's schema: a copy of the cluster's
 * PGH_TEMPLATE (made by the first caller), or, without one, an empty
 * database the store migrates when it opens it.  Its URI into uri. */
static inline int pgh_migrated_db(struct pgh *h, char *uri, size_t len)
{
	if (pgh_template(h))
		return pgh_fresh_db(h, uri, len);
	return pgh_create(h, " TEMPLATE " PGH_TEMPLATE " STRATEGY FILE_COPY", uri, len);
}

/* A test's store in a new directory: dir, a mkdtemp template, becomes
 * the directory; db gets a migrated PostgreSQL database of h (on_pg) or
 * DIR/rearview.db, blobs DIR/blobs.  0, or -1 (the directory, or the
 * database, could not be made). */
static inline int pgh_store_dir(struct pgh *h, int on_pg, char *dir, char *db, size_t dblen,
				char *blobs, size_t bloblen)
{
	if (!mkdtemp(dir))
		return -1;
	if (on_pg) {
		if (pgh_migrated_db(h, db, dblen))
			return -1;
	} else {
		snprintf(db, dblen, "%s/rearview.db", dir);
	}
	snprintf(blobs, bloblen, "%s/blobs", dir);
	return 0;
}

static void pgh_stop(struct pgh *h)
{
	char cmd[512];

	if (h->shared) {
		/* Only the process that made them; FORCE ends the sessions of a
		 * server the test did not stop. */
		for (unsigned i = 1; h->owner == getpid() && i <= h->ndbs; i++) {
			snprintf(cmd, sizeof cmd, "DROP DATABASE IF EXISTS %s_%u WITH (FORCE)",
				 h->tag, i);
			if (pgh_admin(h, cmd))
				fprintf(stderr, "pg_harness: %s: %s", cmd, h->why);
		}
		h->shared = 0;
		h->dir[0] = 0;
		return;
	}
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
