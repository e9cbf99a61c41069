/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.c — hashing, randomness, whole-file reads and atomic writes
 * (librvcommon's) shared by the server's parts.
 * Every function here is thread-safe: the work queue uses them as much as
 * the loop thread does.
 */
#include "base/util.h"
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/md.h>
#include <mbedtls/pkcs5.h>
#include <mbedtls/sha256.h>

void rvs_sha256(const void *data, size_t len, uint8_t out[32])
{
	mbedtls_sha256_ret(data, len, out, 0);
}

void rvs_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

int rvs_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rvs_random_word(char *out, size_t n)
{
	static const char alpha[] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
	uint8_t r[64];
	if (n > sizeof r || rvs_random(r, n))
		return -EIO;
	for (size_t i = 0; i < n; i++)
		out[i] = alpha[r[i] % (sizeof alpha - 1)];
	out[n] = '\0';
	return 0;
}

int rvs_read_private_file(const char *path, void *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if (st.st_mode & 077)
		rc = -EPERM;
	else if (st.st_size <= 0 || (uint64_t)st.st_size > cap)
		rc = -EINVAL;
	else
		rc = rvc_read_all(fd, buf, (size_t)st.st_size);
	close(fd);
	if (!rc)
		*len = (size_t)st.st_size;
	return rc;
}

int rvs_ct_equal(const void *a, size_t alen, const void *b, size_t blen)
{
	/* Compare digests so the time depends on neither length nor content. */
	uint8_t da[32], db[32];
	unsigned diff = 0;
	rvs_sha256(a, alen, da);
	rvs_sha256(b, blen, db);
	for (int i = 0; i < 32; i++)
		diff |= (unsigned)(da[i] ^ db[i]);
	return diff == 0;
}

int rvs_pbkdf2(const char *pw, const uint8_t *salt, size_t saltlen, unsigned iter, uint8_t out[32])
{
	mbedtls_md_context_t md;
	int rc;

	mbedtls_md_init(&md);
	rc = mbedtls_md_setup(&md, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 1);
	if (rc == 0)
		rc = mbedtls_pkcs5_pbkdf2_hmac(&md, (const unsigned char *)pw, strlen(pw), salt,
					       saltlen, iter, 32, out);
	mbedtls_md_free(&md);
	return rc == 0 ? 0 : -EIO;
}

int rvs_read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
	return rvc_read_file(path, max, out, len);
}

int rvs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	return rvc_write_file_atomic(path, data, len, mode);
}
