/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aggregate_pprof.c — the call-path aggregates as pprof profiles
 * (aggregate_pprof.h; API.md "Aggregates as pprof"): the JSON reply of
 * /api/v1/aggregate(/diff) (aggregate.c), made by the same handler from the
 * same parameters, turned into profile.proto by rva_export_pprof_tree.
 *
 * Invariants: the JSON handler sees exactly the query it would see on its
 * own route (the diff's "side" is taken out first), so the parameters, the
 * errors and the figures are its; a reply other than 200 is passed on as
 * it is; a profile is the reply's nodes, one sample per node with a value,
 * its stack the node's path (the app's root frame outermost).
 */
#include "api/aggregate.h"
#include "api/aggregate_pprof.h"
#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rearview/analysis.h"

enum side { SIDE_A, SIDE_B, SIDE_DIFF, SIDE_ONE };

static int64_t ival(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* The profile of doc's nodes, gzip'd, into *out (caller frees).  0,
 * -EINVAL (a node's parent is not listed before it), -ENOMEM, -EIO. */
static int profile_of(json_t *doc, enum side side, char **out, size_t *len)
{
	static const char *const one[][2] = {{"wall", "nanoseconds"}, {"calls", "count"}};
	static const char *const per_trace[][2] = {{"wall", "nanoseconds"}};
	json_t *nodes = json_object_get(doc, "nodes"), *nd;
	size_t n = json_array_size(nodes), nv = side == SIDE_ONE ? 2 : 1, i;
	const char **name = calloc(n + 1, sizeof *name);
	int64_t *parent = calloc(n + 1, sizeof *parent), *id = calloc(n + 1, sizeof *id);
	int64_t *v = calloc((n + 1) * nv, sizeof *v);
	FILE *f = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	if (!name || !parent || !id || !v)
		goto out;
	json_array_foreach(nodes, i, nd)
	{
		int64_t p = ival(nd, "parent");
		const char *m = json_string_value(json_object_get(nd, "method"));
		id[i] = ival(nd, "node");
		name[i] = m ? m : "(unnamed)";
		parent[i] = -1;
		/* Preorder: the parent is listed before, usually just before. */
		for (size_t j = i; p && j-- > 0;)
			if (id[j] == p) {
				parent[i] = (int64_t)j;
				break;
			}
		if (p && parent[i] < 0) {
			rc = -EINVAL;
			goto out;
		}
		switch (side) {
		case SIDE_ONE:
			v[2 * i] = ival(nd, "self_ns");
			v[2 * i + 1] = ival(nd, "calls");
			break;
		case SIDE_A:
			v[i] = ival(nd, "a_self_ns_per_trace");
			break;
		case SIDE_B:
			v[i] = ival(nd, "b_self_ns_per_trace");
			break;
		case SIDE_DIFF:
			v[i] = ival(nd, "self_delta_ns");
			break;
		}
	}
	rva_pprof_tree tr = {n, nv, name, parent, v, side == SIDE_ONE ? one : per_trace};
	if (!(f = open_memstream(out, len)))
		goto out;
	rc = rva_export_pprof_tree(f, &tr);
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc) {
		free(*out);
		*out = NULL;
	}
out:
	free(name);
	free(parent);
	free(id);
	free(v);
	return rc;
}

/* Replaces c->q's 200 JSON reply with its profile (anything else stays). */
static void to_pprof(struct rvs_call *c, enum side side, const char *file)
{
	static const char *const suffix[] = {"-a", "-b", "-diff", ""};
	json_t *doc;
	char *body;
	size_t len;
	int rc;

	if (c->q->status != 200)
		return;
	doc = json_loadb(c->q->body, c->q->len, 0, NULL);
	free(c->q->body);
	c->q->body = NULL;
	c->q->len = 0;
	if (!doc)
		return rvs_query_set_error(c->q, 500, "out of memory");
	rc = profile_of(doc, side, &body, &len);
	json_decref(doc);
	if (rc)
		return rvs_query_set_error(c->q, rc == -EINVAL ? 500 : 503,
					   rc == -EINVAL ? "aggregate not a tree"
							 : "out of memory");
	c->q->status = 200;
	c->q->body = body;
	c->q->len = len;
	c->q->content_type = "application/octet-stream";
	snprintf(c->q->disposition, sizeof c->q->disposition, "attachment; filename=\"%s%s.pb.gz\"",
		 file, suffix[side]);
}

void rvs_agg_api_pprof(struct rvs_call *c)
{
	rvs_agg_api(c);
	to_pprof(c, SIDE_ONE, "aggregate");
}

void rvs_agg_api_diff_pprof(struct rvs_call *c)
{
	const char *query = c->query;
	char side[8] = "diff", *rest = malloc(strlen(query) + 1), *w;
	enum side s;

	if (!rest)
		return rvs_query_set_error(c->q, 503, "out of memory");
	if (rvs_query_param(query, "side", side, sizeof side) < 0)
		side[0] = '?';
	if (!strcmp(side, "a"))
		s = SIDE_A;
	else if (!strcmp(side, "b"))
		s = SIDE_B;
	else if (!strcmp(side, "diff"))
		s = SIDE_DIFF;
	else {
		free(rest);
		return rvs_query_set_error(c->q, 400, "bad value for parameter: side");
	}
	/* The query without its side=… parameters, for the JSON handler. */
	w = rest;
	for (const char *p = query; *p;) {
		size_t n = strcspn(p, "&");
		if (!(n >= 5 && !strncmp(p, "side=", 5)) && !(n == 4 && !strncmp(p, "side", 4))) {
			if (w != rest)
				*w++ = '&';
			memcpy(w, p, n);
			w += n;
		}
		p += n + (p[n] == '&');
	}
	*w = '\0';
	c->query = rest;
	rvs_agg_api_diff(c);
	c->query = query;
	free(rest);
	to_pprof(c, s, "aggregate");
}
