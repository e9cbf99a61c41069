/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.c — a stored trace's exports (export.h): the fixed table of
 * formats and the export object the HTTP layer streams (stream.c).
 *
 * Invariants: a format comes only from FORMATS (a request names one, never a
 * path or a content type); an export owns its trace from rvs_export_new
 * until rvs_export_free; writing it reads the trace only, so an export may be
 * written from any thread while nothing else holds it.
 */
#include "model/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

static const struct rvs_export_fmt FORMATS[] = {
	{"folded", "text/plain; charset=utf-8", "folded"},
	{"chrome", "application/json", "json"},
	{"speedscope", "application/json", "speedscope.json"},
	{"perfetto", "application/octet-stream", "perfetto-trace"},
	{"android", "application/octet-stream", "trace"},
	{"svg", "image/svg+xml", "svg"},
	{"nanoscope", "text/plain; charset=utf-8", "nanoscope.txt"},
	{"pprof", "application/octet-stream", "pb.gz"},
};

static int run_export(const struct rvs_export_fmt *f, FILE *out, const rva_trace *t, const char *id,
		      const rva_export_meta *meta)
{
	switch (f - FORMATS) {
	case 0:
		return rva_export_folded(out, t);
	case 1:
		return rva_export_chrome(out, t);
	case 2:
		return rva_export_speedscope(out, t);
	case 3:
		return rva_export_perfetto_meta(out, t, meta);
	case 4:
		return rva_export_android(out, t);
	case 5:
		return rva_export_svg(out, t, id);
	case 6:
		return rva_export_nanoscope(out, t, 0);
	default:
		return rva_export_pprof(out, t);
	}
}

const struct rvs_export_fmt *rvs_export_format(const char *name)
{
	for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++)
		if (strcmp(name, FORMATS[i].name) == 0)
			return &FORMATS[i];
	return NULL;
}

struct rvs_export {
	const struct rvs_export_fmt *fmt;
	rva_trace *t;
	char id[40];
	char *origin[4]; /* owned: app, version, device, model; NULL unknown */
	rva_export_meta meta;
};

int rvs_export_write(const struct rvs_export *x, FILE *out)
{
	return run_export(x->fmt, out, x->t, x->id, &x->meta);
}

void rvs_export_free(struct rvs_export *x)
{
	if (!x)
		return;
	rva_trace_free(x->t);
	for (int i = 0; i < 4; i++)
		free(x->origin[i]);
	free(x);
}

int rvs_export_set_origin(struct rvs_export *x, const char *app, const char *version,
			  const char *device, const char *model)
{
	const char *v[4] = {app, version, device, model};
	for (int i = 0; i < 4; i++) {
		free(x->origin[i]);
		x->origin[i] = v[i] && v[i][0] ? strdup(v[i]) : NULL;
		if (v[i] && v[i][0] && !x->origin[i])
			return -ENOMEM;
	}
	x->meta = (rva_export_meta){x->origin[0], x->origin[1], x->origin[2], x->origin[3]};
	return 0;
}

int rvs_export_new(const struct rvs_export_fmt *f, struct rva_trace *t, const char *id,
		   struct rvs_export **out)
{
	struct rvs_export *x = calloc(1, sizeof *x);

	if (!x)
		return -ENOMEM;
	x->fmt = f;
	x->t = t;
	snprintf(x->id, sizeof x->id, "%s", id);
	*out = x;
	return 0;
}
