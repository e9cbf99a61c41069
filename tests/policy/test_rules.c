/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rules.c — the pure rules of librvpolicy, table-driven: reason names,
 * consent and purge, version comparison, sampling, campaign matching, the
 * elapsed-time rule, the built-in default and validation of hostile bodies.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/policy.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void test_rules_reason_names_are_distinct(void **state)
{
	for (int i = 0; i < RVP_REASON_COUNT_; i++) {
		const char *a = rvp_reason_name((enum rvp_reason)i);
		assert_string_not_equal(a, "unknown");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(a, rvp_reason_name((enum rvp_reason)j));
	}
	assert_string_equal(rvp_reason_name(RVP_QUOTA_EXHAUSTED), "quota_exhausted");
	assert_string_equal(rvp_reason_name(RVP_CONSENT_OFF), "consent_off");
	assert_string_equal(rvp_reason_name(RVP_REASON_COUNT_), "unknown");
	assert_string_equal(rvp_reason_name((enum rvp_reason) - 1), "unknown");
}

#define OFF	REARVIEW__CONSENT_LEVEL__CONSENT_OFF
#define LOCAL	REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL
#define SUMMARY REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY
#define FULL	REARVIEW__CONSENT_LEVEL__CONSENT_FULL
#define UNSPEC	REARVIEW__CONSENT_LEVEL__CONSENT_UNSPECIFIED

static void test_rules_consent_table_allows_exactly_the_level(void **state)
{
	static const struct {
		rvp_consent level;
		enum rvp_action act;
		int allowed;
		enum rvp_reason why;
	} t[] = {
		{UNSPEC, RVP_ACT_CAPTURE, 0, RVP_CONSENT_OFF},
		{OFF, RVP_ACT_CAPTURE, 0, RVP_CONSENT_OFF},
		{OFF, RVP_ACT_UPLOAD_SUMMARY, 0, RVP_CONSENT_OFF},
		{OFF, RVP_ACT_UPLOAD_FULL, 0, RVP_CONSENT_OFF},
		{LOCAL, RVP_ACT_CAPTURE, 1, RVP_ACCEPTED},
		{LOCAL, RVP_ACT_UPLOAD_SUMMARY, 0, RVP_CONSENT_LOCAL_ONLY},
		{LOCAL, RVP_ACT_UPLOAD_FULL, 0, RVP_CONSENT_LOCAL_ONLY},
		{SUMMARY, RVP_ACT_CAPTURE, 1, RVP_ACCEPTED},
		{SUMMARY, RVP_ACT_UPLOAD_SUMMARY, 1, RVP_ACCEPTED},
		{SUMMARY, RVP_ACT_UPLOAD_FULL, 0, RVP_CONSENT_SUMMARY_ONLY},
		{FULL, RVP_ACT_CAPTURE, 1, RVP_ACCEPTED},
		{FULL, RVP_ACT_UPLOAD_SUMMARY, 1, RVP_ACCEPTED},
		{FULL, RVP_ACT_UPLOAD_FULL, 1, RVP_ACCEPTED},
		{(rvp_consent)99, RVP_ACT_CAPTURE, 0, RVP_CONSENT_OFF},
		{FULL, (enum rvp_action)42, 0, RVP_CONSENT_OFF},
	};
	for (size_t i = 0; i < N_OF(t); i++) {
		enum rvp_reason why = RVP_REASON_COUNT_;
		int got = rvp_consent_allows(t[i].level, t[i].act, &why);
		if (got != t[i].allowed || why != t[i].why)
			fail_msg("row %zu: got %d/%s", i, got, rvp_reason_name(why));
	}
}

static void test_rules_purge_on_lowering_returns_forbidden_items(void **state)
{
	static const struct rvp_pending items[] = {
		{"keep", RVP_ACT_CAPTURE},
		{"sum", RVP_ACT_UPLOAD_SUMMARY},
		{"full", RVP_ACT_UPLOAD_FULL},
		{"full2", RVP_ACT_UPLOAD_FULL},
	};
	static const struct {
		rvp_consent level;
		size_t n;
		size_t idx[4];
	} t[] = {
		{FULL, 0, {0}},
		{SUMMARY, 2, {2, 3}},
		{LOCAL, 3, {1, 2, 3}},
		{OFF, 4, {0, 1, 2, 3}},
	};
	for (size_t i = 0; i < N_OF(t); i++) {
		size_t out[4];
		size_t n = rvp_consent_purge(t[i].level, items, N_OF(items), out);
		assert_int_equal(n, t[i].n);
		assert_memory_equal(out, t[i].idx, n * sizeof(size_t));
	}
}

static int sign3(int v)
{
	return (v > 0) - (v < 0);
}

static void test_rules_version_cmp_is_numeric_per_component(void **state)
{
	static const struct {
		const char *a, *b;
		int want;
	} t[] = {
		{"4.10", "4.9", 1},
		{"4.9", "4.10", -1},
		{"4.2", "4.2", 0},
		{"4.2", "4.2.0", 0},
		{"4.2.1", "4.2", 1},
		{"04.2", "4.2", 0},
		{"10", "9", 1},
		{"1.0", "1.0.0.0", 0},
		{"", "0", 0},
		{NULL, "1", -1},
		{"1", NULL, 1},
		{NULL, NULL, 0},
		{"4.2-beta", "4.2-alpha", 1},
		{"4.2b", "4.2a", 1},
		{"4.x", "4.x", 0},
		{"99999999999999999999999", "1", 1},
		{"1..2", "1.0.2", 0},
	};
	for (size_t i = 0; i < N_OF(t); i++) {
		int got = sign3(rvp_version_cmp(t[i].a, t[i].b));
		if (got != t[i].want)
			fail_msg("row %zu: %s vs %s = %d", i, t[i].a ? t[i].a : "NULL",
				 t[i].b ? t[i].b : "NULL", got);
	}
}

static void test_rules_sample_is_deterministic_and_near_p(void **state)
{
	char id[32];
	int hits = 0;

	assert_int_equal(rvp_sample(0.0, 1, "c", "x"), 1); /* unset = all */
	assert_int_equal(rvp_sample(1.0, 1, "c", "x"), 1);
	assert_int_equal(rvp_sample(NAN, 1, "c", "x"), 0);
	for (int i = 0; i < 20000; i++) {
		snprintf(id, sizeof(id), "item-%d", i);
		int a = rvp_sample(0.25, 7, "camp", id);
		assert_int_equal(a, rvp_sample(0.25, 7, "camp", id));
		hits += a;
	}
	/* 20000 draws at p = 0.25: 5000 ± 5 sigma (sigma ≈ 61). */
	assert_in_range(hits, 4700, 5300);
	/* Another seed picks a different subset. */
	int differ = 0;
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof(id), "item-%d", i);
		differ += rvp_sample(0.5, 7, "camp", id) != rvp_sample(0.5, 8, "camp", id);
	}
	assert_true(differ > 20);
}

static void test_rules_campaign_match_table_names_each_miss(void **state)
{
	char *apps[] = {(char *)"com.example.*", (char *)"shell"};
	Rearview__VersionRange r1 = REARVIEW__VERSION_RANGE__INIT;
	Rearview__VersionRange *ranges[] = {&r1};
	char *models[] = {(char *)"pixel-7", (char *)"tv-*"};
	char *builds[] = {(char *)"12.1"};
	Rearview__AnomalyKind kinds[] = {REARVIEW__ANOMALY_KIND__ANOMALY_JANK};
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT;

	r1.min = (char *)"4.2";
	r1.max = (char *)"4.10";
	c.id = (char *)"jank-42";
	c.valid_from_s = 1000;
	c.valid_until_s = 2000;
	c.app_patterns = apps;
	c.n_app_patterns = N_OF(apps);
	c.app_versions = ranges;
	c.n_app_versions = 1;
	c.device_models = models;
	c.n_device_models = 2;
	c.os_builds = builds;
	c.n_os_builds = 1;
	c.kinds = kinds;
	c.n_kinds = 1;
	c.min_severity = 50;

	static const struct {
		const char *app, *ver, *model, *os;
		Rearview__AnomalyKind kind;
		uint32_t sev;
		int64_t now;
		enum rvp_reason want;
	} t[] = {
		{"com.example.mail", "4.2", "pixel-7", "12.1", 1, 50, 1500, RVP_ACCEPTED},
		{"shell", "4.10", "pixel-7", "12.1", 1, 99, 1000, RVP_ACCEPTED},
		{"shell", "4.9.3", "pixel-7", "12.1", 1, 99, 2000, RVP_ACCEPTED},
		{"shell", "4.2", "pixel-7", "12.1", 1, 99, 999, RVP_CAMPAIGN_NOT_ACTIVE},
		{"shell", "4.2", "pixel-7", "12.1", 1, 99, 2001, RVP_CAMPAIGN_NOT_ACTIVE},
		{"shell", "4.2", "pixel-7", "12.1", 2, 99, 1500, RVP_KIND_NOT_TARGETED},
		{"shell", "4.2", "pixel-7", "12.1", 1, 49, 1500, RVP_BELOW_MIN_SEVERITY},
		{"com.other", "4.2", "pixel-7", "12.1", 1, 99, 1500, RVP_APP_NOT_TARGETED},
		{NULL, "4.2", "pixel-7", "12.1", 1, 99, 1500, RVP_APP_NOT_TARGETED},
		{"shell", "4.1", "pixel-7", "12.1", 1, 99, 1500, RVP_VERSION_NOT_TARGETED},
		{"shell", "4.11", "pixel-7", "12.1", 1, 99, 1500, RVP_VERSION_NOT_TARGETED},
		{"shell", NULL, "pixel-7", "12.1", 1, 99, 1500, RVP_VERSION_NOT_TARGETED},
		{"shell", "4.2", "pixel-8", "12.1", 1, 99, 1500, RVP_DEVICE_NOT_TARGETED},
		{"shell", "4.2", "tv-55", "12.1", 1, 99, 1500, RVP_ACCEPTED},
		{"shell", "4.2", "tv", "12.1", 1, 99, 1500, RVP_DEVICE_NOT_TARGETED},
		{"shell", "4.2", "pixel-7", "12.2", 1, 99, 1500, RVP_OS_NOT_TARGETED},
	};
	for (size_t i = 0; i < N_OF(t); i++) {
		struct rvp_event ev = {.item_id = "i",
				       .app_id = t[i].app,
				       .app_version = t[i].ver,
				       .device_model = t[i].model,
				       .os_build = t[i].os,
				       .kind = t[i].kind,
				       .severity = t[i].sev};
		enum rvp_reason got = rvp_campaign_match(&c, &ev, t[i].now, 1);
		if (got != t[i].want)
			fail_msg("row %zu: got %s want %s", i, rvp_reason_name(got),
				 rvp_reason_name(t[i].want));
	}

	/* Empty lists match everything; sampling at NaN-free tiny p drops. */
	Rearview__Campaign open = REARVIEW__CAMPAIGN__INIT;
	struct rvp_event any = {.item_id = "x"};
	open.id = (char *)"all";
	assert_int_equal(rvp_campaign_match(&open, &any, 5, 1), RVP_ACCEPTED);
	open.sample_probability = 1e-12;
	assert_int_equal(rvp_campaign_match(&open, &any, 5, 1), RVP_SAMPLED_OUT);
}

static void test_rules_elapsed_ignores_wall_jumps_within_a_boot(void **state)
{
	static const struct {
		int64_t w0;
		uint64_t b0;
		const char *id0;
		int64_t w1;
		uint64_t b1;
		const char *id1;
		int64_t want;
	} t[] = {
		/* same boot: boot clock, whatever the wall did */
		{1000, 10e9, "A", 1000 + 30 * 86400, 70e9, "A", 60},
		{1000, 10e9, "A", 0, 70e9, "A", 60},
		{1000, 70e9, "A", 5000, 10e9, "A", 0},
		/* another boot: wall difference, clamped at 0 */
		{1000, 10e9, "A", 4000, 1e9, "B", 3000},
		{9000, 10e9, "A", 4000, 1e9, "B", 0},
		/* unknown boot ids compare by wall */
		{1000, 10e9, "", 1500, 10e9, "", 500},
	};
	for (size_t i = 0; i < N_OF(t); i++) {
		struct rvp_time a = {.wall_s = t[i].w0, .boot_ns = t[i].b0};
		struct rvp_time b = {.wall_s = t[i].w1, .boot_ns = t[i].b1};
		snprintf(a.boot_id, sizeof(a.boot_id), "%s", t[i].id0);
		snprintf(b.boot_id, sizeof(b.boot_id), "%s", t[i].id1);
		if (rvp_elapsed_s(&a, &b) != t[i].want)
			fail_msg("row %zu: %lld", i, (long long)rvp_elapsed_s(&a, &b));
	}
	struct rvp_time now;
	assert_int_equal(rvp_time_now(&now), 0);
	assert_true(now.wall_s > 1600000000);
}

static void test_rules_default_policy_has_documented_values(void **state)
{
	const Rearview__PolicyBody *d = rvp_policy_default();
	Rearview__PolicyBody zero = REARVIEW__POLICY_BODY__INIT;

	assert_int_equal(d->version, 0);
	assert_int_equal(d->expires_at_s, 0);
	assert_int_equal(rvp_policy_weekly_quota(d), 3);
	assert_int_equal(rvp_policy_selection(d), REARVIEW__SELECTION_MODE__SELECT_FIRST_N);
	assert_non_null(d->thresholds);
	assert_int_equal(d->thresholds->jank_frames, 3);
	assert_int_equal(d->thresholds->frame_budget_us, 16667);
	assert_int_equal(d->thresholds->touch_latency_ms, 400);
	assert_int_equal(d->thresholds->thermal_trip_mc, RVP_DEFAULT_THERMAL_TRIP_MC);
	assert_int_equal(rvp_policy_validate(d), 0);
	/* Zero fields fall back to the defaults. */
	assert_int_equal(rvp_policy_weekly_quota(&zero), 3);
	assert_int_equal(rvp_policy_debounce_captures(&zero), 3);
	assert_int_equal(rvp_policy_debounce_window_s(&zero), 600);
	assert_int_equal(rvp_policy_selection(&zero), REARVIEW__SELECTION_MODE__SELECT_FIRST_N);
	zero.selection = (Rearview__SelectionMode)77;
	assert_int_equal(rvp_policy_selection(&zero), REARVIEW__SELECTION_MODE__SELECT_FIRST_N);
}

static void test_rules_validate_rejects_hostile_bodies(void **state)
{
	char longs[RVP_MAX_STRING + 2];
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT;
	Rearview__Campaign *cs[] = {&c};
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	char *pats[1];

	memset(longs, 'a', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = '\0';
	b.campaigns = cs;
	b.n_campaigns = 1;
	c.id = (char *)"ok";
	assert_int_equal(rvp_policy_validate(&b), 0);

	c.id = (char *)"";
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.id = longs;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.id = (char *)"ok";
	c.sample_probability = NAN;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.sample_probability = 1.5;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.sample_probability = -0.1;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.sample_probability = 0.5;
	c.valid_from_s = 10;
	c.valid_until_s = 5;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.valid_until_s = 0;
	pats[0] = longs;
	c.app_patterns = pats;
	c.n_app_patterns = 1;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.n_app_patterns = RVP_MAX_LIST + 1;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	c.n_app_patterns = 0;
	b.n_campaigns = RVP_MAX_CAMPAIGNS + 1;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	b.n_campaigns = 1;
	b.issued_at_s = 100;
	b.expires_at_s = 50;
	assert_int_equal(rvp_policy_validate(&b), -EINVAL);
	assert_int_equal(rvp_policy_validate(NULL), -EINVAL);
}

static void test_rules_signature_match_table(void **state)
{
	static const char *const chain[] = {"main", "ui_loop", "draw_frame", "layout",
					    "measure_text"};
	char *one[] = {(char *)"layout"}, *glob[] = {(char *)"measure_*"},
	     *seq[] = {(char *)"ui_loop", (char *)"layout"},
	     *rev[] = {(char *)"layout", (char *)"ui_loop"}, *miss[] = {(char *)"gc"};
	static const struct {
		int which;
		uint64_t min, dur;
		int want;
	} t[] = {
		{0, 0, 1, 1}, {1, 0, 1, 1},	{2, 0, 1, 1},	  {3, 0, 1, 0},
		{4, 0, 1, 0}, {2, 500, 499, 0}, {2, 500, 500, 1},
	};
	char **lists[] = {one, glob, seq, rev, miss};
	size_t lens[] = {1, 1, 2, 2, 1};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		Rearview__SignatureModel m = REARVIEW__SIGNATURE_MODEL__INIT;
		m.methods = lists[t[i].which];
		m.n_methods = lens[t[i].which];
		m.min_duration_ns = t[i].min;
		if (rvp_signature_match(&m, chain, 5, t[i].dur) != t[i].want)
			fail_msg("row %zu", i);
	}
	Rearview__SignatureModel empty = REARVIEW__SIGNATURE_MODEL__INIT;
	assert_int_equal(rvp_signature_match(&empty, chain, 5, 1), 0);
	assert_int_equal(rvp_signature_match(NULL, chain, 5, 1), 0);
}

static void test_rules_unmetered_only_waits_on_metered_networks(void **state)
{
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	enum rvp_reason why;

	assert_int_equal(rvp_upload_conditions_ok(&b, 1, &why), 1);
	assert_int_equal(why, RVP_ACCEPTED);
	b.unmetered_only = 1;
	assert_int_equal(rvp_upload_conditions_ok(&b, 0, &why), 1);
	assert_int_equal(rvp_upload_conditions_ok(&b, 1, &why), 0);
	assert_int_equal(why, RVP_WAITING_UNMETERED);
	assert_int_equal(rvp_upload_conditions_ok(rvp_policy_default(), 1, NULL), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_reason_names_are_distinct),
		cmocka_unit_test(test_rules_consent_table_allows_exactly_the_level),
		cmocka_unit_test(test_rules_purge_on_lowering_returns_forbidden_items),
		cmocka_unit_test(test_rules_version_cmp_is_numeric_per_component),
		cmocka_unit_test(test_rules_sample_is_deterministic_and_near_p),
		cmocka_unit_test(test_rules_campaign_match_table_names_each_miss),
		cmocka_unit_test(test_rules_elapsed_ignores_wall_jumps_within_a_boot),
		cmocka_unit_test(test_rules_default_policy_has_documented_values),
		cmocka_unit_test(test_rules_validate_rejects_hostile_bodies),
		cmocka_unit_test(test_rules_signature_match_table),
		cmocka_unit_test(test_rules_unmetered_only_waits_on_metered_networks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
