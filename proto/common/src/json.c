/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c — the JSON string escaper shared by rvtrace's exports, the summary
 * document and rvctl (rearview/common.h).
 *
 * Invariant: the output is a valid JSON string for any input that is valid
 * UTF-8; bytes at or above 0x20 other than '"' and '\\' are copied
 * unchanged, so the escaper never alters a name that needs no escaping.
 */
#include "rearview/common.h"

#include <assert.h>

void rvc_json_str(FILE *f, const char *s)
{
	assert(f);
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}
