/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger.c — the crash-safe quota ledger (sqlite3, WAL, synchronous=FULL).
 *
 * Schema (README.md "Ledger"):
 *   uploads(id, item_id, campaign, severity, state, wall_s, boot_id, boot_ns)
 *     state 1 = reserved (decision taken, upload not yet acknowledged),
 *     state 2 = committed (acknowledged; the time columns are the ack time).
 *   captures(id, app, kind, wall_s, boot_id, boot_ns)  — debounce history
 *     and the weekly capture budgets (kept one week).
 *   candidates(id, item_id, campaign, taken, wall_s, boot_id, boot_ns) —
 *     every item that reached the quota, taken or not (kept two weeks):
 *     the seen/taken counts that tell the fleet a quota censored a sample.
 *
 * Invariants:
 *   - quota used = committed rows younger than 7 days + every reserved row;
 *     a reservation is only inserted when used < K, in the same IMMEDIATE
 *     transaction that counted, so K is never exceeded by any interleaving
 *     of decide/commit/release/crash.
 *   - a decision is durable once rvp_ledger_decide returns: its reservation
 *     survives a crash and is listed by rvp_ledger_pending until committed
 *     or released.
 *   - "younger" is ledger_elapsed(): the boot clock within a boot; across
 *     boots the difference of boot epochs kept in
 *     boots(boot_id, epoch_lo, epoch_hi, last_s).  A wall clock set
 *     backwards or forwards never releases quota early, under the clock
 *     assumption of README.md "Elapsed-time rule".
 *   - ids are AUTOINCREMENT: a released reservation id is never reused, so
 *     a stale commit cannot land on another item.
 */
#include "rearview/policy.h"
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

struct rvp_ledger {
	sqlite3 *db;
	struct boot *boots; /* cache of the boots table */
	size_t n_boots;
	int crash_steps; /* test hook: statements left before a "crash" */
	int crashed;
};

enum { ST_RESERVED = 1, ST_COMMITTED = 2 };

static const char schema[] = "CREATE TABLE IF NOT EXISTS uploads("
			     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
			     " item_id TEXT NOT NULL,"
			     " campaign TEXT NOT NULL DEFAULT '',"
			     " severity INTEGER NOT NULL DEFAULT 0,"
			     " mode INTEGER NOT NULL DEFAULT 1,"
			     " state INTEGER NOT NULL,"
			     " wall_s INTEGER NOT NULL,"
			     " boot_id TEXT NOT NULL,"
			     " boot_ns INTEGER NOT NULL);"
			     "CREATE TABLE IF NOT EXISTS captures("
			     " id INTEGER PRIMARY KEY,"
			     " app TEXT NOT NULL,"
			     " kind INTEGER NOT NULL,"
			     " wall_s INTEGER NOT NULL,"
			     " boot_id TEXT NOT NULL,"
			     " boot_ns INTEGER NOT NULL);"
			     "CREATE INDEX IF NOT EXISTS captures_app_kind ON captures(app, kind);"
			     "CREATE TABLE IF NOT EXISTS candidates("
			     " id INTEGER PRIMARY KEY,"
			     " item_id TEXT NOT NULL,"
			     " campaign TEXT NOT NULL,"
			     " taken INTEGER NOT NULL,"
			     " wall_s INTEGER NOT NULL,"
			     " boot_id TEXT NOT NULL,"
			     " boot_ns INTEGER NOT NULL);"
			     "CREATE TABLE IF NOT EXISTS boots("
			     " boot_id TEXT PRIMARY KEY,"
			     " epoch_lo INTEGER NOT NULL,"
			     " epoch_hi INTEGER NOT NULL,"
			     " last_s INTEGER NOT NULL);";

struct boot {
	char id[40];
	int64_t epoch_lo; /* earliest this boot can have started (wall s) */
	int64_t epoch_hi; /* latest estimate of its start seen */
	int64_t last_s;	  /* the latest boot-clock second seen in this boot */
};

/* Counts one write statement against the crash hook. */
static int crash_point(struct rvp_ledger *l)
{
	if (l->crashed)
		return -EIO;
	if (l->crash_steps > 0 && --l->crash_steps == 0) {
		l->crashed = 1;
		return -EIO;
	}
	return 0;
}

static int exec(struct rvp_ledger *l, const char *sql)
{
	int rc = crash_point(l);

	if (rc)
		return rc;
	return rvc_sqlite_errno(sqlite3_exec(l->db, sql, NULL, NULL, NULL));
}

static int begin(struct rvp_ledger *l)
{
	return exec(l, "BEGIN IMMEDIATE");
}

/* Roll back unless the crash hook fired: a dead process rolls back nothing,
 * sqlite does it at the next open. */
static int load_boots(struct rvp_ledger *l);

static void abort_tx(struct rvp_ledger *l)
{
	if (l->crashed)
		return;
	sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
	/* A boot registered in the rolled back transaction is gone again. */
	load_boots(l);
}

static int commit_tx(struct rvp_ledger *l)
{
	int rc = exec(l, "COMMIT");

	if (rc)
		abort_tx(l);
	return rc;
}

static int prepare(struct rvp_ledger *l, const char *sql, sqlite3_stmt **st)
{
	return rvc_sqlite_errno(sqlite3_prepare_v2(l->db, sql, -1, st, NULL));
}

static void bind_time(sqlite3_stmt *st, int first, const struct rvp_time *t)
{
	sqlite3_bind_int64(st, first, t->wall_s);
	sqlite3_bind_text(st, first + 1, t->boot_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, first + 2, (sqlite3_int64)t->boot_ns);
}

static void column_time(sqlite3_stmt *st, int first, struct rvp_time *t)
{
	const unsigned char *b = sqlite3_column_text(st, first + 1);

	t->wall_s = sqlite3_column_int64(st, first);
	snprintf(t->boot_id, sizeof(t->boot_id), "%s", b ? (const char *)b : "");
	t->boot_ns = (uint64_t)sqlite3_column_int64(st, first + 2);
}

/* Run a write statement to completion (and through the crash hook). */
static int step_write(struct rvp_ledger *l, sqlite3_stmt *st)
{
	int rc = crash_point(l);

	if (rc)
		return rc;
	rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc ? rc : SQLITE_ERROR);
}

static int load_boots(struct rvp_ledger *l)
{
	sqlite3_stmt *st;
	int rc = prepare(l, "SELECT boot_id, epoch_lo, epoch_hi, last_s FROM boots", &st);

	l->n_boots = 0;
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		struct boot *b;
		if (l->n_boots % 16 == 0) {
			b = realloc(l->boots, (l->n_boots + 16) * sizeof(*b));
			if (!b) {
				rc = SQLITE_NOMEM;
				break;
			}
			l->boots = b;
		}
		b = &l->boots[l->n_boots++];
		snprintf(b->id, sizeof(b->id), "%s", id ? id : "");
		b->epoch_lo = sqlite3_column_int64(st, 1);
		b->epoch_hi = sqlite3_column_int64(st, 2);
		b->last_s = sqlite3_column_int64(st, 3);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static struct boot *find_boot(struct rvp_ledger *l, const char *id)
{
	if (!id || !*id)
		return NULL;
	for (size_t i = 0; i < l->n_boots; i++)
		if (strcmp(l->boots[i].id, id) == 0)
			return &l->boots[i];
	return NULL;
}

/*
 * Inside a write transaction: place this boot on the wall time line.
 * epoch_lo is fixed at first sight (wall - uptime), pushed forward to the
 * end of every earlier boot; epoch_hi is the latest estimate ever seen;
 * last_s the longest uptime seen.  See ledger_elapsed() for why.
 */
static int note_boot(struct rvp_ledger *l, const struct rvp_time *now)
{
	int64_t boot_s = (int64_t)(now->boot_ns / 1000000000ull);
	int64_t est = now->wall_s - boot_s;
	struct boot *b = find_boot(l, now->boot_id);
	sqlite3_stmt *st;
	int rc;

	if (!now->boot_id[0])
		return 0;
	if (b && b->last_s >= boot_s && b->epoch_hi >= est)
		return 0;
	if (b) {
		int64_t hi = est > b->epoch_hi ? est : b->epoch_hi;
		int64_t last = boot_s > b->last_s ? boot_s : b->last_s;
		rc = prepare(l,
			     "UPDATE boots SET epoch_hi = ?2, last_s = ?3"
			     " WHERE boot_id = ?1",
			     &st);
		if (rc)
			return rc;
		sqlite3_bind_text(st, 1, now->boot_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, hi);
		sqlite3_bind_int64(st, 3, last);
		rc = step_write(l, st);
		sqlite3_finalize(st);
		if (!rc) {
			b->epoch_hi = hi;
			b->last_s = last;
		}
		return rc;
	}
	int64_t lo = est;
	for (size_t i = 0; i < l->n_boots; i++)
		if (l->boots[i].epoch_lo + l->boots[i].last_s > lo)
			lo = l->boots[i].epoch_lo + l->boots[i].last_s;
	rc = prepare(l,
		     "INSERT INTO boots(boot_id, epoch_lo, epoch_hi, last_s)"
		     " VALUES(?1, ?2, ?3, ?4)",
		     &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, now->boot_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, lo > est ? lo : est);
	sqlite3_bind_int64(st, 4, boot_s);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	if (rc)
		return rc;
	return load_boots(l);
}

/*
 * Seconds from `then` to `now`, never more than really passed (under the
 * README's clock assumption).  Same boot: the boot clock.  Across boots:
 * the later boot placed as early as it can have started (epoch_lo: the wall
 * clock at its first call, never before the end of an earlier boot) and the
 * earlier one as late (epoch_hi: the latest wall-clock estimate of its start
 * seen during it).  A wall clock that was behind at boot, or jumped either
 * way while running, therefore only ever makes uploads look younger.
 */
static int64_t ledger_elapsed(struct rvp_ledger *l, const struct rvp_time *then,
			      const struct rvp_time *now)
{
	const struct boot *a, *b;
	int64_t e;

	if (then->boot_id[0] && strcmp(then->boot_id, now->boot_id) == 0)
		return rvp_elapsed_s(then, now);
	a = find_boot(l, then->boot_id);
	b = find_boot(l, now->boot_id);
	if (!a || !b)
		return rvp_elapsed_s(then, now); /* no epochs: clamped wall */
	e = (b->epoch_lo + (int64_t)(now->boot_ns / 1000000000ull)) -
	    (a->epoch_hi + (int64_t)(then->boot_ns / 1000000000ull));
	return e < 0 ? 0 : e;
}

/* BEGIN IMMEDIATE and note the boot; on failure nothing is open. */
static int begin_at(struct rvp_ledger *l, const struct rvp_time *now)
{
	int rc = begin(l);

	if (rc)
		return rc;
	rc = note_boot(l, now);
	if (rc)
		abort_tx(l);
	return rc;
}

int rvp_ledger_new(const char *path, struct rvp_ledger **out)
{
	struct rvp_ledger *l;
	int rc;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	rc = sqlite3_open_v2(path, &l->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			     NULL);
	if (rc != SQLITE_OK) {
		rc = rvc_sqlite_errno(rc);
		goto close_db;
	}
	sqlite3_busy_timeout(l->db, 2000);
	/*
	 * WAL + FULL: a commit is durable when COMMIT returns (the WAL is
	 * fsync'd on every commit).  NORMAL would be atomic but could lose the
	 * last commits on power loss — i.e. forget an acknowledged upload and
	 * let the quota be exceeded.  Commits are rare (a few per week).
	 */
	rc = rvc_sqlite_errno(sqlite3_exec(l->db,
					   "PRAGMA journal_mode=WAL;"
					   "PRAGMA synchronous=FULL;",
					   NULL, NULL, NULL));
	if (!rc)
		rc = rvc_sqlite_errno(sqlite3_exec(l->db, schema, NULL, NULL, NULL));
	if (!rc)
		rc = load_boots(l);
	if (rc)
		goto close_db;
	*out = l;
	return 0;

close_db:
	sqlite3_close_v2(l->db);
	free(l->boots);
	free(l);
	return rc;
}

void rvp_ledger_free(struct rvp_ledger *l)
{
	if (!l)
		return;
	/* All statements are finalized by their users, so close succeeds and
	 * an open transaction (crash hook) is rolled back, like a dead process. */
	sqlite3_close_v2(l->db);
	free(l->boots);
	free(l);
}

void rvp_ledger_crash_after(struct rvp_ledger *l, int steps)
{
	l->crash_steps = steps;
}

/* ---------------------------------------------------------------- debounce */

/* Captures of the rolling week: of app_id (*app) and of every app (*all). */
static int count_captures(struct rvp_ledger *l, const char *app_id, const struct rvp_time *now,
			  uint32_t *app, uint32_t *all)
{
	sqlite3_stmt *st;
	int rc = prepare(l, "SELECT app, wall_s, boot_id, boot_ns FROM captures", &st);

	*app = *all = 0;
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *a = (const char *)sqlite3_column_text(st, 0);
		struct rvp_time t;

		column_time(st, 1, &t);
		if (ledger_elapsed(l, &t, now) >= RVP_WEEK_S)
			continue;
		(*all)++;
		if (app_id && a && strcmp(a, app_id) == 0)
			(*app)++;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

int rvp_ledger_captures_used(struct rvp_ledger *l, const char *app_id, const struct rvp_time *now)
{
	uint32_t app, all;
	int rc = count_captures(l, app_id ? app_id : "", now, &app, &all);

	return rc ? rc : (int)(app_id ? app : all);
}

/* Debounce of (app_id, kind), then the weekly budgets of the app and of the
 * device (0 = none); records the capture when all allow it. */
static int capture_gate(struct rvp_ledger *l, const char *app_id, Rearview__AnomalyKind kind,
			uint32_t max, uint32_t window_s, uint32_t app_week, uint32_t device_week,
			const struct rvp_time *now)
{
	sqlite3_stmt *st = NULL;
	uint32_t recent = 0, used_app = 0, used_all = 0;
	int64_t old[64];
	size_t n_old = 0;
	int rc;

	if (!app_id)
		app_id = "";
	if (max == 0)
		max = RVP_DEFAULT_DEBOUNCE_CAPTURES;
	if (window_s == 0)
		window_s = RVP_DEFAULT_DEBOUNCE_WINDOW_S;
	if (window_s > RVP_WEEK_S)
		window_s = RVP_WEEK_S; /* history is kept one week */
	rc = begin_at(l, now);
	if (rc)
		return rc;
	rc = prepare(l,
		     "SELECT id, wall_s, boot_id, boot_ns FROM captures"
		     " WHERE app = ?1 AND kind = ?2",
		     &st);
	if (rc)
		goto rollback;
	sqlite3_bind_text(st, 1, app_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 2, (int)kind);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvp_time t;
		column_time(st, 1, &t);
		int64_t age = ledger_elapsed(l, &t, now);
		if (age < (int64_t)window_s)
			recent++;
		else if (age >= RVP_WEEK_S && n_old < sizeof(old) / sizeof(old[0]))
			old[n_old++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_DONE) {
		rc = rvc_sqlite_errno(rc);
		goto rollback;
	}
	if (recent >= max) {
		rc = commit_tx(l); /* keeps the boot noted */
		return rc ? rc : RVP_DEBOUNCED;
	}
	if ((app_week || device_week) &&
	    (rc = count_captures(l, app_id, now, &used_app, &used_all)) != 0)
		goto rollback;
	if ((app_week && used_app >= app_week) || (device_week && used_all >= device_week)) {
		rc = commit_tx(l);
		if (rc)
			return rc;
		return app_week && used_app >= app_week ? RVP_APP_BUDGET_EXHAUSTED
							: RVP_DEVICE_BUDGET_EXHAUSTED;
	}
	/* Forget captures a week old: no debounce window is that long. */
	for (size_t i = 0; i < n_old; i++) {
		rc = prepare(l, "DELETE FROM captures WHERE id = ?1", &st);
		if (rc)
			goto rollback;
		sqlite3_bind_int64(st, 1, old[i]);
		rc = step_write(l, st);
		sqlite3_finalize(st);
		if (rc)
			goto rollback;
	}
	rc = prepare(l,
		     "INSERT INTO captures(app, kind, wall_s, boot_id, boot_ns)"
		     " VALUES(?1, ?2, ?3, ?4, ?5)",
		     &st);
	if (rc)
		goto rollback;
	sqlite3_bind_text(st, 1, app_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 2, (int)kind);
	bind_time(st, 3, now);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	if (rc)
		goto rollback;
	rc = commit_tx(l);
	return rc ? rc : RVP_ACCEPTED;

rollback:
	abort_tx(l);
	return rc;
}

int rvp_ledger_debounce(struct rvp_ledger *l, const char *app_id, Rearview__AnomalyKind kind,
			uint32_t max, uint32_t window_s, const struct rvp_time *now)
{
	return capture_gate(l, app_id, kind, max, window_s, 0, 0, now);
}

int rvp_ledger_decide_capture(struct rvp_ledger *l, const Rearview__PolicyBody *policy,
			      rvp_consent consent, const char *app_id, Rearview__AnomalyKind kind,
			      const struct rvp_time *now)
{
	enum rvp_reason why;

	if (!rvp_consent_allows(consent, RVP_ACT_CAPTURE, &why))
		return (int)why;
	if (!policy || (policy->expires_at_s && now->wall_s >= (int64_t)policy->expires_at_s))
		policy = rvp_policy_default();
	return capture_gate(l, app_id, kind, rvp_policy_debounce_captures(policy),
			    rvp_policy_debounce_window_s(policy), policy->app_weekly_captures,
			    policy->device_weekly_captures, now);
}

/* ------------------------------------------------------------------ quota */

struct usage {
	uint32_t total;	   /* committed within the week + reserved */
	uint32_t campaign; /* the same, for one campaign */
	int64_t victim;	   /* least severe reservation below `sev`, or 0 */
	uint32_t victim_sev;
	char victim_item[RVP_MAX_STRING + 1];
	int64_t stale[16]; /* committed rows two weeks old: safe to forget */
	size_t n_stale;
};

static int count_usage(struct rvp_ledger *l, const struct rvp_time *now, const char *campaign,
		       uint32_t sev, struct usage *u)
{
	sqlite3_stmt *st;
	int rc;

	memset(u, 0, sizeof(*u));
	rc = prepare(l,
		     "SELECT id, item_id, campaign, severity, state,"
		     " wall_s, boot_id, boot_ns FROM uploads ORDER BY id",
		     &st);
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvp_time t;
		const char *camp = (const char *)sqlite3_column_text(st, 2);
		uint32_t s = (uint32_t)sqlite3_column_int64(st, 3);
		int state = sqlite3_column_int(st, 4);

		column_time(st, 5, &t);
		if (state == ST_COMMITTED && ledger_elapsed(l, &t, now) >= RVP_WEEK_S) {
			if (ledger_elapsed(l, &t, now) >= 2 * RVP_WEEK_S &&
			    u->n_stale < sizeof(u->stale) / sizeof(u->stale[0]))
				u->stale[u->n_stale++] = sqlite3_column_int64(st, 0);
			continue;
		}
		u->total++;
		if (campaign && *campaign && camp && strcmp(camp, campaign) == 0)
			u->campaign++;
		/* The least severe pending one; among equals the newest goes. */
		if (state == ST_RESERVED && s < sev && (!u->victim || s <= u->victim_sev)) {
			const char *item = (const char *)sqlite3_column_text(st, 1);
			u->victim = sqlite3_column_int64(st, 0);
			u->victim_sev = s;
			snprintf(u->victim_item, sizeof(u->victim_item), "%s", item ? item : "");
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

int rvp_ledger_quota_used(struct rvp_ledger *l, const struct rvp_time *now)
{
	struct usage u;
	int rc = count_usage(l, now, NULL, 0, &u);

	return rc ? rc : (int)u.total;
}

static int delete_row(struct rvp_ledger *l, int64_t id, int only_reserved)
{
	sqlite3_stmt *st;
	int rc = prepare(l,
			 only_reserved ? "DELETE FROM uploads WHERE id = ?1 AND state = 1"
				       : "DELETE FROM uploads WHERE id = ?1",
			 &st);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	if (!rc && sqlite3_changes(l->db) == 0)
		rc = -ENOENT;
	return rc;
}

/* Pick the highest-priority campaign matching ev; *why gets the reason of
 * the best miss (sampled_out beats not_targeted, so the daemon can tell). */
static const Rearview__Campaign *choose_campaign(const Rearview__PolicyBody *p,
						 const struct rvp_event *ev, int64_t now_s,
						 uint64_t seed, enum rvp_reason *why)
{
	const Rearview__Campaign *best = NULL;

	*why = RVP_NOT_TARGETED;
	for (size_t i = 0; i < p->n_campaigns; i++) {
		const Rearview__Campaign *c = p->campaigns[i];
		enum rvp_reason r = rvp_campaign_match(c, ev, now_s, seed);
		if (r == RVP_SAMPLED_OUT)
			*why = RVP_SAMPLED_OUT;
		if (r == RVP_ACCEPTED && (!best || c->priority > best->priority))
			best = c;
	}
	return best;
}

/*
 * Records that ev reached the quota (taken or not) under d->campaign_id and
 * fills d->seen/d->taken with the week's counts of that campaign, this one
 * included.  Rows two weeks old go (a few per call).  Inside the caller's
 * transaction.
 */
static int note_candidate(struct rvp_ledger *l, const struct rvp_event *ev,
			  const struct rvp_time *now, int taken, struct rvp_decision *d)
{
	sqlite3_stmt *st;
	int64_t old[16];
	size_t n_old = 0;
	int rc = prepare(l,
			 "SELECT id, taken, wall_s, boot_id, boot_ns FROM candidates"
			 " WHERE campaign = ?1",
			 &st);

	if (rc)
		return rc;
	d->seen = 1;
	d->taken = taken ? 1 : 0;
	sqlite3_bind_text(st, 1, d->campaign_id, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvp_time t;
		int64_t age;

		column_time(st, 2, &t);
		age = ledger_elapsed(l, &t, now);
		if (age < RVP_WEEK_S) {
			d->seen++;
			d->taken += sqlite3_column_int(st, 1) != 0;
		} else if (age >= 2 * RVP_WEEK_S && n_old < sizeof(old) / sizeof(old[0])) {
			old[n_old++] = sqlite3_column_int64(st, 0);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return rvc_sqlite_errno(rc);
	for (size_t i = 0; i < n_old; i++) {
		if ((rc = prepare(l, "DELETE FROM candidates WHERE id = ?1", &st)) != 0)
			return rc;
		sqlite3_bind_int64(st, 1, old[i]);
		rc = step_write(l, st);
		sqlite3_finalize(st);
		if (rc)
			return rc;
	}
	if ((rc = prepare(l,
			  "INSERT INTO candidates(item_id, campaign, taken, wall_s, boot_id,"
			  " boot_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
			  &st)) != 0)
		return rc;
	sqlite3_bind_text(st, 1, ev->item_id ? ev->item_id : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, d->campaign_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 3, taken ? 1 : 0);
	bind_time(st, 4, now);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	return rc;
}

/* An evicted item no longer counts as taken. */
static int untake_candidate(struct rvp_ledger *l, const char *item_id)
{
	sqlite3_stmt *st;
	int rc = prepare(l, "UPDATE candidates SET taken = 0 WHERE item_id = ?1", &st);

	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, item_id, -1, SQLITE_TRANSIENT);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	return rc;
}

int rvp_ledger_decide(struct rvp_ledger *l, const Rearview__PolicyBody *policy, rvp_consent consent,
		      const struct rvp_event *ev, uint64_t seed, const struct rvp_time *now,
		      struct rvp_decision *d)
{
	const Rearview__Campaign *camp = NULL;
	enum rvp_reason why;
	Rearview__SelectionMode sel;
	struct usage u;
	sqlite3_stmt *st;
	int rc;

	memset(d, 0, sizeof(*d));
	d->mode = REARVIEW__UPLOAD_MODE__UPLOAD_FULL;
	if (!rvp_consent_allows(consent, RVP_ACT_UPLOAD_SUMMARY, &d->reason))
		return 0;
	if (!policy)
		policy = rvp_policy_default();
	if (policy->expires_at_s && now->wall_s >= (int64_t)policy->expires_at_s) {
		/* An expired document no longer speaks for the fleet: its
		 * campaigns are void and the built-in default applies. */
		if (rvp_policy_selection(policy) == REARVIEW__SELECTION_MODE__SELECT_TARGETED) {
			d->reason = RVP_EXPIRED_POLICY;
			return 0;
		}
		policy = rvp_policy_default();
	}
	sel = rvp_policy_selection(policy);
	camp = choose_campaign(policy, ev, now->wall_s, seed, &why);
	if (!camp && sel == REARVIEW__SELECTION_MODE__SELECT_TARGETED) {
		d->reason = why;
		return 0;
	}
	d->probability = 1.0;
	if (camp) {
		snprintf(d->campaign_id, sizeof(d->campaign_id), "%s", camp->id);
		/* Only targeted selection drops what a campaign sampled out:
		 * otherwise such an anomaly goes anyway, without the campaign,
		 * and every anomaly's chance of being taken is 1. */
		if (sel == REARVIEW__SELECTION_MODE__SELECT_TARGETED &&
		    camp->sample_probability > 0 && camp->sample_probability < 1)
			d->probability = camp->sample_probability;
		if (camp->upload_mode != REARVIEW__UPLOAD_MODE__UPLOAD_UNSPECIFIED)
			d->mode = camp->upload_mode;
	}
	if (d->mode == REARVIEW__UPLOAD_MODE__UPLOAD_FULL &&
	    !rvp_consent_allows(consent, RVP_ACT_UPLOAD_FULL, NULL))
		d->mode = REARVIEW__UPLOAD_MODE__UPLOAD_SUMMARY;
	if (d->mode == REARVIEW__UPLOAD_MODE__UPLOAD_FULL &&
	    ev->size_bytes > rvp_policy_max_upload_bytes(policy)) {
		d->reason = RVP_TOO_LARGE;
		return 0;
	}

	rc = begin_at(l, now);
	if (rc)
		return rc;
	rc = count_usage(l, now, d->campaign_id, ev->severity, &u);
	if (rc)
		goto rollback;
	/* Keep the table small: a week past the window, a row is history. */
	for (size_t i = 0; i < u.n_stale; i++) {
		rc = delete_row(l, u.stale[i], 0);
		if (rc)
			goto rollback;
	}
	if (camp && camp->quota && u.campaign >= camp->quota) {
		d->reason = RVP_CAMPAIGN_QUOTA_EXHAUSTED;
		goto refuse;
	}
	d->reason = RVP_ACCEPTED;
	if (u.total >= rvp_policy_weekly_quota(policy)) {
		if (sel != REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE) {
			d->reason = RVP_QUOTA_EXHAUSTED;
			goto refuse;
		}
		/* Only a pending (unacknowledged) item can make room; and
		 * only one, since total >= K exactly when it is full. */
		if (!u.victim || u.total > rvp_policy_weekly_quota(policy)) {
			d->reason = RVP_LESS_SEVERE;
			goto refuse;
		}
		rc = delete_row(l, u.victim, 1);
		if (!rc)
			rc = untake_candidate(l, u.victim_item);
		if (rc)
			goto rollback;
		snprintf(d->evicted_item, sizeof(d->evicted_item), "%s", u.victim_item);
		d->reason = RVP_REPLACED_LESS_SEVERE;
	}
	/* A reservation is inserted only when used < K (after an eviction,
	 * used was exactly K and one pending row went). */
	assert(u.total < rvp_policy_weekly_quota(policy) || d->reason == RVP_REPLACED_LESS_SEVERE);
	assert(!camp || !camp->quota || u.campaign < camp->quota);
	rc = note_candidate(l, ev, now, 1, d);
	if (rc)
		goto rollback;
	rc = prepare(l,
		     "INSERT INTO uploads(item_id, campaign, severity, state,"
		     " wall_s, boot_id, boot_ns, mode)"
		     " VALUES(?1, ?2, ?3, 1, ?4, ?5, ?6, ?7)",
		     &st);
	if (rc)
		goto rollback;
	sqlite3_bind_text(st, 1, ev->item_id ? ev->item_id : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, d->campaign_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, ev->severity);
	bind_time(st, 4, now);
	sqlite3_bind_int(st, 7, (int)d->mode);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	if (rc)
		goto rollback;
	d->reservation = sqlite3_last_insert_rowid(l->db);
	rc = commit_tx(l);
	if (rc) {
		d->reservation = 0;
		d->evicted_item[0] = '\0';
	}
	return rc;

refuse:
	/* The boot note and the refused candidate are all there is to keep. */
	rc = note_candidate(l, ev, now, 0, d);
	if (rc)
		goto rollback;
	return commit_tx(l);
rollback:
	abort_tx(l);
	d->evicted_item[0] = '\0';
	return rc;
}

int rvp_ledger_commit(struct rvp_ledger *l, int64_t reservation, const struct rvp_time *now)
{
	sqlite3_stmt *st;
	int rc = begin_at(l, now);

	if (rc)
		return rc;
	/* The ack time, not the reservation time, starts the 7 days. A second
	 * commit of the same id keeps the first ack time (idempotent). */
	rc = prepare(l,
		     "UPDATE uploads SET state = 2, wall_s = ?2, boot_id = ?3,"
		     " boot_ns = ?4 WHERE id = ?1 AND state = 1",
		     &st);
	if (rc)
		goto rollback;
	sqlite3_bind_int64(st, 1, reservation);
	bind_time(st, 2, now);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	if (rc)
		goto rollback;
	if (sqlite3_changes(l->db) == 0) {
		rc = prepare(l, "SELECT 1 FROM uploads WHERE id = ?1", &st);
		if (rc)
			goto rollback;
		sqlite3_bind_int64(st, 1, reservation);
		rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -ENOENT;
		sqlite3_finalize(st);
		if (rc)
			goto rollback;
	}
	return commit_tx(l);

rollback:
	abort_tx(l);
	return rc;
}

int rvp_ledger_release(struct rvp_ledger *l, int64_t reservation)
{
	int rc = begin(l);

	if (rc)
		return rc;
	rc = delete_row(l, reservation, 1);
	if (rc) {
		abort_tx(l);
		return rc;
	}
	return commit_tx(l);
}

int rvp_ledger_downgrade(struct rvp_ledger *l)
{
	sqlite3_stmt *st;
	int rc = begin(l), n;

	if (rc)
		return rc;
	rc = prepare(l, "UPDATE uploads SET mode = ?1 WHERE state = 1 AND mode = ?2", &st);
	if (rc) {
		abort_tx(l);
		return rc;
	}
	sqlite3_bind_int(st, 1, REARVIEW__UPLOAD_MODE__UPLOAD_SUMMARY);
	sqlite3_bind_int(st, 2, REARVIEW__UPLOAD_MODE__UPLOAD_FULL);
	rc = step_write(l, st);
	sqlite3_finalize(st);
	if (rc) {
		abort_tx(l);
		return rc;
	}
	n = sqlite3_changes(l->db);
	rc = commit_tx(l);
	return rc ? rc : n;
}

int rvp_ledger_purge(struct rvp_ledger *l, rvp_consent level, struct rvp_reserved *out, size_t n)
{
	sqlite3_stmt *st, *del = NULL;
	size_t k = 0;
	int rc = begin(l);

	if (rc)
		return rc;
	rc = prepare(l,
		     "SELECT id, item_id, severity, mode FROM uploads WHERE state = 1 ORDER BY id",
		     &st);
	if (rc)
		goto rollback;
	rc = prepare(l, "DELETE FROM uploads WHERE id = ?1", &del);
	if (rc) {
		sqlite3_finalize(st);
		goto rollback;
	}
	/* Purge in the order of the list; stop when out[] is full so that
	 * every purged reservation is reported (the rest wait for a call). */
	while (k < n && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int mode = sqlite3_column_int(st, 3);
		enum rvp_action act = mode == REARVIEW__UPLOAD_MODE__UPLOAD_FULL
					      ? RVP_ACT_UPLOAD_FULL
					      : RVP_ACT_UPLOAD_SUMMARY;
		const char *item = (const char *)sqlite3_column_text(st, 1);

		if (rvp_consent_allows(level, act, NULL))
			continue;
		out[k].reservation = sqlite3_column_int64(st, 0);
		snprintf(out[k].item_id, sizeof(out[k].item_id), "%s", item ? item : "");
		out[k].severity = (uint32_t)sqlite3_column_int64(st, 2);
		sqlite3_reset(del);
		sqlite3_bind_int64(del, 1, out[k].reservation);
		rc = step_write(l, del);
		if (rc)
			break;
		k++;
	}
	sqlite3_finalize(st);
	sqlite3_finalize(del);
	if (rc < 0 || (rc != 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)) {
		rc = rc < 0 ? rc : rvc_sqlite_errno(rc);
		goto rollback;
	}
	rc = commit_tx(l);
	return rc ? rc : (int)k;

rollback:
	abort_tx(l);
	return rc;
}

int rvp_ledger_pending(struct rvp_ledger *l, struct rvp_reserved *out, size_t n)
{
	sqlite3_stmt *st;
	size_t k = 0;
	int rc = prepare(l,
			 "SELECT id, item_id, severity FROM uploads"
			 " WHERE state = 1 ORDER BY id",
			 &st);

	if (rc)
		return rc;
	while (k < n && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *item = (const char *)sqlite3_column_text(st, 1);
		out[k].reservation = sqlite3_column_int64(st, 0);
		snprintf(out[k].item_id, sizeof(out[k].item_id), "%s", item ? item : "");
		out[k].severity = (uint32_t)sqlite3_column_int64(st, 2);
		k++;
	}
	sqlite3_finalize(st);
	if (k < n && rc != SQLITE_DONE)
		return rvc_sqlite_errno(rc);
	return (int)k;
}
