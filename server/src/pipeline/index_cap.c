/* SPDX-License-Identifier: Apache-2.0 */
/*
 * index_cap.c — the index budget of one upload (index_cap.h).
 *
 * The budget is split in quarters: the names of the methods with calls
 * (which the method rows, the chains and the aggregate's dictionary
 * store), the method rows, the chain text, and the call-path aggregate's
 * nodes (rvs_index_agg_nodes, with the traces row).  Invariants: a cut
 * name is at most RVS_INDEX_NAME_MAX bytes, ends "…#<16 hex>" and stays
 * unique in its trace; a name is never cut below RVS_INDEX_NAME_MIN.
 */
#include "pipeline/index_cap.h"
#include "model/agg.h"
#include "base/util.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index bytes of every upload, and per byte sent. */
#define BUDGET_FLOOR	(16u << 10)
#define BUDGET_PER_BYTE 4
/* A method row's bytes: its name twice (the row and its index by name)
 * and this much more (ids, counts, the time indexes' entries). */
#define METHOD_ROW_COST 96
/* An aggregate node's bytes (its dictionary row and index entry, its
 * trace_paths and agg_sums rows), and the fewest nodes a trace keeps. */
#define AGG_NODE_COST 96
#define AGG_MIN_NODES 32
/* "…#" and 16 hex digits. */
#define CUT_MARK_LEN (3 + 1 + 16)

size_t rvs_index_budget(size_t wire_bytes)
{
	if (wire_bytes > (SIZE_MAX - BUDGET_FLOOR) / BUDGET_PER_BYTE)
		return SIZE_MAX;
	return BUDGET_FLOOR + BUDGET_PER_BYTE * wire_bytes;
}

size_t rvs_index_agg_nodes(size_t budget)
{
	size_t n = budget / 4 / AGG_NODE_COST;
	return n < AGG_MIN_NODES ? AGG_MIN_NODES : n > RVS_AGG_MAX_NODES ? RVS_AGG_MAX_NODES : n;
}

size_t rvs_index_chain_budget(size_t budget)
{
	return budget / 4;
}

/* The names' total with each cut at len bytes. */
static size_t names_total(const rva_trace *t, const rva_mstat *st, size_t len)
{
	size_t total = 0;
	for (size_t m = 0; m < t->nmethods; m++) {
		size_t l;
		if (!st[m].calls)
			continue;
		l = strlen(t->names[m]);
		total += l < len ? l : len;
	}
	return total;
}

int rvs_index_cap_names(rva_trace *t, const rva_mstat *st, size_t budget, struct rvs_index_cut *cut)
{
	size_t len = RVS_INDEX_NAME_MAX;

	while (len > RVS_INDEX_NAME_MIN && names_total(t, st, len) > budget / 4)
		len = len * 3 / 4 > RVS_INDEX_NAME_MIN ? len * 3 / 4 : RVS_INDEX_NAME_MIN;
	for (uint32_t m = 0; m < t->nmethods; m++) {
		const char *name = t->names[m];
		size_t keep = len - CUT_MARK_LEN;
		char buf[RVS_INDEX_NAME_MAX + 1];
		int rc = -EINVAL;

		if (!st[m].calls || strlen(name) <= len)
			continue;
		/* Whole UTF-8 characters: back off continuation bytes. */
		while (keep > 0 && ((unsigned char)name[keep] & 0xc0) == 0x80)
			keep--;
		/* Another method with the same cut name (a hash collision, or
		 * a name already of this form): salt the hash. */
		for (uint64_t salt = 0; rc == -EINVAL && salt < 16; salt++) {
			snprintf(buf, sizeof buf, "%.*s\xe2\x80\xa6#%016" PRIx64, (int)keep, name,
				 rvs_fnv1a(RVS_FNV_BASIS ^ salt, name, strlen(name)));
			assert(strlen(buf) <= len);
			rc = rva_method_rename(t, m, buf);
		}
		if (rc)
			return rc == -ENOMEM ? rc : -EINVAL;
		cut->names++;
		cut->name_len = len;
	}
	return 0;
}

/* Ranked rows first (by rank), then by self time, larger first. */
static int row_order(const void *a, const void *b)
{
	const struct rvs_index_method *x = a, *y = b;
	if (x->self_rank && y->self_rank)
		return x->self_rank < y->self_rank ? -1 : x->self_rank > y->self_rank;
	if (x->self_rank || y->self_rank)
		return x->self_rank ? -1 : 1;
	if (x->self_ns != y->self_ns)
		return x->self_ns > y->self_ns ? -1 : 1;
	return strcmp(x->method, y->method);
}

void rvs_index_cap_methods(struct rvs_index_method *m, size_t *n, size_t budget,
			   struct rvs_index_cut *cut)
{
	size_t total = 0, keep;

	for (size_t i = 0; i < *n; i++)
		total += 2 * strlen(m[i].method) + METHOD_ROW_COST;
	if (total <= budget / 4)
		return;
	qsort(m, *n, sizeof *m, row_order);
	total = 0;
	for (keep = 0; keep < *n; keep++) {
		total += 2 * strlen(m[keep].method) + METHOD_ROW_COST;
		if (total > budget / 4)
			break;
	}
	cut->methods += *n - keep;
	*n = keep;
}

void rvs_index_cut_text(const struct rvs_index_cut *cut, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = 0;
	if (cut->names)
		n += (size_t)snprintf(buf + n, cap - n, "%s%zu names cut to %zu bytes",
				      n ? "; " : "", cut->names, cut->name_len);
	if (cut->methods && n < cap)
		n += (size_t)snprintf(buf + n, cap - n, "%s%zu method rows left out", n ? "; " : "",
				      cut->methods);
	if (cut->chains && n < cap)
		snprintf(buf + n, cap - n, "%s%zu chains left out", n ? "; " : "", cut->chains);
}
