/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_search.c — libFuzzer target: chain search patterns
 * (rvs_chain_pattern_parse, rvs_chain_match; server/src/model/search.c),
 * the q parameter of GET /api/v1/search.  The input's first line is the
 * pattern, each further line a frame of a chain (root first, at most
 * MAX_FRAMES).  A match is checked against a plain dynamic-programming
 * matcher: both agree whether the chain matches, and the reported frames
 * match the pattern exactly.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/search.h"

#define MAX_FRAMES 48

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rvs_chain_pat pat; /* 8 KiB: not on the stack */

/* Whether frames[a..b) is matched by elements el[0..m) of p exactly. */
static bool exact(const struct rvs_chain_pat *p, const char *const *fr, const size_t *lens,
		  size_t a, size_t b)
{
	/* ok[i][j]: the first i elements match frames a..a+j. */
	static bool ok[RVS_PAT_MAX + 1][MAX_FRAMES + 1];
	size_t n = b - a;

	memset(ok, 0, sizeof ok);
	ok[0][0] = true;
	for (size_t i = 1; i <= p->n; i++)
		for (size_t j = 0; j <= n; j++) {
			if (!p->el[i - 1]) /* "*": any run, zero included */
				ok[i][j] = ok[i - 1][j] || (j > 0 && ok[i][j - 1]);
			else
				ok[i][j] = j > 0 && ok[i - 1][j - 1] &&
					   lens[a + j - 1] == p->len[i - 1] &&
					   memcmp(fr[a + j - 1], p->el[i - 1], p->len[i - 1]) == 0;
		}
	return ok[p->n][n];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *frames[MAX_FRAMES];
	size_t lens[MAX_FRAMES], n = 0, from = 0, to = 0;
	const uint8_t *nl = memchr(data, '\n', size);
	size_t plen = nl ? (size_t)(nl - data) : size;
	char *text = malloc(plen + 1);
	bool any = false;
	int m;

	if (!text)
		return 0;
	memcpy(text, data, plen);
	text[plen] = '\0';
	if (rvs_chain_pattern_parse(text, &pat) != 0) {
		free(text);
		return 0;
	}
	if (pat.n == 0 || pat.n > RVS_PAT_MAX)
		__builtin_trap();
	for (size_t pos = plen + 1; nl && pos <= size && n < MAX_FRAMES;) {
		const uint8_t *e = memchr(data + pos, '\n', size - pos);
		size_t len = e ? (size_t)(e - (data + pos)) : size - pos;
		frames[n] = (const char *)data + pos;
		lens[n++] = len;
		pos += len + 1;
		if (!e)
			break;
	}
	m = rvs_chain_match(&pat, frames, lens, n, &from, &to);
	for (size_t a = 0; a <= n && !any; a++)
		for (size_t b = a; b <= n && !any; b++)
			any = exact(&pat, frames, lens, a, b);
	if (m != (any ? 1 : 0))
		__builtin_trap();
	if (m == 1 && (from > to || to > n || !exact(&pat, frames, lens, from, to)))
		__builtin_trap();
	free(text);
	return 0;
}
