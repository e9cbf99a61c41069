/* SPDX-License-Identifier: Apache-2.0 */
/*
 * params.c — request parameters (params.h): percent-decoding and the
 * values of application/x-www-form-urlencoded strings, shared by the JSON
 * API, the web UI and the campaign forms; the one parser of anomaly kinds.
 *
 * Invariants: output is always NUL-terminated within outsz; a decoded NUL
 * byte or a malformed escape is an error, never truncated silently.
 */
#include "base/params.h"
#include "base/text.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "rearview/common.pb-c.h"

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

int rvs_param_kind(const char *s, int64_t *kind)
{
	const ProtobufCEnumDescriptor *d = &rearview__anomaly_kind__descriptor;

	if (*s && !s[strspn(s, "0123456789")])
		return rvs_parse_i64(s, kind);
	for (unsigned i = 0; i < d->n_values; i++) {
		const char *name = d->values[i].name, *shrt = name;
		size_t first;

		if (!strncmp(shrt, "ANOMALY_", 8))
			shrt += 8;
		first = strcspn(shrt, "_");
		if (!strcasecmp(s, name) || !strcasecmp(s, shrt) ||
		    (strlen(s) == first && !strncasecmp(s, shrt, first))) {
			*kind = d->values[i].value;
			return 0;
		}
	}
	return -EINVAL;
}

int rvs_param_limit(const char *query, int64_t def, int64_t max, int64_t *limit)
{
	char v[32];
	int64_t n;
	int rc = rvs_query_param(query, "limit", v, sizeof v);

	assert(def >= 1 && def <= max);
	*limit = def;
	if (rc < 0)
		return -EINVAL;
	if (rc == 0 || !v[0])
		return 0;
	if (rvs_parse_i64(v, &n) || n < 1)
		return -EINVAL;
	*limit = n > max ? max : n;
	return 0;
}

int rvs_param_offset(const char *query, int64_t max, int64_t *offset)
{
	char v[32];
	int64_t n;
	int rc = rvs_query_param(query, "offset", v, sizeof v);

	*offset = 0;
	if (rc < 0)
		return -EINVAL;
	if (rc == 0 || !v[0])
		return 0;
	if (rvs_parse_i64(v, &n) || n < 0 || n > max)
		return -EINVAL;
	*offset = n;
	return 0;
}

/* n digits of s as a number, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int rvs_param_time(const char *s, int64_t *t)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	struct tm tm = {0};
	int y, mo, d, h = 0, mi = 0, sec = 0, off = 0;
	int64_t base;

	if (*s && !s[strspn(s, "0123456789")])
		return rvs_parse_i64(s, t);
	/* Each field is read only once the one before it parsed: digits()
	 * stops at the NUL, so nothing past the string is read. */
	if ((y = digits(s, 4)) < 1970 || s[4] != '-' || (mo = digits(s + 5, 2)) < 1 || mo > 12 ||
	    s[7] != '-' || (d = digits(s + 8, 2)) < 1 || d > mdays[mo - 1])
		return -EINVAL;
	s += 10;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		if ((h = digits(s + 1, 2)) < 0 || h > 23 || s[3] != ':' ||
		    (mi = digits(s + 4, 2)) < 0 || mi > 59)
			return -EINVAL;
		s += 6;
		if (*s == ':') {
			sec = digits(s + 1, 2);
			if (sec < 0 || sec > 60)
				return -EINVAL;
			s += 3;
		}
		if (*s == 'Z' || *s == 'z') {
			s++;
		} else if (*s == '+' || *s == '-') {
			int oh, om = -1;
			if ((oh = digits(s + 1, 2)) < 0 || oh > 23 ||
			    (om = digits(s + 3 + (s[3] == ':'), 2)) < 0 || om > 59)
				return -EINVAL;
			off = (*s == '-' ? -1 : 1) * (oh * 3600 + om * 60);
			s += 5 + (s[3] == ':');
		}
	}
	if (*s)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	base = (int64_t)timegm(&tm);
	if (tm.tm_mday != d) /* timegm moved 29 February of a common year */
		return -EINVAL;
	*t = base - off;
	return 0;
}

int rvs_query_text(const char *query, const char *name, char *out, size_t cap)
{
	int rc = rvs_query_param(query, name, out, cap);
	if (rc < 0 || (rc == 1 && !rvs_field_ok(out, cap - 1)))
		return -EINVAL;
	return rc == 1 && out[0];
}
