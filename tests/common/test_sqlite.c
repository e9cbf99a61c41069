/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sqlite.c — sqlite3 result codes to errno (proto/common/src/sqlite.c):
 * the whole table, extended codes mapped by their primary code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "rearview/common.h"

static void test_sqlite_success_codes_map_to_zero(void **state)
{
	assert_int_equal(rvc_sqlite_errno(SQLITE_OK), 0);
	assert_int_equal(rvc_sqlite_errno(SQLITE_ROW), 0);
	assert_int_equal(rvc_sqlite_errno(SQLITE_DONE), 0);
}

static void test_sqlite_primary_codes_map_per_table(void **state)
{
	assert_int_equal(rvc_sqlite_errno(SQLITE_NOMEM), -ENOMEM);
	assert_int_equal(rvc_sqlite_errno(SQLITE_BUSY), -EBUSY);
	assert_int_equal(rvc_sqlite_errno(SQLITE_LOCKED), -EBUSY);
	assert_int_equal(rvc_sqlite_errno(SQLITE_CANTOPEN), -ENOENT);
	assert_int_equal(rvc_sqlite_errno(SQLITE_READONLY), -EACCES);
	assert_int_equal(rvc_sqlite_errno(SQLITE_PERM), -EACCES);
	assert_int_equal(rvc_sqlite_errno(SQLITE_FULL), -ENOSPC);
	assert_int_equal(rvc_sqlite_errno(SQLITE_CONSTRAINT), -EEXIST);
	assert_int_equal(rvc_sqlite_errno(SQLITE_ERROR), -EIO);
	assert_int_equal(rvc_sqlite_errno(SQLITE_CORRUPT), -EIO);
	assert_int_equal(rvc_sqlite_errno(SQLITE_IOERR), -EIO);
}

static void test_sqlite_extended_codes_map_as_primary(void **state)
{
	assert_int_equal(rvc_sqlite_errno(SQLITE_BUSY_SNAPSHOT), -EBUSY);
	assert_int_equal(rvc_sqlite_errno(SQLITE_BUSY_RECOVERY), -EBUSY);
	assert_int_equal(rvc_sqlite_errno(SQLITE_LOCKED_SHAREDCACHE), -EBUSY);
	assert_int_equal(rvc_sqlite_errno(SQLITE_CONSTRAINT_UNIQUE), -EEXIST);
	assert_int_equal(rvc_sqlite_errno(SQLITE_CONSTRAINT_PRIMARYKEY), -EEXIST);
	assert_int_equal(rvc_sqlite_errno(SQLITE_READONLY_DBMOVED), -EACCES);
	assert_int_equal(rvc_sqlite_errno(SQLITE_CANTOPEN_ISDIR), -ENOENT);
	assert_int_equal(rvc_sqlite_errno(SQLITE_IOERR_FSYNC), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sqlite_success_codes_map_to_zero),
		cmocka_unit_test(test_sqlite_primary_codes_map_per_table),
		cmocka_unit_test(test_sqlite_extended_codes_map_as_primary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
