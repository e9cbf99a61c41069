/*
 * web_timeline.c — the trace page's timeline call chart (the Hubble paper's
 * Fig. 1 view): time on x, call depth on y, one rectangle per call of the
 * captured thread, for the window before the anomaly (or the capture's end),
 * and below them the thread's off-CPU intervals (OFFCPU records) by reason.
 *
 * Server-side SVG inside the HTML page, so it needs no script to show; the
 * page's app.js only adds click-to-select.  Method names are untrusted and
 * reach the document only through rvs_web_esc, in quoted attributes and
 * <title> text.  Output is bounded: calls narrower than MIN_W units, calls
 * past MAX_RECTS and calls MAX_DEPTH deep or deeper are left out and
 * counted in the caption (issue 18 item 2: truncation is shown); a name is
 * shown up to NAME_SHOWN bytes (names may be 64 KiB: 20 000 rectangles of
 * them made a 2.6 GB page).
 */
#include "web_int.h"

#include <string.h>

#include "rearview/analysis.h"

#define W	   1200.0
#define ROW	   14
#define MAX_DEPTH  48
#define MAX_RECTS  20000
#define MIN_W	   0.2
#define WINDOW_NS  2000000000LL /* at most 2 s before the anomaly */
#define NAME_SHOWN 240

static const char *const PALETTE[] = {"#e57373", "#ffb74d", "#fff176", "#aed581", "#4fc3f7",
				      "#9575cd", "#f06292", "#4db6ac", "#dce775", "#90a4ae"};

/* name escaped, cut to NAME_SHOWN bytes (at a UTF-8 character boundary)
 * and then ended with "…". */
static void esc_name(FILE *f, const char *name)
{
	char cut[NAME_SHOWN + sizeof "…"];
	size_t n = strlen(name);
	if (n <= NAME_SHOWN) {
		rvs_web_esc(f, name);
		return;
	}
	n = NAME_SHOWN;
	while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--; /* not inside a character */
	memcpy(cut, name, n);
	memcpy(cut + n, "…", sizeof "…");
	rvs_web_esc(f, cut);
}

void web_timeline_svg(FILE *f, const struct rva_trace *t)
{
	const rva_thread *th;
	int64_t a, from, to, span;
	size_t shown = 0, hidden = 0, deep = 0, offshown = 0, offhidden = 0;
	uint32_t maxd = 0;

	if (!t->nthreads || !t->threads[0].ncalls) {
		fputs("<p>The capture holds no calls.</p>", f);
		return;
	}
	th = &t->threads[0];
	a = t->has_anomaly ? t->anomaly_ns : t->end;
	from = a - WINDOW_NS > t->start ? a - WINDOW_NS : t->start;
	to = a > from ? a : t->end;
	if (to <= from)
		to = from + 1;
	span = to - from;
	for (size_t i = 0; i < th->ncalls; i++)
		if (th->calls[i].depth > maxd && th->calls[i].depth < MAX_DEPTH)
			maxd = th->calls[i].depth;
	fprintf(f,
		"<svg class=\"timeline\" id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\""
		" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"timeline\">",
		(int)W, (int)(maxd + 2) * ROW + 4);
	for (size_t i = 0; i < th->ncalls; i++) {
		const rva_call *k = &th->calls[i];
		int64_t s = k->start > from ? k->start : from;
		int64_t e = k->end < to ? k->end : to;
		double x, w;
		if (e <= s)
			continue;
		if (k->depth >= MAX_DEPTH) {
			deep++;
			continue;
		}
		x = (double)(s - from) * W / (double)span;
		w = (double)(e - s) * W / (double)span;
		if (w < MIN_W || shown >= MAX_RECTS) {
			hidden++;
			continue;
		}
		fprintf(f,
			"<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" fill=\"%s\""
			" data-ms=\"%.3f\" data-name=\"",
			x, k->depth * ROW, w, ROW - 1, PALETTE[k->method % 10],
			(double)(k->end - k->start) / 1e6);
		esc_name(f, k->method < t->nmethods ? t->names[k->method] : "?");
		fputs("\"><title>", f);
		esc_name(f, k->method < t->nmethods ? t->names[k->method] : "?");
		fprintf(f, " (%.3f ms)</title></rect>", (double)(k->end - k->start) / 1e6);
		/* A label where it fits (~7 units per character, clipped). */
		if (w >= 40) {
			const char *name = k->method < t->nmethods ? t->names[k->method] : "?";
			int fit = (int)((w - 6) / 7);
			fprintf(f,
				"<text x=\"%.2f\" y=\"%u\" font-size=\"11\" "
				"font-family=\"monospace\""
				" pointer-events=\"none\">",
				x + 3, k->depth * ROW + ROW - 4);
			if ((int)strlen(name) <= fit) {
				rvs_web_esc(f, name);
			} else {
				char cut[256];
				snprintf(cut, sizeof cut, "%.*s..", fit > 2 ? fit - 2 : 0, name);
				rvs_web_esc(f, cut);
			}
			fputs("</text>", f);
		}
		shown++;
	}
	/* The thread's off-CPU intervals in the row below the deepest calls,
	 * in the calls' budget of rectangles. */
	for (size_t i = 0; i < th->noffcpu; i++) {
		const rva_offcpu *v = &th->offcpu[i];
		int64_t s = v->from > from ? v->from : from;
		int64_t e = v->to < to ? v->to : to;
		const char *why = v->reason == RVA_OFF_PREEMPTED ? "preempted" : "blocked";
		double x, w;
		if (e <= s)
			continue;
		x = (double)(s - from) * W / (double)span;
		w = (double)(e - s) * W / (double)span;
		if (w < MIN_W || shown >= MAX_RECTS) {
			offhidden++;
			continue;
		}
		fprintf(f,
			"<rect class=\"offcpu\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\""
			" fill=\"%s\" data-ms=\"%.3f\" data-name=\"off-CPU (%s)\">"
			"<title>off-CPU (%s) %.3f ms</title></rect>",
			x, (maxd + 1) * ROW, w, ROW - 1,
			v->reason == RVA_OFF_PREEMPTED ? "#fb8c00" : "#607d8b",
			(double)(v->to - v->from) / 1e6, why, why, (double)(v->to - v->from) / 1e6);
		shown++;
		offshown++;
	}
	if (t->has_anomaly && a >= from && a <= to)
		fprintf(f,
			"<line x1=\"%.2f\" x2=\"%.2f\" y1=\"0\" y2=\"%d\" stroke=\"#b00020\""
			" stroke-width=\"2\"><title>anomaly</title></line>",
			(double)(a - from) * W / (double)span,
			(double)(a - from) * W / (double)span, (int)(maxd + 2) * ROW + 4);
	fprintf(f,
		"</svg><p class=\"caption\">%.3f ms before the %s; %zu calls drawn, %zu too short "
		"or too many to draw",
		(double)span / 1e6, t->has_anomaly ? "anomaly" : "end of the capture", shown,
		hidden);
	if (deep)
		fprintf(f, "; %zu calls below depth %d not shown", deep, MAX_DEPTH);
	if (th->noffcpu)
		fprintf(f,
			"; bottom row: the thread off the CPU (grey blocked, orange preempted), "
			"%zu intervals drawn, %zu too short or too many",
			offshown, offhidden);
	fputs(".</p>", f);
}
