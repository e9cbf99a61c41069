/* SPDX-License-Identifier: Apache-2.0 */
/*
 * regress.c — "what got slower?": the Mann–Whitney U test with
 * Benjamini–Hochberg correction over every method and top chain of two
 * sets of an app's decoded traces (the document GET /api/v1/regressions
 * answers: api/regress.c), and the automatic comparison of each version
 * with its predecessor (regress.h).
 *
 * Invariants: a trace without a row for a method (or chain) counts as 0
 * for it, so every test compares exactly the n_a and n_b traces of the two
 * sides; only traces with a decoded capture (duration_ns NOT NULL) are
 * compared (a summary-only upload has no methods at all); per-trace values
 * are >= 0.  Rows of the output are ordered: significant self-time
 * regressions (q < 0.05) first by Cliff's delta descending, then the rest
 * by delta.  Every read and write goes through the store (store.h's
 * regress_* operations), whose backends bind every input as a parameter.
 */
#include "model/regress.h"
#include "base/version.h"
#include "store/store.h"
#include "base/log.h"
#include "base/util.h"
#include "model/webhook.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#define ALPHA	     0.05
#define SLOWEST	     3 /* trace links per row: the slowest of side B */
#define WEEK_S	     (7 * 86400)
#define MAX_VERSIONS 256 /* versions of one app the automatic pass orders */

/* ---- statistics ---------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* The exact two-sided p-value of rank sum ra of na values among n = na + nb
 * without ties: every choice of na ranks of 1..n is equally likely; counts
 * by rank sum (exact in doubles: C(30, 15) < 2^53).  -ENOMEM. */
static int exact_p(size_t na, size_t n, double ra, double *p)
{
	size_t smax = n * (n + 1) / 2, s0 = na * (na + 1) / 2;
	double *w = calloc((na + 1) * (smax + 1), sizeof *w), le = 0, ge = 0, all = 0;

	if (!w)
		return -ENOMEM;
#define W(k, s) w[(k) * (smax + 1) + (s)]
	W(0, 0) = 1;
	for (size_t r = 1; r <= n; r++)
		for (size_t k = r < na ? r : na; k >= 1; k--)
			for (size_t s = smax; s >= r; s--)
				W(k, s) += W(k - 1, s - r);
	for (size_t s = s0; s <= smax; s++) {
		all += W(na, s);
		if ((double)s <= ra)
			le += W(na, s);
		if ((double)s >= ra)
			ge += W(na, s);
	}
#undef W
	free(w);
	*p = 2 * (le < ge ? le : ge) / all;
	if (*p > 1)
		*p = 1;
	return 0;
}

int rvs_mwu_test(double *a, size_t ka, size_t na, double *b, size_t kb, size_t nb,
		 struct rvs_mwu *out)
{
	double n, ra = 0, ties = 0, pos = 0, mean, var, ua, ub, c;
	size_t i = 0, j = 0;

	if (!na || !nb || ka > na || kb > nb)
		return -EINVAL;
	qsort(a, ka, sizeof *a, cmp_double);
	qsort(b, kb, sizeof *b, cmp_double);
	assert(!ka || a[0] >= 0);
	assert(!kb || b[0] >= 0);
	/* The implicit zeros are the smallest values: one tie group with the
	 * stored zeros.  Then merge the two sorted arrays group by group. */
	{
		size_t za = na - ka, zb = nb - kb;
		while (i < ka && a[i] == 0)
			i++, za++;
		while (j < kb && b[j] == 0)
			j++, zb++;
		if (za + zb) {
			double t = (double)(za + zb);
			ra += (double)za * (pos + (t + 1) / 2);
			ties += t * t * t - t;
			pos += t;
		}
	}
	while (i < ka || j < kb) {
		double v = i < ka && (j >= kb || a[i] <= b[j]) ? a[i] : b[j];
		size_t ca = 0, cb = 0;
		double t;
		while (i < ka && a[i] == v)
			i++, ca++;
		while (j < kb && b[j] == v)
			j++, cb++;
		t = (double)(ca + cb);
		ra += (double)ca * (pos + (t + 1) / 2);
		ties += t * t * t - t;
		pos += t;
	}
	n = (double)(na + nb);
	assert(pos == n);
	ua = ra - (double)na * ((double)na + 1) / 2;
	ub = (double)na * (double)nb - ua;
	mean = (double)na * (double)nb / 2;
	var = (double)na * (double)nb / 12 * ((n + 1) - ties / (n * (n - 1) > 0 ? n * (n - 1) : 1));
	out->u_b = ub;
	out->delta = (ub - ua) / ((double)na * (double)nb);
	out->exact = 0;
	if (!(var > 0)) {
		out->z = 0;
		out->p = 1;
		return 0;
	}
	c = ub > mean ? -0.5 : ub < mean ? 0.5 : 0;
	out->z = (ub - mean + c) / sqrt(var);
	out->p = erfc(fabs(out->z) / sqrt(2.0));
	if (out->p > 1)
		out->p = 1;
	if (ties == 0 && na + nb <= RVS_MWU_EXACT_MAX) {
		int rc = exact_p(na, na + nb, ra, &out->p);
		if (rc)
			return rc;
		out->exact = 1;
	}
	return 0;
}

double rvs_median_sparse(const double *v, size_t k, size_t n)
{
	size_t z = n - k;
	assert(n > 0 && k <= n);
#define AT(i) ((i) < z ? 0.0 : v[(i)-z])
	if (n % 2)
		return AT(n / 2);
	return (AT(n / 2 - 1) + AT(n / 2)) / 2;
#undef AT
}

struct bh_ix {
	double p;
	size_t i;
};

static int cmp_bh(const void *x, const void *y)
{
	const struct bh_ix *a = x, *b = y;
	return (a->p > b->p) - (a->p < b->p);
}

int rvs_bh_adjust(const double *p, size_t n, double *q)
{
	struct bh_ix *ix;
	double run = 1;

	if (!n)
		return 0;
	ix = malloc(n * sizeof *ix);
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ix[i] = (struct bh_ix){p[i], i};
	qsort(ix, n, sizeof *ix, cmp_bh);
	for (size_t r = n; r-- > 0;) {
		double v = ix[r].p * (double)n / (double)(r + 1);
		if (v < run)
			run = v;
		q[ix[r].i] = run;
	}
	free(ix);
	return 0;
}

/* ---- loading the two sides ---------------------------------------------- */

/* A method name or chain signature, once per run: every observation of it
 * refers to it by number, so a row costs no string of its own, and the
 * grouping sorts by numbers. */
struct key {
	char *s;
	char *chain;	/* the chain text (chains only) of its lowest trace, or NULL */
	uint32_t trace; /* that trace's index */
};

/* The keys of one part (methods or chains) and their hash index. */
struct keys {
	struct key *v;
	size_t n, cap;
	uint32_t *slot; /* 1 + index into v, 0 empty; nslot a power of 2 */
	size_t nslot;
};

/* One (trace, key) observation. */
struct obs {
	uint32_t key; /* index into its part's keys */
	uint32_t trace;
	double self, incl;
};

struct run {
	char (*ids)[40]; /* trace ids by index, ascending (strcmp) */
	unsigned char *side;
	size_t ntraces, cap_traces, n[2];
	size_t last;	     /* the trace the previous row was of (rows come trace by trace) */
	struct keys keys[2]; /* [0] the methods', [1] the chains' */
	struct obs *obs;     /* the rows being tested: the methods', then the chains' */
	size_t nobs, cap_obs;
	struct obs *chains; /* the chains' rows, until their turn */
	size_t nchains, cap_chains;
};

static void keys_free(struct keys *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->v[i].s);
		free(k->v[i].chain);
	}
	free(k->v);
	free(k->slot);
	memset(k, 0, sizeof *k);
}

static void run_free(struct run *r)
{
	free(r->obs);
	free(r->chains);
	keys_free(&r->keys[0]);
	keys_free(&r->keys[1]);
	free(r->ids);
	free(r->side);
}

/* Doubles k's hash index (from 1,024 slots), placing every key again. */
static int keys_grow(struct keys *k)
{
	size_t ns = k->nslot ? 2 * k->nslot : 1024;
	uint32_t *slot = calloc(ns, sizeof *slot);

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < k->n; i++) {
		size_t h =
			(size_t)rvs_fnv1a(RVS_FNV_BASIS, k->v[i].s, strlen(k->v[i].s)) & (ns - 1);
		while (slot[h])
			h = (h + 1) & (ns - 1);
		slot[h] = (uint32_t)(i + 1);
	}
	free(k->slot);
	k->slot = slot;
	k->nslot = ns;
	return 0;
}

/* The index of key s in k, added when new; chain (may be NULL) is kept from
 * the key's lowest trace, as the grouping met it first before keys were
 * numbered.  -ENOMEM. */
static long key_index(struct keys *k, const char *s, const char *chain, uint32_t trace)
{
	size_t h;
	struct key *e;

	if (2 * (k->n + 1) > k->nslot && keys_grow(k))
		return -ENOMEM;
	for (h = (size_t)rvs_fnv1a(RVS_FNV_BASIS, s, strlen(s)) & (k->nslot - 1); k->slot[h];
	     h = (h + 1) & (k->nslot - 1)) {
		e = &k->v[k->slot[h] - 1];
		if (strcmp(e->s, s))
			continue;
		if (chain && trace < e->trace) {
			char *c = strdup(chain);
			if (!c)
				return -ENOMEM;
			free(e->chain);
			e->chain = c;
			e->trace = trace;
		}
		return (long)(k->slot[h] - 1);
	}
	if (k->n == k->cap || k->n >= UINT32_MAX - 1) {
		size_t nc = k->cap ? 2 * k->cap : 256;
		void *v = k->n < UINT32_MAX - 1 ? realloc(k->v, nc * sizeof *k->v) : NULL;
		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = nc;
	}
	e = &k->v[k->n];
	e->s = strdup(s);
	e->chain = chain ? strdup(chain) : NULL;
	e->trace = trace;
	if (!e->s || (chain && !e->chain)) {
		free(e->s);
		free(e->chain);
		return -ENOMEM;
	}
	k->slot[h] = (uint32_t)(++k->n);
	return (long)(k->n - 1);
}

static int cmp_id(const void *x, const void *y)
{
	return strcmp((const char *)x, (const char *)y);
}

/* The index of trace id in r->ids (sorted), or -1. */
static long trace_index(struct run *r, const char *id)
{
	char(*hit)[40];

	if (r->last < r->ntraces && !strcmp(r->ids[r->last], id))
		return (long)r->last;
	hit = bsearch(id, r->ids, r->ntraces, sizeof *r->ids, cmp_id);
	if (hit)
		r->last = (size_t)(hit - r->ids);
	return hit ? (long)(hit - r->ids) : -1;
}

static int add_trace(struct run *r, const struct rvs_cmp_row *row)
{
	if (r->ntraces == r->cap_traces) {
		size_t cap = r->cap_traces ? 2 * r->cap_traces : 256;
		void *ids = realloc(r->ids, cap * sizeof *r->ids);
		void *sd = ids ? realloc(r->side, cap) : NULL;
		if (ids)
			r->ids = ids;
		if (!sd)
			return -ENOMEM;
		r->side = sd;
		r->cap_traces = cap;
	}
	snprintf(r->ids[r->ntraces], sizeof r->ids[0], "%s", row->trace_id);
	/* The store gives them in order: the lookups bsearch them. */
	if (r->ntraces && strcmp(r->ids[r->ntraces - 1], r->ids[r->ntraces]) >= 0)
		return -EPROTO;
	r->side[r->ntraces++] = (unsigned char)(row->side != 0);
	r->n[row->side != 0]++;
	return 0;
}

/* The store's rows (regress_sides: every trace, then the methods, then the
 * chains) into r; a row of a trace not on either side is ignored. */
static int load_row(void *arg, const struct rvs_cmp_row *row)
{
	struct run *r = arg;
	int ch = row->part == RVS_CMP_CHAIN;
	struct obs **v = ch ? &r->chains : &r->obs, *o;
	size_t *n = ch ? &r->nchains : &r->nobs, *cap = ch ? &r->cap_chains : &r->cap_obs;
	long t, key;

	if (row->part == RVS_CMP_TRACE)
		return add_trace(r, row);
	if ((t = trace_index(r, row->trace_id)) < 0)
		return 0;
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		void *p = realloc(*v, nc * sizeof **v);
		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	key = key_index(&r->keys[ch], row->key, row->chain, (uint32_t)t);
	if (key < 0)
		return (int)key;
	o = &(*v)[*n];
	o->key = (uint32_t)key;
	o->trace = (uint32_t)t;
	o->self = row->self_ns > 0 ? (double)row->self_ns : 0;
	o->incl = row->incl_ns > 0 ? (double)row->incl_ns : 0;
	(*n)++;
	return 0;
}

struct stat1 {
	double med[2], mean[2];
	struct rvs_mwu t;
	double q;
};

struct row {
	const char *key, *chain;
	size_t k[2];	   /* traces of each side with a row */
	struct stat1 s[2]; /* [0] self, [1] inclusive */
	uint32_t slow[SLOWEST];
	size_t nslow;
};

/* The slowest traces of side B among r->obs[i..j) (one key), by each trace's
 * summed self time. */
static void pick_slowest(const struct run *r, size_t i, size_t j, struct row *w)
{
	double best[SLOWEST];

	for (size_t x = i; x < j;) {
		/* A trace's rows of the key are adjacent (cmp_obs) and, like the
		 * statistics above, one value: their sum, ranked once. */
		uint32_t trace = r->obs[x].trace;
		double self = 0;
		for (; x < j && r->obs[x].trace == trace; x++)
			self += r->obs[x].self;
		size_t at = w->nslow;
		if (!r->side[trace])
			continue;
		while (at > 0 && best[at - 1] < self)
			at--;
		if (at >= SLOWEST)
			continue;
		if (w->nslow < SLOWEST)
			w->nslow++;
		memmove(&w->slow[at + 1], &w->slow[at], (w->nslow - 1 - at) * sizeof w->slow[0]);
		memmove(&best[at + 1], &best[at], (w->nslow - 1 - at) * sizeof best[0]);
		w->slow[at] = trace;
		best[at] = self;
	}
}

static int cmp_obs(const void *x, const void *y)
{
	const struct obs *a = x, *b = y;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->trace > b->trace) - (a->trace < b->trace);
}

/* Slower rows first: significant on self time, then by self delta, then
 * by the median's growth. */
static int cmp_row(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	int sa = a->s[0].q < ALPHA, sb = b->s[0].q < ALPHA;
	double da, db;
	if (sa != sb)
		return sb - sa;
	if (a->s[0].t.delta != b->s[0].t.delta)
		return a->s[0].t.delta < b->s[0].t.delta ? 1 : -1;
	da = a->s[0].med[1] - a->s[0].med[0];
	db = b->s[0].med[1] - b->s[0].med[0];
	if (da != db)
		return da < db ? 1 : -1;
	return strcmp(a->key, b->key);
}

static void stat_fill(struct stat1 *s, double *v[2], size_t k[2], const size_t n[2])
{
	for (int side = 0; side < 2; side++) {
		double sum = 0;
		for (size_t i = 0; i < k[side]; i++)
			sum += v[side][i];
		s->mean[side] = sum / (double)n[side];
	}
	/* n[] > 0 and one value per trace (k[] <= n[]): only -ENOMEM of the
	 * exact test can fail, and then the normal approximation stands. */
	if (rvs_mwu_test(v[0], k[0], n[0], v[1], k[1], n[1], &s->t))
		s->t.exact = 0;
	/* rvs_mwu_test sorted both arrays. */
	for (int side = 0; side < 2; side++)
		s->med[side] = rvs_median_sparse(v[side], k[side], n[side]);
}

/* Groups r->obs by key (numbered in keys) into rows with both tests; BH
 * over every p-value of the family (self and inclusive of every row). */
static int make_rows(struct run *r, const struct keys *keys, struct row **out, size_t *nout)
{
	struct row *rows = NULL;
	size_t nrows = 0, cap = 0;
	double *buf = malloc((r->ntraces + 1) * 2 * sizeof *buf), *p = NULL, *q = NULL;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	if (r->nobs) /* r->obs is NULL without rows */
		qsort(r->obs, r->nobs, sizeof *r->obs, cmp_obs);
	for (size_t i = 0; i < r->nobs;) {
		size_t j = i;
		struct row *w;
		double *v[2] = {buf, buf + r->ntraces};
		size_t k[2] = {0, 0};

		while (j < r->nobs && r->obs[j].key == r->obs[i].key)
			j++;
		if (nrows == cap) {
			size_t nc = cap ? 2 * cap : 256;
			void *np = realloc(rows, nc * sizeof *rows);
			if (!np) {
				rc = -ENOMEM;
				break;
			}
			rows = np;
			cap = nc;
		}
		w = &rows[nrows++];
		memset(w, 0, sizeof *w);
		assert(r->obs[i].key < keys->n);
		w->key = keys->v[r->obs[i].key].s;
		w->chain = keys->v[r->obs[i].key].chain;
		for (int m = 0; m < 2; m++) {
			k[0] = k[1] = 0;
			for (size_t x = i; x < j; x++) {
				int sd = r->side[r->obs[x].trace];
				double val = m ? r->obs[x].incl : r->obs[x].self;
				/* Two rows of one key in a trace (a chain signature
				 * seen twice in its top 10) are one value: their sum. */
				if (x > i && r->obs[x].trace == r->obs[x - 1].trace)
					v[sd][k[sd] - 1] += val;
				else
					v[sd][k[sd]++] = val;
			}
			w->k[0] = k[0];
			w->k[1] = k[1];
			stat_fill(&w->s[m], v, k, r->n);
		}
		pick_slowest(r, i, j, w);
		i = j;
	}
	if (!rc && nrows) {
		p = malloc(2 * nrows * sizeof *p);
		q = malloc(2 * nrows * sizeof *q);
		if (!p || !q)
			rc = -ENOMEM;
	}
	if (!rc && nrows) {
		for (size_t i = 0; i < nrows; i++) {
			p[2 * i] = rows[i].s[0].t.p;
			p[2 * i + 1] = rows[i].s[1].t.p;
		}
		rc = rvs_bh_adjust(p, 2 * nrows, q);
		for (size_t i = 0; !rc && i < nrows; i++) {
			rows[i].s[0].q = q[2 * i];
			rows[i].s[1].q = q[2 * i + 1];
		}
		if (!rc)
			qsort(rows, nrows, sizeof *rows, cmp_row);
	}
	free(p);
	free(q);
	free(buf);
	if (rc) {
		free(rows);
		return rc;
	}
	*out = rows;
	*nout = nrows;
	return 0;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *jnum_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *stat_json(const struct stat1 *s)
{
	double ratio = s->med[0] > 0 ? s->med[1] / s->med[0] : NAN;
	return json_pack("{s:f,s:f,s:f,s:f,s:o,s:f,s:f,s:f,s:f,s:f,s:b}", "median_a_ns", s->med[0],
			 "median_b_ns", s->med[1], "mean_a_ns", s->mean[0], "mean_b_ns", s->mean[1],
			 "median_ratio", jnum_or_null(ratio), "cliffs_delta", s->t.delta, "u",
			 s->t.u_b, "z", s->t.z, "p", s->t.p, "q", s->q, "exact", s->t.exact);
}

static json_t *rows_json(const struct run *r, const struct row *rows, size_t n, size_t limit,
			 int chains)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n && i < limit; i++) {
		const struct row *w = &rows[i];
		json_t *slow = json_array(), *o;
		for (size_t s = 0; slow && s < w->nslow; s++)
			json_array_append_new(slow, json_string(r->ids[w->slow[s]]));
		o = json_pack("{s:s,s:I,s:I,s:o,s:o,s:o,s:b}", chains ? "signature" : "method",
			      w->key, "traces_a", (json_int_t)w->k[0], "traces_b",
			      (json_int_t)w->k[1], "self", stat_json(&w->s[0]), "incl",
			      stat_json(&w->s[1]), "slowest_b", slow ? slow : json_array(),
			      "significant", w->s[0].q < ALPHA || w->s[1].q < ALPHA);
		if (o && chains && w->chain)
			json_object_set_new(o, "chain", json_string(w->chain));
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *side_json(const struct rvs_regress_req *q, int side, size_t n)
{
	char label[160];
	switch (q->mode) {
	case RVS_REGRESS_VERSIONS:
		snprintf(label, sizeof label, "version %s", side ? q->b : q->a);
		break;
	case RVS_REGRESS_MODEL:
		snprintf(label, sizeof label, "%s %s%s%s", side ? "model" : "models other than",
			 q->model, q->version ? ", version " : "", q->version ? q->version : "");
		break;
	case RVS_REGRESS_WEEK:
		snprintf(label, sizeof label, "%s", side ? "the last 7 days" : "the 7 days before");
		break;
	}
	return json_pack("{s:s,s:I}", "label", label, "traces", (json_int_t)n);
}

int rvs_regress_run(const struct rvs_store_ops *ops, struct rvs_regress_db *d,
		    const struct rvs_regress_req *q, json_t **out)
{
	struct rvs_cmp_sides sides = {.app = q->app,
				      .mode = (enum rvs_cmp_mode)q->mode,
				      .a = q->a,
				      .b = q->b,
				      .model = q->model,
				      .version = q->version,
				      .now = q->now};
	struct run r;
	struct row *rows = NULL;
	size_t nrows = 0;
	json_t *doc, *lists[2] = {NULL, NULL};
	int rc;

	assert(q->app && q->limit >= 1);
	memset(&r, 0, sizeof r);
	*out = NULL;
	rc = ops->regress_sides(d, &sides, load_row, &r);
	if (rc)
		goto done;
	doc = json_pack("{s:s,s:o,s:o,s:f,s:s}", "app", q->app, "a", side_json(q, 0, r.n[0]), "b",
			side_json(q, 1, r.n[1]), "alpha", ALPHA, "note",
			"a trace without a row for a method or chain counts as 0 for it; chains are"
			" each trace's 10 top self-time chains only");
	if (!doc) {
		rc = -ENOMEM;
		goto done;
	}
	*out = doc;
	if (!r.n[0] || !r.n[1]) {
		rc = -ENOENT;
		goto done;
	}
	for (int k = 0; k < 2 && !rc; k++) {
		if (k) { /* the chains' turn */
			free(r.obs);
			r.obs = r.chains;
			r.nobs = r.nchains;
			r.cap_obs = r.cap_chains;
			r.chains = NULL;
			r.nchains = r.cap_chains = 0;
		}
		rc = make_rows(&r, &r.keys[k], &rows, &nrows);
		if (!rc) {
			lists[k] = rows_json(&r, rows, nrows, q->limit, k);
			json_object_set_new(doc, k ? "chains_tested" : "methods_tested",
					    json_integer((json_int_t)nrows));
			if (!lists[k])
				rc = -ENOMEM;
		}
		free(rows);
		rows = NULL;
	}
	if (!rc) {
		json_object_set_new(doc, "methods", lists[0]);
		json_object_set_new(doc, "chains", lists[1]);
	} else {
		json_decref(lists[0]);
		json_decref(lists[1]);
	}
done:
	run_free(&r);
	return rc;
}

/* ---- the automatic comparison ------------------------------------------------ */

struct ver {
	char *name;
	int64_t n;
};

static int cmp_ver(const void *x, const void *y)
{
	return rvs_version_cmp(((const struct ver *)x)->name, ((const struct ver *)y)->name);
}

/* 1 when regress_runs holds (app, a, b) with sides that grew by less than
 * the margin since, 0 when it must be compared, -errno. */
static int fresh(const struct rvs_store_ops *ops, struct rvs_regress_db *d, const char *app,
		 const struct ver *a, const struct ver *b, double margin)
{
	int64_t na, nb;
	int rc = ops->regress_run_get(d, app, a->name, b->name, &na, &nb);

	if (rc)
		return rc == -ENOENT ? 0 : rc;
	return (double)a->n < (double)na * (1 + margin) && (double)b->n < (double)nb * (1 + margin);
}

/* The alert's JSON text (malloc'd), or NULL. */
static char *alert_body(const struct rvs_regress_auto *cfg, const char *app, const char *a,
			const char *b, json_t *doc, json_t *top)
{
	json_t *self = json_object_get(top, "self"), *o;
	char link[1024];
	char *text, *ea = curl_easy_escape(NULL, app, 0), *eva = curl_easy_escape(NULL, a, 0),
		    *evb = curl_easy_escape(NULL, b, 0);

	/* The app and versions are the devices' words: each is
	 * percent-encoded, so none can add a parameter or a fragment. */
	if (!ea || !eva || !evb) {
		curl_free(ea);
		curl_free(eva);
		curl_free(evb);
		return NULL;
	}
	snprintf(link, sizeof link, "%s/regressions?app=%s&a=%s&b=%s",
		 cfg->base_url ? cfg->base_url : "", ea, eva, evb);
	curl_free(ea);
	curl_free(eva);
	curl_free(evb);
	o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:s}", "event",
		      "regression", "app", app, "version_a", a, "version_b", b, "method",
		      json_string_value(json_object_get(top, "method")), "median_ratio",
		      json_object_get(self, "median_ratio"), "median_a_ns",
		      json_object_get(self, "median_a_ns"), "median_b_ns",
		      json_object_get(self, "median_b_ns"), "cliffs_delta",
		      json_object_get(self, "cliffs_delta"), "q", json_object_get(self, "q"),
		      "traces_a", json_object_get(json_object_get(doc, "a"), "traces"), "traces_b",
		      json_object_get(json_object_get(doc, "b"), "traces"), "slowest_b",
		      json_object_get(top, "slowest_b"), "link", link);
	if (!o)
		return NULL;
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

/* Stores the comparison and, over the bar and not alerted before, queues
 * its alert — in one transaction (the store's regress_run_put). */
static int store_run(const struct rvs_store_ops *ops, struct rvs_regress_db *d,
		     const struct rvs_regress_auto *cfg, const char *app, const struct ver *a,
		     const struct ver *b, json_t *doc, const char *const *urls, size_t nurls)
{
	json_t *top = json_array_get(json_object_get(doc, "methods"), 0);
	json_t *self = json_object_get(top, "self");
	json_t *ratio = json_object_get(self, "median_ratio");
	const char *method = json_string_value(json_object_get(top, "method"));
	double q = json_real_value(json_object_get(self, "q"));
	double delta = json_real_value(json_object_get(self, "cliffs_delta"));
	/* A median of 0 in A and more in B is an unbounded ratio. */
	int over = method && q < cfg->alert_q && delta > 0 &&
		   (json_is_null(ratio) || json_real_value(ratio) >= cfg->alert_ratio);
	char *result = json_dumps(doc, JSON_COMPACT), *body = NULL;
	int64_t now = (int64_t)time(NULL);
	struct rvs_webhook_new w[16];
	struct rvs_regress_run_row run = {.app = app,
					  .version_a = a->name,
					  .version_b = b->name,
					  .traces_a = a->n,
					  .traces_b = b->n,
					  .computed_at = now,
					  .top_method = method,
					  .top_ratio = json_real_value(ratio),
					  .has_ratio = json_is_real(ratio),
					  .top_delta = delta,
					  .top_q = q,
					  .alerted = over,
					  .result = result};
	int rc;

	if (nurls > sizeof w / sizeof w[0])
		nurls = sizeof w / sizeof w[0];
	if (!result)
		return -ENOMEM;
	if (over && nurls && !(body = alert_body(cfg, app, a->name, b->name, doc, top))) {
		free(result);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nurls; i++)
		w[i] = (struct rvs_webhook_new){
			.url = urls[i], .event = "regression", .body = body, .now_ms = now * 1000};
	rc = ops->regress_run_put(d, &run, over ? method : NULL, w, body ? nurls : 0, NULL);
	free(body);
	free(result);
	return rc;
}

/* Compares the consecutive versions of one app (sorted in place). */
static int auto_app(const struct rvs_store_ops *ops, struct rvs_regress_db *d,
		    const struct rvs_regress_auto *cfg, const char *app, struct ver *v, size_t n,
		    const char *const *urls, size_t nurls, unsigned *compared)
{
	int rc = 0;

	qsort(v, n, sizeof *v, cmp_ver);
	for (size_t i = 1; !rc && i < n; i++) {
		struct rvs_regress_req q = {.app = app,
					    .mode = RVS_REGRESS_VERSIONS,
					    .a = v[i - 1].name,
					    .b = v[i].name,
					    .limit = 20};
		json_t *doc = NULL;
		if (v[i - 1].n < cfg->min_traces || v[i].n < cfg->min_traces)
			continue;
		rc = fresh(ops, d, app, &v[i - 1], &v[i], cfg->margin);
		if (rc)
			break;
		rc = rvs_regress_run(ops, d, &q, &doc);
		if (!rc)
			rc = store_run(ops, d, cfg, app, &v[i - 1], &v[i], doc, urls, nurls);
		json_decref(doc);
		if (!rc)
			(*compared)++;
	}
	return rc < 0 ? rc : 0;
}

/* Every (app, version) and its count, collected first: the comparisons
 * write, which a live read would block. */
struct versions {
	struct ver *all;
	char **apps;
	size_t n, cap;
};

static int collect(void *arg, const char *app, const char *version, int64_t n)
{
	struct versions *vs = arg;

	if (vs->n == vs->cap) {
		size_t nc = vs->cap ? 2 * vs->cap : 64;
		void *p = realloc(vs->all, nc * sizeof *vs->all), *q2;
		if (p)
			vs->all = p;
		q2 = p ? realloc(vs->apps, nc * sizeof *vs->apps) : NULL;
		if (!q2)
			return -ENOMEM;
		vs->apps = q2;
		vs->cap = nc;
	}
	vs->apps[vs->n] = strdup(app);
	vs->all[vs->n].name = strdup(version);
	vs->all[vs->n].n = n;
	vs->n++;
	return vs->apps[vs->n - 1] && vs->all[vs->n - 1].name ? 0 : -ENOMEM;
}

int rvs_regress_auto_pass(const char *database, const struct rvs_regress_auto *cfg,
			  const char *const *urls, size_t nurls, unsigned *compared)
{
	struct ver v[MAX_VERSIONS];
	struct versions vs = {0};
	char app[256] = "";
	size_t n = 0;
	unsigned done = 0;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	int rc;

	if (compared)
		*compared = 0;
	if ((rc = rvs_store_regress_open(database, &ops, &st, &d)))
		return rc;
	rc = ops->regress_versions(d, collect, &vs);
	for (size_t i = 0; !rc && i <= vs.n; i++) {
		if (i == vs.n || (n && strcmp(app, vs.apps[i]))) {
			rc = auto_app(ops, d, cfg, app, v, n, urls, nurls, &done);
			n = 0;
		}
		if (i == vs.n)
			break;
		snprintf(app, sizeof app, "%s", vs.apps[i]);
		if (n < MAX_VERSIONS)
			v[n++] = vs.all[i];
	}
	for (size_t i = 0; i < vs.n; i++) {
		free(vs.apps[i]);
		free(vs.all[i].name);
	}
	free(vs.apps);
	free(vs.all);
	rvs_store_regress_close(ops, st, d);
	if (rc)
		rvs_log("error", "regress auto", "err=%d", rc);
	else if (done)
		rvs_log("info", "regress auto", "compared=%u", done);
	if (compared)
		*compared = done;
	return rc;
}
