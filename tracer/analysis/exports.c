/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exports.c — speedscope JSON (evented profiles) and Android .trace v3
 * (non-streaming, dual clock, 14-byte records) writers.
 *
 * Both walk each thread's pre-order calls with an explicit stack of open
 * frames, emitting an open at each call's start and the closes of the
 * frames it leaves behind, so events are time-ordered per thread.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"
#include "rearview/common.h"

int rva_export_speedscope(FILE *f, const rva_trace *t)
{
	/* The profile's name says what self times include (FORMAT.md UNTRACED,
	 * MUTED): speedscope shows it as the title. */
	char title[1100] = "rvtrace export";
	char note[1024];
	if (rva_untraced_note(t, note, sizeof(note)))
		snprintf(title, sizeof(title), "rvtrace export: %s", note);
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"rvtrace\",\"name\":",
	      f);
	rvc_json_str(f, title);
	fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", f);
	for (size_t i = 0; i < t->nmethods; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		rvc_json_str(f, t->names[i]);
		fputc('}', f);
	}
	fputs("]},\"profiles\":[", f);
	int64_t *ends = NULL;
	uint32_t *meth = NULL;
	int first = 1;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		if (!th->ncalls)
			continue;
		free(ends);
		free(meth);
		ends = malloc(th->ncalls * sizeof(*ends));
		meth = malloc(th->ncalls * sizeof(*meth));
		if (!ends || !meth) {
			free(ends);
			free(meth);
			return -ENOMEM;
		}
		int64_t lo = th->calls[0].start, hi = lo;
		for (size_t i = 0; i < th->ncalls; i++)
			if (th->calls[i].end > hi)
				hi = th->calls[i].end;
		char name[64];
		snprintf(name, sizeof(name), "tid %u", th->tid);
		fputs(first ? "{\"type\":\"evented\",\"name\":"
			    : ",{\"type\":\"evented\",\"name\":",
		      f);
		rvc_json_str(f, th->name ? th->name : name);
		fprintf(f, ",\"unit\":\"%s\",\"startValue\":%lld,\"endValue\":%lld,\"events\":[",
			t->weighted ? "none" : "nanoseconds", (long long)lo, (long long)hi);
		size_t n = 0;
		int ev = 0;
		for (size_t i = 0; i <= th->ncalls; i++) {
			size_t d = i < th->ncalls ? th->calls[i].depth : 0;
			while (n > d) {
				n--;
				fprintf(f, "%s{\"type\":\"C\",\"frame\":%u,\"at\":%lld}",
					ev++ ? "," : "", meth[n], (long long)ends[n]);
			}
			if (i == th->ncalls)
				break;
			const rva_call *c = &th->calls[i];
			fprintf(f, "%s{\"type\":\"O\",\"frame\":%u,\"at\":%lld}", ev++ ? "," : "",
				c->method, (long long)c->start);
			ends[n] = c->end;
			meth[n++] = c->method;
		}
		fputs("]}", f);
		first = 0;
	}
	free(ends);
	free(meth);
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}

/* ---- Android .trace v3 ---- */

typedef struct arec {
	uint16_t thread;
	uint32_t word;
	int64_t ts;
	uint64_t seq;
} arec;

static int cmp_arec(const void *x, const void *y)
{
	const arec *a = x, *b = y;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Writes n bytes of s with tabs and line breaks as spaces. */
static void put_clean_n(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fputc(s[i] == '\n' || s[i] == '\t' || s[i] == '\r' ? ' ' : s[i], f);
}

static void put_clean(FILE *f, const char *s)
{
	put_clean_n(f, s, strlen(s));
}

/* Writes a method line "0x<id>\t<class>\t<name>\t<signature>\tunknown" with
 * every column non-empty (Android Studio's and Perfetto's readers refuse
 * empty ones).  The name splits by the first rule that applies, a signature
 * being the text from a '(' that is not the first byte:
 *  - "module+0x1f" or "module!sym" (an unresolved address, a
 *    module-qualified symbol): class "module", name "+0x1f" / "sym";
 *  - "ns::Class::m(args)": class "ns::Class" (before the last "::"), name "m";
 *  - "pkg.Class.m(I)V": class "pkg.Class" (before the last '.'), name "m";
 *  - anything else ("parse_json", "(unknown caller)"): class "native".
 * A name without a signature gets the placeholder "()V" (no arguments,
 * void); an empty name part is "(anonymous)". */
static void method_line(FILE *f, uint32_t id, const char *name)
{
	const char *paren = *name ? strchr(name + 1, '(') : NULL;
	const char *end = paren ? paren : name + strlen(name);
	const char *cls_end = NULL, *meth = name;
	for (const char *p = name + (*name != 0); p < end && !cls_end; p++)
		if (*p == '!' || (p[0] == '+' && p[1] == '0' && p[2] == 'x')) {
			cls_end = p;
			meth = *p == '!' ? p + 1 : p;
		}
	for (const char *p = name + (*name != 0); !cls_end && p + 2 < end; p++)
		if (p[0] == ':' && p[1] == ':')
			meth = p + 2;
	if (!cls_end && meth != name)
		cls_end = meth - 2;
	for (const char *p = name + (*name != 0); !cls_end && p + 1 < end; p++)
		if (*p == '.')
			meth = p + 1;
	if (!cls_end && meth != name)
		cls_end = meth - 1;
	assert(!cls_end || (cls_end > name && meth <= end));
	fprintf(f, "0x%x\t", (id + 1) << 2);
	if (cls_end)
		put_clean_n(f, name, (size_t)(cls_end - name));
	else
		fputs("native", f);
	fputc('\t', f);
	if (end > meth)
		put_clean_n(f, meth, (size_t)(end - meth));
	else
		fputs("(anonymous)", f);
	fputc('\t', f);
	put_clean(f, paren ? paren : "()V");
	fputs("\tunknown\n", f);
}

int rva_export_android(FILE *f, const rva_trace *t)
{
	size_t total = 0;
	for (size_t i = 0; i < t->nthreads; i++)
		total += t->threads[i].ncalls;
	if (t->nthreads > 65535 || t->nmethods >= (1u << 29))
		return -E2BIG;
	arec *r = malloc((2 * total + 1) * sizeof(*r));
	int64_t *ends = NULL;
	if (!r)
		return -ENOMEM;
	size_t n = 0;
	uint64_t seq = 0;
	for (size_t ti = 0; ti < t->nthreads; ti++) {
		const rva_thread *th = &t->threads[ti];
		free(ends);
		ends = malloc((th->ncalls + 1) * sizeof(*ends) * 2);
		if (!ends) {
			free(r);
			return -ENOMEM;
		}
		int64_t *em = ends + th->ncalls + 1;
		size_t sn = 0;
		for (size_t i = 0; i <= th->ncalls; i++) {
			size_t d = i < th->ncalls ? th->calls[i].depth : 0;
			while (sn > d) {
				sn--;
				r[n++] = (arec){(uint16_t)(ti + 1),
						(uint32_t)((em[sn] + 1) << 2) | 1, ends[sn], seq++};
			}
			if (i == th->ncalls)
				break;
			const rva_call *c = &th->calls[i];
			r[n++] = (arec){(uint16_t)(ti + 1), (c->method + 1) << 2, c->start, seq++};
			ends[sn] = c->end;
			em[sn++] = c->method;
		}
	}
	free(ends);
	qsort(r, n, sizeof(*r), cmp_arec);
	int64_t t0 = n ? r[0].ts : 0;
	int64_t span = n ? r[n - 1].ts - t0 : 0;
	fprintf(f,
		"*version\n3\ndata-file-overflow=false\nclock=dual\nelapsed-time-usec=%lld\n"
		"num-method-calls=%zu\nclock-call-overhead-nsec=0\nvm=art\n*threads\n",
		(long long)(span / 1000), n);
	for (size_t i = 0; i < t->nthreads; i++) {
		fprintf(f, "%zu\t", i + 1);
		if (t->threads[i].name)
			put_clean(f, t->threads[i].name);
		else
			fprintf(f, "tid %u", t->threads[i].tid);
		fputc('\n', f);
	}
	fputs("*methods\n", f);
	for (size_t i = 0; i < t->nmethods; i++)
		method_line(f, (uint32_t)i, t->names[i]);
	fputs("*end\n", f);
	uint8_t hdr[32] = {'S', 'L', 'O', 'W', 3, 0, 32, 0};
	uint64_t start_us = (uint64_t)(t0 < 0 ? 0 : t0) / 1000;
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (uint8_t)(start_us >> (8 * i));
	hdr[16] = 14;
	fwrite(hdr, 1, sizeof(hdr), f);
	for (size_t i = 0; i < n; i++) {
		/* µs since the first event; 32 bits wrap after 71 minutes, as the
		 * format does. */
		uint32_t us = (uint32_t)((r[i].ts - t0) / 1000);
		uint8_t b[14] = {(uint8_t)r[i].thread, (uint8_t)(r[i].thread >> 8)};
		for (int k = 0; k < 4; k++) {
			b[2 + k] = (uint8_t)(r[i].word >> (8 * k));
			b[6 + k] = (uint8_t)(us >> (8 * k));
			b[10 + k] = (uint8_t)(us >> (8 * k));
		}
		fwrite(b, 1, sizeof(b), f);
	}
	free(r);
	return ferror(f) ? -EIO : 0;
}
