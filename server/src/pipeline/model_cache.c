/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model_cache.c — the decoded-trace cache (model_cache.h): a list of
 * entries under one mutex, each a trace with its id, its size, its
 * reference count and when it was last used.
 *
 * Invariants: c->bytes is the sum of the sizes of the listed entries and is
 * at most c->cap after every get; an entry leaves the list at most once
 * (evicted) and is freed when it is off the list and nobody holds it; a
 * trace is never written once it is in an entry.
 */
#include "pipeline/model_cache.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

struct rvs_mentry {
	struct rvs_mentry *next; /* in c->head while listed */
	char id[40];
	struct rva_trace *t;
	size_t bytes;
	unsigned refs;
	int listed;
	uint64_t used; /* c->clock at the last get */
};

struct rvs_mcache {
	pthread_mutex_t mu;
	struct rvs_mentry *head;
	size_t cap, bytes, entries;
	uint64_t clock, hits, misses, evictions;
};

size_t rvs_trace_bytes(const rva_trace *t)
{
	size_t n = sizeof *t + t->name_bytes + t->ncap * sizeof *t->names +
		   t->hcap * sizeof *t->hash + t->tcap * sizeof *t->threads +
		   t->nunresolved * sizeof *t->unresolved + t->nlock_waits * sizeof *t->lock_waits +
		   t->nmuted * sizeof *t->muted + t->nuntraced * sizeof *t->untraced +
		   t->nframes * sizeof *t->frames;
	for (size_t i = 0; i < t->nthreads; i++) {
		const rva_thread *th = &t->threads[i];
		n += th->cap * sizeof *th->calls + th->scap * sizeof *th->stack +
		     th->noffcpu * (sizeof *th->offcpu + RVA_OFF_NREASONS * sizeof(int64_t)) +
		     (th->cpu ? th->cpucap * sizeof *th->cpu : 0) +
		     (th->counters ? sizeof *th->counters : 0);
	}
	return n;
}

int rvs_mcache_new(size_t cap, struct rvs_mcache **out)
{
	struct rvs_mcache *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	if (pthread_mutex_init(&c->mu, NULL)) {
		free(c);
		return -ENOMEM;
	}
	c->cap = cap;
	*out = c;
	return 0;
}

static void entry_free(struct rvs_mentry *e)
{
	rva_trace_free(e->t);
	free(e);
}

void rvs_mcache_free(struct rvs_mcache *c)
{
	if (!c)
		return;
	while (c->head) {
		struct rvs_mentry *e = c->head;
		assert(e->refs == 0);
		c->head = e->next;
		entry_free(e);
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Unlinks e (listed); the caller frees it if nobody holds it.  Locked. */
static void unlink_entry(struct rvs_mcache *c, struct rvs_mentry *e)
{
	struct rvs_mentry **p = &c->head;
	assert(e->listed);
	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
	e->listed = 0;
	c->bytes -= e->bytes;
	c->entries--;
	c->evictions++;
}

/* Evicts least recently used entries until need more bytes fit under the
 * cap: unreferenced ones first, then held ones (freed on release).
 * Locked. */
static void make_room(struct rvs_mcache *c, size_t need)
{
	for (int held = 0; held < 2; held++)
		while (c->bytes + need > c->cap) {
			struct rvs_mentry *lru = NULL;
			for (struct rvs_mentry *e = c->head; e; e = e->next)
				if ((held || e->refs == 0) && (!lru || e->used < lru->used))
					lru = e;
			if (!lru)
				break;
			unlink_entry(c, lru);
			if (lru->refs == 0)
				entry_free(lru);
		}
}

static struct rvs_mentry *find(struct rvs_mcache *c, const char *id)
{
	for (struct rvs_mentry *e = c->head; e; e = e->next)
		if (strcmp(e->id, id) == 0)
			return e;
	return NULL;
}

int rvs_mcache_get(struct rvs_mcache *c, const char *id, rvs_mcache_load_fn load, void *arg,
		   struct rvs_mentry **ref, const struct rva_trace **t)
{
	struct rvs_mentry *e, *fresh;
	rva_trace *loaded = NULL;
	int rc;

	if (strlen(id) >= sizeof e->id)
		return -ENOENT;
	pthread_mutex_lock(&c->mu);
	if ((e = find(c, id))) {
		e->refs++;
		e->used = ++c->clock;
		c->hits++;
		pthread_mutex_unlock(&c->mu);
		*ref = e;
		*t = e->t;
		return 0;
	}
	c->misses++;
	pthread_mutex_unlock(&c->mu);

	if ((rc = load(arg, id, &loaded)))
		return rc;
	if (!(fresh = calloc(1, sizeof *fresh))) {
		rva_trace_free(loaded);
		return -ENOMEM;
	}
	snprintf(fresh->id, sizeof fresh->id, "%s", id);
	fresh->t = loaded;
	fresh->bytes = rvs_trace_bytes(loaded);
	fresh->refs = 1;

	pthread_mutex_lock(&c->mu);
	if ((e = find(c, id))) {
		/* Loaded by another request meanwhile: share its copy. */
		e->refs++;
		e->used = ++c->clock;
		pthread_mutex_unlock(&c->mu);
		entry_free(fresh);
		*ref = e;
		*t = e->t;
		return 0;
	}
	fresh->used = ++c->clock;
	if (fresh->bytes <= c->cap) {
		make_room(c, fresh->bytes);
		fresh->listed = 1;
		fresh->next = c->head;
		c->head = fresh;
		c->bytes += fresh->bytes;
		c->entries++;
	}
	assert(c->bytes <= c->cap);
	pthread_mutex_unlock(&c->mu);
	*ref = fresh;
	*t = fresh->t;
	return 0;
}

void rvs_mcache_release(struct rvs_mcache *c, struct rvs_mentry *ref)
{
	int gone;
	pthread_mutex_lock(&c->mu);
	assert(ref->refs > 0);
	gone = --ref->refs == 0 && !ref->listed;
	pthread_mutex_unlock(&c->mu);
	if (gone)
		entry_free(ref);
}

void rvs_mcache_stats(struct rvs_mcache *c, struct rvs_mcache_stats *st)
{
	pthread_mutex_lock(&c->mu);
	st->hits = c->hits;
	st->misses = c->misses;
	st->evictions = c->evictions;
	st->bytes = c->bytes;
	st->entries = c->entries;
	pthread_mutex_unlock(&c->mu);
}
