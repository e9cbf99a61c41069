/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode.c — the capture file writer (tracer/FORMAT.md §2).
 *
 * rvt_capture_encode() turns a plain description into the exact bytes of a
 * capture; it is what tests/tracer/test_format.c checks against the golden
 * example.  rvt_capture_build() fills that description from a frozen ring:
 * the process metadata, and a SYMBOL (plus its MODULE) for each method value
 * that occurs in the slots — found by decoding the slots backwards, the only
 * unambiguous direction, into a set of the distinct values (memory and time
 * in the number of distinct methods, not of events: a full 32 MiB ring holds
 * ~4 M events of a few thousand methods), a STACK record lists or an EXIT_OF
 * names — or was muted, an UNTRACED record per module that
 * left functions out at build time and a MUTED record (with its
 * MUTED_CALLERS) per function muted at run time (mute.c).
 *
 * Invariants: every record is 8-aligned and END ends exactly at file_size;
 * the header's counts always describe the bytes that follow.
 */
#include "tracer-int.h"

#include <assert.h>
/* xxHash from libxxhash-dev, compiled into this file: librvtrace gains no
 * run-time dependency. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct out {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void out_reserve(struct out *o, size_t more)
{
	if (o->err || o->len + more <= o->cap)
		return;
	size_t nc = o->cap ? o->cap : 4096;
	while (nc < o->len + more)
		nc *= 2;
	uint8_t *n = realloc(o->p, nc);
	if (!n) {
		o->err = -ENOMEM;
		return;
	}
	o->p = n;
	o->cap = nc;
}

static void put(struct out *o, const void *d, size_t n)
{
	out_reserve(o, n);
	if (o->err)
		return;
	if (n)
		memcpy(o->p + o->len, d, n);
	o->len += n;
}

static void put_le(struct out *o, uint64_t v, unsigned bytes)
{
	uint8_t b[8];
	for (unsigned i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(o, b, bytes);
}

static void pad8(struct out *o)
{
	static const uint8_t z[8];
	put(o, z, (8 - o->len % 8) % 8);
}

static void rec_head(struct out *o, uint16_t type, uint32_t len)
{
	put_le(o, type, 2);
	put_le(o, 0, 2);
	put_le(o, len, 4);
}

static void rec_bytes(struct out *o, uint16_t type, const void *d, size_t n)
{
	rec_head(o, type, (uint32_t)n);
	put(o, d, n);
	pad8(o);
}

uint64_t rvt_capture_slot_count(uint64_t n, uint64_t start_pos, uint64_t end_pos, int wrapped)
{
	if (wrapped)
		return n;
	return end_pos >= start_pos ? end_pos - start_pos : 0;
}

int rvt_capture_encode(const struct rvt_capture_desc *d, uint8_t **outp, size_t *lenp)
{
	if (d->ring_slots == 0 || d->start_pos >= d->ring_slots || d->end_pos > d->ring_slots)
		return -EINVAL;
	int wrapped = (d->flags & RVT_CAP_WRAPPED) != 0;
	uint64_t count = rvt_capture_slot_count(d->ring_slots, d->start_pos, d->end_pos, wrapped);
	struct out o = {0};
	out_reserve(&o, RVT_CAP_HEADER + count * 8 + 4096);
	static const uint8_t magic[8] = {0x52, 0x56, 0x43, 0x41, 0x50, 0x00, 0x0d, 0x0a};
	put(&o, magic, 8);
	put_le(&o, RVT_FORMAT_VERSION, 2);
	put_le(&o, RVT_CAP_HEADER, 2);
	put_le(&o, d->flags | RVT_CAP_CHECKSUMMED, 4);
	put_le(&o, d->ref_counter, 8);
	put_le(&o, d->ref_realtime_ns, 8);
	put_le(&o, d->ref_monotonic_ns, 8);
	put_le(&o, d->counter_hz, 8);
	put_le(&o, d->shift, 1);
	put_le(&o, d->arch, 1);
	put_le(&o, 0, 2);
	put_le(&o, d->pid, 4);
	put_le(&o, d->tid, 4);
	put_le(&o, 0, 4);
	put_le(&o, d->method_base, 8);
	put_le(&o, d->ring_slots, 8);
	put_le(&o, d->start_pos, 8);
	put_le(&o, d->end_pos, 8);
	put_le(&o, count, 8);
	put_le(&o, RVT_CAP_HEADER, 8);
	put_le(&o, RVT_CAP_HEADER + count * 8, 8);
	size_t file_size_at = o.len;
	put_le(&o, 0, 8); /* file_size, patched below */

	/* Slots oldest first: a wrapped ring starts at end_pos. */
	uint64_t first = wrapped ? d->end_pos % d->ring_slots : d->start_pos;
	uint64_t part = d->ring_slots - first < count ? d->ring_slots - first : count;
	put(&o, d->ring + first, part * 8);
	put(&o, d->ring, (count - part) * 8);

	if (d->exe)
		rec_bytes(&o, RVT_REC_EXE, d->exe, strlen(d->exe));
	if (d->cmdline && d->cmdline_len)
		rec_bytes(&o, RVT_REC_CMDLINE, d->cmdline, d->cmdline_len);
	if (d->thread_name && *d->thread_name)
		rec_bytes(&o, RVT_REC_THREAD, d->thread_name, strlen(d->thread_name));
	for (size_t i = 0; i < d->nmodules; i++) {
		const struct rvt_module *m = &d->modules[i];
		size_t pl = m->path ? strlen(m->path) : 0;
		rec_head(&o, RVT_REC_MODULE, (uint32_t)(32 + m->build_id_len + pl));
		put_le(&o, m->index, 4);
		put_le(&o, m->build_id_len, 4);
		put_le(&o, m->load_bias, 8);
		put_le(&o, m->start, 8);
		put_le(&o, m->end, 8);
		put(&o, m->build_id, m->build_id_len);
		put(&o, m->path, pl);
		pad8(&o);
	}
	for (size_t i = 0; i < d->nsymbols; i++) {
		const struct rvt_symbol *s = &d->symbols[i];
		size_t nl = s->name ? strlen(s->name) : 0;
		if (nl > 4096)
			nl = 4096;
		rec_head(&o, RVT_REC_SYMBOL, (uint32_t)(24 + nl));
		put_le(&o, s->value, 8);
		put_le(&o, s->offset, 8);
		put_le(&o, s->module, 4);
		put_le(&o, (uint32_t)nl, 4);
		put(&o, s->name, nl);
		pad8(&o);
	}
	if (d->anomaly) {
		size_t nl = d->anomaly->name ? strlen(d->anomaly->name) : 0;
		if (nl > 4096)
			nl = 4096;
		rec_head(&o, RVT_REC_ANOMALY, (uint32_t)(16 + nl));
		put_le(&o, d->anomaly->kind, 4);
		put_le(&o, d->anomaly->severity, 4);
		put_le(&o, d->anomaly->monotonic_ns, 8);
		put(&o, d->anomaly->name, nl);
		pad8(&o);
	}
	for (size_t i = 0; i < d->nuntraced; i++) {
		const struct rvt_untraced *u = &d->untraced[i];
		size_t pl = strlen(u->path), tl = u->text_len;
		if (pl > 4096)
			pl = 4096;
		if (tl > RVT_UNTRACED_MAX)
			tl = RVT_UNTRACED_MAX;
		rec_head(&o, RVT_REC_UNTRACED, (uint32_t)(8 + pl + tl));
		put_le(&o, u->truncated || tl < u->text_len ? 1 : 0, 4);
		put_le(&o, (uint32_t)pl, 4);
		put(&o, u->path, pl);
		put(&o, u->text, tl);
		pad8(&o);
	}
	for (size_t i = 0; i < d->nmuted; i++) {
		const struct rvt_muted *m = &d->muted[i];
		rec_head(&o, RVT_REC_MUTED, 40);
		put_le(&o, m->value, 8);
		put_le(&o, m->counter, 8);
		put_le(&o, m->monotonic_ns, 8);
		put_le(&o, m->rate, 8);
		put_le(&o, m->median_ns, 4);
		put_le(&o, m->sites, 4);
		unsigned nc = m->ncallers < RVT_MUTED_CALLERS ? m->ncallers : RVT_MUTED_CALLERS;
		if (!nc)
			continue;
		rec_head(&o, RVT_REC_MUTED_CALLERS, 8 + 16 * nc);
		put_le(&o, m->value, 8);
		for (unsigned k = 0; k < nc; k++) {
			put_le(&o, m->caller[k], 8);
			put_le(&o, m->share_ppm[k], 4);
			put_le(&o, 0, 4);
		}
	}
	for (size_t i = 0; i < d->nwaits; i++) {
		const struct rvt_lock_wait *w = &d->waits[i];
		rec_head(&o, RVT_REC_LOCK_WAIT, 56);
		put_le(&o, w->kind, 4);
		put_le(&o, w->flags, 4);
		put_le(&o, w->waiter, 4);
		put_le(&o, w->holder, 4);
		put_le(&o, w->lock, 8);
		put_le(&o, w->waiter_method, 8);
		put_le(&o, w->holder_method, 8);
		put_le(&o, w->start, 8);
		put_le(&o, w->end, 8);
	}
	/* CHECKSUM, then END: the hash covers every byte before the CHECKSUM
	 * record, so it is computed last, after file_size is patched in. */
	size_t checksum_at = o.len;
	rec_head(&o, RVT_REC_CHECKSUM, 16);
	put_le(&o, RVT_CHECKSUM_XXH3_64, 4);
	put_le(&o, 0, 4);
	size_t hash_at = o.len;
	put_le(&o, 0, 8);
	rec_head(&o, RVT_REC_END, 0);
	if (o.err) {
		free(o.p);
		return o.err;
	}
	assert(o.len % 8 == 0 && hash_at + 16 == o.len);
	for (unsigned i = 0; i < 8; i++)
		o.p[file_size_at + i] = (uint8_t)((uint64_t)o.len >> (8 * i));
	uint64_t h = XXH3_64bits(o.p, checksum_at);
	for (unsigned i = 0; i < 8; i++)
		o.p[hash_at + i] = (uint8_t)(h >> (8 * i));
	*outp = o.p;
	*lenp = o.len;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A set of distinct method values: open addressing, linear probing, at most
 * half full; 0 marks an empty bucket (value 0 is kept in has_zero). */
struct valset {
	uint64_t *b;
	size_t cap, n; /* cap a power of two */
	int has_zero;
	uint64_t last; /* the value added last (when n > 0 or has_zero) */
};

static size_t valset_slot(const struct valset *vs, uint64_t v)
{
	uint64_t h = v ^ (v >> 33); /* murmur3's finalizer: method values are dense offsets */

	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	size_t i = (size_t)h & (vs->cap - 1);

	while (vs->b[i] && vs->b[i] != v)
		i = (i + 1) & (vs->cap - 1);
	return i;
}

/* Adds v; 0 or -ENOMEM (the set unchanged).  An entry and its exit carry
 * the same value, and calls repeat: the last value added is checked first. */
static int valset_add(struct valset *vs, uint64_t v)
{
	if (v == vs->last && vs->n)
		return 0;
	vs->last = v;
	if (v == 0) {
		vs->has_zero = 1;
		return 0;
	}
	if (2 * (vs->n + 1) > vs->cap) {
		struct valset g = {calloc(vs->cap * 2, sizeof(uint64_t)), vs->cap * 2, 0,
				   vs->has_zero, vs->last};

		if (!g.b)
			return -ENOMEM;
		for (size_t i = 0; i < vs->cap; i++)
			if (vs->b[i]) {
				g.b[valset_slot(&g, vs->b[i])] = vs->b[i];
				g.n++;
			}
		free(vs->b);
		*vs = g;
	}
	size_t i = valset_slot(vs, v);

	if (!vs->b[i]) {
		vs->b[i] = v;
		vs->n++;
	}
	return 0;
}

/* The set's values, ascending, in a new array of *n; NULL on -ENOMEM. */
static uint64_t *valset_sorted(const struct valset *vs, size_t *n)
{
	uint64_t *out = malloc((vs->n + 1) * sizeof(*out));
	size_t k = 0;

	if (!out)
		return NULL;
	if (vs->has_zero)
		out[k++] = 0;
	for (size_t i = 0; i < vs->cap; i++)
		if (vs->b[i])
			out[k++] = vs->b[i];
	assert(k == vs->n + (size_t)vs->has_zero);
	qsort(out, k, sizeof(*out), cmp_u64);
	*n = k;
	return out;
}

/* Reads a whole small /proc file into a heap buffer. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);
	while (b) {
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			if (cap >= (1u << 20))
				break;
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
	}
	close(fd);
	*len = n;
	return b;
}

int rvt_capture_build(const struct rvt_frozen *f, uint8_t **out, size_t *len)
{
	const struct rvt_ring *r = f->ring;
	struct rvt_capture_desc d;
	memset(&d, 0, sizeof(d));
	d.flags = r->wrapped ? RVT_CAP_WRAPPED : 0;
	d.ref_counter = f->ref_counter;
	d.ref_realtime_ns = f->ref_realtime_ns;
	d.ref_monotonic_ns = f->ref_monotonic_ns;
	d.counter_hz = rvt_clock_hz();
	d.shift = (uint8_t)rvt_clock.shift;
	d.arch = rvt_clock.arch;
	d.pid = (uint32_t)f->pid;
	d.tid = (uint32_t)f->tid;
	d.method_base = rvt_method_base;
	d.ring_slots = r->nslots;
	d.end_pos = r->end_pos;
	d.start_pos = r->wrapped ? r->end_pos % r->nslots : 0;
	d.ring = r->slots;
	d.thread_name = f->thread_name;
	d.anomaly = f->anomaly;
	d.waits = f->waits;
	d.nwaits = f->nwaits;

	/* The distinct method values, decoding backwards (FORMAT.md §1). */
	uint64_t count = rvt_capture_slot_count(r->nslots, d.start_pos, d.end_pos, r->wrapped);
	uint64_t first = r->wrapped ? r->end_pos % r->nslots : 0;
	/* Muted functions (and their callers) are named even when their calls
	 * left the ring. */
	struct rvt_muted muted[RVT_MUTED_MAX];
	d.muted = muted;
	d.nmuted = rvt_mute_list(muted, RVT_MUTED_MAX);
	d.nuntraced = rvt_untraced_sections(&d.untraced);
	struct valset vs = {calloc(1024, sizeof(uint64_t)), 1024, 0, 0, 0};
	int rc = vs.b ? 0 : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < d.nmuted; i++) {
		rc = valset_add(&vs, muted[i].value);
		for (unsigned k = 0; rc == 0 && k < muted[i].ncallers && k < RVT_MUTED_CALLERS; k++)
			rc = valset_add(&vs, muted[i].caller[k]);
	}
	for (uint64_t i = count; rc == 0 && i-- > 0;) {
		uint64_t s = r->slots[(first + i) % r->nslots];
		uint32_t low = (uint32_t)s;
		if (low == 0)
			continue;
		if (low <= RVT_SLOT_MARKER_MAX) { /* two slots: a marker and its value */
			if (i == 0)
				break; /* its first half was overwritten */
			i--;
			/* Entries, the frames a STACK lists, the frames an EXIT_OF
			 * names: method values (FORMAT.md §1). */
			if (low == RVT_SLOT_PAIR || low == RVT_SLOT_FRAME ||
			    low == RVT_SLOT_EXIT_OF)
				rc = valset_add(&vs, r->slots[(first + i) % r->nslots]);
		} else {
			rc = valset_add(&vs, low);
		}
	}
	for (size_t i = 0; rc == 0 && i < f->nwaits; i++) { /* the holders' methods too */
		if (f->waits[i].flags & RVT_LOCK_HOLDER_METHOD)
			rc = valset_add(&vs, f->waits[i].holder_method);
		if (rc == 0 && (f->waits[i].flags & RVT_LOCK_WAITER_METHOD))
			rc = valset_add(&vs, f->waits[i].waiter_method);
	}
	size_t u = 0;
	uint64_t *vals = rc == 0 ? valset_sorted(&vs, &u) : NULL;
	free(vs.b);
	if (!vals)
		return -ENOMEM;

	struct rvt_symtab st;
	rc = rvt_symtab_build(&st, vals, u, rvt_method_base);
	free(vals);
	if (rc)
		return rc;
	d.modules = st.modules;
	d.nmodules = st.nmodules;
	d.symbols = st.symbols;
	d.nsymbols = st.nsymbols;

	char exe[4096];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = '\0';
	d.exe = exe;
	size_t cl = 0;
	char *cmd = slurp("/proc/self/cmdline", &cl);
	d.cmdline = cmd;
	d.cmdline_len = cmd ? cl : 0;
	rc = rvt_capture_encode(&d, out, len);
	free(cmd);
	rvt_symtab_release(&st);
	return rc;
}
