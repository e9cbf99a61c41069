/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload.h — a device's protobuf bodies unpacked and validated: the
 * UploadEnvelope of POST /v1/uploads (upload.c) and the SkipReport of
 * POST /v1/skips (skips.c).  Work thread or fuzzer; everything in a body
 * is untrusted.
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

#endif
