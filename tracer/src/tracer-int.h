/*
 * tracer-int.h — librvtrace's private parts: rings, the thread registry, the
 * capture writer and the symbol tables.  Not installed.
 */
#ifndef RVT_TRACER_INT_H
#define RVT_TRACER_INT_H

#define RVT_NO_INLINE_HOOKS 1
#include "rearview/trace-inline.h"
#include "rearview/trace.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RVT_HIDDEN __attribute__((visibility("hidden")))

/* A ring buffer (FORMAT.md §1).  end_pos and wrapped are the control
 * side's: set before it publishes the ring in `start` (the thread resumes
 * there) and after a handover (the thread's cur and wrapped at its end).
 * `next` links unused shells (tracer.c, ring_new()). */
struct rvt_ring {
	uint64_t *slots;
	uint64_t nslots;
	uint64_t end_pos;
	int wrapped;
	size_t map_bytes;
	struct rvt_ring *next;
};

/* Marker codes in a slot's low word (FORMAT.md §1): the slot before holds
 * a 64-bit value.  2..15 are reserved (no function lies in the ELF header). */
#define RVT_SLOT_PAIR	    1u /* entry of a method value ≥ 2^32 */
#define RVT_SLOT_CLOCK	    2u /* the full shifted counter */
#define RVT_SLOT_LOSS	    3u /* events lost since this shifted counter value */
#define RVT_SLOT_MARKER_MAX 15u

/* The process-wide clock parameters (FORMAT.md header). */
struct rvt_clock {
	uint64_t hz;
	unsigned shift;
	uint8_t arch;
};

/* A frozen ring plus what the capture header needs. */
/* The anomaly a capture was taken for (FORMAT.md, ANOMALY record): what the
 * daemon's CaptureRequest said, so the capture itself tells a reader where
 * the chain "at the anomaly" is. */
struct rvt_anomaly {
	uint32_t kind, severity;
	uint64_t monotonic_ns; /* CLOCK_MONOTONIC when it fired */
	const char *name;      /* may be NULL */
};

struct rvt_frozen {
	const struct rvt_ring *ring;
	uint64_t ref_counter, ref_realtime_ns, ref_monotonic_ns;
	pid_t pid, tid;
	char thread_name[32];
	const struct rvt_anomaly *anomaly; /* borrowed, NULL when none */
};

/* Everything the file encoder needs; plain data so tests can build one. */
struct rvt_module {
	uint32_t index;
	uint64_t load_bias, start, end;
	const uint8_t *build_id;
	uint32_t build_id_len;
	const char *path;
};

struct rvt_symbol {
	uint64_t value;
	uint64_t offset;
	uint32_t module; /* 0xffffffff unknown */
	const char *name;
};

struct rvt_capture_desc {
	uint32_t flags;
	uint64_t ref_counter, ref_realtime_ns, ref_monotonic_ns;
	uint64_t counter_hz;
	uint8_t shift, arch;
	uint32_t pid, tid;
	uint64_t method_base;
	uint64_t ring_slots, start_pos, end_pos;
	const uint64_t *ring; /* ring_slots slots; the file holds start..end */
	const char *exe;
	const char *cmdline; /* cmdline_len bytes, each argument NUL-terminated */
	size_t cmdline_len;
	const char *thread_name;
	const struct rvt_module *modules;
	size_t nmodules;
	const struct rvt_symbol *symbols;
	size_t nsymbols;
	const struct rvt_anomaly *anomaly; /* NULL: no ANOMALY record */
};

#define RVT_CAP_WRAPPED 1u
#define RVT_CAP_HEADER	128u
#define RVT_REC_EXE	1u
#define RVT_REC_CMDLINE 2u
#define RVT_REC_THREAD	3u
#define RVT_REC_MODULE	4u
#define RVT_REC_SYMBOL	5u
#define RVT_REC_ANOMALY 6u
#define RVT_REC_END	0xffffu

/* Number of slots from start_pos to end_pos in a ring of `n` slots. */
RVT_HIDDEN uint64_t rvt_capture_slot_count(uint64_t n, uint64_t start_pos, uint64_t end_pos,
					   int wrapped);

/* Encodes `d` into a new heap buffer (*out, caller frees) of *len bytes.
 * Returns 0 or -ENOMEM / -EINVAL. */
RVT_HIDDEN int rvt_capture_encode(const struct rvt_capture_desc *d, uint8_t **out, size_t *len);

/* Writes all of buf to fd. Returns 0 or a negative errno. */
RVT_HIDDEN int rvt_write_all(int fd, const void *buf, size_t len);

/* Builds a complete capture of `f` (symbols and metadata included) into a heap
 * buffer.  Returns 0 or a negative errno. */
RVT_HIDDEN int rvt_capture_build(const struct rvt_frozen *f, uint8_t **out, size_t *len);

/* Symbol tables: one SYMBOL per value of `values` (n, sorted, unique) and
 * the MODULEs holding them; all storage is owned by `st`, released with
 * rvt_symtab_release().  Returns 0 or -ENOMEM. */
struct rvt_symtab {
	struct rvt_module *modules;
	size_t nmodules;
	struct rvt_symbol *symbols;
	size_t nsymbols;
	char *strings; /* owns every string the two arrays point at */
	size_t strings_len, strings_cap;
	uint8_t *ids;
	size_t ids_len, ids_cap;
};
RVT_HIDDEN int rvt_symtab_build(struct rvt_symtab *st, const uint64_t *values, size_t n,
				uint64_t method_base);
RVT_HIDDEN void rvt_symtab_release(struct rvt_symtab *st);

RVT_HIDDEN extern struct rvt_clock rvt_clock;
RVT_HIDDEN extern uint64_t rvt_method_base;
RVT_HIDDEN int rvt_clock_init(void);
RVT_HIDDEN pid_t rvt_gettid(void);

/* Manual-key resolver (trace.h; symbols.c), read by the capture builder. */
RVT_HIDDEN int rvt_resolve_key(uint64_t addr, char *buf, size_t len);

/* Called (outside the registry lock) when a thread registers or the UI
 * thread changes; the control thread installs it when it starts, so the core
 * never calls into control.c.  NULL: nobody listens. */
RVT_HIDDEN void rvt_set_threads_changed_hook(void (*fn)(void));

/* Registry snapshot for the control thread. */
struct rvt_thread_info {
	pid_t tid;
	int is_ui, tracing;
	uint64_t buffer_bytes;
	char name[32];
};
RVT_HIDDEN size_t rvt_threads_snapshot(struct rvt_thread_info *out, size_t cap);
/* Freezes tid's ring into a sealed memfd holding a capture (with an ANOMALY
 * record when `anomaly` is not NULL); returns the fd or a negative errno. */
RVT_HIDDEN int rvt_capture_frozen_memfd(pid_t tid, const struct rvt_anomaly *anomaly,
					uint64_t *size, uint64_t *frozen_ns);

#endif
