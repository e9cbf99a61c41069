/*
 * chrome.c — importer of Chrome Trace Event JSON (SOURCES.md §7.5), parsed
 * with jansson.
 *
 * Accepts the array form and the object form (traceEvents).  A truncated
 * array (no closing ']', a trailing comma, a cut-off last event) is
 * repaired before parsing by cutting back to the last complete '}' and
 * closing the brackets, which the format explicitly allows.
 * Method-like slices: B/E pairs and X (ts + dur).  Events are sorted per
 * thread by time (files are not sorted); at equal times, ends of X frames
 * go first, then X begins (longer first), then B and E in file order, then
 * ends of zero-length X frames.  An E names the frame it closes when it has a name
 * that is open (frames above it get dummy exits); an E whose name is not
 * open is dropped; a nameless E closes the innermost frame.  Other phases
 * are skipped.  M thread_name events name threads.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"
#include "analysis-int.h"

#define MAX_JSON (256u * 1024u * 1024u)

typedef struct ev {
	uint32_t pid, tid;
	int64_t ts;
	int cls; /* 0 X end (dur > 0), 1 begin or E, 2 end of a zero-length X */
	int64_t sub;
	uint32_t seq;
	int64_t method; /* -1: nameless E */
	int end;	/* an exit */
} ev;

static int cmp_ev(const void *x, const void *y)
{
	const ev *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	if (a->sub != b->sub)
		return a->sub < b->sub ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static uint32_t id_of(json_t *v)
{
	if (json_is_integer(v))
		return (uint32_t)json_integer_value(v);
	if (json_is_real(v)) {
		double d = json_real_value(v);
		return d >= 0 && d < 4294967296.0 ? (uint32_t)d : 0;
	}
	if (json_is_string(v)) {
		/* Some writers use strings; hash them to a stable id. */
		uint32_t h = 2166136261u;
		for (const char *s = json_string_value(v); *s; s++)
			h = (h ^ (unsigned char)*s) * 16777619u;
		return h;
	}
	return 0;
}

static int get_ns(json_t *o, const char *key, int64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_number(v))
		return -1;
	double us = json_number_value(v);
	if (!isfinite(us) || fabs(us) > 9e12)
		return -1;
	*out = llround(us * 1000.0);
	return 0;
}

/* Parse, repairing a truncated array. */
static json_t *load_json(const uint8_t *buf, size_t len, rva_error *err)
{
	json_error_t je;
	json_t *root = json_loadb((const char *)buf, len, JSON_ALLOW_NUL, &je);
	if (root)
		return root;
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
		i++;
	size_t cut = len;
	while (cut > i && buf[cut - 1] != '}')
		cut--;
	if (cut > i && i < len && (buf[i] == '[' || buf[i] == '{')) {
		const char *tail = buf[i] == '[' ? "]" : "]}";
		char *copy = malloc(cut + 3);
		if (copy) {
			memcpy(copy, buf, cut);
			memcpy(copy + cut, tail, strlen(tail));
			root = json_loadb(copy, cut + strlen(tail), JSON_ALLOW_NUL, NULL);
			free(copy);
			if (root)
				return root;
		}
	}
	rva_fail(err, -EINVAL, "JSON line %d column %d: %s", je.line, je.column, je.text);
	return NULL;
}

int rva_chrome_import(const uint8_t *buf, size_t len, rva_trace **out, rva_error *err)
{
	*out = NULL;
	if (len > MAX_JSON)
		return rva_fail(err, -E2BIG, "JSON larger than 256 MiB");
	json_t *root = load_json(buf, len, err);
	if (!root)
		return -EINVAL;
	json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
	int rc = -ENOMEM;
	ev *v = NULL;
	size_t n = 0;
	rva_trace *t = rva_trace_new();
	if (!t)
		goto out_json;
	t->format = "chrome-json";
	if (!json_is_array(events)) {
		rc = rva_fail(err, -EINVAL, "no traceEvents array");
		goto out_json;
	}
	size_t ne = json_array_size(events);
	v = malloc((2 * ne + 1) * sizeof(*v));
	if (!v)
		goto out_json;
	for (size_t i = 0; i < ne; i++) {
		json_t *e = json_array_get(events, i);
		const char *ph = json_string_value(json_object_get(e, "ph"));
		if (!json_is_object(e) || !ph || !ph[0] || ph[1]) {
			if (json_is_object(e))
				t->dropped++;
			continue;
		}
		uint32_t pid = id_of(json_object_get(e, "pid"));
		uint32_t tid = id_of(json_object_get(e, "tid"));
		const char *name = json_string_value(json_object_get(e, "name"));
		if (ph[0] == 'M') {
			json_t *args = json_object_get(e, "args");
			const char *an = json_string_value(json_object_get(args, "name"));
			if (name && an && strcmp(name, "thread_name") == 0) {
				int64_t th = rva_thread_get(t, pid, tid);
				if (th < 0)
					goto out_json;
				free(t->threads[th].name);
				t->threads[th].name = strdup(an);
				if (!t->threads[th].name)
					goto out_json;
			}
			continue;
		}
		if (ph[0] != 'B' && ph[0] != 'E' && ph[0] != 'X')
			continue;
		int64_t ts, dur = 0;
		if (get_ns(e, "ts", &ts) < 0) {
			t->dropped++;
			continue;
		}
		int64_t m = -1;
		if (name || ph[0] != 'E') {
			m = rva_method_intern(t, name ? name : "(anonymous)",
					      strlen(name ? name : "(anonymous)"));
			if (m < 0) {
				rc = rva_fail(err, (int)m, "event name rejected");
				goto out_json;
			}
		}
		ev *a = &v[n++];
		*a = (ev){pid, tid, ts, 1, 0, (uint32_t)i, m, ph[0] == 'E'};
		if (ph[0] == 'X') {
			if (get_ns(e, "dur", &dur) < 0 || dur < 0)
				dur = 0;
			a->sub = -dur;
			ev *b = &v[n++];
			*b = (ev){pid, tid, ts + dur, dur > 0 ? 0 : 2, 0, (uint32_t)i, m, 1};
		}
	}
	qsort(v, n, sizeof(*v), cmp_ev);
	int64_t th = -1;
	for (size_t i = 0; i < n; i++) {
		if (th < 0 || t->threads[th].pid != v[i].pid || t->threads[th].tid != v[i].tid)
			if ((th = rva_thread_get(t, v[i].pid, v[i].tid)) < 0)
				goto out_json;
		int r;
		if (!v[i].end)
			r = rva_enter(t, (size_t)th, (uint32_t)v[i].method, v[i].ts);
		else
			r = rva_exit(t, (size_t)th,
				     v[i].method < 0 ? RVA_ANY_METHOD : (uint32_t)v[i].method,
				     v[i].ts);
		if (r < 0) {
			rc = rva_fail(err, r, "event %u rejected", v[i].seq);
			goto out_json;
		}
	}
	rva_trace_finish(t, INT64_MIN);
	*out = t;
	t = NULL;
	rc = 0;
out_json:
	if (rc == -ENOMEM)
		rva_fail(err, rc, "out of memory");
	free(v);
	rva_trace_free(t);
	json_decref(root);
	return rc;
}
