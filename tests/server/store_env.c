/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_env.c — the server test suite's store switch (store_env.h).
 *
 * Invariants: at most one PostgreSQL per test program, started by the
 * process that first asks for a database and stopped by that same process
 * at exit (a forked child that calls exit() leaves it running); the switch
 * is read once.  The raw SQL (rvt_db_*) is for a test's assertions and
 * fixture rows only, on the schema both backends share (SCHEMA.md); a
 * query with a parameter is shorter than RVT_DB_SQL_MAX.  On PostgreSQL
 * they share one kept connection per process (db_pg): a session costs the
 * cluster about 50 ms of CPU on the CI machine, and tests that poll a
 * row opened hundreds.
 */
#include "store_env.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "pg_harness.h"

#define RVT_DB_SQL_MAX 512 /* `?` becomes `$1`: the rewrite fits twice that */

static struct pgh g_pg;
static pid_t g_owner; /* the process that started g_pg; 0: not started */
static char g_why[300];

int rvt_store_is_pg(void)
{
	static int pg = -1;

	if (pg < 0) {
		const char *v = getenv("RVS_TEST_STORE");
		pg = v && strcmp(v, "pg") == 0;
	}
	return pg;
}

const char *rvt_store_why(void)
{
	return g_why;
}

static void stop_pg(void)
{
	if (g_owner == getpid())
		pgh_stop(&g_pg);
}

/* rvt_store_dsn's, with on pg a migrated database (pgh_migrated_db) or an
 * empty one (pgh_fresh_db). */
static int store_dsn(const char *sqlite_path, char *out, size_t len, int migrated)
{
	int rc;

	if (!rvt_store_is_pg()) {
		if ((size_t)snprintf(out, len, "%s", sqlite_path) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (!g_owner) {
		if ((rc = pgh_start(&g_pg)) < 0) {
			snprintf(g_why, sizeof g_why, "RVS_TEST_STORE=pg: %s", g_pg.why);
			pgh_stop(&g_pg);
			return rc;
		}
		g_owner = getpid();
		atexit(stop_pg);
	}
	assert(g_owner == getpid());
	if ((migrated ? pgh_migrated_db(&g_pg, out, len) : pgh_fresh_db(&g_pg, out, len)) < 0) {
		snprintf(g_why, sizeof g_why, "RVS_TEST_STORE=pg: %s", g_pg.why);
		return -EIO;
	}
	return 0;
}

int rvt_store_dsn(const char *sqlite_path, char *out, size_t len)
{
	return store_dsn(sqlite_path, out, len, 1);
}

int rvt_store_conf(const char *conf, const char *data, char *dsn, size_t len)
{
	char path[512];
	FILE *f;
	int rc;

	snprintf(path, sizeof path, "%s/rearview.db", data);
	if ((rc = store_dsn(path, dsn, len, 0)) || !rvt_store_is_pg())
		return rc;
	if (!(f = fopen(conf, "a")))
		return -errno;
	fprintf(f, "database = %s\n", dsn);
	return fclose(f) ? -errno : 0;
}

/* The kept connection of this process to dsn: the open one, or a new one
 * (the old one closed) when dsn differs or fresh is set.  A forked child
 * never uses or closes its parent's (the socket is shared: a Terminate
 * from the child would end the parent's session); it opens its own. */
static PGconn *db_pg(const char *dsn, int fresh)
{
	static PGconn *pg;
	static char *pg_dsn;
	static pid_t pg_pid;

	if (pg && pg_pid != getpid()) {
		pg = NULL; /* the parent's: left to it */
		free(pg_dsn);
		pg_dsn = NULL;
	}
	if (pg && !fresh && PQstatus(pg) == CONNECTION_OK && strcmp(pg_dsn, dsn) == 0)
		return pg;
	PQfinish(pg);
	free(pg_dsn);
	pg_dsn = strdup(dsn);
	assert(pg_dsn);
	pg_pid = getpid();
	return pg = PQconnectdb(dsn);
}

/* sql (with arg as $1; without, sql may hold several statements and the
 * last one's result is returned) on the kept connection to dsn,
 * once more on a new one if the kept one had broken (the cluster
 * restarted, the database was dropped and made again); the result, and
 * the connection it came from in *pg (for its error message). */
static PGresult *db_pg_run(const char *dsn, const char *sql, const char *arg, PGconn **pg)
{
	PGresult *r;

	*pg = db_pg(dsn, 0);
	r = arg ? PQexecParams(*pg, sql, 1, NULL, &arg, NULL, NULL, 0) : PQexec(*pg, sql);
	if (PQstatus(*pg) == CONNECTION_OK)
		return r;
	PQclear(r);
	*pg = db_pg(dsn, 1);
	return arg ? PQexecParams(*pg, sql, 1, NULL, &arg, NULL, NULL, 0) : PQexec(*pg, sql);
}

/* The first column of sql's first row as text (malloc'ed) and whether there
 * was a row: 1 with a row, 0 without, -1 on an error (printed). */
static int db_first(const char *dsn, const char *sql, const char *arg, char **out)
{
	int rc = -1;

	*out = NULL;
	if (strstr(dsn, "://")) {
		char q[2 * RVT_DB_SQL_MAX];
		size_t k = 0;
		PGresult *r;
		PGconn *pg;

		assert(strlen(sql) < RVT_DB_SQL_MAX);

		/* `?` is sqlite's parameter, $1 libpq's. */
		for (const char *p = sql; *p; p++)
			if (*p == '?') {
				memcpy(q + k, "$1", 2);
				k += 2;
			} else {
				q[k++] = *p;
			}
		q[k] = 0;
		r = db_pg_run(dsn, q, arg, &pg);
		if (PQresultStatus(r) == PGRES_TUPLES_OK) {
			rc = PQntuples(r) > 0;
			if (rc && !PQgetisnull(r, 0, 0))
				*out = strdup(PQgetvalue(r, 0, 0));
		} else {
			fprintf(stderr, "rvt_db (%s): %s", q, PQerrorMessage(pg));
		}
		PQclear(r);
		return rc;
	}
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	if (sqlite3_open_v2(dsn, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_busy_timeout(db, 10000) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    (!arg || sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT) == SQLITE_OK)) {
		int step = sqlite3_step(st);
		rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -1;
		if (rc > 0 && sqlite3_column_text(st, 0))
			*out = strdup((const char *)sqlite3_column_text(st, 0));
	}
	if (rc < 0)
		fprintf(stderr, "rvt_db (%s): %s\n", sql, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int rvt_db_int(const char *dsn, const char *sql, const char *arg)
{
	char *v;
	int n = -1;

	if (db_first(dsn, sql, arg, &v) > 0 && v)
		n = (int)strtol(v, NULL, 10);
	free(v);
	return n;
}

char *rvt_db_text(const char *dsn, const char *sql, const char *arg)
{
	char *v;

	db_first(dsn, sql, arg, &v);
	return v;
}

int rvt_db_exec(const char *dsn, const char *sql)
{
	int rc = -EIO;

	if (strstr(dsn, "://")) {
		PGconn *pg;
		PGresult *r = db_pg_run(dsn, sql, NULL, &pg);

		if (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
			rc = 0;
		else
			fprintf(stderr, "rvt_db_exec: %s", PQerrorMessage(pg));
		PQclear(r);
		return rc;
	}
	sqlite3 *db;
	if (sqlite3_open(dsn, &db) == SQLITE_OK && sqlite3_busy_timeout(db, 10000) == SQLITE_OK &&
	    sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
		rc = 0;
	else
		fprintf(stderr, "rvt_db_exec: %s\n", sqlite3_errmsg(db));
	sqlite3_close(db);
	return rc;
}
