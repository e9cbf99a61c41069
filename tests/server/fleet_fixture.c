/*
 * fleet_fixture.c — issue 16's fixture app (fleet_fixture.h): a layout pass
 * that parses JSON, measures text and builds list items, compiled with
 * -finstrument-functions so that librvtrace records every call.  In
 * version 4.3 rvs_fleet_parse_json does RVS_FLEET_FACTOR times the work;
 * every other method does the same work in every version.  The capture
 * driver itself is not instrumented (it starts and stops the tracer).
 */
#include "fleet_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rearview/trace.h"

uint64_t rvs_fleet_parse_json(uint64_t n);
uint64_t rvs_fleet_measure_text(uint64_t n);
uint64_t rvs_fleet_build_item(uint64_t n);
uint64_t rvs_fleet_layout_pass(int rounds, unsigned factor);

/* Inlined and not instrumented: the work is its caller's self time. */
__attribute__((no_instrument_function, always_inline)) static inline uint64_t spin(uint64_t n)
{
	volatile uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += i ^ (acc >> 3);
	return acc;
}

__attribute__((noinline)) uint64_t rvs_fleet_parse_json(uint64_t n)
{
	return spin(n);
}

__attribute__((noinline)) uint64_t rvs_fleet_measure_text(uint64_t n)
{
	return spin(n);
}

__attribute__((noinline)) uint64_t rvs_fleet_build_item(uint64_t n)
{
	return spin(n) + rvs_fleet_measure_text(n / 2);
}

__attribute__((noinline)) uint64_t rvs_fleet_layout_pass(int rounds, unsigned factor)
{
	uint64_t s = 0;
	for (int i = 0; i < rounds; i++) {
		s += rvs_fleet_parse_json(40000ull * factor);
		s += rvs_fleet_build_item(60000);
		s += rvs_fleet_measure_text(30000);
	}
	return s;
}

__attribute__((no_instrument_function)) int rvs_fleet_capture(const char *version, const char *dir,
							      uint8_t **out, size_t *len)
{
	unsigned factor = strcmp(version, "4.3") == 0 ? RVS_FLEET_FACTOR : 1;
	char path[512];
	size_t cap = 4u << 20;
	uint8_t *buf;
	FILE *f;
	int rc;

	snprintf(path, sizeof path, "%s/fleet-%s.rvt", dir, version);
	rc = rvt_set_config(256u << 10, 0);
	if (!rc)
		rc = rvt_start(0);
	if (rc)
		return rc;
	if (rvs_fleet_layout_pass(4, factor) == 1)
		rc = -EDOM; /* never: keeps the work observable */
	if (!rc)
		rc = rvt_capture_to_path(0, path);
	rvt_stop(0, 1);
	if (rc)
		return rc;
	f = fopen(path, "rb");
	buf = malloc(cap);
	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return -EIO;
	}
	*len = fread(buf, 1, cap, f);
	rc = feof(f) && *len > 0 ? 0 : -EIO;
	fclose(f);
	unlink(path);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}
