/*
 * capture.c — decoder of Rearview capture files (tracer/FORMAT.md §2) into
 * the model.
 *
 * Two passes over the slots, neither allocating per slot:
 *  1. backwards from the newest slot (the only unambiguous direction): mark
 *     which slots are the first half of a two-slot entry (a bitmap, 1 bit per
 *     slot), reconstruct the counter's high word at the oldest slot
 *     (Hubble Fig. 3), and count the frames already open at the oldest slot
 *     (exits with no entry);
 *  2. forwards: push that many "(unknown caller)" frames starting at the
 *     oldest timestamp, then replay entries and exits with timestamps rebuilt
 *     forwards (a decrease is a wrap), which is the same arithmetic as the
 *     backward walk.  Frames still open end at the reference time.
 * Every header field and record is range-checked before use.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

#define HDR_MIN	    128u
#define MAX_STRINGS (16u * 1024u * 1024u)
#define MAX_STRING  (64u * 1024u)
#define MAX_SYMNAME 4096u
#define MAX_MODULES 4096u

enum { REC_EXE = 1, REC_CMDLINE, REC_THREAD, REC_MODULE, REC_SYMBOL, REC_ANOMALY, REC_APP };

typedef struct module {
	uint32_t index;
	uint64_t start, end;
	const char *path;
	size_t path_len;
} module;

typedef struct symbol {
	uint64_t value;
	uint32_t method; /* interned id */
} symbol;

static int fail(rva_error *err, int rc, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return rc;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int cmp_sym(const void *a, const void *b)
{
	const symbol *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
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
	uint32_t *cache_v; /* last looked-up value → id, a tiny direct-mapped cache */
	uint64_t cache_k[256];
	uint32_t cache_id[256];
} ctx;

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
static int64_t method_of(ctx *c, uint64_t v)
{
	size_t h = (size_t)((v * 0x9e3779b97f4a7c15ull) >> 56);
	if (c->cache_k[h] == v && c->cache_id[h] != UINT32_MAX)
		return c->cache_id[h];
	symbol key = {.value = v};
	symbol *s = c->nsyms ? bsearch(&key, c->syms, c->nsyms, sizeof(key), cmp_sym) : NULL;
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
				break;
			}
		}
		if (n < 0)
			n = snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
		id = rva_method_intern(c->t, buf, (size_t)n);
		if (id < 0)
			return id;
	}
	c->cache_k[h] = v;
	c->cache_id[h] = (uint32_t)id;
	return id;
}

static int parse_records(ctx *c, const uint8_t *buf, uint64_t off, uint64_t end, rva_error *err,
			 uint64_t *anomaly_mono)
{
	uint64_t strings = 0;
	size_t symcap = 0, modcap = 0;
	int saw_end = 0;
	while (off < end) {
		if (end - off < 8)
			return fail(err, -EINVAL, "record header at %llu runs past the end",
				    (unsigned long long)off);
		const uint8_t *r = buf + off;
		uint16_t type = rd16(r);
		uint32_t len = rd32(r + 4);
		uint64_t padded = ((uint64_t)len + 7) & ~7ull;
		if (padded > end - off - 8)
			return fail(err, -EINVAL, "record type %u at %llu runs past the end", type,
				    (unsigned long long)off);
		const uint8_t *v = r + 8;
		off += 8 + padded;
		if (type == 0xffff) {
			if (off != end)
				return fail(err, -EINVAL, "END record is not last");
			saw_end = 1;
			break;
		}
		if (type == REC_SYMBOL) {
			if (len < 24)
				return fail(err, -EINVAL, "short SYMBOL record");
			uint32_t nl = rd32(v + 20);
			if (nl > MAX_SYMNAME || nl > len - 24)
				return fail(err, -E2BIG, "SYMBOL name too long");
			strings += nl;
			if (strings > MAX_STRINGS)
				return fail(err, -E2BIG, "more than 16 MiB of strings");
			if (nl == 0)
				continue; /* shown as module+0xoffset */
			if (c->nsyms == symcap) {
				size_t n = symcap ? symcap * 2 : 64;
				symbol *s = realloc(c->syms, n * sizeof(*s));
				if (!s)
					return fail(err, -ENOMEM, "out of memory");
				c->syms = s;
				symcap = n;
			}
			int64_t id = rva_method_intern(c->t, (const char *)v + 24, nl);
			if (id < 0)
				return fail(err, (int)id, "cannot intern symbol");
			c->syms[c->nsyms].value = rd64(v);
			c->syms[c->nsyms].method = (uint32_t)id;
			c->nsyms++;
			continue;
		}
		if (len > MAX_STRING + 64)
			return fail(err, -E2BIG, "record type %u too long (%u bytes)", type, len);
		strings += len;
		if (strings > MAX_STRINGS)
			return fail(err, -E2BIG, "more than 16 MiB of strings");
		if (type == REC_THREAD) {
			free(c->t->threads[0].name);
			c->t->threads[0].name = strndup((const char *)v, len);
			if (!c->t->threads[0].name)
				return fail(err, -ENOMEM, "out of memory");
		} else if (type == REC_MODULE) {
			if (len < 32)
				return fail(err, -EINVAL, "short MODULE record");
			uint32_t bl = rd32(v + 4);
			if (bl > len - 32)
				return fail(err, -EINVAL, "MODULE build id past the record");
			if (c->nmods >= MAX_MODULES)
				return fail(err, -E2BIG, "too many modules");
			if (c->nmods == modcap) {
				size_t n = modcap ? modcap * 2 : 16;
				module *m = realloc(c->mods, n * sizeof(*m));
				if (!m)
					return fail(err, -ENOMEM, "out of memory");
				c->mods = m;
				modcap = n;
			}
			module *m = &c->mods[c->nmods++];
			m->index = rd32(v);
			m->start = rd64(v + 16);
			m->end = rd64(v + 24);
			m->path = (const char *)v + 32 + bl;
			m->path_len = len - 32 - bl;
		} else if (type == REC_ANOMALY) {
			if (len < 16)
				return fail(err, -EINVAL, "short ANOMALY record");
			c->t->has_anomaly = 1;
			*anomaly_mono = rd64(v + 8);
			free(c->t->anomaly_name);
			c->t->anomaly_name = strndup((const char *)v + 16, len - 16);
			if (!c->t->anomaly_name)
				return fail(err, -ENOMEM, "out of memory");
		}
	}
	if (!saw_end)
		return fail(err, -EINVAL, "no END record");
	if (c->nsyms)
		qsort(c->syms, c->nsyms, sizeof(*c->syms), cmp_sym);
	return 0;
}

/* Converts a full shifted counter value to monotonic ns. */
typedef struct clockconv {
	uint64_t ref;
	uint64_t hz;
	unsigned shift;
	int64_t mono;
} clockconv;

static int64_t to_ns(const clockconv *k, uint64_t full)
{
	/* (full << shift) − ref, in ticks; may be negative. */
	__int128 ticks = ((__int128)full << k->shift) - (__int128)k->ref;
	__int128 ns = ticks * 1000000000 / (__int128)k->hz;
	return k->mono + (int64_t)ns;
}

static int decode_slots(ctx *c, const clockconv *k, rva_error *err)
{
	uint64_t n = c->nslots, first = 0;
	uint8_t *two = calloc((size_t)(n / 8 + 1), 1);
	if (!two)
		return fail(err, -ENOMEM, "out of memory");
	uint64_t shifted = k->ref >> k->shift;
	uint64_t hi = shifted >> 32;
	uint32_t prev = (uint32_t)shifted;
	uint64_t open = 0; /* frames open at the oldest slot */
	uint64_t oldest_hi = hi;
	uint32_t oldest_t = prev;
	int any = 0;
	/* Pass 1, backwards. */
	for (uint64_t i = n; i-- > 0;) {
		uint64_t s = rd64(c->slots + 8 * i);
		uint32_t lo = (uint32_t)s, ts = (uint32_t)(s >> 32);
		if (lo == 1) {
			if (i == 0) {
				/* Torn: its value slot was overwritten. */
				c->t->dropped++;
				first = 1;
				break;
			}
			two[(i - 1) / 8] |= (uint8_t)(1u << ((i - 1) % 8));
		}
		if (ts > prev)
			hi--;
		prev = ts;
		oldest_hi = hi;
		oldest_t = ts;
		any = 1;
		if (lo == 0) {
			open++;
		} else if (open) {
			open--;
		}
		if (lo == 1)
			i--; /* skip the value slot */
	}
	int64_t oldest_ns = any ? to_ns(k, oldest_hi << 32 | oldest_t) : k->mono;
	int rc = 0;
	if (open) {
		int64_t unk = rva_method_intern(c->t, "(unknown caller)", 16);
		if (unk < 0) {
			rc = fail(err, (int)unk, "out of memory");
			goto out_free;
		}
		for (uint64_t j = 0; j < open; j++)
			if ((rc = rva_enter(c->t, 0, (uint32_t)unk, oldest_ns)) < 0) {
				rc = fail(err, rc, "cannot open frame");
				goto out_free;
			}
	}
	/* Pass 2, forwards. */
	hi = oldest_hi;
	prev = oldest_t;
	for (uint64_t i = first; i < n; i++) {
		uint64_t value;
		uint64_t s = rd64(c->slots + 8 * i);
		if (two[i / 8] & (1u << (i % 8))) {
			value = s;
			s = rd64(c->slots + 8 * ++i);
		} else {
			value = (uint32_t)s;
		}
		uint32_t lo = (uint32_t)s, ts = (uint32_t)(s >> 32);
		if (ts < prev)
			hi++;
		prev = ts;
		int64_t ns = to_ns(k, hi << 32 | ts);
		if (lo == 0) {
			rc = rva_exit(c->t, 0, RVA_ANY_METHOD, ns);
		} else {
			int64_t m = method_of(c, value);
			rc = m < 0 ? (int)m : rva_enter(c->t, 0, (uint32_t)m, ns);
		}
		if (rc < 0) {
			rc = fail(err, rc, "slot %llu: cannot record the event",
				  (unsigned long long)i);
			goto out_free;
		}
	}
out_free:
	free(two);
	return rc;
}

int rva_capture_decode(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	static const uint8_t magic[8] = {'R', 'V', 'C', 'A', 'P', 0, '\r', '\n'};
	*out = NULL;
	if (len < HDR_MIN)
		return fail(err, -EINVAL, "capture shorter than its 128-byte header (%zu bytes)",
			    len);
	if (memcmp(buf, magic, 8) != 0)
		return fail(err, -EINVAL, "not a Rearview capture (bad magic)");
	if (rd16(buf + 8) != 1)
		return fail(err, -EPROTONOSUPPORT, "capture version %u not supported",
			    rd16(buf + 8));
	uint16_t hsize = rd16(buf + 10);
	clockconv k = {.ref = rd64(buf + 16),
		       .hz = rd64(buf + 40),
		       .shift = buf[48],
		       .mono = (int64_t)rd64(buf + 32)};
	uint64_t ring = rd64(buf + 72), count = rd64(buf + 96);
	uint64_t soff = rd64(buf + 104), moff = rd64(buf + 112), fsize = rd64(buf + 120);
	if (hsize < HDR_MIN)
		return fail(err, -EINVAL, "header_size %u < 128", hsize);
	if (k.shift > 31 || k.hz == 0 || k.hz > 100000000000ull)
		return fail(err, -EINVAL, "bad clock (shift %u, %llu Hz)", k.shift,
			    (unsigned long long)k.hz);
	if (soff % 8 || soff < hsize || ring > (1ull << 32) || count > ring)
		return fail(err, -EINVAL, "bad slot geometry");
	if (fsize > len)
		return fail(err, -EINVAL, "truncated capture: %zu of %llu bytes", len,
			    (unsigned long long)fsize);
	if (fsize < len)
		len = (size_t)fsize;
	if (soff > len || count > (len - soff) / 8 || moff != soff + 8 * count || moff > len)
		return fail(err, -EINVAL, "slots or records outside the file");
	if (k.mono > INT64_MAX / 2)
		return fail(err, -EINVAL, "reference time out of range");

	ctx c = {.slots = buf + soff, .nslots = count, .base = rd64(buf + 64)};
	memset(c.cache_id, 0xff, sizeof(c.cache_id));
	int rc = -ENOMEM;
	c.t = rva_trace_new();
	if (!c.t)
		return fail(err, -ENOMEM, "out of memory");
	c.t->format = "rearview-capture";
	if (rva_thread_add(c.t, rd32(buf + 52), rd32(buf + 56), NULL) < 0) {
		fail(err, rc, "out of memory");
		goto out_free;
	}
	uint64_t anomaly_mono = 0;
	if ((rc = parse_records(&c, buf, moff, len, err, &anomaly_mono)) < 0)
		goto out_free;
	if ((rc = decode_slots(&c, &k, err)) < 0)
		goto out_free;
	c.t->anomaly_ns = (int64_t)anomaly_mono;
	rva_trace_finish(c.t, k.mono);
	*out = c.t;
	c.t = NULL;
	rc = 0;
out_free:
	free(c.mods);
	free(c.syms);
	rva_trace_free(c.t);
	return rc;
}
