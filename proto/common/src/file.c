/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file.c — a whole small file read into memory (rearview/common.h's
 * rvc_read_file): the policy store's documents, the server's keys,
 * secrets, policies and tokens.
 *
 * Invariants: only a regular file is read, and only when its size is at
 * most the caller's bound (checked before any allocation); the buffer is
 * NUL-terminated; a file that shrinks while read is -EIO (rvc_read_all).
 */
#include "rearview/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int rvc_read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf;
	int rc;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	rc = rvc_read_all(fd, buf, (size_t)st.st_size);
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[st.st_size] = '\0';
	*out = buf;
	*len = (size_t)st.st_size;
	return 0;
}
