/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hotlist.c — `rvtrace hotlist CAPTURE…`: the functions not worth tracing,
 * as a never-list for rvcc (`--rv-never=FILE`, `RVCC_NEVER=FILE`).
 *
 * A method is listed when, over all the inputs taken together, it is called
 * often and its calls are short — the functions whose trace points cost more
 * than they tell:
 *   rate   = its calls / the summed span of the inputs  >  --rate (1e6/s)
 *   median = the median duration of its calls           <  --median (200 ns)
 * (the rule; XRay's instruction threshold covers the same ground at
 * compile time).  Listed most-called first, at most --top N (default all).
 * Their time then folds into their callers' self time.  Names rvtrace could
 * not resolve (module+0xoffset) are never listed.
 *
 * Functions a capture says the tracer muted at run time (MUTED records,
 * FORMAT.md) are hot and short by the tracer's own measure, and their calls
 * after the mute are missing from the trace: they are listed too, after
 * the others, with the figures the tracer saw.
 *
 * Output: one name per line, then a `#` comment with the figures (rvcc
 * ignores everything after `#`); a header comment says the rule and inputs.
 * Invariant: durations are end - start of each call, ≥ 0 in a finished trace.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <assert.h>

#include "rearview/analysis.h"
#include "hotlist.h"

const char rvtrace_usage_hotlist[] =
	"usage: rvtrace hotlist [--rate R] [--median NS] [--top N] FILE...\n"
	"\n"
	"  --rate R      calls per second above which a method is hot (default 1e6)\n"
	"  --median NS   median call duration below which it is short (default 200)\n"
	"  --top N       list at most N methods, most calls first (default all)\n"
	"\n"
	"Prints the methods that are both hot and short over all FILEs taken\n"
	"together (rate = calls over the summed time spans), one name per line\n"
	"with its figures in a # comment: the never-list rvcc reads\n"
	"(CC=\"rvcc --rv-never=LIST gcc\" or RVCC_NEVER=LIST) on the next build.\n"
	"Their time then counts as their callers' self time.  Functions the tracer\n"
	"muted at run time (RV_TRACE_MUTE) are listed too.\n";

struct hot {
	char *name; /* owned */
	int64_t *dur;
	size_t n, cap;
	int listed;
	uint64_t rate, median_ns; /* a muted function's, from its MUTED record */
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_hot(const void *a, const void *b)
{
	const struct hot *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->name, y->name);
}

static struct hot *hot_get(struct hot **v, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].name, name) == 0)
			return &(*v)[i];
	struct hot *nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	*v = nv;
	struct hot *h = &nv[(*n)++];
	memset(h, 0, sizeof(*h));
	h->name = strdup(name);
	return h->name ? h : NULL;
}

/* Adds every call of t to the per-name durations; 0 or -1 (no memory).
 * Entries of *v are found by index: *v moves when it grows. */
static int collect(const rva_trace *t, struct hot **v, size_t *n)
{
	size_t *idx = malloc((t->nmethods ? t->nmethods : 1) * sizeof(*idx));
	if (!idx)
		return -1;
	for (size_t m = 0; m < t->nmethods; m++)
		idx[m] = SIZE_MAX;
	int rc = 0;
	for (size_t th = 0; th < t->nthreads && !rc; th++) {
		const rva_thread *thr = &t->threads[th];
		for (size_t i = 0; i < thr->ncalls; i++) {
			const rva_call *c = &thr->calls[i];
			assert(c->method < t->nmethods);
			if (idx[c->method] == SIZE_MAX) {
				struct hot *g = hot_get(v, n, t->names[c->method]);
				if (!g) {
					rc = -1;
					break;
				}
				idx[c->method] = (size_t)(g - *v);
			}
			struct hot *h = &(*v)[idx[c->method]];
			if (h->n == h->cap) {
				size_t cap = h->cap ? 2 * h->cap : 16;
				int64_t *d = realloc(h->dur, cap * sizeof(*d));
				if (!d) {
					rc = -1;
					break;
				}
				h->dur = d;
				h->cap = cap;
			}
			assert(c->end >= c->start);
			h->dur[h->n++] = c->end - c->start;
		}
	}
	free(idx);
	return rc;
}

int rvtrace_cmd_hotlist(int argc, char **argv)
{
	static const struct option opts[] = {{"rate", required_argument, NULL, 'r'},
					     {"median", required_argument, NULL, 'm'},
					     {"top", required_argument, NULL, 'n'},
					     {0}};
	double rate = 1e6, median = 200, top = -1;
	int c;
	while ((c = getopt_long(argc, argv, "r:m:n:", opts, NULL)) != -1) {
		char *end = NULL;
		double v = optarg ? strtod(optarg, &end) : 0;
		if (!optarg || end == optarg || *end || v < 0) {
			fputs(rvtrace_usage_hotlist, stderr);
			return 2;
		}
		*(c == 'r' ? &rate : c == 'm' ? &median : &top) = v;
	}
	if (optind >= argc) {
		fputs(rvtrace_usage_hotlist, stderr);
		return 2;
	}
	struct hot *v = NULL, *mv = NULL;
	size_t n = 0, nm = 0;
	double span_s = 0;
	int status = 0;
	for (int i = optind; i < argc && !status; i++) {
		rva_trace *t;
		rva_error err = {{0}};
		if (rva_import_file(argv[i], &t, &err) < 0) {
			fprintf(stderr, "rvtrace: %s: %s\n", argv[i], err.msg);
			status = 1;
			break;
		}
		if (t->weighted) {
			fprintf(stderr, "rvtrace: %s: no call durations (aggregate input)\n",
				argv[i]);
			status = 1;
		} else {
			span_s += (double)(t->end - t->start) / 1e9;
			if (collect(t, &v, &n) < 0) {
				fprintf(stderr, "rvtrace: out of memory\n");
				status = 1;
			}
			for (size_t k = 0; k < t->nmuted && !status; k++) {
				const rva_muted *m = &t->muted[k];
				struct hot *h = hot_get(&mv, &nm, t->names[m->method]);
				if (!h) {
					fprintf(stderr, "rvtrace: out of memory\n");
					status = 1;
				} else if (m->rate > h->rate) {
					h->rate = m->rate;
					h->median_ns = m->median_ns;
				}
			}
		}
		rva_trace_free(t);
	}
	if (!status) {
		qsort(v, n, sizeof(*v), cmp_hot);
		printf("# rvtrace hotlist: calls/s > %g and median call < %g ns over %.3f s of "
		       "trace in %d file(s)\n",
		       rate, median, span_s, argc - optind);
		size_t listed = 0;
		for (size_t i = 0; i < n && (top < 0 || (double)listed < top); i++) {
			struct hot *h = &v[i];
			double r = span_s > 0 ? (double)h->n / span_s : 0;
			if (r <= rate || strchr(h->name, '+') || strchr(h->name, ','))
				continue;
			qsort(h->dur, h->n, sizeof(*h->dur), cmp_i64);
			int64_t med = h->dur[h->n / 2];
			if ((double)med >= median)
				continue;
			printf("%s # %zu calls, %.3g/s, median %lld ns\n", h->name, h->n, r,
			       (long long)med);
			listed++;
			h->listed = 1;
		}
		for (size_t i = 0; i < nm && (top < 0 || (double)listed < top); i++) {
			if (strchr(mv[i].name, '+') || strchr(mv[i].name, ','))
				continue;
			int dup = 0;
			for (size_t k = 0; k < n && !dup; k++)
				dup = v[k].listed && strcmp(v[k].name, mv[i].name) == 0;
			if (dup)
				continue;
			printf("%s # muted at run time: %.3g/s, median %llu ns\n", mv[i].name,
			       (double)mv[i].rate, (unsigned long long)mv[i].median_ns);
			listed++;
		}
	}
	for (size_t i = 0; i < nm; i++)
		free(mv[i].name);
	free(mv);
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].dur);
	}
	free(v);
	return fflush(stdout) != 0 ? 1 : status;
}
