/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.c — the trace model: method interning, threads, the enter/exit
 * builder every importer feeds, and finishing.
 *
 * Invariants: threads[i].calls is in pre-order (entry order) and each call's
 * depth equals the number of frames open when it was entered; after
 * rva_trace_finish every call has end >= start and every stack is empty.
 * The name hash is open addressing over FNV-1a with at most 50 % load; a slot
 * holds id + 1 (0 = empty).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

#define MAX_NAME       (64u * 1024u)
#define MAX_METHODS    (16u * 1024u * 1024u)
#define MAX_NAME_BYTES (256u * 1024u * 1024u)
#define MAX_DEPTH      (1u << 20)

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

rva_trace *rva_trace_new(void)
{
	rva_trace *t = calloc(1, sizeof(*t));
	if (t)
		t->format = "model";
	return t;
}

void rva_trace_free(rva_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nmethods; i++)
		free(t->names[i]);
	free(t->names);
	for (size_t i = 0; i < t->nthreads; i++) {
		free(t->threads[i].name);
		free(t->threads[i].calls);
		free(t->threads[i].stack);
		free(t->threads[i].cpu);
		free(t->threads[i].offcpu);
		free(t->threads[i].counters);
		free(t->threads[i].offpre);
	}
	free(t->threads);
	free(t->anomaly_name);
	free(t->unresolved);
	for (size_t i = 0; i < t->nuntraced; i++) {
		free(t->untraced[i].rule);
		free(t->untraced[i].name);
	}
	free(t->untraced);
	free(t->muted);
	free(t->lock_waits);
	free(t->frames);
	free(t->hash);
	free(t);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int rehash(rva_trace *t, size_t hcap)
{
	uint32_t *h = calloc(hcap, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (size_t id = 0; id < t->nmethods; id++) {
		size_t i = fnv(t->names[id], strlen(t->names[id])) & (hcap - 1);
		while (h[i])
			i = (i + 1) & (hcap - 1);
		h[i] = (uint32_t)id + 1;
	}
	free(t->hash);
	t->hash = h;
	t->hcap = hcap;
	return 0;
}

/* The compilers' suffixes rva_native_name_len strips, each followed by
 * ".N" (digits) or, when `bare`, by nothing too. */
static const struct {
	const char *s;
	int bare;
} copy_suffix[] = {
	{".isra", 0},	    {".constprop", 0}, {".part", 0}, {".cold", 1},
	{".localalias", 1}, {".lto_priv", 0},  {".llvm", 0}, {".specialized", 0},
};

/* The length of name[0..n) without one trailing copy suffix, or n. */
static size_t strip_one(const char *name, size_t n)
{
	static const char clone[] = " [clone ";
	size_t end = n, lead = 0;
	if (n > 0 && name[n - 1] == ']') { /* demangled: " [clone .isra.0]" */
		end = n - 1;
		lead = sizeof(clone) - 1;
	}
	size_t d = end;
	while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
		d--;
	for (size_t k = 0; k < sizeof(copy_suffix) / sizeof(copy_suffix[0]); k++) {
		size_t sl = strlen(copy_suffix[k].s);
		/* ".X.N" (digits after a dot), or a bare ".X" */
		size_t at = SIZE_MAX;
		if (d < end && d > sl && name[d - 1] == '.' &&
		    memcmp(name + d - 1 - sl, copy_suffix[k].s, sl) == 0)
			at = d - 1 - sl;
		else if (copy_suffix[k].bare && end > sl &&
			 memcmp(name + end - sl, copy_suffix[k].s, sl) == 0)
			at = end - sl;
		if (at == SIZE_MAX)
			continue;
		if (lead) {
			if (at < lead + 1 || memcmp(name + at - lead, clone, lead) != 0)
				continue;
			at -= lead;
		}
		if (at > 0)
			return at;
	}
	return n;
}

size_t rva_native_name_len(const char *name, size_t len)
{
	size_t n = len, m;
	while ((m = strip_one(name, n)) < n)
		n = m;
	assert(n > 0 || len == 0);
	return n;
}

int64_t rva_method_intern(rva_trace *t, const char *name, size_t len)
{
	if (len > MAX_NAME)
		return -E2BIG;
	/* A NUL inside a name would break the C-string table: cut there. */
	const char *nul = memchr(name, '\0', len);
	if (nul)
		len = (size_t)(nul - name);
	if (t->hcap == 0 && rehash(t, 64) < 0)
		return -ENOMEM;
	size_t i = fnv(name, len) & (t->hcap - 1);
	while (t->hash[i]) {
		const char *s = t->names[t->hash[i] - 1];
		if (strncmp(s, name, len) == 0 && s[len] == '\0')
			return t->hash[i] - 1;
		i = (i + 1) & (t->hcap - 1);
	}
	if (t->nmethods >= MAX_METHODS || t->name_bytes + len > MAX_NAME_BYTES)
		return -E2BIG;
	if (grow((void **)&t->names, &t->ncap, t->nmethods + 1, sizeof(char *)) < 0)
		return -ENOMEM;
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, name, len);
	copy[len] = '\0';
	size_t id = t->nmethods++;
	t->names[id] = copy;
	t->name_bytes += len;
	t->hash[i] = (uint32_t)id + 1;
	if (t->nmethods * 2 > t->hcap && rehash(t, t->hcap * 2) < 0)
		return -ENOMEM;
	return (int64_t)id;
}

int64_t rva_thread_add(rva_trace *t, uint32_t pid, uint32_t tid, const char *name)
{
	if (grow((void **)&t->threads, &t->tcap, t->nthreads + 1, sizeof(rva_thread)) < 0)
		return -ENOMEM;
	rva_thread *th = &t->threads[t->nthreads];
	memset(th, 0, sizeof(*th));
	th->pid = pid;
	th->tid = tid;
	th->last_ts = INT64_MIN;
	if (name) {
		th->name = strdup(name);
		if (!th->name)
			return -ENOMEM;
	}
	return (int64_t)t->nthreads++;
}

int64_t rva_thread_get(rva_trace *t, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid && t->threads[i].pid == pid)
			return (int64_t)i;
	return rva_thread_add(t, pid, tid, NULL);
}

static int64_t clamp_ts(rva_thread *th, int64_t ts)
{
	if (ts < th->last_ts)
		ts = th->last_ts;
	th->last_ts = ts;
	return ts;
}

int rva_enter(rva_trace *t, size_t thi, uint32_t method, int64_t ts)
{
	if (thi >= t->nthreads || method >= t->nmethods)
		return -EINVAL;
	rva_thread *th = &t->threads[thi];
	if (th->sdepth >= MAX_DEPTH)
		return -E2BIG;
	if (grow((void **)&th->calls, &th->cap, th->ncalls + 1, sizeof(rva_call)) < 0 ||
	    grow((void **)&th->stack, &th->scap, th->sdepth + 1, sizeof(uint32_t)) < 0)
		return -ENOMEM;
	if (th->ncalls >= UINT32_MAX)
		return -E2BIG;
	if (th->cpu && grow((void **)&th->cpu, &th->cpucap, th->ncalls + 1, sizeof(int64_t)) < 0)
		return -ENOMEM;
	ts = clamp_ts(th, ts);
	if (th->cpu)
		th->cpu[th->ncalls] = th->last_cpu; /* the start, until the exit */
	rva_call *c = &th->calls[th->ncalls];
	c->method = method;
	c->depth = (uint32_t)th->sdepth;
	c->start = ts;
	c->end = ts;
	th->stack[th->sdepth++] = (uint32_t)th->ncalls++;
	return 0;
}

int rva_exit(rva_trace *t, size_t thi, uint32_t method, int64_t ts)
{
	if (thi >= t->nthreads)
		return -EINVAL;
	rva_thread *th = &t->threads[thi];
	ts = clamp_ts(th, ts);
	if (th->sdepth == 0) {
		t->dropped++;
		return 0;
	}
	size_t target = th->sdepth - 1;
	if (method != RVA_ANY_METHOD) {
		size_t i = th->sdepth;
		while (i > 0 && th->calls[th->stack[i - 1]].method != method)
			i--;
		if (i == 0) {
			t->dropped++;
			return 0;
		}
		target = i - 1;
	}
	/* Frames above the target get dummy exits at the same time. */
	while (th->sdepth > target) {
		uint32_t k = th->stack[--th->sdepth];
		th->calls[k].end = ts;
		if (th->cpu)
			th->cpu[k] = th->last_cpu - th->cpu[k];
	}
	return 0;
}

/* Sets the thread's CPU clock (clamped), starting its per-call CPU times on
 * first use: earlier calls get 0, frames open now start counting now. */
static int set_cpu(rva_trace *t, size_t thi, int64_t cpu_ts)
{
	if (thi >= t->nthreads)
		return -EINVAL;
	rva_thread *th = &t->threads[thi];
	if (!th->cpu) {
		if (grow((void **)&th->cpu, &th->cpucap, th->ncalls + 1, sizeof(int64_t)) < 0)
			return -ENOMEM;
		memset(th->cpu, 0, th->cpucap * sizeof(int64_t));
		th->last_cpu = cpu_ts;
		for (size_t i = 0; i < th->sdepth; i++)
			th->cpu[th->stack[i]] = cpu_ts;
	}
	if (cpu_ts > th->last_cpu)
		th->last_cpu = cpu_ts;
	t->has_cpu = 1;
	return 0;
}

int rva_enter_cpu(rva_trace *t, size_t thi, uint32_t method, int64_t ts, int64_t cpu_ts)
{
	int rc = set_cpu(t, thi, cpu_ts);
	return rc < 0 ? rc : rva_enter(t, thi, method, ts);
}

int rva_exit_cpu(rva_trace *t, size_t thi, uint32_t method, int64_t ts, int64_t cpu_ts)
{
	int rc = set_cpu(t, thi, cpu_ts);
	return rc < 0 ? rc : rva_exit(t, thi, method, ts);
}

void rva_trace_finish(rva_trace *t, int64_t end_ts)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (size_t i = 0; i < t->nthreads; i++) {
		rva_thread *th = &t->threads[i];
		/* Never before the thread's last (clamped) time: a frame closed
		 * earlier may have ended there, and an open one holds it. */
		int64_t e = end_ts == INT64_MIN || end_ts < th->last_ts ? th->last_ts : end_ts;
		while (th->sdepth > 0) {
			uint32_t k = th->stack[--th->sdepth];
			rva_call *c = &th->calls[k];
			c->end = e > c->start ? e : c->start;
			if (th->cpu)
				th->cpu[k] = th->last_cpu - th->cpu[k];
		}
		for (size_t k = 0; k < th->ncalls; k++) {
			if (th->calls[k].start < lo)
				lo = th->calls[k].start;
			if (th->calls[k].end > hi)
				hi = th->calls[k].end;
		}
	}
	t->start = lo == INT64_MAX ? 0 : lo;
	t->end = hi == INT64_MIN ? 0 : hi;
}

int rva_method_rename(rva_trace *t, uint32_t id, const char *name)
{
	size_t len = strlen(name);
	char *copy;

	if (id >= t->nmethods || len > MAX_NAME || rva_method_find(t, name) >= 0)
		return -EINVAL;
	if (!(copy = strdup(name)))
		return -ENOMEM;
	t->name_bytes = t->name_bytes - strlen(t->names[id]) + len;
	free(t->names[id]);
	t->names[id] = copy;
	/* The name hash is keyed by the text: build it again. */
	return rehash(t, t->hcap ? t->hcap : 64);
}

int64_t rva_method_find(const rva_trace *t, const char *name)
{
	if (t->hcap == 0)
		return -ENOENT;
	size_t len = strlen(name);
	size_t i = fnv(name, len) & (t->hcap - 1);
	while (t->hash[i]) {
		if (strcmp(t->names[t->hash[i] - 1], name) == 0)
			return t->hash[i] - 1;
		i = (i + 1) & (t->hcap - 1);
	}
	return -ENOENT;
}

int rva_trace_append(rva_trace *dst, const rva_trace *src)
{
	if (dst->nthreads && src->nthreads && dst->weighted != src->weighted)
		return -EINVAL;
	if (!dst->nthreads)
		dst->weighted = src->weighted;
	uint32_t *map = malloc((src->nmethods ? src->nmethods : 1) * sizeof(*map));
	if (!map)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < src->nmethods; i++) {
		int64_t id = rva_method_intern(dst, src->names[i], strlen(src->names[i]));
		if (id < 0) {
			rc = (int)id;
			goto out_free;
		}
		map[i] = (uint32_t)id;
	}
	for (size_t ti = 0; ti < src->nthreads; ti++) {
		const rva_thread *s = &src->threads[ti];
		int64_t th = rva_thread_add(dst, s->pid, s->tid, s->name);
		if (th < 0) {
			rc = (int)th;
			goto out_free;
		}
		rva_thread *d = &dst->threads[th];
		if (s->ncalls) {
			d->calls = malloc(s->ncalls * sizeof(*d->calls));
			if (!d->calls) {
				rc = -ENOMEM;
				goto out_free;
			}
			for (size_t i = 0; i < s->ncalls; i++) {
				d->calls[i] = s->calls[i];
				d->calls[i].method = map[s->calls[i].method];
			}
			d->ncalls = d->cap = s->ncalls;
			if (s->cpu) {
				d->cpu = malloc(s->ncalls * sizeof(*d->cpu));
				if (!d->cpu) {
					rc = -ENOMEM;
					goto out_free;
				}
				memcpy(d->cpu, s->cpu, s->ncalls * sizeof(*d->cpu));
				d->cpucap = s->ncalls;
				d->last_cpu = s->last_cpu;
				dst->has_cpu = 1;
			}
		}
		d->last_ts = s->last_ts;
	}
	dst->dropped += src->dropped;
	dst->repaired += src->repaired;
	dst->unbalanced += src->unbalanced;
	rva_trace_finish(dst, INT64_MIN);
out_free:
	free(map);
	return rc;
}

int rva_skip_count(rva_trace *t, const char *what, uint64_t n)
{
	for (size_t i = 0; i < t->nskipped; i++)
		if (strcmp(t->skipped[i].what, what) == 0) {
			t->skipped[i].n += n;
			return 0;
		}
	if (t->nskipped == RVA_MAX_SKIPPED)
		return -E2BIG;
	t->skipped[t->nskipped].what = what;
	t->skipped[t->nskipped++].n = n;
	return 0;
}

int rva_untraced_note(const rva_trace *t, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	if (!t->nuntraced && !t->nmuted)
		return 0;
	size_t n = 0;
#define NOTE(...)                                                               \
	do {                                                                    \
		int w_ = n < len ? snprintf(buf + n, len - n, __VA_ARGS__) : 0; \
		n += w_ > 0 ? (size_t)w_ : 0;                                   \
	} while (0)
	NOTE("self time includes untraced callees (");
	if (t->nuntraced)
		NOTE("%zu%s left out at build time%s", t->nuntraced,
		     t->untraced_truncated ? "+" : "", t->nmuted ? "; " : "");
	if (t->nmuted) {
		NOTE("%zu muted at run time:", t->nmuted);
		for (size_t i = 0; i < t->nmuted && i < 5; i++)
			NOTE("%s %s", i ? "," : "", t->names[t->muted[i].method]);
		if (t->nmuted > 5)
			NOTE(", ...");
	}
	NOTE(")");
#undef NOTE
	return 1;
}
