/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_device_events.c — allocation-failure test for rearviewd's decoder of
 * events.sock payloads (rvd_event_decode, device/src/anomaly.c), fed each
 * seed of tests/fuzz/device_events_corpus.  protobuf-c cannot tell running
 * out of memory from bad bytes, so a failing allocation must end in
 * -EBADMSG (the daemon then closes that peer's connection: it reconnects),
 * never in a crash or a leak.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "anomaly.h"
#include "torture.h"

#ifndef RV_SRC_DIR
#error RV_SRC_DIR names the source tree
#endif

struct event_case {
	uint8_t buf[4096];
	size_t len;
	int msg_case;
};

static int run_event(void *arg)
{
	struct event_case *c = arg;
	Rearview__EventMessage *e;
	const char *why;
	int rc = rvd_event_decode(c->buf, c->len, 1ull << 40, &e, &why);

	if (rc == 0) {
		assert_int_equal(e->msg_case, c->msg_case);
		rearview__event_message__free_unpacked(e, NULL);
	} else {
		assert_null(e);
	}
	return rc;
}

static void test_device_events_decode_each_alloc_failing_fails_cleanly(void **state)
{
	DIR *d = opendir(RV_SRC_DIR "/tests/fuzz/device_events_corpus");
	struct dirent *ent;
	unsigned long tried = 0;
	size_t files = 0;

	assert_non_null(d);
	while ((ent = readdir(d))) {
		struct event_case c;
		Rearview__EventMessage *e;
		const char *why;
		char path[512];
		FILE *f;

		if (ent->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/tests/fuzz/device_events_corpus/%s", RV_SRC_DIR,
			 ent->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		c.len = fread(c.buf, 1, sizeof c.buf, f);
		fclose(f);
		assert_int_equal(rvd_event_decode(c.buf, c.len, 1ull << 40, &e, &why), 0);
		c.msg_case = e->msg_case;
		rearview__event_message__free_unpacked(e, NULL);
		tried += torture_run(run_event, &c, -EBADMSG);
		files++;
	}
	closedir(d);
	assert_true(files >= 9);
	assert_true(tried >= files);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_events_decode_each_alloc_failing_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
