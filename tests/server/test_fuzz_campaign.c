/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_campaign.c — deterministic replay of the server_campaign fuzz corpus
 * (tests/fuzz/server_campaign.c), every truncation of each seed included.
 */
#include "../fuzz/server_campaign.c"
#include "fuzz_replay.h"

/* The seeds are what their names say: two valid specs (normalized with
 * ISO times as seconds, kind names and numbers as names) and two refused
 * ones whose reason names the problem. */
static void test_fuzz_campaign_seeds_normalize_as_documented(void **state)
{
	static const char full[] =
		"{\"id\":\"touch-2026.11\",\"priority\":10,\"app_patterns\":[\"a.b\"],"
		"\"valid_from_s\":\"2026-11-01\",\"kinds\":[\"touch\",3],"
		"\"sample_probability\":0.5}";
	static const char typo[] = "{\"id\":\"typo\",\"sample_probabilty\":1}";
	char err[256], *out;

	assert_int_equal(rvs_campaign_normalize(full, strlen(full), &out, err, sizeof err), 0);
	assert_non_null(strstr(out, "\"valid_from_s\":1793491200"));
	assert_non_null(strstr(out, "\"kinds\":[\"ANOMALY_TOUCH_LATENCY\","));
	free(out);
	assert_int_equal(rvs_campaign_normalize(typo, strlen(typo), &out, err, sizeof err),
			 -EINVAL);
	assert_null(out);
	assert_non_null(strstr(err, "sample_probabilty"));
	assert_int_equal(rvs_campaign_normalize(full, sizeof full / 2, &out, err, sizeof err),
			 -EINVAL);
	assert_non_null(strstr(err, "not JSON"));
}

static void test_fuzz_campaign_corpus_replays_cleanly(void **state)
{
	assert_true(replay_dir(RVS_SRCDIR "/tests/fuzz/server_campaign_corpus") >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_campaign_seeds_normalize_as_documented),
		cmocka_unit_test(test_fuzz_campaign_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
