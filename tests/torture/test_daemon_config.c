/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_config.c — allocation-failure test for rearviewd's
 * configuration parser (device/src/config.c): loading a file with a key in
 * every section.  Each failing allocation (stdio's FILE and buffers, inih)
 * must give -ENOMEM, never -EINVAL that would blame the file, no crash and
 * no leak (tests/torture/torture.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "torture.h"

static const char conf[] = "[daemon]\n"
			   "run_dir = /run/rv-torture\n"
			   "state_dir = /var/lib/rv-torture\n"
			   "log_level = err\n"
			   "[sockets]\n"
			   "control_mode = 0666\n"
			   "events_group = 0\n"
			   "max_frame = 1048576\n"
			   "[tracing]\n"
			   "traced_apps = 3\n"
			   "buffer_bytes = 2097152\n"
			   "[jank]\n"
			   "[touch]\n"
			   "[thermal]\n"
			   "[correlation]\n"
			   "[capture]\n"
			   "[policy]\n"
			   "[upload]\n"
			   "server_url = https://127.0.0.1:8443/\n";

static int run_load(void *arg)
{
	struct rvd_config c;
	int rc;

	rvd_config_defaults(&c);
	rc = rvd_config_load(&c, arg);
	if (rc == 0) {
		assert_int_equal(c.traced_apps, 3);
		assert_string_equal(c.server_url, "https://127.0.0.1:8443/");
	}
	return rc;
}

static void test_daemon_config_load_each_alloc_failing_fails_cleanly(void **state)
{
	char path[] = "/tmp/rv-torture-conf-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, conf, sizeof(conf) - 1), (ssize_t)(sizeof(conf) - 1));
	close(fd);
	assert_int_equal(run_load(path), 0);
	assert_true(torture_run(run_load, path, -ENOMEM) > 0);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_daemon_config_load_each_alloc_failing_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
