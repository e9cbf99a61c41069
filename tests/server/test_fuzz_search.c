/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_search.c — deterministic replay of the server_search fuzz corpus
 * (tests/fuzz/server_search.c), every truncation of each seed included.
 */
#include "../fuzz/server_search.c"
#include "fuzz_replay.h"

/* The harness's oracle and the matcher agree on a pattern with stars. */
static void test_fuzz_search_pattern_matches_as_documented(void **state)
{
	static const char *const fr[] = {"main", "loop", "layout", "draw", "flush"};
	static const size_t len[] = {4, 4, 6, 4, 5};
	size_t from, to;

	assert_int_equal(rvs_chain_pattern_parse("loop > * > draw", &pat), 0);
	assert_int_equal(pat.n, 3);
	assert_int_equal(rvs_chain_match(&pat, fr, len, 5, &from, &to), 1);
	assert_int_equal(from, 1);
	assert_int_equal(to, 4);
	assert_true(exact(&pat, fr, len, 1, 4));
	assert_false(exact(&pat, fr, len, 0, 4));
	assert_int_equal(rvs_chain_pattern_parse("* > *", &pat), -EINVAL);
}

static void test_fuzz_search_corpus_replays_cleanly(void **state)
{
	assert_true(replay_dir(RVS_SRCDIR "/tests/fuzz/server_search_corpus") >= 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_search_pattern_matches_as_documented),
		cmocka_unit_test(test_fuzz_search_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
