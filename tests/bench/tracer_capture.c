/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracer_capture.c — what one capture costs the traced process: the time
 * and peak memory of rvt_capture_to_memfd() on a full ring (the default
 * 32 MiB, ~4 M events) of calls to `nfuncs` distinct functions (argv[1],
 * default 2000: a large app's traced methods) in a random order.  The
 * capture is built on the caller's thread, like the control thread's
 * captures for the daemon; the traced thread itself goes on in its spare
 * buffer.  Prints the median of 7 captures (each after refilling the ring),
 * the CPU time, and the process's VmHWM growth over the first capture.
 * Keys are addresses inside a static array: unnamed symbols, so the time is
 * the build's own (distinct values, records, copy), not the symbol lookup.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_stat.h"
#include "rearview/trace.h"

static char keys[1 << 16];

static long vm_hwm_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Fills the caller's ring: 2.2 M calls (4.4 M events, more than the ring
 * holds, so it has wrapped), nested at most 3 deep. */
static void fill(unsigned nfuncs, uint64_t *seed)
{
	for (long i = 0; i < 2200000 / 3; i++) {
		const void *k[3];

		for (int d = 0; d < 3; d++) {
			*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
			k[d] = &keys[(*seed >> 33) % nfuncs * 8];
			rvt_enter(k[d]);
		}
		for (int d = 0; d < 3; d++)
			rvt_exit();
	}
}

int main(int argc, char **argv)
{
	unsigned nfuncs = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000;
	double wall[7], cpu[7];
	uint64_t seed = 42, size = 0;
	long hwm0, hwm1 = 0;

	if (nfuncs == 0 || nfuncs > sizeof keys / 8) {
		fprintf(stderr, "usage: tracer_capture [nfuncs 1..%zu]\n", sizeof keys / 8);
		return 2;
	}
	if (rvt_start(0)) {
		fprintf(stderr, "tracer_capture: rvt_start failed\n");
		return 1;
	}
	for (int r = 0; r < 7; r++) {
		fill(nfuncs, &seed);
		hwm0 = vm_hwm_kb();
		double w0 = rvb_ms(CLOCK_MONOTONIC), c0 = rvb_ms(CLOCK_PROCESS_CPUTIME_ID);
		int fd = rvt_capture_to_memfd(0, &size);
		wall[r] = rvb_ms(CLOCK_MONOTONIC) - w0;
		cpu[r] = rvb_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (fd < 0) {
			fprintf(stderr, "tracer_capture: capture failed (%d)\n", fd);
			return 1;
		}
		close(fd);
		if (r == 0)
			hwm1 = vm_hwm_kb() - hwm0;
	}
	printf("capture of a full ring (%u functions, %.1f MiB file): median %.1f ms wall, "
	       "%.1f ms CPU; VmHWM +%ld KiB over the first\n",
	       nfuncs, (double)size / (1 << 20), rvb_sort_median(wall, 7), rvb_sort_median(cpu, 7),
	       hwm1);
	return 0;
}
