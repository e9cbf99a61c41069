/* SPDX-License-Identifier: Apache-2.0 */
/*
 * why.h — "why the time went" (issue 17) for the trace page and the JSON
 * API's trace document: a decoded capture's off-CPU time by reason, its
 * methods split into on-CPU and off-CPU time, its threads' counters and its
 * lock waits (OFFCPU, THREAD_COUNTERS, LOCK_WAIT records, tracer/FORMAT.md);
 * or, for a summary-only upload, what the device's Summary carries (the
 * off-CPU reasons and its top methods' split).  A shared piece of both
 * endpoint families, no handler.  Any thread; reads its arguments only.
 */
#ifndef RVS_WHY_H
#define RVS_WHY_H

#include <stdint.h>

#include <jansson.h>

#include "rearview/analysis.h"

struct Rearview__Summary;

/* Methods and lock-waiting methods listed at most. */
#define RVS_WHY_ROWS 15

/* A method's off-CPU time by reason: off[RVA_OFF_*], off[0] the total. */
struct rvs_why_row {
	uint32_t method;
	int64_t off[RVA_OFF_NREASONS];
};

/*
 * Every method's off-CPU time by reason into rows[t->nmethods], counting a
 * recursive call inside itself once, as rva_method_stats counts inclusive
 * time (on-CPU = incl - off[0]); sorted by off[0], largest first, ties by
 * method id.  0 or -ENOMEM (rows then undefined).
 */
int rvs_why_rows(const rva_trace *t, struct rvs_why_row *rows);

/* 1 when t has something to say why: off-CPU intervals or counters on a
 * trace of times (not weighted), or lock waits; else 0. */
int rvs_why_has(const rva_trace *t);

/*
 * The document's "why" object of a decoded capture:
 *   {"source":"capture",
 *    "offcpu_reasons":[{"reason","ns"}…]   (rva_offcpu_reasons, largest first),
 *    "methods":[{"method","calls","incl_ns","on_cpu_ns","off_cpu_ns",
 *                "preempted_ns","blocked_ns"}…]   (off-CPU time > 0, most first),
 *    "thread_counters":[{"tid","name","task_clock_ns","minor_faults",
 *                "major_faults","switches","voluntary","involuntary"}…],
 *    "lock_waits":[{"method","waits","waited_ns","holder_tid",
 *                "holder_method","holder_ns"}…]   (rva_lock_stats order)}
 * at most RVS_WHY_ROWS methods and lock-waiting methods; unknown names and
 * tids are null, bytes of names that are not UTF-8 '?'.  *out is NULL when !rvs_why_has(t).  0 or
 * -ENOMEM.
 */
int rvs_why_json(const rva_trace *t, json_t **out);

/*
 * The same from a device's Summary (summary-only uploads): "source":
 * "summary", its offcpu_reasons, and "methods" from its top_self rows with
 * a split (on_cpu_ns + off_cpu_ns > 0), in the summary's order (self
 * time), without preempted_ns / blocked_ns (a summary has no per-reason
 * split); thread_counters and lock_waits empty.  *out is NULL when
 * the summary has no off-CPU reasons (older devices, captures without
 * OFFCPU records).  The summary is untrusted: names are taken as sent (a
 * NULL one is null).  0 or -ENOMEM.
 */
int rvs_why_json_summary(const struct Rearview__Summary *s, json_t **out);

#endif
