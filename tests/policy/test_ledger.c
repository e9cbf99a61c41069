/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ledger.c — the quota ledger and the debounce (sqlite3): table-driven
 * rules, wall clock jumps both ways (within a boot and across reboots), the
 * selection modes, and a randomized run of thousands of event sequences with
 * simulated crashes asserting the quota is never exceeded (in true time) and
 * no decision is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "rearview/policy.h"

#define DAY   (24 * 3600)
#define FULL  REARVIEW__CONSENT_LEVEL__CONSENT_FULL
#define JANK  REARVIEW__ANOMALY_KIND__ANOMALY_JANK
#define TOUCH REARVIEW__ANOMALY_KIND__ANOMALY_TOUCH_LATENCY

struct fx {
	char dir[64];
	char path[96];
	struct rvp_ledger *l;
};

/* tmpfs when there is one: fsync is free there and the suite stays fast. */
static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/rvp-ledger-XXXXXX", base);
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/ledger.db", f->dir);
	assert_int_equal(rvp_ledger_new(f->path, &f->l), 0);
	*state = f;
	return 0;
}

static void fx_reopen(struct fx *f)
{
	rvp_ledger_free(f->l);
	f->l = NULL;
	assert_int_equal(rvp_ledger_new(f->path, &f->l), 0);
}

static void rm_db(struct fx *f)
{
	char p[128];
	static const char *const sfx[] = {"", "-wal", "-shm"};

	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", f->path, sfx[i]);
		unlink(p);
	}
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	rvp_ledger_free(f->l);
	rm_db(f);
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct rvp_time at(const char *boot, int64_t wall, int64_t boot_s)
{
	struct rvp_time t = {.wall_s = wall, .boot_ns = (uint64_t)boot_s * 1000000000ull};
	snprintf(t.boot_id, sizeof(t.boot_id), "%s", boot);
	return t;
}

static struct rvp_event ev_of(const char *id, uint32_t sev)
{
	struct rvp_event e = {.item_id = id,
			      .app_id = "com.example.mail",
			      .app_version = "4.2",
			      .device_model = "pixel-7",
			      .os_build = "12.1",
			      .kind = JANK,
			      .severity = sev,
			      .size_bytes = 1000};
	return e;
}

static enum rvp_reason decide(struct fx *f, const Rearview__PolicyBody *p, rvp_consent c,
			      const char *id, uint32_t sev, struct rvp_time now,
			      struct rvp_decision *d)
{
	struct rvp_event e = ev_of(id, sev);
	struct rvp_decision local;

	if (!d)
		d = &local;
	assert_int_equal(rvp_ledger_decide(f->l, p, c, &e, 1, &now, d), 0);
	return d->reason;
}

/* Decide and immediately commit (the upload was acknowledged). */
static enum rvp_reason upload(struct fx *f, const Rearview__PolicyBody *p, const char *id,
			      struct rvp_time now)
{
	struct rvp_decision d;
	enum rvp_reason r = decide(f, p, FULL, id, 50, now, &d);

	if (r == RVP_ACCEPTED)
		assert_int_equal(rvp_ledger_commit(f->l, d.reservation, &now), 0);
	return r;
}

static void test_ledger_debounce_limits_per_app_and_kind_across_restart(void **state)
{
	struct fx *f = *state;
	struct rvp_time t = at("A", 100000, 100);

	for (int i = 0; i < 3; i++)
		assert_int_equal(rvp_ledger_debounce(f->l, "app", JANK, 3, 600, &t), RVP_ACCEPTED);
	assert_int_equal(rvp_ledger_debounce(f->l, "app", JANK, 3, 600, &t), RVP_DEBOUNCED);
	/* Other kind and other app are independent. */
	assert_int_equal(rvp_ledger_debounce(f->l, "app", TOUCH, 3, 600, &t), RVP_ACCEPTED);
	assert_int_equal(rvp_ledger_debounce(f->l, "other", JANK, 3, 600, &t), RVP_ACCEPTED);
	/* Persisted: a restart does not forget. */
	fx_reopen(f);
	t = at("A", 100000 + 599, 699);
	assert_int_equal(rvp_ledger_debounce(f->l, "app", JANK, 3, 600, &t), RVP_DEBOUNCED);
	/* The wall clock jumping a day ahead does not open the window. */
	t = at("A", 100000 + DAY, 699);
	assert_int_equal(rvp_ledger_debounce(f->l, "app", JANK, 3, 600, &t), RVP_DEBOUNCED);
	/* Real time passing (boot clock) does. */
	t = at("A", 100000 + 600, 700);
	assert_int_equal(rvp_ledger_debounce(f->l, "app", JANK, 3, 600, &t), RVP_ACCEPTED);
}

static void test_ledger_capture_decision_checks_consent_then_debounce(void **state)
{
	struct fx *f = *state;
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	struct rvp_time t = at("A", 1000, 10);

	p.debounce_captures = 1;
	p.debounce_window_s = 60;
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, REARVIEW__CONSENT_LEVEL__CONSENT_OFF,
						   "app", JANK, &t),
			 RVP_CONSENT_OFF);
	/* Consent off did not record a capture: the next one is accepted. */
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL,
						   "app", JANK, &t),
			 RVP_ACCEPTED);
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "app", JANK, &t), RVP_DEBOUNCED);
	t = at("A", 1000, 70);
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "app", JANK, &t), RVP_ACCEPTED);
	/* NULL policy: the default, 3 per 10 minutes. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(rvp_ledger_decide_capture(f->l, NULL, FULL, "b", JANK, &t),
				 RVP_ACCEPTED);
	assert_int_equal(rvp_ledger_decide_capture(f->l, NULL, FULL, "b", JANK, &t), RVP_DEBOUNCED);
}

/* The weekly capture budgets: 2 per app, 3 across the device; debounce
 * out of the way (100 per minute). */
static void test_ledger_capture_budgets_per_app_and_device_week(void **state)
{
	struct fx *f = *state;
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	struct rvp_time t = at("A", 100000, 100);

	p.debounce_captures = 100;
	p.debounce_window_s = 60;
	p.app_weekly_captures = 2;
	p.device_weekly_captures = 3;
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "a", JANK, &t), RVP_ACCEPTED);
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "a", TOUCH, &t), RVP_ACCEPTED);
	/* The app's budget counts every kind. */
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "a", JANK, &t),
			 RVP_APP_BUDGET_EXHAUSTED);
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "b", JANK, &t), RVP_ACCEPTED);
	/* b has room of its own, the device has none. */
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "b", JANK, &t),
			 RVP_DEVICE_BUDGET_EXHAUSTED);
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "c", JANK, &t),
			 RVP_DEVICE_BUDGET_EXHAUSTED);
	assert_int_equal(rvp_ledger_captures_used(f->l, NULL, &t), 3);
	assert_int_equal(rvp_ledger_captures_used(f->l, "a", &t), 2);
	assert_int_equal(rvp_ledger_captures_used(f->l, "c", &t), 0);
	/* Across a restart, and until the week is over. */
	fx_reopen(f);
	t = at("A", 100000 + RVP_WEEK_S - 1, 100 + RVP_WEEK_S - 1);
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "c", JANK, &t),
			 RVP_DEVICE_BUDGET_EXHAUSTED);
	t = at("A", 100000 + RVP_WEEK_S, 100 + RVP_WEEK_S);
	assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "c", JANK, &t), RVP_ACCEPTED);
	assert_int_equal(rvp_ledger_captures_used(f->l, NULL, &t), 1);
	/* No budget (0): only the debounce limits. */
	p.app_weekly_captures = p.device_weekly_captures = 0;
	for (int i = 0; i < 5; i++)
		assert_int_equal(rvp_ledger_decide_capture(f->l, &p, FULL, "a", JANK, &t),
				 RVP_ACCEPTED);
}

/* What a decision tells the fleet: the campaign's probability, and the
 * week's candidates seen and taken (a quota refusal makes them differ). */
static void test_ledger_decision_reports_probability_and_candidates(void **state)
{
	struct fx *f = *state;
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT, *cs[1] = {&c};
	struct rvp_time t = at("A", 100000, 100);
	struct rvp_decision d;
	char id[16];
	int taken = 0, n = 0;

	c.id = (char *)"tenth";
	c.sample_probability = 0.1;
	p.campaigns = cs;
	p.n_campaigns = 1;
	p.weekly_quota = 2;
	p.selection = REARVIEW__SELECTION_MODE__SELECT_TARGETED;
	/* Sampled-out items never reach the quota; the first two that pass are
	 * taken with seen == taken; the third is refused and counted. */
	for (int i = 0; taken < 2 && i < 1000; i++) {
		snprintf(id, sizeof(id), "i%d", i);
		if (decide(f, &p, FULL, id, 50, t, &d) != RVP_ACCEPTED)
			continue;
		taken++;
		assert_string_equal(d.campaign_id, "tenth");
		assert_true(d.probability == 0.1);
		assert_int_equal(d.seen, (uint32_t)taken);
		assert_int_equal(d.taken, (uint32_t)taken);
	}
	assert_int_equal(taken, 2);
	for (int i = 1000; n < 1 && i < 2000; i++) {
		snprintf(id, sizeof(id), "i%d", i);
		if (decide(f, &p, FULL, id, 50, t, &d) == RVP_QUOTA_EXHAUSTED)
			n++;
	}
	assert_int_equal(n, 1);
	assert_int_equal(d.seen, 3);
	assert_int_equal(d.taken, 2);
	/* A week later the window is empty again; under first-N selection a
	 * sampled-out anomaly goes anyway, so every probability is 1. */
	t = at("A", 100000 + RVP_WEEK_S, 100 + RVP_WEEK_S);
	p.selection = REARVIEW__SELECTION_MODE__SELECT_FIRST_N;
	p.weekly_quota = 10; /* the two reservations above are still pending */
	p.n_campaigns = 0;
	assert_int_equal(decide(f, &p, FULL, "x", 50, t, &d), RVP_ACCEPTED);
	assert_true(d.probability == 1.0);
	assert_string_equal(d.campaign_id, "");
	assert_int_equal(d.seen, 1);
	assert_int_equal(d.taken, 1);
	p.n_campaigns = 1;
	assert_int_equal(decide(f, &p, FULL, "y", 50, t, &d), RVP_ACCEPTED);
	assert_true(d.probability == 1.0);
}

static void test_ledger_first_n_takes_three_then_quota_exhausted(void **state)
{
	struct fx *f = *state;
	const Rearview__PolicyBody *p = rvp_policy_default();
	struct rvp_time t = at("A", 1000000, 1000);

	assert_int_equal(upload(f, p, "a", t), RVP_ACCEPTED);
	assert_int_equal(upload(f, p, "b", t), RVP_ACCEPTED);
	assert_int_equal(upload(f, p, "c", t), RVP_ACCEPTED);
	assert_int_equal(upload(f, p, "d", t), RVP_QUOTA_EXHAUSTED);
	assert_int_equal(rvp_ledger_quota_used(f->l, &t), 3);
	/* One second before the week ends, still full; at the week, free. */
	t = at("A", 1000000 + RVP_WEEK_S - 1, 1000 + RVP_WEEK_S - 1);
	assert_int_equal(upload(f, p, "e", t), RVP_QUOTA_EXHAUSTED);
	t = at("A", 1000000 + RVP_WEEK_S, 1000 + RVP_WEEK_S);
	assert_int_equal(upload(f, p, "f", t), RVP_ACCEPTED);
}

static void test_ledger_wall_jump_forward_does_not_release_quota(void **state)
{
	struct fx *f = *state;
	const Rearview__PolicyBody *p = rvp_policy_default();

	for (int i = 0; i < 3; i++)
		assert_int_equal(upload(f, p, "x", at("A", 5000000, 100)), RVP_ACCEPTED);
	/* Same boot, wall clock jumps 30 days ahead, 1 minute really passed. */
	assert_int_equal(upload(f, p, "y", at("A", 5000000 + 30 * DAY, 160)), RVP_QUOTA_EXHAUSTED);
	/* And after a restart of the daemon, still the same boot. */
	fx_reopen(f);
	assert_int_equal(upload(f, p, "y", at("A", 5000000 + 30 * DAY, 200)), RVP_QUOTA_EXHAUSTED);
}

static void test_ledger_wall_jump_backward_does_not_release_quota(void **state)
{
	struct fx *f = *state;
	const Rearview__PolicyBody *p = rvp_policy_default();

	for (int i = 0; i < 3; i++)
		assert_int_equal(upload(f, p, "x", at("A", 5000000, 100)), RVP_ACCEPTED);
	/* Same boot, wall clock back a year: still full. */
	assert_int_equal(upload(f, p, "y", at("A", 5000000 - 365 * DAY, 200)), RVP_QUOTA_EXHAUSTED);
	/* Reboot with the clock a year behind: still full. */
	fx_reopen(f);
	assert_int_equal(upload(f, p, "y", at("B", 5000000 - 365 * DAY, 5)), RVP_QUOTA_EXHAUSTED);
	/* A week of uptime in boot B is a week, whatever its wall clock said. */
	assert_int_equal(upload(f, p, "y", at("B", 5000000 - 358 * DAY, 5 + RVP_WEEK_S)),
			 RVP_ACCEPTED);
}

static void test_ledger_wall_set_back_during_boot_is_not_trusted_after_reboot(void **state)
{
	struct fx *f = *state;
	const Rearview__PolicyBody *p = rvp_policy_default();

	/* Boot A starts right; then its clock is set 20 days back and three
	 * uploads are acknowledged under that wrong clock. */
	assert_int_equal(rvp_ledger_quota_used(f->l, &(struct rvp_time){0}), 0);
	assert_int_equal(rvp_ledger_debounce(f->l, "boot", JANK, 3, 600,
					     &(struct rvp_time){.wall_s = 9000000,
								.boot_ns = 10000000000ull,
								.boot_id = "A"}),
			 RVP_ACCEPTED);
	for (int i = 0; i < 3; i++)
		assert_int_equal(upload(f, p, "x", at("A", 9000000 - 20 * DAY + 50, 60)),
				 RVP_ACCEPTED);
	/* Reboot one day later with a correct clock: the wall difference says
	 * 21 days, the boot epochs say 1 day: 1 day wins. */
	fx_reopen(f);
	assert_int_equal(upload(f, p, "y", at("B", 9000000 + DAY, 5)), RVP_QUOTA_EXHAUSTED);
	assert_int_equal(upload(f, p, "y", at("B", 9000000 + 8 * DAY, 5 + 7 * DAY)), RVP_ACCEPTED);
}

static void test_ledger_corrupt_database_is_refused(void **state)
{
	struct fx *f = *state;
	struct rvp_ledger *l = NULL;
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/garbage.db", f->dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(write(fd, "not a database, not at all", 26), 26);
	close(fd);
	assert_true(rvp_ledger_new(p, &l) < 0);
	assert_null(l);
	unlink(p);
	snprintf(p, sizeof(p), "%s/no/such/dir/x.db", f->dir);
	assert_true(rvp_ledger_new(p, &l) < 0);
}

static void test_ledger_old_history_is_pruned_without_changing_counts(void **state)
{
	struct fx *f = *state;
	const Rearview__PolicyBody *p = rvp_policy_default();

	for (int i = 0; i < 3; i++)
		assert_int_equal(upload(f, p, "old", at("A", 1000, 10)), RVP_ACCEPTED);
	/* Three weeks later: the old rows are pruned; three new ones fit. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(upload(f, p, "new", at("A", 1000, 10 + 3 * RVP_WEEK_S)),
				 RVP_ACCEPTED);
	assert_int_equal(upload(f, p, "more", at("A", 1000, 10 + 3 * RVP_WEEK_S)),
			 RVP_QUOTA_EXHAUSTED);
	struct rvp_time t = at("A", 1000, 10 + 3 * RVP_WEEK_S);
	assert_int_equal(rvp_ledger_quota_used(f->l, &t), 3);
	/* The three old rows are really gone from the file. */
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM uploads", -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 3);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_ledger_reservation_counts_until_released(void **state)
{
	struct fx *f = *state;
	const Rearview__PolicyBody *p = rvp_policy_default();
	struct rvp_time t = at("A", 1000, 10);
	struct rvp_decision d[3];
	struct rvp_reserved pend[8];

	for (int i = 0; i < 3; i++)
		assert_int_equal(decide(f, p, FULL, "r", 10, t, &d[i]), RVP_ACCEPTED);
	assert_int_equal(decide(f, p, FULL, "s", 10, t, NULL), RVP_QUOTA_EXHAUSTED);
	/* Pending reservations survive a restart and are listed in order. */
	fx_reopen(f);
	assert_int_equal(rvp_ledger_pending(f->l, pend, 8), 3);
	assert_int_equal(pend[0].reservation, d[0].reservation);
	assert_int_equal(rvp_ledger_release(f->l, d[1].reservation), 0);
	assert_int_equal(rvp_ledger_release(f->l, d[1].reservation), -ENOENT);
	assert_int_equal(rvp_ledger_commit(f->l, d[1].reservation, &t), -ENOENT);
	assert_int_equal(rvp_ledger_commit(f->l, d[0].reservation, &t), 0);
	assert_int_equal(rvp_ledger_commit(f->l, d[0].reservation, &t), 0); /* idem */
	assert_int_equal(rvp_ledger_release(f->l, d[0].reservation), -ENOENT);
	assert_int_equal(rvp_ledger_pending(f->l, pend, 8), 1);
	struct rvp_decision nd;
	assert_int_equal(decide(f, p, FULL, "s", 10, t, &nd), RVP_ACCEPTED);
	/* A released id is never handed out again. */
	assert_true(nd.reservation > d[2].reservation);
}

/* Issue 18 item 12: full → summary keeps a pending full capture as a
 * summary upload, still charged, instead of releasing it. */
static void test_ledger_downgrade_keeps_full_reservation_as_summary(void **state)
{
	struct fx *f = *state;
	struct rvp_time t = at("A", 1000, 10);
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	struct rvp_decision full;
	struct rvp_reserved out[4];

	p.weekly_quota = 10;
	assert_int_equal(decide(f, &p, FULL, "full", 10, t, &full), RVP_ACCEPTED);
	assert_int_equal(full.mode, REARVIEW__UPLOAD_MODE__UPLOAD_FULL);
	assert_int_equal(rvp_ledger_downgrade(f->l), 1);
	assert_int_equal(rvp_ledger_downgrade(f->l), 0);
	assert_int_equal(rvp_ledger_purge(f->l, REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY, out, 4),
			 0);
	assert_int_equal(rvp_ledger_quota_used(f->l, &t), 1);
	assert_int_equal(rvp_ledger_commit(f->l, full.reservation, &t), 0);
}

static void test_ledger_purge_releases_what_lower_consent_forbids(void **state)
{
	struct fx *f = *state;
	struct rvp_time t = at("A", 1000, 10);
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	struct rvp_decision full, sum;
	struct rvp_reserved out[4];

	p.weekly_quota = 10;
	assert_int_equal(decide(f, &p, FULL, "full", 10, t, &full), RVP_ACCEPTED);
	assert_int_equal(
		decide(f, &p, REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY, "sum", 10, t, &sum),
		RVP_ACCEPTED);
	assert_int_equal(sum.mode, REARVIEW__UPLOAD_MODE__UPLOAD_SUMMARY);
	/* FULL keeps everything. */
	assert_int_equal(rvp_ledger_purge(f->l, FULL, out, 4), 0);
	/* SUMMARY: the full upload goes, its quota is given back. */
	assert_int_equal(rvp_ledger_purge(f->l, REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY, out, 4),
			 1);
	assert_string_equal(out[0].item_id, "full");
	assert_int_equal(out[0].reservation, full.reservation);
	assert_int_equal(rvp_ledger_quota_used(f->l, &t), 1);
	assert_int_equal(rvp_ledger_commit(f->l, full.reservation, &t), -ENOENT);
	/* LOCAL: the summary goes too. */
	assert_int_equal(rvp_ledger_purge(f->l, REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL, out, 4), 1);
	assert_string_equal(out[0].item_id, "sum");
	assert_int_equal(rvp_ledger_pending(f->l, out, 4), 0);
	/* Room for one at a time: reported one by one, none lost. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(decide(f, &p, FULL, "x", 10, t, NULL), RVP_ACCEPTED);
	assert_int_equal(rvp_ledger_purge(f->l, REARVIEW__CONSENT_LEVEL__CONSENT_OFF, out, 1), 1);
	assert_int_equal(rvp_ledger_purge(f->l, REARVIEW__CONSENT_LEVEL__CONSENT_OFF, out, 4), 2);
	assert_int_equal(rvp_ledger_pending(f->l, out, 4), 0);
}

static void test_ledger_most_severe_evicts_least_severe_pending(void **state)
{
	struct fx *f = *state;
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	struct rvp_time t = at("A", 1000, 10);
	struct rvp_decision d, keep;

	p.selection = REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE;
	p.weekly_quota = 2;
	assert_int_equal(decide(f, &p, FULL, "s30", 30, t, &keep), RVP_ACCEPTED);
	assert_int_equal(decide(f, &p, FULL, "s20", 20, t, NULL), RVP_ACCEPTED);
	/* Less or equally severe: refused. */
	assert_int_equal(decide(f, &p, FULL, "s20b", 20, t, NULL), RVP_LESS_SEVERE);
	assert_int_equal(decide(f, &p, FULL, "s10", 10, t, NULL), RVP_LESS_SEVERE);
	/* More severe: replaces the least severe pending one. */
	assert_int_equal(decide(f, &p, FULL, "s90", 90, t, &d), RVP_REPLACED_LESS_SEVERE);
	assert_string_equal(d.evicted_item, "s20");
	assert_int_equal(decide(f, &p, FULL, "s95", 95, t, &d), RVP_REPLACED_LESS_SEVERE);
	assert_string_equal(d.evicted_item, "s30");
	/* Acknowledged uploads are never evicted. */
	struct rvp_reserved pend[4];
	assert_int_equal(rvp_ledger_pending(f->l, pend, 4), 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(rvp_ledger_commit(f->l, pend[i].reservation, &t), 0);
	assert_int_equal(decide(f, &p, FULL, "s99", 99, t, NULL), RVP_LESS_SEVERE);
	assert_int_equal(rvp_ledger_quota_used(f->l, &t), 2);
}

static void test_ledger_decide_rules_table(void **state)
{
	struct fx *f = *state;
	char *apps[] = {(char *)"com.example.*"};
	Rearview__AnomalyKind kinds[] = {JANK};
	Rearview__Campaign lo = REARVIEW__CAMPAIGN__INIT, hi = REARVIEW__CAMPAIGN__INIT,
			   samp = REARVIEW__CAMPAIGN__INIT;
	Rearview__Campaign *camps[] = {&lo, &hi, &samp};
	Rearview__PolicyBody tg = REARVIEW__POLICY_BODY__INIT;

	lo.id = (char *)"lo";
	lo.priority = 1;
	lo.app_patterns = apps;
	lo.n_app_patterns = 1;
	lo.upload_mode = REARVIEW__UPLOAD_MODE__UPLOAD_FULL;
	hi = lo;
	hi.id = (char *)"hi";
	hi.priority = 5;
	hi.kinds = kinds;
	hi.n_kinds = 1;
	hi.min_severity = 60;
	hi.upload_mode = REARVIEW__UPLOAD_MODE__UPLOAD_SIGNATURE_STATS;
	hi.quota = 1;
	samp.id = (char *)"samp";
	samp.app_patterns = (char *[]){(char *)"sampled.app"};
	samp.n_app_patterns = 1;
	samp.sample_probability = 1e-12;
	tg.selection = REARVIEW__SELECTION_MODE__SELECT_TARGETED;
	tg.campaigns = camps;
	tg.n_campaigns = 3;
	tg.weekly_quota = 10;
	tg.max_upload_bytes = 5000;

	struct rvp_time t = at("A", 1000, 10);
	struct rvp_decision d;
	struct rvp_event e = ev_of("e1", 70);

	/* Consent first. */
	assert_int_equal(
		rvp_ledger_decide(f->l, &tg, REARVIEW__CONSENT_LEVEL__CONSENT_OFF, &e, 1, &t, &d),
		0);
	assert_int_equal(d.reason, RVP_CONSENT_OFF);
	assert_int_equal(
		rvp_ledger_decide(f->l, &tg, REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL, &e, 1, &t, &d),
		0);
	assert_int_equal(d.reason, RVP_CONSENT_LOCAL_ONLY);
	/* Highest priority match wins, with its mode. */
	assert_int_equal(rvp_ledger_decide(f->l, &tg, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_ACCEPTED);
	assert_string_equal(d.campaign_id, "hi");
	assert_int_equal(d.mode, REARVIEW__UPLOAD_MODE__UPLOAD_SIGNATURE_STATS);
	/* Its quota of one is used: campaign_quota_exhausted. */
	e.item_id = "e2";
	assert_int_equal(rvp_ledger_decide(f->l, &tg, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_CAMPAIGN_QUOTA_EXHAUSTED);
	/* Below hi's severity: lo matches; summary consent downgrades full. */
	e.severity = 10;
	assert_int_equal(rvp_ledger_decide(f->l, &tg, REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY, &e,
					   1, &t, &d),
			 0);
	assert_int_equal(d.reason, RVP_ACCEPTED);
	assert_string_equal(d.campaign_id, "lo");
	assert_int_equal(d.mode, REARVIEW__UPLOAD_MODE__UPLOAD_SUMMARY);
	/* Too large for a full upload. */
	e.size_bytes = 5001;
	assert_int_equal(rvp_ledger_decide(f->l, &tg, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_TOO_LARGE);
	e.size_bytes = 100;
	/* Not targeted; sampled out. */
	e.app_id = "org.other";
	assert_int_equal(rvp_ledger_decide(f->l, &tg, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_NOT_TARGETED);
	e.app_id = "sampled.app";
	assert_int_equal(rvp_ledger_decide(f->l, &tg, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_SAMPLED_OUT);
	/* Expired targeted policy: expired_policy. */
	tg.expires_at_s = 1000;
	e.app_id = "com.example.mail";
	assert_int_equal(rvp_ledger_decide(f->l, &tg, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_EXPIRED_POLICY);
	/* Expired first-N policy: the default applies, campaigns are void. */
	tg.selection = REARVIEW__SELECTION_MODE__SELECT_FIRST_N;
	assert_int_equal(rvp_ledger_decide(f->l, &tg, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_ACCEPTED);
	assert_string_equal(d.campaign_id, "");
	assert_int_equal(d.mode, REARVIEW__UPLOAD_MODE__UPLOAD_FULL);
	/* A NULL policy is the default. */
	assert_int_equal(rvp_ledger_decide(f->l, NULL, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_QUOTA_EXHAUSTED); /* 3 used: hi, lo, this */
}

static void test_ledger_crash_mid_transaction_rolls_back(void **state)
{
	struct fx *f = *state;
	struct rvp_time t = at("A", 1000, 10);
	struct rvp_decision d;
	struct rvp_event e = ev_of("c", 10);
	struct rvp_reserved pend[4];

	rvp_ledger_crash_after(f->l, 3); /* BEGIN, boot note, INSERT: no COMMIT */
	assert_int_equal(rvp_ledger_decide(f->l, NULL, FULL, &e, 1, &t, &d), -EIO);
	assert_int_equal(d.reservation, 0);
	fx_reopen(f);
	assert_int_equal(rvp_ledger_pending(f->l, pend, 4), 0);
	assert_int_equal(rvp_ledger_decide(f->l, NULL, FULL, &e, 1, &t, &d), 0);
	assert_int_equal(d.reason, RVP_ACCEPTED);
	rvp_ledger_crash_after(f->l, 3); /* BEGIN, boot note, UPDATE */
	t.boot_ns += 1000000000ull;
	assert_int_equal(rvp_ledger_commit(f->l, d.reservation, &t), -EIO);
	fx_reopen(f);
	assert_int_equal(rvp_ledger_pending(f->l, pend, 4), 1);
	assert_int_equal(pend[0].reservation, d.reservation);
}

/* ------------------------------------------------------------ randomized */

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

#define MAXP 64

struct model {
	int64_t true_s;	    /* real time, seconds */
	int64_t boot_start; /* true time of this boot's start */
	int64_t offset;	    /* wall clock error */
	int boot;
	int64_t acked[256]; /* true times of acknowledged uploads */
	size_t n_acked;
	int64_t pend[MAXP];
	char pend_item[MAXP][16];
	size_t n_pend;
	int items;
};

static struct rvp_time model_now(const struct model *m)
{
	struct rvp_time t;
	char id[16];

	snprintf(id, sizeof(id), "boot-%d", m->boot);
	t = at(id, m->true_s + m->offset, m->true_s - m->boot_start);
	return t;
}

/* Uploads acknowledged within the last true week, plus pending ones. */
static size_t model_used(const struct model *m)
{
	size_t n = m->n_pend;
	for (size_t i = 0; i < m->n_acked; i++)
		n += m->true_s - m->acked[i] < RVP_WEEK_S;
	return n;
}

static void model_drop_pend(struct model *m, size_t i)
{
	m->pend[i] = m->pend[--m->n_pend];
	memcpy(m->pend_item[i], m->pend_item[m->n_pend], sizeof(m->pend_item[i]));
}

static void check_pending(struct fx *f, struct model *m)
{
	struct rvp_reserved got[MAXP];
	int n = rvp_ledger_pending(f->l, got, MAXP);

	assert_int_equal(n, (int)m->n_pend);
	for (int i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < m->n_pend; j++)
			if (m->pend[j] == got[i].reservation)
				break;
		if (j == m->n_pend)
			fail_msg("ledger pending %lld unknown to the daemon",
				 (long long)got[i].reservation);
	}
}

static void run_sequence(struct fx *f, uint32_t quota, int most_severe)
{
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	struct model m = {.true_s = 1700000000, .boot_start = 1700000000 - 100};

	p.weekly_quota = quota;
	struct rvp_time t0 = model_now(&m);
	rvp_ledger_debounce(f->l, "daemon", JANK, 1000, 1, &t0);
	p.selection = most_severe ? REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE
				  : REARVIEW__SELECTION_MODE__SELECT_FIRST_N;
	for (int step = 0; step < 24; step++) {
		uint32_t op = rnd(100);
		int crash = rnd(100) < 15;
		struct rvp_time now;
		int rc;

		/* Time: real time moves on; the wall clock may jump either way
		 * while running. */
		m.true_s += rnd(4) == 0 ? rnd(3 * DAY) : rnd(600);
		if (rnd(10) == 0)
			m.offset = (int64_t)rnd(60 * DAY) - 30 * DAY;
		if (op < 8) { /* reboot: the clock comes back right or behind */
			rvp_ledger_free(f->l);
			f->l = NULL;
			m.true_s += rnd(2 * DAY);
			m.boot_start = m.true_s - 5;
			m.boot++;
			m.offset = -(int64_t)rnd(30 * DAY);
			assert_int_equal(rvp_ledger_new(f->path, &f->l), 0);
			/* Daemon start, before NTP: the clock may be behind. */
			now = model_now(&m);
			rvp_ledger_debounce(f->l, "daemon", JANK, 1000, 1, &now);
			/* NTP synchronised: right once in this boot. */
			m.offset = 0;
			now = model_now(&m);
			rvp_ledger_debounce(f->l, "daemon", JANK, 1000, 1, &now);
			check_pending(f, &m);
			continue;
		}
		now = model_now(&m);
		if (crash)
			rvp_ledger_crash_after(f->l, 1 + (int)rnd(4));
		if (op < 60) {
			struct rvp_decision d;
			struct rvp_event e = ev_of("", rnd(100));
			char id[16];
			snprintf(id, sizeof(id), "it%d", m.items++);
			e.item_id = id;
			rc = rvp_ledger_decide(f->l, &p, FULL, &e, 1, &now, &d);
			if (rc == 0 && d.reservation > 0) {
				if (d.evicted_item[0]) {
					size_t j;
					for (j = 0; j < m.n_pend; j++)
						if (!strcmp(m.pend_item[j], d.evicted_item))
							break;
					assert_true(j < m.n_pend);
					model_drop_pend(&m, j);
				}
				assert_true(m.n_pend < MAXP);
				m.pend[m.n_pend] = d.reservation;
				snprintf(m.pend_item[m.n_pend], 16, "%s", id);
				m.n_pend++;
			} else if (rc == 0) {
				assert_true(d.reason == RVP_QUOTA_EXHAUSTED ||
					    d.reason == RVP_LESS_SEVERE);
			} else {
				assert_int_equal(rc, -EIO);
			}
		} else if (op < 85 && m.n_pend) {
			size_t j = rnd((uint32_t)m.n_pend);
			rc = rvp_ledger_commit(f->l, m.pend[j], &now);
			if (rc == 0) {
				assert_true(m.n_acked < 256);
				m.acked[m.n_acked++] = m.true_s;
				model_drop_pend(&m, j);
			} else {
				assert_int_equal(rc, -EIO);
			}
		} else if (m.n_pend) {
			size_t j = rnd((uint32_t)m.n_pend);
			rc = rvp_ledger_release(f->l, m.pend[j]);
			if (rc == 0)
				model_drop_pend(&m, j);
			else
				assert_int_equal(rc, -EIO);
		}
		/* The quota holds in true time, whatever the clocks said. */
		if (model_used(&m) > quota)
			fail_msg("quota %u exceeded: %zu", quota, model_used(&m));
		/* And the ledger never counts less than really happened (a lost
		 * commit or reservation would show here). */
		if (!crash) {
			int used = rvp_ledger_quota_used(f->l, &now);
			assert_true(used >= (int)model_used(&m));
		}
		if (crash) {
			/* The process dies here: close without committing. */
			fx_reopen(f);
			check_pending(f, &m);
		}
	}
	fx_reopen(f);
	check_pending(f, &m);
}

static void test_ledger_random_crashes_never_exceed_quota_or_lose_decisions(void **state)
{
	struct fx *f = *state;

	rng_state = 0x9e3779b97f4a7c15ull;
	for (int seq = 0; seq < 1500; seq++) {
		rvp_ledger_free(f->l);
		f->l = NULL;
		rm_db(f);
		assert_int_equal(rvp_ledger_new(f->path, &f->l), 0);
		run_sequence(f, 1 + rnd(4), seq % 2);
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_ledger_debounce_limits_per_app_and_kind_across_restart),
		T(test_ledger_capture_decision_checks_consent_then_debounce),
		T(test_ledger_capture_budgets_per_app_and_device_week),
		T(test_ledger_decision_reports_probability_and_candidates),
		T(test_ledger_first_n_takes_three_then_quota_exhausted),
		T(test_ledger_wall_jump_forward_does_not_release_quota),
		T(test_ledger_wall_jump_backward_does_not_release_quota),
		T(test_ledger_wall_set_back_during_boot_is_not_trusted_after_reboot),
		T(test_ledger_corrupt_database_is_refused),
		T(test_ledger_old_history_is_pruned_without_changing_counts),
		T(test_ledger_reservation_counts_until_released),
		T(test_ledger_purge_releases_what_lower_consent_forbids),
		T(test_ledger_downgrade_keeps_full_reservation_as_summary),
		T(test_ledger_most_severe_evicts_least_severe_pending),
		T(test_ledger_decide_rules_table),
		T(test_ledger_crash_mid_transaction_rolls_back),
		T(test_ledger_random_crashes_never_exceed_quota_or_lose_decisions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
