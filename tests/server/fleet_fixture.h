/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_fixture.h — real captures of an instrumented app in three versions
 * (issue 16's fixture): 4.2, 4.3 (where rvs_fleet_parse_json became ~4×
 * slower) and 4.4 (fixed again), made by librvtrace tracing
 * fleet_fixture.c's workload on the calling thread.
 */
#ifndef RVS_FLEET_FIXTURE_H
#define RVS_FLEET_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

/* The method 4.3 made slower (tests check what the server found against
 * it; the server is never told). */
#define RVS_FLEET_PLANTED "rvs_fleet_parse_json"
#define RVS_FLEET_FACTOR  4

/* Traces one run of the app's layout pass as version `version` on this
 * thread and returns the capture file's bytes (malloc'd, caller frees) in
 * *out.  dir: a writable directory for the capture file.  0 or a negative
 * errno (librvtrace's or file I/O's). */
int rvs_fleet_capture(const char *version, const char *dir, uint8_t **out, size_t *len);

/* Where rvs_fleet_capture_anomaly() puts the anomaly's focus: the middle
 * of the pass's last call of this method. */
enum rvs_fleet_focus { RVS_FLEET_AT_PARSE_JSON, RVS_FLEET_AT_BUILD_ITEM };

/* The same run, captured as rearviewd captures it: through librvtrace's
 * control socket (a listener in `dir` played by this function), with a
 * CaptureRequest naming a jank of `severity` (0..100) focused at `focus`,
 * so the capture holds an ANOMALY record (its chain at the anomaly, its
 * timeline marker).  Starts and stops the control thread; not with
 * another control session running.  0, or a negative errno (sockets,
 * librvtrace's, or the capture's CaptureReady error; -EPROTO on an
 * unexpected message). */
int rvs_fleet_capture_anomaly(const char *version, const char *dir, unsigned severity,
			      enum rvs_fleet_focus focus, uint8_t **out, size_t *len);

#endif
