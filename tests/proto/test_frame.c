/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_frame.c — the frame header, stream reassembly and blocking
 * send/receive with descriptor passing (proto/include/rearview/frame.h).
 *
 * The golden header is the worked example in proto/README.md.  Hostile
 * input: every truncation, oversize claims, wrong version/channel/magic,
 * random bytes; none may crash or allocate beyond the limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/control.pb-c.h"
#include "rearview/frame.h"

/* proto/README.md, "Worked example": a StartTracing{tid=1234} control frame. */
static const uint8_t golden[] = {0x52, 0x56, 0x01, 0x01, 0x05, 0x00, 0x00,
				 0x00, 0x1a, 0x03, 0x08, 0xd2, 0x09};

static void make_start(Rearview__ControlMessage *m, Rearview__StartTracing *s, int32_t tid)
{
	rearview__control_message__init(m);
	rearview__start_tracing__init(s);
	s->tid = tid;
	m->msg_case = REARVIEW__CONTROL_MESSAGE__MSG_START;
	m->start = s;
}

static void test_frame_pack_matches_documented_example(void **state)
{
	Rearview__ControlMessage m;
	Rearview__StartTracing s;
	uint8_t *out;
	size_t len;

	(void)state;
	make_start(&m, &s, 1234);
	assert_int_equal(
		rv_frame_pack(RV_CHANNEL_CONTROL, &m.base, RV_FRAME_MAX_DEFAULT, &out, &len), 0);
	assert_int_equal(len, sizeof(golden));
	assert_memory_equal(out, golden, sizeof(golden));
	free(out);
}

static void test_frame_golden_decodes_to_the_message(void **state)
{
	struct rv_frame_header h;
	ProtobufCMessage *pm;
	Rearview__ControlMessage *m;

	(void)state;
	assert_int_equal(rv_frame_header_decode(golden, sizeof(golden), RV_CHANNEL_CONTROL,
						RV_FRAME_MAX_DEFAULT, &h),
			 0);
	assert_int_equal(h.version, 1);
	assert_int_equal(h.channel, RV_CHANNEL_CONTROL);
	assert_int_equal(h.length, 5);
	assert_int_equal(
		rv_frame_unpack(&rearview__control_message__descriptor, golden + 8, h.length, &pm),
		0);
	m = (Rearview__ControlMessage *)pm;
	assert_int_equal(m->msg_case, REARVIEW__CONTROL_MESSAGE__MSG_START);
	assert_int_equal(m->start->tid, 1234);
	protobuf_c_message_free_unpacked(pm, NULL);
}

static void test_frame_truncated_header_needs_more(void **state)
{
	struct rv_frame_header h;
	size_t n;

	(void)state;
	for (n = 0; n < RV_FRAME_HEADER_SIZE; n++)
		assert_int_equal(rv_frame_header_decode(golden, n, RV_CHANNEL_CONTROL, 0, &h),
				 -EAGAIN);
}

static void test_frame_bad_headers_rejected_with_reason(void **state)
{
	struct rv_frame_header h;
	uint8_t b[RV_FRAME_HEADER_SIZE];

	(void)state;
	memcpy(b, golden, sizeof(b));
	b[0] = 'X';
	assert_int_equal(rv_frame_header_decode(b, sizeof(b), RV_CHANNEL_CONTROL, 0, &h), -EBADMSG);

	memcpy(b, golden, sizeof(b));
	b[2] = 2; /* a future version */
	assert_int_equal(rv_frame_header_decode(b, sizeof(b), RV_CHANNEL_CONTROL, 0, &h),
			 -EPROTONOSUPPORT);
	assert_int_equal(h.version, 2); /* reported so the peer can be told */
	assert_string_equal(rv_frame_strerror(-EPROTONOSUPPORT), "unsupported protocol version");

	memcpy(b, golden, sizeof(b));
	assert_int_equal(rv_frame_header_decode(b, sizeof(b), RV_CHANNEL_ADMIN, 0, &h),
			 -EPROTOTYPE);

	rv_frame_header_encode(b, RV_CHANNEL_EVENT, 4097);
	assert_int_equal(rv_frame_header_decode(b, sizeof(b), RV_CHANNEL_EVENT, 4096, &h),
			 -EMSGSIZE);
	assert_int_equal(rv_frame_header_decode(b, sizeof(b), RV_CHANNEL_EVENT, 4097, &h), 0);

	/* A limit of 0 or beyond the hard cap means the hard cap. */
	rv_frame_header_encode(b, RV_CHANNEL_EVENT, 0xffffffffu);
	assert_int_equal(rv_frame_header_decode(b, sizeof(b), RV_CHANNEL_EVENT, 0, &h), -EMSGSIZE);
	assert_int_equal(rv_frame_header_decode(b, sizeof(b), RV_CHANNEL_EVENT, 0xffffffffu, &h),
			 -EMSGSIZE);
}

static void test_frame_pack_oversized_message_refused(void **state)
{
	Rearview__ControlMessage m;
	Rearview__Register reg;
	char *big = malloc(5000);
	uint8_t *out = NULL;
	size_t len;

	(void)state;
	memset(big, 'a', 4999);
	big[4999] = 0;
	rearview__control_message__init(&m);
	rearview__register__init(&reg);
	reg.exe = big;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_REG;
	m.reg = &reg;
	assert_int_equal(rv_frame_pack(RV_CHANNEL_CONTROL, &m.base, 4096, &out, &len), -EMSGSIZE);
	assert_null(out);
	free(big);
}

static void test_frame_unpack_garbage_is_badmsg(void **state)
{
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f};
	ProtobufCMessage *pm = NULL;

	(void)state;
	assert_int_equal(
		rv_frame_unpack(&rearview__control_message__descriptor, junk, sizeof(junk), &pm),
		-EBADMSG);
	assert_null(pm);
	/* The golden payload cut short by one byte. */
	assert_int_equal(
		rv_frame_unpack(&rearview__control_message__descriptor, golden + 8, 4, &pm),
		-EBADMSG);
}

static void test_frame_reader_reassembles_byte_by_byte(void **state)
{
	struct rv_frame_reader r;
	const uint8_t *p;
	uint32_t len;
	size_t i, frames = 0;

	(void)state;
	rv_frame_reader_init(&r, RV_CHANNEL_CONTROL, RV_FRAME_MAX_DEFAULT);
	for (int rep = 0; rep < 3; rep++) {
		for (i = 0; i < sizeof(golden); i++) {
			assert_int_equal(rv_frame_reader_feed(&r, golden + i, 1), 0);
			int rc = rv_frame_reader_next(&r, &p, &len);

			if (i + 1 < sizeof(golden)) {
				assert_int_equal(rc, 0);
			} else {
				assert_int_equal(rc, 1);
				assert_int_equal(len, 5);
				assert_memory_equal(p, golden + 8, 5);
				frames++;
			}
		}
	}
	assert_int_equal(frames, 3);
	rv_frame_reader_release(&r);
}

static void test_frame_reader_splits_several_frames_in_one_read(void **state)
{
	struct rv_frame_reader r;
	uint8_t buf[3 * sizeof(golden)];
	const uint8_t *p;
	uint32_t len;
	int n = 0;

	(void)state;
	for (int i = 0; i < 3; i++)
		memcpy(buf + i * sizeof(golden), golden, sizeof(golden));
	rv_frame_reader_init(&r, RV_CHANNEL_CONTROL, 64);
	assert_int_equal(rv_frame_reader_feed(&r, buf, sizeof(buf)), 0);
	while (rv_frame_reader_next(&r, &p, &len) == 1) {
		assert_int_equal(len, 5);
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(rv_frame_reader_next(&r, &p, &len), 0);
	rv_frame_reader_release(&r);
}

static void test_frame_reader_oversize_claim_is_sticky_error(void **state)
{
	struct rv_frame_reader r;
	uint8_t h[RV_FRAME_HEADER_SIZE];
	const uint8_t *p;
	uint32_t len;

	(void)state;
	rv_frame_reader_init(&r, RV_CHANNEL_EVENT, 1024);
	rv_frame_header_encode(h, RV_CHANNEL_EVENT, 1u << 30); /* claims 1 GiB */
	assert_int_equal(rv_frame_reader_feed(&r, h, sizeof(h)), 0);
	assert_int_equal(rv_frame_reader_next(&r, &p, &len), -EMSGSIZE);
	/* Nothing was allocated for the claim, and the error stays. */
	assert_true(r.cap <= 4096);
	assert_int_equal(rv_frame_reader_feed(&r, golden, sizeof(golden)), -EMSGSIZE);
	assert_int_equal(rv_frame_reader_next(&r, &p, &len), -EMSGSIZE);
	rv_frame_reader_release(&r);
}

static void test_frame_reader_flood_without_consuming_is_bounded(void **state)
{
	struct rv_frame_reader r;
	uint8_t chunk[512];
	int rc = 0, i;

	(void)state;
	memset(chunk, 0, sizeof(chunk));
	rv_frame_reader_init(&r, RV_CHANNEL_EVENT, 1024);
	for (i = 0; i < 100 && rc == 0; i++)
		rc = rv_frame_reader_feed(&r, chunk, sizeof(chunk));
	assert_int_equal(rc, -EMSGSIZE);
	assert_true(r.cap <= 2 * (1024 + RV_FRAME_HEADER_SIZE));
	rv_frame_reader_release(&r);
}

static void test_frame_reader_random_bytes_never_crash(void **state)
{
	uint32_t seed = 12345;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		struct rv_frame_reader r;
		uint8_t buf[64];
		const uint8_t *p;
		uint32_t len;
		size_t n;

		rv_frame_reader_init(&r, RV_CHANNEL_CONTROL, 256);
		n = 1 + round % sizeof(buf);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (uint8_t)(seed >> 16);
		}
		/* Half the rounds start with a valid magic to get past the first check. */
		if (round % 2 && n >= 4) {
			buf[0] = 'R';
			buf[1] = 'V';
			buf[2] = 1;
			buf[3] = RV_CHANNEL_CONTROL;
		}
		rv_frame_reader_feed(&r, buf, n);
		while (rv_frame_reader_next(&r, &p, &len) == 1)
			assert_true(len <= 256);
		rv_frame_reader_release(&r);
	}
}

static void test_frame_send_recv_passes_a_sealed_memfd(void **state)
{
	Rearview__ControlMessage m, *back;
	Rearview__StartTracing s;
	int sv[2], memfd, fds[RV_FRAME_MAX_FDS];
	size_t nfds = RV_FRAME_MAX_FDS, len;
	uint8_t *payload;
	char text[6] = {0};

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memfd = memfd_create("rv-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(memfd >= 0);
	assert_int_equal(write(memfd, "hello", 5), 5);
	assert_int_equal(fcntl(memfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW), 0);

	make_start(&m, &s, 77);
	assert_int_equal(rv_frame_send(sv[0], RV_CHANNEL_CONTROL, &m.base, &memfd, 1), 0);
	assert_int_equal(rv_frame_recv(sv[1], RV_CHANNEL_CONTROL, 0, &payload, &len, fds, &nfds),
			 1);
	assert_int_equal(nfds, 1);
	back = rearview__control_message__unpack(NULL, len, payload);
	assert_non_null(back);
	assert_int_equal(back->start->tid, 77);
	/* The received descriptor is the same sealed file. */
	assert_int_equal(pread(fds[0], text, 5, 0), 5);
	assert_string_equal(text, "hello");
	assert_int_equal(fcntl(fds[0], F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE);
	assert_int_equal(pwrite(fds[0], "x", 1, 0), -1);

	rearview__control_message__free_unpacked(back, NULL);
	free(payload);
	close(fds[0]);
	close(memfd);
	close(sv[0]);
	close(sv[1]);
}

static void test_frame_recv_eof_clean_and_mid_frame(void **state)
{
	int sv[2];
	uint8_t *payload = NULL;
	size_t len;

	(void)state;
	/* Clean end of stream: 0. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[0]);
	assert_int_equal(rv_frame_recv(sv[1], RV_CHANNEL_CONTROL, 0, &payload, &len, NULL, NULL),
			 0);
	close(sv[1]);

	/* Truncated inside the header, then inside the payload: -EBADMSG. */
	for (size_t cut = 3; cut < sizeof(golden); cut += 7) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		assert_int_equal(write(sv[0], golden, cut), (ssize_t)cut);
		close(sv[0]);
		assert_int_equal(
			rv_frame_recv(sv[1], RV_CHANNEL_CONTROL, 0, &payload, &len, NULL, NULL),
			-EBADMSG);
		close(sv[1]);
	}
	assert_null(payload);
}

static void test_frame_recv_wrong_version_refused(void **state)
{
	int sv[2];
	uint8_t bad[sizeof(golden)];
	uint8_t *payload = NULL;
	size_t len;

	(void)state;
	memcpy(bad, golden, sizeof(bad));
	bad[2] = 9;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(write(sv[0], bad, sizeof(bad)), (ssize_t)sizeof(bad));
	assert_int_equal(rv_frame_recv(sv[1], RV_CHANNEL_CONTROL, 0, &payload, &len, NULL, NULL),
			 -EPROTONOSUPPORT);
	assert_null(payload);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_pack_matches_documented_example),
		cmocka_unit_test(test_frame_golden_decodes_to_the_message),
		cmocka_unit_test(test_frame_truncated_header_needs_more),
		cmocka_unit_test(test_frame_bad_headers_rejected_with_reason),
		cmocka_unit_test(test_frame_pack_oversized_message_refused),
		cmocka_unit_test(test_frame_unpack_garbage_is_badmsg),
		cmocka_unit_test(test_frame_reader_reassembles_byte_by_byte),
		cmocka_unit_test(test_frame_reader_splits_several_frames_in_one_read),
		cmocka_unit_test(test_frame_reader_oversize_claim_is_sticky_error),
		cmocka_unit_test(test_frame_reader_flood_without_consuming_is_bounded),
		cmocka_unit_test(test_frame_reader_random_bytes_never_crash),
		cmocka_unit_test(test_frame_send_recv_passes_a_sealed_memfd),
		cmocka_unit_test(test_frame_recv_eof_clean_and_mid_frame),
		cmocka_unit_test(test_frame_recv_wrong_version_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
