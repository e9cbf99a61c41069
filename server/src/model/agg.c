/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agg.c — call-path aggregates across traces (agg.h): the rows a decoded
 * trace keeps (rvs_agg_build, cut at decode).  The JSON API's aggregate and
 * differential flame graphs that read them are api/aggregate.c.
 *
 * Storage (SCHEMA.md, migration 7): agg_nodes is a per-app dictionary of
 * call paths (node id, parent node, method; each app's root is the node
 * with parent 0 and method ""); trace_paths holds a trace's rows (node,
 * calls, self_ns, incl_ns) and its bucket, an id of (app, version, model,
 * anomaly kind, received day); triggers keep agg_sums, the rows summed per
 * (bucket, node) with the number of traces having the node.  Because every
 * trace has a row for its app's root node, the traces of a set are the
 * root nodes' trace counts.
 *
 * With CPU data (the summary's tree_off), each row also carries its
 * on-CPU self and inclusive time (a node's own off-CPU time is its calls'
 * less its callees', an "(other)" row's the folded callees' inclusive),
 * each held within [0, its wall time]; without, none (stored NULL).
 *
 * Invariants: a trace's rows are closed under "parent of" and, for a
 * well-formed tree (no saturated sums), their self times sum to the root's
 * inclusive time (folded paths go to "(other)" nodes whole); at most 2 × RVS_AGG_MAX_NODES rows per
 * trace (each kept node and at most one "(other)" child of it).  A query reads the bucket sums when
 * its filter is only bucket columns (and whole days), else the rows of at most RVS_AGG_MAX_TRACES
 * matching traces; both inside one read snapshot.  agg.c speaks no SQL: the
 * rows are written and read by the store (store.h's agg_read; the index lanes
 * write rvs_agg_build's rows: store_sqlite_agg.c, store_pg_agg.c), every
 * request value bound as a parameter there; every string reaches JSON through jansson (invalid
 * UTF-8 as
 * '?').  Per-trace means are integer nanoseconds, rounded to nearest.
 */
#include "model/agg.h"
#include "store/store.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

/* ---- decode time ------------------------------------------------------------ */

/* Ordering of nodes to keep: most inclusive first, then shallower, then
 * earlier (so a parent precedes a child of equal time). */
struct keep_ctx {
	const int64_t *incl;
	const uint32_t *depth;
};

static int cmp_keep(const void *a, const void *b, void *p)
{
	const struct keep_ctx *k = p;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (k->incl[x] != k->incl[y])
		return k->incl[x] > k->incl[y] ? -1 : 1;
	if (k->depth[x] != k->depth[y])
		return k->depth[x] < k->depth[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

int rvs_agg_keep_top(size_t n, const uint32_t *parent, const int64_t *incl, const uint32_t *depth,
		     size_t max, unsigned char *keep)
{
	struct keep_ctx k = {incl, depth};
	uint32_t *ord;

	assert(max >= 1);
	memset(keep, n <= max, n);
	if (n <= max)
		return 0;
	if (!(ord = malloc((n - 1) * sizeof *ord)))
		return -ENOMEM;
	for (size_t i = 1; i < n; i++)
		ord[i - 1] = (uint32_t)i;
	qsort_r(ord, n - 1, sizeof *ord, cmp_keep, &k);
	keep[0] = 1;
	for (size_t i = 0; i + 1 < max; i++)
		keep[ord[i]] = 1;
	for (size_t i = 1; i < n; i++) {
		assert(parent[i] < i);
		if (keep[i] && !keep[parent[i]])
			keep[i] = 0;
	}
	free(ord);
	return 0;
}

static const char *tree_name(const rva_trace *t, uint32_t m)
{
	if (m == RVA_TREE_CUT)
		return RVS_AGG_DEEPER;
	return m < t->nmethods && t->names[m] ? t->names[m] : "?";
}

/* The rows of one trace, its tree cut as agg.h says (work arrays of n).
 * With CPU data (off: the summary's tree_off), also each node's children's
 * off-CPU time summed (child_off) and its folded children's on-CPU time
 * (other_cpu); NULL without. */
struct cut {
	uint32_t *parent, *depth;
	int64_t *incl, *other_incl, *id;
	uint64_t *other_calls;
	const int64_t *off;
	int64_t *child_off, *other_cpu;
	unsigned char *keep;
	size_t kept, folded;
};

/* x held within [0, max]. */
static int64_t clamp0(int64_t x, int64_t max)
{
	return x < 0 ? 0 : x > max ? max : x;
}

/* Node i's inclusive time on the CPU: its wall time less its calls'
 * off-CPU time. */
static int64_t cpu_incl_of(const rva_tree *tr, const struct cut *c, size_t i)
{
	return clamp0(tr->nodes[i].incl - c->off[i], tr->nodes[i].incl);
}

static int cut_tree(const rva_tree *tr, size_t max_nodes, struct cut *c)
{
	size_t n = tr->n;
	if (c->off && (!(c->child_off = calloc(n, sizeof *c->child_off)) ||
		       !(c->other_cpu = calloc(n, sizeof *c->other_cpu))))
		return -ENOMEM;
	c->parent = calloc(n, sizeof *c->parent);
	c->depth = calloc(n, sizeof *c->depth);
	c->incl = calloc(n, sizeof *c->incl);
	c->other_incl = calloc(n, sizeof *c->other_incl);
	c->id = calloc(n, sizeof *c->id);
	c->other_calls = calloc(n, sizeof *c->other_calls);
	c->keep = malloc(n);
	if (!c->parent || !c->depth || !c->incl || !c->other_incl || !c->id || !c->other_calls ||
	    !c->keep)
		return -ENOMEM;
	c->parent[0] = 0;
	c->depth[0] = 0;
	for (size_t i = 0; i < n; i++) {
		c->incl[i] = tr->nodes[i].incl;
		if (i) {
			c->parent[i] = tr->nodes[i].parent;
			assert(c->parent[i] < i); /* rva trees append children */
			c->depth[i] = c->depth[c->parent[i]] + 1;
		}
	}
	if (rvs_agg_keep_top(n, c->parent, c->incl, c->depth, max_nodes, c->keep))
		return -ENOMEM;
	for (size_t i = 1; i < n && c->off; i++)
		c->child_off[c->parent[i]] += c->off[i];
	for (size_t i = 1; i < n; i++) {
		if (c->keep[i]) {
			c->kept++;
			continue;
		}
		c->folded++;
		if (c->keep[c->parent[i]]) {
			c->other_incl[c->parent[i]] += c->incl[i];
			c->other_calls[c->parent[i]] += tr->nodes[i].calls;
			if (c->off)
				c->other_cpu[c->parent[i]] += cpu_incl_of(tr, c, i);
		}
	}
	return 0;
}

static void cut_free(struct cut *c)
{
	free(c->parent);
	free(c->depth);
	free(c->incl);
	free(c->other_incl);
	free(c->id);
	free(c->other_calls);
	free(c->child_off);
	free(c->other_cpu);
	free(c->keep);
}

int rvs_agg_build(const rva_summary *sum, size_t max_nodes, struct rvs_agg_rows *out)
{
	const rva_tree *tr = &sum->tree;
	struct cut c = {0};
	uint32_t *row_of = NULL;
	int rc = -ENOMEM;

	assert(tr->n >= 1);
	memset(out, 0, sizeof *out);
	if (max_nodes > RVS_AGG_MAX_NODES)
		max_nodes = RVS_AGG_MAX_NODES;
	if (max_nodes < 1)
		max_nodes = 1;
	/* The same capture's method rows have CPU data exactly then
	 * (decode.c: trace->has_cpu), so a trace's paths and methods agree. */
	assert(!sum->tree_off || sum->trace->has_cpu);
	c.off = sum->tree_off;
	if (cut_tree(tr, max_nodes, &c))
		goto done;
	/* Each kept node and at most one "(other)" child of it. */
	if (!(out->v = malloc(2 * (c.kept + 1) * sizeof *out->v)) ||
	    !(row_of = malloc(tr->n * sizeof *row_of)))
		goto done;
	for (size_t i = 0; i < tr->n; i++) {
		struct rvs_agg_row *r;
		if (!c.keep[i])
			continue;
		assert(c.keep[c.parent[i]]);
		row_of[i] = (uint32_t)out->n;
		r = &out->v[out->n++];
		r->parent = i ? row_of[c.parent[i]] : 0;
		r->depth = c.depth[i];
		r->method = i ? tree_name(sum->trace, tr->nodes[i].method) : "";
		r->other = 0;
		r->calls = tr->nodes[i].calls;
		r->self_ns = tr->nodes[i].self;
		r->incl_ns = c.incl[i];
		r->has_cpu = c.off != NULL;
		if (c.off) {
			/* Its own off-CPU time: its calls' less its callees'. */
			r->cpu_incl_ns = cpu_incl_of(tr, &c, i);
			r->cpu_self_ns =
				clamp0(r->self_ns - (c.off[i] - c.child_off[i]), r->self_ns);
		}
		if (!c.other_calls[i])
			continue;
		r = &out->v[out->n++];
		r->parent = row_of[i];
		r->depth = c.depth[i] + 1;
		r->method = RVS_AGG_OTHER;
		r->other = 1;
		r->calls = c.other_calls[i];
		r->self_ns = r->incl_ns = c.other_incl[i];
		r->has_cpu = c.off != NULL;
		r->cpu_self_ns = r->cpu_incl_ns = c.off ? clamp0(c.other_cpu[i], r->incl_ns) : 0;
	}
	assert(out->n <= 2 * (c.kept + 1));
	out->nodes = (int64_t)(c.kept + 1);
	out->folded = (int64_t)c.folded;
	out->total_ns = tr->nodes[0].incl;
	rc = 0;
done:
	free(row_of);
	cut_free(&c);
	if (rc)
		rvs_agg_rows_release(out);
	return rc;
}

void rvs_agg_rows_release(struct rvs_agg_rows *r)
{
	free(r->v);
	memset(r, 0, sizeof *r);
}
