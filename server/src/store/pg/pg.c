/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg.c — the PostgreSQL backend's statement helper (pg.h).
 *
 * Invariants: a statement's failure is mapped to an errno in one place
 * (rvs_pg_errno's table), so every file of the backend answers a
 * uniqueness conflict with -EEXIST as store.h promises; a result is either
 * handed to the caller or cleared, never both; a parameter list never
 * exceeds RVS_PG_MAX_PARAMS (asserted).
 */
#include "store/pg/pg.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXTOID 25 /* pg_type.oid of text */

void rvs_pg_text(struct rvs_pg_params *p, const char *v)
{
	assert(p->n < RVS_PG_MAX_PARAMS);
	p->v[p->n] = v;
	p->len[p->n] = 0;
	p->fmt[p->n++] = 0;
}

void rvs_pg_i64(struct rvs_pg_params *p, int64_t v)
{
	assert(p->n < RVS_PG_MAX_PARAMS);
	snprintf(p->num[p->n], sizeof p->num[p->n], "%" PRId64, v);
	rvs_pg_text(p, p->num[p->n]);
}

void rvs_pg_opt_i64(struct rvs_pg_params *p, int has, int64_t v)
{
	if (has)
		rvs_pg_i64(p, v);
	else
		rvs_pg_text(p, NULL);
}

void rvs_pg_dbl(struct rvs_pg_params *p, double v)
{
	assert(p->n < RVS_PG_MAX_PARAMS);
	snprintf(p->num[p->n], sizeof p->num[p->n], "%.17g", v);
	rvs_pg_text(p, p->num[p->n]);
}

void rvs_pg_bytea(struct rvs_pg_params *p, const void *v, size_t len)
{
	assert(p->n < RVS_PG_MAX_PARAMS && len <= INT32_MAX);
	p->v[p->n] = v;
	p->len[p->n] = (int)len;
	p->fmt[p->n++] = 1;
}

/* SQLSTATE (a whole code, or a two-character class) → errno, first match.
 * The transient ones (store.h, rvs_store_transient) say the server or the
 * moment failed, not the statement: -EAGAIN or, for a full disk, -ENOSPC. */
static const struct {
	const char *state;
	int err;
} ERRNOS[] = {
	{"23505", -EEXIST}, /* unique_violation: store.h's uniqueness conflict */
	{"23", -EEXIST},    /* the rest of integrity_constraint_violation */
	{"08", -EAGAIN},    /* connection_exception: lost, refused, failed */
	{"57P01", -EAGAIN}, /* admin_shutdown: pg_ctl stop/restart -m fast */
	{"57P02", -EAGAIN}, /* crash_shutdown: another backend crashed */
	{"57P03", -EAGAIN}, /* cannot_connect_now: starting up, recovering */
	{"57014", -EAGAIN}, /* query_canceled: statement timeout, a cancel at shutdown */
	{"53100", -ENOSPC}, /* disk_full */
	{"53", -EAGAIN},    /* insufficient_resources: too many connections (53300), memory */
	{"40001", -EAGAIN}, /* serialization_failure */
	{"40P01", -EAGAIN}, /* deadlock_detected */
	{"40003", -EAGAIN}, /* statement_completion_unknown */
	{"55P03", -EAGAIN}, /* lock_not_available: lock_timeout */
	{"58030", -EAGAIN}, /* io_error on the server */
};

int rvs_pg_errno(const char *sqlstate)
{
	for (size_t i = 0; sqlstate && i < sizeof ERRNOS / sizeof ERRNOS[0]; i++)
		if (strncmp(sqlstate, ERRNOS[i].state, strlen(ERRNOS[i].state)) == 0)
			return ERRNOS[i].err;
	return -EIO;
}

/* The errno of a failed statement's result r (NULL: libpq's own), its
 * SQLSTATE, message and column into err, or logged (a conflict is not). */
static int failure(PGconn *pg, const PGresult *r, struct rvs_pg_error *err)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *col = r ? PQresultErrorField(r, PG_DIAG_COLUMN_NAME) : NULL;
	const char *sev = r ? PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED) : NULL;
	int rc;

	/* A failure libpq made itself (no SQLSTATE): the server went away
	 * mid-statement when the connection is no longer up — read what is
	 * waiting first, so that an end already received is seen. */
	if (!state || !*state) {
		if (PQstatus(pg) == CONNECTION_OK)
			PQconsumeInput(pg);
		rc = PQstatus(pg) != CONNECTION_OK ? -EAGAIN : -EIO;
	} else if (sev && (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)) {
		/* The server ended the session (a shutdown, a timeout): the
		 * statement was not judged. */
		rc = -EAGAIN;
	} else {
		rc = rvs_pg_errno(state);
	}

	if (err) {
		snprintf(err->state, sizeof err->state, "%s", state ? state : "");
		snprintf(err->column, sizeof err->column, "%s", col ? col : "");
		snprintf(err->msg, sizeof err->msg, "%s",
			 r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
		err->msg[strcspn(err->msg, "\n")] = 0;
	} else if (rc != -EEXIST) {
		rvs_log("error", "postgresql", "sqlstate=%s err=\"%s\"", state ? state : "-",
			r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
	}
	return rc;
}

int rvs_pg_exec(PGconn *pg, const char *sql, unsigned flags, const struct rvs_pg_params *p,
		PGresult **out, struct rvs_pg_error *err)
{
	static const Oid text[RVS_PG_MAX_PARAMS] = {
		TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	int n = p ? p->n : 0, binary = (flags & RVS_PG_BINARY) != 0;
	const char *const *v = p ? p->v : NULL;
	const int *len = p ? p->len : NULL, *fmt = p ? p->fmt : NULL;
	PGresult *r = flags & RVS_PG_SCRIPT ? PQexec(pg, sql)
		      : flags & RVS_PG_PREPARED
			      ? PQexecPrepared(pg, sql, n, v, len, fmt, binary)
			      : PQexecParams(pg, sql, n, p && p->typed ? text : NULL, v, len, fmt,
					     binary);
	ExecStatusType st = PQresultStatus(r);
	int rc;

	assert(!(flags & RVS_PG_SCRIPT) || !p);
	if (out)
		*out = NULL;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (out)
			*out = r;
		else
			PQclear(r);
		return 0;
	}
	rc = failure(pg, r, err);
	PQclear(r);
	return rc;
}

struct rvs_pg_step *rvs_pg_pipe_add(struct rvs_pg_pipe *pp, const char *sql, unsigned flags,
				    int tag, int keep)
{
	struct rvs_pg_step *st;

	if (pp->n == pp->cap) {
		size_t cap = pp->cap ? 2 * pp->cap : 16;
		struct rvs_pg_step **v = realloc(pp->step, cap * sizeof *v);
		if (!v) {
			pp->oom = 1;
			return NULL;
		}
		pp->step = v;
		pp->cap = cap;
	}
	if (!(st = calloc(1, sizeof *st))) {
		pp->oom = 1;
		return NULL;
	}
	st->sql = sql;
	st->flags = flags;
	st->tag = tag;
	st->keep = keep;
	pp->step[pp->n++] = st;
	return st;
}

char *rvs_pg_pipe_own(struct rvs_pg_pipe *pp, struct rvs_pg_step *st, char *buf)
{
	assert(st->nown < RVS_PG_PIPE_OWN);
	if (!buf)
		pp->oom = 1;
	else
		st->own[st->nown++] = buf;
	return buf;
}

void rvs_pg_pipe_free(struct rvs_pg_pipe *pp)
{
	for (size_t i = 0; i < pp->n; i++) {
		for (int k = 0; k < pp->step[i]->nown; k++)
			free(pp->step[i]->own[k]);
		PQclear(pp->step[i]->res);
		free(pp->step[i]);
	}
	free(pp->step);
	memset(pp, 0, sizeof *pp);
}

int rvs_pg_usable(PGconn *pg)
{
	return PQstatus(pg) == CONNECTION_OK && PQpipelineStatus(pg) == PQ_PIPELINE_OFF &&
	       PQtransactionStatus(pg) == PQTRANS_IDLE;
}

/* Ends a pipeline left before its sync was read: reads and drops what is
 * still to come, then leaves pipeline mode.  Gives up (pg stays in
 * pipeline mode: rvs_pg_usable says no) when the connection is lost or
 * nothing more arrives. */
static void pipe_drain(PGconn *pg)
{
	int nulls = 0;

	while (PQstatus(pg) == CONNECTION_OK && PQpipelineStatus(pg) != PQ_PIPELINE_OFF &&
	       !PQexitPipelineMode(pg) && nulls < 2) {
		PGresult *r = PQgetResult(pg);
		nulls = r ? 0 : nulls + 1;
		PQclear(r);
	}
}

/* A pipeline that broke off before its sync (a send failed, a result or
 * the sync did not come: the connection's failure, not a statement's):
 * rc when a statement had already failed, else -EAGAIN with the
 * connection's message (or the result r's, when one came) in err.  Never
 * -EIO: nothing of the statements' own was judged.  The rest of the
 * pipeline is drained (pipe_drain). */
static int pipe_broken(PGconn *pg, int rc, const PGresult *r, struct rvs_pg_error *err)
{
	if (!rc && err) {
		const char *msg = r ? PQresultErrorMessage(r) : "";
		err->state[0] = 0;
		err->column[0] = 0;
		snprintf(err->msg, sizeof err->msg, "%s", *msg ? msg : PQerrorMessage(pg));
		err->msg[strcspn(err->msg, "\n")] = 0;
		if (!err->msg[0])
			snprintf(err->msg, sizeof err->msg, "connection lost");
	}
	pipe_drain(pg);
	return rc ? rc : -EAGAIN;
}

int rvs_pg_pipe_run(PGconn *pg, struct rvs_pg_pipe *pp, size_t from, size_t *failed,
		    struct rvs_pg_error *err)
{
	int rc = 0;

	*failed = pp->n;
	if (err)
		err->state[0] = err->msg[0] = err->column[0] = 0;
	if (pp->oom) {
		/* Nothing was sent. */
		*failed = from;
		if (err)
			snprintf(err->msg, sizeof err->msg, "out of memory");
		return -ENOMEM;
	}
	if (from >= pp->n)
		return 0;
	if (!PQenterPipelineMode(pg))
		return pipe_broken(pg, 0, NULL, err);
	for (size_t i = from; i < pp->n; i++) {
		const struct rvs_pg_step *st = pp->step[i];
		const struct rvs_pg_params *p = &st->p;
		int ok = st->flags & RVS_PG_PREPARED
				 ? PQsendQueryPrepared(pg, st->sql, p->n, p->v, p->len, p->fmt, 0)
				 : PQsendQueryParams(pg, st->sql, p->n, NULL, p->v, p->len, p->fmt,
						     0);
		assert(!p->typed && !(st->flags & ~RVS_PG_PREPARED));
		if (!ok) {
			/* A send fails only when the connection does.  No
			 * result was read: whether an earlier step, already
			 * flushed, ran is unknown. */
			*failed = from;
			return pipe_broken(pg, 0, NULL, err);
		}
	}
	if (!PQpipelineSync(pg)) {
		*failed = from;
		return pipe_broken(pg, 0, NULL, err);
	}
	for (size_t i = from; i < pp->n; i++) {
		PGresult *r = PQgetResult(pg);
		ExecStatusType st = PQresultStatus(r);

		if (!r || st == PGRES_PIPELINE_SYNC) {
			/* The connection ended before step i's result: whether
			 * it ran is unknown. */
			PQclear(r);
			if (!rc)
				*failed = i;
			return pipe_broken(pg, rc, NULL, err);
		}
		if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
			if (pp->step[i]->keep) {
				PQclear(pp->step[i]->res);
				pp->step[i]->res = r;
			} else {
				PQclear(r);
			}
		} else {
			if (!rc && st != PGRES_PIPELINE_ABORTED) {
				*failed = i;
				rc = failure(pg, r, err);
			}
			PQclear(r);
		}
		/* Each statement's results end with a NULL. */
		while ((r = PQgetResult(pg))) {
			if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
				/* Ended early (the connection's end): no more. */
				PQclear(r);
				if (!rc)
					*failed = i + 1;
				return pipe_broken(pg, rc, NULL, err);
			}
			PQclear(r);
		}
		if (PQstatus(pg) != CONNECTION_OK) {
			if (!rc)
				*failed = i + 1;
			return pipe_broken(pg, rc, NULL, err);
		}
	}
	{
		/* Every step's result was read: a failure now (the session
		 * ended before the sync, say) blames none of them. */
		PGresult *r = PQgetResult(pg);
		int sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;

		if (!sync || !PQexitPipelineMode(pg)) {
			rc = pipe_broken(pg, rc, sync ? NULL : r, err);
			PQclear(r);
			return rc;
		}
		PQclear(r);
	}
	return rc;
}

void rvs_pg_lit_put(struct rvs_pg_lit *l, const char *p, size_t n)
{
	if (!l->b)
		return;
	if (l->len + n + 1 > l->cap) {
		size_t cap = 2 * l->cap + n + 1;
		char *b = realloc(l->b, cap);
		if (!b) {
			free(l->b);
			l->b = NULL;
			return;
		}
		l->b = b;
		l->cap = cap;
	}
	memcpy(l->b + l->len, p, n);
	l->len += n;
	l->b[l->len] = 0;
}

void rvs_pg_lit_i64(struct rvs_pg_lit *l, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof num, "%s%" PRId64, l->len > 1 ? "," : "", v);
	rvs_pg_lit_put(l, num, (size_t)n);
}

void rvs_pg_lit_text(struct rvs_pg_lit *l, const char *v)
{
	if (l->len > 1)
		rvs_pg_lit_put(l, ",", 1);
	if (!v) {
		rvs_pg_lit_put(l, "NULL", 4);
		return;
	}
	rvs_pg_lit_put(l, "\"", 1);
	for (const char *p = v; *p; p++) {
		size_t n = strcspn(p, "\\\"");
		rvs_pg_lit_put(l, p, n);
		p += n;
		if (!*p)
			break;
		rvs_pg_lit_put(l, "\\", 1);
		rvs_pg_lit_put(l, p, 1);
	}
	rvs_pg_lit_put(l, "\"", 1);
}

const char *rvs_pg_val(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

int64_t rvs_pg_val_i64(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

double rvs_pg_val_dbl(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? 0 : strtod(PQgetvalue(r, row, col), NULL);
}

/* The most columns a read's row has. */
#define READ_MAX_COLS 32

int rvs_pg_rows_out(const PGresult *r, int from, int to, int part, rvs_row_fn cb, void *arg)
{
	struct rvs_col cols[READ_MAX_COLS];
	int n = PQnfields(r), stop;

	assert(n <= READ_MAX_COLS);
	for (int row = from; row < to; row++) {
		for (int i = 0; i < n; i++) {
			Oid t = PQftype(r, i);
			cols[i].name = PQfname(r, i);
			cols[i].i = 0;
			cols[i].text = NULL;
			if (PQgetisnull(r, row, i)) {
				cols[i].type = RVS_COL_NULL;
			} else if (t == 20 || t == 21 || t == 23) { /* int8, int2, int4 */
				cols[i].type = RVS_COL_INT;
				cols[i].i = strtoll(PQgetvalue(r, row, i), NULL, 10);
			} else {
				cols[i].type = RVS_COL_TEXT;
				cols[i].text = PQgetvalue(r, row, i);
			}
		}
		if ((stop = cb(arg, part, cols, (size_t)n)))
			return stop;
	}
	return 0;
}
