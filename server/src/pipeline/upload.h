/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload.h — a device's protobuf bodies unpacked and validated: the
 * UploadEnvelope of POST /v1/uploads (upload.c), the SkipReport of
 * POST /v1/skips (skips.c) and the JankReport of POST /v1/jank (jank.c).  Work thread or fuzzer;
 * everything in a body is untrusted.
 */
#ifndef RVS_UPLOAD_H
#define RVS_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

struct Rearview__UploadEnvelope;
/* Unpacks and validates an UploadEnvelope.  On success *out is set (free with
 * rearview__upload_envelope__free_unpacked(*out, NULL)); on failure returns
 * -EBADMSG (malformed) or -EINVAL and writes a human reason into reason, or
 * -ENOMEM when memory ran out unpacking it (not the device's fault: the API
 * answers 503 with Retry-After and the device sends it again). */
int rvs_upload_parse(const uint8_t *buf, size_t len, struct Rearview__UploadEnvelope **out,
		     char *reason, size_t reasonlen);
/* The smallest selection probability an upload may claim: its weight
 * 1/p is at most 10^6, so no device can swamp the fleet's figures. */
#define RVS_MIN_SELECTION_P 1e-6
/*
 * The Horvitz–Thompson weight of an upload's capture from its Selection
 * (NULL: an older device).  1/probability (0 = unset = 1), times
 * seen/taken when a quota refused candidates of the week (first-N or
 * most-severe selection).  *exact = 1 when the weight is the inverse of the
 * true inclusion probability (sampled, manual), 0 when it is an estimate
 * (quota selection censors: the most severe or the first are not a random
 * sample) or unknown (no Selection: weight 1).  Call it on an envelope
 * rvs_upload_parse accepted (probability in [RVS_MIN_SELECTION_P, 1]).
 */
struct Rearview__Selection;
double rvs_selection_weight(const struct Rearview__Selection *s, int *exact);

struct ProtobufCAllocator;
/* Fills *a for protobuf-c's unpack of an untrusted body: malloc and free
 * (so free_unpacked(x, NULL) frees what it made), and *failed (set to 0
 * here) becomes 1 when an allocation fails, which tells an unpack that ran
 * out of memory from a malformed body.  Thread-safe. */
void rvs_pb_allocator(struct ProtobufCAllocator *a, int *failed);
/* Test seam for the allocation failure above: when nonzero, the
 * allocation that counts it down to 0 fails (1: the next one). */
extern _Atomic unsigned long rvs_pb_alloc_fail_in;

/* ---- skip reports (skips.c) ---- */
struct Rearview__SkipReport;
/* Unpacks and validates a SkipReport, like rvs_upload_parse: *out to be
 * freed with rearview__skip_report__free_unpacked(*out, NULL); -EBADMSG or
 * -EINVAL with a human reason, -ENOMEM out of memory. */
int rvs_skip_parse(const uint8_t *buf, size_t len, struct Rearview__SkipReport **out, char *reason,
		   size_t reasonlen);

/* ---- jank counts (jank.c) ---- */
/* Counts in one JankReport at most (the device's table holds 64). */
#define RVS_JANK_MAX_COUNTS 64
/* A count's frames at most (a 1 kHz display all day is 86.4 million). */
#define RVS_JANK_MAX_FRAMES 1000000000ll
/* Days a count may lie before the server's day / after it. */
#define RVS_JANK_DAYS_BACK  400
#define RVS_JANK_DAYS_AHEAD 1
struct Rearview__JankReport;
/* Unpacks and validates a JankReport received on UTC day `today`, like
 * rvs_upload_parse: *out to be freed with
 * rearview__jank_report__free_unpacked(*out, NULL); -EBADMSG or -EINVAL
 * with a human reason, -ENOMEM out of memory.  The rules: 1..64 counts;
 * app_id 1..256 bytes and app_version up to 128 of printable UTF-8; a day
 * within RVS_JANK_DAYS_BACK before today and RVS_JANK_DAYS_AHEAD after;
 * frames <= RVS_JANK_MAX_FRAMES, late <= frames; no (app, version, day)
 * twice. */
int rvs_jank_parse(const uint8_t *buf, size_t len, int64_t today, struct Rearview__JankReport **out,
		   char *reason, size_t reasonlen);

#endif
