/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trend.c — a method's buckets over time and its onset (trend.h).
 *
 * Invariants: after rvs_trend_compute the traces are sorted by bucket, so
 * bucket j's traces are s[start_j .. start_j + b[j].n) and the split
 * before bucket j leaves exactly the first start_j traces "before".  Ranks
 * are kept doubled (the sum of a tie group's first and last 1-based
 * positions), so midranks stay integers and every rank sum is exact; only
 * the standardization is floating point.  The permutations draw from a
 * xorshift64* generator seeded with RVS_TREND_SEED: deterministic; one
 * shuffle per permutation moves both measures' ranks, with each trace's
 * weight and weighted ranks, so the self and inclusive tests, unweighted
 * and weighted, see the same permutations (and the unweighted ones are
 * what they were before the weighted test existed).  The weighted test
 * is floating point throughout; with every weight 1 its z is the
 * unweighted z (the same formula, term by term).
 */
#include "model/trend.h"
#include "base/version.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rvs_trend_sample {
	int64_t day;
	char *version; /* VERSION only */
	int64_t v[2];  /* self, inclusive ns */
	double w;      /* its weight (> 0) */
	int wflag;     /* RVS_TREND_W_* */
	size_t b;      /* its bucket, once computed */
};

void rvs_trend_init(struct rvs_trend *t, enum rvs_trend_by by)
{
	memset(t, 0, sizeof *t);
	t->by = by;
}

void rvs_trend_release(struct rvs_trend *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i].version);
	free(t->s);
	free(t->b);
	t->s = NULL;
	t->b = NULL;
	t->n = t->nb = t->cap = 0;
}

int rvs_trend_add(struct rvs_trend *t, int64_t day, const char *version, int64_t self_ns,
		  int64_t incl_ns)
{
	return rvs_trend_add_weighted(t, day, version, self_ns, incl_ns, 1.0, RVS_TREND_W_EXACT);
}

int rvs_trend_add_weighted(struct rvs_trend *t, int64_t day, const char *version, int64_t self_ns,
			   int64_t incl_ns, double weight, int wflag)
{
	struct rvs_trend_sample *x;

	assert(!t->b);
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		if (!(x = realloc(t->s, cap * sizeof *x)))
			return -ENOMEM;
		t->s = x;
		t->cap = cap;
	}
	x = &t->s[t->n];
	x->day = day;
	x->version = NULL;
	if (t->by == RVS_TREND_VERSION && !(x->version = strdup(version ? version : "")))
		return -ENOMEM;
	x->v[0] = self_ns < 0 ? 0 : self_ns;
	x->v[1] = incl_ns < 0 ? 0 : incl_ns;
	x->w = rvs_trend_weight(weight, &wflag);
	x->wflag = wflag;
	t->n++;
	return 0;
}

double rvs_trend_weight(double weight, int *wflag)
{
	if (weight > 0 && isfinite(weight) && *wflag >= RVS_TREND_W_EXACT &&
	    *wflag <= RVS_TREND_W_UNKNOWN)
		return weight;
	*wflag = RVS_TREND_W_UNKNOWN;
	return 1.0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int64_t rvs_trend_pct(int64_t *v, size_t n, int p)
{
	size_t k;
	assert(n > 0 && p >= 1 && p <= 100);
	qsort(v, n, sizeof *v, cmp_i64);
	k = ((size_t)p * n + 99) / 100; /* ceil(p·n/100), >= 1 */
	return v[k - 1];
}

static int cmp_wv(const void *a, const void *b)
{
	const struct rvs_trend_wv *x = a, *y = b;
	return (x->v > y->v) - (x->v < y->v);
}

int64_t rvs_trend_wpct(struct rvs_trend_wv *x, size_t n, int p)
{
	double total = 0, cum = 0, want;

	assert(n > 0 && p >= 1 && p <= 100);
	qsort(x, n, sizeof *x, cmp_wv);
	for (size_t i = 0; i < n; i++) {
		assert(x[i].w > 0);
		total += x[i].w;
	}
	want = (double)p * total / 100 * (1 - 1e-12);
	for (size_t i = 0; i < n; i++)
		if ((cum += x[i].w) >= want)
			return x[i].v;
	return x[n - 1].v; /* not reached: cum ends at total >= want */
}

/* ---- buckets ---------------------------------------------------------------- */

static int by_day(const void *a, const void *b)
{
	const struct rvs_trend_sample *x = a, *y = b;
	return (x->day > y->day) - (x->day < y->day);
}

static int by_version(const void *a, const void *b)
{
	const struct rvs_trend_sample *x = a, *y = b;
	int c = strcmp(x->version, y->version);
	return c ? c : (x->day > y->day) - (x->day < y->day);
}

static int by_bucket(const void *a, const void *b)
{
	const struct rvs_trend_sample *x = a, *y = b;
	return (x->b > y->b) - (x->b < y->b);
}

/* Version buckets on the axis: by the first day seen, then as versions. */
struct vkey {
	int64_t first;
	const char *version;
	size_t tmp;
};

static int by_first_seen(const void *a, const void *b)
{
	const struct vkey *x = a, *y = b;
	if (x->first != y->first)
		return (x->first > y->first) - (x->first < y->first);
	return rvs_version_cmp(x->version, y->version);
}

/* Groups the traces into buckets (t->b, t->nb) in axis order and sorts
 * the traces by bucket.  0 or -ENOMEM. */
static int bucket(struct rvs_trend *t)
{
	struct vkey *k = NULL;
	size_t *rank = NULL, nb = 0;

	if (t->n) /* no traces: t->s is NULL, which qsort may not be given */
		qsort(t->s, t->n, sizeof *t->s, t->by == RVS_TREND_DAY ? by_day : by_version);
	for (size_t i = 0; i < t->n; i++) {
		int same = i &&
			   (t->by == RVS_TREND_DAY ? t->s[i].day == t->s[i - 1].day
						   : !strcmp(t->s[i].version, t->s[i - 1].version));
		nb += !same;
		t->s[i].b = nb - 1;
	}
	if (!(t->b = calloc(nb ? nb : 1, sizeof *t->b)))
		return -ENOMEM;
	t->nb = nb;
	if (t->by == RVS_TREND_VERSION && nb) {
		if (!(k = calloc(nb, sizeof *k)) || !(rank = calloc(nb, sizeof *rank))) {
			free(k);
			free(t->b);
			t->b = NULL;
			t->nb = 0;
			return -ENOMEM;
		}
		/* Sorted by version then day: a run's first trace is its first day. */
		for (size_t i = t->n; i-- > 0;) {
			k[t->s[i].b].first = t->s[i].day;
			k[t->s[i].b].version = t->s[i].version;
			k[t->s[i].b].tmp = t->s[i].b;
		}
		qsort(k, nb, sizeof *k, by_first_seen);
		for (size_t j = 0; j < nb; j++)
			rank[k[j].tmp] = j;
		for (size_t i = 0; i < t->n; i++)
			t->s[i].b = rank[t->s[i].b];
		qsort(t->s, t->n, sizeof *t->s, by_bucket);
		free(k);
		free(rank);
	}
	for (size_t i = 0; i < t->n; i++) {
		struct rvs_trend_bucket *b = &t->b[t->s[i].b];
		if (!b->n++) {
			b->first_day = b->last_day = t->s[i].day;
			b->version = t->s[i].version;
		}
		if (t->s[i].day < b->first_day)
			b->first_day = t->s[i].day;
		if (t->s[i].day > b->last_day)
			b->last_day = t->s[i].day;
	}
	return 0;
}

/* ---- the change point --------------------------------------------------------- */

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

/* A uniform index in [0, n) (Lemire's multiply-shift: no division). */
static size_t rng_below(uint64_t *x, size_t n)
{
	assert(n <= UINT32_MAX);
	return (size_t)(((rng_next(x) >> 32) * (uint64_t)n) >> 32);
}

/* One trace's doubled ranks (the sum of its tie group's first and last
 * 1-based positions) of self [0] and inclusive [1] time, its weight, and
 * its weight times its weighted midrank of each (wrank): a trace is
 * permuted with all of them, one shuffle serving every test. */
struct ranks {
	int64_t r[2];
	double w;
	double wr[2];
};

/* The largest |z| of measure w over the splits cut[1..nb) of r[0..n) in
 * its current order; *at its split (the bucket after it) and *zs its
 * signed z (after against before).  var1 is the variance's factor
 * ((n + 1) - T / (n (n - 1))) / 12. */
static double max_z(const struct ranks *r, int w, size_t n, const size_t *cut, size_t nb,
		    double var1, size_t *at, double *zs)
{
	double best = -1;
	int64_t sum = 0; /* doubled rank sum of the first cut[j] traces */
	size_t i = 0;

	for (size_t j = 1; j < nb; j++) {
		double n1, n2, u1, z;
		while (i < cut[j])
			sum += r[i++].r[w];
		n1 = (double)cut[j];
		n2 = (double)(n - cut[j]);
		u1 = (double)sum / 2 - n1 * (n1 + 1) / 2;
		z = (n1 * n2 / 2 - u1) / sqrt(n1 * n2 * var1);
		if (fabs(z) > best) {
			best = fabs(z);
			*at = j;
			*zs = z;
		}
	}
	return best;
}

/* The weighted test's fixed terms of one measure: the total weight, the
 * sums of squared weights and of w·R (each trace's weight times its
 * weighted midrank), and the tie factor (wrank); none change when the
 * traces are permuted. */
struct wterms {
	double w, w2, wr, tie;
};

/* max_z weighted: for each split, U = Σ w_i w_j over the (after i, before
 * j) pairs with x_i > x_j, ties counting half, which is Σ_after w·R −
 * W_after² / 2; θ = U / (W_after W_before) estimates P(after > before) in
 * the population; z = (θ − 1/2) / σ with σ² = (n1 + n2 + 1) / (12 n1 n2)
 * × tie on the sides' effective sizes n = W² / Σ w² (Kish) — with every
 * weight 1, Mann–Whitney's own z.  The permutation test makes p exact
 * whatever the approximation in σ. */
static double max_wz(const struct ranks *r, int m, const size_t *cut, size_t nb,
		     const struct wterms *k, size_t *at, double *zs)
{
	double best = -1, wb = 0, w2b = 0, wrb = 0;
	size_t i = 0;

	for (size_t j = 1; j < nb; j++) {
		double wa, w2a, u, theta, n1, n2, z;
		while (i < cut[j]) {
			wb += r[i].w;
			w2b += r[i].w * r[i].w;
			wrb += r[i].wr[m];
			i++;
		}
		wa = k->w - wb;
		w2a = k->w2 - w2b;
		u = (k->wr - wrb) - wa * wa / 2;
		theta = u / (wa * wb);
		n1 = wb * wb / w2b;
		n2 = wa * wa / w2a;
		z = (theta - 0.5) / sqrt((n1 + n2 + 1) / (12 * n1 * n2) * k->tie);
		if (fabs(z) > best) {
			best = fabs(z);
			*at = j;
			*zs = z;
		}
	}
	return best;
}

struct ranked {
	int64_t v;
	size_t i;
};

static int by_value(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->v != y->v)
		return (x->v > y->v) - (x->v < y->v);
	return (x->i > y->i) - (x->i < y->i);
}

/* The median of measure w over traces [from, to) (nearest rank); tmp has
 * room for them. */
static int64_t side_median(const struct rvs_trend *t, int w, size_t from, size_t to, int64_t *tmp)
{
	for (size_t i = from; i < to; i++)
		tmp[i - from] = t->s[i].v[w];
	return rvs_trend_pct(tmp, to - from, 50);
}

/* Measure w's doubled ranks into r[].r[w]; the variance factor (0 when
 * every value ties: no test). */
static double rank(const struct rvs_trend *t, int w, struct ranked *v, struct ranks *r)
{
	size_t n = t->n;
	double ties = 0;

	for (size_t i = 0; i < n; i++) {
		v[i].v = t->s[i].v[w];
		v[i].i = i;
	}
	qsort(v, n, sizeof *v, by_value);
	for (size_t a = 0, e; a < n; a = e) {
		double g;
		for (e = a + 1; e < n && v[e].v == v[a].v; e++)
			;
		for (size_t k = a; k < e; k++)
			r[v[k].i].r[w] = (int64_t)(a + 1) + (int64_t)e; /* 2 × midrank */
		g = (double)(e - a);
		ties += g * g * g - g;
	}
	return ((double)n + 1 - ties / ((double)n * ((double)n - 1))) / 12;
}

/* The weighted median of measure w over traces [from, to); tmp has room
 * for them. */
static int64_t side_wmedian(const struct rvs_trend *t, int w, size_t from, size_t to,
			    struct rvs_trend_wv *tmp)
{
	for (size_t i = from; i < to; i++) {
		tmp[i - from].v = t->s[i].v[w];
		tmp[i - from].w = t->s[i].w;
	}
	return rvs_trend_wpct(tmp, to - from, 50);
}

/* Measure w's weighted midranks, after rank() left v[] sorted by value:
 * a trace's R is the weight of the values below it plus half its tie
 * group's; r[].wr[w] = its weight × R, and the fixed terms into *k.  The
 * tie factor is 1 − Σ_groups (W_g³ − Σ_g w³) / (W³ − Σ w³), Mann–Whitney's
 * 1 − Σ (t³ − t) / (n³ − n) with every weight 1; 0 when every value ties. */
static void wrank(const struct rvs_trend *t, int w, const struct ranked *v, struct ranks *r,
		  struct wterms *k)
{
	size_t n = t->n;
	double below = 0, ties = 0, w3 = 0;

	memset(k, 0, sizeof *k);
	for (size_t a = 0, e; a < n; a = e) {
		double g = 0, g3 = 0;
		for (e = a; e < n && v[e].v == v[a].v; e++) {
			double x = t->s[v[e].i].w;
			g += x;
			g3 += x * x * x;
		}
		for (size_t q = a; q < e; q++)
			r[v[q].i].wr[w] = t->s[v[q].i].w * (below + g / 2);
		below += g;
		ties += g * g * g - g3;
		w3 += g3;
	}
	for (size_t i = 0; i < n; i++) {
		k->w += r[i].w;
		k->w2 += r[i].w * r[i].w;
		k->wr += r[i].wr[w];
	}
	k->tie = below * below * below - w3 > 0 ? 1 - ties / (below * below * below - w3) : 0;
}

/* The onset of one measure from the observed split and the permutation
 * count above it. */
static void onset_set(struct rvs_trend_onset *o, size_t at, double z, unsigned above,
		      const size_t *cut, size_t n)
{
	o->bucket = at;
	o->z = z;
	o->before = cut[at];
	o->after = n - cut[at];
	o->p = (1.0 + above) / (1.0 + RVS_TREND_PERMUTATIONS);
	o->found = o->p < RVS_TREND_ALPHA;
}

/* Both tests of both measures (t->self, t->incl, t->w_self, t->w_incl).
 * 0 or -ENOMEM. */
static int onsets(struct rvs_trend *t)
{
	struct rvs_trend_onset *o[2] = {&t->self, &t->incl}, *wo[2] = {&t->w_self, &t->w_incl};
	size_t n = t->n, at[2] = {0, 0}, wat[2] = {0, 0}, *cut;
	struct ranked *v;
	struct ranks *r;
	struct wterms k[2];
	int64_t *tmp;
	struct rvs_trend_wv *wtmp;
	double var1[2], obs[2] = {0, 0}, zs[2] = {0, 0}, wobs[2] = {0, 0}, wzs[2] = {0, 0};
	uint64_t x = RVS_TREND_SEED;
	unsigned above[2] = {0, 0}, wabove[2] = {0, 0};
	int any = 0;

	for (int w = 0; w < 2; w++) {
		memset(o[w], 0, sizeof *o[w]);
		memset(wo[w], 0, sizeof *wo[w]);
	}
	if (t->nb < 2)
		return 0;
	cut = calloc(t->nb, sizeof *cut);
	v = calloc(n, sizeof *v);
	r = calloc(n, sizeof *r);
	tmp = calloc(n, sizeof *tmp);
	wtmp = calloc(n, sizeof *wtmp);
	if (!cut || !v || !r || !tmp || !wtmp) {
		free(cut);
		free(v);
		free(r);
		free(tmp);
		free(wtmp);
		return -ENOMEM;
	}
	for (size_t j = 1; j < t->nb; j++)
		cut[j] = cut[j - 1] + t->b[j - 1].n;
	for (size_t i = 0; i < n; i++)
		r[i].w = t->s[i].w;
	for (int w = 0; w < 2; w++) {
		var1[w] = rank(t, w, v, r);
		if (var1[w] <= 0)
			continue; /* every value ties: no test */
		o[w]->tested = any = 1;
		obs[w] = max_z(r, w, n, cut, t->nb, var1[w], &at[w], &zs[w]);
		/* Values that do not all tie leave a tie factor > 0, unless weights
		 * far apart round it away: then no weighted test. */
		wrank(t, w, v, r, &k[w]);
		if (k[w].tie > 0) {
			wo[w]->tested = 1;
			wobs[w] = max_wz(r, w, cut, t->nb, &k[w], &wat[w], &wzs[w]);
		}
	}
	for (unsigned p = 0; any && p < RVS_TREND_PERMUTATIONS; p++) {
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = rng_below(&x, i + 1);
			struct ranks sw = r[i];
			r[i] = r[j];
			r[j] = sw;
		}
		for (int w = 0; w < 2; w++) {
			size_t a2;
			double z2;
			if (!o[w]->tested)
				continue;
			/* A tolerance for the float sums: equal statistics count as above. */
			above[w] += max_z(r, w, n, cut, t->nb, var1[w], &a2, &z2) >=
				    obs[w] - 1e-9 * obs[w];
			if (wo[w]->tested)
				wabove[w] += max_wz(r, w, cut, t->nb, &k[w], &a2, &z2) >=
					     wobs[w] - 1e-9 * wobs[w];
		}
	}
	for (int w = 0; w < 2; w++) {
		if (!o[w]->tested)
			continue;
		onset_set(o[w], at[w], zs[w], above[w], cut, n);
		o[w]->median_before = side_median(t, w, 0, cut[at[w]], tmp);
		o[w]->median_after = side_median(t, w, cut[at[w]], n, tmp);
		if (!wo[w]->tested)
			continue;
		onset_set(wo[w], wat[w], wzs[w], wabove[w], cut, n);
		wo[w]->median_before = side_wmedian(t, w, 0, cut[wat[w]], wtmp);
		wo[w]->median_after = side_wmedian(t, w, cut[wat[w]], n, wtmp);
	}
	for (int w = 0; w < 4; w++) {
		struct rvs_trend_onset *q = w < 2 ? o[w] : wo[w - 2];
		q->shift =
			q->median_before ? (double)q->median_after / (double)q->median_before : 0;
	}
	free(cut);
	free(v);
	free(r);
	free(tmp);
	free(wtmp);
	return 0;
}

int rvs_trend_compute(struct rvs_trend *t)
{
	struct rvs_trend_wv *wv;
	int64_t *tmp;
	size_t at = 0;
	int rc;

	assert(!t->b);
	if ((rc = bucket(t)))
		return rc;
	if (!(tmp = malloc((t->n ? t->n : 1) * sizeof *tmp)))
		goto nomem;
	if (!(wv = malloc((t->n ? t->n : 1) * sizeof *wv))) {
		free(tmp);
		goto nomem;
	}
	for (size_t j = 0; j < t->nb; at += t->b[j++].n) {
		struct rvs_trend_bucket *b = &t->b[j];
		int64_t *pv[] = {&b->self_p50, &b->self_p95, &b->incl_p50, &b->incl_p95};
		int64_t *wpv[] = {&b->w_self_p50, &b->w_self_p95, &b->w_incl_p50, &b->w_incl_p95};
		assert(b->n > 0 && t->s[at].b == j);
		for (size_t i = 0; i < b->n; i++) {
			const struct rvs_trend_sample *x = &t->s[at + i];
			b->w_n += x->w;
			b->n_estimated += x->wflag == RVS_TREND_W_ESTIMATED;
			b->n_unknown += x->wflag == RVS_TREND_W_UNKNOWN;
		}
		for (int w = 0; w < 2; w++)
			for (int q = 0; q < 2; q++) {
				for (size_t i = 0; i < b->n; i++) {
					tmp[i] = t->s[at + i].v[w];
					wv[i].v = t->s[at + i].v[w];
					wv[i].w = t->s[at + i].w;
				}
				*pv[2 * w + q] = rvs_trend_pct(tmp, b->n, q ? 95 : 50);
				*wpv[2 * w + q] = rvs_trend_wpct(wv, b->n, q ? 95 : 50);
			}
	}
	free(tmp);
	free(wv);
	if (onsets(t))
		goto nomem;
	return 0;
nomem:
	free(t->b);
	t->b = NULL;
	t->nb = 0;
	return -ENOMEM;
}
