/* SPDX-License-Identifier: Apache-2.0 */
/*
 * views.c — the views uftrace users reach for, over the model: `report`
 * (per-method totals with sort keys, per thread), the focus graph of one
 * method (`graph`: backtraces and the merged call graph below it) and
 * `replay` (every call in time order, indented, with durations).
 *
 * Like analysis.c, every walk is one pass over a thread's pre-order calls
 * with an explicit stack (memory: the depth plus the output), and every
 * printed line is bounded: names are printed as they are, indentation and
 * tree prefixes stop growing at fixed depths.  Times print in adaptive
 * units (us below 1 ms, ms below 1 s, then s), samples for weighted traces.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "aggr.h"
#include "analysis-int.h"
#include "rearview/analysis.h"

/* Levels of indentation replay draws, and of branches graph draws. */
#define REPLAY_MAX_INDENT 256
#define GRAPH_MAX_BRANCH  128

/* "%7.3f us" and the like: 10 characters for a time under 10^4 s (v in
 * ns, or samples for a weighted trace: "%10.0f"). */
static void fmt_time(char *buf, size_t n, const rva_trace *t, double v)
{
	if (t->weighted)
		snprintf(buf, n, "%10.0f", v);
	else if (v < 999999.5)
		snprintf(buf, n, "%7.3f us", v / 1e3);
	else if (v < 999999999.5)
		snprintf(buf, n, "%7.3f ms", v / 1e6);
	else
		snprintf(buf, n, "%7.3f  s", v / 1e9);
}

static int64_t dur(const rva_call *c)
{
	return c->end - c->start;
}

/* ---- report ---- */

typedef struct rframe {
	size_t call;
	int64_t child; /* summed durations of its callees */
} rframe;

int rva_report_stats(const rva_trace *t, size_t only, rva_rstat **out)
{
	size_t nm = t->nmethods ? t->nmethods : 1;
	rva_rstat *st = calloc(nm, sizeof(*st));
	uint32_t *active = calloc(nm, sizeof(*active));
	rframe *s = NULL;
	size_t cap = 0;
	int rc = -ENOMEM;
	if (!st || !active)
		goto out_free;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		if (only != SIZE_MAX && ti != only)
			continue;
		const rva_thread *th = &t->threads[ti];
		size_t sn = 0;
		for (size_t i = 0; i <= th->ncalls; i++) {
			size_t d = i < th->ncalls ? th->calls[i].depth : 0;
			if (d > sn)
				d = sn; /* hostile depth: nests under the innermost frame */
			while (sn > d) {
				const rframe *fr = &s[--sn];
				const rva_call *c = &th->calls[fr->call];
				rva_rstat *m = &st[c->method];
				int64_t self = dur(c) - fr->child;
				m->self = rva_sadd(m->self, self);
				if (m->calls == 1 || self < m->self_min)
					m->self_min = self;
				if (self > m->self_max)
					m->self_max = self;
				active[c->method]--;
				if (sn)
					s[sn - 1].child = rva_sadd(s[sn - 1].child, dur(c));
			}
			if (i == th->ncalls)
				break;
			const rva_call *c = &th->calls[i];
			rva_rstat *m = &st[c->method];
			int64_t dd = dur(c);
			if (m->calls++ == 0 || dd < m->min)
				m->min = dd;
			if (dd > m->max)
				m->max = dd;
			m->sum = rva_sadd(m->sum, dd);
			if (active[c->method]++ == 0)
				m->total = rva_sadd(m->total, dd);
			if (sn == cap) {
				size_t nc = cap ? cap * 2 : 64;
				rframe *v = realloc(s, nc * sizeof(*v));
				if (!v)
					goto out_free;
				s = v;
				cap = nc;
			}
			s[sn++] = (rframe){i, 0};
		}
	}
	if (rva_muted_fold(t, st, sizeof(*st), offsetof(rva_rstat, self),
			   offsetof(rva_rstat, est_self)) < 0)
		goto out_free;
	*out = st;
	st = NULL;
	rc = 0;
out_free:
	free(s);
	free(active);
	free(st);
	return rc;
}

typedef struct order_ctx {
	const rva_trace *t;
	const rva_rstat *st;
	const int *keys;
	size_t nkeys;
	int by_self;
} order_ctx;

/* The figure a numeric key sorts by, as the report prints it. */
static double key_value(const order_ctx *o, const rva_rstat *m, int key)
{
	switch (key) {
	case RVA_SORT_TOTAL:
		return (double)m->total;
	case RVA_SORT_SELF:
		return (double)m->self;
	case RVA_SORT_CALLS:
		return (double)m->calls;
	case RVA_SORT_AVG:
		return m->calls ? (double)(o->by_self ? m->self : m->sum) / (double)m->calls : 0;
	case RVA_SORT_MIN:
		return (double)(o->by_self ? m->self_min : m->min);
	case RVA_SORT_MAX:
		return (double)(o->by_self ? m->self_max : m->max);
	default:
		return 0;
	}
}

static int cmp_order(const void *a, const void *b, void *ctx)
{
	const order_ctx *o = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	for (size_t k = 0; k < o->nkeys; k++) {
		if (o->keys[k] == RVA_SORT_NAME) {
			int c = strcmp(o->t->names[x], o->t->names[y]);
			if (c)
				return c;
			continue;
		}
		double vx = key_value(o, &o->st[x], o->keys[k]);
		double vy = key_value(o, &o->st[y], o->keys[k]);
		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	int c = strcmp(o->t->names[x], o->t->names[y]);
	return c ? c : (x < y ? -1 : x > y);
}

size_t rva_report_order(const rva_trace *t, const rva_rstat *st, const int *keys, size_t nkeys,
			int by_self, uint32_t *ids)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nmethods; i++)
		if (st[i].calls || st[i].est_self > 0)
			ids[n++] = (uint32_t)i;
	order_ctx o = {t, st, keys, nkeys, by_self};
	qsort_r(ids, n, sizeof(*ids), cmp_order, &o);
	return n;
}

int rva_report_print(FILE *f, const rva_trace *t, size_t th, const int *keys, size_t nkeys,
		     int by_self, size_t top)
{
	rva_rstat *st;
	int rc = rva_report_stats(t, th, &st);
	if (rc < 0)
		return rc;
	uint32_t *ids = malloc((t->nmethods ? t->nmethods : 1) * sizeof(*ids));
	if (!ids) {
		free(st);
		return -ENOMEM;
	}
	size_t n = rva_report_order(t, st, keys, nkeys, by_self, ids);
	if (top && n > top)
		n = top;
	const char *what = by_self ? "self" : "total";
	int est = 0;
	char h_avg[16], h_min[16], h_max[16];
	snprintf(h_avg, sizeof(h_avg), "Avg %s", what);
	snprintf(h_min, sizeof(h_min), "Min %s", what);
	snprintf(h_max, sizeof(h_max), "Max %s", what);
	fprintf(f, "  %10s  %10s  %10s  %10s  %10s  %10s  Function\n", "Total time", "Self time",
		"Calls", h_avg, h_min, h_max);
	fprintf(f, "  ==========  ==========  ==========  ==========  ==========  ==========  "
		   "====================\n");
	for (size_t i = 0; i < n; i++) {
		const rva_rstat *m = &st[ids[i]];
		char tot[32], self[32], avg[32], mn[32], mx[32];
		int64_t sum = by_self ? m->self : m->sum;
		fmt_time(tot, sizeof(tot), t, (double)m->total);
		fmt_time(self, sizeof(self), t, (double)m->self);
		if (m->est_self) { /* an estimate (rva_muted_self), marked even when
				    * the figure fills its column (100 us and up) */
			if (self[0] != ' ')
				memmove(self + 1, self, strlen(self) + 1);
			self[0] = '~';
		}
		if (m->calls) {
			fmt_time(avg, sizeof(avg), t, (double)sum / (double)m->calls);
			fmt_time(mn, sizeof(mn), t, (double)(by_self ? m->self_min : m->min));
			fmt_time(mx, sizeof(mx), t, (double)(by_self ? m->self_max : m->max));
		} else { /* a muted function: its estimate only */
			snprintf(avg, sizeof(avg), "%10s", "-");
			snprintf(mn, sizeof(mn), "%10s", "-");
			snprintf(mx, sizeof(mx), "%10s", "-");
		}
		fprintf(f, "  %s  %s  %10" PRIu64 "  %s  %s  %s  %s\n", tot, self, m->calls, avg,
			mn, mx, t->names[ids[i]]);
		est |= m->est_self != 0;
	}
	if (est)
		fprintf(f, "  %s\n", RVA_EST_LINE);
	free(ids);
	free(st);
	return ferror(f) ? -EIO : 0;
}

/* ---- focus graph ---- */

void rva_focus_release(rva_focus *fc)
{
	rva_tree_release(&fc->graph);
	free(fc->bt);
	free(fc->pool);
	memset(fc, 0, sizeof(*fc));
}

/* Adds the subtree of full-tree node `src` under focus node `dst`, down
 * to `cut` levels below the focused node (level 1: its callees); deeper
 * nodes are left out (their time stays in their ancestors' inclusive
 * time) and fc->cut is set.  Explicit stack. */
static int merge_subtree(const rva_tree *full, rva_focus *fc, rva_tmap *map, uint32_t src,
			 uint32_t dst, size_t cut)
{
	typedef struct {
		uint32_t src, dst;
		size_t level;
	} item;
	item *st = NULL;
	size_t sn = 0, cap = 0;
	int rc = -ENOMEM;
	uint32_t from = src;
	size_t level = 1;
	for (;;) {
		/* from's children, at `level`, go under dst. */
		for (uint32_t c = full->nodes[from].first_child; c;
		     c = full->nodes[c].next_sibling) {
			if (level > cut) {
				fc->cut = 1;
				break;
			}
			if (sn == cap) {
				size_t nc = cap ? cap * 2 : 64;
				item *v = realloc(st, nc * sizeof(*v));
				if (!v)
					goto out;
				st = v;
				cap = nc;
			}
			st[sn++] = (item){c, dst, level};
		}
		if (!sn)
			break;
		item it = st[--sn];
		const rva_tnode *s = &full->nodes[it.src];
		uint32_t id;
		int r = rva_tree_child(&fc->graph, map, it.dst, s->method, &id);
		if (r < 0) {
			rc = r;
			goto out;
		}
		rva_tnode *g = &fc->graph.nodes[id];
		g->calls += s->calls;
		g->incl = rva_sadd(g->incl, s->incl);
		g->self = rva_sadd(g->self, s->self);
		from = it.src;
		dst = id;
		level = it.level + 1;
	}
	rc = 0;
out:
	free(st);
	return rc;
}

/* Most time first, then most calls, then the path's method ids (distinct
 * paths differ there), so the order never depends on qsort. */
static int cmp_bt(const void *a, const void *b)
{
	const rva_backtrace *x = a, *y = b;
	if (x->incl != y->incl)
		return x->incl > y->incl ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	for (size_t k = 0; k < x->nmethods; k++)
		if (x->methods[k] != y->methods[k])
			return x->methods[k] < y->methods[k] ? -1 : 1;
	return 0;
}

int rva_focus_build(const rva_trace *t, uint32_t method, size_t maxdepth, rva_focus *fc)
{
	rva_tree full;
	rva_tmap map = {0};
	uint32_t *st = NULL, *hits = NULL;
	size_t nhits = 0, pool = 0;
	memset(fc, 0, sizeof(*fc));
	fc->method = method;
	fc->maxdepth = maxdepth;
	int rc = rva_tree_build(t, SIZE_MAX, &full);
	if (rc < 0)
		return rc;
	if ((rc = rva_tree_init(&fc->graph)) < 0)
		goto out;
	rc = -ENOMEM;
	if (method == UINT32_MAX) {
		/* The whole tree: every root under the synthetic root. */
		if (merge_subtree(&full, fc, &map, 0, 0, maxdepth) < 0)
			goto out;
		fc->graph.nodes[0].incl = full.nodes[0].incl;
		rc = 0;
		goto out;
	}
	/* The outermost nodes of `method`: a walk that stops at each. */
	if (!(st = malloc(full.n * sizeof(*st))) || !(hits = malloc(full.n * sizeof(*hits))))
		goto out;
	size_t sn = 0;
	for (uint32_t c = full.nodes[0].first_child; c; c = full.nodes[c].next_sibling)
		st[sn++] = c;
	while (sn) {
		uint32_t id = st[--sn];
		if (full.nodes[id].method == method) {
			hits[nhits++] = id;
			continue;
		}
		for (uint32_t c = full.nodes[id].first_child; c; c = full.nodes[c].next_sibling)
			st[sn++] = c;
	}
	assert(sn == 0);
	uint32_t root = 0;
	if (nhits && (rc = rva_tree_child(&fc->graph, &map, 0, method, &root)) < 0)
		goto out;
	rc = -ENOMEM;
	for (size_t i = 0; i < nhits; i++) {
		const rva_tnode *h = &full.nodes[hits[i]];
		rva_tnode *r = &fc->graph.nodes[root];
		r->calls += h->calls;
		r->incl = rva_sadd(r->incl, h->incl);
		r->self = rva_sadd(r->self, h->self);
		if (merge_subtree(&full, fc, &map, hits[i], root, maxdepth) < 0)
			goto out;
	}
	fc->graph.nodes[0].incl = nhits ? fc->graph.nodes[root].incl : 0;
	/* Backtraces: each hit's path, its innermost frames kept. */
	if (!(fc->bt = calloc(nhits ? nhits : 1, sizeof(*fc->bt))))
		goto out;
	for (size_t i = 0; i < nhits; i++) {
		size_t d = 0;
		for (uint32_t id = hits[i]; id; id = full.nodes[id].parent)
			d++;
		fc->bt[i].depth = d;
		fc->bt[i].nmethods = d < RVA_CHAIN_MAX_FRAMES ? d : RVA_CHAIN_MAX_FRAMES;
		pool += fc->bt[i].nmethods;
	}
	if (!(fc->pool = malloc((pool ? pool : 1) * sizeof(*fc->pool))))
		goto out;
	size_t used = 0;
	for (size_t i = 0; i < nhits; i++) {
		rva_backtrace *b = &fc->bt[i];
		b->methods = fc->pool + used;
		used += b->nmethods;
		b->calls = full.nodes[hits[i]].calls;
		b->incl = full.nodes[hits[i]].incl;
		uint32_t id = hits[i];
		for (size_t k = b->nmethods; k-- > 0; id = full.nodes[id].parent)
			b->methods[k] = full.nodes[id].method;
	}
	fc->nbt = nhits;
	qsort(fc->bt, nhits, sizeof(*fc->bt), cmp_bt);
	rc = 0;
out:
	free(map.slot);
	free(st);
	free(hits);
	rva_tree_release(&full);
	if (rc < 0)
		rva_focus_release(fc);
	return rc;
}

static const char *node_name(const rva_trace *t, uint32_t m)
{
	return m < t->nmethods ? t->names[m] : "?";
}

typedef struct gctx {
	const rva_tree *g;
	const rva_trace *t;
} gctx;

static int cmp_gnode(const void *a, const void *b, void *ctx)
{
	const gctx *c = ctx;
	const rva_tnode *x = &c->g->nodes[*(const uint32_t *)a],
			*y = &c->g->nodes[*(const uint32_t *)b];
	if (x->incl != y->incl)
		return x->incl > y->incl ? -1 : 1;
	int r = strcmp(node_name(c->t, x->method), node_name(c->t, y->method));
	return r ? r : (*(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1);
}

/* One line: time, the prefix of branch units, "+-" when the node is one of
 * several children, "(calls) name". */
static void graph_line(FILE *f, const rva_trace *t, const rva_tnode *n, const char *prefix,
		       int branch)
{
	char tm[32];
	fmt_time(tm, sizeof(tm), t, (double)n->incl);
	fprintf(f, "  %s : %s%s(%" PRIu64 ") %s\n", tm, prefix, branch ? " +-" : "", n->calls,
		node_name(t, n->method));
}

/* Prints node `top` and everything below it, depth first.  Prefix units
 * are 3 bytes (" | " while more siblings follow, "   " after the last), at
 * most GRAPH_MAX_BRANCH of them; deeper branches draw at that indentation.
 * One buffer holds the prefix: a node writes its own unit (when it is one
 * of several children) before its descendants print, and a node's line
 * cuts the buffer to its units; the units before it belong to its
 * ancestors and nothing printed between them and it writes there. */
static int graph_print(FILE *f, const rva_trace *t, const rva_tree *g, uint32_t top)
{
	typedef struct {
		uint32_t node;
		uint32_t units; /* prefix units before this node's line */
		uint8_t branch; /* drawn with "+-" */
		uint8_t more;	/* siblings follow it: " | " below it */
		uint8_t sep;	/* a separator line comes first */
	} item;
	size_t cap = 64, sn = 0;
	item *st = malloc(cap * sizeof(*st));
	uint32_t *kids = malloc((g->n ? g->n : 1) * sizeof(*kids));
	char *prefix = malloc(3 * GRAPH_MAX_BRANCH + 1);
	int rc = -ENOMEM;
	if (!st || !kids || !prefix)
		goto out;
	prefix[0] = '\0';
	gctx c = {g, t};
	st[sn++] = (item){top, 0, 0, 0, 0};
	while (sn) {
		item it = st[--sn];
		size_t u = it.units < GRAPH_MAX_BRANCH ? it.units : GRAPH_MAX_BRANCH;
		prefix[3 * u] = '\0';
		if (it.sep)
			fprintf(f, "  %10s : %s |\n", "", prefix);
		graph_line(f, t, &g->nodes[it.node], prefix, it.branch);
		/* The children's prefix: this node's unit is " | " while its
		 * own siblings follow, else blank. */
		size_t cu = it.units + (it.branch ? 1 : 0);
		if (it.branch && it.units < GRAPH_MAX_BRANCH)
			memcpy(prefix + 3 * it.units, it.more ? " | " : "   ", 3);
		size_t nk = 0;
		for (uint32_t k = g->nodes[it.node].first_child; k; k = g->nodes[k].next_sibling)
			kids[nk++] = k;
		qsort_r(kids, nk, sizeof(*kids), cmp_gnode, &c);
		if (sn + nk > cap) {
			while (cap < sn + nk)
				cap *= 2;
			item *v = realloc(st, cap * sizeof(*v));
			if (!v)
				goto out;
			st = v;
		}
		for (size_t k = nk; k-- > 0;)
			st[sn++] =
				(item){kids[k], (uint32_t)cu, nk > 1, k + 1 < nk, nk > 1 && k > 0};
	}
	rc = ferror(f) ? -EIO : 0;
out:
	free(st);
	free(kids);
	free(prefix);
	return rc;
}

int rva_focus_print(FILE *f, const rva_trace *t, const rva_focus *fc)
{
	int whole = fc->method == UINT32_MAX;
	if (!whole) {
		fprintf(f, "# Function Call Graph for '%s'\n",
			fc->method < t->nmethods ? t->names[fc->method] : "?");
		fprintf(f, "=============== BACKTRACE ===============\n");
		for (size_t i = 0; i < fc->nbt; i++) {
			const rva_backtrace *b = &fc->bt[i];
			char tm[32];
			fmt_time(tm, sizeof(tm), t, (double)b->incl);
			fprintf(f, " backtrace #%zu: hit %" PRIu64 ", time %s\n", i, b->calls, tm);
			size_t skip = b->depth - b->nmethods;
			if (skip)
				fprintf(f, "   [%zu outer frames truncated]\n", skip);
			for (size_t k = 0; k < b->nmethods; k++)
				fprintf(f, "   [%zu] %s\n", skip + k, node_name(t, b->methods[k]));
		}
		fputc('\n', f);
	} else {
		fprintf(f, "# Function Call Graph\n");
	}
	fprintf(f, "========== FUNCTION CALL GRAPH ==========\n");
	if (fc->cut && whole)
		fprintf(f, "# calls more than %zu levels deep left out\n", fc->maxdepth);
	else if (fc->cut)
		fprintf(f, "# calls more than %zu levels below it left out\n", fc->maxdepth);
	fprintf(f, "# TOTAL TIME   FUNCTION\n");
	if (fc->graph.n < 2) {
		fprintf(f, "  %10s : (no calls)\n", "");
		return ferror(f) ? -EIO : 0;
	}
	if (!whole)
		return graph_print(f, t, &fc->graph, 1);
	/* Every root, most time first, each drawn as its own graph. */
	size_t nk = 0;
	for (uint32_t k = fc->graph.nodes[0].first_child; k; k = fc->graph.nodes[k].next_sibling)
		nk++;
	uint32_t *roots = malloc(nk * sizeof(*roots));
	if (!roots)
		return -ENOMEM;
	nk = 0;
	for (uint32_t k = fc->graph.nodes[0].first_child; k; k = fc->graph.nodes[k].next_sibling)
		roots[nk++] = k;
	gctx c = {&fc->graph, t};
	qsort_r(roots, nk, sizeof(*roots), cmp_gnode, &c);
	int rc = 0;
	for (size_t i = 0; i < nk && rc == 0; i++)
		rc = graph_print(f, t, &fc->graph, roots[i]);
	free(roots);
	return rc;
}

/* ---- replay ---- */

/* A thread's replay cursor: the next call to enter and the calls with
 * callees still open (their lines "name() {" printed, "}" not yet). */
typedef struct rcur {
	size_t next;
	uint32_t *open;
	size_t nopen, cap;
} rcur;

/* 1 when the cursor's next line closes its innermost open call: the next
 * call (pre-order) is not below it. */
static int rcur_closes(const rva_thread *th, const rcur *c)
{
	return c->nopen && (c->next == th->ncalls ||
			    th->calls[c->next].depth <= th->calls[c->open[c->nopen - 1]].depth);
}

/* When the cursor's next line happens; INT64_MAX when it has none. */
static int64_t rcur_time(const rva_thread *th, const rcur *c)
{
	if (rcur_closes(th, c))
		return th->calls[c->open[c->nopen - 1]].end;
	return c->next < th->ncalls ? th->calls[c->next].start : INT64_MAX;
}

typedef struct hent {
	int64_t when;
	size_t th;
} hent;

static int hent_before(const hent *a, const hent *b)
{
	return a->when != b->when ? a->when < b->when : a->th < b->th;
}

static void heap_sift(hent *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && hent_before(&h[l], &h[m]))
			m = l;
		if (r < n && hent_before(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		hent x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

static void replay_cols(FILE *f, const rva_trace *t, unsigned fields, int64_t when, const char *d,
			uint32_t tid, int has_tid)
{
	if (fields & RVA_REPLAY_ELAPSED) {
		char el[32];
		fmt_time(el, sizeof(el), t, (double)(when - t->start));
		fprintf(f, " %s", el);
	}
	if (fields & RVA_REPLAY_DURATION)
		fprintf(f, " %10s", d);
	if (fields & RVA_REPLAY_TID) {
		if (has_tid)
			fprintf(f, " [%6" PRIu32 "]", tid);
		else
			fprintf(f, " [%6s]", "");
	}
	fputs(" | ", f);
}

static void replay_indent(FILE *f, size_t depth)
{
	size_t n = depth < REPLAY_MAX_INDENT ? depth : REPLAY_MAX_INDENT;
	fprintf(f, "%*s", (int)(2 * n), "");
	if (depth > REPLAY_MAX_INDENT)
		fprintf(f, "[%zu] ", depth);
}

int rva_replay_print(FILE *f, const rva_trace *t, unsigned fields)
{
	size_t n = t->nthreads;
	rcur *cur = calloc(n ? n : 1, sizeof(*cur));
	hent *h = malloc((n ? n : 1) * sizeof(*h));
	int rc = -ENOMEM;
	if (!cur || !h)
		goto out;
	/* Titles right-aligned over the columns replay_cols() prints (11, 11
	 * and 9 characters), the first one's first character a '#'. */
	static const struct {
		unsigned field, width;
		const char *title;
	} cols[] = {{RVA_REPLAY_ELAPSED, 11, "ELAPSED"},
		    {RVA_REPLAY_DURATION, 11, "DURATION"},
		    {RVA_REPLAY_TID, 9, "TID "}};
	fputc('#', f);
	int first = 1;
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		if (fields & cols[i].field) {
			fprintf(f, "%*s", (int)cols[i].width - first, cols[i].title);
			first = 0;
		}
	fprintf(f, "%sFUNCTION\n", first ? "  " : "   ");
	size_t nh = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t w = rcur_time(&t->threads[i], &cur[i]);
		if (w != INT64_MAX)
			h[nh++] = (hent){w, i};
	}
	for (size_t i = nh / 2; i-- > 0;)
		heap_sift(h, nh, i);
	int anomaly = t->has_anomaly;
	while (nh) {
		size_t ti = h[0].th;
		const rva_thread *th = &t->threads[ti];
		rcur *c = &cur[ti];
		if (anomaly && h[0].when > t->anomaly_ns) {
			replay_cols(f, t, fields, t->anomaly_ns, "", 0, 0);
			fprintf(f, "/* anomaly: %s */\n", t->anomaly_name ? t->anomaly_name : "");
			anomaly = 0;
		}
		char d[32];
		if (rcur_closes(th, c)) {
			const rva_call *x = &th->calls[c->open[--c->nopen]];
			fmt_time(d, sizeof(d), t, (double)dur(x));
			replay_cols(f, t, fields, x->end, d, th->tid, 1);
			replay_indent(f, x->depth);
			fprintf(f, "} /* %s */\n", t->names[x->method]);
		} else {
			size_t i = c->next++;
			const rva_call *x = &th->calls[i];
			int leaf = c->next == th->ncalls || th->calls[c->next].depth <= x->depth;
			fmt_time(d, sizeof(d), t, (double)dur(x));
			replay_cols(f, t, fields, x->start, leaf ? d : "", th->tid, 1);
			replay_indent(f, x->depth);
			const char *name = t->names[x->method];
			fprintf(f, "%s%s%s\n", name, strchr(name, '(') ? "" : "()",
				leaf ? ";" : " {");
			if (!leaf) {
				if (c->nopen == c->cap) {
					size_t nc = c->cap ? c->cap * 2 : 64;
					uint32_t *v = realloc(c->open, nc * sizeof(*v));
					if (!v)
						goto out;
					c->open = v;
					c->cap = nc;
				}
				c->open[c->nopen++] = (uint32_t)i;
			}
		}
		int64_t next = rcur_time(th, c);
		if (next == INT64_MAX)
			h[0] = h[--nh];
		else
			h[0].when = next;
		heap_sift(h, nh, 0);
	}
	if (anomaly) {
		replay_cols(f, t, fields, t->anomaly_ns, "", 0, 0);
		fprintf(f, "/* anomaly: %s */\n", t->anomaly_name ? t->anomaly_name : "");
	}
	rc = ferror(f) ? -EIO : 0;
out:
	for (size_t i = 0; cur && i < n; i++)
		free(cur[i].open);
	free(cur);
	free(h);
	return rc;
}
