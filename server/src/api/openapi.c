/* SPDX-License-Identifier: Apache-2.0 */
/*
 * openapi.c — GET /api/v1/openapi.json (openapi.h): the OpenAPI 3.1
 * document of the JSON API, server/openapi.json, assembled into this
 * object (.incbin, a dependency of it in server/server.mk) so the binary
 * serves the description of exactly the routes it was built with, and no
 * data directory or install step can pair it with another's.
 *
 * Invariants: the bytes are constant, followed by one NUL that is not part
 * of the document; the answer is a copy of them as application/json.
 */
#include "api/openapi.h"
#include "http/reply.h"
#include "http/route.h"

#include <assert.h>
#include <string.h>

/* The path is the repository's (make runs the compiler from the top). */
__asm__(".section .rodata\n"
	".balign 16\n"
	".type rvs_openapi_bytes, @object\n"
	"rvs_openapi_bytes:\n"
	".incbin \"server/openapi.json\"\n"
	".byte 0\n"
	".size rvs_openapi_bytes, . - rvs_openapi_bytes\n"
	".previous\n");
extern const char rvs_openapi_bytes[];

const char *rvs_openapi_doc(size_t *len)
{
	if (len)
		*len = strlen(rvs_openapi_bytes);
	return rvs_openapi_bytes;
}

void rvs_openapi_get(struct rvs_call *c)
{
	assert(rvs_openapi_bytes[0] == '{');
	rvs_reply_text(c->q, 200, "application/json", rvs_openapi_bytes);
	if (!c->q->body)
		rvs_query_set_error(c->q, 503, "out of memory");
}
