/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_campaign.c — libFuzzer target: a campaign's JSON spec as
 * POST/PUT /api/v1/campaigns receive it (rvs_campaign_normalize,
 * server/src/model/campaign.c: jansson, then field-by-field validation),
 * and the invariant the store relies on: the normalized text a valid spec
 * is stored as parses again, to itself.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/campaign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "", *out = NULL, *again = NULL;
	int rc = rvs_campaign_normalize((const char *)data, size, &out, err, sizeof err);

	if (rc == 0) {
		if (!out ||
		    rvs_campaign_normalize(out, strlen(out), &again, err, sizeof err) != 0 ||
		    strcmp(out, again) != 0)
			__builtin_trap();
	} else if ((rc != -EINVAL && rc != -ENOMEM) || out || !err[0]) {
		__builtin_trap();
	}
	free(out);
	free(again);
	return 0;
}
