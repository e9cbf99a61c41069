/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof.c — export to pprof's profile format (rvpprof.proto), gzip'd, as
 * `go tool pprof` and every pprof-reading tool expect it.
 *
 * One sample per distinct call path (a node of the merged call tree of all
 * threads, cut at RVA_EXPORT_MAX_DEPTH levels: rva_tree_build_capped) that
 * has self time or calls (the default sample type is wall time): its stack
 * leaf first, values [wall nanoseconds of self time, calls] — or [samples]
 * for a trace of sample weights.  One Function and one Location per method
 * (ids = method id + 1), shared by every sample; paths deeper than the cap
 * end in one more, RVA_TRUNCATED_FRAME (id nmethods + 1), whose self time
 * and calls are everything below the cap.  Summing a function's self
 * values over samples gives rvtrace's self time; its calls, the call count
 * (for methods above the cap); the totals over all samples are rvtrace's
 * totals whatever the depth.  Methods of a capture the device could not
 * name ("module+0x…", t->unresolved) get a Mapping per module with its path
 * and hex build id, and their Location the ELF virtual address, for
 * pprof's and other symbolizers.
 *
 * Cost: a sample's stack is at most RVA_EXPORT_MAX_DEPTH + 1 ids, so time
 * and memory are linear in the capped tree (at most the calls, 513 nodes
 * for 1 M nested calls), never quadratic in the depth.
 *
 * Invariants: string_table[0] is ""; every location id a sample names is
 * one of the locations written; memory is the tree plus the packed
 * message, freed on every path.
 *
 * Import (rva_pprof_import): the profile's samples as aggregated stacks on
 * one thread named after the sample type used (pprof's own default: the
 * default_sample_type, else the last type).  Each sample is a run of
 * synthetic calls, its stack root first, lasting the sample's value: in ns
 * when the type is a time (nanoseconds … seconds), else as weights (a
 * weighted trace).  Consecutive samples keep their common stack prefix
 * open, as folded stacks do.  Inlined frames (several lines in one
 * location) are separate frames, caller first.  A sample naming an unknown
 * location, or without the chosen value, is damage (dropped).
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
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

static int cmp_name_ix(const void *x, const void *y, void *arg)
{
	const char *const *name = arg;
	size_t a = *(const size_t *)x, b = *(const size_t *)y;
	int c = strcmp(name[a], name[b]);
	return c ? c : (a > b) - (a < b);
}

int rva_export_pprof_tree(FILE *f, const rva_pprof_tree *tr)
{
	Rvpprof__Profile p = RVPPROF__PROFILE__INIT;
	Rvpprof__ValueType vt[RVA_PPROF_MAX_VALUES], *vtp[RVA_PPROF_MAX_VALUES];
	size_t n = tr->n, nv = tr->nvalues, nf = 0, nsamples = 0, nids = 0;
	int rc = -ENOMEM;

	if (nv < 1 || nv > RVA_PPROF_MAX_VALUES || n > (1u << 24))
		return -EINVAL;
	/* Distinct names (one Function and Location each): the nodes sorted
	 * by name; fid[i] is node i's function id. */
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	uint64_t *fid = malloc((n ? n : 1) * sizeof *fid);
	uint32_t *depth = malloc((n ? n : 1) * sizeof *depth);
	const char **strs = calloc(2 * nv + n + 1, sizeof *strs);
	Rvpprof__Function *fn = calloc(n ? n : 1, sizeof *fn);
	Rvpprof__Function **fnp = calloc(n ? n : 1, sizeof *fnp);
	Rvpprof__Location *loc = calloc(n ? n : 1, sizeof *loc);
	Rvpprof__Location **locp = calloc(n ? n : 1, sizeof *locp);
	Rvpprof__Line *line = calloc(n ? n : 1, sizeof *line);
	Rvpprof__Line **linep = calloc(n ? n : 1, sizeof *linep);
	Rvpprof__Sample *smp = calloc(n ? n : 1, sizeof *smp);
	Rvpprof__Sample **smpp = calloc(n ? n : 1, sizeof *smpp);
	uint64_t *ids = NULL;
	uint8_t *packed = NULL;
	if (!order || !fid || !depth || !strs || !fn || !fnp || !loc || !locp || !line || !linep ||
	    !smp || !smpp)
		goto out;
	strs[0] = "";
	for (size_t k = 0; k < nv; k++) {
		strs[1 + 2 * k] = tr->types[k][0];
		strs[2 + 2 * k] = tr->types[k][1];
	}
	size_t s0 = 1 + 2 * nv; /* the first function name's string index */
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof *order, cmp_name_ix, (void *)tr->name);
	for (size_t j = 0; j < n; j++) {
		size_t i = order[j];
		if (!j || strcmp(tr->name[i], tr->name[order[j - 1]])) {
			strs[s0 + nf] = tr->name[i];
			rvpprof__function__init(&fn[nf]);
			fn[nf].id = nf + 1;
			fn[nf].name = fn[nf].system_name = (int64_t)(s0 + nf);
			fnp[nf] = &fn[nf];
			rvpprof__line__init(&line[nf]);
			line[nf].function_id = nf + 1;
			linep[nf] = &line[nf];
			rvpprof__location__init(&loc[nf]);
			loc[nf].id = nf + 1;
			loc[nf].n_line = 1;
			loc[nf].line = &linep[nf];
			locp[nf] = &loc[nf];
			nf++;
		}
		fid[i] = nf;
	}
	/* Depths (a parent comes before its children) and the stacks' size. */
	for (size_t i = 0; i < n; i++) {
		int64_t par = tr->parent[i];
		if (par >= (int64_t)i) {
			rc = -EINVAL;
			goto out;
		}
		depth[i] = par < 0 ? 1 : depth[par] + 1;
		int any = 0;
		for (size_t k = 0; k < nv; k++)
			any |= tr->values[i * nv + k] != 0;
		if (any) {
			nsamples++;
			nids += depth[i];
		}
	}
	if (!(ids = malloc((nids ? nids : 1) * sizeof *ids)))
		goto out;
	size_t at = 0, ns = 0;
	for (size_t i = 0; i < n; i++) {
		int any = 0;
		for (size_t k = 0; k < nv; k++)
			any |= tr->values[i * nv + k] != 0;
		if (!any)
			continue;
		rvpprof__sample__init(&smp[ns]);
		smp[ns].n_location_id = depth[i];
		smp[ns].location_id = ids + at;
		for (int64_t k = (int64_t)i; k >= 0; k = tr->parent[k])
			ids[at++] = fid[k];
		smp[ns].n_value = nv;
		smp[ns].value = (int64_t *)tr->values + i * nv;
		smpp[ns] = &smp[ns];
		ns++;
	}
	assert(ns == nsamples && at == nids);
	for (size_t k = 0; k < nv; k++) {
		rvpprof__value_type__init(&vt[k]);
		vt[k].type = (int64_t)(1 + 2 * k);
		vt[k].unit = (int64_t)(2 + 2 * k);
		vtp[k] = &vt[k];
	}
	p.n_sample_type = nv;
	p.sample_type = vtp;
	p.n_sample = nsamples;
	p.sample = smpp;
	p.n_location = nf;
	p.location = locp;
	p.n_function = nf;
	p.function = fnp;
	p.n_string_table = s0 + nf;
	p.string_table = (char **)strs;
	p.default_sample_type = 1;
	size_t len = rvpprof__profile__get_packed_size(&p);
	if (!(packed = malloc(len ? len : 1)))
		goto out;
	rvpprof__profile__pack(&p, packed);
	rc = gzip_to(f, packed, len);
out:
	free(packed);
	free(ids);
	free(smpp);
	free(smp);
	free(linep);
	free(line);
	free(locp);
	free(loc);
	free(fnp);
	free(fn);
	free(strs);
	free(depth);
	free(fid);
	free(order);
	return rc;
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
	if ((rc = rva_tree_build_capped(t, SIZE_MAX, RVA_EXPORT_MAX_DEPTH, &tr)) < 0)
		return rc;
	/* Each node's depth (a parent is created before its children) and the
	 * samples' sizes, so the stacks are one exact allocation. */
	uint32_t *depth = malloc((tr.n ? tr.n : 1) * sizeof *depth);
	size_t nids = 0, cut = 0;
	if (!depth) {
		rva_tree_release(&tr);
		return -ENOMEM;
	}
	depth[0] = 0;
	for (size_t i = 1; i < tr.n; i++) {
		const rva_tnode *nd = &tr.nodes[i];
		assert(nd->parent < i);
		depth[i] = depth[nd->parent] + 1;
		assert(depth[i] <= RVA_EXPORT_MAX_DEPTH + 1);
		cut |= nd->method == RVA_TREE_CUT;
		if (nd->self > 0 || nd->calls > 0) {
			nsamples++;
			nids += depth[i];
		}
	}
	/* Strings: "", the value names, one per method, the truncation frame's
	 * when a path was cut, then each mapping's path and build id. */
	static const char *const fixed[] = {"", "wall", "nanoseconds", "calls", "count", "samples"};
	enum { S_EMPTY, S_WALL, S_NS, S_CALLS, S_COUNT, S_SAMPLES, S_FIXED };
	size_t nu = t->nunresolved, nmap = 0, nf = nm + cut, s_map = S_FIXED + nf;
	char **strs = calloc(s_map + 2 * nu, sizeof *strs);
	Rvpprof__Mapping *map = calloc(nu ? nu : 1, sizeof *map);
	Rvpprof__Mapping **mapp = calloc(nu ? nu : 1, sizeof *mapp);
	char **mstr = calloc(2 * nu + 1, sizeof *mstr); /* owned: path, build id */
	Rvpprof__Function *fn = calloc(nf ? nf : 1, sizeof *fn);
	Rvpprof__Function **fnp = calloc(nf ? nf : 1, sizeof *fnp);
	Rvpprof__Location *loc = calloc(nf ? nf : 1, sizeof *loc);
	Rvpprof__Location **locp = calloc(nf ? nf : 1, sizeof *locp);
	Rvpprof__Line *line = calloc(nf ? nf : 1, sizeof *line);
	Rvpprof__Line **linep = calloc(nf ? nf : 1, sizeof *linep);
	Rvpprof__Sample *smp = calloc(nsamples ? nsamples : 1, sizeof *smp);
	Rvpprof__Sample **smpp = calloc(nsamples ? nsamples : 1, sizeof *smpp);
	uint64_t *ids = malloc((nids ? nids : 1) * sizeof *ids);
	int64_t *vals = calloc((nsamples ? nsamples : 1) * nvals, sizeof *vals);
	uint8_t *packed = NULL;
	rc = -ENOMEM;
	if (!strs || !fn || !fnp || !loc || !locp || !line || !linep || !smp || !smpp || !map ||
	    !mapp || !mstr || !ids || !vals)
		goto out;
	for (size_t i = 0; i < S_FIXED; i++)
		strs[i] = (char *)fixed[i];
	for (size_t m = 0; m < nf; m++) {
		strs[S_FIXED + m] = m < nm ? t->names[m] : (char *)RVA_TRUNCATED_FRAME;
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
	/* Mappings: one per module (path, build id) of the methods the device
	 * could not name, so symbolizers find the binary by its build id;
	 * their locations carry the ELF virtual address (mapping start and
	 * file offset 0). */
	for (size_t i = 0; i < nu; i++) {
		const rva_unresolved *u = &t->unresolved[i];
		if (u->method >= nm)
			continue;
		const char *name = t->names[u->method], *plus = strstr(name, "+0x");
		size_t plen = plus ? (size_t)(plus - name) : strlen(name);
		uint32_t bl = u->build_id_len < 64 ? u->build_id_len : 64;
		char hex[129];
		for (uint32_t b = 0; b < bl; b++)
			snprintf(hex + 2 * b, 3, "%02x", u->build_id[b]);
		hex[2 * bl] = '\0';
		size_t k = 0;
		while (k < nmap && !(strncmp(mstr[2 * k], name, plen) == 0 && !mstr[2 * k][plen] &&
				     strcmp(mstr[2 * k + 1], hex) == 0))
			k++;
		if (k == nmap) {
			if (!(mstr[2 * k] = strndup(name, plen)) ||
			    !(mstr[2 * k + 1] = strdup(hex))) {
				free(mstr[2 * k]);
				mstr[2 * k] = NULL;
				goto out;
			}
			strs[s_map + 2 * k] = mstr[2 * k];
			strs[s_map + 2 * k + 1] = mstr[2 * k + 1];
			rvpprof__mapping__init(&map[k]);
			map[k].id = k + 1;
			map[k].memory_limit = UINT64_MAX;
			map[k].filename = (int64_t)(s_map + 2 * k);
			map[k].build_id = (int64_t)(s_map + 2 * k + 1);
			mapp[k] = &map[k];
			nmap++;
		}
		loc[u->method].mapping_id = k + 1;
		loc[u->method].address = u->elf_offset;
	}
	/* Samples: each path's location ids, leaf first (the cut node's is the
	 * truncation frame's location, nm + 1), and its values. */
	size_t s = 0, at = 0;
	for (size_t i = 1; i < tr.n; i++) {
		const rva_tnode *nd = &tr.nodes[i];
		if (nd->self <= 0 && nd->calls == 0)
			continue;
		rvpprof__sample__init(&smp[s]);
		smp[s].n_location_id = depth[i];
		smp[s].location_id = ids + at;
		for (uint32_t k = (uint32_t)i; k != 0; k = tr.nodes[k].parent) {
			uint32_t meth = tr.nodes[k].method;
			ids[at++] = meth == RVA_TREE_CUT ? (uint64_t)nm + 1 : (uint64_t)meth + 1;
		}
		smp[s].n_value = nvals;
		smp[s].value = vals + nvals * s;
		if (t->weighted) {
			vals[s] = nd->self;
		} else {
			vals[2 * s] = nd->self;
			vals[2 * s + 1] = (int64_t)nd->calls;
		}
		smpp[s] = &smp[s];
		s++;
	}
	assert(s == nsamples && at == nids);
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
	p.n_location = nf;
	p.location = locp;
	p.n_function = nf;
	p.function = fnp;
	p.n_mapping = nmap;
	p.mapping = mapp;
	p.n_string_table = s_map + 2 * nmap;
	p.string_table = strs;
	p.duration_nanos = t->weighted ? 0 : t->end - t->start;
	/* pprof shows the last type unless told: wall time, not calls. */
	p.default_sample_type = t->weighted ? S_SAMPLES : S_WALL;
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
	for (size_t i = 0; mstr && i < 2 * nmap; i++)
		free(mstr[i]);
	free(mstr);
	free(mapp);
	free(map);
	free(depth);
	rva_tree_release(&tr);
	return rc;
}

/* ---- import ---- */

/* A sample type's unit as nanoseconds per unit; 0: not a time. */
static int64_t unit_ns(const char *u)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {{"nanoseconds", 1},
		     {"microseconds", 1000},
		     {"milliseconds", 1000000},
		     {"seconds", 1000000000}};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(u, units[i].name) == 0)
			return units[i].ns;
	return 0;
}

typedef struct idmap {
	uint64_t id;
	size_t idx;
} idmap;

static int cmp_idmap(const void *a, const void *b)
{
	const idmap *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The index of id in a sorted map, or SIZE_MAX. */
static size_t find_id(const idmap *m, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && m[lo].id == id ? m[lo].idx : SIZE_MAX;
}

typedef struct pimp {
	const Rvpprof__Profile *p;
	rva_trace *t;
	idmap *locs, *fns;
	uint32_t **frames; /* per location: its methods, caller first */
	size_t *nframes;
} pimp;

static const char *str_at(const Rvpprof__Profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < p->n_string_table ? p->string_table[i] : "";
}

/* The frames of location li, interned once: its lines from the outermost
 * caller (the last line) to the innermost inlined function (the first);
 * a location without lines is named by its mapping's file and address. */
static int loc_frames(pimp *c, size_t li)
{
	const Rvpprof__Location *l = c->p->location[li];
	size_t n = l->n_line ? l->n_line : 1;
	uint32_t *f = malloc(n * sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		char buf[256];
		const char *name = NULL;
		if (l->n_line) {
			const Rvpprof__Line *ln = l->line[l->n_line - 1 - k];
			size_t fi = find_id(c->fns, c->p->n_function, ln->function_id);
			if (fi != SIZE_MAX)
				name = str_at(c->p, c->p->function[fi]->name);
		}
		if (!name || !name[0]) {
			const char *file = "";
			for (size_t m = 0; m < c->p->n_mapping; m++)
				if (c->p->mapping[m]->id == l->mapping_id)
					file = str_at(c->p, c->p->mapping[m]->filename);
			snprintf(buf, sizeof buf, "%s%s0x%llx", file, file[0] ? "+" : "",
				 (unsigned long long)l->address);
			name = buf;
		}
		int64_t id = rva_method_intern(c->t, name, strlen(name));
		if (id < 0) {
			free(f);
			return (int)id;
		}
		f[k] = (uint32_t)id;
	}
	c->frames[li] = f;
	c->nframes[li] = n;
	return 0;
}

/* protobuf-c's allocator, noting a failure: its unpack says NULL alike for
 * bad bytes and for memory it could not get, and only the second is not
 * the profile's fault. */
static void *unpack_alloc(void *data, size_t size)
{
	void *m = malloc(size);

	if (!m)
		*(bool *)data = true;
	return m;
}

static void unpack_free(void *data, void *m)
{
	(void)data;
	free(m);
}

int rva_pprof_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	bool nomem = false;
	ProtobufCAllocator pa = {unpack_alloc, unpack_free, &nomem};

	*out = NULL;
	Rvpprof__Profile *p = rvpprof__profile__unpack(&pa, len, buf);
	if (!p && nomem)
		return rva_fail(err, -ENOMEM, "out of memory");
	if (!p)
		return rva_fail(err, -EINVAL, "not a pprof profile (profile.proto)");
	pimp c = {.p = p};
	uint32_t *cur = NULL, *stk = NULL;
	size_t ncur = 0, cap = 0;
	int rc = -ENOMEM;
	if (p->n_sample_type == 0) {
		rc = rva_fail(err, -EINVAL, "pprof profile without a sample type");
		goto out;
	}
	/* pprof's own choice: default_sample_type, else the last type. */
	size_t si = p->n_sample_type - 1;
	for (size_t i = 0; p->default_sample_type && i < p->n_sample_type; i++)
		if (p->sample_type[i]->type == p->default_sample_type)
			si = i;
	const char *type = str_at(p, p->sample_type[si]->type),
		   *unit = str_at(p, p->sample_type[si]->unit);
	int64_t scale = unit_ns(unit);
	char tname[256];
	snprintf(tname, sizeof tname, "pprof %s/%s", type, unit);
	c.t = rva_trace_new();
	c.locs = malloc((p->n_location ? p->n_location : 1) * sizeof(*c.locs));
	c.fns = malloc((p->n_function ? p->n_function : 1) * sizeof(*c.fns));
	c.frames = calloc(p->n_location ? p->n_location : 1, sizeof(*c.frames));
	c.nframes = calloc(p->n_location ? p->n_location : 1, sizeof(*c.nframes));
	if (!c.t || !c.locs || !c.fns || !c.frames || !c.nframes ||
	    rva_thread_add(c.t, 0, 0, tname) < 0)
		goto out;
	c.t->format = "pprof";
	/* Times when the type is one (wall or CPU time): calls last as long;
	 * anything else (samples, bytes, objects) is a weight. */
	c.t->weighted = scale == 0;
	if (!scale)
		scale = 1;
	for (size_t i = 0; i < p->n_location; i++)
		c.locs[i] = (idmap){p->location[i]->id, i};
	for (size_t i = 0; i < p->n_function; i++)
		c.fns[i] = (idmap){p->function[i]->id, i};
	qsort(c.locs, p->n_location, sizeof(*c.locs), cmp_idmap);
	qsort(c.fns, p->n_function, sizeof(*c.fns), cmp_idmap);
	int64_t now = 0;
	for (size_t s = 0; s < p->n_sample; s++) {
		const Rvpprof__Sample *sm = p->sample[s];
		if (sm->n_value <= si || sm->value[si] < 0) {
			c.t->dropped++;
			continue;
		}
		if (sm->value[si] == 0)
			continue;
		if (sm->value[si] > (INT64_MAX - now) / scale) {
			rc = rva_fail(err, -E2BIG, "pprof values overflow");
			goto out;
		}
		/* The stack, root first (location_id[0] is the leaf). */
		size_t n = 0, bad = 0;
		for (size_t k = sm->n_location_id; k-- > 0 && !bad;) {
			size_t li = find_id(c.locs, p->n_location, sm->location_id[k]);
			if (li == SIZE_MAX) {
				bad = 1;
				break;
			}
			if (!c.frames[li] && (rc = loc_frames(&c, li)) < 0) {
				rva_fail(err, rc, "frame name rejected");
				goto out;
			}
			if (n + c.nframes[li] > cap) {
				size_t nc = (n + c.nframes[li]) * 2;
				uint32_t *a = realloc(stk, nc * sizeof(*a)), *b;
				/* rc may hold loc_frames' 0 by now: say why. */
				rc = -ENOMEM;
				if (!a)
					goto out;
				stk = a;
				if (!(b = realloc(cur, nc * sizeof(*b))))
					goto out;
				cur = b;
				cap = nc;
			}
			memcpy(stk + n, c.frames[li], c.nframes[li] * sizeof(*stk));
			n += c.nframes[li];
		}
		if (bad) {
			c.t->dropped++;
			continue;
		}
		/* Keep the common prefix with the previous sample open. */
		size_t common = 0;
		while (common < n && common < ncur && cur[common] == stk[common])
			common++;
		for (; ncur > common; ncur--)
			rva_exit(c.t, 0, RVA_ANY_METHOD, now);
		for (size_t i = common; i < n; i++) {
			if ((rc = rva_enter(c.t, 0, stk[i], now)) < 0) {
				rva_fail(err, rc, "cannot record frame");
				goto out;
			}
			cur[ncur++] = stk[i];
		}
		now += sm->value[si] * scale;
	}
	rva_trace_finish(c.t, now);
	*out = c.t;
	c.t = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		rva_fail(err, rc, "out of memory");
	for (size_t i = 0; c.frames && i < p->n_location; i++)
		free(c.frames[i]);
	free(c.frames);
	free(c.nframes);
	free(c.locs);
	free(c.fns);
	free(cur);
	free(stk);
	rva_trace_free(c.t);
	rvpprof__profile__free_unpacked(p, &pa);
	return rc;
}
