/* SPDX-License-Identifier: Apache-2.0 */
/*
 * summary.c — the `rvtrace summary --json` document (schema
 * rvtrace.summary.v1, tracer/RVTRACE.md), so the daemon, the server and the
 * CLI write the same bytes.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"
#include "rearview/common.h"

/* One entry of "chains_at_anomaly". */
static void write_chain_at(FILE *f, int *first, const rva_trace *t, size_t th,
			   const uint32_t *chain, size_t d)
{
	fprintf(f, "%s\n {\"thread\":%zu,\"tid\":%u,\"signature\":\"%016" PRIx64 "\",\"frames\":[",
		*first ? "" : ",", th, t->threads[th].tid, rva_signature(t, chain, d));
	for (size_t k = 0; k < d; k++) {
		if (k)
			fputc(',', f);
		rvc_json_str(f, t->names[chain[k]]);
	}
	fprintf(f, "]}");
	*first = 0;
}

size_t rva_offcpu_reasons(const rva_trace *t, rva_offcpu_reason *out)
{
	static const char *const name[RVA_OFF_NREASONS] = {"", "preempted", "blocked"};
	int64_t tot[RVA_OFF_NREASONS] = {0};
	size_t n = 0;

	for (size_t i = 0; i < t->nthreads; i++) {
		int64_t r[RVA_OFF_NREASONS];

		rva_offcpu_overlap(&t->threads[i], t->start, t->end, r);
		for (int k = 1; k < RVA_OFF_NREASONS; k++)
			tot[k] += r[k];
	}
	/* Insertion by total, largest first; a tie keeps reason order. */
	for (uint32_t k = 1; k < RVA_OFF_NREASONS; k++) {
		size_t j = n++;

		while (j > 0 && out[j - 1].ns < tot[k]) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = (rva_offcpu_reason){k, name[k], tot[k]};
	}
	assert(n == RVA_OFF_NREASONS - 1);
	return n;
}

/* "offcpu_reasons": the off-CPU time of every thread of `full` inside its
 * span, by reason, largest first (ties: preempted before blocked). */
static void write_offcpu_reasons(FILE *f, const rva_trace *full)
{
	rva_offcpu_reason r[RVA_OFF_NREASONS - 1];
	size_t n = rva_offcpu_reasons(full, r);

	fprintf(f, ",\n\"offcpu_reasons\":[");
	for (size_t j = 0; j < n; j++)
		fprintf(f, "%s{\"reason\":\"%s\",\"ns\":%" PRId64 "}", j ? "," : "", r[j].name,
			r[j].ns);
	fputc(']', f);
}

/* The document from t's header fields and names, the statistics st of t,
 * the chains ch, and the chains at the anomaly: of every thread of `full`
 * at `at` (rva_chain_at) when achain is NULL, else achain[0..adepth) on
 * thread 0 of full. */
static int write_doc(FILE *f, const rva_trace *full, const rva_trace *t, const rva_mstat *st,
		     const rva_chains *ch, size_t ntop, int64_t at, const uint32_t *achain,
		     size_t adepth)
{
	uint32_t *ids = calloc(ntop + 1, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	size_t n = rva_top_self(t, st, ids, ntop);
	fprintf(f, "{\"schema\":\"rvtrace.summary.v1\",\"format\":");
	rvc_json_str(f, t->format);
	fprintf(f,
		",\"unit\":\"%s\",\"start\":%" PRId64 ",\"end\":%" PRId64 ",\"dropped\":%" PRIu64
		",\n\"anomaly\":",
		t->weighted ? "samples" : "ns", t->start, t->end, t->dropped);
	if (full->has_anomaly) {
		fprintf(f, "{\"name\":");
		rvc_json_str(f, full->anomaly_name ? full->anomaly_name : "");
		fprintf(f, ",\"ns\":%" PRId64 "}", full->anomaly_ns);
	} else {
		fputs("null", f);
	}
	char note[1024];
	if (rva_untraced_note(full, note, sizeof(note))) {
		fprintf(f, ",\n\"untraced\":{\"note\":");
		rvc_json_str(f, note);
		fprintf(f, ",\"count\":%zu,\"truncated\":%s,\"muted\":[", full->nuntraced,
			full->untraced_truncated ? "true" : "false");
		for (size_t i = 0; i < full->nmuted; i++) {
			const rva_muted *m = &full->muted[i];
			fprintf(f, "%s{\"method\":", i ? "," : "");
			rvc_json_str(f, full->names[m->method]);
			fprintf(f, ",\"ns\":%" PRId64 ",\"rate\":%" PRIu64 ",\"median_ns\":%u}",
				m->ns, m->rate, m->median_ns);
		}
		fputs("]}", f);
	}
	if (rva_trace_has_offcpu(full))
		write_offcpu_reasons(f, full);
	fprintf(f, ",\n\"top_self\":[");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\n {\"method\":", i ? "," : "");
		rvc_json_str(f, t->names[ids[i]]);
		fprintf(f, ",\"calls\":%" PRIu64 ",\"incl\":%" PRId64 ",\"self\":%" PRId64,
			st[ids[i]].calls, st[ids[i]].incl, st[ids[i]].self);
		if (st[ids[i]].est_self)
			fprintf(f, ",\"est_self\":%" PRId64, st[ids[i]].est_self);
		if (t->has_cpu)
			fprintf(f, ",\"cpu_incl\":%" PRId64 ",\"cpu_self\":%" PRId64,
				st[ids[i]].cpu_incl, st[ids[i]].cpu_self);
		fputc('}', f);
	}
	free(ids);
	fprintf(f, "],\n\"chains_at_anomaly\":[");
	int first = 1;
	if (achain) {
		if (adepth && full->nthreads)
			write_chain_at(f, &first, full, 0, achain, adepth < 256 ? adepth : 256);
	} else {
		for (size_t th = 0; th < full->nthreads; th++) {
			uint32_t chain[256];
			size_t d = rva_chain_at(full, th, at, chain, 256);
			if (d)
				write_chain_at(f, &first, full, th, chain, d > 256 ? 256 : d);
		}
	}
	fprintf(f, "],\n\"chains\":[");
	for (size_t i = 0; i < ch->n && i < ntop; i++) {
		const rva_chain *k = &ch->v[i];
		fprintf(f,
			"%s\n {\"signature\":\"%016" PRIx64 "\",\"calls\":%" PRIu64
			",\"incl\":%" PRId64 ",\"self\":%" PRId64 ",\"frames\":[",
			i ? "," : "", k->signature, k->calls, k->incl, k->self);
		if (k->depth > k->nmethods)
			fprintf(f, "\"[%zu outer frames truncated]\"%s", k->depth - k->nmethods,
				k->nmethods ? "," : "");
		for (size_t d = 0; d < k->nmethods; d++) {
			if (d)
				fputc(',', f);
			rvc_json_str(f, t->names[k->methods[d]]);
		}
		fprintf(f, "]}");
	}
	fputc(']', f);
	int rc = rva_locks_json(f, full, ntop);
	fprintf(f, "}\n");
	return rc < 0 ? rc : ferror(f) ? -EIO : 0;
}

int rva_summary_json(FILE *f, const rva_trace *full, int64_t window, size_t ntop)
{
	const rva_trace *t = full;
	rva_trace *sliced = NULL;
	int64_t at = full->has_anomaly ? full->anomaly_ns : full->end;
	if (window >= 0) {
		sliced = rva_trace_slice(full, at - window, at + 1);
		if (!sliced)
			return -ENOMEM;
		t = sliced;
	}
	rva_mstat *st = NULL;
	rva_chains ch = {0};
	int rc = -ENOMEM;
	if (rva_method_stats(t, &st) == 0 && rva_chains_collect(t, ntop, &ch) == 0)
		rc = write_doc(f, full, t, st, &ch, ntop, at, NULL, 0);
	free(st);
	rva_chains_release(&ch);
	rva_trace_free(sliced);
	return rc;
}

int rva_summary_json_from(FILE *f, const rva_summary *s, size_t ntop)
{
	static const uint32_t none[1];
	rva_chains ch = {0};
	int rc = rva_chains_from_tree(s->trace, &s->tree, ntop, &ch);
	if (rc < 0)
		return rc;
	const uint32_t *chain = s->anomaly_chain ? s->anomaly_chain : s->end_chain;
	rc = write_doc(f, s->trace, s->trace, s->stats, &ch, ntop, 0, chain ? chain : none,
		       s->anomaly_chain ? s->anomaly_depth
		       : s->end_chain	? s->end_depth
					: 0);
	rva_chains_release(&ch);
	return rc;
}
