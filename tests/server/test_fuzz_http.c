/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_http.c — deterministic replay of the server_http fuzz corpus.
 */
#include "../fuzz/server_http.c"
#include "fuzz_replay.h"

static void test_fuzz_http_corpus_replays_cleanly(void **state)
{
	assert_true(replay_dir(RVS_SRCDIR "/tests/fuzz/server_http_corpus") >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_http_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
