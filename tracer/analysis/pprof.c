/*
 * pprof.c — export to pprof's profile format (rvpprof.proto), gzip'd, as
 * `go tool pprof` and every pprof-reading tool expect it.
 *
 * One sample per node of the merged call tree (all threads) that has self
 * time or calls: its stack leaf first, values [wall nanoseconds of self
 * time, calls] — or [samples] for a trace of sample weights.  One Function
 * and one Location per method (ids = method id + 1).  Summing a function's
 * self values over samples gives rvtrace's self time; its calls, the call
 * count.
 *
 * Invariants: string_table[0] is ""; every location id a sample names is
 * one of the locations written; memory is the tree plus the packed
 * message, freed on every path.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "analysis-int.h"
#include "rearview/analysis.h"
#include "rvpprof.pb-c.h"

/* Writes buf gzip'd to f.  0 or -EIO / -ENOMEM. */
static int gzip_to(FILE *f, const uint8_t *buf, size_t len)
{
	z_stream z;
	uint8_t out[1 << 16];
	int zr, rc = 0;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)buf;
	do {
		size_t left = len - (size_t)(z.next_in - buf);
		z.avail_in = left > (1u << 30) ? 1u << 30 : (uInt)left;
		z.next_out = out;
		z.avail_out = sizeof out;
		zr = deflate(&z, left > z.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (fwrite(out, 1, sizeof out - z.avail_out, f) != sizeof out - z.avail_out)
			rc = -EIO;
	} while (rc == 0 && zr == Z_OK);
	deflateEnd(&z);
	return rc ? rc : zr == Z_STREAM_END ? 0 : -EIO;
}

int rva_export_pprof(FILE *f, const rva_trace *t)
{
	Rvpprof__Profile p = RVPPROF__PROFILE__INIT;
	Rvpprof__ValueType vt[2] = {RVPPROF__VALUE_TYPE__INIT, RVPPROF__VALUE_TYPE__INIT};
	Rvpprof__ValueType *vtp[2] = {&vt[0], &vt[1]};
	rva_tree tr = {0};
	size_t nm = t->nmethods, nsamples = 0, nvals = t->weighted ? 1 : 2;
	int rc;

	if (nm > (1u << 24))
		return -E2BIG;
	if ((rc = rva_tree_build(t, SIZE_MAX, &tr)) < 0)
		return rc;
	/* Strings: "", the value names, then one per method. */
	static const char *const fixed[] = {"", "wall", "nanoseconds", "calls", "count", "samples"};
	enum { S_EMPTY, S_WALL, S_NS, S_CALLS, S_COUNT, S_SAMPLES, S_FIXED };
	char **strs = calloc(S_FIXED + nm, sizeof *strs);
	Rvpprof__Function *fn = calloc(nm ? nm : 1, sizeof *fn);
	Rvpprof__Function **fnp = calloc(nm ? nm : 1, sizeof *fnp);
	Rvpprof__Location *loc = calloc(nm ? nm : 1, sizeof *loc);
	Rvpprof__Location **locp = calloc(nm ? nm : 1, sizeof *locp);
	Rvpprof__Line *line = calloc(nm ? nm : 1, sizeof *line);
	Rvpprof__Line **linep = calloc(nm ? nm : 1, sizeof *linep);
	Rvpprof__Sample *smp = calloc(tr.n ? tr.n : 1, sizeof *smp);
	Rvpprof__Sample **smpp = calloc(tr.n ? tr.n : 1, sizeof *smpp);
	uint64_t *ids = NULL;
	int64_t *vals = NULL;
	uint8_t *packed = NULL;
	size_t nids = 0, idcap = 0;
	rc = -ENOMEM;
	if (!strs || !fn || !fnp || !loc || !locp || !line || !linep || !smp || !smpp)
		goto out;
	for (size_t i = 0; i < S_FIXED; i++)
		strs[i] = (char *)fixed[i];
	for (size_t m = 0; m < nm; m++) {
		strs[S_FIXED + m] = t->names[m];
		rvpprof__function__init(&fn[m]);
		fn[m].id = m + 1;
		fn[m].name = fn[m].system_name = (int64_t)(S_FIXED + m);
		fnp[m] = &fn[m];
		rvpprof__line__init(&line[m]);
		line[m].function_id = m + 1;
		linep[m] = &line[m];
		rvpprof__location__init(&loc[m]);
		loc[m].id = m + 1;
		loc[m].n_line = 1;
		loc[m].line = &linep[m];
		locp[m] = &loc[m];
	}
	/* Stacks: the location ids of every sample in one array, then the
	 * values; pointers are set once both arrays stopped moving. */
	size_t *first = calloc(tr.n ? tr.n : 1, sizeof *first), *depth = NULL;
	if (!first)
		goto out;
	vals = calloc((tr.n ? tr.n : 1) * nvals, sizeof *vals);
	depth = calloc(tr.n ? tr.n : 1, sizeof *depth);
	if (!vals || !depth) {
		free(first);
		free(depth);
		goto out;
	}
	for (size_t i = 1; i < tr.n; i++) {
		const rva_tnode *nd = &tr.nodes[i];
		if (nd->self <= 0 && nd->calls == 0)
			continue;
		first[nsamples] = nids;
		for (uint32_t k = (uint32_t)i; k != 0; k = tr.nodes[k].parent) {
			if (nids == idcap) {
				size_t nc = idcap ? idcap * 2 : 1024;
				uint64_t *n2 = realloc(ids, nc * sizeof *n2);
				if (!n2) {
					free(first);
					free(depth);
					goto out;
				}
				ids = n2;
				idcap = nc;
			}
			ids[nids++] = (uint64_t)tr.nodes[k].method + 1;
		}
		depth[nsamples] = nids - first[nsamples];
		if (t->weighted) {
			vals[nsamples] = nd->self;
		} else {
			vals[2 * nsamples] = nd->self;
			vals[2 * nsamples + 1] = (int64_t)nd->calls;
		}
		nsamples++;
	}
	for (size_t sI = 0; sI < nsamples; sI++) {
		rvpprof__sample__init(&smp[sI]);
		smp[sI].n_location_id = depth[sI];
		smp[sI].location_id = ids + first[sI];
		smp[sI].n_value = nvals;
		smp[sI].value = vals + nvals * sI;
		smpp[sI] = &smp[sI];
	}
	free(first);
	free(depth);
	for (int i = 0; i < 2; i++)
		rvpprof__value_type__init(&vt[i]);
	if (t->weighted) {
		vt[0].type = S_SAMPLES;
		vt[0].unit = S_COUNT;
	} else {
		vt[0].type = S_WALL;
		vt[0].unit = S_NS;
		vt[1].type = S_CALLS;
		vt[1].unit = S_COUNT;
	}
	p.n_sample_type = nvals;
	p.sample_type = vtp;
	p.n_sample = nsamples;
	p.sample = smpp;
	p.n_location = nm;
	p.location = locp;
	p.n_function = nm;
	p.function = fnp;
	p.n_string_table = S_FIXED + nm;
	p.string_table = strs;
	p.duration_nanos = t->weighted ? 0 : t->end - t->start;
	size_t len = rvpprof__profile__get_packed_size(&p);
	packed = malloc(len ? len : 1);
	if (!packed)
		goto out;
	rvpprof__profile__pack(&p, packed);
	rc = gzip_to(f, packed, len);
out:
	free(packed);
	free(ids);
	free(vals);
	free(smpp);
	free(smp);
	free(linep);
	free(line);
	free(locp);
	free(loc);
	free(fnp);
	free(fn);
	free(strs);
	rva_tree_release(&tr);
	return rc;
}
