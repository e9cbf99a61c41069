/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_retention.c — the spool's rows are bounded: 300 anomalies
 * (one after the other, each waited for until it is a row or counted in
 * the history) leave at most [spool] history_rows finished rows plus the
 * rows that still hold a file, and the deleted ones survive as counts in
 * the `history` table, across a restart.  Before retention, 300 anomalies
 * left 300 rows.  Real rearviewd, rvctl and rv_helper_app in a mkdtemp
 * directory (daemon_harness.h); spool.db is read with sqlite3 (WAL: a
 * reader beside the daemon); every wait has a generous guard.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "daemon_harness.h"

#define HISTORY_ROWS 100 /* the default of [spool] history_rows */

/* Rows of spool.db's captures table, and the sum of its history counts
 * (0 when there is no such table). */
static void db_counts(struct rvh *h, size_t *rows, size_t *retired)
{
	char path[200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	*rows = *retired = 0;
	snprintf(path, sizeof(path), "%s/spool.db", h->state);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	/* One read transaction: both counts from one snapshot (a row retired
	 * between two statements would be counted twice). */
	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM captures", -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	*rows = (size_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT COALESCE(SUM(n), 0) FROM history", -1, &st, NULL) ==
	    SQLITE_OK) {
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		*retired = (size_t)sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* Rows rvctl's listing (admin.sock, the daemon's mirror) shows. */
static size_t listed(struct rvh *h)
{
	Rearview__AdminResponse *r = rvh_captures(h);
	size_t n;

	assert_non_null(r);
	n = r->captures->n_captures;
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

static void test_daemon_retention_300_anomalies_leave_bounded_rows(void **state)
{
	size_t rows = 0, retired = 0, files;
	struct rvh h;
	pid_t a;

	(void)state;
	assert_int_equal(rvh_setup(&h, "[capture]\nconsent_default = full\n"), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	for (size_t i = 1; i <= 300; i++) {
		double until = rvh_now() + RVH_GUARD_S;

		assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
		/* Each anomaly becomes a row (captured, or skipped by the
		 * policy); once finished beyond the bound it is a count. */
		for (;;) {
			db_counts(&h, &rows, &retired);
			if (rows + retired == i)
				break;
			assert_true(rows + retired < i);
			assert_true(rvh_now() < until);
			rvh_sleep_ms(5);
		}
	}
	/* A deletion queued by the last store may still be running: wait
	 * until the bound holds (or the guard says it never will). */
	for (double until = rvh_now() + RVH_GUARD_S;;) {
		db_counts(&h, &rows, &retired);
		files = rvh_spool_files(&h);
		if (rows <= HISTORY_ROWS + files || rvh_now() >= until)
			break;
		rvh_sleep_ms(10);
	}
	fprintf(stderr, "300 anomalies: %zu rows (%zu with a file), %zu in the history\n", rows,
		files, retired);
	assert_true(rows <= HISTORY_ROWS + files);
	assert_int_equal(rows + retired, 300);
	assert_int_equal(listed(&h), rows);

	/* A restart keeps both: the rows and the counts of the deleted ones. */
	rvh_stop_daemon(&h, SIGTERM);
	assert_int_equal(rvh_start_daemon(&h), 0);
	db_counts(&h, &rows, &retired);
	assert_true(rows <= HISTORY_ROWS + rvh_spool_files(&h));
	assert_int_equal(rows + retired, 300);
	assert_int_equal(listed(&h), rows);
	rvh_teardown(&h);
}

/* [spool] history_rows = 0 keeps no finished row: after 20 anomalies only
 * the captures still holding a file are rows. */
static void test_daemon_retention_history_rows_zero_keeps_only_files(void **state)
{
	size_t rows = 0, retired = 0;
	struct rvh h;
	pid_t a;

	(void)state;
	assert_int_equal(
		rvh_setup(&h, "[capture]\nconsent_default = full\n[spool]\nhistory_rows = 0\n"), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	for (size_t i = 1; i <= 20; i++) {
		double until = rvh_now() + RVH_GUARD_S;

		assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
		for (;;) {
			db_counts(&h, &rows, &retired);
			if (rows + retired == i)
				break;
			assert_true(rvh_now() < until);
			rvh_sleep_ms(5);
		}
	}
	for (double until = rvh_now() + RVH_GUARD_S;;) {
		db_counts(&h, &rows, &retired);
		if (rows == rvh_spool_files(&h) || rvh_now() >= until)
			break;
		rvh_sleep_ms(10);
	}
	assert_int_equal(rows, rvh_spool_files(&h));
	assert_int_equal(rows + retired, 20);
	rvh_teardown(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_daemon_retention_300_anomalies_leave_bounded_rows),
		cmocka_unit_test(test_daemon_retention_history_rows_zero_keeps_only_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
