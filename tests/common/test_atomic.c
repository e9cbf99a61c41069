/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_atomic.c — the atomic file write (proto/common/src/atomic.c): the
 * content and mode land, an existing file is replaced whole, and every
 * failure leaves the target untouched, no temporary file behind and the
 * step's errno returned.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/common.h"

struct dir {
	char path[64];
	char file[96];
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof *d);

	if (!d)
		return -1;
	snprintf(d->path, sizeof d->path, "/tmp/rvc-atomic-XXXXXX");
	if (!mkdtemp(d->path))
		return -1;
	snprintf(d->file, sizeof d->file, "%s/out", d->path);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	DIR *dd;
	struct dirent *de;

	chmod(d->path, 0700);
	dd = opendir(d->path);
	while (dd && (de = readdir(dd)) != NULL) {
		char p[400];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", d->path, de->d_name);
		if (unlink(p) < 0)
			rmdir(p);
	}
	if (dd)
		closedir(dd);
	rmdir(d->path);
	free(d);
	return 0;
}

/* Entries in the directory other than . and .. */
static int entries(const char *path)
{
	DIR *dd = opendir(path);
	struct dirent *de;
	int n = 0;

	assert_non_null(dd);
	while ((de = readdir(dd)) != NULL)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(dd);
	return n;
}

static void expect_content(const char *path, const char *want)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof buf);
	close(fd);
	assert_int_equal(n, (ssize_t)strlen(want));
	assert_memory_equal(buf, want, strlen(want));
}

static void test_atomic_new_file_has_content_and_mode(void **state)
{
	struct dir *d = *state;
	struct stat st;

	assert_int_equal(rvc_write_file_atomic(d->file, "hello", 5, 0640), 0);
	expect_content(d->file, "hello");
	assert_int_equal(stat(d->file, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(entries(d->path), 1);
}

static void test_atomic_existing_file_is_replaced_whole(void **state)
{
	struct dir *d = *state;
	struct stat st;

	assert_int_equal(rvc_write_file_atomic(d->file, "a much longer first version", 27, 0600),
			 0);
	assert_int_equal(rvc_write_file_atomic(d->file, "v2", 2, 0644), 0);
	expect_content(d->file, "v2");
	assert_int_equal(stat(d->file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(entries(d->path), 1);
}

static void test_atomic_empty_content_writes_empty_file(void **state)
{
	struct dir *d = *state;
	struct stat st;

	assert_int_equal(rvc_write_file_atomic(d->file, NULL, 0, 0600), 0);
	assert_int_equal(stat(d->file, &st), 0);
	assert_int_equal(st.st_size, 0);
}

static void test_atomic_missing_dir_returns_enoent(void **state)
{
	struct dir *d = *state;
	char path[128];

	snprintf(path, sizeof path, "%s/no/such/file", d->path);
	assert_int_equal(rvc_write_file_atomic(path, "x", 1, 0600), -ENOENT);
	assert_int_equal(entries(d->path), 0);
}

/* rvc_write_file_atomic(path) as an unprivileged user when run as root (a
 * read-only directory does not stop root); its return value. */
static int write_unprivileged(const char *path)
{
	int p[2], rc = 0, status;
	pid_t pid;

	if (geteuid() != 0)
		return rvc_write_file_atomic(path, "x", 1, 0600);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(1);
		rc = rvc_write_file_atomic(path, "x", 1, 0600);
		_exit(write(p[1], &rc, sizeof rc) == sizeof rc ? 0 : 1);
	}
	close(p[1]);
	assert_int_equal(rvc_read_all(p[0], &rc, sizeof rc), 0);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return rc;
}

static void test_atomic_readonly_dir_returns_eacces_leaves_nothing(void **state)
{
	struct dir *d = *state;

	assert_int_equal(chmod(d->path, 0555), 0);
	assert_int_equal(write_unprivileged(d->file), -EACCES);
	assert_int_equal(chmod(d->path, 0700), 0);
	assert_int_equal(entries(d->path), 0);
}

static void test_atomic_rename_failure_removes_temp_keeps_target(void **state)
{
	struct dir *d = *state;

	/* A directory at the path: the rename over it fails (EISDIR). */
	assert_int_equal(mkdir(d->file, 0700), 0);
	assert_int_equal(rvc_write_file_atomic(d->file, "x", 1, 0600), -EISDIR);
	assert_int_equal(entries(d->path), 1);
	assert_int_equal(rmdir(d->file), 0);
}

static int fill_fails(int fd, void *arg)
{
	int *calls = arg;

	(*calls)++;
	if (write(fd, "partial", 7) != 7)
		return -EIO;
	return -ENOSPC;
}

static void test_atomic_fill_failure_removes_temp_keeps_old_content(void **state)
{
	struct dir *d = *state;
	int calls = 0;

	assert_int_equal(rvc_write_file_atomic(d->file, "old", 3, 0600), 0);
	assert_int_equal(rvc_write_file_atomic_fn(d->file, 0600, fill_fails, &calls), -ENOSPC);
	assert_int_equal(calls, 1);
	expect_content(d->file, "old");
	assert_int_equal(entries(d->path), 1);
}

struct pieces {
	const char *const *part;
	size_t n;
};

static int fill_pieces(int fd, void *arg)
{
	const struct pieces *p = arg;
	int rc = 0;

	for (size_t i = 0; i < p->n && rc == 0; i++)
		rc = rvc_write_all(fd, p->part[i], strlen(p->part[i]));
	return rc;
}

static void test_atomic_fn_streams_pieces_into_file(void **state)
{
	struct dir *d = *state;
	static const char *const part[] = {"one,", "two,", "three"};
	struct pieces p = {part, 3};

	assert_int_equal(rvc_write_file_atomic_fn(d->file, 0600, fill_pieces, &p), 0);
	expect_content(d->file, "one,two,three");
	assert_int_equal(entries(d->path), 1);
}

static void test_atomic_relative_path_in_cwd_succeeds(void **state)
{
	struct dir *d = *state;
	char cwd[512];

	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(d->path), 0);
	assert_int_equal(rvc_write_file_atomic("rel", "r", 1, 0600), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(entries(d->path), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_atomic_new_file_has_content_and_mode, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_existing_file_is_replaced_whole, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_empty_content_writes_empty_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_missing_dir_returns_enoent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_atomic_readonly_dir_returns_eacces_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_atomic_rename_failure_removes_temp_keeps_target, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_atomic_fill_failure_removes_temp_keeps_old_content, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_fn_streams_pieces_into_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_relative_path_in_cwd_succeeds, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
