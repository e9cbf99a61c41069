/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offcpu.c — a thread's off-CPU intervals (FORMAT.md, OFFCPU and
 * THREAD_COUNTERS records) in the model, and the split of every call's
 * inclusive time into on-CPU and off-CPU time.
 *
 * Invariants: th->offcpu is sorted by `from`, each interval ends no later
 * than the next one starts, and from <= to; th->offpre holds, for k in
 * 0..n, RVA_OFF_NREASONS prefix sums over intervals 0..k-1 (slot 0 the
 * total, slot r reason r), so the overlap of any span costs two binary
 * searches; a call's thread-CPU time is its duration minus its overlap,
 * hence 0 <= cpu[i] <= end - start; no interval contains a call's entry or
 * exit time (see align()).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A thread writes its trace points only while it runs, so no off-CPU
 * interval holds an entry or exit.  The intervals' clock (the kernel's, at
 * the context switch) and the calls' (the trace counter mapped at the
 * freeze) disagree by some µs (45–50 µs, constant, on the project machine
 * with the daemon stamping CLOCK_MONOTONIC; it now stamps MONOTONIC_RAW) —
 * enough to put the calls right after a wake-up inside the sleep.
 * Each interval holding events is cut to its longest event-free part:
 * right up to δ of the true one, never inside a call's own events.
 * `ev` is every entry and exit time, sorted.  Intervals only shrink, so
 * they stay sorted and disjoint.
 */
static void align(rva_offcpu *v, size_t n, const int64_t *ev, size_t ne)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t best_from, best_to, prev;

		while (k < ne && ev[k] <= v[i].from)
			k++;
		if (k == ne || ev[k] >= v[i].to)
			continue;
		best_from = best_to = prev = v[i].from;
		for (; k < ne && ev[k] < v[i].to; k++) {
			if (ev[k] - prev > best_to - best_from) {
				best_from = prev;
				best_to = ev[k];
			}
			prev = ev[k];
		}
		if (v[i].to - prev > best_to - best_from) {
			best_from = prev;
			best_to = v[i].to;
		}
		v[i].from = best_from;
		v[i].to = best_to;
	}
}

static int cmp_from(const void *a, const void *b)
{
	const rva_offcpu *x = a, *y = b;

	return x->from < y->from ? -1 : x->from > y->from;
}

/* Off-CPU time before x, per reason, into acc[RVA_OFF_NREASONS]. */
static void before(const rva_thread *th, int64_t x, int64_t *acc)
{
	size_t lo = 0, hi = th->noffcpu;
	const int64_t *pre;

	while (lo < hi) { /* the first interval starting at or after x */
		size_t mid = lo + (hi - lo) / 2;

		if (th->offcpu[mid].from < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	pre = th->offpre + lo * RVA_OFF_NREASONS;
	memcpy(acc, pre, RVA_OFF_NREASONS * sizeof(*acc));
	if (lo > 0) { /* interval lo-1 starts before x: part of it may lie after x */
		const rva_offcpu *o = &th->offcpu[lo - 1];

		if (o->to > x) {
			acc[0] -= o->to - x;
			acc[o->reason] -= o->to - x;
		}
	}
}

int64_t rva_offcpu_overlap(const rva_thread *th, int64_t from, int64_t to, int64_t *by_reason)
{
	int64_t a[RVA_OFF_NREASONS], b[RVA_OFF_NREASONS];

	if (by_reason)
		memset(by_reason, 0, RVA_OFF_NREASONS * sizeof(*by_reason));
	if (!th->noffcpu || to <= from)
		return 0;
	before(th, from, a);
	before(th, to, b);
	if (by_reason)
		for (int r = 1; r < RVA_OFF_NREASONS; r++)
			by_reason[r] = b[r] - a[r];
	assert(b[0] >= a[0] && b[0] - a[0] <= to - from);
	return b[0] - a[0];
}

int64_t rva_offcpu_unknown(const rva_thread *th, int64_t from, int64_t to)
{
	const rva_tcounters *k = th->counters;
	int64_t until;

	if (!k || k->switches <= k->voluntary + k->involuntary)
		return 0;
	until = to < k->window ? to : k->window;
	return until > from ? until - from : 0;
}

int rva_offcpu_set(rva_trace *t, size_t thi, const rva_offcpu *iv, size_t n,
		   const rva_tcounters *counters)
{
	rva_thread *th;
	rva_offcpu *v;
	rva_tcounters *k = NULL;
	int64_t *pre, *cpu, *ev;

	if (thi >= t->nthreads)
		return -EINVAL;
	th = &t->threads[thi];
	v = malloc((n ? n : 1) * sizeof(*v));
	pre = malloc((n + 1) * RVA_OFF_NREASONS * sizeof(*pre));
	cpu = malloc((th->ncalls ? th->ncalls : 1) * sizeof(*cpu));
	ev = malloc((th->ncalls ? 2 * th->ncalls : 1) * sizeof(*ev));
	if (counters)
		k = malloc(sizeof(*k));
	if (!v || !pre || !cpu || !ev || (counters && !k)) {
		free(v);
		free(pre);
		free(cpu);
		free(ev);
		free(k);
		return -ENOMEM;
	}
	if (n)
		memcpy(v, iv, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_from);
	for (size_t i = 0; i < n; i++) {
		if (v[i].reason == 0 || v[i].reason >= RVA_OFF_NREASONS)
			v[i].reason = RVA_OFF_BLOCKED;
		if (i && v[i].from < v[i - 1].to)
			v[i].from = v[i - 1].to;
		if (v[i].to < v[i].from)
			v[i].to = v[i].from;
	}
	for (size_t i = 0; i < th->ncalls; i++) {
		ev[2 * i] = th->calls[i].start;
		ev[2 * i + 1] = th->calls[i].end;
	}
	qsort(ev, 2 * th->ncalls, sizeof(*ev), cmp_i64);
	align(v, n, ev, 2 * th->ncalls);
	free(ev);
	memset(pre, 0, RVA_OFF_NREASONS * sizeof(*pre));
	for (size_t i = 0; i < n; i++) {
		assert(v[i].from <= v[i].to && (i == 0 || v[i - 1].to <= v[i].from));
		memcpy(pre + (i + 1) * RVA_OFF_NREASONS, pre + i * RVA_OFF_NREASONS,
		       RVA_OFF_NREASONS * sizeof(*pre));
		pre[(i + 1) * RVA_OFF_NREASONS] += v[i].to - v[i].from;
		pre[(i + 1) * RVA_OFF_NREASONS + v[i].reason] += v[i].to - v[i].from;
	}
	free(th->offcpu);
	free(th->offpre);
	free(th->counters);
	free(th->cpu);
	th->offcpu = v;
	th->noffcpu = n;
	th->offpre = pre;
	th->counters = k;
	if (k)
		*k = *counters;
	for (size_t i = 0; i < th->ncalls; i++) {
		const rva_call *c = &th->calls[i];

		cpu[i] = (c->end - c->start) - rva_offcpu_overlap(th, c->start, c->end, NULL);
		assert(cpu[i] >= 0 && cpu[i] <= c->end - c->start);
	}
	th->cpu = cpu;
	th->cpucap = th->ncalls ? th->ncalls : 1;
	th->last_cpu = 0;
	t->has_cpu = 1;
	return 0;
}

int rva_trace_has_offcpu(const rva_trace *t)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].noffcpu || t->threads[i].counters)
			return 1;
	return 0;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int rva_capture_has_offcpu(const uint8_t *buf, size_t len)
{
	static const uint8_t magic[8] = {'R', 'V', 'C', 'A', 'P', 0, '\r', '\n'};
	uint64_t off;

	if (len < 128 || memcmp(buf, magic, 8) != 0)
		return 0;
	off = rd64(buf + 112);
	while (off <= len - 8 && off % 8 == 0) {
		uint16_t type = (uint16_t)(buf[off] | buf[off + 1] << 8);
		uint32_t vl;

		memcpy(&vl, buf + off + 4, 4);
		if (type == 12 || type == 13)
			return 1;
		if (type == 0xffff)
			return 0;
		off += 8 + (((uint64_t)vl + 7) & ~7ull);
	}
	return 0;
}
