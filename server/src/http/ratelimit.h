/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratelimit.h — token buckets in a bounded table (ratelimit.c): the
 * budgets the API gate charges per device token, per peer address and per
 * enrolment secret.  Loop thread only; pure apart from the table handed in.
 */
#ifndef RVS_RATELIMIT_H
#define RVS_RATELIMIT_H

#include <stdint.h>

/* Entries of one table. */
#define RVS_BUCKETS 1024

struct rvs_bucket {
	uint8_t key[32];
	double tokens;
	uint64_t last_ms;
	int used;
	int known; /* a token that has authenticated (or was just issued) */
};

/* The entry of tab (RVS_BUCKETS entries) for key (a token hash, or a peer
 * address zero-padded), made with burst tokens at now (ms) when new: the
 * least recently used entry is recycled.  Never NULL. */
struct rvs_bucket *rvs_bucket_find(struct rvs_bucket *tab, const uint8_t key[32], double burst,
				   uint64_t now);
/* The entry for key, or NULL: never inserts or evicts. */
struct rvs_bucket *rvs_bucket_peek(struct rvs_bucket *tab, const uint8_t key[32]);
/* Adds what per_min refills since b's last refill, up to burst. */
void rvs_bucket_refill(struct rvs_bucket *b, double per_min, double burst, uint64_t now);
/* Seconds (at least 1) until b holds a whole token again at per_min. */
unsigned rvs_bucket_retry_after(const struct rvs_bucket *b, double per_min);

#endif
