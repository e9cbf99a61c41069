/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_jankcount.c — what counting one frame for its app costs rearviewd
 * (rvd_jankc_add, on the daemon's loop for every FrameReport): the median
 * over 9 rounds of thread CPU time per frame, with the table nearly empty
 * (one app) and full (56 named apps and the other rows: the worst case,
 * every lookup a miss into the "(other)" row), interleaved round by round.
 * And rvd_jankc_format of a full table (the periodic write's CPU part).
 * Results: device/BENCHMARKS.md.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../bench/bench_stat.h"
#include "jankcount.h"

#define ROUNDS 9
#define FRAMES 200000

static double per_frame_ns(struct rvd_jank_counts *c, const char *app)
{
	double t0 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);

	for (unsigned i = 0; i < FRAMES; i++)
		rvd_jankc_add(c, app, "1.0", 20000, (i & 7) == 0);
	return (rvb_ms(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e6 / FRAMES;
}

int main(void)
{
	static struct rvd_jank_counts one, full;
	static char buf[RVD_JANKC_FILE_MAX];
	double a[ROUNDS], b[ROUNDS], f[ROUNDS];
	char app[32];

	rvd_jankc_init(&one);
	rvd_jankc_init(&full);
	for (uint32_t d = 0; d < RVD_JANKC_DAYS; d++)
		for (int k = 0; k < 100; k++) {
			snprintf(app, sizeof app, "org.example.app%d", k);
			rvd_jankc_add(&full, app, "1.0", 20000 - RVD_JANKC_DAYS + 1 + d, false);
		}
	for (int r = 0; r < ROUNDS; r++) {
		double t0;

		a[r] = per_frame_ns(&one, "org.example.app0");
		b[r] = per_frame_ns(&full, "org.example.new");
		t0 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
		for (int k = 0; k < 100; k++)
			if (rvd_jankc_format(&full, buf, sizeof buf) <= 0)
				return 1;
		f[r] = (rvb_ms(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e3 / 100;
	}
	printf("jankcount: rows in the full table %u\n", full.n);
	printf("jankcount: per frame, one app: %.1f ns (median of %d rounds of %d)\n",
	       rvb_sort_median(a, ROUNDS), ROUNDS, FRAMES);
	printf("jankcount: per frame, full table, a new app: %.1f ns\n",
	       rvb_sort_median(b, ROUNDS));
	printf("jankcount: format of the full table: %.1f us\n", rvb_sort_median(f, ROUNDS));
	return 0;
}
