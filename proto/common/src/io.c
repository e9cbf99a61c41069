/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io.c — whole reads and writes on a descriptor, and the directory fsync
 * (rearview/common.h).
 *
 * Invariants: a call returns 0 only when every requested byte moved; EINTR
 * and partial transfers are retried, never reported; end of file before the
 * last byte is -EIO.
 */
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int rvc_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	assert(p || len == 0);
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		assert((size_t)n <= len);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rvc_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	assert(p || len == 0);
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		assert((size_t)n <= len);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rvc_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	assert(p || len == 0);
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		assert((size_t)n <= len);
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int rvc_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}
