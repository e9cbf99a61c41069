/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratelimit.c — token buckets (ratelimit.h).
 *
 * Invariants: a table holds at most RVS_BUCKETS entries, each key once; a
 * refill never takes a bucket past its burst; finding a missing key
 * recycles the least recently used entry, so the table's memory is fixed
 * whatever the keys a peer sends.
 */
#include "http/ratelimit.h"

#include <math.h>
#include <string.h>

struct rvs_bucket *rvs_bucket_find(struct rvs_bucket *tab, const uint8_t key[32], double burst,
				   uint64_t now)
{
	struct rvs_bucket *oldest = &tab[0];
	for (int i = 0; i < RVS_BUCKETS; i++) {
		struct rvs_bucket *x = &tab[i];
		if (x->used && memcmp(x->key, key, 32) == 0)
			return x;
		if (!x->used || (oldest->used && x->last_ms < oldest->last_ms))
			oldest = x;
	}
	memset(oldest, 0, sizeof *oldest);
	memcpy(oldest->key, key, 32);
	oldest->used = 1;
	oldest->tokens = burst;
	oldest->last_ms = now;
	return oldest;
}

struct rvs_bucket *rvs_bucket_peek(struct rvs_bucket *tab, const uint8_t key[32])
{
	for (int i = 0; i < RVS_BUCKETS; i++)
		if (tab[i].used && memcmp(tab[i].key, key, 32) == 0)
			return &tab[i];
	return NULL;
}

void rvs_bucket_refill(struct rvs_bucket *b, double per_min, double burst, uint64_t now)
{
	b->tokens += (double)(now - b->last_ms) * per_min / 60000.0;
	if (b->tokens > burst)
		b->tokens = burst;
	b->last_ms = now;
}

unsigned rvs_bucket_retry_after(const struct rvs_bucket *b, double per_min)
{
	unsigned s = (unsigned)ceil((1.0 - b->tokens) * 60.0 / per_min);
	return s ? s : 1;
}
