/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_store_errors.c — store.h's error contract, without a server: every
 * storage error is transient (the same call may succeed later: the decoder
 * keeps the upload queued) or permanent (quarantine).  PostgreSQL's
 * SQLSTATE table (pg.h rvs_pg_errno) row by row, a statement on a
 * connection that is down (no SQLSTATE: PQstatus decides), sqlite's result
 * codes through rvc_sqlite_errno, and rvs_store_transient itself.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "rearview/common.h"
#include "store/pg/pg.h"
#include "store/store.h"

static const struct {
	const char *state, *what;
	int err, transient;
} CASES[] = {
	{"08000", "connection_exception", -EAGAIN, 1},
	{"08003", "connection_does_not_exist", -EAGAIN, 1},
	{"08006", "connection_failure", -EAGAIN, 1},
	{"08001", "sqlclient_unable_to_establish_sqlconnection", -EAGAIN, 1},
	{"57P01", "admin_shutdown (pg_ctl stop/restart -m fast)", -EAGAIN, 1},
	{"57P02", "crash_shutdown", -EAGAIN, 1},
	{"57P03", "cannot_connect_now", -EAGAIN, 1},
	{"57014", "query_canceled", -EAGAIN, 1},
	{"53300", "too_many_connections", -EAGAIN, 1},
	{"53200", "out_of_memory (the server's)", -EAGAIN, 1},
	{"53100", "disk_full", -ENOSPC, 1},
	{"40001", "serialization_failure", -EAGAIN, 1},
	{"40P01", "deadlock_detected", -EAGAIN, 1},
	{"40003", "statement_completion_unknown", -EAGAIN, 1},
	{"55P03", "lock_not_available (lock_timeout)", -EAGAIN, 1},
	{"58030", "io_error", -EAGAIN, 1},
	{"23505", "unique_violation", -EEXIST, 0},
	{"23503", "foreign_key_violation", -EEXIST, 0},
	{"22P02", "invalid_text_representation", -EIO, 0},
	{"22021", "character_not_in_repertoire", -EIO, 0},
	{"42P01", "undefined_table", -EIO, 0},
	{"42601", "syntax_error", -EIO, 0},
	{"40002", "transaction_integrity_constraint_violation", -EIO, 0},
	{"XX000", "internal_error", -EIO, 0},
	{"", "no SQLSTATE", -EIO, 0},
};

static void test_store_errors_sqlstate_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
		int got = rvs_pg_errno(CASES[i].state);
		if (got != CASES[i].err || rvs_store_transient(got) != CASES[i].transient)
			fail_msg("SQLSTATE %s (%s): errno %d, transient %d; want %d, %d",
				 CASES[i].state, CASES[i].what, got, rvs_store_transient(got),
				 CASES[i].err, CASES[i].transient);
	}
	assert_int_equal(rvs_pg_errno(NULL), -EIO);
}

/* A statement on a connection that never came up (a socket directory with
 * no server): libpq's own failure carries no SQLSTATE, and the connection's
 * status makes it transient. */
static void test_store_errors_statement_on_a_lost_connection_is_transient(void **state)
{
	PGconn *pg = PQconnectdb("postgresql:///x?host=/nonexistent-rearview-dir&port=1"
				 "&connect_timeout=2");
	struct rvs_pg_error err;
	PGresult *r = (PGresult *)1;

	(void)state;
	memset(&err, 0x55, sizeof err); /* rvs_pg_exec writes every field read */
	assert_int_equal(PQstatus(pg), CONNECTION_BAD);
	assert_int_equal(rvs_pg_exec(pg, "SELECT 1", 0, NULL, &r, &err), -EAGAIN);
	assert_null(r);
	assert_string_equal(err.state, "");
	assert_true(rvs_store_transient(-EAGAIN));
	PQfinish(pg);
}

static void test_store_errors_sqlite_busy_locked_full_are_transient(void **state)
{
	static const struct {
		int code, transient;
	} S[] = {
		{SQLITE_BUSY, 1},     {SQLITE_BUSY_SNAPSHOT, 1}, {SQLITE_LOCKED, 1},
		{SQLITE_FULL, 1},     {SQLITE_CONSTRAINT, 0},	 {SQLITE_CORRUPT, 0},
		{SQLITE_MISMATCH, 0}, {SQLITE_TOOBIG, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof S / sizeof *S; i++)
		if (rvs_store_transient(rvc_sqlite_errno(S[i].code)) != S[i].transient)
			fail_msg("sqlite code %d (errno %d): transient should be %d", S[i].code,
				 rvc_sqlite_errno(S[i].code), S[i].transient);
}

static void test_store_errors_transient_set(void **state)
{
	static const int transient[] = {-EAGAIN, -EBUSY, -ENOSPC, -ETIMEDOUT};
	static const int permanent[] = {0,	 -EIO,	  -EEXIST, -ENOENT, -EBADMSG,
					-ENOMEM, -EPROTO, -ESTALE, -EINVAL, -EFBIG,
					-EDQUOT, -E2BIG,  -EACCES};

	(void)state;
	for (size_t i = 0; i < sizeof transient / sizeof *transient; i++)
		assert_true(rvs_store_transient(transient[i]));
	for (size_t i = 0; i < sizeof permanent / sizeof *permanent; i++)
		if (rvs_store_transient(permanent[i]))
			fail_msg("errno %d should be permanent", permanent[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_errors_sqlstate_table),
		cmocka_unit_test(test_store_errors_statement_on_a_lost_connection_is_transient),
		cmocka_unit_test(test_store_errors_sqlite_busy_locked_full_are_transient),
		cmocka_unit_test(test_store_errors_transient_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
