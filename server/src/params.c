/*
 * params.c — request parameters (params.h): percent-decoding and the
 * values of application/x-www-form-urlencoded strings, shared by the JSON
 * API, the web UI and the campaign forms.
 *
 * Invariants: output is always NUL-terminated within outsz; a decoded NUL
 * byte or a malformed escape is an error, never truncated silently.
 */
#include "params.h"

#include <errno.h>
#include <string.h>

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int rvs_url_decode(const char *in, size_t n, int plus_space, char *out, size_t outsz)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)in[i];
		if (c == '%') {
			int h, l;
			if (i + 2 >= n)
				return -EINVAL;
			h = hexval(in[i + 1]);
			l = hexval(in[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = h * 16 + l;
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (c == 0)
			return -EINVAL;
		if (o + 1 >= outsz)
			return -E2BIG;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

int rvs_query_param(const char *query, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);
	const char *p = query;
	while (p && *p) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=')
			return rvs_url_decode(p + nl + 1, len - nl - 1, 1, out, outsz) ? -EINVAL
										       : 1;
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}
