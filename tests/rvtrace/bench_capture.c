/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_capture.c — decode + full summary (method statistics, top 20 by
 * self time, every distinct chain with signatures) of a synthetic 32 MiB
 * capture: 4 Mi slots of nested calls over 64 methods, 1 in 16 entries a
 * two-slot value, counter wrapping every 4.3 s.  Prints the median of 7
 * runs and the peak RSS.  Results: tracer/BENCHMARKS-rvtrace.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "../bench/bench_stat.h"
#include "capbuild.h"
#include "rearview/analysis.h"

#define SLOTS (4u * 1024 * 1024)

/* Program-like: method m calls one of 2 fixed callees, depth <= 12, so
 * hot paths repeat as in real code; RVBENCH_RANDOM=1 picks any of 64
 * callees at any depth up to 24 (nearly every chain distinct: worst case).
 * RVBENCH_MODEL=1 measures decoding into the full model instead;
 * RVBENCH_WRITE=PATH also writes the capture there (for timing `rvtrace
 * summary` on it) and exits. */
int main(void)
{
	int random_graph = getenv("RVBENCH_RANDOM") != NULL;
	int model = getenv("RVBENCH_MODEL") != NULL;
	capbuf c = {0};
	cb_program(&c, SLOTS, random_graph);
	cb_finish(&c);
	const char *out = getenv("RVBENCH_WRITE");
	if (out) {
		FILE *f = fopen(out, "wb");
		int ok = f && fwrite(c.b, 1, c.len, f) == c.len;
		if (f && fclose(f) != 0)
			ok = 0;
		free(c.b);
		if (!ok)
			perror(out);
		return ok ? 0 : 1;
	}
	printf("capture: %zu bytes, %zu slots, %s call graph, %s\n", c.len, c.nslots,
	       random_graph ? "random" : "program-like",
	       model ? "full model" : "streaming summary");
	struct rusage ru0;
	getrusage(RUSAGE_SELF, &ru0);
	printf("peak RSS before decoding (capture built): %ld MiB\n", ru0.ru_maxrss / 1024);
	double ms[7];
	size_t calls = 0, chains = 0;
	for (int r = 0; r < 7; r++) {
		double t0 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
		rva_error err;
		uint32_t ids[20];
		rva_chains ch;
		if (model) {
			/* The full model: every call stored, then analysed. */
			rva_trace *tr;
			rva_mstat *st;
			if (rva_capture_decode(c.b, c.len, &tr, &err) < 0 ||
			    rva_method_stats(tr, &st) < 0 || rva_chains_collect(tr, 20, &ch) < 0)
				return 1;
			rva_top_self(tr, st, ids, 20);
			ms[r] = rvb_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
			calls = tr->threads[0].ncalls;
			chains = ch.n;
			free(st);
			rva_chains_release(&ch);
			rva_trace_free(tr);
			continue;
		}
		rva_summary sum;
		if (rva_capture_summarize(c.b, c.len, &sum, &err) < 0) {
			fprintf(stderr, "decode: %s\n", err.msg);
			return 1;
		}
		if (rva_chains_from_tree(sum.trace, &sum.tree, 20, &ch) < 0)
			return 1;
		rva_top_self(sum.trace, sum.stats, ids, 20);
		ms[r] = rvb_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
		calls = 0;
		for (size_t k = 0; k < sum.trace->nmethods; k++)
			calls += sum.stats[k].calls;
		chains = sum.tree.n - 1;
		rva_chains_release(&ch);
		rva_summary_release(&sum);
	}
	rvb_sort_median(ms, 7);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("calls %zu, distinct chains %zu\n", calls, chains);
	printf("decode+summary median %.1f ms CPU (min %.1f, max %.1f), %.0f MB/s, peak RSS %ld "
	       "MiB\n",
	       ms[3], ms[0], ms[6], (double)c.len / 1048576.0 / (ms[3] / 1000.0),
	       ru.ru_maxrss / 1024);
	free(c.b);
	return 0;
}
