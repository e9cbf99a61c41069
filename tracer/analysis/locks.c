/* SPDX-License-Identifier: Apache-2.0 */
/*
 * locks.c — lock waits of a capture (LOCK_WAIT records, tracer/FORMAT.md)
 * analysed and shown: per method that waited, the time waiting and the
 * holder (thread and method) that made it wait longest; as a text section
 * of `rvtrace summary`, a field of the summary JSON, a `why METHOD` block
 * and Chrome JSON flow arrows from the holder to the waiter.
 *
 * Invariants: the trace is only read; every method id is checked against
 * t->nmethods before use (-1 or out of range prints "(unknown)"); the
 * statistics are sorted by time waited, longest first, ties by method id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"
#include "analysis-int.h"
#include "rearview/common.h"

static const char *lock_name(const rva_trace *t, int64_t id)
{
	return id >= 0 && (uint64_t)id < t->nmethods ? t->names[id] : "(unknown)";
}

const char *rva_lock_kind_name(uint32_t kind)
{
	return kind == RVA_LOCK_MUTEX	 ? "mutex"
	       : kind == RVA_LOCK_RDLOCK ? "rwlock read"
	       : kind == RVA_LOCK_WRLOCK ? "rwlock write"
	       : kind == RVA_LOCK_COND	 ? "condition variable"
					 : "lock";
}

/* Orders waits by waiter method, then holder, then holder method. */
static int cmp_wait(const void *a, const void *b)
{
	const rva_lock_wait *x = a, *y = b;
	if (x->waiter_method != y->waiter_method)
		return x->waiter_method < y->waiter_method ? -1 : 1;
	if (x->holder != y->holder)
		return x->holder < y->holder ? -1 : 1;
	if (x->holder_method != y->holder_method)
		return x->holder_method < y->holder_method ? -1 : 1;
	return 0;
}

static int cmp_stat(const void *a, const void *b)
{
	const rva_lock_stat *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->method < y->method ? -1 : x->method > y->method;
}

int rva_lock_stats(const rva_trace *t, rva_lock_stat **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!t->nlock_waits)
		return 0;
	rva_lock_wait *w = malloc(t->nlock_waits * sizeof(*w));
	rva_lock_stat *st = calloc(t->nlock_waits, sizeof(*st));
	if (!w || !st) {
		free(w);
		free(st);
		return -ENOMEM;
	}
	memcpy(w, t->lock_waits, t->nlock_waits * sizeof(*w));
	qsort(w, t->nlock_waits, sizeof(*w), cmp_wait);
	size_t ns = 0;
	for (size_t i = 0; i < t->nlock_waits;) {
		rva_lock_stat *s = &st[ns++];
		s->method = w[i].waiter_method;
		s->top_holder_method = -1;
		/* Each run of one (holder, holder method) within the method. */
		while (i < t->nlock_waits && w[i].waiter_method == s->method) {
			size_t j = i;
			int64_t sum = 0;
			while (j < t->nlock_waits && cmp_wait(&w[i], &w[j]) == 0) {
				sum += w[j].end - w[j].start;
				s->waits++;
				j++;
			}
			s->total += sum;
			if (sum > s->top_holder_ns || s->top_holder_ns == 0) {
				s->top_holder = w[i].holder;
				s->top_holder_method = w[i].holder_method;
				s->top_holder_ns = sum;
			}
			i = j;
		}
	}
	free(w);
	qsort(st, ns, sizeof(*st), cmp_stat);
	*out = st;
	*n = ns;
	return 0;
}

int rva_locks_print(FILE *f, const rva_trace *t, size_t ntop)
{
	if (!t->nlock_waits)
		return 0;
	rva_lock_stat *st;
	size_t n;
	int rc = rva_lock_stats(t, &st, &n);
	if (rc < 0)
		return rc;
	fprintf(f, "\nlock waits by method (%zu waits):\n", t->nlock_waits);
	fprintf(f, "%10s %14s  %-32s %s\n", "waits", "waited us", "method", "longest holder");
	for (size_t i = 0; i < n && i < ntop; i++) {
		fprintf(f, "%10" PRIu64 " %14.3f  %-32s ", st[i].waits, (double)st[i].total / 1e3,
			lock_name(t, st[i].method));
		if (st[i].top_holder)
			fprintf(f, "tid %u in %s\n", st[i].top_holder,
				lock_name(t, st[i].top_holder_method));
		else
			fputs("(unknown)\n", f);
	}
	free(st);
	return ferror(f) ? -EIO : 0;
}

int rva_locks_json(FILE *f, const rva_trace *t, size_t ntop)
{
	if (!t->nlock_waits)
		return 0;
	rva_lock_stat *st;
	size_t n;
	int rc = rva_lock_stats(t, &st, &n);
	if (rc < 0)
		return rc;
	fputs(",\n\"lock_waits\":[", f);
	for (size_t i = 0; i < n && i < ntop; i++) {
		fprintf(f, "%s\n {\"method\":", i ? "," : "");
		rvc_json_str(f, lock_name(t, st[i].method));
		fprintf(f, ",\"waits\":%" PRIu64 ",\"waited\":%" PRId64 ",\"holder_tid\":%u",
			st[i].waits, st[i].total, st[i].top_holder);
		fputs(",\"holder_method\":", f);
		if (st[i].top_holder_method >= 0)
			rvc_json_str(f, lock_name(t, st[i].top_holder_method));
		else
			fputs("null", f);
		fprintf(f, ",\"holder_waited\":%" PRId64 "}", st[i].top_holder_ns);
	}
	fputc(']', f);
	free(st);
	return ferror(f) ? -EIO : 0;
}

int rva_locks_why(FILE *f, const rva_trace *t, uint32_t method)
{
	int64_t total = 0;
	uint64_t n = 0;
	for (size_t i = 0; i < t->nlock_waits; i++)
		if (t->lock_waits[i].waiter_method == (int64_t)method) {
			total += t->lock_waits[i].end - t->lock_waits[i].start;
			n++;
		}
	if (!n)
		return 0;
	fprintf(f, "lock waits: %" PRIu64 ", %.3f us in all\n", n, (double)total / 1e3);
	for (size_t i = 0; i < t->nlock_waits; i++) {
		const rva_lock_wait *w = &t->lock_waits[i];
		if (w->waiter_method != (int64_t)method)
			continue;
		fprintf(f, "  %14.3f us on %s 0x%" PRIx64 " %s ", (double)(w->end - w->start) / 1e3,
			rva_lock_kind_name(w->kind), w->lock,
			w->kind == RVA_LOCK_COND ? "woken by" : "held by");
		if (w->holder)
			fprintf(f, "tid %u in %s\n", w->holder, lock_name(t, w->holder_method));
		else
			fputs("(unknown)\n", f);
	}
	return ferror(f) ? -EIO : 0;
}

/* Chrome timestamps: µs with the ns fraction. */
static void chrome_ts(FILE *f, const char *key, int64_t ns)
{
	fprintf(f, ",\"%s\":%lld.%03lld", key, (long long)(ns / 1000),
		(long long)((ns % 1000 + 1000) % 1000));
}

int rva_locks_chrome(FILE *f, const rva_trace *t, int64_t t0, int *first)
{
	uint32_t pid = t->nthreads ? t->threads[0].pid : 0;
	for (size_t i = 0; i < t->nlock_waits; i++) {
		const rva_lock_wait *w = &t->lock_waits[i];
		/* Times relative to t0, as the export's calls; a wait that began
		 * before t0 is cut there, one that ended before it is left out. */
		if (w->end < t0)
			continue;
		int64_t start = (w->start < t0 ? t0 : w->start) - t0, dur = w->end - t0 - start;
		/* The waiter's wait and, on the holder's track, the hold it
		 * waited for (at least from start to end), joined by a flow
		 * whose ends lie at both slices' start (Chrome binds a flow
		 * event to the slice enclosing it). */
		fprintf(f, "%s\n{\"ph\":\"X\",\"cat\":\"lock\",\"pid\":%u,\"tid\":%u",
			*first ? "" : ",", pid, w->waiter);
		chrome_ts(f, "ts", start);
		chrome_ts(f, "dur", dur);
		fprintf(f, ",\"name\":\"lock wait (%s)\",\"args\":{\"lock\":\"0x%" PRIx64 "\"}}",
			rva_lock_kind_name(w->kind), w->lock);
		*first = 0;
		if (!w->holder)
			continue;
		fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"lock\",\"pid\":%u,\"tid\":%u", pid,
			w->holder);
		chrome_ts(f, "ts", start);
		chrome_ts(f, "dur", dur);
		/* A condition variable's holder signalled it; a lock's held it. */
		fprintf(f, ",\"name\":\"%s\",\"args\":{\"method\":",
			w->kind == RVA_LOCK_COND ? "signalled" : "lock held");
		rvc_json_str(f, lock_name(t, w->holder_method));
		fputs("}}", f);
		fprintf(f,
			",\n{\"ph\":\"s\",\"cat\":\"lock\",\"name\":\"lock\",\"id\":%zu,"
			"\"pid\":%u,\"tid\":%u",
			i + 1, pid, w->holder);
		chrome_ts(f, "ts", start);
		fprintf(f,
			"},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"lock\",\"name\":\"lock\","
			"\"id\":%zu,\"pid\":%u,\"tid\":%u",
			i + 1, pid, w->waiter);
		chrome_ts(f, "ts", start);
		fputc('}', f);
	}
	return ferror(f) ? -EIO : 0;
}
