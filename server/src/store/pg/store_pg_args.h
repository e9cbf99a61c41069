/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg_args.h — the text parameters of one libpq statement, built up
 * in order (a_text, a_i64) for PQexecParams: the PostgreSQL backend's
 * aggregate and search reads (store_pg_agg.c, store_pg_search.c).
 * Internal to the store.  A value points into the args' own num[] or at
 * the caller's string, which must outlive the statement.  Header-only:
 * static functions, one copy per file that includes it.
 */
#ifndef RVS_STORE_PG_ARGS_H
#define RVS_STORE_PG_ARGS_H

#include <assert.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_PARAMS 16

struct args {
	int n;
	const char *v[MAX_PARAMS];
	char num[MAX_PARAMS][24];
};

/* The next parameter: v (NULL is SQL NULL), borrowed. */
static inline void a_text(struct args *a, const char *v)
{
	assert(a->n < MAX_PARAMS);
	a->v[a->n++] = v;
}

/* The next parameter: v in decimal, or SQL NULL when has is 0. */
static inline void a_i64(struct args *a, int has, int64_t v)
{
	assert(a->n < MAX_PARAMS);
	if (!has) {
		a->v[a->n++] = NULL;
		return;
	}
	snprintf(a->num[a->n], sizeof a->num[a->n], "%" PRId64, v);
	a->v[a->n] = a->num[a->n];
	a->n++;
}

#endif
