/* SPDX-License-Identifier: Apache-2.0 */
/*
 * analysis.c — analyses over the model: per-method statistics, slicing,
 * chains and their signatures, signature patterns, the merged top-down tree,
 * callers (bottom-up) and diffs.
 *
 * Every walk is one pass over a thread's pre-order calls with an explicit
 * stack of open frames (depth d pops the stack to d entries), so memory is
 * proportional to depth plus the output, never to recursion on the C stack.
 * A capped tree (rva_tree_build_capped) has no node deeper than its cap
 * plus one RVA_TREE_CUT node per path that went deeper.
 */
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "aggr.h"
#include "analysis-int.h"
#include "rearview/analysis.h"

typedef struct frame {
	size_t call;
	int64_t child;	   /* summed durations of the children */
	int64_t cpu_child; /* and their CPU times (rva_method_stats) */
} frame;

typedef struct fstack {
	frame *v;
	size_t n, cap;
} fstack;

static int fs_push(fstack *s, size_t call)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		frame *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].call = call;
	s->v[s->n].child = 0;
	s->v[s->n].cpu_child = 0;
	s->n++;
	return 0;
}

static int64_t dur(const rva_call *c)
{
	return c->end - c->start;
}

void rva_mafter_free(rva_mafter *a)
{
	free(a->head);
	free(a->next);
	free(a->from);
	free(a->num);
	free(a->den);
	memset(a, 0, sizeof(*a));
}

int rva_mafter_init(rva_mafter *a, const rva_trace *t)
{
	memset(a, 0, sizeof(*a));
	size_t np = t->nmuted * RVA_MUTED_CALLERS, nm = t->nmethods, any = 0;
	for (size_t i = 0; i < t->nmuted; i++)
		any += t->muted[i].ncallers;
	if (!any || !nm)
		return 0;
	a->head = calloc(nm, sizeof(*a->head));
	a->next = calloc(np, sizeof(*a->next));
	a->from = calloc(np, sizeof(*a->from));
	a->num = calloc(np, sizeof(*a->num));
	a->den = calloc(nm, sizeof(*a->den));
	if (!a->head || !a->next || !a->from || !a->num || !a->den) {
		rva_mafter_free(a);
		return -ENOMEM;
	}
	a->nm = nm;
	for (size_t i = 0; i < t->nmuted; i++) {
		const rva_muted *m = &t->muted[i];
		for (uint32_t k = 0; k < m->ncallers && k < RVA_MUTED_CALLERS; k++) {
			size_t p = i * RVA_MUTED_CALLERS + k, n = 0;
			a->num[p] = -1;
			if (m->caller[k] >= nm)
				continue;
			for (size_t q = a->head[m->caller[k]]; q && n < RVA_MAFTER_PER_METHOD;
			     q = a->next[q - 1])
				n++;
			if (n == RVA_MAFTER_PER_METHOD)
				continue;
			/* The trace's start is not known yet: a mute before it
			 * is before every call, as the start would be. */
			a->from[p] = m->ns;
			a->num[p] = 0;
			a->next[p] = a->head[m->caller[k]];
			a->head[m->caller[k]] = p + 1;
		}
	}
	return 0;
}

void rva_mafter_fill(const rva_mafter *a, rva_trace *t)
{
	for (size_t i = 0; a->head && i < t->nmuted; i++) {
		rva_muted *m = &t->muted[i];
		m->after_known = 0;
		for (uint32_t k = 0; k < m->ncallers && k < RVA_MUTED_CALLERS; k++) {
			size_t p = i * RVA_MUTED_CALLERS + k;
			if (m->caller[k] >= a->nm || a->num[p] < 0 || a->den[m->caller[k]] <= 0)
				continue; /* not measured, or no call of it: the span's part */
			double f = a->num[p] / a->den[m->caller[k]];
			assert(f >= 0 && f <= 1.0 + 1e-9);
			m->after_ppm[k] = f >= 1 ? 1000000u : (uint32_t)(f * 1e6 + 0.5);
			m->after_known |= 1u << k;
		}
	}
}

int rva_muted_self(const rva_trace *t, const int64_t *self, int64_t *est)
{
	size_t nm = t->nmethods;
	memset(est, 0, nm * sizeof(*est));
	int64_t span = t->end - t->start;
	if (!t->nmuted || t->weighted || span <= 0)
		return 0;
	int64_t *cur = malloc(nm * sizeof(*cur)), *take = calloc(nm, sizeof(*take));
	if (!cur || !take) {
		free(cur);
		free(take);
		return -ENOMEM;
	}
	memcpy(cur, self, nm * sizeof(*cur));
	/* Newest first: a share was measured with every function muted
	 * before it already folded into its caller's self time. */
	for (size_t g1 = t->nmuted; g1 > 0;) {
		size_t g0 = g1 - 1;
		while (g0 > 0 && t->muted[g0 - 1].ns == t->muted[g1 - 1].ns)
			g0--; /* muted at one look: shares of the same self times */
		for (size_t i = g0; i < g1; i++) {
			const rva_muted *m = &t->muted[i];
			int64_t from = m->ns > t->start ? m->ns : t->start;
			double spread = t->end > from ? (double)(t->end - from) / (double)span : 0;
			for (uint32_t k = 0; k < m->ncallers && k < RVA_MUTED_CALLERS; k++) {
				uint32_t a = m->caller[k];
				double after =
					m->after_known >> k & 1 ? m->after_ppm[k] / 1e6 : spread;
				if (a >= nm || m->method >= nm || a == m->method || cur[a] <= 0)
					continue;
				double want =
					(double)cur[a] * (double)m->share_ppm[k] / 1e6 * after;
				int64_t amt = (int64_t)(want + 0.5), room = cur[a] - take[a];
				if (amt > room)
					amt = room;
				take[a] += amt;
				est[m->method] = rva_sadd(est[m->method], amt);
			}
		}
		for (size_t i = g0; i < g1; i++) {
			const rva_muted *m = &t->muted[i];
			if (m->method < nm) {
				cur[m->method] = rva_sadd(cur[m->method], est[m->method]);
				est[m->method] = 0;
			}
			for (uint32_t k = 0; k < m->ncallers && k < RVA_MUTED_CALLERS; k++) {
				uint32_t a = m->caller[k];
				if (a < nm && take[a]) {
					cur[a] -= take[a];
					take[a] = 0;
				}
			}
		}
		g1 = g0;
	}
	for (size_t i = 0; i < nm; i++)
		est[i] = cur[i] - self[i];
	free(cur);
	free(take);
	return 0;
}

int rva_muted_fold(const rva_trace *t, void *st, size_t size, size_t self_off, size_t est_off)
{
	if (!t->nmuted)
		return 0;
	size_t nm = t->nmethods ? t->nmethods : 1;
	int64_t *self = malloc(nm * sizeof(*self)), *est = malloc(nm * sizeof(*est));
	int rc = self && est ? 0 : -ENOMEM;
	char *p = st;
	for (size_t i = 0; rc == 0 && i < t->nmethods; i++)
		memcpy(&self[i], p + i * size + self_off, sizeof(*self));
	if (rc == 0)
		rc = rva_muted_self(t, self, est);
	for (size_t i = 0; rc == 0 && i < t->nmethods; i++) {
		int64_t v = self[i] + est[i];
		memcpy(p + i * size + self_off, &v, sizeof(v));
		memcpy(p + i * size + est_off, &est[i], sizeof(est[i]));
	}
	free(self);
	free(est);
	return rc;
}

int rva_method_stats(const rva_trace *t, rva_mstat **out)
{
	rva_mstat *st = calloc(t->nmethods ? t->nmethods : 1, sizeof(*st));
	uint32_t *active = calloc(t->nmethods ? t->nmethods : 1, sizeof(*active));
	fstack s = {0};
	int rc = -ENOMEM;
	if (!st || !active)
		goto out_free;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		const int64_t *cpu = th->cpu; /* NULL: no CPU times, stays 0 */
		s.n = 0;
		for (size_t i = 0; i <= th->ncalls; i++) {
			size_t d = i < th->ncalls ? th->calls[i].depth : 0;
			while (s.n > d) {
				frame *f = &s.v[--s.n];
				const rva_call *c = &th->calls[f->call];
				rva_mstat *m = &st[c->method];
				m->self = rva_sadd(m->self, dur(c) - f->child);
				active[c->method]--;
				if (s.n)
					s.v[s.n - 1].child = rva_sadd(s.v[s.n - 1].child, dur(c));
				if (cpu) {
					m->cpu_self =
						rva_sadd(m->cpu_self, cpu[f->call] - f->cpu_child);
					if (s.n)
						s.v[s.n - 1].cpu_child = rva_sadd(
							s.v[s.n - 1].cpu_child, cpu[f->call]);
				}
			}
			if (i == th->ncalls)
				break;
			const rva_call *c = &th->calls[i];
			st[c->method].calls++;
			if (active[c->method]++ == 0) {
				st[c->method].incl = rva_sadd(st[c->method].incl, dur(c));
				if (cpu)
					st[c->method].cpu_incl =
						rva_sadd(st[c->method].cpu_incl, cpu[i]);
			}
			if (fs_push(&s, i) < 0)
				goto out_free;
		}
	}
	if (rva_muted_fold(t, st, sizeof(*st), offsetof(rva_mstat, self),
			   offsetof(rva_mstat, est_self)) < 0)
		goto out_free;
	*out = st;
	st = NULL;
	rc = 0;
out_free:
	free(s.v);
	free(active);
	free(st);
	return rc;
}

void rva_mstat_measured(rva_mstat *st, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		st[i].self -= st[i].est_self;
		st[i].est_self = 0;
	}
}

static int cmp_self(const void *a, const void *b, void *ctx)
{
	const rva_mstat *st = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (st[x].self != st[y].self)
		return st[x].self > st[y].self ? -1 : 1;
	return x < y ? -1 : x > y;
}

size_t rva_top_self(const rva_trace *t, const rva_mstat *st, uint32_t *ids, size_t max)
{
	uint32_t *all = malloc((t->nmethods ? t->nmethods : 1) * sizeof(*all));
	size_t n = 0;
	if (!all)
		return 0;
	for (size_t i = 0; i < t->nmethods; i++)
		if (st[i].calls || st[i].est_self > 0)
			all[n++] = (uint32_t)i;
	/* qsort_r (glibc): no global state, so callers may run analyses on
	 * several threads at once. */
	qsort_r(all, n, sizeof(*all), cmp_self, (void *)st);
	if (n > max)
		n = max;
	memcpy(ids, all, n * sizeof(*ids));
	free(all);
	return n;
}

rva_trace *rva_trace_slice(const rva_trace *t, int64_t from, int64_t to)
{
	rva_trace *s = rva_trace_new();
	if (!s)
		return NULL;
	s->format = t->format;
	s->weighted = t->weighted;
	for (size_t i = 0; i < t->nmethods; i++)
		if (rva_method_intern(s, t->names[i], strlen(t->names[i])) < 0)
			goto out_free;
	if (t->anomaly_name && !(s->anomaly_name = strdup(t->anomaly_name)))
		goto out_free;
	s->has_anomaly = t->has_anomaly;
	s->anomaly_ns = t->anomaly_ns;
	if (t->nmuted) {
		s->muted = malloc(t->nmuted * sizeof(*s->muted));
		if (!s->muted)
			goto out_free;
		memcpy(s->muted, t->muted, t->nmuted * sizeof(*s->muted));
		s->nmuted = t->nmuted;
	}
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		if (rva_thread_add(s, th->pid, th->tid, th->name) < 0)
			goto out_free;
		rva_thread *o = &s->threads[ti];
		size_t n = 0;
		for (size_t i = 0; i < th->ncalls; i++) {
			const rva_call *c = &th->calls[i];
			if (c->start < to &&
			    (c->end > from || (c->end == c->start && c->start >= from)))
				n++;
		}
		if (!n)
			continue;
		o->calls = malloc(n * sizeof(*o->calls));
		if (!o->calls)
			goto out_free;
		o->cap = n;
		for (size_t i = 0; i < th->ncalls; i++) {
			rva_call c = th->calls[i];
			if (!(c.start < to &&
			      (c.end > from || (c.end == c.start && c.start >= from))))
				continue;
			if (c.start < from)
				c.start = from;
			if (c.end > to)
				c.end = to;
			o->calls[o->ncalls++] = c;
		}
	}
	rva_trace_finish(s, INT64_MIN);
	return s;
out_free:
	rva_trace_free(s);
	return NULL;
}

size_t rva_chain_at(const rva_trace *t, size_t thi, int64_t ts, uint32_t *out, size_t max)
{
	if (thi >= t->nthreads)
		return 0;
	const rva_thread *th = &t->threads[thi];
	size_t depth = 0;
	for (size_t i = 0; i < th->ncalls; i++) {
		const rva_call *c = &th->calls[i];
		if (c->depth > depth)
			continue; /* inside a frame that does not contain ts */
		if (c->depth < depth)
			break; /* left the chain's innermost frame's parent */
		if (c->start <= ts && ts <= c->end) {
			if (depth < max)
				out[depth] = c->method;
			depth++;
		} else if (c->start > ts) {
			break;
		}
	}
	return depth;
}

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

size_t rva_normalize_name(const char *in, char *out, size_t outsz)
{
	size_t len = strlen(in), o = 0;
	/* "path/to/module+0x1f" -> "module+0x1f": the path is install-dependent. */
	const char *plus = strstr(in, "+0x");
	size_t i = 0;
	if (plus) {
		const char *slash = NULL;
		for (const char *p = in; p < plus; p++)
			if (*p == '/')
				slash = p;
		if (slash)
			i = (size_t)(slash + 1 - in);
	}
	const char *del = strstr(in, " (deleted)");
	if (del)
		len = (size_t)(del - in);
#define PUT(ch)                        \
	do {                           \
		if (o + 1 < outsz)     \
			out[o] = (ch); \
		o++;                   \
	} while (0)
	while (i < len) {
		/* An address-like 0x with 5+ hex digits varies with ASLR, except the
		 * module offset right after '+', which is stable. */
		if (in[i] == '0' && (in[i + 1] == 'x' || in[i + 1] == 'X') &&
		    !(i > 0 && in[i - 1] == '+')) {
			size_t k = i + 2;
			while (k < len && is_hex((unsigned char)in[k]))
				k++;
			if (k - i - 2 >= 5) {
				PUT('0');
				PUT('x');
				PUT('?');
				i = k;
				continue;
			}
		}
		PUT(in[i]);
		i++;
	}
#undef PUT
	if (outsz)
		out[o < outsz ? o : outsz - 1] = '\0';
	return o;
}

static uint64_t fnv_name(uint64_t h, const char *norm);

uint64_t rva_signature(const rva_trace *t, const uint32_t *chain, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	char small[512];
	for (size_t i = 0; i < n; i++) {
		const char *name = chain[i] < t->nmethods ? t->names[chain[i]] : "?";
		size_t len = rva_normalize_name(name, small, sizeof(small));
		if (len < sizeof(small)) {
			h = fnv_name(h, small);
			continue;
		}
		char *big = malloc(len + 1);
		if (!big)
			return 0;
		rva_normalize_name(name, big, len + 1);
		h = fnv_name(h, big);
		free(big);
	}
	return h;
}

/* ---- merged tree ---- */

static uint64_t key_hash(uint32_t parent, uint32_t method)
{
	uint64_t k = ((uint64_t)parent << 32) | method;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

int rva_tree_child(rva_tree *tr, rva_tmap *m, uint32_t parent, uint32_t method, uint32_t *out)
{
	if (m->cap == 0 || tr->n * 2 >= m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		rva_tslot *s = calloc(cap, sizeof(*s));
		if (!s)
			return -ENOMEM;
		for (size_t i = 1; i < tr->n; i++) {
			uint64_t key = (uint64_t)tr->nodes[i].parent << 32 | tr->nodes[i].method;
			size_t h = key_hash(tr->nodes[i].parent, tr->nodes[i].method) & (cap - 1);
			while (s[h].node)
				h = (h + 1) & (cap - 1);
			s[h].key = key;
			s[h].node = (uint32_t)i + 1;
		}
		free(m->slot);
		m->slot = s;
		m->cap = cap;
	}
	/* The key lives in the slot, so a lookup touches one cache line. */
	uint64_t key = (uint64_t)parent << 32 | method;
	size_t h = key_hash(parent, method) & (m->cap - 1);
	while (m->slot[h].node) {
		if (m->slot[h].key == key) {
			*out = m->slot[h].node - 1;
			return 0;
		}
		h = (h + 1) & (m->cap - 1);
	}
	uint32_t id;
	int rc = rva_tree_new_node(tr, parent, method, &id);
	if (rc < 0)
		return rc;
	m->slot[h].key = key;
	m->slot[h].node = id + 1;
	*out = id;
	return 0;
}

int rva_tree_new_node(rva_tree *tr, uint32_t parent, uint32_t method, uint32_t *out)
{
	if (tr->n >= UINT32_MAX - 1)
		return -E2BIG;
	if (tr->n == tr->cap) {
		size_t cap = tr->cap * 2;
		rva_tnode *v = realloc(tr->nodes, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		tr->nodes = v;
		tr->cap = cap;
	}
	uint32_t id = (uint32_t)tr->n++;
	rva_tnode *nd = &tr->nodes[id];
	memset(nd, 0, sizeof(*nd));
	nd->method = method;
	nd->parent = parent;
	nd->next_sibling = tr->nodes[parent].first_child;
	tr->nodes[parent].first_child = id;
	*out = id;
	return 0;
}

int rva_tree_init(rva_tree *tr)
{
	memset(tr, 0, sizeof(*tr));
	tr->cap = 256;
	tr->nodes = calloc(tr->cap, sizeof(*tr->nodes));
	if (!tr->nodes)
		return -ENOMEM;
	tr->n = 1;
	tr->nodes[0].method = UINT32_MAX;
	return 0;
}

int rva_tree_build(const rva_trace *t, size_t only, rva_tree *tr)
{
	return rva_tree_build_capped(t, only, SIZE_MAX, tr);
}

int rva_tree_build_capped(const rva_trace *t, size_t only, size_t maxdepth, rva_tree *tr)
{
	rva_tmap m = {0};
	uint32_t *nst = NULL;
	int64_t *child = NULL;
	size_t scap = 0;
	int rc = -ENOMEM;
	if (rva_tree_init(tr) < 0)
		return -ENOMEM;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		if (only != SIZE_MAX && ti != only)
			continue;
		const rva_thread *th = &t->threads[ti];
		size_t sn = 0;
		for (size_t i = 0; i <= th->ncalls; i++) {
			size_t d = i < th->ncalls ? th->calls[i].depth : 0;
			if (d > sn)
				d = sn; /* hostile depth: attach to the innermost frame */
			while (sn > d) {
				sn--;
				const rva_call *c = &th->calls[nst[2 * sn + 1]];
				tr->nodes[nst[2 * sn]].self =
					rva_sadd(tr->nodes[nst[2 * sn]].self, dur(c) - child[sn]);
				if (sn)
					child[sn - 1] = rva_sadd(child[sn - 1], dur(c));
			}
			if (i == th->ncalls)
				break;
			if (sn + 1 > scap) {
				size_t cap = scap ? scap * 2 : 64;
				uint32_t *a = realloc(nst, 2 * cap * sizeof(*a));
				if (!a)
					goto out_free;
				nst = a;
				int64_t *b = realloc(child, cap * sizeof(*b));
				if (!b)
					goto out_free;
				child = b;
				scap = cap;
			}
			uint32_t parent = sn ? nst[2 * (sn - 1)] : 0, id = parent;
			/* Past the cap every call is its ancestor's cut node: the
			 * self times summed there are the whole subtree's time,
			 * counted as inclusive once, at the cut's first level. */
			if (sn <= maxdepth) {
				uint32_t meth = sn < maxdepth ? th->calls[i].method : RVA_TREE_CUT;
				if ((rc = rva_tree_child(tr, &m, parent, meth, &id)) < 0)
					goto out_free;
				rc = -ENOMEM;
				tr->nodes[id].incl =
					rva_sadd(tr->nodes[id].incl, dur(&th->calls[i]));
			}
			assert(sn <= maxdepth || tr->nodes[id].method == RVA_TREE_CUT);
			tr->nodes[id].calls++;
			nst[2 * sn] = id;
			nst[2 * sn + 1] = (uint32_t)i;
			child[sn] = 0;
			sn++;
		}
	}
	for (size_t i = tr->n; i-- > 1;)
		if (tr->nodes[i].parent == 0)
			tr->nodes[0].incl = rva_sadd(tr->nodes[0].incl, tr->nodes[i].incl);
	rc = 0;
out_free:
	free(m.slot);
	free(nst);
	free(child);
	if (rc < 0)
		rva_tree_release(tr);
	return rc;
}

void rva_tree_release(rva_tree *tr)
{
	free(tr->nodes);
	memset(tr, 0, sizeof(*tr));
}

static int cmp_node_incl(const void *a, const void *b, void *ctx)
{
	const rva_tnode *n = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (n[x].incl != n[y].incl)
		return n[x].incl > n[y].incl ? -1 : 1;
	return x < y ? -1 : x > y;
}

int rva_tree_print(FILE *f, const rva_trace *t, const rva_tree *tr, double pct)
{
	if (tr->n == 0)
		return 0;
	double total = (double)tr->nodes[0].incl;
	double scale = t->weighted ? 1.0 : 1e-3;
	/* Explicit DFS stack of node ids; children sorted by inclusive time. */
	uint32_t *st = malloc(tr->n * sizeof(*st));
	uint32_t *depth = malloc(tr->n * sizeof(*depth));
	uint32_t *kids = malloc(tr->n * sizeof(*kids));
	int rc = -ENOMEM;
	if (!st || !depth || !kids)
		goto out_free;
	size_t sn = 0;
	st[sn] = 0;
	depth[sn++] = 0;
	fprintf(f, "%8s %8s %12s %12s  %s\n", "total%", "self%", t->weighted ? "incl" : "incl_us",
		t->weighted ? "self" : "self_us", "method");
	while (sn) {
		sn--;
		uint32_t id = st[sn], dp = depth[sn];
		const rva_tnode *nd = &tr->nodes[id];
		if (id != 0) {
			double p = total > 0 ? 100.0 * (double)nd->incl / total : 0;
			if (p < pct)
				continue;
			fprintf(f, "%7.2f%% %7.2f%% %12.3f %12.3f  %*s%s (%llu %s)\n", p,
				total > 0 ? 100.0 * (double)nd->self / total : 0,
				(double)nd->incl * scale, (double)nd->self * scale,
				(int)(2 * (dp - 1)), "", t->names[nd->method],
				(unsigned long long)nd->calls, nd->calls == 1 ? "call" : "calls");
		}
		size_t nk = 0;
		for (uint32_t c = nd->first_child; c; c = tr->nodes[c].next_sibling)
			kids[nk++] = c;
		qsort_r(kids, nk, sizeof(*kids), cmp_node_incl, tr->nodes);
		for (size_t k = nk; k-- > 0;) {
			st[sn] = kids[k];
			depth[sn++] = dp + 1;
		}
	}
	rc = ferror(f) ? -EIO : 0;
out_free:
	free(st);
	free(depth);
	free(kids);
	return rc;
}

/* ---- chains ---- */

/* Orders node ids by self time descending, then signature. */
typedef struct nkey {
	int64_t self;
	uint64_t sig;
	uint32_t node;
} nkey;

static int nkey_before(const nkey *x, const nkey *y)
{
	if (x->self != y->self)
		return x->self > y->self;
	return x->sig < y->sig;
}

static int cmp_nkey(const void *a, const void *b)
{
	const nkey *x = a, *y = b;
	return nkey_before(x, y) ? -1 : nkey_before(y, x) ? 1 : 0;
}

/* Min-heap on "before": the root is the worst of the kept top N. */
static void heap_down(nkey *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		if (l < n && nkey_before(&h[w], &h[l]))
			w = l;
		if (r < n && nkey_before(&h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		nkey tmp = h[i];
		h[i] = h[w];
		h[w] = tmp;
		i = w;
	}
}

static uint64_t fnv_name(uint64_t h, const char *norm)
{
	for (const unsigned char *p = (const unsigned char *)norm; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	h ^= ';';
	return h * 0x100000001b3ull;
}

int rva_chains_collect(const rva_trace *t, size_t max, rva_chains *out)
{
	rva_tree tr;
	memset(out, 0, sizeof(*out));
	int rc = rva_tree_build(t, SIZE_MAX, &tr);
	if (rc < 0)
		return rc;
	rc = rva_chains_from_tree(t, &tr, max, out);
	rva_tree_release(&tr);
	return rc;
}

/* Fills depth[] and sig[] of node i and of its ancestors that lack them
 * (depth 0 = not yet, but for the root), through path[] (room for the
 * tree's depth).  A signature extends the parent's FNV state. */
static void chain_sig(const rva_tree *tr, char **norm, uint32_t *depth, uint64_t *sig,
		      uint32_t *path, uint32_t i)
{
	size_t n = 0;
	for (; i && !depth[i]; i = tr->nodes[i].parent)
		path[n++] = i;
	while (n--) {
		const rva_tnode *nd = &tr->nodes[path[n]];
		depth[path[n]] = depth[nd->parent] + 1;
		sig[path[n]] = fnv_name(sig[nd->parent], norm[nd->method]);
	}
}

int rva_chains_from_tree(const rva_trace *t, const rva_tree *trp, size_t max, rva_chains *out)
{
	const rva_tree tr = *trp;
	int rc = -ENOMEM;
	memset(out, 0, sizeof(*out));
	uint32_t *depth = calloc(tr.n, sizeof(*depth));
	uint64_t *sig = calloc(tr.n, sizeof(*sig));
	uint32_t *path = malloc(tr.n * sizeof(*path));
	char **norm = calloc(t->nmethods + 1, sizeof(*norm));
	nkey *keep = NULL;
	size_t nk = 0;
	if (!depth || !sig || !path || !norm)
		goto out_free;
	/* Signatures are computed only for the nodes that may enter the top
	 * (and their ancestors), with each method's name normalized once. */
	for (size_t m = 0; m < t->nmethods; m++) {
		size_t len = rva_normalize_name(t->names[m], NULL, 0);
		if (!(norm[m] = malloc(len + 1)))
			goto out_free;
		rva_normalize_name(t->names[m], norm[m], len + 1);
	}
	sig[0] = 0xcbf29ce484222325ull;
	size_t cap = max && max < tr.n ? max : tr.n;
	keep = malloc((cap ? cap : 1) * sizeof(*keep));
	if (!keep)
		goto out_free;
	for (size_t i = 1; i < tr.n; i++) {
		const rva_tnode *nd = &tr.nodes[i];
		if (nk == cap && nd->self < keep[0].self)
			continue; /* after the worst kept one whatever its signature */
		chain_sig(&tr, norm, depth, sig, path, (uint32_t)i);
		nkey k = {nd->self, sig[i], (uint32_t)i};
		if (nk < cap) {
			keep[nk++] = k;
			if (nk == cap)
				for (size_t j = nk / 2; j-- > 0;)
					heap_down(keep, nk, j);
		} else if (nkey_before(&k, &keep[0])) {
			keep[0] = k;
			heap_down(keep, nk, 0);
		}
	}
	qsort(keep, nk, sizeof(*keep), cmp_nkey);
	size_t pool = 0;
	for (size_t i = 0; i < nk; i++)
		pool += depth[keep[i].node] < RVA_CHAIN_MAX_FRAMES ? depth[keep[i].node]
								   : RVA_CHAIN_MAX_FRAMES;
	out->v = calloc(nk ? nk : 1, sizeof(*out->v));
	out->pool = malloc((pool ? pool : 1) * sizeof(*out->pool));
	if (!out->v || !out->pool)
		goto out_free;
	size_t used = 0;
	for (size_t i = 0; i < nk; i++) {
		uint32_t id = keep[i].node;
		rva_chain *c = &out->v[out->n++];
		c->depth = depth[id];
		c->nmethods = c->depth < RVA_CHAIN_MAX_FRAMES ? c->depth : RVA_CHAIN_MAX_FRAMES;
		c->methods = out->pool + used;
		used += c->nmethods;
		assert(used <= pool);
		c->signature = sig[id];
		c->calls = tr.nodes[id].calls;
		c->self = tr.nodes[id].self;
		c->incl = tr.nodes[id].incl;
		/* The innermost frames only: the walk up stops there. */
		for (size_t k = c->nmethods; k-- > 0; id = tr.nodes[id].parent)
			c->methods[k] = tr.nodes[id].method;
	}
	rc = 0;
out_free:
	if (norm)
		for (size_t m = 0; m < t->nmethods; m++)
			free(norm[m]);
	free(norm);
	free(keep);
	free(sig);
	free(path);
	free(depth);
	if (rc < 0)
		rva_chains_release(out);
	return rc;
}

void rva_chains_release(rva_chains *c)
{
	free(c->v);
	free(c->pool);
	memset(c, 0, sizeof(*c));
}

/* ---- patterns ---- */

static int name_is(const rva_trace *t, uint32_t m, const char *glob)
{
	return m < t->nmethods && fnmatch(glob, t->names[m], 0) == 0;
}

size_t rva_pattern_match(const rva_trace *t, const rva_pattern *p, rva_match *out, size_t max)
{
	size_t found = 0;
	if (p->n == 0)
		return 0;
	uint32_t *st = NULL;
	size_t cap = 0;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		for (size_t i = 0; i < th->ncalls; i++) {
			const rva_call *c = &th->calls[i];
			size_t d = c->depth;
			if (d + 1 > cap) {
				size_t nc = cap ? cap * 2 : 64;
				while (nc < d + 1)
					nc *= 2;
				uint32_t *a = realloc(st, nc * sizeof(*a));
				if (!a)
					goto out_free;
				st = a;
				cap = nc;
			}
			st[d] = c->method;
			if (dur(c) < p->min_ns || !name_is(t, c->method, p->names[p->n - 1]))
				continue;
			/* Greedy in-order subsequence match of the earlier names. */
			size_t k = 0;
			for (size_t j = 0; j < d && k + 1 < p->n; j++)
				if (name_is(t, st[j], p->names[k]))
					k++;
			if (k + 1 < p->n)
				continue;
			if (found < max) {
				out[found].thread = ti;
				out[found].call = i;
			}
			found++;
		}
	}
out_free:
	free(st);
	return found;
}

/* ---- callers ---- */

static int cmp_caller(const void *a, const void *b)
{
	const rva_caller *x = a, *y = b;
	if (x->incl != y->incl)
		return x->incl > y->incl ? -1 : 1;
	return x->caller < y->caller ? -1 : x->caller > y->caller;
}

int64_t rva_callers(const rva_trace *t, uint32_t method, rva_caller **out)
{
	rva_caller *v = NULL;
	size_t n = 0, vcap = 0, cap = 0;
	uint32_t *st = NULL;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		size_t open = 0; /* frames of `method` on the current chain */
		size_t sn = 0;
		for (size_t i = 0; i < th->ncalls; i++) {
			const rva_call *c = &th->calls[i];
			while (sn > c->depth)
				if (st[--sn] == method)
					open--;
			if (sn + 1 > cap) {
				size_t nc = cap ? cap * 2 : 64;
				uint32_t *a = realloc(st, nc * sizeof(*a));
				if (!a)
					goto out_nomem;
				st = a;
				cap = nc;
			}
			uint32_t caller = sn ? st[sn - 1] : UINT32_MAX;
			st[sn++] = c->method;
			if (c->method != method)
				continue;
			if (open++ > 0)
				continue; /* recursion: counted at its outermost frame */
			size_t k = 0;
			while (k < n && v[k].caller != caller)
				k++;
			if (k == n) {
				if (n == vcap) {
					size_t nc = vcap ? vcap * 2 : 16;
					rva_caller *a = realloc(v, nc * sizeof(*a));
					if (!a)
						goto out_nomem;
					v = a;
					vcap = nc;
				}
				v[n].caller = caller;
				v[n].calls = 0;
				v[n].incl = 0;
				n++;
			}
			v[k].calls++;
			v[k].incl = rva_sadd(v[k].incl, dur(c));
		}
	}
	free(st);
	if (n)
		qsort(v, n, sizeof(*v), cmp_caller);
	*out = v;
	return (int64_t)n;
out_nomem:
	free(st);
	free(v);
	return -ENOMEM;
}

/* ---- diff ---- */

static int cmp_delta(const void *a, const void *b)
{
	const rva_delta *x = a, *y = b;
	int64_t ax = x->delta < 0 ? -x->delta : x->delta;
	int64_t ay = y->delta < 0 ? -y->delta : y->delta;
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return strcmp(x->name, y->name);
}

int64_t rva_diff(const rva_trace *a, const rva_trace *b, rva_delta **out)
{
	rva_mstat *sa = NULL, *sb = NULL;
	rva_delta *v = NULL;
	int64_t rc = -ENOMEM;
	size_t n = 0;
	if (rva_method_stats(a, &sa) < 0 || rva_method_stats(b, &sb) < 0)
		goto out_free;
	v = calloc(a->nmethods + b->nmethods + 1, sizeof(*v));
	if (!v)
		goto out_free;
	for (size_t i = 0; i < a->nmethods; i++) {
		if (!sa[i].calls)
			continue;
		int64_t j = rva_method_find(b, a->names[i]);
		rva_delta *d = &v[n++];
		d->name = a->names[i];
		d->self_a = sa[i].self;
		d->calls_a = sa[i].calls;
		if (j >= 0) {
			d->self_b = sb[j].self;
			d->calls_b = sb[j].calls;
		}
		d->delta = d->self_b - d->self_a;
	}
	for (size_t j = 0; j < b->nmethods; j++) {
		if (!sb[j].calls)
			continue;
		int64_t i = rva_method_find(a, b->names[j]);
		if (i >= 0 && sa[i].calls)
			continue;
		rva_delta *d = &v[n++];
		d->name = b->names[j];
		d->self_b = sb[j].self;
		d->calls_b = sb[j].calls;
		d->delta = d->self_b;
	}
	qsort(v, n, sizeof(*v), cmp_delta);
	*out = v;
	v = NULL;
	rc = (int64_t)n;
out_free:
	free(v);
	free(sa);
	free(sb);
	return rc;
}
