/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aggregate.c — the JSON API's aggregate and differential flame graphs
 * (aggregate.h; API.md "Aggregates") over the rows the decoder keeps
 * (model/agg.h, read through store.h's agg_read).
 *
 * Invariants: a query reads the bucket sums when its filter is only bucket
 * columns (and whole days), else the rows of at most RVS_AGG_MAX_TRACES
 * matching traces; both inside one read snapshot.  No SQL here: every
 * request value is bound as a parameter by the store; every string reaches
 * JSON through jansson (invalid UTF-8 as '?').  Per-trace means are integer
 * nanoseconds, rounded to nearest, over the traces of the row's app (its
 * root's count), never over a set of several apps.  The callers view is
 * the same read, summed per (app, caller) and (app, callee) of a method.
 * With weighted=1 the per-trace rows are read whatever the filter, and
 * each trace also counts with its upload's weight (1/p, Horvitz–Thompson):
 * every node gains the weighted (Hájek) means and their standard errors,
 * every side the estimated population count and how many of its traces
 * carry an estimated (quota-censored) or unknown weight.  A node's on/off-CPU
 * split ("cpu") is summed, unweighted, over its traces with CPU data only,
 * and listed only when it has some: never a 0 standing for "unknown".
 */
#include "api/aggregate.h"
#include "base/json.h"
#include "base/text.h"
#include "model/agg.h"
#include "store/store.h"
#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rearview/common.pb-c.h"

#define DAY_S  86400
#define OF_MAX 4096 /* bytes of the callers' method name */

/* ---- the query's filter ----------------------------------------------------- */

/* Text filters first, then kind, then the integers (filt_set's order). */
enum {
	F_APP,
	F_VERSION,
	F_MODEL,
	F_CAMPAIGN,
	F_METHOD,
	F_CHAIN,
	F_ISSUE,
	F_KIND,
	F_SINCE,
	F_UNTIL,
	F_DUR_MIN,
	F_DUR_MAX,
	F_EX_SINCE,
	F_EX_UNTIL,
	F_EX_DUR_MIN,
	F_EX_DUR_MAX,
	F_N
};
static const char *const FILTER_NAMES[F_N] = {
	"app",		"version",	"model",	  "campaign",	   "method",  "chain",
	"issue",	"kind",		"since",	  "until",	   "dur_min", "dur_max",
	"except_since", "except_until", "except_dur_min", "except_dur_max"};

/* One set of traces: each filter's value, NULL when absent. */
struct filt {
	char *v[F_N];
	int64_t num[F_N];
};

static void filt_free(struct filt *f)
{
	for (int i = 0; i < F_N; i++)
		free(f->v[i]);
}

/* Sets filter name (a FILTER_NAMES entry) of f to the decoded value; an
 * empty value clears it; kind is any form rvs_param_kind takes.  0, or -EINVAL (bad escape or
 * number). */
static int filt_set(struct filt *f, int k, const char *raw, size_t n)
{
	char *v = malloc(n + 1);
	if (!v || rvs_url_decode(raw, n, 1, v, n + 1)) {
		free(v);
		return -EINVAL;
	}
	free(f->v[k]);
	f->v[k] = NULL;
	if (!v[0]) {
		free(v);
		return 0;
	}
	if (k == F_KIND && rvs_param_kind(v, &f->num[k])) {
		free(v);
		return -EINVAL;
	}
	if (k > F_KIND && rvs_parse_i64(v, &f->num[k])) {
		free(v);
		return -EINVAL;
	}
	f->v[k] = v;
	return 0;
}

/* Parses query into sides[0..nsides): a parameter named as a filter sets
 * it on every side; with two sides, "a.NAME" / "b.NAME" set it on one
 * (applied after the common ones); every name is one of them (route.c
 * refuses others).  A bad value gives 400
 * naming it into r, and -EINVAL. */
static int parse_query(const char *query, struct filt *sides, int nsides, struct rvs_query_resp *r)
{
	for (int pass = 0; pass < 2; pass++) {
		const char *p = query;
		while (p && *p) {
			const char *amp = strchr(p, '&'), *eq;
			size_t len = amp ? (size_t)(amp - p) : strlen(p), klen;
			const char *key = p;
			int side = -1, k;
			char msg[160];

			p = amp ? amp + 1 : NULL;
			if (!len)
				continue;
			eq = memchr(key, '=', len);
			klen = eq ? (size_t)(eq - key) : len;
			if ((klen == 2 && !memcmp(key, "of", 2)) ||
			    (klen == 8 && !memcmp(key, "weighted", 8)) ||
			    (klen == 4 && !memcmp(key, "node", 4)) ||
			    (klen == 2 && !memcmp(key, "by", 2)) ||
			    (klen == 5 && !memcmp(key, "limit", 5)))
				continue; /* of, heaviest's frame, the mode: not filters */
			if (nsides == 2 && klen > 2 && (key[0] == 'a' || key[0] == 'b') &&
			    key[1] == '.') {
				side = key[0] - 'a';
				key += 2;
				klen -= 2;
			}
			for (k = 0; k < F_N; k++)
				if (strlen(FILTER_NAMES[k]) == klen &&
				    !memcmp(FILTER_NAMES[k], key, klen))
					break;
			/* The route lists every name (route.c refused any other). */
			assert(k < F_N);
			if ((side >= 0) != (pass == 1))
				continue;
			for (int s = 0; s < nsides; s++) {
				if (side >= 0 && s != side)
					continue;
				if (filt_set(&sides[s], k, eq ? eq + 1 : "",
					     eq ? len - klen - (side >= 0 ? 2 : 0) - 1 : 0)) {
					snprintf(msg, sizeof msg, "bad value for parameter: %s%s",
						 side >= 0 ? (side ? "b." : "a.") : "",
						 FILTER_NAMES[k]);
					rvs_query_set_error(r, 400, msg);
					return -EINVAL;
				}
			}
		}
	}
	return 0;
}

/* ---- aggregation ------------------------------------------------------------ */

/* One node of the aggregated set; [s] is side s (one side: [0]). */
struct anode {
	int64_t id, parent;
	int depth;
	char *method; /* malloc'd; an app root: its app id */
	int64_t traces[2], calls[2], self[2], incl[2];
	/* Of its traces, those with CPU data and, over them, its self and
	 * inclusive time on and off the CPU (store.h's struct rvs_agg_sum). */
	int64_t cpu_traces[2], cpu_self[2], cpu_incl[2], off_self[2], off_incl[2];
	uint32_t pidx;	       /* index of the parent in the preorder array */
	int64_t app_traces[2]; /* its app root's traces: what its means divide by */
	/* Weighted sums over the node's per-trace rows (weight w each): Σw,
	 * Σw·self, Σw·incl, and for the variance of the Hájek mean
	 * Σw(w−1), Σw(w−1)·x and Σw(w−1)·x² of x = self, incl; the rows whose
	 * weight is an estimate (wflag 1) or unknown (2). */
	double w[2], wself[2], wincl[2], vw[2], vs1[2], vs2[2], vi1[2], vi2[2];
	int64_t n_est[2], n_unknown[2];
	double app_w[2], app_vw[2]; /* its app root's Σw and Σw(w−1) */
};

struct agg {
	struct anode *v;
	size_t n, cap;
	uint32_t *slot; /* open addressing on id: index + 1, 0 = empty */
	size_t nslot;
	int64_t traces[2], cpu_traces[2]; /* the sides' traces, and those with CPU data */
	int bucketed[2], sampled[2];
	int weighted; /* weighted=1: per-trace rows, weighted figures too */
	/* Sums of the app roots' weighted members per side (set_app_traces). */
	double w[2];
	int64_t n_est[2], n_unknown[2];
};

static size_t hash_id(int64_t id, size_t nslot)
{
	return (size_t)(((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 20) & (nslot - 1);
}

static struct anode *agg_get(struct agg *a, int64_t id)
{
	size_t h;
	if (2 * (a->n + 1) > a->nslot) {
		size_t ns = a->nslot ? 2 * a->nslot : 1024;
		uint32_t *s = calloc(ns, sizeof *s);
		if (!s)
			return NULL;
		for (size_t i = 0; i < a->n; i++) {
			size_t j = hash_id(a->v[i].id, ns);
			while (s[j])
				j = (j + 1) & (ns - 1);
			s[j] = (uint32_t)i + 1;
		}
		free(a->slot);
		a->slot = s;
		a->nslot = ns;
	}
	for (h = hash_id(id, a->nslot); a->slot[h]; h = (h + 1) & (a->nslot - 1))
		if (a->v[a->slot[h] - 1].id == id)
			return &a->v[a->slot[h] - 1];
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 256;
		struct anode *v = realloc(a->v, cap * sizeof *v);
		if (!v)
			return NULL;
		a->v = v;
		a->cap = cap;
	}
	memset(&a->v[a->n], 0, sizeof a->v[a->n]);
	a->v[a->n].id = id;
	a->slot[h] = (uint32_t)++a->n;
	return &a->v[a->n - 1];
}

static void agg_free(struct agg *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].method);
	free(a->v);
	free(a->slot);
}

static int is_signature(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");
	return n == 16 && !s[n];
}

/* The store's filter of side f into *o; *chain gets the chain text when
 * the filter names one (freed by the caller).  0 or -ENOMEM. */
static int to_filter(const struct filt *f, struct rvs_agg_filter *o, char **chain)
{
	const char *c = f->v[F_CHAIN];

	memset(o, 0, sizeof *o);
	*chain = NULL;
	o->bucketed = !f->v[F_CAMPAIGN] && !f->v[F_METHOD] && !f->v[F_CHAIN] && !f->v[F_ISSUE] &&
		      !f->v[F_DUR_MIN] && !f->v[F_DUR_MAX] && !f->v[F_EX_SINCE] &&
		      !f->v[F_EX_UNTIL] && !f->v[F_EX_DUR_MIN] && !f->v[F_EX_DUR_MAX] &&
		      (!f->v[F_SINCE] || f->num[F_SINCE] % DAY_S == 0) &&
		      (!f->v[F_UNTIL] || f->num[F_UNTIL] % DAY_S == 0);
	o->app = f->v[F_APP];
	o->version = f->v[F_VERSION];
	o->model = f->v[F_MODEL];
	o->campaign = f->v[F_CAMPAIGN];
	o->method = f->v[F_METHOD];
	o->has_kind = !!f->v[F_KIND];
	o->kind = f->num[F_KIND];
	o->has_since = !!f->v[F_SINCE];
	o->since = f->num[F_SINCE];
	o->has_until = !!f->v[F_UNTIL];
	o->until = f->num[F_UNTIL];
	o->max_traces = RVS_AGG_MAX_TRACES;
	o->issue = f->v[F_ISSUE];
	o->has_dur_min = !!f->v[F_DUR_MIN];
	o->dur_min = f->num[F_DUR_MIN];
	o->has_dur_max = !!f->v[F_DUR_MAX];
	o->dur_max = f->num[F_DUR_MAX];
	/* The excepted cell: an absent bound is open. */
	o->has_except =
		f->v[F_EX_SINCE] || f->v[F_EX_UNTIL] || f->v[F_EX_DUR_MIN] || f->v[F_EX_DUR_MAX];
	o->except_since = f->v[F_EX_SINCE] ? f->num[F_EX_SINCE] : INT64_MIN;
	o->except_until = f->v[F_EX_UNTIL] ? f->num[F_EX_UNTIL] : INT64_MAX;
	o->except_dur_min = f->v[F_EX_DUR_MIN] ? f->num[F_EX_DUR_MIN] : INT64_MIN;
	o->except_dur_max = f->v[F_EX_DUR_MAX] ? f->num[F_EX_DUR_MAX] : INT64_MAX;
	if (c && is_signature(c)) {
		o->signature = c;
	} else if (c) {
		/* Chain text as trace_chains keeps it: each name ends in ';'. */
		size_t n = strlen(c);
		if (!(*chain = malloc(n + 2)))
			return -ENOMEM;
		memcpy(*chain, c, n + 1);
		if (c[n - 1] != ';')
			memcpy(*chain + n, ";", 2);
		o->chain = *chain;
	}
	return 0;
}

/* agg_read's callbacks (store.h) into struct agg. */
static int on_row(void *arg, size_t s, const struct rvs_agg_sum *r, double w, int wflag)
{
	struct anode *nd = agg_get(arg, r->node);
	double v = w * (w - 1), x = (double)r->self_ns, y = (double)r->incl_ns;
	assert(s < 2);
	if (!nd)
		return -ENOMEM;
	nd->traces[s] += r->traces;
	nd->calls[s] += r->calls;
	nd->self[s] += r->self_ns;
	nd->incl[s] += r->incl_ns;
	nd->cpu_traces[s] += r->cpu_traces;
	nd->cpu_self[s] += r->cpu_self_ns;
	nd->cpu_incl[s] += r->cpu_incl_ns;
	nd->off_self[s] += r->off_self_ns;
	nd->off_incl[s] += r->off_incl_ns;
	nd->w[s] += w;
	nd->wself[s] += w * x;
	nd->wincl[s] += w * y;
	nd->vw[s] += v;
	nd->vs1[s] += v * x;
	nd->vs2[s] += v * x * x;
	nd->vi1[s] += v * y;
	nd->vi2[s] += v * y * y;
	nd->n_est[s] += wflag == 1;
	nd->n_unknown[s] += wflag == 2;
	return 0;
}

static size_t on_nodes(void *arg)
{
	return ((struct agg *)arg)->n;
}

static int64_t on_node_id(void *arg, size_t i)
{
	const struct agg *a = arg;
	assert(i < a->n);
	return a->v[i].id;
}

/* Each node's parent, depth and method from the dictionary (an app root's
 * method: its app id), and the sets' trace counts. */
static int on_describe(void *arg, int64_t node, int64_t parent, int depth, const char *method)
{
	struct agg *a = arg;
	struct anode *nd = agg_get(a, node);
	if (!nd || nd->method)
		return nd ? -EIO : -ENOMEM;
	nd->parent = parent;
	nd->depth = depth;
	if (!(nd->method = strdup(method ? method : "")))
		return -ENOMEM;
	if (!parent)
		for (int s = 0; s < 2; s++) {
			a->traces[s] += nd->traces[s];
			a->cpu_traces[s] += nd->cpu_traces[s];
		}
	return 0;
}

/* sum divided by t, rounded to nearest (0 when t is 0). */
static int64_t mean(int64_t sum, int64_t t)
{
	if (!t)
		return 0;
	return sum >= 0 ? (sum + t / 2) / t : -((-sum + t / 2) / t);
}

/* Mean per trace of side s over the traces of node n's app, rounded to
 * nearest: with several apps in the set each app's means are over its own
 * traces, not over every app's. */
static int64_t per_trace(const struct anode *n, int s, int64_t sum)
{
	return mean(sum, n->app_traces[s]);
}

/* The node of id, or NULL. */
static struct anode *agg_find(const struct agg *a, int64_t id)
{
	if (!a->nslot)
		return NULL;
	for (size_t h = hash_id(id, a->nslot); a->slot[h]; h = (h + 1) & (a->nslot - 1))
		if (a->v[a->slot[h] - 1].id == id)
			return &a->v[a->slot[h] - 1];
	return NULL;
}

/* The weighted members of node n of side s into o (prefix p): the Hájek
 * means Σw·x / Σw over its app's traces (x = 0 in a trace without the
 * node) and their standard errors under Poisson sampling,
 * sqrt(Σ w(w−1)(x − mean)²) / Σw, which 1.96 times gives a 95 % interval;
 * its app root's Σw and Σw(w−1) cover every trace of the app. */
static void weighted_members(json_t *o, const char *p, const struct anode *n, int s)
{
	char key[48];
	double W = n->app_w[s], ms = W > 0 ? n->wself[s] / W : 0, mi = W > 0 ? n->wincl[s] / W : 0;
	double vs = n->vs2[s] - 2 * ms * n->vs1[s] + ms * ms * n->app_vw[s];
	double vi = n->vi2[s] - 2 * mi * n->vi1[s] + mi * mi * n->app_vw[s];

	snprintf(key, sizeof key, "%sw_self_ns_per_trace", p);
	json_object_set_new(o, key, json_real(ms));
	snprintf(key, sizeof key, "%sw_incl_ns_per_trace", p);
	json_object_set_new(o, key, json_real(mi));
	snprintf(key, sizeof key, "%sw_self_se_ns", p);
	json_object_set_new(o, key, json_real(W > 0 && vs > 0 ? sqrt(vs) / W : 0));
	snprintf(key, sizeof key, "%sw_incl_se_ns", p);
	json_object_set_new(o, key, json_real(W > 0 && vi > 0 ? sqrt(vi) / W : 0));
	/* The estimated count of traces with the node, and its standard
	 * error sqrt(Σ w(w−1)) (Horvitz–Thompson, Poisson sampling). */
	snprintf(key, sizeof key, "%sw_traces", p);
	json_object_set_new(o, key, json_real(n->w[s]));
	snprintf(key, sizeof key, "%sw_traces_se", p);
	json_object_set_new(o, key, json_real(n->vw[s] > 0 ? sqrt(n->vw[s]) : 0));
}

/* Node n's app root, or NULL when its ancestry is not in the set (before
 * preorder: it looks nodes up by id). */
static const struct anode *app_root_of(const struct agg *a, const struct anode *n)
{
	const struct anode *r = n;
	for (size_t hops = 0; r && r->parent && hops <= a->n; hops++)
		r = agg_find(a, r->parent);
	return r && !r->parent ? r : NULL;
}

/* Sets every node's app_traces to its root's traces (0 for a node whose
 * ancestry is not in the set: preorder drops it), and the sides' weighted
 * sums over the roots.  After on_describe. */
static void set_app_traces(struct agg *a)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct anode *r = app_root_of(a, &a->v[i]);
		for (int s = 0; s < 2; s++) {
			a->v[i].app_traces[s] = r ? r->traces[s] : 0;
			a->v[i].app_w[s] = r ? r->w[s] : 0;
			a->v[i].app_vw[s] = r ? r->vw[s] : 0;
		}
		if (a->v[i].parent)
			continue;
		for (int s = 0; s < 2; s++) {
			a->w[s] += a->v[i].w[s];
			a->n_est[s] += a->v[i].n_est[s];
			a->n_unknown[s] += a->v[i].n_unknown[s];
		}
	}
}

/* The weight a node is drawn and kept by: its inclusive time per trace,
 * summed over the sides. */
static int64_t weight(const struct agg *a, const struct anode *n, int nsides)
{
	int64_t w = 0;
	for (int s = 0; s < nsides; s++)
		w += per_trace(n, s, n->incl[s]);
	return w;
}

struct order_ctx {
	const struct agg *a;
	int nsides;
};

static int cmp_sibling(const void *x, const void *y, void *p)
{
	const struct order_ctx *o = p;
	const struct anode *m = &o->a->v[*(const uint32_t *)x], *n = &o->a->v[*(const uint32_t *)y];
	int64_t wm, wn;
	if (m->parent != n->parent)
		return m->parent < n->parent ? -1 : 1;
	wm = weight(o->a, m, o->nsides);
	wn = weight(o->a, n, o->nsides);
	if (wm != wn)
		return wm > wn ? -1 : 1;
	return m->id < n->id ? -1 : m->id > n->id;
}

/* a->v reordered in preorder (siblings by weight, heaviest first), pidx
 * set; nodes whose parent is not in the set are dropped.  0 or -ENOMEM. */
static int preorder(struct agg *a, int nsides)
{
	struct order_ctx o = {a, nsides};
	uint32_t *by = malloc((a->n + 1) * sizeof *by), *stack = malloc((a->n + 1) * sizeof *stack);
	struct anode *out = malloc((a->n + 1) * sizeof *out);
	size_t nout = 0, sp = 0;
	int rc = -ENOMEM;

	if (!by || !stack || !out)
		goto done;
	for (size_t i = 0; i < a->n; i++)
		by[i] = (uint32_t)i;
	qsort_r(by, a->n, sizeof *by, cmp_sibling, &o);
	/* Children of parent id p: the run of `by` with that parent.  The
	 * stack holds positions in `by` still to visit, pushed reversed. */
	for (size_t i = a->n; i-- > 0;)
		if (a->v[by[i]].parent == 0)
			stack[sp++] = (uint32_t)i;
	while (sp) {
		uint32_t pos = stack[--sp];
		struct anode *nd = &a->v[by[pos]];
		size_t lo = 0, hi = a->n, first;
		out[nout] = *nd;
		nd->method = NULL;
		if (!out[nout].parent)
			out[nout].pidx = UINT32_MAX;
		/* Its children: binary search for the first with parent == id. */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (a->v[by[mid]].parent < nd->id)
				lo = mid + 1;
			else
				hi = mid;
		}
		first = lo;
		for (hi = first; hi < a->n && a->v[by[hi]].parent == nd->id; hi++)
			;
		/* The children's parent index is set when they are emitted:
		 * remember this node's output position in their pidx now. */
		for (size_t j = hi; j-- > first;) {
			a->v[by[j]].pidx = (uint32_t)nout;
			stack[sp++] = (uint32_t)j;
		}
		nout++;
		assert(sp <= a->n);
	}
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].method);
	free(a->v);
	a->v = out;
	a->n = nout;
	out = NULL;
	rc = 0;
done:
	free(by);
	free(stack);
	free(out);
	return rc;
}

/* The bottom-up table: per app and method, self time summed over its
 * paths and inclusive time over the paths with no ancestor of the same
 * method (recursion counted once).  Rows sorted by app, then method. */
struct bu {
	const char *app, *method;
	int64_t self[2], incl[2], calls[2];
	int64_t app_traces[2]; /* what its means divide by */
};

static int cmp_bu_method(const void *x, const void *y)
{
	const struct bu *a = x, *b = y;
	int c = strcmp(a->app, b->app);
	return c ? c : strcmp(a->method, b->method);
}

/* The preorder index of node i's app root. */
static uint32_t root_of(const struct agg *a, uint32_t i)
{
	while (a->v[i].pidx != UINT32_MAX)
		i = a->v[i].pidx;
	return i;
}

static struct bu *bottom_up(const struct agg *a, size_t *nout)
{
	struct bu *v = calloc(a->n + 1, sizeof *v);
	size_t n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < a->n; i++) {
		const struct anode *nd = &a->v[i];
		int outer = 1;
		if (!nd->parent)
			continue;
		for (uint32_t p = nd->pidx; p != UINT32_MAX && a->v[p].parent; p = a->v[p].pidx)
			if (!strcmp(a->v[p].method, nd->method)) {
				outer = 0;
				break;
			}
		v[n].app = a->v[root_of(a, (uint32_t)i)].method;
		v[n].method = nd->method;
		for (int s = 0; s < 2; s++) {
			v[n].self[s] = nd->self[s];
			v[n].calls[s] = nd->calls[s];
			v[n].incl[s] = outer ? nd->incl[s] : 0;
			v[n].app_traces[s] = nd->app_traces[s];
		}
		n++;
	}
	qsort(v, n, sizeof *v, cmp_bu_method);
	*nout = 0;
	for (size_t i = 0; i < n; i++) {
		struct bu *o = &v[*nout];
		if (*nout && !cmp_bu_method(&v[*nout - 1], &v[i])) {
			o = &v[*nout - 1];
			for (int s = 0; s < 2; s++) {
				o->self[s] += v[i].self[s];
				o->incl[s] += v[i].incl[s];
				o->calls[s] += v[i].calls[s];
			}
			continue;
		}
		*o = v[i];
		(*nout)++;
	}
	return v;
}

/* Orders bottom-up rows: one side by self time, two by |self delta|. */
struct bu_ctx {
	const struct agg *a;
	int nsides;
};

static int64_t bu_key(const struct bu_ctx *k, const struct bu *b)
{
	int64_t d = mean(b->self[0], b->app_traces[0]);
	if (k->nsides == 2) {
		d = mean(b->self[1], b->app_traces[1]) - d;
		d = d < 0 ? -d : d;
	}
	return d;
}

static int cmp_bu_key(const void *x, const void *y, void *p)
{
	int64_t kx = bu_key(p, x), ky = bu_key(p, y);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return cmp_bu_method(x, y);
}

/* Bottom-up rows a reply lists. */
#define BOTTOM_UP_ROWS 200

/* The per-side members of a node or bottom-up row into o: one side plain
 * (traces, calls, self_ns, incl_ns and their means), two prefixed a_/b_
 * with the deltas b − a of the means. */
static void side_members(json_t *o, const int64_t *den, int nsides, const int64_t *traces,
			 const int64_t *calls, const int64_t *self, const int64_t *incl)
{
	static const char *const pre[2] = {"a_", "b_"};
	char key[40];
	for (int s = 0; s < nsides; s++) {
		const char *p = nsides == 2 ? pre[s] : "";
		if (traces) {
			snprintf(key, sizeof key, "%straces", p);
			json_object_set_new(o, key, json_integer(traces[s]));
		}
		snprintf(key, sizeof key, "%scalls", p);
		json_object_set_new(o, key, json_integer(calls[s]));
		snprintf(key, sizeof key, "%sself_ns_per_trace", p);
		json_object_set_new(o, key, json_integer(mean(self[s], den[s])));
		snprintf(key, sizeof key, "%sincl_ns_per_trace", p);
		json_object_set_new(o, key, json_integer(mean(incl[s], den[s])));
		if (nsides == 1) {
			json_object_set_new(o, "self_ns", json_integer(self[s]));
			json_object_set_new(o, "incl_ns", json_integer(incl[s]));
		}
	}
	if (nsides == 2) {
		json_object_set_new(o, "self_delta_ns",
				    json_integer(mean(self[1], den[1]) - mean(self[0], den[0])));
		json_object_set_new(o, "incl_delta_ns",
				    json_integer(mean(incl[1], den[1]) - mean(incl[0], den[0])));
	}
}

/* Node n's on/off-CPU split of side s as o's member key (API.md's
 * method "cpu" object: sums over the node's traces with CPU data), only
 * when it has such traces. */
static void cpu_member(json_t *o, const char *key, const struct anode *n, int s)
{
	if (n->cpu_traces[s] <= 0)
		return;
	json_object_set_new(
		o, key,
		json_pack("{s:I,s:I,s:I,s:I,s:I}", "traces", (json_int_t)n->cpu_traces[s],
			  "on_cpu_self_ns", (json_int_t)n->cpu_self[s], "off_cpu_self_ns",
			  (json_int_t)n->off_self[s], "on_cpu_incl_ns", (json_int_t)n->cpu_incl[s],
			  "off_cpu_incl_ns", (json_int_t)n->off_incl[s]));
}

/* The reply document of an aggregated (and preordered) a. */
static json_t *reply(const struct agg *a, int nsides)
{
	json_t *doc = json_object(), *nodes = json_array(), *bus = json_array();
	struct bu_ctx k = {a, nsides};
	unsigned char *keep = malloc(a->n + 1);
	uint32_t *parent = malloc((a->n + 1) * sizeof *parent),
		 *depth = malloc((a->n + 1) * sizeof *depth);
	int64_t *w = malloc((a->n + 1) * sizeof *w);
	struct bu *b = NULL;
	size_t nb = 0, kept = 0;

	if (!keep || !parent || !depth || !w || !(b = bottom_up(a, &nb)))
		goto fail;
	/* The nodes listed: the heaviest, closed under parent (rvs_agg_keep_top
	 * wants one root: the roots hang under a virtual one at 0). */
	w[0] = INT64_MAX;
	parent[0] = depth[0] = 0;
	for (size_t i = 0; i < a->n; i++) {
		parent[i + 1] = a->v[i].pidx == UINT32_MAX ? 0 : a->v[i].pidx + 1;
		depth[i + 1] = (uint32_t)a->v[i].depth + 1;
		w[i + 1] = weight(a, &a->v[i], nsides);
	}
	if (rvs_agg_keep_top(a->n + 1, parent, w, depth, RVS_AGG_MAX_REPLY_NODES + 1, keep))
		goto fail;
	for (size_t i = 0; i < a->n; i++) {
		const struct anode *nd = &a->v[i];
		json_t *o;
		if (!keep[i + 1])
			continue;
		kept++;
		o = json_pack("{s:I,s:I,s:i,s:o}", "node", (json_int_t)nd->id, "parent",
			      (json_int_t)nd->parent, "depth", nd->depth, "method",
			      rvs_json_str(nd->method));
		side_members(o, nd->app_traces, nsides, nd->traces, nd->calls, nd->self, nd->incl);
		for (int s = 0; s < nsides; s++)
			cpu_member(o, nsides == 2 ? (s ? "b_cpu" : "a_cpu") : "cpu", nd, s);
		for (int s = 0; a->weighted && s < nsides; s++)
			weighted_members(o, nsides == 2 ? (s ? "b_" : "a_") : "", nd, s);
		json_array_append_new(nodes, o);
	}
	qsort_r(b, nb, sizeof *b, cmp_bu_key, &k);
	for (size_t i = 0; i < nb && i < BOTTOM_UP_ROWS; i++) {
		json_t *o = json_pack("{s:o,s:o}", "app_id", rvs_json_str(b[i].app), "method",
				      rvs_json_str(b[i].method));
		side_members(o, b[i].app_traces, nsides, NULL, b[i].calls, b[i].self, b[i].incl);
		json_array_append_new(bus, o);
	}
	for (int s = 0; s < nsides; s++) {
		json_t *side =
			json_pack("{s:I,s:I,s:s,s:b}", "traces", (json_int_t)a->traces[s],
				  "cpu_traces", (json_int_t)a->cpu_traces[s], "source",
				  a->bucketed[s] ? "buckets" : "traces", "sampled", a->sampled[s]);
		if (a->weighted) {
			/* Say where the weighting is not exact: quota selection
			 * censors (the most severe or the first N of a week
			 * are no random sample), older devices sent none. */
			const char *why = a->n_est[s] && a->n_unknown[s] ? "estimated_and_unknown"
					  : a->n_est[s]	    ? "estimated: quota selection censors"
					  : a->n_unknown[s] ? "unknown: counted as 1"
							    : "exact";
			json_object_set_new(
				side, "weighted",
				json_pack("{s:f,s:I,s:I,s:b,s:s}", "w_traces", a->w[s],
					  "traces_weight_estimated", (json_int_t)a->n_est[s],
					  "traces_weight_unknown", (json_int_t)a->n_unknown[s],
					  "exact", !a->n_est[s] && !a->n_unknown[s], "note", why));
		}
		if (nsides == 1)
			json_object_update(doc, side);
		else
			json_object_set(doc, s ? "b" : "a", side);
		json_decref(side);
	}
	json_object_set_new(doc, "nodes_total", json_integer((json_int_t)a->n));
	json_object_set_new(doc, "nodes_listed", json_integer((json_int_t)kept));
	json_object_set_new(doc, "nodes", nodes);
	json_object_set_new(doc, "bottom_up", bus);
	free(keep);
	free(parent);
	free(depth);
	free(w);
	free(b);
	return doc;
fail:
	json_decref(doc);
	json_decref(nodes);
	json_decref(bus);
	free(keep);
	free(parent);
	free(depth);
	free(w);
	free(b);
	return NULL;
}

/* ---- callers and callees across the set ---------------------------------- */

/* One row of the callers or callees of the method: per app and the other
 * method (NULL: the method is a root, no caller). */
struct cc {
	const char *app, *method;
	int64_t calls, self, incl, app_traces;
};

static int cmp_cc_key(const void *x, const void *y)
{
	const struct cc *a = x, *b = y;
	int c = strcmp(a->app, b->app);
	if (c || a->method == b->method)
		return c;
	if (!a->method || !b->method)
		return a->method ? 1 : -1;
	return strcmp(a->method, b->method);
}

static int cmp_cc_incl(const void *x, const void *y)
{
	const struct cc *a = x, *b = y;
	int64_t ka = mean(a->incl, a->app_traces), kb = mean(b->incl, b->app_traces);
	if (ka != kb)
		return ka > kb ? -1 : 1;
	return cmp_cc_key(x, y);
}

/* v[0..n) summed by key (app, method), heaviest per trace first; the
 * number of rows left. */
static size_t cc_merge(struct cc *v, size_t n)
{
	size_t k = 0;
	qsort(v, n, sizeof *v, cmp_cc_key);
	for (size_t i = 0; i < n; i++) {
		if (k && !cmp_cc_key(&v[k - 1], &v[i])) {
			v[k - 1].calls += v[i].calls;
			v[k - 1].self += v[i].self;
			v[k - 1].incl += v[i].incl;
			continue;
		}
		v[k++] = v[i];
	}
	qsort(v, k, sizeof *v, cmp_cc_incl);
	return k;
}

static json_t *cc_rows(const struct cc *v, size_t n)
{
	json_t *rows = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(
			rows,
			json_pack("{s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "app_id",
				  rvs_json_str(v[i].app), "method",
				  v[i].method ? rvs_json_str(v[i].method) : json_null(), "calls",
				  (json_int_t)v[i].calls, "self_ns", (json_int_t)v[i].self,
				  "incl_ns", (json_int_t)v[i].incl, "self_ns_per_trace",
				  (json_int_t)mean(v[i].self, v[i].app_traces), "incl_ns_per_trace",
				  (json_int_t)mean(v[i].incl, v[i].app_traces), "app_traces",
				  (json_int_t)v[i].app_traces));
	return rows;
}

/* 1 when node i has an ancestor running the same method (its inclusive
 * time is inside that ancestor's: recursion counted once). */
static int nested_in_same(const struct agg *a, size_t i)
{
	const struct anode *nd = &a->v[i];
	for (uint32_t p = nd->pidx; p != UINT32_MAX && a->v[p].parent; p = a->v[p].pidx)
		if (!strcmp(a->v[p].method, nd->method))
			return 1;
	return 0;
}

/* The callers and callees of method `of` over the preordered set a (every
 * path of it, so over every trace's call tree the set keeps): `callers`
 * the method's time split by the frame that called it, `callees` the
 * inclusive time of what it called, split by callee, `apps` its totals per
 * app.  Inclusive time counts a recursive method once (its outermost
 * paths).  NULL on out of memory. */
static json_t *callers_reply(const struct agg *a, const char *of)
{
	struct cc *up = calloc(a->n + 1, sizeof *up), *down = calloc(a->n + 1, sizeof *down),
		  *tot = calloc(a->n + 1, sizeof *tot);
	size_t nu = 0, nd = 0, nt = 0;
	json_t *doc = NULL;

	if (!up || !down || !tot)
		goto out;
	for (size_t i = 0; i < a->n; i++) {
		const struct anode *n = &a->v[i];
		const char *app;
		int64_t incl;
		if (!n->parent || strcmp(n->method, of))
			continue;
		app = a->v[root_of(a, (uint32_t)i)].method;
		incl = nested_in_same(a, i) ? 0 : n->incl[0];
		up[nu] =
			(struct cc){app,	 a->v[n->pidx].parent ? a->v[n->pidx].method : NULL,
				    n->calls[0], n->self[0],
				    incl,	 n->app_traces[0]};
		tot[nt++] = (struct cc){app, of, n->calls[0], n->self[0], incl, n->app_traces[0]};
		nu++;
		/* Its children follow it in preorder, before the next node at
		 * its depth or above. */
		for (size_t j = i + 1; j < a->n && a->v[j].depth > n->depth; j++)
			if (a->v[j].pidx == i)
				down[nd++] = (struct cc){app,
							 a->v[j].method,
							 a->v[j].calls[0],
							 a->v[j].self[0],
							 a->v[j].incl[0],
							 a->v[j].app_traces[0]};
	}
	nu = cc_merge(up, nu);
	nd = cc_merge(down, nd);
	nt = cc_merge(tot, nt);
	doc = json_pack("{s:o,s:I,s:o,s:o,s:o}", "method", rvs_json_str(of), "traces",
			(json_int_t)a->traces[0], "apps", cc_rows(tot, nt), "callers",
			cc_rows(up, nu), "callees", cc_rows(down, nd));
out:
	free(up);
	free(down);
	free(tot);
	return doc;
}

/* What run() answers. */
enum agg_view { VIEW_TREE, VIEW_DIFF, VIEW_CALLERS };

static void run(struct rvs_call *c, enum agg_view view)
{
	int nsides = view == VIEW_DIFF ? 2 : 1;
	char of[OF_MAX + 1];
	static const struct rvs_agg_cb cb = {on_row, on_nodes, on_node_id, on_describe};
	const struct rvs_store_ops *ops;
	struct rvs_store *st = NULL;
	struct rvs_agg_filter sides[2];
	char *chain[2] = {NULL, NULL};
	struct filt f[2] = {0};
	struct agg a = {0};
	json_t *doc = NULL;
	int rc = 0;

	if (view == VIEW_CALLERS) {
		int has = rvs_query_param(c->query, "of", of, sizeof of);
		if (has != 1 || !of[0]) {
			rvs_query_set_error(c->q, 400,
					    has < 0 ? "bad value for parameter: of"
						    : "missing parameter: of (the method)");
			goto out;
		}
	}
	if (view != VIEW_CALLERS) {
		char wv[8];
		int has = rvs_query_param(c->query, "weighted", wv, sizeof wv);
		if (has < 0 || (has == 1 && strcmp(wv, "0") && strcmp(wv, "1"))) {
			rvs_query_set_error(c->q, 400,
					    "bad value for parameter: weighted (0 or 1)");
			goto out;
		}
		a.weighted = has == 1 && !strcmp(wv, "1");
	}
	if (parse_query(c->query, f, nsides, c->q))
		goto out;
	for (int s = 0; s < nsides && !rc; s++)
		rc = to_filter(&f[s], &sides[s], &chain[s]);
	/* Weights live with each trace's upload: the bucket sums have none;
	 * unweighted, the store need not read them. */
	for (int s = 0; s < nsides && a.weighted; s++)
		sides[s].bucketed = 0;
	for (int s = 0; s < nsides && !rc; s++)
		sides[s].unweighted = !a.weighted;
	if (!rc && rvs_store_acquire(c->cfg->database, &ops, &st)) {
		rvs_query_set_error(c->q, 503, "database unavailable");
		goto out;
	}
	/* One read snapshot: both sides and the dictionary agree. */
	if (!rc)
		rc = ops->agg_read(st, sides, (size_t)nsides, &cb, &a);
	for (int s = 0; s < nsides; s++) {
		a.bucketed[s] = sides[s].bucketed;
		a.sampled[s] = !a.bucketed[s] && a.traces[s] >= RVS_AGG_MAX_TRACES;
	}
	if (!rc) {
		set_app_traces(&a);
		rc = preorder(&a, nsides);
	}
	if (!rc && !(doc = view == VIEW_CALLERS ? callers_reply(&a, of) : reply(&a, nsides)))
		rc = -ENOMEM;
	if (rc)
		rvs_query_set_error(c->q, 500, "query failed");
	else
		rvs_query_reply(c->q, 200, doc);
out:
	rvs_store_release(st);
	agg_free(&a);
	for (int s = 0; s < 2; s++) {
		free(chain[s]);
		filt_free(&f[s]);
	}
}

void rvs_agg_api(struct rvs_call *c)
{
	run(c, VIEW_TREE);
}

void rvs_agg_api_diff(struct rvs_call *c)
{
	run(c, VIEW_DIFF);
}

void rvs_agg_api_callers(struct rvs_call *c)
{
	run(c, VIEW_CALLERS);
}

/* ---- the captures where a frame is heaviest --------------------------------- */

#define HEAVY_DEFAULT 20
#define HEAVY_MAX     200

static int on_heavy(void *arg, const struct rvs_heavy_row *r)
{
	json_t *o = json_pack("{s:o,s:I,s:I,s:I,s:I,s:o}", "trace_id", rvs_json_str(r->trace_id),
			      "calls", (json_int_t)r->calls, "self_ns", (json_int_t)r->self_ns,
			      "incl_ns", (json_int_t)r->incl_ns, "received_at",
			      (json_int_t)r->received_at, "duration_ns",
			      r->duration_ns >= 0 ? json_integer(r->duration_ns) : json_null());
	return !o || json_array_append_new(arg, o) ? -ENOMEM : 0;
}

void rvs_agg_api_heaviest(struct rvs_call *c)
{
	char buf[32];
	const struct rvs_store_ops *ops;
	struct rvs_store *st = NULL;
	struct rvs_agg_filter side;
	char *chain = NULL;
	struct filt f = {0};
	int64_t node, limit = HEAVY_DEFAULT;
	int by_self = 0, rc;
	json_t *rows = NULL;

	if (rvs_query_param(c->query, "node", buf, sizeof buf) != 1 || rvs_parse_i64(buf, &node) ||
	    node <= 0) {
		rvs_query_set_error(c->q, 400, "node is required: an aggregate node id (> 0)");
		goto out;
	}
	if ((rc = rvs_query_param(c->query, "by", buf, sizeof buf)) != 0 &&
	    (rc < 0 || (strcmp(buf, "self") && strcmp(buf, "incl")))) {
		rvs_query_set_error(c->q, 400, "by is self or incl");
		goto out;
	}
	by_self = rc == 1 && !strcmp(buf, "self");
	if ((rc = rvs_query_param(c->query, "limit", buf, sizeof buf)) != 0 &&
	    (rc < 0 || rvs_parse_i64(buf, &limit) || limit < 1 || limit > HEAVY_MAX)) {
		rvs_query_set_error(c->q, 400, "limit is an integer from 1 to 200");
		goto out;
	}
	if (parse_query(c->query, &f, 1, c->q))
		goto out;
	if (to_filter(&f, &side, &chain) || !(rows = json_array())) {
		rvs_query_set_error(c->q, 503, "out of memory");
		goto out;
	}
	/* The trace-level set agg_read sums for these filters, even when the
	 * aggregate itself reads bucket sums (the same traces: every bucket
	 * column is a trace column). */
	side.bucketed = 0;
	if (rvs_store_acquire(c->cfg->database, &ops, &st)) {
		rvs_query_set_error(c->q, 503, "database unavailable");
		goto out;
	}
	rc = ops->heaviest_read(st, &side, node, by_self, limit, on_heavy, rows);
	if (rc) {
		rvs_query_set_error(c->q, rc == -ENOMEM || rvs_store_transient(rc) ? 503 : 500,
				    "query failed");
		goto out;
	}
	rvs_query_reply(c->q, 200,
			json_pack("{s:I,s:s,s:I,s:I,s:o}", "node", (json_int_t)node, "by",
				  by_self ? "self" : "incl", "limit", (json_int_t)limit,
				  "max_traces", (json_int_t)RVS_AGG_MAX_TRACES, "traces", rows));
	rows = NULL;
out:
	json_decref(rows);
	rvs_store_release(st);
	free(chain);
	filt_free(&f);
}
