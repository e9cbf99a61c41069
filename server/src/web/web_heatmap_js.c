/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_heatmap_js.c — the heatmap page's brush, served as /static/heatmap.js
 * (web.c): a drag from one cell to another opens the merged flame graph of
 * the box they span (the smallest since and dur_min, the largest until and
 * dur_max of the two corners, from the cells' data- attributes, which
 * web_heatmap.c writes as integers).  A click without a drag follows the
 * cell's own link.  It builds a URL from integers and the page's own query
 * only; it writes no HTML.
 */
#include "web/web.h"
#include "web/web_int.h"

const char WEB_HEATMAP_JS[] =
	"'use strict';\n"
	"document.addEventListener('DOMContentLoaded', function () {\n"
	"  var svg = document.getElementById('heatmap');\n"
	"  if (!svg) return;\n"
	"  var start = null;\n"
	"  function cellOf(ev) {\n"
	"    var t = ev.target;\n"
	"    return t && t.getAttribute && t.getAttribute('data-count') ? t : null;\n"
	"  }\n"
	"  function num(r, k) { return Number(r.getAttribute('data-' + k)); }\n"
	"  svg.addEventListener('mousedown', function (ev) {\n"
	"    start = cellOf(ev);\n"
	"    if (start) ev.preventDefault();\n"
	"  });\n"
	"  svg.addEventListener('mouseup', function (ev) {\n"
	"    var end = cellOf(ev), a = start;\n"
	"    start = null;\n"
	"    if (!a || !end || a === end) return;\n"
	"    ev.preventDefault();\n"
	"    var since = Math.min(num(a, 'since'), num(end, 'since'));\n"
	"    var until = Math.max(num(a, 'until'), num(end, 'until'));\n"
	"    var dmin = Math.min(num(a, 'dur-min'), num(end, 'dur-min'));\n"
	"    var ma = num(a, 'dur-max'), mb = num(end, 'dur-max');\n"
	"    var dmax = ma < 0 || mb < 0 ? -1 : Math.max(ma, mb);\n"
	"    var q = new URLSearchParams(window.location.search), out = new URLSearchParams();\n"
	"    ['app', 'kind', 'issue'].forEach(function (k) {\n"
	"      if (q.get(k)) out.set(k, q.get(k));\n"
	"    });\n"
	"    out.set('since', since); out.set('until', until); out.set('dur_min', dmin);\n"
	"    if (dmax >= 0) out.set('dur_max', dmax);\n"
	"    out.set('range_since', svg.getAttribute('data-from'));\n"
	"    out.set('range_until', svg.getAttribute('data-to'));\n"
	"    window.location.href = '/aggregate?' + out.toString();\n"
	"  });\n"
	"});\n";
