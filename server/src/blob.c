/*
 * blob.c — the content-addressed blob store.
 *
 * Layout: DIR/<2 hex>/<64 hex>, the name being the SHA-256 of the content,
 * so an identical payload is stored once and a name can never point outside
 * DIR.  A blob appears under its name only complete and durable: it is
 * written to a temporary file in DIR/tmp, fsync'd, renamed into place and
 * the directory fsync'd.  Runs on the work queue only (blocking I/O).
 */
#include "rvs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mkdir_ok(const char *path)
{
	if (mkdir(path, 0750) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int rvs_blob_path(const char *dir, const char *hex, char *out, size_t outlen)
{
	if (strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64)
		return -EINVAL;
	if (snprintf(out, outlen, "%s/%.2s/%s", dir, hex, hex) >= (int)outlen)
		return -ENAMETOOLONG;
	return 0;
}

static int sync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fsync(fd);
	close(fd);
	return 0;
}

int rvs_blob_put(const char *dir, const void *data, size_t len, char hex[65])
{
	uint8_t digest[32];
	char sub[1024], final[1024], tmpdir[1024], tmp[1100];
	const uint8_t *p = data;
	size_t left = len;
	int fd, rc;
	struct stat st;

	rvs_sha256(data, len, digest);
	rvs_hex(digest, 32, hex);
	if ((rc = rvs_blob_path(dir, hex, final, sizeof final)))
		return rc;
	if (stat(final, &st) == 0 && (size_t)st.st_size == len) {
		/* Already stored: content addressing makes this a no-op.  The new
		 * mtime keeps retention from unlinking it before the caller's row
		 * references it (retention.h). */
		utimensat(AT_FDCWD, final, NULL, 0);
		return 0;
	}
	snprintf(sub, sizeof sub, "%s/%.2s", dir, hex);
	snprintf(tmpdir, sizeof tmpdir, "%s/tmp", dir);
	if ((rc = mkdir_ok(dir)) || (rc = mkdir_ok(sub)) || (rc = mkdir_ok(tmpdir)))
		return rc;
	snprintf(tmp, sizeof tmp, "%s/%s.XXXXXX", tmpdir, hex);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = 0;
	while (left > 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, final) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return sync_dir(sub);
}
