/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_offcpu.c — what rearviewd's off-CPU records cost per capture
 * (device/src/offcpu.c, capture.c add_offcpu): on this thread's perf events
 * with a ring full of context switches (a few thousand 1 µs sleeps), the
 * snapshot (ring and counters read), the copy of a synthetic 32 MiB capture
 * (capbuild.h, as bench_summary) with the records appended and a new
 * XXH3 checksum, and its write into a sealed memfd.  Prints the median of
 * 9 runs of thread CPU time per step and the bytes the records add.  Then
 * the local summary (device/src/summary.c) of that capture without and
 * with a full ring's intervals (5461, alternately blocked and preempted,
 * spread over the trace): the packed Summary's bytes, i.e. what a
 * summary-only upload grows by, and its thread CPU (median of 3).
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
#include "rearview/analysis.h"
#include "summary.h"

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

/* A full ring's intervals (5461) spread over the trace of capture c. */
static int ring_window(const capbuf *c, struct rvd_offcpu_window *w)
{
	rva_summary sum = {0};
	rva_error e = {{0}};
	uint64_t from, span;

	if (rva_capture_summarize(c->b, c->len, &sum, &e) < 0)
		return -1;
	from = (uint64_t)sum.trace->start;
	span = (uint64_t)(sum.trace->end - sum.trace->start);
	rva_summary_release(&sum);
	memset(w, 0, sizeof(*w));
	w->n = 5461;
	w->iv = calloc(w->n, sizeof(*w->iv));
	if (!w->iv)
		return -1;
	for (size_t i = 0; i < w->n; i++) {
		uint64_t at = from + span / w->n * i;
		w->iv[i] = (struct rvd_offcpu_iv){.out_ns = at + span / w->n / 4,
						  .in_ns = at + span / w->n / 2,
						  .reason = i % 2 ? RVD_OFFCPU_PREEMPTED
								  : RVD_OFFCPU_BLOCKED};
	}
	w->tid = (pid_t)syscall(SYS_gettid);
	w->since_ns = w->window_ns = from;
	w->at_ns = from + span;
	w->switches = w->n;
	w->voluntary = (w->n + 1) / 2;
	w->involuntary = w->n / 2;
	return 0;
}

/* The summary of buf[0..len): its bytes, and the median thread CPU of 3. */
static size_t summary_cost(const uint8_t *buf, size_t len, double *ms)
{
	double v[3];
	size_t n = 0;
	char err[128];

	for (int r = 0; r < 3; r++) {
		uint8_t *out;
		double t0 = cpu_ms();

		if (rvd_summary_build(buf, len, NULL, RVD_SUMMARY_TOP, &out, &n, err, sizeof(err)) <
		    0) {
			fprintf(stderr, "bench_offcpu: summary: %s\n", err);
			exit(1);
		}
		v[r] = cpu_ms() - t0;
		free(out);
	}
	qsort(v, 3, sizeof(*v), cmp_d);
	*ms = v[1];
	return n;
}

/* The summary-only upload's growth: plain capture vs with a full ring. */
static int summary_bench(const capbuf *c)
{
	struct rvd_offcpu_window w;
	uint8_t *out;
	size_t len, plain, rich;
	double mp, mr;

	if (ring_window(c, &w) < 0 || rvd_offcpu_append(c->b, c->len, &w, 1, &out, &len) < 0)
		return 1;
	plain = summary_cost(c->b, c->len, &mp);
	rich = summary_cost(out, len, &mr);
	printf("bench_offcpu: local summary of the 32 MiB capture: %zu bytes, %.1f ms; with "
	       "%zu intervals: %zu bytes (+%zu), %.1f ms thread CPU (medians of 3)\n",
	       plain, mp, w.n, rich, rich - plain, mr);
	free(out);
	rvd_offcpu_window_release(&w);
	return 0;
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
	rc = summary_bench(&c);
	free(c.b);
	return rc;
}
