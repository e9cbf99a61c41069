/* SPDX-License-Identifier: Apache-2.0 */
/*
 * librvpolicy — what may be captured and what may leave the device.
 *
 * Four parts, used by the daemon (enforcement) and the server (authoring):
 *   1. consent levels and the purge decision when the level is lowered;
 *   2. pure rules: version ranges, campaign matching, deterministic sampling;
 *   3. the ledger (sqlite3, WAL): the rolling 7-day upload quota with a
 *      reserve/commit protocol, per-campaign quotas, the capture debounce;
 *   4. signed policy documents: keygen and signing (server), verification
 *      and a crash-safe "last good" store with a built-in default (device).
 *
 * Conventions: every fallible function returns 0 (or a count) or a negative
 * errno.  Time is always passed in by the caller (struct rvp_time) so tests
 * control the clocks; rvp_time_now() reads the real ones.  Every decision
 * carries a named reason (enum rvp_reason, rvp_reason_name()).
 * Nothing here is thread-safe per object: one ledger/store per thread, or a
 * lock around it.  Nothing here blocks on the network; the ledger and the
 * store do fsync, so keep them off a libuv loop thread (uv_queue_work).
 */
#ifndef REARVIEW_POLICY_H
#define REARVIEW_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "rearview/common.pb-c.h"
#include "rearview/policy.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ time */

/*
 * A moment, as two clocks read together.  wall_s is CLOCK_REALTIME (may jump
 * either way); boot_ns is CLOCK_BOOTTIME (never jumps, counts suspend, resets
 * at boot); boot_id names the boot (/proc/sys/kernel/random/boot_id) so the
 * ledger knows when two boot_ns values are comparable.  See README.md
 * "Elapsed-time rule".
 */
struct rvp_time {
	int64_t wall_s;
	uint64_t boot_ns;
	char boot_id[40];
};

/* Fill *t from the real clocks.  0 or -errno. */
int rvp_time_now(struct rvp_time *t);

/*
 * Seconds elapsed from `then` to `now` under the conservative rule: same
 * boot → CLOCK_BOOTTIME difference (wall jumps ignored); different boots →
 * wall difference clamped at 0 (a backward jump never makes a past event
 * look older).  Never negative.
 */
int64_t rvp_elapsed_s(const struct rvp_time *then, const struct rvp_time *now);

/* --------------------------------------------------------------- reasons */

enum rvp_reason {
	RVP_ACCEPTED = 0,
	RVP_CONSENT_OFF,
	RVP_CONSENT_LOCAL_ONLY,
	RVP_CONSENT_SUMMARY_ONLY, /* full trace refused; caller may send a summary */
	RVP_QUOTA_EXHAUSTED,
	RVP_CAMPAIGN_QUOTA_EXHAUSTED,
	RVP_NOT_TARGETED,
	RVP_SAMPLED_OUT,
	RVP_DEBOUNCED,
	RVP_TOO_LARGE,
	RVP_EXPIRED_POLICY,
	RVP_LESS_SEVERE,
	RVP_REPLACED_LESS_SEVERE, /* accepted, and evicted a pending item */
	RVP_CAMPAIGN_NOT_ACTIVE,
	RVP_KIND_NOT_TARGETED,
	RVP_BELOW_MIN_SEVERITY,
	RVP_APP_NOT_TARGETED,
	RVP_VERSION_NOT_TARGETED,
	RVP_DEVICE_NOT_TARGETED,
	RVP_OS_NOT_TARGETED,
	RVP_WAITING_UNMETERED,	     /* not now: the policy wants an unmetered network */
	RVP_APP_BUDGET_EXHAUSTED,    /* the app's weekly capture budget is spent */
	RVP_DEVICE_BUDGET_EXHAUSTED, /* the device's weekly capture budget is spent */
	RVP_REASON_COUNT_
};

/* Stable snake_case name ("quota_exhausted"); "unknown" out of range. */
const char *rvp_reason_name(enum rvp_reason r);

/* --------------------------------------------------------------- consent */

typedef Rearview__ConsentLevel rvp_consent;

enum rvp_action {
	RVP_ACT_CAPTURE = 1,	    /* freeze a buffer and keep it locally */
	RVP_ACT_UPLOAD_SUMMARY = 2, /* summaries / signature statistics */
	RVP_ACT_UPLOAD_FULL = 3,    /* the trace itself */
};

/*
 * Does `level` allow `action`?  Returns 1/0 and sets *why (may be NULL) to
 * RVP_ACCEPTED or the refusing reason.  UNSPECIFIED is treated as OFF.
 */
int rvp_consent_allows(rvp_consent level, enum rvp_action action, enum rvp_reason *why);

/* A capture waiting on the device, as the purge decision sees it. */
struct rvp_pending {
	const char *item_id;	/* borrowed */
	enum rvp_action action; /* what it is waiting to do: keep/upload */
};

/*
 * The consent level was lowered to `level`: write into purge[] (room for n)
 * the indexes of items[] that the new level forbids — all of them at OFF,
 * every upload at LOCAL, full uploads at SUMMARY.  Returns the count.
 */
size_t rvp_consent_purge(rvp_consent level, const struct rvp_pending *items, size_t n,
			 size_t *purge);

/* ----------------------------------------------------------------- rules */

/*
 * Dotted numeric version comparison: "4.10" > "4.9", "4.2" == "4.2.0".
 * Non-numeric components compare as strings; NULL/"" sort first.
 * Returns <0, 0, >0.
 */
int rvp_version_cmp(const char *a, const char *b);

/* What is known about one anomaly when deciding (all strings borrowed). */
struct rvp_event {
	const char *item_id; /* unique per capture; seeds sampling */
	const char *app_id;  /* executable / package id */
	const char *app_version;
	const char *device_model;
	const char *os_build;
	Rearview__AnomalyKind kind;
	uint32_t severity;   /* 0..100 */
	uint64_t size_bytes; /* the upload's size, 0 if unknown */
};

/*
 * Deterministic sampling: 1 if hash(seed, campaign_id, item_id) falls below
 * p.  p <= 0 (unset in proto3) and p >= 1 mean "always"; NaN means never.
 */
int rvp_sample(double p, uint64_t seed, const char *campaign_id, const char *item_id);

/*
 * Does campaign c target ev at wall time now_s (validity window, apps,
 * versions, models, builds, kinds, severity, sampling)?  0 = match, else the
 * first reason it does not (RVP_CAMPAIGN_NOT_ACTIVE, RVP_APP_NOT_TARGETED,
 * …, RVP_SAMPLED_OUT).  App ids, device models and OS builds are fnmatch
 * patterns (a plain string matches itself).  Empty lists match everything.
 */
enum rvp_reason rvp_campaign_match(const Rearview__Campaign *c, const struct rvp_event *ev,
				   int64_t now_s, uint64_t seed);

/*
 * Upload conditions of the policy right now: 1 if an upload may start
 * (else 0 with *why = RVP_WAITING_UNMETERED: keep it pending and retry when
 * the network changes).  `metered` is what the daemon knows of the network.
 */
int rvp_upload_conditions_ok(const Rearview__PolicyBody *b, int metered, enum rvp_reason *why);

/*
 * Does a campaign's signature model match one call chain (outer frame
 * first, n frames, borrowed) that lasted duration_ns?  The model's methods
 * are fnmatch patterns that must appear in the chain in that order (other
 * frames may sit between them), and duration_ns >= min_duration_ns.  A model
 * without methods matches nothing.  Returns 1/0.
 */
int rvp_signature_match(const Rearview__SignatureModel *m, const char *const *chain, size_t n,
			uint64_t duration_ns);

/* ---------------------------------------------------------------- policy */

/* Limits on documents: bigger ones are refused before parsing. */
#define RVP_MAX_DOCUMENT_BYTES (256u * 1024u)
#define RVP_MAX_CAMPAIGNS      256u
#define RVP_MAX_LIST	       256u /* per repeated field of a campaign */
#define RVP_MAX_STRING	       256u

/* Built-in defaults (no document ever received, or the last one expired). */
#define RVP_DEFAULT_WEEKLY_QUOTA      3u
#define RVP_DEFAULT_DEBOUNCE_CAPTURES 3u
#define RVP_DEFAULT_DEBOUNCE_WINDOW_S 600u
#define RVP_DEFAULT_JANK_FRAMES	      3u
#define RVP_DEFAULT_FRAME_BUDGET_US   16667u
#define RVP_DEFAULT_TOUCH_LATENCY_MS  400u
#define RVP_DEFAULT_THERMAL_TRIP_MC   85000
#define RVP_DEFAULT_MAX_UPLOAD_BYTES  (64ull * 1024 * 1024)

/*
 * The built-in default body (version 0, never expires).  Static storage:
 * never free it.
 */
const Rearview__PolicyBody *rvp_policy_default(void);

/*
 * Structural checks of a decoded body beyond what protobuf-c does: list and
 * string sizes, probabilities in range, version ranges well formed.  0 or
 * -EINVAL.
 */
int rvp_policy_validate(const Rearview__PolicyBody *b);

/* Quota, selection, debounce of a body with zero fields replaced by the
 * built-in defaults. */
uint32_t rvp_policy_weekly_quota(const Rearview__PolicyBody *b);
Rearview__SelectionMode rvp_policy_selection(const Rearview__PolicyBody *b);
uint32_t rvp_policy_debounce_captures(const Rearview__PolicyBody *b);
uint32_t rvp_policy_debounce_window_s(const Rearview__PolicyBody *b);
uint64_t rvp_policy_max_upload_bytes(const Rearview__PolicyBody *b);

/* ---------------------------------------------------------------- ledger */

struct rvp_ledger;

#define RVP_WEEK_S (7 * 24 * 3600)

/*
 * Open (creating) the ledger database at path: WAL, synchronous=FULL.
 * *out is freed with rvp_ledger_free.  0 or -errno (-EIO for sqlite errors).
 */
int rvp_ledger_new(const char *path, struct rvp_ledger **out);
/* Close; an open (crashed) transaction is rolled back.  NULL is a no-op. */
void rvp_ledger_free(struct rvp_ledger *l);

/*
 * Capture debounce for (app_id, kind): if fewer than max captures were
 * recorded within window_s of now, record this one and return RVP_ACCEPTED,
 * else RVP_DEBOUNCED.  Negative errno on storage errors.
 */
int rvp_ledger_debounce(struct rvp_ledger *l, const char *app_id, Rearview__AnomalyKind kind,
			uint32_t max, uint32_t window_s, const struct rvp_time *now);

/*
 * The capture decision for an anomaly of `kind` in `app_id`: consent (OFF →
 * RVP_CONSENT_OFF: skip, do not queue), then the policy's debounce (the
 * built-in default when policy is NULL), then its weekly capture budgets:
 * app_weekly_captures of this app (RVP_APP_BUDGET_EXHAUSTED) and
 * device_weekly_captures across every app (RVP_DEVICE_BUDGET_EXHAUSTED),
 * each over the rolling 7 days, 0 = none.  Returns the reason (RVP_ACCEPTED
 * = capture; the capture is then recorded) or -errno.
 */
int rvp_ledger_decide_capture(struct rvp_ledger *l, const Rearview__PolicyBody *policy,
			      rvp_consent consent, const char *app_id, Rearview__AnomalyKind kind,
			      const struct rvp_time *now);

/*
 * Captures recorded in the rolling 7 days: of app_id (NULL: of every app).
 * Count or -errno.
 */
int rvp_ledger_captures_used(struct rvp_ledger *l, const char *app_id, const struct rvp_time *now);

/* The result of an upload decision. */
struct rvp_decision {
	enum rvp_reason reason;		       /* RVP_ACCEPTED/RVP_REPLACED_LESS_SEVERE = go */
	Rearview__UploadMode mode;	       /* FULL, SUMMARY or SIGNATURE_STATS */
	int64_t reservation;		       /* > 0 when accepted: commit or release it */
	char campaign_id[RVP_MAX_STRING + 1];  /* "" when no campaign */
	char evicted_item[RVP_MAX_STRING + 1]; /* most-severe: drop this one */
	/*
	 * How the item was chosen, for the fleet's weights (accepted only):
	 * the probability that the campaign's sampling let it through (its
	 * sample_probability under TARGETED selection; 1 otherwise, since an
	 * anomaly a campaign sampled out is then taken without it), and the candidates of the
	 * campaign ("" = those without one) that reached the quota in the rolling 7 days as of this
	 * decision, this one included: seen, and taken (reserved or
	 * uploaded, evicted ones not).  taken < seen: a quota refused some,
	 * so 1/probability undercounts and the weight is censored.
	 */
	double probability;
	uint32_t seen;
	uint32_t taken;
};

/*
 * Decide whether ev may be uploaded, and if so reserve quota for it.
 *
 * Order of rules: consent (off/local), policy expiry (an expired document is
 * replaced by the built-in default; TARGETED then refuses with
 * RVP_EXPIRED_POLICY), campaign choice (highest priority matching campaign),
 * selection (TARGETED needs a campaign), consent vs mode (SUMMARY consent
 * downgrades FULL to SUMMARY), size (FULL over max_upload_bytes → TOO_LARGE),
 * campaign quota, weekly quota (FIRST_N → QUOTA_EXHAUSTED; MOST_SEVERE evicts
 * the least severe pending reservation below ev's severity, else
 * LESS_SEVERE).  The reservation and any eviction are one transaction.
 *
 * Returns 0 with *d filled (whatever the reason) or -errno.
 */
int rvp_ledger_decide(struct rvp_ledger *l, const Rearview__PolicyBody *policy, rvp_consent consent,
		      const struct rvp_event *ev, uint64_t seed, const struct rvp_time *now,
		      struct rvp_decision *d);

/*
 * The upload of `reservation` was acknowledged by the server: it now counts
 * as uploaded at `now`.  Idempotent.  -ENOENT if unknown (released).
 */
int rvp_ledger_commit(struct rvp_ledger *l, int64_t reservation, const struct rvp_time *now);
/* Give the reservation back (upload abandoned, item purged).  -ENOENT. */
int rvp_ledger_release(struct rvp_ledger *l, int64_t reservation);

/* A reservation not yet committed (survives crashes). */
struct rvp_reserved {
	int64_t reservation;
	char item_id[RVP_MAX_STRING + 1];
	uint32_t severity;
};
/* List up to n pending reservations, oldest first.  Count or -errno. */
int rvp_ledger_pending(struct rvp_ledger *l, struct rvp_reserved *out, size_t n);
/*
 * Consent was lowered to `level`: release, in one transaction, every pending
 * reservation whose upload mode the level forbids (all at OFF/LOCAL, FULL
 * ones at SUMMARY) and list them in out[] (at most n; call again while it
 * returns n).  The caller deletes those items.  Count or -errno.
 */
int rvp_ledger_purge(struct rvp_ledger *l, rvp_consent level, struct rvp_reserved *out, size_t n);

/*
 * Consent was lowered to SUMMARY: every pending FULL reservation becomes a
 * SUMMARY one (the capture goes as its summary, still counted against the
 * quota) instead of being released by rvp_ledger_purge.  Returns how many
 * were downgraded, or -errno.  Call before rvp_ledger_purge.
 */
int rvp_ledger_downgrade(struct rvp_ledger *l);

/* Uploads committed within the last 7 days plus pending ones. */
int rvp_ledger_quota_used(struct rvp_ledger *l, const struct rvp_time *now);

/*
 * Test hook: the next write transaction stops after `steps` statements
 * without COMMIT and fails with -EIO, as if the process died there; the
 * caller must then rvp_ledger_free() it (rolls back) and reopen.  0 = off.
 */
void rvp_ledger_crash_after(struct rvp_ledger *l, int steps);

/* ------------------------------------------------------ signed documents */

enum rvp_verify_error {
	RVP_VERIFY_OK = 0,
	RVP_VERIFY_OVERSIZED,
	RVP_VERIFY_MALFORMED, /* envelope or body does not decode */
	RVP_VERIFY_UNSIGNED,
	RVP_VERIFY_BAD_ALGORITHM,
	RVP_VERIFY_WRONG_KEY, /* key_id missing or names another key */
	RVP_VERIFY_BAD_SIGNATURE,
	RVP_VERIFY_INVALID_BODY, /* decoded but fails rvp_policy_validate */
	RVP_VERIFY_ROLLBACK,	 /* version <= the last accepted */
	RVP_VERIFY_EXPIRED,
	RVP_VERIFY_NOT_YET_VALID,
	RVP_VERIFY_COUNT_
};
const char *rvp_verify_error_name(enum rvp_verify_error e);

#define RVP_ALGORITHM "ecdsa-p256-sha256"

/*
 * Server side: a new P-256 key pair as PEM (SEC1 private, SPKI public).
 * Both buffers are malloc'd; caller frees.  0 or -errno.
 */
int rvp_keygen(char **priv_pem, char **pub_pem);

/*
 * Key id: lowercase hex of the first 8 bytes of SHA-256(public key DER).
 * pem is either key.  out must hold 17 bytes.  0, -EINVAL or -ENOMEM.
 */
int rvp_key_id(const char *pem, char out[17]);

/*
 * Server side: serialize body, sign it with priv_pem and wrap it into a
 * SignedPolicy.  *out is malloc'd (caller frees), *out_len its size.
 */
int rvp_policy_sign(const Rearview__PolicyBody *body, const char *priv_pem, uint8_t **out,
		    size_t *out_len);

/*
 * Sign already-serialized body bytes as they are (no validation: the server
 * uses rvp_policy_sign; tests use this to send hostile bodies).  Same
 * output and errors as rvp_policy_sign.
 */
int rvp_policy_sign_raw(const uint8_t *body, size_t body_len, const char *priv_pem, uint8_t **out,
			size_t *out_len);

/*
 * Device side: check a SignedPolicy against pub_pem.  Rejects documents
 * bigger than RVP_MAX_DOCUMENT_BYTES, malformed, unsigned, of another
 * algorithm or key, with a bad signature, an invalid body, a version <=
 * min_version (pass the last accepted version; 0 accepts any >= 1), expired
 * (expires_at_s != 0 and <= now_s) or not yet valid (issued_at_s > now_s +
 * 300 s of clock skew).  On success *body_out (may be NULL) receives the
 * decoded body: free with rearview__policy_body__free_unpacked(b, NULL).
 * Returns the enum (0 = ok); a negative errno only for allocation failure.
 */
int rvp_policy_verify(const uint8_t *doc, size_t len, const char *pub_pem, uint64_t min_version,
		      int64_t now_s, Rearview__PolicyBody **body_out);

/* The device's policy: last good document, or the built-in default. */
struct rvp_store;

/*
 * Open the store kept in directory dir (files "policy.signed" and
 * "policy.version", the highest version ever accepted), trusting pub_pem
 * (copied).  A stored document is re-verified (signature and body; not
 * expiry) and ignored if it fails; the version floor survives that, so
 * older documents stay refused.  *out freed with rvp_store_free.
 * Returns 0, -EINVAL (no dir, or pub_pem is not a P-256 key),
 * -ENAMETOOLONG, or -ENOMEM (also when it strikes while reading the stored
 * files: out of memory is never taken for a missing document).
 */
int rvp_store_new(const char *dir, const char *pub_pem, struct rvp_store **out);
void rvp_store_free(struct rvp_store *s);

/*
 * Verify a newly fetched document and, if good, persist it atomically
 * (temp file, fsync, rename, fsync dir) and make it current.  Returns the
 * rvp_verify_error (0 = applied; the previous one stays otherwise) or -errno
 * for storage failure (the previous one stays).
 */
int rvp_store_apply(struct rvp_store *s, const uint8_t *doc, size_t len, int64_t now_s);

/*
 * The policy to enforce at now_s: the last good document unless it expired,
 * else the built-in default.  *expired (may be NULL) is set to 1 when a
 * document exists but has expired.  Borrowed: valid until the next apply or
 * free.
 */
const Rearview__PolicyBody *rvp_store_current(const struct rvp_store *s, int64_t now_s,
					      int *expired);
/* Version of the last good document, 0 when none. */
uint64_t rvp_store_version(const struct rvp_store *s);

#ifdef __cplusplus
}
#endif

#endif
