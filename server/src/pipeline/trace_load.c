/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_load.c — a stored trace loaded for reading (trace_load.h): the
 * capture of a decoded upload, read from the blob store and decoded.
 *
 * Invariants: the trace id is checked ("t-" + 32 lowercase hex) before it
 * reaches the store (store.h trace_capture, on either backend), where it is
 * a bound parameter; the blob's name comes from the
 * database, never from the request, and is checked again as 64 hex digits;
 * the capture never inflates past the size its upload declared (capped at
 * RVS_DECODE_MAX_CAPTURE, payload.h).  rvs_trace_acquire wraps
 * rvs_query_load_trace in one process-wide cache of decoded traces, made
 * once, under a mutex, with the first caller's cap.
 */
#include "pipeline/trace_load.h"
#include "blob/blob.h"
#include "pipeline/model_cache.h"
#include "pipeline/payload.h"
#include "base/config.h"
#include "store/store.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int rvs_query_load_trace(const struct rvs_config *cfg, const char *id, struct rva_trace **out)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *store;
	struct rvs_blobs *blobs;
	char blob[65] = "";
	uint8_t *raw = NULL, *cap = NULL;
	size_t rawlen = 0, caplen = 0, limit;
	uint64_t declared = 0;
	int comp = 0, rc;
	rva_error err;

	if (!valid_trace_id(id, strlen(id)))
		return -ENOENT;
	if (rvs_store_acquire(cfg->database, &ops, &store))
		return -EIO;
	rc = ops->trace_capture(store, id, blob, &comp, &declared);
	rvs_store_release(store);
	if (rc)
		return rc == -ENOENT ? -ENOENT : -EIO;
	limit = rvs_inflate_limit(declared);
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
