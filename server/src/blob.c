/*
 * blob.c — the content-addressed blob store.
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
#include "rvs.h"
#include "rearview/common.h"

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
