/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.c — untrusted text (text.h): the string field check and the one
 * integer parser.
 *
 * Invariants: reads at most up to the string's NUL; a field is valid UTF-8
 * (no overlong two-byte forms, nothing past U+10FFFF's lead bytes) without
 * control characters, and its byte length counts against max.
 */
#include "base/text.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int rvs_field_ok(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	if (!s)
		return 1;
	while (*p) {
		unsigned c = *p;
		int extra;
		if (++n > max)
			return 0;
		if (c < 0x20 || c == 0x7f)
			return 0;
		if (c < 0x80) {
			p++;
			continue;
		}
		if ((c & 0xe0) == 0xc0 && c >= 0xc2)
			extra = 1;
		else if ((c & 0xf0) == 0xe0)
			extra = 2;
		else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
			extra = 3;
		else
			return 0;
		p++;
		for (int i = 0; i < extra; i++, p++)
			if ((*p & 0xc0) != 0x80)
				return 0;
		n += (size_t)extra;
	}
	return 1;
}

int rvs_parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;
	if (!*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}
