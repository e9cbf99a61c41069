/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fork.c — fork(): the child starts clean (untraced, no buffers, its
 * own registry) while the parent keeps tracing; developer mode (RV_TRACE=1,
 * RV_TRACE_FILE) writes a capture at exit, checked in a re-executed child.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "fixture.h"
#include "rearview/trace-inline.h"
#include "rearview/trace.h"

static const char *self_path;

static int child_checks(void)
{
	if (rvt_is_tracing(0))
		return 10;
	if (__atomic_load_n(&rvt__tls.start, __ATOMIC_SEQ_CST) != 0)
		return 11;
	call_top(1); /* instrumented code runs, untraced */
	uint64_t size;
	if (rvt_capture_to_memfd(0, &size) != -ENODATA)
		return 12;
	/* The child may trace itself from scratch. */
	if (rvt_start(0) != 0)
		return 13;
	call_top(1);
	int fd = rvt_capture_to_memfd(0, &size);
	if (fd < 0)
		return 14;
	struct cu_capture c;
	if (cu_parse_fd(fd, &c) != 0 || cu_find_entry(&c, "call_leaf", 0) < 0)
		return 15;
	if (c.pid != (uint32_t)getpid())
		return 16;
	cu_release(&c);
	return 0;
}

static void test_fork_child_starts_untraced_parent_continues(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	call_top(1);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_checks());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(rvt_is_tracing(0), 1);
	inl_top(1);
	uint64_t size;
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	struct cu_capture c;
	assert_int_equal(cu_parse_fd(fd, &c), 0);
	long a = cu_find_entry(&c, "call_top", 0);
	assert_true(a >= 0);
	assert_true(cu_find_entry(&c, "inl_top", (size_t)a) > a);
	cu_release(&c);
	close(fd);
	assert_int_equal(rvt_stop(0, 1), 0);
}

static void test_fork_developer_mode_writes_capture_at_exit(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-fork-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/main.rvt", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("RV_TRACE", "1", 1);
		setenv("RV_TRACE_FILE", path, 1);
		setenv("RV_TRACE_BUFFER", "64k", 1);
		execl(self_path, self_path, "--dev-child", (char *)NULL);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	struct cu_capture c;
	assert_int_equal(cu_parse_file(path, &c), 0);
	assert_int_equal(c.ring_slots, 64 * 1024 / 8);
	assert_true(cu_find_entry(&c, "call_leaf", 0) >= 0);
	assert_true(cu_find_entry(&c, "inl_leaf", 0) >= 0);
	assert_int_equal(c.pid, (uint32_t)pid);
	cu_release(&c);
	unlink(path);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	self_path = argv[0];
	if (argc > 1 && strcmp(argv[1], "--dev-child") == 0) {
		if (!rvt_is_tracing(0))
			return 3;
		call_top(2);
		inl_top(2);
		return 0; /* the capture happens at exit */
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_child_starts_untraced_parent_continues),
		cmocka_unit_test(test_fork_developer_mode_writes_capture_at_exit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
