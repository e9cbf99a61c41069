/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aggr.h — private to librvanalysis: incremental construction of the merged
 * call tree, shared by rva_tree_build (from a model) and the streaming
 * capture summary (straight from the slots, no model).
 */
#ifndef RVANALYSIS_AGGR_H
#define RVANALYSIS_AGGR_H

#include <stddef.h>
#include <stdint.h>

#include "rearview/analysis.h"

/* (parent, method) -> node index, open addressing; node holds index + 1
 * (0 = empty slot). */
typedef struct rva_tslot {
	uint64_t key; /* parent << 32 | method */
	uint32_t node;
} rva_tslot;

typedef struct rva_tmap {
	rva_tslot *slot;
	size_t cap;
} rva_tmap;

/* Saturating add: sums of durations from hostile inputs must not overflow
 * (signed overflow is undefined); realistic traces never come close. */
static inline int64_t rva_sadd(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* A tree holding only the synthetic root.  0 or -ENOMEM. */
int rva_tree_init(rva_tree *tr);

/* The child of parent for method, created when absent.  0, -ENOMEM, -E2BIG. */
int rva_tree_child(rva_tree *tr, rva_tmap *m, uint32_t parent, uint32_t method, uint32_t *out);

/* Appends a new child of `parent` for `method` to tr (linked first among its
 * siblings) without any lookup; *out gets its index.  0, -E2BIG or -ENOMEM. */
int rva_tree_new_node(rva_tree *tr, uint32_t parent, uint32_t method, uint32_t *out);

#endif
