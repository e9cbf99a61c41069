/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_timeline.c — deterministic replay of the server_timeline fuzz corpus
 * (tests/fuzz/server_timeline.c), every truncation of each seed included.
 */
#include "../fuzz/server_timeline.c"
#include "fuzz_replay.h"

/* A window's answer says the window; a bad parameter is named. */
static void test_fuzz_timeline_query_answers_as_documented(void **state)
{
	const rva_trace *t = timeline_trace();
	const char *bad;
	json_t *doc;

	assert_int_equal(web_timeline_query(t, "width=800&from=10&to=4000", &doc, &bad), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "from")), 10);
	assert_int_equal(json_integer_value(json_object_get(doc, "to")), 4000);
	assert_int_equal(json_integer_value(json_object_get(doc, "width")), 800);
	assert_true(json_array_size(json_object_get(doc, "items")) > 0);
	json_decref(doc);
	assert_int_equal(web_timeline_query(t, NULL, &doc, &bad), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "to")), t->end - t->start);
	json_decref(doc);
	assert_int_equal(web_timeline_query(t, "from=5&to=5", &doc, &bad), -EINVAL);
	assert_string_equal(bad, "to");
	assert_null(doc);
	assert_int_equal(web_timeline_query(t, "width=4097", &doc, &bad), -EINVAL);
	assert_string_equal(bad, "width");
}

static void test_fuzz_timeline_corpus_replays_cleanly(void **state)
{
	assert_true(replay_dir(RVS_SRCDIR "/tests/fuzz/server_timeline_corpus") >= 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_timeline_query_answers_as_documented),
		cmocka_unit_test(test_fuzz_timeline_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
