/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload.c — unpacking and validating an UploadEnvelope from a device.
 *
 * Everything in an envelope is untrusted.  A body that does not decode as
 * protobuf is -EBADMSG ("malformed"); one that decodes but breaks a rule
 * below is -EINVAL with the rule in the reason; running out of memory while
 * unpacking is -ENOMEM, never "malformed" (the device would drop a capture
 * the server merely had no memory for).  The rules: upload_id is
 * exactly 16 bytes; enums are known values; strings are bounded, valid
 * UTF-8 without control characters; a capture carries a payload; an
 * uncompressed payload matches its declared size.  Decoding the capture
 * itself is the trace analysis library's job (the decode step).
 */
#include "pipeline/upload.h"
#include "base/text.h"
#include "pipeline/payload.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/upload.pb-c.h"

/* 0 only in the tests' build of a server that predates the shuffled form
 * (build/tests/server/rearview-server-v1): it refuses it as servers before
 * it did, so the daemon's fallback to plain zstd is tested against it. */
#ifndef RVS_ACCEPTS_SHUFFLED
#define RVS_ACCEPTS_SHUFFLED 1
#endif

_Atomic unsigned long rvs_pb_alloc_fail_in;

static void *pb_alloc(void *data, size_t size)
{
	unsigned long n = atomic_load(&rvs_pb_alloc_fail_in);
	void *p = NULL;

	/* The seam: only the thread that takes the count from 1 to 0 fails. */
	while (n && !atomic_compare_exchange_weak(&rvs_pb_alloc_fail_in, &n, n - 1))
		;
	if (n != 1)
		p = malloc(size);
	if (!p)
		*(int *)data = 1;
	return p;
}

static void pb_free(void *data, void *p)
{
	(void)data;
	free(p);
}

void rvs_pb_allocator(ProtobufCAllocator *a, int *failed)
{
	*failed = 0;
	a->alloc = pb_alloc;
	a->free = pb_free;
	a->allocator_data = failed;
}

double rvs_selection_weight(const Rearview__Selection *s, int *exact)
{
	double w;

	*exact = 0;
	if (!s || s->kind == REARVIEW__SELECTION_KIND__SELECTION_UNKNOWN)
		return 1.0;
	if (s->kind == REARVIEW__SELECTION_KIND__SELECTION_MANUAL) {
		*exact = 1;
		return 1.0;
	}
	assert(s->probability == 0 ||
	       (s->probability >= RVS_MIN_SELECTION_P && s->probability <= 1));
	w = s->probability > 0 ? 1.0 / s->probability : 1.0;
	if (s->kind == REARVIEW__SELECTION_KIND__SELECTION_SAMPLED) {
		*exact = 1;
		return w;
	}
	/* A quota took `taken` of `seen`: each stands for seen/taken of them. */
	if (s->candidates_taken > 0 && s->candidates_seen > s->candidates_taken)
		w *= (double)s->candidates_seen / s->candidates_taken;
	return w;
}

static int bad(char *reason, size_t reasonlen, const char *why)
{
	snprintf(reason, reasonlen, "%s", why);
	return -EINVAL;
}

int rvs_upload_parse(const uint8_t *buf, size_t len, Rearview__UploadEnvelope **out, char *reason,
		     size_t reasonlen)
{
	Rearview__UploadEnvelope *e;
	ProtobufCAllocator pa;
	int rc = 0, nomem;

	*out = NULL;
	rvs_pb_allocator(&pa, &nomem);
	e = rearview__upload_envelope__unpack(&pa, len, buf);
	if (!e && nomem) {
		snprintf(reason, reasonlen, "out of memory unpacking the upload");
		return -ENOMEM;
	}
	if (!e) {
		snprintf(reason, reasonlen, "malformed: body is not an UploadEnvelope");
		return -EBADMSG;
	}
	if (e->upload_id.len != 16)
		rc = bad(reason, reasonlen, "upload_id must be 16 bytes");
	else if (e->payload_kind != REARVIEW__PAYLOAD_KIND__PAYLOAD_NONE &&
		 e->payload_kind != REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE)
		rc = bad(reason, reasonlen, "unknown payload_kind");
	else if (e->compression != REARVIEW__COMPRESSION__COMPRESSION_NONE &&
		 e->compression != REARVIEW__COMPRESSION__COMPRESSION_ZSTD &&
		 (!RVS_ACCEPTS_SHUFFLED ||
		  e->compression != REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED))
		rc = bad(reason, reasonlen, "unknown compression");
	else if (e->payload_kind == REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE && e->payload.len == 0)
		rc = bad(reason, reasonlen, "capture upload without payload");
	else if (e->compression == REARVIEW__COMPRESSION__COMPRESSION_NONE && e->payload_size &&
		 e->payload_size != e->payload.len)
		rc = bad(reason, reasonlen, "payload_size does not match payload");
	/* A compressed capture declares its size: inflating stops there (issue
	 * 18 item 2: a 29 KB zstd bomb inflated to ~0.9 GB whatever it declared). */
	else if (e->compression != REARVIEW__COMPRESSION__COMPRESSION_NONE &&
		 e->payload_kind == REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE &&
		 (e->payload_size == 0 || e->payload_size > RVS_MAX_CAPTURE_BYTES))
		rc = bad(reason, reasonlen,
			 e->payload_size ? "payload_size over the server's capture limit"
					 : "compressed capture without payload_size");
	else if (e->device &&
		 (!rvs_field_ok(e->device->device_id, 128) ||
		  !rvs_field_ok(e->device->model, 256) || !rvs_field_ok(e->device->os_build, 256) ||
		  !rvs_field_ok(e->device->arch, 64)))
		rc = bad(reason, reasonlen, "device field too long or not printable UTF-8");
	else if (e->app && (!rvs_field_ok(e->app->app_id, 256) ||
			    !rvs_field_ok(e->app->version, 128) || e->app->build_id.len > 64))
		rc = bad(reason, reasonlen, "app field too long or not printable UTF-8");
	else if (!rvs_field_ok(e->campaign_id, 128))
		rc = bad(reason, reasonlen, "campaign_id too long or not printable UTF-8");
	else if (e->anomaly && e->anomaly->severity > 100)
		rc = bad(reason, reasonlen, "anomaly severity above 100");
	else if (e->selection &&
		 (!rvs_field_ok(e->selection->campaign_id, 128) ||
		  (unsigned)e->selection->kind > REARVIEW__SELECTION_KIND__SELECTION_MANUAL))
		rc = bad(reason, reasonlen, "selection: campaign_id too long or unknown kind");
	else if (e->selection && e->selection->probability != 0 &&
		 !(e->selection->probability >= RVS_MIN_SELECTION_P &&
		   e->selection->probability <= 1))
		rc = bad(reason, reasonlen, "selection probability outside [1e-6, 1]");
	else if (e->selection && e->selection->candidates_taken > e->selection->candidates_seen)
		rc = bad(reason, reasonlen, "selection: more candidates taken than seen");
	if (rc) {
		rearview__upload_envelope__free_unpacked(e, NULL);
		return rc;
	}
	*out = e;
	return 0;
}
