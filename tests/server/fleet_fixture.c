/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_fixture.c — issue 16's fixture app (fleet_fixture.h): a layout pass
 * that parses JSON, measures text and builds list items, compiled with
 * -finstrument-functions so that librvtrace records every call.  In
 * version 4.3 rvs_fleet_parse_json does RVS_FLEET_FACTOR times the work;
 * every other method does the same work in every version.  The capture
 * drivers themselves are not instrumented (they start and stop the tracer,
 * one directly, the other as rearviewd does over the control socket).
 * parse_json and build_item note the CLOCK_MONOTONIC time halfway through
 * their own work (g_mid_ns): where an anomaly can be focused.
 */
#include "fleet_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rearview/control.pb-c.h"
#include "rearview/frame.h"
#include "rearview/trace.h"

uint64_t rvs_fleet_parse_json(uint64_t n);
uint64_t rvs_fleet_measure_text(uint64_t n);
uint64_t rvs_fleet_build_item(uint64_t n);
uint64_t rvs_fleet_layout_pass(int rounds, unsigned factor);

/* Inlined and not instrumented: the work is its caller's self time. */
__attribute__((no_instrument_function, always_inline)) static inline uint64_t spin(uint64_t n)
{
	volatile uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += i ^ (acc >> 3);
	return acc;
}

/* The midpoint of the last call of each enum rvs_fleet_focus method. */
static uint64_t g_mid_ns[2];

__attribute__((no_instrument_function)) static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) uint64_t rvs_fleet_parse_json(uint64_t n)
{
	uint64_t s = spin(n / 2);
	g_mid_ns[RVS_FLEET_AT_PARSE_JSON] = mono_ns();
	return s + spin(n - n / 2);
}

__attribute__((noinline)) uint64_t rvs_fleet_measure_text(uint64_t n)
{
	return spin(n);
}

__attribute__((noinline)) uint64_t rvs_fleet_build_item(uint64_t n)
{
	uint64_t s = spin(n / 2);
	g_mid_ns[RVS_FLEET_AT_BUILD_ITEM] = mono_ns();
	return s + spin(n - n / 2) + rvs_fleet_measure_text(n / 2);
}

__attribute__((noinline)) uint64_t rvs_fleet_layout_pass(int rounds, unsigned factor)
{
	uint64_t s = 0;
	for (int i = 0; i < rounds; i++) {
		s += rvs_fleet_parse_json(40000ull * factor);
		s += rvs_fleet_build_item(60000);
		s += rvs_fleet_measure_text(30000);
	}
	return s;
}

__attribute__((no_instrument_function)) int rvs_fleet_capture(const char *version, const char *dir,
							      uint8_t **out, size_t *len)
{
	unsigned factor = strcmp(version, "4.3") == 0 ? RVS_FLEET_FACTOR : 1;
	char path[512];
	size_t cap = 4u << 20;
	uint8_t *buf;
	FILE *f;
	int rc;

	snprintf(path, sizeof path, "%s/fleet-%s.rvt", dir, version);
	rc = rvt_set_config(256u << 10, 0);
	if (!rc)
		rc = rvt_start(0);
	if (rc)
		return rc;
	if (rvs_fleet_layout_pass(4, factor) == 1)
		rc = -EDOM; /* never: keeps the work observable */
	if (!rc)
		rc = rvt_capture_to_path(0, path);
	rvt_stop(0, 1);
	if (rc)
		return rc;
	f = fopen(path, "rb");
	buf = malloc(cap);
	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return -EIO;
	}
	*len = fread(buf, 1, cap, f);
	rc = feof(f) && *len > 0 ? 0 : -EIO;
	fclose(f);
	unlink(path);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}

/* ---- the capture as rearviewd requests it ------------------------------ */

__attribute__((no_instrument_function)) static int send_msg(int c, Rearview__ControlMessage *m)
{
	return rv_frame_send(c, RV_CHANNEL_CONTROL, &m->base, NULL, 0);
}

/* The next message of `kind` into *out (caller frees), skipping
 * ThreadsChanged; its descriptor into *fd when fd is not NULL (else any is
 * closed). */
__attribute__((no_instrument_function)) static int
expect_msg(int c, Rearview__ControlMessage__MsgCase kind, Rearview__ControlMessage **out, int *fd)
{
	for (;;) {
		int fds[RV_FRAME_MAX_FDS], rc;
		size_t nfds = RV_FRAME_MAX_FDS, plen;
		uint8_t *payload;
		ProtobufCMessage *pm;
		Rearview__ControlMessage *m;

		rc = rv_frame_recv(c, RV_CHANNEL_CONTROL, RV_FRAME_MAX_DEFAULT, &payload, &plen,
				   fds, &nfds);
		if (rc != 1)
			return rc < 0 ? rc : -EPROTO;
		rc = rv_frame_unpack(&rearview__control_message__descriptor, payload, plen, &pm);
		free(payload);
		m = rc ? NULL : (Rearview__ControlMessage *)pm;
		if (m && m->msg_case == kind) {
			*out = m;
			if (fd)
				*fd = nfds ? fds[0] : -1;
			for (size_t i = fd ? 1 : 0; i < nfds; i++)
				close(fds[i]);
			return 0;
		}
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (rc)
			return rc;
		rc = m->msg_case == REARVIEW__CONTROL_MESSAGE__MSG_THREADS ? 0 : -EPROTO;
		protobuf_c_message_free_unpacked(&m->base, NULL);
		if (rc)
			return rc;
	}
}

/* Until a ThreadsChanged shows thread `tid` tracing. */
__attribute__((no_instrument_function)) static int wait_tracing(int c, pid_t tid)
{
	for (int traced = 0; !traced;) {
		Rearview__ControlMessage *m;
		int rc = expect_msg(c, REARVIEW__CONTROL_MESSAGE__MSG_THREADS, &m, NULL);
		if (rc)
			return rc;
		for (size_t i = 0; i < m->threads->n_threads; i++)
			traced |= m->threads->threads[i]->tid == tid &&
				  m->threads->threads[i]->tracing;
		protobuf_c_message_free_unpacked(&m->base, NULL);
	}
	return 0;
}

/* Config, start, the run, the capture request; the memfd's bytes. */
__attribute__((no_instrument_function)) static int session(int c, unsigned factor,
							   unsigned severity,
							   enum rvs_fleet_focus focus,
							   uint8_t **out, size_t *len)
{
	Rearview__ControlMessage msg = REARVIEW__CONTROL_MESSAGE__INIT, *m;
	Rearview__TraceConfig cfg = REARVIEW__TRACE_CONFIG__INIT;
	Rearview__StartTracing st = REARVIEW__START_TRACING__INIT;
	Rearview__CaptureRequest cr = REARVIEW__CAPTURE_REQUEST__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	pid_t me = (pid_t)syscall(SYS_gettid);
	int fd = -1, rc;
	size_t got = 0;

	if ((rc = expect_msg(c, REARVIEW__CONTROL_MESSAGE__MSG_REG, &m, NULL)))
		return rc;
	protobuf_c_message_free_unpacked(&m->base, NULL);
	cfg.buffer_bytes = 256u << 10;
	cfg.max_buffers = 2;
	msg.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CONFIG;
	msg.config = &cfg;
	if ((rc = send_msg(c, &msg)))
		return rc;
	st.tid = me;
	msg.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_START;
	msg.start = &st;
	if ((rc = send_msg(c, &msg)) || (rc = wait_tracing(c, me)))
		return rc;
	if (rvs_fleet_layout_pass(4, factor) == 1)
		return -EDOM; /* never: keeps the work observable */
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
	an.severity = severity;
	an.monotonic_ns = mono_ns();
	an.focus_monotonic_ns = g_mid_ns[focus];
	an.detail = (char *)"fleet fixture jank";
	cr.request_id = 1;
	cr.tid = me;
	cr.anomaly = &an;
	msg.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE;
	msg.capture = &cr;
	if ((rc = send_msg(c, &msg)) ||
	    (rc = expect_msg(c, REARVIEW__CONTROL_MESSAGE__MSG_CAPTURE_READY, &m, &fd)))
		return rc;
	rc = m->capture_ready->error ? m->capture_ready->error : fd < 0 ? -EPROTO : 0;
	*len = (size_t)m->capture_ready->size;
	protobuf_c_message_free_unpacked(&m->base, NULL);
	*out = rc ? NULL : malloc(*len ? *len : 1);
	if (!rc && !*out)
		rc = -ENOMEM;
	while (!rc && got < *len) {
		ssize_t r = pread(fd, *out + got, *len - got, (off_t)got);
		if (r <= 0)
			rc = r < 0 ? -errno : -EIO;
		got += r > 0 ? (size_t)r : 0;
	}
	if (fd >= 0)
		close(fd);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

__attribute__((no_instrument_function)) int
rvs_fleet_capture_anomaly(const char *version, const char *dir, unsigned severity,
			  enum rvs_fleet_focus focus, uint8_t **out, size_t *len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tmo = {.tv_sec = 60}; /* a stuck session fails, never hangs */
	unsigned factor = strcmp(version, "4.3") == 0 ? RVS_FLEET_FACTOR : 1;
	int ls, c = -1, rc = 0;

	if (focus != RVS_FLEET_AT_PARSE_JSON && focus != RVS_FLEET_AT_BUILD_ITEM)
		return -EINVAL;
	if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/control.sock", dir) >=
	    sizeof sa.sun_path)
		return -ENAMETOOLONG;
	unlink(sa.sun_path);
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		return -errno;
	if (bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 1) ||
	    setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof tmo))
		rc = -errno;
	if (!rc)
		rc = rvt_control_start(sa.sun_path);
	if (!rc) {
		c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0 || setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof tmo))
			rc = -errno;
		if (!rc)
			rc = session(c, factor, severity, focus, out, len);
		rvt_control_stop();
		rvt_stop(0, 1);
	}
	if (c >= 0)
		close(c);
	close(ls);
	unlink(sa.sun_path);
	return rc;
}
