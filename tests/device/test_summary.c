/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_summary.c — rearviewd's local summary: a capture built byte by byte
 * with the tracer tests' capbuild.h (main → render_frame → a slow row
 * builder that was running at the anomaly) must summarize to a
 * rearview.Summary with the slow function on top of self time, the chain
 * at the anomaly, the policy's signature models matched; hostile input is
 * refused; and the summary survives in the spool row (put/get, reopen,
 * purge) on a real libuv loop in a temporary directory.  A capture the
 * daemon enriched with OFFCPU / THREAD_COUNTERS records (rvd_offcpu_append,
 * as capture.c does before storing it) summarizes with its off-CPU time by
 * reason and each top method's on/off-CPU split, exactly.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
/* xxHash compiled in, as capcheck.c does. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capbuild.h"
#include "enforce.h"
#include "offcpu.h"
#include "rearview/policy.pb-c.h"
#include "rearview/summary.pb-c.h"
#include "spool.h"
#include "summary.h"

enum { M_MAIN = 0x1000, M_RENDER = 0x1010, M_FAST = 0x1020, M_SLOW = 0x1030 };

/* 1 GHz counter, monotonic = counter: times below are nanoseconds. */
static void build_capture(capbuf *c, int with_anomaly)
{
	cb_header(c, 100000, 1000000000, 0, 100000, 0x400000, 0);
	cb_entry(c, M_MAIN, 1000);
	cb_entry(c, M_RENDER, 1100);
	cb_entry(c, M_FAST, 1200);
	cb_exit(c, 1300);
	cb_entry(c, M_SLOW, 1400);
	cb_exit(c, 90000); /* 88.6 µs: the slow row, running at 50000 */
	cb_exit(c, 90100);
	cb_entry(c, M_RENDER, 90200);
	cb_entry(c, M_FAST, 90300);
	cb_exit(c, 90400);
	cb_exit(c, 90500);
	cb_exit(c, 99000);
	cb_end_slots(c);
	cb_symbol(c, M_MAIN, M_MAIN, 0, "main");
	cb_symbol(c, M_RENDER, M_RENDER, 0, "render_frame");
	cb_symbol(c, M_FAST, M_FAST, 0, "bind_row_fast");
	cb_symbol(c, M_SLOW, M_SLOW, 0, "inflate_row_slowly");
	if (with_anomaly)
		cb_anomaly(c, 1, 50000, "jank");
	cb_finish(c);
}

/* build_capture(c, 1) with the CHECKSUM record the tracer writes before
 * END, as rvd_offcpu_append requires. */
static void build_checked_capture(capbuf *c)
{
	uint8_t ck[16] = {1, 0, 0, 0, 0, 0, 0, 0};
	uint64_t h;

	build_capture(c, 1);
	c->len -= 8; /* drop END: cb_finish appends it again */
	cb_u64at(c, 120, c->len + 24 + 8);
	h = XXH3_64bits(c->b, c->len);
	memcpy(ck + 8, &h, 8);
	cb_record(c, 8, ck, 16);
	cb_finish(c);
}

static Rearview__Summary *summarize(const capbuf *c, const Rearview__PolicyBody *policy)
{
	Rearview__Summary *s;
	uint8_t *buf;
	size_t len;
	char err[128] = "";

	assert_int_equal(rvd_summary_build(c->b, c->len, policy, RVD_SUMMARY_TOP, &buf, &len, err,
					   sizeof(err)),
			 0);
	s = rearview__summary__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(s);
	return s;
}

static void test_summary_slow_function_on_top_and_at_anomaly(void **state)
{
	capbuf c = {0};
	Rearview__Summary *s;
	const Rearview__Chain *a;

	(void)state;
	build_capture(&c, 1);
	s = summarize(&c, NULL);
	assert_true(s->n_top_self >= 3);
	assert_string_equal(s->top_self[0]->name, "inflate_row_slowly");
	assert_int_equal(s->top_self[0]->self_ns, 88600);
	assert_int_equal(s->top_self[0]->calls, 1);
	assert_int_equal(s->total_calls, 6); /* main, render ×2, fast ×2, slow */
	assert_int_equal(s->window_ns, 98000);
	assert_int_equal(s->n_chains_at_anomaly, 1);
	a = s->chains_at_anomaly[0];
	assert_int_equal(a->n_frames, 3);
	assert_string_equal(a->frames[0], "main");
	assert_string_equal(a->frames[1], "render_frame");
	assert_string_equal(a->frames[2], "inflate_row_slowly");
	assert_int_equal(a->duration_ns, 88600);
	assert_true(a->signature != 0);
	/* The longest-running chain is the same path, with the same signature. */
	assert_true(s->n_longest_chains >= 1);
	assert_int_equal(s->longest_chains[0]->signature, a->signature);
	assert_int_equal(s->n_matches, 0); /* no policy, no models */
	rearview__summary__free_unpacked(s, NULL);
	free(c.b);
}

static void test_summary_offcpu_records_give_reasons_and_split(void **state)
{
	/* Inside inflate_row_slowly (1400..90000): blocked 2000..42000,
	 * preempted 60000..61000; the ring lost nothing (window = since,
	 * voluntary + involuntary = switches). */
	struct rvd_offcpu_iv iv[2] = {
		{.out_ns = 2000, .in_ns = 42000, .reason = RVD_OFFCPU_BLOCKED},
		{.out_ns = 60000, .in_ns = 61000, .reason = RVD_OFFCPU_PREEMPTED}};
	struct rvd_offcpu_window w = {.tid = 43,
				      .since_ns = 500,
				      .at_ns = 100000,
				      .window_ns = 500,
				      .task_clock_ns = 57000,
				      .switches = 2,
				      .voluntary = 1,
				      .involuntary = 1,
				      .iv = iv,
				      .n = 2};
	capbuf c = {0}, e = {0};
	Rearview__Summary *s, *plain;

	(void)state;
	build_checked_capture(&c);
	plain = summarize(&c, NULL);
	assert_int_equal(plain->n_offcpu_reasons, 0);
	assert_int_equal(plain->top_self[0]->on_cpu_ns, 0);
	assert_int_equal(plain->top_self[0]->off_cpu_ns, 0);
	assert_int_equal(rvd_offcpu_append(c.b, c.len, &w, 1, &e.b, &e.len), 0);
	s = summarize(&e, NULL);
	assert_int_equal(s->n_offcpu_reasons, 2);
	assert_string_equal(s->offcpu_reasons[0]->reason, "blocked");
	assert_int_equal(s->offcpu_reasons[0]->ns, 40000);
	assert_string_equal(s->offcpu_reasons[1]->reason, "preempted");
	assert_int_equal(s->offcpu_reasons[1]->ns, 1000);
	/* The same top methods as without the records, now split. */
	assert_int_equal(s->n_top_self, plain->n_top_self);
	assert_string_equal(s->top_self[0]->name, "inflate_row_slowly");
	assert_int_equal(s->top_self[0]->inclusive_ns, 88600);
	assert_int_equal(s->top_self[0]->on_cpu_ns, 47600);
	assert_int_equal(s->top_self[0]->off_cpu_ns, 41000);
	assert_string_equal(s->top_self[1]->name, "main");
	assert_int_equal(s->top_self[1]->inclusive_ns, 98000);
	assert_int_equal(s->top_self[1]->on_cpu_ns, 57000);
	assert_int_equal(s->top_self[1]->off_cpu_ns, 41000);
	for (size_t i = 0; i < s->n_top_self; i++)
		assert_int_equal(s->top_self[i]->on_cpu_ns + s->top_self[i]->off_cpu_ns,
				 s->top_self[i]->inclusive_ns);
	assert_int_equal(s->n_chains_at_anomaly, 1);
	assert_int_equal(s->chains_at_anomaly[0]->signature,
			 plain->chains_at_anomaly[0]->signature);
	rearview__summary__free_unpacked(plain, NULL);
	rearview__summary__free_unpacked(s, NULL);
	free(c.b);
	free(e.b);
}

static void test_summary_no_anomaly_mark_no_chain_at_anomaly(void **state)
{
	capbuf c = {0};
	Rearview__Summary *s;

	(void)state;
	build_capture(&c, 0);
	s = summarize(&c, NULL);
	assert_int_equal(s->n_chains_at_anomaly, 0);
	assert_string_equal(s->top_self[0]->name, "inflate_row_slowly");
	rearview__summary__free_unpacked(s, NULL);
	free(c.b);
}

static void test_summary_policy_models_matched_by_chain_and_duration(void **state)
{
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	Rearview__Campaign camp = REARVIEW__CAMPAIGN__INIT, *pc = &camp;
	Rearview__SignatureModel hit = REARVIEW__SIGNATURE_MODEL__INIT;
	Rearview__SignatureModel too_long = REARVIEW__SIGNATURE_MODEL__INIT;
	Rearview__SignatureModel other = REARVIEW__SIGNATURE_MODEL__INIT;
	Rearview__SignatureModel *models[] = {&hit, &too_long, &other};
	char *hit_m[] = {(char *)"render_*", (char *)"inflate_row_slowly"},
	     *long_m[] = {(char *)"inflate_row_slowly"};
	char *other_m[] = {(char *)"bind_row_fast", (char *)"render_frame"}; /* wrong order */
	capbuf c = {0};
	Rearview__Summary *s;

	(void)state;
	hit.id = (char *)"slow-row";
	hit.methods = hit_m;
	hit.n_methods = 2;
	hit.min_duration_ns = 50000;
	too_long.id = (char *)"too-long";
	too_long.methods = long_m;
	too_long.n_methods = 1;
	too_long.min_duration_ns = 1000000;
	other.id = (char *)"other";
	other.methods = other_m;
	other.n_methods = 2;
	camp.id = (char *)"c1";
	camp.signatures = models;
	camp.n_signatures = 3;
	b.campaigns = &pc;
	b.n_campaigns = 1;
	build_capture(&c, 1);
	s = summarize(&c, &b);
	assert_int_equal(s->n_matches, 1);
	assert_string_equal(s->matches[0]->model_id, "slow-row");
	assert_int_equal(s->matches[0]->count, 1);
	assert_int_equal(s->matches[0]->duration_ns, 88600);
	assert_int_equal(s->matches[0]->signature, s->chains_at_anomaly[0]->signature);
	rearview__summary__free_unpacked(s, NULL);
	free(c.b);
}

static void test_summary_deep_recursion_chain_keeps_innermost_frames(void **state)
{
	capbuf c = {0};
	Rearview__Summary *s;
	const Rearview__Chain *a;
	uint32_t ts = 1000;

	(void)state;
	cb_header(&c, 100000, 1000000000, 0, 100000, 0x400000, 0);
	cb_entry(&c, M_MAIN, ts++);
	for (int i = 0; i < 300; i++)
		cb_entry(&c, M_RENDER, ts++);
	cb_entry(&c, M_SLOW, ts);
	cb_exit(&c, 90000);
	for (int i = 0; i < 301; i++)
		cb_exit(&c, 90001 + (uint32_t)i);
	cb_end_slots(&c);
	cb_symbol(&c, M_MAIN, M_MAIN, 0, "main");
	cb_symbol(&c, M_RENDER, M_RENDER, 0, "recurse");
	cb_symbol(&c, M_SLOW, M_SLOW, 0, "leaf");
	cb_anomaly(&c, 1, 50000, "jank");
	cb_finish(&c);
	s = summarize(&c, NULL);
	assert_int_equal(s->n_chains_at_anomaly, 1);
	a = s->chains_at_anomaly[0];
	assert_int_equal(a->n_frames, RVD_SUMMARY_MAX_FRAMES);
	assert_string_equal(a->frames[0], "recurse");
	assert_string_equal(a->frames[RVD_SUMMARY_MAX_FRAMES - 1], "leaf");
	for (size_t i = 0; i < s->n_longest_chains; i++)
		assert_true(s->longest_chains[i]->n_frames <= RVD_SUMMARY_MAX_FRAMES);
	rearview__summary__free_unpacked(s, NULL);
	free(c.b);
}

static void test_summary_hostile_input_refused_with_reason(void **state)
{
	capbuf c = {0};
	uint8_t *buf = (uint8_t *)"x", garbage[4096];
	size_t len = 1;
	char err[128];

	(void)state;
	build_capture(&c, 1);
	for (size_t cut = 0; cut < c.len; cut += 7) {
		err[0] = '\0';
		assert_true(rvd_summary_build(c.b, cut, NULL, 10, &buf, &len, err, sizeof(err)) <
			    0);
		assert_null(buf);
		assert_int_equal(len, 0);
		assert_true(err[0] != '\0');
	}
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)(i * 131 + 7);
	assert_true(rvd_summary_build(garbage, sizeof(garbage), NULL, 10, &buf, &len, err,
				      sizeof(err)) < 0);
	assert_int_equal(
		rvd_summary_file("/nonexistent/c.rvc", NULL, 10, &buf, &len, err, sizeof(err)),
		-ENOENT);
	free(c.b);
}

/* ---- the spool column --------------------------------------------------- */

struct result {
	int calls;
	int status;
	uint64_t id;
};

static void cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct result *r = data;

	(void)sp;
	r->calls++;
	r->status = status;
	r->id = id;
}

struct get_job {
	struct rvd_spool *sp;
	uint64_t id;
	int status;
	uint8_t *buf;
	size_t len;
};

static void get_work(void *arg)
{
	struct get_job *g = arg;

	g->status = rvd_spool_get_summary(g->sp, g->id, &g->buf, &g->len);
}

static int get_summary(struct rvd_spool *sp, uv_loop_t *loop, uint64_t id, Rearview__Summary **out)
{
	struct get_job g = {sp, id, 0, NULL, 0};
	struct result r = {0};

	assert_int_equal(rvd_spool_run(sp, get_work, &g, cb, &r), 0);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(r.calls, 1);
	*out = NULL;
	if (g.status == 0) {
		*out = rearview__summary__unpack(NULL, g.len, g.buf);
		assert_non_null(*out);
	}
	free(g.buf);
	return g.status;
}

static uint64_t store(struct rvd_spool *sp, uv_loop_t *loop, const capbuf *c, int state)
{
	struct rvd_capture_rec meta;
	struct result r = {0};
	int fd = -1;

	memset(&meta, 0, sizeof(meta));
	meta.state = state;
	meta.anomaly.kind = 1;
	snprintf(meta.app_id, sizeof(meta.app_id), "test");
	if (c) {
		fd = memfd_create("cap", MFD_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, c->b, c->len), (ssize_t)c->len);
	} else {
		snprintf(meta.reason, sizeof(meta.reason), "quota_exhausted");
	}
	assert_int_equal(rvd_spool_store(sp, fd, c ? c->len : 0, &meta, cb, &r), 0);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(r.status, 0);
	return r.id;
}

static void reopen(struct rvd_spool *sp, uv_loop_t *loop, const char *dir, bool close_first)
{
	struct result r = {0};

	if (close_first) {
		assert_int_equal(rvd_spool_close(sp, cb, &r), 0);
		uv_run(loop, UV_RUN_DEFAULT);
		rvd_spool_release(sp);
	}
	memset(&r, 0, sizeof(r));
	rvd_spool_init(sp, loop, dir);
	assert_int_equal(rvd_spool_open(sp, cb, &r), 0);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(r.status, 0);
}

static void test_summary_spool_row_stored_survives_reopen_purged_gone(void **state)
{
	char dir[] = "/tmp/rvd-sum-XXXXXX", cmd[64];
	struct rvd_summary_job job;
	struct rvd_enforce enf;
	struct rvd_spool sp;
	struct result r = {0};
	Rearview__Summary *s;
	uv_loop_t loop;
	uint64_t id, bare;
	capbuf c = {0};

	(void)state;
	assert_non_null(mkdtemp(dir));
	uv_loop_init(&loop);
	reopen(&sp, &loop, dir, false);
	build_capture(&c, 1);
	id = store(&sp, &loop, &c, RVD_SPOOL_CAPTURED);
	bare = store(&sp, &loop, NULL, RVD_SPOOL_SKIPPED);
	/* A second capture-less row must not collide with the first. */
	assert_true(store(&sp, &loop, NULL, RVD_SPOOL_SKIPPED) > bare);
	assert_string_equal(rvd_spool_find(&sp, bare)->file, "");
	assert_false(rvd_spool_find(&sp, id)->has_summary);

	/* No key configured: the built-in default policy (no models). */
	rvd_enforce_init(&enf, dir, "");
	memset(&job, 0, sizeof(job));
	job.sp = &sp;
	job.enf = &enf;
	job.id = id;
	snprintf(job.file, sizeof(job.file), "%s", rvd_spool_find(&sp, id)->file);
	assert_int_equal(rvd_spool_run(&sp, rvd_summary_work, &job, cb, &r), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(job.status, 0);
	assert_true(job.len > 0);
	rvd_spool_note_summary(&sp, id);

	assert_int_equal(get_summary(&sp, &loop, id, &s), 0);
	assert_string_equal(s->top_self[0]->name, "inflate_row_slowly");
	rearview__summary__free_unpacked(s, NULL);
	assert_int_equal(get_summary(&sp, &loop, bare, &s), -ENOENT);
	assert_int_equal(get_summary(&sp, &loop, 9999, &s), -ENOENT);

	/* The column and the mirror flag survive a restart. */
	reopen(&sp, &loop, dir, true);
	assert_true(rvd_spool_find(&sp, id)->has_summary);
	assert_false(rvd_spool_find(&sp, bare)->has_summary);
	assert_string_equal(rvd_spool_find(&sp, bare)->file, "");
	assert_int_equal(get_summary(&sp, &loop, id, &s), 0);
	rearview__summary__free_unpacked(s, NULL);

	/* A purged capture loses its summary with its file. */
	memset(&r, 0, sizeof(r));
	assert_int_equal(rvd_spool_purge(&sp, id, "consent_purged", cb, &r), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(r.status, 0);
	assert_false(rvd_spool_find(&sp, id)->has_summary);
	assert_int_equal(get_summary(&sp, &loop, id, &s), -ENOENT);

	memset(&r, 0, sizeof(r));
	assert_int_equal(rvd_spool_close(&sp, cb, &r), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	rvd_spool_release(&sp);
	uv_loop_close(&loop);
	free(c.b);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary_slow_function_on_top_and_at_anomaly),
		cmocka_unit_test(test_summary_offcpu_records_give_reasons_and_split),
		cmocka_unit_test(test_summary_no_anomaly_mark_no_chain_at_anomaly),
		cmocka_unit_test(test_summary_policy_models_matched_by_chain_and_duration),
		cmocka_unit_test(test_summary_deep_recursion_chain_keeps_innermost_frames),
		cmocka_unit_test(test_summary_hostile_input_refused_with_reason),
		cmocka_unit_test(test_summary_spool_row_stored_survives_reopen_purged_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
