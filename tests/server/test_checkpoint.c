/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_checkpoint.c — the background WAL checkpointer
 * (store_sqlite_checkpoint.c, a sqlite-backend internal) on a real sqlite
 * database in a temporary directory: a WAL past the threshold is copied
 * into the database by the checkpointer, not by the commit that filled it;
 * connections of one file share one checkpointer, which stops with the
 * last; what it cannot checkpoint is refused up front.  Every case is of
 * sqlite's WAL: PostgreSQL checkpoints itself, so none runs there.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/sqlite/store_sqlite_util.h"
#include "store_cases.h"

struct fx {
	char dir[64];
	char db[128];
	char wal[140];
	sqlite3 *a;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-ckpt-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
	snprintf(f->wal, sizeof f->wal, "%s-wal", f->db);
	if (sqlite3_open(f->db, &f->a) != SQLITE_OK ||
	    sqlite3_exec(f->a,
			 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB);",
			 NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	rvs_sqlite_ckpt_detach(f->a);
	sqlite3_close(f->a);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* One transaction of n new 4000-byte rows: at least n WAL frames. */
static void write_rows(sqlite3 *db, int n)
{
	sqlite3_stmt *st;

	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(
		sqlite3_prepare_v2(db, "INSERT INTO t (v) VALUES (zeroblob(4000))", -1, &st, NULL),
		SQLITE_OK);
	for (int i = 0; i < n; i++) {
		assert_int_equal(sqlite3_step(st), SQLITE_DONE);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
}

/* Waits up to 10 s for the database file to reach `want` bytes. */
static int wait_db_size(const char *path, long long want)
{
	for (int i = 0; i < 1000; i++) {
		if (file_size(path) >= want)
			return 1;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	return 0;
}

static void test_ckpt_wal_past_threshold_is_copied_by_the_checkpointer(void **state)
{
	struct fx *f = *state;
	long long before = file_size(f->db), after_commit;
	unsigned long runs_at_commit;

	assert_int_equal(rvs_sqlite_ckpt_attach(f->a), 0);
	assert_int_equal(rvs_sqlite_ckpt_runs(f->a), 0);
	write_rows(f->a, RVS_CKPT_FRAMES + 100);
	/* The commit itself copied nothing: whatever reached the database
	 * file by now, the checkpointer had started on it (its count goes up
	 * before it checkpoints; sqlite's own automatic checkpoint would have
	 * grown the file inside COMMIT, with the count still 0). */
	after_commit = file_size(f->db);
	runs_at_commit = rvs_sqlite_ckpt_runs(f->a);
	if (after_commit > before)
		assert_true(runs_at_commit >= 1);
	/* And it does copy the WAL in: every row's page reaches the file. */
	assert_true(wait_db_size(f->db, before + (long long)RVS_CKPT_FRAMES * 4096));
	assert_true(rvs_sqlite_ckpt_runs(f->a) >= 1);
	assert_true(file_size(f->wal) > 0);
}

static void test_ckpt_wal_past_hard_limit_is_truncated(void **state)
{
	struct fx *f = *state;

	assert_int_equal(rvs_sqlite_ckpt_attach(f->a), 0);
	write_rows(f->a, RVS_CKPT_HARD_FRAMES + 100);
	assert_true(file_size(f->wal) > (long long)RVS_CKPT_HARD_FRAMES * 4096);
	/* Passive checkpoints (sqlite's automatic ones too) copy the frames
	 * but leave the WAL's file as large as it grew; past the hard limit
	 * the checkpointer truncates it, with no other write needed. */
	for (int i = 0; i < 1000 && file_size(f->wal) != 0; i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	assert_int_equal(file_size(f->wal), 0);
	assert_true(file_size(f->db) > (long long)RVS_CKPT_HARD_FRAMES * 4096);
}

static void test_ckpt_below_threshold_waits_for_the_idle_pass(void **state)
{
	struct fx *f = *state;
	long long before = file_size(f->db);

	assert_int_equal(rvs_sqlite_ckpt_attach(f->a), 0);
	write_rows(f->a, 50);
	/* Under the threshold no commit wakes it; the once-a-second idle pass
	 * folds the WAL in anyway. */
	assert_true(wait_db_size(f->db, before + 50 * 4096));
	assert_true(rvs_sqlite_ckpt_runs(f->a) >= 1);
}

static void test_ckpt_shared_per_file_and_stopped_with_the_last(void **state)
{
	struct fx *f = *state;
	sqlite3 *b;

	assert_int_equal(rvs_sqlite_ckpt_attach(f->a), 0);
	assert_int_equal(rvs_sqlite_ckpt_attach(f->a), 0); /* twice counts once */
	assert_int_equal(sqlite3_open(f->db, &b), SQLITE_OK);
	assert_int_equal(rvs_sqlite_ckpt_attach(b), 0);
	write_rows(b, RVS_CKPT_FRAMES + 10);
	assert_true(wait_db_size(f->db, (long long)RVS_CKPT_FRAMES * 4096));
	/* One checkpointer: both connections see the same count. */
	assert_true(rvs_sqlite_ckpt_runs(f->a) >= 1);
	assert_int_equal(rvs_sqlite_ckpt_runs(f->a), rvs_sqlite_ckpt_runs(b));
	/* b leaves; a still holds it. */
	rvs_sqlite_ckpt_detach(b);
	sqlite3_close(b);
	assert_true(rvs_sqlite_ckpt_runs(f->a) >= 1);
	/* The last one leaves: stopped, so a new attach starts a fresh one. */
	rvs_sqlite_ckpt_detach(f->a);
	assert_int_equal(rvs_sqlite_ckpt_runs(f->a), 0);
	assert_int_equal(rvs_sqlite_ckpt_attach(f->a), 0);
	assert_int_equal(rvs_sqlite_ckpt_runs(f->a), 0);
	/* Detached, a connection checkpoints for itself again (sqlite's
	 * automatic checkpoint inside COMMIT). */
	rvs_sqlite_ckpt_detach(f->a);
	{
		long long before = file_size(f->db);
		write_rows(f->a, 1100);
		assert_true(file_size(f->db) >= before + 1000LL * 4096);
	}
}

static void test_ckpt_refuses_what_it_cannot_checkpoint(void **state)
{
	struct fx *f = *state;
	sqlite3 *mem;

	assert_int_equal(sqlite3_open(":memory:", &mem), SQLITE_OK);
	assert_int_equal(rvs_sqlite_ckpt_attach(mem), -EINVAL);
	rvs_sqlite_ckpt_detach(mem); /* never attached: no effect */
	sqlite3_close(mem);
	/* Detaching a connection that never attached leaves the file's
	 * checkpointer to the ones that did. */
	assert_int_equal(rvs_sqlite_ckpt_attach(f->a), 0);
	{
		sqlite3 *b;
		assert_int_equal(sqlite3_open(f->db, &b), SQLITE_OK);
		rvs_sqlite_ckpt_detach(b);
		sqlite3_close(b);
	}
	write_rows(f->a, 20);
	assert_true(wait_db_size(f->db, 20 * 4096));
	assert_true(rvs_sqlite_ckpt_runs(f->a) >= 1);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_ckpt_wal_past_threshold_is_copied_by_the_checkpointer, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_ckpt_wal_past_hard_limit_is_truncated, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ckpt_below_threshold_waits_for_the_idle_pass,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ckpt_shared_per_file_and_stopped_with_the_last,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ckpt_refuses_what_it_cannot_checkpoint, setup,
						teardown),
	};
	rvt_store_cases(tests);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
