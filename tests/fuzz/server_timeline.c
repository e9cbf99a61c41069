/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_timeline.c — libFuzzer target: the query string of the trace
 * page's data endpoints (server/src/web/web_timeline.c) — timeline.json's
 * width, from and to (web_timeline_query, then its level of detail), and
 * the butterfly's method — against one program-like capture built here
 * (tests/rvtrace/capbuild.h).  An answer stays within its documented
 * bounds; a refusal names its parameter.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/params.h"
#include "capbuild.h"
#include "rearview/analysis.h"
#include "web/web_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The capture every input is asked about, decoded once. */
static const rva_trace *timeline_trace(void)
{
	static rva_trace *t;

	if (!t) {
		capbuf c = {0};
		rva_error err;

		cb_program(&c, 600, 0);
		cb_anomaly(&c, 1, 1000000000000ull + 2000, "jank");
		cb_finish(&c);
		if (rva_capture_decode(c.b, c.len, &t, &err) != 0)
			__builtin_trap();
		free(c.b);
	}
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const rva_trace *t = timeline_trace();
	char *q = malloc(size + 1), method[512];
	const char *bad = NULL;
	json_t *doc = NULL;
	int rc;

	if (!q)
		return 0;
	memcpy(q, data, size);
	q[size] = '\0';
	rc = web_timeline_query(t, q, &doc, &bad);
	if (rc == 0) {
		json_int_t from = json_integer_value(json_object_get(doc, "from"));
		json_int_t to = json_integer_value(json_object_get(doc, "to"));
		json_int_t width = json_integer_value(json_object_get(doc, "width"));
		if (!doc || bad || from < 0 || to <= from || to > t->end - t->start || width < 1 ||
		    width > LOD_MAX_WIDTH ||
		    json_array_size(json_object_get(doc, "items")) > LOD_MAX_ITEMS)
			__builtin_trap();
	} else if (rc != -ENOMEM && (rc != -EINVAL || !bad || doc)) {
		__builtin_trap();
	}
	json_decref(doc);
	doc = NULL;
	if (rvs_query_param(q, "method", method, sizeof method) == 1 && method[0]) {
		rc = web_butterfly(t, method, &doc);
		if ((rc == 0) != (doc != NULL) || (rc && rc != -ENOENT && rc != -ENOMEM))
			__builtin_trap();
		json_decref(doc);
	}
	free(q);
	return 0;
}
