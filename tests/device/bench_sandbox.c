/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_sandbox.c — what the sandboxed capture parser (device/src/sandbox.h)
 * adds per capture: the daemon's capture check (rvd_capcheck_fd in this
 * process, against rvd_sandbox_check through the persistent worker, and
 * through a worker started for that one capture) and the local summary
 * (rvd_summary_build in this process against rvd_sandbox_summarize), on
 * sealed memfds holding synthetic checksummed captures built with
 * capbuild.h (program-like call graph) of about 4 KiB, 1 MiB and 32 MiB.
 *
 * The variants run interleaved, round after round, on the same memfd, so
 * the machine's noise hits them alike; each line gives the median wall
 * time of each, and the median of the per-round differences (the added
 * latency).  On a loaded machine the wall time of a round trip includes
 * waiting to be scheduled, so the CPU time is given too: this thread's
 * (CLOCK_THREAD_CPUTIME_ID) plus, sandboxed, the worker's (its
 * /proc/PID/schedstat run time, ns).  The worker is the real rearviewd
 * (RV_BIN_DIR), confined as in the daemon.  Results: device/BENCHMARKS.md.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../bench/bench_stat.h"
#include "capbuild.h"
#include "capcheck.h"
#include "sandbox.h"
#include "summary.h"

#define ROUNDS 15

/* A sealed memfd with a checksummed capture of about `slots` slots. */
static int make_capture(size_t slots, size_t *len)
{
	capbuf c = {0};
	uint8_t sum[16] = {1};
	uint64_t h;
	int fd;

	if (slots < 8) {
		cb_header(&c, 1000, 1000000000, 0, 1000000000000ull, 0x400000, 0);
		cb_entry(&c, 0x1000, 10);
		cb_exit(&c, 900);
		cb_end_slots(&c);
		cb_symbol(&c, 0x1000, 0x1000, 0xffffffffu, "bench_method");
	} else {
		cb_program(&c, slots, 0);
	}
	cb_anomaly(&c, 1, 1000000000000ull - 1000, "jank");
	cb_u32at(&c, 12, 4); /* checksummed */
	cb_u64at(&c, 120, c.len + 24 + 8);
	h = XXH3_64bits(c.b, c.len);
	for (int i = 0; i < 8; i++)
		sum[8 + i] = (uint8_t)(h >> (8 * i));
	cb_record(&c, 8, sum, sizeof(sum));
	cb_finish(&c);
	fd = memfd_create("bench-capture", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || write(fd, c.b, c.len) != (ssize_t)c.len ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
		perror("memfd");
		exit(1);
	}
	*len = c.len;
	free(c.b);
	return fd;
}

/* The worker's CPU time so far in ms (its schedstat run time), 0 without one. */
static double worker_cpu_ms(const struct rvd_sandbox *sb)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	if (sb->pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)sb->pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return (double)ns / 1e6;
}

static void cpu_line(double *a, double *b, double *d, size_t n)
{
	double ma = rvb_sort_median(a, n), mb = rvb_sort_median(b, n), md = rvb_sort_median(d, n);

	printf("%-34s %13s  in-process %9.3f ms  sandboxed %9.3f ms  added %8.3f ms CPU\n", "", "",
	       ma, mb, md);
}

static void line(const char *what, size_t len, double *a, double *b, double *d, size_t n)
{
	double ma = rvb_sort_median(a, n), mb = rvb_sort_median(b, n), md = rvb_sort_median(d, n);

	printf("%-34s %9.1f KiB  in-process %9.3f ms  sandboxed %9.3f ms  added %8.3f ms "
	       "(min %.3f, max %.3f)\n",
	       what, (double)len / 1024, ma, mb, md, d[0], d[n - 1]);
}

int main(void)
{
	static const size_t slots[] = {0, 64 * 1024, 4u * 1024 * 1024};
	struct rvd_sandbox sb, fresh;
	double a[ROUNDS], b[ROUNDS], d[ROUNDS], f[ROUNDS], df[ROUNDS];
	double ca[ROUNDS], cb[ROUNDS], cd[ROUNDS];
	char why[160];
	const char *w;

	if (rvd_sandbox_init(&sb, "bench", RV_BIN_DIR "/rearviewd", 120000) < 0 ||
	    rvd_sandbox_init(&fresh, "bench-fresh", RV_BIN_DIR "/rearviewd", 120000) < 0)
		return 1;
	printf("rounds %d, interleaved; worker %s/rearviewd\n", ROUNDS, RV_BIN_DIR);
	for (size_t k = 0; k < sizeof(slots) / sizeof(slots[0]); k++) {
		size_t len;
		int fd = make_capture(slots[k], &len);

		/* Warm: the persistent worker exists, the page cache holds the memfd. */
		if (rvd_sandbox_check(&sb, fd, len, why, sizeof(why)) < 0 ||
		    rvd_capcheck_fd(fd, len, &w) < 0) {
			fprintf(stderr, "bench_sandbox: check refused: %s\n", why);
			return 1;
		}
		for (int r = 0; r < ROUNDS; r++) {
			double t0 = rvb_ms(CLOCK_MONOTONIC), t1, t2, t3;
			double c0 = rvb_ms(CLOCK_THREAD_CPUTIME_ID), c1, c2, w1, w2;

			if (rvd_capcheck_fd(fd, len, &w) < 0)
				return 1;
			t1 = rvb_ms(CLOCK_MONOTONIC);
			c1 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
			w1 = worker_cpu_ms(&sb);
			if (rvd_sandbox_check(&sb, fd, len, why, sizeof(why)) < 0)
				return 1;
			t2 = rvb_ms(CLOCK_MONOTONIC);
			c2 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
			w2 = worker_cpu_ms(&sb);
			ca[r] = c1 - c0;
			cb[r] = (c2 - c1) + (w2 - w1);
			cd[r] = cb[r] - ca[r];
			/* A worker per capture: started, checked, ended. */
			if (rvd_sandbox_check(&fresh, fd, len, why, sizeof(why)) < 0)
				return 1;
			rvd_sandbox_close(&fresh);
			t3 = rvb_ms(CLOCK_MONOTONIC);
			a[r] = t1 - t0;
			b[r] = t2 - t1;
			f[r] = t3 - t2;
			d[r] = b[r] - a[r];
			df[r] = f[r] - a[r];
		}
		line("check, persistent worker", len, a, b, d, ROUNDS);
		cpu_line(ca, cb, cd, ROUNDS);
		/* a[] is sorted by line(): the per-round differences were kept. */
		line("check, worker per capture", len, a, f, df, ROUNDS);
		if (slots[k]) {
			int rounds = slots[k] > 1000000 ? 5 : ROUNDS;

			for (int r = 0; r < rounds; r++) {
				uint8_t *o1 = NULL, *o2 = NULL, *map;
				size_t l1 = 0, l2 = 0;
				double t0, t1, t2;

				map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
				if (map == MAP_FAILED)
					return 1;
				double c0, c1, c2, w1, w2;

				t0 = rvb_ms(CLOCK_MONOTONIC);
				c0 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
				if (rvd_summary_build(map, len, NULL, RVD_SUMMARY_TOP, &o1, &l1,
						      why, sizeof(why)) < 0)
					return 1;
				t1 = rvb_ms(CLOCK_MONOTONIC);
				c1 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
				w1 = worker_cpu_ms(&sb);
				if (rvd_sandbox_summarize(&sb, fd, len, NULL, 0,
							  RVD_SUMMARY_MAX_BYTES, &o2, &l2, why,
							  sizeof(why)) < 0) {
					fprintf(stderr, "bench_sandbox: summary: %s\n", why);
					return 1;
				}
				t2 = rvb_ms(CLOCK_MONOTONIC);
				c2 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
				w2 = worker_cpu_ms(&sb);
				ca[r] = c1 - c0;
				cb[r] = (c2 - c1) + (w2 - w1);
				cd[r] = cb[r] - ca[r];
				munmap(map, len);
				/* The same summary either way. */
				if (l1 != l2 || memcmp(o1, o2, l1) != 0) {
					fprintf(stderr, "bench_sandbox: summaries differ\n");
					return 1;
				}
				free(o1);
				free(o2);
				a[r] = t1 - t0;
				b[r] = t2 - t1;
				d[r] = b[r] - a[r];
			}
			line("summary, persistent worker", len, a, b, d, (size_t)rounds);
			cpu_line(ca, cb, cd, (size_t)rounds);
		}
		close(fd);
	}
	rvd_sandbox_close(&sb);
	return 0;
}
