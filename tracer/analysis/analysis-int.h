/* SPDX-License-Identifier: Apache-2.0 */
/*
 * analysis-int.h — private to librvanalysis: helpers its source files share.
 */
#ifndef RVANALYSIS_ANALYSIS_INT_H
#define RVANALYSIS_ANALYSIS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rearview/analysis.h"

/* Formats the message of a failure into err->msg (err may be NULL: the
 * message is dropped) and returns rc, a negative errno, so a decoder can
 * `return rva_fail(err, -EINVAL, "…", …);`.  The message is truncated to
 * fit; err->msg is always NUL-terminated. */
__attribute__((format(printf, 3, 4))) int rva_fail(rva_error *err, int rc, const char *fmt, ...);

/* A lock wait's kind in words (RVA_LOCK_*: "mutex", "rwlock read", …;
 * "lock" for an unknown one): a static string.  locks.c. */
const char *rva_lock_kind_name(uint32_t kind);

/* Reads up to cap bytes of an input into buf: the count (0 at its end), or
 * a negative errno with err's message set. */
typedef ssize_t (*rva_read_fn)(void *arg, uint8_t *buf, size_t cap, rva_error *err);

/* Folds t's muted functions' estimated self times (rva_muted_self) into n
 * statistics of `size` bytes each at st: the int64_t at self_off gets the
 * estimate added, the one at est_off the estimate.  0 or -ENOMEM (st
 * unchanged).  analysis.c. */
int rva_muted_fold(const rva_trace *t, void *st, size_t size, size_t self_off, size_t est_off);

/* The part of each muted function's callers' time after its mute
 * (rva_muted.after_ppm), gathered from the calls as a decoder closes them:
 * rva_mafter_init (after the muted records are named; a->head stays NULL,
 * and every other call a no-op, when no muted record names a caller), then
 * rva_mafter_call for every call, then rva_mafter_fill and rva_mafter_free.
 * A caller's time is its calls' durations (a recursive call inside itself
 * counts again, in the part after and in the whole alike).  A call costs
 * one step per (record, caller) pair naming its method, at most
 * RVA_MAFTER_PER_METHOD: a hostile capture naming one caller in every
 * record cannot make each of its calls cost more (the pairs past the
 * limit keep the span's part).  analysis.c. */
#define RVA_MAFTER_PER_METHOD 64u
typedef struct rva_mafter {
	size_t nm;     /* methods */
	size_t *head;  /* per method: 1 + its first (record, caller) pair, or 0 */
	size_t *next;  /* per pair: 1 + the method's next pair, or 0 */
	int64_t *from; /* per pair: the mute's time */
	double *num;   /* per pair: its caller's time at or after `from`; < 0 not measured */
	double *den;   /* per method: its calls' time */
} rva_mafter;
int rva_mafter_init(rva_mafter *a, const rva_trace *t);	 /* 0 or -ENOMEM (a empty) */
void rva_mafter_fill(const rva_mafter *a, rva_trace *t); /* after_ppm, after_known */
void rva_mafter_free(rva_mafter *a);
/* One call of `method` from start to end (end >= start). */
static inline void rva_mafter_call(rva_mafter *a, uint32_t method, int64_t start, int64_t end)
{
	if (method >= a->nm || !a->head[method] || end <= start)
		return;
	a->den[method] += (double)(end - start);
	for (size_t q = a->head[method]; q; q = a->next[q - 1]) {
		int64_t lo = start > a->from[q - 1] ? start : a->from[q - 1];
		if (end > lo)
			a->num[q - 1] += (double)(end - lo);
	}
}

/* The size of the chunks the streaming importers read. */
#define RVA_CHUNK (1u << 20)

/* Chrome Trace Event JSON read through rd in chunks (chrome.c): as
 * rva_chrome_import, without ever holding the whole text. */
int rva_chrome_import_stream(rva_read_fn rd, void *arg, rva_trace **out, rva_error *err);

/* A file's content in chunks, inflated on the way when it is gzip or zstd
 * (by magic; inflate.c).  rva_reader_open takes fd (closed by
 * rva_reader_close) and the file's size; p (may be NULL) hears of the
 * file bytes consumed.  rva_reader_read is an rva_read_fn; a compressed
 * stream that ends inside a member or frame is an error. */
typedef struct rva_reader rva_reader;
int rva_reader_open(rva_reader **out, int fd, uint64_t size, const rva_progress *p, rva_error *err);
ssize_t rva_reader_read(void *r, uint8_t *buf, size_t cap, rva_error *err);
void rva_reader_close(rva_reader *r); /* NULL is a no-op */

#endif
