/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offcpu.h — why the time went, recorded by the daemon (issue 17): per
 * traced thread, perf events opened on that thread (context-switch records
 * in an overwriting ring, software counters), read only when a capture is
 * built, and written into the capture as OFFCPU and THREAD_COUNTERS records
 * (tracer/FORMAT.md, types 12 and 13).  Nothing runs on the traced thread's
 * hot path: the kernel writes the ring, the daemon reads it at capture time.
 *
 * Loop thread only (the daemon's); the functions keep no global state.
 */
#ifndef RVD_OFFCPU_H
#define RVD_OFFCPU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Record types of tracer/FORMAT.md. */
#define RVD_REC_OFFCPU		12
#define RVD_REC_THREAD_COUNTERS 13

/* Off-CPU reasons (FORMAT.md, OFFCPU). */
#define RVD_OFFCPU_PREEMPTED 1 /* switched out while runnable (involuntary) */
#define RVD_OFFCPU_BLOCKED   2 /* switched out sleeping: pipe, futex, I/O, fault */

struct rvd_offcpu_iv {
	uint64_t out_ns; /* CLOCK_MONOTONIC, switch-out */
	uint64_t in_ns;	 /* CLOCK_MONOTONIC, switch-in (the snapshot time if still out) */
	uint32_t reason; /* RVD_OFFCPU_* */
};

/* One thread's view at a capture: owned by the caller, released with
 * rvd_offcpu_window_release. */
struct rvd_offcpu_window {
	pid_t tid;
	uint64_t since_ns;	/* CLOCK_MONOTONIC when the counters were opened */
	uint64_t at_ns;		/* CLOCK_MONOTONIC when they were read */
	uint64_t window_ns;	/* oldest switch record still in the ring (= at_ns if none) */
	uint64_t task_clock_ns; /* counters: since_ns .. at_ns */
	uint64_t minor_faults;
	uint64_t major_faults;
	uint64_t switches;
	uint64_t voluntary; /* switch-outs in window_ns .. at_ns, by reason */
	uint64_t involuntary;
	struct rvd_offcpu_iv *iv; /* off-CPU intervals inside the window, oldest first */
	size_t n;
};

struct rvd_offcpu_thread;

/*
 * Opens the perf events for thread `tid` (any process: needs the privilege
 * the daemon has, CAP_PERFMON or perf_event_paranoid ≤ 1 for another
 * user's threads): a software dummy event with context-switch records,
 * CLOCK_MONOTONIC timestamps and a backward (overwriting) ring of
 * `ring_pages` pages (a power of two), plus task-clock, minor and major
 * fault and context-switch counters.  Returns 0 with *out set (free with
 * rvd_offcpu_close), or a negative errno (-ESRCH: no such thread; -EACCES /
 * -EPERM: not allowed; -ENOENT / -EOPNOTSUPP: the kernel lacks the event;
 * -ENOMEM; -EINVAL: bad `ring_pages`).
 */
int rvd_offcpu_open(pid_t tid, unsigned ring_pages, struct rvd_offcpu_thread **out);

/*
 * Makes *slot watch thread `tid`: nothing when it already does; otherwise
 * the old events are closed (*slot NULL) and, when `tid` is not 0, new
 * ones opened with the daemon's ring size (64 pages).  A failure to open is
 * logged (warning) and leaves *slot NULL: the captures then carry no
 * OFFCPU records.  Returns 0 or the rvd_offcpu_open error.
 */
int rvd_offcpu_follow(struct rvd_offcpu_thread **slot, pid_t tid);

/* Closes the events and frees `t` (NULL is fine). */
void rvd_offcpu_close(struct rvd_offcpu_thread *t);

/* The thread `t` watches. */
pid_t rvd_offcpu_tid(const struct rvd_offcpu_thread *t);

/*
 * Reads `t`'s counters and the newest window of its ring (output paused
 * while read, so the kernel never overwrites what is being read) into *w
 * (zeroed first).  Intervals are pairs of a switch-out and the next
 * switch-in; a thread still off the CPU ends at at_ns; a switch-in with no
 * switch-out before it (the ring's oldest record) is dropped.  Returns 0 or
 * -ENOMEM (*w then empty), -EIO when a counter cannot be read.
 */
int rvd_offcpu_snapshot(struct rvd_offcpu_thread *t, struct rvd_offcpu_window *w);

/* Frees w->iv; *w becomes empty. */
void rvd_offcpu_window_release(struct rvd_offcpu_window *w);

/* The bytes rvd_offcpu_records writes for the `nw` windows. */
size_t rvd_offcpu_records_len(const struct rvd_offcpu_window *w, size_t nw);

/* Writes an OFFCPU and a THREAD_COUNTERS record per window to b (room for
 * rvd_offcpu_records_len bytes); returns the bytes written. */
size_t rvd_offcpu_records(const struct rvd_offcpu_window *w, size_t nw, uint8_t *b);

/*
 * Builds a copy of capture `cap` (`len` bytes, checked by capcheck: its
 * last records are CHECKSUM and END) with an OFFCPU and a THREAD_COUNTERS
 * record for each of the `nw` windows inserted before a new CHECKSUM (XXH3
 * over everything before it) and END; file_size in the header is updated.
 * Returns 0 with *out (malloc'd, caller frees) and *out_len, -EINVAL when
 * `cap` does not end with CHECKSUM and END, or -ENOMEM.
 */
int rvd_offcpu_append(const uint8_t *cap, size_t len, const struct rvd_offcpu_window *w, size_t nw,
		      uint8_t **out, size_t *out_len);

#endif
