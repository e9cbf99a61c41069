/*
 * store_env.h — which store backend the server test suite runs on: the
 * one switch RVS_TEST_STORE (unset or "sqlite": the sqlite file in the
 * data directory, as before; "pg": a private PostgreSQL 15 per test
 * program, a fresh database per server or store).
 *
 * With the switch at pg the first rvt_store_dsn starts the program's
 * PostgreSQL (tests/server/pg_harness.h: initdb + pg_ctl in a temporary
 * directory, Unix socket only) and stops it at the program's exit; every
 * call makes a new empty database on it and names its libpq URI.  Blobs
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
 * on pg a fresh database's URI (starting the program's PostgreSQL on the
 * first call).  0; -ENAMETOOLONG when out is too short; -ENOENT when
 * PostgreSQL 15 is not installed; -EIO when it did not start or the
 * database was not created (rvt_store_why says which). */
int rvt_store_dsn(const char *sqlite_path, char *out, size_t len);

/* What the last failing rvt_store_dsn could not do (static text). */
const char *rvt_store_why(void);

#endif
