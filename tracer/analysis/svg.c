/* SPDX-License-Identifier: Apache-2.0 */
/*
 * svg.c — interactive SVG flame graph of the merged call tree.
 *
 * Layout: the root spans the full width; each child sits above its parent,
 * left to right in inclusive-time order, width proportional to inclusive
 * time.  Level of detail (issue 18 item 2): a frame narrower than a pixel
 * is merged into its parent (its time stays there), and at most
 * RVA_SVG_MAX_FRAMES frames are drawn — whole levels, top down, while they
 * fit — so the document is bounded whatever the tree; the graph says how
 * many frames it merged, and a frame's name is shown up to NAME_SHOWN
 * bytes.  Every frame is a <g> carrying data-x/data-w (fractions of the
 * root) so the embedded script can zoom without recomputing the tree.
 * Names are untrusted: they only reach the document XML-escaped, and the
 * script reads them through textContent, never innerHTML.  Frames deeper
 * than RVA_EXPORT_MAX_DEPTH are not drawn and a note says how deep the
 * tree went, so the document stays linear in the trace.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

#define WIDTH	1200.0
#define FRAME_H 16
#define PAD_TOP 50
#define MIN_PX	1.0
/* Bytes of a name a frame shows (names may be 64 KiB: 20 000 frames of
 * them would make a 1.3 GB graph). */
#define NAME_SHOWN 240
#define PAD_BOTTOM 20

void rva_xml_escape(FILE *f, const char *s)
{
	if (!s)
		return;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			/* XML 1.0 forbids most control characters: U+FFFD instead. */
			if (*p < 0x20 || *p == 0x7f)
				fputs("&#xFFFD;", f);
			else
				fputc(*p, f);
		}
	}
}

/* name XML-escaped, cut to NAME_SHOWN bytes at a UTF-8 character boundary
 * and then ended with "…". */
static void name_escape(FILE *f, const char *name)
{
	char cut[NAME_SHOWN + sizeof "…"];
	size_t n = strlen(name);
	if (n <= NAME_SHOWN) {
		rva_xml_escape(f, name);
		return;
	}
	n = NAME_SHOWN;
	while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--;
	memcpy(cut, name, n);
	memcpy(cut + n, "…", sizeof "…");
	rva_xml_escape(f, cut);
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"var frames=[],zoomed=null;\n"
	"function init(){frames=Array.prototype.slice.call(document.querySelectorAll('g.f'));"
	"frames.forEach(function(g){g.addEventListener('click',function(){zoom(g);});});"
	"document.getElementById('reset').addEventListener('click',function(){zoom(null);});"
	"document.getElementById('search').addEventListener('click',search);"
	"window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key==='f')"
	"{e.preventDefault();search();}});layout(0,1,-1);}\n"
	"function layout(x0,w0,minDepth){var W="
	"1200"
	";frames.forEach(function(g){var x=+g.dataset.x,w=+g.dataset.w,d=+g.dataset.d;"
	"var r=g.querySelector('rect'),t=g.querySelector('text');"
	"var vis=(x+w>x0&&x<x0+w0&&d>=minDepth);var nx=(x-x0)/w0*W,nw=w/w0*W;"
	"if(nx<0){nw+=nx;nx=0;}if(nx+nw>W)nw=W-nx;"
	"g.style.display=vis&&nw>=0.1?'':'none';r.setAttribute('x',nx);r.setAttribute('width',nw);"
	"t.setAttribute('x',nx+3);var name=g.querySelector('title').textContent.replace(/ "
	"\\(.*$/,'');"
	"var fit=Math.floor((nw-6)/7);t.textContent=fit<3?'':(name.length<=fit?name:"
	"name.substring(0,fit-2)+'..');});}\n"
	"function zoom(g){zoomed=g;if(!g){layout(0,1,-1);return;}"
	"layout(+g.dataset.x,+g.dataset.w,0);"
	"frames.forEach(function(o){var d=+o.dataset.d,gd=+g.dataset.d;"
	"if(d<gd){o.style.opacity='0.5';}else{o.style.opacity='';}});}\n"
	"function search(){var re=prompt('Search (regular expression)','');"
	"if(re===null)return;var rx;try{rx=new RegExp(re);}catch(e){alert('bad regex');return;}"
	"var n=0;frames.forEach(function(g){var name=g.querySelector('title').textContent;"
	"var "
	"r=g.querySelector('rect');if(re!==''&&rx.test(name)){r.setAttribute('fill','#e040e0');n++;"
	"}"
	"else{r.setAttribute('fill',r.dataset.fill);}});"
	"document.getElementById('matched').textContent=re===''?'':n+' frames match';}\n"
	"]]></script>\n";

static unsigned colour(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

int rva_export_svg(FILE *f, const rva_trace *t, const char *title)
{
	rva_tree tr;
	int rc = rva_tree_build_capped(t, SIZE_MAX, RVA_EXPORT_MAX_DEPTH, &tr);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	double *x = calloc(tr.n, sizeof(*x));
	uint32_t *depth = calloc(tr.n, sizeof(*depth));
	uint32_t lvl[RVA_EXPORT_MAX_DEPTH + 1] = {0}; /* drawable frames per level */
	uint8_t *ok = NULL;
	if (!x || !depth)
		goto out_free;
	double total = tr.nodes[0].incl > 0 ? (double)tr.nodes[0].incl : 1.0;
	uint32_t maxd = 0;
	/* Place children left to right inside their parent; parents precede
	 * children in node order, so one forward pass suffices. */
	double *next = calloc(tr.n, sizeof(*next));
	if (!next)
		goto out_free;
	for (size_t i = 1; i < tr.n; i++)
		depth[i] = depth[tr.nodes[i].parent] + 1;
	/* The trace's own depth: the tree stops one level below the cap. */
	for (size_t ti = 0; ti < t->nthreads; ti++)
		for (size_t i = 0; i < t->threads[ti].ncalls; i++)
			if (t->threads[ti].calls[i].depth >= maxd)
				maxd = t->threads[ti].calls[i].depth + 1;
	for (size_t i = 0; i < tr.n; i++)
		next[i] = x[i];
	/* Children lists are newest-first; any order is a valid flame graph,
	 * so the list order is kept (deterministic for a given input). */
	for (size_t i = 0; i < tr.n; i++)
		for (uint32_t c = tr.nodes[i].first_child; c; c = tr.nodes[c].next_sibling) {
			x[c] = next[i];
			next[c] = x[c];
			next[i] += (double)tr.nodes[c].incl / total;
		}
	free(next);
	/* Drawable: a pixel wide at least, its parent drawable (parents precede
	 * children), within the depth cap. */
	uint32_t drawn = maxd < RVA_EXPORT_MAX_DEPTH ? maxd : RVA_EXPORT_MAX_DEPTH;
	assert(tr.n >= 1); /* the root */
	if (!(ok = calloc(tr.n + 1, 1)))
		goto out_free;
	ok[0] = 1;
	for (size_t i = 1; i < tr.n; i++) {
		ok[i] = ok[tr.nodes[i].parent] && depth[i] <= drawn &&
			(double)tr.nodes[i].incl / total * WIDTH >= MIN_PX;
		if (ok[i])
			lvl[depth[i]]++;
	}
	/* Whole levels while the frame budget holds. */
	size_t frames = 0, shown = 0;
	for (uint32_t d = 1; d <= drawn; d++) {
		if (frames + lvl[d] > RVA_SVG_MAX_FRAMES) {
			drawn = d - 1;
			break;
		}
		frames += lvl[d];
	}
	int height = PAD_TOP + FRAME_H * (int)(drawn + 1) + PAD_BOTTOM;
	fprintf(f,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" onload=\"init()\">\n"
		"<style>text{font-family:monospace;font-size:12px;pointer-events:none}"
		"g.f:hover rect{stroke:#000;stroke-width:0.5}"
		"#reset,#search{cursor:pointer}</style>\n%s"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text x=\"600\" y=\"20\" text-anchor=\"middle\" "
		"style=\"font-size:16px\">",
		(int)WIDTH, height, (int)WIDTH, height, script);
	rva_xml_escape(f, title ? title : "Flame graph");
	fprintf(f,
		"</text>\n<text id=\"reset\" x=\"10\" y=\"20\">Reset zoom</text>\n"
		"<text id=\"search\" x=\"1110\" y=\"20\">Search</text>\n"
		"<text id=\"matched\" x=\"1100\" y=\"%d\"></text>\n",
		height - 5);
	for (size_t i = 1; i < tr.n; i++)
		shown += ok[i] && depth[i] <= drawn;
	if (maxd > drawn)
		fprintf(f,
			"<text id=\"truncated\" x=\"10\" y=\"40\">" RVA_TRUNCATED_FRAME
			": call depth %u, %u levels drawn</text>\n",
			maxd, drawn);
	if (shown < tr.n - 1)
		fprintf(f,
			"<text id=\"merged\" x=\"1190\" y=\"40\" text-anchor=\"end\">%zu frames "
			"merged into their parents (narrower than a pixel, or past %u frames or "
			"%u levels)</text>\n",
			tr.n - 1 - shown, RVA_SVG_MAX_FRAMES, (unsigned)RVA_EXPORT_MAX_DEPTH);
	const char *unit = t->weighted ? "samples" : "us";
	double scale = t->weighted ? 1.0 : 1e-3;
	for (size_t i = 1; i < tr.n; i++) {
		const rva_tnode *nd = &tr.nodes[i];
		double w = (double)nd->incl / total;
		if (!ok[i] || depth[i] > drawn)
			continue;
		const char *name = t->names[nd->method];
		unsigned h = colour(name);
		int y = height - PAD_BOTTOM - FRAME_H * (int)depth[i];
		fprintf(f, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\"><title>",
			x[i], w, depth[i] - 1);
		name_escape(f, name);
		fprintf(f,
			" (%.3f %s, %.2f%%, %llu calls)</title><rect x=\"%.2f\" y=\"%d\" "
			"width=\"%.2f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" "
			"data-fill=\"rgb(%u,%u,%u)\" rx=\"2\"/><text x=\"%.2f\" "
			"y=\"%d\"></text></g>\n",
			(double)nd->incl * scale, unit, 100.0 * w, (unsigned long long)nd->calls,
			x[i] * WIDTH, y - FRAME_H, w * WIDTH, FRAME_H - 1, 200 + h % 55,
			80 + (h >> 8) % 130, (h >> 16) % 60, 200 + h % 55, 80 + (h >> 8) % 130,
			(h >> 16) % 60, x[i] * WIDTH + 3, y - 4);
	}
	fputs("</svg>\n", f);
	rc = ferror(f) ? -EIO : 0;
out_free:
	free(ok);
	free(x);
	free(depth);
	rva_tree_release(&tr);
	return rc;
}
