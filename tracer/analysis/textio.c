/* SPDX-License-Identifier: Apache-2.0 */
/*
 * textio.c — text importers and exporters (folded stacks, Nanoscope text,
 * Chrome Trace Event JSON export), format detection and file loading.
 *
 * Importers treat input as untrusted: lines are bounded by the input, frame
 * names by rva_method_intern's 64 KiB limit, stack depth by the model's
 * limit; malformed lines are skipped and counted in t->dropped.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rearview/analysis.h"
#include "rearview/common.h"
#include "analysis-int.h"

#define MAX_FILE (1024ull * 1024 * 1024)

/* UTF-16 (with BOM) to UTF-8; surrogate pairs combined, lone ones → U+FFFD. */
static uint8_t *utf16_to_utf8(const uint8_t *b, size_t len, int be, size_t *outlen)
{
	size_t n = len / 2;
	uint8_t *o = malloc(n * 3 + 1);
	size_t k = 0;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uint32_t u = be ? (uint32_t)(b[2 * i] << 8 | b[2 * i + 1])
				: (uint32_t)(b[2 * i] | b[2 * i + 1] << 8);
		if (u >= 0xd800 && u < 0xdc00 && i + 1 < n) {
			uint32_t l = be ? (uint32_t)(b[2 * i + 2] << 8 | b[2 * i + 3])
					: (uint32_t)(b[2 * i + 2] | b[2 * i + 3] << 8);
			if (l >= 0xdc00 && l < 0xe000) {
				u = 0x10000 + ((u - 0xd800) << 10) + (l - 0xdc00);
				i++;
			} else {
				u = 0xfffd;
			}
		} else if (u >= 0xd800 && u < 0xe000) {
			u = 0xfffd;
		}
		if (u < 0x80) {
			o[k++] = (uint8_t)u;
		} else if (u < 0x800) {
			o[k++] = (uint8_t)(0xc0 | u >> 6);
			o[k++] = (uint8_t)(0x80 | (u & 0x3f));
		} else if (u < 0x10000) {
			o[k++] = (uint8_t)(0xe0 | u >> 12);
			o[k++] = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
			o[k++] = (uint8_t)(0x80 | (u & 0x3f));
		} else {
			/* 4 bytes from 2 units: fits the 3-bytes-per-unit budget. */
			o[k++] = (uint8_t)(0xf0 | u >> 18);
			o[k++] = (uint8_t)(0x80 | ((u >> 12) & 0x3f));
			o[k++] = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
			o[k++] = (uint8_t)(0x80 | (u & 0x3f));
		}
	}
	*outlen = k;
	return o;
}

/* Next line of [*p, end) without its LF/CRLF. */
static int next_line(const char **p, const char *end, const char **ls, size_t *ll)
{
	if (*p >= end)
		return 0;
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *e = nl ? nl : end;
	*ls = *p;
	*ll = (size_t)(e - *p);
	if (*ll && (*ls)[*ll - 1] == '\r')
		(*ll)--;
	*p = nl ? nl + 1 : end;
	return 1;
}

int rva_folded_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	uint8_t *conv = NULL;
	*out = NULL;
	if (len >= 2 &&
	    ((buf[0] == 0xff && buf[1] == 0xfe) || (buf[0] == 0xfe && buf[1] == 0xff))) {
		conv = utf16_to_utf8(buf + 2, len - 2, buf[0] == 0xfe, &len);
		if (!conv)
			return rva_fail(err, -ENOMEM, "out of memory");
		buf = conv;
	} else if (len >= 3 && buf[0] == 0xef && buf[1] == 0xbb && buf[2] == 0xbf) {
		buf += 3;
		len -= 3;
	}
	rva_trace *t = rva_trace_new();
	int rc = -ENOMEM;
	uint32_t *cur = NULL, *line_ids = NULL;
	size_t ncur = 0, cap = 0;
	if (!t || rva_thread_add(t, 0, 0, "all") < 0)
		goto out_free;
	t->weighted = 1;
	t->format = "folded";
	const char *p = (const char *)buf, *end = p + len, *ls;
	size_t ll;
	int64_t now = 0;
	size_t good = 0;
	while (next_line(&p, end, &ls, &ll)) {
		const char *sp = NULL;
		for (size_t i = ll; i-- > 0;)
			if (ls[i] == ' ') {
				sp = ls + i;
				break;
			}
		if (ll == 0)
			continue;
		char *e;
		char num[32];
		size_t nl = sp ? (size_t)(ls + ll - sp - 1) : 0;
		if (!sp || sp == ls || nl == 0 || nl >= sizeof(num)) {
			t->dropped++;
			continue;
		}
		memcpy(num, sp + 1, nl);
		num[nl] = '\0';
		errno = 0;
		unsigned long long w = strtoull(num, &e, 10);
		if (errno || *e || num[0] == '-' || w > (1ull << 40)) {
			t->dropped++;
			continue;
		}
		/* Frames of this line, interned. */
		size_t n = 0;
		for (const char *f = ls; f < sp;) {
			const char *semi = memchr(f, ';', (size_t)(sp - f));
			const char *fe = semi ? semi : sp;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				uint32_t *a = realloc(line_ids, nc * sizeof(*a));
				if (!a)
					goto out_free;
				line_ids = a;
				uint32_t *b = realloc(cur, nc * sizeof(*b));
				if (!b)
					goto out_free;
				cur = b;
				cap = nc;
			}
			int64_t id = rva_method_intern(t, f, (size_t)(fe - f));
			if (id < 0) {
				rc = rva_fail(err, (int)id, "frame name rejected");
				goto out_free;
			}
			line_ids[n++] = (uint32_t)id;
			f = semi ? semi + 1 : sp;
		}
		if (w == 0)
			continue;
		if (now > INT64_MAX - (int64_t)w) {
			rc = rva_fail(err, -E2BIG, "total weight overflows");
			goto out_free;
		}
		/* Keep the common prefix with the previous line open, so sorted
		 * input merges like a flame graph. */
		size_t common = 0;
		while (common < n && common < ncur && cur[common] == line_ids[common])
			common++;
		while (ncur > common) {
			rva_exit(t, 0, RVA_ANY_METHOD, now);
			ncur--;
		}
		for (size_t i = common; i < n; i++) {
			if ((rc = rva_enter(t, 0, line_ids[i], now)) < 0) {
				rva_fail(err, rc, "cannot record frame");
				goto out_free;
			}
			cur[ncur++] = line_ids[i];
		}
		now += (int64_t)w;
		good++;
	}
	if (good == 0 && t->dropped) {
		rc = rva_fail(err, -EINVAL, "no valid folded line");
		goto out_free;
	}
	rva_trace_finish(t, now);
	*out = t;
	t = NULL;
	rc = 0;
out_free:
	if (rc == -ENOMEM)
		rva_fail(err, rc, "out of memory");
	free(cur);
	free(line_ids);
	free(conv);
	rva_trace_free(t);
	return rc;
}

int rva_nanoscope_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	*out = NULL;
	rva_trace *t = rva_trace_new();
	int rc = -ENOMEM;
	if (!t || rva_thread_add(t, 0, 0, "main") < 0)
		goto out_free;
	t->format = "nanoscope";
	const char *p = (const char *)buf, *end = p + len, *ls;
	size_t ll, good = 0;
	int64_t last = 0;
	while (next_line(&p, end, &ls, &ll)) {
		if (ll == 0)
			continue;
		const char *colon = memchr(ls, ':', ll);
		char num[24];
		size_t nl = colon ? (size_t)(colon - ls) : 0;
		if (!colon || nl == 0 || nl >= sizeof(num)) {
			t->dropped++;
			continue;
		}
		memcpy(num, ls, nl);
		num[nl] = '\0';
		char *e;
		errno = 0;
		long long ts = strtoll(num, &e, 10);
		if (errno || *e || ts < 0) {
			t->dropped++;
			continue;
		}
		const char *name = colon + 1;
		size_t namelen = ll - nl - 1;
		if (namelen == 3 && memcmp(name, "POP", 3) == 0) {
			rva_exit(t, 0, RVA_ANY_METHOD, ts);
		} else {
			if (namelen && name[0] == '+') {
				name++;
				namelen--;
			}
			int64_t id = rva_method_intern(t, name, namelen);
			if (id < 0 || (rc = rva_enter(t, 0, (uint32_t)id, ts)) < 0) {
				rc = rva_fail(err, id < 0 ? (int)id : rc, "line rejected");
				goto out_free;
			}
		}
		last = ts;
		good++;
	}
	if (good == 0) {
		rc = rva_fail(err, -EINVAL, "no Nanoscope event line");
		goto out_free;
	}
	rva_trace_finish(t, last);
	*out = t;
	return 0;
out_free:
	if (rc == -ENOMEM)
		rva_fail(err, rc, "out of memory");
	rva_trace_free(t);
	return rc;
}

/* Two leading field-1 length-delimited records that fit, and binary bytes. */
static int looks_perfetto(const uint8_t *b, size_t len)
{
	size_t pos = 0;
	int bin = 0;
	for (size_t i = 0; i < len && i < 64; i++)
		bin |= b[i] < 0x09;
	for (int k = 0; k < 2 && pos < len; k++) {
		if (b[pos++] != 0x0a)
			return 0;
		uint64_t n = 0;
		int shift = 0;
		while (pos < len && (b[pos] & 0x80) && shift < 63) {
			n |= (uint64_t)(b[pos++] & 0x7f) << shift;
			shift += 7;
		}
		if (pos >= len)
			return 0;
		n |= (uint64_t)b[pos++] << shift;
		if (n > len - pos)
			return 0;
		pos += (size_t)n;
	}
	return bin;
}

/* pprof's Profile: every top-level field one of profile.proto's with its
 * wire type, the whole buffer consumed, and a string table (field 6) whose
 * entry 0 is "".  A Perfetto trace has only field 1 at the top; text that
 * starts with '2' (field 6) would need a NUL next. */
static int looks_pprof(const uint8_t *b, size_t len)
{
	size_t pos = 0;
	int strings = 0;
	while (pos < len) {
		uint64_t tag = 0, n = 0;
		int shift = 0;
		while (pos < len && (b[pos] & 0x80) && shift < 63) {
			tag |= (uint64_t)(b[pos++] & 0x7f) << shift;
			shift += 7;
		}
		if (pos >= len)
			return 0;
		tag |= (uint64_t)b[pos++] << shift;
		uint64_t field = tag >> 3, wt = tag & 7;
		int lenfield = field <= 6 || field == 11 || (field == 13 && wt == 2);
		if (field == 0 || field > 14 || wt != (lenfield ? 2u : 0u))
			return 0;
		shift = 0;
		while (pos < len && (b[pos] & 0x80) && shift < 63) {
			n |= (uint64_t)(b[pos++] & 0x7f) << shift;
			shift += 7;
		}
		if (pos >= len)
			return 0;
		n |= (uint64_t)b[pos++] << shift;
		if (lenfield) {
			if (n > len - pos)
				return 0;
			pos += (size_t)n;
		}
		/* string_table[0] must be "" (profile.proto). */
		if (field == 6 && !strings && n != 0)
			return 0;
		strings |= field == 6;
	}
	return strings;
}

rva_format rva_detect(const uint8_t *buf, size_t len)
{
	if (len >= 8 && memcmp(buf, "RVCAP\0\r\n", 8) == 0)
		return RVA_FMT_CAPTURE;
	if ((len >= 9 && memcmp(buf, "*version\n", 9) == 0) ||
	    (len >= 4 && memcmp(buf, "SLOW", 4) == 0))
		return RVA_FMT_ANDROID;
	if (looks_pprof(buf, len))
		return RVA_FMT_PPROF;
	if (looks_perfetto(buf, len))
		return RVA_FMT_PERFETTO;
	if (len >= 2 && ((buf[0] == 0xff && buf[1] == 0xfe) || (buf[0] == 0xfe && buf[1] == 0xff)))
		return RVA_FMT_FOLDED;
	size_t i = 0;
	while (i < len && (buf[i] == '\n' || buf[i] == '\r' || buf[i] == ' ' || buf[i] == '\t'))
		i++;
	if (i < len && (buf[i] == '{' || buf[i] == '['))
		return RVA_FMT_CHROME;
	/* Vote over the first 32 lines: "<digits>:…" is Nanoscope, "… <digits>"
	 * is folded; comments and junk lines abstain. */
	int nano = 0, folded = 0;
	for (int line = 0; line < 32 && i < len; line++) {
		const uint8_t *nl = memchr(buf + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - buf) : len, next = nl ? e + 1 : len;
		if (e > i && buf[e - 1] == '\r')
			e--;
		size_t d = i;
		while (d < e && buf[d] >= '0' && buf[d] <= '9')
			d++;
		if (d > i && d < e && buf[d] == ':')
			nano++;
		size_t k = e;
		while (k > i && buf[k - 1] >= '0' && buf[k - 1] <= '9')
			k--;
		if (k < e && k > i + 1 && buf[k - 1] == ' ')
			folded++;
		i = next;
	}
	if (nano > folded)
		return RVA_FMT_NANOSCOPE;
	if (folded)
		return RVA_FMT_FOLDED;
	return RVA_FMT_UNKNOWN;
}

int rva_import_progress(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err,
			const rva_progress *p)
{
	*out = NULL;
	if (rva_compression_of(buf, len) != RVA_COMPRESSED_NONE) {
		/* As the tools save them: inflate (bounded) and import what is
		 * inside; compression inside compression is not a trace. */
		uint8_t *plain;
		size_t plen;
		int rc = rva_decompress(buf, len, MAX_FILE, &plain, &plen, err);
		if (rc < 0)
			return rc;
		if (rva_compression_of(plain, plen) != RVA_COMPRESSED_NONE)
			rc = rva_fail(err, -EPROTONOSUPPORT, "compressed twice: not a trace");
		else
			rc = rva_import_progress(plain, plen, out, err, p);
		free(plain);
		return rc;
	}
	rva_format fmt = rva_detect(buf, len);
	if (fmt == RVA_FMT_CAPTURE)
		return rva_capture_decode_progress(buf, len, out, err, p);
	/* The other importers report only their start and end. */
	if (p && p->fn)
		p->fn(p->arg, 0, len);
	int rc;
	switch (fmt) {
	case RVA_FMT_FOLDED:
		rc = rva_folded_import(buf, len, out, err);
		break;
	case RVA_FMT_NANOSCOPE:
		rc = rva_nanoscope_import(buf, len, out, err);
		break;
	case RVA_FMT_PERFETTO:
		rc = rva_perfetto_import(buf, len, out, err);
		break;
	case RVA_FMT_CHROME:
		rc = rva_chrome_import(buf, len, out, err);
		break;
	case RVA_FMT_ANDROID:
		rc = rva_android_import(buf, len, out, err);
		break;
	case RVA_FMT_PPROF:
		rc = rva_pprof_import(buf, len, out, err);
		break;
	default:
		return rva_fail(err, -EPROTONOSUPPORT, "unrecognized trace format");
	}
	if (rc == 0 && p && p->fn)
		p->fn(p->arg, len, len);
	return rc;
}

int rva_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	return rva_import_progress(buf, len, out, err, NULL);
}

int rva_file_read(const char *path, uint8_t **out, size_t *outlen, rva_error *err)
{
	*out = NULL;
	*outlen = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rva_fail(err, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	int rc;
	uint8_t *buf = NULL;
	if (fstat(fd, &st) < 0) {
		rc = rva_fail(err, -errno, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if ((unsigned long long)st.st_size > MAX_FILE) {
		rc = rva_fail(err, -EFBIG, "%s: larger than 1 GiB", path);
		goto out_close;
	}
	size_t len = (size_t)st.st_size;
	buf = malloc(len ? len : 1);
	if (!buf) {
		rc = rva_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out_close;
	}
	if ((rc = rvc_read_all(fd, buf, len)) < 0) {
		rva_fail(err, rc, "%s: read failed", path);
		free(buf);
		goto out_close;
	}
	*out = buf;
	*outlen = len;
	rc = 0;
out_close:
	close(fd);
	return rc;
}

/* The start of a file's content, then the rest of it from its reader. */
typedef struct peeked {
	rva_reader *r;
	uint8_t *head;
	size_t pos, len;
} peeked;

static ssize_t peeked_read(void *arg, uint8_t *buf, size_t cap, rva_error *err)
{
	peeked *k = arg;
	if (k->pos == k->len)
		return rva_reader_read(k->r, buf, cap, err);
	size_t n = k->len - k->pos < cap ? k->len - k->pos : cap;
	memcpy(buf, k->head + k->pos, n);
	k->pos += n;
	return (ssize_t)n;
}

/* Chrome JSON (plain or compressed) is streamed from the file: 1 when it
 * was (rc in *rc), 0 when the file is of another format. */
static int import_streamed(const char *path, rva_trace **out, rva_error *err, const rva_progress *p,
			   int *rc)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		*rc = rva_fail(err, -errno, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	rva_reader *r;
	if ((*rc = rva_reader_open(&r, fd, (uint64_t)st.st_size, p, err)) < 0)
		return 1;
	peeked k = {r, malloc(4096), 0, 0};
	if (!k.head) {
		rva_reader_close(r);
		*rc = rva_fail(err, -ENOMEM, "out of memory");
		return 1;
	}
	ssize_t n = 1;
	while (k.len < 4096 && (n = rva_reader_read(r, k.head + k.len, 4096 - k.len, err)) > 0)
		k.len += (size_t)n;
	int streamed = 1, bin = 0;
	for (size_t i = 0; i < k.len && i < 64; i++)
		bin |= k.head[i] < 0x09;
	if (n < 0)
		*rc = (int)n;
	else if (rva_detect(k.head, k.len) == RVA_FMT_CHROME && !bin)
		*rc = rva_chrome_import_stream(peeked_read, &k, out, err);
	else
		streamed = 0;
	free(k.head);
	rva_reader_close(r);
	return streamed;
}

int rva_import_file_progress(const char *path, rva_trace **out, rva_error *err,
			     const rva_progress *p)
{
	uint8_t *buf;
	size_t len;
	*out = NULL;
	int rc;
	if (import_streamed(path, out, err, p, &rc))
		return rc;
	rc = rva_file_read(path, &buf, &len, err);
	if (rc < 0)
		return rc;
	rc = rva_import_progress(buf, len, out, err, p);
	free(buf);
	return rc;
}

int rva_import_file(const char *path, rva_trace **out, rva_error *err)
{
	return rva_import_file_progress(path, out, err, NULL);
}

/* ---- exports ---- */

static void put_sanitized(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' || *s == '\n' || *s == '\r' ? '_' : *s, f);
}

/* One folded line: a node of the capped tree and its self time (a cut
 * node's is the time of everything below RVA_EXPORT_MAX_DEPTH). */
struct fline {
	int64_t self;
	uint32_t node;
};

static int cmp_fline(const void *a, const void *b)
{
	const struct fline *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* Streams the capped merged tree's paths (no per-path copies: a path is
 * walked up its parents when printed, at most RVA_EXPORT_MAX_DEPTH + 1
 * long), so memory is the tree of paths up to the cap, never the depth. */
int rva_export_folded(FILE *f, const rva_trace *t)
{
	rva_tree tr;
	int rc = rva_tree_build_capped(t, SIZE_MAX, RVA_EXPORT_MAX_DEPTH, &tr);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	uint32_t *path = malloc((RVA_EXPORT_MAX_DEPTH + 1) * sizeof(*path));
	struct fline *ln = NULL;
	size_t nl = 0;
	if (!path)
		goto out_free;
	for (size_t i = 1; i < tr.n; i++)
		nl += tr.nodes[i].self > 0;
	if (!(ln = malloc((nl ? nl : 1) * sizeof(*ln))))
		goto out_free;
	nl = 0;
	for (size_t i = 1; i < tr.n; i++)
		if (tr.nodes[i].self > 0)
			ln[nl++] = (struct fline){tr.nodes[i].self, (uint32_t)i};
	qsort(ln, nl, sizeof(*ln), cmp_fline);
	for (size_t i = 0; i < nl; i++) {
		long long v = t->weighted ? ln[i].self : (ln[i].self + 500) / 1000;
		size_t n = 0;
		if (v <= 0)
			continue;
		for (uint32_t id = ln[i].node; id; id = tr.nodes[id].parent) {
			assert(n <= RVA_EXPORT_MAX_DEPTH);
			path[n++] = tr.nodes[id].method;
		}
		while (n--) {
			if (path[n] == RVA_TREE_CUT)
				fputs(RVA_TRUNCATED_FRAME, f);
			else
				put_sanitized(f, t->names[path[n]]);
			if (n)
				fputc(';', f);
		}
		fprintf(f, " %lld\n", v);
	}
	rc = ferror(f) ? -EIO : 0;
out_free:
	free(ln);
	free(path);
	rva_tree_release(&tr);
	return rc;
}

/* Writes ns (relative to the trace start) as µs: an integer when whole,
 * else with exactly three decimals, so the text is exact and distinct
 * nanoseconds stay distinct and ordered after any reader's parse. */
/*
 * Chrome JSON times are microseconds, which viewers read as float64 and add
 * (speedscope ends an X event at ts + dur).  Decimal nanoseconds (1.234) are
 * not exact in binary: a call ending on the same nanosecond as its caller,
 * or as the next call starts, can then end an ulp after it, and the viewer
 * nests everything that follows inside it.  So times are written in units
 * of 1/1024 µs (k = round(ns · 1.024), 0.977 ns: distinct nanoseconds stay
 * distinct and in order, and llround(k / 1.024) gives the nanosecond back),
 * whose decimal forms are exact binary fractions: sums and differences of
 * them are exact in float64 below 2^53 units (over 250 years), so a viewer's
 * ts + dur is the end the file means.  An X event's dur is the difference
 * of its end's and start's units, never the units of its length.
 */
static int64_t chrome_units(int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	uint64_t k = (a / 125) * 128 + ((a % 125) * 128 + 62) / 125;
	return ns < 0 ? -(int64_t)k : (int64_t)k;
}

/* k/1024 µs, exactly: at most ten decimals, trailing zeros left out. */
static void put_units(FILE *f, int64_t k)
{
	const char *sign = k < 0 ? "-" : "";
	uint64_t a = k < 0 ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
	uint64_t frac = (a & 1023) * 9765625ull; /* ten decimal digits */
	if (!frac) {
		fprintf(f, "%s%llu", sign, (unsigned long long)(a >> 10));
		return;
	}
	int digits = 10;
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	fprintf(f, "%s%llu.%0*llu", sign, (unsigned long long)(a >> 10), digits,
		(unsigned long long)frac);
}

/* The time ts (ns) as Chrome microseconds (chrome_units). */
static void put_us(FILE *f, int64_t ts)
{
	put_units(f, chrome_units(ts));
}

/* The length from..to (ns) as a dur whose ts + dur is exactly to's time. */
static void put_dur(FILE *f, int64_t from, int64_t to)
{
	put_units(f, chrome_units(to) - chrome_units(from));
}

static void chrome_event(FILE *f, int *first, char ph, const rva_thread *th, int64_t ts)
{
	fprintf(f, "%s\n{\"ph\":\"%c\",\"pid\":%u,\"tid\":%u,\"ts\":", *first ? "" : ",", ph,
		th->pid, th->tid);
	put_us(f, ts);
	*first = 0;
}

/* Thread th's off-CPU view (FORMAT.md OFFCPU, THREAD_COUNTERS) as Chrome
 * events, times relative to t0: each interval an X slice "off-CPU
 * (preempted)" / "off-CPU (blocked)" (cat "offcpu") on the thread, which
 * Perfetto and speedscope draw inside the call it interrupted (an interval
 * holds no entry or exit, rva_offcpu_set); the counter (C) "switch-outs tid
 * N" with args "blocked" and "preempted", the intervals so far, 0 at the
 * thread's first event; and from its counters "page faults tid N" (args
 * "minor", "major") and "task-clock tid N" (arg "ns"): 0 when tracing
 * started (when not before t0) and the totals at the capture. */
static void chrome_switches(FILE *f, const rva_thread *th, int64_t ts, const uint64_t *sw,
			    int *first)
{
	chrome_event(f, first, 'C', th, ts);
	fprintf(f,
		",\"name\":\"switch-outs tid %u\",\"args\":{\"blocked\":%llu,\"preempted\":%llu}}",
		th->tid, (unsigned long long)sw[RVA_OFF_BLOCKED],
		(unsigned long long)sw[RVA_OFF_PREEMPTED]);
}

static void chrome_offcpu(FILE *f, const rva_thread *th, int64_t t0, int *first)
{
	uint64_t sw[RVA_OFF_NREASONS] = {0};
	if (th->noffcpu) {
		int64_t at = th->offcpu[0].from;
		if (th->ncalls && th->calls[0].start < at)
			at = th->calls[0].start;
		chrome_switches(f, th, (at < t0 ? t0 : at) - t0, sw, first);
	}
	for (size_t i = 0; i < th->noffcpu; i++) {
		const rva_offcpu *v = &th->offcpu[i];
		int preempted = v->reason == RVA_OFF_PREEMPTED;
		int64_t from = v->from < t0 ? t0 : v->from;
		sw[preempted ? RVA_OFF_PREEMPTED : RVA_OFF_BLOCKED]++;
		chrome_switches(f, th, from - t0, sw, first);
		if (v->to <= from)
			continue;
		chrome_event(f, first, 'X', th, from - t0);
		fputs(",\"dur\":", f);
		put_dur(f, from - t0, v->to - t0);
		fprintf(f, ",\"cat\":\"offcpu\",\"name\":\"off-CPU (%s)\"}",
			preempted ? "preempted" : "blocked");
	}
	const rva_tcounters *k = th->counters;
	if (!k)
		return;
	for (int z = k->since >= t0 && k->since < k->at ? 0 : 1; z < 2; z++) {
		chrome_event(f, first, 'C', th, (z ? k->at : k->since) - t0);
		fprintf(f,
			",\"name\":\"page faults tid %u\",\"args\":{\"minor\":%llu,"
			"\"major\":%llu}}",
			th->tid, z ? (unsigned long long)k->minor_faults : 0ull,
			z ? (unsigned long long)k->major_faults : 0ull);
		chrome_event(f, first, 'C', th, (z ? k->at : k->since) - t0);
		fprintf(f, ",\"name\":\"task-clock tid %u\",\"args\":{\"ns\":%llu}}", th->tid,
			z ? (unsigned long long)k->task_clock_ns : 0ull);
	}
}

int rva_export_chrome(FILE *f, const rva_trace *t)
{
	int first = 1;
	int64_t t0 = t->start;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		if (th->name) {
			fprintf(f,
				"%s\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
				"\"args\":{\"name\":",
				first ? "" : ",", th->pid, th->tid);
			rvc_json_str(f, th->name);
			fputs("}}", f);
			first = 0;
		}
		/* Pre-order: a call with a length is one complete (X) event, so
		 * its end needs no matching; at equal ts its callers come first
		 * and are no shorter (what readers that sort X events by ts,
		 * then longest first, rebuild).  A zero-length call is a B and
		 * an E side by side: a reader that queues B and E events apart
		 * and sorts each by ts (speedscope) opens it before it closes
		 * it only when the two are the fronts of their queues together,
		 * which holds because B/E events come before X events of equal
		 * ts in both queues and pairs never nest. */
		for (size_t i = 0; i < th->ncalls; i++) {
			const rva_call *c = &th->calls[i];
			assert(c->start >= t0 && c->end >= c->start);
			chrome_event(f, &first, c->end > c->start ? 'X' : 'B', th, c->start - t0);
			if (c->end > c->start) {
				fputs(",\"dur\":", f);
				put_dur(f, c->start - t0, c->end - t0);
			}
			fputs(",\"name\":", f);
			rvc_json_str(f, t->names[c->method]);
			fputc('}', f);
			if (c->end > c->start)
				continue;
			chrome_event(f, &first, 'E', th, c->start - t0);
			fputs(",\"name\":", f);
			rvc_json_str(f, t->names[c->method]);
			fputc('}', f);
		}
	}
	if (t->has_anomaly && t->nthreads) {
		/* A global instant event: Perfetto and chrome://tracing draw it
		 * across the timeline (speedscope ignores instants). */
		chrome_event(f, &first, 'i', &t->threads[0], t->anomaly_ns - t0);
		fputs(",\"s\":\"g\",\"cat\":\"anomaly\",\"name\":", f);
		rvc_json_str(f, t->anomaly_name ? t->anomaly_name : "anomaly");
		fputc('}', f);
	}
	for (size_t ti = 0; ti < t->nthreads; ti++)
		chrome_offcpu(f, &t->threads[ti], t0, &first);
	rva_locks_chrome(f, t, t0, &first);
	fputs("\n]", f);
	/* What self times include (FORMAT.md UNTRACED, MUTED), in the object
	 * form's free-form "otherData" (viewers show or ignore it). */
	char note[1024];
	if (rva_untraced_note(t, note, sizeof(note))) {
		fputs(",\"otherData\":{\"note\":", f);
		rvc_json_str(f, note);
		fputc('}', f);
	}
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}

int rva_export_nanoscope(FILE *f, const rva_trace *t, size_t th)
{
	if (th >= t->nthreads)
		return -EINVAL;
	const rva_thread *tt = &t->threads[th];
	int64_t *ends = malloc((tt->ncalls ? tt->ncalls : 1) * sizeof(*ends));
	size_t n = 0;
	if (!ends)
		return -ENOMEM;
	for (size_t i = 0; i <= tt->ncalls; i++) {
		size_t d = i < tt->ncalls ? tt->calls[i].depth : 0;
		while (n > d)
			fprintf(f, "%lld:POP\n", (long long)ends[--n]);
		if (i == tt->ncalls)
			break;
		const rva_call *c = &tt->calls[i];
		fprintf(f, "%lld:", (long long)c->start);
		for (const char *s = t->names[c->method]; *s; s++)
			fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
		fputc('\n', f);
		ends[n++] = c->end;
	}
	free(ends);
	return ferror(f) ? -EIO : 0;
}
