/* SPDX-License-Identifier: Apache-2.0 */
/*
 * summary.c — a capture's local summary as a rearview.Summary protobuf,
 * built from librvanalysis' streaming summary, and the spool job that
 * computes and stores it.
 *
 * Invariants: nothing here runs on the loop thread (rvd_summary_work is a
 * spool job); every protobuf string points into the rva_summary, which
 * outlives the packing; the capture file is mapped read-only and unmapped
 * before returning, so a summary never holds more than the analysis' own
 * aggregates.  A capture with OFFCPU / THREAD_COUNTERS records (the daemon
 * appends them when it stores the capture, before the summary job reads
 * the file) gets its off-CPU reasons and its top methods' on/off-CPU split
 * from the same streaming summary (its trace holds the intervals, its
 * statistics the thread-CPU times).
 */
#include "summary.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"
#include "rearview/analysis.h"
#include "rearview/policy.h"
#include "rearview/summary.pb-c.h"

/* Matches reported at most (one per model and distinct chain). */
#define RVD_SUMMARY_MAX_MATCHES 64

/* Everything the Summary message points at, freed together. */
struct pb_store {
	Rearview__MethodStat *ms, **pms;
	Rearview__Chain *ch, **pch;
	char **frames; /* frame name pointers of every Chain, borrowed names */
	Rearview__SignatureMatch *sm, **psm;
	Rearview__OffCpuReason oc[RVA_OFF_NREASONS - 1], *poc[RVA_OFF_NREASONS - 1];
};

static void pb_store_free(struct pb_store *ps)
{
	free(ps->ms);
	free(ps->pms);
	free(ps->ch);
	free(ps->pch);
	free(ps->frames);
	free(ps->sm);
	free(ps->psm);
}

/* The merged-tree node reached by following `chain` from the root, or 0. */
static uint32_t tree_node_of(const rva_tree *tr, const uint32_t *chain, size_t depth)
{
	uint32_t node = 0;

	for (size_t i = 0; i < depth; i++) {
		uint32_t c = tr->nodes[node].first_child;

		while (c && tr->nodes[c].method != chain[i])
			c = tr->nodes[c].next_sibling;
		if (!c)
			return 0;
		node = c;
	}
	return node;
}

static size_t kept_frames(size_t depth)
{
	return depth < RVD_SUMMARY_MAX_FRAMES ? depth : RVD_SUMMARY_MAX_FRAMES;
}

/* A chain of its innermost kept_frames(depth) frames (the signature covers
 * them all); returns the number of frames[] used. */
static size_t fill_chain(Rearview__Chain *c, const rva_trace *t, const uint32_t *methods,
			 size_t depth, char **frames, uint64_t duration_ns, uint64_t signature)
{
	size_t n = kept_frames(depth), skip = depth - n;

	rearview__chain__init(c);
	for (size_t i = 0; i < n; i++)
		frames[i] = t->names[methods[skip + i]];
	c->frames = frames;
	c->n_frames = n;
	c->duration_ns = duration_ns;
	c->signature = signature;
	return n;
}

/* Grows the path stacks of the tree walk to hold `need` frames. */
static int path_reserve(const char ***names, uint32_t **ids, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 64;
	const char **n;
	uint32_t *i;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*names, ncap * sizeof(**names));
	if (!n)
		return -ENOMEM;
	*names = n;
	i = realloc(*ids, ncap * sizeof(**ids));
	if (!i)
		return -ENOMEM;
	*ids = i;
	*cap = ncap;
	return 0;
}

/* Tests every signature model of the policy's campaigns against the path to
 * `node` (names[0..depth)); appends matches. */
static void match_node(const struct Rearview__PolicyBody *policy, const rva_trace *t,
		       const rva_tnode *node, const char **names, const uint32_t *ids, size_t depth,
		       struct pb_store *ps, size_t *n)
{
	uint64_t mean = node->calls ? (uint64_t)node->incl / node->calls : 0;

	for (size_t ci = 0; ci < policy->n_campaigns; ci++) {
		const Rearview__Campaign *c = policy->campaigns[ci];

		for (size_t mi = 0; mi < c->n_signatures && *n < RVD_SUMMARY_MAX_MATCHES; mi++) {
			const Rearview__SignatureModel *m = c->signatures[mi];
			Rearview__SignatureMatch *sm = &ps->sm[*n];

			if (!rvp_signature_match(m, names, depth, mean))
				continue;
			rearview__signature_match__init(sm);
			sm->model_id = m->id;
			sm->signature = rva_signature(t, ids, depth);
			sm->duration_ns = mean;
			sm->count = node->calls > UINT32_MAX ? UINT32_MAX : (uint32_t)node->calls;
			ps->psm[*n] = sm;
			(*n)++;
		}
	}
}

/* Matches of every campaign's signature models against every distinct call
 * path: a walk of the merged tree holding only the current path, so memory
 * does not grow with the number of distinct chains. */
static int match_models(const struct Rearview__PolicyBody *policy, const rva_trace *t,
			const rva_tree *tr, struct pb_store *ps, Rearview__Summary *s)
{
	const char **names = NULL;
	uint32_t *ids = NULL, node;
	size_t cap = 0, depth = 0, n = 0;
	int rc = 0;

	if (!policy || !policy->n_campaigns || !tr->n)
		return 0;
	ps->sm = calloc(RVD_SUMMARY_MAX_MATCHES, sizeof(*ps->sm));
	ps->psm = calloc(RVD_SUMMARY_MAX_MATCHES, sizeof(*ps->psm));
	if (!ps->sm || !ps->psm)
		return -ENOMEM;
	/* Pre-order walk; depth is the length of the path ending at node. */
	node = tr->nodes[0].first_child;
	while (node && n < RVD_SUMMARY_MAX_MATCHES) {
		if ((rc = path_reserve(&names, &ids, &cap, depth + 1)) < 0)
			break;
		names[depth] = t->names[tr->nodes[node].method];
		ids[depth] = tr->nodes[node].method;
		match_node(policy, t, &tr->nodes[node], names, ids, depth + 1, ps, &n);
		if (tr->nodes[node].first_child) {
			node = tr->nodes[node].first_child;
			depth++;
			continue;
		}
		while (node && !tr->nodes[node].next_sibling) {
			node = tr->nodes[node].parent;
			depth--;
		}
		if (node)
			node = tr->nodes[node].next_sibling;
	}
	free(names);
	free(ids);
	s->matches = ps->psm;
	s->n_matches = n;
	return rc;
}

/* The off-CPU reasons of the streaming summary's trace (those with time),
 * and each top method's (ids[]) on/off-CPU split from its statistics. */
static void fill_offcpu(const rva_summary *sum, const uint32_t *ids, struct pb_store *ps,
			Rearview__Summary *s)
{
	rva_offcpu_reason r[RVA_OFF_NREASONS - 1];
	size_t nr = rva_offcpu_reasons(sum->trace, r);

	assert(nr <= RVA_OFF_NREASONS - 1);
	for (size_t i = 0; i < nr; i++) {
		if (r[i].ns <= 0)
			continue;
		rearview__off_cpu_reason__init(&ps->oc[s->n_offcpu_reasons]);
		ps->oc[s->n_offcpu_reasons].reason = (char *)r[i].name;
		ps->oc[s->n_offcpu_reasons].ns = (uint64_t)r[i].ns;
		ps->poc[s->n_offcpu_reasons] = &ps->oc[s->n_offcpu_reasons];
		s->n_offcpu_reasons++;
	}
	s->offcpu_reasons = ps->poc;
	for (size_t i = 0; i < s->n_top_self; i++) {
		const rva_mstat *st = &sum->stats[ids[i]];
		int64_t on = st->cpu_incl > 0 ? st->cpu_incl : 0;
		int64_t off = st->incl > on ? st->incl - on : 0;

		assert(ids[i] < sum->trace->nmethods);
		ps->ms[i].on_cpu_ns = (uint64_t)on;
		ps->ms[i].off_cpu_ns = (uint64_t)off;
	}
}

/* Fills s from the streaming summary; pointers go into ps and sum. */
static int fill_summary(const rva_summary *sum, const struct Rearview__PolicyBody *policy,
			size_t ntop, const rva_chains *all, struct pb_store *ps,
			Rearview__Summary *s)
{
	const rva_trace *t = sum->trace;
	size_t nlong = all->n, nframes = kept_frames(sum->anomaly_depth), ntopm;
	uint32_t *ids = calloc(ntop ? ntop : 1, sizeof(*ids));
	char **fr;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < nlong; i++)
		nframes += kept_frames(all->v[i].depth);
	ntopm = rva_top_self(t, sum->stats, ids, ntop);
	ps->ms = calloc(ntopm ? ntopm : 1, sizeof(*ps->ms));
	ps->pms = calloc(ntopm ? ntopm : 1, sizeof(*ps->pms));
	ps->ch = calloc(nlong + 1, sizeof(*ps->ch));
	ps->pch = calloc(nlong + 1, sizeof(*ps->pch));
	ps->frames = calloc(nframes ? nframes : 1, sizeof(*ps->frames));
	if (!ps->ms || !ps->pms || !ps->ch || !ps->pch || !ps->frames) {
		free(ids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nmethods; i++)
		s->total_calls += sum->stats[i].calls;
	s->window_ns = t->end > t->start ? (uint64_t)(t->end - t->start) : 0;
	for (size_t i = 0; i < ntopm; i++) {
		const rva_mstat *st = &sum->stats[ids[i]];

		rearview__method_stat__init(&ps->ms[i]);
		ps->ms[i].name = t->names[ids[i]];
		ps->ms[i].calls = st->calls;
		ps->ms[i].self_ns = st->self > 0 ? (uint64_t)st->self : 0;
		ps->ms[i].inclusive_ns = st->incl > 0 ? (uint64_t)st->incl : 0;
		ps->pms[i] = &ps->ms[i];
	}
	s->top_self = ps->pms;
	s->n_top_self = ntopm;
	if (rva_trace_has_offcpu(t))
		fill_offcpu(sum, ids, ps, s);
	free(ids);

	fr = ps->frames;
	for (size_t i = 0; i < nlong; i++) {
		const rva_chain *c = &all->v[i];

		/* Its innermost frames (nmethods >= kept_frames(depth)). */
		fr += fill_chain(&ps->ch[i], t, c->methods, c->nmethods, fr,
				 c->incl > 0 ? (uint64_t)c->incl : 0, c->signature);
		ps->pch[i] = &ps->ch[i];
	}
	s->longest_chains = ps->pch;
	s->n_longest_chains = nlong;
	if (sum->anomaly_chain && sum->anomaly_depth) {
		uint32_t node = tree_node_of(&sum->tree, sum->anomaly_chain, sum->anomaly_depth);
		int64_t incl = node ? sum->tree.nodes[node].incl : 0;

		fill_chain(&ps->ch[nlong], t, sum->anomaly_chain, sum->anomaly_depth, fr,
			   incl > 0 ? (uint64_t)incl : 0,
			   rva_signature(t, sum->anomaly_chain, sum->anomaly_depth));
		ps->pch[nlong] = &ps->ch[nlong];
		s->chains_at_anomaly = &ps->pch[nlong];
		s->n_chains_at_anomaly = 1;
	}
	return match_models(policy, t, &sum->tree, ps, s);
}

int rvd_summary_build(const uint8_t *buf, size_t len, const struct Rearview__PolicyBody *policy,
		      size_t ntop, uint8_t **out, size_t *out_len, char *err, size_t errsz)
{
	Rearview__Summary s = REARVIEW__SUMMARY__INIT;
	struct pb_store ps = {0};
	rva_summary sum = {0};
	rva_chains all = {0};
	rva_error e = {{0}};
	size_t n;
	int rc;

	*out = NULL;
	*out_len = 0;
	rc = rva_capture_summarize(buf, len, &sum, &e);
	if (rc < 0) {
		snprintf(err, errsz, "%s", e.msg[0] ? e.msg : strerror(-rc));
		return rc;
	}
	/* The upload's summary carries measured self times, as the server's
	 * sums (a muted function's estimate is for rvtrace's views). */
	rva_mstat_measured(sum.stats, sum.trace->nmethods);
	if ((rc = rva_chains_from_tree(sum.trace, &sum.tree, ntop, &all)) < 0 ||
	    (rc = fill_summary(&sum, policy, ntop, &all, &ps, &s)) < 0) {
		snprintf(err, errsz, "%s", strerror(-rc));
		goto release;
	}
	n = rearview__summary__get_packed_size(&s);
	*out = malloc(n ? n : 1);
	if (!*out) {
		rc = -ENOMEM;
		snprintf(err, errsz, "%s", strerror(ENOMEM));
		goto release;
	}
	*out_len = rearview__summary__pack(&s, *out);
release:
	pb_store_free(&ps);
	rva_chains_release(&all);
	rva_summary_release(&sum);
	return rc;
}

int rvd_summary_file(const char *path, const struct Rearview__PolicyBody *policy, size_t ntop,
		     uint8_t **out, size_t *out_len, char *err, size_t errsz)
{
	struct stat stb;
	void *map;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &stb) < 0) {
		rc = -errno;
		snprintf(err, errsz, "%s: %s", path, strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (stb.st_size <= 0) {
		close(fd);
		snprintf(err, errsz, "%s: empty capture", path);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)stb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		rc = -errno;
		snprintf(err, errsz, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* One forward pass: let the kernel read ahead and drop pages behind. */
	madvise(map, (size_t)stb.st_size, MADV_SEQUENTIAL);
	rc = rvd_summary_build(map, (size_t)stb.st_size, policy, ntop, out, out_len, err, errsz);
	munmap(map, (size_t)stb.st_size);
	return rc;
}

static struct rvd_sandbox *summary_sandbox;

void rvd_summary_use_sandbox(struct rvd_sandbox *sb)
{
	summary_sandbox = sb;
}

/* rvd_summary_file in the sandboxed parser: the file opened here, its
 * descriptor and the packed policy handed over. */
static int summary_sandboxed(const char *path, const struct Rearview__PolicyBody *policy,
			     uint8_t **out, size_t *out_len, char *err, size_t errsz)
{
	uint8_t *pol = NULL;
	size_t pol_len = 0;
	struct stat stb;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &stb) < 0) {
		rc = -errno;
		snprintf(err, errsz, "capture file: %s", strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (stb.st_size <= 0) {
		close(fd);
		snprintf(err, errsz, "capture file: empty");
		return -EINVAL;
	}
	if (policy) {
		pol_len = rearview__policy_body__get_packed_size(policy);
		pol = malloc(pol_len ? pol_len : 1);
		if (!pol) {
			close(fd);
			snprintf(err, errsz, "%s", strerror(ENOMEM));
			return -ENOMEM;
		}
		rearview__policy_body__pack(policy, pol);
	}
	rc = rvd_sandbox_summarize(summary_sandbox, fd, (size_t)stb.st_size, pol, pol_len,
				   RVD_SUMMARY_MAX_BYTES, out, out_len, err, errsz);
	free(pol);
	close(fd);
	return rc;
}

void rvd_summary_work(void *arg)
{
	struct rvd_summary_job *j = arg;
	char path[400];
	uint8_t *buf = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/captures/%s", j->sp->dir, j->file);
	if (summary_sandbox)
		j->status = summary_sandboxed(path, rvd_enforce_policy(j->enf), &buf, &len, j->err,
					      sizeof(j->err));
	else
		j->status = rvd_summary_file(path, rvd_enforce_policy(j->enf), RVD_SUMMARY_TOP,
					     &buf, &len, j->err, sizeof(j->err));
	if (j->status == 0) {
		j->status = rvd_spool_put_summary(j->sp, j->id, buf, len);
		if (j->status < 0)
			snprintf(j->err, sizeof(j->err), "storing: %s", strerror(-j->status));
		j->len = len;
	}
	free(buf);
}
