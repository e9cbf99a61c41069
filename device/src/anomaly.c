/* SPDX-License-Identifier: Apache-2.0 */
/*
 * anomaly.c — the Anomaly codec (anomaly.h): struct rvd_anomaly ↔
 * rearview.Anomaly.
 *
 * Invariants:
 *  - to_pb only reads: the message borrows the anomaly's strings, which are
 *    always NUL-terminated (they are filled with snprintf here and in the
 *    detectors);
 *  - from_pb trusts nothing: every field is range-checked before it is
 *    used, strings are copied with truncation.
 */
#include "anomaly.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

void rvd_anomaly_to_pb(const struct rvd_anomaly *a, Rearview__Anomaly *pb)
{
	assert(memchr(a->name, '\0', sizeof(a->name)) &&
	       memchr(a->detail, '\0', sizeof(a->detail)));
	rearview__anomaly__init(pb);
	pb->kind = (Rearview__AnomalyKind)a->kind;
	pb->severity = a->severity;
	pb->pid = a->pid;
	pb->tid = a->tid;
	pb->monotonic_ns = a->monotonic_ns;
	pb->focus_monotonic_ns = a->focus_ns;
	pb->touch_attribution = (Rearview__TouchAttribution)a->attribution;
	/* protobuf-c does not write through these pointers when packing. */
	pb->detail = (char *)a->detail;
	pb->name = (char *)a->name;
}

int rvd_anomaly_from_pb(const Rearview__Anomaly *pb, struct rvd_anomaly *a)
{
	memset(a, 0, sizeof(*a));
	if ((int)pb->kind < RVD_ANOMALY_JANK || (int)pb->kind > RVD_ANOMALY_MANUAL ||
	    pb->severity > 100 || pb->pid < 0 || pb->tid < 0)
		return -EINVAL;
	a->kind = pb->kind;
	a->severity = pb->severity;
	a->pid = pb->pid;
	a->tid = pb->tid;
	a->monotonic_ns = pb->monotonic_ns ? pb->monotonic_ns : uv_hrtime();
	a->focus_ns = pb->focus_monotonic_ns;
	a->attribution =
		(int)pb->touch_attribution <= RVD_TOUCH_APP ? (int)pb->touch_attribution : 0;
	snprintf(a->name, sizeof(a->name), "%s", pb->name ? pb->name : "");
	snprintf(a->detail, sizeof(a->detail), "%s", pb->detail ? pb->detail : "");
	return 0;
}

const char *rvd_event_refusal(const Rearview__EventMessage *e, uint64_t now_ns)
{
	switch (e->msg_case) {
	case REARVIEW__EVENT_MESSAGE__MSG_FRAME:
		return rvd_frame_impossible(e->frame->frame_start_ns, e->frame->frame_end_ns,
					    e->frame->frame_deadline_ns, now_ns);
	case REARVIEW__EVENT_MESSAGE__MSG_TOUCH:
		return rvd_touch_impossible(e->touch->detected_ns, e->touch->delivered_ns,
					    e->touch->handled_ns, e->touch->responded_ns, now_ns);
	default:
		return NULL;
	}
}

int rvd_event_decode(const uint8_t *buf, size_t len, uint64_t now_ns, Rearview__EventMessage **out,
		     const char **why)
{
	*why = NULL;
	*out = rearview__event_message__unpack(NULL, len, buf);
	if (!*out)
		return -EBADMSG;
	*why = rvd_event_refusal(*out, now_ns);
	return 0;
}
