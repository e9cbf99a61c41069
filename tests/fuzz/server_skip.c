/*
 * server_skip.c — libFuzzer target: unpacking and validating a device's
 * SkipReport (server/src/skips.c), the body of POST /v1/skips.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/text.h"
#include "pipeline/upload.h"
#include "rearview/upload.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Rearview__SkipReport *r = NULL;
	char reason[160];
	int rc = rvs_skip_parse(data, size, &r, reason, sizeof reason);

	if (rc == 0) {
		/* Accepted reports satisfy the documented rules. */
		if (r->report_id.len != 16 || !r->reason || !*r->reason || strlen(r->reason) > 64)
			__builtin_trap();
		if (r->app && r->app->app_id && !rvs_field_ok(r->app->app_id, 256))
			__builtin_trap();
		rearview__skip_report__free_unpacked(r, NULL);
	} else if (r != NULL || strlen(reason) == 0) {
		__builtin_trap();
	}
	return 0;
}
