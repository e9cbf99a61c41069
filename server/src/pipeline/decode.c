/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decode.c — the trace decoder (decode.h).
 *
 * Per upload: look up its compression in uploads, read the blob, inflate it
 * with the payload codec (payload.h) when COMPRESSION_ZSTD, or when
 * COMPRESSION_ZSTD_SHUFFLED (zstd over the shuffled form), run
 * rva_capture_summarize (memory bounded by distinct methods and chains, not
 * by call count), then compute the trace's index rows (traces /
 * trace_methods / trace_chains / trace_unresolved, its signature and issue)
 * in C and have the store write them in one transaction (store.h
 * index_write; the SQL is the backend's).  A summary-only upload gets its
 * index rows from the device's Summary.
 * Invariants: a decode either indexes the whole trace or nothing.  When
 * nothing, its item's rc says why: -EAGAIN when the store or blob failed
 * for a while (store.h's transient errors, a lane that cannot connect):
 * the upload stays queued and is decoded again later (lanes.c); any other
 * rc is the capture's own fault (its bytes do not inflate, parse or index)
 * and the caller quarantines it with the reason written here or by the
 * store.  Up to RVS_DECODE_LANES decodes run at once (api.c drains that
 * many queue partitions), each on its own lane: its own index connection
 * (store.h index_lane_open), zstd context and capture buffer, taken under
 * the lane's mutex.
 */
#include "pipeline/decode.h"
#include "pipeline/index_cap.h"
#include "model/agg.h"
#include "base/issue.h"
#include "base/log.h"
#include "base/util.h"
#include "store/store.h"
#include "rearview/common.h"
#include "model/symstore.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zstd.h>

#include "rearview/analysis.h"
#include "rearview/summary.pb-c.h"
#include "rearview/upload.pb-c.h"

#define TOP_METHODS 20
#define TOP_CHAINS  10
/* Bounds on what a device's Summary may add to the index (with
 * index_cap.h's). */
#define SUMMARY_MAX_ROWS  1000
#define SUMMARY_MAX_DEPTH 512

/* A capture buffer up to this size is kept between decodes: refaulting
 * 32 MiB of fresh pages per capture costs more than decompressing into it. */
#define KEEP_BUF_MAX (64u << 20)

/* One decoder's state; RVS_DECODE_LANES of them decode side by side. */
struct lane {
	const struct rvs_store_ops *ops;
	struct rvs_store *store;
	const char *symbols_dir;   /* "" : no symbol store */
	struct rvs_index_lane *ix; /* opened on first use */
	pthread_mutex_t mu;
	ZSTD_DCtx *dctx; /* reused: its window buffers are allocated once */
	uint8_t *buf;	 /* the capture buffer (d->bufcap bytes), reused */
	size_t bufcap;
};

struct rvs_decode {
	const struct rvs_store_ops *ops;
	struct rvs_store *store; /* rvs_store_acquire'd */
	char symbols_dir[512];
	struct lane lane[RVS_DECODE_LANES];
};

/* rvs_payload_inflate (at most max bytes) into the lane's reused buffer when
 * the frames declare a total of at most KEEP_BUF_MAX (a device's output
 * always does): *out is then d->buf, not to be freed.  Otherwise *out is
 * malloc'd and *owned set. */
static int inflate(struct lane *d, int comp, const uint8_t *in, size_t len, size_t max,
		   uint8_t **out, size_t *outlen, int *owned)
{
	size_t total = 0;
	int rc = rvs_payload_size(comp, in, len, max, &total);

	*owned = 0;
	if (rc < 0)
		return rc;
	if (rc == 1 || total > KEEP_BUF_MAX) {
		*owned = 1;
		return rvs_payload_inflate(comp, in, len, max, out, outlen);
	}
	if (!d->dctx && !(d->dctx = ZSTD_createDCtx()))
		return -ENOMEM;
	if (d->bufcap < total) {
		uint8_t *nb = realloc(d->buf, total);
		if (!nb)
			return -ENOMEM;
		d->buf = nb;
		d->bufcap = total;
	}
	*out = d->buf;
	return rvs_payload_inflate_to(d->dctx, comp, in, len, d->buf, total, outlen);
}

static int open_lane(struct lane *d)
{
	if (d->ix)
		return 0;
	return d->ops->index_lane_open(d->store, &d->ix);
}

/* The bytes of name in a chain's text: cut at RVS_INDEX_NAME_MAX (whole
 * UTF-8 characters, then "…") and its ';'. */
static size_t frame_len(const char *name, int *cut)
{
	size_t l = strlen(name);
	*cut = l > RVS_INDEX_NAME_MAX;
	if (!*cut)
		return l;
	l = RVS_INDEX_NAME_MAX - 3;
	while (l > 0 && ((unsigned char)name[l] & 0xc0) == 0x80)
		l--;
	return l;
}

/* "name;name;...;" of the n names name_at(ctx, i), the innermost of a path
 * `outer` frames deeper, into a malloc'd string (the chain column's form);
 * NULL on no memory.  Each name is cut at RVS_INDEX_NAME_MAX bytes (ending
 * "…"); only the innermost frames are kept, at most RVS_INDEX_CHAIN_FRAMES
 * and RVS_INDEX_CHAIN_TEXT bytes of them; frames left out (outer ones
 * included) are counted first, as "[K outer frames truncated];" (the row's
 * depth column keeps the whole depth): a 100 k deep chain was ~3.5 MB of
 * text per row, and 600 frames of 4 KB names 2.4 MB. */
static char *join_chain(size_t outer, size_t n, const char *(*name_at)(const void *, size_t),
			const void *ctx)
{
	size_t from = n > RVS_INDEX_CHAIN_FRAMES ? n - RVS_INDEX_CHAIN_FRAMES : 0;
	size_t text = 48; /* the marker's room */
	char *s = NULL;
	size_t sl = 0;
	FILE *f;

	for (size_t i = n; i > from; i--) {
		const char *name = name_at(ctx, i - 1);
		int cut;
		size_t l = frame_len(name ? name : "?", &cut) + 3 * (size_t)cut + 1;
		if (text + l > RVS_INDEX_CHAIN_TEXT && i < n) {
			from = i;
			break;
		}
		text += l;
	}
	if (!(f = open_memstream(&s, &sl)))
		return NULL;
	if (outer + from)
		fprintf(f, "[%zu outer frames truncated];", outer + from);
	for (size_t i = from; i < n; i++) {
		const char *name = name_at(ctx, i);
		int cut;
		size_t l = frame_len(name ? name : "?", &cut);
		fprintf(f, "%.*s%s;", (int)l, name ? name : "?", cut ? "\xe2\x80\xa6" : "");
	}
	if (fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

struct chain_ids {
	const rva_trace *t;
	const uint32_t *ids;
};

static const char *chain_id_name(const void *ctx, size_t i)
{
	const struct chain_ids *c = ctx;
	return c->ids[i] < c->t->nmethods ? c->t->names[c->ids[i]] : NULL;
}

static const char *frame_name(const void *ctx, size_t i)
{
	return ((const Rearview__Chain *)ctx)->frames[i];
}

/* The chain column of method ids chain[0..n) of t, the innermost frames of
 * a path `outer` frames deeper. */
static char *chain_text(const rva_trace *t, const uint32_t *chain, size_t n, size_t outer)
{
	struct chain_ids c = {t, chain};
	return join_chain(outer, n, chain_id_name, &c);
}

/* The index rows of one trace while they are built; r->t points into the
 * rest.  rows_release frees what the rows own. */
struct rows {
	struct rvs_index_trace t;
	struct rvs_index_method *m;
	size_t nm;
	struct rvs_index_chain c[2 * TOP_CHAINS];
	char *text[2 * TOP_CHAINS]; /* c[i].chain, owned */
	size_t nc;
	char issue[17];
	char (*bid)[2 * 64 + 1]; /* unresolved build ids, and pointers to them */
	const char **bidp;
	size_t budget;	   /* index_cap.h's, of the upload */
	size_t chain_text; /* bytes of c[].chain */
	struct rvs_index_cut cut;
	char cut_text[160];
};

static void rows_init(struct rows *r, const char *trace_id, uint64_t lease)
{
	memset(r, 0, sizeof *r);
	r->t.trace_id = trace_id;
	r->t.lease = lease;
	r->t.decoded_at = (int64_t)time(NULL);
	r->t.duration_ns = r->t.nmethods = r->t.dropped = -1;
	r->budget = SIZE_MAX;
}

static void rows_release(struct rows *r)
{
	for (size_t i = 0; i < r->nc; i++)
		free(r->text[i]);
	free(r->m);
	free(r->bid);
	free(r->bidp);
	memset(r, 0, sizeof *r);
}

/* One trace_chains row; takes text (freed by rows_release, or here on
 * failure or when the row is left out: past the trace's chain budget,
 * but for each kind's first).  0 or -ENOMEM (text NULL). */
static int add_chain(struct rows *r, const char *kind, int rank, uint64_t signature, char *text,
		     size_t depth, int64_t self, int64_t incl)
{
	struct rvs_index_chain *c;
	size_t len;

	assert(r->nc < 2 * TOP_CHAINS);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (rank > 1 && r->chain_text + len > rvs_index_chain_budget(r->budget)) {
		free(text);
		r->cut.chains++;
		return 0;
	}
	r->chain_text += len;
	c = &r->c[r->nc];
	r->text[r->nc++] = text;
	c->kind = kind;
	c->rank = rank;
	snprintf(c->signature, sizeof c->signature, "%016" PRIx64, signature);
	c->chain = text;
	c->depth = (int64_t)(depth & INT64_MAX);
	c->self_ns = self;
	c->incl_ns = incl;
	return 0;
}

/* A method row's thread-CPU time (a capture with CPU data: OFFCPU /
 * THREAD_COUNTERS records, or CPU clocks on its events), each part held
 * within [0, its wall time] so the off-CPU rest is never negative. */
static void cpu_split(struct rvs_index_method *row, const rva_mstat *ms)
{
	int64_t cs = ms->cpu_self < 0 ? 0 : ms->cpu_self, ci = ms->cpu_incl < 0 ? 0 : ms->cpu_incl;

	row->has_cpu = 1;
	row->cpu_self_ns = (uint64_t)cs < row->self_ns ? (uint64_t)cs : row->self_ns;
	row->cpu_incl_ns = (uint64_t)ci < row->incl_ns ? (uint64_t)ci : row->incl_ns;
}

/* The method and chain rows of a decoded capture, and its build ids still
 * unresolved (left[i] set: symbolize). */
static int rows_capture(struct rows *r, const rva_summary *sum, const unsigned char *left)
{
	const rva_trace *t = sum->trace;
	uint32_t top[TOP_METHODS];
	size_t ntop = rva_top_self(t, sum->stats, top, TOP_METHODS);
	rva_chains ch = {0};
	int rc = 0;

	r->t.anomaly_name = t->anomaly_name;
	r->t.duration_ns = (int64_t)(t->end - t->start);
	r->t.nmethods = (int64_t)t->nmethods;
	r->t.dropped = (int64_t)t->dropped;
	r->t.agg = sum;
	r->t.agg_max_nodes = rvs_index_agg_nodes(r->budget);
	r->t.agg_build = rvs_agg_build;
	r->t.agg_release = rvs_agg_rows_release;
	if (t->nmethods && !(r->m = calloc(t->nmethods, sizeof *r->m)))
		return -ENOMEM;
	for (size_t m = 0; m < t->nmethods; m++) {
		const rva_mstat *ms = &sum->stats[m];
		struct rvs_index_method *row;
		if (!ms->calls)
			continue;
		row = &r->m[r->nm++];
		row->method = t->names[m];
		row->calls = ms->calls;
		row->self_ns = (uint64_t)ms->self;
		row->incl_ns = (uint64_t)ms->incl;
		if (t->has_cpu)
			cpu_split(row, ms);
		for (size_t k = 0; k < ntop; k++)
			if (top[k] == m)
				row->self_rank = (int64_t)k + 1;
	}
	rvs_index_cap_methods(r->m, &r->nm, r->budget, &r->cut);
	if (sum->anomaly_chain && sum->anomaly_depth)
		rc = add_chain(r, "anomaly", 1,
			       rva_signature(t, sum->anomaly_chain, sum->anomaly_depth),
			       chain_text(t, sum->anomaly_chain, sum->anomaly_depth, 0),
			       sum->anomaly_depth, -1, -1);
	if (!rc && rva_chains_from_tree(t, &sum->tree, TOP_CHAINS, &ch) < 0)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < ch.n; i++) {
		assert(ch.v[i].nmethods <= ch.v[i].depth);
		rc = add_chain(r, "top", (int)i + 1, ch.v[i].signature,
			       chain_text(t, ch.v[i].methods, ch.v[i].nmethods,
					  ch.v[i].depth - ch.v[i].nmethods),
			       ch.v[i].depth, ch.v[i].self, ch.v[i].incl);
	}
	rva_chains_release(&ch);
	if (rc)
		return rc;
	r->t.unresolved_replace = 1;
	if (!t->nunresolved)
		return 0;
	if (!(r->bid = calloc(t->nunresolved, sizeof *r->bid)) ||
	    !(r->bidp = calloc(t->nunresolved, sizeof *r->bidp)))
		return -ENOMEM;
	for (size_t i = 0; i < t->nunresolved; i++) {
		const rva_unresolved *u = &t->unresolved[i];
		if (!left[i])
			continue;
		for (uint32_t k = 0; k < u->build_id_len; k++)
			snprintf(r->bid[i] + 2 * k, 3, "%02x", u->build_id[k]);
		r->bidp[r->t.nunresolved++] = r->bid[i];
	}
	return 0;
}

/* The method and chain rows of a device's Summary (top_self, the chains at
 * the anomaly and the longest chains), bounded: the summary is untrusted.
 * A method named twice keeps its first row.  The rows have no CPU split
 * (has_cpu 0: NULL): a MethodStat splits only its inclusive time, and the
 * method page's on/off-CPU figures need both. */
static int rows_summary(struct rows *r, const Rearview__Summary *ps)
{
	size_t n = ps->n_top_self < SUMMARY_MAX_ROWS ? ps->n_top_self : SUMMARY_MAX_ROWS;
	int rc = 0;

	if (ps->window_ns)
		r->t.duration_ns = (int64_t)(ps->window_ns & INT64_MAX);
	r->t.methods_first_wins = 1;
	if (n && !(r->m = calloc(n, sizeof *r->m)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const Rearview__MethodStat *m = ps->top_self[i];
		struct rvs_index_method *row;
		if (!m->name || !m->name[0])
			continue;
		if (strlen(m->name) > RVS_INDEX_NAME_MAX) {
			r->cut.methods++;
			continue;
		}
		row = &r->m[r->nm++];
		row->method = m->name;
		row->calls = m->calls;
		row->self_ns = m->self_ns;
		row->incl_ns = m->inclusive_ns;
		row->self_rank = (int64_t)i + 1;
	}
	rvs_index_cap_methods(r->m, &r->nm, r->budget, &r->cut);
	for (int pass = 0; pass < 2 && !rc; pass++) {
		Rearview__Chain **v = pass ? ps->longest_chains : ps->chains_at_anomaly;
		size_t nv = pass ? ps->n_longest_chains : ps->n_chains_at_anomaly;
		int rank = 0;
		for (size_t i = 0; i < nv && rank < TOP_CHAINS && !rc; i++) {
			size_t depth = v[i]->n_frames < SUMMARY_MAX_DEPTH ? v[i]->n_frames
									  : SUMMARY_MAX_DEPTH;
			if (!depth)
				continue;
			rc = add_chain(r, pass ? "top" : "anomaly", ++rank, v[i]->signature,
				       join_chain(0, depth, frame_name, v[i]), depth, -1,
				       (int64_t)(v[i]->duration_ns & INT64_MAX));
		}
	}
	return rc;
}

/* The traces row's anomaly signature (its chain at the anomaly), signature
 * (that, else its first top chain's: migration 5) and issue (the anomaly
 * chain's signature folded: issue.h, migration 9), and the row arrays. */
static int rows_finish(struct rows *r)
{
	const struct rvs_index_chain *anomaly = NULL, *top = NULL;

	for (size_t i = 0; i < r->nc; i++) {
		if (r->c[i].rank != 1)
			continue;
		if (!strcmp(r->c[i].kind, "anomaly"))
			anomaly = &r->c[i];
		else
			top = &r->c[i];
	}
	if (anomaly) {
		int rc = rvs_issue_fold(anomaly->chain, anomaly->signature, r->issue);
		if (rc == -ENOMEM)
			return rc;
		r->t.issue = rc ? NULL : r->issue;
		r->t.anomaly_signature = anomaly->signature;
	}
	r->t.signature = anomaly ? anomaly->signature : top ? top->signature : NULL;
	rvs_index_cut_text(&r->cut, r->cut_text, sizeof r->cut_text);
	r->t.index_cut = r->cut_text[0] ? r->cut_text : NULL;
	if (r->cut_text[0])
		rvs_log("info", "index cut", "trace=%s budget=%zu cut=\"%s\"", r->t.trace_id,
			r->budget, r->cut_text);
	r->t.methods = r->m;
	r->t.nmethod_rows = r->nm;
	r->t.chains = r->c;
	r->t.nchains = r->nc;
	r->t.unresolved = r->bidp;
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Names what the device could not from the symbol store (symbols.c): each
 * unresolved method whose module's debug file is stored and has a function
 * at its offset.  Runs before the index rows (and their chains and
 * signatures) are computed.  Marks in `left` (one flag per unresolved
 * entry) what stays unnamed, for trace_unresolved.
 */
static void symbolize(const struct lane *d, rva_trace *t, unsigned char *left)
{
	for (size_t i = 0; i < t->nunresolved; i++) {
		const rva_unresolved *u = &t->unresolved[i];
		char bid[2 * 64 + 1], name[512];

		left[i] = 1;
		if (!d->symbols_dir[0])
			continue;
		for (uint32_t k = 0; k < u->build_id_len; k++)
			snprintf(bid + 2 * k, 3, "%02x", u->build_id[k]);
		if (rvs_symbols_lookup(d->symbols_dir, bid, u->elf_offset, name, sizeof name) != 0)
			continue;
		/* A compiler's copy of f is f (rva_native_name_len), unless
		 * another method has that name already: then as it is. */
		size_t full = strlen(name), n = rva_native_name_len(name, full);
		char cut = name[n];
		name[n] = '\0';
		int rc = rva_method_rename(t, u->method, name);
		name[n] = cut;
		if (rc == 0 || rva_method_rename(t, u->method, name) == 0)
			left[i] = 0;
	}
}

/* Decodes and indexes one capture upload (it->path its payload) in its own
 * index transaction, taken only after the capture is summarized: decoding
 * takes tens of ms, and the write lock is not held through it.  Sets
 * it->rc and it->reason. */
static void decode_capture(struct lane *d, struct rvs_decode_item *it)
{
	double t0 = now_ms(), t_read = t0, t_zstd = t0, t_sum = t0;
	uint8_t *raw = NULL, *cap = NULL;
	size_t rawlen = 0, caplen = 0, rlen = sizeof it->reason;
	char *reason = it->reason;
	struct rvs_index_meta meta;
	struct rows r;
	rva_summary sum;
	rva_error err;
	int comp, rc, cap_owned = 0;
	size_t limit;
	unsigned char *left = NULL; /* per unresolved method: still unnamed */

	memset(&sum, 0, sizeof sum);
	err.msg[0] = 0;
	reason[0] = 0;
	if ((rc = open_lane(d))) {
		/* Nothing about this upload: the database is away. */
		snprintf(reason, rlen, "index: cannot open database: %s", strerror(-rc));
		it->rc = -EAGAIN;
		return;
	}
	if ((rc = d->ops->index_upload_meta(d->ix, it->trace_id, &meta))) {
		snprintf(reason, rlen, "index: upload: %s", strerror(-rc));
		it->rc = rc;
		return;
	}
	free(meta.summary);
	comp = meta.compression;
	limit = rvs_inflate_limit(meta.payload_size);
	if ((rc = rvs_read_file(it->path, RVS_DECODE_MAX_BLOB, &raw, &rawlen))) {
		snprintf(reason, rlen, "blob unreadable: %s", strerror(-rc));
		it->rc = rc;
		return;
	}
	t_read = now_ms();
	if (comp == REARVIEW__COMPRESSION__COMPRESSION_ZSTD ||
	    comp == REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED) {
		rc = inflate(d, comp, raw, rawlen, limit, &cap, &caplen, &cap_owned);
		free(raw);
		raw = NULL;
		if (rc) {
			snprintf(reason, rlen, "zstd: %s",
				 rc == -E2BIG	 ? "capture too large"
				 : rc == -ENOMEM ? "out of memory"
						 : "corrupt or truncated");
			it->rc = rc;
			return;
		}
	} else if (comp != REARVIEW__COMPRESSION__COMPRESSION_NONE) {
		free(raw);
		snprintf(reason, rlen, "unknown compression %d", comp);
		it->rc = -EPROTONOSUPPORT;
		return;
	} else {
		cap = raw;
		caplen = rawlen;
		cap_owned = 1;
	}
	t_zstd = now_ms();
	rc = rva_capture_summarize(cap, caplen, &sum, &err);
	/* The fleet sums measured self times: a muted function's estimate
	 * (rva_muted_self) is for the views of one capture. */
	if (rc == 0)
		rva_mstat_measured(sum.stats, sum.trace->nmethods);
	if (cap_owned)
		free(cap);
	t_sum = now_ms();
	if (rc) {
		snprintf(reason, rlen, "capture: %s", err.msg[0] ? err.msg : strerror(-rc));
		it->rc = rc;
		return;
	}
	if (sum.trace->nunresolved && !(left = malloc(sum.trace->nunresolved))) {
		rva_summary_release(&sum);
		snprintf(reason, rlen, "index: out of memory");
		it->rc = -ENOMEM;
		return;
	}
	symbolize(d, sum.trace, left);
	rows_init(&r, it->trace_id, it->lease);
	r.budget = rvs_index_budget(rawlen);
	if ((rc = rvs_index_cap_names(sum.trace, sum.stats, r.budget, &r.cut)) ||
	    (rc = rows_capture(&r, &sum, left)) || (rc = rows_finish(&r))) {
		snprintf(reason, rlen, "index: out of memory");
	} else {
		d->ops->index_write(d->ix, &r.t, 1);
		rc = r.t.rc;
		memcpy(reason, r.t.reason, rlen);
	}
	rows_release(&r);
	rva_summary_release(&sum);
	free(left);
	it->rc = rc;
	if (!rc)
		rvs_log("info", "decoded",
			"trace=%s capture_bytes=%zu read_ms=%.1f zstd_ms=%.1f summarize_ms=%.1f "
			"index_ms=%.1f",
			it->trace_id, caplen, t_read - t0, t_zstd - t_read, t_sum - t_zstd,
			now_ms() - t_sum);
}

/* Indexes n summary-only uploads (a device's Summary, or nothing but the
 * trace row) in one transaction, a savepoint each (index_write), so that
 * one upload's failure quarantines it alone; every item's rc and reason
 * are set. */
static void index_summaries(struct lane *d, struct rvs_decode_item *it, size_t n)
{
	struct rows *r = calloc(n, sizeof *r);
	struct rvs_index_trace *v = calloc(n, sizeof *v);
	size_t *of = calloc(n, sizeof *of); /* v[k] is it[of[k]] */
	/* The Summaries: they own the names the rows point at. */
	Rearview__Summary **ps = calloc(n, sizeof *ps);
	struct rvs_index_meta *metas = NULL; /* index_upload_metas' answers */
	int *mrc = NULL;
	const char **ids = NULL;
	size_t nv = 0;
	int rc = r && v && of && ps ? open_lane(d) : -ENOMEM;

	for (size_t i = 0; i < n; i++) {
		it[i].rc = rc && rc != -ENOMEM ? -EAGAIN : rc;
		it[i].reason[0] = 0;
		if (rc)
			snprintf(it[i].reason, sizeof it[i].reason, "index: %s",
				 rc == -ENOMEM ? "out of memory" : "cannot open database");
	}
	/* Every upload's in one read where the backend has it (a round trip
	 * each is PostgreSQL's cost), else one by one. */
	if (!rc && d->ops->index_upload_metas && (metas = calloc(n, sizeof *metas)) &&
	    (mrc = calloc(n, sizeof *mrc)) && (ids = calloc(n, sizeof *ids))) {
		int rm;
		for (size_t i = 0; i < n; i++)
			ids[i] = it[i].trace_id;
		if ((rm = d->ops->index_upload_metas(d->ix, ids, n, metas, mrc)))
			for (size_t i = 0; i < n; i++)
				mrc[i] = rm;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct rvs_index_meta meta;
		int ri;

		rows_init(&r[i], it[i].trace_id, it[i].lease);
		if (ids) {
			meta = metas[i];
			ri = mrc[i];
		} else {
			ri = d->ops->index_upload_meta(d->ix, it[i].trace_id, &meta);
		}
		if (ri) {
			snprintf(it[i].reason, sizeof it[i].reason, "index: upload: %s",
				 strerror(-ri));
			it[i].rc = ri;
			continue;
		}
		/* A stored summary that does not unpack is ignored: the envelope
		 * it came in was validated. */
		if (meta.summary)
			ps[i] = rearview__summary__unpack(NULL, meta.summary_len, meta.summary);
		r[i].budget = rvs_index_budget(meta.summary_len);
		free(meta.summary);
		ri = ps[i] ? rows_summary(&r[i], ps[i]) : 0;
		if (!ri)
			ri = rows_finish(&r[i]);
		if (ri) {
			snprintf(it[i].reason, sizeof it[i].reason, "index: out of memory");
			it[i].rc = ri;
			continue;
		}
		v[nv] = r[i].t;
		of[nv++] = i;
	}
	if (nv)
		d->ops->index_write(d->ix, v, nv);
	for (size_t k = 0; k < nv; k++) {
		struct rvs_decode_item *x = &it[of[k]];
		x->rc = v[k].rc;
		memcpy(x->reason, v[k].reason, sizeof x->reason);
	}
	for (size_t i = 0; r && ps && i < n; i++) {
		rearview__summary__free_unpacked(ps[i], NULL);
		rows_release(&r[i]);
	}
	free(ps);
	free(r);
	free(v);
	free(of);
	free(metas);
	free(mrc);
	free(ids);
}

/* The seam's decode (api.h) on a free lane: concurrent callers (at most
 * RVS_DECODE_LANES) each find one; more would wait on the first.  Captures
 * one by one; each run of summary-only uploads as one index transaction. */
static void decode_cb(void *ctx, struct rvs_decode_item *it, size_t n)
{
	struct rvs_decode *dec = ctx;
	struct lane *d = NULL;

	for (size_t i = 0; i < RVS_DECODE_LANES && !d; i++)
		if (pthread_mutex_trylock(&dec->lane[i].mu) == 0)
			d = &dec->lane[i];
	if (!d) {
		d = &dec->lane[0];
		pthread_mutex_lock(&d->mu);
	}
	for (size_t i = 0, j; i < n; i = j) {
		double t0 = now_ms(), share;

		if (it[i].path[0]) {
			decode_capture(d, &it[i]);
			it[i].seconds = (now_ms() - t0) / 1e3;
			j = i + 1;
			continue;
		}
		for (j = i; j < n && !it[j].path[0]; j++)
			;
		index_summaries(d, it + i, j - i);
		share = (now_ms() - t0) / 1e3 / (double)(j - i);
		for (size_t k = i; k < j; k++)
			it[k].seconds = share;
	}
	pthread_mutex_unlock(&d->mu);
	for (size_t i = 0; i < n; i++) {
		if (rvs_store_transient(it[i].rc)) {
			/* The store's, not the capture's: decoded again later. */
			it[i].rc = -EAGAIN;
			rvs_log("warn", "decode deferred", "trace=%s reason=\"%s\"", it[i].trace_id,
				it[i].reason);
		} else if (it[i].rc) {
			rvs_log("warn", "decode failed", "trace=%s", it[i].trace_id);
		}
	}
}

int rvs_decode_new(const char *database, struct rvs_decoder *dec, struct rvs_decode **out)
{
	struct rvs_decode *d = calloc(1, sizeof *d);
	int rc;

	if (!d)
		return -ENOMEM;
	if ((rc = rvs_store_acquire(database, &d->ops, &d->store))) {
		free(d);
		return rc;
	}
	for (size_t i = 0; i < RVS_DECODE_LANES; i++) {
		d->lane[i].ops = d->ops;
		d->lane[i].store = d->store;
		d->lane[i].symbols_dir = d->symbols_dir;
		pthread_mutex_init(&d->lane[i].mu, NULL);
	}
	dec->decode = decode_cb;
	dec->ctx = d;
	*out = d;
	return 0;
}

int rvs_decode_set_symbols_dir(struct rvs_decode *d, const char *dir)
{
	if ((size_t)snprintf(d->symbols_dir, sizeof d->symbols_dir, "%s", dir ? dir : "") >=
	    sizeof d->symbols_dir) {
		d->symbols_dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

void rvs_decode_free(struct rvs_decode *d)
{
	if (!d)
		return;
	for (size_t l = 0; l < RVS_DECODE_LANES; l++) {
		struct lane *ln = &d->lane[l];
		d->ops->index_lane_close(ln->ix);
		ZSTD_freeDCtx(ln->dctx);
		free(ln->buf);
		pthread_mutex_destroy(&ln->mu);
	}
	rvs_store_release(d->store);
	free(d);
}
