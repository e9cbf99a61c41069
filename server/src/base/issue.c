/* SPDX-License-Identifier: Apache-2.0 */
/*
 * issue.c — signature folding for issues (issue.h).
 *
 * Invariants: the folded value of a chain with K >= 1 leading
 * "(unknown caller);" frames equals rva_signature of the same chain with
 * those frames left out (same normalization, same FNV-1a over each
 * normalized name followed by ';'), so a trace whose capture began inside
 * the outer calls and one that saw them both land on the issue of the
 * whole-known chain; any other chain keeps its own signature unchanged.
 */
#include "base/issue.h"
#include "base/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

static const char UNKNOWN[] = "(unknown caller);";

static int hex16(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 16;
}

/* FNV-1a of one normalized name n and its ';', continuing from h
 * (analysis.c's fnv_name). */
static uint64_t fnv(uint64_t h, const char *n)
{
	return rvs_fnv1a(rvs_fnv1a(h, n, strlen(n)), ";", 1);
}

int rvs_issue_fold(const char *chain, const char *signature, char out[17])
{
	const size_t ul = sizeof UNKNOWN - 1;
	uint64_t h = RVS_FNV_BASIS;
	const char *p = chain;
	char *name, *norm;
	size_t cap = 0;

	if (!hex16(signature))
		return -EINVAL;
	while (strncmp(p, UNKNOWN, ul) == 0)
		p += ul;
	if (p == chain || !*p) {
		memcpy(out, signature, 17);
		return 0;
	}
	cap = strlen(p) + 1;
	name = malloc(cap);
	norm = malloc(cap + 1);
	if (!name || !norm) {
		free(name);
		free(norm);
		return -ENOMEM;
	}
	while (*p) {
		size_t n = strcspn(p, ";");
		memcpy(name, p, n);
		name[n] = '\0';
		/* rva_normalize_name never lengthens a name. */
		if (rva_normalize_name(name, norm, cap + 1) > cap) {
			free(name);
			free(norm);
			return -EINVAL;
		}
		h = fnv(h, norm);
		p += n;
		if (*p == ';')
			p++;
	}
	free(name);
	free(norm);
	snprintf(out, 17, "%016" PRIx64, h);
	return 0;
}

int rvs_issue_id_ok(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");
	return n == 16 && !s[n];
}
