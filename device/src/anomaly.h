/* SPDX-License-Identifier: Apache-2.0 */
/*
 * anomaly.h — the Anomaly codec: struct rvd_anomaly (detect.h) to and from
 * its wire form, rearview.Anomaly (common.proto).  Used by the control
 * socket (CaptureRequest), events.sock, admin.sock and the uploader.
 */
#ifndef RVD_ANOMALY_H
#define RVD_ANOMALY_H

#include "detect.h"
#include "rearview/common.pb-c.h"
#include "rearview/event.pb-c.h"

/* Fills *pb (initialised here) from `a`.  The strings are borrowed from `a`:
 * `a` must outlive *pb.  Never fails; any thread. */
void rvd_anomaly_to_pb(const struct rvd_anomaly *a, Rearview__Anomaly *pb);

/*
 * Fills *a from an untrusted `pb` (strings copied and truncated to fit; a
 * zero monotonic_ns becomes now, an unknown touch attribution 0).  Returns 0,
 * or -EINVAL when the kind, severity, pid or tid is out of range (*a is then
 * zeroed).  Any thread.
 */
int rvd_anomaly_from_pb(const Rearview__Anomaly *pb, struct rvd_anomaly *a);

/* NULL when event e's times can happen, else why not (static text): a
 * frame or touch report rvd_frame_impossible/rvd_touch_impossible refuse
 * at now_ns (CLOCK_MONOTONIC). */
const char *rvd_event_refusal(const Rearview__EventMessage *e, uint64_t now_ns);

/* Decodes one events.sock payload buf[0..len) (an EventMessage; untrusted:
 * any process in the events group sends it) into *out (free with
 * rearview__event_message__free_unpacked(*out, NULL)), with *why =
 * rvd_event_refusal(*out, now_ns).  0, or -EBADMSG when it does not decode
 * (*out NULL; protobuf-c says the same when it runs out of memory). */
int rvd_event_decode(const uint8_t *buf, size_t len, uint64_t now_ns, Rearview__EventMessage **out,
		     const char **why);

#endif
