/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg.h — the PostgreSQL backend's one statement helper (pg.c), shared by
 * its files (store_pg*.c) and the PostgreSQL blob backend: one parameter
 * builder, one function that runs a statement and turns a failure's
 * SQLSTATE into an errno through one table, the result readers, and the
 * pool lending store_pg.c's connections to the reads in files of their own.
 * Internal to the store and blob backends.  Any thread; a connection is
 * used by one thread at a time.
 */
#ifndef RVS_STORE_PG_H
#define RVS_STORE_PG_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "store/store.h"

#define RVS_PG_MAX_PARAMS 32

/* The parameters of one statement, added in order: text (NULL is SQL
 * NULL), an integer or a real in decimal text, or binary bytea.  A value
 * points into num[] or at the caller's memory, which must outlive the
 * statement.  typed: every parameter is sent typed text (a parameter some
 * statement does not name has no type to infer), else the server infers
 * each one's.  Start from {0}. */
struct rvs_pg_params {
	int n, typed;
	const char *v[RVS_PG_MAX_PARAMS];
	int len[RVS_PG_MAX_PARAMS], fmt[RVS_PG_MAX_PARAMS];
	char num[RVS_PG_MAX_PARAMS][32];
};

void rvs_pg_text(struct rvs_pg_params *p, const char *v);
void rvs_pg_i64(struct rvs_pg_params *p, int64_t v);
/* v, or SQL NULL when has is 0. */
void rvs_pg_opt_i64(struct rvs_pg_params *p, int has, int64_t v);
void rvs_pg_dbl(struct rvs_pg_params *p, double v);
/* v[0..len) as binary bytea; v NULL is SQL NULL. */
void rvs_pg_bytea(struct rvs_pg_params *p, const void *v, size_t len);

/* A failed statement: its SQLSTATE ("" when none, e.g. a lost connection)
 * and the first line of its message. */
struct rvs_pg_error {
	char state[6];
	char msg[200];
	char column[64]; /* the column a constraint names, "" when none */
};

/* The errno of a SQLSTATE (NULL or "" included), from one table: -EEXIST
 * for a uniqueness conflict (23505) and the rest of class 23, integrity
 * constraints, as sqlite's SQLITE_CONSTRAINT; the transient failures of
 * store.h's contract -EAGAIN (class 08 connection exceptions, admin and
 * crash shutdown 57P01/57P02, cannot connect now 57P03, a canceled
 * statement 57014, class 53 insufficient resources as too many
 * connections 53300, serialization 40001, deadlock 40P01, completion
 * unknown 40003, lock not available 55P03, the server's I/O error 58030)
 * and -ENOSPC (disk full, 53100); -EIO for anything else.  Pure. */
int rvs_pg_errno(const char *sqlstate);

/* Flags of rvs_pg_exec. */
#define RVS_PG_PREPARED 1u /* sql names a statement prepared on pg */
#define RVS_PG_BINARY	2u /* results in binary */
#define RVS_PG_SCRIPT	4u /* sql is one or more statements without parameters */

/* Runs one statement on pg: SQL text, or the prepared statement sql names
 * (RVS_PG_PREPARED), with p's parameters (p may be NULL), or a script of
 * statements (RVS_PG_SCRIPT, no parameters: migrations, transaction
 * control; the result is the last statement's).  On success
 * *out (when out is not NULL) gets the result, which the caller clears;
 * returns 0.  On failure returns the SQLSTATE's errno (rvs_pg_errno), or
 * -EAGAIN when there is none and pg's connection is no longer up (lost
 * mid-statement: PQstatus, not the message's text) or when the server
 * ended the session (severity FATAL or PANIC, whatever the SQLSTATE: the
 * statement was not judged), with the result
 * cleared and *out NULL; err (when not NULL) gets the SQLSTATE and
 * message, else a failure other than a conflict is logged. */
int rvs_pg_exec(PGconn *pg, const char *sql, unsigned flags, const struct rvs_pg_params *p,
		PGresult **out, struct rvs_pg_error *err);

/* Statements sent in one round trip (libpq's pipeline mode), run in
 * order; each step has its own parameters (into which the step's num[]
 * points, so a step never moves: each is allocated on its own) and up to
 * RVS_PG_PIPE_OWN malloc'd buffers it owns (its array literals).  tag is
 * the caller's (which trace a step belongs to).  A step with keep set
 * holds its result in res after a run, until rvs_pg_pipe_free.  The
 * results of a pipeline must be small (rows of a few ids): they are read
 * only once every statement is sent.  Start from {0}. */
#define RVS_PG_PIPE_OWN 8
struct rvs_pg_step {
	const char *sql;
	unsigned flags; /* RVS_PG_PREPARED: sql names a prepared statement */
	int tag, keep;
	struct rvs_pg_params p;
	char *own[RVS_PG_PIPE_OWN];
	int nown;
	PGresult *res;
};
struct rvs_pg_pipe {
	struct rvs_pg_step **step;
	size_t n, cap;
	int oom; /* a step or buffer could not be added */
};

/* A new last step of pp running sql (static: it must outlive the pipe)
 * with the flags, tag and keep given; its parameters are to be added to
 * the result's p.  NULL (pp->oom set) when out of memory. */
struct rvs_pg_step *rvs_pg_pipe_add(struct rvs_pg_pipe *pp, const char *sql, unsigned flags,
				    int tag, int keep);
/* Gives buf (malloc'd, may be NULL) to st: freed with the pipe; NULL sets
 * pp->oom.  Returns buf. */
char *rvs_pg_pipe_own(struct rvs_pg_pipe *pp, struct rvs_pg_step *st, char *buf);
/* Sends steps [from, pp->n) and a sync, in pipeline mode, and reads every
 * result.  0 when all succeeded; else the first failure's errno (as
 * rvs_pg_exec's: rvs_pg_errno, -ENOMEM when pp->oom, and -EAGAIN whenever
 * the pipeline broke off for the connection's sake — a send failed, a
 * result or the sync did not come — never -EIO) with its index in
 * *failed and its SQLSTATE, message and column in err.  *failed is the
 * failed step, or for a broken pipeline the first step whose result was
 * not read (whether it ran is unknown), pp->n when every step's result
 * was read (only the sync failed: a COMMIT among them did commit).  The
 * steps after a statement's failure were not run (PostgreSQL skips to the
 * sync); inside a transaction block that transaction is then failed, and
 * the caller rolls back (to a savepoint).  The connection leaves pipeline
 * mode unless it broke; a caller keeping connections asks rvs_pg_usable
 * before reusing one. */
int rvs_pg_pipe_run(PGconn *pg, struct rvs_pg_pipe *pp, size_t from, size_t *failed,
		    struct rvs_pg_error *err);

/* Whether pg can run the next statement as a fresh session would: up, out
 * of pipeline mode, outside a transaction.  A connection that is not (a
 * pipeline broke off, a server restart ended it) is closed or reset by its
 * keeper, never reused. */
int rvs_pg_usable(PGconn *pg);
/* Frees every step and result of pp; pp is {0} again. */
void rvs_pg_pipe_free(struct rvs_pg_pipe *pp);

/* An array literal's text being built ("{", the elements, "}"): start
 * from {malloc(n), 0, n}; b is NULL (and freed) after an allocation
 * failure, and every call then does nothing.  Elements are separated by
 * ',' once the opening "{" is in. */
struct rvs_pg_lit {
	char *b;
	size_t len, cap;
};
/* Appends n bytes of p. */
void rvs_pg_lit_put(struct rvs_pg_lit *l, const char *p, size_t n);
/* Appends the element v. */
void rvs_pg_lit_i64(struct rvs_pg_lit *l, int64_t v);
/* Appends the element v: double-quoted, '\' and '"' escaped; NULL for
 * v NULL. */
void rvs_pg_lit_text(struct rvs_pg_lit *l, const char *v);

/* Column col of row as text, NULL for SQL NULL. */
const char *rvs_pg_val(const PGresult *r, int row, int col);
/* Column col of row as an integer (text results), 0 for SQL NULL. */
int64_t rvs_pg_val_i64(const PGresult *r, int row, int col);
/* Column col of row as a real (text results), 0 for SQL NULL. */
double rvs_pg_val_dbl(const PGresult *r, int row, int col);
/* Rows [from, to) of r to cb as part: integer columns (int2/4/8) as
 * RVS_COL_INT, the rest as text.  0 or cb's stop value. */
int rvs_pg_rows_out(const PGresult *r, int from, int to, int part, rvs_row_fn cb, void *arg);

/* store_pg.c's pooled connections, lent to a read in another file for the
 * read's length: get returns one (NULL: none could be had, -EAGAIN) with a
 * handle that put gives back (closing the connection if it broke or was
 * left in a transaction). */
struct rvs_pg_pool {
	PGconn *(*get)(struct rvs_store *s, void **handle);
	void (*put)(struct rvs_store *s, void *handle);
	struct rvs_store *s;
};

#endif
