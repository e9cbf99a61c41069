/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_agg_rest.c — what both backends share of the rest of a range around
 * a heatmap cell (store_agg.h): a cell side's per-trace rows summed per
 * node while they go to the caller, so that the rest's read subtracts them
 * instead of reading the cell's rows a second time.
 *
 * Invariants: the sums are kept sorted by node (a cell's rows name a few
 * hundred nodes: a binary search and an insertion each); every value, the
 * on- and off-CPU sums and their trace count included, is an exact integer
 * sum of the rows given.
 */
#include "store/store_agg.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The index of node in a (sorted), or where it would go; *hit 1 when found. */
static size_t acc_pos(const struct rvs_agg_acc *a, int64_t node, int *hit)
{
	size_t lo = 0, hi = a->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->v[mid].node < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	*hit = lo < a->n && a->v[lo].node == node;
	return lo;
}

int rvs_agg_acc_add(struct rvs_agg_acc *a, const struct rvs_agg_sum *r)
{
	int hit;
	size_t i = acc_pos(a, r->node, &hit);
	struct rvs_agg_sum *o;

	if (!hit) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? 2 * a->cap : 256;
			struct rvs_agg_sum *v = realloc(a->v, cap * sizeof *v);
			if (!v)
				return -ENOMEM;
			a->v = v;
			a->cap = cap;
		}
		memmove(&a->v[i + 1], &a->v[i], (a->n - i) * sizeof *a->v);
		a->v[i] = (struct rvs_agg_sum){.node = r->node};
		a->n++;
	}
	o = &a->v[i];
	o->traces += r->traces;
	o->calls += r->calls;
	o->self_ns += r->self_ns;
	o->incl_ns += r->incl_ns;
	o->cpu_traces += r->cpu_traces;
	o->cpu_self_ns += r->cpu_self_ns;
	o->cpu_incl_ns += r->cpu_incl_ns;
	o->off_self_ns += r->off_self_ns;
	o->off_incl_ns += r->off_incl_ns;
	return 0;
}

void rvs_agg_sum_sub(struct rvs_agg_sum *r, const struct rvs_agg_sum *c)
{
	assert(r->node == c->node);
	r->traces -= c->traces;
	r->calls -= c->calls;
	r->self_ns -= c->self_ns;
	r->incl_ns -= c->incl_ns;
	r->cpu_traces -= c->cpu_traces;
	r->cpu_self_ns -= c->cpu_self_ns;
	r->cpu_incl_ns -= c->cpu_incl_ns;
	r->off_self_ns -= c->off_self_ns;
	r->off_incl_ns -= c->off_incl_ns;
}

struct rvs_agg_sum *rvs_agg_acc_find(const struct rvs_agg_acc *a, int64_t node)
{
	int hit;
	size_t i = acc_pos(a, node, &hit);
	return hit ? &a->v[i] : NULL;
}

void rvs_agg_acc_release(struct rvs_agg_acc *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

int rvs_agg_acc_tee(void *arg, size_t side, const struct rvs_agg_sum *r, double weight, int wflag)
{
	struct rvs_agg_tee *t = arg;
	int rc = t->cb->row(t->arg, side, r, weight, wflag);

	if (!rc && rvs_agg_acc_add(&t->acc, r))
		t->failed = 1;
	return rc;
}
