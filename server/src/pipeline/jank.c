/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jank.c — unpacking and validating a JankReport: a device's frames and
 * late frames per app, version and UTC day, traced or not (server/API.md,
 * POST /v1/jank).
 *
 * Everything in a report is untrusted: a body that does not decode is
 * -EBADMSG, one that breaks a rule (upload.h, rvs_jank_parse) -EINVAL with
 * the rule in the reason, and nothing of it is stored.  The count limit
 * bounds the work and the rows one report can cost; the body's own size
 * is bounded by the device API's body limit.
 */
#include "base/text.h"
#include "pipeline/upload.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rearview/upload.pb-c.h"

static int same_key(const Rearview__JankCount *a, const Rearview__JankCount *b)
{
	return a->day == b->day && strcmp(a->app_id, b->app_id) == 0 &&
	       strcmp(a->app_version, b->app_version) == 0;
}

/* NULL when c breaks no rule, else the rule, into why[0..cap). */
static const char *count_refusal(const Rearview__JankCount *c, int64_t today, char *why, size_t cap)
{
	if (!c->app_id || !c->app_id[0] || !rvs_field_ok(c->app_id, 256) ||
	    !rvs_field_ok(c->app_version, 128))
		return "app_id must be 1..256 and app_version up to 128 bytes of printable UTF-8";
	if ((int64_t)c->day < today - RVS_JANK_DAYS_BACK ||
	    (int64_t)c->day > today + RVS_JANK_DAYS_AHEAD) {
		snprintf(why, cap,
			 "day %" PRIu32 " is not within %d days before today (%" PRId64
			 ") and %d after",
			 c->day, RVS_JANK_DAYS_BACK, today, RVS_JANK_DAYS_AHEAD);
		return why;
	}
	if (c->frames > (uint64_t)RVS_JANK_MAX_FRAMES) {
		snprintf(why, cap, "frames %" PRIu64 " above %lld a day", c->frames,
			 RVS_JANK_MAX_FRAMES);
		return why;
	}
	if (c->late > c->frames)
		return "late frames above frames";
	return NULL;
}

int rvs_jank_parse(const uint8_t *buf, size_t len, int64_t today, Rearview__JankReport **out,
		   char *reason, size_t reasonlen)
{
	Rearview__JankReport *r;
	ProtobufCAllocator pa;
	char why[160];
	const char *bad = NULL;
	int nomem;

	*out = NULL;
	rvs_pb_allocator(&pa, &nomem);
	r = rearview__jank_report__unpack(&pa, len, buf);
	if (!r && nomem) {
		snprintf(reason, reasonlen, "out of memory unpacking the jank report");
		return -ENOMEM;
	}
	if (!r) {
		snprintf(reason, reasonlen, "malformed: body is not a JankReport");
		return -EBADMSG;
	}
	if (r->n_counts == 0)
		bad = "no counts";
	else if (r->n_counts > RVS_JANK_MAX_COUNTS) {
		snprintf(why, sizeof why, "%zu counts: at most %d apps and days a report",
			 r->n_counts, RVS_JANK_MAX_COUNTS);
		bad = why;
	}
	for (size_t i = 0; !bad && i < r->n_counts; i++) {
		bad = count_refusal(r->counts[i], today, why, sizeof why);
		for (size_t k = 0; !bad && k < i; k++)
			if (same_key(r->counts[i], r->counts[k]))
				bad = "the same app, version and day twice";
	}
	if (bad) {
		snprintf(reason, reasonlen, "%s", bad);
		rearview__jank_report__free_unpacked(r, NULL);
		return -EINVAL;
	}
	*out = r;
	return 0;
}
