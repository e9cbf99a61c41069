/*
 * bench_offcpu.c — what rearviewd's off-CPU records cost per capture
 * (device/src/offcpu.c, capture.c add_offcpu): on this thread's perf events
 * with a ring full of context switches (a few thousand 1 µs sleeps), the
 * snapshot (ring and counters read), the copy of a synthetic 32 MiB capture
 * (capbuild.h, as bench_summary) with the records appended and a new
 * XXH3 checksum, and its write into a sealed memfd.  Prints the median of
 * 9 runs of thread CPU time per step and the bytes the records add.
 * Results: device/BENCHMARKS.md.  Needs perf events (root here): exits 0
 * with a note when they cannot be opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capbuild.h"
#include "offcpu.h"

#define SLOTS (4u * 1024 * 1024)
#define RUNS  9

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v)
{
	qsort(v, RUNS, sizeof(*v), cmp_d);
	return v[RUNS / 2];
}

/* A checksummed capture of SLOTS slots (as every writer makes it). */
static void build(capbuf *c)
{
	uint8_t ck[16] = {1};
	uint64_t h;

	cb_program(c, SLOTS, 0);
	cb_end_slots(c);
	cb_u32at(c, 12, 4);
	cb_u32at(c, 56, (uint32_t)syscall(SYS_gettid));
	cb_u64at(c, 120, c->len + 24 + 8);
	h = XXH3_64bits(c->b, c->len);
	memcpy(ck + 8, &h, 8);
	cb_record(c, 8, ck, 16);
	cb_finish(c);
}

int main(void)
{
	struct rvd_offcpu_thread *t;
	double snap[RUNS], app[RUNS], wr[RUNS];
	size_t added = 0, n = 0;
	capbuf c = {0};
	int rc = rvd_offcpu_open((pid_t)syscall(SYS_gettid), 64, &t);

	if (rc < 0) {
		printf("bench_offcpu: perf events unavailable here: %s\n", strerror(-rc));
		return 0;
	}
	build(&c);
	for (int r = 0; r < RUNS; r++) {
		struct timespec us = {0, 1000};
		struct rvd_offcpu_window w;
		uint8_t *out;
		size_t len;
		double t0;
		int fd;

		for (int i = 0; i < 4000; i++) /* fill the ring with switches */
			nanosleep(&us, NULL);
		t0 = cpu_ms();
		if (rvd_offcpu_snapshot(t, &w) < 0)
			return 1;
		snap[r] = cpu_ms() - t0;
		t0 = cpu_ms();
		if (rvd_offcpu_append(c.b, c.len, &w, 1, &out, &len) < 0)
			return 1;
		app[r] = cpu_ms() - t0;
		t0 = cpu_ms();
		fd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0 || write(fd, out, len) != (ssize_t)len ||
		    fcntl(fd, F_ADD_SEALS,
			  F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
			return 1;
		close(fd);
		wr[r] = cpu_ms() - t0;
		added = len - c.len;
		n = w.n;
		free(out);
		rvd_offcpu_window_release(&w);
	}
	printf("bench_offcpu: 32 MiB capture, %zu intervals in the ring (64 pages): +%zu bytes\n"
	       "  snapshot %.3f ms, copy+append+XXH3 %.3f ms, memfd write+seal %.3f ms, sum "
	       "%.3f ms thread CPU (medians of %d)\n",
	       n, added, median(snap), median(app), median(wr),
	       median(snap) + median(app) + median(wr), RUNS);
	rvd_offcpu_close(t);
	free(c.b);
	return 0;
}
