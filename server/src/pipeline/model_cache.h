/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model_cache.h — a bounded in-memory cache of decoded traces (model_cache.c)
 * keyed by trace id, least recently used evicted first, bounded by the
 * bytes the traces hold, so the web UI decodes a capture once and then
 * serves its page, zooms and butterflies from memory (issue 16 question 5).
 *
 * Threads: every function may be called from any thread; the cache has
 * its own mutex.  A trace handed out is shared and read-only: readers only
 * call the analysis library's const functions on it.
 */
#ifndef RVS_MODEL_CACHE_H
#define RVS_MODEL_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct rva_trace;
struct rvs_mcache;
struct rvs_mentry;

/* Loads the trace id into *out (rva_trace_free frees it); 0 or a negative
 * errno, which rvs_mcache_get returns as it is. */
typedef int (*rvs_mcache_load_fn)(void *arg, const char *id, struct rva_trace **out);

struct rvs_mcache_stats {
	uint64_t hits, misses, evictions;
	size_t bytes;	/* held by the cached traces */
	size_t entries; /* cached traces */
};

/* A cache holding at most cap bytes of traces (0: it keeps none, every get
 * loads).  0 or -ENOMEM. */
int rvs_mcache_new(size_t cap, struct rvs_mcache **out);
/* Frees the cache and its traces; every entry must have been released. */
void rvs_mcache_free(struct rvs_mcache *c);

/* The trace of id (at most 39 bytes, else -ENOENT): from the cache, or
 * loaded by load(arg, id) outside the lock and cached when it fits, the
 * least recently used traces evicted to make room.  *t is valid until
 * rvs_mcache_release(c, *ref); a trace evicted while held is freed on its
 * last release.  0, or load's error, or -ENOMEM. */
int rvs_mcache_get(struct rvs_mcache *c, const char *id, rvs_mcache_load_fn load, void *arg,
		   struct rvs_mentry **ref, const struct rva_trace **t);
/* Gives back a trace rvs_mcache_get handed out. */
void rvs_mcache_release(struct rvs_mcache *c, struct rvs_mentry *ref);
/* Counters since rvs_mcache_new. */
void rvs_mcache_stats(struct rvs_mcache *c, struct rvs_mcache_stats *st);

/* The bytes a decoded trace holds on the heap (its arrays at capacity and
 * its names), the size the cache counts it at.  Any thread. */
size_t rvs_trace_bytes(const struct rva_trace *t);

#endif
