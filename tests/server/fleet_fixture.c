/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_fixture.c — the fleet fixture's captures (fleet_fixture.h), built
 * in memory from tracer/FORMAT.md with capbuild.h.  The counter runs at
 * 1 GHz (one tick a nanosecond, no shift), so every duration stated in
 * fleet_fixture.h is exact in the file; the header's reference pairs the
 * last tick with CLOCK_MONOTONIC 1000 s, so an anomaly's focus is a
 * monotonic time inside the pass.  Captures are numbered in the order they
 * are made (g_made): the number lengthens layout_pass's own time by as
 * many microseconds and moves the capture's wall-clock time by as many
 * seconds, so the captures sort the same way on every run.
 */
#include "fleet_fixture.h"

#include <errno.h>
#include <string.h>

#include "capbuild.h"

#define US 1000ull /* ticks (ns) per microsecond */

enum { M_PASS, M_PARSE, M_BUILD, M_MEASURE, M_COUNT };

static const char *const g_names[M_COUNT] = {
	"rvs_fleet_layout_pass",
	RVS_FLEET_PLANTED,
	"rvs_fleet_build_item",
	"rvs_fleet_measure_text",
};

static unsigned g_made;

static uint64_t method(int m)
{
	return 0x1000 + 16 * (uint64_t)m;
}

/* ANOMALY (FORMAT.md): u32 kind, u32 severity, u64 monotonic_ns, name. */
static void anomaly_record(capbuf *c, unsigned severity, uint64_t mono)
{
	static const char name[] = "fleet fixture jank";
	uint8_t r[16 + sizeof name - 1];

	memset(r, 0, sizeof r);
	r[0] = 1; /* ANOMALY_JANK */
	for (int i = 0; i < 4; i++)
		r[4 + i] = (uint8_t)(severity >> (8 * i));
	for (int i = 0; i < 8; i++)
		r[8 + i] = (uint8_t)(mono >> (8 * i));
	memcpy(r + 16, name, sizeof name - 1);
	cb_record(c, 6, r, sizeof r);
}

static int build(const char *version, int with_anomaly, unsigned severity,
		 enum rvs_fleet_focus focus, uint8_t **out, size_t *len)
{
	const uint64_t mono_end = 1000000000000ull; /* CLOCK_MONOTONIC at the last tick */
	uint64_t factor, t = 1ull << 20, focus_tick = 0;
	capbuf c = {0};

	if (!strcmp(version, "4.3"))
		factor = RVS_FLEET_FACTOR;
	else if (!strcmp(version, "4.2") || !strcmp(version, "4.4"))
		factor = 1;
	else
		return -EINVAL;
	if (focus != RVS_FLEET_AT_PARSE_JSON && focus != RVS_FLEET_AT_BUILD_ITEM)
		return -EINVAL;
	cb_header(&c, 0, 1000000000, 0, mono_end, 0x400000, 0);
	cb_entry(&c, method(M_PASS), (uint32_t)t);
	for (int round = 0; round < 4; round++) {
		uint64_t parse = RVS_FLEET_PARSE_US * factor * US;

		cb_entry(&c, method(M_PARSE), (uint32_t)t);
		if (focus == RVS_FLEET_AT_PARSE_JSON)
			focus_tick = t + parse / 2;
		cb_exit(&c, (uint32_t)(t += parse));
		cb_entry(&c, method(M_BUILD), (uint32_t)t);
		if (focus == RVS_FLEET_AT_BUILD_ITEM)
			focus_tick = t + RVS_FLEET_BUILD_US * US / 2;
		t += RVS_FLEET_BUILD_US * US;
		cb_entry(&c, method(M_MEASURE), (uint32_t)t);
		cb_exit(&c, (uint32_t)(t += RVS_FLEET_MEASURE_US * US));
		cb_exit(&c, (uint32_t)t);
		cb_entry(&c, method(M_MEASURE), (uint32_t)t);
		cb_exit(&c, (uint32_t)(t += RVS_FLEET_MEASURE_US * US));
	}
	t += (RVS_FLEET_PASS_US + g_made) * US;
	cb_exit(&c, (uint32_t)t);
	cb_end_slots(&c);
	cb_u64at(&c, 16, t); /* the reference: the last tick is mono_end */
	cb_u64at(&c, 24, 1700000000000000000ull + (uint64_t)g_made * 1000000000ull);
	for (int m = 0; m < M_COUNT; m++)
		cb_symbol(&c, method(m), method(m), 0, g_names[m]);
	if (with_anomaly)
		anomaly_record(&c, severity, mono_end - (t - focus_tick));
	cb_finish(&c);
	g_made++;
	*out = c.b;
	*len = c.len;
	return 0;
}

int rvs_fleet_capture(const char *version, uint8_t **out, size_t *len)
{
	return build(version, 0, 0, RVS_FLEET_AT_PARSE_JSON, out, len);
}

int rvs_fleet_capture_anomaly(const char *version, unsigned severity, enum rvs_fleet_focus focus,
			      uint8_t **out, size_t *len)
{
	return build(version, 1, severity, focus, out, len);
}
