/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sqlite3-planted.c — the planted slow function for the sqlite3 benchmark
 * (tests/bench/real/sqlite3.sh).  Compiled into the sqlite3 shell with
 * -DSQLITE_EXTRA_INIT=rv_planted_init, so every connection gets the SQL
 * function rv_slow(X, N) (N rounds of a hash of X) without touching SQLite's
 * sources; its work happens in
 * sqlite_planted_slow_fn, which a capture must name at the top of self time.
 * Invariant: rv_slow(X, N) is deterministic (a hash of X), so the workload's
 * output is the same in every build.
 */
#include "sqlite3.h"

int rv_planted_init(const char *unused);

__attribute__((noinline)) static void sqlite_planted_slow_fn(sqlite3_context *ctx, int argc,
							     sqlite3_value **argv)
{
	sqlite3_uint64 h = (sqlite3_uint64)sqlite3_value_int64(argv[0]);
	sqlite3_int64 n = sqlite3_value_int64(argv[1]);
	for (sqlite3_int64 i = 0; i < n; i++)
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL + (sqlite3_uint64)i;
	sqlite3_result_int64(ctx, (sqlite3_int64)(h & 0xffff));
}

static int register_planted(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
	return sqlite3_create_function(db, "rv_slow", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, 0,
				       sqlite_planted_slow_fn, 0, 0);
}

int rv_planted_init(const char *unused)
{
	return sqlite3_auto_extension((void (*)(void))register_planted);
}
