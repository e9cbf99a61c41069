/* SPDX-License-Identifier: Apache-2.0 */
/*
 * search.c — chain patterns (search.h): what chain search matches a stored
 * chain's frames against.
 *
 * Invariants: no regular expressions on user input; matching is
 * O(frames × elements) with no backtracking beyond one run of names; a
 * pattern's names live in its own buffer, bounded by RVS_PAT_MAX and
 * RVS_PAT_NAME_MAX.
 */
#include "model/search.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

int rvs_chain_pattern_parse(const char *text, struct rvs_chain_pat *p)
{
	const char *s = text;
	char *out = p->buf;
	int names = 0;

	p->n = 0;
	for (;;) {
		const char *e = s, *end;
		size_t len;
		/* The element ends at the next '>' that has whitespace on both sides. */
		while (*e && !(e[0] == '>' && e > s && isspace((unsigned char)e[-1]) &&
			       isspace((unsigned char)e[1])))
			e++;
		end = e;
		while (s < end && isspace((unsigned char)*s))
			s++;
		while (end > s && isspace((unsigned char)end[-1]))
			end--;
		len = (size_t)(end - s);
		if (!len || len > RVS_PAT_NAME_MAX)
			return -EINVAL;
		if (len == 1 && *s == '*') {
			if (!p->n || p->el[p->n - 1]) { /* merge consecutive stars */
				if (p->n == RVS_PAT_MAX)
					return -EINVAL;
				p->el[p->n] = NULL;
				p->len[p->n++] = 0;
			}
		} else {
			if (p->n == RVS_PAT_MAX)
				return -EINVAL;
			memcpy(out, s, len);
			out[len] = '\0';
			p->el[p->n] = out;
			p->len[p->n++] = len;
			out += len + 1;
			names++;
		}
		if (!*e)
			break;
		s = e + 1;
	}
	assert(out <= p->buf + sizeof p->buf);
	return names ? 0 : -EINVAL;
}

int rvs_chain_match(const struct rvs_chain_pat *p, const char *const *frames, const size_t *lens,
		    size_t n, size_t *from, size_t *to)
{
	size_t pos = 0, first = SIZE_MAX, i = 0;

	while (i < p->n) {
		size_t j = i, seg, k;
		if (!p->el[i]) {
			i++;
			continue;
		}
		while (j < p->n && p->el[j])
			j++;
		seg = j - i;
		for (k = pos; k + seg <= n; k++) {
			size_t m = 0;
			while (m < seg && lens[k + m] == p->len[i + m] &&
			       memcmp(frames[k + m], p->el[i + m], lens[k + m]) == 0)
				m++;
			if (m == seg)
				break;
		}
		if (k + seg > n)
			return 0;
		if (first == SIZE_MAX)
			first = k;
		pos = k + seg;
		i = j;
	}
	assert(first != SIZE_MAX); /* the parser refuses patterns without a name */
	*from = first;
	*to = pos;
	return 1;
}

size_t rvs_chain_pattern_needle(const struct rvs_chain_pat *p, char *buf, size_t cap)
{
	size_t best = 0, best_len = 0, out = 0;

	assert(cap >= RVS_PAT_NEEDLE_MAX);
	for (size_t i = 0; i < p->n;) {
		size_t j = i, len = 0;
		if (!p->el[i]) {
			i++;
			continue;
		}
		for (; j < p->n && p->el[j]; j++)
			len += p->len[j] + 1;
		if (len > best_len) {
			best = i;
			best_len = len;
		}
		i = j;
	}
	assert(best_len > 0);
	for (size_t i = best; i < p->n && p->el[i]; i++) {
		memcpy(buf + out, p->el[i], p->len[i]);
		out += p->len[i];
		buf[out++] = ';';
	}
	assert(out == best_len && out < cap);
	buf[out] = '\0';
	return out;
}
