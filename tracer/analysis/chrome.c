/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chrome.c — importer of Chrome Trace Event JSON (SOURCES.md §7.5), streamed
 * through yajl's token callbacks: the text is read in chunks and never held
 * whole, nor is a document tree built, so memory is the model plus one
 * 32-byte record per event that maps to calls (the file is not sorted, so
 * those are sorted before the model is built).
 *
 * Accepts the array form and the object form (traceEvents; other keys
 * ignored).  A truncated array (no closing ']', a trailing comma, a cut-off
 * last event) keeps every complete event, which the format explicitly
 * allows; a syntax error before the end of the input is refused.
 * Method-like slices: B/E pairs and X (ts + dur).  Events are sorted per
 * thread by time; at equal times, ends of X frames go first, then X begins
 * (longer first), then B and E in file order, then ends of zero-length X
 * frames.  An E names the frame it closes when it has a name that is open
 * (frames above it get dummy exits); an E whose name is not open is
 * dropped; a nameless E closes the innermost frame.  M thread_name events
 * name threads.  Every other phase (I/i, C, async b/e/n, flow s/t/f, P,
 * other metadata, …) is skipped and counted per kind (rva_trace.skipped).
 * Numbers are read from their text: pids and tids beyond 32 bits, or
 * strings, are hashed to a stable id; ids and addresses of any size in other
 * fields are never parsed at all.  Unknown fields are ignored.
 *
 * Threads are created in (pid, tid) order once the input is read.
 *
 * yajl does not check its own allocations (a failed realloc is used as
 * is), so it gets an allocator (yalloc) that tracks every block it hands
 * out and, when malloc fails, longjmps back to the one yajl call in
 * progress (ycall): that call reports -ENOMEM and every tracked block is
 * freed without yajl touching the handle again.  Invariant: yajl is only
 * ever entered through ycall, and nothing of ours allocates inside it
 * except through our callbacks, which never longjmp.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "rearview/analysis.h"
#include "analysis-int.h"

#define NO_METHOD  UINT32_MAX
#define MAX_EVENTS UINT32_MAX
#define MAX_STR	   (1u << 20) /* a longer name or arg string is cut here */

enum kind { K_X, K_B, K_E };

/* One event that maps to calls (ends of X frames are derived). */
typedef struct ev {
	int64_t ts;
	int64_t dur;	 /* X: >= 0; B/E: 0 */
	uint32_t thread; /* local thread index, then its rank in (pid, tid) order */
	uint32_t method; /* NO_METHOD: a nameless E */
	uint32_t seq;	 /* file order */
	uint8_t kind;
} ev;

/* A pending end of an X frame. */
typedef struct xend {
	int64_t ts;
	uint32_t seq, method;
	uint8_t cls; /* 0: the frame has a length; 2: zero-length */
} xend;

typedef struct lthread {
	uint32_t pid, tid;
	char *name;
} lthread;

typedef struct sbuf {
	char *s;
	size_t len, cap;
	int set;
} sbuf;

/* The event-level keys the importer reads. */
enum key { F_OTHER, F_PH, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ARGS };

/* Skipped kinds, in the order rvtrace info lists them. */
enum skip { S_INSTANT, S_COUNTER, S_ASYNC, S_FLOW, S_SAMPLE, S_OBJECT, S_META, S_OTHER, S_N };
static const char *const skip_what[S_N] = {
	"instant (I/i/R) events", "counter (C) events",	    "async (b/e/n/S/T/p/F) events",
	"flow (s/t/f) events",	  "sample (P) events",	    "object (N/O/D) events",
	"metadata (M) events",	  "events of other phases",
};

typedef struct ctx {
	rva_trace *t;
	rva_error *err;
	int rc; /* first fatal error */
	int depth;
	int root;	/* '[' or '{' once seen */
	int events_key; /* the root map's current key is traceEvents */
	int arr_depth;	/* depth inside the events array; 0: not (yet) in it */
	int arr_done;	/* the events array was closed */
	int ev_depth;	/* depth inside the current event object; 0: none */
	int args_depth; /* depth inside the event's args; 0: none */
	int key;	/* enum key at the event level */
	int args_name;	/* the args' current key is "name" */
	/* The event being read. */
	char ph[2];
	int ph_state; /* 0 none, 1 one character, -1 anything else */
	sbuf name, argname;
	uint32_t pid, tid;
	int64_t ts, dur;
	double ts_us, dur_us; /* as written: an X event ends at their sum */
	int has_ts, has_dur;
	/* What was read. */
	ev *v;
	size_t n, cap;
	uint32_t seq;
	lthread *th;
	size_t nth, thcap;
	uint32_t *thash; /* (pid, tid) -> local index + 1, open addressing */
	size_t thcap2;
	uint64_t closed; /* event objects read whole */
	uint64_t skipped[S_N];
} ctx;

static int fail(ctx *c, int rc, const char *what)
{
	if (c->rc == 0)
		c->rc = rva_fail(c->err, rc, "%s", what);
	return 0; /* cancels the parse */
}

static int sb_set(ctx *c, sbuf *b, const unsigned char *s, size_t len)
{
	if (len > MAX_STR)
		len = MAX_STR;
	if (len + 1 > b->cap) {
		char *n = realloc(b->s, len + 1);
		if (!n)
			return fail(c, -ENOMEM, "out of memory");
		b->s = n;
		b->cap = len + 1;
	}
	memcpy(b->s, s, len);
	b->s[len] = '\0';
	b->len = len;
	b->set = 1;
	return 1;
}

static uint32_t hash_text(const unsigned char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

/* A pid or tid from a number's text: exact when it is an integer within
 * int64 (cast to 32 bits, as the writers' own ints are), else hashed. */
static uint32_t id_num(const char *s, size_t len)
{
	char tmp[32];
	if (len < sizeof(tmp)) {
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		char *e;
		errno = 0;
		long long v = strtoll(tmp, &e, 10);
		if (!errno && *e == '\0')
			return (uint32_t)v;
		double d = strtod(tmp, &e);
		if (*e == '\0' && d >= 0 && d < 4294967296.0 && d == floor(d))
			return (uint32_t)d;
	}
	return hash_text((const unsigned char *)s, len);
}

/* Microseconds (any JSON number) to ns, and the microseconds read into
 * *us; -1 when out of range. */
static int us_to_ns(const char *s, size_t len, int64_t *out, double *us_out)
{
	char tmp[256];
	if (len >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	char *e;
	double us = strtod(tmp, &e);
	if (*e || !isfinite(us) || fabs(us) > 9e12)
		return -1;
	*out = llround(us * 1000.0);
	*us_out = us;
	return 0;
}

static int64_t thread_local(ctx *c, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	if (c->nth * 2 >= c->thcap2) {
		size_t nc = c->thcap2 ? c->thcap2 * 2 : 64;
		uint32_t *h = calloc(nc, sizeof(*h));
		if (!h)
			return -ENOMEM;
		for (size_t i = 0; i < c->nth; i++) {
			uint64_t k = (uint64_t)c->th[i].pid << 32 | c->th[i].tid;
			size_t j = (size_t)(k * 0x9e3779b97f4a7c15ull >> 40) & (nc - 1);
			while (h[j])
				j = (j + 1) & (nc - 1);
			h[j] = (uint32_t)i + 1;
		}
		free(c->thash);
		c->thash = h;
		c->thcap2 = nc;
	}
	size_t j = (size_t)(key * 0x9e3779b97f4a7c15ull >> 40) & (c->thcap2 - 1);
	while (c->thash[j]) {
		lthread *l = &c->th[c->thash[j] - 1];
		if (l->pid == pid && l->tid == tid)
			return c->thash[j] - 1;
		j = (j + 1) & (c->thcap2 - 1);
	}
	if (c->nth == c->thcap) {
		size_t nc = c->thcap ? c->thcap * 2 : 16;
		lthread *n = realloc(c->th, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->th = n;
		c->thcap = nc;
	}
	c->th[c->nth] = (lthread){pid, tid, NULL};
	c->thash[j] = (uint32_t)c->nth + 1;
	return (int64_t)c->nth++;
}

static int skip_of(char ph)
{
	switch (ph) {
	case 'I':
	case 'i':
	case 'R':
		return S_INSTANT;
	case 'C':
		return S_COUNTER;
	case 'b':
	case 'e':
	case 'n':
	case 'S':
	case 'T':
	case 'p':
	case 'F':
		return S_ASYNC;
	case 's':
	case 't':
	case 'f':
		return S_FLOW;
	case 'P':
		return S_SAMPLE;
	case 'N':
	case 'O':
	case 'D':
		return S_OBJECT;
	case 'M':
		return S_META;
	default:
		return S_OTHER;
	}
}

/* The event just closed: keep, skip or count as damage. */
static int commit(ctx *c)
{
	c->closed++;
	if (c->ph_state != 1) {
		c->t->dropped++;
		return 1;
	}
	char ph = c->ph[0];
	int calls = ph == 'B' || ph == 'E' || ph == 'X';
	int tname =
		ph == 'M' && c->name.set && strcmp(c->name.s, "thread_name") == 0 && c->argname.set;
	if (!calls && !tname) {
		c->skipped[skip_of(ph)]++;
		return 1;
	}
	if (calls && !c->has_ts) {
		c->t->dropped++;
		return 1;
	}
	int64_t li = thread_local(c, c->pid, c->tid);
	if (li < 0)
		return fail(c, -ENOMEM, "out of memory");
	if (tname) {
		char *n = strdup(c->argname.s);
		if (!n)
			return fail(c, -ENOMEM, "out of memory");
		free(c->th[li].name);
		c->th[li].name = n;
		return 1;
	}
	uint32_t m = NO_METHOD;
	if (c->name.set || ph != 'E') {
		const char *nm = c->name.set ? c->name.s : "(anonymous)";
		int64_t id = rva_method_intern(c->t, nm, c->name.set ? c->name.len : strlen(nm));
		if (id < 0) {
			if (c->rc == 0)
				c->rc = rva_fail(c->err, (int)id, "event %u: name rejected",
						 c->seq);
			return 0;
		}
		m = (uint32_t)id;
	}
	if (c->seq == MAX_EVENTS)
		return fail(c, -E2BIG, "more than 4 Gi events");
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 1024;
		ev *n = realloc(c->v, nc * sizeof(*n));
		if (!n)
			return fail(c, -ENOMEM, "out of memory");
		c->v = n;
		c->cap = nc;
	}
	/* An X event ends where a viewer ends it, at ts + dur read as
	 * written: rounding each to the nanosecond apart could move the end
	 * one nanosecond off the time both name (Rearview's own export writes
	 * binary fractions of a microsecond, textio.c). */
	int64_t dur = 0;
	if (ph == 'X' && c->has_dur && c->dur > 0) {
		double end = (c->ts_us + c->dur_us) * 1000.0;
		dur = fabs(end) <= 9e15 ? llround(end) - c->ts : c->dur;
		if (dur < 0)
			dur = 0;
	}
	c->v[c->n++] = (ev){c->ts, dur,	     (uint32_t)li,
			    m,	   c->seq++, ph == 'X' ? K_X : ph == 'B' ? K_B : K_E};
	return 1;
}

static void event_reset(ctx *c)
{
	c->ph_state = 0;
	c->name.set = c->argname.set = 0;
	c->pid = c->tid = 0;
	c->has_ts = c->has_dur = 0;
	c->key = F_OTHER;
	c->args_depth = 0;
}

/* A scalar value (as text for numbers, else NULL) at the current place. */
static int scalar(ctx *c, const char *num, size_t nlen, const unsigned char *str, size_t slen)
{
	if (c->ev_depth == 0)
		return 1;
	if (c->args_depth && c->depth == c->args_depth) {
		if (c->args_name && str)
			return sb_set(c, &c->argname, str, slen);
		return 1;
	}
	if (c->depth != c->ev_depth)
		return 1;
	switch (c->key) {
	case F_PH:
		if (str && slen == 1) {
			c->ph[0] = (char)str[0];
			c->ph_state = 1;
		} else {
			c->ph_state = -1;
		}
		return 1;
	case F_NAME:
		return str ? sb_set(c, &c->name, str, slen) : 1;
	case F_PID:
	case F_TID: {
		uint32_t id = num ? id_num(num, nlen) : str ? hash_text(str, slen) : 0;
		if (c->key == F_PID)
			c->pid = id;
		else
			c->tid = id;
		return 1;
	}
	case F_TS:
		c->has_ts = num && us_to_ns(num, nlen, &c->ts, &c->ts_us) == 0;
		return 1;
	case F_DUR:
		c->has_dur = num && us_to_ns(num, nlen, &c->dur, &c->dur_us) == 0;
		return 1;
	default:
		return 1;
	}
}

static int cb_null(void *a)
{
	return scalar(a, NULL, 0, NULL, 0);
}

static int cb_bool(void *a, int b)
{
	(void)b;
	return scalar(a, NULL, 0, NULL, 0);
}

static int cb_number(void *a, const char *s, size_t len)
{
	return scalar(a, s, len, NULL, 0);
}

static int cb_string(void *a, const unsigned char *s, size_t len)
{
	return scalar(a, NULL, 0, s, len);
}

static int key_is(const unsigned char *s, size_t len, const char *k)
{
	return len == strlen(k) && memcmp(s, k, len) == 0;
}

static int cb_key(void *a, const unsigned char *s, size_t len)
{
	ctx *c = a;
	if (c->root == '{' && c->depth == 1)
		c->events_key = key_is(s, len, "traceEvents");
	else if (c->ev_depth && c->depth == c->ev_depth)
		c->key = key_is(s, len, "ph")	  ? F_PH
			 : key_is(s, len, "name") ? F_NAME
			 : key_is(s, len, "pid")  ? F_PID
			 : key_is(s, len, "tid")  ? F_TID
			 : key_is(s, len, "ts")	  ? F_TS
			 : key_is(s, len, "dur")  ? F_DUR
			 : key_is(s, len, "args") ? F_ARGS
						  : F_OTHER;
	else if (c->args_depth && c->depth == c->args_depth)
		c->args_name = key_is(s, len, "name");
	return 1;
}

static int open_container(ctx *c, int map)
{
	if (c->depth == 0)
		c->root = map ? '{' : '[';
	if (!map && !c->arr_depth && !c->arr_done &&
	    (c->depth == 0 || (c->depth == 1 && c->root == '{' && c->events_key)))
		c->arr_depth = c->depth + 1;
	else if (map && c->arr_depth && c->depth == c->arr_depth) {
		c->ev_depth = c->depth + 1;
		event_reset(c);
	} else if (map && c->ev_depth && c->depth == c->ev_depth && c->key == F_ARGS) {
		c->args_depth = c->depth + 1;
		c->args_name = 0;
	} else if (c->ev_depth && c->depth == c->ev_depth && c->key == F_PH) {
		c->ph_state = -1;
	}
	c->depth++;
	return 1;
}

static int cb_start_map(void *a)
{
	return open_container(a, 1);
}

static int cb_start_array(void *a)
{
	return open_container(a, 0);
}

static int close_container(ctx *c)
{
	int ok = 1;
	assert(c->depth > 0);
	if (c->ev_depth && c->depth == c->ev_depth) {
		ok = commit(c);
		c->ev_depth = 0;
	} else if (c->args_depth && c->depth == c->args_depth) {
		c->args_depth = 0;
	} else if (c->arr_depth && c->depth == c->arr_depth) {
		c->arr_depth = 0;
		c->arr_done = 1;
	}
	c->depth--;
	return ok;
}

static int cb_end(void *a)
{
	return close_container(a);
}

static const yajl_callbacks callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_bool,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_key,
	.yajl_end_map = cb_end,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end,
};

/* ---- yajl's allocator: tracked blocks, longjmp on failure ---- */

typedef union yblk {
	struct {
		union yblk *prev, *next;
	} l;
	max_align_t align;
} yblk;

typedef struct yalloc {
	yblk head; /* circular list of live blocks */
	jmp_buf oom;
	int armed; /* inside ycall */
} yalloc;

static void ylink(yalloc *a, yblk *b)
{
	b->l.next = a->head.l.next;
	b->l.prev = &a->head;
	a->head.l.next->l.prev = b;
	a->head.l.next = b;
}

static void yunlink(yblk *b)
{
	b->l.prev->l.next = b->l.next;
	b->l.next->l.prev = b->l.prev;
}

static void *ymalloc(void *arg, size_t n)
{
	yalloc *a = arg;
	yblk *b = n <= SIZE_MAX - sizeof(*b) ? malloc(sizeof(*b) + n) : NULL;
	assert(a->armed);
	if (!b)
		longjmp(a->oom, 1);
	ylink(a, b);
	return b + 1;
}

static void *yrealloc(void *arg, void *p, size_t n)
{
	yalloc *a = arg;
	if (!p)
		return ymalloc(arg, n);
	yblk *b = (yblk *)p - 1, *nb;
	assert(a->armed);
	yunlink(b);
	nb = n <= SIZE_MAX - sizeof(*b) ? realloc(b, sizeof(*b) + n) : NULL;
	if (!nb) {
		ylink(a, b); /* realloc failed: b is intact */
		longjmp(a->oom, 1);
	}
	ylink(a, nb);
	return nb + 1;
}

static void yfree(void *arg, void *p)
{
	(void)arg;
	if (p) {
		yunlink((yblk *)p - 1);
		free((yblk *)p - 1);
	}
}

/* Frees every block yajl holds: the handle, its lexer, buffers, stack. */
static void yrelease(yalloc *a)
{
	while (a->head.l.next != &a->head) {
		yblk *b = a->head.l.next;
		yunlink(b);
		free(b);
	}
}

enum { Y_ALLOC, Y_PARSE, Y_COMPLETE, Y_ERROR };

/* The one way into yajl: op on *h (Y_ALLOC creates it), with buf for
 * Y_PARSE and msg (cap bytes) for Y_ERROR.  0 with *st set, or -ENOMEM
 * when an allocation inside yajl failed (*h is then unusable).  Handles are
 * freed by yrelease, never by yajl_free. */
static int ycall(yalloc *a, int op, yajl_handle *h, ctx *c, const uint8_t *buf, size_t len,
		 yajl_status *st, char *msg, size_t cap)
{
	if (setjmp(a->oom)) {
		a->armed = 0;
		return -ENOMEM;
	}
	a->armed = 1;
	if (op == Y_ALLOC) {
		yajl_alloc_funcs f = {ymalloc, yrealloc, yfree, a};
		*h = yajl_alloc(&callbacks, &f, c);
		/* Strings are taken as bytes, like names in every other format. */
		yajl_config(*h, yajl_dont_validate_strings, 1);
	} else if (op == Y_PARSE) {
		*st = yajl_parse(*h, buf, len);
	} else if (op == Y_COMPLETE) {
		*st = yajl_complete_parse(*h);
	} else {
		unsigned char *m = yajl_get_error(*h, 0, NULL, 0);
		snprintf(msg, cap, "%s", m ? (const char *)m : "syntax error");
		yajl_free_error(*h, m);
	}
	a->armed = 0;
	return 0;
}

static int cmp_thread(const void *x, const void *y)
{
	const lthread *a = *(lthread *const *)x, *b = *(lthread *const *)y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int cmp_ev(const void *x, const void *y)
{
	const ev *a = x, *b = y;
	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->dur != b->dur)
		return a->dur > b->dur ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Heap order of pending X ends: time, then class, then file order. */
static int xend_less(const xend *a, const xend *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->cls != b->cls)
		return a->cls < b->cls;
	return a->seq < b->seq;
}

static void heap_push(xend *h, size_t *n, xend x)
{
	size_t i = (*n)++;
	while (i > 0 && xend_less(&x, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

static xend heap_pop(xend *h, size_t *n)
{
	xend top = h[0], last = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, s = l;
		if (l >= *n)
			break;
		if (l + 1 < *n && xend_less(&h[l + 1], &h[l]))
			s = l + 1;
		if (!xend_less(&h[s], &last))
			break;
		h[i] = h[s];
		i = s;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* Replays the sorted events into the model, deriving X ends in order. */
static int build(ctx *c)
{
	rva_trace *t = c->t;
	lthread **order = malloc((c->nth ? c->nth : 1) * sizeof(*order));
	uint32_t *rank = malloc((c->nth ? c->nth : 1) * sizeof(*rank));
	xend *heap = NULL;
	size_t nh = 0, hcap = 0;
	int rc = -ENOMEM;
	if (!order || !rank)
		goto out;
	for (size_t i = 0; i < c->nth; i++)
		order[i] = &c->th[i];
	qsort(order, c->nth, sizeof(*order), cmp_thread);
	for (size_t i = 0; i < c->nth; i++) {
		rank[order[i] - c->th] = (uint32_t)i;
		int64_t th = rva_thread_add(t, order[i]->pid, order[i]->tid, order[i]->name);
		if (th < 0)
			goto out;
		assert((size_t)th == i); /* the trace had no thread: ranks are indexes */
	}
	for (size_t i = 0; i < c->n; i++)
		c->v[i].thread = rank[c->v[i].thread];
	if (c->n) /* c->v is NULL when no event maps to calls */
		qsort(c->v, c->n, sizeof(*c->v), cmp_ev);
	for (size_t i = 0; i <= c->n; i++) {
		const ev *e = i < c->n ? &c->v[i] : NULL;
		/* Ends due before e: all of the previous thread when e starts a
		 * new one; else those earlier, or at e's time with a length. */
		while (nh) {
			xend *x = &heap[0];
			uint32_t th = c->v[i - 1].thread;
			if (e && e->thread == th && (x->ts > e->ts || (x->ts == e->ts && x->cls)))
				break;
			xend y = heap_pop(heap, &nh);
			if ((rc = rva_exit(t, th, y.method, y.ts)) < 0)
				goto out;
		}
		if (!e)
			break;
		if (e->kind == K_E)
			rc = rva_exit(t, e->thread,
				      e->method == NO_METHOD ? RVA_ANY_METHOD : e->method, e->ts);
		else
			rc = rva_enter(t, e->thread, e->method, e->ts);
		if (rc < 0)
			goto out;
		if (e->kind == K_X) {
			if (nh == hcap) {
				size_t nc = hcap ? hcap * 2 : 64;
				xend *n = realloc(heap, nc * sizeof(*n));
				if (!n) {
					rc = -ENOMEM;
					goto out;
				}
				heap = n;
				hcap = nc;
			}
			heap_push(heap, &nh,
				  (xend){e->ts + e->dur, e->seq, e->method, e->dur > 0 ? 0 : 2});
		}
	}
	rc = 0;
out:
	free(heap);
	free(rank);
	free(order);
	return rc;
}

int rva_chrome_import_stream(rva_read_fn rd, void *arg, rva_trace **out, rva_error *err)
{
	*out = NULL;
	ctx c = {.err = err};
	yalloc ya = {.armed = 0};
	ya.head.l.prev = ya.head.l.next = &ya.head;
	uint8_t *chunk = malloc(RVA_CHUNK);
	yajl_handle h = NULL;
	yajl_status st = yajl_status_ok;
	c.t = rva_trace_new();
	int rc = -ENOMEM, truncated = 0;
	if (!chunk || !c.t || (rc = ycall(&ya, Y_ALLOC, &h, &c, NULL, 0, NULL, NULL, 0)) < 0) {
		rc = rva_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	c.t->format = "chrome-json";
	for (;;) {
		ssize_t got = rd(arg, chunk, RVA_CHUNK, err);
		if (got < 0) {
			rc = (int)got;
			goto out;
		}
		if ((rc = ycall(&ya, got ? Y_PARSE : Y_COMPLETE, &h, &c, chunk, (size_t)got, &st,
				NULL, 0)) < 0) {
			rva_fail(err, rc, "out of memory");
			goto out;
		}
		if (st == yajl_status_client_canceled) {
			rc = c.rc;
			goto out;
		}
		if (st == yajl_status_error) {
			/* Only running out of input inside the events array is a
			 * truncation; an error inside the text is not. */
			if (!got && (c.arr_depth || c.arr_done) && c.closed) {
				truncated = 1;
				break;
			}
			char msg[160];
			if ((rc = ycall(&ya, Y_ERROR, &h, &c, NULL, 0, NULL, msg, sizeof msg)) <
			    0) {
				rva_fail(err, rc, "out of memory");
				goto out;
			}
			rc = rva_fail(err, -EINVAL, "JSON: %s", msg);
			goto out;
		}
		if (!got)
			break;
	}
	if (!c.arr_depth && !c.arr_done) {
		rc = rva_fail(err, -EINVAL, "no traceEvents array");
		goto out;
	}
	if (truncated && c.ev_depth)
		c.t->dropped++; /* the cut-off last event */
	if ((rc = build(&c)) < 0) {
		rva_fail(err, rc, "%s", rc == -ENOMEM ? "out of memory" : "event rejected");
		goto out;
	}
	for (int k = 0; k < S_N; k++)
		if (c.skipped[k] && (rc = rva_skip_count(c.t, skip_what[k], c.skipped[k])) < 0) {
			rva_fail(err, rc, "too many kinds of skipped events");
			goto out;
		}
	rva_trace_finish(c.t, INT64_MIN);
	*out = c.t;
	c.t = NULL;
	rc = 0;
out:
	/* The handle is never yajl_free'd: after an out-of-memory jump it is
	 * unusable, and in every case the tracked blocks are all it holds. */
	yrelease(&ya);
	free(chunk);
	free(c.v);
	for (size_t i = 0; i < c.nth; i++)
		free(c.th[i].name);
	free(c.th);
	free(c.thash);
	free(c.name.s);
	free(c.argname.s);
	rva_trace_free(c.t);
	return rc;
}

typedef struct membuf {
	const uint8_t *p;
	size_t left;
} membuf;

static ssize_t mem_read(void *arg, uint8_t *buf, size_t cap, rva_error *err)
{
	membuf *m = arg;
	(void)err;
	size_t n = m->left < cap ? m->left : cap;
	if (n)
		memcpy(buf, m->p, n);
	m->p += n;
	m->left -= n;
	return (ssize_t)n;
}

int rva_chrome_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	membuf m = {buf, len};
	return rva_chrome_import_stream(mem_read, &m, out, err);
}
