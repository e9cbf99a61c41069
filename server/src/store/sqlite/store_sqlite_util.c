/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_util.c — the sqlite backend's statement helpers and busy
 * handler (store_sqlite_util.h): every connection the sqlite backend opens
 * waits for the write lock through rvs_sqlite_busy.  Thread-safe: nothing
 * here keeps state but its arguments.
 */
#include "store/sqlite/store_sqlite_util.h"

#include "base/log.h"
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include <sqlite3.h>

/* The most columns a read's row has. */
#define READ_MAX_COLS 32

void rvs_sqlite_bind_opt_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
}

void rvs_sqlite_bind_opt_i64(sqlite3_stmt *st, int i, int has, int64_t v)
{
	if (has)
		sqlite3_bind_int64(st, i, v);
}

int rvs_sqlite_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

const char *rvs_sqlite_col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

int rvs_sqlite_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	if (rc != SQLITE_OK) {
		rvs_log("error", "sqlite", "err=\"%s\"", err ? err : sqlite3_errstr(rc));
		sqlite3_free(err);
	}
	return rvc_sqlite_errno(rc);
}

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

int rvs_sqlite_rows_out(sqlite3_stmt *st, int part, rvs_row_fn cb, void *arg, size_t *nrows)
{
	struct rvs_col cols[READ_MAX_COLS];
	int rc, stop;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int n = sqlite3_column_count(st);
		assert(n <= READ_MAX_COLS);
		for (int i = 0; i < n; i++) {
			cols[i].name = sqlite3_column_name(st, i);
			cols[i].i = 0;
			cols[i].text = NULL;
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_NULL:
				cols[i].type = RVS_COL_NULL;
				break;
			case SQLITE_INTEGER:
				cols[i].type = RVS_COL_INT;
				cols[i].i = sqlite3_column_int64(st, i);
				break;
			default:
				cols[i].type = RVS_COL_TEXT;
				cols[i].text = (const char *)sqlite3_column_text(st, i);
				if (!cols[i].text)
					cols[i].type = RVS_COL_NULL;
			}
		}
		if (nrows)
			++*nrows;
		if ((stop = cb(arg, part, cols, (size_t)n)))
			return stop;
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int rvs_sqlite_scan_open(const char *dsn, sqlite3 **db)
{
	if (sqlite3_open_v2(dsn, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
		sqlite3_close(*db);
		*db = NULL;
		return -EIO;
	}
	rvs_sqlite_busy(*db, 5000);
	return 0;
}
