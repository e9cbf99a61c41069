/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.c — app versions ordered as versions (version.h).
 *
 * Invariants: the comparison is a total preorder (digit runs compare by
 * value, so "1.02" and "1.2" are equal) and reads only its arguments; the
 * sort is an insertion sort (the lists are short: at most a few hundred
 * rows), stable, and moves objects only within a run of equal groups.
 */
#include "base/version.h"

#include <assert.h>
#include <string.h>

#include <jansson.h>

int rvs_version_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			const char *ea = a, *eb = b;
			size_t la, lb;
			while (*a == '0' && a[1] >= '0' && a[1] <= '9')
				a++;
			while (*b == '0' && b[1] >= '0' && b[1] <= '9')
				b++;
			for (ea = a; *ea >= '0' && *ea <= '9'; ea++)
				;
			for (eb = b; *eb >= '0' && *eb <= '9'; eb++)
				;
			la = (size_t)(ea - a);
			lb = (size_t)(eb - b);
			if (la != lb)
				return la < lb ? -1 : 1;
			int c = memcmp(a, b, la);
			if (c)
				return c;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

/* The string member key of o, "" when absent or not a string. */
static const char *str_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* 1 when a and b agree on every member named in group. */
static int same_group(json_t *a, json_t *b, const char *const *group)
{
	for (; *group; group++)
		if (!json_equal(json_object_get(a, *group), json_object_get(b, *group)))
			return 0;
	return 1;
}

void rvs_version_sort(json_t *arr, const char *key, const char *const *group)
{
	size_t n = json_array_size(arr);

	assert(key && group);
	for (size_t i = 1; i < n; i++) {
		json_t *o = json_incref(json_array_get(arr, i));
		size_t j = i;
		while (j > 0) {
			json_t *p = json_array_get(arr, j - 1);
			if (!same_group(p, o, group) ||
			    rvs_version_cmp(str_of(p, key), str_of(o, key)) <= 0)
				break;
			json_array_set(arr, j, p);
			j--;
		}
		json_array_set_new(arr, j, o);
	}
}
