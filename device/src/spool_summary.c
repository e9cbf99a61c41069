/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spool_summary.c — the local summary kept beside each spooled capture
 * (spool.h: rvd_spool_get_summary, rvd_spool_put_summary): one BLOB column
 * of the spool's captures table, read and written on the work-queue thread
 * that owns the spool's sqlite handle at the time (the spool runs one job at
 * a time, spool.c).
 *
 * Invariants: an empty Summary is stored as a zero-length BLOB, never NULL,
 * so "has a summary" and "has none" stay distinguishable.
 */
#include "spool.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/common.h"

int rvd_spool_get_summary(struct rvd_spool *s, uint64_t id, uint8_t **buf, size_t *len)
{
	sqlite3_stmt *st = NULL;
	const void *blob;
	int rc, n;

	*buf = NULL;
	*len = 0;
	if (!s->db)
		return -EBADF;
	rc = sqlite3_prepare_v2(s->db, "SELECT summary FROM captures WHERE id=?", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rvc_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW || sqlite3_column_type(st, 0) != SQLITE_BLOB) {
		sqlite3_finalize(st);
		return rc == SQLITE_ROW || rc == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(rc);
	}
	blob = sqlite3_column_blob(st, 0);
	n = sqlite3_column_bytes(st, 0);
	*buf = malloc(n > 0 ? (size_t)n : 1);
	if (!*buf) {
		sqlite3_finalize(st);
		return -ENOMEM;
	}
	if (n > 0)
		memcpy(*buf, blob, (size_t)n);
	*len = (size_t)n;
	sqlite3_finalize(st);
	return 0;
}

int rvd_spool_put_summary(struct rvd_spool *s, uint64_t id, const uint8_t *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (!s->db)
		return -EBADF;
	if (len > INT_MAX)
		return -E2BIG;
	rc = sqlite3_prepare_v2(s->db, "UPDATE captures SET summary=? WHERE id=?", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rvc_sqlite_errno(rc);
	/* A zero-length blob (an empty Summary) must still read back as a blob. */
	if (len)
		sqlite3_bind_blob(st, 1, buf, (int)len, SQLITE_STATIC);
	else
		sqlite3_bind_zeroblob(st, 1, 0);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return rvc_sqlite_errno(rc);
	return sqlite3_changes(s->db) == 1 ? 0 : -ENOENT;
}
