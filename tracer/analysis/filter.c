/* SPDX-License-Identifier: Apache-2.0 */
/*
 * filter.c — the filters every rvtrace view shares (uftrace's -F, -N, -H,
 * -D, -t and --tid): a trace is filtered in place, before any view runs,
 * so each view sees only the calls the filter keeps.
 *
 * Rules (one pass per thread over its pre-order calls, with an explicit
 * stack of the original frames, so memory is the trace's depth):
 * - a call whose name an exclude pattern matches is dropped with its whole
 *   subtree, as is a call shorter than the minimum duration (its callees
 *   are shorter still) or deeper than the depth limit;
 * - with include patterns, only the calls at or below a call an include
 *   pattern matches are kept (the outermost such call becomes a root);
 * - a call a hide pattern matches is dropped alone: its callees move up to
 *   its nearest kept caller;
 * - kept calls get their depth among kept calls, so the trace stays a
 *   well-nested pre-order tree; a dropped call's time becomes its nearest
 *   kept caller's self time.
 * Patterns are classified once per method name, never per call.
 */
#include <assert.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

typedef struct fpat {
	int kind;  /* RVA_FILTER_* */
	char *src; /* owned: the pattern as given */
	int regex; /* compiled: src holds a regex metacharacter */
	regex_t re;
} fpat;

struct rva_filter {
	fpat *pat;
	size_t npat, cap;
	int have[3];	    /* patterns of each kind */
	uint64_t max_depth; /* 0: none */
	int64_t min_dur;    /* < 0: none */
	uint32_t *tids;	    /* NULL: every thread */
	size_t ntids, captids;
};

/* The characters that make a pattern a regular expression (uftrace's set). */
#define REGEX_CHARS ".?*+-^$|()[]{}\\"

rva_filter *rva_filter_new(void)
{
	rva_filter *f = calloc(1, sizeof(*f));
	if (f)
		f->min_dur = -1;
	return f;
}

void rva_filter_free(rva_filter *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->npat; i++) {
		if (f->pat[i].regex)
			regfree(&f->pat[i].re);
		free(f->pat[i].src);
	}
	free(f->pat);
	free(f->tids);
	free(f);
}

int rva_filter_add(rva_filter *f, int kind, const char *pattern, rva_error *err)
{
	if (kind < RVA_FILTER_INCLUDE || kind > RVA_FILTER_HIDE || !*pattern) {
		if (err)
			snprintf(err->msg, sizeof(err->msg), "%s",
				 *pattern ? "unknown kind of filter" : "empty function pattern");
		return -EINVAL;
	}
	if (f->npat == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		fpat *p = realloc(f->pat, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		f->pat = p;
		f->cap = cap;
	}
	fpat *p = &f->pat[f->npat];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	if (!(p->src = strdup(pattern)))
		return -ENOMEM;
	if (strpbrk(pattern, REGEX_CHARS)) {
		int rc = regcomp(&p->re, pattern, REG_EXTENDED | REG_NOSUB);
		if (rc != 0) {
			if (err) {
				char why[160];
				regerror(rc, &p->re, why, sizeof(why));
				snprintf(err->msg, sizeof(err->msg), "bad pattern '%.64s': %s",
					 pattern, why);
			}
			free(p->src);
			return rc == REG_ESPACE ? -ENOMEM : -EINVAL;
		}
		p->regex = 1;
	}
	f->npat++;
	f->have[kind]++;
	return 0;
}

void rva_filter_depth(rva_filter *f, uint64_t max_depth)
{
	f->max_depth = max_depth;
}

void rva_filter_min_duration(rva_filter *f, int64_t min)
{
	f->min_dur = min;
}

int rva_filter_tid(rva_filter *f, uint32_t tid)
{
	if (f->ntids == f->captids) {
		size_t cap = f->captids ? f->captids * 2 : 8;
		uint32_t *v = realloc(f->tids, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->tids = v;
		f->captids = cap;
	}
	f->tids[f->ntids++] = tid;
	return 0;
}

int rva_filter_active(const rva_filter *f)
{
	return f && (f->npat || f->max_depth || f->min_dur >= 0 || f->ntids);
}

/* Pattern p selects name: the same text, or (a regex) a match anywhere. */
static int pat_selects(const fpat *p, const char *name)
{
	return strcmp(p->src, name) == 0 || (p->regex && regexec(&p->re, name, 0, NULL, 0) == 0);
}

int rva_filter_matches(const rva_filter *f, int kind, const char *name)
{
	for (size_t i = 0; i < f->npat; i++)
		if (f->pat[i].kind == kind && pat_selects(&f->pat[i], name))
			return 1;
	return 0;
}

const char *rva_filter_unused(const rva_filter *f, const rva_trace *t, size_t *iter)
{
	for (; *iter < f->npat; ++*iter) {
		size_t m = 0;
		while (m < t->nmethods && !pat_selects(&f->pat[*iter], t->names[m]))
			m++;
		if (m == t->nmethods)
			return f->pat[(*iter)++].src;
	}
	return NULL;
}

enum { M_INCL = 1, M_EXCL = 2, M_HIDE = 4 };

/* One open frame of the original tree. */
typedef struct oframe {
	uint32_t kd;  /* kept frames on the chain down to this one */
	uint8_t inc;  /* at or below an included call */
	uint8_t drop; /* dropped with its subtree: so are its callees */
} oframe;

static int tid_selected(const rva_filter *f, uint32_t tid)
{
	if (!f->ntids)
		return 1;
	for (size_t i = 0; i < f->ntids; i++)
		if (f->tids[i] == tid)
			return 1;
	return 0;
}

/* Filters thread th in place with the per-method classes cls. */
static int filter_thread(const rva_filter *f, const uint8_t *cls, rva_thread *th, oframe **stp,
			 size_t *capp)
{
	size_t sn = 0, w = 0;
	for (size_t i = 0; i < th->ncalls; i++) {
		const rva_call c = th->calls[i];
		size_t d = c.depth < sn ? c.depth : sn; /* a hostile depth nests innermost */
		sn = d;
		if (sn + 1 > *capp) {
			size_t cap = *capp ? *capp * 2 : 64;
			oframe *v = realloc(*stp, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			*stp = v;
			*capp = cap;
		}
		oframe *st = *stp;
		const oframe *up = sn ? &st[sn - 1] : NULL;
		oframe *me = &st[sn++];
		uint8_t k = cls[c.method];
		*me = (oframe){.kd = up ? up->kd : 0,
			       .inc = (uint8_t)((up ? up->inc : !f->have[RVA_FILTER_INCLUDE]) ||
						(k & M_INCL)),
			       .drop = 1};
		if ((up && up->drop) || (k & M_EXCL) ||
		    (f->min_dur >= 0 && c.end - c.start < f->min_dur))
			continue;
		int keep = me->inc && !(k & M_HIDE);
		if (keep && f->max_depth && me->kd >= f->max_depth)
			continue; /* and so is everything below it */
		me->drop = 0;
		if (!keep)
			continue;
		assert(w <= i);
		th->calls[w] = c;
		th->calls[w].depth = me->kd;
		if (th->cpu)
			th->cpu[w] = th->cpu[i];
		w++;
		me->kd++;
	}
	th->ncalls = w;
	return 0;
}

int rva_trace_filter(rva_trace *t, const rva_filter *f)
{
	if (!rva_filter_active(f))
		return 0;
	uint8_t *cls = calloc(t->nmethods ? t->nmethods : 1, 1);
	if (!cls)
		return -ENOMEM;
	for (size_t m = 0; m < t->nmethods; m++) {
		const char *n = t->names[m];
		cls[m] = (uint8_t)((f->have[RVA_FILTER_INCLUDE] &&
						    rva_filter_matches(f, RVA_FILTER_INCLUDE, n)
					    ? M_INCL
					    : 0) |
				   (f->have[RVA_FILTER_EXCLUDE] &&
						    rva_filter_matches(f, RVA_FILTER_EXCLUDE, n)
					    ? M_EXCL
					    : 0) |
				   (f->have[RVA_FILTER_HIDE] &&
						    rva_filter_matches(f, RVA_FILTER_HIDE, n)
					    ? M_HIDE
					    : 0));
	}
	/* Threads the tids leave out go to a trace of their own, which
	 * rva_trace_free releases with whatever a thread owns. */
	rva_trace *gone = rva_trace_new();
	if (!gone || !(gone->threads = calloc(t->nthreads ? t->nthreads : 1, sizeof(rva_thread)))) {
		rva_trace_free(gone);
		free(cls);
		return -ENOMEM;
	}
	oframe *st = NULL;
	size_t cap = 0, nth = 0;
	int rc = 0;
	for (size_t i = 0; i < t->nthreads; i++) {
		rva_thread *th = &t->threads[i];
		if (!tid_selected(f, th->tid)) {
			gone->threads[gone->nthreads++] = *th;
			continue;
		}
		if (rc == 0)
			rc = filter_thread(f, cls, th, &st, &cap);
		t->threads[nth++] = *th;
	}
	t->nthreads = nth;
	rva_trace_free(gone);
	free(st);
	free(cls);
	if (rc < 0)
		return rc;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (size_t i = 0; i < t->nthreads; i++)
		for (size_t k = 0; k < t->threads[i].ncalls; k++) {
			const rva_call *c = &t->threads[i].calls[k];
			lo = c->start < lo ? c->start : lo;
			hi = c->end > hi ? c->end : hi;
		}
	if (lo <= hi) {
		t->start = lo;
		t->end = hi;
	}
	return 0;
}
