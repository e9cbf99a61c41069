/* SPDX-License-Identifier: Apache-2.0 */
/*
 * android.c — importer of Android method traces ("dmtrace", .trace):
 * Dalvik/ART versions 1–3 (key section + binary data) and ART streaming
 * (0xF2/0xF3), following ../shared/testdata/SOURCES.md §7.1–7.2.
 *
 * Two phases: parse everything into a flat record array and id tables,
 * then replay each thread into the model.  Per thread, a pre-scan finds the
 * exits of frames entered before tracing began (no matching enter) and
 * opens them at the thread's first timestamp, outermost first, so the
 * replay pairs every exit; a later exit of an open method closes the frames
 * above it at the same time (AndroScope's dummy exits).  Unwind exits
 * (action 2) are exits.  Record times are 32-bit µs, unwrapped per thread.
 * Limits: the data header's offset and record size are checked against the
 * file; every packet length against what remains.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"
#include "analysis-int.h"

#define MAGIC 0x574f4c53u

typedef struct rec {
	uint32_t tid;
	uint32_t mid; /* method word & ~3 */
	uint32_t action;
	uint32_t time; /* µs, 32-bit: wall when there are two clocks */
	uint32_t cpu;  /* thread-CPU µs, 32-bit, when actx.cpu */
	uint32_t seq;
} rec;

typedef struct idname {
	uint32_t id;
	uint32_t method;
} idname;

typedef struct tname {
	uint32_t tid;
	char *name;
} tname;

typedef struct actx {
	rva_trace *t;
	rec *recs;
	size_t nrecs, rcap;
	idname *ids;
	size_t nids, icap;
	tname *thr;
	size_t nthr, tcap;
	int dual;
	int cpu; /* records carry thread-CPU time too (dual clock) */
	int version;
} actx;

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int add_thread(actx *a, uint32_t tid, const char *name, size_t len)
{
	for (size_t i = 0; i < a->nthr; i++)
		if (a->thr[i].tid == tid)
			return 0; /* first definition wins; names may repeat */
	if (a->nthr == a->tcap) {
		size_t n = a->tcap ? a->tcap * 2 : 16;
		if (n > 65536 * 4)
			return -E2BIG;
		tname *v = realloc(a->thr, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->thr = v;
		a->tcap = n;
	}
	if (len > 4096)
		len = 4096;
	char *s = strndup(name, len);
	if (!s)
		return -ENOMEM;
	a->thr[a->nthr].tid = tid;
	a->thr[a->nthr].name = s;
	a->nthr++;
	return 0;
}

/* "<id>\t<class>\t<name>\t<sig>[\t<file>[\t<line>]]" */
static int add_method_line(actx *a, const char *l, size_t n)
{
	const char *f[4];
	size_t fl[4], k = 0;
	const char *p = l, *end = l + n;
	while (k < 4 && p <= end) {
		const char *tab = memchr(p, '\t', (size_t)(end - p));
		const char *e = tab ? tab : end;
		f[k] = p;
		fl[k] = (size_t)(e - p);
		k++;
		if (!tab)
			break;
		p = tab + 1;
	}
	if (k < 2 || fl[0] == 0 || fl[0] > 20)
		return 1; /* malformed: skipped */
	char idbuf[24];
	memcpy(idbuf, f[0], fl[0]);
	idbuf[fl[0]] = '\0';
	char *e;
	unsigned long long id;
	if (strcmp(idbuf, "(nil)") == 0) {
		id = 0;
	} else {
		errno = 0;
		id = strtoull(idbuf, &e, 16);
		if (errno || *e)
			return 1;
	}
	char buf[1024];
	size_t o = 0;
	for (size_t i = 0; i < fl[1] && o + 1 < sizeof(buf); i++)
		buf[o++] = f[1][i] == '/' ? '.' : f[1][i];
	if (k >= 3) {
		int r = snprintf(buf + o, sizeof(buf) - o, "%s%.*s%.*s", o ? "." : "", (int)fl[2],
				 f[2], k >= 4 ? (int)fl[3] : 0, k >= 4 ? f[3] : "");
		if (r > 0)
			o += (size_t)r < sizeof(buf) - o ? (size_t)r : sizeof(buf) - o - 1;
	}
	int64_t m = rva_method_intern(a->t, buf, o);
	if (m < 0)
		return (int)m;
	if (a->nids == a->icap) {
		size_t nc = a->icap ? a->icap * 2 : 64;
		idname *v = realloc(a->ids, nc * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->ids = v;
		a->icap = nc;
	}
	a->ids[a->nids].id = (uint32_t)id & ~3u;
	a->ids[a->nids].method = (uint32_t)m;
	a->nids++;
	return 0;
}

/* Parses a key section; returns the offset just past "*end\n", or len when
 * there is no *end (a summary), or a negative errno. */
static int64_t parse_keys(actx *a, const uint8_t *buf, size_t len, int need_end)
{
	enum { NONE, VERSION, THREADS, METHODS } sec = NONE;
	size_t pos = 0;
	int version_next = 0;
	while (pos < len) {
		const uint8_t *nl = memchr(buf + pos, '\n', len - pos);
		if (!nl)
			return need_end ? -EINVAL : (int64_t)len;
		const char *l = (const char *)buf + pos;
		size_t n = (size_t)(nl - (buf + pos));
		pos += n + 1;
		if (n && l[n - 1] == '\r')
			n--;
		if (n && l[0] == '*') {
			if (n == 4 && memcmp(l, "*end", 4) == 0)
				return (int64_t)pos;
			sec = n == 8 && memcmp(l, "*version", 8) == 0	? VERSION
			      : n == 8 && memcmp(l, "*threads", 8) == 0 ? THREADS
			      : n == 8 && memcmp(l, "*methods", 8) == 0 ? METHODS
									: NONE;
			version_next = sec == VERSION;
			continue;
		}
		if (sec == VERSION) {
			if (version_next) {
				a->version = n && l[0] >= '0' && l[0] <= '9' ? l[0] - '0' : 0;
				version_next = 0;
			} else if (n >= 6 && memcmp(l, "clock=", 6) == 0) {
				a->dual = n == 10 && memcmp(l + 6, "dual", 4) == 0;
			}
		} else if (sec == THREADS) {
			const char *tab = memchr(l, '\t', n);
			if (!tab || tab == l || tab - l > 10)
				continue;
			char idb[12];
			memcpy(idb, l, (size_t)(tab - l));
			idb[tab - l] = '\0';
			char *e;
			errno = 0;
			unsigned long tid = strtoul(idb, &e, 10);
			if (errno || *e || tid > UINT32_MAX)
				continue;
			int rc = add_thread(a, (uint32_t)tid, tab + 1, n - (size_t)(tab + 1 - l));
			if (rc < 0)
				return rc;
		} else if (sec == METHODS) {
			int rc = add_method_line(a, l, n);
			if (rc < 0)
				return rc;
		}
	}
	return need_end ? -EINVAL : (int64_t)len;
}

static int add_rec(actx *a, uint32_t tid, uint32_t word, uint32_t time, uint32_t cpu)
{
	if (a->nrecs == a->rcap) {
		size_t n = a->rcap ? a->rcap * 2 : 1024;
		rec *v = realloc(a->recs, n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->recs = v;
		a->rcap = n;
	}
	if (a->nrecs >= UINT32_MAX)
		return -E2BIG;
	rec *r = &a->recs[a->nrecs];
	r->tid = tid;
	r->mid = word & ~3u;
	r->action = word & 3u;
	r->time = time;
	r->cpu = cpu;
	r->seq = (uint32_t)a->nrecs;
	a->nrecs++;
	return 0;
}

static int cmp_id(const void *x, const void *y)
{
	const idname *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_rec(const void *x, const void *y)
{
	const rec *a = x, *b = y;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int64_t method_for(actx *a, uint32_t id)
{
	idname key = {.id = id};
	idname *f = a->nids ? bsearch(&key, a->ids, a->nids, sizeof(key), cmp_id) : NULL;
	if (f)
		return f->method;
	char buf[40];
	int n = snprintf(buf, sizeof(buf), "unknown-method-0x%x", id);
	return rva_method_intern(a->t, buf, (size_t)n);
}

/* Replays thread records r[0..n) into the model. */
static int replay(actx *a, const rec *r, size_t n)
{
	const char *name = NULL;
	for (size_t i = 0; i < a->nthr; i++)
		if (a->thr[i].tid == r[0].tid)
			name = a->thr[i].name;
	int64_t th = rva_thread_add(a->t, 0, r[0].tid, name);
	if (th < 0)
		return (int)th;
	/* Pre-scan: exits with no open enter belong to frames entered before
	 * tracing; list them innermost first. */
	uint32_t *st = malloc((n + 1) * sizeof(*st)), *pre = malloc((n + 1) * sizeof(*pre));
	int64_t *ts = malloc((n + 1) * sizeof(*ts));
	int64_t *cpu = a->cpu ? malloc((n + 1) * sizeof(*cpu)) : NULL;
	size_t sn = 0, pn = 0;
	int rc = -ENOMEM;
	if (!st || !pre || !ts || (a->cpu && !cpu))
		goto out_free;
	uint64_t hi = 0, chi = 0;
	for (size_t i = 0; i < n; i++) {
		/* A 32-bit µs clock wrapped when it falls by more than half. */
		if (i && r[i].time < r[i - 1].time && r[i - 1].time - r[i].time > 0x80000000u)
			hi += 1ull << 32;
		ts[i] = (int64_t)(hi + r[i].time) * 1000;
		if (cpu) {
			if (i && r[i].cpu < r[i - 1].cpu && r[i - 1].cpu - r[i].cpu > 0x80000000u)
				chi += 1ull << 32;
			cpu[i] = (int64_t)(chi + r[i].cpu) * 1000;
		}
		if (r[i].action == 0) {
			st[sn++] = r[i].mid;
			continue;
		}
		size_t k = sn;
		while (k > 0 && st[k - 1] != r[i].mid)
			k--;
		if (k) {
			sn = k - 1;
		} else {
			pre[pn++] = r[i].mid;
			sn = 0;
		}
	}
	for (size_t k = pn; k-- > 0;) {
		int64_t m = method_for(a, pre[k]);
		if (m < 0 || (rc = cpu ? rva_enter_cpu(a->t, (size_t)th, (uint32_t)m, ts[0], cpu[0])
				       : rva_enter(a->t, (size_t)th, (uint32_t)m, ts[0])) < 0) {
			rc = m < 0 ? (int)m : rc;
			goto out_free;
		}
	}
	for (size_t i = 0; i < n; i++) {
		int64_t m = method_for(a, r[i].mid);
		if (m < 0) {
			rc = (int)m;
			goto out_free;
		}
		if (cpu)
			rc = r[i].action == 0
				     ? rva_enter_cpu(a->t, (size_t)th, (uint32_t)m, ts[i], cpu[i])
				     : rva_exit_cpu(a->t, (size_t)th, (uint32_t)m, ts[i], cpu[i]);
		else
			rc = r[i].action == 0 ? rva_enter(a->t, (size_t)th, (uint32_t)m, ts[i])
					      : rva_exit(a->t, (size_t)th, (uint32_t)m, ts[i]);
		if (rc < 0)
			goto out_free;
	}
	rc = 0;
out_free:
	free(st);
	free(pre);
	free(ts);
	free(cpu);
	return rc;
}

static int finish(actx *a)
{
	if (a->nids)
		qsort(a->ids, a->nids, sizeof(*a->ids), cmp_id);
	if (a->nrecs)
		qsort(a->recs, a->nrecs, sizeof(*a->recs), cmp_rec);
	for (size_t i = 0; i < a->nrecs;) {
		size_t j = i;
		while (j < a->nrecs && a->recs[j].tid == a->recs[i].tid)
			j++;
		int rc = replay(a, a->recs + i, j - i);
		if (rc < 0)
			return rc;
		i = j;
	}
	/* Listed threads with no records still show up in info. */
	for (size_t i = 0; i < a->nthr; i++) {
		int found = 0;
		for (size_t k = 0; k < a->t->nthreads && !found; k++)
			found = a->t->threads[k].tid == a->thr[i].tid;
		if (!found && rva_thread_add(a->t, 0, a->thr[i].tid, a->thr[i].name) < 0)
			return -ENOMEM;
	}
	rva_trace_finish(a->t, INT64_MIN);
	return 0;
}

static void actx_release(actx *a)
{
	free(a->recs);
	free(a->ids);
	for (size_t i = 0; i < a->nthr; i++)
		free(a->thr[i].name);
	free(a->thr);
}

static int record_layout(int version, int dual, size_t recsize, rva_error *err)
{
	size_t need = version == 1 ? 9 : version == 2 ? 10 : dual ? 14 : 10;
	if (recsize < need || recsize > 64)
		return rva_fail(err, -EINVAL, "record size %zu invalid for version %d", recsize,
				version);
	return 0;
}

static int parse_record(actx *a, const uint8_t *p, int version, int dual)
{
	if (version == 1)
		return add_rec(a, p[0], rd32(p + 1), rd32(p + 5), 0);
	/* v3 dual: thread-CPU then wall; wall is the timeline (comparable
	 * across threads), thread-CPU the CPU time of each call. */
	if (version >= 3 && dual) {
		a->cpu = 1;
		return add_rec(a, rd16(p), rd32(p + 2), rd32(p + 10), rd32(p + 6));
	}
	return add_rec(a, rd16(p), rd32(p + 2), rd32(p + 6), 0);
}

static int import_plain(actx *a, const uint8_t *buf, size_t len, rva_error *err)
{
	int64_t off = parse_keys(a, buf, len, 1);
	if (off < 0)
		return rva_fail(err, (int)off, "Android trace: bad key section");
	const uint8_t *d = buf + off;
	size_t dl = len - (size_t)off;
	if (dl < 16 || rd32(d) != MAGIC || rd16(d + 4) < 1 || rd16(d + 4) > 3 || rd16(d + 6) < 16 ||
	    rd16(d + 6) > dl) {
		/* A key section with no readable data (header.trace). */
		a->t->dropped++;
		return 0;
	}
	int version = rd16(d + 4);
	size_t first = rd16(d + 6);
	size_t recsize = version == 1 ? 9 : version == 2 ? 10 : (first >= 18 ? rd16(d + 16) : 0);
	a->dual = version >= 3 && recsize >= 14;
	int rc = record_layout(version, a->dual, recsize, err);
	if (rc < 0)
		return rc;
	size_t pos = first;
	for (; pos + recsize <= dl; pos += recsize)
		if ((rc = parse_record(a, d + pos, version, a->dual)) < 0)
			return rva_fail(err, rc, "out of memory");
	if (pos != dl)
		a->t->dropped++; /* a torn last record */
	return 0;
}

static int import_streaming(actx *a, const uint8_t *buf, size_t len, rva_error *err)
{
	if (len < 18)
		return rva_fail(err, -EINVAL, "streaming trace header truncated");
	int dual = (buf[4] & 0x0f) == 3;
	size_t first = rd16(buf + 6), recsize = rd16(buf + 16);
	if (first < 18 || first > len)
		return rva_fail(err, -EINVAL, "bad data offset %zu", first);
	int rc = record_layout(3, dual, recsize, err);
	if (rc < 0)
		return rc;
	size_t pos = first;
	while (pos + 2 <= len) {
		uint16_t tid = rd16(buf + pos);
		if (tid) {
			if (recsize > len - pos)
				break;
			if ((rc = parse_record(a, buf + pos, 3, dual)) < 0)
				return rva_fail(err, rc, "out of memory");
			pos += recsize;
			continue;
		}
		if (pos + 3 > len)
			break;
		uint8_t op = buf[pos + 2];
		pos += 3;
		if (op == 1) {
			if (pos + 2 > len || rd16(buf + pos) > len - pos - 2)
				break;
			size_t n = rd16(buf + pos);
			const char *l = (const char *)buf + pos + 2;
			pos += 2 + n;
			if (n && l[n - 1] == '\n')
				n--;
			if ((rc = add_method_line(a, l, n)) < 0)
				return rva_fail(err, rc, "method table rejected");
		} else if (op == 2) {
			if (pos + 4 > len || rd16(buf + pos + 2) > len - pos - 4)
				break;
			size_t n = rd16(buf + pos + 2);
			if ((rc = add_thread(a, rd16(buf + pos), (const char *)buf + pos + 4, n)) <
			    0)
				return rva_fail(err, rc, "thread table rejected");
			pos += 4 + n;
		} else if (op == 3) {
			if (pos + 4 > len || rd32(buf + pos) > len - pos - 4)
				break;
			size_t n = rd32(buf + pos);
			int64_t r = parse_keys(a, buf + pos + 4, n, 0);
			if (r < 0)
				return rva_fail(err, (int)r, "summary rejected");
			pos += 4 + n;
			break; /* nothing follows the summary */
		} else {
			return rva_fail(err, -EINVAL, "unknown streaming opcode %u at %zu", op,
					pos - 1);
		}
	}
	if (pos < len && pos + 2 <= len)
		a->t->dropped++; /* truncated item */
	return 0;
}

int rva_android_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	actx a = {0};
	*out = NULL;
	a.t = rva_trace_new();
	if (!a.t)
		return rva_fail(err, -ENOMEM, "out of memory");
	a.t->format = "android-trace";
	int rc;
	if (len >= 6 && rd32(buf) == MAGIC && (buf[4] & 0xf0) == 0xf0) {
		a.t->format = "android-trace-streaming";
		rc = import_streaming(&a, buf, len, err);
	} else if (len >= 6 && rd32(buf) == MAGIC) {
		/* Data section with no key section: ids stay unresolved. */
		static const char keys[] = "*version\n3\n*end\n";
		uint8_t *copy = malloc(sizeof(keys) - 1 + len);
		if (!copy) {
			rc = rva_fail(err, -ENOMEM, "out of memory");
		} else {
			memcpy(copy, keys, sizeof(keys) - 1);
			memcpy(copy + sizeof(keys) - 1, buf, len);
			rc = import_plain(&a, copy, sizeof(keys) - 1 + len, err);
			free(copy);
		}
	} else {
		rc = import_plain(&a, buf, len, err);
	}
	if (rc == 0 && (rc = finish(&a)) < 0)
		rva_fail(err, rc, "cannot build the model");
	actx_release(&a);
	if (rc < 0) {
		rva_trace_free(a.t);
		return rc;
	}
	*out = a.t;
	return 0;
}
