/* SPDX-License-Identifier: Apache-2.0 */
/*
 * why.c — "why the time went" of a decoded capture or of a device's Summary
 * (why.h), as rows for the trace page and as the JSON API's "why" object.
 *
 * Invariants: the figures of the page and of the document come from the
 * same functions (rvs_why_rows, rva_offcpu_reasons, rva_lock_stats), so
 * they agree; nothing here keeps state or writes its arguments; a JSON
 * value is either complete or not returned (-ENOMEM).
 */
#include "model/why.h"
#include "base/json.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/summary.pb-c.h"

static int cmp_why_row(const void *x, const void *y)
{
	const struct rvs_why_row *a = x, *b = y;
	if (a->off[0] != b->off[0])
		return a->off[0] > b->off[0] ? -1 : 1;
	return a->method < b->method ? -1 : a->method > b->method;
}

int rvs_why_rows(const rva_trace *t, struct rvs_why_row *rows)
{
	uint32_t *open = calloc(t->nmethods ? t->nmethods : 1, sizeof(*open));
	uint32_t *stack = NULL;
	size_t cap = 0;
	if (!open)
		return -ENOMEM;
	for (size_t m = 0; m < t->nmethods; m++)
		rows[m] = (struct rvs_why_row){.method = (uint32_t)m};
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		size_t n = 0;
		if (!th->noffcpu)
			continue;
		if (th->ncalls > cap) {
			uint32_t *ns = realloc(stack, th->ncalls * sizeof(*ns));
			if (!ns) {
				free(stack);
				free(open);
				return -ENOMEM;
			}
			stack = ns;
			cap = th->ncalls;
		}
		for (size_t i = 0; i < th->ncalls; i++) {
			const rva_call *k = &th->calls[i];
			while (n > k->depth)
				open[stack[--n]]--;
			assert(n == k->depth && k->method < t->nmethods); /* pre-order */
			if (!open[k->method]) {
				int64_t r[RVA_OFF_NREASONS];
				rows[k->method].off[0] +=
					rva_offcpu_overlap(th, k->start, k->end, r);
				for (int z = 1; z < RVA_OFF_NREASONS; z++)
					rows[k->method].off[z] += r[z];
			}
			open[k->method]++;
			stack[n++] = k->method;
		}
		while (n)
			open[stack[--n]]--;
	}
	free(stack);
	free(open);
	qsort(rows, t->nmethods, sizeof(*rows), cmp_why_row);
	return 0;
}

int rvs_why_has(const rva_trace *t)
{
	return (rva_trace_has_offcpu(t) && !t->weighted) || t->nlock_waits;
}

static json_t *method_or_null(const rva_trace *t, int64_t m)
{
	return m >= 0 && (uint64_t)m < t->nmethods ? rvs_json_str(t->names[m]) : json_null();
}

static json_t *num(int64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *unum(uint64_t v)
{
	return json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v));
}

/* Appends o to arr; -ENOMEM when o is NULL (an allocation failed). */
static int push(json_t *arr, json_t *o)
{
	return o && json_array_append_new(arr, o) == 0 ? 0 : -ENOMEM;
}

static int reasons_json(const rva_trace *t, json_t *arr)
{
	rva_offcpu_reason r[RVA_OFF_NREASONS - 1];
	size_t nr = rva_offcpu_reasons(t, r);
	int rc = 0;
	for (size_t i = 0; i < nr && rc == 0; i++)
		rc = push(arr, json_pack("{s:s,s:o}", "reason", r[i].name, "ns", num(r[i].ns)));
	return rc;
}

static int methods_json(const rva_trace *t, json_t *arr)
{
	struct rvs_why_row *rows = calloc(t->nmethods ? t->nmethods : 1, sizeof(*rows));
	rva_mstat *st = NULL;
	int rc = -ENOMEM;
	if (rows && rva_method_stats(t, &st) == 0 && rvs_why_rows(t, rows) == 0) {
		rc = 0;
		for (size_t i = 0; i < t->nmethods && i < RVS_WHY_ROWS && rows[i].off[0] > 0 && !rc;
		     i++) {
			const rva_mstat *m = &st[rows[i].method];
			rc = push(arr, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "method",
						 method_or_null(t, rows[i].method), "calls",
						 unum(m->calls), "incl_ns", num(m->incl),
						 "on_cpu_ns", num(m->incl - rows[i].off[0]),
						 "off_cpu_ns", num(rows[i].off[0]), "preempted_ns",
						 num(rows[i].off[RVA_OFF_PREEMPTED]), "blocked_ns",
						 num(rows[i].off[RVA_OFF_BLOCKED])));
		}
	}
	free(st);
	free(rows);
	return rc;
}

static int counters_json(const rva_trace *t, json_t *arr)
{
	int rc = 0;
	for (size_t i = 0; i < t->nthreads && rc == 0; i++) {
		const rva_tcounters *k = t->threads[i].counters;
		if (!k)
			continue;
		rc = push(arr,
			  json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "tid",
				    unum(t->threads[i].tid), "name",
				    rvs_json_str(t->threads[i].name), "task_clock_ns",
				    unum(k->task_clock_ns), "minor_faults", unum(k->minor_faults),
				    "major_faults", unum(k->major_faults), "switches",
				    unum(k->switches), "voluntary", unum(k->voluntary),
				    "involuntary", unum(k->involuntary)));
	}
	return rc;
}

static int locks_json(const rva_trace *t, json_t *arr)
{
	rva_lock_stat *ls = NULL;
	size_t nls = 0;
	int rc = 0;
	if (!t->nlock_waits)
		return 0;
	if (rva_lock_stats(t, &ls, &nls) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < nls && i < RVS_WHY_ROWS && rc == 0; i++)
		rc = push(arr,
			  json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "method",
				    method_or_null(t, ls[i].method), "waits", unum(ls[i].waits),
				    "waited_ns", num(ls[i].total), "holder_tid",
				    ls[i].top_holder ? unum(ls[i].top_holder) : json_null(),
				    "holder_method", method_or_null(t, ls[i].top_holder_method),
				    "holder_ns", num(ls[i].top_holder_ns)));
	free(ls);
	return rc;
}

/* {"source":source,"offcpu_reasons":[],"methods":[],"thread_counters":[],
 * "lock_waits":[]}, or NULL. */
static json_t *why_doc(const char *source)
{
	return json_pack("{s:s,s:[],s:[],s:[],s:[]}", "source", source, "offcpu_reasons", "methods",
			 "thread_counters", "lock_waits");
}

int rvs_why_json(const rva_trace *t, json_t **out)
{
	json_t *doc;
	int off = rva_trace_has_offcpu(t) && !t->weighted, rc = 0;

	*out = NULL;
	if (!rvs_why_has(t))
		return 0;
	if (!(doc = why_doc("capture")))
		return -ENOMEM;
	if (off)
		rc = reasons_json(t, json_object_get(doc, "offcpu_reasons"));
	if (off && rc == 0)
		rc = methods_json(t, json_object_get(doc, "methods"));
	if (off && rc == 0)
		rc = counters_json(t, json_object_get(doc, "thread_counters"));
	if (rc == 0)
		rc = locks_json(t, json_object_get(doc, "lock_waits"));
	if (rc < 0) {
		json_decref(doc);
		return rc;
	}
	*out = doc;
	return 0;
}

int rvs_why_json_summary(const Rearview__Summary *s, json_t **out)
{
	json_t *doc, *arr;
	int rc = 0;

	*out = NULL;
	if (!s->n_offcpu_reasons)
		return 0;
	if (!(doc = why_doc("summary")))
		return -ENOMEM;
	arr = json_object_get(doc, "offcpu_reasons");
	for (size_t i = 0; i < s->n_offcpu_reasons && rc == 0; i++)
		rc = push(arr, json_pack("{s:o,s:o}", "reason",
					 rvs_json_str(s->offcpu_reasons[i]->reason), "ns",
					 unum(s->offcpu_reasons[i]->ns)));
	arr = json_object_get(doc, "methods");
	for (size_t i = 0; i < s->n_top_self && i < RVS_WHY_ROWS && rc == 0; i++) {
		const Rearview__MethodStat *m = s->top_self[i];
		if (!m->on_cpu_ns && !m->off_cpu_ns)
			continue;
		rc = push(arr, json_pack("{s:o,s:o,s:o,s:o,s:o}", "method", rvs_json_str(m->name),
					 "calls", unum(m->calls), "incl_ns", unum(m->inclusive_ns),
					 "on_cpu_ns", unum(m->on_cpu_ns), "off_cpu_ns",
					 unum(m->off_cpu_ns)));
	}
	if (rc < 0) {
		json_decref(doc);
		return rc;
	}
	*out = doc;
	return 0;
}
