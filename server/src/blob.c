/*
 * blob.c — the content-addressed blob store.
 *
 * Layout: DIR/<2 hex>/<64 hex>, the name being the SHA-256 of the content,
 * so an identical payload is stored once and a name can never point outside
 * DIR.  A blob appears under its name only complete and durable: it is
 * written by rvc_write_file_atomic (a temporary file beside its name,
 * fsync'd, renamed into place, the directory fsync'd).  Runs on the work
 * queue only (blocking I/O).
 */
#include "rvs.h"
#include "rearview/common.h"

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

int rvs_blob_put(const char *dir, const void *data, size_t len, char hex[65])
{
	uint8_t digest[32];
	char sub[1024], final[1024];
	int rc;
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
	if ((rc = mkdir_ok(dir)) || (rc = mkdir_ok(sub)))
		return rc;
	return rvc_write_file_atomic(final, data, len, 0600);
}
