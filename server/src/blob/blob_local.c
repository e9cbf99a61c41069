/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob_local.c — the local-directory blob backend (the default; blob.h's
 * interface over the rvs_blob_put/path/sweep functions rvs.h declares).
 *
 * Layout: DIR/<2 hex>/<64 hex>, the name being the SHA-256 of the content,
 * so an identical payload is stored once and a name can never point outside
 * DIR.  A blob appears under its name only complete and durable: it is
 * written by rvc_write_file_atomic (a temporary file beside its name,
 * fsync'd, renamed into place, the directory fsync'd), and its fan-out
 * directory's own entry is made durable (DIR fsync'd) before it returns, so
 * an upload acknowledged after rvs_blob_put finds its blob after power
 * loss (issue 18 item 6).  Runs on the work
 * queue only (blocking I/O).
 * rvs_blob_sweep() collects what a crash leaves: temporary files (any name
 * that is not a blob's, in a fan-out directory or the DIR/tmp of older
 * servers) and, given a reference check, blobs no upload names.
 */
#include "blob/blob.h"
#include "base/util.h"
#include "rearview/common.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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
	snprintf(sub, sizeof sub, "%s/%.2s", dir, hex);
	if (stat(final, &st) == 0 && (size_t)st.st_size == len) {
		/* Already stored: content addressing makes this a no-op.  The new
		 * mtime keeps retention from unlinking it before the caller's row
		 * references it (retention.h).  Its writer may still be making
		 * its name durable: so do we, before the caller acknowledges. */
		utimensat(AT_FDCWD, final, NULL, 0);
		if ((rc = rvc_fsync_dir(sub)))
			return rc;
		return rvc_fsync_dir(dir);
	}
	if ((rc = mkdir_ok(dir)) || (rc = mkdir_ok(sub)))
		return rc;
	if ((rc = rvc_write_file_atomic(final, data, len, 0600)))
		return rc;
	/* The fan-out directory's entry (made by this call, or by a
	 * concurrent one that has not fsync'd DIR yet); cheap when clean. */
	return rvc_fsync_dir(dir);
}

static int is_blob_name(const char *name, const char *sub)
{
	return strlen(name) == 64 && strspn(name, "0123456789abcdef") == 64 &&
	       strncmp(name, sub, 2) == 0;
}

/* Unlinks DIR/sub/name if it is a regular file at least min_age_s old. */
static int unlink_old(const char *path, int64_t min_age_s, time_t now)
{
	struct stat sb;
	if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode) || now - sb.st_mtime < min_age_s)
		return 0;
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int rvs_blob_sweep(const char *dir, int64_t min_age_s,
		   int (*referenced)(const char *hex, void *arg), void *arg,
		   struct rvs_blob_sweep_stats *out)
{
	struct rvs_blob_sweep_stats st = {0, 0};
	time_t now = time(NULL);
	DIR *top = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!top)
		return errno == ENOENT ? 0 : -errno;
	while (rc >= 0 && (e = readdir(top)) != NULL) {
		char sub[1100], path[1200];
		int is_tmp = strcmp(e->d_name, "tmp") == 0;
		if (!is_tmp &&
		    (strlen(e->d_name) != 2 || strspn(e->d_name, "0123456789abcdef") != 2))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
		DIR *d = opendir(sub);
		if (!d)
			continue;
		struct dirent *f;
		while (rc >= 0 && (f = readdir(d)) != NULL) {
			if (f->d_name[0] == '.')
				continue;
			if (snprintf(path, sizeof path, "%s/%s", sub, f->d_name) >=
			    (int)sizeof path)
				continue;
			if (is_tmp || !is_blob_name(f->d_name, e->d_name)) {
				/* A temporary file of a write that never finished. */
				int r = unlink_old(path, min_age_s, now);
				st.temps += r > 0;
				rc = r < 0 ? r : 0;
			} else if (referenced) {
				int r = referenced(f->d_name, arg);
				if (r < 0)
					rc = r;
				else if (r == 0) {
					r = unlink_old(path, min_age_s, now);
					st.orphans += r > 0;
					rc = r < 0 ? r : 0;
				}
			}
		}
		closedir(d);
	}
	closedir(top);
	if (out)
		*out = st;
	return rc;
}

/* ---- blob.h's function table --------------------------------------------- */

struct local_blobs {
	struct rvs_blobs base; /* first: the handle callers hold */
	char dir[512];
};

static const char *dir_of(struct rvs_blobs *b)
{
	return ((struct local_blobs *)b)->dir;
}

static int local_put(struct rvs_blobs *b, const void *data, size_t len, char hex[65])
{
	return rvs_blob_put(dir_of(b), data, len, hex);
}

static int local_path(struct rvs_blobs *b, const char *hex, char *out, size_t outlen)
{
	return rvs_blob_path(dir_of(b), hex, out, outlen);
}

/* Opens blob hex for reading; *size gets its size. */
static int open_blob(struct rvs_blobs *b, const char *hex, uint64_t *size)
{
	char path[1024];
	struct stat st;
	int fd, rc;

	if ((rc = local_path(b, hex, path, sizeof path)))
		return rc;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ELOOP ? -ENOENT : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

static int local_get(struct rvs_blobs *b, const char *hex, size_t max, uint8_t **out, size_t *len)
{
	uint64_t size;
	uint8_t *buf;
	int fd = open_blob(b, hex, &size), rc;

	if (fd < 0)
		return fd;
	if (size > max) {
		close(fd);
		return -EFBIG;
	}
	if (!(buf = malloc(size ? size : 1))) {
		close(fd);
		return -ENOMEM;
	}
	rc = rvc_read_all(fd, buf, size);
	close(fd);
	if (rc == 0 && !rvs_blob_matches(hex, buf, size))
		rc = -EBADMSG;
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = size;
	return 0;
}

static int local_get_fd(struct rvs_blobs *b, const char *hex, uint64_t max, int fd)
{
	uint64_t size;
	struct rvs_blob_hasher h;
	uint8_t chunk[65536];
	int in = open_blob(b, hex, &size), rc = 0;

	if (in < 0)
		return in;
	if (size > max) {
		close(in);
		return -EFBIG;
	}
	rvs_blob_hasher_init(&h);
	for (uint64_t done = 0; rc == 0 && done < size;) {
		size_t n = size - done < sizeof chunk ? (size_t)(size - done) : sizeof chunk;
		if ((rc = rvc_read_all(in, chunk, n)) == 0 &&
		    (rc = rvc_write_all(fd, chunk, n)) == 0)
			rvs_blob_hasher_update(&h, chunk, n);
		done += n;
	}
	close(in);
	if (rc == 0 && !rvs_blob_hasher_matches(&h, hex))
		rc = -EBADMSG;
	return rc;
}

static int local_exists(struct rvs_blobs *b, const char *hex)
{
	uint64_t size;
	int fd = open_blob(b, hex, &size);

	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	close(fd);
	return 1;
}

static int local_del(struct rvs_blobs *b, const char *hex, int64_t min_age_s)
{
	char path[1024];
	int rc = local_path(b, hex, path, sizeof path);

	if (rc)
		return rc;
	return unlink_old(path, min_age_s, time(NULL));
}

static int local_sweep(struct rvs_blobs *b, int64_t min_age_s,
		       int (*referenced)(const char *hex, void *arg), void *arg,
		       struct rvs_blob_sweep_stats *out)
{
	return rvs_blob_sweep(dir_of(b), min_age_s, referenced, arg, out);
}

static void local_close(struct rvs_blobs *b)
{
	free(b);
}

static const struct rvs_blob_ops local_ops = {
	.name = "local",
	.put = local_put,
	.get = local_get,
	.get_fd = local_get_fd,
	.exists = local_exists,
	.del = local_del,
	.sweep = local_sweep,
	.path = local_path,
	.close = local_close,
};

int rvs_blobs_open_local(const char *dir, struct rvs_blobs **out)
{
	struct local_blobs *l = calloc(1, sizeof *l);

	if (!l)
		return -ENOMEM;
	if (!dir[0] || snprintf(l->dir, sizeof l->dir, "%s", dir) >= (int)sizeof l->dir) {
		free(l);
		return -EINVAL;
	}
	l->base.ops = &local_ops;
	assert((void *)l == (void *)&l->base);
	*out = &l->base;
	return 0;
}
