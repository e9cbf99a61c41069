/*
 * rvtrace_common.h — shared body of the rvtrace libFuzzer targets: import
 * the input with one importer, then run every analysis and exporter on the
 * result, so a hostile input that decodes also exercises the consumers.
 */
#ifndef RVTRACE_FUZZ_COMMON_H
#define RVTRACE_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rearview/analysis.h"

typedef int (*rva_importer)(const uint8_t *, size_t, rva_trace **, rva_error *);

static inline int rvtrace_fuzz_one(rva_importer imp, const uint8_t *data, size_t size)
{
	rva_trace *t = NULL;
	rva_error err;
	if (imp(data, size, &t, &err) < 0)
		return 0;
	rva_mstat *st;
	if (rva_method_stats(t, &st) == 0) {
		uint32_t ids[8];
		rva_top_self(t, st, ids, 8);
		free(st);
	}
	rva_chains ch;
	if (rva_chains_collect(t, 3, &ch) == 0)
		rva_chains_release(&ch);
	uint32_t chain[64];
	for (size_t i = 0; i < t->nthreads; i++)
		rva_chain_at(t, i, t->start / 2 + t->end / 2, chain, 64);
	rva_trace *s = rva_trace_slice(t, t->start, t->start / 2 + t->end / 2);
	rva_trace_free(s);
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		rva_export_folded(null, t);
		rva_export_chrome(null, t);
		rva_export_perfetto(null, t);
		rva_export_android(null, t);
		rva_export_svg(null, t, "fuzz");
		fclose(null);
	}
	rva_trace_free(t);
	return 0;
}

#endif
