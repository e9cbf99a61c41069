/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_frames.c — rearviewd's frame ring and FRAMES record
 * (device/src/frames.c), inserted into a capture (caprec.c) and read back
 * by librvanalysis: tracer/FORMAT.md's worked example byte for byte, the
 * ring's bound and the span filter, the late rule, and the reader's
 * refusal of hostile FRAMES records.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capbuild_ck.h"
#include "capcheck.h"
#include "caprec.h"
#include "frames.h"
#include "rearview/analysis.h"

/* A checksummed capture of tid 43 at 1 GHz (times are ns): main 1000–99000,
 * frozen at 100000. */
static void build_capture(capbuf *c)
{
	cb_header(c, 100000, 1000000000, 0, 100000, 0x400000, 4);
	cb_entry(c, 0x1000, 1000);
	cb_exit(c, 99000);
	cb_end_slots(c);
	cb_symbol(c, 0x1000, 0x1000, 0, "main");
	cb_finish_checksummed(c);
}

static void push(struct rvd_frame_ring *r, uint64_t s, uint64_t e, uint64_t d, uint32_t tid,
		 uint64_t budget)
{
	rvd_frames_push(r, &(struct rvd_frame){
				   .start_ns = s,
				   .end_ns = e,
				   .deadline_ns = d,
				   .tid = tid,
				   .flags = rvd_frame_late(s, e, d, budget) ? RVD_FRAME_LATE : 0});
}

/* Inserts recs into the test capture and decodes it; returns the decoder's
 * answer, *t set on success. */
static int decode_with(const uint8_t *recs, size_t n, rva_trace **t, rva_error *err)
{
	capbuf c = {0};
	const char *why = NULL;
	uint8_t *out = NULL;
	size_t len = 0;
	int rc;

	build_capture(&c);
	assert_int_equal(rvd_caprec_insert(c.b, c.len, recs, n, &out, &len), 0);
	assert_int_equal(rvd_capcheck_buf(out, len, &why), 0);
	rc = rva_capture_decode(out, len, t, err);
	free(out);
	free(c.b);
	return rc;
}

static void test_frames_record_is_the_format_example(void **state)
{
	struct rvd_frame_ring *r = calloc(1, sizeof(*r));
	uint8_t rec[16 + 2 * RVD_FRAME_ITEM];
	rva_trace *t = NULL;
	rva_error err;

	(void)state;
	assert_non_null(r);
	push(r, 1000, 17000, 0, 42, 16666);
	push(r, 20000, 60000, 36666, 42, 16666);
	assert_int_equal(rvd_frames_record(r, 0, 100000, rec, sizeof(rec)), sizeof(rec));
	assert_memory_equal(rec, "\x0e\0\0\0\x48\0\0\0", 8); /* type 14, 72 bytes */
	assert_memory_equal(rec + 8, cb_frames_value, sizeof(cb_frames_value));
	assert_int_equal(decode_with(rec, sizeof(rec), &t, &err), 0);
	assert_int_equal(t->nframes, 2);
	assert_int_equal(t->frames[0].start, 1000);
	assert_int_equal(t->frames[0].end, 17000);
	assert_int_equal(t->frames[0].deadline, 0);
	assert_int_equal(t->frames[0].tid, 42);
	assert_int_equal(t->frames[0].late, 0);
	assert_int_equal(t->frames[1].start, 20000);
	assert_int_equal(t->frames[1].deadline, 36666);
	assert_int_equal(t->frames[1].late, 1);
	rva_trace_free(t);
	free(r);
}

static void test_frames_late_rule_is_the_jank_detectors(void **state)
{
	(void)state;
	/* A deadline decides alone: met however long, missed however short. */
	assert_false(rvd_frame_late(0, 40000000, 50000000, 16666666));
	assert_true(rvd_frame_late(0, 5000001, 5000000, 16666666));
	/* No deadline: longer than the budget. */
	assert_false(rvd_frame_late(100, 100 + 16666666, 0, 16666666));
	assert_true(rvd_frame_late(100, 100 + 16666667, 0, 16666666));
}

static void test_frames_ring_keeps_newest_and_filters_span(void **state)
{
	struct rvd_frame_ring *r = calloc(1, sizeof(*r));
	size_t cap;
	uint8_t *rec;
	uint32_t count;
	uint64_t first;
	long n;

	(void)state;
	assert_non_null(r);
	assert_int_equal(rvd_frames_record(r, 0, UINT64_MAX, NULL, 0), -ENOSPC);
	for (uint64_t i = 0; i < RVD_FRAMES_RING + 6; i++)
		push(r, i * 1000, i * 1000 + 500, 0, 7, 1000);
	assert_int_equal(r->n, RVD_FRAMES_RING);
	cap = rvd_frames_record_max(r);
	rec = malloc(cap);
	assert_non_null(rec);
	assert_int_equal(rvd_frames_record(r, 0, UINT64_MAX, rec, cap - 1), -ENOSPC);
	n = rvd_frames_record(r, 0, UINT64_MAX, rec, cap);
	assert_int_equal(n, 16 + RVD_FRAMES_RING * RVD_FRAME_ITEM);
	memcpy(&count, rec + 8, 4);
	memcpy(&first, rec + 16, 8);
	assert_int_equal(count, RVD_FRAMES_RING);
	assert_int_equal(first, 6 * 1000); /* the 6 oldest were overwritten */
	/* [10200, 12100]: frame 10 (10000–10500) overlaps, 12 starts after. */
	n = rvd_frames_record(r, 10200, 11999, rec, cap);
	assert_int_equal(n, 16 + 2 * RVD_FRAME_ITEM);
	memcpy(&first, rec + 16, 8);
	assert_int_equal(first, 10000);
	assert_int_equal(rvd_frames_record(r, 5000000, UINT64_MAX, rec, cap), 0);
	free(rec);
	free(r);
}

static void test_frames_outside_the_calls_are_dropped_by_the_reader(void **state)
{
	struct rvd_frame_ring *r = calloc(1, sizeof(*r));
	uint8_t rec[16 + 3 * RVD_FRAME_ITEM];
	rva_trace *t = NULL;
	rva_error err;

	(void)state;
	assert_non_null(r);
	/* Arrival order is not start order; one frame ends before main. */
	push(r, 50000, 70000, 0, 43, 16666);
	push(r, 100, 900, 0, 43, 16666);
	push(r, 40000, 45000, 0, 43, 16666);
	assert_int_equal(rvd_frames_record(r, 0, 100000, rec, sizeof(rec)), sizeof(rec));
	assert_int_equal(decode_with(rec, sizeof(rec), &t, &err), 0);
	assert_int_equal(t->nframes, 2);
	assert_int_equal(t->frames[0].start, 40000);
	assert_int_equal(t->frames[0].late, 0);
	assert_int_equal(t->frames[1].start, 50000);
	assert_int_equal(t->frames[1].late, 1);
	rva_trace_free(t);
	free(r);
}

static void test_frames_hostile_records_refused(void **state)
{
	uint8_t rec[80], example[80];
	rva_trace *t = NULL;
	rva_error err;
	uint32_t v;
	size_t big = 16 + (size_t)(RVA_MAX_FRAMES + 1) * 32;
	uint8_t *many = calloc(1, big);

	(void)state;
	assert_non_null(many);
	rvd_caprec_head(example, RVD_REC_FRAMES, sizeof(cb_frames_value));
	memcpy(example + 8, cb_frames_value, sizeof(cb_frames_value));
	/* A count past the record. */
	memcpy(rec, example, sizeof(rec));
	v = 3;
	memcpy(rec + 8, &v, 4);
	assert_int_equal(decode_with(rec, sizeof(rec), &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "FRAMES"));
	/* A frame ending before it starts. */
	memcpy(rec, example, sizeof(rec));
	rec[16 + 8 + 1] = 0; /* end 17000 -> 104 */
	assert_int_equal(decode_with(rec, sizeof(rec), &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ends before"));
	/* A record too short for its count and reserved word. */
	memcpy(rec, example, 16);
	v = 4;
	memcpy(rec + 4, &v, 4);
	assert_int_equal(decode_with(rec, 16, &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "short FRAMES"));
	/* More frames than a reader keeps. */
	v = RVA_MAX_FRAMES + 1;
	rvd_caprec_head(many, RVD_REC_FRAMES, (uint32_t)(big - 8));
	memcpy(many + 8, &v, 4);
	assert_int_equal(decode_with(many, big, &t, &err), -E2BIG);
	free(many);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_record_is_the_format_example),
		cmocka_unit_test(test_frames_late_rule_is_the_jank_detectors),
		cmocka_unit_test(test_frames_ring_keeps_newest_and_filters_span),
		cmocka_unit_test(test_frames_outside_the_calls_are_dropped_by_the_reader),
		cmocka_unit_test(test_frames_hostile_records_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
