/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_params.c — the request-parameter helpers every endpoint shares
 * (params.c) and the version order (version.c): anomaly kinds by number or
 * name, the limit clamp, times as unix seconds or ISO 8601, versions sorted
 * as versions within their groups.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/params.h"
#include "base/version.h"

static void test_params_kind_number_or_any_name_parses(void **state)
{
	static const struct {
		const char *in;
		int64_t want;
	} ok[] = {
		{"1", 1},
		{"ANOMALY_JANK", 1},
		{"anomaly_jank", 1},
		{"jank", 1},
		{"Jank", 1},
		{"touch", 2},
		{"touch_latency", 2},
		{"ANOMALY_TOUCH_LATENCY", 2},
		{"thermal", 3},
		{"generic", 4},
		{"MANUAL", 5},
		{"0", 0},
	};
	static const char *const bad[] = {"", "jan", "latency", "ANOMALY_", "1x", "touchy", " 1"};
	int64_t k;

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		k = -1;
		assert_int_equal(rvs_param_kind(ok[i].in, &k), 0);
		assert_int_equal(k, ok[i].want);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		k = 77;
		assert_int_equal(rvs_param_kind(bad[i], &k), -EINVAL);
		assert_int_equal(k, 77);
	}
}

static void test_params_limit_defaults_and_clamps(void **state)
{
	int64_t l;

	assert_int_equal(rvs_param_limit("", 50, 500, &l), 0);
	assert_int_equal(l, 50);
	assert_int_equal(rvs_param_limit("app=x&limit=", 50, 500, &l), 0);
	assert_int_equal(l, 50);
	assert_int_equal(rvs_param_limit("limit=7", 50, 500, &l), 0);
	assert_int_equal(l, 7);
	assert_int_equal(rvs_param_limit("limit=500", 50, 500, &l), 0);
	assert_int_equal(l, 500);
	assert_int_equal(rvs_param_limit("limit=501", 50, 500, &l), 0);
	assert_int_equal(l, 500);
	assert_int_equal(rvs_param_limit("limit=99999999999999999999", 20, 100, &l), -EINVAL);
	assert_int_equal(rvs_param_limit("limit=0", 20, 100, &l), -EINVAL);
	assert_int_equal(l, 20);
	assert_int_equal(rvs_param_limit("limit=-3", 20, 100, &l), -EINVAL);
	assert_int_equal(rvs_param_limit("limit=ten", 20, 100, &l), -EINVAL);
	assert_int_equal(rvs_param_limit("limit=%zz", 20, 100, &l), -EINVAL);
}

static void test_params_time_unix_or_iso8601_parses(void **state)
{
	static const struct {
		const char *in;
		int64_t want;
	} ok[] = {
		{"0", 0},
		{"1767225600", 1767225600},
		{"2026-01-01", 1767225600},
		{"2026-01-01T00:00", 1767225600},
		{"2026-01-01T12:30", 1767225600 + 12 * 3600 + 30 * 60},
		{"2026-01-01T12:30:15Z", 1767225600 + 12 * 3600 + 30 * 60 + 15},
		{"2026-01-01 12:30", 1767225600 + 12 * 3600 + 30 * 60},
		{"2026-01-01T02:00+02:00", 1767225600},
		{"2026-01-01T02:00+0200", 1767225600},
		{"2025-12-31T19:00-05:00", 1767225600},
		{"2024-02-29", 1709164800},
	};
	static const char *const bad[] = {"",
					  "-1",
					  "2026-1-01",
					  "2026-13-01",
					  "2026-02-29",
					  "2026-04-31",
					  "2026-01-01T",
					  "2026-01-01T24:00",
					  "2026-01-01T12",
					  "2026-01-01T12:30:15Q",
					  "2026-01-01T12:30+2",
					  "1969-12-31",
					  "12abc"};
	int64_t t;

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		t = -1;
		assert_int_equal(rvs_param_time(ok[i].in, &t), 0);
		assert_int_equal(t, ok[i].want);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		t = 77;
		assert_int_equal(rvs_param_time(bad[i], &t), -EINVAL);
		assert_int_equal(t, 77);
	}
}

/* The app_version members of arr, comma-separated, into out. */
static void versions_of(json_t *arr, char *out, size_t cap)
{
	size_t i, o = 0;
	json_t *e;

	out[0] = '\0';
	json_array_foreach(arr, i, e)
	{
		const char *v = json_string_value(json_object_get(e, "app_version"));
		o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", v ? v : "-");
	}
}

static void test_params_versions_sort_as_versions_within_groups(void **state)
{
	json_t *arr = json_pack("[{s:s,s:i},{s:s,s:i},{s:s,s:i},{s:i},{s:s,s:i},{s:s,s:i}]",
				"app_version", "4.9", "week", 2, "app_version", "4.10", "week", 2,
				"app_version", "4.2", "week", 2, "week", 1, "app_version", "10.0",
				"week", 1, "app_version", "9.1", "week", 1);
	char got[128];

	assert_non_null(arr);
	rvs_version_sort(arr, "app_version", (const char *const[]){"week", NULL});
	versions_of(arr, got, sizeof got);
	/* Each week's run in version order (absent first); the runs stay put. */
	assert_string_equal(got, "4.2,4.9,4.10,-,9.1,10.0");
	rvs_version_sort(arr, "app_version", (const char *const[]){NULL});
	versions_of(arr, got, sizeof got);
	assert_string_equal(got, "-,4.2,4.9,4.10,9.1,10.0");
	json_decref(arr);

	assert_true(rvs_version_cmp("4.10", "4.9") > 0);
	assert_true(rvs_version_cmp("4.9.1", "4.10") < 0);
	assert_int_equal(rvs_version_cmp("1.02", "1.2"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_kind_number_or_any_name_parses),
		cmocka_unit_test(test_params_limit_defaults_and_clamps),
		cmocka_unit_test(test_params_time_unix_or_iso8601_parses),
		cmocka_unit_test(test_params_versions_sort_as_versions_within_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
