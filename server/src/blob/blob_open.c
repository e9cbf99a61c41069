/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob_open.c — the backend a blob spec names (blob.h's rvs_blobs_open,
 * rvs_blobs_open_config): "s3://BUCKET/PREFIX", a PostgreSQL URI or a
 * directory.
 * Invariant: a handle's ops table is one of the backends' static tables,
 * with at least put, get_fd and close.
 */
#include "blob/blob.h"
#include "base/config.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rvs_blobs_open(const char *spec, const struct rvs_blob_s3_config *s3, const char *tmp_dir,
		   struct rvs_blobs **out)
{
	struct rvs_blobs *b;
	int rc;

	if (strncmp(spec, "s3://", 5) == 0) {
		char bucket[256];
		const char *slash = strchr(spec + 5, '/');
		size_t n = slash ? (size_t)(slash - (spec + 5)) : strlen(spec + 5);
		if (!s3 || n == 0 || n >= sizeof bucket)
			return -EINVAL;
		memcpy(bucket, spec + 5, n);
		bucket[n] = '\0';
		rc = rvs_blobs_open_s3(bucket, slash ? slash + 1 : "", s3, &b);
	} else if (strncmp(spec, "postgresql://", 13) == 0 ||
		   strncmp(spec, "postgres://", 11) == 0) {
		rc = rvs_blobs_open_pg(spec, &b);
	} else {
		rc = rvs_blobs_open_local(spec, &b);
	}
	if (rc)
		return rc;
	assert(b->ops && b->ops->put && b->ops->get_fd && b->ops->close);
	snprintf(b->tmp_dir, sizeof b->tmp_dir, "%s",
		 tmp_dir && tmp_dir[0] ? tmp_dir : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp"));
	*out = b;
	return 0;
}

int rvs_blobs_open_config(const struct rvs_config *cfg, struct rvs_blobs **out)
{
	struct rvs_blob_s3_config s3 = {
		.endpoint = cfg->s3_endpoint,
		.region = cfg->s3_region,
		.access_key = cfg->s3_access_key,
		.secret_file = cfg->s3_secret_file,
	};
	const char *spec = cfg->blobs[0] ? cfg->blobs : cfg->blob_dir;
	int remote = strncmp(spec, "s3://", 5) == 0 || strncmp(spec, "postgresql://", 13) == 0 ||
		     strncmp(spec, "postgres://", 11) == 0;
	char tmp[600];

	snprintf(tmp, sizeof tmp, "%s/tmp", cfg->blob_dir);
	if (remote && ((mkdir(cfg->blob_dir, 0750) < 0 && errno != EEXIST) ||
		       (mkdir(tmp, 0700) < 0 && errno != EEXIST)))
		return -errno;
	return rvs_blobs_open(spec, &s3, tmp, out);
}
