/* SPDX-License-Identifier: Apache-2.0 */
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
 * Every statement is the store's (store.h: retention_delete,
 * blob_referenced), on the process's shared store of the database.
 */
#include "blob/blob.h"
#include "model/retention.h"
#include "base/log.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BATCH 500

struct batch {
	char blobs[BATCH][65];
	size_t nblobs;
};

static int unlink_unreferenced(const struct rvs_store_ops *ops, struct rvs_store *st,
			       struct rvs_blobs *blobs, const struct batch *b, uint64_t *count)
{
	int rc = 0;

	for (size_t i = 0; i < b->nblobs && rc >= 0; i++) {
		if ((rc = ops->blob_referenced(st, b->blobs[i])) != 0)
			continue;
		int r = blobs->ops->del(blobs, b->blobs[i], RVS_RETENTION_BLOB_GRACE_S);
		if (r > 0)
			(*count)++;
		else if (r < 0)
			rvs_log("warn", "retention unlink", "blob=%s err=%d", b->blobs[i], r);
	}
	return rc < 0 ? -EIO : 0;
}

struct ref_check {
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
};

static int referenced_cb(const char *hex, void *arg)
{
	struct ref_check *r = arg;
	return r->ops->blob_referenced(r->st, hex);
}

/* Blobs no upload references (a crash between a commit and its unlink, or
 * before an upload's row) and temporary files of dead writes, both older
 * than the grace period. */
static int collect_orphans(const struct rvs_store_ops *ops, struct rvs_store *st,
			   struct rvs_blobs *blobs, struct rvs_retention_stats *stats)
{
	struct ref_check r = {ops, st};
	struct rvs_blob_sweep_stats sw = {0, 0};
	int rc = blobs->ops->sweep(blobs, RVS_RETENTION_BLOB_GRACE_S, referenced_cb, &r, &sw);
	stats->blobs += sw.orphans;
	stats->temps += sw.temps;
	return rc;
}

int rvs_retention_run(const char *database, struct rvs_blobs *blobs, int64_t cutoff,
		      struct rvs_retention_stats *out)
{
	struct rvs_retention_stats stats = {0, 0, 0};
	struct batch *b = malloc(sizeof *b);
	const struct rvs_store_ops *ops;
	struct rvs_store *st = NULL;
	int rc = 0, n;

	if (!b)
		return -ENOMEM;
	if (rvs_store_acquire(database, &ops, &st)) {
		rvs_log("error", "retention", "step=open database=\"%s\"", database);
		rc = -EIO;
		goto out;
	}
	for (;;) {
		if ((n = ops->retention_delete(st, cutoff, BATCH, b->blobs, &b->nblobs)) <= 0) {
			rc = n < 0 ? -EIO : 0;
			break;
		}
		stats.traces += (uint64_t)n;
		if ((rc = unlink_unreferenced(ops, st, blobs, b, &stats.blobs)))
			break;
	}
	if (rc == 0)
		rc = collect_orphans(ops, st, blobs, &stats);
	/* The per-app jank counts of the days wholly before the cutoff. */
	if (rc == 0 && ops->jank_expire(st, cutoff > 0 ? cutoff / 86400 : 0))
		rc = -EIO;
	if (stats.traces || stats.blobs || stats.temps || rc)
		rvs_log(rc ? "error" : "info", "retention",
			"cutoff=%lld traces=%llu blobs=%llu temps=%llu rc=%d", (long long)cutoff,
			(unsigned long long)stats.traces, (unsigned long long)stats.blobs,
			(unsigned long long)stats.temps, rc);
	rvs_store_release(st);
out:
	free(b);
	if (out)
		*out = stats;
	return rc;
}
