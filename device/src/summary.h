/* SPDX-License-Identifier: Apache-2.0 */
/*
 * summary.h — rearviewd's local summary of a capture (Hubble §7): what may
 * leave the device at consent "summary", and what `rvctl show` prints.
 *
 * A summary is a serialized rearview.Summary (proto/rearview/summary.proto)
 * computed with librvanalysis' streaming summary (rva_capture_summarize),
 * so memory stays proportional to distinct methods and chains, not to the
 * capture's size.  It is CPU work: never on the loop thread.
 */
#ifndef RVD_SUMMARY_H
#define RVD_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "enforce.h"
#include "spool.h"

struct Rearview__PolicyBody;

/* Rows of the top-self-time table and of the longest-chains list. */
#define RVD_SUMMARY_TOP 10
/* Frames kept per Chain: the innermost ones (a deep recursion would
 * otherwise make a summary megabytes long); the signature covers all. */
#define RVD_SUMMARY_MAX_FRAMES 64

/*
 * Summarizes the capture held in buf[0..len): top `ntop` methods by self
 * time, the chain running at the anomaly (with its signature), the `ntop`
 * chains with the most self time, total calls, and the matches of every
 * signature model of the policy's campaigns (policy may be NULL: no
 * models).  A chain's duration_ns is the inclusive time of its deepest
 * frame summed over the capture; a model is matched against each distinct
 * chain with that frame's mean call duration (the streaming summary keeps
 * no per-call times), SignatureMatch.count being its number of calls.
 * A capture with OFFCPU / THREAD_COUNTERS records (FORMAT.md) also gets
 * its off-CPU time by reason (Summary.offcpu_reasons, those with time,
 * largest first) and each top method's inclusive time split into
 * MethodStat.on_cpu_ns and off_cpu_ns, from the same streaming summary
 * (intervals not cut at call boundaries, unlike rvtrace's model: the two
 * may differ by the clocks' few µs per interval).
 *
 * On success *out (caller frees with free()) holds *out_len bytes.  Returns
 * 0, -EINVAL / -E2BIG for a capture the decoder refuses (err, errsz >= 1,
 * says why), or -ENOMEM.
 */
int rvd_summary_build(const uint8_t *buf, size_t len, const struct Rearview__PolicyBody *policy,
		      size_t ntop, uint8_t **out, size_t *out_len, char *err, size_t errsz);

/* The same for a capture file (mapped read-only, not copied).  -errno of
 * open/mmap as well. */
int rvd_summary_file(const char *path, const struct Rearview__PolicyBody *policy, size_t ntop,
		     uint8_t **out, size_t *out_len, char *err, size_t errsz);

/*
 * One capture to summarize and store: filled on the loop thread, run by
 * rvd_summary_work through rvd_spool_run (spool job order, so the policy
 * store and the database are used by one thread at a time), result read
 * back in the spool callback.
 */
struct rvd_summary_job {
	struct rvd_spool *sp;
	struct rvd_enforce *enf;
	uint64_t id;
	char file[48]; /* inside <state_dir>/captures */
	int status;    /* 0 stored, or a negative errno */
	size_t len;    /* bytes of the stored summary */
	char err[128]; /* why, when status < 0 */
	void *data;    /* the caller's */
};

/* Worker half: reads the file, summarizes with the current policy's
 * signature models and stores the result in the row.  With a sandbox set
 * (rvd_summary_use_sandbox) the file is summarized by that sandboxed
 * parser, which reads the capture's bytes; this thread only opens the file
 * and stores the answer. */
void rvd_summary_work(void *job);

/* Summaries of rvd_summary_work go through `sb` (sandbox.h; used only from
 * the spool's job queue, one job at a time) from now on; NULL: in this
 * process (unit tests, rvctl).  Set before the first job is queued. */
struct rvd_sandbox;
void rvd_summary_use_sandbox(struct rvd_sandbox *sb);

/* A summary answer longer than this is refused (top tables of 10 rows,
 * chains of 64 frames, 64 matches: far below it). */
#define RVD_SUMMARY_MAX_BYTES (16u << 20)

#endif
