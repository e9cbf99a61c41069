/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_util.c — the sqlite backend's busy handler (rvs.h's
 * rvs_sqlite_busy), moved out of util.c with the rest of the SQL (issue
 * 15): every connection the sqlite backend opens waits for the write lock
 * through it.  Thread-safe: the handler keeps no state but its argument.
 */
#include "store/sqlite/store_sqlite_util.h"

#include <stdint.h>
#include <unistd.h>

#include <sqlite3.h>

/* Milliseconds slept before retry number `count` (count retries so far). */
static double busy_slept_ms(int count)
{
	if (count < 40)
		return count * 0.05;
	if (count < 120)
		return 2 + (count - 40) * 0.5;
	return 42 + (count - 120) * 2.0;
}

static int busy_cb(void *arg, int count)
{
	int timeout_ms = (int)(intptr_t)arg;

	if (busy_slept_ms(count) >= timeout_ms)
		return 0;
	usleep(count < 40 ? 50 : count < 120 ? 500 : 2000);
	return 1;
}

void rvs_sqlite_busy(sqlite3 *db, int timeout_ms)
{
	sqlite3_busy_handler(db, busy_cb, (void *)(intptr_t)timeout_ms);
}
