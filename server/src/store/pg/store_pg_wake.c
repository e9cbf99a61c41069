/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_wake.c — decode wake-ups on PostgreSQL (store_part.h): a
 * listener is a libpq connection of its own that LISTENs on
 * RVS_PG_WAKE_CHANNEL, where every transaction that queues a decode
 * (store_pg.c: upload_add, requeue_build_id) NOTIFYs at its commit.
 *
 * Invariants: the connection is used by one thread at a time (the event
 * loop, after the open on a work thread); after the open nothing here
 * blocks — libpq keeps its socket non-blocking, PQconsumeInput reads only
 * what has arrived, PQnotifies hands out what it parsed; a notification
 * carries no data (the decoder asks the queue what to do), so several
 * collapse into one wake-up without loss.
 */
#include "store/pg/store_part.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include <libpq-fe.h>

struct rvs_wake {
	PGconn *pg;
};

int rvs_pg_wake_open(const char *dsn, struct rvs_wake **out)
{
	struct rvs_wake *w = calloc(1, sizeof *w);
	PGresult *r;
	int ok;

	if (!w)
		return -ENOMEM;
	w->pg = PQconnectdb(dsn);
	if (PQstatus(w->pg) != CONNECTION_OK) {
		rvs_log("error", "postgresql listener connect", "err=\"%s\"",
			PQerrorMessage(w->pg));
		rvs_pg_wake_close(w);
		return -EIO;
	}
	r = PQexec(w->pg, "LISTEN " RVS_PG_WAKE_CHANNEL);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	if (!ok)
		rvs_log("error", "postgresql listen", "err=\"%s\"", PQresultErrorMessage(r));
	PQclear(r);
	if (!ok || PQsetnonblocking(w->pg, 1) != 0) {
		rvs_pg_wake_close(w);
		return -EIO;
	}
	*out = w;
	return 0;
}

int rvs_pg_wake_fd(const struct rvs_wake *w)
{
	int fd = PQsocket(w->pg);

	assert(fd >= 0); /* open succeeded and the connection was not reset */
	return fd;
}

int rvs_pg_wake_drain(struct rvs_wake *w)
{
	PGnotify *n;
	int count = 0;

	if (!PQconsumeInput(w->pg) || PQstatus(w->pg) != CONNECTION_OK) {
		rvs_log("warn", "postgresql listener lost", "err=\"%s\"", PQerrorMessage(w->pg));
		return -EIO;
	}
	while ((n = PQnotifies(w->pg))) {
		count++;
		PQfreemem(n);
	}
	return count;
}

void rvs_pg_wake_close(struct rvs_wake *w)
{
	if (!w)
		return;
	PQfinish(w->pg);
	free(w);
}
