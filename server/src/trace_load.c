/*
 * trace_load.c — a stored trace loaded for reading (trace_load.h): the
 * capture of a decoded upload, read from the blob store and decoded.
 *
 * Invariants: the trace id is checked ("t-" + 32 lowercase hex) before it
 * reaches SQL, where it is a bound parameter; the blob's name comes from the
 * database, never from the request, and is checked again as 64 hex digits;
 * the capture never inflates past the size its upload declared (capped at
 * RVS_DECODE_MAX_CAPTURE, payload.h).  rvs_trace_acquire wraps
 * rvs_query_load_trace in one process-wide cache of decoded traces, made
 * once, under a mutex, with the first caller's cap.
 */
#include "trace_load.h"
#include "blob.h"
#include "model_cache.h"
#include "payload.h"
#include "rvs.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "rearview/analysis.h"
#include "rearview/upload.pb-c.h"

int rvs_trace_id_ok(const char *s, size_t n)
{
	if (n != 34 || s[0] != 't' || s[1] != '-')
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* The id check under the name rvs_query_load_trace has always used. */
static int valid_trace_id(const char *s, size_t n)
{
	return rvs_trace_id_ok(s, n);
}

/* A read-only connection, as the JSON API (query.c) opens them, until this
 * read goes through the store. */
static sqlite3 *open_ro(const char *database)
{
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(database, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	rvs_sqlite_busy(db, 5000);
	return db;
}

int rvs_query_load_trace(const struct rvs_config *cfg, const char *id, struct rva_trace **out)
{
	const char *database = cfg->database;
	struct rvs_blobs *blobs;
	char blob[65] = "";
	uint8_t *raw = NULL, *cap = NULL;
	size_t rawlen = 0, caplen = 0, limit = RVS_DECODE_MAX_CAPTURE;
	int comp = 0, rc;
	sqlite3_stmt *st;
	sqlite3 *db;
	rva_error err;

	if (!valid_trace_id(id, strlen(id)))
		return -ENOENT;
	if (!(db = open_ro(database)))
		return -EIO;
	if (sqlite3_prepare_v2(
		    db,
		    /* Decoded — or decoded once and queued again to be
		     * re-symbolized, with its index rows still there. */
		    "SELECT blob_sha256, compression, payload_size FROM uploads WHERE trace_id = ?1"
		    " AND (state = 'decoded' OR (state = 'pending_decode' AND EXISTS"
		    " (SELECT 1 FROM traces t WHERE t.trace_id = ?1)))",
		    -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		snprintf(blob, sizeof blob, "%s", (const char *)sqlite3_column_text(st, 0));
		comp = sqlite3_column_int(st, 1);
		limit = rvs_inflate_limit((uint64_t)sqlite3_column_int64(st, 2));
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	/* The blob name comes from our own database and is validated again as
	 * 64 hex digits; nothing from the request names a blob.  Read through
	 * the configured store (local directory, S3 or PostgreSQL, blob.h),
	 * checked against its SHA-256 name. */
	if (!blob[0] || !rvs_blob_name_ok(blob))
		return -ENOENT;
	if (rvs_blobs_open_config(cfg, &blobs))
		return -EIO;
	rc = blobs->ops->get(blobs, blob, RVS_DECODE_MAX_BLOB, &raw, &rawlen);
	rvs_blobs_close(blobs);
	if (rc)
		return -EIO;
	if (comp != REARVIEW__COMPRESSION__COMPRESSION_NONE) {
		rc = rvs_payload_inflate(comp, raw, rawlen, limit, &cap, &caplen);
		free(raw);
		if (rc)
			return -EBADMSG;
	} else {
		cap = raw;
		caplen = rawlen;
	}
	rc = rva_capture_decode(cap, caplen, out, &err);
	free(cap);
	return rc ? -EBADMSG : 0;
}

static struct rvs_mcache *cache; /* made once, under cache_mu */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static int load_stored(void *arg, const char *id, struct rva_trace **out)
{
	return rvs_query_load_trace(arg, id, out);
}

int rvs_trace_acquire(const struct rvs_config *cfg, const char *id, const struct rva_trace **t,
		      struct rvs_mentry **ref)
{
	struct rvs_mcache *c;
	pthread_mutex_lock(&cache_mu);
	if (!cache && rvs_mcache_new((size_t)cfg->trace_cache_mb << 20, &cache))
		cache = NULL;
	c = cache;
	pthread_mutex_unlock(&cache_mu);
	if (!c)
		return -ENOMEM;
	return rvs_mcache_get(c, id, load_stored, (void *)cfg, ref, t);
}

void rvs_trace_release(struct rvs_mentry *ref)
{
	struct rvs_mcache *c;
	pthread_mutex_lock(&cache_mu);
	c = cache;
	pthread_mutex_unlock(&cache_mu);
	assert(c);
	rvs_mcache_release(c, ref);
}
