/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.h — a stored trace's exports (export.c): folded stacks, Chrome
 * JSON, speedscope, Perfetto, Android trace, SVG flame graph, nanoscope,
 * pprof.  An export is made on a work thread (from a loaded trace,
 * trace_load.h) and written while it is sent (stream.c): never whole in
 * memory (pprof's packed profile is, but it is of the call tree capped at
 * RVA_EXPORT_MAX_DEPTH levels, not of the calls).
 */
#ifndef RVS_EXPORT_H
#define RVS_EXPORT_H

#include <stdio.h>

/* A format: its name in ?format=, its Content-Type and the file name's
 * extension (all static). */
struct rvs_export_fmt {
	const char *name, *ctype, *ext;
};

/* An export ready to be written: a loaded trace and its format. */
struct rvs_export;
struct rva_trace;

/* The format called name (static), NULL when there is none.  Any thread. */
const struct rvs_export_fmt *rvs_export_format(const char *name);

/* *out: an export of trace t (taken: freed with the export) in format f, for
 * trace id (the SVG's title).  0, or -ENOMEM with t not taken.  Any thread. */
int rvs_export_new(const struct rvs_export_fmt *f, struct rva_trace *t, const char *id,
		   struct rvs_export **out);

/* Says where x's trace came from (each may be NULL or empty: unknown;
 * copied), which formats that carry it write (Perfetto: the process track
 * and the anomaly's instant, rva_export_perfetto_meta).  0 or -ENOMEM.
 * Any thread, before rvs_export_write. */
int rvs_export_set_origin(struct rvs_export *x, const char *app, const char *version,
			  const char *device, const char *model);

/* Any thread: writes the export x to out (its whole body).  0, -ENOMEM,
 * -EIO (a failed write of out: the client went away), -E2BIG (the trace
 * does not fit the format). */
int rvs_export_write(const struct rvs_export *x, FILE *out);

/* Frees x and its trace.  NULL is a no-op.  Any thread. */
void rvs_export_free(struct rvs_export *x);

#endif
