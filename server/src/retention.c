/*
 * retention.c — the retention pass (retention.h).
 *
 * Invariants: rows go in one transaction per batch, children before
 * parents, so a crash leaves either the whole upload or none of it; a blob
 * file is unlinked only after the transaction that removed its last
 * reference committed, only when no uploads row names it, and only when it
 * was not touched within RVS_RETENTION_BLOB_GRACE_S (see retention.h).
 * A blob left behind by a crash between commit and unlink is collected by
 * the next pass's orphan sweep, as are temporary files of dead writes.
 */
#include "blob.h"
#include "retention.h"
#include "rvs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#define BATCH 500

struct batch {
	char ids[BATCH][40];
	char blobs[BATCH][65];
	size_t n, nblobs;
};

static int fail(sqlite3 *db, const char *what)
{
	rvs_log("error", "msg=\"retention\" step=%s err=\"%s\"", what, sqlite3_errmsg(db));
	return -EIO;
}

/* The next BATCH old uploads and their blob names (a name may repeat). */
static int select_batch(sqlite3 *db, int64_t cutoff, struct batch *b)
{
	sqlite3_stmt *st;
	int rc;
	b->n = b->nblobs = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT trace_id, blob_sha256 FROM uploads WHERE received_at < ?"
			       " ORDER BY received_at LIMIT ?",
			       -1, &st, NULL))
		return fail(db, "select");
	sqlite3_bind_int64(st, 1, cutoff);
	sqlite3_bind_int(st, 2, BATCH);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		const char *blob = (const char *)sqlite3_column_text(st, 1);
		snprintf(b->ids[b->n++], sizeof b->ids[0], "%s", id ? id : "");
		if (blob && strlen(blob) == 64)
			snprintf(b->blobs[b->nblobs++], sizeof b->blobs[0], "%s", blob);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fail(db, "select");
}

static int delete_batch(sqlite3 *db, const struct batch *b)
{
	static const char *const sql[] = {
		"DELETE FROM traces WHERE trace_id = ?",
		"DELETE FROM decode_queue WHERE trace_id = ?",
		"DELETE FROM quarantine WHERE trace_id = ?",
		"DELETE FROM uploads WHERE trace_id = ?",
	};
	sqlite3_stmt *st[4] = {NULL};
	int rc = 0;

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL))
		return fail(db, "begin");
	for (size_t k = 0; k < 4 && !rc; k++)
		if (sqlite3_prepare_v2(db, sql[k], -1, &st[k], NULL))
			rc = fail(db, "prepare");
	for (size_t i = 0; i < b->n && !rc; i++) {
		for (size_t k = 0; k < 4 && !rc; k++) {
			sqlite3_bind_text(st[k], 1, b->ids[i], -1, SQLITE_STATIC);
			if (sqlite3_step(st[k]) != SQLITE_DONE)
				rc = fail(db, "delete");
			sqlite3_reset(st[k]);
		}
	}
	for (size_t k = 0; k < 4; k++)
		sqlite3_finalize(st[k]);
	if (!rc && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL))
		rc = fail(db, "commit");
	if (rc)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* 1 when an uploads row still names blob, 0 when none, <0 on error. */
static int blob_referenced(sqlite3 *db, sqlite3_stmt *st, const char *blob)
{
	int rc;
	sqlite3_bind_text(st, 1, blob, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : fail(db, "blob reference");
}

static int unlink_unreferenced(sqlite3 *db, struct rvs_blobs *blobs, const struct batch *b,
			       uint64_t *count)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM uploads WHERE blob_sha256 = ? LIMIT 1", -1, &st,
			       NULL))
		return fail(db, "prepare");
	for (size_t i = 0; i < b->nblobs && rc >= 0; i++) {
		if ((rc = blob_referenced(db, st, b->blobs[i])) != 0)
			continue;
		int r = blobs->ops->del(blobs, b->blobs[i], RVS_RETENTION_BLOB_GRACE_S);
		if (r > 0)
			(*count)++;
		else if (r < 0)
			rvs_log("warn", "msg=\"retention unlink\" blob=%s err=%d", b->blobs[i], r);
	}
	sqlite3_finalize(st);
	return rc < 0 ? rc : 0;
}

struct ref_check {
	sqlite3 *db;
	sqlite3_stmt *st;
};

static int referenced_cb(const char *hex, void *arg)
{
	struct ref_check *r = arg;
	return blob_referenced(r->db, r->st, hex);
}

/* Blobs no upload references (a crash between a commit and its unlink, or
 * before an upload's row) and temporary files of dead writes, both older
 * than the grace period. */
static int collect_orphans(sqlite3 *db, struct rvs_blobs *blobs, struct rvs_retention_stats *stats)
{
	struct ref_check r = {db, NULL};
	struct rvs_blob_sweep_stats sw = {0, 0};
	int rc;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM uploads WHERE blob_sha256 = ? LIMIT 1", -1, &r.st,
			       NULL))
		return fail(db, "prepare");
	rc = blobs->ops->sweep(blobs, RVS_RETENTION_BLOB_GRACE_S, referenced_cb, &r, &sw);
	sqlite3_finalize(r.st);
	stats->blobs += sw.orphans;
	stats->temps += sw.temps;
	return rc;
}

int rvs_retention_run(const char *database, struct rvs_blobs *blobs, int64_t cutoff,
		      struct rvs_retention_stats *out)
{
	struct rvs_retention_stats stats = {0, 0, 0};
	struct batch *b = malloc(sizeof *b);
	sqlite3 *db = NULL;
	int rc = 0;

	if (!b)
		return -ENOMEM;
	if (sqlite3_open_v2(database, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = fail(db, "open");
		goto close_db;
	}
	rvs_sqlite_busy(db, 10000);
	if (sqlite3_exec(db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL)) {
		rc = fail(db, "pragma");
		goto close_db;
	}
	for (;;) {
		if ((rc = select_batch(db, cutoff, b)) || b->n == 0)
			break;
		if ((rc = delete_batch(db, b)))
			break;
		stats.traces += b->n;
		if ((rc = unlink_unreferenced(db, blobs, b, &stats.blobs)))
			break;
	}
	if (rc == 0)
		rc = collect_orphans(db, blobs, &stats);
	if (stats.traces || stats.blobs || stats.temps || rc)
		rvs_log(rc ? "error" : "info",
			"msg=\"retention\" cutoff=%lld traces=%llu blobs=%llu temps=%llu rc=%d",
			(long long)cutoff, (unsigned long long)stats.traces,
			(unsigned long long)stats.blobs, (unsigned long long)stats.temps, rc);
close_db:
	sqlite3_close(db);
	free(b);
	if (out)
		*out = stats;
	return rc;
}
