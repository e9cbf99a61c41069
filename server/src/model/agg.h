/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agg.h — call-path aggregates across traces (issue 16, question 2:
 * "where does time go across many traces?").
 *
 * At decode, rvs_agg_build cuts each decoded capture's merged call tree and
 * the store backend's index lane stores it,
 * bounded, as rows of trace_paths over a per-app dictionary of call paths
 * (agg_nodes), and triggers keep their sums per (app, version, model,
 * anomaly kind, day) bucket (agg_sums; SCHEMA.md migration 7).  The JSON
 * API's aggregate and differential flame graphs (API.md "Aggregates") read
 * those sums, or the per-trace rows when the filter names a trace-level
 * condition; a view never decodes a capture.
 */
#ifndef RVS_AGG_H
#define RVS_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Call-tree nodes a trace keeps (its root included): the most inclusive
 * paths, closed under "parent of".  What is left of a kept node's
 * children becomes one "(other)" child of it (all their time, as its self
 * and inclusive time); trace_agg.folded counts the paths folded. */
#define RVS_AGG_MAX_NODES 512
/* A trace-level filter aggregates at most this many matching traces, the
 * most recently received first ("sampled" in the reply when reached). */
#define RVS_AGG_MAX_TRACES 10000
/* The most nodes a reply lists (the most inclusive, closed under parent). */
#define RVS_AGG_MAX_REPLY_NODES 5000

/* The names of the pseudo-methods a trace's rows may carry. */
#define RVS_AGG_OTHER  "(other)"
#define RVS_AGG_DEEPER "(deeper)"

struct rva_summary;

/* The rows of sum's merged tree, cut to max_nodes nodes (at most
 * RVS_AGG_MAX_NODES: the upload's index budget may allow fewer), into *out
 * (release with rvs_agg_rows_release; borrows sum's names, so sum must
 * outlive it).  0 or -ENOMEM.  Any thread; the decode lanes of both store
 * backends call it inside their index transaction and write the rows. */
int rvs_agg_build(const struct rva_summary *sum, size_t max_nodes, struct rvs_agg_rows *out);
void rvs_agg_rows_release(struct rvs_agg_rows *r);

/* keep[i] = 1 for at most max of the n nodes (node 0, the root, always):
 * the most inclusive, closed under parent (ties: shallower, then earlier).
 * parent[i] < i for i > 0.  0 or -ENOMEM.  Any thread: a trace's rows are
 * cut with it, and so are an aggregate reply's nodes. */
int rvs_agg_keep_top(size_t n, const uint32_t *parent, const int64_t *incl, const uint32_t *depth,
		     size_t max, unsigned char *keep);

#endif
