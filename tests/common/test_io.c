/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_io.c — whole reads and writes (proto/common/src/io.c): every byte
 * moves through a pipe whose writes and reads come in pieces, a short read
 * is -EIO, pread leaves the offset alone, errors come back as -errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/common.h"

#define BIG (1u << 20) /* larger than a pipe's buffer: forces partial I/O */

static uint8_t *pattern(size_t n)
{
	uint8_t *b = malloc(n);

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 31 + (i >> 8));
	return b;
}

static void test_io_pipe_in_pieces_moves_every_byte(void **state)
{
	uint8_t *want = pattern(BIG), *got = malloc(BIG);
	int p[2];
	pid_t pid;
	int status;

	assert_non_null(got);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(rvc_write_all(p[1], want, BIG) == 0 ? 0 : 1);
	}
	close(p[1]);
	assert_int_equal(rvc_read_all(p[0], got, BIG), 0);
	assert_memory_equal(got, want, BIG);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(want);
	free(got);
}

static void test_io_short_read_fails_eio(void **state)
{
	uint8_t buf[16];
	int p[2];

	assert_int_equal(pipe(p), 0);
	assert_int_equal(rvc_write_all(p[1], "abc", 3), 0);
	close(p[1]);
	assert_int_equal(rvc_read_all(p[0], buf, sizeof buf), -EIO);
	close(p[0]);
}

static void test_io_read_zero_bytes_succeeds(void **state)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	close(p[1]);
	assert_int_equal(rvc_read_all(p[0], NULL, 0), 0);
	close(p[0]);
}

static void test_io_bad_descriptor_returns_ebadf(void **state)
{
	char c = 0;
	int p[2];

	assert_int_equal(pipe(p), 0);
	close(p[0]);
	close(p[1]);
	assert_int_equal(rvc_write_all(p[1], &c, 1), -EBADF);
	assert_int_equal(rvc_read_all(p[0], &c, 1), -EBADF);
	assert_int_equal(rvc_pread_all(p[0], &c, 1, 0), -EBADF);
}

static void test_io_pread_reads_at_offset_and_fails_past_end(void **state)
{
	char path[] = "/tmp/rvc-io-XXXXXX";
	int fd = mkstemp(path);
	char buf[4];

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(rvc_write_all(fd, "0123456789", 10), 0);
	assert_int_equal(rvc_pread_all(fd, buf, 4, 3), 0);
	assert_memory_equal(buf, "3456", 4);
	/* The file offset is untouched: still at the end of the write. */
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 10);
	assert_int_equal(rvc_pread_all(fd, buf, 4, 8), -EIO);
	close(fd);
}

static void test_io_fsync_dir_missing_returns_enoent(void **state)
{
	assert_int_equal(rvc_fsync_dir("/tmp"), 0);
	assert_int_equal(rvc_fsync_dir("/nonexistent-rvc-dir/x"), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_io_pipe_in_pieces_moves_every_byte),
		cmocka_unit_test(test_io_short_read_fails_eio),
		cmocka_unit_test(test_io_read_zero_bytes_succeeds),
		cmocka_unit_test(test_io_bad_descriptor_returns_ebadf),
		cmocka_unit_test(test_io_pread_reads_at_offset_and_fails_past_end),
		cmocka_unit_test(test_io_fsync_dir_missing_returns_enoent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
