/* SPDX-License-Identifier: Apache-2.0 */
/*
 * registry.h — traced processes, their threads, and foreground tracking.
 * The registry decides which UI threads are traced (those of the N most
 * recently foreground registered apps) and reports each change through a
 * callback; it does no I/O itself, so it is unit-tested directly.
 */
#ifndef RVD_REGISTRY_H
#define RVD_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "detect.h"
#include "frames.h"

#define RVD_MRU_MAX 16

struct rvd_thread {
	pid_t tid;
	bool is_ui;
	bool tracing;	       /* as last reported by the process */
	uint64_t buffer_bytes; /* as last reported by the process */
	char name[16];
};

struct rvd_process {
	struct rvd_process *next;
	pid_t pid;
	unsigned deciding; /* policy decisions in flight (capture.c) */
	uid_t uid;
	char exe[128];
	char app_id[64];
	char app_version[32]; /* Register's app.version (or AppVersion), "" none */
	pid_t ui_tid;	      /* 0: unknown, the main thread (pid) is assumed */
	pid_t traced_tid;     /* the tid we asked to trace, 0 when none */
	struct rvd_thread *threads;
	size_t nthreads;
	struct rvd_jank_state jank;
	void *conn; /* borrowed: the control connection */
	/* perf events on traced_tid (offcpu.c), NULL when none; owned */
	struct rvd_offcpu_thread *offcpu;
	/* CLOCK_MONOTONIC when traced_tid's tracing was asked for (0: taken
	 * over at registration, unknown): a capture's frames start no earlier */
	uint64_t traced_since_ns;
	/* its recent frames (FrameReports), written into its captures */
	struct rvd_frame_ring frames;
};

struct rvd_registry {
	struct rvd_process *head;
	pid_t mru[RVD_MRU_MAX]; /* most recently foreground first; 0-terminated */
	unsigned nprocs;
};

void rvd_registry_init(struct rvd_registry *reg);
/* Frees every process. */
void rvd_registry_release(struct rvd_registry *reg);

/* Adds a process for `pid`.  Returns it, or NULL with *err = -EEXIST (pid
 * already registered) or -ENOMEM. */
struct rvd_process *rvd_registry_add(struct rvd_registry *reg, pid_t pid, int *err);
struct rvd_process *rvd_registry_find(const struct rvd_registry *reg, pid_t pid);
/* Unlinks and frees `p` (it leaves the MRU list too). */
void rvd_registry_remove(struct rvd_registry *reg, struct rvd_process *p);

/* Replaces the thread list of `p` (copied).  A thread with is_ui sets
 * ui_tid.  Returns 0 or -ENOMEM. */
int rvd_process_set_threads(struct rvd_process *p, const struct rvd_thread *threads, size_t n);
/* Total ring-buffer bytes reported by `p`. */
uint64_t rvd_process_buffer_bytes(const struct rvd_process *p);

/* Moves `pid` to the front of the foreground list; ui_tid > 0 also records
 * that process's UI thread when it is registered. */
void rvd_registry_foreground(struct rvd_registry *reg, pid_t pid, pid_t ui_tid);

/*
 * Takes over thread `tid` that `p` reports it is already tracing (it
 * outlived a daemon restart): when fewer than `n` registered processes are in
 * the foreground list and `tid` is p's UI thread (or p named none), p joins
 * the list at its end, tid becomes its UI thread and traced_tid.  Returns
 * true if taken over; false leaves p untouched (the caller releases the
 * ring).
 */
bool rvd_registry_adopt(struct rvd_registry *reg, struct rvd_process *p, pid_t tid, unsigned n);

/* Called for each change: start (tracing a tid) or stop (release its buffer). */
typedef void (*rvd_trace_cb)(struct rvd_process *p, pid_t tid, bool start, void *data);

/*
 * Recomputes which UI threads are traced: the first `n` registered pids of
 * the foreground list.  Calls cb for every stop, then every start, and
 * updates traced_tid.  Returns the number of changes.
 */
unsigned rvd_registry_plan(struct rvd_registry *reg, unsigned n, rvd_trace_cb cb, void *data);

#endif
