/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_frame.c — allocation-failure tests for the frame layer
 * (proto/src/frame.c): packing a message into a frame, unpacking a payload
 * (protobuf-c allocates every string and sub-message) and reassembling
 * frames from a byte stream.  Every failing allocation must give -ENOMEM,
 * no crash and no leak (tests/torture/torture.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/control.pb-c.h"
#include "rearview/frame.h"
#include "torture.h"

/* A Register with strings, repeated strings and sub-messages, so that
 * unpacking it allocates at many points. */
struct reg {
	Rearview__ControlMessage m;
	Rearview__Register r;
	Rearview__ThreadInfo t[3];
	Rearview__ThreadInfo *tp[3];
	char *argv[3];
};

static void make_register(struct reg *g)
{
	static char a0[] = "/usr/bin/app", a1[] = "--flag", a2[] = "value";
	static char n0[] = "main", n1[] = "RenderThread", n2[] = "worker";
	char *names[3] = {n0, n1, n2};

	rearview__control_message__init(&g->m);
	rearview__register__init(&g->r);
	g->r.pid = 4242;
	g->r.exe = a0;
	g->argv[0] = a0;
	g->argv[1] = a1;
	g->argv[2] = a2;
	g->r.argv = g->argv;
	g->r.n_argv = 3;
	for (int i = 0; i < 3; i++) {
		rearview__thread_info__init(&g->t[i]);
		g->t[i].tid = 4242 + i;
		g->t[i].name = names[i];
		g->tp[i] = &g->t[i];
	}
	g->r.threads = g->tp;
	g->r.n_threads = 3;
	g->m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_REG;
	g->m.reg = &g->r;
}

static int run_pack(void *arg)
{
	const struct reg *g = arg;
	uint8_t *out;
	size_t len;
	int rc = rv_frame_pack(RV_CHANNEL_CONTROL, &g->m.base, RV_FRAME_MAX_DEFAULT, &out, &len);

	if (rc == 0)
		free(out);
	return rc;
}

static void test_frame_pack_each_alloc_failing_fails_cleanly(void **state)
{
	struct reg g;

	make_register(&g);
	assert_int_equal(run_pack(&g), 0);
	assert_true(torture_run(run_pack, &g, -ENOMEM) > 0);
}

struct frame {
	uint8_t *b;
	size_t len;
};

static struct frame packed(void)
{
	struct reg g;
	struct frame f;

	make_register(&g);
	assert_int_equal(
		rv_frame_pack(RV_CHANNEL_CONTROL, &g.m.base, RV_FRAME_MAX_DEFAULT, &f.b, &f.len),
		0);
	return f;
}

static int run_unpack(void *arg)
{
	const struct frame *f = arg;
	ProtobufCMessage *pm;
	int rc = rv_frame_unpack(&rearview__control_message__descriptor,
				 f->b + RV_FRAME_HEADER_SIZE, f->len - RV_FRAME_HEADER_SIZE, &pm);

	if (rc == 0) {
		Rearview__ControlMessage *m = (Rearview__ControlMessage *)pm;

		assert_int_equal(m->msg_case, REARVIEW__CONTROL_MESSAGE__MSG_REG);
		assert_int_equal(m->reg->n_threads, 3);
		assert_string_equal(m->reg->threads[2]->name, "worker");
		protobuf_c_message_free_unpacked(pm, NULL);
	}
	return rc;
}

static void test_frame_unpack_each_alloc_failing_fails_cleanly(void **state)
{
	struct frame f = packed();

	assert_int_equal(run_unpack(&f), 0);
	assert_true(torture_run(run_unpack, &f, -ENOMEM) > 0);
	free(f.b);
}

/* Three frames fed in 7-byte pieces, each taken out as soon as complete. */
static int run_reader(void *arg)
{
	const struct frame *f = arg;
	struct rv_frame_reader r;
	const uint8_t *payload;
	uint32_t len;
	int rc = 0, frames = 0;

	rv_frame_reader_init(&r, RV_CHANNEL_CONTROL, RV_FRAME_MAX_DEFAULT);
	for (int k = 0; k < 3 && rc >= 0; k++) {
		for (size_t pos = 0; pos < f->len && rc >= 0; pos += 7) {
			rc = rv_frame_reader_feed(&r, f->b + pos,
						  f->len - pos < 7 ? f->len - pos : 7);
			while (rc >= 0 && (rc = rv_frame_reader_next(&r, &payload, &len)) == 1) {
				assert_int_equal(len, f->len - RV_FRAME_HEADER_SIZE);
				frames++;
			}
		}
	}
	rv_frame_reader_release(&r);
	if (rc < 0)
		return rc;
	assert_int_equal(frames, 3);
	return 0;
}

static void test_frame_reader_each_alloc_failing_fails_cleanly(void **state)
{
	struct frame f = packed();

	assert_int_equal(run_reader(&f), 0);
	assert_true(torture_run(run_reader, &f, -ENOMEM) > 0);
	free(f.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_pack_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_frame_unpack_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_frame_reader_each_alloc_failing_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
