/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spool.h — the on-device capture spool: capture files plus a sqlite3 (WAL)
 * index in <state_dir>, with the state machine
 *
 *     captured → pending → uploading → uploaded
 *        │          │          │
 *        └──────────┴──────────┴──→ skipped(reason)
 *     (uploading → pending on recovery after a crash)
 *
 * Every sqlite call, file write and fsync runs on the libuv work queue, one
 * job at a time in submission order; the loop thread only reads the
 * in-memory mirror (rvd_spool.recs), which is updated in after-work
 * callbacks.  A capture is durable — and may be acknowledged — once its
 * store callback reports success: the file was written under a temporary
 * name, fsync'd, renamed, the directory fsync'd, and then its row committed.
 */
#ifndef RVD_SPOOL_H
#define RVD_SPOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "detect.h"

enum rvd_spool_state {
	RVD_SPOOL_CAPTURED = 0,
	RVD_SPOOL_PENDING = 1,
	RVD_SPOOL_UPLOADING = 2,
	RVD_SPOOL_UPLOADED = 3,
	RVD_SPOOL_SKIPPED = 4,
};

struct rvd_capture_rec {
	uint64_t id; /* sqlite rowid, assigned at store */
	int state;   /* enum rvd_spool_state */
	/* A local summary is stored with the row (the `summary` column). */
	bool has_summary;
	char reason[32];
	struct rvd_anomaly anomaly;
	char app_id[64];
	uint64_t size;
	uint64_t freeze_latency_ns;
	char file[48]; /* name inside <state_dir>/captures */
	/* Uploads: the idempotency key, drawn when the row is inserted (so
	 * every send of this capture, across crashes, carries the same one),
	 * the server's id once acknowledged, and the policy quota reservation
	 * to commit on that acknowledgement (0: none). */
	uint8_t upload_id[16];
	char trace_id[40];
	int64_t reservation;
	/* How the policy chose it (kind 0: unknown, a row of an older spool). */
	struct rvd_selection sel;
	/* Skipped rows: the server acknowledged its skip report (POST
	 * /v1/skips, report id = upload_id). */
	bool skip_reported;
	/* Loop-thread bookkeeping: a purge of this row is queued; its
	 * deletion (history retention) is queued. */
	bool purging;
	bool pruning;
};

struct rvd_spool_job;
struct rvd_spool;

typedef void (*rvd_spool_cb)(struct rvd_spool *sp, int status, uint64_t id, void *data);

struct rvd_spool {
	uv_loop_t *loop;	    /* borrowed */
	char dir[256];		    /* the state directory */
	void *db;		    /* sqlite3 *, work-queue threads only */
	struct rvd_spool_job *head; /* queued jobs, FIFO; head is running */
	struct rvd_spool_job *tail;
	struct rvd_capture_rec *recs; /* mirror of the index, loop thread only */
	size_t nrecs, caprecs;
	bool open;
	bool running; /* the head job is on the work queue */
	/* Called on the loop thread after a job changed what the mirror or the
	 * enforcement state shows (a capture stored, moved, purged; a run or a
	 * setting), before the job's own callback.  NULL: nobody listens. */
	void (*changed)(void *ctx);
	void *changed_ctx;
	/* History retention (rvd_spool_set_history): finished rows kept, and
	 * the per-state count of the rows deleted beyond them (the `history`
	 * table, loaded at open; loop thread). */
	uint32_t history_rows;
	bool prune_queued;
	uint64_t retired[RVD_SPOOL_SKIPPED + 1];
};

/* "captured", "pending", … */
const char *rvd_spool_state_name(int state);

/* Whether the state machine allows from → to. */
bool rvd_spool_transition_ok(int from, int to);

void rvd_spool_init(struct rvd_spool *sp, uv_loop_t *loop, const char *state_dir);

/*
 * Opens (creating) <dir>/spool.db and <dir>/captures/, recovers after a
 * crash (removes temporary and unindexed files, uploading → pending) and
 * loads the mirror.  cb(status) on the loop thread.  Returns 0 or -ENOMEM.
 */
int rvd_spool_open(struct rvd_spool *sp, rvd_spool_cb cb, void *data);

/*
 * Stores the sealed capture `fd` (taken: closed by the spool) of `size`
 * bytes described by `meta` (id, state, file, upload_id, trace_id ignored;
 * reservation kept).  A fresh random upload_id is stored with the row.  With fd < 0 a
 * capture-less row is stored in meta's state and reason instead (an anomaly
 * refused by the policy: skipped(reason)).  cb(status, id):
 * status 0 means durable.  Returns 0 or -ENOMEM (fd closed either way).
 */
int rvd_spool_store(struct rvd_spool *sp, int fd, uint64_t size, const struct rvd_capture_rec *meta,
		    rvd_spool_cb cb, void *data);

/* Moves capture `id` to `state` (reason: for skipped; copied).  cb(status):
 * -ENOENT unknown id, -EINVAL transition not allowed. */
int rvd_spool_set_state(struct rvd_spool *sp, uint64_t id, int state, const char *reason,
			rvd_spool_cb cb, void *data);

/* uploading → uploaded, recording the server's `trace_id` (copied) in the
 * same statement; the capture's file is then removed (the row and its
 * summary stay).  cb(status): -ENOENT, -EINVAL as for set_state. */
int rvd_spool_set_uploaded(struct rvd_spool *sp, uint64_t id, const char *trace_id, rvd_spool_cb cb,
			   void *data);

/* Records that the server acknowledged the skip report of skipped row
 * `id`.  cb(status): -ENOENT unknown id, -EINVAL not skipped. */
int rvd_spool_set_skip_reported(struct rvd_spool *sp, uint64_t id, rvd_spool_cb cb, void *data);

/* Purges capture `id` in any state: its row becomes skipped(reason) and
 * its file is removed (fsync'd).  -ENOENT unknown id. */
int rvd_spool_purge(struct rvd_spool *sp, uint64_t id, const char *reason, rvd_spool_cb cb,
		    void *data);

/*
 * Bounds the spool's disk use: while the capture files of all rows (those
 * already being purged not counted) exceed `max_bytes` or `max_files`, the
 * oldest file of a row that is pending or skipped — never one being
 * captured, gated or uploaded — is purged as skipped(reason) (its row
 * kept, its summary dropped as by rvd_spool_purge), and cb(status, id,
 * data) runs for each once durable (the mirrored row still holds its
 * reservation to give back).  Returns how many purges were queued, or
 * -ENOMEM.  Loop thread.
 */
int rvd_spool_evict(struct rvd_spool *sp, uint64_t max_bytes, uint32_t max_files,
		    const char *reason, rvd_spool_cb cb, void *data);

/* Runs fn(arg) on the work queue in the spool's job order (after every job
 * queued before it), then cb(0) on the loop thread.  Everything else that
 * must not run on the loop and must not race the spool (the policy ledger
 * and store) goes through here.  -ENOMEM. */
int rvd_spool_run(struct rvd_spool *sp, void (*fn)(void *arg), void *arg, rvd_spool_cb cb,
		  void *data);

/* Atomically replaces <dir>/<name> with `len` bytes of `value` (tmp, fsync,
 * rename, fsync dir).  For small settings such as the consent level. */
int rvd_spool_write_setting(struct rvd_spool *sp, const char *name, const void *value, size_t len,
			    rvd_spool_cb cb, void *data);

/*
 * History retention: a finished row — uploaded, or skipped, without a
 * file and not being purged — is kept only while it is among the newest
 * `rows` finished rows.  After any job that leaves more, the oldest are
 * deleted in one transaction (a spool job) and counted by (state, reason)
 * in the `history` table, whose per-state sums are mirrored in
 * sp->retired; a skipped row still awaiting its skip report
 * (rvd_spool_awaits_report) goes only after every other finished row.
 * Rows with a file are bounded by rvd_spool_evict, unfinished ones by the
 * flow itself.  The default (after rvd_spool_init) is UINT32_MAX: keep all.
 * Loop thread; takes effect at the next job (or at open).
 */
void rvd_spool_set_history(struct rvd_spool *sp, uint32_t rows);

/* Whether a skipped row's skip report is still due to the fleet server: a
 * policy reason (quota, debounce, campaign…), not the user's consent
 * choices nor the server's own rejections, and not yet acknowledged. */
bool rvd_spool_awaits_report(const struct rvd_capture_rec *rec);

/* Closes the database after every queued job.  cb(0) when done. */
int rvd_spool_close(struct rvd_spool *sp, rvd_spool_cb cb, void *data);

/* Frees the mirror; call after the close callback. */
void rvd_spool_release(struct rvd_spool *sp);

/*
 * Local summaries (a serialized rearview.Summary) kept in the row's
 * `summary` column.  The two functions below use the database directly:
 * call them only from a function run by rvd_spool_run (work queue, spool
 * job order).
 *
 * rvd_spool_get_summary: *buf (caller frees with free()) receives the
 * summary of capture `id`; -ENOENT when the capture has none (or does not
 * exist), -EBADF when the spool is not open, -EIO/-ENOMEM.
 * rvd_spool_put_summary: stores it (replacing any); -ENOENT unknown id.
 * After a successful put, tell the mirror with rvd_spool_note_summary on
 * the loop thread.
 */
int rvd_spool_get_summary(struct rvd_spool *s, uint64_t id, uint8_t **buf, size_t *len);
int rvd_spool_put_summary(struct rvd_spool *s, uint64_t id, const uint8_t *buf, size_t len);

/* Loop thread: marks capture `id` in the mirror as having a summary. */
void rvd_spool_note_summary(struct rvd_spool *sp, uint64_t id);

/* The mirrored record of `id`, or NULL. */
const struct rvd_capture_rec *rvd_spool_find(const struct rvd_spool *sp, uint64_t id);

/* The mirrored record holding policy reservation `reservation` (> 0), or
 * NULL. */
const struct rvd_capture_rec *rvd_spool_find_reservation(const struct rvd_spool *sp,
							 int64_t reservation);

/* Number of captures in `state`. */
unsigned rvd_spool_count(const struct rvd_spool *sp, int state);

#endif
