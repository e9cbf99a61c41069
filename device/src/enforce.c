/* SPDX-License-Identifier: Apache-2.0 */
/*
 * enforce.c — policy enforcement jobs (see enforce.h).
 *
 * Invariants: the rvp_store and rvp_ledger are only touched by
 * rvd_enforce_work, which the spool runs one job at a time; a job's results
 * are plain copies, so the loop half never reads library objects.  A
 * decision's reservation stays pending in the ledger until the upload is
 * acknowledged (or the capture is purged), so pending captures count
 * against the weekly quota across restarts.
 */
#include "enforce.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rearview/common.h"
#include "rearview/policy.h"
#include "rearview/policy.pb-c.h"
#include "rearview/upload.pb-c.h"

#define RVD_KEY_MAX (16u * 1024u)
/* Pending reservations looked at to map an evicted item (most-severe
 * selection) to its capture: more than a week's quota is never pending. */
#define RVD_PENDING_MAX 1024
/* A device clock up to this far behind a policy's issue time (no RTC
 * battery, NTP not yet synced) still takes it: verified as of its issue
 * time, signature and all; further behind, it is refused not_yet_valid. */
#define RVD_CLOCK_BEHIND_MAX_S (7 * 24 * 3600)

void rvd_enforce_init(struct rvd_enforce *e, const char *state_dir, const char *key_path)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->state_dir, sizeof(e->state_dir), "%s", state_dir);
	snprintf(e->key_path, sizeof(e->key_path), "%s", key_path ? key_path : "");
	e->quota_left = RVP_DEFAULT_WEEKLY_QUOTA;
}

struct rvd_enforce_job *rvd_enforce_job_new(struct rvd_enforce *e, enum rvd_enforce_op op)
{
	struct rvd_enforce_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->e = e;
	j->op = op;
	return j;
}

void rvd_enforce_job_free(struct rvd_enforce_job *j)
{
	if (!j)
		return;
	free(j->doc);
	free(j->out);
	free(j);
}

/* Reads a whole small file (at most max bytes) NUL-terminated. */
static int read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		rc = -EFBIG;
		goto close_fd;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto close_fd;
	}
	if ((rc = rvc_read_all(fd, buf, (size_t)st.st_size)) < 0) {
		free(buf);
		goto close_fd;
	}
	buf[st.st_size] = '\0';
	*out = buf;
	*len = (size_t)st.st_size;
close_fd:
	close(fd);
	return rc;
}

static const Rearview__PolicyBody *current(struct rvd_enforce *e, const struct rvp_time *now)
{
	return e->store ? rvp_store_current(e->store, now->wall_s, NULL) : rvp_policy_default();
}

const struct Rearview__PolicyBody *rvd_enforce_policy(struct rvd_enforce *e)
{
	struct rvp_time now;

	if (rvp_time_now(&now) < 0)
		now.wall_s = time(NULL);
	return current(e, &now);
}

/* Results every job reports back: thresholds, version, quota left. */
static void snapshot(struct rvd_enforce_job *j, const struct rvp_time *now)
{
	struct rvd_enforce *e = j->e;
	const Rearview__PolicyBody *b = current(e, now);
	uint32_t quota = rvp_policy_weekly_quota(b);
	int used;

	if (b->thresholds) {
		j->thr.jank_frames = b->thresholds->jank_frames;
		j->thr.frame_budget_us = b->thresholds->frame_budget_us;
		j->thr.touch_latency_ms = b->thresholds->touch_latency_ms;
		/* The built-in default's trip (version 0) would override every
		 * device's own trip points; only a distributed policy does. */
		j->thr.thermal_trip_mc = b->version ? b->thresholds->thermal_trip_mc : 0;
	}
	j->policy_version = e->store ? rvp_store_version(e->store) : 0;
	used = e->ledger ? rvp_ledger_quota_used(e->ledger, now) : 0;
	j->quota_left = used < 0 ? 0 : (uint32_t)used >= quota ? 0 : quota - (uint32_t)used;
	j->device_weekly_captures = b->device_weekly_captures;
	j->app_weekly_captures = b->app_weekly_captures;
	used = e->ledger ? rvp_ledger_captures_used(e->ledger, NULL, now) : 0;
	j->captures_week = used < 0 ? 0 : (uint32_t)used;
}

static int work_open(struct rvd_enforce *e)
{
	char path[300];
	uint8_t *pem = NULL;
	size_t len;
	int rc;

	if (e->key_path[0]) {
		if ((rc = read_file(e->key_path, RVD_KEY_MAX, &pem, &len)) < 0) {
			rvd_err("policy key %s: %s", e->key_path, strerror(-rc));
			return rc;
		}
		rc = rvp_store_new(e->state_dir, (const char *)pem, &e->store);
		free(pem);
		if (rc < 0) {
			rvd_err("policy store in %s: %s", e->state_dir, strerror(-rc));
			return rc;
		}
	}
	snprintf(path, sizeof(path), "%s/ledger.db", e->state_dir);
	if ((rc = rvp_ledger_new(path, &e->ledger)) < 0) {
		rvd_err("policy ledger %s: %s", path, strerror(-rc));
		return rc;
	}
	return 0;
}

static int work_decide(struct rvd_enforce_job *j, const struct rvp_time *now)
{
	struct rvd_enforce *e = j->e;
	const Rearview__PolicyBody *b = current(e, now);
	Rearview__AnomalyKind kind = (Rearview__AnomalyKind)j->anomaly.kind;
	struct rvp_event ev = {0};
	struct rvp_decision dec;
	struct rvp_reserved *pend;
	int rc, npend;

	rc = rvp_ledger_decide_capture(e->ledger, b, (rvp_consent)j->consent, j->app_id, kind, now);
	if (rc < 0)
		return rc;
	if (rc != RVP_ACCEPTED) {
		snprintf(j->reason, sizeof(j->reason), "%s", rvp_reason_name((enum rvp_reason)rc));
		return 0;
	}
	/* Local consent keeps the capture on the device: no upload to decide. */
	if (j->consent < REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY)
		return 0;
	ev.item_id = j->item_id;
	ev.app_id = j->app_id;
	ev.kind = kind;
	ev.severity = j->anomaly.severity > 100 ? 100 : j->anomaly.severity;
	/* The ledger names an evicted item by its item id and deletes its
	 * reservation; the spool knows captures by reservation, so note which
	 * reservation each pending item holds first. */
	pend = calloc(RVD_PENDING_MAX, sizeof(*pend));
	npend = pend ? rvp_ledger_pending(e->ledger, pend, RVD_PENDING_MAX) : -ENOMEM;
	rc = rvp_ledger_decide(e->ledger, b, (rvp_consent)j->consent, &ev, 0, now, &dec);
	if (rc == 0 && dec.reason == RVP_REPLACED_LESS_SEVERE && dec.evicted_item[0]) {
		for (int i = 0; i < npend; i++)
			if (!strcmp(pend[i].item_id, dec.evicted_item))
				j->evicted_reservation = pend[i].reservation;
		if (!j->evicted_reservation)
			rvd_warn("policy: evicted item %s not among the pending ones",
				 dec.evicted_item);
	}
	free(pend);
	if (rc < 0)
		return rc;
	if (dec.reason != RVP_ACCEPTED && dec.reason != RVP_REPLACED_LESS_SEVERE) {
		snprintf(j->reason, sizeof(j->reason), "%s", rvp_reason_name(dec.reason));
		return 0;
	}
	j->reservation = dec.reservation;
	snprintf(j->sel.campaign, sizeof(j->sel.campaign), "%.128s", dec.campaign_id);
	j->sel.probability = dec.probability;
	j->sel.seen = dec.seen;
	j->sel.taken = dec.taken;
	/* A quota refused candidates of the week: 1/p undercounts them. */
	if (dec.taken >= dec.seen)
		j->sel.kind = REARVIEW__SELECTION_KIND__SELECTION_SAMPLED;
	else if (rvp_policy_selection(b) == REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE)
		j->sel.kind = REARVIEW__SELECTION_KIND__SELECTION_MOST_SEVERE;
	else
		j->sel.kind = REARVIEW__SELECTION_KIND__SELECTION_FIRST_N;
	return 0;
}

static int work_purge(struct rvd_enforce_job *j)
{
	struct rvp_reserved out[32];
	int n, total = 0;

	/* full → summary: pending captures go as their summaries (issue 18
	 * item 12: they were discarded), still charged to the quota. */
	if (j->consent == REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY &&
	    (n = rvp_ledger_downgrade(j->e->ledger)) < 0)
		return n;

	do {
		n = rvp_ledger_purge(j->e->ledger, (rvp_consent)j->consent, out, 32);
		if (n < 0)
			return n;
		total += n;
	} while (n == 32);
	return total;
}

/* True when `doc` is byte for byte the document in force: fetched again
 * (every start fetches), it is neither new nor a rollback. */
static bool same_as_stored(struct rvd_enforce *e, const uint8_t *doc, size_t len)
{
	char path[300];
	uint8_t *cur = NULL;
	size_t cur_len = 0;
	bool same;

	if (rvp_store_version(e->store) == 0)
		return false;
	snprintf(path, sizeof(path), "%s/policy.signed", e->state_dir);
	if (read_file(path, RVP_MAX_DOCUMENT_BYTES, &cur, &cur_len) < 0)
		return false;
	same = cur_len == len && !memcmp(cur, doc, len);
	free(cur);
	return same;
}

/* The issue time a document claims, read before its signature is checked:
 * only ever used to pick the time it is verified at.  0 when unreadable. */
static int64_t claimed_issue_time(const uint8_t *doc, size_t len)
{
	Rearview__SignedPolicy *env = rearview__signed_policy__unpack(NULL, len, doc);
	Rearview__PolicyBody *body;
	int64_t t = 0;

	if (!env)
		return 0;
	body = rearview__policy_body__unpack(NULL, env->body.len, env->body.data);
	if (body && body->issued_at_s <= INT64_MAX)
		t = (int64_t)body->issued_at_s;
	rearview__policy_body__free_unpacked(body, NULL);
	rearview__signed_policy__free_unpacked(env, NULL);
	return t;
}

/* Applies j->doc; a clock behind its issue time by at most
 * RVD_CLOCK_BEHIND_MAX_S is forgiven (j->clock_behind_s tells by how
 * much, also when it is not). */
static void work_apply(struct rvd_enforce_job *j, const struct rvp_time *now)
{
	struct rvd_enforce *e = j->e;
	int64_t issued;

	if (!e->store) {
		j->verify = -ENOKEY;
		return;
	}
	if (same_as_stored(e, j->doc, j->len)) {
		j->verify = 0;
		j->unchanged = true;
		return;
	}
	j->verify = rvp_store_apply(e->store, j->doc, j->len, now->wall_s);
	if (j->verify != RVP_VERIFY_NOT_YET_VALID)
		return;
	issued = claimed_issue_time(j->doc, j->len);
	if (issued <= now->wall_s)
		return;
	j->clock_behind_s = issued - now->wall_s;
	if (j->clock_behind_s <= RVD_CLOCK_BEHIND_MAX_S)
		j->verify = rvp_store_apply(e->store, j->doc, j->len, issued);
}

static int work_get(struct rvd_enforce_job *j, const struct rvp_time *now)
{
	Rearview__SignedPolicy sp = REARVIEW__SIGNED_POLICY__INIT;
	const Rearview__PolicyBody *b;
	char path[300];
	size_t len;
	int rc;

	if (j->e->store && rvp_store_version(j->e->store) > 0) {
		snprintf(path, sizeof(path), "%s/policy.signed", j->e->state_dir);
		rc = read_file(path, RVP_MAX_DOCUMENT_BYTES, &j->out, &j->out_len);
		if (rc != -ENOENT)
			return rc;
	}
	/* The built-in default: an unsigned envelope around the default body. */
	b = current(j->e, now);
	len = rearview__policy_body__get_packed_size(b);
	sp.body.data = malloc(len ? len : 1);
	if (!sp.body.data)
		return -ENOMEM;
	sp.body.len = rearview__policy_body__pack(b, sp.body.data);
	j->out_len = rearview__signed_policy__get_packed_size(&sp);
	j->out = malloc(j->out_len ? j->out_len : 1);
	if (!j->out) {
		free(sp.body.data);
		return -ENOMEM;
	}
	rearview__signed_policy__pack(&sp, j->out);
	free(sp.body.data);
	return 0;
}

void rvd_enforce_work(void *arg)
{
	struct rvd_enforce_job *j = arg;
	struct rvd_enforce *e = j->e;
	struct rvp_time now;

	if ((j->status = rvp_time_now(&now)) < 0)
		return;
	switch (j->op) {
	case RVD_ENF_OPEN:
		j->status = work_open(e);
		break;
	case RVD_ENF_DECIDE:
		j->status = e->ledger ? work_decide(j, &now) : -EBADF;
		break;
	case RVD_ENF_APPLY:
		work_apply(j, &now);
		break;
	case RVD_ENF_RELEASE:
		j->status = e->ledger ? rvp_ledger_release(e->ledger, j->reservation) : -EBADF;
		if (j->status == -ENOENT)
			j->status = 0;
		break;
	case RVD_ENF_PURGE:
		j->status = e->ledger ? work_purge(j) : -EBADF;
		break;
	case RVD_ENF_GET:
		j->status = work_get(j, &now);
		break;
	case RVD_ENF_CLOSE:
		rvp_store_free(e->store);
		e->store = NULL;
		rvp_ledger_free(e->ledger);
		e->ledger = NULL;
		return;
	}
	snapshot(j, &now);
}

void rvd_enforce_done(struct rvd_enforce_job *j)
{
	struct rvd_enforce *e = j->e;

	if (j->op == RVD_ENF_CLOSE) {
		e->open = false;
		return;
	}
	if (j->op == RVD_ENF_OPEN)
		e->open = j->status == 0;
	e->thr = j->thr;
	e->policy_version = j->policy_version;
	e->quota_left = j->quota_left;
	e->device_weekly_captures = j->device_weekly_captures;
	e->app_weekly_captures = j->app_weekly_captures;
	e->captures_week = j->captures_week;
	/* A device whose clock is behind must say so, taken or not: otherwise
	 * campaigns never reach it and nothing tells why. */
	if (j->op == RVD_ENF_APPLY && j->clock_behind_s > 0)
		rvd_warn("policy: the device clock is %" PRId64 " s behind the document's issue "
			 "time: %s (the bound is %d s)",
			 j->clock_behind_s,
			 j->verify == 0 ? "taken, verified as of its issue time"
					: "refused as not yet valid",
			 RVD_CLOCK_BEHIND_MAX_S);
}

const char *rvd_enforce_verify_name(int verify)
{
	if (verify == -ENOKEY)
		return "no policy public key configured";
	if (verify < 0)
		return strerror(-verify);
	return rvp_verify_error_name((enum rvp_verify_error)verify);
}
