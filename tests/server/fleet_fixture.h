/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_fixture.h — captures of an app's layout pass in three versions:
 * 4.2, 4.3 (where rvs_fleet_parse_json takes RVS_FLEET_FACTOR times as
 * long) and 4.4 (fixed again).  Synthetic: written byte by byte in the
 * capture format (tests/rvtrace/capbuild.h) with exact durations, so what
 * the statistics and the pages compare never depends on how fast or busy
 * the machine is.  Each pass runs four rounds of
 *
 *   rvs_fleet_layout_pass
 *     rvs_fleet_parse_json      RVS_FLEET_PARSE_US (× the factor in 4.3)
 *     rvs_fleet_build_item      RVS_FLEET_BUILD_US of its own, then
 *       rvs_fleet_measure_text  RVS_FLEET_MEASURE_US
 *     rvs_fleet_measure_text    RVS_FLEET_MEASURE_US
 *
 * and layout_pass keeps RVS_FLEET_PASS_US plus one microsecond per capture
 * made before (so no two captures last as long) of its own at the end.
 */
#ifndef RVS_FLEET_FIXTURE_H
#define RVS_FLEET_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

/* The method 4.3 made slower (tests check what the server found against
 * it; the server is never told). */
#define RVS_FLEET_PLANTED    "rvs_fleet_parse_json"
#define RVS_FLEET_FACTOR     4
#define RVS_FLEET_PARSE_US   2000
#define RVS_FLEET_BUILD_US   3000
#define RVS_FLEET_MEASURE_US 1500
#define RVS_FLEET_PASS_US    100

/* One capture of the pass as version `version` ("4.2", "4.3" or "4.4"):
 * the file's bytes (malloc'd, caller frees) in *out.  0, or -EINVAL for
 * another version. */
int rvs_fleet_capture(const char *version, uint8_t **out, size_t *len);

/* Where rvs_fleet_capture_anomaly() puts the anomaly's focus: the middle
 * of the own time of the pass's last call of this method. */
enum rvs_fleet_focus { RVS_FLEET_AT_PARSE_JSON, RVS_FLEET_AT_BUILD_ITEM };

/* The same pass captured as rearviewd captures it for an anomaly: with an
 * ANOMALY record of a jank of `severity` (0..100) focused at `focus`.
 * 0, or -EINVAL for another version or focus. */
int rvs_fleet_capture_anomaly(const char *version, unsigned severity, enum rvs_fleet_focus focus,
			      uint8_t **out, size_t *len);

#endif
