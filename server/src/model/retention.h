/* SPDX-License-Identifier: Apache-2.0 */
/*
 * retention.h — deleting traces older than the configured age
 * (config retention_days) with their index rows and their blobs.
 * Work queue only (the store and file I/O block).
 */
#ifndef RVS_RETENTION_H
#define RVS_RETENTION_H

#include <stdint.h>

struct rvs_blobs;

struct rvs_retention_stats {
	uint64_t traces; /* uploads deleted (decoded, pending or quarantined) */
	uint64_t blobs;	 /* blob files unlinked (of deleted uploads, and orphans) */
	uint64_t temps;	 /* temporary files of unfinished blob writes removed */
};

/* A blob touched more recently than this is never unlinked: an upload may
 * have found it already stored (rvs_blob_put refreshes its mtime) and not
 * yet inserted the row that references it. */
#define RVS_RETENTION_BLOB_GRACE_S 3600

/* Deletes every upload received before cutoff (unix seconds) — its traces
 * row (trace_methods and trace_chains cascade, the signature triggers
 * uncount it), decode_queue and quarantine rows and the uploads row — in
 * transactions of at most 500 uploads, then deletes each of their blobs in
 * the blob store (blob.h) that no remaining upload references; then sweeps it for
 * orphans (blobs no upload references) and temporary files of dead writes,
 * all older than the grace period.  Uses the shared store of database
 * (rvs_store_acquire: sqlite or PostgreSQL).  *out (may be NULL) gets what
 * was deleted, also on error.  0, -EIO (the store; logged), -ENOMEM. */
int rvs_retention_run(const char *database, struct rvs_blobs *blobs, int64_t cutoff,
		      struct rvs_retention_stats *out);

#endif
