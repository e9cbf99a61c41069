/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql_both.h — a test's own SQL on either store backend, by the dsn
 * (store.h's rvs_store_for): a fixture written or a count read the same
 * way on sqlite and on PostgreSQL (pg_harness.h), so one test case runs on
 * both.  Statements use $1, $2 … placeholders (sqlite reads them as ?1,
 * ?2 …); every parameter is text (NULL: SQL NULL), which both backends
 * convert to the column's type.  sqlite connections turn foreign keys on
 * (deletes cascade as on PostgreSQL).  A failure fails the test (cmocka).
 * On PostgreSQL one connection is kept for the last dsn and used again (a
 * new session costs the server a backend: ~55 ms of its CPU against ~1 ms
 * for a statement on an open one, measured); it is idle between
 * statements (autocommit: no transaction or lock outlives one), and one
 * the server closed meanwhile is opened again.
 * Header-only (static inline functions): include it in one test file, after
 * cmocka.h.
 */
#ifndef RV_SQL_BOTH_H
#define RV_SQL_BOTH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "store/store.h"

/* The kept PostgreSQL connection to dsn: the open one when it is to dsn
 * and fresh is 0, else a new one (the old one closed).  A connection that
 * failed to open is returned as it is: the statement then fails with its
 * message. */
static inline PGconn *sqlb_pg(const char *dsn, int fresh)
{
	static PGconn *pg;
	static char *pg_dsn;

	if (pg && !fresh && PQstatus(pg) == CONNECTION_OK && strcmp(pg_dsn, dsn) == 0)
		return pg;
	if (pg)
		PQfinish(pg);
	free(pg_dsn);
	pg_dsn = strdup(dsn);
	assert_non_null(pg_dsn);
	pg = PQconnectdb(dsn);
	return pg;
}

/* Runs sql with n text parameters on dsn; with out, the first column of
 * the first row as an integer into *out (-1 when there is no row). */
static inline void sqlb_run(const char *dsn, const char *sql, int n, const char *const *params,
			    int64_t *out)
{
	if (out)
		*out = -1;
	if (rvs_store_for(dsn) == &rvs_store_pg) {
		PGconn *pg = sqlb_pg(dsn, 0);
		PGresult *r = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
		ExecStatusType st = PQresultStatus(r);
		if (st == PGRES_FATAL_ERROR && PQstatus(pg) == CONNECTION_BAD) {
			/* The server ended the idle session before the statement
			 * reached it: once more on a new one. */
			PQclear(r);
			pg = sqlb_pg(dsn, 1);
			r = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
			st = PQresultStatus(r);
		}
		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
			fail_msg("%s: %s", sql, PQerrorMessage(pg));
		if (out && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
			*out = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
	} else {
		char *q = strdup(sql);
		sqlite3 *db;
		sqlite3_stmt *st;
		int rc;
		assert_non_null(q);
		for (char *p = q; *p; p++)
			if (*p == '$')
				*p = '?';
		assert_int_equal(sqlite3_open(dsn, &db), SQLITE_OK);
		sqlite3_busy_timeout(db, 10000);
		assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL),
				 SQLITE_OK);
		if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
			fail_msg("%s: %s", sql, sqlite3_errmsg(db));
		for (int i = 0; i < n; i++)
			if (params[i])
				sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && out && sqlite3_column_type(st, 0) != SQLITE_NULL)
			*out = sqlite3_column_int64(st, 0);
		while (rc == SQLITE_ROW)
			rc = sqlite3_step(st);
		if (rc != SQLITE_DONE)
			fail_msg("%s: %s", sql, sqlite3_errmsg(db));
		sqlite3_finalize(st);
		sqlite3_close(db);
		free(q);
	}
}

/* Runs sql (no result wanted). */
static inline void sqlb_exec(const char *dsn, const char *sql, int n, const char *const *params)
{
	sqlb_run(dsn, sql, n, params, NULL);
}

/* The integer sql's first row's first column gives (-1: no row). */
static inline int64_t sqlb_int(const char *dsn, const char *sql)
{
	int64_t v;
	sqlb_run(dsn, sql, 0, NULL, &v);
	return v;
}

#endif
