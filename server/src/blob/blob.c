/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob.c — what blob.h's backends and their users share: the decoder's
 * file of a blob (the local file or a verified temporary copy), closing a
 * handle, and checking content against its SHA-256 name.  Opening the
 * backend a spec names is blob_open.c's.
 * Invariant: a handle's ops table is one of the backends' static tables;
 * a temporary copy is removed here on every error, so only a successful
 * rvs_blobs_file hands the caller a file to unlink.
 */
#include "blob/blob.h"
#include "base/util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rvs_blob_name_ok(const char *hex)
{
	return strlen(hex) == 64 && strspn(hex, "0123456789abcdef") == 64;
}

int rvs_blob_matches(const char *hex, const void *data, size_t len)
{
	uint8_t digest[32];
	char got[65];

	rvs_sha256(data, len, digest);
	rvs_hex(digest, 32, got);
	return strcmp(got, hex) == 0;
}

void rvs_blob_hasher_init(struct rvs_blob_hasher *h)
{
	mbedtls_sha256_init(&h->ctx);
	mbedtls_sha256_starts_ret(&h->ctx, 0);
}

void rvs_blob_hasher_update(struct rvs_blob_hasher *h, const void *data, size_t len)
{
	mbedtls_sha256_update_ret(&h->ctx, data, len);
}

int rvs_blob_hasher_matches(struct rvs_blob_hasher *h, const char *hex)
{
	uint8_t digest[32];
	char got[65];

	mbedtls_sha256_finish_ret(&h->ctx, digest);
	mbedtls_sha256_free(&h->ctx);
	rvs_hex(digest, 32, got);
	return strcmp(got, hex) == 0;
}

void rvs_blobs_close(struct rvs_blobs *b)
{
	if (b)
		b->ops->close(b);
}

int rvs_blobs_file(struct rvs_blobs *b, const char *hex, uint64_t max, char *path, size_t pathlen,
		   int *is_temp)
{
	int fd, rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	*is_temp = 0;
	if (b->ops->path)
		return b->ops->path(b, hex, path, pathlen);
	if (snprintf(path, pathlen, "%s/rvs-blob-XXXXXX", b->tmp_dir[0] ? b->tmp_dir : "/tmp") >=
	    (int)pathlen)
		return -ENAMETOOLONG;
	if ((fd = mkostemp(path, O_CLOEXEC)) < 0)
		return -errno;
	rc = b->ops->get_fd(b, hex, max, fd);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc) {
		unlink(path);
		return rc;
	}
	*is_temp = 1;
	return 0;
}
