/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_events.c — deterministic replay of the device_events fuzz
 * corpus (tests/fuzz/device_events.c: events.sock payloads), every
 * truncation of each seed included, and what the seeds decode to.
 */
#include "../fuzz/device_events.c"
#include "../server/fuzz_replay.h"

#ifndef RV_SRC_DIR
#error RV_SRC_DIR names the source tree
#endif

static uint8_t *seed(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	uint8_t *buf = malloc(4096);

	snprintf(path, sizeof path, "%s/tests/fuzz/device_events_corpus/%s", RV_SRC_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 4096, f);
	fclose(f);
	return buf;
}

/* A late frame and a slow touch are accepted; a frame ending before it
 * starts and a touch out of order are refused with their reason. */
static void test_fuzz_events_seeds_decode_as_documented(void **state)
{
	static const struct {
		const char *name;
		int msg_case;
		const char *why;
	} want[] = {
		{"frame-late", REARVIEW__EVENT_MESSAGE__MSG_FRAME, NULL},
		{"frame-ends-before-start", REARVIEW__EVENT_MESSAGE__MSG_FRAME,
		 "frame ends before it starts"},
		{"touch-slow", REARVIEW__EVENT_MESSAGE__MSG_TOUCH, NULL},
		{"touch-out-of-order", REARVIEW__EVENT_MESSAGE__MSG_TOUCH,
		 "input delivered before it happened"},
		{"anomaly", REARVIEW__EVENT_MESSAGE__MSG_ANOMALY, NULL},
	};

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		Rearview__EventMessage *e;
		const char *why;
		size_t len;
		uint8_t *b = seed(want[i].name, &len);

		assert_int_equal(rvd_event_decode(b, len, NOW_NS, &e, &why), 0);
		assert_int_equal(e->msg_case, want[i].msg_case);
		if (want[i].why)
			assert_string_equal(why, want[i].why);
		else
			assert_null(why);
		rearview__event_message__free_unpacked(e, NULL);
		/* A length prefix cut short does not decode. */
		assert_int_equal(rvd_event_decode(b, 2, NOW_NS, &e, &why), -EBADMSG);
		assert_null(e);
		free(b);
	}
}

static void test_fuzz_events_corpus_replays_cleanly(void **state)
{
	assert_true(replay_dir(RV_SRC_DIR "/tests/fuzz/device_events_corpus") >= 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_events_seeds_decode_as_documented),
		cmocka_unit_test(test_fuzz_events_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
