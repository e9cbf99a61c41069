/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_symbols.c — deterministic replay of the server_symbols fuzz
 * corpus (a small debug file, an object without build-id, a stripped
 * executable) and every truncation of each.
 */
#include "../fuzz/server_symbols.c"
#include "fuzz_replay.h"

static void test_fuzz_symbols_corpus_replays_cleanly(void **state)
{
	assert_true(replay_dir(RVS_SRCDIR "/tests/fuzz/server_symbols_corpus") >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_symbols_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
