/*
 * server_upload.c — libFuzzer target: unpacking and validating a device's
 * UploadEnvelope (server/src/upload.c), the body of POST /v1/uploads.
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
	Rearview__UploadEnvelope *e = NULL;
	char reason[160];
	int rc = rvs_upload_parse(data, size, &e, reason, sizeof reason);
	if (rc == 0) {
		/* Accepted envelopes satisfy the documented rules. */
		if (e->upload_id.len != 16)
			__builtin_trap();
		if (e->app && e->app->app_id && !rvs_field_ok(e->app->app_id, 256))
			__builtin_trap();
		rearview__upload_envelope__free_unpacked(e, NULL);
	} else if (e != NULL || strlen(reason) == 0) {
		__builtin_trap();
	}
	return 0;
}
