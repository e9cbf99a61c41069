/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_load.h — a stored trace loaded for reading (trace_load.c), for the
 * JSON API's exports and the web UI's trace pages.  Work thread only (it
 * reads the database and the blob store).
 */
#ifndef RVS_TRACE_LOAD_H
#define RVS_TRACE_LOAD_H

#include <stddef.h>

/* 1 when s[0..n) is a well-formed trace id: "t-" and 32 lowercase hex
 * digits; else 0.  Any thread. */
int rvs_trace_id_ok(const char *s, size_t n);

/* Work thread: loads and decodes the stored capture of trace id (the blob
 * of a decoded upload, or of one queued again to be re-symbolized), read
 * from cfg's blob store (rvs_blobs_open_config).  *out
 * is freed with rva_trace_free.  -ENOENT when the id is malformed or the
 * trace has no decoded capture, -EIO when the database or blob cannot be
 * read, -EBADMSG when it does not decode. */
struct rva_trace;
struct rvs_config;
int rvs_query_load_trace(const struct rvs_config *cfg, const char *id, struct rva_trace **out);

/* Work thread: the trace id as rvs_query_load_trace loads it, decoded at
 * most once while it stays in the server's cache of decoded traces
 * (model_cache.h, cfg->trace_cache_mb; the first call's cap holds for the
 * process).  *t is shared and read-only, valid until
 * rvs_trace_release(*ref).  rvs_query_load_trace's errors, or -ENOMEM. */
struct rvs_mentry;
int rvs_trace_acquire(const struct rvs_config *cfg, const char *id, const struct rva_trace **t,
		      struct rvs_mentry **ref);
/* Gives back what rvs_trace_acquire handed out.  Any thread. */
void rvs_trace_release(struct rvs_mentry *ref);

#endif
