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

#include <stdint.h>
#include <stdio.h>

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
struct rvs_call;

/* One row of a trace's aggregate (rvs_agg_build): v[0] is the root; a
 * row's parent comes before it.  An "(other)" row (other = 1) follows its
 * parent's kept children; a writer resolves the dictionary ids of the
 * kept rows first, in order, then writes the rows in order, resolving each
 * "(other)" row's id as it comes (so both backends number nodes alike). */
struct rvs_agg_row {
	uint32_t parent, depth; /* parent: index in v (0 for the root) */
	const char *method;	/* "" for the root; borrowed from the summary */
	int other;
	uint64_t calls;
	int64_t self_ns, incl_ns;
};

/* A trace's rows and its trace_agg columns. */
struct rvs_agg_rows {
	struct rvs_agg_row *v;
	size_t n;
	int64_t nodes, folded, total_ns;
};

/* The rows of sum's merged tree, cut as RVS_AGG_MAX_NODES says, into *out
 * (release with rvs_agg_rows_release; borrows sum's names, so sum must
 * outlive it).  0 or -ENOMEM.  Any thread; the decode lanes of both store
 * backends call it inside their index transaction and write the rows. */
int rvs_agg_build(const struct rva_summary *sum, struct rvs_agg_rows *out);
void rvs_agg_rows_release(struct rvs_agg_rows *r);

/* The JSON API (route.c's table; work thread; fill c->q always):
 * GET /api/v1/aggregate and GET /api/v1/aggregate/diff (API.md). */
void rvs_agg_api(struct rvs_call *c);
void rvs_agg_api_diff(struct rvs_call *c);

/* The web UI's pages (web_agg.c; route.c's table, session-authenticated,
 * call->ctx is web.c's context): GET /aggregate and GET /aggregate/diff,
 * their filter form, flame graph and top-down / bottom-up tables. */
void rvs_web_aggregate(struct rvs_call *c);
void rvs_web_aggregate_diff(struct rvs_call *c);

/* Writes the flame graph SVG of doc, an /api/v1/aggregate reply (diff 0)
 * or an /api/v1/aggregate/diff reply (diff 1), to f.  A diff's node is
 * class "n slower" (red) when its self time per trace grew from A to B,
 * "n faster" (blue) when it shrank, "n same" otherwise.  Names are
 * escaped.  Any thread. */
struct json_t;
void rvs_agg_flame_svg(FILE *f, struct json_t *doc, int diff);

#endif
