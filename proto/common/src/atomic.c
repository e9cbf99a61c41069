/* SPDX-License-Identifier: Apache-2.0 */
/*
 * atomic.c — the one atomic, durable file replacement (rearview/common.h):
 * temporary file beside the target, fill, fsync, close, rename, directory
 * fsync.
 *
 * Invariants:
 *  - the temporary file is created by mkostemp (O_EXCL, unpredictable name)
 *    in the target's own directory, so the rename never crosses a file
 *    system and never truncates or follows anyone else's file;
 *  - `path` changes only by the rename, and only after the content was
 *    fsync'd and the descriptor closed without error;
 *  - every failure before the rename removes the temporary file.
 */
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_SUFFIX ".tmp.XXXXXX"

struct buffer {
	const void *buf;
	size_t len;
};

static int fill_buffer(int fd, void *arg)
{
	const struct buffer *b = arg;

	return rvc_write_all(fd, b->buf, b->len);
}

int rvc_write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode)
{
	struct buffer b = {buf, len};

	assert(buf || len == 0);
	return rvc_write_file_atomic_fn(path, mode, fill_buffer, &b);
}

int rvc_write_file_atomic_fn(const char *path, mode_t mode, rvc_fill_fn fill, void *arg)
{
	size_t n = strlen(path);
	char *tmp, *dir;
	int fd, rc;

	assert(fill);
	if (n == 0)
		return -ENOENT;
	if (n >= PATH_MAX)
		return -ENAMETOOLONG;
	/* One allocation: the template, then a copy of path for dirname(). */
	tmp = malloc(2 * n + sizeof(TMP_SUFFIX) + 1);
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, n);
	memcpy(tmp + n, TMP_SUFFIX, sizeof(TMP_SUFFIX));
	dir = tmp + n + sizeof(TMP_SUFFIX);
	memcpy(dir, path, n + 1);

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto free_tmp;
	}
	rc = fchmod(fd, mode) < 0 ? -errno : 0;
	if (rc == 0)
		rc = fill(fd, arg);
	assert(rc <= 0);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		goto free_tmp;
	}
	/* The rename is durable only once the directory entry is. */
	rc = rvc_fsync_dir(dirname(dir));
free_tmp:
	free(tmp);
	return rc;
}
