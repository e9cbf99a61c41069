/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_store_errors.c — store.h's error contract: every storage error is
 * transient (the same call may succeed later: the decoder keeps the upload
 * queued) or permanent (quarantine).  Without a server: PostgreSQL's
 * SQLSTATE table (pg.h rvs_pg_errno) row by row, a statement on a
 * connection that is down (no SQLSTATE: PQstatus decides), sqlite's result
 * codes through rvc_sqlite_errno, and rvs_store_transient itself.  With a
 * PostgreSQL server (tests/server/pg_harness.h; skipped, visibly, without
 * one): pipelines whose session another connection ends at random moments
 * (pg_terminate_backend: the same FATAL 57P01 a fast restart sends) break
 * off as transient, never -EIO, leave their connection unusable
 * (rvs_pg_usable) rather than half-read, and every COMMIT reported done is
 * in the table.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "rearview/common.h"
#include "store/pg/pg.h"
#include "store/store.h"
#include "pg_harness.h"

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

/* The pipeline test's victim: its session's pid, which the terminator
 * ends while it runs; 0 to stop the terminator. */
struct victim {
	pthread_mutex_t mu;
	int pid, stop, ended;
	const char *uri;
};

static void *terminator(void *arg)
{
	struct victim *v = arg;
	PGconn *pg = PQconnectdb(v->uri);
	unsigned seed = 1;
	int last = 0; /* the session last ended: each is ended once */

	PQclear(PQexec(pg, "SET client_min_messages = error"));
	for (;;) {
		struct timespec ts = {0, 0};
		char pid[16];
		const char *p[1] = {pid};
		PGresult *r;

		pthread_mutex_lock(&v->mu);
		if (v->stop) {
			pthread_mutex_unlock(&v->mu);
			break;
		}
		snprintf(pid, sizeof pid, "%d", v->pid);
		pthread_mutex_unlock(&v->mu);
		if ((int)strtol(pid, NULL, 10) == last) {
			sched_yield();
			continue;
		}
		/* Any moment of the pipeline: before, inside, between its
		 * statements, before its sync. */
		ts.tv_nsec = (long)(rand_r(&seed) % 3000) * 1000L;
		nanosleep(&ts, NULL);
		r = PQexecParams(pg, "SELECT pg_terminate_backend($1::int)", 1, NULL, p, NULL, NULL,
				 0);
		if (PQresultStatus(r) == PGRES_TUPLES_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
			pthread_mutex_lock(&v->mu);
			v->ended++;
			pthread_mutex_unlock(&v->mu);
			last = (int)strtol(pid, NULL, 10);
		}
		PQclear(r);
	}
	PQfinish(pg);
	return NULL;
}

/* 400 pipelines BEGIN; INSERT (a text of 1 to 40 KB: the pipeline spans
 * several of the server's reads, so a session can end between COMMIT and
 * the sync); COMMIT on one connection while another ends its session at
 * random moments: each run is 0 or -EAGAIN, never the statements' fault;
 * after -EAGAIN the connection is usable only if it really is; a run that
 * says 0, or fails only past the COMMIT (*failed), has its row stored.
 * More runs while none was broken off yet (a loaded machine can finish 400
 * before the terminator's first connection), up to RUNS_MAX or a minute. */
static void test_store_errors_pipeline_broken_off_is_transient(void **state)
{
	enum { RUNS = 400, RUNS_MAX = 20000 };
	static const char ddl[] = "CREATE TABLE t (i int PRIMARY KEY, pad text)";
	struct pgh h;
	struct victim v = {.mu = PTHREAD_MUTEX_INITIALIZER};
	char uri[384], num[16], *pad = malloc(40 * 1024 + 1);
	static unsigned char done[RUNS_MAX];
	unsigned seed = 7;
	int rc, broken = 0, reused = 0;
	pthread_t t;
	PGconn *pg;
	PGresult *r;

	(void)state;
	assert_non_null(pad);
	memset(pad, 'x', 40 * 1024);
	if ((rc = pgh_start(&h)) == -ENOENT) {
		free(pad);
		print_message("SKIP: no PostgreSQL: %s\n", h.why);
		skip();
	}
	if (rc)
		fail_msg("PostgreSQL did not start: %s", h.why);
	assert_int_equal(pgh_fresh_db(&h, uri, sizeof uri), 0);
	pg = PQconnectdb(uri);
	assert_int_equal(PQstatus(pg), CONNECTION_OK);
	assert_int_equal(pgh_exec(&h, pg, ddl), 0);
	v.uri = uri;
	v.pid = PQbackendPID(pg);
	assert_int_equal(pthread_create(&t, NULL, terminator, &v), 0);
	memset(done, 0, sizeof done);
	time_t deadline = time(NULL) + 60;
	int runs = 0;
	for (int i = 0; i < RUNS_MAX && (i < RUNS || (!broken && time(NULL) < deadline)); i++) {
		runs = i + 1;
		struct rvs_pg_pipe pp = {0};
		struct rvs_pg_step *st;
		struct rvs_pg_error err;
		size_t failed, commit;
		size_t len = 1024 + (size_t)(rand_r(&seed) % (39 * 1024));

		pad[len] = 0;
		snprintf(num, sizeof num, "%d", i);
		rvs_pg_pipe_add(&pp, "BEGIN", 0, 0, 0);
		st = rvs_pg_pipe_add(&pp, "INSERT INTO t VALUES ($1::int, $2)", 0, 1, 0);
		assert_non_null(st);
		rvs_pg_text(&st->p, num);
		rvs_pg_text(&st->p, pad);
		commit = pp.n;
		rvs_pg_pipe_add(&pp, "COMMIT", 0, 2, 0);
		rc = rvs_pg_pipe_run(pg, &pp, 0, &failed, &err);
		rvs_pg_pipe_free(&pp);
		pad[len] = 'x';
		if (rc && rc != -EAGAIN)
			fail_msg("run %d: errno %d at step %zu (%s): a session ended is transient",
				 i, rc, failed, err.msg);
		if (!rc || failed > commit)
			done[i] = 1;
		if (!rc)
			continue;
		broken++;
		if (rvs_pg_usable(pg)) {
			/* Usable means it: the next statement runs. */
			reused++;
			r = PQexec(pg, "SELECT 1");
			if (PQresultStatus(r) != PGRES_TUPLES_OK && PQstatus(pg) == CONNECTION_OK &&
			    PQpipelineStatus(pg) == PQ_PIPELINE_OFF)
				fail_msg("run %d: usable after -EAGAIN, then: %s", i,
					 PQerrorMessage(pg));
			PQclear(r);
		}
		if (!rvs_pg_usable(pg)) {
			PQreset(pg);
			assert_int_equal(PQstatus(pg), CONNECTION_OK);
			pthread_mutex_lock(&v.mu);
			v.pid = PQbackendPID(pg);
			pthread_mutex_unlock(&v.mu);
		}
	}
	pthread_mutex_lock(&v.mu);
	v.stop = 1;
	pthread_mutex_unlock(&v.mu);
	pthread_join(t, NULL);
	PQreset(pg);
	r = PQexec(pg, "SELECT i FROM t");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	for (int k = 0; k < PQntuples(r); k++)
		done[strtol(PQgetvalue(r, k, 0), NULL, 10)] |= 2;
	PQclear(r);
	for (int i = 0; i < runs; i++)
		if (done[i] == 1)
			fail_msg("run %d: reported committed, not in the table", i);
	print_message("pipelines: %d runs, %d sessions ended, %d broken off (%d then usable)\n",
		      runs, v.ended, broken, reused);
	/* The test ended sessions mid-pipeline, or it showed nothing. */
	assert_true(broken > 0);
	PQfinish(pg);
	pgh_stop(&h);
	free(pad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_errors_sqlstate_table),
		cmocka_unit_test(test_store_errors_statement_on_a_lost_connection_is_transient),
		cmocka_unit_test(test_store_errors_sqlite_busy_locked_full_are_transient),
		cmocka_unit_test(test_store_errors_transient_set),
		cmocka_unit_test(test_store_errors_pipeline_broken_off_is_transient),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
