/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capcheck.h — the daemon's check that a CaptureReady memfd holds a
 * Rearview capture (tracer/FORMAT.md): header, geometry and the CHECKSUM
 * record, before anything is stored, acknowledged or uploaded (issue 18
 * item 12).  It does not decode the slots: the local summary does that
 * later, on the work queue.
 */
#ifndef RVD_CAPCHECK_H
#define RVD_CAPCHECK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Checks the `len` bytes at `buf`: magic, version 1 or 2, header_size,
 * slots_offset / meta_offset / file_size consistent with `len`, the
 * `checksummed` flag set (every writer sets it), the records well formed up
 * to a CHECKSUM (XXH3-64) that verifies, followed by END ending exactly at
 * `len`.  Returns 0, or -EBADMSG with *why set to a static string naming
 * the first fault.  Pure: reads only `buf`, any thread.
 */
int rvd_capcheck_buf(const uint8_t *buf, size_t len, const char **why);

/*
 * rvd_capcheck_buf on the first `len` bytes of `fd` (mapped read-only,
 * unmapped before returning; the descriptor's offset is not used).
 * Returns 0, -EBADMSG (*why set), or a negative errno when it cannot be
 * mapped (*why "cannot map the capture").  Costs one XXH3 pass over the
 * file (1.7 ms for a 32 MiB capture on the project machine), on the
 * calling thread.
 */
int rvd_capcheck_fd(int fd, size_t len, const char **why);

#endif
