/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_env.h — which store backend the server test suite runs on: the
 * one switch RVS_TEST_STORE (unset or "sqlite": the sqlite file in the
 * data directory, as before; "pg": a private PostgreSQL 15 per test
 * program, a fresh database per server or store).
 *
 * With the switch at pg the first rvt_store_dsn starts the program's
 * PostgreSQL (tests/server/pg_harness.h: initdb + pg_ctl in a temporary
 * directory, Unix socket only; or the run's cluster, tests/with-pg.sh) and
 * stops it at the program's exit; every call makes a new database on it
 * and names its libpq URI: rvt_store_dsn's already migrated (a copy of the
 * cluster's migrated template), rvt_store_conf's empty (the server's own
 * commands migrate it).  Blobs
 * stay in the data directory's local store either way.
 *
 * Not thread-safe: call from the test's main thread (the server processes
 * a test forks get the URI in their configuration).
 */
#ifndef RVT_STORE_ENV_H
#define RVT_STORE_ENV_H

#include <stddef.h>

/* 1 when RVS_TEST_STORE=pg, else 0. */
int rvt_store_is_pg(void);

/* The database one server or store uses: on sqlite a copy of sqlite_path;
 * on pg a new migrated database's URI (starting the program's PostgreSQL on
 * the first call).  0; -ENAMETOOLONG when out is too short; -ENOENT when
 * PostgreSQL 15 is not installed; -EIO when it did not start or the
 * database was not created (rvt_store_why says which). */
int rvt_store_dsn(const char *sqlite_path, char *out, size_t len);

/* What the last failing rvt_store_dsn could not do (static text). */
const char *rvt_store_why(void);

/* For a test that writes its own server configuration: the database of the
 * server whose data directory is data (sqlite: data/rearview.db, which
 * `init` made) into dsn; on pg an empty database (what `migrate` migrates),
 * and appends `database = URI` to the
 * configuration file conf (whose last section must be [server]).
 * 0 or rvt_store_dsn's errors, -errno when conf could not be written. */
int rvt_store_conf(const char *conf, const char *data, char *dsn, size_t len);

/* Assertions on what a server stored, the same SQL on either backend: the
 * first column of the first row of sql (under 512 bytes; one optional
 * text parameter arg, written `?`; plain SQL both backends accept) read from the database dsn
 * names (sqlite read-only with a 10 s busy timeout, or libpq).
 * rvt_db_int: the integer, -1 without a row or on an error (printed).
 * rvt_db_text: a malloc'ed copy (the caller frees it), NULL without a row,
 * for SQL NULL or on an error (printed). */
int rvt_db_int(const char *dsn, const char *sql, const char *arg);
char *rvt_db_text(const char *dsn, const char *sql, const char *arg);
/* Runs sql (one or more statements, no parameters) on the database dsn
 * names: a test's fixture rows.  0 or -EIO (printed). */
int rvt_db_exec(const char *dsn, const char *sql);

#endif
