/* SPDX-License-Identifier: Apache-2.0 */
/*
 * index_cap.h — what one upload may cost the index (index_cap.c).
 *
 * An upload's index rows (method rows, chain text, the call-path
 * aggregate's names) are bounded by a budget that grows with the bytes the
 * device sent, whatever those bytes inflate to: a few KB of zstd can name
 * thousands of methods with 4 KB names.  What is cut is marked, never
 * silent: a cut name ends in "…#" and a hash of the whole name, a cut chain
 * starts with "[K outer frames truncated];", and the counts of rows left
 * out are returned for the log and the trace's index_cut column.
 * Thread-safe: no state.
 */
#ifndef RVS_INDEX_CAP_H
#define RVS_INDEX_CAP_H

#include <stddef.h>
#include <stdint.h>

#include "rearview/analysis.h"
#include "store/store.h"

/* The longest stored method name (bytes), cut form included. */
#define RVS_INDEX_NAME_MAX 256
/* The shortest a name is cut to when a trace's names are over budget. */
#define RVS_INDEX_NAME_MIN 40
/* Frames of a stored chain (the innermost) and bytes of its text. */
#define RVS_INDEX_CHAIN_FRAMES 64
#define RVS_INDEX_CHAIN_TEXT   4096

/* What was left out of a trace's index. */
struct rvs_index_cut {
	size_t names; /* names cut (to name_len bytes at most) */
	size_t name_len;
	size_t methods; /* method rows left out */
	size_t chains;	/* chain rows left out */
};

/* The index bytes an upload of wire_bytes (as received: compressed when it
 * was) may cost, before the database's own overhead: a floor for the
 * trace's fixed rows plus a small multiple of its size. */
size_t rvs_index_budget(size_t wire_bytes);

/* Renames every method of t with calls (st[m].calls, st from the summary)
 * whose name is over RVS_INDEX_NAME_MAX bytes, or over a shorter length
 * chosen so the names of methods with calls total at most budget / 4, to
 * its cut form: a prefix (whole UTF-8 characters), "…#" and 16 hex digits
 * of the whole name's hash (names stay unique).  Call before chains and
 * signatures are computed.  0 or -ENOMEM; cut->names and name_len set. */
int rvs_index_cap_names(rva_trace *t, const rva_mstat *st, size_t budget,
			struct rvs_index_cut *cut);

/* Keeps the method rows m[0..*n) whose names (and a row's overhead) fit in
 * budget / 4, the ranked ones (self_rank) first, then by self time; the
 * rest are left out (cut->methods) and *n is how many are kept (m is
 * reordered). */
void rvs_index_cap_methods(struct rvs_index_method *m, size_t *n, size_t budget,
			   struct rvs_index_cut *cut);

/* The call-path aggregate's nodes a trace may keep (model/agg.h's cut):
 * RVS_AGG_MAX_NODES when the budget allows. */
size_t rvs_index_agg_nodes(size_t budget);

/* The budget of chain text of a trace: chains past it are left out (the
 * first of each kind is always kept: it is the trace's signature). */
size_t rvs_index_chain_budget(size_t budget);

/* Writes "names N cut to L bytes; M method rows and K chains left out" (the
 * parts that apply) into buf; "" when nothing was cut. */
void rvs_index_cut_text(const struct rvs_index_cut *cut, char *buf, size_t cap);

#endif
