/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_part.c — PostgreSQL's weekly partitions (store_part.h;
 * store_pg.c's migration 8 makes the partitioned tables and
 * rv_week_partitions) and the retention that drops them.
 *
 * uploads, traces, trace_methods, trace_chains and trace_unresolved are
 * partitioned BY RANGE on received_at, one partition per week of unix
 * time: <table>_w<week> holds [week * 604800, (week + 1) * 604800).
 * Invariants:
 * - the five partitions of a week are made together (rv_week_partitions)
 *   and dropped together, in one transaction, under the advisory lock
 *   PART_LOCK, so a node making this week's partitions and another's
 *   retention never interleave;
 * - a week is dropped only when all of it is older than the cutoff;
 * - nothing DELETEs a per-trace index row: the rows go with their
 *   partition; what other tables count of them (signatures and
 *   signature_counts, kept by traces_sig on a row's DELETE) is subtracted
 *   by week, grouped, before the drop, as the trigger would have;
 * - a dropped week's blobs (with the uploads naming each) move into
 *   retention_released in the same transaction, and leave it only when a
 *   call hands them to the caller (retention.c unlinks those no upload
 *   names any more): a crash between loses no blob name, and one handed
 *   out but not unlinked is an orphan the blob sweep collects.
 */
#include "store/pg/store_part.h"
#include "store/pg/pg.h"
#include "base/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

/* pg_advisory_xact_lock key of partition changes ("rvpart"). */
#define PART_LOCK "125852978488692"

static void rollback(PGconn *pg)
{
	PQclear(PQexec(pg, "ROLLBACK"));
}

int rvs_pg_part_ensure(PGconn *pg, int64_t *until)
{
	PGresult *r;
	int rc;

	assert(PQtransactionStatus(pg) == PQTRANS_IDLE);
	if ((rc = rvs_pg_exec(pg, "BEGIN", 0, NULL, NULL, NULL)) ||
	    (rc = rvs_pg_exec(pg, "SELECT pg_advisory_xact_lock(" PART_LOCK ")", 0, NULL, NULL,
			      NULL)) ||
	    (rc = rvs_pg_exec(
		     pg,
		     "SELECT rv_week_partitions(w), rv_week_partitions(w + 1), (w + 2) * 604800"
		     " FROM (SELECT extract(epoch FROM now())::bigint / 604800 AS w) x",
		     0, NULL, &r, NULL)))
		goto fail;
	*until = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
	PQclear(r);
	if ((rc = rvs_pg_exec(pg, "COMMIT", 0, NULL, NULL, NULL)))
		goto fail;
	return 0;
fail:
	rollback(pg);
	return rc;
}

/* Within the retention transaction: counts week w's traces out of the
 * per-signature totals, removes its uploads' rows from the unpartitioned
 * tables beside them (decode queue and quarantine, both small, and the
 * call-path aggregates until they are partitioned too), moves its blobs
 * into retention_released and drops its five partitions. */
static int drop_week(PGconn *pg, int64_t w)
{
	char sql[2048];
	PGresult *r;
	int n, rc = 0;

	n = snprintf(
		sql, sizeof sql,
		"UPDATE signature_counts s SET traces = s.traces - d.n FROM (SELECT signature,"
		" received_at / 604800 AS week, COALESCE(app_version, '') AS v, count(*) AS n"
		" FROM traces_w%1$lld WHERE signature IS NOT NULL GROUP BY 1, 2, 3) d"
		" WHERE s.signature = d.signature AND s.week = d.week AND s.app_version = d.v;"
		"DELETE FROM signature_counts WHERE traces <= 0;"
		"UPDATE signatures s SET traces = s.traces - d.n FROM (SELECT signature,"
		" count(*) AS n FROM traces_w%1$lld WHERE signature IS NOT NULL GROUP BY 1) d"
		" WHERE s.signature = d.signature;"
		"DELETE FROM signatures WHERE traces <= 0;"
		"DELETE FROM trace_paths WHERE trace_id IN (SELECT trace_id FROM uploads_w%1$lld);"
		"DELETE FROM trace_agg WHERE trace_id IN (SELECT trace_id FROM uploads_w%1$lld);"
		"DELETE FROM decode_queue WHERE trace_id IN (SELECT trace_id FROM uploads_w%1$lld);"
		"DELETE FROM quarantine WHERE trace_id IN (SELECT trace_id FROM uploads_w%1$lld);"
		"INSERT INTO retention_released AS x (blob_sha256, traces)"
		" SELECT COALESCE(blob_sha256, ''), count(*) FROM uploads_w%1$lld GROUP BY 1"
		" ON CONFLICT (blob_sha256) DO UPDATE SET traces = x.traces + excluded.traces;"
		"DROP TABLE IF EXISTS trace_unresolved_w%1$lld, trace_chains_w%1$lld,"
		" trace_methods_w%1$lld,"
		" traces_w%1$lld, uploads_w%1$lld;",
		(long long)w);
	assert(n > 0 && (size_t)n < sizeof sql);
	r = PQexec(pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		rvs_log("error", "postgresql retention", "week=%lld err=\"%s\"", (long long)w,
			r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
		rc = -EIO;
	} else {
		rvs_log("info", "retention dropped a week", "week=%lld from=%lld", (long long)w,
			(long long)(w * RVS_PG_WEEK_S));
	}
	PQclear(r);
	return rc;
}

/* The oldest partitioned week that ended at or before cutoff: 1 (*w set),
 * 0 when none, or -EIO. */
static int oldest_expired(PGconn *pg, int64_t cutoff, int64_t *w)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc;

	rvs_pg_i64(&a, cutoff);
	if ((rc = rvs_pg_exec(
		     pg,
		     "SELECT w FROM (SELECT substring(c.relname FROM '^uploads_w([0-9]+)$')::bigint"
		     " AS w FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
		     " WHERE i.inhparent = 'uploads'::regclass) p"
		     " WHERE w IS NOT NULL AND (w + 1) * 604800 <= $1::bigint ORDER BY w LIMIT 1",
		     0, &a, &r, NULL)))
		return rc;
	rc = PQntuples(r) == 1;
	if (rc)
		*w = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

int rvs_pg_part_retention(PGconn *pg, int64_t cutoff, size_t max, char (*blobs)[65], size_t *nblobs)
{
	struct rvs_pg_params a = {0};
	PGresult *r = NULL;
	int64_t n = 0, w = 0;
	int rc;

	assert(max > 0 && max <= 500);
	assert(PQtransactionStatus(pg) == PQTRANS_IDLE);
	*nblobs = 0;
	/* A partition's DROP locks its parent (ACCESS EXCLUSIVE) until the
	 * commit, which follows at once; behind a long reader it would queue
	 * every upload too, so it gives up instead (the next pass retries). */
	if ((rc = rvs_pg_exec(pg, "BEGIN", 0, NULL, NULL, NULL)) ||
	    (rc = rvs_pg_exec(pg, "SET LOCAL lock_timeout = '10s'", 0, NULL, NULL, NULL)) ||
	    (rc = rvs_pg_exec(pg, "SELECT pg_advisory_xact_lock(" PART_LOCK ")", 0, NULL, NULL,
			      NULL)))
		goto fail;
	/* Drop weeks until one left blobs to hand out, or none is left. */
	for (;;) {
		if ((rc = rvs_pg_exec(pg, "SELECT 1 FROM retention_released LIMIT 1", 0, NULL, &r,
				      NULL)))
			goto fail;
		rc = PQntuples(r);
		PQclear(r);
		if (rc)
			break;
		if ((rc = oldest_expired(pg, cutoff, &w)) < 0)
			goto fail;
		if (!rc || (rc = drop_week(pg, w)))
			break;
	}
	if (rc < 0)
		goto fail;
	rvs_pg_i64(&a, (int64_t)max);
	if ((rc = rvs_pg_exec(
		     pg,
		     "DELETE FROM retention_released WHERE blob_sha256 IN (SELECT blob_sha256"
		     " FROM retention_released ORDER BY blob_sha256 LIMIT $1::int)"
		     " RETURNING blob_sha256, traces",
		     0, &a, &r, NULL)))
		goto fail;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *blob = PQgetvalue(r, i, 0);

		n += strtoll(PQgetvalue(r, i, 1), NULL, 10);
		if (strlen(blob) == 64)
			memcpy(blobs[(*nblobs)++], blob, 65);
	}
	PQclear(r);
	assert(*nblobs <= max);
	if ((rc = rvs_pg_exec(pg, "COMMIT", 0, NULL, NULL, NULL)))
		goto fail;
	return n > INT32_MAX ? INT32_MAX : (int)n;
fail:
	*nblobs = 0;
	rollback(pg);
	return rc < 0 ? rc : -EIO;
}
