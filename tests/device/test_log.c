/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c — rearviewd's log lines (device/src/log.c): logfmt in the
 * server's shape (ts=… level=… msg="…"), the message escaped onto one line,
 * the level filter, and the "<N>" priority prefix only when stderr is the
 * journal (JOURNAL_STREAM names stderr's device and inode).
 */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* Runs fn with stderr redirected to a temporary file; returns what it wrote
 * (NUL-terminated, caller frees). */
static char *capture_stderr(void (*fn)(void))
{
	char path[] = "/tmp/rv-test-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	char *out = calloc(1, 4096);
	ssize_t n;

	assert_true(fd >= 0 && saved >= 0 && out);
	unlink(path);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	fn();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = pread(fd, out, 4095, 0);
	assert_true(n >= 0);
	close(fd);
	return out;
}

static void matches(const char *s, const char *re)
{
	regex_t rx;
	int rc;

	assert_int_equal(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), 0);
	rc = regexec(&rx, s, 0, NULL, 0);
	regfree(&rx);
	if (rc != 0)
		fail_msg("%s does not match %s", s, re);
}

static void log_tricky(void)
{
	rvd_log_open();
	rvd_log_set_level(RVD_LOG_INFO);
	rvd_warn("a \"q\" b\\c\nd\x01");
	rvd_debug("not shown at info");
	rvd_info("second");
}

static void test_log_message_is_one_escaped_logfmt_line(void **state)
{
	char *out;

	(void)state;
	unsetenv("JOURNAL_STREAM");
	out = capture_stderr(log_tricky);
	matches(out, "^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
		     "level=warn msg=\"a \\\\\"q\\\\\" b\\\\\\\\c\\\\nd\\\\x01\"\n"
		     "ts=[^ ]+ level=info msg=\"second\"\n$");
	free(out);
}

static void log_error_to_journal(void)
{
	struct stat st;
	char js[64];

	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	rvd_log_open();
	rvd_err("to the journal");
	/* Another stream than stderr: plain lines again. */
	setenv("JOURNAL_STREAM", "1:1", 1);
	rvd_log_open();
	rvd_err("not the journal");
}

static void test_log_journal_stream_gets_priority_prefix(void **state)
{
	char *out;

	(void)state;
	out = capture_stderr(log_error_to_journal);
	unsetenv("JOURNAL_STREAM");
	matches(out, "^<3>ts=[^ ]+ level=error msg=\"to the journal\"\n"
		     "ts=[^ ]+ level=error msg=\"not the journal\"\n$");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_message_is_one_escaped_logfmt_line),
		cmocka_unit_test(test_log_journal_stream_gets_priority_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
