/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decoder.h — the decode step's seam between the device API, which queues
 * uploads and drains the queue (api.c), and the decoder that indexes them
 * (decode.c): one function table, so neither includes the other.
 */
#ifndef RVS_DECODER_H
#define RVS_DECODER_H

#include <stddef.h>

#include "store/store.h"

/* The decode step's seam.  decode() runs on a work thread with a batch of
 * queued uploads, oldest first (store.h's struct rvs_decode_item: trace id,
 * the payload blob's path, "" for summary-only uploads), and sets each
 * item's rc: 0 when the trace was decoded and indexed, -EAGAIN when a
 * transient store or blob error (store.h) kept it from being indexed (it
 * stays queued and is decoded again later), or another negative errno with
 * a reason, in which case the upload is quarantined with that reason; and
 * its seconds.  It may index several summary-only uploads in one
 * transaction.  The trace analysis library provides the implementation;
 * with none, uploads stay in state pending_decode. */
/* decode() may run on up to this many work threads at once, each with
 * different uploads (api.c drains config decode_jobs partitions of the
 * queue, 1..RVS_DECODE_LANES), at most RVS_DECODE_BATCH uploads a call. */
#define RVS_DECODE_LANES 4
/* 32 summaries per index transaction: the pages they share are written
 * once (server/BENCHMARKS.md: indexed 1.5x faster than batches of 8, with
 * checkpoints off the commit path). */
#define RVS_DECODE_BATCH 32

struct rvs_decoder {
	void (*decode)(void *ctx, struct rvs_decode_item *items, size_t n);
	void *ctx;
};

#endif
