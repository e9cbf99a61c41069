/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_s3list.c — libFuzzer target: the S3 blob backend's parser of
 * ListObjectsV2 answers (rvs_s3_list_parse, server/src/blob/blob_s3.c,
 * libxml2), what the orphan sweep reads off the network.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "blob/blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char names[RVS_S3_PAGE_MAX][65];
	static int64_t mtimes[RVS_S3_PAGE_MAX];
	struct rvs_s3_page p = {.names = names, .mtimes = mtimes};
	int rc = rvs_s3_list_parse((const char *)data, size, "rv/", &p);

	if (rc == 0) {
		/* Only blob names are listed, at most a page of them. */
		if (p.n > RVS_S3_PAGE_MAX || strnlen(p.token, sizeof p.token) == sizeof p.token)
			__builtin_trap();
		for (size_t i = 0; i < p.n; i++)
			if (!rvs_blob_name_ok(names[i]))
				__builtin_trap();
	} else if (rc != -EIO && rc != -ENOMEM) {
		__builtin_trap();
	} else if (p.n != 0) {
		__builtin_trap();
	}
	return 0;
}
