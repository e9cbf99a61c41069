/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_dbus.c — deterministic replay of the device_dbus fuzz corpus
 * (tests/fuzz/device_dbus.c: org.rearview.Daemon1 over a private sd-bus
 * pair, polkit answered by the peer), every truncation of each seed
 * included, and what the seeds must do: a consent change happens exactly
 * when polkit says yes, every call is answered.
 */
#include "../fuzz/device_dbus.c"
#include "../server/fuzz_replay.h"

#ifndef RV_SRC_DIR
#error RV_SRC_DIR names the source tree
#endif

/* Runs seed `name` as one session. */
static void run_seed(const char *name)
{
	char path[512];
	uint8_t buf[512];
	size_t len;
	FILE *f;

	snprintf(path, sizeof path, "%s/tests/fuzz/device_dbus_corpus/%s", RV_SRC_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
}

static void test_fuzz_dbus_consent_changes_only_on_polkit_yes(void **state)
{
	(void)state;
	run_seed("consent-off-authorized"); /* full, polkit yes, SetConsent("off") */
	assert_int_equal(g.consent, REARVIEW__CONSENT_LEVEL__CONSENT_OFF);
	assert_int_equal(g.calls, 1);
	assert_int_equal(g.answered, 1);
	assert_int_equal(g.changes_ok, 1);
	static const char *const refused[] = {"consent-off-refused", "consent-polkit-error",
					      "consent-polkit-wrong-type",
					      "consent-polkit-short-reply"};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		run_seed(refused[i]);
		assert_int_equal(g.consent, REARVIEW__CONSENT_LEVEL__CONSENT_FULL);
		assert_int_equal(g.answered, 1);
		assert_int_equal(g.changes_ok, 0);
	}
	run_seed("consent-challenge"); /* off, polkit asks for authentication */
	assert_int_equal(g.consent, REARVIEW__CONSENT_LEVEL__CONSENT_OFF);
	assert_int_equal(g.changes_ok, 0);
	run_seed("consent-unknown-level"); /* refused before polkit is asked */
	assert_int_equal(g.consent, REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY);
	assert_int_equal(g.authorized, 0);
	assert_int_equal(g.answered, 1);
}

static void test_fuzz_dbus_delete_and_hostile_calls_answered(void **state)
{
	(void)state;
	run_seed("delete-authorized");
	assert_int_equal(g.changes_ok, 1);
	assert_int_equal(g.consent, REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY); /* kept */
	run_seed("delete-with-argument");
	assert_int_equal(g.changes_ok, 0);
	assert_int_equal(g.answered, 1);
	run_seed("consent-wrong-args");
	assert_int_equal(g.calls, 4);
	assert_int_equal(g.answered, 4);
	assert_int_equal(g.changes_ok, 0);
	run_seed("properties");
	assert_int_equal(g.calls, 7);
	assert_int_equal(g.answered, 7);
	run_seed("burst-then-answers");
	assert_int_equal(g.answered, g.calls);
	assert_true(g.calls >= 5);
}

static void test_fuzz_dbus_corpus_replays_cleanly(void **state)
{
	(void)state;
	assert_true(replay_dir(RV_SRC_DIR "/tests/fuzz/device_dbus_corpus") >= 14);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_dbus_consent_changes_only_on_polkit_yes),
		cmocka_unit_test(test_fuzz_dbus_delete_and_hostile_calls_answered),
		cmocka_unit_test(test_fuzz_dbus_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
