/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frames.h — the recent frames of each registered app (FrameReports from
 * events.sock), kept in a fixed ring per process so a capture can carry the
 * frames that overlap it as a FRAMES record (tracer/FORMAT.md, type 14).
 * Recording a frame allocates nothing; the ring overwrites its oldest.
 *
 * Loop thread only (the daemon's); no global state.
 */
#ifndef RVD_FRAMES_H
#define RVD_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Record type of tracer/FORMAT.md, its per-frame item size and flag. */
#define RVD_REC_FRAMES 14
#define RVD_FRAME_ITEM 32u
#define RVD_FRAME_LATE 1u
/* Frames a process's ring holds: 17 s at 60 Hz, 32 KiB. */
#define RVD_FRAMES_RING 1024u

struct rvd_frame {
	uint64_t start_ns;    /* CLOCK_MONOTONIC */
	uint64_t end_ns;      /* >= start_ns */
	uint64_t deadline_ns; /* 0: none */
	uint32_t tid;
	uint32_t flags; /* RVD_FRAME_LATE */
};

struct rvd_frame_ring {
	struct rvd_frame f[RVD_FRAMES_RING];
	uint32_t next; /* where the next frame goes */
	uint32_t n;    /* frames held, <= RVD_FRAMES_RING */
};

/*
 * Whether a frame is late: it ends after its deadline, or (no deadline) it
 * lasts longer than `budget_ns` — the jank detector's rule.  Pure.
 */
int rvd_frame_late(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, uint64_t budget_ns);

/* Records one frame (end_ns >= start_ns, checked by the caller: asserted),
 * overwriting the oldest when full.  O(1), no allocation. */
void rvd_frames_push(struct rvd_frame_ring *r, const struct rvd_frame *f);

/*
 * The bytes of one FRAMES record (header and value, 8-aligned) holding the
 * frames of `r` that overlap [from_ns, to_ns] (end >= from, start <= to),
 * oldest first, written to out[0..cap).  Returns the record's length, 0
 * when no frame overlaps (nothing written), or -ENOSPC when cap is short
 * (rvd_frames_record_max(r) is always enough).
 */
long rvd_frames_record(const struct rvd_frame_ring *r, uint64_t from_ns, uint64_t to_ns,
		       uint8_t *out, size_t cap);

/* The largest record rvd_frames_record can write for `r`. */
size_t rvd_frames_record_max(const struct rvd_frame_ring *r);

#endif
