/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offcpu.c — per-thread perf events for the off-CPU intervals and counters
 * of a traced thread (offcpu.h), and the capture records they become.
 *
 * Invariants:
 *  - the switch ring is mapped read-only, so the kernel writes it backward
 *    and overwrites its oldest records: it always holds the newest window
 *    and the daemon never has to drain it;
 *  - the ring is read only with its output paused (PERF_EVENT_IOC_PAUSE_OUTPUT),
 *    and only between data_head and the bytes the kernel has written;
 *  - every timestamp handed out is CLOCK_MONOTONIC, the clock of the
 *    trace's ref_monotonic_ns, so intervals line up with the calls.  The
 *    kernel stamps the records with CLOCK_MONOTONIC_RAW (perf use_clockid),
 *    which runs at the trace counter's rate as the trace's mapping does
 *    (counter ticks from the freeze, added to ref_monotonic_ns); they are
 *    moved by the MONOTONIC − RAW offset read at the snapshot, near the
 *    freeze.  Stamped with CLOCK_MONOTONIC itself (NTP-slewed) they drifted
 *    tens of µs from the calls over a 2 s window, enough to put short calls
 *    right after a wake-up inside the sleep (test_daemon_offcpu);
 *  - intervals come out oldest first, out_ns ≤ in_ns, and never overlap.
 */
#include "offcpu.h"

#include <assert.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "caprec.h"
#include "log.h"

enum { C_TASK_CLOCK, C_MINFLT, C_MAJFLT, C_CS, C_N };

struct rvd_offcpu_thread {
	pid_t tid;
	int sw_fd; /* dummy event carrying the context-switch records */
	int cfd[C_N];
	void *ring; /* metadata page + data pages */
	size_t ring_len;
	uint64_t since_ns;
};

/* One switch record, as read from the ring. */
struct sw_ev {
	uint64_t t;
	uint16_t misc;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static int perf_open(struct perf_event_attr *a, pid_t tid)
{
	long fd = syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

pid_t rvd_offcpu_tid(const struct rvd_offcpu_thread *t)
{
	return t->tid;
}

void rvd_offcpu_close(struct rvd_offcpu_thread *t)
{
	if (!t)
		return;
	if (t->ring)
		munmap(t->ring, t->ring_len);
	if (t->sw_fd >= 0)
		close(t->sw_fd);
	for (int i = 0; i < C_N; i++)
		if (t->cfd[i] >= 0)
			close(t->cfd[i]);
	free(t);
}

int rvd_offcpu_open(pid_t tid, unsigned ring_pages, struct rvd_offcpu_thread **out)
{
	static const uint64_t cfg[C_N] = {PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS_MIN,
					  PERF_COUNT_SW_PAGE_FAULTS_MAJ,
					  PERF_COUNT_SW_CONTEXT_SWITCHES};
	struct perf_event_attr a;
	struct rvd_offcpu_thread *t;
	long page = sysconf(_SC_PAGESIZE);
	int fd;

	*out = NULL;
	if (ring_pages == 0 || (ring_pages & (ring_pages - 1)) || ring_pages > 4096)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->tid = tid;
	t->sw_fd = -1;
	for (int i = 0; i < C_N; i++)
		t->cfd[i] = -1;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	a.context_switch = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC_RAW; /* the trace counter's rate; see snapshot */
	a.write_backward = 1;
	a.exclude_hv = 1;
	fd = perf_open(&a, tid);
	if (fd < 0)
		goto fail;
	t->sw_fd = fd;
	t->ring_len = (size_t)page * (1 + ring_pages);
	t->ring = mmap(NULL, t->ring_len, PROT_READ, MAP_SHARED, t->sw_fd, 0);
	if (t->ring == MAP_FAILED) {
		t->ring = NULL;
		fd = -errno;
		goto fail;
	}
	for (int i = 0; i < C_N; i++) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = cfg[i];
		a.exclude_hv = 1;
		fd = perf_open(&a, tid);
		if (fd < 0)
			goto fail;
		t->cfd[i] = fd;
	}
	t->since_ns = mono_ns();
	*out = t;
	return 0;
fail:
	rvd_offcpu_close(t);
	return fd;
}

int rvd_offcpu_follow(struct rvd_offcpu_thread **slot, pid_t tid)
{
	int rc;

	if (*slot && (*slot)->tid == tid)
		return 0;
	rvd_offcpu_close(*slot);
	*slot = NULL;
	if (!tid)
		return 0;
	rc = rvd_offcpu_open(tid, 64, slot);
	if (rc < 0)
		rvd_warn("tid %d: no off-CPU records: perf events: %s", (int)tid, strerror(-rc));
	return rc;
}

void rvd_offcpu_window_release(struct rvd_offcpu_window *w)
{
	free(w->iv);
	memset(w, 0, sizeof(*w));
}

/* Copies `n` bytes at ring offset `off` (wrapping) out of the data area. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t off, void *dst, size_t n)
{
	uint64_t o = off & (size - 1);
	size_t first = (size_t)(size - o) < n ? (size_t)(size - o) : n;

	memcpy(dst, data + o, first);
	memcpy((uint8_t *)dst + first, data, n - first);
}

/* Reads the switch records of the paused ring, newest first, into *ev. */
static int ring_read(struct rvd_offcpu_thread *t, struct sw_ev **ev, size_t *nev)
{
	const struct perf_event_mmap_page *mp = t->ring;
	const uint8_t *data = (const uint8_t *)t->ring + mp->data_offset;
	uint64_t size = mp->data_size;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t written = (uint64_t)0 - head; /* backward: head counts down from 0 */
	uint64_t avail = written < size ? written : size;
	size_t cap = 0;

	*ev = NULL;
	*nev = 0;
	for (uint64_t done = 0; done + sizeof(struct perf_event_header) <= avail;) {
		struct perf_event_header h;
		uint8_t rec[64];

		ring_copy(data, size, head + done, &h, sizeof(h));
		if (h.size < sizeof(h) || done + h.size > avail)
			break; /* the oldest record, partly overwritten */
		if (h.type == PERF_RECORD_SWITCH && h.size >= sizeof(h) + 16 &&
		    h.size <= sizeof(rec)) {
			uint64_t ts;

			ring_copy(data, size, head + done, rec, h.size);
			/* sample_id: u32 pid, u32 tid, u64 time — at the end. */
			memcpy(&ts, rec + h.size - 8, 8);
			if (*nev == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct sw_ev *n = realloc(*ev, ncap * sizeof(**ev));

				if (!n)
					return -ENOMEM;
				*ev = n;
				cap = ncap;
			}
			(*ev)[(*nev)++] = (struct sw_ev){.t = ts, .misc = h.misc};
		}
		done += h.size;
	}
	return 0;
}

static int counters_read(struct rvd_offcpu_thread *t, uint64_t v[C_N])
{
	for (int i = 0; i < C_N; i++)
		if (read(t->cfd[i], &v[i], sizeof(v[i])) != (ssize_t)sizeof(v[i]))
			return -EIO;
	return 0;
}

int rvd_offcpu_snapshot(struct rvd_offcpu_thread *t, struct rvd_offcpu_window *w)
{
	struct sw_ev *ev = NULL;
	uint64_t c[C_N];
	size_t nev = 0;
	bool out = false;
	uint64_t raw;
	int64_t shift; /* MONOTONIC - MONOTONIC_RAW now */
	int rc;

	memset(w, 0, sizeof(*w));
	w->tid = t->tid;
	w->since_ns = t->since_ns;
	ioctl(t->sw_fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1);
	raw = clock_ns(CLOCK_MONOTONIC_RAW);
	w->at_ns = mono_ns();
	shift = (int64_t)(w->at_ns - raw);
	rc = ring_read(t, &ev, &nev);
	ioctl(t->sw_fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0);
	if (rc == 0)
		rc = counters_read(t, c);
	if (rc == 0 && nev) {
		w->iv = malloc(nev * sizeof(*w->iv));
		if (!w->iv)
			rc = -ENOMEM;
	}
	if (rc < 0) {
		free(ev);
		rvd_offcpu_window_release(w);
		return rc;
	}
	w->task_clock_ns = c[C_TASK_CLOCK];
	w->minor_faults = c[C_MINFLT];
	w->major_faults = c[C_MAJFLT];
	w->switches = c[C_CS];
	/* MONOTONIC_RAW to MONOTONIC at today's offset: the offset drifts with
	 * the clock's slewing, so a record from the counters' first moments can
	 * convert to a moment before since_ns (which is read after they are
	 * opened): kept within since_ns .. at_ns, as offcpu.h promises. */
	for (size_t k = 0; k < nev; k++) {
		uint64_t m = ev[k].t + (uint64_t)shift;

		ev[k].t = m > w->at_ns ? w->at_ns : m < w->since_ns ? w->since_ns : m;
	}
	assert(!nev || (w->since_ns <= ev[nev - 1].t && ev[0].t <= w->at_ns));
	w->window_ns = nev ? ev[nev - 1].t : w->at_ns;
	/* Oldest first: the ring gave newest first. */
	for (size_t k = nev; k-- > 0;) {
		const struct sw_ev *e = &ev[k];

		if (e->misc & PERF_RECORD_MISC_SWITCH_OUT) {
			bool pre = e->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;

			if (out) /* two outs in a row: a lost switch-in, keep the newer */
				w->n--;
			w->iv[w->n++] = (struct rvd_offcpu_iv){.out_ns = e->t,
							       .in_ns = w->at_ns,
							       .reason = pre ? RVD_OFFCPU_PREEMPTED
									     : RVD_OFFCPU_BLOCKED};
			if (pre)
				w->involuntary++;
			else
				w->voluntary++;
			out = true;
		} else if (out) {
			w->iv[w->n - 1].in_ns =
				e->t >= w->iv[w->n - 1].out_ns ? e->t : w->iv[w->n - 1].out_ns;
			out = false;
		}
	}
	free(ev);
	assert(w->n <= nev);
	return 0;
}

/* --- capture records ------------------------------------------------- */

#define OFFCPU_ITEM  24u
#define COUNTERS_LEN 80u

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

size_t rvd_offcpu_records_len(const struct rvd_offcpu_window *w, size_t nw)
{
	size_t add = 0;

	for (size_t i = 0; i < nw; i++)
		add += 8 + 8 + w[i].n * OFFCPU_ITEM + 8 + COUNTERS_LEN;
	return add;
}

size_t rvd_offcpu_records(const struct rvd_offcpu_window *w, size_t nw, uint8_t *b)
{
	size_t off = 0;

	for (size_t i = 0; i < nw; i++) {
		off += rvd_caprec_head(b + off, RVD_REC_OFFCPU,
				       (uint32_t)(8 + w[i].n * OFFCPU_ITEM));
		put32(b + off, (uint32_t)w[i].tid);
		put32(b + off + 4, (uint32_t)w[i].n);
		off += 8;
		for (size_t k = 0; k < w[i].n; k++, off += OFFCPU_ITEM) {
			put64(b + off, w[i].iv[k].out_ns);
			put64(b + off + 8, w[i].iv[k].in_ns);
			put32(b + off + 16, w[i].iv[k].reason);
			put32(b + off + 20, 0);
		}
		off += rvd_caprec_head(b + off, RVD_REC_THREAD_COUNTERS, COUNTERS_LEN);
		put32(b + off, (uint32_t)w[i].tid);
		put32(b + off + 4, 0);
		put64(b + off + 8, w[i].since_ns);
		put64(b + off + 16, w[i].at_ns);
		put64(b + off + 24, w[i].task_clock_ns);
		put64(b + off + 32, w[i].minor_faults);
		put64(b + off + 40, w[i].major_faults);
		put64(b + off + 48, w[i].switches);
		put64(b + off + 56, w[i].window_ns);
		put64(b + off + 64, w[i].voluntary);
		put64(b + off + 72, w[i].involuntary);
		off += COUNTERS_LEN;
	}
	assert(off == rvd_offcpu_records_len(w, nw));
	return off;
}

int rvd_offcpu_append(const uint8_t *cap, size_t len, const struct rvd_offcpu_window *w, size_t nw,
		      uint8_t **out, size_t *out_len)
{
	size_t add = rvd_offcpu_records_len(w, nw);
	uint8_t *recs = malloc(add ? add : 1);
	int rc;

	*out = NULL;
	*out_len = 0;
	if (!recs)
		return -ENOMEM;
	rvd_offcpu_records(w, nw, recs);
	rc = rvd_caprec_insert(cap, len, recs, add, out, out_len);
	free(recs);
	return rc;
}
