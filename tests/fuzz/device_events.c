/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device_events.c — libFuzzer target: what any process in the events group
 * sends rearviewd's events.sock (librvevents' EventMessage payloads):
 * rvd_event_decode (device/src/anomaly.c), then what the daemon does with
 * an event it accepts — the jank, touch and metric-correlation detectors
 * (detect.c) and an anomaly's conversion (rvd_anomaly_from_pb) — with the
 * daemon's default thresholds and a fixed clock, so a replay is
 * deterministic.  A fired anomaly stays within its documented bounds.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anomaly.h"
#include "detect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW_NS (1ull << 40)

static void check(const struct rvd_anomaly *a)
{
	if (a->severity > 100 || memchr(a->name, 0, sizeof a->name) == NULL ||
	    memchr(a->detail, 0, sizeof a->detail) == NULL)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct rvd_jank_config jc = {3, 16666667};
	const struct rvd_corr_config cc = {"gpu_busy", 0.9, 2000000000ull};
	struct rvd_jank_state js = {0};
	struct rvd_corr_state cs = {0};
	Rearview__EventMessage *e;
	struct rvd_anomaly a, corr;
	const char *why;

	if (rvd_event_decode(data, size, NOW_NS, &e, &why) != 0) {
		if (e)
			__builtin_trap();
		return 0;
	}
	if (why) {
		if (e->msg_case != REARVIEW__EVENT_MESSAGE__MSG_FRAME &&
		    e->msg_case != REARVIEW__EVENT_MESSAGE__MSG_TOUCH)
			__builtin_trap();
		rearview__event_message__free_unpacked(e, NULL);
		return 0;
	}
	switch (e->msg_case) {
	case REARVIEW__EVENT_MESSAGE__MSG_FRAME:
		/* The same frame K times: the K-th fires when it is late. */
		for (unsigned i = 0; i < jc.frames; i++)
			if (rvd_jank_feed(&jc, &js, 1, e->frame->tid, e->frame->frame_start_ns,
					  e->frame->frame_end_ns, &a) == 1) {
				check(&a);
				cs = (struct rvd_corr_state){true, 0.95, a.monotonic_ns};
				if (rvd_corr_check(&cc, &cs, &a, &corr) == 1)
					check(&corr);
			}
		break;
	case REARVIEW__EVENT_MESSAGE__MSG_TOUCH:
		if (rvd_touch_eval(400000000, e->touch->pid, e->touch->tid, e->touch->detected_ns,
				   e->touch->delivered_ns, e->touch->responded_ns, &a) == 1)
			check(&a);
		break;
	case REARVIEW__EVENT_MESSAGE__MSG_METRIC:
		rvd_corr_sample(&cc, &cs, e->metric->name ? e->metric->name : "", e->metric->value,
				e->metric->monotonic_ns ? e->metric->monotonic_ns : NOW_NS);
		break;
	case REARVIEW__EVENT_MESSAGE__MSG_ANOMALY:
		if (rvd_anomaly_from_pb(e->anomaly, &a) == 0)
			check(&a);
		break;
	default:
		break;
	}
	rearview__event_message__free_unpacked(e, NULL);
	return 0;
}
