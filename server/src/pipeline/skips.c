/* SPDX-License-Identifier: Apache-2.0 */
/*
 * skips.c — unpacking and validating a SkipReport: a device's record of an
 * anomaly it did not upload, and why (server/API.md, POST /v1/skips).
 *
 * Everything in a report is untrusted.  A body that does not decode is
 * -EBADMSG ("malformed"); one that decodes but breaks a rule is -EINVAL
 * with the rule in the reason; out of memory unpacking it is -ENOMEM (as in
 * upload.c: the device retries, it does not drop the report).  The rules: report_id is exactly 16
 * bytes; the reason is a policy reason name (1..64 bytes of [a-z0-9_]); the app's strings are
 * bounded printable UTF-8 (rvs_field_ok, as for uploads); severity ≤ 100.
 */
#include "base/text.h"
#include "pipeline/upload.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rearview/upload.pb-c.h"

static int reason_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

int rvs_skip_parse(const uint8_t *buf, size_t len, Rearview__SkipReport **out, char *reason,
		   size_t reasonlen)
{
	Rearview__SkipReport *r;
	ProtobufCAllocator pa;
	const char *why = NULL;
	int nomem;

	*out = NULL;
	rvs_pb_allocator(&pa, &nomem);
	r = rearview__skip_report__unpack(&pa, len, buf);
	if (!r && nomem) {
		snprintf(reason, reasonlen, "out of memory unpacking the skip report");
		return -ENOMEM;
	}
	if (!r) {
		snprintf(reason, reasonlen, "malformed: body is not a SkipReport");
		return -EBADMSG;
	}
	if (r->report_id.len != 16)
		why = "report_id must be 16 bytes";
	else if (!reason_ok(r->reason))
		why = "reason must be 1..64 characters of [a-z0-9_]";
	else if (r->app && (!rvs_field_ok(r->app->app_id, 256) ||
			    !rvs_field_ok(r->app->version, 128) || r->app->build_id.len > 64))
		why = "app field too long or not printable UTF-8";
	else if (r->anomaly && r->anomaly->severity > 100)
		why = "anomaly severity above 100";
	if (why) {
		snprintf(reason, reasonlen, "%s", why);
		rearview__skip_report__free_unpacked(r, NULL);
		return -EINVAL;
	}
	*out = r;
	return 0;
}
