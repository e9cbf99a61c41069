/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frames_fix.c — an instrumented program with long-lived frames, for
 * test_frames: main → ff_run → ff_loop → ff_phase (4 phases) → ff_batch →
 * ff_dispatch → ff_stage1 → ff_stage2 → ff_leaf, with ff_side beside
 * ff_stage1 every seventh batch.  Each phase runs FF_BATCHES batches, many
 * laps of a small ring (the test sets RV_TRACE_BUFFER), so every capture
 * has lost the entries of main, ff_run, ff_loop and of the phase before.
 * In the middle of phase 2 the leaf captures its own thread to argv[1]
 * (the frames open then are the whole chain); developer mode writes the
 * capture at exit (RV_TRACE_FILE), when they have all closed.  Built with
 * gcc and clang, in call mode and inline mode (tracer/lib.mk).
 */
#include <stdio.h>
#include <stdlib.h>

#include "rearview/trace.h"

#define NI	   __attribute__((noinline))
#define FF_BATCHES 20000

static volatile unsigned sink;
static const char *mid_path;
static int mid_rc = 1;

NI void ff_leaf(int i);
NI void ff_stage2(int i);
NI void ff_stage1(int i);
NI void ff_side(int i);
NI void ff_dispatch(int i);
NI void ff_batch(int phase, int i);
NI void ff_phase(int phase);
NI void ff_loop(void);
NI void ff_run(void);

NI void ff_leaf(int i)
{
	sink += (unsigned)i;
	if (i == -1)
		mid_rc = rvt_capture_to_path(0, mid_path);
}

NI void ff_stage2(int i)
{
	ff_leaf(i);
	sink++;
}

NI void ff_stage1(int i)
{
	ff_stage2(i);
	sink++;
}

NI void ff_side(int i)
{
	sink ^= (unsigned)i;
}

NI void ff_dispatch(int i)
{
	ff_stage1(i);
	if (i % 7 == 0)
		ff_side(i);
}

NI void ff_batch(int phase, int i)
{
	/* The middle of phase 2: capture from the leaf (i = -1). */
	ff_dispatch(phase == 2 && i == FF_BATCHES / 2 ? -1 : i);
}

NI void ff_phase(int phase)
{
	for (int i = 0; i < FF_BATCHES; i++)
		ff_batch(phase, i);
}

NI void ff_loop(void)
{
	for (int p = 0; p < 4; p++)
		ff_phase(p);
}

NI void ff_run(void)
{
	ff_loop();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: frames_fix MID_CAPTURE_PATH\n");
		return 2;
	}
	mid_path = argv[1];
	ff_run();
	if (mid_rc != 0)
		fprintf(stderr, "frames_fix: capture in phase 2: %d\n", mid_rc);
	return mid_rc == 0 ? 0 : 1;
}
