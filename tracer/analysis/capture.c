/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture.c — decoder of Rearview capture files (tracer/FORMAT.md §2) into
 * the model.
 *
 * Two passes over the slots, neither allocating per slot:
 *  1. backwards from the newest slot (the only unambiguous direction):
 *     reconstruct the counter's high word at the oldest slot (Hubble
 *     Fig. 3), count the frames already open at the oldest slot (exits with
 *     no entry), note the oldest complete STACK record and the EXIT_OF
 *     names, and find a torn oldest slot;
 *  2. forwards: open the frames open at the start — named by the EXIT_OF
 *     and STACK records (FORMAT.md §1, "Reading the frames"; the slots
 *     before the STACK are walked once more for it), else "(unknown
 *     caller)" — at the oldest timestamp, then replay entries and exits
 *     with timestamps rebuilt forwards (a decrease is a wrap), which is the
 *     same arithmetic as the backward walk, checking each later STACK and
 *     EXIT_OF against the frames it holds (rva_trace.unbalanced).  Frames
 *     still open end at the reference time.
 * Which slot is the value half of a two-slot record is what the backward
 * walk decides: a marker (low word 1..15) takes the slot before it.
 * Forwards that is the parity of a run of marker-like slots: within the run
 * [rs, re), slot j is a marker iff re - 1 - j is even, and slot i is a value
 * iff i + 1 is a marker.  Each run is scanned once, so pass 2 needs no
 * per-slot memory.  Markers (format 2): 1 an entry of a value ≥ 2^32, 2 a
 * CLOCK (the value is the full shifted counter: every later slot up to the
 * next CLOCK has its high word, so both passes re-anchor there and idle gaps
 * of any length decode exactly), 3 a LOSS (events lost from the value's
 * counter to this slot's time: counted into the trace's lost_* fields), 4
 * FRAME, 5 STACK and 6 EXIT_OF (names of frames, above), the rest reserved
 * and skipped.
 * Every header field and record is range-checked before use.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "aggr.h"
#include "rearview/analysis.h"
#include "analysis-int.h"

/* xxHash from libxxhash-dev, compiled in (FORMAT.md CHECKSUM). */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define HDR_MIN		128u
#define HDR_CHECKSUMMED 4u /* header flags bit 2 */
#define MAX_STRINGS	(16u * 1024u * 1024u)
#define MAX_STRING	(64u * 1024u)
#define MAX_SYMNAME	4096u
#define MAX_MODULES	4096u

enum {
	REC_EXE = 1,
	REC_CMDLINE,
	REC_THREAD,
	REC_MODULE,
	REC_SYMBOL,
	REC_ANOMALY,
	REC_APP,
	REC_CHECKSUM,
	REC_UNTRACED,
	REC_MUTED,
	REC_OFFCPU = 12, /* written by rearviewd (device/src/offcpu.c) */
	REC_THREAD_COUNTERS,
	REC_FRAMES, /* written by rearviewd (device/src/frames.c) */
	REC_LOCK_WAIT,
	REC_MUTED_CALLERS = 17
};
#define OFFCPU_ITEM	    24u
#define THREAD_COUNTERS_LEN 80u
#define FRAME_ITEM	    32u /* FORMAT.md, FRAMES */
#define FRAME_LATE	    1u
#define LOCK_WAIT_LEN	    56u /* FORMAT.md, LOCK_WAIT */
#define LOCK_HOLDER_METHOD  1u
#define LOCK_WAITER_METHOD  2u
enum { CHECKSUM_XXH3_64 = 1 };

/* A slot whose low word is a marker (1..15, FORMAT.md §1): the slot before
 * it is its 64-bit value. */
#define IS_MARKER(s) ((uint32_t)(s)-1u < 15u)
enum { MK_PAIR = 1, MK_CLOCK, MK_LOSS, MK_FRAME, MK_STACK, MK_EXIT_OF };

typedef struct module {
	uint32_t index;
	uint64_t load_bias, start, end;
	const char *path;
	size_t path_len;
	const uint8_t *build_id;
	uint32_t build_id_len;
} module;

typedef struct symbol {
	uint64_t value;
	uint32_t method; /* interned id */
} symbol;

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v)); /* unaligned-safe; one load on x86-64/aarch64 */
	return le64toh(v);
}

static int cmp_sym(const void *a, const void *b)
{
	const symbol *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* Streaming aggregation state (rva_capture_summarize).  The hot loop only
 * touches the frame stack, the memo of the frame it enters under and the
 * calls and inclusive time of the tree node of the frame it closes.  Self
 * times come at the end, a node's inclusive time less
 * its children's (every call of a child node runs inside a call of its
 * parent node, and timestamps never decrease, so this is exact; calls of one
 * node never overlap, so no sum exceeds the capture's span and nothing
 * saturates).  Per-method statistics are derived from the tree once at the
 * end too (a node's path is exactly the call chain, so "outermost" is a
 * property of the node, decided when the node is created). */
typedef struct aframe {
	uint32_t node;
	int64_t start;
} aframe;

/* Per tree node, the four children entered last (one 32-byte line): code
 * repeats its call sites, so most enters skip the hash lookup in the
 * merged tree. */
#define MEMO_WAYS 4
typedef struct amemo {
	uint32_t method[MEMO_WAYS], child[MEMO_WAYS];
} amemo;

typedef struct agg {
	rva_tree tree;
	rva_tmap map; /* (parent, method) -> node, only for overflowing parents */
	size_t nmap;
	uint8_t *inner; /* per node: AGG_INNER, AGG_OVERFLOW */
	aframe *fr;
	size_t nfr, frcap;
	amemo *memo;
	size_t memocap;	 /* of memo and inner */
	int64_t snap_at; /* anomaly time; INT64_MAX when there is none */
	int snapped, want_snap;
	/* No anomaly: the chain at the end of the trace instead, when the last
	 * event's time is known before the forward pass (end_ok). */
	int want_end, end_ok;
	int64_t end_pred;
	uint32_t *snap; /* chain at snap_at, root first */
	size_t nsnap;
	/* A capture with OFFCPU / THREAD_COUNTERS records: its thread, holding
	 * the intervals before the forward pass, and per node (memocap) the
	 * off-CPU time inside its calls; NULL otherwise.  Intervals are not cut
	 * at call boundaries here (the calls are not kept), unlike the model's
	 * (rva_offcpu_set). */
	const rva_thread *offth;
	int64_t *off;
	/* Muted functions' callers' time after each mute (rva_mafter;
	 * ma.head NULL when there is none to measure). */
	rva_mafter ma;
} agg;

/* Records the chain running at snap_at as rva_chain_at gives it on the
 * model: the open frames that started at or before it.  Taken just before
 * the first event after snap_at or the first exit at it (an earlier frame
 * containing snap_at would have exited then), or at the end, when open
 * frames end at close_ts (they contain snap_at only if it is <= close_ts).
 * Frame starts never decrease along the stack. */
static int agg_snapshot(agg *a, int64_t close_ts)
{
	int64_t at = a->snap_at;
	a->snapped = 1;
	a->snap_at = INT64_MAX; /* the hot loop's test now fails at once */
	a->snap = malloc((a->nfr ? a->nfr : 1) * sizeof(*a->snap));
	if (!a->snap)
		return -ENOMEM;
	size_t n = 0;
	while (n < a->nfr && a->fr[n].start <= at && at <= close_ts) {
		a->snap[n] = a->tree.nodes[a->fr[n].node].method;
		n++;
	}
	a->nsnap = n;
	return 0;
}

/* The slow half of an enter: grow the stack, or look the child up in the
 * hash (creating it), then refresh the parent's memo. */
/* inner[] bits: an ancestor runs the same method (recursion is counted
 * once); the node has more children than its memo holds, so they are in the
 * map.  A node whose memo never overflowed has all its children in it, so a
 * memo miss there means a new child and no hash is touched: most real
 * call sites have few callees. */
#define AGG_INNER    1u
#define AGG_OVERFLOW 2u

static uint64_t agg_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return key;
}

/* Finds key in the map: its slot (node 0 = empty, where it would go). */
static rva_tslot *agg_slot(const agg *a, uint64_t key)
{
	size_t h = (size_t)agg_hash(key) & (a->map.cap - 1);
	while (a->map.slot[h].node && a->map.slot[h].key != key)
		h = (h + 1) & (a->map.cap - 1);
	return &a->map.slot[h];
}

/* Adds key -> node (absent), at most half full.  0 or -ENOMEM. */
static int agg_map_put(agg *a, uint64_t key, uint32_t node)
{
	if ((a->nmap + 1) * 2 > a->map.cap) {
		size_t cap = a->map.cap ? a->map.cap * 2 : 1024;
		rva_tslot *v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		rva_tmap old = a->map;
		a->map.slot = v;
		a->map.cap = cap;
		for (size_t i = 0; i < old.cap; i++)
			if (old.slot[i].node)
				*agg_slot(a, old.slot[i].key) = old.slot[i];
		free(old.slot);
	}
	rva_tslot *sl = agg_slot(a, key);
	sl->key = key;
	sl->node = node + 1;
	a->nmap++;
	return 0;
}

/* The child of parent for method after a memo miss, created when absent. */
static int agg_find_child(agg *a, uint32_t parent, uint32_t method, uint32_t *out)
{
	uint64_t key = (uint64_t)parent << 32 | method;
	int rc;
	if (a->inner[parent] & AGG_OVERFLOW) {
		rva_tslot *sl = agg_slot(a, key);
		if (sl->node) {
			*out = sl->node - 1;
			return 0;
		}
		if ((rc = rva_tree_new_node(&a->tree, parent, method, out)) < 0)
			return rc;
		return agg_map_put(a, key, *out);
	}
	if ((rc = rva_tree_new_node(&a->tree, parent, method, out)) < 0)
		return rc;
	if (a->memo[parent].method[MEMO_WAYS - 1] != UINT32_MAX) {
		/* The memo is full: from now on this parent's children live in
		 * the map, all of them. */
		for (uint32_t ch = a->tree.nodes[parent].first_child; ch;
		     ch = a->tree.nodes[ch].next_sibling) {
			uint64_t k = (uint64_t)parent << 32 | a->tree.nodes[ch].method;
			if ((rc = agg_map_put(a, k, ch)) < 0)
				return rc;
		}
		a->inner[parent] |= AGG_OVERFLOW;
	}
	return 0;
}

/* Room for one more frame and one more node (memo and flags).  Called once
 * before decoding too, so that agg_enter may assume every node has a memo.
 * 0, -E2BIG or -ENOMEM. */
static int agg_reserve(agg *a)
{
	if (a->nfr == a->frcap) {
		size_t cap = a->frcap ? a->frcap * 2 : 64;
		if (cap > (1u << 21))
			return -E2BIG;
		aframe *f = realloc(a->fr, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		a->fr = f;
		a->frcap = cap;
	}
	if (a->tree.n + 1 > a->memocap) {
		size_t cap = a->memocap ? a->memocap * 2 : 1024;
		while (cap < a->tree.n + 1)
			cap *= 2;
		amemo *v = realloc(a->memo, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + a->memocap, 0xff, (cap - a->memocap) * sizeof(*v));
		a->memo = v;
		uint8_t *in = realloc(a->inner, cap);
		if (!in)
			return -ENOMEM;
		memset(in + a->memocap, 0, cap - a->memocap);
		a->inner = in;
		if (a->off) {
			int64_t *o = realloc(a->off, cap * sizeof(*o));
			if (!o)
				return -ENOMEM;
			memset(o + a->memocap, 0, (cap - a->memocap) * sizeof(*o));
			a->off = o;
		}
		a->memocap = cap;
	}
	return 0;
}

static __attribute__((noinline)) int agg_child_slow(agg *a, uint32_t parent, uint32_t method,
						    uint32_t *out)
{
	size_t before = a->tree.n;
	uint32_t node;
	int rc = agg_reserve(a);
	if (rc < 0)
		return rc;
	rc = agg_find_child(a, parent, method, &node);
	if (rc < 0)
		return rc;
	if (a->tree.n > before) {
		/* New node: the stack is its path; it is inner when a frame on it
		 * runs the same method (recursion is counted once). */
		uint8_t inner = 0;
		for (size_t i = 0; i < a->nfr && !inner; i++)
			inner = a->tree.nodes[a->fr[i].node].method == method;
		a->inner[node] = inner ? AGG_INNER : 0;
	}
	amemo *mm = &a->memo[parent];
	for (size_t w = MEMO_WAYS - 1; w > 0; w--) {
		mm->method[w] = mm->method[w - 1];
		mm->child[w] = mm->child[w - 1];
	}
	mm->method[0] = method;
	mm->child[0] = node;
	*out = node;
	return 0;
}

static inline int agg_enter(agg *a, uint32_t method, int64_t ts)
{
	/* Every node has a memo (agg_reserve ran before the first enter and
	 * runs before each new node), so only the stack's room is checked. */
	uint32_t parent = a->nfr ? a->fr[a->nfr - 1].node : 0, node;
	const amemo *mm = &a->memo[parent];
	int hit = 0;
	if (a->nfr < a->frcap) {
		for (size_t w = 0; w < MEMO_WAYS; w++) {
			if (mm->method[w] == method) {
				node = mm->child[w];
				hit = 1;
				break;
			}
		}
	}
	if (!hit) {
		int rc = agg_child_slow(a, parent, method, &node);
		if (rc < 0)
			return rc;
	}
	/* This frame's node is written at its exit and its memo read at the
	 * next enter: start both loads now, the tree is bigger than the cache. */
	__builtin_prefetch(&a->tree.nodes[node], 1);
	__builtin_prefetch(&a->memo[node], 1);
	aframe *f = &a->fr[a->nfr++];
	f->node = node;
	f->start = ts;
	return 0;
}

/* Closes the top frame at ts (never before its start: see aframe). */
static inline void agg_exit(agg *a, int64_t ts)
{
	aframe *f = &a->fr[--a->nfr];
	rva_tnode *nd = &a->tree.nodes[f->node];
	nd->calls++;
	nd->incl += ts - f->start;
	if (a->ma.head)
		rva_mafter_call(&a->ma, nd->method, f->start, ts);
	if (__builtin_expect(a->off != NULL, 0))
		a->off[f->node] += rva_offcpu_overlap(a->offth, f->start, ts, NULL);
}

/* The tree's self times (and the root's total) from the inclusive ones. */
static void agg_tree_totals(agg *a)
{
	rva_tnode *nd = a->tree.nodes;
	for (size_t i = 1; i < a->tree.n; i++)
		nd[i].self = nd[i].incl;
	nd[0].incl = 0;
	for (size_t i = 1; i < a->tree.n; i++) {
		if (nd[i].parent)
			nd[nd[i].parent].self -= nd[i].incl;
		else
			nd[0].incl += nd[i].incl;
	}
}

/* Per-method statistics from the merged tree: calls and self time are sums
 * over a method's nodes, inclusive time over its outermost nodes only; with
 * off-CPU intervals, the thread-CPU times likewise (a node's self off-CPU
 * time is its own less its children's: each child's is given back to its
 * parent's method). */
static void agg_stats(const agg *a, rva_mstat *st, size_t nmethods)
{
	for (size_t i = 1; i < a->tree.n; i++) {
		const rva_tnode *nd = &a->tree.nodes[i];
		if (nd->method >= nmethods)
			continue;
		rva_mstat *m = &st[nd->method];
		m->calls += nd->calls;
		m->self = rva_sadd(m->self, nd->self);
		if (!(a->inner[i] & AGG_INNER))
			m->incl = rva_sadd(m->incl, nd->incl);
		if (!a->off)
			continue;
		m->cpu_self = rva_sadd(m->cpu_self, nd->self - a->off[i]);
		if (!(a->inner[i] & AGG_INNER))
			m->cpu_incl = rva_sadd(m->cpu_incl, nd->incl - a->off[i]);
		uint32_t pm = nd->parent ? a->tree.nodes[nd->parent].method : UINT32_MAX;
		if (pm < nmethods)
			st[pm].cpu_self = rva_sadd(st[pm].cpu_self, a->off[i]);
	}
}

typedef struct ctx {
	rva_trace *t;
	const uint8_t *slots;
	uint64_t nslots;
	uint64_t base;
	module *mods;
	size_t nmods;
	symbol *syms;
	size_t nsyms;
	/* MUTED records' values, in order, and their MUTED_CALLERS' */
	struct muted_vals {
		uint64_t v, caller[RVA_MUTED_CALLERS];
	} * muted_vals;
	size_t nmuted_vals, muted_cap;
	agg *sum; /* non-NULL: aggregate instead of building the model */
	int64_t first_ns, last_ns;
	int have_first;
	/* Slot value -> method id, open addressing (id UINT32_MAX = empty),
	 * at most half full: memory follows the distinct values. */
	uint64_t *vk;
	uint32_t *vid;
	size_t vcap, vn;
	const rva_progress *prog; /* NULL: no progress reports */
	uint64_t pdone, ptotal;
	/* The captured thread's OFFCPU and THREAD_COUNTERS values (inside the
	 * buffer, checked for size), NULL when absent. */
	const uint8_t *offcpu, *counters;
	uint32_t noffcpu;
	/* The LOCK_WAIT records' values, in the input buffer, converted once
	 * the symbols and the clock are known (lock_waits()). */
	const uint8_t **lw;
	size_t nlw, lwcap;
	/* Frames the tracer named (FORMAT.md §1, STACK and EXIT_OF): the
	 * EXIT_OF values pass 1 met, outermost first; whether the replay began
	 * from a STACK record (then each later one is checked against the
	 * frames it holds); how many frames at the bottom of its stack are the
	 * outer ones EXIT_OF records close. */
	uint64_t *named;
	size_t nnamed, namedcap;
	int stacks_on;
	uint64_t pre;
} ctx;

/* Slots per progress report in each pass: 2 MiB of input, so the callback
 * runs a bounded number of times and never inside the per-slot loops. */
#define PROGRESS_SLOTS (256u * 1024u)

static void progress(ctx *c, uint64_t add)
{
	c->pdone += add;
	if (c->pdone > c->ptotal)
		c->pdone = c->ptotal;
	if (c->prog && c->prog->fn)
		c->prog->fn(c->prog->arg, c->pdone, c->ptotal);
}

static const char *base_name(const char *p, size_t n, size_t *len)
{
	size_t i = n;
	while (i > 0 && p[i - 1] != '/')
		i--;
	*len = n - i;
	return p + i;
}

/* The method id of a slot value: symbol, else module+0xoffset, else the
 * bare address. */
static int64_t method_lookup(ctx *c, uint64_t v);

static inline size_t value_hash(uint64_t v)
{
	return (size_t)((v * 0x9e3779b97f4a7c15ull) >> 32);
}

/* Remembers v -> id; 0 or -ENOMEM. */
static __attribute__((noinline)) int value_put(ctx *c, uint64_t v, uint32_t id)
{
	if ((c->vn + 1) * 2 > c->vcap) {
		size_t cap = c->vcap ? c->vcap * 2 : 256;
		uint64_t *k = malloc(cap * sizeof(*k));
		uint32_t *d = malloc(cap * sizeof(*d));
		if (!k || !d) {
			free(k);
			free(d);
			return -ENOMEM;
		}
		memset(d, 0xff, cap * sizeof(*d));
		for (size_t i = 0; i < c->vcap; i++) {
			if (c->vid[i] == UINT32_MAX)
				continue;
			size_t h = value_hash(c->vk[i]) & (cap - 1);
			while (d[h] != UINT32_MAX)
				h = (h + 1) & (cap - 1);
			k[h] = c->vk[i];
			d[h] = c->vid[i];
		}
		free(c->vk);
		free(c->vid);
		c->vk = k;
		c->vid = d;
		c->vcap = cap;
	}
	size_t h = value_hash(v) & (c->vcap - 1);
	while (c->vid[h] != UINT32_MAX)
		h = (h + 1) & (c->vcap - 1);
	c->vk[h] = v;
	c->vid[h] = id;
	c->vn++;
	return 0;
}

static inline int64_t method_of(ctx *c, uint64_t v)
{
	if (c->vcap) {
		for (size_t h = value_hash(v) & (c->vcap - 1); c->vid[h] != UINT32_MAX;
		     h = (h + 1) & (c->vcap - 1))
			if (c->vk[h] == v)
				return c->vid[h];
	}
	int64_t id = method_lookup(c, v);
	if (id >= 0) {
		int rc = value_put(c, v, (uint32_t)id);
		if (rc < 0)
			return rc;
	}
	return id;
}

/* Records that method `id` (at addr, in mod) has no name from the device. */
static int note_unresolved(rva_trace *t, uint32_t id, const module *mod, uint64_t addr)
{
	rva_unresolved *u;

	/* Once per method: method_of looks each slot value up once, and each
	 * value has a name of its own. */
	if ((t->nunresolved & (t->nunresolved - 1)) == 0) {
		size_t cap = t->nunresolved ? t->nunresolved * 2 : 8;
		u = realloc(t->unresolved, cap * sizeof(*u));
		if (!u)
			return -ENOMEM;
		t->unresolved = u;
	}
	u = &t->unresolved[t->nunresolved++];
	memset(u, 0, sizeof(*u));
	u->method = id;
	memcpy(u->build_id, mod->build_id, mod->build_id_len);
	u->build_id_len = mod->build_id_len;
	u->elf_offset = addr - mod->load_bias;
	return 0;
}

/* A miss of method_of: symbol table, modules, interning. */
static __attribute__((noinline)) int64_t method_lookup(ctx *c, uint64_t v)
{
	symbol key = {.value = v};
	symbol *s = c->nsyms ? bsearch(&key, c->syms, c->nsyms, sizeof(key), cmp_sym) : NULL;
	const module *mod = NULL;
	int64_t id;
	if (s) {
		id = s->method;
	} else {
		uint64_t addr = v + c->base;
		char buf[512];
		int n = -1;
		for (size_t i = 0; i < c->nmods; i++) {
			if (addr >= c->mods[i].start && addr < c->mods[i].end) {
				size_t bl;
				const char *bn =
					base_name(c->mods[i].path, c->mods[i].path_len, &bl);
				if (bl > 256)
					bl = 256;
				n = snprintf(buf, sizeof(buf), "%.*s+0x%llx", (int)bl, bn,
					     (unsigned long long)(addr - c->mods[i].start));
				mod = &c->mods[i];
				break;
			}
		}
		if (n < 0)
			n = snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
		id = rva_method_intern(c->t, buf, (size_t)n);
		if (id < 0)
			return id;
		if (mod && mod->build_id_len && mod->build_id_len <= 64) {
			int rc = note_unresolved(c->t, (uint32_t)id, mod, addr);
			if (rc < 0)
				return rc;
		}
	}
	return id;
}

/* The "rule name" lines of an UNTRACED record into t->untraced. */
static int add_untraced(rva_trace *t, const char *p, size_t n)
{
	const char *end = p + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *sp = memchr(p, ' ', (size_t)(le - p));
		if (sp && sp + 1 < le) {
			if ((t->nuntraced & (t->nuntraced - 1)) == 0) {
				size_t cap = t->nuntraced ? t->nuntraced * 2 : 16;
				rva_untraced *u = realloc(t->untraced, cap * sizeof(*u));
				if (!u)
					return -ENOMEM;
				t->untraced = u;
			}
			rva_untraced *u = &t->untraced[t->nuntraced];
			u->rule = strndup(p, (size_t)(sp - p));
			u->name = strndup(sp + 1, (size_t)(le - sp - 1));
			if (!u->rule || !u->name) {
				free(u->rule);
				free(u->name);
				return -ENOMEM;
			}
			t->nuntraced++;
		}
		p = le + 1;
	}
	return 0;
}

/* A FRAMES record's frames into the model, checked: inside the record, at
 * most RVA_MAX_FRAMES in all, none ending before it starts. */
static int frames_record(ctx *c, const uint8_t *v, uint32_t len, rva_error *err)
{
	rva_trace *t = c->t;
	uint32_t n;
	rva_frame *fr;

	if (len < 8)
		return rva_fail(err, -EINVAL, "short FRAMES record");
	n = rd32(v);
	if ((uint64_t)n * FRAME_ITEM > len - 8)
		return rva_fail(err, -EINVAL, "FRAMES items past the record");
	if (n > RVA_MAX_FRAMES - t->nframes)
		return rva_fail(err, -E2BIG, "more than %u frames", RVA_MAX_FRAMES);
	if (!n)
		return 0;
	fr = realloc(t->frames, (t->nframes + n) * sizeof(*fr));
	if (!fr)
		return rva_fail(err, -ENOMEM, "out of memory");
	t->frames = fr;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = v + 8 + (size_t)i * FRAME_ITEM;
		uint64_t s = rd64(p), e = rd64(p + 8), d = rd64(p + 16);

		if (e < s)
			return rva_fail(err, -EINVAL, "a frame ends before it starts");
		/* Hostile values stay on the int64 clock. */
		fr[t->nframes++] = (rva_frame){.start = s > INT64_MAX ? INT64_MAX : (int64_t)s,
					       .end = e > INT64_MAX ? INT64_MAX : (int64_t)e,
					       .deadline = d > INT64_MAX ? INT64_MAX : (int64_t)d,
					       .tid = rd32(p + 24),
					       .late = (rd32(p + 28) & FRAME_LATE) != 0};
	}
	return 0;
}

static int cmp_frame(const void *a, const void *b)
{
	const rva_frame *x = a, *y = b;
	return x->start < y->start   ? -1
	       : x->start > y->start ? 1
				     : (x->end > y->end) - (x->end < y->end);
}

/* Keeps the frames overlapping the calls' span [t->start, t->end] (all of
 * them when the capture holds no call), sorted by start. */
static void frames_clip(rva_trace *t, int have_calls)
{
	size_t k = 0;

	for (size_t i = 0; i < t->nframes; i++)
		if (!have_calls || (t->frames[i].end >= t->start && t->frames[i].start <= t->end))
			t->frames[k++] = t->frames[i];
	t->nframes = k;
	if (k > 1)
		qsort(t->frames, k, sizeof(*t->frames), cmp_frame);
}

/*
 * The records of [off, end).  `cut` is set when the file is shorter than its
 * header's file_size: the records then stop at the last whole one, and a
 * capture whose verified CHECKSUM is followed by nothing (only its END lost)
 * is salvaged with a warning; anything else missing is refused.
 */
static int parse_records(ctx *c, const uint8_t *buf, uint64_t off, uint64_t end, int cut,
			 int need_checksum, rva_error *err, uint64_t *anomaly_mono)
{
	uint64_t strings = 0;
	size_t symcap = 0, modcap = 0;
	int saw_end = 0, after_checksum = 0, prev_muted = 0;
	while (off < end) {
		if (end - off < 8) {
			if (cut)
				break;
			return rva_fail(err, -EINVAL, "record header at %llu runs past the end",
					(unsigned long long)off);
		}
		const uint8_t *r = buf + off;
		uint16_t type = rd16(r);
		uint32_t len = rd32(r + 4);
		uint64_t padded = ((uint64_t)len + 7) & ~7ull;
		if (padded > end - off - 8) {
			if (cut)
				break;
			return rva_fail(err, -EINVAL, "record type %u at %llu runs past the end",
					type, (unsigned long long)off);
		}
		const uint8_t *v = r + 8;
		uint64_t at = off;
		off += 8 + padded;
		int after_muted = prev_muted;
		prev_muted = type == REC_MUTED;
		if (type == 0xffff) {
			if (off != end)
				return rva_fail(err, -EINVAL, "END record is not last");
			if (cut) /* whole, yet shorter than it says: file_size is wrong */
				return rva_fail(err, -EINVAL, "file_size beyond the END record");
			saw_end = 1;
			break;
		}
		if (after_checksum)
			return rva_fail(
				err, -EBADMSG,
				"record type %u after the CHECKSUM: capture damaged or altered",
				type);
		if (type == REC_CHECKSUM) {
			/* Its own bytes are outside the hash: each must be exact. */
			if (len != 16 || rd16(r + 2) != 0 || rd32(v + 4) != 0)
				return rva_fail(err, -EBADMSG, "malformed checksum record");
			uint32_t algo = rd32(v);
			if (algo != CHECKSUM_XXH3_64)
				return rva_fail(err, -EPROTONOSUPPORT,
						"unknown checksum algorithm %u", algo);
			uint64_t want = rd64(v + 8), got = XXH3_64bits(buf, (size_t)at);
			if (want != got)
				return rva_fail(
					err, -EBADMSG,
					"checksum mismatch (XXH3 %016llx, file says %016llx): "
					"the capture is damaged",
					(unsigned long long)got, (unsigned long long)want);
			c->t->checksum = RVA_CHECKSUM_VERIFIED;
			after_checksum = 1;
			continue;
		}
		if (type == REC_SYMBOL) {
			if (len < 24)
				return rva_fail(err, -EINVAL, "short SYMBOL record");
			uint32_t nl = rd32(v + 20);
			if (nl > MAX_SYMNAME || nl > len - 24)
				return rva_fail(err, -E2BIG, "SYMBOL name too long");
			strings += nl;
			if (strings > MAX_STRINGS)
				return rva_fail(err, -E2BIG, "more than 16 MiB of strings");
			if (nl == 0)
				continue; /* shown as module+0xoffset */
			if (c->nsyms == symcap) {
				size_t n = symcap ? symcap * 2 : 64;
				symbol *s = realloc(c->syms, n * sizeof(*s));
				if (!s)
					return rva_fail(err, -ENOMEM, "out of memory");
				c->syms = s;
				symcap = n;
			}
			/* a native function's copies are the function (a runtime's
			 * key, in no module, is named as its runtime says) */
			if (rd32(v + 16) != 0xffffffffu)
				nl = (uint32_t)rva_native_name_len((const char *)v + 24, nl);
			int64_t id = rva_method_intern(c->t, (const char *)v + 24, nl);
			if (id < 0)
				return rva_fail(err, (int)id, "cannot intern symbol");
			c->syms[c->nsyms].value = rd64(v);
			c->syms[c->nsyms].method = (uint32_t)id;
			c->nsyms++;
			continue;
		}
		if (type == REC_OFFCPU || type == REC_THREAD_COUNTERS) {
			if (len < 8 || rd32(v) != c->t->threads[0].tid)
				continue; /* another thread's: not this capture's */
			if (type == REC_THREAD_COUNTERS) {
				if (len < THREAD_COUNTERS_LEN)
					return rva_fail(err, -EINVAL,
							"short THREAD_COUNTERS record");
				c->counters = v;
				continue;
			}
			if ((uint64_t)rd32(v + 4) * OFFCPU_ITEM > len - 8)
				return rva_fail(err, -EINVAL, "OFFCPU intervals past the record");
			c->offcpu = v + 8;
			c->noffcpu = rd32(v + 4);
			continue;
		}
		if (type == REC_FRAMES) {
			int frc = frames_record(c, v, len, err);
			if (frc < 0)
				return frc;
			continue;
		}
		if (len > MAX_STRING + 64)
			return rva_fail(err, -E2BIG, "record type %u too long (%u bytes)", type,
					len);
		strings += len;
		if (strings > MAX_STRINGS)
			return rva_fail(err, -E2BIG, "more than 16 MiB of strings");
		if (type == REC_THREAD) {
			free(c->t->threads[0].name);
			c->t->threads[0].name = strndup((const char *)v, len);
			if (!c->t->threads[0].name)
				return rva_fail(err, -ENOMEM, "out of memory");
		} else if (type == REC_MODULE) {
			if (len < 32)
				return rva_fail(err, -EINVAL, "short MODULE record");
			uint32_t bl = rd32(v + 4);
			if (bl > len - 32)
				return rva_fail(err, -EINVAL, "MODULE build id past the record");
			if (c->nmods >= MAX_MODULES)
				return rva_fail(err, -E2BIG, "too many modules");
			if (c->nmods == modcap) {
				size_t n = modcap ? modcap * 2 : 16;
				module *m = realloc(c->mods, n * sizeof(*m));
				if (!m)
					return rva_fail(err, -ENOMEM, "out of memory");
				c->mods = m;
				modcap = n;
			}
			module *m = &c->mods[c->nmods++];
			m->index = rd32(v);
			m->load_bias = rd64(v + 8);
			m->build_id = v + 32;
			m->build_id_len = bl;
			m->start = rd64(v + 16);
			m->end = rd64(v + 24);
			m->path = (const char *)v + 32 + bl;
			m->path_len = len - 32 - bl;
		} else if (type == REC_UNTRACED) {
			if (len < 8 || rd32(v + 4) > len - 8)
				return rva_fail(err, -EINVAL, "bad UNTRACED record");
			c->t->untraced_truncated |= rd32(v) & 1;
			int rc = add_untraced(c->t, (const char *)v + 8 + rd32(v + 4),
					      len - 8 - rd32(v + 4));
			if (rc < 0)
				return rva_fail(err, rc, "out of memory");
		} else if (type == REC_MUTED) {
			if (len < 40)
				return rva_fail(err, -EINVAL, "short MUTED record");
			rva_muted *m = realloc(c->t->muted, (c->t->nmuted + 1) * sizeof(*m));
			if (!m)
				return rva_fail(err, -ENOMEM, "out of memory");
			c->t->muted = m;
			m += c->t->nmuted++;
			/* method: the value until the symbols are sorted (below) */
			m->method = 0;
			m->ns = (int64_t)rd64(v + 16);
			m->rate = rd64(v + 24);
			m->median_ns = rd32(v + 32);
			m->ncallers = 0;
			if (c->nmuted_vals == c->muted_cap) {
				size_t n = c->muted_cap ? c->muted_cap * 2 : 4;
				struct muted_vals *mv = realloc(c->muted_vals, n * sizeof(*mv));
				if (!mv)
					return rva_fail(err, -ENOMEM, "out of memory");
				c->muted_vals = mv;
				c->muted_cap = n;
			}
			c->muted_vals[c->nmuted_vals++].v = rd64(v);
		} else if (type == REC_MUTED_CALLERS) {
			/* Its callers follow a MUTED record; any other is ignored. */
			if (len < 24 || (len - 8) % 16)
				return rva_fail(err, -EINVAL, "bad MUTED_CALLERS record");
			int ours = after_muted && rd64(v) == c->muted_vals[c->nmuted_vals - 1].v;
			rva_muted *m = ours ? &c->t->muted[c->t->nmuted - 1] : NULL;
			struct muted_vals *mv = ours ? &c->muted_vals[c->nmuted_vals - 1] : NULL;
			uint32_t n = ours ? (len - 8) / 16 : 0;
			for (uint32_t k = 0; k < n && m->ncallers < RVA_MUTED_CALLERS; k++) {
				uint32_t ppm = rd32(v + 16 + 16 * k);
				if (ppm > 1000000)
					return rva_fail(
						err, -EINVAL,
						"MUTED_CALLERS share above one million ppm");
				mv->caller[m->ncallers] = rd64(v + 8 + 16 * k);
				m->share_ppm[m->ncallers++] = ppm;
			}
		} else if (type == REC_LOCK_WAIT) {
			if (len < LOCK_WAIT_LEN)
				return rva_fail(err, -EINVAL, "short LOCK_WAIT record");
			if (rd64(v + 48) < rd64(v + 40))
				return rva_fail(err, -EINVAL, "LOCK_WAIT ends before it starts");
			if (c->nlw == c->lwcap) {
				size_t n = c->lwcap ? c->lwcap * 2 : 16;
				const uint8_t **l = realloc(c->lw, n * sizeof(*l));
				if (!l)
					return rva_fail(err, -ENOMEM, "out of memory");
				c->lw = l;
				c->lwcap = n;
			}
			c->lw[c->nlw++] = v;
		} else if (type == REC_ANOMALY) {
			if (len < 16)
				return rva_fail(err, -EINVAL, "short ANOMALY record");
			c->t->has_anomaly = 1;
			*anomaly_mono = rd64(v + 8);
			free(c->t->anomaly_name);
			c->t->anomaly_name = strndup((const char *)v + 16, len - 16);
			if (!c->t->anomaly_name)
				return rva_fail(err, -ENOMEM, "out of memory");
		}
	}
	if (need_checksum && !after_checksum)
		return rva_fail(
			err, -EBADMSG,
			"no checksum record although the header says there is one: the capture "
			"is damaged");
	if (!saw_end) {
		if (!after_checksum)
			return rva_fail(
				err, -EINVAL,
				cut ? "truncated capture: records cut short before the CHECKSUM"
				    : "no END record");
		c->t->warning = "END record missing: salvaged (slots and records verified by "
				"the checksum)";
	}
	if (c->nsyms)
		qsort(c->syms, c->nsyms, sizeof(*c->syms), cmp_sym);
	for (size_t i = 0; i < c->nmuted_vals; i++) {
		int64_t id = method_of(c, c->muted_vals[i].v);
		if (id < 0)
			return rva_fail(err, (int)id, "cannot name a muted function");
		c->t->muted[i].method = (uint32_t)id;
		for (uint32_t k = 0; k < c->t->muted[i].ncallers; k++) {
			id = method_of(c, c->muted_vals[i].caller[k]);
			if (id < 0)
				return rva_fail(err, (int)id,
						"cannot name a muted function's caller");
			c->t->muted[i].caller[k] = (uint32_t)id;
		}
	}
	return 0;
}

/* The OFFCPU / THREAD_COUNTERS records into the model (thread 0, the
 * captured one): CLOCK_MONOTONIC ns, the calls' clock already. */
static int attach_offcpu(ctx *c)
{
	rva_tcounters k;
	rva_offcpu *iv = malloc((c->noffcpu ? c->noffcpu : 1) * sizeof(*iv));
	int rc;

	if (!iv)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->noffcpu; i++) {
		const uint8_t *p = c->offcpu + (size_t)i * OFFCPU_ITEM;
		uint64_t from = rd64(p), to = rd64(p + 8);

		/* Hostile values stay on the int64 clock and in order. */
		iv[i].from = from > INT64_MAX ? INT64_MAX : (int64_t)from;
		iv[i].to = to > INT64_MAX ? INT64_MAX : (int64_t)to;
		iv[i].reason = rd32(p + 16);
	}
	if (c->counters) {
		const uint8_t *p = c->counters;

		k = (rva_tcounters){.since = (int64_t)(rd64(p + 8) & INT64_MAX),
				    .at = (int64_t)(rd64(p + 16) & INT64_MAX),
				    .task_clock_ns = rd64(p + 24),
				    .minor_faults = rd64(p + 32),
				    .major_faults = rd64(p + 40),
				    .switches = rd64(p + 48),
				    .window = (int64_t)(rd64(p + 56) & INT64_MAX),
				    .voluntary = rd64(p + 64),
				    .involuntary = rd64(p + 72)};
	}
	rc = rva_offcpu_set(c->t, 0, iv, c->noffcpu, c->counters ? &k : NULL);
	free(iv);
	return rc;
}

/* Converts a full shifted counter value to monotonic ns. */
typedef struct clockconv {
	uint64_t ref;
	uint64_t hz;
	unsigned shift;
	int64_t mono;
	double ns_per_tick;
	/* When hz divides 10^9: whole ns per tick, and the largest tick count
	 * back from the freeze for which back * mult < 2^52, where the double
	 * arithmetic below is exact, so the integer product equals it. */
	uint64_t mult, back_max;
} clockconv;

static inline int64_t to_ns(const clockconv *k, uint64_t full)
{
	if (k->mult && full <= k->ref >> k->shift) {
		uint64_t back = k->ref - (full << k->shift);
		if (back <= k->back_max)
			return k->mono - (int64_t)(back * k->mult);
	}
	/* Common case, in 64-bit arithmetic: at or before the freeze, less
	 * than 2^53 ticks back (rounding as the general path below). */
	if (full <= k->ref >> k->shift) {
		uint64_t back = k->ref - (full << k->shift);
		if (back < (1ull << 53)) {
			double d = (double)back * k->ns_per_tick;
			if (d < (double)((int64_t)1 << 61))
				return k->mono - (int64_t)(d + 0.5);
		}
	}
	/* (full << shift) − ref, in ticks; negative before the freeze. */
	__int128 ticks = ((__int128)full << k->shift) - (__int128)k->ref;
	const int64_t lim = (int64_t)1 << 61; /* hostile clocks saturate */
	int64_t ns;
	/* Within 2^53 ticks a double is exact to far below 1 ns and avoids a
	 * 128-bit division per event; hostile spans take the exact path. */
	double d = (double)ticks * k->ns_per_tick;
	if (ticks > -((__int128)1 << 53) && ticks < ((__int128)1 << 53) && d > -(double)lim &&
	    d < (double)lim) {
		ns = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
	} else {
		__int128 q = ticks * 1000000000 / (__int128)k->hz;
		ns = q > lim ? lim : q < -lim ? -lim : (int64_t)q;
	}
	return k->mono + ns;
}

/* The replay's stack: depth, and the method of frame j (0 outermost). */
static size_t replay_depth(const ctx *c)
{
	return c->sum ? c->sum->nfr : c->t->threads[0].sdepth;
}

static uint32_t replay_method(const ctx *c, size_t j)
{
	if (c->sum)
		return c->sum->tree.nodes[c->sum->fr[j].node].method;
	const rva_thread *th = &c->t->threads[0];
	return th->calls[th->stack[j]].method;
}

/*
 * A STACK or EXIT_OF record in the replay (marker at slot `at`, value `v`):
 * a STACK must list exactly the frames the replay holds above the outer
 * ones (their number, then the methods of those it lists); an EXIT_OF's
 * exit must close an outer frame with nothing traced above it.  Anything
 * else means the exits do not match the entries: counted in unbalanced.
 * 0 or -ENOMEM.
 */
static __attribute__((noinline)) int named_check(ctx *c, uint32_t lo, uint64_t at, uint64_t v)
{
	size_t depth = replay_depth(c);
	if (lo == MK_EXIT_OF) {
		if (depth == c->pre && c->pre > 0)
			c->pre--; /* the exit after it closes that frame */
		else
			c->t->unbalanced++;
		return 0;
	}
	if (!c->stacks_on)
		return 0;
	uint64_t listed = (uint32_t)v, open = v >> 32;
	if (2 * listed + 1 > at)
		return 0; /* its FRAME pairs are not all here */
	int bad = depth < c->pre || depth - c->pre != open;
	for (uint64_t j = 0; j < listed && !bad; j++) {
		int64_t m = method_of(c, rd64(c->slots + 8 * (at - 1 - 2 * (listed - j))));
		if (m < 0)
			return (int)m;
		bad = replay_method(c, c->pre + j) != (uint32_t)m;
	}
	c->t->unbalanced += bad;
	return 0;
}

/* The forward replay of pass 2; `summing` and `fast` are constants at each
 * call site so the compiler drops the untaken sides from the hot loop.
 * fast: every counter value from the oldest to the newest takes to_ns's
 * integer path (decode_slots checked both ends; the counter never decreases
 * forwards), so ns is that product directly, already non-decreasing. */
static inline __attribute__((always_inline)) int forward(ctx *c, const clockconv *k, uint64_t first,
							 uint64_t hi, uint32_t prev, int summing,
							 int fast, rva_error *err)
{
	uint64_t n = c->nslots;
	agg *sum = c->sum;
	int64_t last = c->last_ns;
	int have_first = c->have_first;
	int rc = 0;
	uint64_t run_end = 0; /* end of the last run of low-word-1 slots seen */
	/* fast: ns = mono - (ref - (full << shift)) * mult, rewritten modulo
	 * 2^64 (exact, the true value fits) as the ns of the current high word,
	 * `base`, plus (ts << shift) * mult: full << shift is the sum of the two
	 * halves shifted. */
	const uint64_t kmul = k->mult, kc = (uint64_t)k->mono - k->ref * kmul;
	const unsigned ksh = k->shift;
	uint64_t base = kc + ((hi << 32) << ksh) * kmul;
	uint64_t i = first;
	while (i < n && rc == 0) {
		uint64_t stop = n - i > PROGRESS_SLOTS ? i + PROGRESS_SLOTS : n, from = i;
		for (; i < stop; i++) {
			uint64_t value;
			uint64_t s = rd64(c->slots + 8 * i);
			uint64_t nx = i + 1 < n ? rd64(c->slots + 8 * (i + 1)) : 0;
			int pair = 0;
			if (IS_MARKER(nx)) {
				if (i + 1 >= run_end) {
					run_end = i + 1;
					while (run_end < n &&
					       IS_MARKER(rd64(c->slots + 8 * run_end)))
						run_end++;
				}
				pair = ((run_end - 2 - i) & 1) == 0;
			}
			if (pair) {
				value = s;
				s = nx;
				i++;
			} else {
				value = (uint32_t)s;
			}
			uint32_t lo = (uint32_t)s, ts = (uint32_t)(s >> 32);
			int marker = __builtin_expect(lo >= 2 && pair, 0);
			if (marker && lo == 2 && (uint32_t)value == ts) { /* CLOCK: re-anchor */
				hi = value >> 32;
				base = kc + ((hi << 32) << ksh) * kmul;
				prev = ts;
				continue;
			}
			if (ts < prev) {
				hi++;
				base = kc + ((hi << 32) << ksh) * kmul;
			}
			prev = ts;
			if (marker) {
				uint64_t to = hi << 32 | ts;
				if (lo == MK_STACK || lo == MK_EXIT_OF) {
					if ((rc = named_check(c, lo, i, value)) < 0) {
						rc = rva_fail(err, rc, "out of memory");
						break;
					}
					continue;
				}
				if (lo == 3 && value <= to) { /* LOSS from `value` to here */
					int64_t a = to_ns(k, value), b = to_ns(k, to);
					if (!c->t->lost_spans++) {
						c->t->lost_first_start = a;
						c->t->lost_first_end = b;
					}
					c->t->lost_ns += b - a;
				}
				continue; /* other markers: reserved, skipped */
			}
			int64_t ns;
			if (fast) {
				ns = (int64_t)(base + ((uint64_t)ts << ksh) * kmul);
			} else {
				ns = to_ns(k, hi << 32 | ts);
				if (__builtin_expect(!have_first, 0)) {
					c->first_ns = ns;
					have_first = 1;
				} else if (ns < last) {
					ns = last; /* saturated hostile clocks stay monotonic */
				}
			}
			last = ns;
			if (summing && __builtin_expect(ns >= sum->snap_at, 0) &&
			    (ns > sum->snap_at || lo == 0) &&
			    (rc = agg_snapshot(sum, INT64_MAX)) < 0) {
				rc = rva_fail(err, rc, "out of memory");
				break;
			}
			if (lo == 0) {
				if (!summing)
					rc = rva_exit(c->t, 0, RVA_ANY_METHOD, ns);
				else if (sum->nfr)
					agg_exit(sum, ns);
			} else {
				int64_t m = method_of(c, value);
				rc = m < 0     ? (int)m
				     : summing ? agg_enter(sum, (uint32_t)m, ns)
					       : rva_enter(c->t, 0, (uint32_t)m, ns);
			}
			if (__builtin_expect(rc < 0, 0)) {
				rc = rva_fail(err, rc, "slot %llu: cannot record the event",
					      (unsigned long long)i);
				break;
			}
		}
		if (rc == 0)
			progress(c, (i - from) * 4);
	}
	c->last_ns = last;
	c->have_first = have_first;
	return rc;
}

/* The oldest complete STACK record pass 1 met (FORMAT.md §1). */
typedef struct stackrec {
	int found;
	uint64_t pos;	  /* its value slot; its FRAME pairs are the 2 × listed before */
	uint64_t listed;  /* FRAME pairs */
	uint64_t open;	  /* frames open (listed, then deeper unknown ones) */
	uint64_t hi;	  /* high word and ... */
	uint32_t ts;	  /* ... low word of its counter */
	uint64_t open_at; /* pass 1's count of exits pending at it */
	size_t named_at;  /* EXIT_OF records newer than it */
} stackrec;

/* A STACK record whose value slot is `i` (value v) in pass 1: kept when its
 * FRAME pairs are all there (the oldest one kept wins). */
static __attribute__((noinline)) void stack_seen(ctx *c, stackrec *st, uint64_t i, uint64_t v,
						 uint64_t hi, uint32_t ts, uint64_t open)
{
	uint64_t listed = (uint32_t)v;
	if (listed > i / 2)
		return;
	for (uint64_t j = 0; j < listed; j++)
		if ((uint32_t)rd64(c->slots + 8 * (i - 2 * j - 1)) != MK_FRAME)
			return;
	*st = (stackrec){1, i, listed, v >> 32, hi, ts, open, c->nnamed};
}

/* An EXIT_OF record's value in pass 1; 0 or -ENOMEM. */
static __attribute__((noinline)) int named_push(ctx *c, uint64_t v)
{
	if (c->nnamed == c->namedcap) {
		size_t cap = c->namedcap ? c->namedcap * 2 : 16;
		uint64_t *n = realloc(c->named, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->named = n;
		c->namedcap = cap;
	}
	c->named[c->nnamed++] = v;
	return 0;
}

/* What the slots before the oldest STACK record say (prefix_walk). */
typedef struct prefix {
	uint64_t y;    /* frames open at the first slot that close among them:
			* begun before it, so nothing names them */
	uint64_t u;    /* (y > 0) the newest of those exits */
	uint64_t u_hi; /* and its counter's high word ... */
	uint32_t u_ts; /* ... and low word */
	uint64_t e;    /* entries of frames the STACK lists (still open at it) */
	uint64_t pend; /* exits pending at the first slot (closing later) */
	size_t named;  /* EXIT_OF records among them */
} prefix;

/*
 * The slots [first, end) just before the oldest STACK record `st`,
 * backwards from it (its counter, its pending exits): which frames open at
 * `first` are unnamed, and which the STACK names (FORMAT.md §1).  An exit is
 * matched with the nearest entry before it; the unmatched ones are a stack
 * whose bottom, the newest, is the only one kept (u).
 */
static void prefix_walk(const ctx *c, const stackrec *st, uint64_t first, uint64_t end, prefix *p)
{
	uint64_t i = end, hi = st->hi, post = st->open_at;
	uint32_t prev = st->ts;
	memset(p, 0, sizeof(*p));
	while (i > first) {
		uint64_t s = rd64(c->slots + 8 * --i);
		uint32_t lo = (uint32_t)s, ts = (uint32_t)(s >> 32);
		if (IS_MARKER(s)) {
			if (i == first)
				break; /* torn */
			uint64_t v = rd64(c->slots + 8 * --i);
			if (lo == MK_CLOCK && (uint32_t)v == ts)
				hi = v >> 32;
			else if (ts > prev)
				hi--;
			prev = ts;
			if (lo == MK_EXIT_OF && p->y > 0) {
				p->y--; /* its exit, met just before, closes a named frame */
				p->named++;
			}
			if (lo != MK_PAIR)
				continue;
		} else {
			if (ts > prev)
				hi--;
			prev = ts;
		}
		if (lo == 0) {
			if (p->y++ == 0) {
				p->u = i;
				p->u_hi = hi;
				p->u_ts = ts;
			}
		} else if (p->y) {
			p->y--;
		} else {
			p->e++;
			post -= post > 0;
		}
	}
	p->pend = post + p->y;
}

/* Opens the frame of method value v (an unknown caller when `named` is 0)
 * at ts before the replay. */
static int open_frame(ctx *c, int named, uint64_t v, int64_t ts)
{
	int64_t m;
	if (named) {
		m = method_of(c, v);
	} else {
		m = rva_method_intern(c->t, "(unknown caller)", 16);
		c->t->repaired++;
	}
	if (m < 0)
		return (int)m;
	return c->sum ? agg_enter(c->sum, (uint32_t)m, ts) : rva_enter(c->t, 0, (uint32_t)m, ts);
}

/*
 * The frames open where the replay starts, outermost first: the outer
 * frames EXIT_OF records name (`nnamed` of them), `extra` unknown callers,
 * then the `open` frames of the STACK record `st` (those it lists named,
 * deeper ones unknown) — or, without one, that many unknown callers.
 */
static int open_initial(ctx *c, const stackrec *st, size_t nnamed, uint64_t extra, uint64_t open,
			int64_t ts, rva_error *err)
{
	int rc = 0;
	for (size_t j = 0; j < nnamed && rc == 0; j++)
		rc = open_frame(c, 1, c->named[j], ts);
	c->pre = nnamed;
	for (uint64_t j = 0; j < extra && rc == 0; j++)
		rc = open_frame(c, 0, 0, ts);
	for (uint64_t j = 0; j < open && rc == 0; j++) {
		int named = st && j < st->listed;
		uint64_t v = named ? rd64(c->slots + 8 * (st->pos - 2 * (st->listed - j))) : 0;
		rc = open_frame(c, named, v, ts);
	}
	return rc < 0 ? rva_fail(err, rc, "cannot open frame") : 0;
}

static int decode_slots(ctx *c, const clockconv *k, rva_error *err)
{
	uint64_t n = c->nslots, first = 0;
	uint64_t shifted = k->ref >> k->shift;
	uint64_t hi = shifted >> 32;
	uint32_t prev = (uint32_t)shifted;
	uint64_t open = 0; /* frames open at the oldest slot */
	stackrec st = {0};
	/* The newest counter value: where the forward replay ends. */
	uint64_t newest_hi = hi;
	uint32_t newest_t = 0;
	if (n) {
		newest_t = (uint32_t)(rd64(c->slots + 8 * (n - 1)) >> 32);
		newest_hi -= newest_t > prev;
	}
	/* Pass 1, backwards, reporting progress every PROGRESS_SLOTS. */
	uint64_t i = n;
	int torn = 0, clocked = 0;
	while (i > 0 && !torn) {
		uint64_t stop = i > PROGRESS_SLOTS ? i - PROGRESS_SLOTS : 0, from = i;
		while (i > stop) {
			i--;
			uint64_t s = rd64(c->slots + 8 * i);
			uint32_t lo = (uint32_t)s, ts = (uint32_t)(s >> 32);
			if (IS_MARKER(s)) {
				if (i == 0) {
					/* Torn: its value slot was overwritten. */
					c->t->dropped++;
					first = 1;
					torn = 1;
					break;
				}
				i--; /* the value slot */
				if (lo >= 2) {
					uint64_t v = rd64(c->slots + 8 * i);
					if (lo == 2 && (uint32_t)v == ts) { /* CLOCK: exact */
						hi = v >> 32;
						if (!clocked)
							newest_hi =
								hi; /* every later slot has it */
						clocked = 1;
					} else if (ts > prev) {
						hi--;
					}
					prev = ts;
					if (lo == MK_STACK) {
						stack_seen(c, &st, i, v, hi, ts, open);
					} else if (lo == MK_EXIT_OF && open > 0 && i + 2 < n &&
						   (uint32_t)rd64(c->slots + 8 * (i + 2)) == 0) {
						/* The exit after it, counted as pending, closes
						 * a named outer frame: no entry matches it. */
						open--;
						if (named_push(c, v) < 0)
							return rva_fail(err, -ENOMEM,
									"out of memory");
					}
					continue;
				}
			}
			if (ts > prev)
				hi--;
			prev = ts;
			/* Branch-free: entries and exits alternate unpredictably. */
			uint64_t is_exit = lo == 0;
			open = open + is_exit - ((is_exit ^ 1) & (open != 0));
		}
		progress(c, (from - i) * 4);
	}
	/* The oldest slot walked is the last one (a torn slot is not walked:
	 * nothing is when it is the only one). */
	int any = n > 1 || (n == 1 && !torn);
	uint64_t oldest_hi = hi;
	uint32_t oldest_t = prev;
	/*
	 * Where the replay starts and the frames open there.  Without a STACK
	 * record (a capture written before them): the EXIT_OF names, then an
	 * unknown caller per exit pending at the oldest slot.  With one, the
	 * frames open at the oldest slot are those it lists less the ones
	 * entered before it — unless some frame open at the oldest slot closed
	 * before the record: nothing names it, so the replay starts at the
	 * record instead, the slots before it skipped.
	 */
	size_t nnamed = c->nnamed;
	uint64_t extra = 0, init = open;
	if (st.found) {
		uint64_t end = st.pos - 2 * st.listed, from = first;
		prefix p;
		prefix_walk(c, &st, first, end, &p);
		c->stacks_on = 1;
		if (p.y > 0) {
			/* Start after the newest exit of an unnamed frame. */
			first = p.u + 1;
			oldest_hi = p.u_hi;
			oldest_t = p.u_ts;
			prefix_walk(c, &st, first, end, &p);
			assert(p.y == 0);
			nnamed = st.named_at + p.named;
		}
		if (p.e > st.open) {
			/* More entries of its frames than it lists: not the same
			 * frames.  The replay starts at the record. */
			c->t->unbalanced++;
			first = st.pos + 2;
			oldest_hi = st.hi;
			oldest_t = st.ts;
			nnamed = st.named_at;
			init = st.open;
			open = st.open_at;
		} else {
			init = st.open - p.e;
			open = p.pend;
		}
		if (first > from && rva_skip_count(c->t, "slots of frames begun before the capture",
						   first - from) < 0)
			return rva_fail(err, -ENOMEM, "out of memory");
		any = first < n;
		/* More exits pending than frames open: they match no entry.  The
		 * replay's frames then differ from every later record's: counted
		 * once, here. */
		if (open > init) {
			extra = open - init;
			c->t->unbalanced += extra;
			c->stacks_on = 0;
		}
	}
	int64_t oldest_ns = any ? to_ns(k, oldest_hi << 32 | oldest_t) : k->mono;
	int rc = open_initial(c, st.found ? &st : NULL, nnamed, extra, init, oldest_ns, err);
	if (rc < 0)
		return rc;
	/* Pass 2, forwards, specialised for the summary and the model, and for
	 * clocks whose whole span converts in integers (see forward). */
	uint64_t newest = n ? newest_hi << 32 | newest_t : 0, oldest = oldest_hi << 32 | oldest_t;
	if (any && k->mult && oldest <= newest && newest <= k->ref >> k->shift &&
	    k->ref - (oldest << k->shift) <= k->back_max) {
		c->first_ns = oldest_ns;
		c->have_first = 1;
		if (c->sum && c->sum->want_end) {
			/* ns never decrease here: the last event is at the newest
			 * slot's time, the chain at the end is taken there. */
			c->sum->end_pred = to_ns(k, newest);
			c->sum->snap_at = c->sum->end_pred;
			c->sum->end_ok = 1;
		}
		return c->sum ? forward(c, k, first, oldest_hi, oldest_t, 1, 1, err)
			      : forward(c, k, first, oldest_hi, oldest_t, 0, 1, err);
	}
	return c->sum ? forward(c, k, first, oldest_hi, oldest_t, 1, 0, err)
		      : forward(c, k, first, oldest_hi, oldest_t, 0, 0, err);
}

/* The method of a LOCK_WAIT's value, -1 when its flag says unknown. */
static int64_t lock_method(ctx *c, uint32_t flags, uint32_t known, uint64_t value)
{
	return flags & known ? method_of(c, value) : -1;
}

/* Converts the LOCK_WAIT records into c->t->lock_waits.  0 or -ENOMEM. */
static int lock_waits(ctx *c, const clockconv *k, rva_error *err)
{
	if (!c->nlw)
		return 0;
	rva_lock_wait *w = calloc(c->nlw, sizeof(*w));
	if (!w)
		return rva_fail(err, -ENOMEM, "out of memory");
	c->t->lock_waits = w;
	for (size_t i = 0; i < c->nlw; i++) {
		const uint8_t *v = c->lw[i];
		uint32_t flags = rd32(v + 4);
		w[i].kind = rd32(v);
		w[i].waiter = rd32(v + 8);
		w[i].holder = rd32(v + 12);
		w[i].lock = rd64(v + 16);
		w[i].waiter_method = lock_method(c, flags, LOCK_WAITER_METHOD, rd64(v + 24));
		w[i].holder_method = lock_method(c, flags, LOCK_HOLDER_METHOD, rd64(v + 32));
		if (w[i].waiter_method < -1 || w[i].holder_method < -1)
			return rva_fail(err, -ENOMEM, "out of memory");
		w[i].start = to_ns(k, rd64(v + 40));
		w[i].end = to_ns(k, rd64(v + 48));
		c->t->nlock_waits++;
	}
	return 0;
}

/* The muted functions' callers' time after each mute, from t's calls
 * (rva_muted.after_ppm).  0 or -ENOMEM. */
static int muted_after(rva_trace *t)
{
	rva_mafter a;
	int rc = rva_mafter_init(&a, t);
	for (size_t h = 0; rc == 0 && a.head && h < t->nthreads; h++)
		for (size_t j = 0; j < t->threads[h].ncalls; j++) {
			const rva_call *cl = &t->threads[h].calls[j];
			rva_mafter_call(&a, cl->method, cl->start, cl->end);
		}
	if (rc == 0)
		rva_mafter_fill(&a, t);
	rva_mafter_free(&a);
	return rc;
}

static int decode(const uint8_t *buf, size_t len, rva_trace **out, agg *sum, rva_error *err,
		  const rva_progress *p)
{
	static const uint8_t magic[8] = {'R', 'V', 'C', 'A', 'P', 0, '\r', '\n'};
	*out = NULL;
	if (len < HDR_MIN)
		return rva_fail(err, -EINVAL,
				"capture shorter than its 128-byte header (%zu bytes)", len);
	if (memcmp(buf, magic, 8) != 0)
		return rva_fail(err, -EINVAL, "not a Rearview capture (bad magic)");
	if (rd16(buf + 8) != 1 && rd16(buf + 8) != 2) /* 1: no markers but 1 occur */
		return rva_fail(err, -EPROTONOSUPPORT, "capture version %u not supported",
				rd16(buf + 8));
	uint16_t hsize = rd16(buf + 10);
	clockconv k = {.ref = rd64(buf + 16),
		       .hz = rd64(buf + 40),
		       .shift = buf[48],
		       .mono = (int64_t)rd64(buf + 32)};
	uint64_t ring = rd64(buf + 72), count = rd64(buf + 96);
	uint64_t soff = rd64(buf + 104), moff = rd64(buf + 112), fsize = rd64(buf + 120);
	if (hsize < HDR_MIN)
		return rva_fail(err, -EINVAL, "header_size %u < 128", hsize);
	k.ns_per_tick = k.hz ? 1e9 / (double)k.hz : 0;
	if (k.hz && k.hz <= 1000000000 && 1000000000 % k.hz == 0) {
		k.mult = 1000000000 / k.hz;
		k.back_max = ((1ull << 52) - 1) / k.mult;
	}
	if (k.shift > 31 || k.hz == 0 || k.hz > 100000000000ull)
		return rva_fail(err, -EINVAL, "bad clock (shift %u, %llu Hz)", k.shift,
				(unsigned long long)k.hz);
	if (soff % 8 || soff < hsize || ring > (1ull << 32) || count > ring)
		return rva_fail(err, -EINVAL, "bad slot geometry");
	/* A file cut short keeps its chance: if what is missing is only the END
	 * record, parse_records() salvages it once the CHECKSUM verifies. */
	int cut = fsize > len;
	if (cut && (moff > len || moff != soff + 8 * count))
		return rva_fail(err, -EINVAL, "truncated capture: %zu of %llu bytes", len,
				(unsigned long long)fsize);
	if (fsize < len)
		len = (size_t)fsize;
	if (soff > len || count > (len - soff) / 8 || moff != soff + 8 * count || moff > len)
		return rva_fail(err, -EINVAL, "slots or records outside the file");
	if (k.mono > INT64_MAX / 2)
		return rva_fail(err, -EINVAL, "reference time out of range");

	ctx c = {.slots = buf + soff,
		 .nslots = count,
		 .base = rd64(buf + 64),
		 .sum = sum,
		 .prog = p,
		 .ptotal = len};
	int rc = -ENOMEM;
	c.t = rva_trace_new();
	if (!c.t)
		return rva_fail(err, -ENOMEM, "out of memory");
	c.t->format = "rearview-capture";
	if (rva_thread_add(c.t, rd32(buf + 52), rd32(buf + 56), NULL) < 0) {
		rva_fail(err, rc, "out of memory");
		goto out_free;
	}
	uint64_t anomaly_mono = 0;
	progress(&c, 0);
	if ((rc = parse_records(&c, buf, moff, len, cut, (rd32(buf + 12) & HDR_CHECKSUMMED) != 0,
				err, &anomaly_mono)) < 0)
		goto out_free;
	progress(&c, len - 8 * count);
	if (sum && (c.offcpu || c.counters)) {
		/* The intervals first, so each call's exit can take its share. */
		if ((rc = attach_offcpu(&c)) == 0 &&
		    !(sum->off = calloc(sum->memocap, sizeof(*sum->off))))
			rc = -ENOMEM;
		if (rc < 0) {
			rva_fail(err, rc, "out of memory");
			goto out_free;
		}
		sum->offth = &c.t->threads[0];
	}
	if (sum && (rc = rva_mafter_init(&sum->ma, c.t)) < 0) {
		rva_fail(err, rc, "out of memory");
		goto out_free;
	}
	if (sum) {
		sum->want_snap = c.t->has_anomaly;
		sum->want_end = !c.t->has_anomaly;
		sum->snap_at = c.t->has_anomaly ? (int64_t)anomaly_mono : INT64_MAX;
	}
	if ((rc = decode_slots(&c, &k, err)) < 0 || (rc = lock_waits(&c, &k, err)) < 0)
		goto out_free;
	c.t->anomaly_ns = (int64_t)anomaly_mono;
	if (c.t->unbalanced && !c.t->warning)
		c.t->warning = "the exits do not match the entries (the tracer's record of the "
			       "open frames disagrees with the slots): frames may nest wrongly";
	if (sum) {
		int64_t close_ts = k.mono > c.last_ns ? k.mono : c.last_ns;
		if (sum->want_snap && !sum->snapped && (rc = agg_snapshot(sum, close_ts)) < 0) {
			rva_fail(err, rc, "out of memory");
			goto out_free;
		}
		if (sum->end_ok && c.last_ns != sum->end_pred)
			sum->end_ok = 0; /* not expected: then no chain at the end */
		if (sum->end_ok && sum->nfr && k.mono > c.last_ns) {
			/* The trace ends at the freeze, inside the open frames: they
			 * are the chain (every other call ended before). */
			free(sum->snap);
			sum->snap = NULL;
			sum->snap_at = k.mono;
			rc = agg_snapshot(sum, close_ts);
		} else if (sum->end_ok && !sum->snapped) {
			rc = agg_snapshot(sum, close_ts);
		}
		if (rc < 0) {
			rva_fail(err, rc, "out of memory");
			goto out_free;
		}
		int open_at_end = sum->nfr > 0;
		while (sum->nfr)
			agg_exit(sum, close_ts);
		rva_mafter_fill(&sum->ma, c.t);
		c.t->start = count ? c.first_ns : 0;
		c.t->end = !count	 ? 0
			   : open_at_end ? (k.mono > c.last_ns ? k.mono : c.last_ns)
					 : c.last_ns;
	} else {
		/* Still-open frames end at the freeze, or at the last event when a
		 * damaged file has events after it. */
		rva_trace_finish(c.t, k.mono > c.last_ns ? k.mono : c.last_ns);
		if ((rc = muted_after(c.t)) < 0) {
			rva_fail(err, rc, "out of memory");
			goto out_free;
		}
		if ((c.offcpu || c.counters) && (rc = attach_offcpu(&c)) < 0) {
			rva_fail(err, rc, "out of memory");
			goto out_free;
		}
	}
	frames_clip(c.t, count > 0);
	progress(&c, len); /* clamped: ends at the total */
	*out = c.t;
	c.t = NULL;
	rc = 0;
out_free:
	free(c.lw);
	free(c.named);
	free(c.mods);
	free(c.syms);
	free(c.muted_vals);
	free(c.vk);
	free(c.vid);
	rva_trace_free(c.t);
	return rc;
}

int rva_capture_decode_progress(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err,
				const rva_progress *p)
{
	return decode(buf, len, out, NULL, err, p);
}

int rva_capture_decode(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	return decode(buf, len, out, NULL, err, NULL);
}

int rva_capture_summarize(const uint8_t *buf, size_t len, rva_summary *out, rva_error *err)
{
	return rva_capture_summarize_progress(buf, len, out, err, NULL);
}

int rva_capture_summarize_progress(const uint8_t *buf, size_t len, rva_summary *out, rva_error *err,
				   const rva_progress *p)
{
	agg a = {0};
	memset(out, 0, sizeof(*out));
	if (rva_tree_init(&a.tree) < 0 || agg_reserve(&a) < 0) {
		free(a.fr);
		free(a.memo);
		free(a.inner);
		rva_tree_release(&a.tree);
		return rva_fail(err, -ENOMEM, "out of memory");
	}
	int rc = decode(buf, len, &out->trace, &a, err, p);
	rva_mstat *st = NULL;
	if (rc == 0) {
		size_t n = out->trace->nmethods;
		st = calloc(n ? n : 1, sizeof(*st));
		if (!st) {
			rc = rva_fail(err, -ENOMEM, "out of memory");
			rva_trace_free(out->trace);
			out->trace = NULL;
		} else {
			agg_tree_totals(&a);
			agg_stats(&a, st, n);
			if (rva_muted_fold(out->trace, st, sizeof(*st), offsetof(rva_mstat, self),
					   offsetof(rva_mstat, est_self)) < 0) {
				rc = rva_fail(err, -ENOMEM, "out of memory");
				free(st);
				st = NULL;
				rva_trace_free(out->trace);
				out->trace = NULL;
			}
		}
	}
	free(a.map.slot);
	free(a.memo);
	free(a.inner);
	free(a.fr);
	rva_mafter_free(&a.ma);
	if (rc < 0) {
		free(a.off);
		free(a.snap);
		rva_tree_release(&a.tree);
		return rc;
	}
	out->stats = st;
	out->tree = a.tree;
	/* The root's off-CPU time: its children's (no frame is the root). */
	if (a.off) {
		a.off[0] = 0;
		for (size_t i = 1; i < a.tree.n; i++)
			if (!a.tree.nodes[i].parent)
				a.off[0] = rva_sadd(a.off[0], a.off[i]);
	}
	out->tree_off = a.off;
	if (a.want_snap) {
		out->anomaly_chain = a.snap;
		out->anomaly_depth = a.nsnap;
	} else if (a.end_ok) {
		out->end_chain = a.snap;
		out->end_depth = a.nsnap;
	} else {
		free(a.snap);
	}
	return 0;
}

void rva_summary_release(rva_summary *s)
{
	rva_trace_free(s->trace);
	free(s->stats);
	free(s->anomaly_chain);
	free(s->end_chain);
	free(s->tree_off);
	rva_tree_release(&s->tree);
	memset(s, 0, sizeof(*s));
}
