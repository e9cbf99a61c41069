/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_summary.c — rearviewd's local summary (rvd_summary_file: map the
 * capture file, streaming summary, signature models, Summary protobuf) of
 * a synthetic 32 MiB capture built with capbuild.h the same way as
 * tests/rvtrace/bench_capture.c (4 Mi slots, 64 methods, program-like
 * call graph; RVBENCH_RANDOM=1: nearly every chain distinct).
 *
 * Each run is a fresh exec of this binary (`--one FILE`), so its peak RSS
 * is the summary's alone, not the 32 MiB the builder held; `--one -`
 * measures the same process doing nothing, the baseline.  Prints the
 * median of 7 runs of thread CPU time and wall time, and the peak RSS.
 * Results: device/BENCHMARKS.md.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../bench/bench_stat.h"
#include "capbuild.h"
#include "rearview/policy.pb-c.h"
#include "summary.h"

#define SLOTS (4u * 1024 * 1024)
#define RUNS  7

/* Peak anonymous and file-backed RSS, sampled from /proc/self/status every
 * millisecond while the summary runs (VmHWM mixes the mapped capture's
 * page cache with the heap). */
static atomic_bool sampling = true;
static long peak_anon, peak_file;

static void *sampler(void *arg)
{
	(void)arg;
	while (atomic_load(&sampling)) {
		char line[128];
		FILE *f = fopen("/proc/self/status", "r");
		long v;

		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "RssAnon: %ld", &v) == 1 && v > peak_anon)
				peak_anon = v;
			if (sscanf(line, "RssFile: %ld", &v) == 1 && v > peak_file)
				peak_file = v;
		}
		if (f)
			fclose(f);
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return NULL;
}

/* One summary in this (fresh) process: prints "cpu_ms wall_ms maxrss_kib
 * bytes anon_kib file_kib". */
static int one(const char *path)
{
	/* One model per campaign, as a policy would carry them. */
	char p0[] = "com.example.Service.method0*", p1[] = "com.example.Service.method4*";
	char id[] = "bench", *m1[] = {p0, p1};
	Rearview__SignatureModel sm = REARVIEW__SIGNATURE_MODEL__INIT, *psm = &sm;
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT, *pc = &c;
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	struct rusage ru;
	uint8_t *out = NULL;
	size_t len = 0;
	char err[128];
	double c0, w0, c1, w1;

	sm.id = id;
	sm.methods = m1;
	sm.n_methods = 2;
	sm.min_duration_ns = 1000;
	c.signatures = &psm;
	c.n_signatures = 1;
	b.campaigns = &pc;
	b.n_campaigns = 1;
	pthread_t th;

	if (pthread_create(&th, NULL, sampler, NULL) != 0)
		return 1;
	c0 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
	w0 = rvb_ms(CLOCK_MONOTONIC);
	if (strcmp(path, "-") &&
	    rvd_summary_file(path, &b, RVD_SUMMARY_TOP, &out, &len, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_summary: %s\n", err);
		return 1;
	}
	c1 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
	w1 = rvb_ms(CLOCK_MONOTONIC);
	atomic_store(&sampling, false);
	pthread_join(th, NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("%.3f %.3f %ld %zu %ld %ld\n", c1 - c0, w1 - w0, ru.ru_maxrss, len, peak_anon,
	       peak_file);
	free(out);
	return 0;
}

static void build(const char *path)
{
	int random_graph = getenv("RVBENCH_RANDOM") != NULL;
	capbuf c = {0};
	FILE *f;

	cb_program(&c, SLOTS, random_graph);
	cb_anomaly(&c, 1, 1000000000000ull - 1000, "jank");
	cb_finish(&c);
	f = fopen(path, "wb");
	if (!f || fwrite(c.b, 1, c.len, f) != c.len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	printf("capture: %.1f MiB, %zu slots%s\n", (double)c.len / (1 << 20), c.nslots,
	       random_graph ? " (random graph)" : "");
	free(c.b);
}

/* Runs `self --one arg` and parses its line. */
static int run_one(const char *self, const char *arg, double *cpu, double *wall, long *rss,
		   size_t *bytes, long *anon, long *filek)
{
	char cmd[600], line[200];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof(cmd), "'%s' --one '%s'", self, arg);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	ok = fgets(line, sizeof(line), p) &&
	     sscanf(line, "%lf %lf %ld %zu %ld %ld", cpu, wall, rss, bytes, anon, filek) == 6;
	return pclose(p) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/rvd-bench-XXXXXX", file[64];
	double cpu[RUNS], wall[RUNS], c, w;
	long rss = 0, base = 0, r, anon = 0, filek = 0, a, fk, base_anon, base_file;
	size_t bytes = 0;

	if (argc == 3 && !strcmp(argv[1], "--one"))
		return one(argv[2]);
	if (!mkdtemp(path))
		return 1;
	snprintf(file, sizeof(file), "%s/c.rvc", path);
	build(file);
	if (run_one(argv[0], "-", &c, &w, &base, &bytes, &base_anon, &base_file) < 0)
		return 1;
	for (int i = 0; i < RUNS; i++) {
		if (run_one(argv[0], file, &cpu[i], &wall[i], &r, &bytes, &a, &fk) < 0)
			return 1;
		if (r > rss)
			rss = r;
		if (a > anon)
			anon = a;
		if (fk > filek)
			filek = fk;
	}
	rvb_sort_median(cpu, RUNS);
	rvb_sort_median(wall, RUNS);
	printf("local summary of the 32 MiB capture: median cpu %.1f ms, wall %.1f ms "
	       "(min %.1f, max %.1f), summary %zu bytes\n",
	       cpu[RUNS / 2], wall[RUNS / 2], wall[0], wall[RUNS - 1], bytes);
	printf("peak RSS %ld KiB, same process doing nothing %ld KiB: +%ld KiB\n", rss, base,
	       rss - base);
	printf("sampled peaks: anonymous (heap) %ld KiB (+%ld over idle), file-backed (the "
	       "mapped capture, page cache) %ld KiB (+%ld)\n",
	       anon, anon - base_anon, filek, filek - base_file);
	unlink(file);
	rmdir(path);
	return 0;
}
