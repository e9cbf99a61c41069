/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frames.c — the per-process frame ring and its FRAMES record (frames.h).
 *
 * Invariants: the ring holds at most RVD_FRAMES_RING frames, the newest at
 * next - 1; a pushed frame never allocates; a record lists frames oldest
 * first (arrival order), each with end >= start.
 */
#include "frames.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "caprec.h"

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

int rvd_frame_late(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, uint64_t budget_ns)
{
	if (deadline_ns)
		return end_ns > deadline_ns;
	return end_ns - start_ns > budget_ns;
}

void rvd_frames_push(struct rvd_frame_ring *r, const struct rvd_frame *f)
{
	assert(f->end_ns >= f->start_ns && r->next < RVD_FRAMES_RING);
	r->f[r->next] = *f;
	r->next = (r->next + 1) % RVD_FRAMES_RING;
	if (r->n < RVD_FRAMES_RING)
		r->n++;
}

size_t rvd_frames_record_max(const struct rvd_frame_ring *r)
{
	return 8 + 8 + (size_t)r->n * RVD_FRAME_ITEM;
}

long rvd_frames_record(const struct rvd_frame_ring *r, uint64_t from_ns, uint64_t to_ns,
		       uint8_t *out, size_t cap)
{
	uint32_t first = (r->next + RVD_FRAMES_RING - r->n) % RVD_FRAMES_RING, count = 0;
	size_t off = 16;

	if (cap < rvd_frames_record_max(r))
		return -ENOSPC;
	for (uint32_t i = 0; i < r->n; i++) {
		const struct rvd_frame *f = &r->f[(first + i) % RVD_FRAMES_RING];

		if (f->end_ns < from_ns || f->start_ns > to_ns)
			continue;
		put64(out + off, f->start_ns);
		put64(out + off + 8, f->end_ns);
		put64(out + off + 16, f->deadline_ns);
		put32(out + off + 24, f->tid);
		put32(out + off + 28, f->flags);
		off += RVD_FRAME_ITEM;
		count++;
	}
	if (!count)
		return 0;
	rvd_caprec_head(out, RVD_REC_FRAMES, (uint32_t)(off - 8));
	put32(out + 8, count);
	put32(out + 12, 0);
	assert(off <= cap && off % 8 == 0);
	return (long)off;
}
