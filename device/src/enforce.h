/* SPDX-License-Identifier: Apache-2.0 */
/*
 * enforce.h — rearviewd's policy enforcement on top of librvpolicy: the
 * policy store (last good signed document or the built-in default) and the
 * ledger (debounce, weekly and campaign quotas), both in the state
 * directory.
 *
 * Every librvpolicy call here does sqlite work or fsync, so each operation
 * is a job for rvd_spool_run(): the worker half touches the store and the
 * ledger (only ever one job at a time, in order, so no lock is needed), the
 * loop half reads the plain results copied into the job.  The loop thread
 * never dereferences the store or the ledger.
 */
#ifndef RVD_ENFORCE_H
#define RVD_ENFORCE_H

#include <stdbool.h>
#include <stdint.h>

#include "detect.h"

struct rvp_store;
struct rvp_ledger;

/* Detector thresholds of the current policy (0 = keep the configured one). */
struct rvd_thresholds {
	uint32_t jank_frames;
	uint32_t frame_budget_us;
	uint32_t touch_latency_ms;
	int32_t thermal_trip_mc; /* 0: the zones' own trip points (built-in default policy) */
};

struct rvd_enforce {
	char state_dir[256];
	char key_path[256];
	struct rvp_store *store;   /* worker side only; NULL: no key configured */
	struct rvp_ledger *ledger; /* worker side only */
	/* Loop-thread copies, refreshed after every job. */
	struct rvd_thresholds thr;
	uint64_t policy_version;
	uint32_t quota_left;
	/* capture budgets of the policy (0 = none), captures of the week */
	uint32_t device_weekly_captures, app_weekly_captures, captures_week;
	bool open;
};

/* One operation, filled by the loop, run by rvd_enforce_work on a worker. */
enum rvd_enforce_op {
	RVD_ENF_OPEN,	 /* open the store and the ledger */
	RVD_ENF_DECIDE,	 /* the capture and upload decision for one anomaly */
	RVD_ENF_APPLY,	 /* verify and persist a pushed SignedPolicy */
	RVD_ENF_PURGE,	 /* consent lowered: release forbidden reservations */
	RVD_ENF_GET,	 /* the current policy as SignedPolicy bytes */
	RVD_ENF_RELEASE, /* give an unused reservation back */
	RVD_ENF_CLOSE,
};

struct rvd_enforce_job {
	struct rvd_enforce *e;
	enum rvd_enforce_op op;
	int consent; /* ConsentLevel */
	/* DECIDE in */
	struct rvd_anomaly anomaly;
	char app_id[64];
	char item_id[40];
	/* DECIDE out: reason name ("" = capture), reservation (> 0 or 0) */
	char reason[32];
	int64_t reservation;
	struct rvd_selection sel; /* how it was chosen, when a reservation was made */
	/* most-severe selection made room: the reservation of the less severe
	 * pending capture the ledger dropped (0: none), whose capture must not
	 * be uploaded */
	int64_t evicted_reservation;
	/* APPLY in/out: the document (owned, freed by rvd_enforce_job_free) */
	uint8_t *doc;
	size_t len;
	int verify;	/* enum rvp_verify_error, or a negative errno */
	bool unchanged; /* APPLY: the document already in force (verify 0) */
	/* APPLY: how far the device clock was behind the document's issue
	 * time (0: not behind); up to a bound it is forgiven (enforce.c) */
	int64_t clock_behind_s;
	/* GET out: SignedPolicy bytes (owned) */
	uint8_t *out;
	size_t out_len;
	/* any op: 0 or a negative errno */
	int status;
	/* results copied to e by rvd_enforce_done */
	struct rvd_thresholds thr;
	uint64_t policy_version;
	uint32_t quota_left;
	uint32_t device_weekly_captures, app_weekly_captures, captures_week;
	void *data; /* the caller's */
};

void rvd_enforce_init(struct rvd_enforce *e, const char *state_dir, const char *key_path);

/* A zeroed job for `op`, or NULL. */
struct rvd_enforce_job *rvd_enforce_job_new(struct rvd_enforce *e, enum rvd_enforce_op op);
void rvd_enforce_job_free(struct rvd_enforce_job *j);

/* The worker half (for rvd_spool_run): never on the loop thread. */
void rvd_enforce_work(void *job);

/* The loop half: copies thresholds, version and quota into e. */
void rvd_enforce_done(struct rvd_enforce_job *j);

struct Rearview__PolicyBody;

/* The policy being enforced (last good document or the built-in default).
 * Worker side only (inside an rvd_spool_run job); borrowed until the next
 * job. */
const struct Rearview__PolicyBody *rvd_enforce_policy(struct rvd_enforce *e);

/* Human text for an APPLY result: "ok", "bad_signature", … */
const char *rvd_enforce_verify_name(int verify);

#endif
