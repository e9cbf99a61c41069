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

#include "capbuild.h"
#include "rearview/policy.pb-c.h"
#include "summary.h"

#define SLOTS (4u * 1024 * 1024)
#define RUNS  7

static double ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

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
	char *m1[] = {"com.example.Service.method0*", "com.example.Service.method4*"};
	Rearview__SignatureModel sm = REARVIEW__SIGNATURE_MODEL__INIT, *psm = &sm;
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT, *pc = &c;
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	struct rusage ru;
	uint8_t *out = NULL;
	size_t len = 0;
	char err[128];
	double c0, w0, c1, w1;

	sm.id = "bench";
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
	c0 = ms(CLOCK_THREAD_CPUTIME_ID);
	w0 = ms(CLOCK_MONOTONIC);
	if (strcmp(path, "-") &&
	    rvd_summary_file(path, &b, RVD_SUMMARY_TOP, &out, &len, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_summary: %s\n", err);
		return 1;
	}
	c1 = ms(CLOCK_THREAD_CPUTIME_ID);
	w1 = ms(CLOCK_MONOTONIC);
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
	uint32_t stack[32];
	capbuf c = {0};
	uint64_t t = 1ull << 32, rng = 88172645463325252ull;
	unsigned depth = 0;
	FILE *f;

	cb_header(&c, 0, 1000000000, 0, 1000000000000ull, 0x400000, 0);
	while (c.nslots < SLOTS - 2) {
		unsigned maxd = random_graph ? 24 : 12;
		int enter;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		t += 20 + (rng & 63);
		enter = depth == 0 || (depth < maxd && (rng >> 8) % 100 < 50);
		if (enter && c.nslots < SLOTS - 4) {
			uint64_t m = random_graph ? (rng >> 20) % 64
				     : depth == 0
					     ? 0
					     : (stack[depth - 1] * 7 + 1 + (rng >> 20) % 2) % 64;
			uint64_t v = (rng >> 30) % 16 == 0 ? 0xffffff0000000000ull + 16 * m
							   : 0x1000 + 16 * m;

			stack[depth] = (uint32_t)m;
			cb_entry(&c, v, (uint32_t)t);
			depth++;
		} else if (depth) {
			cb_exit(&c, (uint32_t)t);
			depth--;
		} else {
			break;
		}
	}
	cb_u64at(&c, 16, t + 10);
	cb_end_slots(&c);
	for (unsigned m = 0; m < 64; m++) {
		char name[64];

		snprintf(name, sizeof(name), "com.example.Service.method%02u(int)", m);
		cb_symbol(&c, 0x1000 + 16 * m, 0x1000 + 16 * m, 0, name);
	}
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
	qsort(cpu, RUNS, sizeof(double), cmp_d);
	qsort(wall, RUNS, sizeof(double), cmp_d);
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
